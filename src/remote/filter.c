/* Filter handles: argument checks, then the backend (bitmap.c, module.c). */
#include <stdio.h>
#include <string.h>

#include "core/alloc_internal.h"
#include "remote_internal.h"

/* A name goes inside a hash tag, so braces would change the slot. */
static int name_ok(const char *name)
{
    return name && name[0] && !strchr(name, '{') && !strchr(name, '}') && strlen(name) <= 1024;
}

static int handle_new(bg_remote_filter **out, bg_remote *r, const char *name,
                      bg_remote_backend backend)
{
    bg_remote_filter *f = bg__calloc(1, sizeof *f);
    if (!f)
        return BG_ENOMEM;
    f->r = r;
    f->backend = backend;
    f->name = bg__strdup(name);
    size_t n = strlen(name) + 8;
    f->meta_key = bg__malloc(n);
    if (!f->name || !f->meta_key) {
        bg_remote_filter_close(f);
        return BG_ENOMEM;
    }
    snprintf(f->meta_key, n, "{%s}:meta", name);
    *out = f;
    return BG_OK;
}

int bg_remote_filter_create(bg_remote_filter **out, bg_remote *r, const char *name,
                            const bg_remote_filter_options *o)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!r || !o || !name_ok(name))
        return BG_EINVAL;
    if (o->backend != BG_REMOTE_BITMAP && o->backend != BG_REMOTE_MODULE)
        return BG_EINVAL;
    bg_remote_filter *f;
    int rc = handle_new(&f, r, name, o->backend);
    if (rc != BG_OK)
        return rc;
    rc = o->backend == BG_REMOTE_BITMAP ? bg__bitmap_create(f, o) : bg__module_create(f, o);
    if (rc != BG_OK) {
        bg_remote_filter_close(f);
        return rc;
    }
    *out = f;
    return BG_OK;
}

int bg_remote_filter_open(bg_remote_filter **out, bg_remote *r, const char *name,
                          bg_remote_backend backend)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!r || !name_ok(name) || (backend != BG_REMOTE_BITMAP && backend != BG_REMOTE_MODULE))
        return BG_EINVAL;
    bg_remote_filter *f;
    int rc = handle_new(&f, r, name, backend);
    if (rc != BG_OK)
        return rc;
    rc = backend == BG_REMOTE_BITMAP ? bg__bitmap_open(f) : bg__module_open(f);
    if (rc != BG_OK) {
        bg_remote_filter_close(f);
        return rc;
    }
    *out = f;
    return BG_OK;
}

void bg_remote_filter_close(bg_remote_filter *f)
{
    if (!f)
        return;
    bg__free(f->name);
    bg__free(f->meta_key);
    bg__free(f->bits_key);
    bg__free(f->rb_bits_key);
    bg__free(f);
}

static int64_t run(bg_remote_filter *f, int add, const void *const *keys, const size_t *lens,
                   size_t count, uint8_t *results)
{
    if (!f || (count && (!keys || !lens)))
        return BG_EINVAL;
    for (size_t i = 0; i < count; i++)
        if (!keys[i] && lens[i])
            return BG_EINVAL;
    if (count > (size_t)INT32_MAX)
        return BG_EINVAL;
    if (count == 0)
        return 0;
    return f->backend == BG_REMOTE_BITMAP ? bg__bitmap_run(f, add, keys, lens, count, results)
                                          : bg__module_run(f, add, keys, lens, count, results);
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
    return f->backend == BG_REMOTE_BITMAP ? bg__bitmap_stats(f, out) : bg__module_stats(f, out);
}

int bg_remote_filter_drop(bg_remote_filter *f)
{
    if (!f)
        return BG_EINVAL;
    return f->backend == BG_REMOTE_BITMAP ? bg__bitmap_drop(f) : bg__module_drop(f);
}

int bg_remote_filter_expire(bg_remote_filter *f, uint64_t ttl_ms)
{
    if (!f || ttl_ms == 0 || ttl_ms > (uint64_t)INT64_MAX / 2)
        return BG_EINVAL;
    return f->backend == BG_REMOTE_BITMAP ? bg__bitmap_expire(f, ttl_ms)
                                          : bg__module_expire(f, ttl_ms);
}

int bg_remote_filter_publish(bg_remote *r, const char *name, const bg_filter *local)
{
    if (!r || !local || !name_ok(name))
        return BG_EINVAL;
    return bg__bitmap_publish(r, name, local);
}

int bg_remote_filter_fetch(bg_remote_filter *f, bg_filter **out)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!f || f->backend != BG_REMOTE_BITMAP)
        return BG_EINVAL;
    return bg__bitmap_fetch(f, out);
}

int bg_remote_filter_rebuild_begin(bg_remote_filter *f, const bg_remote_filter_options *opts)
{
    if (!f || f->backend != BG_REMOTE_BITMAP)
        return BG_EINVAL;
    return bg__bitmap_rebuild_begin(f, opts);
}

int64_t bg_remote_filter_rebuild_add_many(bg_remote_filter *f, const void *const *keys,
                                          const size_t *lens, size_t count, uint8_t *results)
{
    if (!f || f->backend != BG_REMOTE_BITMAP || (count && (!keys || !lens)))
        return BG_EINVAL;
    for (size_t i = 0; i < count; i++)
        if (!keys[i] && lens[i])
            return BG_EINVAL;
    if (count > (size_t)INT32_MAX)
        return BG_EINVAL;
    if (count == 0)
        return 0;
    return bg__bitmap_rebuild_add(f, keys, lens, count, results);
}

int bg_remote_filter_rebuild_commit(bg_remote_filter *f)
{
    if (!f || f->backend != BG_REMOTE_BITMAP)
        return BG_EINVAL;
    return bg__bitmap_rebuild_commit(f);
}

int bg_remote_filter_rebuild_abort(bg_remote_filter *f)
{
    if (!f || f->backend != BG_REMOTE_BITMAP)
        return BG_EINVAL;
    return bg__bitmap_rebuild_abort(f);
}

void bg__remote_filter_set_mode(bg_remote_filter *f, bg__bitmap_mode mode)
{
    if (f)
        f->mode = mode;
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
