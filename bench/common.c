/* SPDX-License-Identifier: BSD-3-Clause */
/* The clock, the statistics helpers and the key sets (see bench.h). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, size_t count)
{
    if (count == 0)
        return 0;
    qsort(v, count, sizeof *v, cmp_double);
    return count % 2 ? v[count / 2] : (v[count / 2 - 1] + v[count / 2]) / 2;
}

uint64_t bench_splitmix(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* A bijection of [0, 2^34): each step (a multiply by an odd constant, or
 * x ^= x >> s) is invertible mod 2^34. */
static uint64_t scramble34(uint64_t x)
{
    const uint64_t mask = (UINT64_C(1) << 34) - 1;
    x = (x * UINT64_C(0x9e3779b97f4a7c15)) & mask;
    x ^= x >> 17;
    x = (x * UINT64_C(0xbf58476d1ce4e5b9)) & mask;
    x ^= x >> 15;
    x = (x * UINT64_C(0x94d049bb133111eb)) & mask;
    x ^= x >> 16;
    return x;
}

#define KEY_PREFIX "product:"
#define KEY_PREFIX_LEN (sizeof KEY_PREFIX - 1)

void bench_keys_make(bench_keys *ks, uint64_t first, size_t count)
{
    ks->first = first;
    ks->count = count;
    ks->fixed_len = 0;
}

void bench_keys_make_fixed(bench_keys *ks, uint64_t first, size_t count, size_t len)
{
    bench_keys_make(ks, first, count);
    ks->fixed_len = len;
}

static void fixed_window(bench_keys *ks, size_t at, size_t n)
{
    size_t len = ks->fixed_len;
    for (size_t i = 0; i < n; i++) {
        unsigned char *k = (unsigned char *)ks->arena + i * len;
        uint64_t id = scramble34(ks->first + at + i), fill = id;
        for (size_t j = 0; j < 8; j++)
            k[j] = (unsigned char)(id >> (8 * j));
        for (size_t j = 8; j < len; j++) {
            if (j % 8 == 0)
                fill = bench_splitmix(&fill);
            k[j] = (unsigned char)(fill >> (8 * (j % 8)));
        }
        ks->ptr[i] = k;
        ks->len[i] = len;
    }
}

void bench_keys_window(bench_keys *ks, size_t at, size_t n)
{
    if (ks->fixed_len) {
        fixed_window(ks, at, n);
        return;
    }
    char *out = ks->arena;
    for (size_t i = 0; i < n; i++) {
        uint64_t id = scramble34(ks->first + at + i);
        char digits[20];
        size_t nd = 0;
        do {
            digits[nd++] = (char)('0' + id % 10);
            id /= 10;
        } while (id != 0);
        ks->ptr[i] = out;
        memcpy(out, KEY_PREFIX, KEY_PREFIX_LEN);
        out += KEY_PREFIX_LEN;
        while (nd > 0)
            *out++ = digits[--nd];
        ks->len[i] = (size_t)(out - (const char *)ks->ptr[i]);
    }
}

double bench_anon_huge_mib(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (f == NULL)
        return -1;
    char buf[256];
    double kb = -1;
    while (fgets(buf, sizeof buf, f))
        if (sscanf(buf, "AnonHugePages: %lf kB", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb / 1024;
}
