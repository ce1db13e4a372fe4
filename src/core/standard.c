/* The standard variant: k probes spread over the whole array of m bits.
 *
 * HOW PROBES ARE MADE
 * From the key's two 64-bit hashes, a = reduce(h1, m) and
 * b = reduce(h2, m - 1) + 1 (so 1 <= b < m: never a zero step, which would
 * put all k probes on one bit), then enhanced double hashing (Dillinger &
 * Manolios, "Bloom Filters in Probabilistic Verification", 2004):
 *   x_0 = a, y_0 = b;  x_{j+1} = (x_j + y_j) mod m;  y_{j+1} = (y_j + j) mod m.
 * The extra j term breaks the patterns of plain double hashing (two keys
 * sharing (a, b) mod small factors of m), and every step is one add and a
 * conditional subtract on uint64_t: no division, no 32-bit value, valid for
 * any m up to BG_MAX_BITS (x + y < 2m <= 2^64).
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
    uint64_t m = f->m;
    uint64_t x = bg__reduce(h.h1, m);
    uint64_t y = bg__reduce(h.h2, m - 1) + 1;
    int added = 0;
    for (uint32_t j = 0;;) {
        added |= bg__set_bits(f, &f->words[x >> 6], bg__bit(x & 63));
        if (++j == f->k)
            break;
        x = bg__step_mod(x, y, m);
        y = bg__step_mod(y, j - 1, m);
    }
    return added;
}

static int standard_contains(const bg_filter *f, bg_hash h)
{
    uint64_t m = f->m;
    uint64_t x = bg__reduce(h.h1, m);
    uint64_t y = bg__reduce(h.h2, m - 1) + 1;
    for (uint32_t j = 0;;) {
        if (!(bg__load(&f->words[x >> 6]) & bg__bit(x & 63)))
            return 0;
        if (++j == f->k)
            return 1;
        x = bg__step_mod(x, y, m);
        y = bg__step_mod(y, j - 1, m);
    }
}

/* The first two probes: an absent key is rejected by one of them 3 times in
 * 4 at half fill, so they are the lines worth fetching early. */
static void standard_prefetch(const bg_filter *f, bg_hash h)
{
    uint64_t m = f->m;
    uint64_t x = bg__reduce(h.h1, m);
    uint64_t y = bg__reduce(h.h2, m - 1) + 1;
    bg__prefetch(&f->words[x >> 6]);
    bg__prefetch(&f->words[bg__step_mod(x, y, m) >> 6]);
}

/* E[X] / m = 1 - (1 - 1/m)^(k n) inverts to the cardinality estimate
 *   n = ln(1 - X / m) / (k ln(1 - 1/m))
 * (Swamidass & Baldi, J. Chem. Inf. Model. 2007). */
static double standard_items_for_bits(const bg_filter *f, double x)
{
    double m = (double)f->m;
    return x >= m ? INFINITY : log1p(-x / m) / ((double)f->k * log1p(-1.0 / m));
}

/* With X of m bits set, each probe hits a set bit with probability X / m,
 * independently, so the current rate is (X / m)^k. */
static void standard_estimate(const bg_filter *f, bg_filter_stats *st)
{
    st->bits_set = bg__popcount(f->words, 0, f->nwords);
    st->estimated_fp_rate = pow((double)st->bits_set / (double)f->m, (double)f->k);
    st->estimated_items = standard_items_for_bits(f, (double)st->bits_set);
}

BG__DEFINE_GROUP_OPS(standard, )

const bg__filter_ops bg__standard_ops = {
    .variant = BG_VARIANT_STANDARD,
    .name = "standard",
    .cell_bits = 1,
    .add = standard_add,
    .contains = standard_contains,
    .prefetch_group = standard_prefetch_group,
    .run_group = standard_run_group,
    .run_keys = standard_run_keys,
    .items_for_bits = standard_items_for_bits,
    .estimate = standard_estimate,
};
