/* SPDX-License-Identifier: BSD-3-Clause */
/* The standard variant: k probes spread over the whole array of m bits.
 *
 * HOW PROBES ARE MADE
 * <bloomgate/layout.h> defines them, for every home of the layout: from the
 * key's two 64-bit hashes a start a and a step b (1 <= b < m), then
 * enhanced double hashing, one add and a conditional subtract per probe on
 * uint64_t, no division, no 32-bit value, valid for any m up to BG_MAX_BITS.
 * Its inline iterator keeps the loops below as tight as if written out.
 *
 * COST
 * Up to k cache misses per operation (an absent key stops at its first clear
 * bit, after ~2 probes at half fill). The blocked variant exists to cut that
 * to one. */
#include <math.h>

#include "filter_internal.h"
#include "hash_inline.h"

static int standard_add(bg_filter *f, bg_hash h)
{
    bg_layout_probe p = bg_layout_probe_first(h, f->m);
    int added = 0;
    for (;;) {
        added |= bg__set_bits(f, &f->words[p.x >> 6], bg__bit(p.x & 63));
        if (p.j + 1 == f->k)
            return added;
        bg_layout_probe_next(&p);
    }
}

static int standard_contains(const bg_filter *f, bg_hash h)
{
    bg_layout_probe p = bg_layout_probe_first(h, f->m);
    for (;;) {
        if (!(bg__load(&f->words[p.x >> 6]) & bg__bit(p.x & 63)))
            return 0;
        if (p.j + 1 == f->k)
            return 1;
        bg_layout_probe_next(&p);
    }
}

/* The first two probes: an absent key is rejected by one of them 3 times in
 * 4 at half fill, so they are the lines worth fetching early. */
static void standard_prefetch(const bg_filter *f, bg_hash h)
{
    bg_layout_probe p = bg_layout_probe_first(h, f->m);
    bg__prefetch(&f->words[p.x >> 6]);
    bg__prefetch(&f->words[bg_layout_step(p.x, p.y, p.m) >> 6]);
}

int bg_layout_positions(bg_hash h, uint64_t m, uint32_t k, uint64_t *out)
{
    if (!out || m < BG_MIN_BITS || m > BG_MAX_BITS || k < 1 || k > BG_MAX_K)
        return BG_EINVAL;
    bg_layout_probe p = bg_layout_probe_first(h, m);
    for (;;) {
        out[p.j] = p.x;
        if (p.j + 1 == k)
            return BG_OK;
        bg_layout_probe_next(&p);
    }
}

/* E[X] / m = 1 - (1 - 1/m)^(k n) inverts to the cardinality estimate
 *   n = ln(1 - X / m) / (k ln(1 - 1/m))
 * (Swamidass & Baldi, J. Chem. Inf. Model. 2007). */
static double standard_items_for_bits(const bg_filter *f, double x)
{
    double m = (double)f->m;
    return x >= m ? INFINITY : log1p(-x / m) / ((double)f->k * log1p(-1.0 / m));
}

/* With X of m bits set, each probe hits a set bit with probability X / m;
 * taken as independent, the current rate is (X / m)^k: the model, a little
 * low on small arrays (EXACT RATE below). */
static void standard_estimate(const bg_filter *f, bg_filter_stats *st)
{
    st->bits_set = bg__popcount(f->words, 0, f->nwords);
    st->estimated_fp_rate = pow((double)st->bits_set / (double)f->m, (double)f->k);
    st->estimated_items = standard_items_for_bits(f, (double)st->bits_set);
}

/* EXACT RATE
 * (X / m)^k treats the k probes as independent draws. They are not: they
 * are the sequence above, x_j = a + s_j(b) mod m, with offsets
 *   s_j(b) = j b + C(j, 3)   (mod m),
 * and the keys that set the bits followed the same sequences. On a small
 * array that correlation shows: at p = 0.01 (k = 7) the measured rate is
 * ~15% above (X / m)^k at n = 10 (m = 96), 0.9% at n = 100 (m = 959),
 * 0.45% at m = 3835 and 0.2% at m = 9586 (20 to 400 seeds each).
 * The exact rate of the array at hand is a count: a is uniform on [0, m)
 * and b on [1, m) (multiply-shift of 64-bit hashes, bias < m / 2^64), so
 *   rate = #{(a, b) : bit a + s_j(b) set for all j < k} / (m (m - 1)).
 * For each b the offsets are fixed and the count over a is 64 values of a
 * at a time: AND the array rotated by each s_j (read from a copy laid
 * twice end to end), popcount: ~m^2 / 64 word reads times the ~6 probes
 * it takes a word of 64 candidates to die out at half fill, about 3 ms
 * at m = 3835. So it is done only up to
 * BG__EXACT_RATE_MAX_BITS, where the model is within ~0.5%; above that the
 * estimate serves. The scalable variant uses it for the small layers it
 * retires (scalable.c THE BUDGET), once per layer. */
#define BG__EXACT_RATE_MAX_BITS 4096u
#define DOUBLED_WORDS ((2 * BG__EXACT_RATE_MAX_BITS + 64) / 64 + 2)

/* 64 bits of the doubled copy from bit `at` on (bit t of the result is bit
 * at + t). */
static uint64_t read64(const uint64_t *d, uint64_t at)
{
    uint64_t w = at >> 6, s = at & 63;
    return s ? d[w] >> s | d[w + 1] << (64 - s) : d[w];
}

static double standard_exact_rate(const bg_filter *f)
{
    uint64_t m = f->m;
    uint32_t k = f->k;
    if (m < 2 || m > BG__EXACT_RATE_MAX_BITS || k > BG_MAX_K)
        return NAN;
    /* The array in machine bit order (bit i of word i / 64 is array bit i),
     * twice over and then some: d bit i = array bit i mod m. */
    uint64_t d[DOUBLED_WORDS] = {0};
    for (uint64_t i = 0; i < 2 * m + 64; i++) {
        uint64_t x = i % m;
        if (bg__load(&f->words[x >> 6]) & bg__bit(x & 63))
            d[i >> 6] |= UINT64_C(1) << (i & 63);
    }
    uint64_t offset[BG_MAX_K];
    uint64_t hits = 0, last = m & 63 ? (UINT64_C(1) << (m & 63)) - 1 : ~UINT64_C(0);
    for (uint64_t b = 1; b < m; b++) {
        /* standard_add's sequence from a = 0. */
        bg_layout_probe p = {0, b, m, 0};
        for (;;) {
            offset[p.j] = p.x;
            if (p.j + 1 == k)
                break;
            bg_layout_probe_next(&p);
        }
        for (uint64_t a = 0; a < m; a += 64) {
            uint64_t all = a + 64 <= m ? ~UINT64_C(0) : last;
            for (uint32_t j = 0; j < k && all; j++)
                all &= read64(d, a + offset[j]);
            hits += (uint64_t)__builtin_popcountll(all);
        }
    }
    return (double)hits / ((double)m * (double)(m - 1));
}

BG__DEFINE_GROUP_OPS(standard, )

const bg__filter_ops bg__standard_ops = {
    .variant = BG_VARIANT_STANDARD,
    .name = "standard",
    .cell_bits = 1,
    BG__ARRAY_OPS(standard),
    .run_keys = standard_run_keys,
    .items_for_bits = standard_items_for_bits,
    .estimate = standard_estimate,
    .exact_rate = standard_exact_rate,
};
