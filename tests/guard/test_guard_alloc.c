/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate_guard under allocation failure (tests/support/test_alloc.h): the Nth
 * allocation through the library's allocator fails, for N = 1, 2, ...
 * until a run sees no failure. bg_guard_new must return BG_ENOMEM and
 * leave nothing allocated; the read path, puts, removes, rebuilds and
 * counters must each either succeed or return BG_ENOMEM (never a wrong
 * answer), and freeing the guard must release everything. The source and
 * cache use libc malloc, so only the guard's allocations are counted. */
#include "test_util.h"
#include "test_alloc.h"
#include "guard_fixtures.h"

static ms_source src;
static mc_cache cache;

static int group_setup(void **state)
{
    (void)state;
    assert_int_equal(bg_set_allocator(&fa_allocator), BG_OK);
    ms_init(&src);
    mc_init(&cache);
    ms_add_range(&src, "p", 300);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    mc_free(&cache);
    ms_free(&src);
    bg_set_allocator(NULL);
    return 0;
}

static bg_guard_options options(bg_variant variant)
{
    return (bg_guard_options){.source = ms_callbacks(&src), .cache = mc_callbacks(&cache),
                              .filter = {.variant = variant, .error_rate = 0.5,
                                         .capacity = 1},
                              .negative_capacity = 16};
}

static void new_fails_cleanly(void **state)
{
    (void)state;
    bg_guard_options o = options(BG_VARIANT_STANDARD);
    long n;
    for (n = 1;; n++) {
        tu_ctx("bg_guard_new, failing allocation %ld", n);
        fa_reset(n);
        bg_guard *g = (bg_guard *)&src;
        int rc = bg_guard_new(&g, &o);
        if (fa.failed == 0) {
            TU_EQ_I(rc, BG_OK);
            bg_guard_free(g);
            TU_EQ_I(fa.live, 0);
            break;
        }
        TU_EQ_I(rc, BG_ENOMEM);
        TU_TRUE(g == NULL);
        TU_EQ_I(fa.live, 0);
    }
    print_message("bg_guard_new: %ld allocation points\n", n - 1);
    TU_TRUE(n > 5);
}

/* One pass over everything that may allocate after creation. Each status
 * must be the right answer or BG_ENOMEM. */
static void exercise(bg_guard *g, const char *fp, size_t fplen)
{
    bg_guard_buf v = {0};
    int rc = bg_guard_get(g, "p1", 2, &v);
    TU_TRUE(rc == BG_GUARD_FOUND || rc == BG_ENOMEM);
    if (rc == BG_GUARD_FOUND)
        TU_TRUE(strcmp(v.data, "value of p1") == 0);
    rc = bg_guard_get(g, "p1", 2, &v);
    TU_TRUE(rc == BG_GUARD_FOUND || rc == BG_ENOMEM);
    rc = bg_guard_get(g, fp, fplen, &v); /* a false positive: negative entry */
    TU_TRUE(rc == BG_GUARD_ABSENT || rc == BG_ENOMEM);
    rc = bg_guard_get(g, fp, fplen, &v);
    TU_TRUE(rc == BG_GUARD_ABSENT || rc == BG_ENOMEM);
    rc = bg_guard_put(g, "p2", 2);
    TU_TRUE(rc == BG_OK || rc == BG_ENOMEM);
    rc = bg_guard_remove(g, "p2", 2);
    TU_TRUE(rc == BG_OK || rc == BG_ENOMEM);
    rc = bg_guard_rebuild(g);
    TU_TRUE(rc == BG_OK || rc == BG_ENOMEM);
    rc = bg_guard_get(g, "p3", 2, &v);
    TU_TRUE(rc == BG_GUARD_FOUND || rc == BG_ENOMEM);
    bg_guard_counters c;
    TU_EQ_I(bg_guard_counters_get(g, &c), BG_OK);
    bg_guard_buf_free(&v);
}

static void calls_fail_cleanly(bg_variant variant)
{
    bg_guard_options o = options(variant);
    char fp[64];
    size_t fplen = 0;
    long n;
    for (n = 1;; n++) {
        tu_ctx("%s: calls, failing allocation %ld after new", bg_variant_name(variant), n);
        fa_reset(0);
        ms_map_clear(&cache.map);
        bg_guard *g;
        TU_EQ_I(bg_guard_new(&g, &o), BG_OK);
        if (n == 1) {
            maybe_key(g, "fp", fp, &fplen);
            bg_guard_free(g);
            fa_reset(0);
            TU_EQ_I(bg_guard_new(&g, &o), BG_OK);
        }
        fa.fail_at = fa.calls + n;
        exercise(g, fp, fplen);
        long failed = fa.failed;
        bg_guard_free(g);
        TU_EQ_I(fa.live, 0);
        if (failed == 0)
            break;
    }
    print_message("%s: %ld allocation points after new\n", bg_variant_name(variant), n - 1);
    TU_TRUE(n > 3);
}

static void calls_fail_cleanly_standard(void **state)
{
    (void)state;
    calls_fail_cleanly(BG_VARIANT_STANDARD);
}

static void calls_fail_cleanly_counting(void **state)
{
    (void)state;
    calls_fail_cleanly(BG_VARIANT_COUNTING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(new_fails_cleanly),
        cmocka_unit_test(calls_fail_cleanly_standard),
        cmocka_unit_test(calls_fail_cleanly_counting),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
