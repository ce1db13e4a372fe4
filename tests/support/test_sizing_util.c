/* SPDX-License-Identifier: BSD-3-Clause */
/* The definitions behind test_sizing_util.h (its comments say what each
 * does). */
#include "test_sizing_util.h"

const bg_variant tu_sizing_variants[TU_SIZING_NVARIANTS] = {BG_VARIANT_STANDARD,
                                                            BG_VARIANT_BLOCKED};

const char *tu_variant_name(bg_variant v)
{
    return v == BG_VARIANT_STANDARD ? "standard" : v == BG_VARIANT_BLOCKED ? "blocked" : "?";
}

uint64_t tu_unit_bits(bg_variant v)
{
    return v == BG_VARIANT_BLOCKED ? BG_BLOCK_BITS : 1;
}

uint32_t tu_max_k(bg_variant v)
{
    return v == BG_VARIANT_BLOCKED ? BG_BLOCKED_MAX_K : BG_MAX_K;
}

uint64_t tu_min_bits(bg_variant v)
{
    return v == BG_VARIANT_BLOCKED ? BG_BLOCK_BITS : BG_MIN_BITS;
}

uint64_t tu_round_m(bg_variant v, uint64_t m)
{
    if (m < BG_MIN_BITS)
        m = BG_MIN_BITS;
    uint64_t u = tu_unit_bits(v);
    return (m + u - 1) / u * u;
}

double tu_fp(bg_variant v, uint64_t m, uint64_t n, uint32_t k)
{
    return bg_sizing_fp_rate(v, m, n, k);
}

uint64_t tu_textbook_m(uint64_t n, double p)
{
    return (uint64_t)ceill(-(long double)n * logl((long double)p) / (TU_LN2L * TU_LN2L));
}

int tu_solve(bg_variant v, bg_sizing *s, uint64_t n, double p, uint64_t m, uint32_t k)
{
    s->n = n;
    s->p = p;
    s->m = m;
    s->k = k;
    return bg_sizing_solve(v, s, 0);
}

double tu_lib_rate(bg_variant v, uint64_t m, uint64_t n)
{
    bg_sizing s;
    TU_EQ_I(tu_solve(v, &s, n, 0, m, 0), BG_OK);
    return s.p;
}

void tu_check_common(bg_variant v, const bg_sizing *s)
{
    TU_TRUE(s->m >= tu_min_bits(v));
    TU_EQ_U(s->m % tu_unit_bits(v), 0);
    TU_TRUE(s->k >= 1 && s->k <= tu_max_k(v));
    TU_TRUE(s->n >= 1);
    TU_EQ_D(s->p, tu_fp(v, s->m, s->n, s->k));
    TU_TRUE(s->p >= 0 && s->p <= 1);
}
