/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared pieces of the benchmark programs: the clock, the key sets and the
 * memory probe. Not part of the library. */
#ifndef BG_BENCH_H
#define BG_BENCH_H

#include <stddef.h>
#include <stdint.h>

/* Seconds on CLOCK_MONOTONIC. */
double bench_now(void);

/* Median of `count` values (sorts `v` in place). */
double bench_median(double *v, size_t count);

/* A SplitMix64 step: the benchmark's only random source, seeded, so that
 * every run of the same command sees the same keys and the same probes. */
uint64_t bench_splitmix(uint64_t *state);

/* KEYS
 * Key i of a set is "product:<id>", id = scramble(first + i), where scramble
 * is a bijection of [0, 2^34) (odd multiplies and xor-shifts, all mod
 * 2^34). Present keys use indices [0, n), absent keys [2^33, 2^33 + count):
 * the index ranges are disjoint and scramble is one-to-one, so no absent key
 * equals a present one. The ids are spread over [0, 1.7e10), so keys are
 * 9 to 19 bytes, almost all 17 to 19 (mean about 18.4).
 *
 * A set is not stored whole: keys are made a window at a time (at most
 * BENCH_WINDOW of them) into one small buffer that stays in cache, outside
 * the timed region, and only the filter calls on the window are timed. A
 * service hashes a key it has just parsed from a request, which is in cache;
 * reading keys from a multi-GB arena instead would add the cost of streaming
 * them from DRAM (more than doubling the cost of hashing alone) to every
 * figure. */
#define BENCH_WINDOW 1024

/* Fixed-length key sets (bench_keys_make_fixed): BENCH_MIN_KEY_LEN to
 * BENCH_MAX_KEY_LEN bytes. */
#define BENCH_MIN_KEY_LEN 8
#define BENCH_MAX_KEY_LEN 128

typedef struct bench_keys {
    uint64_t first;              /* index of key 0 of the set */
    size_t count;                /* keys in the set */
    size_t fixed_len;            /* 0: "product:<id>" keys */
    char arena[BENCH_WINDOW * BENCH_MAX_KEY_LEN];
    const void *ptr[BENCH_WINDOW]; /* the window: keys at .. at + n - 1 */
    size_t len[BENCH_WINDOW];
} bench_keys;

#define BENCH_ABSENT_BASE (UINT64_C(1) << 33)

/* A set of `count` keys from index `first`. Nothing is allocated. */
void bench_keys_make(bench_keys *ks, uint64_t first, size_t count);

/* The same, but key i is `len` bytes (BENCH_MIN_KEY_LEN..BENCH_MAX_KEY_LEN)
 * of binary: scramble(first + i) little-endian in the first 8 bytes, which
 * keeps the keys distinct and the absent ones absent, then bytes derived
 * from it. For the cost of hashing by key length: an 8-byte integer id, a
 * 16-byte binary UUID, a 36-byte UUID as text. */
void bench_keys_make_fixed(bench_keys *ks, uint64_t first, size_t count, size_t len);

/* Makes keys at .. at + n - 1 of the set (n <= BENCH_WINDOW) into ks->ptr
 * and ks->len [0, n). */
void bench_keys_window(bench_keys *ks, size_t at, size_t n);

/* MEMORY PROBE
 * What a random 64-byte read costs on this machine over a buffer of `bytes`
 * bytes: an anonymous mapping on 4 KiB pages or, with `huge`, on
 * transparent huge pages (madvise), every page touched before timing.
 *   dependent_ns:    pointer chasing over a random cycle through all lines:
 *                    each read's address comes from the previous read, so
 *                    this is the latency of one miss.
 *   independent_ns:  reads of random lines from a precomputed index array,
 *                    summed: no read waits for another, so the core keeps as
 *                    many in flight as it can; the better of a plain loop and
 *                    one with software prefetch 32 reads ahead. This is the
 *                    throughput limit a batched filter query can approach.
 *   locked_or_ns:    atomic fetch-or of one bit into a random word of a
 *                    random line, independent ones (see the field).
 *   arith_ns, reads_with_arith_ns: whether the core overlaps arithmetic
 *                    with these misses, as a batched query must (its hash
 *                    and probe mask between its prefetch and its read):
 *                    the prefetched independent reads again, each after a
 *                    chain of BENCH_ARITH_ROUNDS multiply and xor-shift
 *                    rounds on a value of its own, and that loop over the
 *                    buffer's first 64 lines (L1: the arithmetic alone). A
 *                    core that overlaps them takes about the larger of
 *                    arith_ns and independent_ns per read, one that does
 *                    not their sum. */
#define BENCH_ARITH_ROUNDS 8
typedef struct bench_probe {
    uint64_t bytes;
    int huge;
    double dependent_ns;
    double independent_ns;
    double independent_plain_ns;
    double independent_prefetch_ns;
    /* A `lock or` of one bit into a random word, independent ones: what a
     * concurrent writer pays per word whose bit it must set (an atomic
     * fetch-or; the floor under the concurrent-writers insert figures). */
    double locked_or_ns;
    double arith_ns, reads_with_arith_ns;
    double huge_mib; /* of the buffer on transparent huge pages; -1 unknown */
} bench_probe;

/* AnonHugePages of this process in MiB (Linux /proc/self/smaps_rollup), or
 * -1 where unknown. */
double bench_anon_huge_mib(void);

/* Returns 0, or -1 when the buffer cannot be allocated. */
int bench_probe_run(bench_probe *out, uint64_t bytes, int huge, double min_time);

/* The independent-read measurement alone, over a buffer that stays
 * allocated between calls, for figures taken in rounds interleaved with
 * other measurements (bloomgate-bench's SIDE BY SIDE). bench_reader_new
 * returns NULL when the buffer cannot be allocated. bench_reader_ns makes
 * one plain and one prefetched pass over the same random lines as
 * bench_probe_run's independent reads and returns the better, in ns per
 * read. */
typedef struct bench_reader bench_reader;
bench_reader *bench_reader_new(uint64_t bytes, int huge);
double bench_reader_ns(bench_reader *r);
void bench_reader_free(bench_reader *r);

/* STREAMING
 * The plain loops a scan of a filter's whole array is set beside: the sum
 * of `bytes` bytes of 64-bit words (what bg_filter_stats_get reads) and
 * dst |= src over two such arrays (what bg_filter_union reads and writes),
 * on buffers with transparent huge pages asked for, as the library's
 * arrays are, every page touched before timing. Median seconds per pass.
 * Returns 0, or -1 when the buffers cannot be allocated. */
typedef struct bench_stream {
    uint64_t bytes;
    double read_s; /* sum of the words */
    double or_s;   /* dst[i] |= src[i] */
} bench_stream;

int bench_stream_run(bench_stream *out, uint64_t bytes, double min_time);

#endif
