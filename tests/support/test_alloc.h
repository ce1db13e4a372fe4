/* SPDX-License-Identifier: BSD-3-Clause */
/* A counting, failure-injecting allocator for <bloomgate/alloc.h>'s hooks
 * (sqlite's faultsim idea; test_alloc.c): install it with
 * bg_set_allocator(&fa_allocator), fail the Nth allocating call, and check
 * that nothing leaks. */
#ifndef BG_TEST_ALLOC_H
#define BG_TEST_ALLOC_H

#include "test_util.h"

/* The counts of a libc-backed allocator that fails call number fail_at
 * (1-based; 0: never). Single-threaded use only. */
typedef struct fa_state {
    long calls;     /* allocating calls so far */
    long fail_at;
    long failed;    /* injected failures */
    long live;      /* blocks handed out and not yet freed */
    long frees;
    size_t largest; /* the largest single request */
} fa_state;

extern fa_state fa;

/* The allocator, counting into `fa`. */
extern const bg_allocator fa_allocator;

/* Zeroes the counts and fails call number fail_at from now on (0: none). */
void fa_reset(long fail_at);

#endif
