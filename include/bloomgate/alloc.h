/* SPDX-License-Identifier: BSD-3-Clause */
/* Allocator hooks.
 *
 * Everything the library allocates goes through these four functions once
 * they are installed. (Without hooks, bit arrays of 2 MiB or more are mapped
 * with mmap on Linux so that they can get huge pages; with hooks, they come
 * from the hooks like everything else.) The
 * Redis module points them at RedisModule_Alloc & co. so that filters count
 * towards Redis's used_memory. Every allocation failure is a clean
 * BG_ENOMEM: the call frees what it took and changes nothing. */
#ifndef BLOOMGATE_ALLOC_H
#define BLOOMGATE_ALLOC_H

#include <stddef.h>

#include <bloomgate/api.h>
#include <bloomgate/error.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bg_allocator {
    void *(*malloc_fn)(size_t size);
    void *(*calloc_fn)(size_t count, size_t size);
    void *(*realloc_fn)(void *ptr, size_t size);
    void (*free_fn)(void *ptr);
} bg_allocator;

/* Installs `a` (copied; every member must be non-NULL) or, with NULL, the C
 * library's allocator. Returns BG_OK or BG_EINVAL. Not thread-safe: call it
 * once, before any other bloomgate call, and never while objects allocated
 * with the previous allocator are alive. */
BG_API int bg_set_allocator(const bg_allocator *a);

#ifdef __cplusplus
}
#endif

#endif
