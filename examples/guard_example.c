/* SPDX-License-Identifier: BSD-3-Clause */
/* The guard in your own service, in one short file: a source (here a
 * sorted array standing in for a database table), a local filter built from
 * it, and the read path. Uses only the public headers; built in CI, and
 * against the installed package through pkg-config (bloomgate-guard). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/guard.h>

/* The "database": ids 1..1000 exist. */
typedef struct table {
    unsigned long rows;
    unsigned long queries;
} table;

static int parse_id(const void *key, size_t len, unsigned long *id)
{
    char buf[24];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, key, len);
    buf[len] = '\0';
    char *end;
    *id = strtoul(buf, &end, 10);
    return *end == '\0' ? 0 : -1;
}

static int table_get(void *ctx, const void *key, size_t len, bg_guard_buf *value)
{
    table *t = ctx;
    t->queries++; /* single-threaded here; a real source must be thread-safe */
    unsigned long id;
    if (parse_id(key, len, &id) != 0 || id < 1 || id > t->rows)
        return BG_GUARD_ABSENT;
    char json[64];
    int n = snprintf(json, sizeof json, "{\"id\":%lu}", id);
    return bg_guard_buf_set(value, json, (size_t)n) == BG_OK ? BG_GUARD_FOUND : BG_ENOMEM;
}

static int table_scan(void *ctx, int (*emit)(void *arg, const void *key, size_t len), void *arg)
{
    table *t = ctx;
    for (unsigned long id = 1; id <= t->rows; id++) {
        char key[24];
        int n = snprintf(key, sizeof key, "%lu", id);
        int rc = emit(arg, key, (size_t)n);
        if (rc < 0)
            return rc;
    }
    return BG_OK;
}

static int table_count(void *ctx, uint64_t *out)
{
    *out = ((table *)ctx)->rows;
    return BG_OK;
}

int main(void)
{
    table t = {.rows = 1000, .queries = 0};
    bg_guard_options o = {
        .source = {.ctx = &t, .get = table_get, .scan = table_scan, .count = table_count},
        .filter = {.error_rate = 0.01}, /* capacity 0: 2 x the rows */
    };
    bg_guard *g;
    int rc = bg_guard_new(&g, &o);
    if (rc != BG_OK) {
        fprintf(stderr, "bg_guard_new: %s\n", bg_strerror(rc));
        return 1;
    }
    bg_guard_buf v = {0};
    const char *asked[] = {"42", "1000000"};
    for (size_t i = 0; i < 2; i++) {
        rc = bg_guard_get(g, asked[i], strlen(asked[i]), &v);
        if (rc < 0)
            printf("%s: error %s\n", asked[i], bg_strerror(rc));
        else
            printf("%s: %s\n", asked[i], rc == BG_GUARD_FOUND ? (char *)v.data : "absent");
    }
    /* 10,000 lookups of ids that do not exist: how many reach the table? */
    unsigned long before = t.queries;
    bg_guard_counters c0, c;
    bg_guard_counters_get(g, &c0);
    for (unsigned long id = 2000000; id < 2010000; id++) {
        char key[24];
        int n = snprintf(key, sizeof key, "%lu", id);
        if (bg_guard_get(g, key, (size_t)n, &v) < 0)
            return 1;
    }
    bg_guard_counters_get(g, &c);
    printf("absent ids: 10000 asked, %llu answered by the filter alone, %lu reached the table\n",
           (unsigned long long)(c.filtered - c0.filtered), t.queries - before);
    bg_guard_buf_free(&v);
    bg_guard_free(g);
    return 0;
}
