/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal to bloomgate_guard: the hooks that tests use and the library
 * itself never does. Not API.
 *
 * WHY THEY EXIST
 * The Redis cache adapter's circuit breaker (redis_cache.c, CIRCUIT BREAKER)
 * is right only if a call it refuses makes no network I/O, and a refusal
 * looks, from outside, exactly like a call that timed out at once. The tests
 * (guard.test_guard_breaker, store.redis_cache) therefore count the calls
 * it sent and the calls it refused, and read the back-off in force.
 *
 * HOW THEY STAY OUT OF THE LIBRARY
 * As for the remote client's hooks (src/remote/remote_testing.h): all of
 * this exists only when compiled with BG_TESTING, which the archive
 * bloomgate_guard_testing is (built only with the tests or the bench, never
 * installed; it links bloomgate_remote_testing). The production libraries
 * are compiled without it: the adapter has no counters and the macros
 * below are nothing. scripts/check_test_hooks.sh (ctest
 * layering.test_hooks) checks that no bg__*_testing_* symbol is in them. A
 * program that links the testing archive is compiled with BG_TESTING too
 * (the archive's usage requirement). */
#ifndef BG_GUARD_TESTING_H
#define BG_GUARD_TESTING_H

#ifdef BG_TESTING

#include <stdatomic.h>
#include <stdint.h>

#include <bloomgate/guard.h>

/* The adapter's counters (the field `testing` of its struct). */
typedef struct bg__guard_testing_counts {
    atomic_uint_fast64_t attempts; /* calls sent to Redis */
    atomic_uint_fast64_t rejected; /* calls refused without I/O */
} bg__guard_testing_counts;

/* Its circuit breaker's state. */
typedef struct bg__guard_testing_breaker_state {
    uint64_t attempts;      /* calls sent to Redis */
    uint64_t rejected;      /* calls refused without I/O */
    uint64_t backoff_ms;    /* the back-off in force; 0: closed */
    uint64_t open_until_ms; /* its end (bg__now_ms); 0: closed */
} bg__guard_testing_breaker_state;

/* Reads c's breaker state into *out (redis_cache.c). */
void bg__guard_testing_breaker(bg_guard_redis_cache *c, bg__guard_testing_breaker_state *out);

/* The hook point in the adapter's code: one relaxed increment. */
#define BG__GUARD_TESTING_COUNT(c, counter)                                                 \
    ((void)atomic_fetch_add_explicit(&(c)->testing.counter, 1, memory_order_relaxed))

#else /* production: no hook */

#define BG__GUARD_TESTING_COUNT(c, counter) ((void)0)

#endif

#endif
