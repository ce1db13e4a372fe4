/* SPDX-License-Identifier: BSD-3-Clause */
/* The false-positive rate at scale: n = 5e7 keys per variant at p = 0.01.
 * Catches what small tests cannot: a probe computation that loses entropy
 * for large m (a 32-bit reduction, a modulo bias, a blocked index that
 * favours some lines), which shows up as a rate that drifts with size.
 *
 * Asserts: no false negatives on a sample of 1e6 added keys; the rate
 * measured on 2e6 never-added keys within [0.9p, 1.1p]; and within 10% of
 * the rate the same code measures at n = 1e6 (no drift with size).
 * About 2 x 60 MB of filter; a minute or two. BG_TEST_LARGE_N overrides n. */
#include "test_util.h"

#define P 0.01
#define BATCH 4096
#define QUERIES 2000000u
#define SAMPLE 1000000u

enum { SET_ADDED = 500, SET_ABSENT = 501 };

typedef struct result {
    double rate;
    double seconds;
    bg_filter_stats st;
} result;

static result measure(bg_variant v, uint64_t n)
{
    result r;
    memset(&r, 0, sizeof r);
    bg_filter *f = NULL;
    bg_filter_options o = {.variant = v, .capacity = n, .error_rate = P, .seed = 0xb10b};
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    tu_batch b;
    tu_batch_init(&b, BATCH);
    double t0 = tu_now();
    for (uint64_t at = 0; at < n; at += BATCH) {
        size_t cnt = (size_t)(n - at < BATCH ? n - at : BATCH);
        tu_batch_fill(&b, 0, SET_ADDED, at, cnt);
        int64_t rc = bg_filter_add_many(f, b.keys, b.lens, cnt, NULL);
        TU_TRUE(rc >= 0);
    }
    r.seconds = tu_now() - t0;

    /* No false negatives on an evenly spread sample of the added keys. */
    uint64_t stride = n / SAMPLE ? n / SAMPLE : 1, missing = 0, sampled = 0;
    for (uint64_t i = 0; i < n; i += stride * BATCH) {
        size_t cnt = 0;
        for (uint64_t j = i; j < n && cnt < BATCH; j += stride, cnt++) {
            uint8_t *buf = b.store + cnt * TU_MAX_KEY;
            b.lens[cnt] = tu_key_distinct(SET_ADDED, j, buf);
            b.keys[cnt] = buf;
        }
        int64_t rc = bg_filter_contains_many(f, b.keys, b.lens, cnt, NULL);
        TU_TRUE(rc >= 0);
        missing += cnt - (uint64_t)rc;
        sampled += cnt;
    }
    TU_EQ_U(missing, 0);
    TU_TRUE(sampled >= SAMPLE * 9 / 10);

    uint64_t fps = 0;
    for (uint64_t at = 0; at < QUERIES; at += BATCH) {
        size_t cnt = (size_t)(QUERIES - at < BATCH ? QUERIES - at : BATCH);
        tu_batch_fill(&b, 0, SET_ABSENT, at, cnt);
        int64_t rc = bg_filter_contains_many(f, b.keys, b.lens, cnt, NULL);
        TU_TRUE(rc >= 0);
        fps += (uint64_t)rc;
    }
    r.rate = (double)fps / QUERIES;
    TU_EQ_I(bg_filter_stats_get(f, &r.st), BG_OK);
    tu_batch_free(&b);
    bg_filter_free(f);
    return r;
}

static void fp_rate_does_not_drift(bg_variant v)
{
    uint64_t big = (uint64_t)tu_env_long("BG_TEST_LARGE_N", 50000000);
    tu_ctx("%s n=1e6", bg_variant_name(v));
    result small = measure(v, 1000000);
    tu_ctx("%s n=%" PRIu64, bg_variant_name(v), big);
    result large = measure(v, big);
    print_message("    %s: n=1e6 rate %.6f; n=%" PRIu64 " rate %.6f (model %.6f, from fill %.6f), "
                  "%.1f MB, add %.1f s (%.0f ns/key)\n",
                  bg_variant_name(v), small.rate, big, large.rate, large.st.error_rate,
                  large.st.estimated_fp_rate, (double)large.st.bytes / 1e6, large.seconds,
                  large.seconds / (double)big * 1e9);
    TU_IN_RANGE_D(small.rate, 0.9 * P, 1.1 * P);
    TU_IN_RANGE_D(large.rate, 0.9 * P, 1.1 * P);
    TU_IN_RANGE_D(large.rate, 0.9 * small.rate, 1.1 * small.rate);
    /* The fill-based estimates hold at this size too. */
    TU_IN_RANGE_D(large.st.estimated_items, 0.99 * (double)big, 1.01 * (double)big);
    TU_IN_RANGE_D(large.st.estimated_fp_rate, 0.95 * large.rate, 1.05 * large.rate);
}

static void standard_large(void **state)
{
    (void)state;
    fp_rate_does_not_drift(BG_VARIANT_STANDARD);
}

static void blocked_large(void **state)
{
    (void)state;
    fp_rate_does_not_drift(BG_VARIANT_BLOCKED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(standard_large),
        cmocka_unit_test(blocked_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
