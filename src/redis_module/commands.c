/* SPDX-License-Identifier: BSD-3-Clause */
/* BF.RESERVE, BF.ADD, BF.MADD, BF.EXISTS, BF.MEXISTS, BF.INSERT, BF.INFO and
 * BF.CARD: RedisBloom v2.6.28's replies on bloomgate's scalable filters and
 * on RedisBloom's own chains (MBbloom-- keys, BG_VARIANT_REDISBLOOM), which
 * the same library calls serve: the variant grows, refuses and counts as
 * RedisBloom does, and only BF.INFO's Size is computed per type.
 *
 * HOW IT WORKS
 * Every command follows the same path: arity -> arguments -> key -> act ->
 * reply -> replicate, and each step's errors come in RedisBloom's order,
 * because clients and tests compare error strings byte for byte (some have
 * no "ERR " prefix, one ends in a space: they are spelled once, below).
 * Numbers go through RedisModule_StringToDouble / StringToLongLong, the
 * parsers RedisBloom uses, so that what is accepted ("1e-2", ".01") and
 * refused ("1e3" as a capacity, " 0.01", "nan") is the same by
 * construction. A RedisBloom filter "error_rate p, capacity n, EXPANSION e"
 * is bgr_filter_new(p, n, e) with e = 0 for NONSCALING: the library
 * already halves the rate per layer, gives the first layer p / 2 and counts
 * only new items, as RedisBloom does.
 *
 * Adds run through bg_filter_add_many in windows of WINDOW items (queries
 * through bg_filter_contains_many), which prefetches while hashing. The
 * library stops a batch at the first refused item and writes no result for
 * it or the items after, so results are preset to NOT_REACHED: the first
 * byte still NOT_REACHED after a failed call is the refused item, whose
 * array element becomes the error, and the array ends there, as in
 * RedisBloom ("[1, 1, 1, -ERR non scaling filter is full]").
 *
 * A write that created a key or set a bit is replicated verbatim: the seed
 * is fixed (BGR_SEED), so a replica replaying the command builds the same
 * filter and gets the same answers. A write that changed nothing (a repeat,
 * a refused first item) is not replicated.
 *
 * Where this module differs from RedisBloom on purpose, docs/REDIS.md says
 * why. */
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "redis_module/module.h"

/* HOT COMMANDS
 * BF.ADD, BF.MADD, BF.EXISTS and BF.MEXISTS, the commands a service sends
 * per request, do not use RedisModule_AutoMemory: with it every key handle
 * is queued and the queue (an allocation of its own) emptied after the
 * command, a few percent of a BF.EXISTS. They close their one key handle
 * themselves: the queries right after taking the value from it, the adds
 * after adding (an add that grows a compact filter replaces the key's
 * value through the handle). The value stays in the keyspace, unchanged
 * by anything but this command, until the command returns, and they make
 * no other object that needs freeing. */

/* Items per batch call: the stack arrays below are a few KiB. */
#define WINDOW 64

/* A result byte the library never writes (it writes 0 or 1). */
#define NOT_REACHED 2u

/* RedisBloom's error strings, exactly (REDISBLOOM.md section 12). */
#define E_NOT_FOUND "ERR not found"
#define E_ITEM_EXISTS "ERR item exists"
#define E_BAD_RATE "ERR bad error rate"
#define E_RATE_RANGE "ERR (0 < error rate range < 1) " /* sic: trailing space */
#define E_BAD_CAPACITY "ERR bad capacity"
#define E_CAPACITY_RANGE "ERR (capacity should be larger than 0)"
#define E_NO_EXPANSION "ERR no expansion"
#define E_BAD_EXPANSION "ERR bad expansion"
#define E_EXPANSION_MIN "ERR expansion should be greater or equal to 1"
#define E_CANNOT_EXPAND "Nonscaling filters cannot expand"
#define E_CREATE "ERR could not create filter"
#define E_FULL "ERR non scaling filter is full"
#define E_GROW "ERR problem inserting into filter"
#define E_INS_RATE "Bad error rate"
#define E_INS_CAPACITY "Bad capacity"
#define E_INS_EXPANSION "Bad expansion"
#define E_INS_UNKNOWN "Unknown argument received"
#define E_INS_RANGE "Bad argument received"
#define E_INFO_FIELD "Invalid information value"

/* Ours (docs/REDIS.md): RedisBloom accepts any 32-bit expansion (and
 * truncates larger ones); the library grows by at most BG_MAX_EXPANSION. */
#define E_EXPANSION_MAX "ERR expansion should be less or equal to 32768"
_Static_assert(BG_MAX_EXPANSION == 32768u, "E_EXPANSION_MAX names the bound");
/* Ours: the first layer would not fit in MAX_BYTES; or no filter at all
 * has this capacity and rate (a capacity near 2^63, a rate that the
 * library's most probes per key cannot reach). */
#define E_MAX_BYTES "ERR filter would exceed MAX_BYTES"
#define E_UNSIZABLE "ERR no filter can be sized for this capacity and error rate"

/* ---- helpers ---------------------------------------------------------------- */

/* Only BF.INFO needs to know: its single-field reply is a 1-element array
 * in RESP2 but a map in RESP3. The flags call is not free (it looks at
 * memory), so the hot commands never make it. */
static bool is_resp3(RedisModuleCtx *ctx)
{
    return (RedisModule_GetContextFlags(ctx) & REDISMODULE_CTX_FLAGS_RESP3) != 0;
}

/* 1/0 as RESP2 integers, RESP3 booleans (#t/#f), as RedisBloom 2.6: what
 * Redis's own boolean reply does by itself for each protocol. */
static void reply_bool(RedisModuleCtx *ctx, int b)
{
    RedisModule_ReplyWithBool(ctx, b);
}

static long long clamp_ll(uint64_t x)
{
    return x > (uint64_t)LLONG_MAX ? LLONG_MAX : (long long)x;
}

/* Whether `s` is `word`, ignoring case (whole word, not a prefix). */
static bool arg_is(RedisModuleString *s, const char *word)
{
    size_t len;
    const char *p = RedisModule_StringPtrLen(s, &len);
    return len == strlen(word) && strncasecmp(p, word, len) == 0;
}

/* A new filter stored under the (empty, writable) key `name`; *out is the
 * key's value (module.h, THE VALUE): compact when it can be. On failure
 * replies the error and returns REDISMODULE_ERR, and nothing is created.
 * An MBbloom-- key (COMPAT redisbloom) has its creation replicated at once,
 * as RedisBloom's header (bgr_rb_replicate_creation): a replica or an AOF
 * replaying the command alone would make whatever its own COMPAT says. */
static int create_filter(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleKey *key,
                         double p, uint64_t n, uint32_t expansion, void **out)
{
    bg_filter *f;
    int rc = bgr_filter_new(&f, p, n, expansion);
    if (rc != BG_OK) {
        /* ETOOBIG: over MAX_BYTES; EOVERFLOW / EINVAL: the sizing found no
         * m at all (a capacity near 2^63, a rate the layer variant cannot
         * reach). Anything else is an allocation failure. */
        RedisModule_ReplyWithError(ctx, rc == BG_ETOOBIG                        ? E_MAX_BYTES
                                        : rc == BG_EOVERFLOW || rc == BG_EINVAL ? E_UNSIZABLE
                                                                                : E_CREATE);
        return REDISMODULE_ERR;
    }
    RedisModuleType *mt = bgr_type_of(f);
    void *v = bgr_compact_from(f, true);
    if (v != NULL) {
        bg_filter_free(f);
    } else if ((v = bgr_value_wrap(f)) == NULL) {
        bg_filter_free(f);
        RedisModule_ReplyWithError(ctx, E_CREATE);
        return REDISMODULE_ERR;
    }
    if (RedisModule_ModuleTypeSetValue(key, mt, v) != REDISMODULE_OK) {
        bgr_value_free(v);
        RedisModule_ReplyWithError(ctx, E_CREATE);
        return REDISMODULE_ERR;
    }
    if (bgr_is_rb(v))
        (void)bgr_rb_replicate_creation(ctx, name, f);
    *out = v;
    return REDISMODULE_OK;
}

/* The library's filter in place of the compact value `c` of the open,
 * writable `key`, with the same bits (bgr_compact_expand), for an add that
 * must grow it; c is freed. Returns the key's new value, or NULL (nothing
 * changed) if the filter cannot be made. */
static bgr_value *expand_value(RedisModuleKey *key, bgr_compact *c)
{
    bg_filter *f;
    if (bgr_compact_expand(c, &f) != BG_OK)
        return NULL;
    bgr_value *v = bgr_value_wrap(f);
    void *old = NULL;
    if (RedisModule_ModuleTypeReplaceValue(key, bgr_type, v, &old) != REDISMODULE_OK) {
        bgr_value_free(v);
        return NULL;
    }
    bgr_compact_free(old);
    return v;
}

/* One add to the value of the open, writable `key`: 1, 0 or a library
 * status, as bg_filter_test_and_add; a compact filter that must grow is
 * made the library's filter first (*v then is the new value). */
static int add_one(RedisModuleKey *key, void **v, const char *item, size_t len)
{
    if (!bgr_is_compact(*v))
        return bg_filter_test_and_add(((bgr_value *)*v)->filter, item, len);
    int rc = bgr_compact_test_and_add(*v, item, len);
    if (rc != BGR_GROW)
        return rc;
    bgr_value *full = expand_value(key, *v);
    if (full == NULL)
        return BG_ENOMEM;
    *v = full;
    return bg_filter_test_and_add(full->filter, item, len);
}

/* The error for a refused add (a library status < 0). */
static const char *add_error(int64_t status)
{
    return status == BG_EFULL ? E_FULL : E_GROW;
}

/* Results of this many items live on the stack; a longer BF.MADD or
 * BF.INSERT takes an allocation of one byte per item. */
#define STACK_RESULTS 512

/* The adds of BF.MADD / BF.INSERT into the value v of the open, writable
 * `key`, in order, until one is refused: res[i] is 1 if item i was new,
 * else 0, for each of the first *done items. Returns 0, or the refusal's
 * library status (< 0), which belongs to item *done. A compact filter takes
 * items one by one (add_one) until it has to grow; the library's filter
 * takes the rest in batches. */
static int64_t add_all(RedisModuleKey *key, void *v, RedisModuleString **items, size_t count,
                       uint8_t *res, size_t *done)
{
    const void *keys[WINDOW];
    size_t lens[WINDOW];
    size_t at = 0;

    *done = 0;
    for (; at < count && bgr_is_compact(v); at++) {
        size_t len;
        const char *item = RedisModule_StringPtrLen(items[at], &len);
        int rc = add_one(key, &v, item, len);
        if (rc < 0)
            return rc;
        res[at] = (uint8_t)rc;
        *done = at + 1;
    }
    bg_filter *f = at < count ? ((bgr_value *)v)->filter : NULL;
    for (; at < count; at += WINDOW) {
        size_t n = count - at < WINDOW ? count - at : WINDOW;
        for (size_t i = 0; i < n; i++) {
            keys[i] = RedisModule_StringPtrLen(items[at + i], &lens[i]);
            res[at + i] = NOT_REACHED;
        }
        int64_t rc = bg_filter_add_many(f, keys, lens, n, res + at);
        for (size_t i = 0; i < n && res[at + i] != NOT_REACHED; i++)
            *done = at + i + 1;
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* BF.MADD / BF.INSERT's reply: one element per item, in order, up to and
 * including the first refused one (its element is the error), for the
 * value v of the open, writable `key`. Every add runs before the reply
 * starts, so that the array's length is known: a postponed length would
 * make Redis put the whole reply in a list block of its own (an allocation
 * and a copy per call) instead of the client's buffer. Returns whether
 * some item was new, i.e. whether the filter changed. */
static bool add_items(RedisModuleCtx *ctx, RedisModuleKey *key, void *v,
                      RedisModuleString **items, size_t count)
{
    uint8_t stack_res[STACK_RESULTS];
    uint8_t *res = count <= STACK_RESULTS ? stack_res : RedisModule_Alloc(count);
    size_t done;
    int64_t status = add_all(key, v, items, count, res, &done);
    bool changed = false;

    RedisModule_ReplyWithArray(ctx, (long)done + (status < 0));
    for (size_t i = 0; i < done; i++) {
        reply_bool(ctx, res[i]);
        changed = changed || res[i] != 0;
    }
    if (status < 0)
        RedisModule_ReplyWithError(ctx, add_error(status));
    if (res != stack_res)
        RedisModule_Free(res);
    return changed;
}

/* What a query reads: a filter (*f) or a compact one (*c); both NULL
 * (answer 0s) for a missing key and, as in RedisBloom, for a key of
 * another type. A filter still being assembled by BF.LOADCHUNK is an error
 * (BGR_ERR_LOADING, replied): then REDISMODULE_ERR. The key's handle is
 * closed before returning (HOT COMMANDS). */
static int open_query(RedisModuleCtx *ctx, RedisModuleString *name, const bg_filter **f,
                      const bgr_compact **c)
{
    RedisModuleKey *key = RedisModule_OpenKey(ctx, name, REDISMODULE_READ);
    *f = NULL;
    *c = NULL;
    int rc = REDISMODULE_OK;
    RedisModuleType *mt = RedisModule_KeyType(key) == REDISMODULE_KEYTYPE_MODULE
                              ? RedisModule_ModuleTypeGetType(key)
                              : NULL;
    if (mt != NULL && (mt == bgr_type || mt == bgr_rb_type)) {
        void *v = RedisModule_ModuleTypeGetValue(key);
        if (bgr_is_compact(v)) {
            *c = v;
        } else if ((*f = ((bgr_value *)v)->filter) == NULL) {
            RedisModule_ReplyWithError(ctx, BGR_ERR_LOADING);
            rc = REDISMODULE_ERR;
        }
    }
    RedisModule_CloseKey(key);
    return rc;
}

/* ---- BF.RESERVE key error_rate capacity [EXPANSION e] [NONSCALING] ----------- */

/* RedisBloom looks for EXPANSION and NONSCALING anywhere in argv, key
 * included, whole words, any case, and takes the first: so does this. */
static int find_word(RedisModuleString **argv, int argc, const char *word)
{
    for (int i = 1; i < argc; i++)
        if (arg_is(argv[i], word))
            return i;
    return -1;
}

int bgr_cmd_reserve(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 4 || argc > 7)
        return RedisModule_WrongArity(ctx);

    double p;
    if (RedisModule_StringToDouble(argv[2], &p) != REDISMODULE_OK)
        return RedisModule_ReplyWithError(ctx, E_BAD_RATE);
    if (!(p > 0 && p < 1))
        return RedisModule_ReplyWithError(ctx, E_RATE_RANGE);

    long long n;
    if (RedisModule_StringToLongLong(argv[3], &n) != REDISMODULE_OK)
        return RedisModule_ReplyWithError(ctx, E_BAD_CAPACITY);
    if (n <= 0)
        return RedisModule_ReplyWithError(ctx, E_CAPACITY_RANGE);

    uint32_t expansion = bgr_cfg.expansion;
    int ex = find_word(argv, argc, "EXPANSION");
    if (ex == argc - 1)
        return RedisModule_ReplyWithError(ctx, E_NO_EXPANSION);
    if (ex != -1) {
        long long e;
        if (RedisModule_StringToLongLong(argv[ex + 1], &e) != REDISMODULE_OK)
            return RedisModule_ReplyWithError(ctx, E_BAD_EXPANSION);
        if (e < 1)
            return RedisModule_ReplyWithError(ctx, E_EXPANSION_MIN);
        if (e > (long long)BG_MAX_EXPANSION)
            return RedisModule_ReplyWithError(ctx, E_EXPANSION_MAX);
        expansion = (uint32_t)e;
    }
    if (find_word(argv, argc, "NONSCALING") != -1) {
        if (ex != -1)
            return RedisModule_ReplyWithError(ctx, E_CANNOT_EXPAND);
        expansion = 0;
    }

    RedisModuleKey *key;
    void *v;
    /* A key still being loaded by BF.LOADCHUNK exists too. */
    if (bgr_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, &v, 1) !=
        REDISMODULE_OK)
        return REDISMODULE_OK;
    if (v != NULL)
        return RedisModule_ReplyWithError(ctx, E_ITEM_EXISTS);

    if (create_filter(ctx, argv[1], key, p, (uint64_t)n, expansion, &v) != REDISMODULE_OK)
        return REDISMODULE_OK;
    RedisModule_ReplyWithSimpleString(ctx, "OK");
    /* An MBbloom-- key's creation is replicated already. */
    if (!bgr_is_rb(v))
        RedisModule_ReplicateVerbatim(ctx);
    return REDISMODULE_OK;
}

/* ---- BF.ADD / BF.MADD --------------------------------------------------------- */

/* The value (*v) of a key that an add writes to, created with the
 * module's defaults when missing (*created), and the key's handle, open
 * for writing (an add may replace a compact value: add_one), which the
 * caller closes (HOT COMMANDS). REDISMODULE_ERR after replying, the key
 * then closed. */
static int open_for_add(RedisModuleCtx *ctx, RedisModuleString *name, RedisModuleKey **key,
                        void **v, bool *created)
{
    *created = false;
    int rc = bgr_open(ctx, name, REDISMODULE_READ | REDISMODULE_WRITE, key, v, 0);
    if (rc == REDISMODULE_OK && *v == NULL) {
        rc = create_filter(ctx, name, *key, bgr_cfg.error_rate, bgr_cfg.initial_size,
                           bgr_cfg.expansion, v);
        *created = rc == REDISMODULE_OK;
    }
    if (rc != REDISMODULE_OK)
        RedisModule_CloseKey(*key);
    return rc;
}

int bgr_cmd_add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    void *v;
    bool created;
    if (open_for_add(ctx, argv[1], &key, &v, &created) != REDISMODULE_OK)
        return REDISMODULE_OK;
    size_t len;
    const char *item = RedisModule_StringPtrLen(argv[2], &len);
    int rc = add_one(key, &v, item, len);
    RedisModule_CloseKey(key);
    if (rc < 0)
        RedisModule_ReplyWithError(ctx, add_error(rc));
    else
        reply_bool(ctx, rc);
    if (created || rc == 1)
        RedisModule_ReplicateVerbatim(ctx);
    return REDISMODULE_OK;
}

int bgr_cmd_madd(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    void *v;
    bool created;
    if (open_for_add(ctx, argv[1], &key, &v, &created) != REDISMODULE_OK)
        return REDISMODULE_OK;
    bool changed = add_items(ctx, key, v, argv + 2, (size_t)(argc - 2));
    RedisModule_CloseKey(key);
    if (created || changed)
        RedisModule_ReplicateVerbatim(ctx);
    return REDISMODULE_OK;
}

/* ---- BF.EXISTS / BF.MEXISTS ----------------------------------------------------- */

int bgr_cmd_exists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc != 3)
        return RedisModule_WrongArity(ctx);
    const bg_filter *f;
    const bgr_compact *c;
    if (open_query(ctx, argv[1], &f, &c) != REDISMODULE_OK)
        return REDISMODULE_OK;
    int found = 0;
    if (f != NULL || c != NULL) {
        size_t len;
        const char *item = RedisModule_StringPtrLen(argv[2], &len);
        found = f != NULL ? bg_filter_contains(f, item, len) == 1
                          : bgr_compact_contains(c, item, len) == 1;
    }
    reply_bool(ctx, found);
    return REDISMODULE_OK;
}

/* BF.MEXISTS's and BG.MEXISTS's reply: f's or c's answer for each of
 * argv[2..), or 0s without a filter. */
static int reply_mexists(RedisModuleCtx *ctx, const bg_filter *f, const bgr_compact *c,
                         RedisModuleString **argv, int argc)
{
    size_t count = (size_t)(argc - 2);
    RedisModuleString **items = argv + 2;
    const void *keys[WINDOW];
    size_t lens[WINDOW];
    uint8_t res[WINDOW];

    RedisModule_ReplyWithArray(ctx, (long)count);
    for (size_t at = 0; at < count; at += WINDOW) {
        size_t n = count - at < WINDOW ? count - at : WINDOW;
        memset(res, 0, sizeof res);
        if (f != NULL || c != NULL) {
            for (size_t i = 0; i < n; i++)
                keys[i] = RedisModule_StringPtrLen(items[at + i], &lens[i]);
            /* Cannot fail on these arguments; if it did, res stays 0s. */
            if (f != NULL)
                (void)bg_filter_contains_many(f, keys, lens, n, res);
            else
                for (size_t i = 0; i < n; i++)
                    res[i] = (uint8_t)bgr_compact_contains(c, keys[i], lens[i]);
        }
        for (size_t i = 0; i < n; i++)
            reply_bool(ctx, res[i] == 1);
    }
    return REDISMODULE_OK;
}

int bgr_cmd_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    const bg_filter *f;
    const bgr_compact *c;
    if (open_query(ctx, argv[1], &f, &c) != REDISMODULE_OK)
        return REDISMODULE_OK;
    return reply_mexists(ctx, f, c, argv, argc);
}

/* ---- BG.MEXISTS key item [item ...] ------------------------------------------
 * BF.MEXISTS for readers that must tell "absent" from "no filter": the same
 * answers, but a missing key is ERR not found and a key of another type
 * WRONGTYPE, where BF.MEXISTS (as RedisBloom's) answers 0s for both. The
 * remote client's module queries use it (src/remote/module.c, QUERIES): a
 * dropped or flushed filter must be an error, never "every key absent". */
int bgr_cmd_bg_mexists(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc < 3)
        return RedisModule_WrongArity(ctx);
    /* One handle, closed at once (HOT COMMANDS): the value stays. */
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ);
    int type = RedisModule_KeyType(key);
    RedisModuleType *mt = type == REDISMODULE_KEYTYPE_MODULE ? RedisModule_ModuleTypeGetType(key)
                                                             : NULL;
    const void *v = mt != NULL && (mt == bgr_type || mt == bgr_rb_type)
                        ? RedisModule_ModuleTypeGetValue(key)
                        : NULL;
    RedisModule_CloseKey(key);
    if (type == REDISMODULE_KEYTYPE_EMPTY)
        return RedisModule_ReplyWithError(ctx, E_NOT_FOUND);
    if (v == NULL)
        return RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
    if (bgr_is_compact(v))
        return reply_mexists(ctx, NULL, v, argv, argc);
    const bg_filter *f = ((const bgr_value *)v)->filter;
    if (f == NULL)
        return RedisModule_ReplyWithError(ctx, BGR_ERR_LOADING);
    return reply_mexists(ctx, f, NULL, argv, argc);
}

/* ---- BF.INSERT key [CAPACITY n] [ERROR p] [EXPANSION e] [NOCREATE] [NONSCALING]
 *      ITEMS item [item ...] ------------------------------------------------------- */

int bgr_cmd_insert(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc < 4)
        return RedisModule_WrongArity(ctx);

    /* Defaults: the auto-creation ones. long long as parsed, ranges after
     * the whole option list (RedisBloom's order). */
    double p = bgr_cfg.error_rate;
    long long n = clamp_ll(bgr_cfg.initial_size);
    long long e = bgr_cfg.expansion;
    bool nocreate = false, nonscaling = false;
    int items = -1;
    for (int i = 2; i < argc && items == -1;) {
        RedisModuleString *a = argv[i];
        if (arg_is(a, "ITEMS")) {
            items = i + 1;
        } else if (arg_is(a, "NOCREATE")) {
            nocreate = true;
            i++;
        } else if (arg_is(a, "NONSCALING")) {
            nonscaling = true;
            i++;
        } else if (arg_is(a, "CAPACITY") || arg_is(a, "ERROR") || arg_is(a, "EXPANSION")) {
            if (i + 1 >= argc)
                return RedisModule_WrongArity(ctx);
            RedisModuleString *val = argv[i + 1];
            if (arg_is(a, "CAPACITY")) {
                if (RedisModule_StringToLongLong(val, &n) != REDISMODULE_OK)
                    return RedisModule_ReplyWithError(ctx, E_INS_CAPACITY);
            } else if (arg_is(a, "ERROR")) {
                if (RedisModule_StringToDouble(val, &p) != REDISMODULE_OK)
                    return RedisModule_ReplyWithError(ctx, E_INS_RATE);
            } else if (RedisModule_StringToLongLong(val, &e) != REDISMODULE_OK) {
                return RedisModule_ReplyWithError(ctx, E_INS_EXPANSION);
            }
            i += 2;
        } else {
            return RedisModule_ReplyWithError(ctx, E_INS_UNKNOWN);
        }
    }
    if (items == -1 || items >= argc)
        return RedisModule_WrongArity(ctx);
    if (!(p > 0 && p < 1) || n < 1 || e < 1 || e > (long long)BG_MAX_EXPANSION)
        return RedisModule_ReplyWithError(ctx, E_INS_RANGE);

    RedisModuleKey *key;
    void *v;
    if (bgr_open(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE, &key, &v, 0) !=
        REDISMODULE_OK)
        return REDISMODULE_OK;
    bool created = false;
    if (v != NULL) {
        /* the options apply to creation only */
    } else if (nocreate) {
        return RedisModule_ReplyWithError(ctx, E_NOT_FOUND);
    } else {
        uint32_t expansion = nonscaling ? 0 : (uint32_t)e;
        if (create_filter(ctx, argv[1], key, p, (uint64_t)n, expansion, &v) != REDISMODULE_OK)
            return REDISMODULE_OK;
        created = true;
    }
    bool changed = add_items(ctx, key, v, argv + items, (size_t)(argc - items));
    if (created || changed)
        RedisModule_ReplicateVerbatim(ctx);
    return REDISMODULE_OK;
}

/* ---- BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION] ----------------- */

typedef enum info_field { CAPACITY, SIZE, FILTERS, ITEMS, EXPANSION, NFIELDS } info_field;

/* The argument that selects a field, and its label in the full reply. */
static const struct {
    const char *word;
    const char *label;
} info_fields[NFIELDS] = {
    [CAPACITY] = {"CAPACITY", "Capacity"},
    [SIZE] = {"SIZE", "Size"},
    [FILTERS] = {"FILTERS", "Number of filters"},
    [ITEMS] = {"ITEMS", "Number of items inserted"},
    [EXPANSION] = {"EXPANSION", "Expansion rate"},
};

/* A compact filter's field: what the library's filter it stands for
 * answers (one layer). */
static void reply_compact_info(RedisModuleCtx *ctx, const bgr_compact *c, info_field which)
{
    switch (which) {
    case CAPACITY:
        RedisModule_ReplyWithLongLong(ctx, clamp_ll(bgr_compact_capacity(c)));
        break;
    case SIZE:
        RedisModule_ReplyWithLongLong(ctx, clamp_ll(bgr_value_size(c, false)));
        break;
    case FILTERS:
        RedisModule_ReplyWithLongLong(ctx, 1);
        break;
    case ITEMS:
        RedisModule_ReplyWithLongLong(ctx, clamp_ll(bgr_compact_items(c)));
        break;
    case EXPANSION:
    default:
        if (bgr_compact_nonscaling(c))
            RedisModule_ReplyWithNull(ctx);
        else
            RedisModule_ReplyWithLongLong(ctx, bgr_compact_expansion(c));
        break;
    }
}

static void reply_info_value(RedisModuleCtx *ctx, const void *value, info_field which)
{
    if (bgr_is_compact(value)) {
        reply_compact_info(ctx, value, which);
        return;
    }
    const bgr_value *v = value;
    const bg_filter *f = v->filter;
    bg_filter_scaling sc = {0};
    switch (which) {
    case CAPACITY:
        RedisModule_ReplyWithLongLong(ctx, clamp_ll(bg_filter_capacity(f)));
        break;
    case SIZE:
        /* An MBbloom-- key's Size is RedisBloom's formula (rb_rdb.h). */
        RedisModule_ReplyWithLongLong(ctx, clamp_ll(bgr_is_rb(v) ? bgr_rb_info_size(f)
                                                                  : bgr_value_size(v, false)));
        break;
    case FILTERS:
        (void)bg_filter_scaling_get(f, &sc);
        RedisModule_ReplyWithLongLong(ctx, sc.layers);
        break;
    case ITEMS:
        RedisModule_ReplyWithLongLong(ctx, clamp_ll(bg_filter_items(f)));
        break;
    case EXPANSION:
    default:
        (void)bg_filter_scaling_get(f, &sc);
        if (sc.nonscaling)
            RedisModule_ReplyWithNull(ctx);
        else
            RedisModule_ReplyWithLongLong(ctx, sc.expansion);
        break;
    }
}

int bgr_cmd_info(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 2 && argc != 3)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    void *v;
    if (bgr_open(ctx, argv[1], REDISMODULE_READ, &key, &v, 0) != REDISMODULE_OK)
        return REDISMODULE_OK;
    if (v == NULL)
        return RedisModule_ReplyWithError(ctx, E_NOT_FOUND);
    bool resp3 = is_resp3(ctx);

    if (argc == 3) {
        int which = -1;
        for (int i = 0; i < NFIELDS && which == -1; i++)
            if (arg_is(argv[2], info_fields[i].word))
                which = i;
        if (which == -1)
            return RedisModule_ReplyWithError(ctx, E_INFO_FIELD);
        /* RESP2: a 1-element array (not the integer RedisBloom's docs
         * promise); RESP3: a 1-entry map. */
        if (resp3) {
            RedisModule_ReplyWithMap(ctx, 1);
            RedisModule_ReplyWithSimpleString(ctx, info_fields[which].label);
        } else {
            RedisModule_ReplyWithArray(ctx, 1);
        }
        reply_info_value(ctx, v, (info_field)which);
        return REDISMODULE_OK;
    }

    /* RESP2: label, value, ... flat; RESP3: a map. */
    if (resp3)
        RedisModule_ReplyWithMap(ctx, NFIELDS);
    else
        RedisModule_ReplyWithArray(ctx, 2 * NFIELDS);
    for (int i = 0; i < NFIELDS; i++) {
        RedisModule_ReplyWithSimpleString(ctx, info_fields[i].label);
        reply_info_value(ctx, v, (info_field)i);
    }
    return REDISMODULE_OK;
}

/* ---- BF.CARD key ------------------------------------------------------------------- */

int bgr_cmd_card(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    RedisModule_AutoMemory(ctx);
    if (argc != 2)
        return RedisModule_WrongArity(ctx);
    RedisModuleKey *key;
    void *v;
    if (bgr_open(ctx, argv[1], REDISMODULE_READ, &key, &v, 0) != REDISMODULE_OK)
        return REDISMODULE_OK;
    uint64_t items = v == NULL           ? 0
                     : bgr_is_compact(v) ? bgr_compact_items(v)
                                         : bg_filter_items(((bgr_value *)v)->filter);
    return RedisModule_ReplyWithLongLong(ctx, clamp_ll(items));
}
