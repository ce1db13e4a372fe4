#if defined(__linux__)
#  define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#  include <sys/mman.h>
#endif
#include <stdint.h>
#include <stdlib.h>

#include <bloomgate/alloc.h>

#include "alloc_internal.h"

static bg_allocator bg__allocator = {malloc, calloc, realloc, free};

int bg_set_allocator(const bg_allocator *a)
{
    if (a == NULL) {
        bg__allocator = (bg_allocator){malloc, calloc, realloc, free};
        return BG_OK;
    }
    if (!a->malloc_fn || !a->calloc_fn || !a->realloc_fn || !a->free_fn)
        return BG_EINVAL;
    bg__allocator = *a;
    return BG_OK;
}

void *bg__malloc(size_t size)
{
    return bg__allocator.malloc_fn(size);
}

void *bg__calloc(size_t count, size_t size)
{
    return bg__allocator.calloc_fn(count, size);
}

void bg__free(void *ptr)
{
    if (ptr != NULL)
        bg__allocator.free_fn(ptr);
}

/* Over-allocate by align + one pointer, align the address up, and keep the
 * raw pointer just below the aligned block for bg__aligned_free. calloc is
 * used (not malloc + memset) so that a large filter's pages come zeroed from
 * the kernel and are only touched when first written. */
void *bg__aligned_calloc(size_t size, size_t align)
{
    size_t extra = align + sizeof(void *);
    if (size > SIZE_MAX - extra)
        return NULL;
    unsigned char *raw = bg__calloc(1, size + extra);
    if (raw == NULL)
        return NULL;
    uintptr_t start = (uintptr_t)(raw + sizeof(void *));
    uintptr_t aligned = (start + (align - 1)) & ~(uintptr_t)(align - 1);
    ((void **)aligned)[-1] = raw;
    return (void *)aligned;
}

void bg__aligned_free(void *ptr)
{
    if (ptr != NULL)
        bg__free(((void **)ptr)[-1]);
}

/* Probes land on uniformly random cache lines, so with 4 KiB pages a filter
 * much larger than the TLB's reach (~6 MiB of 4 KiB pages on current x86)
 * pays a page walk on nearly every probe. Where transparent huge pages are
 * in "madvise" mode (Debian's default), asking for them cuts that to ~1 in
 * 512. A hint: failure (no THP, another OS) changes nothing but speed. */
void bg__advise_huge_pages(void *ptr, size_t size)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    uintptr_t start = ((uintptr_t)ptr + BG__HUGE_PAGE - 1) & ~(uintptr_t)(BG__HUGE_PAGE - 1);
    uintptr_t end = ((uintptr_t)ptr + size) & ~(uintptr_t)(BG__HUGE_PAGE - 1);
    if (end > start)
        (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
#else
    (void)ptr;
    (void)size;
#endif
}
