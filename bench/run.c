/* SPDX-License-Identifier: BSD-3-Clause */
/* Running: what is measured, cell by cell (bloomgate_bench.h), and the
 * results it fills. Each cell's bloomgate variants get inserts, present and
 * absent queries, single and batched, the counting variant removes too, and
 * the filled filter's scans; libbloom gets its inserts and queries. Every
 * run checks what it measured: no false negatives, batched and single
 * queries agreeing, a counting filter emptied by its removes. */
#define _POSIX_C_SOURCE 200809L

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bloomgate_bench.h"

const char *const variant_names[V_COUNT] = {"standard", "blocked", "libbloom", "counting",
                                            "scalable"};
const char *const writer_names[W_COUNT] = {"concurrent", "single"};

row rows[MAX_ROWS];
size_t row_count;
probe_set probes[MAX_LIST * MAX_LIST];
size_t probe_count;
bench_probe probe_gib, probe_gib_huge;
bool have_probe_gib;
double hash_alone_ns = NAN;
key_len_row key_len_rows[MAX_LIST * MAX_LIST];
size_t key_len_row_count;
side_round side_rounds[SIDE_ROUNDS];
size_t side_round_count;
size_t side_blocked_keys, side_libbloom_keys;
static bg_filter *side_blocked; /* SIDE BY SIDE's blocked filter, from its cell to libbloom's */

const row *find_row(uint64_t n, double p, int variant, int writers)
{
    for (size_t i = 0; i < row_count; i++)
        if (rows[i].n == n && rows[i].p == p && rows[i].variant == variant &&
            (writers < 0 || rows[i].writers == writers))
            return &rows[i];
    return NULL;
}

const row *query_row(uint64_t n, double p, int variant)
{
    for (size_t i = 0; i < row_count; i++)
        if (rows[i].n == n && rows[i].p == p && rows[i].variant == variant &&
            rows[i].absent_queried > 0)
            return &rows[i];
    return NULL;
}

const probe_set *find_probe(uint64_t n, double p)
{
    for (size_t i = 0; i < probe_count; i++)
        if (probes[i].n == n && probes[i].p == p)
            return &probes[i];
    return NULL;
}

void progress(const char *fmt, ...)
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
    r->remove_single = measure(pass_remove_single, reset_filled, c, o->min_time);
    check_no_false_negatives(r, c->hits, c->count, "remove single");
    progress("%s %s: removes, batched", v, w);
    r->remove_batch = measure(pass_remove_batch, reset_filled, c, o->min_time);
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
        r->ins_single = measure(pass_insert_single, reset_filter, &c, o->min_time);
        progress("%s %s: inserts, batched", variant_names[variant], writer_names[w]);
        r->ins_batch = measure(pass_insert_batch, reset_filter, &c, o->min_time);
        /* The filter now holds the n keys (a scalable one has grown to hold
         * them). Queries do not depend on the writers mode (same bits, same
         * read path): measured once. */
        record_shape(r, f);
        if (!queried) {
            run_queries(r, &c, pass_query_single, pass_query_batch, present, absent, o);
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

void run_key_lengths(const options *o, uint8_t *results)
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
            r->hash = measure(pass_hash_only, NULL, &c, o->min_time);
            c.keys = &present;
            r->ins_single = measure(pass_insert_single, reset_filter, &c, o->min_time);
            r->ins_batch = measure(pass_insert_batch, reset_filter, &c, o->min_time);
            /* the filter holds the present keys: every one must be found */
            (void)pass_query_batch(&c);
            if (c.hits != KEY_LEN_N) {
                fprintf(stderr, "bloomgate-bench: FALSE NEGATIVES: %zu-byte keys: %llu of %d "
                                "found\n", len, (unsigned long long)c.hits, KEY_LEN_N);
                exit(1);
            }
            c.keys = &absent;
            r->absent_single = measure(pass_query_single, NULL, &c, o->min_time);
            r->absent_batch = measure(pass_query_batch, NULL, &c, o->min_time);
            bg_filter_free(f);
        }
    }
}

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
                sr->blocked = pass_query_batch(&bc) * 1e9 / (double)bc.count;
                if (bc.hits != bl_row->fp_count) {
                    fprintf(stderr, "bloomgate-bench: side by side: blocked found %llu of the "
                                    "absent keys, its cell %llu\n",
                            (unsigned long long)bc.hits, (unsigned long long)bl_row->fp_count);
                    exit(1);
                }
                break;
            default:
                sr->libbloom = pass_lb_query(&lc) * 1e9 / (double)lc.count;
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
    r->ins_single = measure(pass_lb_insert, reset_lb, &c, o->min_time);
    run_queries(r, &c, pass_lb_query, NULL, present, absent, o);
    if (side_blocked && side_by_side_cell(n, p, o))
        run_side_by_side(&b, absent, o, results);
    bg_filter_free(side_blocked);
    side_blocked = NULL;
    bloom_free(&b);
}

uint64_t filter_bytes(uint64_t n, double p, const options *o)
{
    bg_variant v = o->variant[V_BLOCKED] || !o->variant[V_STANDARD] ? BG_VARIANT_BLOCKED
                                                                     : BG_VARIANT_STANDARD;
    bg_sizing s = {.n = n, .p = p};
    if (bg_sizing_solve(v, &s, 0) != BG_OK)
        return 0;
    return (s.m + 511) / 512 * 64;
}

void run_cell(uint64_t n, double p, bench_keys *present, bench_keys *absent, const options *o,
              uint8_t *results)
{
    if (o->probe) {
        probe_set *ps = &probes[probe_count];
        ps->n = n;
        ps->p = p;
        uint64_t bytes = filter_bytes(n, p, o);
        progress("memory probe over %.1f MiB", (double)bytes / 1048576.0);
        if (bench_probe_run(&ps->small, bytes, 0, o->min_time) == 0 &&
            bench_probe_run(&ps->small_huge, bytes, 1, o->min_time) == 0)
            probe_count++;
    }
    if (o->variant[V_STANDARD])
        run_bloomgate(n, p, V_STANDARD, present, absent, o, results);
    if (o->variant[V_BLOCKED])
        run_bloomgate(n, p, V_BLOCKED, present, absent, o, results);
    if (o->variant[V_LIBBLOOM])
        run_libbloom(n, p, present, absent, o, results);
    bool new_ok = o->variant_given || n <= NEW_VARIANTS_DEFAULT_MAX_N;
    if (o->variant[V_COUNTING] && new_ok)
        run_bloomgate(n, p, V_COUNTING, present, absent, o, results);
    if (o->variant[V_SCALABLE] && new_ok)
        run_bloomgate(n, p, V_SCALABLE, present, absent, o, results);
    if (!new_ok && (o->variant[V_COUNTING] || o->variant[V_SCALABLE]))
        progress("counting, scalable: skipped at n > 1e7 by default (name them in "
                 "--variant to run them)");
}
