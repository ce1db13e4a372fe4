/* A counting, failure-injecting allocator for <bloomgate/alloc.h>'s hooks
 * (sqlite's faultsim idea): install it with bg_set_allocator(&fa_allocator),
 * fail the Nth allocating call, and check that nothing leaks. */
#ifndef BG_TEST_ALLOC_H
#define BG_TEST_ALLOC_H

#include "test_util.h"

/* A libc-backed allocator that counts live blocks and fails call number
 * fail_at (1-based; 0: never). Single-threaded use only. */
static struct {
    long calls;     /* allocating calls so far */
    long fail_at;
    long failed;    /* injected failures */
    long live;      /* blocks handed out and not yet freed */
    long frees;
    size_t largest; /* the largest single request */
} fa;

static int fa_should_fail(void)
{
    fa.calls++;
    if (fa.fail_at != 0 && fa.calls == fa.fail_at) {
        fa.failed++;
        return 1;
    }
    return 0;
}

static void *fa_malloc(size_t size)
{
    if (size > fa.largest)
        fa.largest = size;
    if (fa_should_fail())
        return NULL;
    void *p = malloc(size);
    if (p)
        fa.live++;
    return p;
}

static void *fa_calloc(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size)
        fa.largest = SIZE_MAX;
    else if (count * size > fa.largest)
        fa.largest = count * size;
    if (fa_should_fail())
        return NULL;
    void *p = calloc(count, size);
    if (p)
        fa.live++;
    return p;
}

static void *fa_realloc(void *ptr, size_t size)
{
    if (fa_should_fail())
        return NULL;
    void *p = realloc(ptr, size);
    if (p && ptr == NULL)
        fa.live++;
    return p;
}

static void fa_free(void *ptr)
{
    if (ptr) {
        fa.live--;
        fa.frees++;
    }
    free(ptr);
}

static const bg_allocator fa_allocator = {fa_malloc, fa_calloc, fa_realloc, fa_free};

static void fa_reset(long fail_at)
{
    memset(&fa, 0, sizeof fa);
    fa.fail_at = fail_at;
}

#endif
