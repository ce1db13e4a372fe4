/* SPDX-License-Identifier: BSD-3-Clause */
/* The module backend's rebuild: begin reserves a second filter of the new
 * shape, add writes keys into it, commit renames it over the filter and
 * abort gives it up. A file of its own because it is a protocol of four
 * scripts, a marker and a lease that the ordinary add path only meets as
 * the marker it checks (module.c, ADDS WHILE A REBUILD IS PENDING).
 *
 * REBUILD (remote.h)
 * A rebuild is a second filter, {name}:rebuild:<16 hex digits>, reserved
 * with the new shape and named by the marker {name}:rebuild (a hash: key,
 * lease). Both live for the lease, renewed by every rebuild_add; they are
 * set in one script, so they expire together (a script sees one frozen
 * clock) and a dead rebuilder's rebuild goes away by itself. Commit renames
 * the rebuild over `name` in one script, so readers switch from the
 * complete old filter to the complete new one at once, and leaves the
 * marker holding only `done` (the rebuild's key) for a lease: a commit
 * retried after its reply was lost finds it and succeeds, as the bitmap
 * backend's does (its generation says the same). All three keys have
 * name's cluster slot (names have no braces).
 *
 * The scripts are src/remote/lua/module_<name>.lua (BG__SCRIPT_MODULE_<NAME>),
 * each with its KEYS, ARGV, reply and errors. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "module.h"

int bg__module_rebuild_begin(bg_remote_filter *handle, const bg_remote_filter_options *o)
{
    bg__module_filter *f = bg__module_of(handle);
    if (f->rb_key)
        return bg__remote_fail(f->base.r, BG_EEXIST, "this handle's rebuild is pending");
    /* BF.INFO does not report the error rate, so "the same shape" is
     * unknown: the caller gives it. */
    if (!o)
        return bg__remote_fail(f->base.r, BG_EINVAL,
                               "%s: give the rebuild's capacity and error rate", f->name);
    if (o->backend != 0 && o->backend != BG_REMOTE_MODULE)
        return BG_EINVAL;
    bg__reserve_args ra;
    int rc = bg__module_reserve_args_make(&ra, o);
    if (rc != BG_OK)
        return rc;
    char *key = bg__module_hidden_key(f->name, "rebuild");
    if (!key)
        return BG_ENOMEM;
    char lease[24];
    snprintf(lease, sizeof lease, "%" PRIu64, f->base.rb_lease_ms);
    const char *argv[12] = {NULL, NULL, "3", f->name, f->rb_marker, key, lease};
    size_t lens[12];
    for (int i = 2; i < 7; i++)
        lens[i] = strlen(argv[i]);
    memcpy(argv + 7, ra.argv, (size_t)ra.argc * sizeof *argv);
    memcpy(lens + 7, ra.lens, (size_t)ra.argc * sizeof *lens);
    redisReply *rep;
    rc = bg__module_key_script(f, BG__SCRIPT_MODULE_REBUILD_BEGIN, 7 + ra.argc, argv, lens, &rep);
    if (rc != BG_OK) {
        bg__free(key);
        return rc;
    }
    freeReplyObject(rep);
    f->rb_key = key;
    f->rb_capacity = o->capacity;
    f->rb_error_rate = o->error_rate;
    return BG_OK;
}

int64_t bg__module_rebuild_add(bg_remote_filter *handle, const void *const *keys,
                               const size_t *lens, size_t count, uint8_t *results)
{
    bg__module_filter *f = bg__module_of(handle);
    if (!f->rb_key)
        return bg__remote_fail(f->base.r, BG_EINVAL, "no rebuild begun on this handle");
    bg__key_args a;
    int rc = bg__module_key_args_make(&a, 6, keys, lens, count);
    if (rc != BG_OK)
        return rc;
    char lease[24];
    snprintf(lease, sizeof lease, "%" PRIu64, f->base.rb_lease_ms);
    bg__module_set_arg(&a, 2, "2");
    bg__module_set_arg(&a, 3, f->rb_marker);
    bg__module_set_arg(&a, 4, f->rb_key);
    bg__module_set_arg(&a, 5, lease);
    redisReply *rep;
    int64_t hits =
        bg__module_script(f->base.r, BG__SCRIPT_MODULE_REBUILD_ADD, a.argc, a.argv, a.lens, &rep);
    bg__module_key_args_free(&a);
    if (hits == BG_ESTALE)
        bg__module_rb_clear(f);
    if (hits != BG_OK)
        return hits;
    hits = bg__module_batch_results(f, rep, count, results);
    freeReplyObject(rep);
    return hits;
}

int bg__module_rebuild_commit(bg_remote_filter *handle)
{
    bg__module_filter *f = bg__module_of(handle);
    if (!f->rb_key)
        return bg__remote_fail(f->base.r, BG_EINVAL, "no rebuild begun on this handle");
    char lease[24];
    snprintf(lease, sizeof lease, "%" PRIu64, f->base.rb_lease_ms);
    const char *argv[7] = {NULL, NULL, "3", f->rb_marker, f->rb_key, f->name, lease};
    size_t lens[7];
    for (int i = 2; i < 7; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep;
    int rc = bg__module_script(f->base.r, BG__SCRIPT_MODULE_REBUILD_COMMIT, 7, argv, lens, &rep);
    if (rc == BG_ESTALE || rc == BG_ENOTFOUND)
        bg__module_rb_clear(f);
    if (rc != BG_OK)
        return rc;
    freeReplyObject(rep);
    f->base.capacity = f->rb_capacity;
    f->base.error_rate = f->rb_error_rate;
    bg__module_rb_clear(f);
    return BG_OK;
}

int bg__module_rebuild_abort(bg_remote_filter *handle)
{
    bg__module_filter *f = bg__module_of(handle);
    const char *mine = f->rb_key ? f->rb_key : "";
    const char *argv[5] = {NULL, NULL, "1", f->rb_marker, mine};
    size_t lens[5];
    for (int i = 2; i < 5; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep;
    int rc = bg__module_script(f->base.r, BG__SCRIPT_MODULE_REBUILD_ABORT, 5, argv, lens, &rep);
    if (rc != BG_OK)
        return rc;
    int done = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
    freeReplyObject(rep);
    bg__module_rb_clear(f);
    return done ? BG_OK : bg__remote_fail(f->base.r, BG_ENOTFOUND, "no such rebuild is pending");
}
