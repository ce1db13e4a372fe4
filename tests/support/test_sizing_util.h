/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the sizing tests (test_sizing.c, test_sizing_errors.c), in the
 * bg_test_unit library: the variants bg_sizing_solve sizes, their units and
 * limits as <bloomgate/sizing.h> states them, and the checks every
 * successful solve must pass. Expected values are computed here, in long
 * double where it matters, not taken from the implementation. */
#ifndef BG_TEST_SIZING_UTIL_H
#define BG_TEST_SIZING_UTIL_H

#include "test_util.h"

#define TU_LN2L 0.693147180559945309417232121458176568L

/* The variants the solver sizes (counting sizes as standard). */
#define TU_SIZING_NVARIANTS 2
extern const bg_variant tu_sizing_variants[TU_SIZING_NVARIANTS];

/* "standard", "blocked" or "?", for test contexts. */
const char *tu_variant_name(bg_variant v);

/* The granularity of m: one bit, or one 512-bit block. */
uint64_t tu_unit_bits(bg_variant v);

/* The most probes per key the variant takes. */
uint32_t tu_max_k(bg_variant v);

/* The least m the variant has. */
uint64_t tu_min_bits(bg_variant v);

/* A given m as the spec says it is rounded: up to BG_MIN_BITS, then (blocked)
 * up to a whole number of blocks. */
uint64_t tu_round_m(bg_variant v, uint64_t m);

/* The model's rate, bg_sizing_fp_rate. */
double tu_fp(bg_variant v, uint64_t m, uint64_t n, uint32_t k);

/* The textbook optimum m for the standard variant, in long double. */
uint64_t tu_textbook_m(uint64_t n, double p);

/* Fills *s with the four knowns (0: unknown) and solves without a cap. */
int tu_solve(bg_variant v, bg_sizing *s, uint64_t n, double p, uint64_t m, uint32_t k);

/* The rate at (m, n) with the k the library picks for them: what "the
 * least m" and "the most n" are measured against. */
double tu_lib_rate(bg_variant v, uint64_t m, uint64_t n);

/* Common checks for every successful solve. */
void tu_check_common(bg_variant v, const bg_sizing *s);

#endif
