/* SPDX-License-Identifier: BSD-3-Clause */
/* Prometheus metrics of the products service.
 *
 * HISTOGRAMS
 * Each histogram keeps one relaxed atomic count per bucket (not
 * cumulative, so an observation touches one bucket), a count and a sum in
 * nanoseconds; the page makes the buckets cumulative and the units seconds.
 * A scrape is not a consistent cut: an observation that lands while the page
 * is written can show in a bucket but not yet in _count. Tests that compare
 * them scrape while the service is idle. */
#define _POSIX_C_SOURCE 200809L

#include "metrics.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bloomgate/version.h>

/* Upper bounds in nanoseconds. Requests: 10 us .. 1 s (a filtered request
 * is answered in tens of microseconds, a database outage in up to the
 * connect timeout). */
static const uint64_t request_bounds[] = {
    10000,    25000,    50000,     100000,    250000,    500000,    1000000,   2500000,
    5000000,  10000000, 25000000,  50000000,  100000000, 250000000, 500000000, 1000000000,
};
#define REQUEST_BUCKETS (sizeof(request_bounds) / sizeof(request_bounds[0]))

/* Filter checks: 25 ns .. 10 ms (local: tens of ns; remote: a round trip). */
static const uint64_t check_bounds[] = {
    25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 100000, 1000000, 10000000,
};
#define CHECK_BUCKETS (sizeof(check_bounds) / sizeof(check_bounds[0]))

/* Rebuilds: 1 ms .. 5 min. */
static const uint64_t rebuild_bounds[] = {
    1000000, 10000000, 100000000, 1000000000, 10000000000, 60000000000, 300000000000,
};
#define REBUILD_BUCKETS (sizeof(rebuild_bounds) / sizeof(rebuild_bounds[0]))

#define MAX_BUCKETS 16

typedef struct histogram {
    _Atomic uint64_t buckets[MAX_BUCKETS + 1]; /* the last one is +Inf */
    _Atomic uint64_t count;
    _Atomic uint64_t sum_ns;
} histogram;

typedef enum outcome {
    OUTCOME_OK = 0,     /* 2xx */
    OUTCOME_NOT_FOUND,  /* 404 */
    OUTCOME_CLIENT_ERR, /* other 4xx */
    OUTCOME_SERVER_ERR, /* 5xx */
    OUTCOME_COUNT
} outcome;

static const char *const route_names[ROUTE_COUNT] = {
    "get_product", "post_product", "delete_product", "metrics", "healthz", "other",
};
static const char *const outcome_names[OUTCOME_COUNT] = {
    "ok", "not_found", "client_error", "server_error",
};

static histogram request_hist[ROUTE_COUNT][OUTCOME_COUNT];
static histogram check_hist;
static histogram rebuild_hist;
static _Atomic uint64_t status_counts[600];

uint64_t metrics_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static void observe(histogram *h, const uint64_t *bounds, size_t n, uint64_t ns)
{
    size_t i = 0;
    while (i < n && ns > bounds[i]) i++;
    atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

void metrics_observe_request(metrics_route route, unsigned status, uint64_t ns)
{
    outcome o = status < 400    ? OUTCOME_OK
                : status == 404 ? OUTCOME_NOT_FOUND
                : status < 500  ? OUTCOME_CLIENT_ERR
                                : OUTCOME_SERVER_ERR;
    if ((unsigned)route >= ROUTE_COUNT) route = ROUTE_OTHER;
    observe(&request_hist[route][o], request_bounds, REQUEST_BUCKETS, ns);
    if (status < 600) atomic_fetch_add_explicit(&status_counts[status], 1, memory_order_relaxed);
}

void metrics_observe_check(uint64_t ns)
{
    observe(&check_hist, check_bounds, CHECK_BUCKETS, ns);
}

void metrics_observe_rebuild(uint64_t ns)
{
    observe(&rebuild_hist, rebuild_bounds, REBUILD_BUCKETS, ns);
}

/* ---- the page ----------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t ncap = b->cap * 2 + (size_t)n + 1;
        char *np = realloc(b->p, ncap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = ncap;
    }
}

static void head(sbuf *b, const char *name, const char *type, const char *help)
{
    sb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(sbuf *b, const char *name, const char *help, uint64_t v)
{
    head(b, name, "counter", help);
    sb_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

static void gauge(sbuf *b, const char *name, const char *help, uint64_t v)
{
    head(b, name, "gauge", help);
    sb_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

/* Seconds from nanoseconds, exactly as many digits as needed. */
static void sb_seconds(sbuf *b, uint64_t ns)
{
    sb_printf(b, "%llu.%09llu", (unsigned long long)(ns / 1000000000u),
              (unsigned long long)(ns % 1000000000u));
}

/* One histogram's series; labels is "" or `a="x",b="y"`. */
static void hist_series(sbuf *b, const char *name, const char *labels, const histogram *h,
                        const uint64_t *bounds, size_t n)
{
    uint64_t cum = 0;
    const char *sep = labels[0] ? "," : "";
    for (size_t i = 0; i <= n; i++) {
        cum += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
        sb_printf(b, "%s_bucket{%s%sle=\"", name, labels, sep);
        if (i < n) sb_seconds(b, bounds[i]);
        else sb_printf(b, "+Inf");
        sb_printf(b, "\"} %llu\n", (unsigned long long)cum);
    }
    /* _count is the +Inf bucket's value: equal by construction, whatever
     * lands meanwhile. */
    sb_printf(b, "%s_sum%s%s%s ", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "");
    sb_seconds(b, atomic_load_explicit(&h->sum_ns, memory_order_relaxed));
    sb_printf(b, "\n%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels,
              labels[0] ? "}" : "", (unsigned long long)cum);
}

int metrics_render(char **out, size_t *len, bg_guard *g, store *s, const metrics_info *info)
{
    sbuf b = {malloc(16384), 0, 16384, 0};
    if (!b.p) return -1;
    bg_guard_counters c;
    memset(&c, 0, sizeof(c));
    if (g) bg_guard_counters_get(g, &c);

    head(&b, "bloomgate_products_info", "gauge", "The service's configuration (always 1).");
    sb_printf(&b,
              "bloomgate_products_info{version=\"%s\",db=\"%s\",cache=\"%s\",filter=\"%s\","
              "variant=\"%s\"} 1\n",
              bg_version_string(), info->db, info->cache, info->filter, info->variant);

    counter(&b, "bloomgate_guard_requests_total", "Lookups through the guard (bg_guard_get).",
            c.requests);
    counter(&b, "bloomgate_guard_filtered_total",
            "Lookups answered absent by the Bloom filter alone.", c.filtered);
    counter(&b, "bloomgate_guard_negative_hits_total",
            "Lookups answered absent by a negative-cache entry.", c.negative_hits);
    counter(&b, "bloomgate_guard_cache_hits_total", "Lookups answered by the cache.",
            c.cache_hits);
    counter(&b, "bloomgate_guard_cache_errors_total", "Cache calls that failed (skipped).",
            c.cache_errors);
    counter(&b, "bloomgate_guard_cache_skipped_total",
            "Lookups that did not read the cache: a cache delete failed less than a TTL ago.",
            c.cache_skipped);
    counter(&b, "bloomgate_guard_source_queries_total", "Lookups that queried the database.",
            c.source_queries);
    counter(&b, "bloomgate_guard_source_found_total",
            "Database lookups that found the product.", c.source_found);
    counter(&b, "bloomgate_guard_false_positives_total",
            "Database lookups of ids the filter passed but the database did not have.",
            c.false_positives);
    counter(&b, "bloomgate_guard_source_errors_total", "Database lookups that failed.",
            c.source_errors);
    counter(&b, "bloomgate_guard_collapsed_total",
            "Lookups that waited for another thread's database query of the same id.",
            c.collapsed);
    counter(&b, "bloomgate_guard_puts_total", "Ids added to the filter (POST).", c.puts);
    counter(&b, "bloomgate_guard_removes_total", "Ids removed (DELETE).", c.removes);
    counter(&b, "bloomgate_guard_rebuilds_total", "Filter rebuilds completed.", c.rebuilds);
    counter(&b, "bloomgate_guard_rebuild_errors_total", "Filter rebuilds that failed.",
            c.rebuild_errors);
    gauge(&b, "bloomgate_guard_filter_items", "Keys in the current filter.", c.filter_items);
    gauge(&b, "bloomgate_guard_filter_shards",
          "Shards of the remote filter (1: one filter; 0: a local filter or none).",
          c.filter_shards);
    gauge(&b, "bloomgate_guard_filter_bytes", "Memory (local) or Redis size (remote) of the filter.",
          c.filter_bytes);
    counter(&b, "bloomgate_db_queries_total",
            "Database queries made (lookups, scans, counts, writes).", s ? store_queries(s) : 0);

    head(&b, "bloomgate_http_requests_total", "counter", "HTTP requests answered, by status code.");
    for (unsigned code = 100; code < 600; code++) {
        uint64_t n = atomic_load_explicit(&status_counts[code], memory_order_relaxed);
        if (n) sb_printf(&b, "bloomgate_http_requests_total{code=\"%u\"} %llu\n", code,
                         (unsigned long long)n);
    }

    head(&b, "bloomgate_http_request_duration_seconds", "histogram",
         "Time from a request's arrival in the handler to its response, by route and outcome.");
    for (int r = 0; r < ROUTE_COUNT; r++) {
        for (int o = 0; o < OUTCOME_COUNT; o++) {
            const histogram *h = &request_hist[r][o];
            /* Series appear once they have data (the +Inf bucket's count). */
            if (atomic_load_explicit(&h->count, memory_order_relaxed) == 0) continue;
            char labels[96];
            snprintf(labels, sizeof(labels), "route=\"%s\",outcome=\"%s\"", route_names[r],
                     outcome_names[o]);
            hist_series(&b, "bloomgate_http_request_duration_seconds", labels, h, request_bounds,
                        REQUEST_BUCKETS);
        }
    }

    head(&b, "bloomgate_guard_filter_check_seconds", "histogram",
         "The guard's own cost: one filter check (bg_guard_may_contain), timed on sampled "
         "requests.");
    hist_series(&b, "bloomgate_guard_filter_check_seconds", "", &check_hist, check_bounds,
                CHECK_BUCKETS);

    head(&b, "bloomgate_rebuild_duration_seconds", "histogram",
         "Periodic filter rebuilds started by the service, successful or not.");
    hist_series(&b, "bloomgate_rebuild_duration_seconds", "", &rebuild_hist, rebuild_bounds,
                REBUILD_BUCKETS);

    if (b.oom) {
        free(b.p);
        return -1;
    }
    *out = b.p;
    *len = b.len;
    return 0;
}
