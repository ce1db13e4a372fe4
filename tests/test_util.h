/* Shared helpers for bloomgate's tests: cmocka's includes, a deterministic
 * key generator, and assertions that print both sides plus the current
 * context (which variant, which mode) when they fail.
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

static inline uint64_t tu_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* One SplitMix64 step: advances *state and returns the next output. */
static inline uint64_t tu_next(uint64_t *state)
{
    *state += UINT64_C(0x9e3779b97f4a7c15);
    return tu_mix64(*state);
}

static inline void tu_store64(uint8_t *p, uint64_t v)
{
    for (int b = 0; b < 8; b++)
        p[b] = (uint8_t)(v >> (8 * b));
}

/* Writes key i of random-length set `set` into buf (TU_MAX_KEY bytes);
 * returns its length, 0..TU_MAX_KEY. */
static inline size_t tu_key_random(uint64_t set, uint64_t i, uint8_t *buf)
{
    uint64_t st = tu_mix64(set * UINT64_C(0x9e3779b97f4a7c15) + 0x5eed) ^ i;
    st = tu_mix64(st);
    size_t len = (size_t)(tu_next(&st) % (TU_MAX_KEY + 1));
    for (size_t at = 0; at < len; at += 8) {
        uint64_t r = tu_next(&st);
        size_t n = len - at < 8 ? len - at : 8;
        for (size_t b = 0; b < n; b++)
            buf[at + b] = (uint8_t)(r >> (8 * b));
    }
    return len;
}

/* Writes key i of distinct set `set` into buf (TU_DISTINCT_LEN bytes). */
static inline size_t tu_key_distinct(uint64_t set, uint64_t i, uint8_t *buf)
{
    tu_store64(buf, tu_mix64(set + 0xd157));
    tu_store64(buf + 8, i);
    return TU_DISTINCT_LEN;
}

/* A batch of keys laid out for the *_many calls. */
typedef struct tu_batch {
    size_t cap;           /* keys it can hold */
    size_t count;         /* keys it holds */
    uint8_t *store;       /* cap * TU_MAX_KEY bytes */
    const void **keys;    /* keys[i] = store + i * TU_MAX_KEY (or NULL for len 0, see below) */
    size_t *lens;
} tu_batch;

static inline void tu_batch_init(tu_batch *b, size_t cap)
{
    b->cap = cap;
    b->count = 0;
    b->store = malloc(cap * TU_MAX_KEY);
    b->keys = malloc(cap * sizeof *b->keys);
    b->lens = malloc(cap * sizeof *b->lens);
    assert_non_null(b->store);
    assert_non_null(b->keys);
    assert_non_null(b->lens);
}

static inline void tu_batch_free(tu_batch *b)
{
    free(b->store);
    free((void *)b->keys);
    free(b->lens);
    memset(b, 0, sizeof *b);
}

/* Fills b with keys first .. first + count - 1 of a set. `random` picks
 * tu_key_random over tu_key_distinct. Empty random keys are passed as NULL
 * every other time, since (NULL, 0) is a valid key too. */
static inline void tu_batch_fill(tu_batch *b, int random, uint64_t set, uint64_t first,
                                 size_t count)
{
    assert_true(count <= b->cap);
    for (size_t j = 0; j < count; j++) {
        uint8_t *buf = b->store + j * TU_MAX_KEY;
        uint64_t i = first + j;
        size_t len = random ? tu_key_random(set, i, buf) : tu_key_distinct(set, i, buf);
        b->lens[j] = len;
        b->keys[j] = len == 0 && (i & 1) ? NULL : buf;
    }
    b->count = count;
}

/* Seconds since an arbitrary point, for reporting runtimes (never asserted). */
static inline double tu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* An integer from the environment, or `def` when unset or empty. */
static inline long tu_env_long(const char *name, long def)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : def;
}

/* The context printed with every failing TU_ assertion. */
static inline char *tu_ctx_buf(void)
{
    static char buf[256];
    return buf;
}

static inline void tu_ctx(const char *fmt, ...) CMOCKA_PRINTF_ATTRIBUTE(1, 2);
static inline void tu_ctx(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tu_ctx_buf(), 256, fmt, ap);
    va_end(ap);
}

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
