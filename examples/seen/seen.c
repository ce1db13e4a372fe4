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
 *                       bg_remote_filter_contains_many = one BF.MEXISTS),
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
 * holds a copy (loaded with --load, marked by the key seen:params). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include <bloomgate/filter.h>
#include <bloomgate/remote.h>

#include "pairset.h"

#define PROG "bloomgate-seen"

/* ---- configuration -------------------------------------------------------- */

enum { FILTER_NONE, FILTER_LOCAL, FILTER_REMOTE };
enum { EXACT_LOCAL, EXACT_REDIS };

typedef struct column {
    const char *name;
    int filter; /* FILTER_* */
    int exact;  /* EXACT_* */
} column;

static const column COL_LOCAL = {"in-process", FILTER_NONE, EXACT_LOCAL};
static const column COL_LOCAL_F = {"in-process+filter", FILTER_LOCAL, EXACT_LOCAL};
static const column COL_REDIS = {"redis", FILTER_NONE, EXACT_REDIS};
static const column COL_REDIS_F = {"redis+filter", FILTER_REMOTE, EXACT_REDIS};
static const column COL_HYBRID = {"redis+local-filter", FILTER_LOCAL, EXACT_REDIS};

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

_Noreturn static void die(const char *fmt, ...)
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

static void parse_args(config *c, int argc, char **argv)
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

/* ---- random numbers ----------------------------------------------------------- */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in [0, n) (Lemire's multiply-shift; bias below 2^-32 n). */
static uint32_t below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(((splitmix(s) >> 32) * (uint64_t)n) >> 32);
}

static double unit(uint64_t *s)
{
    return (double)(splitmix(s) >> 11) * 0x1.0p-53;
}

/* ---- the users -------------------------------------------------------------- */

typedef struct world {
    const config *cfg;
    uint32_t *hist; /* users x history article ids, user u's at u * history */
    pairset truth;  /* every (user, article) seen: the in-process exact store */
    bg_filter **filters; /* in-process filters, or NULL */
} world;

/* An id in decimal: at most 10 digits. */
#define KEY_MAX 11

static size_t key_format(char *buf, uint32_t id)
{
    char tmp[KEY_MAX];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + id % 10u);
        id /= 10u;
    } while (id);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    return n;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The formatted keys of ids[0..n) into buf (n x KEY_MAX bytes). */
static void keys_format(const uint32_t *ids, size_t n, char *buf, const void **keys, size_t *lens)
{
    for (size_t i = 0; i < n; i++) {
        keys[i] = buf + i * KEY_MAX;
        lens[i] = key_format(buf + i * KEY_MAX, ids[i]);
    }
}

/* Every user's history: `history` distinct ids, a function of (seed, u)
 * only, into w->hist and the ground truth. */
static void world_build(world *w, const config *c)
{
    *w = (world){.cfg = c};
    size_t pairs = (size_t)c->users * c->history;
    w->hist = malloc(pairs * sizeof *w->hist);
    if (!w->hist || pairset_init(&w->truth, pairs) != 0)
        die("out of memory for %zu (user, article) pairs", pairs);
    for (uint32_t u = 0; u < c->users; u++) {
        uint64_t rng = c->seed ^ ((uint64_t)u * UINT64_C(0xd1b54a32d192ed03));
        uint32_t *h = w->hist + (size_t)u * c->history;
        for (uint32_t j = 0; j < c->history;) {
            uint32_t a = below(&rng, c->articles);
            if (pairset_insert(&w->truth, u, a) == 1)
                h[j++] = a;
        }
    }
}

/* One in-process filter per user, holding the user's history. */
static void world_filters(world *w)
{
    const config *c = w->cfg;
    if (w->filters)
        return;
    w->filters = calloc(c->users, sizeof *w->filters);
    char *buf = malloc((size_t)c->history * KEY_MAX);
    const void **keys = malloc(c->history * sizeof *keys);
    size_t *lens = malloc(c->history * sizeof *lens);
    if (!w->filters || !buf || !keys || !lens)
        die("out of memory for %" PRIu32 " filters", c->users);
    bg_filter_options o = {.variant = c->variant,
                           .capacity = c->capacity,
                           .error_rate = c->error_rate,
                           .concurrency = BG_SINGLE_WRITER};
    for (uint32_t u = 0; u < c->users; u++) {
        int rc = bg_filter_new(&w->filters[u], &o);
        if (rc != BG_OK)
            die("bg_filter_new: %s", bg_strerror(rc));
        keys_format(w->hist + (size_t)u * c->history, c->history, buf, keys, lens);
        int64_t n = bg_filter_add_many(w->filters[u], keys, lens, c->history, NULL);
        if (n < 0)
            die("bg_filter_add_many: %s", bg_strerror((int)n));
    }
    free(buf);
    free(keys);
    free(lens);
}

static void world_free(world *w)
{
    if (w->filters)
        for (uint32_t u = 0; u < w->cfg->users; u++)
            bg_filter_free(w->filters[u]);
    free(w->filters);
    free(w->hist);
    pairset_free(&w->truth);
}

/* ---- latency histogram ------------------------------------------------------ */

/* Nanoseconds, log-linear: exact below 64, then 32 buckets per power of
 * two (each at most 1/32 = 3% wide). 64 + 58 x 32 buckets cover 2^64. */
#define HIST_SUB 32u
#define HIST_BUCKETS (64u + 58u * HIST_SUB)

typedef struct hist {
    uint64_t n[HIST_BUCKETS];
    uint64_t count;
} hist;

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
static double hist_quantile(const hist *h, double q)
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

typedef struct redis_conn {
    redisContext *rc;     /* the exact store: SETs */
    bg_remote *r;         /* the filters */
    bg_remote_filter **rf; /* one per user, or NULL */
} redis_conn;

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

static void *xcalloc(size_t n, size_t size)
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
            return runner_fail(x, "BF.MEXISTS bf:seen:%" PRIu32 ": %s", q->user,
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

/* ---- Redis ------------------------------------------------------------------ */

static void redis_connect(redis_conn *rs, const config *c)
{
    struct timeval tv = {5, 0};
    rs->rc = redisConnectWithTimeout(c->host, c->port, tv);
    if (!rs->rc || rs->rc->err)
        die("cannot connect to Redis at %s:%d: %s", c->host, c->port,
            rs->rc ? rs->rc->errstr : "out of memory");
    redisSetTimeout(rs->rc, tv);
    bg_remote_options o = {.host = c->host, .port = c->port, .command_timeout_ms = 5000};
    int rc = bg_remote_connect(&rs->r, &o);
    if (rc != BG_OK)
        die("cannot connect to Redis at %s:%d: %s", c->host, c->port,
            rs->r ? bg_remote_errstr(rs->r) : bg_strerror(rc));
}

static void redis_close(redis_conn *rs, const config *c)
{
    if (rs->rf)
        for (uint32_t u = 0; u < c->users; u++)
            bg_remote_filter_close(rs->rf[u]);
    free(rs->rf);
    bg_remote_close(rs->r);
    if (rs->rc)
        redisFree(rs->rc);
}

/* Reads the replies of n pipelined commands; dies on an error reply. */
static void redis_drain(redisContext *rc, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        void *rep;
        if (redisGetReply(rc, &rep) != REDIS_OK)
            die("%s: %s", what, rc->errstr);
        redisReply *r = rep;
        if (r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, PROG ": %s: %s\n", what, r->str);
            freeReplyObject(r);
            exit(1);
        }
        freeReplyObject(r);
    }
}

/* What the data in Redis is a function of. */
static void redis_params(const config *c, char *buf, size_t len)
{
    snprintf(buf, len,
             "users=%" PRIu32 " history=%" PRIu32 " articles=%" PRIu32 " seed=%" PRIu64
             " capacity=%" PRIu64 " error_rate=%.17g",
             c->users, c->history, c->articles, c->seed, c->capacity, c->error_rate);
}

static const char *module_hint(const char *err)
{
    return strstr(err, "unknown command") ? " (is bloomgate.so loaded? redis-server --loadmodule "
                                            "BUILD/src/redis_module/bloomgate.so)"
                                          : "";
}

/* Replaces whatever Redis holds for these users by their histories: the
 * filters bf:seen:<u> (BF.RESERVE NONSCALING, then one BF.INSERT with the
 * whole history: 2 round trips a user), the SETs seen:<u> (SADD, pipelined
 * 64 users at a time), then seen:params. */
static void redis_load(const world *w, redis_conn *rs)
{
    const config *c = w->cfg;
    double t0 = now_s();
    enum { PIPE = 64 };
    redisAppendCommand(rs->rc, "DEL seen:params");
    redis_drain(rs->rc, 1, "DEL");
    for (uint32_t u = 0; u < c->users;) {
        size_t k = 0;
        for (; k < PIPE && u < c->users; k++, u++)
            redisAppendCommand(rs->rc, "DEL bf:seen:%" PRIu32 " seen:%" PRIu32, u, u);
        redis_drain(rs->rc, k, "DEL");
    }

    size_t hn = c->history;
    char *buf = xcalloc(hn * PIPE, KEY_MAX);
    const void **keys = xcalloc(hn * PIPE, sizeof *keys);
    size_t *lens = xcalloc(hn * PIPE, sizeof *lens);
    rs->rf = xcalloc(c->users, sizeof *rs->rf);
    bg_remote_filter_options fo = {.backend = BG_REMOTE_MODULE,
                                   .capacity = c->capacity,
                                   .error_rate = c->error_rate,
                                   .nonscaling = 1};
    for (uint32_t u = 0; u < c->users; u++) {
        char name[32];
        snprintf(name, sizeof name, "bf:seen:%" PRIu32, u);
        int rc = bg_remote_filter_create(&rs->rf[u], rs->r, name, &fo);
        if (rc != BG_OK) {
            const char *e = rc == BG_EREMOTE ? bg_remote_errstr(rs->r) : bg_strerror(rc);
            die("BF.RESERVE %s: %s%s", name, e, module_hint(e));
        }
        keys_format(w->hist + (size_t)u * hn, hn, buf, keys, lens);
        int64_t n = bg_remote_filter_add_many(rs->rf[u], keys, lens, hn, NULL);
        if (n < 0)
            die("BF.INSERT %s: %s", name, bg_remote_errstr(rs->r));
    }

    const char **argv = xcalloc(hn + 2, sizeof *argv);
    size_t *argvlen = xcalloc(hn + 2, sizeof *argvlen);
    for (uint32_t u = 0; u < c->users;) {
        size_t k = 0;
        for (; k < PIPE && u < c->users; k++, u++) {
            char setkey[32];
            argv[0] = "SADD";
            argvlen[0] = 4;
            argvlen[1] = (size_t)snprintf(setkey, sizeof setkey, "seen:%" PRIu32, u);
            argv[1] = setkey;
            keys_format(w->hist + (size_t)u * hn, hn, buf + k * hn * KEY_MAX, keys + k * hn,
                        lens + k * hn);
            for (size_t j = 0; j < hn; j++) {
                argv[2 + j] = keys[k * hn + j];
                argvlen[2 + j] = lens[k * hn + j];
            }
            /* hiredis copies the arguments into its output buffer here. */
            if (redisAppendCommandArgv(rs->rc, (int)(hn + 2), argv, argvlen) != REDIS_OK)
                die("SADD: %s", rs->rc->errstr);
        }
        redis_drain(rs->rc, k, "SADD");
    }
    char params[256];
    redis_params(c, params, sizeof params);
    redisAppendCommand(rs->rc, "SET seen:params %s", params);
    redis_drain(rs->rc, 1, "SET seen:params");
    free(argv);
    free(argvlen);
    free(buf);
    free(keys);
    free(lens);
    fprintf(stderr, "loaded %" PRIu32 " users x %" PRIu32 " seen into Redis in %.1f s\n", c->users,
            c->history, now_s() - t0);
}

/* Checks that Redis holds these users (seen:params), and opens the filter
 * handles when `filters` and they are not open yet. */
static void redis_check(const world *w, redis_conn *rs, int filters)
{
    const config *c = w->cfg;
    char want[256];
    redis_params(c, want, sizeof want);
    redisReply *r = redisCommand(rs->rc, "GET seen:params");
    if (!r)
        die("Redis: %s", rs->rc->errstr);
    if (r->type != REDIS_REPLY_STRING || strcmp(r->str, want) != 0) {
        if (r->type == REDIS_REPLY_STRING)
            fprintf(stderr, PROG ": Redis at %s:%d holds other users (seen:params is \"%s\"): "
                    "run with --load\n", c->host, c->port, r->str);
        else
            fprintf(stderr, PROG ": Redis at %s:%d holds no users (no key seen:params): run "
                    "with --load\n", c->host, c->port);
        freeReplyObject(r);
        exit(1);
    }
    freeReplyObject(r);
    if (!filters || rs->rf)
        return;
    rs->rf = xcalloc(c->users, sizeof *rs->rf);
    for (uint32_t u = 0; u < c->users; u++) {
        char name[32];
        snprintf(name, sizeof name, "bf:seen:%" PRIu32, u);
        int rc = bg_remote_filter_open(&rs->rf[u], rs->r, name, BG_REMOTE_MODULE);
        if (rc != BG_OK) {
            const char *e = rc == BG_EREMOTE ? bg_remote_errstr(rs->r) : bg_strerror(rc);
            die("BF.INFO %s: %s%s", name, e, module_hint(e));
        }
    }
}

/* MEMORY USAGE key, in bytes (0 if Redis will not say). */
static uint64_t redis_memory(redis_conn *rs, const char *key)
{
    redisReply *r = redisCommand(rs->rc, "MEMORY USAGE %s", key);
    uint64_t n = r && r->type == REDIS_REPLY_INTEGER && r->integer > 0 ? (uint64_t)r->integer : 0;
    if (r)
        freeReplyObject(r);
    return n;
}

/* The server's total microseconds in SMISMEMBER and BF.MEXISTS so far
 * (INFO commandstats; 0 if it does not say). */
typedef struct server_usec {
    double exact, filter;
} server_usec;

static double cmdstat_usec(const char *info, const char *cmd)
{
    char pat[64];
    snprintf(pat, sizeof pat, "cmdstat_%s:", cmd);
    const char *p = strstr(info, pat);
    if (!p)
        return 0;
    const char *u = strstr(p, ",usec=");
    const char *eol = strchr(p, '\n');
    if (!u || (eol && u > eol))
        return 0;
    return strtod(u + 6, NULL);
}

static server_usec redis_server_usec(redis_conn *rs)
{
    server_usec s = {0, 0};
    redisReply *r = redisCommand(rs->rc, "INFO commandstats");
    if (r && r->type == REDIS_REPLY_STRING) {
        s.exact = cmdstat_usec(r->str, "smismember");
        s.filter = cmdstat_usec(r->str, "bf.mexists");
    }
    if (r)
        freeReplyObject(r);
    return s;
}

/* ---- a column ----------------------------------------------------------------- */

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
    server_usec server;  /* Redis's time in the column's commands; < 0: none */
} result;

static void run_column(const world *w, column col, redis_conn *rs, result *res)
{
    const config *c = w->cfg;
    unsigned nt = col.exact == EXACT_LOCAL && col.filter != FILTER_REMOTE ? c->threads : 1;
    runner *xs = xcalloc(nt, sizeof *xs);
    int on_redis = col.exact == EXACT_REDIS || col.filter == FILTER_REMOTE;
    server_usec before = on_redis ? redis_server_usec(rs) : (server_usec){0, 0};
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

    res->server = (server_usec){-1, -1};
    if (on_redis) {
        server_usec after = redis_server_usec(rs);
        res->server.exact = col.exact == EXACT_REDIS ? after.exact - before.exact : -1;
        res->server.filter = col.filter == FILTER_REMOTE ? after.filter - before.filter : -1;
    }
    /* In-process: the filter's bit array and the hash table's share; in
     * Redis: MEMORY USAGE of user 0's keys (all users are alike). */
    res->filter_bytes = -1;
    if (col.filter == FILTER_LOCAL)
        res->filter_bytes = (double)bg_filter_bytes(w->filters[0]);
    else if (col.filter == FILTER_REMOTE)
        res->filter_bytes = (double)redis_memory(rs, "bf:seen:0");
    if (col.exact == EXACT_LOCAL)
        res->exact_bytes = (double)pairset_bytes(&w->truth) / c->users;
    else
        res->exact_bytes = (double)redis_memory(rs, "seen:0");
}

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
    "redis us/req in BF.MEXISTS",
    "redis us/req in SMISMEMBER",
    "mismatches",
    "filter false negatives",
    "filter memory/user",
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
    fmt_server(cell[i++], r->server.filter, r->requests);
    fmt_server(cell[i++], r->server.exact, r->requests);
    snprintf(cell[i++], CELL, "%" PRIu64, r->mismatches);
    snprintf(cell[i++], CELL, "%" PRIu64, r->false_negatives);
    if (r->filter_bytes < 0)
        snprintf(cell[i++], CELL, "-");
    else
        snprintf(cell[i++], CELL, "%.0f B", r->filter_bytes);
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
           "redis us/req: the server's own time (INFO commandstats); filter memory: in-process\n"
           "the bit array, in Redis MEMORY USAGE of the key\n");
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
