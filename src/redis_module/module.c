/* SPDX-License-Identifier: BSD-3-Clause */
/* RedisModule_OnLoad: the module's arguments, the library's allocator
 * pointed at Redis's (so filters count in used_memory and maxmemory), the
 * data type, and the commands with their flags, key specs and ACL
 * category. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* This file defines the RedisModule_* API pointers that redismodule.h
 * declares for every other file of the module. */
#define REDISMODULE_MAIN
#include "redis_module/module.h"

bgr_config bgr_cfg = {
    .error_rate = 0.01,
    .initial_size = 100,
    .expansion = 2,
    .max_bytes = UINT64_C(512) << 20,
    .layer_variant = BG_VARIANT_STANDARD,
    .layers_auto = true,
    .compat = BGR_COMPAT_BLOOMGATE,
};

RedisModuleType *bgr_type;
RedisModuleType *bgr_rb_type;

RedisModuleType *bgr_type_of(const bg_filter *f)
{
    return bg_filter_variant(f) == BG_VARIANT_REDISBLOOM ? bgr_rb_type : bgr_type;
}

/* ---- values --------------------------------------------------------------- */

bgr_value *bgr_value_wrap(bg_filter *f)
{
    bgr_value *v = RedisModule_Calloc(1, sizeof *v);
    v->filter = f;
    return v;
}

void bgr_value_free(void *value)
{
    bgr_value *v = value;
    if (v == NULL)
        return;
    if (bgr_is_compact(value)) {
        bgr_compact_free(value);
        return;
    }
    bg_filter_free(v->filter);
    bgr_assembly_free(v->assembly);
    RedisModule_Free(v);
}

/* LAYERS auto picks blocked layers for a filter whose first layer holds at
 * least AUTO_BLOCKED_ITEMS items at a rate of at least AUTO_BLOCKED_RATE:
 * such a layer outgrows the L2 cache, where a standard layer's k probes
 * cost k cache misses and a blocked layer's one. Smaller filters keep
 * standard layers: they stay in cache, and when they grow (an auto-created
 * filter starts at 100 items) their deep layers' small rates would cost a
 * blocked layer far more bits than a standard one (k is at most 8). So do
 * rates below AUTO_BLOCKED_RATE (blocked.c: 9% more bits at 1e-3, 23% at
 * 1e-4).
 *
 * A blocked filter needs a few percent more bits than a standard one at
 * the same rate, so its first layer gets a larger share of the error rate
 * p: the layers' rates are p (1 - t) t^i with tightening t =
 * AUTO_BLOCKED_TIGHTENING instead of 0.5, whose sum is still p (filter.h
 * SCALABLE). At p = 0.01 the first layer then gets 0.0064 and fits in
 * fewer bits per item than a standard one at 0.005 (RedisBloom's), about
 * 11.0 against 11.03; the later layers, at smaller rates, cost more, which
 * matters little for a filter reserved this large. A stored key keeps the
 * layer variant and tightening it was made with: both are part of the
 * stored filter.
 *
 * A blocked layer's rate must stay at or above BG_BLOCKED_MIN_P, so such a
 * stack cannot grow past layer 23 at p = 0.01 (27 at most, for p near 1).
 * With EXPANSION 2 or more, that layer alone holds 65536 x 2^23 items, past
 * any MAX_BYTES a server has; with EXPANSION 1 the stack would stop at 23
 * times its first layer's items, where standard layers go on to
 * BG_MAX_LAYERS. So EXPANSION 1 keeps standard layers.
 *
 * Every other scaling filter (the small ones, and every filter BF.ADD
 * creates: 100 items) starts as RedisBloom's does, one standard layer at
 * p / 2 (AUTO_FIRST_SHARE), so that a small key costs what it always did;
 * but if it grows, its deeper layers share the other half of p slowly,
 * layer i >= 1 getting (p / 2) (1 - t) t^(i-1) with t =
 * AUTO_GROWN_TIGHTENING instead of p / 2^(i+1) (filter.h SCALABLE, the
 * schedule), and are blocked (from AUTO_GROWN_BLOCKED_FROM on) when the
 * first of them gets at least AUTO_GROWN_BLOCKED_RATE (p >= 0.002). A key
 * grown from 100 to 10^6
 * items has 14 layers either way (RedisBloom's counts and capacities), and
 * an absent key must be looked for in all of them: at t = 0.5 its large
 * layers are sized for rates down to 6e-7 at p = 0.01 (~30 bits per item,
 * and ~2 cache misses each per absent key); here their rates stay above
 * 1e-4 (~22 bits per item, blocked) and each costs one cache line, while
 * the small ones stay in the CPU's caches. Below that rate a blocked
 * layer's k = 8 cap costs too many bits (blocked.c), and the layers stay
 * standard; the slow schedule still keeps their k, and so their probes
 * per absent key, lower. */
#define AUTO_BLOCKED_ITEMS UINT64_C(65536)
#define AUTO_BLOCKED_RATE 1e-3
#define AUTO_BLOCKED_TIGHTENING 0.36
#define AUTO_FIRST_SHARE 0.5
#define AUTO_GROWN_TIGHTENING 0.9
#define AUTO_GROWN_BLOCKED_FROM 1u
#define AUTO_GROWN_BLOCKED_RATE 1e-4

int bgr_filter_new(bg_filter **out, double p, uint64_t n, uint32_t expansion)
{
    bool nonscaling = expansion == 0;
    if (bgr_cfg.compat == BGR_COMPAT_REDISBLOOM) {
        /* What RedisBloom's BF.RESERVE makes: <bloomgate/redisbloom.h>. */
        bg_filter_options o = {
            .variant = BG_VARIANT_REDISBLOOM,
            .capacity = n,
            .error_rate = p,
            .expansion = expansion,
            .nonscaling = nonscaling,
            .max_bytes = bgr_cfg.max_bytes,
            /* Commands run on Redis's main thread, one at a time: no lock
             * around adds (as for the loaded chains). */
            .concurrency = BG_SINGLE_WRITER,
        };
        return bg_filter_new(out, &o);
    }
    return bgr_filter_make(out, p, n, expansion);
}

/* Whether a rate computed in floating point reaches `bound`. The products
 * below land a rounding error short of the exact value they stand for
 * (0.002 x 0.5 x 0.1 = 9.999999999999999e-05), and the rules are meant, and
 * documented, for the exact product: at p = 0.002, layer 1's rate is 1e-4. */
static bool reaches(double rate, double bound)
{
    return rate >= bound * (1 - 1e-12);
}

int bgr_filter_make(bg_filter **out, double p, uint64_t n, uint32_t expansion)
{
    bool nonscaling = expansion == 0;
    bg_variant layers = bgr_cfg.layer_variant;
    double tightening = 0, first_share = 0; /* the library's defaults */
    uint32_t blocked_from = 0;
    if (bgr_cfg.layers_auto) {
        double first = nonscaling ? p : p * (1 - AUTO_BLOCKED_TIGHTENING);
        bool blocked = n >= AUTO_BLOCKED_ITEMS && reaches(first, AUTO_BLOCKED_RATE) && expansion != 1;
        layers = blocked ? BG_VARIANT_BLOCKED : BG_VARIANT_STANDARD;
        if (blocked && !nonscaling) {
            tightening = AUTO_BLOCKED_TIGHTENING;
        } else if (!nonscaling) {
            tightening = AUTO_GROWN_TIGHTENING;
            first_share = AUTO_FIRST_SHARE;
            /* Layer 1's rate, the largest of the deeper layers'. */
            double deep = p * (1 - AUTO_FIRST_SHARE) * (1 - AUTO_GROWN_TIGHTENING);
            if (reaches(deep, AUTO_GROWN_BLOCKED_RATE))
                blocked_from = AUTO_GROWN_BLOCKED_FROM;
        }
    }
    bg_filter_options o = {
        .variant = BG_VARIANT_SCALABLE,
        .layer_variant = layers,
        .capacity = n,
        .error_rate = p,
        .expansion = expansion,
        .tightening = tightening,
        .first_share = first_share,
        .blocked_from = blocked_from,
        .nonscaling = nonscaling,
        .seed = BGR_SEED,
        .max_bytes = bgr_cfg.max_bytes,
        /* Commands run on Redis's main thread, one at a time: the layers
         * then write with plain stores, not locked ORs. */
        .concurrency = BG_SINGLE_WRITER,
    };
    return bg_filter_new(out, &o);
}

int bgr_open(RedisModuleCtx *ctx, RedisModuleString *name, int mode, RedisModuleKey **key,
             void **val, int allow_loading)
{
    *key = RedisModule_OpenKey(ctx, name, mode);
    *val = NULL;
    int type = RedisModule_KeyType(*key);
    if (type == REDISMODULE_KEYTYPE_EMPTY)
        return REDISMODULE_OK;
    RedisModuleType *mt = type == REDISMODULE_KEYTYPE_MODULE ? RedisModule_ModuleTypeGetType(*key)
                                                             : NULL;
    if (mt == NULL || (mt != bgr_type && mt != bgr_rb_type)) {
        RedisModule_ReplyWithError(ctx, REDISMODULE_ERRORMSG_WRONGTYPE);
        return REDISMODULE_ERR;
    }
    *val = RedisModule_ModuleTypeGetValue(*key);
    if (!allow_loading && !bgr_is_compact(*val) && ((bgr_value *)*val)->filter == NULL) {
        RedisModule_ReplyWithError(ctx, BGR_ERR_LOADING);
        return REDISMODULE_ERR;
    }
    return REDISMODULE_OK;
}

/* ---- arguments ------------------------------------------------------------- */

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* COMPAT's words, in the order of BGR_COMPAT_*. */
static const char *compat_names[] = {"bloomgate", "redisbloom"};
static const int compat_values[] = {BGR_COMPAT_BLOOMGATE, BGR_COMPAT_REDISBLOOM};
#define COMPAT_COUNT ((int)(sizeof compat_values / sizeof compat_values[0]))

static int compat_parse(const char *s)
{
    for (int i = 0; i < COMPAT_COUNT; i++)
        if (strcasecmp(s, compat_names[i]) == 0)
            return compat_values[i];
    return -1;
}

_Static_assert(BG_MAX_EXPANSION == 32768u, "parse_args names EXPANSION's bound");

/* NAME VALUE pairs, names case-insensitive. On error, logs why, with what
 * the argument accepts (the line is all an operator whose server would not
 * start has to go by), and the module refuses to load. */
static int parse_args(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (argc % 2 != 0) {
        RedisModule_Log(ctx, "warning", "bloomgate: arguments come in NAME VALUE pairs");
        return REDISMODULE_ERR;
    }
    for (int i = 0; i < argc; i += 2) {
        const char *name = RedisModule_StringPtrLen(argv[i], NULL);
        const char *value = RedisModule_StringPtrLen(argv[i + 1], NULL);
        uint64_t u;
        int bad = 0;
        const char *accepted = "";
        if (strcasecmp(name, "ERROR_RATE") == 0) {
            accepted = "a number in (0, 1)";
            double d;
            bad = RedisModule_StringToDouble(argv[i + 1], &d) != REDISMODULE_OK || !(d > 0 && d < 1);
            if (!bad)
                bgr_cfg.error_rate = d;
        } else if (strcasecmp(name, "INITIAL_SIZE") == 0) {
            accepted = "an integer, 1 to 9223372036854775807, digits only";
            bad = parse_u64(value, 1, INT64_MAX, &u) != 0;
            if (!bad)
                bgr_cfg.initial_size = u;
        } else if (strcasecmp(name, "EXPANSION") == 0) {
            accepted = "an integer, 1 to 32768";
            bad = parse_u64(value, 1, BG_MAX_EXPANSION, &u) != 0;
            if (!bad)
                bgr_cfg.expansion = (uint32_t)u;
        } else if (strcasecmp(name, "MAX_BYTES") == 0) {
            accepted = "an integer, 64 to 9223372036854775807, digits only";
            bad = parse_u64(value, 64, INT64_MAX, &u) != 0;
            if (!bad)
                bgr_cfg.max_bytes = u;
        } else if (strcasecmp(name, "COMPAT") == 0) {
            accepted = "bloomgate or redisbloom";
            int c = compat_parse(value);
            bad = c < 0;
            if (!bad)
                bgr_cfg.compat = c;
        } else if (strcasecmp(name, "LAYERS") == 0) {
            accepted = "auto, standard or blocked";
            bgr_cfg.layers_auto = false;
            if (strcasecmp(value, "auto") == 0)
                bgr_cfg.layers_auto = true;
            else if (strcasecmp(value, "standard") == 0)
                bgr_cfg.layer_variant = BG_VARIANT_STANDARD;
            else if (strcasecmp(value, "blocked") == 0)
                bgr_cfg.layer_variant = BG_VARIANT_BLOCKED;
            else
                bad = 1;
        } else {
            RedisModule_Log(ctx, "warning",
                            "bloomgate: unknown argument '%s' (known: ERROR_RATE, INITIAL_SIZE, "
                            "EXPANSION, MAX_BYTES, LAYERS, COMPAT)",
                            name);
            return REDISMODULE_ERR;
        }
        if (bad) {
            RedisModule_Log(ctx, "warning", "bloomgate: bad value '%s' for %s (accepted: %s)", value,
                            name, accepted);
            return REDISMODULE_ERR;
        }
    }
    return REDISMODULE_OK;
}

/* ---- commands -------------------------------------------------------------- */

typedef struct command {
    const char *name;
    RedisModuleCmdFunc fn;
    const char *flags;
    bool write;
} command;

static const command commands[] = {
    {"bf.reserve", bgr_cmd_reserve, "write deny-oom", true},
    {"bf.add", bgr_cmd_add, "write deny-oom", true},
    {"bf.madd", bgr_cmd_madd, "write deny-oom", true},
    {"bf.insert", bgr_cmd_insert, "write deny-oom", true},
    {"bf.loadchunk", bgr_cmd_loadchunk, "write deny-oom", true},
    {"bf.exists", bgr_cmd_exists, "readonly fast", false},
    {"bf.mexists", bgr_cmd_mexists, "readonly fast", false},
    {"bf.info", bgr_cmd_info, "readonly fast", false},
    {"bf.card", bgr_cmd_card, "readonly fast", false},
    {"bf.scandump", bgr_cmd_scandump, "readonly", false},
    /* bloomgate's own: BF.MEXISTS with errors for a missing key or another
     * type (commands.c) */
    {"bg.mexists", bgr_cmd_bg_mexists, "readonly fast", false},
};

/* Key specs (Redis 7): the key is argument 1, alone. Redis Cluster routes by
 * them; first/last/step 1,1,1 below say the same to older clients. */
static int set_key_spec(RedisModuleCommand *cmd, bool write)
{
    RedisModuleCommandKeySpec specs[2] = {
        {
            .flags = write ? REDISMODULE_CMD_KEY_RW | REDISMODULE_CMD_KEY_ACCESS |
                                 REDISMODULE_CMD_KEY_UPDATE
                           : REDISMODULE_CMD_KEY_RO | REDISMODULE_CMD_KEY_ACCESS,
            .begin_search_type = REDISMODULE_KSPEC_BS_INDEX,
            .bs.index.pos = 1,
            .find_keys_type = REDISMODULE_KSPEC_FK_RANGE,
            .fk.range = {.lastkey = 0, .keystep = 1, .limit = 0},
        },
        {0},
    };
    RedisModuleCommandInfo info = {
        .version = REDISMODULE_COMMAND_INFO_VERSION,
        .key_specs = specs,
    };
    return RedisModule_SetCommandInfo(cmd, &info);
}

/* The ACL category "bloom" (as RedisBloom's), through APIs that Redis 7.2
 * added: looked up by name, so the module still loads on 7.0, where module
 * commands can only be granted by name or with +@all. */
typedef int (*add_acl_category_fn)(RedisModuleCtx *ctx, const char *name);
typedef int (*set_acl_categories_fn)(RedisModuleCommand *cmd, const char *categories);

static int register_commands(RedisModuleCtx *ctx)
{
    add_acl_category_fn add_category = NULL;
    set_acl_categories_fn set_categories = NULL;
    if (RedisModule_GetApi("RedisModule_AddACLCategory", (void **)&add_category) != REDISMODULE_OK ||
        RedisModule_GetApi("RedisModule_SetCommandACLCategories", (void **)&set_categories) !=
            REDISMODULE_OK ||
        add_category(ctx, "bloom") != REDISMODULE_OK) {
        set_categories = NULL;
        RedisModule_Log(ctx, "notice",
                        "bloomgate: this Redis has no module ACL categories (7.2+); "
                        "grant the BF.* commands by name");
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const command *c = &commands[i];
        if (RedisModule_CreateCommand(ctx, c->name, c->fn, c->flags, 1, 1, 1) != REDISMODULE_OK)
            return REDISMODULE_ERR;
        RedisModuleCommand *cmd = RedisModule_GetCommand(ctx, c->name);
        if (cmd == NULL || set_key_spec(cmd, c->write) != REDISMODULE_OK)
            return REDISMODULE_ERR;
        if (set_categories != NULL &&
            set_categories(cmd, c->write ? "bloom write" : "bloom read fast") != REDISMODULE_OK)
            return REDISMODULE_ERR;
    }
    return REDISMODULE_OK;
}

/* ---- loading ---------------------------------------------------------------- */

static void *alloc_fn(size_t n)
{
    return RedisModule_Alloc(n);
}
static void *calloc_fn(size_t c, size_t n)
{
    return RedisModule_Calloc(c, n);
}
static void *realloc_fn(void *p, size_t n)
{
    return RedisModule_Realloc(p, n);
}
static void free_fn(void *p)
{
    RedisModule_Free(p);
}

/* The work of freeing a value, for Redis's lazy free: above its threshold
 * of 64 (and for 0, which Redis reads as "a lot"), a delete made with
 * UNLINK (as bloomgate's client scripts make them) or under the lazyfree-lazy-*
 * settings hands the value to a background thread, so no client waits for
 * it. Freeing a filter returns its pages to the allocator or the kernel,
 * work in proportion to its bytes: one unit per 4 KiB page, so a filter
 * over 256 KiB is freed in the background, and a smaller one at once
 * (cheaper than the hand-over). The free callback is safe there: it calls
 * only RedisModule_Free (and munmap), never the rest of the module API.
 * So an UNLINK of a large filter costs the server's main thread a few
 * microseconds instead of about a millisecond per few hundred MiB
 * (docs/PERFORMANCE.md). */
static size_t bgr_free_effort(RedisModuleString *key, const void *value)
{
    (void)key;
    return 1 + bgr_mem_usage(value) / 4096;
}

/* bloomgate.compat: COMPAT at run time (CONFIG SET bloomgate.compat
 * redisbloom), through Redis 7's module configs. The module argument sets
 * the default; a bloomgate.compat line in redis.conf (applied by
 * LoadConfigs) wins over it, as CONFIG SET does later. On a Redis without
 * module configs only the argument exists. */
static int compat_get(const char *name, void *privdata)
{
    (void)name;
    (void)privdata;
    return bgr_cfg.compat;
}

static int compat_set(const char *name, int val, void *privdata, RedisModuleString **err)
{
    (void)name;
    (void)privdata;
    (void)err;
    bgr_cfg.compat = val;
    return REDISMODULE_OK;
}

static int register_compat_config(RedisModuleCtx *ctx)
{
    if (RedisModule_RegisterEnumConfig == NULL || RedisModule_LoadConfigs == NULL)
        return REDISMODULE_OK;
    if (RedisModule_RegisterEnumConfig(ctx, "compat", bgr_cfg.compat, REDISMODULE_CONFIG_DEFAULT,
                                       compat_names, compat_values, COMPAT_COUNT, compat_get,
                                       compat_set, NULL, NULL) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    return RedisModule_LoadConfigs(ctx);
}

/* The one symbol the module exports. */
__attribute__((visibility("default"))) int RedisModule_OnLoad(RedisModuleCtx *ctx,
                                                              RedisModuleString **argv, int argc);

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc)
{
    if (RedisModule_Init(ctx, "bloomgate", BG_VERSION_MAJOR * 10000 + BG_VERSION_MINOR * 100 +
                                               BG_VERSION_PATCH,
                         REDISMODULE_APIVER_1) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    if (parse_args(ctx, argv, argc) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    bg_allocator a = {alloc_fn, calloc_fn, realloc_fn, free_fn};
    if (bg_set_allocator(&a) != BG_OK)
        return REDISMODULE_ERR;
    bgr_assembly_set_allocator(alloc_fn, free_fn);
    RedisModule_SetModuleOptions(ctx, REDISMODULE_OPTIONS_HANDLE_IO_ERRORS);
    RedisModuleTypeMethods tm = {
        .version = REDISMODULE_TYPE_METHOD_VERSION,
        .rdb_load = bgr_rdb_load,
        .rdb_save = bgr_rdb_save,
        .aof_rewrite = bgr_aof_rewrite,
        .mem_usage = bgr_mem_usage,
        .digest = bgr_digest,
        .free = bgr_value_free,
        .free_effort = bgr_free_effort,
        .copy = bgr_copy,
    };
    bgr_type = RedisModule_CreateDataType(ctx, BGR_TYPE_NAME, BGR_ENCVER, &tm);
    if (bgr_type == NULL)
        return REDISMODULE_ERR;
    /* RedisBloom's type, so that its RDB, AOF and DUMP data load here (and
     * so this module cannot be loaded next to RedisBloom: one type per
     * name). Its encver is the newest RedisBloom writes; Redis hands older
     * ones to the loader, which reads 0 to 4. */
    RedisModuleTypeMethods rb = {
        .version = REDISMODULE_TYPE_METHOD_VERSION,
        .rdb_load = bgr_rb_rdb_load_cb,
        .rdb_save = bgr_rb_rdb_save_cb,
        .aof_rewrite = bgr_rb_aof_rewrite_cb,
        .mem_usage = bgr_rb_mem_usage_cb,
        .digest = bgr_rb_digest_cb,
        .free = bgr_value_free,
        .free_effort = bgr_rb_free_effort_cb,
        .copy = bgr_rb_copy_cb,
    };
    bgr_rb_type = RedisModule_CreateDataType(ctx, BGR_RB_TYPE_NAME, BGR_RB_ENCVER, &rb);
    if (bgr_rb_type == NULL) {
        RedisModule_Log(ctx, "warning",
                        "bloomgate: could not register the type " BGR_RB_TYPE_NAME
                        " (is RedisBloom loaded too? One module per type name)");
        return REDISMODULE_ERR;
    }
    if (register_compat_config(ctx) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    return register_commands(ctx);
}
