/* SPDX-License-Identifier: BSD-3-Clause */
/* stack_bench: what an absent lookup costs in a filter grown by expansion,
 * against one reserved for the same items, and the memory floor of each.
 *
 * A filter auto-created for 100 items and grown to 10^6 by doubling has 14
 * layers (RedisBloom's counts and capacities, which the Redis module keeps),
 * and an absent key is looked for in every one of them: one cache line per
 * layer at least, where a filter reserved for 10^6 reads one line in all.
 * This program builds both as the Redis module's `LAYERS auto` makes them
 * (src/redis_module/module.c, bgr_filter_new), fills them with the same
 * keys, and measures, per absent key, in one run:
 *   - bg_filter_contains_many in batches of 100 (BF.MEXISTS's call), and
 *     bg_filter_contains one key per call (BF.EXISTS's);
 *   - the floor: the same key count reading one random line from each of
 *     arrays as large as each filter's layers (one array for the reserved
 *     filter), with no hashing and no Bloom logic, every load independent
 *     so that the CPU overlaps all it can.
 * A grown lookup costs at least its floor plus the work a reserved lookup
 * does beyond its own floor (hashing, the batch loop): that sum over the
 * reserved lookup is the least ratio any layout with these layer sizes can
 * reach; the filters' ratio sits above it by the per-layer work.
 *
 * That work is measured apart, without cache misses: two stacks grown the
 * same way, to 1,500 items (4 layers) and to 12,700 (7 layers, 31 KB in
 * all, about a 32 KiB L1 data cache), queried for absent keys in batches
 * of BATCH; the difference over the 3 extra layers is what one blocked
 * layer's probe costs a key with its block in L1 or L2. Times the grown
 * stack's blocked layers, it is the probes' share of a grown lookup.
 *
 *   stack_bench [--items N] [--queries N] [--rounds N]
 *
 * Prints one line per measurement and the two ratios; exits 1 on a wrong
 * answer (a present key reported absent). */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bloomgate/bloomgate.h>

/* The module's LAYERS auto choices for the two filters (module.c): a
 * filter auto-created at (0.01, 100) has a standard first layer at p / 2
 * and blocked later layers sharing the other half at tightening 0.9; one
 * reserved for at least AUTO_BLOCKED_ITEMS at 0.01 is blocked at
 * tightening 0.36, and a smaller one is made as the auto-created one. */
#define P 0.01
#define AUTO_CAPACITY 100
#define GROWN_TIGHTENING 0.9
#define GROWN_FIRST_SHARE 0.5
#define RESERVED_TIGHTENING 0.36
#define AUTO_BLOCKED_ITEMS 65536
#define BATCH 100
#define LINE 64

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static bg_filter *make(bool grown, uint64_t items)
{
    bg_filter_options o = {
        .variant = BG_VARIANT_SCALABLE,
        .error_rate = P,
        .seed = 0,
        .concurrency = BG_SINGLE_WRITER,
    };
    if (grown || items < AUTO_BLOCKED_ITEMS) {
        o.capacity = grown ? AUTO_CAPACITY : items;
        o.layer_variant = BG_VARIANT_STANDARD;
        o.tightening = GROWN_TIGHTENING;
        o.first_share = GROWN_FIRST_SHARE;
        o.blocked_from = 1;
    } else {
        o.capacity = items;
        o.layer_variant = BG_VARIANT_BLOCKED;
        o.tightening = RESERVED_TIGHTENING;
    }
    bg_filter *f;
    int rc = bg_filter_new(&f, &o);
    if (rc != BG_OK) {
        fprintf(stderr, "stack_bench: bg_filter_new: %s\n", bg_strerror(rc));
        exit(2);
    }
    return f;
}

/* Keys as the module benchmark sends them: item:%012d present, miss:%u
 * absent (a different prefix, so never added). */
typedef struct keyset {
    char (*text)[24];
    const void **ptr;
    size_t *len;
    size_t count;
} keyset;

static keyset keys(const char *prefix, size_t count, uint64_t space, uint64_t seed)
{
    keyset k = {malloc(count * sizeof *k.text), malloc(count * sizeof *k.ptr),
                malloc(count * sizeof *k.len), count};
    if (!k.text || !k.ptr || !k.len) {
        fprintf(stderr, "stack_bench: out of memory\n");
        exit(2);
    }
    uint64_t x = seed;
    for (size_t i = 0; i < count; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        uint64_t n = space ? (x >> 20) % space : i;
        int l = snprintf(k.text[i], sizeof k.text[i], "%s%012" PRIu64, prefix, n);
        k.len[i] = (size_t)l;
        k.ptr[i] = k.text[i];
    }
    return k;
}

/* ns per key of absent lookups in batches of BATCH; *hits gets the 1s. */
static double lookups(const bg_filter *f, const keyset *k, int64_t *hits)
{
    uint8_t res[BATCH];
    *hits = 0;
    double t0 = now();
    for (size_t at = 0; at < k->count; at += BATCH) {
        size_t n = k->count - at < BATCH ? k->count - at : BATCH;
        *hits += bg_filter_contains_many(f, k->ptr + at, k->len + at, n, res);
    }
    return (now() - t0) / (double)k->count * 1e9;
}

/* In-cache stacks: layer counts and items of a stack grown from
 * AUTO_CAPACITY by doubling, each layer full (100 (2^L - 1) items). */
#define FEW_LAYERS 4
#define MORE_LAYERS 7
#define FULL_STACK(layers) ((uint64_t)AUTO_CAPACITY * ((UINT64_C(1) << (layers)) - 1))

/* ns per key of absent lookups one key per call. */
static double single_lookups(const bg_filter *f, const keyset *k, int64_t *hits)
{
    *hits = 0;
    double t0 = now();
    for (size_t i = 0; i < k->count; i++)
        *hits += bg_filter_contains(f, k->ptr[i], k->len[i]) == 1;
    return (now() - t0) / (double)k->count * 1e9;
}

/* Arrays as large as the filter's layers, every page written. */
typedef struct arrays {
    uint32_t n;
    uint64_t lines[BG_MAX_LAYERS];
    uint8_t *data[BG_MAX_LAYERS];
} arrays;

static arrays arrays_like(const bg_filter *f)
{
    bg_filter_stats st;
    bg_filter_stats_get(f, &st);
    arrays a = {.n = st.layers};
    for (uint32_t i = 0; i < a.n; i++) {
        bg_filter_stats ls;
        bg_filter_layer_stats(f, i, &ls);
        a.lines[i] = (ls.bytes + LINE - 1) / LINE;
        a.data[i] = aligned_alloc(LINE, (size_t)a.lines[i] * LINE);
        if (!a.data[i]) {
            fprintf(stderr, "stack_bench: out of memory\n");
            exit(2);
        }
        memset(a.data[i], (int)i + 1, (size_t)a.lines[i] * LINE);
    }
    return a;
}

/* ns per key of one random line read from each array: independent loads,
 * no branch on what they read, a multiply-shift range reduction each. */
static double floor_ns(const arrays *a, size_t count, uint64_t *sink)
{
    uint64_t x = 88172645463325252u, acc = 0;
    double t0 = now();
    for (size_t i = 0; i < count; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for (uint32_t l = 0; l < a->n; l++) {
            uint64_t r = x * (2 * l + 0x9e3779b97f4a7c15u);
            uint64_t line = (uint64_t)(((unsigned __int128)r * a->lines[l]) >> 64);
            acc += a->data[l][line * LINE];
        }
    }
    double ns = (now() - t0) / (double)count * 1e9;
    *sink += acc;
    return ns;
}

static uint64_t arg(int argc, char **argv, const char *name, uint64_t dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) {
            char *end;
            double d = strtod(argv[i + 1], &end);
            if (*end || !(d >= 1) || d > 1e10) {
                fprintf(stderr, "stack_bench: %s wants a count >= 1\n", name);
                exit(2);
            }
            return (uint64_t)d;
        }
    return dflt;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            puts("usage: stack_bench [--items N (1e6)] [--queries N (2e6)] [--rounds N (3)]");
            return 0;
        }
    uint64_t items = arg(argc, argv, "--items", 1000000);
    uint64_t queries = arg(argc, argv, "--queries", 2000000);
    uint64_t rounds = arg(argc, argv, "--rounds", 3);

    bg_filter *grown = make(true, items), *reserved = make(false, items);
    keyset present = keys("item:", items, 0, 1);
    uint8_t *res = malloc(items);
    bg_filter_add_many(grown, present.ptr, present.len, items, res);
    bg_filter_add_many(reserved, present.ptr, present.len, items, res);
    for (int which = 0; which < 2; which++)
        if (bg_filter_contains_many(which ? reserved : grown, present.ptr, present.len, items,
                                    res) != (int64_t)items) {
            fprintf(stderr, "stack_bench: a present key reported absent\n");
            return 1;
        }
    keyset absent = keys("miss:", queries, 100000000, 7);
    arrays ga = arrays_like(grown), ra = arrays_like(reserved);
    printf("stack_bench: %" PRIu64 " items; grown: %u layers, %" PRIu64 " B; reserved: %u, %" PRIu64
           " B; %" PRIu64 " absent keys per figure\n",
           items, ga.n, bg_filter_bytes(grown), ra.n, bg_filter_bytes(reserved), queries);

    double best[6] = {1e18, 1e18, 1e18, 1e18, 1e18, 1e18};
    uint64_t sink = 0;
    for (uint64_t r = 0; r < rounds; r++) {
        int64_t hg, hr, sg, sr;
        double t[6] = {lookups(grown, &absent, &hg),       lookups(reserved, &absent, &hr),
                       floor_ns(&ga, queries, &sink),      floor_ns(&ra, queries, &sink),
                       single_lookups(grown, &absent, &sg), single_lookups(reserved, &absent, &sr)};
        if (sg != hg || sr != hr) {
            fprintf(stderr, "stack_bench: single and batched lookups disagree\n");
            return 1;
        }
        printf("  round %" PRIu64 ": lookup grown %.1f ns (FPR %.4f%%), reserved %.1f ns "
               "(FPR %.4f%%); floor grown %.1f ns, reserved %.1f ns; one per call: grown "
               "%.1f ns, reserved %.1f ns\n",
               r + 1, t[0], 100.0 * (double)hg / (double)queries, t[1],
               100.0 * (double)hr / (double)queries, t[2], t[3], t[4], t[5]);
        for (int i = 0; i < 6; i++)
            best[i] = t[i] < best[i] ? t[i] : best[i];
    }
    /* A lookup in the grown stack reads at least its floor's lines and
     * does at least the work of a reserved lookup beyond that one's own
     * floor (hashing the key, the batch loop): the bound below. */
    double bound = best[2] + (best[1] - best[3]);
    printf("best of %" PRIu64 ": one per call, grown / reserved = %.1f / %.1f ns = %.2fx\n",
           rounds, best[4], best[5], best[4] / best[5]);
    printf("best of %" PRIu64 ": lookup grown / reserved = %.1f / %.1f ns = %.2fx; "
           "floor (one line per layer) = %.1f / %.1f ns = %.2fx; "
           "bound (grown floor + reserved work) = %.1f ns = %.2fx\n",
           rounds, best[0], best[1], best[0] / best[1], best[2], best[3], best[2] / best[3], bound,
           bound / best[1]);

    /* One blocked layer's probe without a miss (the header). */
    bg_filter *few = make(true, FULL_STACK(FEW_LAYERS)), *more = make(true, FULL_STACK(MORE_LAYERS));
    keyset small = keys("item:", FULL_STACK(MORE_LAYERS), 0, 1);
    uint8_t small_res[FULL_STACK(MORE_LAYERS)];
    bg_filter_add_many(few, small.ptr, small.len, FULL_STACK(FEW_LAYERS), small_res);
    bg_filter_add_many(more, small.ptr, small.len, FULL_STACK(MORE_LAYERS), small_res);
    bg_filter_stats fs, ms;
    bg_filter_stats_get(few, &fs);
    bg_filter_stats_get(more, &ms);
    if (fs.layers != FEW_LAYERS || ms.layers != MORE_LAYERS) {
        fprintf(stderr, "stack_bench: in-cache stacks of %u and %u layers, not %d and %d\n",
                fs.layers, ms.layers, FEW_LAYERS, MORE_LAYERS);
        return 1;
    }
    double tf = 1e18, tm = 1e18;
    for (uint64_t r = 0; r < rounds; r++) {
        int64_t h;
        double a = lookups(few, &absent, &h), b = lookups(more, &absent, &h);
        tf = a < tf ? a : tf;
        tm = b < tm ? b : tm;
    }
    printf("best of %" PRIu64 ": in cache, grown to %" PRIu64 " items (%d layers, %" PRIu64
           " B) / to %" PRIu64 " (%d layers) = %.1f / %.1f ns: %.1f ns per blocked layer "
           "without a miss; x %u layers = %.1f ns\n",
           rounds, FULL_STACK(MORE_LAYERS), MORE_LAYERS, bg_filter_bytes(more),
           FULL_STACK(FEW_LAYERS), FEW_LAYERS, tm, tf, (tm - tf) / (MORE_LAYERS - FEW_LAYERS),
           ga.n - 1, (tm - tf) / (MORE_LAYERS - FEW_LAYERS) * (ga.n - 1));
    bg_filter_free(few);
    bg_filter_free(more);
    return sink == 42 ? 3 : 0; /* keeps the floor's loads */
}
