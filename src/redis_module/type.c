/* SPDX-License-Identifier: BSD-3-Clause */
/* The data type's callbacks: RDB save and load (and so DUMP/RESTORE and
 * replication's full sync), AOF rewrite, COPY, MEMORY USAGE and DEBUG
 * DIGEST. Every one of them moves the filter as its file image, in the
 * pieces BF.SCANDUMP makes (chunks.h), so the one validating path, the
 * library's decoder behind bgr_assembly_finish, is the only way bytes from
 * outside become a filter.
 *
 * RDB PAYLOAD (encoding version BGR_ENCVER = 1)
 *
 *   unsigned  kind      0: a filter; 1: an assembly (LOADCHUNK in progress)
 *   unsigned  total     the image's length
 *   unsigned  have      kind 1 only: the bytes received so far (128 <= have < total)
 *   string    header    image bytes [0, 128)
 *   string... pieces    the image's next bytes, in order, each at most
 *                       BGR_CHUNK_MAX, up to total (kind 0) or have (kind 1)
 *
 * A loader takes pieces of any length from 1 byte up to what is left, so
 * the piece size can change without an encoding version. It refuses (logs,
 * frees, returns NULL: Redis then fails the load or the RESTORE, and keeps
 * running for a RESTORE) an unknown encoding version, any I/O error, a kind
 * or length out of range, a total above bgr_image_cap(MAX_BYTES) or a
 * filter whose own growth cap is above MAX_BYTES (checked before anything
 * is allocated, as for BF.LOADCHUNK: a RESTORE payload is a client's bytes
 * too; so a server started with a smaller MAX_BYTES than the one that
 * saved the data refuses it: raise MAX_BYTES first), and an image the
 * decoder refuses.
 *
 * Saving a filter reads it twice: once for the header's checksum, once for
 * the pieces, each piece copied into one reusable BGR_CHUNK_MAX buffer, so
 * no second copy of the image is ever in memory.
 *
 * A compact filter (module.h, THE VALUE) is saved, rewritten and digested
 * as the library's filter it stands for, made for the call: the payload,
 * the AOF and the digest are that filter's, so nothing here depends on
 * which form a key is in. A loaded filter becomes compact again when it
 * can (bgr_compact_from). */
#include <stdint.h>
#include <string.h>

#include "redis_module/module.h"

enum { KIND_FILTER = 0, KIND_ASSEMBLY = 1 };

/* An estimate of an assembly's own structure, for MEMORY USAGE. */
#define ASSEMBLY_STRUCT 64u

/* The robj and the moduleValue Redis allocates for a module type's value
 * (16 bytes each under jemalloc): its MEMORY USAGE counts the robj of its
 * own types, but leaves a module value's to the type. */
#define REDIS_VALUE 32u

/* Bit arrays from this size up are jemalloc "large" allocations (its
 * smallest large class, with 4 KiB pages), whole pages of an extent. */
#define LARGE_ARRAY (UINT64_C(16) << 10)

/* ---- walking an image's pieces -------------------------------------------- */

/* Called with each piece of a value's image in order: the header with
 * iterator 1, then each further piece with the iterator LOADCHUNK takes for
 * it. */
typedef void (*piece_fn)(void *arg, long long iter, const char *buf, size_t len);

/* The pieces of `v`: a filter's whole image, as SCANDUMP sends it, or an
 * assembly's bytes so far. */
static void each_piece(const bgr_value *v, piece_fn fn, void *arg)
{
    if (v->assembly != NULL) {
        const char *bytes = (const char *)bgr_assembly_bytes(v->assembly);
        uint64_t have = bgr_assembly_have(v->assembly);
        fn(arg, 1, bytes, BG_FILE_HEADER_BYTES);
        for (uint64_t at = BG_FILE_HEADER_BYTES; at < have;) {
            uint64_t n = have - at < BGR_CHUNK_MAX ? have - at : BGR_CHUNK_MAX;
            fn(arg, (long long)(at + n + 1), bytes + at, (size_t)n);
            at += n;
        }
        return;
    }
    uint64_t total;
    bg_filter_encoded_size(v->filter, &total);
    size_t cap = (size_t)(total < BGR_CHUNK_MAX ? total : BGR_CHUNK_MAX);
    char *buf = RedisModule_Alloc(cap);
    bgr_span s;
    for (bgr_scan_step(total, 0, BGR_CHUNK_MAX, &s); s.len != 0;
         bgr_scan_step(total, s.next, BGR_CHUNK_MAX, &s)) {
        bg_filter_encode_range(v->filter, s.offset, buf, (size_t)s.len);
        fn(arg, s.next, buf, (size_t)s.len);
    }
    RedisModule_Free(buf);
}

/* The value to read as a bgr_value: itself, or, for a compact filter, *tmp
 * holding the library's filter made from it; done_with frees that. */
static const bgr_value *readable(const void *value, bgr_value *tmp)
{
    if (!bgr_is_compact(value))
        return value;
    *tmp = (bgr_value){NULL, NULL};
    int rc = bgr_compact_expand(value, &tmp->filter);
    /* Cannot fail: a compact header is made only from a filter it rebuilds
     * (compact.c), and Redis's allocator never returns NULL. */
    RedisModule_Assert(rc == BG_OK);
    return tmp;
}

static void done_with(const bgr_value *v, const void *value)
{
    if (v != value)
        bg_filter_free(v->filter);
}

static uint64_t value_total(const bgr_value *v)
{
    if (v->assembly != NULL)
        return bgr_assembly_total(v->assembly);
    uint64_t total = 0;
    bg_filter_encoded_size(v->filter, &total);
    return total;
}

/* ---- RDB ---------------------------------------------------------------- */

static void save_piece(void *arg, long long iter, const char *buf, size_t len)
{
    (void)iter;
    RedisModule_SaveStringBuffer(arg, buf, len);
}

void bgr_rdb_save(RedisModuleIO *rdb, void *value)
{
    bgr_value tmp;
    const bgr_value *v = readable(value, &tmp);
    RedisModule_SaveUnsigned(rdb, v->assembly != NULL ? KIND_ASSEMBLY : KIND_FILTER);
    RedisModule_SaveUnsigned(rdb, value_total(v));
    if (v->assembly != NULL)
        RedisModule_SaveUnsigned(rdb, bgr_assembly_have(v->assembly));
    each_piece(v, save_piece, rdb);
    done_with(v, value);
}

/* Logs why a load failed and frees what it had; returns NULL for
 * bgr_rdb_load to return. */
static void *load_failed(RedisModuleIO *rdb, bgr_assembly *a, const char *why, int rc)
{
    bgr_assembly_free(a);
    if (rc != 0)
        RedisModule_LogIOError(rdb, "warning", "bloomgate: RDB value refused: %s (%s)", why,
                               bgr_status_name(rc));
    else
        RedisModule_LogIOError(rdb, "warning", "bloomgate: RDB value refused: %s", why);
    return NULL;
}

/* One string piece, or NULL after an I/O error (logged by the caller). */
static char *load_piece(RedisModuleIO *rdb, size_t *len)
{
    char *p = RedisModule_LoadStringBuffer(rdb, len);
    if (RedisModule_IsIOError(rdb)) {
        if (p != NULL)
            RedisModule_Free(p);
        return NULL;
    }
    return p;
}

void *bgr_rdb_load(RedisModuleIO *rdb, int encver)
{
    if (encver < 1 || encver > BGR_ENCVER) {
        RedisModule_LogIOError(rdb, "warning",
                               "bloomgate: RDB encoding version %d is not one this module "
                               "reads (1..%d): refusing, not guessing",
                               encver, BGR_ENCVER);
        return NULL;
    }
    uint64_t kind = RedisModule_LoadUnsigned(rdb);
    if (RedisModule_IsIOError(rdb))
        return load_failed(rdb, NULL, "I/O error", 0);
    uint64_t total = RedisModule_LoadUnsigned(rdb);
    if (RedisModule_IsIOError(rdb))
        return load_failed(rdb, NULL, "I/O error", 0);
    if (kind != KIND_FILTER && kind != KIND_ASSEMBLY)
        return load_failed(rdb, NULL, "unknown kind", 0);
    uint64_t have = total;
    if (kind == KIND_ASSEMBLY) {
        have = RedisModule_LoadUnsigned(rdb);
        if (RedisModule_IsIOError(rdb))
            return load_failed(rdb, NULL, "I/O error", 0);
        if (have < BG_FILE_HEADER_BYTES || have >= total)
            return load_failed(rdb, NULL, "bytes received out of range", 0);
    }
    uint64_t cap = bgr_image_cap(bgr_cfg.max_bytes);
    if (total < BG_FILE_HEADER_BYTES || total > cap)
        return load_failed(rdb, NULL, "image length out of range (above MAX_BYTES?)", 0);

    size_t len;
    char *p = load_piece(rdb, &len);
    if (p == NULL)
        return load_failed(rdb, NULL, "I/O error", 0);
    bgr_assembly *a;
    int rc = bgr_assembly_begin(&a, p, len, cap, bgr_cfg.max_bytes);
    RedisModule_Free(p);
    if (rc != BG_OK)
        return load_failed(rdb, NULL, "bad header", rc);
    if (bgr_assembly_total(a) != total)
        return load_failed(rdb, a, "header and length disagree", 0);
    while (bgr_assembly_have(a) < have) {
        if ((p = load_piece(rdb, &len)) == NULL)
            return load_failed(rdb, a, "I/O error", 0);
        uint64_t at = bgr_assembly_have(a);
        rc = len == 0 || len > have - at ? BGR_EORDER
                                         : bgr_assembly_feed(a, (long long)(at + len + 1), p, len);
        RedisModule_Free(p);
        if (rc < 0)
            return load_failed(rdb, a, "bad piece", rc);
    }
    bgr_value *v = bgr_value_wrap(NULL);
    if (kind == KIND_ASSEMBLY) {
        v->assembly = a;
        return v;
    }
    bg_filter *f;
    rc = bgr_assembly_finish(a, &f);
    bgr_assembly_free(a);
    if (rc != BG_OK) {
        bgr_value_free(v);
        return load_failed(rdb, NULL, "bad image", rc);
    }
    v->filter = f;
    bgr_compact *c = bgr_compact_from(f, false);
    if (c == NULL)
        return v;
    bgr_value_free(v);
    return c;
}

/* ---- AOF rewrite ----------------------------------------------------------- */

typedef struct aof_arg {
    RedisModuleIO *aof;
    RedisModuleString *key;
} aof_arg;

static void emit_piece(void *arg, long long iter, const char *buf, size_t len)
{
    aof_arg *a = arg;
    RedisModule_EmitAOF(a->aof, "BF.LOADCHUNK", "slb", a->key, iter, buf, len);
}

/* BF.LOADCHUNK key <iter> <piece> for each piece, the header first: what a
 * client replaying SCANDUMP sends. An assembly is rewritten as its chunks
 * so far, and stays an assembly after the AOF is loaded. */
void bgr_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value)
{
    aof_arg a = {aof, key};
    bgr_value tmp;
    const bgr_value *v = readable(value, &tmp);
    each_piece(v, emit_piece, &a);
    done_with(v, value);
}

/* ---- MEMORY USAGE, COPY, DEBUG DIGEST ----------------------------------------- */

/* MEMORY USAGE: what the value holds from Redis's allocator. A small
 * filter's blocks count as jemalloc sized them (RedisModule_MallocSize):
 * its size classes are slab regions, every byte of them taken. A large bit
 * array is an extent of whole pages rounded up to a large size class (up to
 * 25% more), whose pages past the array are never touched, so a filter
 * whose arrays reach LARGE_ARRAY counts the bytes it asked for. */
size_t bgr_mem_usage(const void *value)
{
    const bgr_value *v = value;
    bool small = bgr_is_compact(value) || v->filter == NULL ||
                 bg_filter_bytes(v->filter) < LARGE_ARRAY;
    return bgr_value_size(v, small) + REDIS_VALUE;
}

/* bg_filter_memory walks the library's blocks without scanning any bits:
 * O(layers), as MEMORY USAGE and BF.INFO must be. A compact filter is one
 * block. */
size_t bgr_value_size(const void *value, bool allocated)
{
    if (bgr_is_compact(value))
        return allocated ? RedisModule_MallocSize((void *)(uintptr_t)value)
                         : bgr_compact_size(value);
    const bgr_value *v = value;
    size_t n = allocated ? RedisModule_MallocSize((void *)(uintptr_t)v) : sizeof *v;
    if (v->filter != NULL)
        n += (size_t)bg_filter_memory(v->filter, allocated ? RedisModule_MallocSize : NULL);
    if (v->assembly != NULL)
        n += (size_t)bgr_assembly_total(v->assembly) + ASSEMBLY_STRUCT;
    return n;
}

void *bgr_copy(RedisModuleString *fromkey, RedisModuleString *tokey, const void *value)
{
    (void)fromkey;
    (void)tokey;
    if (bgr_is_compact(value))
        return bgr_compact_clone(value);
    const bgr_value *v = value;
    if (v->assembly != NULL) {
        bgr_assembly *a = bgr_assembly_clone(v->assembly);
        if (a == NULL)
            return NULL;
        bgr_value *c = bgr_value_wrap(NULL);
        c->assembly = a;
        return c;
    }
    /* COPY runs on Redis's main thread: one allocation per array and one
     * pass over it (bg_filter_clone), not an image made and read back. */
    bg_filter *f = NULL;
    if (bg_filter_clone(&f, v->filter) != BG_OK)
        return NULL;
    return bgr_value_wrap(f);
}

static void digest_piece(void *arg, long long iter, const char *buf, size_t len)
{
    (void)iter;
    RedisModule_DigestAddStringBuffer(arg, buf, len);
}

/* The image's bytes, as one sequence; an assembly's bytes so far after a
 * marker, so that it never digests like a filter. */
void bgr_digest(RedisModuleDigest *md, void *value)
{
    bgr_value tmp;
    const bgr_value *v = readable(value, &tmp);
    if (v->assembly != NULL)
        RedisModule_DigestAddLongLong(md, -1);
    each_piece(v, digest_piece, md);
    RedisModule_DigestEndSequence(md);
    done_with(v, value);
}
