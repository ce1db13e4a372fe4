/* SPDX-License-Identifier: BSD-3-Clause */
/* Status codes, version, and allocation failure (<bloomgate/error.h>,
 * <bloomgate/version.h>, <bloomgate/alloc.h>). */
#include "test_util.h"
#include "test_alloc.h"

/* ---- statuses -------------------------------------------------------- */

static void status_names_and_messages(void **state)
{
    (void)state;
    static const struct {
        int status;
        const char *name;
    } all[] = {
        {BG_OK, "BG_OK"},
        {BG_EINVAL, "BG_EINVAL"},
        {BG_ENOMEM, "BG_ENOMEM"},
        {BG_EOVERFLOW, "BG_EOVERFLOW"},
        {BG_ETOOBIG, "BG_ETOOBIG"},
        {BG_EINCOMPAT, "BG_EINCOMPAT"},
        {BG_EUNDERDET, "BG_EUNDERDET"},
        {BG_EVARIANT, "BG_EVARIANT"},
        {BG_EIO, "BG_EIO"},
        {BG_EBADMAGIC, "BG_EBADMAGIC"},
        {BG_EVERSION, "BG_EVERSION"},
        {BG_ECHECKSUM, "BG_ECHECKSUM"},
        {BG_ETRUNC, "BG_ETRUNC"},
        {BG_ETRAILING, "BG_ETRAILING"},
        {BG_ECORRUPT, "BG_ECORRUPT"},
        {BG_EREADONLY, "BG_EREADONLY"},
        {BG_EABSENT, "BG_EABSENT"},
        {BG_EFULL, "BG_EFULL"},
        {BG_ELAYERS, "BG_ELAYERS"},
        {BG_ECONN, "BG_ECONN"},
        {BG_EREMOTE, "BG_EREMOTE"},
        {BG_ESTALE, "BG_ESTALE"},
        {BG_ENOTFOUND, "BG_ENOTFOUND"},
        {BG_EEXIST, "BG_EEXIST"},
        {BG_EBUSY, "BG_EBUSY"},
        {BG_EOFFSET, "BG_EOFFSET"},
        {BG_ECHUNK, "BG_ECHUNK"},
    };
    /* The values are ABI: pinned. */
    TU_EQ_I(BG_OK, 0);
    TU_EQ_I(BG_EINVAL, -1);
    TU_EQ_I(BG_ENOMEM, -2);
    TU_EQ_I(BG_EOVERFLOW, -3);
    TU_EQ_I(BG_ETOOBIG, -4);
    TU_EQ_I(BG_EINCOMPAT, -5);
    TU_EQ_I(BG_EUNDERDET, -6);
    TU_EQ_I(BG_EVARIANT, -7);
    TU_EQ_I(BG_EIO, -8);
    TU_EQ_I(BG_EBADMAGIC, -9);
    TU_EQ_I(BG_EVERSION, -10);
    TU_EQ_I(BG_ECHECKSUM, -11);
    TU_EQ_I(BG_ETRUNC, -12);
    TU_EQ_I(BG_ETRAILING, -13);
    TU_EQ_I(BG_ECORRUPT, -14);
    TU_EQ_I(BG_EREADONLY, -15);
    TU_EQ_I(BG_EABSENT, -16);
    TU_EQ_I(BG_EFULL, -17);
    TU_EQ_I(BG_ELAYERS, -18);
    TU_EQ_I(BG_ECONN, -19);
    TU_EQ_I(BG_EREMOTE, -20);
    TU_EQ_I(BG_ESTALE, -21);
    TU_EQ_I(BG_ENOTFOUND, -22);
    TU_EQ_I(BG_EEXIST, -23);
    TU_EQ_I(BG_EBUSY, -24);
    TU_EQ_I(BG_EOFFSET, -25);
    TU_EQ_I(BG_ECHUNK, -26);

    size_t n = sizeof all / sizeof all[0];
    for (size_t i = 0; i < n; i++) {
        tu_ctx("status %d", all[i].status);
        const char *name = bg_err_name(all[i].status);
        const char *msg = bg_strerror(all[i].status);
        assert_non_null(name);
        assert_non_null(msg);
        assert_string_equal(name, all[i].name);
        TU_TRUE(strlen(msg) > 0);
        TU_TRUE(strcmp(msg, "unknown error") != 0);
        /* Messages are distinct, so a log line tells them apart. */
        for (size_t j = 0; j < i; j++)
            TU_TRUE(strcmp(msg, bg_strerror(all[j].status)) != 0);
    }
    assert_string_equal(bg_strerror(BG_OK), "success");
    assert_string_equal(bg_strerror(BG_ENOMEM), "out of memory");

    static const int unknown[] = {1, 2, -27, -100, 1000, INT32_MAX, INT32_MIN};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        tu_ctx("unknown status %d", unknown[i]);
        assert_string_equal(bg_strerror(unknown[i]), "unknown error");
        assert_string_equal(bg_err_name(unknown[i]), "BG_UNKNOWN");
    }
}

static void version(void **state)
{
    (void)state;
    tu_ctx("version");
    TU_EQ_U(bg_version(), BG_VERSION_HEX);
    TU_EQ_U(BG_VERSION_HEX,
            ((unsigned)BG_VERSION_MAJOR << 16) | ((unsigned)BG_VERSION_MINOR << 8) |
                (unsigned)BG_VERSION_PATCH);
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", BG_VERSION_MAJOR, BG_VERSION_MINOR,
             BG_VERSION_PATCH);
    assert_non_null(bg_version_string());
    assert_string_equal(bg_version_string(), want);
    /* Static storage: the same string every time. */
    TU_TRUE(bg_version_string() == bg_version_string());
}

static void variant_names(void **state)
{
    (void)state;
    tu_ctx("variant names");
    assert_string_equal(bg_variant_name(BG_VARIANT_STANDARD), "standard");
    assert_string_equal(bg_variant_name(BG_VARIANT_BLOCKED), "blocked");
    TU_TRUE(bg_variant_name((bg_variant)0) == NULL);
    assert_string_equal(bg_variant_name(BG_VARIANT_COUNTING), "counting");
    assert_string_equal(bg_variant_name(BG_VARIANT_SCALABLE), "scalable");
    assert_string_equal(bg_variant_name(BG_VARIANT_REDISBLOOM), "redisbloom");
    TU_TRUE(bg_variant_name((bg_variant)6) == NULL);
    bg_variant v = (bg_variant)0;
    TU_EQ_I(bg_variant_parse("redisbloom", &v), BG_OK);
    TU_EQ_I(v, BG_VARIANT_REDISBLOOM);
    TU_EQ_I(bg_variant_parse("counting", &v), BG_OK);
    TU_EQ_I(v, BG_VARIANT_COUNTING);
    TU_EQ_I(bg_variant_parse("scalable", &v), BG_OK);
    TU_EQ_I(v, BG_VARIANT_SCALABLE);
    TU_EQ_I(bg_variant_parse("standard", &v), BG_OK);
    TU_EQ_I(v, BG_VARIANT_STANDARD);
    TU_EQ_I(bg_variant_parse("blocked", &v), BG_OK);
    TU_EQ_I(v, BG_VARIANT_BLOCKED);
    v = BG_VARIANT_STANDARD;
    TU_EQ_I(bg_variant_parse("Blocked", &v), BG_EVARIANT);
    TU_EQ_I(bg_variant_parse("", &v), BG_EVARIANT);
    TU_EQ_I(bg_variant_parse("blocked ", &v), BG_EVARIANT);
    TU_EQ_I(v, BG_VARIANT_STANDARD); /* unchanged on error */
    TU_EQ_I(bg_variant_parse(NULL, &v), BG_EINVAL);
    TU_EQ_I(bg_variant_parse("standard", NULL), BG_EINVAL);
}

/* ---- allocation failure ---------------------------------------------- */

/* Builds one filter per option set under "fail the Nth allocation" for
 * N = 1, 2, ... until a build sees no injected failure. */
static void run_alloc_failures(const bg_filter_options *o)
{
    TU_EQ_I(bg_set_allocator(&fa_allocator), BG_OK);
    int succeeded_clean = 0;
    long enomem = 0;
    for (long n = 1; n <= 64 && !succeeded_clean; n++) {
        fa_reset(n);
        bg_filter *f = (bg_filter *)&f; /* not NULL, to see it reset */
        int rc = bg_filter_new(&f, o);
        if (rc == BG_ENOMEM) {
            TU_TRUE(f == NULL);
            TU_EQ_I(fa.failed, 1);
            TU_EQ_I(fa.live, 0); /* nothing leaked on the error path */
            enomem++;
            continue;
        }
        TU_EQ_I(rc, BG_OK);
        TU_TRUE(f != NULL);
        TU_TRUE(fa.live > 0); /* the filter's memory came from the hooks */
        /* The filter works, and no other call allocates. */
        long calls = fa.calls;
        TU_EQ_I(bg_filter_add(f, "k", 1), BG_OK);
        TU_EQ_I(bg_filter_contains(f, "k", 1), 1);
        bg_filter_stats st;
        TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
        TU_EQ_I(bg_filter_clear(f), BG_OK);
        TU_EQ_I(fa.calls, calls);
        bg_filter_free(f);
        TU_EQ_I(fa.live, 0);
        /* BG_OK despite an injected failure (a fallback) is allowed;
         * the sweep ends at the first N past the last allocation. */
        succeeded_clean = fa.failed == 0;
    }
    TU_TRUE(succeeded_clean);
    /* bg_filter_new allocates at least once, so N = 1 failed. */
    TU_TRUE(enomem >= 1);
    TU_EQ_I(bg_set_allocator(NULL), BG_OK);
}

static void allocation_failure(void **state)
{
    (void)state;
    static const bg_variant vs[] = {BG_VARIANT_STANDARD, BG_VARIANT_BLOCKED};
    for (size_t i = 0; i < 2; i++) {
        for (int mode = 0; mode < 2; mode++) {
            tu_ctx("alloc failure variant %d mode %d", (int)vs[i], mode);
            bg_filter_options o = {.variant = vs[i], .capacity = 10000, .error_rate = 0.01,
                                   .concurrency = mode ? BG_SINGLE_WRITER : BG_CONCURRENT_WRITERS};
            run_alloc_failures(&o);
            o = (bg_filter_options){.variant = vs[i], .bits = 64, .hashes = 1};
            run_alloc_failures(&o);
        }
    }
    /* Errors that are not about memory never allocate. */
    tu_ctx("no allocation on argument errors");
    TU_EQ_I(bg_set_allocator(&fa_allocator), BG_OK);
    fa_reset(0);
    bg_filter *f = NULL;
    bg_filter_options o = {.capacity = 1000, .error_rate = 2};
    TU_EQ_I(bg_filter_new(&f, &o), BG_EINVAL);
    o = (bg_filter_options){.capacity = 1000000, .error_rate = 0.01, .max_bytes = 10};
    TU_EQ_I(bg_filter_new(&f, &o), BG_ETOOBIG);
    TU_EQ_I(fa.calls, 0);
    TU_EQ_I(bg_set_allocator(NULL), BG_OK);
}

static void set_allocator_arguments(void **state)
{
    (void)state;
    tu_ctx("bg_set_allocator");
    bg_allocator a = fa_allocator;
    a.malloc_fn = NULL;
    TU_EQ_I(bg_set_allocator(&a), BG_EINVAL);
    a = fa_allocator;
    a.calloc_fn = NULL;
    TU_EQ_I(bg_set_allocator(&a), BG_EINVAL);
    a = fa_allocator;
    a.realloc_fn = NULL;
    TU_EQ_I(bg_set_allocator(&a), BG_EINVAL);
    a = fa_allocator;
    a.free_fn = NULL;
    TU_EQ_I(bg_set_allocator(&a), BG_EINVAL);

    /* A rejected allocator is not installed: libc is still in use. */
    fa_reset(0);
    bg_filter *f = NULL;
    bg_filter_options o = {.capacity = 1000, .error_rate = 0.01};
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    TU_EQ_I(fa.calls, 0);
    bg_filter_free(f);

    /* Installed, then NULL restores libc: our hooks see nothing after. */
    TU_EQ_I(bg_set_allocator(&fa_allocator), BG_OK);
    fa_reset(0);
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    TU_TRUE(fa.calls > 0);
    bg_filter_free(f);
    TU_EQ_I(fa.live, 0);
    TU_EQ_I(bg_set_allocator(NULL), BG_OK);
    fa_reset(0);
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    bg_filter_free(f);
    TU_EQ_I(fa.calls, 0);
    TU_EQ_I(fa.frees, 0);

    /* The allocator is copied: changing the caller's struct later has no
     * effect. */
    a = fa_allocator;
    TU_EQ_I(bg_set_allocator(&a), BG_OK);
    a.malloc_fn = NULL;
    a.calloc_fn = NULL;
    fa_reset(0);
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    TU_TRUE(fa.calls > 0);
    bg_filter_free(f);
    TU_EQ_I(fa.live, 0);
    TU_EQ_I(bg_set_allocator(NULL), BG_OK);
}

/* Whatever a test did, later tests get libc back. */
static int restore_allocator(void **state)
{
    (void)state;
    return bg_set_allocator(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(status_names_and_messages),
        cmocka_unit_test(version),
        cmocka_unit_test(variant_names),
        cmocka_unit_test_teardown(allocation_failure, restore_allocator),
        cmocka_unit_test_teardown(set_allocator_arguments, restore_allocator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
