/* SPDX-License-Identifier: BSD-3-Clause */
/* The second data type, RedisBloom's own `MBbloom--`: its callbacks (RDB
 * load and save, AOF rewrite, COPY, MEMORY USAGE, DEBUG DIGEST, lazy-free
 * effort) over BG_VARIANT_REDISBLOOM filters, and BF.SCANDUMP /
 * BF.LOADCHUNK on such keys. A key of this type holds a bgr_value whose
 * filter is that variant (never an assembly: RedisBloom's LOADCHUNK header
 * makes the whole chain at once, its arrays zeroed).
 *
 * Everything written is what RedisBloom 2.6.28 writes: RDB encoding
 * version 4 in its field order (rb_rdb.c), so that DUMP of an unchanged key
 * is RedisBloom's DUMP byte for byte and a server running RedisBloom loads
 * what this one saved; AOF rewrite as its BF.LOADCHUNK commands; SCANDUMP
 * as its header and chunks (docs/REDISBLOOM_FORMAT.md sections 6 to 9). */
#include <stdint.h>
#include <string.h>

#include "redis_module/module.h"

#define E_BAD_DATA "ERR received bad data"
#define E_NO_LINK "ERR invalid offset - no link found"
#define E_TOO_BIG "ERR invalid chunk - Too big for current filter"
#define E_CREATE "ERR could not create filter"

/* ---- RDB ------------------------------------------------------------------- */

static int io_unsigned(void *io, uint64_t *out)
{
    *out = RedisModule_LoadUnsigned(io);
    return RedisModule_IsIOError(io) ? -1 : 0;
}

static int io_double(void *io, double *out)
{
    *out = RedisModule_LoadDouble(io);
    return RedisModule_IsIOError(io) ? -1 : 0;
}

static void *io_string(void *io, size_t *len)
{
    char *p = RedisModule_LoadStringBuffer(io, len);
    if (RedisModule_IsIOError(io)) {
        if (p != NULL)
            RedisModule_Free(p);
        return NULL;
    }
    return p;
}

static void io_free(void *io, void *buf)
{
    (void)io;
    RedisModule_Free(buf);
}

void *bgr_rb_rdb_load_cb(RedisModuleIO *rdb, int encver)
{
    /* RedisModule_LoadStringBuffer's buffers come from Redis's allocator,
     * which is the library's (module.c, OnLoad): adopted, not copied. */
    bgr_rdb_reader r = {rdb, io_unsigned, io_double, io_string, io_free, true};
    bg_filter *f;
    const char *why = "";
    int rc = bgr_rb_rdb_load(&r, encver, bgr_cfg.max_bytes, &f, &why);
    if (rc != BG_OK) {
        RedisModule_LogIOError(rdb, "warning",
                               "bloomgate: %s value (encver %d) refused: %s (%s)",
                               BGR_RB_TYPE_NAME, encver, why,
                               rc == BGR_RDB_EREAD     ? "BGR_RDB_EREAD"
                               : rc == BGR_RDB_EENCVER ? "BGR_RDB_EENCVER"
                                                       : bg_err_name(rc));
        return NULL;
    }
    return bgr_value_wrap(f);
}

static void io_save_unsigned(void *io, uint64_t v)
{
    RedisModule_SaveUnsigned(io, v);
}

static void io_save_double(void *io, double v)
{
    RedisModule_SaveDouble(io, v);
}

static void io_save_string(void *io, const void *buf, size_t len)
{
    RedisModule_SaveStringBuffer(io, buf, len);
}

void bgr_rb_rdb_save_cb(RedisModuleIO *rdb, void *value)
{
    const bgr_value *v = value;
    bgr_rdb_writer w = {rdb, io_save_unsigned, io_save_double, io_save_string};
    (void)bgr_rb_rdb_save(&w, v->filter);
}

/* ---- the chunk sequence ------------------------------------------------------- */

/* A new buffer holding f's SCANDUMP header, *len its length; NULL when out
 * of memory. Free with RedisModule_Free. */
static char *header_of(const bg_filter *f, size_t *len)
{
    size_t n = bg_rb_header_size(f);
    char *buf = RedisModule_Alloc(n);
    if (bg_rb_header_encode(f, buf, n, len) != BG_OK) {
        RedisModule_Free(buf);
        return NULL;
    }
    return buf;
}

typedef void (*chunk_fn)(void *arg, long long iter, const char *buf, size_t len);

/* f's SCANDUMP sequence, as BF.LOADCHUNK takes it: the header with
 * iterator 1, then each chunk with the iterator SCANDUMP answers after it. */
static void each_chunk(const bg_filter *f, chunk_fn fn, void *arg)
{
    size_t hlen;
    char *header = header_of(f, &hlen);
    if (header == NULL)
        return;
    fn(arg, 1, header, hlen);
    RedisModule_Free(header);
    int64_t it = 1, next;
    const uint8_t *data;
    size_t len;
    while (bg_rb_dump_chunk(f, it, &next, &data, &len) == 0 && next != 0) {
        fn(arg, next, (const char *)data, len);
        it = next;
    }
}

/* ---- AOF rewrite ------------------------------------------------------------------ */

typedef struct aof_arg {
    RedisModuleIO *aof;
    RedisModuleString *key;
} aof_arg;

static void emit_chunk(void *arg, long long iter, const char *buf, size_t len)
{
    aof_arg *a = arg;
    RedisModule_EmitAOF(a->aof, "BF.LOADCHUNK", "slb", a->key, iter, buf, len);
}

/* RedisBloom's rewrite: BF.LOADCHUNK key 1 <header>, then BF.LOADCHUNK key
 * <it> <chunk> for every chunk of the SCANDUMP sequence. */
void bgr_rb_aof_rewrite_cb(RedisModuleIO *aof, RedisModuleString *key, void *value)
{
    const bgr_value *v = value;
    aof_arg a = {aof, key};
    each_chunk(v->filter, emit_chunk, &a);
}

/* ---- MEMORY USAGE, COPY, DEBUG DIGEST, lazy free ------------------------------------ */

/* MEMORY USAGE of an MBbloom-- key is RedisBloom's own accounting, BF.INFO
 * Size: the number a dashboard showed before the switch stays the number it
 * shows. Like RedisBloom's it is a floor: the module's blocks take about 200
 * bytes per key more than the formula counts (its chain block and Redis's
 * value wrappers against RedisBloom's 32-byte chain; 56 bytes per link
 * against 64), and jemalloc rounds each block up to its size class
 * (docs/REDIS.md has measurements). */
size_t bgr_rb_mem_usage_cb(const void *value)
{
    const bgr_value *v = value;
    return (size_t)bgr_rb_info_size(v->filter);
}

size_t bgr_rb_free_effort_cb(RedisModuleString *key, const void *value)
{
    (void)key;
    return 1 + bgr_rb_mem_usage_cb(value) / 4096;
}

void *bgr_rb_copy_cb(RedisModuleString *fromkey, RedisModuleString *tokey, const void *value)
{
    (void)fromkey;
    (void)tokey;
    const bgr_value *v = value;
    bg_filter *f = NULL;
    if (bg_filter_clone(&f, v->filter) != BG_OK)
        return NULL;
    return bgr_value_wrap(f);
}

static void digest_chunk(void *arg, long long iter, const char *buf, size_t len)
{
    (void)iter;
    RedisModule_DigestAddStringBuffer(arg, buf, len);
}

/* The header (every field of the chain and its links) and the arrays: two
 * keys digest alike exactly when RedisBloom would store the same value. */
void bgr_rb_digest_cb(RedisModuleDigest *md, void *value)
{
    const bgr_value *v = value;
    each_chunk(v->filter, digest_chunk, md);
    RedisModule_DigestEndSequence(md);
}

/* ---- BF.SCANDUMP / BF.LOADCHUNK --------------------------------------------------- */

int bgr_rb_scandump(RedisModuleCtx *ctx, const bg_filter *f, long long iter)
{
    int64_t next;
    const uint8_t *data;
    size_t len;
    int rc = bg_rb_dump_chunk(f, iter, &next, &data, &len);
    if (rc < 0)
        return RedisModule_ReplyWithError(ctx, "ERR could not encode filter");
    if (rc == 1) {
        size_t hlen;
        char *header = header_of(f, &hlen);
        if (header == NULL)
            return RedisModule_ReplyWithError(ctx, "ERR could not encode filter");
        RedisModule_ReplyWithArray(ctx, 2);
        RedisModule_ReplyWithLongLong(ctx, 1);
        RedisModule_ReplyWithStringBuffer(ctx, header, hlen);
        RedisModule_Free(header);
        return REDISMODULE_OK;
    }
    RedisModule_ReplyWithArray(ctx, 2);
    RedisModule_ReplyWithLongLong(ctx, next);
    return RedisModule_ReplyWithStringBuffer(ctx, len ? (const char *)data : "", len);
}

int bgr_rb_load_header(RedisModuleCtx *ctx, RedisModuleKey *key, const char *data, size_t len)
{
    bg_filter *f;
    int rc = bg_rb_header_decode(&f, data, len, bgr_cfg.max_bytes);
    if (rc != BG_OK)
        return RedisModule_ReplyWithError(ctx, rc == BG_ENOMEM ? E_CREATE : E_BAD_DATA);
    bgr_value *v = bgr_value_wrap(f);
    if (RedisModule_ModuleTypeSetValue(key, bgr_rb_type, v) != REDISMODULE_OK) {
        bgr_value_free(v);
        return RedisModule_ReplyWithError(ctx, E_CREATE);
    }
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

int bgr_rb_load_chunk(RedisModuleCtx *ctx, bg_filter *f, long long iter, const char *data,
                      size_t len)
{
    int rc = bg_rb_load_chunk(f, iter, data, len);
    switch (rc) {
    case BG_OK:
        RedisModule_ReplicateVerbatim(ctx);
        return RedisModule_ReplyWithSimpleString(ctx, "OK");
    case BG_EOFFSET:
        return RedisModule_ReplyWithError(ctx, E_NO_LINK);
    case BG_ECHUNK:
        return RedisModule_ReplyWithError(ctx, E_TOO_BIG);
    default:
        return RedisModule_ReplyWithError(ctx, E_BAD_DATA);
    }
}

int bgr_rb_replicate_creation(RedisModuleCtx *ctx, RedisModuleString *name, const bg_filter *f)
{
    size_t hlen;
    char *header = header_of(f, &hlen);
    if (header == NULL)
        return REDISMODULE_ERR;
    RedisModule_Replicate(ctx, "BF.LOADCHUNK", "slb", name, 1LL, header, hlen);
    RedisModule_Free(header);
    return REDISMODULE_OK;
}
