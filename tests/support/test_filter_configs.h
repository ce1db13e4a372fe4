/* SPDX-License-Identifier: BSD-3-Clause */
/* The filter conformance suites' configurations and key helpers
 * (test_filter_configs.c, in the bg_test_unit library), shared by
 * test_filter.c, test_filter_ops.c and test_filter_layout.c.
 *
 * Every conformance test runs over every entry of tu_configs: each variant
 * in each concurrency mode, and the blocked variant's portable and AVX2
 * implementations as well as the fastest the CPU has (in the spirit of
 * GEN_THUNKS in xor_singleheader's tests): a new variant or mode is one
 * more line there. The helpers work through tu_batch of TU_BATCH keys and
 * fail the running test, as the TU_ assertions do. */
#ifndef BG_TEST_FILTER_CONFIGS_H
#define BG_TEST_FILTER_CONFIGS_H

#include "test_util.h"

/* Internal (src/core/filter_internal.h): bg__blocked_simd, lowered before
 * bg_filter_new, picks a slower blocked implementation even where a faster
 * one is available, so that each is held to the suites. Where the CPU
 * lacks AVX2 (or AVX-512) those rows run the next one down. */
#include "../src/core/filter_internal.h"

/* Keys per call of the helpers below: the tu_batch they are given must hold
 * that many. */
#define TU_BATCH 1024

/* The key set tu_take_snapshot probes with (the suites' SET_PROBE). */
#define TU_SNAPSHOT_SET 11

typedef struct tu_config {
    bg_variant variant;
    bg_concurrency mode;
    bg__simd simd; /* blocked: the fastest implementation allowed */
    const char *name;
} tu_config;

#define TU_NCONFIGS 10
extern const tu_config tu_configs[TU_NCONFIGS];

/* A counting filter's item count counts every add, a repeated key too; the
 * others', the adds that found their key new (filter.h): 1 or 0. */
uint64_t tu_counts_every_add(const tu_config *c);

/* A filter of configuration c from o (its variant and concurrency are c's);
 * the test fails if it cannot be made. */
bg_filter *tu_filter_make(const tu_config *c, bg_filter_options o);

typedef enum tu_add_how {
    TU_ADD_SINGLE,       /* bg_filter_add */
    TU_ADD_TEST_AND_ADD, /* bg_filter_test_and_add */
    TU_ADD_MANY,         /* bg_filter_add_many */
    TU_ADD_HASH,         /* bg_filter_hash + bg_filter_add_hash / test_and_add_hash */
    TU_ADD_HASHES,       /* bg_filter_hash + bg_filter_add_hashes */
} tu_add_how;

/* Adds keys [0, count) of a set; returns how many were reported new (0 for
 * the calls that do not report it). `random` picks tu_key_random over
 * tu_key_distinct. */
uint64_t tu_add_keys(bg_filter *f, tu_batch *b, int random, uint64_t set, uint64_t count,
                     tu_add_how how);

/* Asserts that every key [0, count) of a set is reported present: by
 * bg_filter_contains always, and with `all_paths` also by contains_many,
 * contains_hash and contains_hashes. Misses are counted, so that a failure
 * says how many and which one first. */
void tu_expect_all_found(const bg_filter *f, tu_batch *b, int random, uint64_t set,
                         uint64_t count, int all_paths);

/* How many keys [0, count) of a set are reported present (contains_many). */
uint64_t tu_count_present(const bg_filter *f, tu_batch *b, int random, uint64_t set,
                          uint64_t count);

/* A fingerprint of a filter's answers: a hash over contains() of 20000
 * probe keys (set TU_SNAPSHOT_SET), plus its stats. Equal before and after
 * means unchanged, to the resolution these tests need. */
typedef struct tu_snapshot {
    bg_filter_stats st;
    uint64_t answers;
    uint64_t present;
} tu_snapshot;

tu_snapshot tu_take_snapshot(const bg_filter *f, tu_batch *b);
void tu_expect_same_snapshot(const tu_snapshot *a, const tu_snapshot *b);

#endif
