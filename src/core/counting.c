/* SPDX-License-Identifier: BSD-3-Clause */
/* The counting variant: the standard variant with m 4-bit counters where it
 * has m bits, so that keys can be removed (Fan, Cao, Almeida, Broder,
 * "Summary Cache: A Scalable Wide-Area Web Cache Sharing Protocol", 2000).
 *
 * LAYOUT
 * Counter i is a nibble of payload byte i / 2: the high one (bits 7..4) when
 * i is even, the low one when odd (filter.h COUNTING). Sixteen counters fill
 * a 64-bit word: counter i is counter c = i % 16 of word i / 16. Loaded
 * natively on a little-endian CPU, payload byte j of a word is machine bits
 * 8j..8j+7, so counter c sits at shift 8 (c / 2) + 4 (1 - c % 2) = 4 (c ^ 1);
 * on a big-endian CPU byte j is bits 56 - 8j..63 - 8j and the shift is
 * 4 (15 - c) (counter_shift; compare bg__bit). The key's k counters are at
 * exactly the standard variant's bit positions (standard.c, HOW PROBES ARE
 * MADE): same m, k and seed, same keys, and the non-zero counters are the
 * standard filter's set bits. So the sizing (sizing.h), the false-positive
 * rate and the fill-based estimates are the standard variant's, with
 * "non-zero counter" for "set bit".
 *
 * OPERATIONS
 *   add       increments the k counters, each saturating at BG_COUNTER_MAX;
 *             "new" (1) if one of them was 0.
 *   contains  all k counters > 0.
 *   remove    if one of the k counters is 0, nothing (0: definitely
 *             absent); else decrements each counter that is not saturated
 *             (1). A key whose probes meet the same counter twice
 *             increments it twice and decrements it twice.
 * A decrement never takes a counter below 0: a remove of a key that was
 * never added (a false positive) may pass the check and then meet a counter
 * that one of its own earlier probes, or another thread, has just taken to
 * 0; it leaves that counter at 0. That keeps the array well formed; the
 * damage such a remove does to other keys (filter.h COUNTING) is unavoidable.
 *
 * WHY 4 BITS
 * After n distinct keys with k probes each, a counter holds
 * c ~ Binomial(n k, 1 / m), and
 *   P(c >= j) <= C(n k, j) m^-j <= (e n k / (j m))^j.
 * With the optimal k = (m / n) ln 2 (what bg_sizing_solve picks), e n k / m
 * = e ln 2, so P(c >= j) <= (e ln 2 / j)^j for every counter, and by the
 * union bound
 *   P(some counter >= 16) <= m (e ln 2 / 16)^16 = 1.37e-15 m
 * (Fan et al., section V.C). A filter of m = 1e9 counters overflows 4 bits
 * with probability < 1.4e-6. The bound is loose: a counter is about
 * Poisson(ln 2), whose tail P(c >= 16) is 7.1e-17. For 3 bits the same tail,
 * P(c >= 8) = 7.2e-7, means about 7 overflowing counters in a filter of 1e7
 * (about 1e6 keys at p = 0.01), so 4 bits is the least that never
 * saturates in practice. The price is 4x the memory of a standard filter
 * for the same n and p. All this assumes distinct keys, at most
 * capacity of them: adding one key j times adds j to each of its counters
 * (15 adds of one key saturate them all), and filling past capacity raises
 * e n k / m.
 *
 * SATURATION
 * A counter that reaches BG_COUNTER_MAX stays there: its true count is
 * unknown from then on, and decrementing it could take it to 0 while a key
 * still relies on it (a false negative). A saturated counter behaves like a
 * standard filter's bit: it can never be cleared, so removals leak a little
 * there, never lose a key. bg_filter_stats reports how many are saturated.
 *
 * THREADS
 * Concurrent writers: each counter update is a compare-and-swap loop on its
 * 64-bit word (relaxed order, as the other variants' fetch-or), so adds,
 * removes, unions and queries from any threads never lose an increment or a
 * decrement. Single writer: plain loads and stores (the caller serializes
 * adds, removes and unions); readers see each word whole, old or new.
 * A remove's check and its decrements are separate steps, not one atomic
 * act over k counters; what that allows and forbids is in filter.h THREADS.
 * Statistics read each word once and see some state between the one before
 * a concurrent write and the one after.
 *
 * COST
 * As the standard variant, up to k cache misses per operation; an add or a
 * remove does k compare-and-swaps (concurrent writers) where a standard add
 * does a fetch-or only for bits not yet set, and the array is 4x larger, so
 * more of it misses the caches. */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "filter_internal.h"
#include "hash_inline.h"

#define NIBBLE UINT64_C(0xf)
#define LOW_NIBBLES UINT64_C(0x0f0f0f0f0f0f0f0f) /* the low nibble of each byte */
#define BYTE_BIT4 UINT64_C(0x1010101010101010)  /* bit 4 of each byte */
#define NIBBLE_ONES UINT64_C(0x1111111111111111) /* bit 0 of each nibble */

_Static_assert(BG_COUNTER_MAX == 15u, "counters are 4 bits");

/* Shift of counter i inside its word (see LAYOUT). */
static inline unsigned counter_shift(uint64_t i)
{
    unsigned c = (unsigned)(i & 15);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return 4 * (15 - c);
#else
    return 4 * (c ^ 1);
#endif
}

/* Increments (up) or decrements counter i, unless it is saturated or, for a
 * decrement, 0. Returns the counter's value before. */
static inline unsigned counter_update(const bg_filter *f, uint64_t i, bool up)
{
    _Atomic uint64_t *w = &f->words[i >> 4];
    unsigned s = counter_shift(i);
    uint64_t one = UINT64_C(1) << s;
    uint64_t old = bg__load(w);
    for (;;) {
        unsigned v = (unsigned)((old >> s) & NIBBLE);
        if (v == BG_COUNTER_MAX || (!up && v == 0))
            return v;
        uint64_t next = up ? old + one : old - one; /* stays inside the nibble */
        if (f->single_writer) {
            atomic_store_explicit(w, next, memory_order_relaxed);
            return v;
        }
        /* On failure `old` is reloaded and the counter re-examined. */
        if (atomic_compare_exchange_weak_explicit(w, &old, next, memory_order_relaxed,
                                                  memory_order_relaxed))
            return v;
    }
}

static inline unsigned counter_get(const bg_filter *f, uint64_t i)
{
    return (unsigned)((bg__load(&f->words[i >> 4]) >> counter_shift(i)) & NIBBLE);
}

static int counting_add(bg_filter *f, bg_hash h)
{
    bg_layout_probe p = bg_layout_probe_first(h, f->m); /* <bloomgate/layout.h> */
    int added = 0;
    for (;;) {
        added |= counter_update(f, p.x, true) == 0;
        if (p.j + 1 == f->k)
            return added;
        bg_layout_probe_next(&p);
    }
}

static int counting_contains(const bg_filter *f, bg_hash h)
{
    bg_layout_probe p = bg_layout_probe_first(h, f->m);
    for (;;) {
        if (counter_get(f, p.x) == 0)
            return 0;
        if (p.j + 1 == f->k)
            return 1;
        bg_layout_probe_next(&p);
    }
}

/* Check first, so that an absent key changes nothing; then decrement. The
 * second pass recomputes the probes (a few adds each) rather than keeping
 * up to BG_MAX_K of them. */
static int counting_remove(bg_filter *f, bg_hash h)
{
    if (!counting_contains(f, h))
        return 0;
    bg_layout_probe p = bg_layout_probe_first(h, f->m);
    for (;;) {
        (void)counter_update(f, p.x, false);
        if (p.j + 1 == f->k)
            return 1;
        bg_layout_probe_next(&p);
    }
}

/* The first two probes' lines, as the standard variant. */
static void counting_prefetch(const bg_filter *f, bg_hash h)
{
    bg_layout_probe p = bg_layout_probe_first(h, f->m);
    bg__prefetch(&f->words[p.x >> 4]);
    bg__prefetch(&f->words[bg_layout_step(p.x, p.y, p.m) >> 4]);
}

BG__DEFINE_GROUP_OPS(counting, )

/* ---- counter arithmetic, four words at a time ------------------------ */

/* The scans (union, intersection, statistics) work on GCC/Clang vectors of
 * four words: one AVX2 operation each in the AVX2 clone (cpu.h), two SSE2
 * ones otherwise. Every step is lane-wise SWAR over the 16 nibbles of a
 * word, so the vector code is the word-at-a-time code, four words at once:
 * with AVX2, 18 instructions per word for a union against 73 for a
 * scalar loop, 7 for statistics against 23 (docs/PERFORMANCE.md,
 * "Scans"). The words come and go by relaxed atomic loads and stores, one
 * per word, as everywhere else (a vector load would be a data race in C11
 * terms, and scans may run during adds); a tail of fewer than four words
 * fills the other lanes with 0, empty counters that every step maps to 0.
 * (Vectors by pointer: by value they would change the ABI between the
 * clones.) */
typedef uint64_t v4u __attribute__((vector_size(32)));

#define V4(c) ((v4u){(c), (c), (c), (c)})

/* 1 in bit 0 of each nibble of w that is non-zero / equal to 15. */
static inline void nonzero_nibbles(const v4u *w, v4u *out)
{
    *out = (*w | *w >> 1 | *w >> 2 | *w >> 3) & V4(NIBBLE_ONES);
}

static inline void full_nibbles(const v4u *w, v4u *out)
{
    *out = *w & *w >> 1 & *w >> 2 & *w >> 3 & V4(NIBBLE_ONES);
}

/* Saturating sum of the nibbles held one per byte (low nibbles of a and b):
 * each byte's sum is at most 30, so no carry crosses a byte, and bit 4 says
 * it passed 15. Nibble order does not matter, so neither does endianness.
 * (x << 4) - x is x * 15 without a 64-bit vector multiply, which AVX2 lacks. */
static inline void sat_add_lanes(const v4u *a, const v4u *b, v4u *out)
{
    v4u s = *a + *b;
    v4u bit = (s & V4(BYTE_BIT4)) >> 4;
    *out = (s | ((bit << 4) - bit)) & V4(LOW_NIBBLES); /* 0x0f in bytes that overflowed */
}

/* Minimum of the nibbles held one per byte: 16 + a - b is in [1, 31], with
 * bit 4 set exactly when a >= b. */
static inline void min_lanes(const v4u *a, const v4u *b, v4u *out)
{
    v4u bit = (((*a | V4(BYTE_BIT4)) - *b) & V4(BYTE_BIT4)) >> 4;
    v4u ge = (bit << 4) - bit;
    *out = (*b & ge) | (*a & ~ge & V4(LOW_NIBBLES));
}

/* Either of the two above on both nibbles of every byte. */
static inline void by_nibbles(void (*lanes)(const v4u *, const v4u *, v4u *), const v4u *a,
                              const v4u *b, v4u *out)
{
    v4u alo = *a & V4(LOW_NIBBLES), blo = *b & V4(LOW_NIBBLES);
    v4u ahi = *a >> 4 & V4(LOW_NIBBLES), bhi = *b >> 4 & V4(LOW_NIBBLES);
    v4u lo, hi;
    lanes(&alo, &blo, &lo);
    lanes(&ahi, &bhi, &hi);
    *out = lo | hi << 4;
}

static inline void sat_add_words(const v4u *a, const v4u *b, v4u *out)
{
    by_nibbles(sat_add_lanes, a, b, out);
}

static inline void min_words(const v4u *a, const v4u *b, v4u *out)
{
    by_nibbles(min_lanes, a, b, out);
}

static inline uint64_t sat_add_word(uint64_t a, uint64_t b)
{
    v4u va = {a}, vb = {b}, sum;
    sat_add_words(&va, &vb, &sum);
    return sum[0];
}

/* Words [i, i + n) of w, n <= 4, the other lanes 0. Four words go straight
 * into the vector's lanes: written to memory one by one and read back as a
 * vector, they would wait for the stores (no store forwarding from 8-byte
 * stores into a 32-byte load). */
static inline void load4(const _Atomic uint64_t *w, uint64_t i, uint64_t n, v4u *out)
{
    if (n == 4) {
        *out = (v4u){bg__load(&w[i]), bg__load(&w[i + 1]), bg__load(&w[i + 2]),
                     bg__load(&w[i + 3])};
        return;
    }
    uint64_t lane[4] = {0, 0, 0, 0};
    for (uint64_t j = 0; j < n; j++)
        lane[j] = bg__load(&w[i + j]);
    memcpy(out, lane, sizeof lane);
}

/* COUNTING NIBBLES
 * The scans count non-zero (or full) counters by adding the vectors of
 * nonzero_nibbles (full_nibbles), 0 or 1 per nibble, nibble-wise, over
 * runs of at most 15 groups of four words, so no nibble overflows; then
 * nibble_sum adds up a run's 64 nibble sums. That replaces a popcount per
 * word (a libgcc call on the x86-64 baseline; AVX2 has no vector popcount)
 * by one vector add per group. */
#define RUN_GROUPS 15

static inline uint64_t nibble_sum(const v4u *nibbles)
{
    v4u c = (*nibbles & V4(LOW_NIBBLES)) + (*nibbles >> 4 & V4(LOW_NIBBLES)); /* bytes <= 30 */
    c += c >> 8;
    c += c >> 16;
    c += c >> 32;
    c &= V4(0xff); /* the sum of 8 bytes <= 30: at most 240 */
    return c[0] + c[1] + c[2] + c[3];
}

/* The non-zero counters of one word (the rare paths below). */
static inline uint64_t nonzero_count(uint64_t w)
{
    v4u v = {w}, ones;
    nonzero_nibbles(&v, &ones);
    return nibble_sum(&ones);
}

/* Concurrent writers: *w from old to next by compare-and-swap, unless equal.
 * If another writer changed *w since it was loaded, the sum is recomputed
 * from what it left, and *fix gets the change in the non-zero counters
 * before and after against what the group counted (mod 2^64). */
static inline void cas_word(_Atomic uint64_t *w, uint64_t old, uint64_t next, uint64_t s,
                            uint64_t fix[2])
{
    uint64_t seen = old, want = next;
    while (want != seen &&
           !atomic_compare_exchange_weak_explicit(w, &seen, want, memory_order_relaxed,
                                                  memory_order_relaxed))
        want = sat_add_word(seen, s);
    if (seen != old) {
        fix[0] += nonzero_count(seen) - nonzero_count(old);
        fix[1] += nonzero_count(want) - nonzero_count(next);
    }
}

/* One word of a concurrent union whose group loaded it as `loaded`: what a
 * union of s stores, with fix[] as above. Tests call it with *w already
 * changed, the race only threads reach otherwise. */
uint64_t bg__counting_union_word(_Atomic uint64_t *w, uint64_t loaded, uint64_t s,
                                 uint64_t fix[2])
{
    cas_word(w, loaded, sat_add_word(loaded, s), s, fix);
    return bg__load(w);
}

/* Words [i, i + n) of dst merged with src's, n <= 4; the non-zero counters
 * before and after added nibble-wise to *before and *after. With n = 4 the
 * lanes are named one by one: an index the compiler cannot fold would keep
 * the vectors in memory, and every group would wait for its stores. */
static inline void merge_group(_Atomic uint64_t *d, const _Atomic uint64_t *from, uint64_t i,
                               uint64_t n, bool is_union, bool plain, v4u *before, v4u *after,
                               uint64_t fix[2])
{
    v4u s, old, next;
    load4(from, i, n, &s);
    load4(d, i, n, &old);
    if (is_union)
        sat_add_words(&old, &s, &next);
    else
        min_words(&old, &s, &next);
    if (n == 4 && plain) {
        atomic_store_explicit(&d[i], next[0], memory_order_relaxed);
        atomic_store_explicit(&d[i + 1], next[1], memory_order_relaxed);
        atomic_store_explicit(&d[i + 2], next[2], memory_order_relaxed);
        atomic_store_explicit(&d[i + 3], next[3], memory_order_relaxed);
    } else if (n == 4) {
        cas_word(&d[i], old[0], next[0], s[0], fix);
        cas_word(&d[i + 1], old[1], next[1], s[1], fix);
        cas_word(&d[i + 2], old[2], next[2], s[2], fix);
        cas_word(&d[i + 3], old[3], next[3], s[3], fix);
    } else {
        for (uint64_t j = 0; j < n; j++) {
            if (plain)
                atomic_store_explicit(&d[i + j], next[j], memory_order_relaxed);
            else
                cas_word(&d[i + j], old[j], next[j], s[j], fix);
        }
    }
    v4u nb, na;
    nonzero_nibbles(&old, &nb);
    nonzero_nibbles(&next, &na);
    *before += nb;
    *after += na;
}

/* Union: each dst word becomes the saturating sum. Single writer: plain
 * stores. Concurrent writers: one compare-and-swap per changed word, its
 * sum recomputed from the word it found if an add or remove got there
 * first, so none of theirs is lost or double-counted. Intersection: the
 * minimum, plain stores (not concurrent-safe, filter.h). Counters past m
 * are 0 in both, and stay so. */
BG__AVX2_CLONE static void counting_merge(bg_filter *dst, const bg_filter *src, bool is_union,
                                          uint64_t *before, uint64_t *after)
{
    /* local copies, as filter.c's or_words */
    _Atomic uint64_t *d = dst->words;
    const _Atomic uint64_t *from = src->words;
    uint64_t count = dst->nwords, whole = count & ~UINT64_C(3), fix[2] = {0, 0}, b = 0, a = 0;
    bool plain = !is_union || dst->single_writer;
    for (uint64_t i = 0; i < count;) {
        uint64_t end = whole - i > 4 * RUN_GROUPS ? i + 4 * RUN_GROUPS : whole;
        v4u nb = V4(0), na = V4(0);
        /* one loop per case, each with constant flags, so the inlined group
         * has no branch on them; the tail takes the flags as they are */
        if (!is_union)
            for (; i < end; i += 4)
                merge_group(d, from, i, 4, false, true, &nb, &na, fix);
        else if (plain)
            for (; i < end; i += 4)
                merge_group(d, from, i, 4, true, true, &nb, &na, fix);
        else
            for (; i < end; i += 4)
                merge_group(d, from, i, 4, true, false, &nb, &na, fix);
        if (i == whole && whole < count) {
            merge_group(d, from, i, count - whole, is_union, plain, &nb, &na, fix);
            i = count;
        }
        b += nibble_sum(&nb);
        a += nibble_sum(&na);
    }
    *before += b + fix[0];
    *after += a + fix[1];
}

/* ---- statistics -------------------------------------------------------- */

/* The standard variant's estimate, with X non-zero counters for X set bits:
 *   n = ln(1 - X / m) / (k ln(1 - 1/m))   (Swamidass & Baldi 2007). */
static double counting_items_for_bits(const bg_filter *f, double x)
{
    double m = (double)f->m;
    return x >= m ? INFINITY : log1p(-x / m) / ((double)f->k * log1p(-1.0 / m));
}

/* One pass: non-zero counters (the fill), saturated ones, and from the fill
 * the rate (X / m)^k and the cardinality, as the standard variant. */
/* Words [i, i + n) into the tallies, n <= 4. */
static inline void estimate_group(const _Atomic uint64_t *words, uint64_t i, uint64_t n,
                                  v4u *nonzero, v4u *saturated)
{
    v4u w, x;
    load4(words, i, n, &w);
    nonzero_nibbles(&w, &x);
    *nonzero += x;
    full_nibbles(&w, &x);
    *saturated += x;
}

BG__AVX2_CLONE static void counting_estimate(const bg_filter *f, bg_filter_stats *st)
{
    const _Atomic uint64_t *words = f->words;
    uint64_t count = f->nwords, whole = count & ~UINT64_C(3), nonzero = 0, saturated = 0;
    for (uint64_t i = 0; i < count;) {
        uint64_t end = whole - i > 4 * RUN_GROUPS ? i + 4 * RUN_GROUPS : whole;
        v4u nz = V4(0), full = V4(0);
        for (; i < end; i += 4)
            estimate_group(words, i, 4, &nz, &full);
        if (i == whole && whole < count) {
            estimate_group(words, i, count - whole, &nz, &full);
            i = count;
        }
        nonzero += nibble_sum(&nz);
        saturated += nibble_sum(&full);
    }
    st->bits_set = nonzero;
    st->saturated = saturated;
    st->estimated_fp_rate = pow((double)nonzero / (double)f->m, (double)f->k);
    st->estimated_items = counting_items_for_bits(f, (double)nonzero);
}

const bg__filter_ops bg__counting_ops = {
    .variant = BG_VARIANT_COUNTING,
    .name = "counting",
    .cell_bits = 4,
    BG__ARRAY_OPS(counting),
    .run_keys = counting_run_keys,
    .items_for_bits = counting_items_for_bits,
    .estimate = counting_estimate,
    .remove = counting_remove,
    .merge = counting_merge,
};
