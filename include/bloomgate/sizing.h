/* SPDX-License-Identifier: BSD-3-Clause */
/* Sizing: give any two of (n, p, m, k), get the rest.
 *
 *   n  expected items (capacity)          p  false-positive rate, in (0, 1)
 *   m  bits in the filter                 k  probes (hash functions) per key
 *
 * Standard variant (k independent uniform probes over m bits):
 *   p(m, n, k) = (1 - (1 - 1/m)^(k n))^k  ~=  (1 - e^(-k n / m))^k
 *   m          = ceil(-n ln p / (ln 2)^2)       (the optimum for n and p)
 *   k          = round((m / n) ln 2)            (recomputed from the final m;
 *                                                the better neighbour when the
 *                                                rounding is not the best integer)
 * Blocked variant (k <= 8 probes, one per 64-bit word, in one 512-bit block
 * chosen per key; filter.h): block loads are Poisson(lambda = 512 n / m)
 * (Putze, Sanders, Singler, "Cache-, Hash- and Space-Efficient Bloom
 * Filters", 2007), and inclusion-exclusion over the query's probes gives the
 * exact mixture
 *   p(m, n, k) = sum_{S subset of {0..k-1}} (-1)^|S| exp(lambda (phi_S - 1)),
 *   phi_S = (1/8) sum_{s=0..7} (63/64)^|S & {s .. s+k-1 mod 8}|
 * (derivation in src/core/sizing.c), so m and k are found by search over this
 * model, not by the standard formula, and the rate asked for is the rate
 * delivered.
 *
 * Counting variant: m counters where the standard variant has m bits, so the
 * standard formulas hold (a counter saturates at 15 only after ~15 keys hit
 * it, which at the optimal load happens with probability < 1e-15 per
 * counter: Fan et al., "Summary Cache", 2000). Its array is 4 m bits.
 * Scalable variant: each layer is sized by its own (n, p); bg_sizing_solve
 * does not size the stack (BG_EVARIANT); see filter.h SCALABLE.
 *
 * All sizes are uint64_t; every result is checked against 2^64 (BG_EOVERFLOW)
 * and against a cap (BG_ETOOBIG) before it is returned.
 *
 * Both calls are pure: no allocation, no I/O, no shared state, so any
 * number of threads may call them at once. bg_sizing_fp_rate is one
 * evaluation of the model (blocked: up to 2^k terms); bg_sizing_solve is a
 * closed form or a bisection, O(log m) evaluations. */
#ifndef BLOOMGATE_SIZING_H
#define BLOOMGATE_SIZING_H

#include <stdint.h>

#include <bloomgate/api.h>
#include <bloomgate/error.h>
#include <bloomgate/filter.h> /* bg_variant and the limits on m and k */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bg_sizing {
    uint64_t n; /* items; 0 = unknown */
    double p;   /* false-positive rate in (0, 1); 0 = unknown */
    uint64_t m; /* bits; 0 = unknown */
    uint32_t k; /* probes, 1..BG_MAX_K (blocked: BG_BLOCKED_MAX_K); 0 = unknown */
} bg_sizing;

/* Completes *s for `variant` from the fields that are known (non-zero):
 *
 *   known       computed
 *   n, p        m (least that reaches p; blocked: multiple of 512), k (best for that m)
 *   n, m        k (best), p
 *   m, p        n (most that m holds at p), k (best), p (actual)
 *   n, k        m = ceil(n k / ln 2), p
 *   m, k        n = floor(m ln 2 / k) (the n for which k is optimal), p
 *   n, p, k     m (least that reaches p with this k)
 *   m, p, k     n (most that m holds at p with this k)
 *   n, m, k     p
 *   p, k        nothing: BG_EUNDERDET (they fix only the ratio m / n)
 *   n, m, p     nothing: BG_EINVAL (n and m already fix the best p)
 *
 * A given m is rounded up (blocked: to a multiple of 512; both: to at least
 * BG_MIN_BITS) and k is always recomputed from the final m. On return, p is
 * the model's rate for the final (n, m, k). Where m or n is searched for (the
 * blocked variant, or a given k) that rate is <= the p given. The standard
 * variant's (n, p) row is the textbook closed form, whose rounded k can land
 * a hair above p (n = 1e6, p = 0.01 gives 0.010039).
 * `max_bits` caps m (0 means BG_DEFAULT_MAX_BYTES * 8).
 *
 * Returns BG_OK, BG_EINVAL (NULL s; p outside (0, 1) or NaN; k > BG_MAX_K,
 * or > BG_BLOCKED_MAX_K for the blocked variant; blocked p < BG_BLOCKED_MIN_P;
 * fewer than two knowns; n, m and p all given; m too small to hold one key at
 * p), BG_EUNDERDET, BG_EVARIANT,
 * BG_EOVERFLOW (a size beyond 2^64) or BG_ETOOBIG (m above the cap). On error
 * *s is unchanged. Nothing is allocated. */
BG_API int bg_sizing_solve(bg_variant variant, bg_sizing *s, uint64_t max_bits);

/* The model's false-positive rate after n distinct keys in m bits with k
 * probes (formulas above). Returns NaN for arguments out of range. */
BG_API double bg_sizing_fp_rate(bg_variant variant, uint64_t m, uint64_t n, uint32_t k);

#ifdef __cplusplus
}
#endif

#endif
