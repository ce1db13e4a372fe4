/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared helpers for bloomgate's tests (test_util.c, in the bg_test_support
 * library): cmocka's includes, a deterministic key generator, and
 * assertions that print both sides plus the current context (which
 * variant, which mode) when they fail. The assertions are macros, so that
 * cmocka reports the test's file and line.
 *
 * KEYS
 * Every key is a pure function of (set, i): the same test run twice, or on
 * another machine, sees the same bytes. Two shapes:
 *   tu_key_random(set, i, buf)   0..TU_MAX_KEY bytes of binary content
 *     (NUL bytes included; about one key in 257 is the empty key). Keys may
 *     repeat, so use them where only "no false negatives" matters.
 *   tu_key_distinct(set, i, buf) TU_DISTINCT_LEN bytes: 8 bytes derived
 *     from `set`, then i little-endian. Injective in (set, i), so two sets
 *     never share a key and a set never repeats one: use them for counts
 *     and false-positive rates.
 * The randomness is SplitMix64 (Steele, Lea, Flood, "Fast Splittable
 * Pseudorandom Number Generators", 2014), whose finalizer is a bijection on
 * 64-bit values. */
#ifndef BG_TEST_UTIL_H
#define BG_TEST_UTIL_H

/* clock_gettime, pthread barriers: this header comes first in every test. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bloomgate/bloomgate.h>

#define TU_MAX_KEY 256u
#define TU_DISTINCT_LEN 16u

/* SplitMix64's finalizer: a bijection on 64-bit values. */
uint64_t tu_mix64(uint64_t z);

/* One SplitMix64 step: advances *state and returns the next output. */
uint64_t tu_next(uint64_t *state);

/* v little-endian into p[0..7]. */
void tu_store64(uint8_t *p, uint64_t v);

/* Writes key i of random-length set `set` into buf (TU_MAX_KEY bytes);
 * returns its length, 0..TU_MAX_KEY. */
size_t tu_key_random(uint64_t set, uint64_t i, uint8_t *buf);

/* Writes key i of distinct set `set` into buf (TU_DISTINCT_LEN bytes). */
size_t tu_key_distinct(uint64_t set, uint64_t i, uint8_t *buf);

/* A batch of keys laid out for the *_many calls. */
typedef struct tu_batch {
    size_t cap;           /* keys it can hold */
    size_t count;         /* keys it holds */
    uint8_t *store;       /* cap * TU_MAX_KEY bytes */
    const void **keys;    /* keys[i] = store + i * TU_MAX_KEY (or NULL for len 0, see below) */
    size_t *lens;
} tu_batch;

/* Allocates room for cap keys (the test fails if it cannot); tu_batch_free
 * frees it. */
void tu_batch_init(tu_batch *b, size_t cap);
void tu_batch_free(tu_batch *b);

/* Fills b with keys first .. first + count - 1 of a set. `random` picks
 * tu_key_random over tu_key_distinct. Empty random keys are passed as NULL
 * every other time, since (NULL, 0) is a valid key too. */
void tu_batch_fill(tu_batch *b, int random, uint64_t set, uint64_t first, size_t count);

/* Seconds since an arbitrary point, for reporting runtimes (never asserted). */
double tu_now(void);

/* An integer from the environment, or `def` when unset or empty. */
long tu_env_long(const char *name, long def);

/* The context printed with every failing TU_ assertion: tu_ctx sets it
 * (printf-style), tu_ctx_buf is it (256 bytes, one for the process). */
char *tu_ctx_buf(void);
void tu_ctx(const char *fmt, ...) CMOCKA_PRINTF_ATTRIBUTE(1, 2);

#define TU_FAIL_(...)                                                      \
    do {                                                                   \
        print_error("[%s] ", tu_ctx_buf());                                \
        print_error(__VA_ARGS__);                                          \
        fail();                                                            \
    } while (0)

/* a == b as signed 64-bit integers. */
#define TU_EQ_I(a, b)                                                              \
    do {                                                                           \
        int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                              \
        if (a_ != b_)                                                              \
            TU_FAIL_("%s == %s: %" PRId64 " != %" PRId64 "\n", #a, #b, a_, b_);    \
    } while (0)

/* a == b as unsigned 64-bit integers. */
#define TU_EQ_U(a, b)                                                              \
    do {                                                                           \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                           \
        if (a_ != b_)                                                              \
            TU_FAIL_("%s == %s: %" PRIu64 " != %" PRIu64 "\n", #a, #b, a_, b_);    \
    } while (0)

/* lo <= x <= hi as doubles (false for NaN). */
#define TU_IN_RANGE_D(x, lo, hi)                                                   \
    do {                                                                           \
        double x_ = (double)(x), lo_ = (double)(lo), hi_ = (double)(hi);           \
        if (!(x_ >= lo_ && x_ <= hi_))                                             \
            TU_FAIL_("%s = %.9g not in [%.9g, %.9g]\n", #x, x_, lo_, hi_);         \
    } while (0)

/* a <= b as doubles (false for NaN). */
#define TU_LE_D(a, b)                                                              \
    do {                                                                           \
        double a_ = (double)(a), b_ = (double)(b);                                 \
        if (!(a_ <= b_))                                                           \
            TU_FAIL_("%s <= %s: %.17g > %.17g\n", #a, #b, a_, b_);                 \
    } while (0)

/* a < b as doubles (false for NaN). */
#define TU_LT_D(a, b)                                                              \
    do {                                                                           \
        double a_ = (double)(a), b_ = (double)(b);                                 \
        if (!(a_ < b_))                                                            \
            TU_FAIL_("%s < %s: %.17g >= %.17g\n", #a, #b, a_, b_);                 \
    } while (0)

/* a == b exactly as doubles (NaN equals nothing). */
#define TU_EQ_D(a, b)                                                              \
    do {                                                                           \
        double a_ = (double)(a), b_ = (double)(b);                                 \
        if (!(a_ == b_))                                                           \
            TU_FAIL_("%s == %s: %.17g != %.17g\n", #a, #b, a_, b_);                \
    } while (0)

#define TU_TRUE(c)                                                                 \
    do {                                                                           \
        if (!(c))                                                                  \
            TU_FAIL_("%s\n", #c);                                                  \
    } while (0)

#endif
