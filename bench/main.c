/* bloomgate-bench: bloomgate's filters against libbloom on the same keys,
 * and both against this machine's memory, with the targets of the
 * performance issue checked at the end. docs/PERFORMANCE.md explains the
 * method and holds the figures; `bloomgate-bench --help` lists the options.
 * Every variant is measured the same way (inserts, present and absent
 * queries, single and batched); the counting variant also gets remove
 * passes, and the scalable one starts at n / SCALABLE_SHRINK keys so that
 * the inserts make it grow.
 *
 * HOW A FIGURE IS MADE
 * Keys are made a window of --batch keys at a time into a buffer that stays
 * in cache, untimed (bench.h). One "pass" is one loop of library calls over
 * a key set, window by window, and its time is the sum of the
 * CLOCK_MONOTONIC intervals around the calls on each window; a pass is
 * repeated (an insert pass on a freshly cleared
 * filter each time, the clear untimed) until the passes add up to
 * --min-time seconds and there are at least three of them or they add up to
 * LONG_PASS_S (at most MAX_REPS passes), and the figure is the median pass
 * divided by its calls.
 * Every figure is therefore throughput: back-to-back calls on independent
 * keys, which the CPU may overlap, not the latency of one isolated call.
 * Scans of the whole array (statistics, union) are timed call by call
 * instead, beside plain loops over as many bytes (SCANS). */
#define _POSIX_C_SOURCE 200809L

#include <assert.h>
#include <bloom.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bloomgate/bloomgate.h>

#include "bench.h"

#define MAX_LIST 8
#define MAX_ROWS 128
#define LONG_PASS_S 2.0 /* passes this long in total need not be three */
#define MAX_REPS 25
#define GIB (UINT64_C(1) << 30)

/* A scalable filter starts with this fraction of n as its first layer's
 * capacity, so that it grows about this many times over an insert pass
 * (expansion 2: 10 layers). */
#define SCALABLE_SHRINK 1000

/* Without --variant, the counting and scalable variants run only up to this
 * n (their 1e8 cells alone would take longer than the rest of the run);
 * naming them in --variant runs them at every n. */
#define NEW_VARIANTS_DEFAULT_MAX_N UINT64_C(10000000)

enum { V_STANDARD, V_BLOCKED, V_LIBBLOOM, V_COUNTING, V_SCALABLE, V_COUNT };
static const char *const variant_names[V_COUNT] = {"standard", "blocked", "libbloom", "counting",
                                                   "scalable"};
enum { W_CONCURRENT, W_SINGLE, W_COUNT };
static const char *const writer_names[W_COUNT] = {"concurrent", "single"};

typedef struct options {
    uint64_t n[MAX_LIST];
    size_t n_count;
    double p[MAX_LIST];
    size_t p_count;
    bool variant[V_COUNT];
    bool variant_given; /* --variant was given (NEW_VARIANTS_DEFAULT_MAX_N) */
    bg_variant layer_variant; /* of the scalable filter's layers */
    bool writers[W_COUNT];
    size_t batch;
    double min_time;
    size_t present_queries; /* cap: min(n, this) present keys are queried */
    size_t absent_queries;
    bool probe;
    size_t key_lens[MAX_LIST]; /* KEY LENGTHS; none: key_len_count 0 */
    size_t key_len_count;
    const char *csv;
    const char *json;
} options;

/* One line of the table. NAN marks a figure that was not measured. */
typedef struct row {
    uint64_t n;
    double p;
    int variant;
    int writers; /* -1 for libbloom */
    uint64_t bits;
    uint32_t k;
    uint64_t bytes;
    uint64_t bits_set; /* after the insert passes: the n keys' bits */
    double ins_single, ins_batch;
    double present_single, present_batch;
    double absent_single, absent_batch;
    double remove_single, remove_batch; /* counting only */
    uint32_t layers;                    /* scalable: after the n inserts; else 1 */
    double capacity_p;                  /* scalable: the layers' compound rate at capacity */
    uint64_t first_capacity;            /* scalable: the first layer's */
    uint64_t present_queried, present_hits;
    uint64_t absent_queried, fp_count;
    double model_p;
    double huge_mib; /* of the filter's array on transparent huge pages; -1 unknown */
    /* SCANS: median seconds per call; NAN: not measured. union_concurrent_s: the
     * union into a filter for concurrent writers. */
    double stats_s, union_s, union_concurrent_s;
    bench_stream stream;     /* the plain loops over r->bytes, measured right after */
} row;

/* The probes of one (n, p): the filter's size and, once per run, 1 GiB. */
typedef struct probe_set {
    uint64_t n;
    double p;
    bench_probe small, small_huge;
} probe_set;

static row rows[MAX_ROWS];
static size_t row_count;
static probe_set probes[MAX_LIST * MAX_LIST];
static size_t probe_count;
static bench_probe probe_gib, probe_gib_huge;
static bool have_probe_gib;
static double hash_alone_ns = NAN; /* bg_hash_key over the absent keys */

/* KEY LENGTHS
 * The main table's keys are "product:<id>", 17 to 19 bytes, which XXH3
 * hashes by one code path. Other lengths take others (0-16, 17-128 bytes in
 * 32-byte rounds, longer), and so do the batch calls' eight-key vector
 * hashes (blocked variant, AVX-512). So the n = 1e6 blocked filter, single
 * writer, is also measured on fixed-length binary keys (bench.h): inserts
 * and absent queries, single and batched, and hashing alone. */
typedef struct key_len_row {
    size_t len;
    double p;
    double hash, ins_single, ins_batch, absent_single, absent_batch;
} key_len_row;
static key_len_row key_len_rows[MAX_LIST * MAX_LIST];
static size_t key_len_row_count;
#define KEY_LEN_N 1000000

/* SIDE BY SIDE
 * T1 relates three figures of the n = 1e8, p = 0.01 cell: the blocked
 * variant's batched absent query, libbloom's absent query and the memory
 * probe's independent read. In the table they are measured one after the
 * other, up to two minutes apart, and a shared virtual machine's speed
 * drifts within minutes (docs/PERFORMANCE.md: up to 1.8x within the hour on
 * the AMD guest), so a ratio of two of them carries that drift. There the
 * three are therefore also measured in SIDE_ROUNDS short rounds, one slice
 * of each per round, back to back, the order rotated from one round to the
 * next, and T1 is judged on the median over the rounds of each round's
 * ratio: a drift slower than a round (about half a second) cancels in it.
 * The blocked filter (single writer if measured, else concurrent: the same
 * bits) is kept from its cell until libbloom's cell has run. */
#define SIDE_N UINT64_C(100000000)
#define SIDE_P 0.01
#define SIDE_ROUNDS 7
#define SIDE_LIBBLOOM_KEYS ((size_t)1 << 20) /* ~0.3 s at libbloom's ~300 ns */

typedef struct side_round {
    double probe, blocked, libbloom; /* ns per read, per query, per query */
} side_round;
static side_round side_rounds[SIDE_ROUNDS];
static size_t side_round_count;
static size_t side_blocked_keys, side_libbloom_keys;
static bg_filter *side_blocked;

/* ---------------------------------------------------------------- timing */

typedef struct pass_ctx {
    bg_filter *f;
    struct bloom *lb;
    bench_keys *keys;
    size_t count; /* keys [0, count) of `keys` */
    size_t batch; /* keys per window, <= BENCH_WINDOW */
    uint8_t *results;
    uint64_t hits; /* of the last pass */
} pass_ctx;

/* One pass: returns the seconds spent in the timed calls. */
typedef double (*pass_fn)(pass_ctx *c);
typedef void (*reset_fn)(pass_ctx *c);

/* Runs BODY once per window of c's keys, with `ptr`, `len` and `n` naming the
 * window, timing BODY alone; evaluates to the total seconds. */
#define TIMED_WINDOWS(c, BODY)                                                 \
    do {                                                                       \
        double timed_ = 0;                                                     \
        assert((c)->batch >= 1 && (c)->batch <= BENCH_WINDOW);                 \
        for (size_t at_ = 0; at_ < (c)->count; at_ += (c)->batch) {            \
            size_t n = (c)->count - at_ < (c)->batch ? (c)->count - at_ : (c)->batch; \
            bench_keys_window((c)->keys, at_, n);                              \
            const void *const *ptr = (c)->keys->ptr;                           \
            const size_t *len = (c)->keys->len;                                \
            double t0_ = bench_now();                                          \
            BODY;                                                              \
            timed_ += bench_now() - t0_;                                       \
        }                                                                      \
        return timed_;                                                         \
    } while (0)

static double bg_insert_single(pass_ctx *c)
{
    bg_filter *f = c->f;
    TIMED_WINDOWS(c, for (size_t i = 0; i < n; i++) bg_filter_add(f, ptr[i], len[i]));
}

static double bg_insert_batch(pass_ctx *c)
{
    TIMED_WINDOWS(c, bg_filter_add_many(c->f, ptr, len, n, c->results));
}

static double bg_query_single(pass_ctx *c)
{
    const bg_filter *f = c->f;
    uint64_t hits = 0;
    c->hits = 0;
    TIMED_WINDOWS(c, {
        for (size_t i = 0; i < n; i++)
            hits += bg_filter_contains(f, ptr[i], len[i]) == 1;
        c->hits = hits;
    });
}

static double bg_query_batch(pass_ctx *c)
{
    c->hits = 0;
    TIMED_WINDOWS(c, {
        int64_t r = bg_filter_contains_many(c->f, ptr, len, n, c->results);
        c->hits += r > 0 ? (uint64_t)r : 0;
    });
}

/* Removes: on a filter that holds the pass's keys (remove_reset), so each
 * call finds its key and decrements its counters. */
static double bg_remove_single(pass_ctx *c)
{
    bg_filter *f = c->f;
    uint64_t removed = 0;
    c->hits = 0;
    TIMED_WINDOWS(c, {
        for (size_t i = 0; i < n; i++)
            removed += bg_filter_remove(f, ptr[i], len[i]) == BG_OK;
        c->hits = removed;
    });
}

static double bg_remove_batch(pass_ctx *c)
{
    c->hits = 0;
    TIMED_WINDOWS(c, {
        int64_t r = bg_filter_remove_many(c->f, ptr, len, n, c->results);
        c->hits += r > 0 ? (uint64_t)r : 0;
    });
}

static double lb_insert(pass_ctx *c)
{
    struct bloom *b = c->lb;
    TIMED_WINDOWS(c, for (size_t i = 0; i < n; i++) bloom_add(b, ptr[i], (int)len[i]));
}

static double lb_query(pass_ctx *c)
{
    struct bloom *b = c->lb;
    uint64_t hits = 0;
    c->hits = 0;
    TIMED_WINDOWS(c, {
        for (size_t i = 0; i < n; i++)
            hits += bloom_check(b, ptr[i], (int)len[i]) == 1;
        c->hits = hits;
    });
}

static double hash_only(pass_ctx *c)
{
    uint64_t sum = 0;
    TIMED_WINDOWS(c, {
        for (size_t i = 0; i < n; i++) {
            bg_hash h;
            bg_hash_key(ptr[i], len[i], 0, &h);
            sum += h.h1 ^ h.h2;
        }
        c->hits = sum;
    });
}

static double mean_len(bench_keys *ks)
{
    double total = 0;
    for (size_t at = 0; at < ks->count; at += BENCH_WINDOW) {
        size_t n = ks->count - at < BENCH_WINDOW ? ks->count - at : BENCH_WINDOW;
        bench_keys_window(ks, at, n);
        for (size_t i = 0; i < n; i++)
            total += (double)ks->len[i];
    }
    return ks->count ? total / (double)ks->count : 0;
}

/* bg_filter_clear and bloom_reset write every byte, so the first timed pass
 * finds every page of the array already faulted in, like the later ones. */
static void bg_reset(pass_ctx *c)
{
    bg_filter_clear(c->f);
}

/* Empty the filter, then add the pass's keys (untimed), for a remove pass. */
static void remove_reset(pass_ctx *c)
{
    bg_filter_clear(c->f);
    for (size_t at = 0; at < c->count; at += BENCH_WINDOW) {
        size_t n = c->count - at < BENCH_WINDOW ? c->count - at : BENCH_WINDOW;
        bench_keys_window(c->keys, at, n);
        bg_filter_add_many(c->f, c->keys->ptr, c->keys->len, n, NULL);
    }
}

static void lb_reset(pass_ctx *c)
{
    bloom_reset(c->lb);
}

/* The median ns per call over repeated passes (see HOW A FIGURE IS MADE). */
static double measure(pass_fn pass, reset_fn reset, pass_ctx *c, double min_time)
{
    double t[MAX_REPS], total = 0;
    size_t reps = 0;
    while (reps < MAX_REPS) {
        if (reset)
            reset(c);
        t[reps] = pass(c);
        total += t[reps++];
        if (total >= min_time && (reps >= 3 || total >= LONG_PASS_S))
            break;
    }
    return bench_median(t, reps) * 1e9 / (double)c->count;
}

/* ------------------------------------------------------------- the runs */

static void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void progress(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("  .. ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static row *new_row(uint64_t n, double p, int variant, int writers)
{
    if (row_count == MAX_ROWS) {
        fprintf(stderr, "bloomgate-bench: too many rows\n");
        exit(2);
    }
    row *r = &rows[row_count++];
    memset(r, 0, sizeof *r);
    r->n = n;
    r->p = p;
    r->variant = variant;
    r->writers = writers;
    r->ins_single = r->ins_batch = NAN;
    r->present_single = r->present_batch = NAN;
    r->absent_single = r->absent_batch = NAN;
    r->remove_single = r->remove_batch = NAN;
    r->layers = 1;
    r->capacity_p = NAN;
    r->model_p = NAN;
    r->huge_mib = -1;
    r->stats_s = r->union_s = r->union_concurrent_s = NAN;
    r->stream.read_s = r->stream.or_s = NAN;
    return r;
}

static void check_no_false_negatives(const row *r, uint64_t hits, uint64_t queried,
                                     const char *how)
{
    if (hits != queried) {
        fprintf(stderr,
                "bloomgate-bench: FALSE NEGATIVES: %s %s n=%llu p=%g: %llu of %llu present "
                "keys reported absent\n",
                variant_names[r->variant], how, (unsigned long long)r->n, r->p,
                (unsigned long long)(queried - hits), (unsigned long long)queried);
        exit(1);
    }
}

/* Queries on a filled filter: present keys and absent keys, single calls and
 * batches. The absent single pass's hit count is the false-positive count;
 * the batched pass must agree with it (same keys, same filter). */
static void run_queries(row *r, pass_ctx *c, pass_fn single, pass_fn batch,
                        bench_keys *present, bench_keys *absent,
                        const options *o)
{
    const char *v = variant_names[r->variant];
    c->keys = present;
    c->count = r->n < o->present_queries ? (size_t)r->n : o->present_queries;
    r->present_queried = c->count;
    progress("%s: present queries, single", v);
    r->present_single = measure(single, NULL, c, o->min_time);
    check_no_false_negatives(r, c->hits, c->count, "single");
    r->present_hits = c->hits;
    if (batch) {
        progress("%s: present queries, batched", v);
        r->present_batch = measure(batch, NULL, c, o->min_time);
        check_no_false_negatives(r, c->hits, c->count, "batched");
    }
    c->keys = absent;
    c->count = absent->count;
    r->absent_queried = c->count;
    progress("%s: absent queries, single", v);
    r->absent_single = measure(single, NULL, c, o->min_time);
    r->fp_count = c->hits;
    if (batch) {
        progress("%s: absent queries, batched", v);
        r->absent_batch = measure(batch, NULL, c, o->min_time);
        if (c->hits != r->fp_count) {
            fprintf(stderr, "bloomgate-bench: %s: batched and single queries disagree (%llu vs %llu)\n",
                    v, (unsigned long long)c->hits, (unsigned long long)r->fp_count);
            exit(1);
        }
    }
}

static bg_variant lib_variant(int variant)
{
    switch (variant) {
    case V_STANDARD:
        return BG_VARIANT_STANDARD;
    case V_BLOCKED:
        return BG_VARIANT_BLOCKED;
    case V_COUNTING:
        return BG_VARIANT_COUNTING;
    default:
        return BG_VARIANT_SCALABLE;
    }
}

/* The size of the filter as it is now (a scalable one grows). */
static void record_shape(row *r, const bg_filter *f)
{
    bg_filter_stats st;
    bg_filter_stats_get(f, &st);
    r->bits = st.bits;
    r->k = st.hashes;
    r->bytes = st.bytes;
    r->bits_set = st.bits_set;
    r->layers = st.layers;
    /* A scalable stack's expected rate depends on how full each layer
     * really is: its first layers are small, so their fill, and with it
     * fill^k, varies from one filter to the next by several percent (a
     * layer of 1000 keys: about 8%). The rate from the fill,
     * 1 - prod_i (1 - fill_i^k_i) (bg_filter_stats), is what this filter
     * is expected to give; the layers' compound rate at capacity, what p
     * bounds, is kept beside it. The others: the model's rate at n. */
    r->capacity_p = st.error_rate;
    r->model_p = r->variant == V_SCALABLE ? st.estimated_fp_rate
                                          : bg_sizing_fp_rate(st.variant, st.bits, r->n, st.hashes);
}

/* Remove passes on a counting filter: every key must be found (it was
 * added), and a filter emptied by removing all its keys has no non-zero
 * counter left (distinct keys at capacity saturate none). */
static void run_removes(row *r, pass_ctx *c, const options *o)
{
    const char *v = variant_names[r->variant];
    const char *w = writer_names[r->writers];
    progress("%s %s: removes, single", v, w);
    r->remove_single = measure(bg_remove_single, remove_reset, c, o->min_time);
    check_no_false_negatives(r, c->hits, c->count, "remove single");
    progress("%s %s: removes, batched", v, w);
    r->remove_batch = measure(bg_remove_batch, remove_reset, c, o->min_time);
    check_no_false_negatives(r, c->hits, c->count, "remove batched");
    bg_filter_stats st;
    bg_filter_stats_get(c->f, &st);
    if (st.bits_set != st.saturated) {
        fprintf(stderr, "bloomgate-bench: counting: %llu counters non-zero after removing every "
                        "key (%llu saturated)\n",
                (unsigned long long)st.bits_set, (unsigned long long)st.saturated);
        exit(1);
    }
}

/* SCANS
 * The calls that read a filter's whole array, on the filled filter:
 * bg_filter_stats_get, and bg_filter_union of it into an empty filter of
 * the same shape (cleared before each call, untimed), made for a single
 * writer, as `bloomgate merge` makes its own, and made for concurrent
 * writers, where each word that changes costs a locked OR (the probe's
 * locked_or_ns; a compare-and-swap for counting), the price of a union
 * that is safe during adds. Each call is timed alone, at least three times
 * and until --min-time seconds have gone by; the figure is the median. Right after, the plain loops over as many
 * bytes (bench.h STREAMING): how close a scan comes to this machine's
 * streaming speed. The union must leave the copy with the filter's bits. */
static void run_scans(row *r, const bg_filter *f, const bg_filter_options *fo, const options *o)
{
    bg_filter_options go = *fo;
    bg_filter *g[2] = {NULL, NULL}; /* single writer, concurrent writers */
    go.concurrency = BG_SINGLE_WRITER;
    int rc = bg_filter_new(&g[0], &go);
    go.concurrency = BG_CONCURRENT_WRITERS;
    if (rc == BG_OK)
        rc = bg_filter_new(&g[1], &go);
    if (rc != BG_OK) {
        bg_filter_free(g[0]);
        progress("%s: scans skipped (no memory for two more filters)", variant_names[r->variant]);
        return;
    }
    progress("%s: scans (statistics, union)", variant_names[r->variant]);
    double ts[MAX_REPS], tu[2][MAX_REPS], total = 0;
    size_t reps = 0;
    bg_filter_stats st;
    while (reps < MAX_REPS && (reps < 3 || total < o->min_time)) {
        double t0 = bench_now();
        bg_filter_stats_get(f, &st);
        ts[reps] = bench_now() - t0;
        total += ts[reps];
        for (int c = 0; c < 2; c++) {
            bg_filter_clear(g[c]);
            t0 = bench_now();
            rc = bg_filter_union(g[c], f);
            tu[c][reps] = bench_now() - t0;
            if (rc != BG_OK) {
                fprintf(stderr, "bloomgate-bench: bg_filter_union: %s\n", bg_strerror(rc));
                exit(1);
            }
            total += tu[c][reps];
        }
        reps++;
    }
    for (int c = 0; c < 2; c++) {
        bg_filter_stats gs;
        bg_filter_stats_get(g[c], &gs);
        bg_filter_free(g[c]);
        if (gs.bits_set != st.bits_set || st.bits_set != r->bits_set) {
            fprintf(stderr,
                    "bloomgate-bench: %s: the union's copy has %llu bits set, the filter %llu\n",
                    variant_names[r->variant], (unsigned long long)gs.bits_set,
                    (unsigned long long)st.bits_set);
            exit(1);
        }
    }
    r->stats_s = bench_median(ts, reps);
    r->union_s = bench_median(tu[0], reps);
    r->union_concurrent_s = bench_median(tu[1], reps);
    if (bench_stream_run(&r->stream, r->bytes, o->min_time) != 0)
        r->stream.read_s = r->stream.or_s = NAN;
}

/* Whether (n, p) is T1's cell and everything its rounds need is measured. */
static bool side_by_side_cell(uint64_t n, double p, const options *o)
{
    return n == SIDE_N && p == SIDE_P && o->variant[V_BLOCKED] && o->variant[V_LIBBLOOM] &&
           o->probe;
}

static void run_bloomgate(uint64_t n, double p, int variant, bench_keys *present,
                          bench_keys *absent, const options *o, uint8_t *results)
{
    bool queried = false;
    bool scalable = variant == V_SCALABLE;
    for (int w = 0; w < W_COUNT; w++) {
        if (!o->writers[w])
            continue;
        bg_filter_options fo = {
            .variant = lib_variant(variant),
            .capacity = n,
            .error_rate = p,
            .seed = 0x62656e6368,
            .concurrency = w == W_SINGLE ? BG_SINGLE_WRITER : BG_CONCURRENT_WRITERS,
        };
        if (scalable) {
            fo.capacity = n / SCALABLE_SHRINK ? n / SCALABLE_SHRINK : 1;
            fo.layer_variant = o->layer_variant;
        }
        bg_filter *f;
        double huge_before = bench_anon_huge_mib();
        int rc = bg_filter_new(&f, &fo);
        if (rc != BG_OK) {
            fprintf(stderr, "bloomgate-bench: bg_filter_new(%s, n=%llu, p=%g): %s\n",
                    variant_names[variant], (unsigned long long)fo.capacity, p, bg_strerror(rc));
            exit(1);
        }
        row *r = new_row(n, p, variant, w);
        r->first_capacity = fo.capacity;
        record_shape(r, f);

        bg_filter_clear(f); /* faults every page in */
        double huge_after = bench_anon_huge_mib();
        /* A scalable filter's layers come and go with each pass: no one
         * array to look at. */
        if (!scalable && huge_before >= 0 && huge_after >= 0)
            r->huge_mib = huge_after - huge_before;
        pass_ctx c = {.f = f, .keys = present, .count = (size_t)n, .batch = o->batch,
                      .results = results};
        progress("%s %s: inserts, single", variant_names[variant], writer_names[w]);
        r->ins_single = measure(bg_insert_single, bg_reset, &c, o->min_time);
        progress("%s %s: inserts, batched", variant_names[variant], writer_names[w]);
        r->ins_batch = measure(bg_insert_batch, bg_reset, &c, o->min_time);
        /* The filter now holds the n keys (a scalable one has grown to hold
         * them). Queries do not depend on the writers mode (same bits, same
         * read path): measured once. */
        record_shape(r, f);
        if (!queried) {
            run_queries(r, &c, bg_query_single, bg_query_batch, present, absent, o);
            if (!scalable)
                run_scans(r, f, &fo, o);
            queried = true;
        }
        if (variant == V_COUNTING) {
            c.keys = present;
            c.count = (size_t)n;
            run_removes(r, &c, o);
        }
        if (variant == V_BLOCKED && side_by_side_cell(n, p, o)) {
            bg_filter_free(side_blocked); /* the concurrent writers' one */
            side_blocked = f;
        } else {
            bg_filter_free(f);
        }
    }
}

static void run_key_lengths(const options *o, uint8_t *results)
{
    static bench_keys present, absent;
    for (size_t li = 0; li < o->key_len_count; li++) {
        size_t len = o->key_lens[li];
        bench_keys_make_fixed(&present, 0, KEY_LEN_N, len);
        bench_keys_make_fixed(&absent, BENCH_ABSENT_BASE, KEY_LEN_N, len);
        for (size_t pi = 0; pi < o->p_count; pi++) {
            double p = o->p[pi];
            progress("key lengths: %zu bytes, p=%g", len, p);
            bg_filter_options fo = {.variant = BG_VARIANT_BLOCKED, .capacity = KEY_LEN_N,
                                    .error_rate = p, .seed = 0x62656e6368,
                                    .concurrency = BG_SINGLE_WRITER};
            bg_filter *f;
            int rc = bg_filter_new(&f, &fo);
            if (rc != BG_OK) {
                fprintf(stderr, "bloomgate-bench: bg_filter_new(blocked, n=%d, p=%g): %s\n",
                        KEY_LEN_N, p, bg_strerror(rc));
                exit(1);
            }
            key_len_row *r = &key_len_rows[key_len_row_count++];
            *r = (key_len_row){.len = len, .p = p};
            pass_ctx c = {.f = f, .keys = &absent, .count = KEY_LEN_N, .batch = o->batch,
                          .results = results};
            r->hash = measure(hash_only, NULL, &c, o->min_time);
            c.keys = &present;
            r->ins_single = measure(bg_insert_single, bg_reset, &c, o->min_time);
            r->ins_batch = measure(bg_insert_batch, bg_reset, &c, o->min_time);
            /* the filter holds the present keys: every one must be found */
            (void)bg_query_batch(&c);
            if (c.hits != KEY_LEN_N) {
                fprintf(stderr, "bloomgate-bench: FALSE NEGATIVES: %zu-byte keys: %llu of %d "
                                "found\n", len, (unsigned long long)c.hits, KEY_LEN_N);
                exit(1);
            }
            c.keys = &absent;
            r->absent_single = measure(bg_query_single, NULL, &c, o->min_time);
            r->absent_batch = measure(bg_query_batch, NULL, &c, o->min_time);
            bg_filter_free(f);
        }
    }
}

static void print_key_lengths(FILE *out)
{
    if (key_len_row_count == 0)
        return;
    fprintf(out, "\nKEY LENGTHS: blocked, n = 1e6, single writer, fixed-length binary keys, "
                 "ns per key (queries: absent keys)\n");
    fprintf(out, "%7s %8s %8s %10s %10s %10s %10s\n", "bytes", "p", "hash", "ins single",
            "ins batch", "qry single", "qry batch");
    for (size_t i = 0; i < key_len_row_count; i++) {
        const key_len_row *r = &key_len_rows[i];
        fprintf(out, "%7zu %8g %8.2f %10.2f %10.2f %10.2f %10.2f\n", r->len, r->p, r->hash,
                r->ins_single, r->ins_batch, r->absent_single, r->absent_batch);
    }
}

static uint64_t filter_bytes(uint64_t n, double p, const options *o);
static const row *query_row(uint64_t n, double p, int variant);

/* SIDE BY SIDE's rounds, on T1's cell once libbloom's filter `lb` holds the
 * n keys: side_blocked is queried in batches over the absent keys, `lb`
 * over the first SIDE_LIBBLOOM_KEYS of them, and the probe reads fresh
 * filter-sized buffers (4 KiB pages and THP asked, the better counts, as
 * for best_independent). The blocked filter must find exactly the false
 * positives of its cell, and libbloom the same ones in every round. */
static void run_side_by_side(struct bloom *lb, bench_keys *absent, const options *o,
                             uint8_t *results)
{
    const row *bl_row = query_row(SIDE_N, SIDE_P, V_BLOCKED);
    if (bl_row == NULL)
        return; /* not reached: side_blocked comes from that row's cell */
    uint64_t bytes = filter_bytes(SIDE_N, SIDE_P, o);
    bench_reader *small = bench_reader_new(bytes, 0), *huge = bench_reader_new(bytes, 1);
    if (small == NULL || huge == NULL) {
        progress("side by side: no memory for the probe's buffers: skipped");
        bench_reader_free(small);
        bench_reader_free(huge);
        return;
    }
    pass_ctx bc = {.f = side_blocked, .keys = absent, .count = absent->count, .batch = o->batch,
                   .results = results};
    pass_ctx lc = {.lb = lb, .keys = absent, .batch = o->batch,
                   .count = absent->count < SIDE_LIBBLOOM_KEYS ? absent->count
                                                               : SIDE_LIBBLOOM_KEYS};
    side_blocked_keys = bc.count;
    side_libbloom_keys = lc.count;
    uint64_t libbloom_hits = 0;
    progress("side by side: %d rounds", SIDE_ROUNDS);
    for (size_t r = 0; r < SIDE_ROUNDS; r++) {
        side_round *sr = &side_rounds[r];
        for (size_t j = 0; j < 3; j++) {
            switch ((r + j) % 3) {
            case 0: {
                double a = bench_reader_ns(small), b = bench_reader_ns(huge);
                sr->probe = a < b ? a : b;
                break;
            }
            case 1:
                sr->blocked = bg_query_batch(&bc) * 1e9 / (double)bc.count;
                if (bc.hits != bl_row->fp_count) {
                    fprintf(stderr, "bloomgate-bench: side by side: blocked found %llu of the "
                                    "absent keys, its cell %llu\n",
                            (unsigned long long)bc.hits, (unsigned long long)bl_row->fp_count);
                    exit(1);
                }
                break;
            default:
                sr->libbloom = lb_query(&lc) * 1e9 / (double)lc.count;
                if (r > 0 && lc.hits != libbloom_hits) {
                    fprintf(stderr, "bloomgate-bench: side by side: libbloom found %llu of the "
                                    "absent keys, %llu before\n",
                            (unsigned long long)lc.hits, (unsigned long long)libbloom_hits);
                    exit(1);
                }
                libbloom_hits = lc.hits;
                break;
            }
        }
    }
    side_round_count = SIDE_ROUNDS;
    bench_reader_free(small);
    bench_reader_free(huge);
}

static void run_libbloom(uint64_t n, double p, bench_keys *present, bench_keys *absent,
                         const options *o, uint8_t *results)
{
    if (n > INT_MAX || n < 1000) {
        progress("libbloom: n=%llu outside its int range [1000, INT_MAX]: skipped",
                 (unsigned long long)n);
        return;
    }
    struct bloom b;
    if (bloom_init(&b, (int)n, p) != 0) {
        fprintf(stderr, "bloomgate-bench: bloom_init(n=%llu, p=%g) failed\n",
                (unsigned long long)n, p);
        exit(1);
    }
    row *r = new_row(n, p, V_LIBBLOOM, -1);
    r->bits = (uint64_t)b.bits;
    r->k = (uint32_t)b.hashes;
    r->bytes = (uint64_t)b.bytes;
    r->model_p = bg_sizing_fp_rate(BG_VARIANT_STANDARD, r->bits, n, r->k);
    double huge_before = bench_anon_huge_mib();
    bloom_reset(&b);
    double huge_after = bench_anon_huge_mib();
    if (huge_before >= 0 && huge_after >= 0)
        r->huge_mib = huge_after - huge_before;
    pass_ctx c = {.lb = &b, .keys = present, .count = (size_t)n, .batch = o->batch};
    progress("libbloom: inserts");
    r->ins_single = measure(lb_insert, lb_reset, &c, o->min_time);
    run_queries(r, &c, lb_query, NULL, present, absent, o);
    if (side_blocked && side_by_side_cell(n, p, o))
        run_side_by_side(&b, absent, o, results);
    bg_filter_free(side_blocked);
    side_blocked = NULL;
    bloom_free(&b);
}

/* The blocked filter's size for (n, p), or the standard one's when only
 * that is measured: the buffer the probe reads. */
static uint64_t filter_bytes(uint64_t n, double p, const options *o)
{
    bg_variant v = o->variant[V_BLOCKED] || !o->variant[V_STANDARD] ? BG_VARIANT_BLOCKED
                                                                     : BG_VARIANT_STANDARD;
    bg_sizing s = {.n = n, .p = p};
    if (bg_sizing_solve(v, &s, 0) != BG_OK)
        return 0;
    return (s.m + 511) / 512 * 64;
}

/* ---------------------------------------------------------------- output */

static const row *find_row(uint64_t n, double p, int variant, int writers)
{
    for (size_t i = 0; i < row_count; i++)
        if (rows[i].n == n && rows[i].p == p && rows[i].variant == variant &&
            (writers < 0 || rows[i].writers == writers))
            return &rows[i];
    return NULL;
}

/* The row that holds the variant's query figures. */
static const row *query_row(uint64_t n, double p, int variant)
{
    for (size_t i = 0; i < row_count; i++)
        if (rows[i].n == n && rows[i].p == p && rows[i].variant == variant &&
            rows[i].absent_queried > 0)
            return &rows[i];
    return NULL;
}

/* The hardware limit for independent reads over the filter's size: the
 * better of the 4 KiB-page and the huge-page buffer. */
static double best_independent(const probe_set *ps)
{
    double a = ps->small.independent_ns, b = ps->small_huge.independent_ns;
    return b > 0 && b < a ? b : a;
}

static const probe_set *find_probe(uint64_t n, double p)
{
    for (size_t i = 0; i < probe_count; i++)
        if (probes[i].n == n && probes[i].p == p)
            return &probes[i];
    return NULL;
}

static void fmt_ns(char *buf, size_t size, double v)
{
    if (isnan(v))
        snprintf(buf, size, "%7s", "-");
    else
        snprintf(buf, size, "%7.1f", v);
}

static double fp_rate(const row *r)
{
    return r->absent_queried ? (double)r->fp_count / (double)r->absent_queried : NAN;
}

static void print_machine(FILE *out)
{
    char model[256] = "unknown";
    FILE *ci = fopen("/proc/cpuinfo", "r");
    if (ci) {
        char line[512];
        while (fgets(line, sizeof line, ci)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *colon = strchr(line, ':');
                if (colon) {
                    snprintf(model, sizeof model, "%s", colon + 2);
                    model[strcspn(model, "\n")] = 0;
                }
                break;
            }
        }
        fclose(ci);
    }
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
    fprintf(out, "bloomgate-bench: bloomgate %s vs libbloom %s, %s\n", bg_version_string(),
            bloom_version(), date);
    fprintf(out, "cpu: %s; compiler: gcc %s\n", model, __VERSION__);
}

static void print_probe_line(FILE *out, const char *label, const bench_probe *pr)
{
    char thp[16] = "?";
    if (pr->huge_mib >= 0) {
        double share = pr->huge_mib * 1048576.0 / (double)pr->bytes;
        snprintf(thp, sizeof thp, "%.0f%%", share > 1 ? 100.0 : share * 100);
    }
    fprintf(out,
            "  memory probe, %-22s %7.1f MiB (THP %4s): dependent %6.1f ns/read, independent "
            "%5.2f ns/read (plain %.2f, prefetched %.2f); locked OR %.2f ns/op; with %.2f ns of "
            "arithmetic per read %.2f ns/read\n",
            label, (double)pr->bytes / 1048576.0, thp, pr->dependent_ns, pr->independent_ns,
            pr->independent_plain_ns, pr->independent_prefetch_ns, pr->locked_or_ns, pr->arith_ns,
            pr->reads_with_arith_ns);
}

/* The median over SIDE BY SIDE's rounds of each round's libbloom / blocked
 * (which = 0) or blocked / probe (which = 1) ratio, with the smallest and
 * largest; NAN without rounds. */
typedef struct side_ratio {
    double median, lo, hi;
} side_ratio;

static side_ratio side_ratio_of(int which)
{
    side_ratio sr = {NAN, NAN, NAN};
    double v[SIDE_ROUNDS];
    size_t count = side_round_count;
    if (count == 0)
        return sr;
    for (size_t i = 0; i < count; i++) {
        const side_round *r = &side_rounds[i];
        v[i] = which == 0 ? r->libbloom / r->blocked : r->blocked / r->probe;
    }
    sr.median = bench_median(v, count); /* sorts v */
    sr.lo = v[0];
    sr.hi = v[count - 1];
    return sr;
}

static void print_side_by_side(FILE *out)
{
    fprintf(out,
            "  side by side, %zu rounds, each one slice of: the probe's best independent read "
            "(4 KiB and THP buffers), the blocked batched absent query (%zu keys), libbloom's "
            "absent query (%zu keys); order rotated\n",
            side_round_count, side_blocked_keys, side_libbloom_keys);
    fprintf(out, "    %5s %9s %11s %12s %17s %14s\n", "round", "probe ns", "blocked ns",
            "libbloom ns", "libbloom/blocked", "blocked/probe");
    for (size_t i = 0; i < side_round_count; i++) {
        const side_round *r = &side_rounds[i];
        fprintf(out, "    %5zu %9.2f %11.2f %12.1f %16.1fx %13.2fx\n", i + 1, r->probe,
                r->blocked, r->libbloom, r->libbloom / r->blocked, r->blocked / r->probe);
    }
    side_ratio a = side_ratio_of(0), b = side_ratio_of(1);
    fprintf(out, "    median of the rounds' ratios: libbloom/blocked %.1fx (%.1f-%.1fx), "
                 "blocked/probe %.2fx (%.2f-%.2fx)\n",
            a.median, a.lo, a.hi, b.median, b.lo, b.hi);
}

static void print_block(FILE *out, uint64_t n, double p, const options *o)
{
    fprintf(out, "\nn = %.0e (%llu), p = %g   [present queries: %llu, absent queries: %zu, "
                 "batches of %zu]\n",
            (double)n, (unsigned long long)n, p,
            (unsigned long long)(n < o->present_queries ? n : o->present_queries),
            o->absent_queries, o->batch);
    const probe_set *ps = find_probe(n, p);
    if (ps) {
        print_probe_line(out, "filter-sized, 4 KiB", &ps->small);
        print_probe_line(out, "filter-sized, THP asked", &ps->small_huge);
    }
    fprintf(out, "  %-9s %-10s %8s %6s %3s %9s %4s | %-15s | %-15s | %-15s | %-15s | %-9s %6s %9s\n",
            "variant", "writers", "bits/key", "B/key", "k", "MiB", "THP", " insert ns/op",
            "present q ns/op", " absent q ns/op", " remove ns/op", "FP rate", "FP/p", "model p");
    fprintf(out, "  %-9s %-10s %8s %6s %3s %9s %4s | %7s %7s | %7s %7s | %7s %7s | %7s %7s |\n", "",
            "", "", "", "", "", "", "single", "batch", "single", "batch", "single", "batch",
            "single", "batch");
    const row *sc = NULL;
    for (size_t i = 0; i < row_count; i++) {
        const row *r = &rows[i];
        if (r->n != n || r->p != p)
            continue;
        if (r->variant == V_SCALABLE && !sc)
            sc = r;
        char a[8][16];
        fmt_ns(a[0], sizeof a[0], r->ins_single);
        fmt_ns(a[1], sizeof a[1], r->ins_batch);
        fmt_ns(a[2], sizeof a[2], r->present_single);
        fmt_ns(a[3], sizeof a[3], r->present_batch);
        fmt_ns(a[4], sizeof a[4], r->absent_single);
        fmt_ns(a[5], sizeof a[5], r->absent_batch);
        fmt_ns(a[6], sizeof a[6], r->remove_single);
        fmt_ns(a[7], sizeof a[7], r->remove_batch);
        char thp[8] = "?";
        if (r->huge_mib >= 0) {
            double share = r->huge_mib * 1048576.0 / (double)r->bytes;
            snprintf(thp, sizeof thp, "%.0f%%", share > 1 ? 100.0 : share * 100);
        }
        /* bits/key counts m (a counting filter's m counters, a scalable
         * one's bits over all layers); B/key is the memory. */
        fprintf(out, "  %-9s %-10s %8.3f %6.3f %3u %9.1f %4s | %s %s | ", variant_names[r->variant],
                r->writers < 0 ? "-" : writer_names[r->writers], (double)r->bits / (double)n,
                (double)r->bytes / (double)n, r->k, (double)r->bytes / 1048576.0, thp, a[0], a[1]);
        if (r->absent_queried)
            fprintf(out, "%s %s | %s %s | %s %s | %9.6f %6.3f %9.6f\n", a[2], a[3], a[4], a[5], a[6],
                    a[7], fp_rate(r), fp_rate(r) / p, r->model_p);
        else
            fprintf(out, "%-15s | %-15s | %s %s |\n", "(as above)", "(as above)", a[6], a[7]);
    }
    if (sc)
        fprintf(out, "  scalable: %s layers, first layer for n/%d = %llu keys, expansion 2, "
                     "tightening 0.5: %u layers after the n inserts (each insert pass starts "
                     "from one empty layer and grows; its allocations are timed); k is the "
                     "newest layer's; model p is the rate its layers' fill gives (their "
                     "compound rate at capacity: %.6f)\n",
                bg_variant_name(o->layer_variant), SCALABLE_SHRINK,
                (unsigned long long)sc->first_capacity, sc->layers, sc->capacity_p);
    const row *bl = query_row(n, p, V_BLOCKED), *lb = query_row(n, p, V_LIBBLOOM);
    if (bl && ps)
        fprintf(out, "  blocked batched absent query = %.2fx the probe's best independent read "
                     "(%.2f ns)\n",
                bl->absent_batch / best_independent(ps), best_independent(ps));
    if (bl && ps)
        fprintf(out, "  the probe's reads with %.2f ns of arithmetic each: %.2f ns (%.2fx its "
                     "best independent read; %.2fx if none overlapped)\n",
                ps->small.arith_ns, ps->small.reads_with_arith_ns,
                ps->small.reads_with_arith_ns / best_independent(ps),
                (ps->small.arith_ns + best_independent(ps)) / best_independent(ps));
    if (bl && lb)
        fprintf(out, "  libbloom absent query / blocked batched absent query = %.1fx\n",
                lb->absent_single / bl->absent_batch);
    for (size_t i = 0; i < row_count; i++) {
        const row *r = &rows[i];
        if (r->n != n || r->p != p || isnan(r->stats_s))
            continue;
        fprintf(out, "  scan, %-8s stats %7.2f ms (sum of the same bytes %7.2f ms: %.2fx), "
                     "union %7.2f ms (plain or %7.2f ms: %.2fx; into a concurrent-writers "
                     "filter %7.2f ms)\n",
                variant_names[r->variant], r->stats_s * 1e3, r->stream.read_s * 1e3,
                r->stats_s / r->stream.read_s, r->union_s * 1e3, r->stream.or_s * 1e3,
                r->union_s / r->stream.or_s, r->union_concurrent_s * 1e3);
    }
    if (n == SIDE_N && p == SIDE_P && side_round_count)
        print_side_by_side(out);
}

/* ---------------------------------------------------------------- targets */

typedef struct tally {
    int pass, fail, skip;
} tally;

static void verdict(FILE *out, tally *t, int ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void verdict(FILE *out, tally *t, int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(out, "  [%s] ", ok < 0 ? "SKIP" : ok ? "PASS" : "FAIL");
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    va_end(ap);
    if (ok < 0)
        t->skip++;
    else if (ok)
        t->pass++;
    else
        t->fail++;
}

static void print_targets(FILE *out, const options *o)
{
    tally t = {0, 0, 0};
    fprintf(out, "\nTARGETS\n");

    /* T1: n = 1e8, p = 0.01, the blocked batched absent query; judged on
     * SIDE BY SIDE's rounds where they ran, else on the table's cells. */
    const row *bl = query_row(SIDE_N, SIDE_P, V_BLOCKED), *lb = query_row(SIDE_N, SIDE_P, V_LIBBLOOM);
    const probe_set *ps = find_probe(SIDE_N, SIDE_P);
    side_ratio sa = side_ratio_of(0), sb = side_ratio_of(1);
    double probe_cell = ps ? best_independent(ps) : NAN; /* the rounds need no cell */
    if (side_round_count)
        verdict(out, &t, sa.median >= 15,
                "T1a n=1e8 p=0.01: libbloom absent query / blocked batched absent query, median "
                "of %zu side-by-side rounds: %.1fx (rounds %.1f-%.1fx; the table's cells: %.2f vs "
                "%.1f ns, %.1fx) (target >= 15x)",
                side_round_count, sa.median, sa.lo, sa.hi, bl->absent_batch, lb->absent_single,
                lb->absent_single / bl->absent_batch);
    else if (bl && lb)
        verdict(out, &t, lb->absent_single / bl->absent_batch >= 15,
                "T1a n=1e8 p=0.01: blocked batched absent query %.2f ns vs libbloom absent query "
                "%.1f ns: %.1fx faster (target >= 15x)",
                bl->absent_batch, lb->absent_single, lb->absent_single / bl->absent_batch);
    else
        verdict(out, &t, -1, "T1a n=1e8 p=0.01 vs libbloom: not measured in this run");
    if (side_round_count)
        verdict(out, &t, sb.median <= 1.5,
                "T1b n=1e8 p=0.01: blocked batched absent query / the probe's best independent "
                "read, median of %zu side-by-side rounds: %.2fx (rounds %.2f-%.2fx; the table's "
                "cells: %.2f vs %.2f ns, %.2fx) (target <= 1.5x)",
                side_round_count, sb.median, sb.lo, sb.hi, bl->absent_batch, probe_cell,
                bl->absent_batch / probe_cell);
    else if (bl && ps)
        verdict(out, &t, bl->absent_batch <= 1.5 * best_independent(ps),
                "T1b n=1e8 p=0.01: blocked batched absent query %.2f ns = %.2fx the probe's "
                "best independent read over %.0f MiB (%.2f ns) (target <= 1.5x)",
                bl->absent_batch, bl->absent_batch / best_independent(ps),
                (double)ps->small.bytes / 1048576.0, best_independent(ps));
    else
        verdict(out, &t, -1, "T1b n=1e8 p=0.01 vs the memory probe: not measured in this run");

    /* T2: n = 1e6, <= 6 ns per query and per insert, blocked (the default
     * variant), each way of calling, each p. */
    const uint64_t small = 1000000;
    bool any = false;
    for (size_t pi = 0; pi < o->p_count; pi++) {
        double p = o->p[pi];
        for (int w = 0; w < W_COUNT; w++) {
            const row *r = find_row(small, p, V_BLOCKED, w);
            if (r == NULL)
                continue;
            any = true;
            /* The floors, measured in this run: a single call hashes its
             * key alone; a concurrent writer sets each word that misses its
             * bit with a locked OR, and the inserts of n keys set
             * bits_set words in all (one bit per word per key, so each bit
             * set is one word written by one insert). Batches on a CPU with
             * TSX use hardware transactions instead, and come in under that
             * floor (blocked_avx512.c, TRANSACTIONS). */
            char floor[200] = "";
            const probe_set *sized = find_probe(small, p);
            if (w == W_CONCURRENT && sized) {
                double words = (double)r->bits_set / (double)small;
                snprintf(floor, sizeof floor,
                         "; a locked OR here: %.2f ns, %.2f words set per insert: %.1f ns "
                         "without hardware transactions",
                         sized->small.locked_or_ns, words, words * sized->small.locked_or_ns);
            }
            else if (w == W_SINGLE && !isnan(hash_alone_ns))
                snprintf(floor, sizeof floor, "; hashing alone: %.2f ns", hash_alone_ns);
            verdict(out, &t, r->ins_single <= 6 && r->ins_batch <= 6,
                    "T2 n=1e6 p=%g blocked %s writers: insert single %.2f, batched %.2f ns "
                    "(target <= 6%s)",
                    p, writer_names[w], r->ins_single, r->ins_batch, floor);
        }
        const row *q = query_row(small, p, V_BLOCKED);
        if (q) {
            char floor[64] = "";
            if (!isnan(hash_alone_ns))
                snprintf(floor, sizeof floor, "; hashing alone: %.2f ns", hash_alone_ns);
            verdict(out, &t, q->present_single <= 6 && q->absent_single <= 6,
                    "T2 n=1e6 p=%g blocked: query single present %.2f, absent %.2f ns (target "
                    "<= 6%s)",
                    p, q->present_single, q->absent_single, floor);
            verdict(out, &t, q->present_batch <= 6 && q->absent_batch <= 6,
                    "T2 n=1e6 p=%g blocked: query batched present %.2f, absent %.2f ns (target <= 6)",
                    p, q->present_batch, q->absent_batch);
        }
    }
    if (!any)
        verdict(out, &t, -1, "T2 n=1e6 blocked <= 6 ns: not measured in this run");
    for (size_t i = 0; i < key_len_row_count; i++) {
        const key_len_row *r = &key_len_rows[i];
        verdict(out, &t,
                r->ins_single <= 6 && r->ins_batch <= 6 && r->absent_single <= 6 &&
                    r->absent_batch <= 6,
                "T2 n=1e6 p=%g blocked single writer, %zu-byte keys: insert single %.2f, "
                "batched %.2f; absent query single %.2f, batched %.2f ns (target <= 6; hashing "
                "alone: %.2f ns)",
                r->p, r->len, r->ins_single, r->ins_batch, r->absent_single, r->absent_batch,
                r->hash);
    }

    /* T3: measured FP within 10% of p, every bloomgate variant and size;
     * libbloom reported for comparison only. 2 sigma is the binomial
     * sampling error of the estimate, relative to p. */
    any = false;
    for (size_t i = 0; i < row_count; i++) {
        const row *r = &rows[i];
        if (r->absent_queried == 0)
            continue;
        double ratio = fp_rate(r) / r->p;
        double two_sigma = 2 * sqrt(r->p * (1 - r->p) / (double)r->absent_queried) / r->p;
        if (r->variant == V_LIBBLOOM) {
            fprintf(out, "  [info] T3 n=%.0e p=%g libbloom: FP %.6f = %.3fx p (+-%.3f at 2 sigma)\n",
                    (double)r->n, r->p, fp_rate(r), ratio, two_sigma);
            continue;
        }
        any = true;
        if (r->variant == V_SCALABLE) {
            /* p bounds the stack's expected rate at capacity (filter.h
             * SCALABLE); a given stack's rate is the one its fill gives
             * (record_shape), which is what the measurement must match. */
            double vs_fill = fp_rate(r) / r->model_p;
            verdict(out, &t, fabs(vs_fill - 1) <= 0.10,
                    "T3 n=%.0e p=%g scalable: FP %.6f = %.3fx the rate from its layers' fill "
                    "%.6f (target 0.9..1.1); %.3fx p, %.3fx the compound rate at capacity",
                    (double)r->n, r->p, fp_rate(r), vs_fill, r->model_p, ratio,
                    fp_rate(r) / r->capacity_p);
            continue;
        }
        verdict(out, &t, fabs(ratio - 1) <= 0.10,
                "T3 n=%.0e p=%g %s: FP %.6f = %.3fx p (+-%.3f at 2 sigma; target 0.9..1.1)",
                (double)r->n, r->p, variant_names[r->variant], fp_rate(r), ratio, two_sigma);
    }
    if (!any)
        verdict(out, &t, -1, "T3 FP within 10%% of p: not measured in this run");

    /* T4: blocked bits/key <= 1.1x standard's at p = 0.01. */
    any = false;
    for (size_t ni = 0; ni < o->n_count; ni++) {
        const row *s = find_row(o->n[ni], 0.01, V_STANDARD, -1);
        const row *b = find_row(o->n[ni], 0.01, V_BLOCKED, -1);
        if (!s || !b)
            continue;
        any = true;
        double ratio = (double)b->bits / (double)s->bits;
        verdict(out, &t, ratio <= 1.1,
                "T4 n=%.0e p=0.01: blocked %.3f bits/key = %.3fx standard's %.3f (target <= 1.1x)",
                (double)o->n[ni], (double)b->bits / (double)o->n[ni], ratio,
                (double)s->bits / (double)o->n[ni]);
    }
    if (!any)
        verdict(out, &t, -1, "T4 blocked vs standard bits/key at p=0.01: not measured in this run");
    fprintf(out, "  %d passed, %d failed, %d not measured\n", t.pass, t.fail, t.skip);
}

static void write_csv(const char *path)
{
    FILE *out = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (out == NULL) {
        fprintf(stderr, "bloomgate-bench: %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(out, "n,p,variant,writers,bits,k,bytes,bits_per_key,insert_single_ns,insert_batch_ns,"
                 "present_single_ns,present_batch_ns,absent_single_ns,absent_batch_ns,"
                 "present_queried,absent_queried,fp_count,fp_rate,fp_ratio,model_p,"
                 "probe_dependent_ns,probe_independent_ns,bytes_per_key,remove_single_ns,"
                 "remove_batch_ns,layers\n");
    for (size_t i = 0; i < row_count; i++) {
        const row *r = &rows[i];
        const probe_set *ps = find_probe(r->n, r->p);
        fprintf(out, "%llu,%g,%s,%s,%llu,%u,%llu,%.4f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%llu,%llu,%llu,"
                     "%.7f,%.4f,%.7f,%.3f,%.3f,%.4f,%.3f,%.3f,%u\n",
                (unsigned long long)r->n, r->p, variant_names[r->variant],
                r->writers < 0 ? "-" : writer_names[r->writers], (unsigned long long)r->bits, r->k,
                (unsigned long long)r->bytes, (double)r->bits / (double)r->n, r->ins_single,
                r->ins_batch, r->present_single, r->present_batch, r->absent_single,
                r->absent_batch, (unsigned long long)r->present_queried,
                (unsigned long long)r->absent_queried, (unsigned long long)r->fp_count,
                fp_rate(r), fp_rate(r) / r->p, r->model_p, ps ? ps->small.dependent_ns : NAN,
                ps ? best_independent(ps) : NAN, (double)r->bytes / (double)r->n,
                r->remove_single, r->remove_batch, r->layers);
    }
    if (out != stdout)
        fclose(out);
}

static void json_num(FILE *out, const char *key, double v, const char *sep)
{
    if (isnan(v))
        fprintf(out, "\"%s\": null%s", key, sep);
    else
        fprintf(out, "\"%s\": %.7g%s", key, v, sep);
}

static void json_probe(FILE *out, const char *key, const bench_probe *pr, const char *sep)
{
    fprintf(out, "\"%s\": {\"bytes\": %llu, \"huge_pages_asked\": %s, ", key,
            (unsigned long long)pr->bytes, pr->huge ? "true" : "false");
    json_num(out, "dependent_ns", pr->dependent_ns, ", ");
    json_num(out, "independent_ns", pr->independent_ns, ", ");
    json_num(out, "independent_plain_ns", pr->independent_plain_ns, ", ");
    json_num(out, "independent_prefetch_ns", pr->independent_prefetch_ns, ", ");
    json_num(out, "locked_or_ns", pr->locked_or_ns, ", ");
    json_num(out, "arith_ns", pr->arith_ns, ", ");
    json_num(out, "reads_with_arith_ns", pr->reads_with_arith_ns, ", ");
    json_num(out, "thp_mib", pr->huge_mib, "");
    fprintf(out, "}%s", sep);
}

static void write_json(const char *path)
{
    FILE *out = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (out == NULL) {
        fprintf(stderr, "bloomgate-bench: %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(out, "{\n  \"bloomgate\": \"%s\",\n  \"libbloom\": \"%s\",\n  \"rows\": [\n",
            bg_version_string(), bloom_version());
    for (size_t i = 0; i < row_count; i++) {
        const row *r = &rows[i];
        fprintf(out, "    {\"n\": %llu, \"p\": %g, \"variant\": \"%s\", \"writers\": \"%s\", "
                     "\"bits\": %llu, \"k\": %u, \"bytes\": %llu, ",
                (unsigned long long)r->n, r->p, variant_names[r->variant],
                r->writers < 0 ? "-" : writer_names[r->writers], (unsigned long long)r->bits, r->k,
                (unsigned long long)r->bytes);
        json_num(out, "insert_single_ns", r->ins_single, ", ");
        json_num(out, "insert_batch_ns", r->ins_batch, ", ");
        json_num(out, "present_single_ns", r->present_single, ", ");
        json_num(out, "present_batch_ns", r->present_batch, ", ");
        json_num(out, "absent_single_ns", r->absent_single, ", ");
        json_num(out, "absent_batch_ns", r->absent_batch, ", ");
        json_num(out, "remove_single_ns", r->remove_single, ", ");
        json_num(out, "remove_batch_ns", r->remove_batch, ", ");
        fprintf(out, "\"layers\": %u, ", r->layers);
        fprintf(out, "\"absent_queried\": %llu, \"fp_count\": %llu, ",
                (unsigned long long)r->absent_queried, (unsigned long long)r->fp_count);
        json_num(out, "fp_rate", fp_rate(r), ", ");
        json_num(out, "model_p", r->model_p, ", ");
        json_num(out, "capacity_p", r->capacity_p, ", ");
        json_num(out, "thp_mib", r->huge_mib, ", ");
        json_num(out, "stats_ms", r->stats_s * 1e3, ", ");
        json_num(out, "union_ms", r->union_s * 1e3, ", ");
        json_num(out, "union_concurrent_ms", r->union_concurrent_s * 1e3, ", ");
        json_num(out, "plain_sum_ms", r->stream.read_s * 1e3, ", ");
        json_num(out, "plain_or_ms", r->stream.or_s * 1e3, "");
        fprintf(out, "}%s\n", i + 1 < row_count ? "," : "");
    }
    fprintf(out, "  ],\n  \"probes\": [\n");
    for (size_t i = 0; i < probe_count; i++) {
        fprintf(out, "    {\"n\": %llu, \"p\": %g, ", (unsigned long long)probes[i].n, probes[i].p);
        json_probe(out, "filter_sized", &probes[i].small, ", ");
        json_probe(out, "filter_sized_thp", &probes[i].small_huge, "");
        fprintf(out, "}%s\n", i + 1 < probe_count ? "," : "");
    }
    fprintf(out, "  ],\n  \"key_lengths\": [\n");
    for (size_t i = 0; i < key_len_row_count; i++) {
        const key_len_row *r = &key_len_rows[i];
        fprintf(out, "    {\"bytes\": %zu, \"p\": %g, ", r->len, r->p);
        json_num(out, "hash_ns", r->hash, ", ");
        json_num(out, "insert_single_ns", r->ins_single, ", ");
        json_num(out, "insert_batch_ns", r->ins_batch, ", ");
        json_num(out, "absent_single_ns", r->absent_single, ", ");
        json_num(out, "absent_batch_ns", r->absent_batch, "");
        fprintf(out, "}%s\n", i + 1 < key_len_row_count ? "," : "");
    }
    fprintf(out, "  ],\n  \"side_by_side\": {\"n\": %llu, \"p\": %g, \"blocked_keys\": %zu, "
                 "\"libbloom_keys\": %zu, \"rounds\": [",
            (unsigned long long)SIDE_N, SIDE_P, side_blocked_keys, side_libbloom_keys);
    for (size_t i = 0; i < side_round_count; i++) {
        const side_round *r = &side_rounds[i];
        fprintf(out, "%s{", i ? ", " : "");
        json_num(out, "probe_ns", r->probe, ", ");
        json_num(out, "blocked_ns", r->blocked, ", ");
        json_num(out, "libbloom_ns", r->libbloom, "}");
    }
    fprintf(out, "]}");
    if (have_probe_gib) {
        fprintf(out, ",\n  ");
        json_probe(out, "probe_1gib", &probe_gib, ",\n  ");
        json_probe(out, "probe_1gib_thp", &probe_gib_huge, "");
    }
    fprintf(out, "\n}\n");
    if (out != stdout)
        fclose(out);
}

/* ------------------------------------------------------------ arguments */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: bloomgate-bench [options]\n"
            "  --n LIST          key counts, e.g. 1e6,1e7 (default 1e6,1e7,1e8)\n"
            "  --p LIST          false-positive rates (default 0.01,0.001)\n"
            "  --variant LIST    standard,blocked,libbloom,counting,scalable (default all;\n"
            "                    without --variant, counting and scalable only at n <= 1e7)\n"
            "  --layer-variant V the scalable filter's layers: standard (default) or blocked\n"
            "  --writers LIST    concurrent,single: bloomgate's insert modes (default both)\n"
            "  --batch N         keys per *_many call and per key window (default and max 1024)\n"
            "  --min-time S      seconds of passes per figure, at least (default 0.25)\n"
            "  --present N       present keys queried, at most (default 4e6)\n"
            "  --absent N        absent keys queried (default 4e6)\n"
            "  --no-probe        skip the memory probe (and T1's side-by-side rounds, run at\n"
            "                    n = 1e8, p = 0.01 when blocked, libbloom and the probe are)\n"
            "  --key-lengths L   fixed key lengths (8..128 bytes) also measured at n = 1e6,\n"
            "                    blocked, single writer (default 8,16,36,64; none: skip)\n"
            "  --csv FILE        also write the rows as CSV ('-': stdout)\n"
            "  --json FILE       also write everything as JSON ('-': stdout)\n");
}

static int parse_count(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (errno || end == s || *end || !(d >= 1) || d > 1e15 || d != floor(d))
        return -1;
    *out = (uint64_t)d;
    return 0;
}

static int parse_list(const char *arg, const char *opt, options *o)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", arg);
    if (strcmp(opt, "n") == 0)
        o->n_count = 0;
    if (strcmp(opt, "p") == 0)
        o->p_count = 0;
    if (strcmp(opt, "variant") == 0) {
        memset(o->variant, 0, sizeof o->variant);
        o->variant_given = true;
    }
    if (strcmp(opt, "writers") == 0)
        memset(o->writers, 0, sizeof o->writers);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(opt, "n") == 0) {
            if (o->n_count == MAX_LIST || parse_count(tok, &o->n[o->n_count]) != 0)
                return -1;
            o->n_count++;
        } else if (strcmp(opt, "p") == 0) {
            char *end;
            double p = strtod(tok, &end);
            if (o->p_count == MAX_LIST || *end || !(p > 0 && p < 1))
                return -1;
            o->p[o->p_count++] = p;
        } else if (strcmp(opt, "variant") == 0) {
            int v = 0;
            while (v < V_COUNT && strcmp(tok, variant_names[v]) != 0)
                v++;
            if (v == V_COUNT)
                return -1;
            o->variant[v] = true;
        } else {
            int w = 0;
            while (w < W_COUNT && strcmp(tok, writer_names[w]) != 0)
                w++;
            if (w == W_COUNT)
                return -1;
            o->writers[w] = true;
        }
    }
    return 0;
}

static int parse_key_lengths(const char *arg, options *o)
{
    o->key_len_count = 0;
    if (strcmp(arg, "none") == 0)
        return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        uint64_t u;
        if (o->key_len_count == MAX_LIST || parse_count(tok, &u) != 0 ||
            u < BENCH_MIN_KEY_LEN || u > BENCH_MAX_KEY_LEN)
            return -1;
        o->key_lens[o->key_len_count++] = (size_t)u;
    }
    return o->key_len_count ? 0 : -1;
}

static int parse_args(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(a, "--no-probe") == 0) {
            o->probe = false;
            continue;
        }
        if (strncmp(a, "--", 2) != 0)
            return -1;
        char name[32];
        const char *val;
        const char *eq = strchr(a, '=');
        if (eq) {
            snprintf(name, sizeof name, "%.*s", (int)(eq - a - 2), a + 2);
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a + 2);
            if (i + 1 >= argc)
                return -1;
            val = argv[++i];
        }
        uint64_t u;
        if (strcmp(name, "n") == 0 || strcmp(name, "p") == 0 || strcmp(name, "variant") == 0 ||
            strcmp(name, "writers") == 0) {
            if (parse_list(val, name, o) != 0)
                return -1;
        } else if (strcmp(name, "layer-variant") == 0) {
            if (strcmp(val, "standard") == 0)
                o->layer_variant = BG_VARIANT_STANDARD;
            else if (strcmp(val, "blocked") == 0)
                o->layer_variant = BG_VARIANT_BLOCKED;
            else
                return -1;
        } else if (strcmp(name, "batch") == 0) {
            if (parse_count(val, &u) != 0 || u > BENCH_WINDOW)
                return -1;
            o->batch = (size_t)u;
        } else if (strcmp(name, "present") == 0) {
            if (parse_count(val, &u) != 0)
                return -1;
            o->present_queries = (size_t)u;
        } else if (strcmp(name, "absent") == 0) {
            if (parse_count(val, &u) != 0)
                return -1;
            o->absent_queries = (size_t)u;
        } else if (strcmp(name, "min-time") == 0) {
            char *end;
            o->min_time = strtod(val, &end);
            if (*end || !(o->min_time >= 0))
                return -1;
        } else if (strcmp(name, "key-lengths") == 0) {
            if (parse_key_lengths(val, o) != 0)
                return -1;
        } else if (strcmp(name, "csv") == 0) {
            o->csv = val;
        } else if (strcmp(name, "json") == 0) {
            o->json = val;
        } else {
            return -1;
        }
    }
    if (o->n_count == 0 || o->p_count == 0)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    options o = {
        .n = {1000000, 10000000, 100000000},
        .n_count = 3,
        .p = {0.01, 0.001},
        .p_count = 2,
        .variant = {true, true, true, true, true},
        .layer_variant = BG_VARIANT_STANDARD,
        .writers = {true, true},
        .batch = 1024,
        .min_time = 0.25,
        .present_queries = 4000000,
        .absent_queries = 4000000,
        .probe = true,
        .key_lens = {8, 16, 36, 64},
        .key_len_count = 4,
    };
    if (parse_args(argc, argv, &o) != 0) {
        usage(stderr);
        return 2;
    }
    if (bg_version() != BG_VERSION_HEX) {
        fprintf(stderr, "bloomgate-bench: header/library version mismatch\n");
        return 1;
    }
    double t_start = bench_now();
    print_machine(stdout);
    fflush(stdout);

    uint64_t max_n = 0;
    for (size_t i = 0; i < o.n_count; i++)
        max_n = o.n[i] > max_n ? o.n[i] : max_n;
    static bench_keys present, absent;
    if (max_n >= BENCH_ABSENT_BASE) {
        fprintf(stderr, "bloomgate-bench: n must be below 2^33\n");
        return 1;
    }
    bench_keys_make(&present, 0, (size_t)max_n);
    bench_keys_make(&absent, BENCH_ABSENT_BASE, o.absent_queries);
    uint8_t *results = malloc(o.batch);
    if (results == NULL)
        return 1;

    {
        /* The hash's share of every figure: bg_hash_key over the absent
         * keys (XXH3-128, the hash every bloomgate call computes). */
        pass_ctx hc = {.keys = &absent, .count = absent.count, .batch = BENCH_WINDOW};
        double h = measure(hash_only, NULL, &hc, o.min_time);
        hash_alone_ns = h;
        printf("  hashing alone: bg_hash_key (XXH3-128) %.2f ns/key over the absent keys "
               "(mean length %.1f bytes)\n",
               h, mean_len(&absent));
    }
    if (o.probe) {
        fprintf(stderr, "memory probe over 1 GiB...\n");
        if (bench_probe_run(&probe_gib, GIB, 0, o.min_time) == 0 &&
            bench_probe_run(&probe_gib_huge, GIB, 1, o.min_time) == 0) {
            have_probe_gib = true;
            print_probe_line(stdout, "1 GiB, 4 KiB", &probe_gib);
            print_probe_line(stdout, "1 GiB, THP asked", &probe_gib_huge);
        }
    }

    for (size_t ni = 0; ni < o.n_count; ni++) {
        for (size_t pi = 0; pi < o.p_count; pi++) {
            uint64_t n = o.n[ni];
            double p = o.p[pi];
            fprintf(stderr, "n=%llu p=%g (%.0f s so far)\n", (unsigned long long)n, p,
                    bench_now() - t_start);
            if (o.probe) {
                probe_set *ps = &probes[probe_count];
                ps->n = n;
                ps->p = p;
                uint64_t bytes = filter_bytes(n, p, &o);
                progress("memory probe over %.1f MiB", (double)bytes / 1048576.0);
                if (bench_probe_run(&ps->small, bytes, 0, o.min_time) == 0 &&
                    bench_probe_run(&ps->small_huge, bytes, 1, o.min_time) == 0)
                    probe_count++;
            }
            if (o.variant[V_STANDARD])
                run_bloomgate(n, p, V_STANDARD, &present, &absent, &o, results);
            if (o.variant[V_BLOCKED])
                run_bloomgate(n, p, V_BLOCKED, &present, &absent, &o, results);
            if (o.variant[V_LIBBLOOM])
                run_libbloom(n, p, &present, &absent, &o, results);
            bool new_ok = o.variant_given || n <= NEW_VARIANTS_DEFAULT_MAX_N;
            if (o.variant[V_COUNTING] && new_ok)
                run_bloomgate(n, p, V_COUNTING, &present, &absent, &o, results);
            if (o.variant[V_SCALABLE] && new_ok)
                run_bloomgate(n, p, V_SCALABLE, &present, &absent, &o, results);
            if (!new_ok && (o.variant[V_COUNTING] || o.variant[V_SCALABLE]))
                progress("counting, scalable: skipped at n > 1e7 by default (name them in "
                         "--variant to run them)");
            print_block(stdout, n, p, &o);
            fflush(stdout);
        }
    }
    if (o.key_len_count) {
        fprintf(stderr, "key lengths (%.0f s so far)\n", bench_now() - t_start);
        run_key_lengths(&o, results);
        print_key_lengths(stdout);
    }
    print_targets(stdout, &o);
    printf("total time %.0f s\n", bench_now() - t_start);
    if (o.csv)
        write_csv(o.csv);
    if (o.json)
        write_json(o.json);
    free(results);
    return 0;
}
