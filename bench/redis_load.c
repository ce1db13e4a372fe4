/* SPDX-License-Identifier: BSD-3-Clause */
/* redis_load: redis-benchmark's load pattern (C connections, P requests in
 * flight on each, random arguments) without its limits: redis-benchmark
 * reads -r as a C int and zero-pads __rand_int__ to 12 digits, which GETBIT
 * and SETBIT refuse as a bit offset. Here every __rand_int__ in an argument
 * is its own number in [0, r) (r up to 2^63), a plain decimal, or with -z
 * zero-padded to 12 digits as redis-benchmark makes it (to hit the items a
 * benchmark added under those names). -s picks the random sequence, so that
 * two runs can add different items; -i replaces the random numbers by 0, 1,
 * 2, ... in the order they are sent (wrapping at r), to fill a filter with
 * exactly the items 0..r-1. bench/redis_bench.py drives it.
 *
 *   redis_load -p PORT [-n REQUESTS] [-c CONNECTIONS] [-P PIPELINE] [-r RANGE]
 *              [-s SEED] [-z] [-i] CMD ARG...
 *
 * Prints requests per second and the number of integer replies equal to 1
 * (counting each element of an array reply), from which a caller reads how
 * many items BF.MEXISTS found or BF.MADD added. Exits 1 on a connection
 * error or an error reply (a benchmark of errors measures nothing). */
#define _POSIX_C_SOURCE 200809L
#include <hiredis.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CONNS 256
#define MAX_ARGS 256
#define TOKEN "__rand_int__"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static int zero_pad;
static int sequential;
static uint64_t counter;

/* splitmix64: uniform enough for picking offsets, and the same every run. */
static uint64_t next_random(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* The next __rand_int__: random, or with -i the next of 0, 1, 2, ... */
static uint64_t next_number(uint64_t range)
{
    if (sequential)
        return counter++ % range;
    return next_random() % range;
}

/* argv[i] with each __rand_int__ replaced by a decimal in [0, range). */
static size_t expand(const char *arg, uint64_t range, char *out, size_t cap)
{
    size_t n = 0;
    while (*arg && n + 24 < cap) {
        if (strncmp(arg, TOKEN, strlen(TOKEN)) == 0) {
            n += (size_t)snprintf(out + n, cap - n, zero_pad ? "%012" PRIu64 : "%" PRIu64,
                                  next_number(range));
            arg += strlen(TOKEN);
        } else {
            out[n++] = *arg++;
        }
    }
    out[n] = '\0';
    return n;
}

/* A decimal in [1, 2^63), or 0 when it is not one (a range of 0 is refused). */
static uint64_t parse_u63(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v >= (1ull << 63))
        return 0;
    return (uint64_t)v;
}

/* Integer replies equal to 1: the reply itself or its elements. */
static uint64_t count_ones(const redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer == 1;
    uint64_t n = 0;
    if (r->type == REDIS_REPLY_ARRAY)
        for (size_t k = 0; k < r->elements; k++)
            n += r->element[k]->type == REDIS_REPLY_INTEGER && r->element[k]->integer == 1;
    return n;
}

static int usage(void)
{
    fprintf(stderr, "usage: redis_load -p PORT [-n REQUESTS] [-c CONNECTIONS] [-P PIPELINE] "
                    "[-r RANGE] [-s SEED] [-z] [-i] CMD ARG...\n");
    return 2;
}

int main(int argc, char **argv)
{
    int port = 0, conns = 16, pipeline = 1;
    long long requests = 100000;
    uint64_t range = 1000000;
    int i = 1;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (strcmp(argv[i], "-z") == 0 || strcmp(argv[i], "-i") == 0) {
            *(argv[i][1] == 'z' ? &zero_pad : &sequential) = 1;
            i--;
            continue;
        }
        if (strcmp(argv[i], "-p") == 0)
            port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-n") == 0)
            requests = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "-c") == 0)
            conns = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-P") == 0)
            pipeline = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-r") == 0)
            range = parse_u63(argv[i + 1]);
        else if (strcmp(argv[i], "-s") == 0)
            rng_state ^= parse_u63(argv[i + 1]) * 0xd1342543de82ef95u;
        else
            return usage();
    }
    int nargs = argc - i;
    if (port <= 0 || conns < 1 || conns > MAX_CONNS || pipeline < 1 || requests < 1 ||
        range < 1 || nargs < 1 || nargs > MAX_ARGS)
        return usage();

    redisContext *c[MAX_CONNS];
    for (int j = 0; j < conns; j++) {
        c[j] = redisConnect("127.0.0.1", port);
        if (c[j] == NULL || c[j]->err) {
            fprintf(stderr, "redis_load: cannot connect to port %d\n", port);
            return 1;
        }
    }
    static char bufs[MAX_ARGS][256];
    const char *args[MAX_ARGS];
    size_t lens[MAX_ARGS];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long long sent = 0;
    uint64_t ones = 0;
    while (sent < requests) {
        /* P requests on every connection, then every reply: C x P in flight. */
        int round[MAX_CONNS];
        for (int j = 0; j < conns; j++) {
            round[j] = 0;
            for (int q = 0; q < pipeline && sent < requests; q++, sent++, round[j]++) {
                for (int a = 0; a < nargs; a++) {
                    lens[a] = expand(argv[i + a], range, bufs[a], sizeof bufs[a]);
                    args[a] = bufs[a];
                }
                redisAppendCommandArgv(c[j], nargs, args, lens);
            }
        }
        for (int j = 0; j < conns; j++) {
            for (int q = 0; q < round[j]; q++) {
                redisReply *r;
                if (redisGetReply(c[j], (void **)&r) != REDIS_OK) {
                    fprintf(stderr, "redis_load: connection error\n");
                    return 1;
                }
                if (r->type == REDIS_REPLY_ERROR) {
                    fprintf(stderr, "redis_load: error reply: %s\n", r->str);
                    return 1;
                }
                ones += count_ones(r);
                freeReplyObject(r);
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%.0f %" PRIu64 "\n", (double)requests / s, ones);
    for (int j = 0; j < conns; j++)
        redisFree(c[j]);
    return 0;
}
