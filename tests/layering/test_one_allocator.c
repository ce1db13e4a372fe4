/* SPDX-License-Identifier: BSD-3-Clause */
/* One allocator for the three libraries: a program that links
 * libbloomgate.so, libbloomgate_remote.so and libbloomgate_guard.so holds
 * one core, so the allocator it sets once with bg_set_allocator serves the
 * allocations of all three.
 *
 * The test sets a counting allocator, then makes each library allocate: a
 * core filter; a remote connection and a bitmap filter in a real
 * redis-server that it starts (tests/support/redis_server.h); a guard (no
 * filter, so that every allocation is the guard's own) and one over that
 * remote filter. Each library's objects must raise the count of live blocks
 * while they live, and freeing them must bring it back to zero.
 *
 * A library that carries its own copy of the core (linked to libbloomgate.a)
 * is caught one of two ways, depending on which copy the loader binds the
 * program's calls to: its copy exports the core's API, and when it is
 * searched before libbloomgate.so the program's own bg_set_allocator is that
 * copy's (core_is_libbloomgate fails, naming the file); otherwise the library
 * allocates through its copy's allocator, which bg_set_allocator never
 * reached, and its objects leave the count unchanged (the check names the
 * library). layering.one_allocator.two_cores runs this program against such
 * a libbloomgate_remote.so and expects the failure. */
#define _GNU_SOURCE /* dladdr */
#include "test_util.h"
#include "redis_server.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/alloc.h>
#include <bloomgate/filter.h>
#include <bloomgate/guard.h>
#include <bloomgate/remote.h>

static atomic_long live;  /* blocks handed out and not yet freed */
static atomic_long total; /* blocks ever handed out */

static void counted(void *p)
{
    if (p != NULL) {
        atomic_fetch_add(&live, 1);
        atomic_fetch_add(&total, 1);
    }
}

static void *count_malloc(size_t n)
{
    void *p = malloc(n);
    counted(p);
    return p;
}

static void *count_calloc(size_t c, size_t n)
{
    void *p = calloc(c, n);
    counted(p);
    return p;
}

static void *count_realloc(void *old, size_t n)
{
    void *p = realloc(old, n);
    if (old == NULL)
        counted(p);
    else if (p == NULL && n == 0)
        atomic_fetch_sub(&live, 1); /* realloc(p, 0) freed p */
    return p;
}

static void count_free(void *p)
{
    if (p != NULL)
        atomic_fetch_sub(&live, 1);
    free(p);
}

static ts_server srv;

static int setup(void **state)
{
    (void)state;
    ts_start(&srv, NULL);
    bg_allocator a = {count_malloc, count_calloc, count_realloc, count_free};
    return bg_set_allocator(&a) == BG_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    bg_set_allocator(NULL);
    ts_stop(&srv);
    return 0;
}

/* What `what` (a call into library `lib`) did to the counts since `before`
 * (total then): it must have allocated through the counting allocator. */
static void expect_allocated(const char *lib, const char *what, long before)
{
    long made = atomic_load(&total) - before;
    if (made <= 0 || atomic_load(&live) <= 0)
        fail_msg("%s: %s made no allocation that went through the allocator set with "
                 "bg_set_allocator (%ld blocks, %ld live): the library allocates through "
                 "another copy of the core",
                 lib, what, made, atomic_load(&live));
}

/* After the frees: every block counted has been returned. */
static void expect_all_freed(const char *lib)
{
    long n = atomic_load(&live);
    if (n != 0)
        fail_msg("%s: %ld blocks still live after its objects were freed: freed through "
                 "another allocator than the one that allocated them",
                 lib, n);
}

/* The core the program calls is libbloomgate.so: no library searched before
 * it carries a copy that would stand in for it. */
static void core_is_libbloomgate(void **state)
{
    (void)state;
    Dl_info info;
    TU_TRUE(dladdr((void *)(uintptr_t)bg_set_allocator, &info) != 0);
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    if (strncmp(base, "libbloomgate.so", 15) != 0)
        fail_msg("bg_set_allocator comes from %s, not libbloomgate.so: another copy of the core",
                 info.dli_fname);
}

static void core_allocates_through_it(void **state)
{
    (void)state;
    expect_all_freed("before the test");
    long t = atomic_load(&total);
    bg_filter_options fo = {.capacity = 10000, .error_rate = 0.01};
    bg_filter *f = NULL;
    TU_EQ_I(bg_filter_new(&f, &fo), BG_OK);
    expect_allocated("core", "bg_filter_new", t);
    TU_EQ_I(bg_filter_add(f, "k", 1), BG_OK);
    bg_filter_free(f);
    expect_all_freed("core");
}

static void remote_allocates_through_it(void **state)
{
    (void)state;
    bg_remote_options ro = {.host = "127.0.0.1", .port = srv.port};
    long t = atomic_load(&total);
    bg_remote *r = NULL;
    TU_EQ_I(bg_remote_connect(&r, &ro), BG_OK);
    expect_allocated("remote", "bg_remote_connect", t);

    t = atomic_load(&total);
    bg_remote_filter_options fo = {.backend = BG_REMOTE_BITMAP, .capacity = 10000,
                                   .error_rate = 0.01};
    bg_remote_filter *f = NULL;
    TU_EQ_I(bg_remote_filter_create(&f, r, "one-allocator", &fo), BG_OK);
    expect_allocated("remote", "bg_remote_filter_create", t);
    TU_EQ_I(bg_remote_filter_add(f, "k", 1), BG_OK);
    TU_EQ_I(bg_remote_filter_contains(f, "k", 1), 1);
    bg_remote_filter_close(f);
    bg_remote_close(r);
    expect_all_freed("remote");
}

static int src_get(void *ctx, const void *key, size_t len, bg_guard_buf *value)
{
    (void)ctx;
    if (len != 1 || memcmp(key, "k", 1) != 0)
        return BG_GUARD_ABSENT;
    return bg_guard_buf_set(value, "v", 1) == BG_OK ? BG_GUARD_FOUND : BG_ENOMEM;
}

static int src_scan(void *ctx, int (*emit)(void *arg, const void *key, size_t len), void *arg)
{
    (void)ctx;
    return emit(arg, "k", 1);
}

static void guard_allocates_through_it(void **state)
{
    (void)state;
    /* No filter: every allocation of bg_guard_new and bg_guard_buf_set is
     * the guard's own. */
    bg_guard_options o = {.source = {.get = src_get, .scan = src_scan},
                          .filter_kind = BG_GUARD_FILTER_NONE};
    long t = atomic_load(&total);
    bg_guard *g = NULL;
    TU_EQ_I(bg_guard_new(&g, &o), BG_OK);
    expect_allocated("guard", "bg_guard_new", t);
    bg_guard_buf v = {0};
    t = atomic_load(&total);
    TU_EQ_I(bg_guard_get(g, "k", 1, &v), BG_GUARD_FOUND);
    expect_allocated("guard", "bg_guard_buf_set", t);
    bg_guard_buf_free(&v);
    bg_guard_free(g);
    expect_all_freed("guard");

    /* The three together: a guard over a remote filter it creates. */
    bg_remote_options ro = {.host = "127.0.0.1", .port = srv.port};
    o.filter_kind = BG_GUARD_FILTER_REMOTE;
    o.remote = &ro;
    o.remote_name = "one-allocator-guard";
    o.filter = (bg_filter_options){.capacity = 1000, .error_rate = 0.01};
    t = atomic_load(&total);
    TU_EQ_I(bg_guard_new(&g, &o), BG_OK);
    expect_allocated("guard", "bg_guard_new with a remote filter", t);
    TU_EQ_I(bg_guard_get(g, "k", 1, &v), BG_GUARD_FOUND);
    TU_EQ_I(bg_guard_get(g, "absent", 6, &v), BG_GUARD_ABSENT);
    bg_guard_buf_free(&v);
    bg_guard_free(g);
    expect_all_freed("guard and remote");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(core_is_libbloomgate),
        cmocka_unit_test(core_allocates_through_it),
        cmocka_unit_test(remote_allocates_through_it),
        cmocka_unit_test(guard_allocates_through_it),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
