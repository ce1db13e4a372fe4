/* SPDX-License-Identifier: BSD-3-Clause */
/* The service's own measurements (requests by status code, latency
 * histograms, the filter check's cost) and the /metrics page, Prometheus
 * text exposition format 0.0.4. Lock-free: relaxed atomic counters,
 * written from every worker thread. */
#ifndef PRODUCTS_METRICS_H
#define PRODUCTS_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include <bloomgate/guard.h>

#include "store.h"

typedef enum metrics_route {
    ROUTE_GET_PRODUCT = 0,
    ROUTE_POST_PRODUCT,
    ROUTE_DELETE_PRODUCT,
    ROUTE_METRICS,
    ROUTE_HEALTHZ,
    ROUTE_OTHER, /* unknown paths and wrong methods */
    ROUTE_COUNT
} metrics_route;

/* Static facts shown as bloomgate_products_info's labels. */
typedef struct metrics_info {
    const char *db;
    const char *cache;
    const char *filter;
    const char *variant;
} metrics_info;

/* Monotonic nanoseconds. */
uint64_t metrics_now_ns(void);

/* One HTTP request answered with status after ns nanoseconds. */
void metrics_observe_request(metrics_route route, unsigned status, uint64_t ns);

/* One timed filter check (bg_guard_may_contain). */
void metrics_observe_check(uint64_t ns);

/* One periodic rebuild (bg_guard_rebuild call, successful or not) took ns. */
void metrics_observe_rebuild(uint64_t ns);

/* Writes the whole page into a new malloc'd NUL-terminated buffer (*out,
 * *len; the caller frees it). 0, or -1 when out of memory. */
int metrics_render(char **out, size_t *len, bg_guard *g, store *s, const metrics_info *info);

#endif
