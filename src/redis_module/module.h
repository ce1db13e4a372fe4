/* SPDX-License-Identifier: BSD-3-Clause */
/* The Redis module (bloomgate.so): RedisBloom's BF.* commands on bloomgate's
 * scalable filters. Internal to the module; the library knows nothing of
 * Redis, and this adapter is all the Redis-specific code there is.
 *
 *   module.c    RedisModule_OnLoad: arguments, allocator, type, commands
 *   commands.c  BF.RESERVE, ADD, MADD, EXISTS, MEXISTS, INSERT, INFO, CARD
 *   compact.c   small one-layer filters in one block (THE VALUE)
 *   type.c      the data type: RDB, AOF rewrite, DUMP/RESTORE, COPY,
 *               MEMORY USAGE, DEBUG DIGEST
 *   dump.c      BF.SCANDUMP and BF.LOADCHUNK
 *   chunks.c    the chunk codec under dump.c and type.c, free of Redis so
 *               that a fuzzer can drive it (chunks.h)
 *   rb_type.c   the second type, RedisBloom's MBbloom--: its callbacks and
 *               BF.SCANDUMP / BF.LOADCHUNK on its keys
 *   rb_rdb.c    its RDB value field by field, free of Redis (rb_rdb.h)
 *
 * Behaviour, reply by reply, is docs/REDIS.md; RedisBloom's is
 * ../shared/reference/REDISBLOOM.md. */
#ifndef BG_REDIS_MODULE_H
#define BG_REDIS_MODULE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <bloomgate/bloomgate.h>

#include "redismodule.h"
#include "redis_module/chunks.h"
#include "redis_module/rb_rdb.h"

/* The data type's name (exactly 9 characters, Redis's rule; the remote
 * client's module queries check it: src/remote/lua/module_query.lua) and
 * the encoding version of its RDB payload (type.c). */
#define BGR_TYPE_NAME "bloomgate"
#define BGR_ENCVER 1

/* Every filter the module makes hashes with this seed: the answers must be
 * the same on every replica and after every reload, so it cannot be random
 * per key (a replica replays BF.RESERVE). */
#define BGR_SEED UINT64_C(0)

/* Module arguments (`loadmodule bloomgate.so NAME VALUE ...`), defaults in
 * module.c and docs/REDIS.md. */
typedef struct bgr_config {
    double error_rate;        /* ERROR_RATE: auto-created filters (0.01) */
    uint64_t initial_size;    /* INITIAL_SIZE: their capacity (100) */
    uint32_t expansion;       /* EXPANSION: their growth (2) */
    uint64_t max_bytes;       /* MAX_BYTES: cap on one key's bit arrays */
    bg_variant layer_variant; /* LAYERS standard|blocked */
    bool layers_auto;         /* LAYERS auto: chosen per filter (bgr_filter_new) */
    int compat;               /* COMPAT / bloomgate.compat: what new keys are */
} bgr_config;

/* The values of COMPAT: new filters are bloomgate's own type, or
 * RedisBloom's MBbloom-- (BG_VARIANT_REDISBLOOM, rb_type.c). */
enum { BGR_COMPAT_BLOOMGATE = 0, BGR_COMPAT_REDISBLOOM = 1 };

extern bgr_config bgr_cfg;
extern RedisModuleType *bgr_type;    /* "bloomgate" */
extern RedisModuleType *bgr_rb_type; /* "MBbloom--" */

/* THE VALUE
 * What a key of our type holds, the value Redis keeps for it (a `void *`
 * in the type's callbacks and in bgr_open), is one of two things:
 *   - a compact filter (bgr_compact, compact.c): a filter of one standard
 *     layer, small, as one block of a 16-byte header and its bits. Most
 *     keys are such small filters, and this form costs about half of what
 *     the library's filter and a bgr_value cost together. It is turned into
 *     the library's filter, with the same bits, when it must grow (an add
 *     to a full scaling one) and, for the time of a call, for the rare
 *     operations (BF.SCANDUMP, RDB save, AOF rewrite, DEBUG DIGEST): every
 *     reply, image and digest is the library filter's.
 *   - a bgr_value: a complete filter of any shape, or, between a
 *     BF.LOADCHUNK of the header and the one that completes the image, the
 *     chunks so far. Exactly one of the two is non-NULL. An MBbloom-- key
 *     always holds one.
 * bgr_is_compact tells them apart by the first 8 bytes: a compact header
 * has bit 0 set there; a bgr_value has its filter pointer, aligned (bit 0
 * clear), or NULL. */
typedef struct bgr_value {
    bg_filter *filter;
    bgr_assembly *assembly;
} bgr_value;

typedef struct bgr_compact bgr_compact;

_Static_assert(sizeof(bg_filter *) == sizeof(uint64_t), "bgr_is_compact reads a pointer's 8 bytes");

static inline bool bgr_is_compact(const void *value)
{
    uint64_t word;
    memcpy(&word, value, sizeof word);
    return (word & 1) != 0;
}

/* A new value owning `f` (f untouched on failure: never, with Redis's
 * allocator). */
bgr_value *bgr_value_wrap(bg_filter *f);
/* Frees either form; the type's free callback too. */
void bgr_value_free(void *value);

/* A filter as BF.RESERVE / BF.INSERT / auto-creation make it: error rate
 * p, capacity n, expansion (0 = NONSCALING), within MAX_BYTES; a scalable
 * bloomgate filter, or under COMPAT redisbloom a RedisBloom chain. Returns
 * the library status (BG_ETOOBIG beyond MAX_BYTES). */
int bgr_filter_new(bg_filter **out, double p, uint64_t n, uint32_t expansion);
/* The same, always bloomgate's scalable filter, whatever COMPAT says. */
int bgr_filter_make(bg_filter **out, double p, uint64_t n, uint32_t expansion);

/* ---- compact filters (compact.c) ---- */

/* A compact copy of f, or NULL: f is not a filter a compact one can be
 * (THE VALUE; compact.c says which). made_here: f is what
 * bgr_filter_make(p, n, expansion) just returned, with no item yet; else
 * (a loaded filter) it is accepted only if the one the copy rebuilds has
 * f's file image. f is left as it was. */
bgr_compact *bgr_compact_from(const bg_filter *f, bool made_here);
/* The library's filter with c's bits and count, as bgr_filter_make makes
 * it (free with bg_filter_free): BG_OK, or a library status. */
int bgr_compact_expand(const bgr_compact *c, bg_filter **out);
bgr_compact *bgr_compact_clone(const bgr_compact *c);
void bgr_compact_free(bgr_compact *c);

/* The answer of bgr_compact_test_and_add for a key absent from a full
 * scaling filter: the library's filter must take it (it grows). */
#define BGR_GROW (-110)

/* 1 added, 0 maybe present, BG_EFULL (a full NONSCALING filter), BGR_GROW. */
int bgr_compact_test_and_add(bgr_compact *c, const void *key, size_t len);
int bgr_compact_contains(const bgr_compact *c, const void *key, size_t len);
bool bgr_compact_nonscaling(const bgr_compact *c);
uint32_t bgr_compact_expansion(const bgr_compact *c);
uint64_t bgr_compact_capacity(const bgr_compact *c);
uint64_t bgr_compact_items(const bgr_compact *c);
/* The block's bytes as asked of the allocator. */
size_t bgr_compact_size(const bgr_compact *c);

/* Whether a value is RedisBloom's (an MBbloom-- key), and the type a
 * filter is stored as. */
static inline bool bgr_is_rb(const void *value)
{
    const bgr_value *v = value;
    return !bgr_is_compact(value) && v->filter != NULL &&
           bg_filter_variant(v->filter) == BG_VARIANT_REDISBLOOM;
}
RedisModuleType *bgr_type_of(const bg_filter *f);

/* The reply to a command that needs a complete filter on a key that
 * BF.LOADCHUNK is still assembling. */
#define BGR_ERR_LOADING "ERR filter is being loaded by BF.LOADCHUNK"

/* Opening a key for a command. *val is NULL when the key is missing.
 * Returns REDISMODULE_OK, or REDISMODULE_ERR after replying WRONGTYPE (the
 * key holds a type of neither bloomgate nor MBbloom--) or "ERR filter is being loaded" (needs a complete
 * filter but chunks are still arriving; allow_loading skips that check). */
int bgr_open(RedisModuleCtx *ctx, RedisModuleString *name, int mode, RedisModuleKey **key,
             void **val, int allow_loading);

/* The commands (commands.c, dump.c). */
int bgr_cmd_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bgr_cmd_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bgr_cmd_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bgr_cmd_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bgr_cmd_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bgr_cmd_bg_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bgr_cmd_insert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bgr_cmd_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bgr_cmd_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bgr_cmd_scandump(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);
int bgr_cmd_loadchunk(RedisModuleCtx *ctx, RedisModuleString **argv, int argc);

/* The type's callbacks (type.c). */
void *bgr_rdb_load(RedisModuleIO *rdb, int encver);
void bgr_rdb_save(RedisModuleIO *rdb, void *value);
void bgr_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value);
size_t bgr_mem_usage(const void *value);

/* The bytes a value holds: as the allocator sized each block (allocated:
 * MEMORY USAGE) or as they were asked for (BF.INFO's Size, which so tells
 * filters of different shapes apart where jemalloc rounds them to one size
 * class). */
size_t bgr_value_size(const void *value, bool allocated);
void *bgr_copy(RedisModuleString *fromkey, RedisModuleString *tokey, const void *value);
void bgr_digest(RedisModuleDigest *md, void *value);

/* The MBbloom-- type's callbacks (rb_type.c). */
void *bgr_rb_rdb_load_cb(RedisModuleIO *rdb, int encver);
void bgr_rb_rdb_save_cb(RedisModuleIO *rdb, void *value);
void bgr_rb_aof_rewrite_cb(RedisModuleIO *aof, RedisModuleString *key, void *value);
size_t bgr_rb_mem_usage_cb(const void *value);
size_t bgr_rb_free_effort_cb(RedisModuleString *key, const void *value);
void *bgr_rb_copy_cb(RedisModuleString *fromkey, RedisModuleString *tokey, const void *value);
void bgr_rb_digest_cb(RedisModuleDigest *md, void *value);

/* BF.SCANDUMP f iter on an MBbloom-- key; BF.LOADCHUNK of RedisBloom's
 * header on a missing (writable) key, and of a chunk to an MBbloom-- key:
 * each replies (RedisBloom's strings) and replicates what it changed. */
int bgr_rb_scandump(RedisModuleCtx *ctx, const bg_filter *f, long long iter);
int bgr_rb_load_header(RedisModuleCtx *ctx, RedisModuleKey *key, const char *data, size_t len);
int bgr_rb_load_chunk(RedisModuleCtx *ctx, bg_filter *f, long long iter, const char *data,
                      size_t len);

/* Replicates the creation of the MBbloom-- key `name` holding the new,
 * empty f as BF.LOADCHUNK name 1 <header>, which makes the same chain on a
 * replica (and in the AOF) whatever COMPAT says there; the command that
 * created it follows, verbatim, when it also added items. */
int bgr_rb_replicate_creation(RedisModuleCtx *ctx, RedisModuleString *name, const bg_filter *f);

#endif
