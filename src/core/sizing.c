/* SPDX-License-Identifier: BSD-3-Clause */
/* Sizing math. The formulas, their sources and their units are in
 * <bloomgate/sizing.h>; this file states how each is evaluated.
 *
 * Everything is computed in double (53-bit mantissa: exact for m, n below
 * 2^53, and within one part in 2^53 beyond, far below any rounding that
 * matters here) and converted to uint64_t only after a range check, since
 * converting a double >= 2^64 to uint64_t is undefined behaviour in C. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include <bloomgate/sizing.h>

#define BG__LN2 0.69314718055994530942
#define BG__LN2_SQUARED (BG__LN2 * BG__LN2)
#define BG__TWO_POW_64 18446744073709551616.0

/* Standard filter: p = (1 - (1 - 1/m)^(k n))^k. expm1/log1p keep full
 * precision when k n / m is small (a nearly empty filter). */
static double fp_standard(double m, double n, double k)
{
    if (n <= 0)
        return 0; /* no key, no bit set (and m = 1 would give 0 * -inf) */
    double fill = -expm1(k * n * log1p(-1.0 / m));
    return pow(fill, k);
}

/* Blocked filter (blocked.c: k <= 8 probes in k consecutive words, mod 8,
 * of one 512-bit block, starting at a random word, one uniform bit of 64 in
 * each). Block loads are Binomial(n, 512 / m), which is Poisson(lambda =
 * 512 n / m) to within O(1/blocks) (Putze, Sanders, Singler 2007). By
 * symmetry the query's probes are in words R = {0 .. k-1}. It is a false
 * positive when all k of its bits are set; by inclusion-exclusion over the
 * set S of its probes that are still clear,
 *   p = sum_{S subset of R} (-1)^|S| P(every bit of S is clear).
 * A key starting at word s covers words W_s = {s .. s+k-1 mod 8} and misses
 * S's bits with probability q^|S & W_s|, q = 63/64; averaged over s that is
 * phi_S, so i keys miss them with probability phi_S^i, and over Poisson(lambda)
 * keys with probability exp(lambda (phi_S - 1)). Hence the exact closed form
 *   p(m, n, k) = sum_{S subset of R} (-1)^|S| exp(lambda (phi_S - 1)),
 *   phi_S = (1/8) sum_{s=0..7} q^|S & W_s|,
 * 2^k <= 256 terms. The terms are up to 1 while their sum is p, so the sum
 * cancels: in double its relative error reaches 7e-6 at p = 1e-9 and 0.35%
 * at 1e-12. It is therefore summed in long double (64-bit mantissa on x86:
 * relative error 5e-9 at p = 1e-9 and 1.4e-6 at 1e-12, measured against a
 * __float128 evaluation), and the solver refuses a blocked p below
 * BG_BLOCKED_MIN_P, where it could no longer promise the rate (the standard
 * variant, 16x smaller there, is the right choice anyway). */
static double fp_blocked(double m, double n, unsigned k)
{
    long double lambda = (long double)n * BG_BLOCK_BITS / (long double)m;
    if (lambda <= 0)
        return 0;
    long double q_pow[BG_BLOCKED_MAX_K + 1];
    q_pow[0] = 1;
    for (unsigned c = 1; c <= BG_BLOCKED_MAX_K; c++)
        q_pow[c] = q_pow[c - 1] * (63.0L / 64.0L);
    unsigned window[8];
    for (unsigned s = 0; s < 8; s++) {
        window[s] = 0;
        for (unsigned j = 0; j < k; j++)
            window[s] |= 1u << ((s + j) & 7);
    }
    long double sum = 0;
    for (unsigned set = 0; set < (1u << k); set++) {
        long double phi = 0;
        for (unsigned s = 0; s < 8; s++)
            phi += q_pow[__builtin_popcount(set & window[s])];
        long double term = expl(lambda * (phi / 8 - 1));
        sum += __builtin_popcount(set) & 1 ? -term : term;
    }
    return sum < 0 ? 0 : sum > 1 ? 1 : (double)sum;
}

static double fp_model(bg_variant v, double m, double n, unsigned k)
{
    return v == BG_VARIANT_BLOCKED ? fp_blocked(m, n, k) : fp_standard(m, n, k);
}

/* A counting filter's m counters stand where a standard filter's m bits do:
 * the same model and the same solver. */
static bg_variant math_variant(bg_variant v)
{
    return v == BG_VARIANT_COUNTING ? BG_VARIANT_STANDARD : v;
}

static bool variant_known(bg_variant v)
{
    return v == BG_VARIANT_STANDARD || v == BG_VARIANT_BLOCKED;
}

/* The most probes per key the variant supports. */
static unsigned max_k(bg_variant v)
{
    return v == BG_VARIANT_BLOCKED ? BG_BLOCKED_MAX_K : BG_MAX_K;
}

double bg_sizing_fp_rate(bg_variant variant, uint64_t m, uint64_t n, uint32_t k)
{
    variant = math_variant(variant);
    if (!variant_known(variant) || m == 0 || k == 0 || k > max_k(variant))
        return NAN;
    return fp_model(variant, (double)m, (double)n, k);
}

/* The k that minimises p for m bits and n keys. Standard: the continuous
 * optimum is (m / n) ln 2 (the derivative's root); the textbook rounds it,
 * which is the best integer almost always, but not always (n = 1000,
 * m = 2080: round gives 1, and 2 is lower by 3e-4 relative), so the better
 * of its floor and ceiling is taken. Blocked: the
 * model's p is unimodal in k, so walk up from 1 while it falls; the optimum
 * is a little below the standard one because probes share a block, and at
 * most BG_BLOCKED_MAX_K. */
static unsigned best_k(bg_variant v, double m, double n)
{
    if (n <= 0)
        return 1;
    if (v == BG_VARIANT_STANDARD) {
        double x = m / n * BG__LN2;
        if (x >= BG_MAX_K)
            return BG_MAX_K;
        if (x < 1)
            return 1;
        unsigned lo = (unsigned)floor(x);
        return fp_standard(m, n, lo + 1) < fp_standard(m, n, lo) ? lo + 1 : lo;
    }
    unsigned k = 1;
    double best = fp_blocked(m, n, 1);
    while (k < BG_BLOCKED_MAX_K) {
        double next = fp_blocked(m, n, k + 1);
        if (next >= best)
            break;
        best = next;
        k++;
    }
    return k;
}

/* Rounds m up to what the variant can hold: at least BG_MIN_BITS, and for
 * the blocked variant a whole number of 512-bit blocks. */
static double round_bits(bg_variant v, double m)
{
    m = ceil(m);
    if (m < BG_MIN_BITS)
        m = BG_MIN_BITS;
    if (v == BG_VARIANT_BLOCKED)
        m = ceil(m / BG_BLOCK_BITS) * BG_BLOCK_BITS;
    return m;
}

/* m as the variant stores it, in integers: at least BG_MIN_BITS and, for the
 * blocked variant, whole blocks; then checked against 2^64 and the cap.
 * Integer arithmetic, so that a given m above 2^53 is never shrunk by a
 * trip through double. */
static int round_bits_exact(bg_variant v, uint64_t m, uint64_t max_bits, uint64_t *out)
{
    /* An m above the cap is BG_ETOOBIG for every variant, before rounding
     * can overflow (the cap is at most BG_MAX_BITS = 2^63, so m <= cap
     * rounds up to whole blocks without wrapping). */
    if (m > max_bits)
        return BG_ETOOBIG;
    if (m < BG_MIN_BITS)
        m = BG_MIN_BITS;
    if (v == BG_VARIANT_BLOCKED)
        m = (m + BG_BLOCK_BITS - 1) / BG_BLOCK_BITS * BG_BLOCK_BITS;
    if (m > max_bits)
        return BG_ETOOBIG;
    *out = m;
    return BG_OK;
}

/* A computed (double) m to bits, rounding up: above 2^53 a double is coarser
 * than one bit, so one ulp is added so that the result is never below the
 * real value. */
static int bits_from_double(bg_variant v, double m, uint64_t max_bits, uint64_t *out)
{
    m = ceil(m);
    if (m >= 9007199254740992.0)
        m = nextafter(m, INFINITY);
    if (!(m < BG__TWO_POW_64))
        return BG_EOVERFLOW;
    return round_bits_exact(v, (uint64_t)m, max_bits, out);
}

static int check_bits(double m, double max_bits)
{
    if (!(m < BG__TWO_POW_64))
        return BG_EOVERFLOW;
    if (m > max_bits)
        return BG_ETOOBIG;
    return BG_OK;
}

/* p at (m, n) with k probes, or with the best k when k is 0. */
static double fp_at(bg_variant v, double m, double n, unsigned k)
{
    return fp_model(v, m, n, k ? k : best_k(v, m, n));
}

/* The least m (rounded for the variant) with fp_at(m, n, k) <= p. The
 * standard variant has closed forms:
 *   best k:  m = -n ln p / (ln 2)^2,
 *   fixed k: p = (1 - e^(-k n / m))^k  <=>  m = -k n / ln(1 - p^(1/k));
 * after the textbook rounding of k the rate can land a hair above p, so both
 * variants finish with a search: grow m until p is reached, then bisect on
 * whole units (bits, or blocks of 512) for the least such m. */
static int least_bits(bg_variant v, double n, double p, unsigned k, double max_bits, double *m_out)
{
    double m0 = k ? -(double)k * n / log1p(-pow(p, 1.0 / k)) : -n * log(p) / BG__LN2_SQUARED;
    int rc = check_bits(round_bits(v, m0), max_bits);
    if (rc != BG_OK)
        return rc;
    if (v == BG_VARIANT_STANDARD && k == 0 && p <= 0.5 &&
        best_k(v, round_bits(v, m0), n) < BG_MAX_K) {
        /* The literature's definition, kept exact so that
         * golden values (n = 1000, p = 0.01: m = 9586) hold. It is the
         * optimum only where its k, (m/n) ln 2 = -log2 p, is at least 1,
         * that is p <= 1/2: above, k is clamped to 1 and that m misses p
         * by far (p = 0.9: 0.9895 with k = 1), so the search below sizes
         * it. */
        *m_out = round_bits(v, m0);
        return BG_OK;
    }
    double unit = v == BG_VARIANT_BLOCKED ? BG_BLOCK_BITS : 1;
    double lo = floor(round_bits(v, m0) / unit / 2); /* in units; fp_at(lo) > p assumed */
    double hi = round_bits(v, m0) / unit;
    double top = floor(max_bits / unit); /* the cap, in units */
    while (fp_at(v, hi * unit, n, k) > p) {
        if (hi >= top)
            return BG_ETOOBIG; /* even the largest allowed m misses p */
        lo = hi;
        hi = fmin(ceil(hi * 1.25), top);
    }
    while (hi - lo > 1) {
        double mid = floor((lo + hi) / 2);
        if (mid <= lo || mid >= hi)
            break; /* above 2^53 doubles are > 1 apart: as exact as they get */
        if (fp_at(v, mid * unit, n, k) <= p)
            hi = mid;
        else
            lo = mid;
    }
    *m_out = round_bits(v, hi * unit);
    return BG_OK;
}

/* The most keys m bits hold at rate <= p (with k, or with the best k): p is
 * increasing in n, so bisect n in [0, 2 n0 + 2], where n0 is the standard
 * closed form n0 = m (ln 2)^2 / -ln p (fixed k: -m ln(1 - p^(1/k)) / k). */
static double most_items(bg_variant v, double m, double p, unsigned k)
{
    double n0 = k ? -m * log1p(-pow(p, 1.0 / k)) / k : m * BG__LN2_SQUARED / -log(p);
    double lo = 0, hi = ceil(2 * n0 + 2);
    while (fp_at(v, m, hi, k) <= p)
        hi *= 2;
    while (hi - lo > 1) {
        double mid = floor((lo + hi) / 2);
        if (mid <= lo || mid >= hi)
            break; /* above 2^53 doubles are > 1 apart: as exact as they get */
        if (fp_at(v, m, mid, k) <= p)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int bg_sizing_solve(bg_variant variant, bg_sizing *s, uint64_t max_bits)
{
    variant = math_variant(variant);
    if (s == NULL)
        return BG_EINVAL;
    if (!variant_known(variant))
        return BG_EVARIANT;
    uint64_t cap = max_bits ? max_bits : BG_DEFAULT_MAX_BYTES * 8;
    if (cap > BG_MAX_BITS)
        cap = BG_MAX_BITS;

    bool has_n = s->n != 0, has_m = s->m != 0, has_k = s->k != 0;
    bool has_p = s->p != 0;
    if (has_p && !(s->p > 0 && s->p < 1)) /* also rejects NaN */
        return BG_EINVAL;
    if (has_p && variant == BG_VARIANT_BLOCKED && s->p < BG_BLOCKED_MIN_P)
        return BG_EINVAL;
    if (s->k > max_k(variant))
        return BG_EINVAL;
    int known = has_n + has_m + has_k + has_p;
    if (known < 2)
        return BG_EINVAL;
    if (!has_n && !has_m)
        return BG_EUNDERDET; /* only p and k */
    if (has_n && has_m && has_p)
        return BG_EINVAL; /* overdetermined: n and m already fix p */

    double n = (double)s->n, m, p = s->p;
    uint64_t m_bits;
    unsigned k = s->k;
    int rc = BG_OK;

    if (has_m) {
        if ((rc = round_bits_exact(variant, s->m, cap, &m_bits)) != BG_OK)
            return rc;
        m = (double)m_bits;
        if (!has_n) {
            if (has_p)
                n = most_items(variant, m, p, k);
            else /* m and k: the n for which this k is optimal */
                n = floor(m * BG__LN2 / k);
            if (n < 1)
                return BG_EINVAL; /* m cannot hold even one key at p */
            if (n >= 0x1p64)
                return BG_EOVERFLOW; /* more keys than a uint64_t counts */
        }
    } else {
        if (has_p)
            rc = least_bits(variant, n, p, k, (double)cap, &m);
        else /* n and k: the m for which this k is optimal */
            m = (double)k * n / BG__LN2;
        if (rc != BG_OK || (rc = bits_from_double(variant, m, cap, &m_bits)) != BG_OK)
            return rc;
        m = (double)m_bits;
    }
    if (!has_k)
        k = best_k(variant, m, n); /* from the final, rounded m */

    if (!has_n) /* a given n stays exact, even above 2^53 */
        s->n = (uint64_t)n;
    s->m = m_bits;
    s->k = k;
    s->p = fp_model(variant, m, n, k);
    return BG_OK;
}
