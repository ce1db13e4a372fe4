/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocked variant: all k probes of a key inside one 512-bit block, which
 * is one 64-byte cache line, so an operation costs one cache miss however
 * large k is (Putze, Sanders, Singler, "Cache-, Hash- and Space-Efficient
 * Bloom Filters", 2007), with one probe per 64-bit word of the block.
 *
 * HOW PROBES ARE MADE
 * block = reduce(h1, nblocks) picks the line from the high bits of h1*nblocks;
 * s = h1 & 7 (bits the reduction hardly uses) picks the word where the key's
 * probes start. Probe j (0 <= j < k <= 8) is bit (h2 * SALT[j]) >> 58 of word
 * (s + j) mod 8: a multiply-shift hash of all 64 bits of h2 onto 6 bits, one
 * salt per probe. So a key sets k bits in k distinct words.
 *
 * WHY ONE PROBE PER WORD
 * - An insert is one 512-bit OR of a mask whose words are independent: no
 *   probe reads a word another probe of the same key writes, the hazard that
 *   made "any of the 512 bits" inserts ~2x slower (docs/PERFORMANCE.md). A
 *   query is one load, one AND and one compare; both vectorize fully.
 * - The rotation s spreads keys with k < 8 over all 8 words evenly.
 * - Its false-positive rate has an exact closed form (sizing.c), and costs
 *   little space: 3.6% more bits than the standard variant at p = 0.01 and
 *   9.4% at 0.001, against 3.2% and 7.7% for "any of 512 bits".
 * - The price is k <= 8 (BG_BLOCKED_MAX_K): below p ~ 1e-3 the best k would
 *   be higher and the overhead grows (23% at 1e-4); use the standard
 *   variant there.
 *
 * This file is the portable implementation; blocked_avx512.c and
 * blocked_avx2.c compute the same bits eight probes at a time. */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "filter_internal.h"
#include "hash_inline.h"

/* Odd 64-bit constants, fixed forever: they define where a key's bits are,
 * in files and in Redis. (SplitMix64 outputs from seed 0x626c6f6f6d676174,
 * with the low bit set.) */
const uint64_t bg__blocked_salt[BG_BLOCKED_MAX_K] = {
    BG__SALT_0, BG__SALT_1, BG__SALT_2, BG__SALT_3,
    BG__SALT_4, BG__SALT_5, BG__SALT_6, BG__SALT_7,
};

/* bg__blocked_salt_rot[s][w] = SALT[(w - s) mod 8]: the salt of the probe
 * that lands in word w when a key's probes start at word s, for the SIMD
 * implementations, which compute all eight words' bits at once. */
#define BG__ROT(a, b, c, d, e, f, g, h)                                                     \
    {BG__SALT_##a, BG__SALT_##b, BG__SALT_##c, BG__SALT_##d,                                \
     BG__SALT_##e, BG__SALT_##f, BG__SALT_##g, BG__SALT_##h}
_Alignas(64) const uint64_t bg__blocked_salt_rot[8][BG_BLOCKED_MAX_K] = {
    BG__ROT(0, 1, 2, 3, 4, 5, 6, 7), BG__ROT(7, 0, 1, 2, 3, 4, 5, 6),
    BG__ROT(6, 7, 0, 1, 2, 3, 4, 5), BG__ROT(5, 6, 7, 0, 1, 2, 3, 4),
    BG__ROT(4, 5, 6, 7, 0, 1, 2, 3), BG__ROT(3, 4, 5, 6, 7, 0, 1, 2),
    BG__ROT(2, 3, 4, 5, 6, 7, 0, 1), BG__ROT(1, 2, 3, 4, 5, 6, 7, 0),
};
#undef BG__ROT

/* Single writer: plain load-or-store per word. Concurrent writers: a locked
 * OR (~5 ns) only for words that miss their bit, which after the first few
 * keys is about half of them (bg__set_bits). */
static int blocked_add(bg_filter *f, bg_hash h)
{
    _Atomic uint64_t *block = bg__block_of(f, h.h1);
    unsigned s = bg__block_start(h.h1);
    uint64_t missing = 0;
    for (uint32_t j = 0; j < f->k; j++) {
        _Atomic uint64_t *word = &block[(s + j) & 7];
        uint64_t mask = bg__probe_mask(h.h2, j);
        uint64_t old = bg__load(word);
        missing |= mask & ~old;
        if (f->single_writer)
            atomic_store_explicit(word, old | mask, memory_order_relaxed);
        else if (!(old & mask))
            (void)atomic_fetch_or_explicit(word, mask, memory_order_relaxed);
    }
    return missing != 0;
}

/* Branch-free: an early exit would mispredict about once per absent key
 * (~15 cycles), more than reading all k words of a line already loaded. */
static int blocked_contains(const bg_filter *f, bg_hash h)
{
    const _Atomic uint64_t *block = bg__block_of(f, h.h1);
    unsigned s = bg__block_start(h.h1);
    uint64_t missing = 0;
    for (uint32_t j = 0; j < f->k; j++) {
        uint64_t mask = bg__probe_mask(h.h2, j);
        missing |= mask & ~bg__load(&block[(s + j) & 7]);
    }
    return missing == 0;
}

static void blocked_prefetch(const bg_filter *f, bg_hash h)
{
    bg__prefetch(bg__block_of(f, h.h1));
}

/* Cardinality from the fill: word w of a block is covered by
 * Poisson(lambda k / 8) keys (lambda = 512 n / m), each setting one uniform
 * bit of 64, so E[X] / m = 1 - exp(-(lambda k / 8) / 64) = 1 - exp(-k n / m),
 * and n = -(m / k) ln(1 - X / m). */
double bg__blocked_items_for_bits(const bg_filter *f, double x)
{
    double m = (double)f->m;
    return x >= m ? INFINITY : -(m / f->k) * log1p(-x / m);
}

/* THE RATE FROM THE FILL
 * Exact for this layout: a query lands on a uniform block and start s, and
 * its probe in word w hits a set bit with probability X_w / 64 (X_w: the
 * word's set bits), independently across its k distinct words, so the rate
 * is the mean over blocks and over s of prod_{j<k} X_{(s+j) mod 8} / 64.
 *
 * How the scan computes it, per block, in vectors of four lanes:
 * - the eight X_w by a SWAR popcount of two vectors of words (the x86-64
 *   baseline has no POPCNT, and AVX2 no vector popcount), made doubles;
 * - the eight starts' products as two vectors (starts 0-3 and 4-7), each
 *   multiplied k times by a window (X_j, X_j+1, X_j+2, X_j+3), indices
 *   mod 8, shuffled from the two vectors of counts in registers;
 * - the products summed per lane across blocks;
 * - the line SCAN_PREFETCH_BLOCKS blocks ahead prefetched (bg__prefetch,
 *   into L2 as the batches): the hardware's own prefetcher does not keep
 *   up with a loop this slow per line, so a filter larger than the caches
 *   would cost several times its in-cache time per block; 32 blocks ahead
 *   bring it back to about that (docs/PERFORMANCE.md).
 * Every product is an integer below 2^48 (counts up to 64, k up to 8), so
 * exact in a double whatever the order; the total is scaled by 64^-k once.
 * Windows read back from an array of counts just stored would wait for the
 * stores (no store forwarding from 8-byte stores into a 32-byte load), and
 * one scalar sum would chain every block's adds to the last; the vectors
 * cost several times fewer cycles per block than a scalar loop
 * (docs/PERFORMANCE.md, "Scans"). The sums are exact too while below 2^53;
 * beyond, they round in their last bits, differently from a scalar sum. */

/* GCC/Clang vectors of four: one AVX2 or two SSE2 operations each. */
typedef uint64_t v4u __attribute__((vector_size(32)));
typedef double v4d __attribute__((vector_size(32)));

/* The set bits of each lane of *x (SWAR: pairs, nibbles, bytes, then the
 * bytes summed), added to *total and, as doubles, stored in *out: a count
 * below 2^52 ORed into the mantissa of 2^52 is 2^52 + count exactly.
 * (Vectors by pointer: by value they would change the ABI between the
 * clones.) */
static inline void lane_counts(const v4u *x, v4u *total, v4d *out)
{
    const v4u m1 = {0x5555555555555555u, 0x5555555555555555u, 0x5555555555555555u,
                    0x5555555555555555u},
              m2 = {0x3333333333333333u, 0x3333333333333333u, 0x3333333333333333u,
                    0x3333333333333333u},
              m4 = {0x0f0f0f0f0f0f0f0fu, 0x0f0f0f0f0f0f0f0fu, 0x0f0f0f0f0f0f0f0fu,
                    0x0f0f0f0f0f0f0f0fu},
              two52 = {0x4330000000000000u, 0x4330000000000000u, 0x4330000000000000u,
                       0x4330000000000000u};
    v4u c = *x;
    c -= (c >> 1) & m1;
    c = (c & m2) + ((c >> 2) & m2);
    c = (c + (c >> 4)) & m4;
    c += c >> 8;
    c += c >> 16;
    c = (c + (c >> 32)) & 0x7f;
    *total += c;
    v4u bits = c | two52;
    memcpy(out, &bits, sizeof *out);
    *out -= 4503599627370496.0; /* 2^52 */
}

#define SCAN_PREFETCH_BLOCKS 32 /* THE RATE FROM THE FILL */

BG__AVX2_CLONE static void estimate_blocks(const bg_filter *f, bg_filter_stats *st)
{
    const _Atomic uint64_t *words = f->words;
    uint64_t nblocks = f->nblocks;
    uint32_t k = f->k;
    const v4d one = {1, 1, 1, 1};
    v4d sum_lo = {0, 0, 0, 0}, sum_hi = sum_lo;
    v4u set = {0, 0, 0, 0};
    for (uint64_t blk = 0; blk < nblocks; blk++) {
        const _Atomic uint64_t *bw = &words[blk * 8];
        if (blk + SCAN_PREFETCH_BLOCKS < nblocks)
            bg__prefetch(bw + 8 * SCAN_PREFETCH_BLOCKS);
        v4u w0 = {bg__load(&bw[0]), bg__load(&bw[1]), bg__load(&bw[2]), bg__load(&bw[3])},
            w1 = {bg__load(&bw[4]), bg__load(&bw[5]), bg__load(&bw[6]), bg__load(&bw[7])};
        v4d a, b;
        lane_counts(&w0, &set, &a);
        lane_counts(&w1, &set, &b);
        v4d win[8] = {
            a,
            __builtin_shufflevector(a, b, 1, 2, 3, 4),
            __builtin_shufflevector(a, b, 2, 3, 4, 5),
            __builtin_shufflevector(a, b, 3, 4, 5, 6),
            b,
            __builtin_shufflevector(a, b, 5, 6, 7, 0),
            __builtin_shufflevector(a, b, 6, 7, 0, 1),
            __builtin_shufflevector(a, b, 7, 0, 1, 2),
        };
        v4d lo = one, hi = one;
        for (uint32_t j = 0; j < k; j++) {
            lo *= win[j];
            hi *= win[(j + 4) & 7];
        }
        sum_lo += lo;
        sum_hi += hi;
    }
    v4d sum = sum_lo + sum_hi;
    double fp = (sum[0] + sum[1]) + (sum[2] + sum[3]);
    st->bits_set = set[0] + set[1] + set[2] + set[3];
    st->estimated_fp_rate = fp * pow(64.0, -(double)k) / (8.0 * (double)nblocks);
    st->estimated_items = bg__blocked_items_for_bits(f, (double)st->bits_set);
}

/* A plain wrapper around the clones (cpu.h). */
void bg__blocked_estimate(const bg_filter *f, bg_filter_stats *st)
{
    estimate_blocks(f, st);
}

BG__DEFINE_GROUP_OPS(blocked, )

const bg__filter_ops bg__blocked_scalar_ops = {
    .variant = BG_VARIANT_BLOCKED,
    .name = "blocked",
    .cell_bits = 1,
    BG__ARRAY_OPS(blocked),
    .run_keys = blocked_run_keys,
    .items_for_bits = bg__blocked_items_for_bits,
    .estimate = bg__blocked_estimate,
};

/* The fastest implementation this CPU has, up to bg__blocked_simd. All
 * give identical bits and answers. */
bg__simd bg__blocked_simd = BG__SIMD_AVX512;

const bg__filter_ops *bg__blocked_ops_at(bg__simd level)
{
    switch (level) {
    case BG__SIMD_AVX512:
        return bg__blocked_avx512_ops();
    case BG__SIMD_AVX2:
        return bg__blocked_avx2_ops();
    case BG__SIMD_NONE:
        break;
    }
    return &bg__blocked_scalar_ops;
}

const bg__filter_ops *bg__blocked_ops(void)
{
    for (int level = (int)bg__blocked_simd; level > BG__SIMD_NONE; level--) {
        const bg__filter_ops *ops = bg__blocked_ops_at((bg__simd)level);
        if (ops)
            return ops;
    }
    return &bg__blocked_scalar_ops;
}
