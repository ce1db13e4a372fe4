/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the scalable variant's suites (test_scalable.c,
 * test_scalable_files.c), in the bg_test_unit library: making a scalable
 * filter, adding and finding ranges of distinct keys, and checking that
 * the totals agree with the layers. Failures fail the running test, as the
 * TU_ assertions do. */
#ifndef BG_TEST_SCALABLE_UTIL_H
#define BG_TEST_SCALABLE_UTIL_H

#include "test_util.h"

/* A scalable filter from o (its variant is set here). */
bg_filter *tu_scalable(bg_filter_options o);

/* Adds keys [first, first + count) of a distinct set through add_many;
 * returns how many were reported new. */
uint64_t tu_scalable_add_range(bg_filter *f, uint64_t set, uint64_t first, uint64_t count);

/* How many keys [first, first + count) of a distinct set are reported
 * present (contains_many). */
uint64_t tu_scalable_count_present(const bg_filter *f, uint64_t set, uint64_t first,
                                   uint64_t count);

/* Key i of a distinct set through test_and_add / contains. */
int tu_add_key(bg_filter *f, uint64_t set, uint64_t i);
int tu_has_key(const bg_filter *f, uint64_t set, uint64_t i);

/* The filter's layers, from bg_filter_stats_get. */
uint32_t tu_layers_of(const bg_filter *f);

/* The layers RedisBloom's rule gives for `items` counted items: a new layer
 * opens when the newest holds its capacity, so the fewest layers whose
 * capacities sum to at least `items` (at least 1). */
uint32_t tu_expected_layers(uint64_t n0, uint32_t expansion, uint64_t items);

/* Every total of bg_filter_stats_get agrees with the layers' own stats
 * (filter.h), and the layers are what growth makes. */
void tu_check_layers(const bg_filter *f);

#endif
