/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory probe (see bench.h): what this machine's random 64-byte reads
 * cost over a buffer of a given size, dependent (one at a time) and
 * independent (as many in flight as the core allows), and what an atomic
 * fetch-or of one word costs there; and the streaming loops that scans of a
 * whole filter are set beside. */
#define _GNU_SOURCE

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench.h"

#define LINE_WORDS 8 /* uint64_t per 64-byte line */
#define CHASE_STEPS (UINT64_C(1) << 21)
#define INDEP_READS ((size_t)1 << 22)
#define PREFETCH_AHEAD 32
#define MAX_REPS 15

typedef struct buffer {
    uint64_t *words; /* 64-byte aligned */
    void *raw;
    size_t raw_bytes;
} buffer;

/* An anonymous mapping, 2 MiB-aligned, with transparent huge pages asked
 * for (`huge`) or refused (MADV_NOHUGEPAGE), so that the probe controls its
 * page size whatever the system's THP mode. (Not malloc: freeing a large
 * malloc'd block moves glibc's mmap threshold, which would change where the
 * filters allocated after the probe come from.) Every page is written, so
 * no page fault is timed. */
static int buffer_alloc(buffer *b, size_t bytes, int huge)
{
    memset(b, 0, sizeof *b);
    size_t two_mb = (size_t)1 << 21;
    b->raw_bytes = (bytes + two_mb - 1) / two_mb * two_mb + two_mb;
    void *p = mmap(NULL, b->raw_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    madvise(p, b->raw_bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    b->raw = p;
    uintptr_t a = ((uintptr_t)p + two_mb - 1) & ~(uintptr_t)(two_mb - 1);
    b->words = (uint64_t *)a;
    memset(b->words, 1, bytes);
    return 0;
}

static void buffer_free(buffer *b)
{
    munmap(b->raw, b->raw_bytes);
}

static uint64_t below(uint64_t *rng, uint64_t range)
{
    return (uint64_t)(((unsigned __int128)bench_splitmix(rng) * range) >> 64);
}

static volatile uint64_t probe_sink;

/* Timed repetitions of one measurement: at least 3, then until min_time
 * seconds have gone by, at most MAX_REPS; the median is the figure. */
typedef struct reps {
    double t[MAX_REPS], total, t0;
    size_t n;
} reps;

static int reps_more(const reps *r, double min_time)
{
    return r->n < MAX_REPS && (r->n < 3 || r->total < min_time);
}

static void reps_start(reps *r)
{
    r->t0 = bench_now();
}

static void reps_add(reps *r, double seconds)
{
    r->t[r->n] = seconds;
    r->total += r->t[r->n++];
}

static void reps_stop(reps *r)
{
    reps_add(r, bench_now() - r->t0);
}

/* The median repetition's ns per operation, `ops` operations each. */
static double reps_median_ns(reps *r, double ops)
{
    return bench_median(r->t, r->n) * 1e9 / ops;
}

/* Pointer chasing: word 0 of each line holds the next line's index, along
 * one random cycle through every line (a shuffled order, closed). */
static double dependent_ns(uint64_t *words, size_t lines, double min_time)
{
    uint32_t *order = malloc(lines * sizeof *order);
    if (order == NULL)
        return -1;
    uint64_t rng = 0x70726f6265;
    for (size_t i = 0; i < lines; i++)
        order[i] = (uint32_t)i;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = (size_t)below(&rng, i + 1);
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < lines; i++)
        words[(size_t)order[i] * LINE_WORDS] = order[(i + 1) % lines];
    free(order);

    reps rp = {0};
    uint64_t at = 0;
    while (reps_more(&rp, min_time)) {
        reps_start(&rp);
        for (uint64_t s = 0; s < CHASE_STEPS; s++)
            at = words[at * LINE_WORDS];
        reps_stop(&rp);
    }
    probe_sink = at;
    return reps_median_ns(&rp, (double)CHASE_STEPS);
}

/* INDEP_READS random line numbers below `lines`, then PREFETCH_AHEAD zeros
 * for the prefetching loop to run past the end on. */
static uint32_t *random_lines(size_t lines)
{
    uint32_t *idx = malloc((INDEP_READS + PREFETCH_AHEAD) * sizeof *idx);
    if (idx == NULL)
        return NULL;
    uint64_t rng = 0x696e646570;
    for (size_t i = 0; i < INDEP_READS; i++)
        idx[i] = (uint32_t)below(&rng, lines);
    for (size_t i = INDEP_READS; i < INDEP_READS + PREFETCH_AHEAD; i++)
        idx[i] = 0;
    return idx;
}

/* One pass of independent reads of the lines `idx` names, summed; with
 * `ahead`, the line read PREFETCH_AHEAD iterations later is prefetched
 * first. Returns the seconds it took. */
static double read_pass(const uint64_t *words, const uint32_t *idx, uint32_t ahead)
{
    uint64_t sum = 0;
    double t0 = bench_now();
    if (ahead) {
        for (size_t i = 0; i < INDEP_READS; i++) {
            __builtin_prefetch(&words[(size_t)idx[i + PREFETCH_AHEAD] * LINE_WORDS], 0, 3);
            sum += words[(size_t)idx[i] * LINE_WORDS];
        }
    } else {
        for (size_t i = 0; i < INDEP_READS; i++)
            sum += words[(size_t)idx[i] * LINE_WORDS];
    }
    double t = bench_now() - t0;
    probe_sink = sum;
    return t;
}

/* One pass of the prefetched independent reads with BENCH_ARITH_ROUNDS
 * rounds of arithmetic before each (bench.h, arith_ns), over the lines
 * `idx` names masked by `line_mask` (all ones: the buffer; 63: its first
 * 64 lines, the arithmetic alone). Each read's chain starts from its own
 * index, so no read waits for another's arithmetic, and its result is
 * summed with the read so that neither can be left out. Returns the
 * seconds it took. */
static double arith_pass(const uint64_t *words, const uint32_t *idx, uint32_t line_mask)
{
    uint64_t sum = 0;
    double t0 = bench_now();
    for (size_t i = 0; i < INDEP_READS; i++) {
        size_t ahead = idx[i + PREFETCH_AHEAD] & line_mask;
        __builtin_prefetch(&words[ahead * LINE_WORDS], 0, 3);
        uint64_t y = idx[i];
        for (int r = 0; r < BENCH_ARITH_ROUNDS; r++)
            y = (y * UINT64_C(0x9e3779b97f4a7c15)) ^ (y >> 29);
        sum += words[(size_t)(idx[i] & line_mask) * LINE_WORDS] ^ y;
    }
    double t = bench_now() - t0;
    probe_sink = sum;
    return t;
}

/* The median ns per read of passes of `pass` (read_pass, arith_pass) over
 * one set of random lines, `arg` its last argument; -1 if out of memory. */
typedef double (*read_pass_fn)(const uint64_t *words, const uint32_t *idx, uint32_t arg);

static double passes_ns(const uint64_t *words, size_t lines, read_pass_fn pass, uint32_t arg,
                        double min_time)
{
    uint32_t *idx = random_lines(lines);
    if (idx == NULL)
        return -1;
    reps rp = {0};
    while (reps_more(&rp, min_time))
        reps_add(&rp, pass(words, idx, arg));
    free(idx);
    return reps_median_ns(&rp, (double)INDEP_READS);
}

/* Atomic fetch-or of one random bit into a random word of a random line,
 * the result unused, so each is one `lock or` on x86-64. The addresses come
 * from a precomputed array and no operation waits for another's result, but
 * a locked instruction drains the store buffer and does not let later
 * memory operations pass it, so they hardly overlap: this is the cost a
 * concurrent writer's insert pays per word it must change. */
static double locked_or_ns(uint64_t *words, size_t lines, double min_time)
{
    uint32_t *idx = malloc(INDEP_READS * sizeof *idx);
    if (idx == NULL)
        return -1;
    uint64_t rng = 0x6c6f636b6f72;
    for (size_t i = 0; i < INDEP_READS; i++)
        idx[i] = (uint32_t)below(&rng, lines * LINE_WORDS);

    reps rp = {0};
    while (reps_more(&rp, min_time)) {
        reps_start(&rp);
        for (size_t i = 0; i < INDEP_READS; i++)
            __atomic_fetch_or(&words[idx[i]], UINT64_C(1) << (i & 63), __ATOMIC_RELAXED);
        reps_stop(&rp);
    }
    free(idx);
    return reps_median_ns(&rp, (double)INDEP_READS);
}

int bench_probe_run(bench_probe *out, uint64_t bytes, int huge, double min_time)
{
    memset(out, 0, sizeof *out);
    size_t lines = (size_t)(bytes / 64);
    if (lines < 2 || lines > UINT32_MAX)
        return -1;
    buffer b;
    double huge_before = bench_anon_huge_mib();
    if (buffer_alloc(&b, lines * 64, huge) != 0)
        return -1;
    double huge_after = bench_anon_huge_mib();
    out->huge_mib = huge_before >= 0 && huge_after >= 0 ? huge_after - huge_before : -1;
    out->bytes = (uint64_t)lines * 64;
    out->huge = huge;
    out->dependent_ns = dependent_ns(b.words, lines, min_time);
    out->independent_plain_ns = passes_ns(b.words, lines, read_pass, 0, min_time);
    out->independent_prefetch_ns = passes_ns(b.words, lines, read_pass, 1, min_time);
    out->locked_or_ns = locked_or_ns(b.words, lines, min_time);
    out->arith_ns = passes_ns(b.words, lines, arith_pass, lines >= 64 ? 63 : 0, min_time);
    out->reads_with_arith_ns = passes_ns(b.words, lines, arith_pass, UINT32_MAX, min_time);
    buffer_free(&b);
    if (out->dependent_ns < 0 || out->independent_plain_ns < 0 ||
        out->independent_prefetch_ns < 0 || out->locked_or_ns < 0 || out->arith_ns < 0 ||
        out->reads_with_arith_ns < 0)
        return -1;
    out->independent_ns = out->independent_plain_ns < out->independent_prefetch_ns
                              ? out->independent_plain_ns
                              : out->independent_prefetch_ns;
    return 0;
}

struct bench_reader {
    buffer b;
    uint32_t *idx;
};

bench_reader *bench_reader_new(uint64_t bytes, int huge)
{
    size_t lines = (size_t)(bytes / 64);
    if (lines < 2 || lines > UINT32_MAX)
        return NULL;
    bench_reader *r = malloc(sizeof *r);
    if (r == NULL)
        return NULL;
    if (buffer_alloc(&r->b, lines * 64, huge) != 0) {
        free(r);
        return NULL;
    }
    r->idx = random_lines(lines);
    if (r->idx == NULL) {
        bench_reader_free(r);
        return NULL;
    }
    return r;
}

double bench_reader_ns(bench_reader *r)
{
    double plain = read_pass(r->b.words, r->idx, 0);
    double prefetched = read_pass(r->b.words, r->idx, 1);
    return (plain < prefetched ? plain : prefetched) * 1e9 / (double)INDEP_READS;
}

void bench_reader_free(bench_reader *r)
{
    if (r == NULL)
        return;
    if (r->b.raw)
        buffer_free(&r->b);
    free(r->idx);
    free(r);
}

int bench_stream_run(bench_stream *out, uint64_t bytes, double min_time)
{
    memset(out, 0, sizeof *out);
    size_t words = (size_t)(bytes / 8);
    buffer dst, src;
    if (words == 0 || buffer_alloc(&dst, words * 8, 1) != 0)
        return -1;
    if (buffer_alloc(&src, words * 8, 1) != 0) {
        buffer_free(&dst);
        return -1;
    }
    out->bytes = (uint64_t)words * 8;
    reps rp = {0};
    uint64_t sum = 0;
    while (reps_more(&rp, min_time)) {
        reps_start(&rp);
        for (size_t i = 0; i < words; i++)
            sum += src.words[i];
        reps_stop(&rp);
    }
    probe_sink = sum;
    out->read_s = bench_median(rp.t, rp.n);
    reps ro = {0};
    while (reps_more(&ro, min_time)) {
        reps_start(&ro);
        for (size_t i = 0; i < words; i++)
            dst.words[i] |= src.words[i];
        reps_stop(&ro);
    }
    probe_sink = dst.words[words / 2];
    out->or_s = bench_median(ro.t, ro.n);
    buffer_free(&dst);
    buffer_free(&src);
    return 0;
}
