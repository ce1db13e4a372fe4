/* SPDX-License-Identifier: BSD-3-Clause */
/* The core's own allocation entry points beyond bg__malloc, bg__calloc and
 * bg__free (src/common/alloc.h, shared with the libraries above the core),
 * routed through the hooks of <bloomgate/alloc.h>. Internal: not exported. */
#ifndef BG_ALLOC_INTERNAL_H
#define BG_ALLOC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/alloc.h"

/* Zeroed memory of `size` bytes whose address is a multiple of `align` (a
 * power of two), from the hooks, which promise no alignment (Redis's
 * allocator included). NULL on failure or when size + align overflows.
 * Release with bg__aligned_free only. */
void *bg__aligned_calloc(size_t size, size_t align);
void bg__aligned_free(void *ptr);

/* The bytes behind a block of bg__aligned_calloc: its mapping's length,
 * size_of of what the hooks gave when size_of is not NULL, else what was
 * asked of them. */
uint64_t bg__aligned_size(void *ptr, size_t (*size_of)(void *ptr));

/* Whether the C library's allocator is in use (no hooks installed). */
bool bg__allocator_is_libc(void);

/* Arrays at least this large are aligned to it and get huge pages. */
#define BG__HUGE_PAGE ((size_t)2 << 20)

/* Unmaps a file mapping that a filter owns (bg_filter_map). */
void bg__unmap(void *addr, size_t size);

/* Asks the OS to back [ptr, ptr + size) with huge pages where it can. */
void bg__advise_huge_pages(void *ptr, size_t size);

/* The same for memory already written in small pages (an array a caller
 * hands over): the hint, and where the kernel can (MADV_COLLAPSE), the
 * merge into huge pages at once. */
void bg__adopt_huge_pages(void *ptr, size_t size);

#endif
