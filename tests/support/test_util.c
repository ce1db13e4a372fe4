/* SPDX-License-Identifier: BSD-3-Clause */
/* The definitions behind test_util.h (its comments say what each does). */
#include "test_util.h"

uint64_t tu_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint64_t tu_next(uint64_t *state)
{
    *state += UINT64_C(0x9e3779b97f4a7c15);
    return tu_mix64(*state);
}

void tu_store64(uint8_t *p, uint64_t v)
{
    for (int b = 0; b < 8; b++)
        p[b] = (uint8_t)(v >> (8 * b));
}

size_t tu_key_random(uint64_t set, uint64_t i, uint8_t *buf)
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

size_t tu_key_distinct(uint64_t set, uint64_t i, uint8_t *buf)
{
    tu_store64(buf, tu_mix64(set + 0xd157));
    tu_store64(buf + 8, i);
    return TU_DISTINCT_LEN;
}

void tu_batch_init(tu_batch *b, size_t cap)
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

void tu_batch_free(tu_batch *b)
{
    free(b->store);
    free((void *)b->keys);
    free(b->lens);
    memset(b, 0, sizeof *b);
}

void tu_batch_fill(tu_batch *b, int random, uint64_t set, uint64_t first, size_t count)
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

double tu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

long tu_env_long(const char *name, long def)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : def;
}

char *tu_ctx_buf(void)
{
    static char buf[256];
    return buf;
}

void tu_ctx(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tu_ctx_buf(), 256, fmt, ap);
    va_end(ap);
}
