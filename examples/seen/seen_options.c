/* SPDX-License-Identifier: BSD-3-Clause */
/* The command line of bloomgate-seen: --help, the options and their
 * checks, and the exits on a usage error (status 2) or a failure (1). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seen.h"

/* ---- configuration -------------------------------------------------------- */

static const column COL_LOCAL = {"in-process", FILTER_NONE, EXACT_LOCAL};
static const column COL_LOCAL_F = {"in-process+filter", FILTER_LOCAL, EXACT_LOCAL};
static const column COL_REDIS = {"redis", FILTER_NONE, EXACT_REDIS};
static const column COL_REDIS_F = {"redis+filter", FILTER_REMOTE, EXACT_REDIS};
static const column COL_HYBRID = {"redis+local-filter", FILTER_LOCAL, EXACT_REDIS};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: " PROG " [options]\n"
            "Per-user Bloom filters in front of an exact 'seen' store: a request drops\n"
            "the candidate articles its user has seen (examples/seen/README.md).\n"
            "\n"
            "  --mode M          local | redis | hybrid | all, or a comma list (default local)\n"
            "                    local: in-process filters + in-process exact store\n"
            "                    redis: module filters bf:seen:<u> + SETs seen:<u>\n"
            "                    hybrid: in-process filters + SETs seen:<u>\n"
            "                    all: local and redis, each with and without filters\n"
            "  --no-filter       the baseline: every candidate goes to the exact store\n"
            "  --users N         users (default 10000)\n"
            "  --history N       seen articles per user (default 200)\n"
            "  --articles N      catalogue size (default 1000000)\n"
            "  --candidates N    candidates per request (default 120)\n"
            "  --seen-share X    expected share of candidates the user has seen (default 0.025)\n"
            "  --requests N      requests per column (default: run --seconds)\n"
            "  --seconds S       seconds per column (default 2)\n"
            "  --threads N       serving threads, local columns only (default 1)\n"
            "  --error-rate P    filter false-positive rate at capacity (default 0.01)\n"
            "  --capacity N      filter capacity per user, >= history (default: history)\n"
            "  --variant V       in-process filter: blocked | standard (default blocked)\n"
            "  --redis HOST:PORT redis-server with bloomgate.so (default 127.0.0.1:6379)\n"
            "  --load            (re)load the users into Redis first (else they must be there)\n"
            "  --seed N          seed of histories and requests (default 1)\n"
            "  --help            this text\n"
            "Exit status: 0 ok, 1 failure (Redis, a mismatch), 2 bad usage.\n");
}

_Noreturn static void die_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see --help)\n");
    va_end(ap);
    exit(2);
}

_Noreturn void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static uint64_t parse_u64(const char *flag, const char *v, uint64_t lo, uint64_t hi)
{
    char *end;
    errno = 0;
    if (!*v || *v == '-' || *v == '+')
        die_usage("%s: '%s' is not a number", flag, v);
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end)
        die_usage("%s: '%s' is not a number", flag, v);
    if (x < lo || x > hi)
        die_usage("%s: %llu is out of range [%" PRIu64 ", %" PRIu64 "]", flag, x, lo, hi);
    return (uint64_t)x;
}

/* A double in (lo, hi) (open) or [lo, hi] (closed). */
static double parse_double(const char *flag, const char *v, double lo, double hi, int closed)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || !*v || *end || x != x)
        die_usage("%s: '%s' is not a number", flag, v);
    if (closed ? (x < lo || x > hi) : (x <= lo || x >= hi))
        die_usage("%s: %s is out of range %c%g, %g%c", flag, v, closed ? '[' : '(', lo, hi,
                  closed ? ']' : ')');
    return x;
}

static void add_column(config *c, column col)
{
    for (size_t i = 0; i < c->ncols; i++)
        if (strcmp(c->cols[i].name, col.name) == 0)
            return;
    c->cols[c->ncols++] = col;
}

static void parse_modes(config *c, const char *v, int no_filter)
{
    char buf[128];
    if (strlen(v) >= sizeof buf)
        die_usage("--mode: '%s' is too long", v);
    strcpy(buf, v);
    c->ncols = 0;
    for (char *save, *m = strtok_r(buf, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        if (strcmp(m, "local") == 0) {
            add_column(c, no_filter ? COL_LOCAL : COL_LOCAL_F);
        } else if (strcmp(m, "redis") == 0) {
            add_column(c, no_filter ? COL_REDIS : COL_REDIS_F);
        } else if (strcmp(m, "hybrid") == 0) {
            add_column(c, no_filter ? COL_REDIS : COL_HYBRID);
        } else if (strcmp(m, "all") == 0) {
            if (no_filter)
                die_usage("--no-filter with --mode all: 'all' has the baselines already");
            add_column(c, COL_LOCAL);
            add_column(c, COL_LOCAL_F);
            add_column(c, COL_REDIS);
            add_column(c, COL_REDIS_F);
        } else {
            die_usage("--mode: unknown mode '%s' (local, redis, hybrid, all)", m);
        }
    }
    if (c->ncols == 0)
        die_usage("--mode: no mode given");
}

void parse_args(config *c, int argc, char **argv)
{
    *c = (config){.users = 10000,
                  .history = 200,
                  .articles = 1000000,
                  .candidates = 120,
                  .seen_share = 0.025,
                  .error_rate = 0.01,
                  .seconds = 2,
                  .threads = 1,
                  /* measured 1.8x faster than standard here, for 7% more
                   * bits (README.md) */
                  .variant = BG_VARIANT_BLOCKED,
                  .host = "127.0.0.1",
                  .port = 6379,
                  .seed = 1};
    const char *mode = "local";
    int seconds_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(a, "--load") == 0) {
            c->load = 1;
            continue;
        }
        if (strcmp(a, "--no-filter") == 0) {
            c->no_filter = 1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0)
            die_usage("unexpected argument '%s'", a);
        /* --flag VALUE or --flag=VALUE */
        char flag[32];
        const char *v;
        const char *eq = strchr(a, '=');
        if (eq) {
            size_t n = (size_t)(eq - a);
            if (n >= sizeof flag)
                die_usage("unknown option '%s'", a);
            memcpy(flag, a, n);
            flag[n] = '\0';
            v = eq + 1;
        } else {
            if (strlen(a) >= sizeof flag)
                die_usage("unknown option '%s'", a);
            strcpy(flag, a);
            if (i + 1 >= argc)
                die_usage("%s needs a value", flag);
            v = argv[++i];
        }
        if (strcmp(flag, "--mode") == 0) {
            mode = v;
        } else if (strcmp(flag, "--users") == 0) {
            c->users = (uint32_t)parse_u64(flag, v, 1, UINT32_C(1) << 30);
        } else if (strcmp(flag, "--history") == 0) {
            c->history = (uint32_t)parse_u64(flag, v, 1, 100000);
        } else if (strcmp(flag, "--articles") == 0) {
            c->articles = (uint32_t)parse_u64(flag, v, 2, UINT32_C(1) << 31);
        } else if (strcmp(flag, "--candidates") == 0) {
            c->candidates = (uint32_t)parse_u64(flag, v, 1, 4096);
        } else if (strcmp(flag, "--seen-share") == 0) {
            c->seen_share = parse_double(flag, v, 0, 1, 1);
        } else if (strcmp(flag, "--requests") == 0) {
            c->requests = parse_u64(flag, v, 1, UINT64_C(1) << 40);
        } else if (strcmp(flag, "--seconds") == 0) {
            c->seconds = parse_double(flag, v, 0, 3600, 0);
            seconds_given = 1;
        } else if (strcmp(flag, "--threads") == 0) {
            c->threads = (unsigned)parse_u64(flag, v, 1, 256);
        } else if (strcmp(flag, "--error-rate") == 0) {
            c->error_rate = parse_double(flag, v, 0, 1, 0);
        } else if (strcmp(flag, "--capacity") == 0) {
            c->capacity = parse_u64(flag, v, 1, UINT64_C(1) << 32);
        } else if (strcmp(flag, "--variant") == 0) {
            if (strcmp(v, "blocked") == 0)
                c->variant = BG_VARIANT_BLOCKED;
            else if (strcmp(v, "standard") == 0)
                c->variant = BG_VARIANT_STANDARD;
            else
                die_usage("--variant: '%s' is not blocked or standard", v);
        } else if (strcmp(flag, "--redis") == 0) {
            const char *colon = strrchr(v, ':');
            if (!colon || colon == v || (size_t)(colon - v) >= sizeof c->host)
                die_usage("--redis: '%s' is not HOST:PORT", v);
            memcpy(c->host, v, (size_t)(colon - v));
            c->host[colon - v] = '\0';
            c->port = (int)parse_u64("--redis port", colon + 1, 1, 65535);
        } else if (strcmp(flag, "--seed") == 0) {
            c->seed = parse_u64(flag, v, 0, UINT64_MAX);
        } else {
            die_usage("unknown option '%s'", flag);
        }
    }
    if (c->requests && seconds_given)
        die_usage("--requests and --seconds: give one");
    if (!c->capacity)
        c->capacity = c->history;
    if (c->capacity < c->history)
        die_usage("--capacity %" PRIu64 " is below --history %" PRIu32
                  " (a filter holds the whole history)",
                  c->capacity, c->history);
    /* The unseen candidates are drawn by rejection from the catalogue: keep
     * it at least twice what one request can exclude. */
    if ((uint64_t)c->articles < 2u * ((uint64_t)c->history + c->candidates))
        die_usage("--articles %" PRIu32 " must be at least 2 x (history + candidates) = %" PRIu64,
                  c->articles, 2u * ((uint64_t)c->history + c->candidates));
    if ((uint64_t)c->users * c->history > (UINT64_C(1) << 31))
        die_usage("--users x --history is above 2^31 pairs");
    parse_modes(c, mode, c->no_filter);
    int local_only = 1;
    for (size_t i = 0; i < c->ncols; i++)
        if (c->cols[i].exact == EXACT_REDIS)
            local_only = 0;
    if (local_only && c->load)
        die_usage("--load needs a Redis mode (redis, hybrid, all)");
    if (c->threads > 1 && c->ncols == 1 && c->cols[0].exact == EXACT_REDIS)
        die_usage("--threads applies to the in-process columns only (one Redis connection)");
}
