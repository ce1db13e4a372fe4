/* SPDX-License-Identifier: BSD-3-Clause */
/* The pieces of bloomgate-bench, the program of main.c:
 *   measure.c  HOW A FIGURE IS MADE: one pass of library calls over a key
 *              set, timed window by window, repeated into a median.
 *   run.c      what is measured, cell by cell: each variant's inserts,
 *              queries, removes and scans, libbloom, the key lengths and
 *              SIDE BY SIDE's rounds; the results they fill.
 *   report.c   the table, the CSV and the JSON, from the results.
 *   targets.c  the performance targets, one table, judged on the results.
 * Not part of the library. */
#ifndef BG_BLOOMGATE_BENCH_H
#define BG_BLOOMGATE_BENCH_H

#include <bloom.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

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
extern const char *const variant_names[V_COUNT];
enum { W_CONCURRENT, W_SINGLE, W_COUNT };
extern const char *const writer_names[W_COUNT];

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

/* ---- measuring (measure.c) ---------------------------------------------- */

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

/* Passes of bloomgate calls on c->f: adds, queries (c->hits: the keys
 * found), removes (c->hits: the keys removed); single calls or batches. */
double pass_insert_single(pass_ctx *c);
double pass_insert_batch(pass_ctx *c);
double pass_query_single(pass_ctx *c);
double pass_query_batch(pass_ctx *c);
double pass_remove_single(pass_ctx *c);
double pass_remove_batch(pass_ctx *c);
/* libbloom's, on c->lb. */
double pass_lb_insert(pass_ctx *c);
double pass_lb_query(pass_ctx *c);
/* bg_hash_key alone. */
double pass_hash_only(pass_ctx *c);

/* Before each pass: clear c->f; clear it and add the pass's keys (for
 * removes); clear c->lb. Untimed. */
void reset_filter(pass_ctx *c);
void reset_filled(pass_ctx *c);
void reset_lb(pass_ctx *c);

/* The median ns per call over repeated passes (see HOW A FIGURE IS MADE). */
double measure(pass_fn pass, reset_fn reset, pass_ctx *c, double min_time);

/* The mean length of the set's keys. */
double mean_len(bench_keys *ks);

/* ---- the results (run.c fills them) ------------------------------------- */

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

extern row rows[MAX_ROWS];
extern size_t row_count;
extern probe_set probes[MAX_LIST * MAX_LIST];
extern size_t probe_count;
extern bench_probe probe_gib, probe_gib_huge;
extern bool have_probe_gib;
extern double hash_alone_ns; /* bg_hash_key over the absent keys */

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
extern key_len_row key_len_rows[MAX_LIST * MAX_LIST];
extern size_t key_len_row_count;
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
extern side_round side_rounds[SIDE_ROUNDS];
extern size_t side_round_count;
extern size_t side_blocked_keys, side_libbloom_keys;

/* The row of (n, p, variant) and writers (-1: any), or NULL. */
const row *find_row(uint64_t n, double p, int variant, int writers);

/* The row that holds the variant's query figures. */
const row *query_row(uint64_t n, double p, int variant);

/* The probes of (n, p), or NULL. */
const probe_set *find_probe(uint64_t n, double p);

/* ---- running (run.c) ----------------------------------------------------- */

/* "  .. what", a line of progress on stderr. */
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The blocked filter's size for (n, p), or the standard one's when only
 * that is measured: the buffer the probe reads. */
uint64_t filter_bytes(uint64_t n, double p, const options *o);

/* One cell of the table: the probes over the filter's size (with
 * o->probe), then every variant asked for, into the results. `results`
 * holds o->batch bytes. */
void run_cell(uint64_t n, double p, bench_keys *present, bench_keys *absent, const options *o,
              uint8_t *results);

/* KEY LENGTHS, into key_len_rows. */
void run_key_lengths(const options *o, uint8_t *results);

/* ---- reporting (report.c, targets.c) ------------------------------------ */

/* The better of the 4 KiB-page and the huge-page buffer's independent read. */
double best_independent(const probe_set *ps);

/* The measured false-positive rate of a row; NAN if not measured. */
double fp_rate(const row *r);

/* The median over SIDE BY SIDE's rounds of each round's libbloom / blocked
 * (which = 0) or blocked / probe (which = 1) ratio, with the smallest and
 * largest; NAN without rounds. */
typedef struct side_ratio {
    double median, lo, hi;
} side_ratio;
side_ratio side_ratio_of(int which);

void print_machine(FILE *out);
void print_probe_line(FILE *out, const char *label, const bench_probe *pr);
/* The table of (n, p), and the lines under it. */
void print_block(FILE *out, uint64_t n, double p, const options *o);
void print_key_lengths(FILE *out);
/* TARGETS: each target's verdict (targets.c). */
void print_targets(FILE *out, const options *o);
/* --csv, --json ('-': stdout). */
void write_csv(const char *path);
void write_json(const char *path);

#endif
