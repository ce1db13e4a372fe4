/* SPDX-License-Identifier: BSD-3-Clause */
/* The bitmap backend's rebuild: begin stages a new generation (its own
 * shape, or the filter's), add writes keys into it, commit makes it the
 * filter's and abort gives it up. Apart from the handle's code (bitmap.c)
 * because it is a protocol of its own, four scripts and a lease, that the
 * ordinary add path only meets as the pending rebuild it also writes
 * (SWAPS at the top of bitmap.c).
 *
 * THE REBUILD'S LEASE
 * A pending rebuild holds a lease: meta field next_lease, a deadline in the
 * server's clock (TIME, ms), set by begin and pushed on by every
 * rebuild_add to now + next_lease_ms. An add that finds the deadline passed
 * takes the rebuilder for dead: it deletes the rebuild (UNLINK, so a large
 * bit array is freed off Redis's main thread) and answers BGREBUILD, so
 * that the client reads the meta hash again and writes the current
 * generation only; begin does the same before starting its own. Until
 * someone does, a late rebuilder may go on: every add has written both
 * generations all along, so its rebuild is still complete, and once it is
 * gone its next call gets BGSTALE. The clock is the server's, so clients'
 * clocks do not matter; scripts replicate their effects (Redis >= 5), so
 * TIME in a script is safe on replicas. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <bloomgate/hash.h>
#include <bloomgate/sizing.h>

#include "common/alloc.h"
#include "bitmap.h"

static void rb_clear(bg__bitmap_filter *f)
{
    bg__bitmap_no_next(&f->rb);
    bg__free(f->rb_bits_key);
    f->rb_bits_key = NULL;
}

int bg__bitmap_rebuild_begin(bg_remote_filter *handle, const bg_remote_filter_options *o)
{
    bg__bitmap_filter *f = bg__bitmap_of(handle);
    bg_remote *r = f->base.r;
    if (f->rb.gen)
        return bg__remote_fail(r, BG_EEXIST, "this handle's rebuild is pending");
    bg__gen nx;
    bg__bitmap_no_next(&nx);
    if (!o) {
        nx.m = f->base.m;
        nx.k = f->base.k;
        nx.seed = f->base.seed;
        nx.capacity = f->base.capacity;
        nx.error_rate = f->base.error_rate;
    } else {
        if (o->expansion || o->nonscaling ||
            (o->backend != 0 && o->backend != BG_REMOTE_BITMAP))
            return BG_EINVAL;
        if (o->bits > BG_REMOTE_MAX_BITS)
            return BG_ETOOBIG;
        bg_sizing s = {.n = o->capacity, .p = o->error_rate, .m = o->bits, .k = o->hashes};
        int rc = bg_sizing_solve(BG_VARIANT_STANDARD, &s, BG_REMOTE_MAX_BITS);
        if (rc != BG_OK)
            return rc;
        if (s.m > BG_REMOTE_MAX_BITS)
            return BG_ETOOBIG;
        nx.m = s.m;
        nx.k = s.k;
        nx.seed = o->seed;
        nx.capacity = o->capacity ? s.n : 0;
        nx.error_rate = o->capacity ? s.p : 0;
    }
    nx.gen = bg__random_u63();
    snprintf(nx.str, sizeof nx.str, "%" PRIu64, nx.gen);
    char *key = bg__bitmap_key_for(f->name, nx.gen);
    if (!key)
        return BG_ENOMEM;
    uint64_t bytes = (nx.m + 7) / 8;
    int rc = bg__bitmap_stage_bits(r, key, "", 0, bytes);
    if (rc != BG_OK)
        goto fail;

    char a[7][40];
    snprintf(a[0], sizeof a[0], "%" PRIu64, nx.m);
    snprintf(a[1], sizeof a[1], "%" PRIu32, nx.k);
    snprintf(a[2], sizeof a[2], "%" PRIu64, nx.seed);
    snprintf(a[3], sizeof a[3], "%" PRIu64, bytes);
    snprintf(a[4], sizeof a[4], "%" PRIu64, nx.capacity);
    snprintf(a[5], sizeof a[5], "%.17g", nx.error_rate);
    snprintf(a[6], sizeof a[6], "%" PRIu64, f->base.rb_lease_ms);
    const char *argv[19] = {NULL, NULL, "3", f->meta_key, f->bits_key, key};
    size_t lens[19];
    for (int i = 2; i < 6; i++)
        lens[i] = strlen(argv[i]);
    bg__shape_args sa;
    bg__bitmap_common_args(f, &sa, argv + 6, lens + 6);
    argv[11] = nx.str;
    for (int i = 0; i < 7; i++)
        argv[12 + i] = a[i];
    for (int i = 11; i < 19; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep;
    if ((rc = bg__bitmap_script(r, BG__SCRIPT_REBUILD_BEGIN, 19, argv, lens, &rep)) != BG_OK)
        goto fail;
    rc = bg__bitmap_follow(f, rep);
    freeReplyObject(rep);
    f->rb = nx;
    f->rb_bits_key = key;
    f->next = nx; /* this handle's adds write both from now on */
    return rc;
fail:
    bg__remote_discard(r, key, rc);
    bg__free(key);
    return rc;
}

int64_t bg__bitmap_rebuild_add(bg_remote_filter *handle, const void *const *keys,
                               const size_t *lens, size_t count, uint8_t *results)
{
    bg__bitmap_filter *f = bg__bitmap_of(handle);
    bg_remote *r = f->base.r;
    if (!f->rb.gen)
        return bg__remote_fail(r, BG_EINVAL, "no rebuild begun on this handle");
    size_t k = f->rb.k, head = 7;
    if (count > (SIZE_MAX / 16 - head) / k || count * k + head > (size_t)INT32_MAX)
        return BG_EOVERFLOW;
    size_t argc = head + count * k;
    const char **argv = bg__malloc(argc * sizeof *argv);
    size_t *alen = bg__malloc(argc * sizeof *alen);
    char *digits = bg__malloc(count * k * 11 + 1);
    int64_t rc;
    redisReply *rep = NULL;
    if (!argv || !alen || !digits) {
        rc = BG_ENOMEM;
        goto out;
    }
    char *d = digits;
    for (size_t i = 0; i < count; i++) {
        bg_hash h;
        bg_hash_key(keys[i] ? keys[i] : "", lens[i], f->rb.seed, &h);
        d = bg__bitmap_write_positions(f->rb.m, f->rb.k, h, d, argv + head + i * k,
                                       alen + head + i * k);
    }
    char kbuf[12];
    snprintf(kbuf, sizeof kbuf, "%zu", k);
    argv[2] = "2";
    argv[3] = f->meta_key;
    argv[4] = f->rb_bits_key;
    argv[5] = f->rb.str;
    argv[6] = kbuf;
    for (int i = 2; i < 7; i++)
        alen[i] = strlen(argv[i]);
    rc = bg__bitmap_script(r, BG__SCRIPT_REBUILD_ADD, (int)argc, argv, alen, &rep);
    if (rc != BG_OK) {
        if (rc == BG_ESTALE || rc == BG_ENOTFOUND)
            rb_clear(f);
        goto out;
    }
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != count) {
        rc = bg__remote_fail(r, BG_EREMOTE, "unexpected reply to a batch");
        goto out;
    }
    int64_t hits = 0;
    for (size_t i = 0; i < count; i++) {
        int v = rep->element[i]->type == REDIS_REPLY_INTEGER && rep->element[i]->integer != 0;
        hits += v;
        if (results)
            results[i] = (uint8_t)v;
    }
    rc = hits;
out:
    if (rep)
        freeReplyObject(rep);
    bg__free(argv);
    bg__free(alen);
    bg__free(digits);
    return rc;
}

int bg__bitmap_rebuild_commit(bg_remote_filter *handle)
{
    bg__bitmap_filter *f = bg__bitmap_of(handle);
    bg_remote *r = f->base.r;
    if (!f->rb.gen)
        return bg__remote_fail(r, BG_EINVAL, "no rebuild begun on this handle");
    const char *argv[6] = {NULL, NULL, "2", f->meta_key, f->rb_bits_key, f->rb.str};
    size_t lens[6];
    for (int i = 2; i < 6; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep;
    int rc = bg__bitmap_script(r, BG__SCRIPT_REBUILD_COMMIT, 6, argv, lens, &rep);
    if (rc != BG_OK) {
        if (rc == BG_ESTALE || rc == BG_ENOTFOUND) {
            rb_clear(f);
            bg__bitmap_no_next(&f->next);
        }
        return rc;
    }
    freeReplyObject(rep);
    /* This handle takes the new shape: it knows it. */
    f->base.m = f->rb.m;
    f->base.k = f->rb.k;
    f->base.seed = f->rb.seed;
    f->base.capacity = f->rb.capacity;
    f->base.error_rate = f->rb.error_rate;
    f->base.generation = f->rb.gen;
    rb_clear(f);
    bg__bitmap_no_next(&f->next);
    return bg__bitmap_set_bits_key(f);
}

int bg__bitmap_rebuild_abort(bg_remote_filter *handle)
{
    bg__bitmap_filter *f = bg__bitmap_of(handle);
    const char *argv[5] = {NULL, NULL, "1", f->meta_key, f->rb.gen ? f->rb.str : ""};
    size_t lens[5];
    for (int i = 2; i < 5; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep;
    int rc = bg__bitmap_script(f->base.r, BG__SCRIPT_REBUILD_ABORT, 5, argv, lens, &rep);
    if (rc != BG_OK)
        return rc;
    int done = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
    freeReplyObject(rep);
    rb_clear(f);
    bg__bitmap_no_next(&f->next);
    return done ? BG_OK : bg__remote_fail(f->base.r, BG_ENOTFOUND, "no such rebuild is pending");
}
