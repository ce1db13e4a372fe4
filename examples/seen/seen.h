/* SPDX-License-Identifier: BSD-3-Clause */
/* What the files of bloomgate-seen share (seen.c describes the program):
 * the configuration, the users, the latency histogram, the Redis
 * connection and a column's results, and the functions each file gives
 * the others. Private to examples/seen. */
#ifndef SEEN_SEEN_H
#define SEEN_SEEN_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include <bloomgate/filter.h>
#include <bloomgate/remote.h>

#include "pairset.h"

#define PROG "bloomgate-seen"

/* ---- configuration (seen_options.c) -------------------------------------- */

enum { FILTER_NONE, FILTER_LOCAL, FILTER_REMOTE };
enum { EXACT_LOCAL, EXACT_REDIS };

typedef struct column {
    const char *name;
    int filter; /* FILTER_* */
    int exact;  /* EXACT_* */
} column;

#define MAX_COLUMNS 8

typedef struct config {
    uint32_t users, history, articles, candidates;
    double seen_share, error_rate;
    uint64_t capacity; /* 0: history */
    uint64_t requests; /* 0: run for `seconds` */
    double seconds;
    unsigned threads;
    bg_variant variant;
    char host[256];
    int port;
    uint64_t seed;
    int load;
    int no_filter;
    column cols[MAX_COLUMNS];
    size_t ncols;
} config;

_Noreturn void die(const char *fmt, ...);
void parse_args(config *c, int argc, char **argv);

/* ---- the users (seen_world.c) ------------------------------------------------ */

typedef struct world {
    const config *cfg;
    uint32_t *hist; /* users x history article ids, user u's at u * history */
    pairset truth;  /* every (user, article) seen: the in-process exact store */
    bg_filter **filters; /* in-process filters, or NULL */
} world;

/* An id in decimal: at most 10 digits. */
#define KEY_MAX 11

uint64_t splitmix(uint64_t *s);
uint32_t below(uint64_t *s, uint32_t n);
double unit(uint64_t *s);
double now_s(void);
void keys_format(const uint32_t *ids, size_t n, char *buf, const void **keys, size_t *lens);
void world_build(world *w, const config *c);
void world_filters(world *w);
void world_free(world *w);

/* ---- Redis (seen_redis.c) ---------------------------------------------------- */

typedef struct redis_conn {
    redisContext *rc;     /* the exact store: SETs */
    bg_remote *r;         /* the filters */
    bg_remote_filter **rf; /* one per user, or NULL */
    double filter_used;    /* used_memory grown per user by its filter; < 0: not loaded */
} redis_conn;

/* The server's total microseconds so far (INFO commandstats; 0 if it does
 * not say) in SMISMEMBER and in every filter command, bf.* and bg.*: the
 * filter handles may send BG.MEXISTS or BF.MEXISTS, so the count follows
 * whatever they send. */
#define MAX_FILTER_CMDS 24
typedef struct server_usec {
    double exact, filter;
    size_t ncmds;
    struct {
        char name[32];
        double calls, usec;
    } cmd[MAX_FILTER_CMDS];
} server_usec;

/* The filter commands called between two snapshots, upper case, joined by
 * '+' (e.g. "BG.MEXISTS"), into buf; "-" when none. */
void server_usec_names(const server_usec *before, const server_usec *after, char *buf,
                       size_t len);

void redis_connect(redis_conn *rs, const config *c);
void redis_close(redis_conn *rs, const config *c);
void redis_load(const world *w, redis_conn *rs);
void redis_check(const world *w, redis_conn *rs, int filters);
uint64_t redis_memory(redis_conn *rs, const char *key);
double redis_filter_memory(redis_conn *rs, uint32_t users);
server_usec redis_server_usec(redis_conn *rs);

/* ---- serving a column (seen_run.c) ------------------------------------------ */

/* Nanoseconds, log-linear: exact below 64, then 32 buckets per power of
 * two (each at most 1/32 = 3% wide). 64 + 58 x 32 buckets cover 2^64. */
#define HIST_SUB 32u
#define HIST_BUCKETS (64u + 58u * HIST_SUB)

typedef struct hist {
    uint64_t n[HIST_BUCKETS];
    uint64_t count;
} hist;

typedef struct result {
    column col;
    unsigned threads;
    hist h;
    uint64_t requests, filter_negatives, exact_lookups, exact_calls;
    uint64_t unseen, false_positives, false_negatives, mismatches;
    double rate;         /* requests/s */
    double serve_s;      /* time spent serving, per thread */
    double filter_bytes; /* per user; < 0: no filter */
    double exact_bytes;  /* per user */
    double server_exact, server_filter; /* Redis's time in the column's commands; < 0: none */
    char filter_cmds[64]; /* the filter commands the column sent, or "-" */
    double filter_used;   /* used_memory per user of the Redis filters; < 0: unknown */
} result;

void *xcalloc(size_t n, size_t size);
double hist_quantile(const hist *h, double q);
void run_column(const world *w, column col, redis_conn *rs, result *res);

#endif
