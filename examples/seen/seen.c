/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate-seen: drop the candidate articles a user has already seen.
 *
 * WHAT IT MODELS
 * A recommender asks, per request, which of C candidate articles (120) one
 * user has not seen yet; nearly all of them (97.5%) have not been seen. The
 * exact answer lives in an exact store: every user's history of H seen
 * article ids (200, drawn from a catalogue of A articles). Each user also
 * has a Bloom filter of that history, sized for H (or --capacity) at
 * p = --error-rate. A request asks the user's filter about all C candidates
 * in one batch call; "definitely not seen" is final, and only the "maybe"
 * ones go to the exact store, in one batched lookup.
 *
 * COLUMNS (--mode)
 *   in-process          exact store only: a hash set of (user, article)
 *                       pairs (pairset.h), all C candidates looked up
 *   in-process+filter   one bg_filter per user (bg_filter_contains_many),
 *                       then the set for the maybes
 *   redis               exact store only: one SET seen:<u> per user, one
 *                       SMISMEMBER with all C candidates
 *   redis+filter        one module filter bf:seen:<u> per user (bloomgate.so,
 *                       bg_remote_filter_contains_many = one BG.MEXISTS,
 *                       BF.MEXISTS where the server has no BG.MEXISTS),
 *                       then one SMISMEMBER with the maybes
 *   redis+local-filter  (--mode hybrid) in-process filters, Redis SETs
 * Keys are article ids in decimal, the same bytes in the filters and as
 * SET members (so redis-cli BF.EXISTS bf:seen:7 123456 works); a request
 * arrives with its candidates as ids and as those strings.
 *
 * MEASURING
 * Requests are generated in chunks, untimed, from the same seed in every
 * column, so all columns serve the same stream of requests. Each request is timed
 * with CLOCK_MONOTONIC from the filter call to the finished output list
 * (a latency histogram with ~3% buckets); requests/s is requests over the
 * time spent serving, summed over threads. Every request is then checked
 * against what the generator knows: a seen candidate in the output, or an
 * unseen one dropped, is a mismatch, and a seen candidate the filter called
 * "not seen" is a false negative, which a Bloom filter cannot have: either
 * is a bug, reported and turned into exit status 1.
 *
 * The histories are a function of (--seed, --users, --history, --articles),
 * so the program rebuilds the ground truth in-process in every mode; Redis
 * holds a copy (loaded with --load, marked by the key seen:params).
 *
 * FILES
 * seen.c (this one: the table and main), seen_options.c (the command
 * line), seen_world.c (the users and their histories), seen_run.c
 * (serving and checking a column), seen_redis.c (Redis), pairset.c (the
 * in-process exact store); seen.h is what they share. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "seen.h"

/* ---- the table ---------------------------------------------------------------- */

#define LABEL_W 27
#define COL_W 19

/* n with thousands separators. */
static void fmt_count(char *buf, size_t len, double v)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%.0f", v);
    size_t nd = strlen(digits), o = 0;
    for (size_t i = 0; i < nd && o + 2 < len; i++) {
        if (i && (nd - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
}

static const char *const ROWS[] = {
    "requests/s",
    "membership checks/s",
    "exact lookups avoided",
    "exact lookups/request",
    "exact store calls/request",
    "filter false positives",
    "latency p50 (us)",
    "latency p95 (us)",
    "latency p99 (us)",
    "redis filter commands",
    "redis us/req in filter cmds",
    "redis us/req in SMISMEMBER",
    "mismatches",
    "filter false negatives",
    "filter memory/user",
    "filter used_memory/user",
    "exact store memory/user",
    "requests served",
    "threads",
};
#define NROWS (sizeof ROWS / sizeof ROWS[0])
#define CELL 64

/* usec / requests, or "-" when the column has no such command. */
static void fmt_server(char *b, double usec, uint64_t requests)
{
    if (usec < 0 || !requests)
        snprintf(b, CELL, "-");
    else
        snprintf(b, CELL, "%.2f", usec / (double)requests);
}

/* One column's cells, in the order of ROWS. */
static void result_cells(const result *r, const config *c, char cell[NROWS][CELL])
{
    double reqs = (double)r->requests;
    double cands = reqs * c->candidates;
    size_t i = 0;
    fmt_count(cell[i++], CELL, r->rate);
    fmt_count(cell[i++], CELL, r->rate * c->candidates);
    snprintf(cell[i++], CELL, "%.1f%%",
             cands > 0 ? 100.0 * (double)r->filter_negatives / cands : 0);
    snprintf(cell[i++], CELL, "%.2f", reqs > 0 ? (double)r->exact_lookups / reqs : 0);
    snprintf(cell[i++], CELL, "%.3f", reqs > 0 ? (double)r->exact_calls / reqs : 0);
    if (r->col.filter == FILTER_NONE || !r->unseen)
        snprintf(cell[i++], CELL, "-");
    else
        snprintf(cell[i++], CELL, "%.2f%%", 100.0 * (double)r->false_positives / (double)r->unseen);
    static const double q[3] = {0.50, 0.95, 0.99};
    for (size_t k = 0; k < 3; k++)
        snprintf(cell[i++], CELL, "%.1f", hist_quantile(&r->h, q[k]) / 1000.0);
    snprintf(cell[i++], CELL, "%s", r->filter_cmds);
    fmt_server(cell[i++], r->server_filter, r->requests);
    fmt_server(cell[i++], r->server_exact, r->requests);
    snprintf(cell[i++], CELL, "%" PRIu64, r->mismatches);
    snprintf(cell[i++], CELL, "%" PRIu64, r->false_negatives);
    if (r->filter_bytes < 0)
        snprintf(cell[i++], CELL, "-");
    else
        snprintf(cell[i++], CELL, "%.0f B", r->filter_bytes);
    if (r->filter_used < 0)
        snprintf(cell[i++], CELL, "-");
    else
        snprintf(cell[i++], CELL, "%.0f B", r->filter_used);
    snprintf(cell[i++], CELL, "%.0f B", r->exact_bytes);
    char n[32];
    fmt_count(n, sizeof n, reqs);
    snprintf(cell[i++], CELL, "%s in %.2f s", n, r->serve_s);
    snprintf(cell[i++], CELL, "%u", r->threads);
}

static void print_table(const config *c, const result *rs, size_t nr)
{
    static char cells[MAX_COLUMNS][NROWS][CELL];
    for (size_t i = 0; i < nr; i++)
        result_cells(&rs[i], c, cells[i]);
    printf("scenario seen: %" PRIu32 " users x %" PRIu32 " seen, %" PRIu32
           " candidates per request, %g%% seen\n",
           c->users, c->history, c->candidates, c->seen_share * 100);
    printf("filters: capacity %" PRIu64 ", p = %g; in-process %s variant, Redis bloomgate.so "
           "(NONSCALING)\n",
           c->capacity, c->error_rate, bg_variant_name(c->variant));
    printf("%-*s", LABEL_W, "");
    for (size_t i = 0; i < nr; i++)
        printf(" %-*s", COL_W, rs[i].col.name);
    printf("\n");
    for (size_t k = 0; k < NROWS; k++) {
        printf("%-*s", LABEL_W, ROWS[k]);
        for (size_t i = 0; i < nr; i++)
            printf(" %-*s", COL_W, cells[i][k]);
        printf("\n");
    }
    printf("requests/s: requests over the time spent serving them (request generation\n"
           "excluded), summed over threads; latency: from the filter call to the output list;\n"
           "redis us/req: the server's own time (INFO commandstats), in filter cmds: every\n"
           "bf.* and bg.* command the column sent (named in the row above); filter memory:\n"
           "in-process the bit array, in Redis MEMORY USAGE of a sample of users' filters;\n"
           "used_memory/user: Redis's used_memory growth per user while --load made them\n");
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    config c;
    parse_args(&c, argc, argv);

    int need_redis = 0, need_local_filters = 0, need_remote_filters = 0;
    for (size_t i = 0; i < c.ncols; i++) {
        need_redis |= c.cols[i].exact == EXACT_REDIS;
        need_local_filters |= c.cols[i].filter == FILTER_LOCAL;
        need_remote_filters |= c.cols[i].filter == FILTER_REMOTE;
    }

    redis_conn rs = {0};
    if (need_redis)
        redis_connect(&rs, &c); /* first: an unreachable server fails fast */

    double t0 = now_s();
    world w;
    world_build(&w, &c);
    if (need_local_filters)
        world_filters(&w);
    fprintf(stderr, "built %" PRIu32 " users x %" PRIu32 " seen in-process in %.1f s\n", c.users,
            c.history, now_s() - t0);
    if (need_redis) {
        if (c.load)
            redis_load(&w, &rs);
        redis_check(&w, &rs, need_remote_filters);
    }

    result res[MAX_COLUMNS];
    for (size_t i = 0; i < c.ncols; i++) {
        fprintf(stderr, "running %s ...\n", c.cols[i].name);
        run_column(&w, c.cols[i], &rs, &res[i]);
    }
    print_table(&c, res, c.ncols);

    int bad = 0;
    for (size_t i = 0; i < c.ncols; i++)
        if (res[i].mismatches || res[i].false_negatives) {
            fprintf(stderr,
                    PROG ": FAIL: %s: %" PRIu64 " mismatches, %" PRIu64 " false negatives\n",
                    res[i].col.name, res[i].mismatches, res[i].false_negatives);
            bad = 1;
        }
    redis_close(&rs, &c);
    world_free(&w);
    return bad;
}
