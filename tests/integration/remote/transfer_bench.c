/* SPDX-License-Identifier: BSD-3-Clause */
/* The measurement behind docs/PERFORMANCE.md's "Publish and fetch" table:
 * moving a whole filter between a process and Redis, for filters of a few
 * sizes, through
 *   bitmap   bg_remote_filter_publish / _fetch of a standard filter: SET and
 *            SETRANGE, then GETRANGE through a checked script, 4 MiB a call
 *   module   the same calls on the module backend (bloomgate.so): a scalable
 *            filter of the same payload size, BF.LOADCHUNK 4 MiB a call,
 *            the rename; COPY, then BF.SCANDUMP 16 MiB a call
 * and bg_remote_filter_create of an empty filter of that size (bitmap: one
 * zero-filled SETRANGE; module: BF.RESERVE),
 * on one local redis-server, modes interleaved, best of ROUNDS. For each it
 * prints the wall time (MiB/s of payload) and the longest single command the
 * server ran meanwhile (SLOWLOG, every command logged), which is how long
 * every other client of that server waited at worst.
 *   BLOOMGATE_MODULE=.../bloomgate.so transfer_bench [rounds, default 3] */
#include <stdbool.h>

#include "test_util.h"
#include "redis_server.h"

#include <bloomgate/filter.h>
#include <bloomgate/remote.h>

enum { BITMAP, MODULE, MODES };
static const char *const mode_name[MODES] = {"bitmap", "module"};

/* The longest command in the slow log since the last reset: its name into
 * `what`, its duration in microseconds returned. */
static long long longest(redisContext *c, char *what, size_t size)
{
    redisReply *rep = redisCommand(c, "SLOWLOG GET -1");
    long long best = 0;
    snprintf(what, size, "-");
    for (size_t i = 0; rep && rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
        redisReply *e = rep->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 4)
            continue;
        long long us = e->element[2]->integer;
        redisReply *argv = e->element[3];
        if (us > best && argv->type == REDIS_REPLY_ARRAY && argv->elements > 0) {
            best = us;
            snprintf(what, size, "%s", argv->element[0]->str);
        }
    }
    if (rep)
        freeReplyObject(rep);
    freeReplyObject(redisCommand(c, "SLOWLOG RESET"));
    return best;
}

/* An operation's best run: seconds, and the longest command the server ran
 * meanwhile (us) and its name. */
typedef struct timing {
    double s;
    long long us;
    char cmd[24];
} timing;

/* Empties the slow log and returns the time: call right before the
 * operation. */
static double start(redisContext *c)
{
    char what[24];
    (void)longest(c, what, sizeof what);
    return tu_now();
}

/* Call right after the operation, which began at t0 and returned rc: exits
 * on an error, else keeps the run in *best if it is the fastest so far. */
static void keep(timing *best, double t0, int rc, redisContext *c, bg_remote *r,
                 const char *what_op)
{
    double t = tu_now() - t0;
    char what[24];
    long long us = longest(c, what, sizeof what);
    if (rc != BG_OK) {
        fprintf(stderr, "%s: %s\n", what_op, bg_remote_errstr(r));
        exit(1);
    }
    if (t < best->s) {
        best->s = t;
        best->us = us;
        snprintf(best->cmd, sizeof best->cmd, "%s", what);
    }
}

static bg_filter *filter_of(int mode, uint64_t bytes)
{
    bg_filter *f;
    /* Scalable: one layer of about `bytes` (p0 = p / 2: 11.04 bits a key,
     * rounded up to whole words), allowed to grow to 512 MiB in all. */
    bg_filter_options o = mode == BITMAP
                              ? (bg_filter_options){.variant = BG_VARIANT_STANDARD,
                                                    .bits = bytes * 8, .hashes = 7}
                              : (bg_filter_options){.variant = BG_VARIANT_SCALABLE,
                                                    .capacity = (uint64_t)((double)bytes * 8 /
                                                                           11.04),
                                                    .error_rate = 0.01,
                                                    .max_bytes = UINT64_C(512) << 20};
    if (bg_filter_new(&f, &o) != BG_OK) {
        fprintf(stderr, "cannot make a %s filter of %llu bytes\n", mode_name[mode],
                (unsigned long long)bytes);
        exit(1);
    }
    return f;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    const char *module = getenv("BLOOMGATE_MODULE");
    if (!module || !*module) {
        fprintf(stderr, "transfer_bench: set BLOOMGATE_MODULE to bloomgate.so\n");
        return 2;
    }
    static const uint64_t sizes[] = {UINT64_C(16) << 20, UINT64_C(128) << 20,
                                     UINT64_C(400) << 20};
    enum { SIZES = sizeof sizes / sizeof *sizes };
    ts_server s;
    ts_start(&s, module);
    bg_remote *r;
    bg_remote_options ro = {.port = s.port, .command_timeout_ms = 60000};
    if (bg_remote_connect(&r, &ro) != BG_OK)
        return 1;
    redisContext *c = ts_raw(&s);
    freeReplyObject(redisCommand(c, "CONFIG SET slowlog-log-slower-than 0"));
    freeReplyObject(redisCommand(c, "CONFIG SET slowlog-max-len 100000"));

    /* [size][mode][publish, fetch, create]: the best runs. */
    enum { PUBLISH, FETCH, CREATE, OPS };
    timing best[SIZES][MODES][OPS];
    uint64_t payload[SIZES][MODES];
    for (int i = 0; i < SIZES; i++)
        for (int m = 0; m < MODES; m++)
            for (int op = 0; op < OPS; op++)
                best[i][m][op] = (timing){.s = 1e30};
    for (int round = 0; round < rounds; round++)
        for (int i = 0; i < SIZES; i++)
            for (int m = 0; m < MODES; m++) {
                bg_filter *local = filter_of(m, sizes[i]);
                payload[i][m] = bg_filter_bytes(local);
                bg_remote_backend be = m == BITMAP ? BG_REMOTE_BITMAP : BG_REMOTE_MODULE;
                char name[16], op_name[32];
                snprintf(name, sizeof name, "t%d", m);
                snprintf(op_name, sizeof op_name, "%s publish", mode_name[m]);
                double t0 = start(c);
                int rc = bg_remote_filter_publish(r, name, be, local);
                keep(&best[i][m][PUBLISH], t0, rc, c, r, op_name);
                bg_filter_free(local);

                bg_remote_filter *f;
                if (bg_remote_filter_open(&f, r, name, be) != BG_OK)
                    return 1;
                bg_filter *back = NULL;
                snprintf(op_name, sizeof op_name, "%s fetch", mode_name[m]);
                t0 = start(c);
                rc = bg_remote_filter_fetch(f, &back);
                keep(&best[i][m][FETCH], t0, rc, c, r, op_name);
                bg_filter_free(back);
                (void)bg_remote_filter_delete(r, name, be);
                bg_remote_filter_close(f);

                bg_remote_filter_options co =
                    m == BITMAP ? (bg_remote_filter_options){.backend = be,
                                                             .bits = sizes[i] * 8,
                                                             .hashes = 7, .seed = 1}
                                : (bg_remote_filter_options){
                                      .backend = be, .error_rate = 0.005,
                                      .capacity = (uint64_t)((double)sizes[i] * 8 / 11.04)};
                snprintf(op_name, sizeof op_name, "%s create", mode_name[m]);
                t0 = start(c);
                rc = bg_remote_filter_create(&f, r, name, &co);
                keep(&best[i][m][CREATE], t0, rc, c, r, op_name);
                (void)bg_remote_filter_delete(r, name, be);
                bg_remote_filter_close(f);
            }

    printf("| payload | backend | publish s | MiB/s | longest command | fetch s | MiB/s | "
           "longest command | create s | longest command |\n"
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < SIZES; i++)
        for (int m = 0; m < MODES; m++) {
            double mib = (double)payload[i][m] / 1048576.0;
            printf("| %.0f MiB | %s", mib, mode_name[m]);
            for (int op = 0; op < OPS; op++) {
                const timing *b = &best[i][m][op];
                if (op != CREATE)
                    printf(" | %.3f | %.0f", b->s, mib / b->s);
                else
                    printf(" | %.3f", b->s);
                printf(" | %.1f ms (%s)", (double)b->us / 1000.0, b->cmd);
            }
            printf(" |\n");
        }
    redisFree(c);
    bg_remote_close(r);
    ts_stop(&s);
    return 0;
}
