/* SPDX-License-Identifier: BSD-3-Clause */
/* Filter handles: argument checks, then the handle's operations (ops, in
 * remote_internal.h). The constructors choose the kind: bitmap.c, module.c,
 * sharded.c. */
#include <string.h>

#include "common/alloc.h"
#include "remote_internal.h"

/* A name goes inside a hash tag, so braces would change the slot. */
static int name_ok(const char *name)
{
    return name && name[0] && !strchr(name, '{') && !strchr(name, '}') && strlen(name) <= 1024;
}

static int backend_ok(bg_remote_backend backend)
{
    return backend == BG_REMOTE_BITMAP || backend == BG_REMOTE_MODULE;
}

int bg_remote_filter_create(bg_remote_filter **out, bg_remote *r, const char *name,
                            const bg_remote_filter_options *o)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!r || !o || !name_ok(name) || !backend_ok(o->backend))
        return BG_EINVAL;
    if (o->shards > 1)
        return bg__sharded_create(out, r, name, o);
    if (o->backend == BG_REMOTE_BITMAP)
        return bg__bitmap_create(out, r, name, o, NULL);
    return bg__module_create(out, r, name, o);
}

int bg_remote_filter_stage(bg_remote_filter **out, bg_remote *r, const char *name,
                           const bg_remote_filter_options *o)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!r || !o || !name_ok(name) || o->backend != BG_REMOTE_MODULE || o->shards > 1)
        return BG_EINVAL;
    return bg__module_stage(out, r, name, o);
}

int bg_remote_filter_stage_commit(bg_remote_filter *f)
{
    if (!f || !f->ops->stage_commit)
        return BG_EINVAL;
    return f->ops->stage_commit(f);
}

/* Only a staged handle has stage_commit (a commit makes it an ordinary
 * one), so the check refuses a committed handle too. */
int bg_remote_filter_stage_abort(bg_remote_filter *f)
{
    if (!f || !f->ops->stage_commit)
        return BG_EINVAL;
    return f->ops->drop(f);
}

/* A bitmap name without {name}:meta may be a sharded filter's. */
int bg_remote_filter_open(bg_remote_filter **out, bg_remote *r, const char *name,
                          bg_remote_backend backend)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!r || !name_ok(name) || !backend_ok(backend))
        return BG_EINVAL;
    if (backend == BG_REMOTE_MODULE)
        return bg__module_open(out, r, name);
    int rc = bg__bitmap_open(out, r, name);
    return rc == BG_ENOTFOUND ? bg__sharded_open(out, r, name) : rc;
}

void bg_remote_filter_close(bg_remote_filter *f)
{
    if (f)
        f->ops->close(f);
}

/* A batch's arguments are checked here, once for every kind. */
static int batch_ok(const bg_remote_filter *f, const void *const *keys, const size_t *lens,
                    size_t count)
{
    if (!f || (count && (!keys || !lens)))
        return 0;
    for (size_t i = 0; i < count; i++)
        if (!keys[i] && lens[i])
            return 0;
    return count <= (size_t)INT32_MAX;
}

static int64_t run(bg_remote_filter *f, int add, const void *const *keys, const size_t *lens,
                   size_t count, uint8_t *results)
{
    if (!batch_ok(f, keys, lens, count))
        return BG_EINVAL;
    if (count == 0)
        return 0;
    bg__remote_allow_array(f->r, count);
    int64_t rc = f->ops->run(f, add, keys, lens, count, results);
    bg__remote_allow_array(f->r, 0);
    return rc;
}

int64_t bg_remote_filter_add_many(bg_remote_filter *f, const void *const *keys, const size_t *lens,
                                  size_t count, uint8_t *results)
{
    return run(f, 1, keys, lens, count, results);
}

int64_t bg_remote_filter_contains_many(bg_remote_filter *f, const void *const *keys,
                                       const size_t *lens, size_t count, uint8_t *results)
{
    return run(f, 0, keys, lens, count, results);
}

int bg_remote_filter_test_and_add(bg_remote_filter *f, const void *key, size_t len)
{
    const void *keys[1] = {key ? key : ""};
    if (!key && len)
        return BG_EINVAL;
    return (int)run(f, 1, keys, &len, 1, NULL);
}

int bg_remote_filter_add(bg_remote_filter *f, const void *key, size_t len)
{
    int rc = bg_remote_filter_test_and_add(f, key, len);
    return rc < 0 ? rc : BG_OK;
}

int bg_remote_filter_contains(bg_remote_filter *f, const void *key, size_t len)
{
    const void *keys[1] = {key ? key : ""};
    if (!key && len)
        return BG_EINVAL;
    return (int)run(f, 0, keys, &len, 1, NULL);
}

int bg_remote_filter_stats_get(bg_remote_filter *f, bg_remote_filter_stats *out)
{
    if (!f || !out)
        return BG_EINVAL;
    memset(out, 0, sizeof *out);
    out->backend = f->backend;
    return f->ops->stats(f, out);
}

int bg__remote_filter_drop(bg_remote_filter *f)
{
    if (!f)
        return BG_EINVAL;
    return f->ops->drop(f);
}

int bg_remote_filter_delete(bg_remote *r, const char *name, bg_remote_backend backend)
{
    if (!r || !name_ok(name) || !backend_ok(backend))
        return BG_EINVAL;
    int found = 0;
    bg_remote_filter *f;
    int rc = bg_remote_filter_open(&f, r, name, backend);
    if (rc == BG_OK) {
        rc = bg__remote_filter_drop(f);
        bg_remote_filter_close(f);
        found = 1;
    } else if (rc == BG_ENOTFOUND) {
        rc = BG_OK;
    }
    if (rc == BG_OK && backend == BG_REMOTE_BITMAP)
        rc = bg__sharded_delete_leftovers(r, name, &found);
    if (rc == BG_OK && !found)
        rc = bg__remote_fail(r, BG_ENOTFOUND, "%s: no such filter", name);
    return rc;
}

int bg_remote_filter_expire(bg_remote_filter *f, uint64_t ttl_ms)
{
    if (!f || !f->ops->expire || ttl_ms == 0 || ttl_ms > (uint64_t)INT64_MAX / 2)
        return BG_EINVAL;
    return f->ops->expire(f, ttl_ms);
}

int bg_remote_filter_publish(bg_remote *r, const char *name, bg_remote_backend backend,
                             const bg_filter *local)
{
    if (!r || !local || !name_ok(name) || !backend_ok(backend))
        return BG_EINVAL;
    if (backend == BG_REMOTE_BITMAP)
        return bg__bitmap_publish(r, name, local, NULL);
    return bg__module_publish(r, name, local);
}

uint32_t bg_remote_shard_of(bg_hash h, uint32_t shards)
{
    return shards > 1 ? bg__shard_of(&h, shards) : 0;
}

int bg_remote_filter_publish_shards(bg_remote *r, const char *name,
                                    const bg_filter *const *shards, uint32_t count)
{
    if (!r || !name_ok(name) || !shards || count < 2 || count > BG_REMOTE_MAX_SHARDS)
        return BG_EINVAL;
    return bg__sharded_publish(r, name, shards, count);
}

int bg_remote_filter_fetch(bg_remote_filter *f, bg_filter **out)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!f || !f->ops->fetch)
        return BG_EINVAL;
    return f->ops->fetch(f, out);
}

int bg_remote_filter_fetch_shards(bg_remote_filter *f, bg_filter **out, uint32_t count)
{
    if (!out)
        return BG_EINVAL;
    for (uint32_t j = 0; j < count; j++)
        out[j] = NULL;
    if (!f || !f->ops->fetch_shards || count != f->shards)
        return BG_EINVAL;
    return f->ops->fetch_shards(f, out, count);
}

int bg_remote_filter_rebuild_begin(bg_remote_filter *f, const bg_remote_filter_options *opts)
{
    if (!f || !f->ops->rebuild_begin)
        return BG_EINVAL;
    return f->ops->rebuild_begin(f, opts);
}

int64_t bg_remote_filter_rebuild_add_many(bg_remote_filter *f, const void *const *keys,
                                          const size_t *lens, size_t count, uint8_t *results)
{
    if (!batch_ok(f, keys, lens, count))
        return BG_EINVAL;
    if (count == 0)
        return 0;
    bg__remote_allow_array(f->r, count);
    int64_t rc = f->ops->rebuild_add(f, keys, lens, count, results);
    bg__remote_allow_array(f->r, 0);
    return rc;
}

int bg_remote_filter_rebuild_commit(bg_remote_filter *f)
{
    if (!f)
        return BG_EINVAL;
    return f->ops->rebuild_commit(f);
}

int bg_remote_filter_set_rebuild_lease(bg_remote_filter *f, uint64_t lease_ms)
{
    if (!f || lease_ms == 0 || lease_ms > BG_REMOTE_MAX_REBUILD_LEASE_MS)
        return BG_EINVAL;
    f->rb_lease_ms = lease_ms;
    return BG_OK;
}

int bg_remote_filter_rebuild_abort(bg_remote_filter *f)
{
    if (!f || !f->ops->rebuild_abort)
        return BG_EINVAL;
    return f->ops->rebuild_abort(f);
}

bg_remote_backend bg_remote_filter_backend(const bg_remote_filter *f)
{
    return f ? f->backend : (bg_remote_backend)0;
}
uint64_t bg_remote_filter_bits(const bg_remote_filter *f)
{
    return f ? f->m : 0;
}
uint32_t bg_remote_filter_hashes(const bg_remote_filter *f)
{
    return f ? f->k : 0;
}
uint64_t bg_remote_filter_seed(const bg_remote_filter *f)
{
    return f ? f->seed : 0;
}
uint64_t bg_remote_filter_generation(const bg_remote_filter *f)
{
    return f ? f->generation : 0;
}

uint32_t bg_remote_filter_shards(const bg_remote_filter *f)
{
    return f ? f->shards : 0;
}
