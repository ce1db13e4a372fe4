/* SPDX-License-Identifier: BSD-3-Clause */
/* BF.SCANDUMP and BF.LOADCHUNK: a filter out of Redis and back in pieces,
 * with RedisBloom's arity, iterators and error strings (REDISBLOOM.md
 * section 9), over the chunk protocol of chunks.h. What follows is about
 * bloomgate's own keys; MBbloom-- keys, and a RedisBloom header sent to a
 * missing key, follow RedisBloom's rules exactly (rb_type.c).
 *
 * HOW IT WORKS
 * SCANDUMP k 0 answers the image's 128-byte header (whose checksum makes
 * this one call read the whole filter), and each later call the next range
 * of at most BGR_CHUNK_MAX bytes, straight from the filter into the reply
 * buffer (bg_filter_encode_range): no copy of the image is kept between
 * calls. LOADCHUNK k 1 <header> on a missing key creates the key holding an
 * assembly (bgr_value.assembly), which only LOADCHUNK and the persistence
 * callbacks (type.c) will touch (a header on a key being loaded replaces
 * its assembly: the load starts over); each next chunk is appended; the one that
 * completes the image is decoded, and the key then holds the filter. If the
 * complete image is refused by the decoder, the key is deleted: it did not
 * exist before the header, and half a filter must not stay behind.
 *
 * DIFFERENCES FROM REDISBLOOM (docs/REDIS.md)
 * - Chunks belong to one image and go to a key being assembled, in order,
 *   each once. A chunk for a key that holds a complete filter is refused
 *   ("ERR received bad data"): RedisBloom writes such a chunk's bytes into
 *   the live filter's bits, a way to change a filter behind its counters.
 * - Nothing a client sends is used before the library's decoder validated
 *   the whole image, checksum included, and a header's claimed size is
 *   capped (MAX_BYTES) before anything is allocated, and so is the size
 *   the filter may grow to later: RedisBloom allocates what a 52-byte
 *   header asks for (1 PiB aborts the server).
 * - SCANDUMP of a key still being assembled: "ERR filter is being loaded by
 *   BF.LOADCHUNK" (bgr_open). */
#include <limits.h>
#include <stdint.h>

#include "redis_module/module.h"

#define E_NOT_FOUND "ERR not found"
#define E_SCAN_ITER "Second argument must be numeric" /* sic: no "ERR " */
#define E_LOAD_ITER "ERR Second argument must be numeric"
#define E_BAD_DATA "ERR received bad data"
#define E_NO_LINK "ERR invalid offset - no link found"
#define E_TOO_BIG "ERR invalid chunk - Too big for current filter"

int bgr_cmd_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    /* The key before the iterator, in RedisBloom's order: a wrong-type or
     * missing key is reported whatever the iterator says. */
    RedisModuleKey *key;
    void *val;
    if (bgr_open(ctx, argv[1], REDISMODULE_READ, &key, &val, 0) != REDISMODULE_OK)
        return REDISMODULE_OK;
    if (val == NULL)
        return RedisModule_ReplyWithError(ctx, E_NOT_FOUND);
    long long iter;
    if (RedisModule_StringToLongLong(argv[2], &iter) != REDISMODULE_OK)
        return RedisModule_ReplyWithError(ctx, E_SCAN_ITER);
    if (bgr_is_rb(val))
        return bgr_rb_scandump(ctx, ((bgr_value *)val)->filter, iter);

    /* A compact filter is dumped as the library's filter it stands for,
     * made for this call (module.h, THE VALUE): a small one, so each call
     * costs little more than its reply. */
    bg_filter *made = NULL;
    if (bgr_is_compact(val) && bgr_compact_expand(val, &made) != BG_OK)
        return RedisModule_ReplyWithError(ctx, "ERR could not encode filter");
    const bg_filter *f = made != NULL ? made : ((bgr_value *)val)->filter;
    uint64_t total;
    bgr_span s = {0, 0, 0};
    int rc = bg_filter_encoded_size(f, &total);
    if (rc == BG_OK)
        bgr_scan_step(total, iter, BGR_CHUNK_MAX, &s);
    char *buf = rc == BG_OK && s.len != 0 ? RedisModule_Alloc((size_t)s.len) : NULL;
    if (buf != NULL)
        rc = bg_filter_encode_range(f, s.offset, buf, (size_t)s.len);
    bg_filter_free(made);
    if (rc != BG_OK) {
        RedisModule_Free(buf);
        return RedisModule_ReplyWithError(ctx, "ERR could not encode filter");
    }
    RedisModule_ReplyWithArray(ctx, 2);
    if (s.len == 0) {
        RedisModule_ReplyWithLongLong(ctx, 0);
        return RedisModule_ReplyWithStringBuffer(ctx, "", 0);
    }
    RedisModule_ReplyWithLongLong(ctx, s.next);
    RedisModule_ReplyWithStringBuffer(ctx, buf, (size_t)s.len);
    RedisModule_Free(buf);
    return REDISMODULE_OK;
}

/* The reply for a chunk status of chunks.h (negative). */
static int reply_chunk_error(RedisModuleCtx *ctx, int rc)
{
    switch (rc) {
    case BGR_EOFFSET:
        return RedisModule_ReplyWithError(ctx, E_NO_LINK);
    case BGR_ECHUNKBIG:
        return RedisModule_ReplyWithError(ctx, E_TOO_BIG);
    case BG_ENOMEM:
        return RedisModule_ReplyWithError(ctx, "ERR could not create filter");
    default: /* BGR_EITER, BGR_EORDER, BGR_ECAP, and the decoder's TRUST statuses */
        return RedisModule_ReplyWithError(ctx, E_BAD_DATA);
    }
}

/* A header: an assembly in a new value at a missing `key`, or in place of
 * the assembly of a key being loaded (`val`), which then starts over. A
 * refused header changes nothing. */
static int load_header(RedisModuleCtx *ctx, RedisModuleKey *key, bgr_value *val, const char *data,
                       size_t len)
{
    bgr_assembly *a;
    int rc = bgr_assembly_begin(&a, data, len, bgr_image_cap(bgr_cfg.max_bytes), bgr_cfg.max_bytes);
    if (rc != BG_OK)
        return reply_chunk_error(ctx, rc);
    if (val != NULL) {
        bgr_assembly_free(val->assembly);
        val->assembly = a;
    } else {
        bgr_value *v = bgr_value_wrap(NULL);
        v->assembly = a;
        RedisModule_ModuleTypeSetValue(key, bgr_type, v);
    }
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* A chunk for a key being assembled; the last one turns it into a filter
 * (compact if it can be: module.h, THE VALUE), or, if the decoder refuses
 * the image, deletes it. */
static int load_chunk(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleKey *key,
                      bgr_value *val, long long iter, const char *data, size_t len)
{
    int rc = bgr_assembly_feed(val->assembly, iter, data, len);
    if (rc < 0)
        return reply_chunk_error(ctx, rc);
    if (rc == 0) {
        RedisModule_ReplicateVerbatim(ctx);
        return RedisModule_ReplyWithSimpleString(ctx, "OK");
    }
    bg_filter *f;
    rc = bgr_assembly_finish(val->assembly, &f);
    if (rc != BG_OK) {
        /* The replicas hold the same assembly (they got the header and
         * every chunk): they lose the key too. */
        RedisModule_DeleteKey(key);
        RedisModule_Replicate(ctx, "DEL", "s", name);
        return RedisModule_ReplyWithError(ctx, rc == BG_ENOMEM ? "ERR could not create filter"
                                                               : E_BAD_DATA);
    }
    bgr_assembly_free(val->assembly);
    val->assembly = NULL;
    val->filter = f;
    bgr_compact *c = bgr_compact_from(f, false);
    void *old = NULL;
    if (c != NULL && RedisModule_ModuleTypeReplaceValue(key, bgr_type, c, &old) == REDISMODULE_OK)
        bgr_value_free(old);
    else
        bgr_compact_free(c);
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

int bgr_cmd_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 4)
        return RedisModule_WrongArity(ctx);
    long long iter;
    if (RedisModule_StringToLongLong(argv[2], &iter) != REDISMODULE_OK)
        return RedisModule_ReplyWithError(ctx, E_LOAD_ITER);
    size_t len;
    const char *data = RedisModule_StringPtrLen(argv[3], &len);
    RedisModuleKey *key;
    void *value;
    if (bgr_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, &value, 1) !=
        REDISMODULE_OK)
        return REDISMODULE_OK;
    bgr_value *val = value;
    if (val == NULL) {
        if (iter != 1)
            return RedisModule_ReplyWithError(ctx, E_NOT_FOUND);
        /* Two headers, two types (rb_rdb.h, bgr_header_is_bloomgate). */
        if (!bgr_header_is_bloomgate(data, len))
            return bgr_rb_load_header(ctx, key, data, len);
        return load_header(ctx, key, NULL, data, len);
    }
    /* RedisBloom's rules on its keys: chunks go into the live links. */
    if (bgr_is_rb(val))
        return bgr_rb_load_chunk(ctx, val->filter, iter, data, len);
    /* Neither a header nor a chunk ever touches a filter. */
    if (bgr_is_compact(val) || val->assembly == NULL)
        return RedisModule_ReplyWithError(ctx, E_BAD_DATA);
    /* A header restarts a load: after a refused chunk (a source that grew a
     * layer between two SCANDUMP calls gives one too big for the first
     * image) or a loader that gave up, dumping again must work without a
     * DEL first. */
    if (iter == 1)
        return load_header(ctx, key, val, data, len);
    return load_chunk(ctx, argv[1], key, val, iter, data, len);
}
