/* SPDX-License-Identifier: BSD-3-Clause */
#if defined(__linux__)
#  define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#  include <sys/mman.h>
#endif
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/alloc.h>

#include "alloc_internal.h"

static bg_allocator bg__allocator = {malloc, calloc, realloc, free};
static bool allocator_is_libc = true;

int bg_set_allocator(const bg_allocator *a)
{
    if (a == NULL) {
        bg__allocator = (bg_allocator){malloc, calloc, realloc, free};
        allocator_is_libc = true;
        return BG_OK;
    }
    if (!a->malloc_fn || !a->calloc_fn || !a->realloc_fn || !a->free_fn)
        return BG_EINVAL;
    bg__allocator = *a;
    allocator_is_libc = false;
    return BG_OK;
}

bool bg__allocator_is_libc(void)
{
    return allocator_is_libc;
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

char *bg__strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = bg__malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* What bg__aligned_free needs, kept just below the aligned block. */
typedef struct aligned_header {
    void *raw;     /* what was allocated */
    size_t mapped; /* its length if it came from mmap, else 0 */
    size_t size;   /* its length */
} aligned_header;

/* Over-allocate by align + a header, align the address up, and keep the
 * header just below the aligned block. The memory comes zeroed: calloc (not
 * malloc + memset), so that a large filter's pages come from the kernel and
 * are only touched when first written.
 * With the C library's allocator, arrays of BG__HUGE_PAGE or more come from
 * mmap directly: glibc would serve them from its heap after a large block
 * has been freed (its mmap threshold rises up to 32 MiB), whose pages may
 * already be mapped small, and huge pages could then not be had. With hooks
 * installed everything goes through them. */
void *bg__aligned_calloc(size_t size, size_t align)
{
    size_t extra = align + sizeof(aligned_header);
    if (size > SIZE_MAX - extra)
        return NULL;
    size_t total = size + extra;
    unsigned char *raw;
    size_t mapped = 0;
#if defined(__linux__)
    if (allocator_is_libc && size >= BG__HUGE_PAGE) {
        void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        raw = m;
        mapped = total;
    } else
#endif
    {
        raw = bg__calloc(1, total);
        if (raw == NULL)
            return NULL;
    }
    uintptr_t start = (uintptr_t)(raw + sizeof(aligned_header));
    uintptr_t aligned = (start + (align - 1)) & ~(uintptr_t)(align - 1);
    ((aligned_header *)aligned)[-1] = (aligned_header){raw, mapped, total};
    return (void *)aligned;
}

uint64_t bg__aligned_size(void *ptr, size_t (*size_of)(void *ptr))
{
    aligned_header *h = (aligned_header *)ptr - 1;
    if (h->mapped)
        return h->mapped;
    if (size_of)
        return size_of(h->raw);
    return h->size;
}

void bg__aligned_free(void *ptr)
{
    if (ptr == NULL)
        return;
    aligned_header h = ((aligned_header *)ptr)[-1];
#if defined(__linux__)
    if (h.mapped) {
        munmap(h.raw, h.mapped);
        return;
    }
#endif
    bg__free(h.raw);
}

void bg__unmap(void *addr, size_t size)
{
#if defined(__linux__)
    munmap(addr, size);
#else
    (void)addr;
    (void)size;
#endif
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

/* Huge pages are otherwise only made of written small pages by khugepaged,
 * slowly, in the background; MADV_COLLAPSE (Linux 6.1) does it in the call,
 * one huge page of copying at a time. Skipped below BG__HUGE_PAGE, and a
 * hint where it fails. */
void bg__adopt_huge_pages(void *ptr, size_t size)
{
    if (size < BG__HUGE_PAGE)
        return;
    bg__advise_huge_pages(ptr, size);
#if defined(__linux__)
#  ifndef MADV_COLLAPSE
#    define MADV_COLLAPSE 25 /* the kernel's ABI; C libraries before 2.37 lack the name */
#  endif
    uintptr_t start = ((uintptr_t)ptr + BG__HUGE_PAGE - 1) & ~(uintptr_t)(BG__HUGE_PAGE - 1);
    uintptr_t end = ((uintptr_t)ptr + size) & ~(uintptr_t)(BG__HUGE_PAGE - 1);
    if (end > start)
        (void)madvise((void *)start, end - start, MADV_COLLAPSE);
#endif
}
