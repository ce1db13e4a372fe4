/* SPDX-License-Identifier: BSD-3-Clause */
/* Serving a column of bloomgate-seen: the latency histogram, the requests,
 * the threads that serve and check them, and a column's results. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "seen.h"

/* ---- latency histogram ------------------------------------------------------ */

static void hist_add(hist *h, uint64_t ns)
{
    size_t i;
    if (ns < 64u) {
        i = (size_t)ns;
    } else {
        unsigned shift = 63u - (unsigned)__builtin_clzll(ns) - 5u; /* >= 1 */
        i = 64u + (shift - 1u) * HIST_SUB + (size_t)((ns >> shift) - HIST_SUB);
    }
    h->n[i]++;
    h->count++;
}

static void hist_merge(hist *into, const hist *h)
{
    for (size_t i = 0; i < HIST_BUCKETS; i++)
        into->n[i] += h->n[i];
    into->count += h->count;
}

/* The q-quantile in nanoseconds: its bucket's midpoint. */
double hist_quantile(const hist *h, double q)
{
    if (!h->count)
        return 0;
    uint64_t rank = (uint64_t)ceil(q * (double)h->count);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < HIST_BUCKETS; i++) {
        seen += h->n[i];
        if (seen >= rank) {
            if (i < 64u)
                return (double)i;
            size_t shift = (i - 64u) / HIST_SUB + 1u;
            double lo = (double)(((i - 64u) % HIST_SUB + HIST_SUB) << shift);
            return lo + (double)((size_t)1 << shift) / 2;
        }
    }
    return 0;
}

/* ---- requests ------------------------------------------------------------ */

typedef struct request {
    uint32_t user;
    uint32_t *ids;  /* the candidates */
    uint8_t *seen;  /* the generator's truth: 1 if in the user's history */
    char *keybuf;   /* candidates x KEY_MAX */
    const void **keys;
    size_t *lens;
} request;

/* Requests generated (untimed) before a chunk is served. */
#define REQ_CHUNK 32u

/* One serving thread of one column. */
typedef struct runner {
    const world *w;
    column col;
    unsigned index;
    uint64_t quota;  /* requests to serve (UINT64_MAX with --seconds) */
    double deadline; /* with --seconds: now_s() at which to stop */
    redis_conn *rs;  /* exact == EXACT_REDIS or filter == FILTER_REMOTE */

    request reqs[REQ_CHUNK];
    uint32_t *dedup; /* the ids of the request being made; UINT32_MAX: free */
    unsigned dedup_bits;
    uint8_t *maybe;  /* the filter's answer per candidate */
    size_t *midx;    /* the maybe candidates' indexes */
    uint32_t *mids;  /* and ids */
    uint8_t *exact;  /* the exact store's answer per maybe */
    uint8_t *kept;   /* per candidate: in the output */
    uint32_t *out;   /* the output: candidates not seen */
    const char **argv;
    size_t *argvlen;

    hist h;
    uint64_t requests, filter_negatives, exact_lookups, exact_calls;
    uint64_t unseen, false_positives, false_negatives, mismatches;
    uint64_t serve_ns;
    int failed;
    char err[512];
} runner;

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        die("out of memory");
    return p;
}

static void runner_init(runner *x, const world *w, column col, unsigned index, redis_conn *rs)
{
    size_t n = w->cfg->candidates;
    memset(x, 0, sizeof *x);
    x->w = w;
    x->col = col;
    x->index = index;
    x->rs = rs;
    for (size_t i = 0; i < REQ_CHUNK; i++) {
        request *q = &x->reqs[i];
        q->ids = xcalloc(n, sizeof *q->ids);
        q->seen = xcalloc(n, 1);
        q->keybuf = xcalloc(n, KEY_MAX);
        q->keys = xcalloc(n, sizeof *q->keys);
        q->lens = xcalloc(n, sizeof *q->lens);
    }
    x->dedup_bits = 1;
    while (((size_t)1 << x->dedup_bits) < 2 * n)
        x->dedup_bits++;
    x->dedup = xcalloc((size_t)1 << x->dedup_bits, sizeof *x->dedup);
    x->maybe = xcalloc(n, 1);
    x->midx = xcalloc(n, sizeof *x->midx);
    x->mids = xcalloc(n, sizeof *x->mids);
    x->exact = xcalloc(n, 1);
    x->kept = xcalloc(n, 1);
    x->out = xcalloc(n, sizeof *x->out);
    x->argv = xcalloc(n + 2, sizeof *x->argv);
    x->argvlen = xcalloc(n + 2, sizeof *x->argvlen);
}

static void runner_free(runner *x)
{
    for (size_t i = 0; i < REQ_CHUNK; i++) {
        request *q = &x->reqs[i];
        free(q->ids);
        free(q->seen);
        free(q->keybuf);
        free(q->keys);
        free(q->lens);
    }
    free(x->dedup);
    free(x->maybe);
    free(x->midx);
    free(x->mids);
    free(x->exact);
    free(x->kept);
    free(x->out);
    free(x->argv);
    free(x->argvlen);
}

static int runner_fail(runner *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->err, sizeof x->err, fmt, ap);
    va_end(ap);
    x->failed = 1;
    return -1;
}

/* 1 if id was not in the request yet (and now is), 0 if it was. */
static int dedup_insert(runner *x, uint32_t id)
{
    uint32_t mask = (UINT32_C(1) << x->dedup_bits) - 1u;
    for (uint32_t i = (uint32_t)(id * UINT32_C(2654435761)) >> (32u - x->dedup_bits);;
         i = (i + 1u) & mask) {
        if (x->dedup[i] == id)
            return 0;
        if (x->dedup[i] == UINT32_MAX) {
            x->dedup[i] = id;
            return 1;
        }
    }
}

/* A request: a user, and `candidates` distinct articles, each one from the
 * user's history with probability seen_share (while unseen ones remain),
 * else one from the rest of the catalogue. */
static void request_make(runner *x, uint64_t *rng, request *q)
{
    const config *c = x->w->cfg;
    uint32_t u = below(rng, c->users);
    const uint32_t *h = x->w->hist + (size_t)u * c->history;
    memset(x->dedup, 0xff, ((size_t)1 << x->dedup_bits) * sizeof *x->dedup);
    q->user = u;
    uint32_t nseen = 0;
    for (size_t i = 0; i < c->candidates; i++) {
        int is_seen = nseen < c->history && unit(rng) < c->seen_share;
        uint32_t id;
        for (;;) {
            if (is_seen) {
                id = h[below(rng, c->history)];
            } else {
                id = below(rng, c->articles);
                if (pairset_contains(&x->w->truth, u, id))
                    continue;
            }
            if (dedup_insert(x, id))
                break;
        }
        nseen += (uint32_t)is_seen;
        q->ids[i] = id;
        q->seen[i] = (uint8_t)is_seen;
    }
    keys_format(q->ids, c->candidates, q->keybuf, q->keys, q->lens);
}

/* One SMISMEMBER seen:<u> with the m maybe candidates: x->exact[j]. */
static int redis_exact(runner *x, const request *q, size_t m)
{
    char setkey[32];
    int kl = snprintf(setkey, sizeof setkey, "seen:%" PRIu32, q->user);
    x->argv[0] = "SMISMEMBER";
    x->argvlen[0] = 10;
    x->argv[1] = setkey;
    x->argvlen[1] = (size_t)kl;
    for (size_t j = 0; j < m; j++) {
        x->argv[2 + j] = q->keys[x->midx[j]];
        x->argvlen[2 + j] = q->lens[x->midx[j]];
    }
    redisContext *rc = x->rs->rc;
    redisReply *r = redisCommandArgv(rc, (int)(m + 2), x->argv, x->argvlen);
    if (!r)
        return runner_fail(x, "Redis: %s", rc->errstr);
    int ok = r->type == REDIS_REPLY_ARRAY && r->elements == m;
    for (size_t j = 0; ok && j < m; j++) {
        ok = r->element[j]->type == REDIS_REPLY_INTEGER;
        if (ok)
            x->exact[j] = r->element[j]->integer != 0;
    }
    if (!ok) {
        runner_fail(x, "SMISMEMBER %s: %s (needs Redis >= 6.2)", setkey,
                    r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        freeReplyObject(r);
        return -1;
    }
    freeReplyObject(r);
    return 0;
}

/* The request path being measured: filter, exact store for the maybes,
 * output list. 0, or -1 with x->err. */
static int serve(runner *x, const request *q, size_t *nout)
{
    const config *c = x->w->cfg;
    size_t n = c->candidates;

    if (x->col.filter == FILTER_NONE) {
        memset(x->maybe, 1, n);
    } else if (x->col.filter == FILTER_LOCAL) {
        int64_t rc = bg_filter_contains_many(x->w->filters[q->user], q->keys, q->lens, n, x->maybe);
        if (rc < 0)
            return runner_fail(x, "bg_filter_contains_many: %s", bg_strerror((int)rc));
    } else {
        int64_t rc = bg_remote_filter_contains_many(x->rs->rf[q->user], q->keys, q->lens, n,
                                                    x->maybe);
        if (rc < 0)
            return runner_fail(x, "MEXISTS bf:seen:%" PRIu32 ": %s", q->user,
                               rc == BG_EREMOTE || rc == BG_ECONN ? bg_remote_errstr(x->rs->r)
                                                                  : bg_strerror((int)rc));
    }

    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (x->maybe[i])
            x->midx[m++] = i;
    if (m) {
        if (x->col.exact == EXACT_LOCAL) {
            for (size_t j = 0; j < m; j++)
                x->mids[j] = q->ids[x->midx[j]];
            pairset_contains_many(&x->w->truth, q->user, x->mids, m, x->exact);
        } else if (redis_exact(x, q, m) != 0) {
            return -1;
        }
        x->exact_calls++;
    }
    x->exact_lookups += m;

    memset(x->kept, 1, n);
    for (size_t j = 0; j < m; j++)
        x->kept[x->midx[j]] = !x->exact[j];
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (x->kept[i])
            x->out[o++] = q->ids[i];
    *nout = o;
    return 0;
}

/* Checks the output against the generator's truth: a candidate is a
 * mismatch when it is kept and seen, or dropped and unseen. */
static void verify(runner *x, const request *q, size_t nout)
{
    const config *c = x->w->cfg;
    size_t kept = 0;
    for (size_t i = 0; i < c->candidates; i++) {
        if (!x->maybe[i])
            x->filter_negatives++;
        if (q->seen[i] && !x->maybe[i]) {
            /* A Bloom filter has no false negatives: this is a bug (or the
             * filters in Redis are not the ones this seed describes). */
            if (!x->false_negatives++)
                fprintf(stderr,
                        PROG ": BUG: %s: the filter said 'not seen' for user %" PRIu32
                             " article %" PRIu32 ", which is in the history\n",
                        x->col.name, q->user, q->ids[i]);
        }
        if (!q->seen[i]) {
            x->unseen++;
            if (x->maybe[i] && x->col.filter != FILTER_NONE)
                x->false_positives++;
        }
        if (x->kept[i] == q->seen[i])
            x->mismatches++;
        if (x->kept[i] && x->out[kept++] != q->ids[i])
            x->mismatches++;
    }
    if (kept != nout)
        x->mismatches++;
}

static uint64_t ns_between(const struct timespec *a, const struct timespec *b)
{
    int64_t d = (int64_t)(b->tv_sec - a->tv_sec) * 1000000000 + (b->tv_nsec - a->tv_nsec);
    return d > 0 ? (uint64_t)d : 0;
}

static void *runner_main(void *arg)
{
    runner *x = arg;
    const config *c = x->w->cfg;
    /* The same stream for every column: thread i serves the same requests. */
    uint64_t rng = c->seed * UINT64_C(0x9e3779b97f4a7c15) + UINT64_C(0x5ee11) + x->index;
    splitmix(&rng);
    while (!x->failed) {
        size_t k = REQ_CHUNK;
        if (x->requests >= x->quota || (!c->requests && now_s() >= x->deadline))
            break;
        if (x->quota - x->requests < k)
            k = (size_t)(x->quota - x->requests);
        for (size_t i = 0; i < k; i++)
            request_make(x, &rng, &x->reqs[i]);
        for (size_t i = 0; i < k && !x->failed; i++) {
            struct timespec t0, t1;
            size_t nout = 0;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            int rc = serve(x, &x->reqs[i], &nout);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if (rc != 0)
                break;
            uint64_t ns = ns_between(&t0, &t1);
            hist_add(&x->h, ns);
            x->serve_ns += ns;
            x->requests++;
            verify(x, &x->reqs[i], nout);
        }
    }
    return NULL;
}

/* ---- a column ----------------------------------------------------------------- */

void run_column(const world *w, column col, redis_conn *rs, result *res)
{
    const config *c = w->cfg;
    unsigned nt = col.exact == EXACT_LOCAL && col.filter != FILTER_REMOTE ? c->threads : 1;
    runner *xs = xcalloc(nt, sizeof *xs);
    int on_redis = col.exact == EXACT_REDIS || col.filter == FILTER_REMOTE;
    server_usec before = {0};
    if (on_redis)
        before = redis_server_usec(rs);
    double deadline = now_s() + c->seconds;
    for (unsigned t = 0; t < nt; t++) {
        runner_init(&xs[t], w, col, t, rs);
        xs[t].quota = c->requests ? c->requests / nt + (t < c->requests % nt) : UINT64_MAX;
        xs[t].deadline = deadline;
    }
    if (nt == 1) {
        runner_main(&xs[0]);
    } else {
        pthread_t *tids = xcalloc(nt, sizeof *tids);
        for (unsigned t = 0; t < nt; t++)
            if (pthread_create(&tids[t], NULL, runner_main, &xs[t]) != 0)
                die("pthread_create failed");
        for (unsigned t = 0; t < nt; t++)
            pthread_join(tids[t], NULL);
        free(tids);
    }
    memset(res, 0, sizeof *res);
    res->col = col;
    res->threads = nt;
    for (unsigned t = 0; t < nt; t++) {
        runner *x = &xs[t];
        if (x->failed)
            die("%s: %s", col.name, x->err);
        hist_merge(&res->h, &x->h);
        res->requests += x->requests;
        res->filter_negatives += x->filter_negatives;
        res->exact_lookups += x->exact_lookups;
        res->exact_calls += x->exact_calls;
        res->unseen += x->unseen;
        res->false_positives += x->false_positives;
        res->false_negatives += x->false_negatives;
        res->mismatches += x->mismatches;
        if (x->serve_ns)
            res->rate += (double)x->requests / ((double)x->serve_ns * 1e-9);
        res->serve_s += (double)x->serve_ns * 1e-9 / nt;
        runner_free(x);
    }
    free(xs);

    res->server_exact = res->server_filter = -1;
    snprintf(res->filter_cmds, sizeof res->filter_cmds, "-");
    if (on_redis) {
        server_usec after = redis_server_usec(rs);
        if (col.exact == EXACT_REDIS)
            res->server_exact = after.exact - before.exact;
        if (col.filter == FILTER_REMOTE) {
            res->server_filter = after.filter - before.filter;
            server_usec_names(&before, &after, res->filter_cmds, sizeof res->filter_cmds);
        }
    }
    /* In-process: the filter's bit array and the hash table's share; in
     * Redis: MEMORY USAGE of a sample of users' filters (all users are
     * alike), and used_memory's growth per user when this run loaded them. */
    res->filter_bytes = res->filter_used = -1;
    if (col.filter == FILTER_LOCAL) {
        res->filter_bytes = (double)bg_filter_bytes(w->filters[0]);
    } else if (col.filter == FILTER_REMOTE) {
        res->filter_bytes = redis_filter_memory(rs, c->users);
        res->filter_used = rs->filter_used;
    }
    if (col.exact == EXACT_LOCAL)
        res->exact_bytes = (double)pairset_bytes(&w->truth) / c->users;
    else
        res->exact_bytes = (double)redis_memory(rs, "seen:0");
}
