/* SPDX-License-Identifier: BSD-3-Clause */
/* bg_sizing_solve's errors and extremes (<bloomgate/sizing.h>): bad
 * arguments and caps, the same through bg_filter_new, the blocked variant's
 * space overhead, tiny rates and sizes beyond 2^53. The solutions
 * themselves are test_sizing.c. */
#include "test_util.h"
#include "test_sizing_util.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- bad arguments --------------------------------------------------- */

/* Expects `rc` from solving `in` and *s untouched (bit for bit). */
static void expect_error_at(int line, bg_variant v, bg_sizing in, uint64_t max_bits, int rc)
{
    bg_sizing s = in;
    int got = bg_sizing_solve(v, &s, max_bits);
    if (got != rc)
        TU_FAIL_("line %d: variant %d: got %s, want %s\n", line, (int)v, bg_err_name(got),
                 bg_err_name(rc));
    if (memcmp(&s, &in, sizeof s) != 0)
        TU_FAIL_("line %d: *s changed on error\n", line);
}
#define expect_error(...) expect_error_at(__LINE__, __VA_ARGS__)

static void bad_arguments(void **state)
{
    (void)state;
    tu_ctx("NULL");
    TU_EQ_I(bg_sizing_solve(BG_VARIANT_STANDARD, NULL, 0), BG_EINVAL);
    TU_EQ_I(bg_sizing_solve(BG_VARIANT_BLOCKED, NULL, 0), BG_EINVAL);

    tu_ctx("unknown variant");
    expect_error((bg_variant)0, (bg_sizing){.n = 1000, .p = 0.01}, 0, BG_EVARIANT);
    expect_error((bg_variant)5, (bg_sizing){.n = 1000, .p = 0.01}, 0, BG_EVARIANT);
    expect_error(BG_VARIANT_SCALABLE, (bg_sizing){.n = 1000, .p = 0.01}, 0, BG_EVARIANT);

    tu_ctx("counting sizes as standard");
    bg_sizing sc = {.n = 1000, .p = 0.01}, ss = sc;
    TU_EQ_I(bg_sizing_solve(BG_VARIANT_COUNTING, &sc, 0), BG_OK);
    TU_EQ_I(bg_sizing_solve(BG_VARIANT_STANDARD, &ss, 0), BG_OK);
    TU_EQ_U(sc.m, 9586);
    TU_EQ_U(sc.k, 7);
    TU_EQ_U(sc.m, ss.m);
    expect_error((bg_variant)-7, (bg_sizing){.n = 1000, .p = 0.01}, 0, BG_EVARIANT);

    for (size_t vi = 0; vi < TU_SIZING_NVARIANTS; vi++) {
        bg_variant v = tu_sizing_variants[vi];
        tu_ctx("%s bad p", tu_variant_name(v));
        static const double bad_p[] = {-0.01, -1, 1, 1.0000001, 2, NAN, INFINITY, -INFINITY};
        for (size_t i = 0; i < LEN(bad_p); i++) {
            tu_ctx("%s bad p=%g", tu_variant_name(v), bad_p[i]);
            expect_error(v, (bg_sizing){.n = 1000, .p = bad_p[i]}, 0, BG_EINVAL);
            expect_error(v, (bg_sizing){.m = 10000, .p = bad_p[i]}, 0, BG_EINVAL);
            expect_error(v, (bg_sizing){.n = 1000, .m = 10000, .p = bad_p[i]}, 0, BG_EINVAL);
        }
        /* p = 0 (and -0.0) is "unknown": n and m alone then solve. */
        tu_ctx("%s p=0 is unknown", tu_variant_name(v));
        bg_sizing s = {.n = 1000, .m = 10000, .p = 0};
        TU_EQ_I(bg_sizing_solve(v, &s, 0), BG_OK);
        TU_TRUE(s.p > 0 && s.p < 1);
        s = (bg_sizing){.n = 1000, .m = 10000, .p = -0.0};
        TU_EQ_I(bg_sizing_solve(v, &s, 0), BG_OK);
        expect_error(v, (bg_sizing){.n = 1000, .p = 0}, 0, BG_EINVAL);

        tu_ctx("%s k > its most", tu_variant_name(v));
        expect_error(v, (bg_sizing){.n = 1000, .k = BG_MAX_K + 1}, 0, BG_EINVAL);
        expect_error(v, (bg_sizing){.n = 1000, .m = 10000, .k = BG_MAX_K + 1}, 0, BG_EINVAL);
        expect_error(v, (bg_sizing){.n = 1000, .k = tu_max_k(v) + 1}, 0, BG_EINVAL);
        expect_error(v, (bg_sizing){.m = 10000, .k = tu_max_k(v) + 1}, 0, BG_EINVAL);
        expect_error(v, (bg_sizing){.m = 10000, .p = 0.01, .k = tu_max_k(v) + 1}, 0, BG_EINVAL);
        expect_error(v, (bg_sizing){.n = 1000, .p = 0.01, .k = UINT32_MAX}, 0, BG_EINVAL);

        tu_ctx("%s fewer than two knowns", tu_variant_name(v));
        expect_error(v, (bg_sizing){0}, 0, BG_EINVAL);
        expect_error(v, (bg_sizing){.n = 1000}, 0, BG_EINVAL);
        expect_error(v, (bg_sizing){.p = 0.01}, 0, BG_EINVAL);
        expect_error(v, (bg_sizing){.m = 10000}, 0, BG_EINVAL);
        expect_error(v, (bg_sizing){.k = 7}, 0, BG_EINVAL);

        tu_ctx("%s only p and k", tu_variant_name(v));
        expect_error(v, (bg_sizing){.p = 0.01, .k = 7}, 0, BG_EUNDERDET);
        expect_error(v, (bg_sizing){.p = 0.5, .k = 1}, 0, BG_EUNDERDET);

        tu_ctx("%s m cannot hold one key at p", tu_variant_name(v));
        expect_error(v, (bg_sizing){.m = 64, .p = 1e-30}, 0, BG_EINVAL);
        expect_error(v, (bg_sizing){.m = 64, .p = 1e-30, .k = 3}, 0, BG_EINVAL);

        tu_ctx("%s overflow", tu_variant_name(v));
        expect_error(v, (bg_sizing){.n = UINT64_MAX, .p = 0.01}, 0, BG_EOVERFLOW);
        expect_error(v, (bg_sizing){.n = UINT64_MAX, .p = 0.01}, UINT64_MAX, BG_EOVERFLOW);
        expect_error(v, (bg_sizing){.n = UINT64_MAX, .k = tu_max_k(v)}, 0, BG_EOVERFLOW);
        expect_error(v, (bg_sizing){.n = UINT64_MAX, .p = 0.01, .k = 7}, 0, BG_EOVERFLOW);

        tu_ctx("%s above the cap", tu_variant_name(v));
        /* n = 1e6, p = 0.01 needs ~9.6e6 bits. */
        expect_error(v, (bg_sizing){.n = 1000000, .p = 0.01}, 1000000, BG_ETOOBIG);
        expect_error(v, (bg_sizing){.n = 1000000, .p = 0.01, .k = 7}, 1000000, BG_ETOOBIG);
        expect_error(v, (bg_sizing){.n = 1000000, .k = 7}, 1000000, BG_ETOOBIG);
        expect_error(v, (bg_sizing){.m = 1000001, .k = 7}, 1000000, BG_ETOOBIG);
        expect_error(v, (bg_sizing){.m = 2000000, .n = 5}, 1000000, BG_ETOOBIG);
        expect_error(v, (bg_sizing){.m = 2000000, .p = 0.01}, 1000000, BG_ETOOBIG);
        /* The default cap: BG_DEFAULT_MAX_BYTES * 8 bits. */
        uint64_t cap = BG_DEFAULT_MAX_BYTES * 8;
        expect_error(v, (bg_sizing){.m = cap + BG_BLOCK_BITS, .k = 7}, 0, BG_ETOOBIG);
        expect_error(v, (bg_sizing){.n = 100000000000, .p = 0.001}, 0, BG_ETOOBIG);
        s = (bg_sizing){.m = cap, .k = 7};
        TU_EQ_I(bg_sizing_solve(v, &s, 0), BG_OK);
        TU_EQ_U(s.m, cap);
        /* The cap itself never exceeds BG_MAX_BITS, whatever max_bits says. */
        expect_error(v, (bg_sizing){.m = BG_MAX_BITS + 4096, .k = 7}, UINT64_MAX, BG_ETOOBIG);
        /* Above the cap is BG_ETOOBIG for every variant, even where rounding
         * up to whole blocks would pass 2^64. */
        expect_error(v, (bg_sizing){.m = UINT64_MAX, .k = 7}, UINT64_MAX, BG_ETOOBIG);
        expect_error(v, (bg_sizing){.m = UINT64_MAX - 1, .n = 1000}, 0, BG_ETOOBIG);
        s = (bg_sizing){.m = BG_MAX_BITS, .k = 7};
        TU_EQ_I(bg_sizing_solve(v, &s, UINT64_MAX), BG_OK);
        TU_EQ_U(s.m, BG_MAX_BITS);
    }

    /* The cap is inclusive: m = 9586 fits a cap of 9586, not of 9585. */
    tu_ctx("cap boundary");
    bg_sizing s = {.n = 1000, .p = 0.01};
    TU_EQ_I(bg_sizing_solve(BG_VARIANT_STANDARD, &s, 9586), BG_OK);
    TU_EQ_U(s.m, 9586);
    expect_error(BG_VARIANT_STANDARD, (bg_sizing){.n = 1000, .p = 0.01}, 9585, BG_ETOOBIG);
    expect_error(BG_VARIANT_BLOCKED, (bg_sizing){.n = 1000, .m = 1000}, 1000, BG_ETOOBIG);
    s = (bg_sizing){.n = 1000, .m = 1000};
    TU_EQ_I(bg_sizing_solve(BG_VARIANT_BLOCKED, &s, 1024), BG_OK);
    TU_EQ_U(s.m, 1024);
}

/* The same caps and errors through bg_filter_new: *out is NULL on error. */
static void filter_new_sizing_errors(void **state)
{
    (void)state;
    for (size_t vi = 0; vi < TU_SIZING_NVARIANTS; vi++) {
        bg_variant v = tu_sizing_variants[vi];
        bg_filter *f = (bg_filter *)&f; /* not NULL, so that the reset shows */
        tu_ctx("%s bg_filter_new max_bytes", tu_variant_name(v));
        bg_filter_options o = {.variant = v, .capacity = 1000000, .error_rate = 0.01,
                               .max_bytes = 1000000};
        TU_EQ_I(bg_filter_new(&f, &o), BG_ETOOBIG);
        TU_TRUE(f == NULL);
        o.max_bytes = 2000000;
        TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
        TU_TRUE(f != NULL);
        TU_TRUE(bg_filter_bytes(f) <= 2000000);
        bg_filter_free(f);

        o = (bg_filter_options){.variant = v, .bits = 8193, .hashes = 3, .max_bytes = 1024};
        TU_EQ_I(bg_filter_new(&f, &o), BG_ETOOBIG);
        TU_TRUE(f == NULL);
        o.bits = 8192;
        TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
        TU_EQ_U(bg_filter_bytes(f), 1024);
        bg_filter_free(f);
        o = (bg_filter_options){.variant = v, .bits = UINT64_MAX, .hashes = 7};
        TU_EQ_I(bg_filter_new(&f, &o), BG_ETOOBIG);
        TU_TRUE(f == NULL);

        /* The array is whole 64-bit words: a cap that is not a multiple of
         * 8 bytes is rounded down, so bytes never exceed it (1199 let a
         * 1200-byte array through). */
        o = (bg_filter_options){.variant = v, .capacity = 1000, .error_rate = 0.01};
        TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
        uint64_t need = bg_filter_bytes(f);
        bg_filter_free(f);
        o.max_bytes = need - 1;
        TU_EQ_I(bg_filter_new(&f, &o), BG_ETOOBIG);
        o.max_bytes = need;
        TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
        bg_filter_free(f);
        o.max_bytes = 7;
        TU_EQ_I(bg_filter_new(&f, &o), BG_ETOOBIG);

        /* The default cap (BG_DEFAULT_MAX_BYTES) applies with max_bytes 0. */
        o = (bg_filter_options){.variant = v, .capacity = 100000000000, .error_rate = 0.001};
        f = (bg_filter *)&f;
        TU_EQ_I(bg_filter_new(&f, &o), BG_ETOOBIG);
        TU_TRUE(f == NULL);

        tu_ctx("%s bg_filter_new sizing errors", tu_variant_name(v));
        o = (bg_filter_options){.variant = v, .capacity = UINT64_MAX, .error_rate = 0.01};
        f = (bg_filter *)&f;
        TU_EQ_I(bg_filter_new(&f, &o), BG_EOVERFLOW);
        TU_TRUE(f == NULL);
        o = (bg_filter_options){.variant = v, .error_rate = 0.01, .hashes = 7};
        TU_EQ_I(bg_filter_new(&f, &o), BG_EUNDERDET);
        TU_TRUE(f == NULL);
        o = (bg_filter_options){.variant = v, .capacity = 1000, .error_rate = 1.5};
        TU_EQ_I(bg_filter_new(&f, &o), BG_EINVAL);
        o = (bg_filter_options){.variant = v, .capacity = 1000};
        TU_EQ_I(bg_filter_new(&f, &o), BG_EINVAL);
        o = (bg_filter_options){.variant = v, .capacity = 1000, .hashes = BG_MAX_K + 1};
        TU_EQ_I(bg_filter_new(&f, &o), BG_EINVAL);
        o = (bg_filter_options){.variant = v, .capacity = 1000, .hashes = tu_max_k(v) + 1};
        TU_EQ_I(bg_filter_new(&f, &o), BG_EINVAL);
        TU_TRUE(f == NULL);
        o = (bg_filter_options){.variant = v, .bits = 1 << 20, .hashes = tu_max_k(v)};
        TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
        TU_EQ_U(bg_filter_hashes(f), tu_max_k(v));
        bg_filter_free(f);
    }
    bg_filter *f = NULL;
    tu_ctx("bg_filter_new bad variant / concurrency / NULL");
    bg_filter_options o = {.variant = (bg_variant)9, .capacity = 1000, .error_rate = 0.01};
    TU_EQ_I(bg_filter_new(&f, &o), BG_EVARIANT);
    TU_TRUE(f == NULL);
    o = (bg_filter_options){.capacity = 1000, .error_rate = 0.01, .concurrency = (bg_concurrency)2};
    TU_EQ_I(bg_filter_new(&f, &o), BG_EINVAL);
    TU_TRUE(f == NULL);
    o = (bg_filter_options){.capacity = 1000, .error_rate = 0.01};
    TU_EQ_I(bg_filter_new(NULL, &o), BG_EINVAL);
    f = (bg_filter *)&f;
    TU_EQ_I(bg_filter_new(&f, NULL), BG_EINVAL);
    TU_TRUE(f == NULL);
    /* Variant 0 is BG_VARIANT_DEFAULT. */
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    TU_EQ_I(bg_filter_variant(f), BG_VARIANT_DEFAULT);
    bg_filter_free(f);
}

/* ---- space and extremes ---------------------------------------------- */

static void blocked_space_overhead(void **state)
{
    (void)state;
    static const double ps[] = {0.1, 0.01, 0.001};
    for (size_t i = 0; i < LEN(ps); i++) {
        bg_sizing st, bl;
        tu_ctx("bits per key, p=%g", ps[i]);
        TU_EQ_I(tu_solve(BG_VARIANT_STANDARD, &st, 1000000, ps[i], 0, 0), BG_OK);
        TU_EQ_I(tu_solve(BG_VARIANT_BLOCKED, &bl, 1000000, ps[i], 0, 0), BG_OK);
        TU_TRUE(bl.m >= st.m * 9 / 10);
        if (ps[i] >= 0.01)
            TU_LE_D((double)bl.m, 1.1 * (double)st.m);
        else
            TU_LE_D((double)bl.m, 1.2 * (double)st.m);
    }
}

static void tiny_p(void **state)
{
    (void)state;
    static const double ps[] = {1e-6, 1e-9, BG_BLOCKED_MIN_P, 1e-13, 1e-15, 1e-20};
    for (size_t vi = 0; vi < TU_SIZING_NVARIANTS; vi++) {
        bg_variant v = tu_sizing_variants[vi];
        for (size_t i = 0; i < LEN(ps); i++) {
            bg_sizing s;
            tu_ctx("%s n=1e6 p=%g", tu_variant_name(v), ps[i]);
            if (v == BG_VARIANT_BLOCKED && ps[i] < BG_BLOCKED_MIN_P) {
                /* Below the blocked variant's floor: refused, not sized. */
                expect_error(v, (bg_sizing){.n = 1000000, .p = ps[i]}, 0, BG_EINVAL);
                expect_error(v, (bg_sizing){.m = 1 << 30, .p = ps[i]}, 0, BG_EINVAL);
                expect_error(v, (bg_sizing){.n = 1000, .p = ps[i], .k = 8}, 0, BG_EINVAL);
                continue;
            }
            TU_EQ_I(tu_solve(v, &s, 1000000, ps[i], 0, 0), BG_OK);
            tu_check_common(v, &s);
            TU_TRUE(s.k >= 1 && s.k <= tu_max_k(v));
            if (v == BG_VARIANT_STANDARD && s.k < BG_MAX_K) {
                /* The golden formulas: a hair above p is allowed. */
                TU_EQ_U(s.m, tu_textbook_m(1000000, ps[i]));
                TU_LE_D(s.p, 1.05 * ps[i]);
                continue;
            }
            TU_LE_D(s.p, ps[i]);
            /* Still the least m reaching p with k <= tu_max_k(v). */
            TU_LT_D(ps[i], tu_lib_rate(v, s.m - tu_unit_bits(v), s.n));
        }
    }
}

/* Fields that were given come back unchanged, even beyond 2^53 where a
 * double cannot hold every integer; and a given m is only ever rounded up. */
static void large_values_preserved(void **state)
{
    (void)state;
    static const uint64_t big[] = {
        (UINT64_C(1) << 53) + 1, (UINT64_C(1) << 60) + 3, (UINT64_C(1) << 62) - 1,
    };
    for (size_t vi = 0; vi < TU_SIZING_NVARIANTS; vi++) {
        bg_variant v = tu_sizing_variants[vi];
        for (size_t i = 0; i < LEN(big); i++) {
            bg_sizing s = {.n = big[i], .k = 1};
            tu_ctx("%s (n=%" PRIu64 ", k=1)", tu_variant_name(v), big[i]);
            TU_EQ_I(bg_sizing_solve(v, &s, BG_MAX_BITS), BG_OK);
            TU_EQ_U(s.n, big[i]);
            TU_TRUE(s.m >= tu_round_m(v, (uint64_t)ceill((long double)big[i] / TU_LN2L)));

            s = (bg_sizing){.m = big[i], .k = 7};
            tu_ctx("%s (m=%" PRIu64 ", k=7)", tu_variant_name(v), big[i]);
            TU_EQ_I(bg_sizing_solve(v, &s, BG_MAX_BITS), BG_OK);
            TU_TRUE(s.m >= big[i]);
            TU_EQ_U(s.m % tu_unit_bits(v), 0);
        }
        /* Searched sizes above 2^53, where doubles are more than 1 apart:
         * the bisections end (they spun forever) with an answer that meets
         * p. */
        tu_ctx("%s m = 2^62, p = 0.01, k = 7", tu_variant_name(v));
        bg_sizing s = {.m = UINT64_C(1) << 62, .p = 0.01, .k = 7};
        TU_EQ_I(bg_sizing_solve(v, &s, BG_MAX_BITS), BG_OK);
        TU_TRUE(s.n > (UINT64_C(1) << 57) && s.p <= 0.01);
        tu_ctx("%s m = 2^63, p = 0.5", tu_variant_name(v));
        s = (bg_sizing){.m = UINT64_C(1) << 63, .p = 0.5};
        TU_EQ_I(bg_sizing_solve(v, &s, BG_MAX_BITS), BG_OK);
        TU_TRUE(s.n > (UINT64_C(1) << 62) && s.p <= 0.5);
        tu_ctx("%s n = 2^58, p = 0.5, k = 1", tu_variant_name(v));
        s = (bg_sizing){.n = UINT64_C(1) << 58, .p = 0.5, .k = 1};
        TU_EQ_I(bg_sizing_solve(v, &s, BG_MAX_BITS), BG_OK);
        TU_TRUE(s.m > (UINT64_C(1) << 58) && s.p <= 0.5);
        tu_ctx("%s n = 1e17, p = 1e-12", tu_variant_name(v));
        s = (bg_sizing){.n = 100000000000000000, .p = 1e-12};
        int rc = bg_sizing_solve(v, &s, BG_MAX_BITS);
        TU_TRUE(rc == BG_OK || rc == BG_ETOOBIG);
        TU_TRUE(rc != BG_OK || s.p <= 1e-12);
        /* Just above the hard ceiling (less than a double's ulp there):
         * still above it. */
        tu_ctx("%s m = BG_MAX_BITS + 512", tu_variant_name(v));
        expect_error(v, (bg_sizing){.m = BG_MAX_BITS + BG_BLOCK_BITS, .k = 7}, UINT64_MAX,
                     BG_ETOOBIG);
        expect_error(v, (bg_sizing){.m = BG_MAX_BITS + 1, .n = 1000}, UINT64_MAX, BG_ETOOBIG);
    }
}
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_arguments),
        cmocka_unit_test(filter_new_sizing_errors),
        cmocka_unit_test(blocked_space_overhead),
        cmocka_unit_test(tiny_p),
        cmocka_unit_test(large_values_preserved),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
