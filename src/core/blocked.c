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

/* The current rate, exact for this layout: a query lands on a uniform block and start s, and its
 * probe in word w hits a set bit with probability X_w / 64, independently
 * across its k distinct words, so the rate is the mean over blocks and over
 * s of prod_{j<k} X_{(s+j) mod 8} / 64. */
void bg__blocked_estimate(const bg_filter *f, bg_filter_stats *st)
{
    double fp = 0;
    uint64_t set = 0;
    for (uint64_t blk = 0; blk < f->nblocks; blk++) {
        double x[8];
        for (int w = 0; w < 8; w++) {
            uint64_t c = bg__popcount(f->words, blk * 8 + (uint64_t)w, blk * 8 + (uint64_t)w + 1);
            set += c;
            x[w] = (double)c / 64;
        }
        for (unsigned s = 0; s < 8; s++) {
            double prod = 1;
            for (uint32_t j = 0; j < f->k; j++)
                prod *= x[(s + j) & 7];
            fp += prod;
        }
    }
    st->bits_set = set;
    st->estimated_fp_rate = fp / (8.0 * (double)f->nblocks);
    st->estimated_items = bg__blocked_items_for_bits(f, (double)set);
}

BG__DEFINE_GROUP_OPS(blocked, )

const bg__filter_ops bg__blocked_scalar_ops = {
    .variant = BG_VARIANT_BLOCKED,
    .name = "blocked",
    .cell_bits = 1,
    .add = blocked_add,
    .contains = blocked_contains,
    .prefetch_group = blocked_prefetch_group,
    .run_group = blocked_run_group,
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
