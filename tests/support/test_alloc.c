/* SPDX-License-Identifier: BSD-3-Clause */
/* The allocator behind test_alloc.h. */
#include "test_alloc.h"

fa_state fa;

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

const bg_allocator fa_allocator = {fa_malloc, fa_calloc, fa_realloc, fa_free};

void fa_reset(long fail_at)
{
    memset(&fa, 0, sizeof fa);
    fa.fail_at = fail_at;
}
