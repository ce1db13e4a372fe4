/* SPDX-License-Identifier: BSD-3-Clause */
/* The allocation entry points of all of bloomgate's libraries, routed through
 * the hooks of <bloomgate/alloc.h> (bg_set_allocator). Defined once, in the
 * core (src/core/alloc.c); the remote client and the guard call the core's,
 * so one bg_set_allocator serves every library of a program. */
#ifndef BG_COMMON_ALLOC_H
#define BG_COMMON_ALLOC_H

#include <stddef.h>

#include "common/shared.h"

BG__SHARED void *bg__malloc(size_t size);
BG__SHARED void *bg__calloc(size_t count, size_t size);
/* NULL is a no-op. */
BG__SHARED void bg__free(void *ptr);
/* A copy of the string s through the hooks (release with bg__free). NULL
 * for NULL, or when out of memory. */
BG__SHARED char *bg__strdup(const char *s);

#endif
