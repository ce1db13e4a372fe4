/* The blocked variant: all k probes of a key inside one 512-bit block, which
 * is one 64-byte cache line, so an operation costs one cache miss however
 * large k is (Putze, Sanders, Singler, "Cache-, Hash- and Space-Efficient
 * Bloom Filters", 2007).
 *
 * HOW PROBES ARE MADE
 * block = reduce(h1, nblocks) picks the line from all 64 bits of h1. Probe j
 * is bit (h2 * SALT[j]) >> 55 of the block: a multiply-shift hash of h2 onto
 * 9 bits, one per salt. The probes are drawn with replacement (two may hit
 * the same bit), which is exactly what the sizing model in sizing.c assumes.
 * Double hashing inside a 512-bit block would give only 512 * 511 distinct
 * probe patterns, and at ~50 keys per block two keys would share a whole
 * pattern often enough to add ~4e-4 to p; salted multiply-shift patterns
 * depend on all 64 bits of h2.
 *
 * THE PRICE
 * Blocks do not fill evenly (their loads are Poisson), and the fuller ones
 * give more false positives than the average, so the blocked variant needs
 * a few percent more bits than the standard one for the same p: sizing.c
 * finds exactly how many from the model. docs/PERFORMANCE.md has the
 * measured cost and rate. */
#include <math.h>

#include "filter_internal.h"

/* Odd 64-bit constants, fixed forever: they define where a key's bits are,
 * in files and in Redis. (SplitMix64 outputs from seed 0x626c6f6f6d676174,
 * with the low bit set.) */
const uint64_t bg__blocked_salt[BG_MAX_K] = {
    0xb843f28d1cbe7cc1u, 0xbf5208508c24ba89u, 0x44191ad094bbb81fu, 0x5380e15d575cde27u,
    0x7c1006a45673361du, 0x966e0f470d6583c1u, 0x393056da196ce181u, 0xad9afafc3a99e0e7u,
    0x528f565ac6fccec1u, 0x76602cb12acdaab9u, 0xcc326fc4b5bc09efu, 0x6adedf6bb0649c55u,
    0xba5e66614e287f8fu, 0x27c87ce1c2debeebu, 0x81815f9ef8a8f227u, 0xa52a2b76d542a79du,
    0x5027fbb4abb74a3du, 0x8d346fd8f87d9cf7u, 0x2a2dfd5150933d0du, 0x937002dd2f73cf4fu,
    0x0f219a2b9d25d111u, 0xff9a85f0ca9e2013u, 0xd315e35a1f35aed9u, 0xce70367a346f4499u,
    0x15dbfc3e83d05f2bu, 0x96e30c7b8cd88717u, 0x06b00d18e200e037u, 0x8f53b1fc94560931u,
    0x5c6ae2d5184ef0f7u, 0x2c59462ab0277781u, 0x1d20cca451d4396fu, 0xba0165ac9b792e4fu,
};


/* The key's bits are gathered per word first, so that each of the block's 8
 * words gets one update. A single writer stores all 8 words unconditionally
 * (no branch to mispredict; storing an unchanged word is harmless). Concurrent
 * writers need a locked fetch-or (~5 ns each), so they lock only the words
 * that miss a bit, usually 2 or 3 of the 8. */
static int blocked_add(bg_filter *f, bg_hash h)
{
    _Atomic uint64_t *block = bg__block_of(f, h.h1);
    uint64_t mask[8] = {0};
    for (uint32_t j = 0; j < f->k; j++) {
        uint64_t b = bg__probe_bit(h.h2, j);
        mask[b >> 6] |= bg__bit(b & 63);
    }
    uint64_t missing = 0;
    if (f->single_writer) {
        for (int w = 0; w < 8; w++) {
            uint64_t old = bg__load(&block[w]);
            missing |= mask[w] & ~old;
            atomic_store_explicit(&block[w], old | mask[w], memory_order_relaxed);
        }
        return missing != 0;
    }
    unsigned todo = 0; /* bit w: word w misses some of its bits */
    for (unsigned w = 0; w < 8; w++)
        todo |= (unsigned)((mask[w] & ~bg__load(&block[w])) != 0) << w;
    while (todo) {
        unsigned w = (unsigned)__builtin_ctz(todo);
        todo &= todo - 1;
        uint64_t old = atomic_fetch_or_explicit(&block[w], mask[w], memory_order_relaxed);
        missing |= mask[w] & ~old;
    }
    return missing != 0;
}

/* Branch-free: all k bits are read from the one line and AND-ed, so an
 * absent key costs no mispredicted branch (an early exit would mispredict
 * about once per absent key, ~15 cycles, more than the probes themselves). */
static int blocked_contains(const bg_filter *f, bg_hash h)
{
    const _Atomic uint64_t *block = bg__block_of(f, h.h1);
    uint64_t all = 1;
    for (uint32_t j = 0; j < f->k; j++) {
        uint64_t b = bg__probe_bit(h.h2, j);
        uint64_t word = bg__load(&block[b >> 6]);
        all &= (word & bg__bit(b & 63)) != 0;
    }
    return (int)all;
}

static void blocked_prefetch(const bg_filter *f, bg_hash h)
{
    bg__prefetch(bg__block_of(f, h.h1));
}

/* A block with X_b of its 512 bits set answers a query that lands on it
 * with "maybe" with probability (X_b / 512)^k, and queries land uniformly,
 * so the current rate is the mean over blocks of (X_b / 512)^k. For the
 * cardinality: with Poisson(lambda = 512 n / m) block loads,
 * E[X] / m = 1 - exp(lambda ((1 - 1/512)^k - 1)), which inverts to
 *   n = (m / 512) ln(1 - X / m) / ((1 - 1/512)^k - 1). */
static void blocked_estimate(const bg_filter *f, bg_filter_stats *st)
{
    double k = (double)f->k, fp = 0;
    uint64_t set = 0;
    for (uint64_t blk = 0; blk < f->nblocks; blk++) {
        uint64_t x_b = bg__popcount(f->words, blk * 8, blk * 8 + 8);
        set += x_b;
        fp += pow((double)x_b / BG_BLOCK_BITS, k);
    }
    st->bits_set = set;
    st->estimated_fp_rate = fp / (double)f->nblocks;
    double m = (double)f->m, x = (double)st->bits_set;
    double keep = pow(1.0 - 1.0 / BG_BLOCK_BITS, k);
    st->estimated_items = x >= m ? INFINITY : (double)f->nblocks * log1p(-x / m) / (keep - 1.0);
}

BG__DEFINE_GROUP_OPS(blocked, )

const bg__filter_ops bg__blocked_scalar_ops = {
    .variant = BG_VARIANT_BLOCKED,
    .name = "blocked",
    .add = blocked_add,
    .contains = blocked_contains,
    .prefetch_group = blocked_prefetch_group,
    .add_group = blocked_add_group,
    .contains_group = blocked_contains_group,
    .estimate = blocked_estimate,
};

/* Scalar unless the CPU has AVX-512 (F + DQ for 64-bit multiplies) and
 * bg__blocked_simd allows it. Both give identical bits and answers. */
bool bg__blocked_simd = true;

const bg__filter_ops *bg__blocked_ops(void)
{
    const bg__filter_ops *simd = bg__blocked_avx512_ops();
    return bg__blocked_simd && simd ? simd : &bg__blocked_scalar_ops;
}

void bg__blocked_estimate(const bg_filter *f, bg_filter_stats *st)
{
    blocked_estimate(f, st);
}
