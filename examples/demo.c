/* SPDX-License-Identifier: BSD-3-Clause */
/* The library's self-demo (build/examples/bloomgate-demo; ctest example.demo
 * checks what it prints). Sizes a filter for a million ids at 1%, adds a
 * million "existing" ids, then asks for a million ids that do not exist,
 * and shows how many the filter turns away: each one turned away is a cache
 * and database lookup saved. */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bloomgate/bloomgate.h>

enum { N_KEYS = 1000000, N_ABSENT = 1000000 };

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Ids are formatted WINDOW at a time into a small buffer, outside the
 * timed region, as a service has its key in hand when it asks. */
enum { WINDOW = 1024 };
static char text[WINDOW][24];
static const void *keys[WINDOW];
static size_t lens[WINDOW];

static void format_ids(int first, int count)
{
    for (int i = 0; i < count; i++) {
        lens[i] = (size_t)snprintf(text[i], sizeof text[i], "product:%d", first + i);
        keys[i] = text[i];
    }
}

/* Adds (or asks for) ids first .. first + count - 1 in batches; returns
 * how many were new (or may be present) and adds the time spent in the
 * filter calls to *ns. */
static int64_t run_ids(bg_filter *f, int first, int count, bool adding, double *ns)
{
    int64_t hits = 0;
    for (int at = 0; at < count; at += WINDOW) {
        int n = count - at < WINDOW ? count - at : WINDOW;
        format_ids(first + at, n);
        double t0 = now_ns();
        hits += adding ? bg_filter_add_many(f, keys, lens, (size_t)n, NULL)
                       : bg_filter_contains_many(f, keys, lens, (size_t)n, NULL);
        *ns += now_ns() - t0;
    }
    return hits;
}

static int run(bg_variant variant, double p)
{
    bg_sizing s = {.n = N_KEYS, .p = p};
    int rc = bg_sizing_solve(variant, &s, 0);
    if (rc != BG_OK) {
        fprintf(stderr, "sizing: %s\n", bg_strerror(rc));
        return 1;
    }
    printf("\n%s filter for n = %d ids at p = %g:\n", bg_variant_name(variant), N_KEYS, p);
    printf("  m = %llu bits (%.2f MiB, %.2f bits per id), k = %u probes, model p = %.5f\n",
           (unsigned long long)s.m, (double)s.m / 8 / 1048576, (double)s.m / N_KEYS, s.k, s.p);

    bg_filter *f;
    bg_filter_options o = {.variant = variant, .capacity = N_KEYS, .error_rate = p};
    if ((rc = bg_filter_new(&f, &o)) != BG_OK) {
        fprintf(stderr, "bg_filter_new: %s\n", bg_strerror(rc));
        return 1;
    }
    double add_ns = 0, present_ns = 0, absent_ns = 0;
    run_ids(f, 0, N_KEYS, true, &add_ns);
    /* every existing id must pass; ids from N_KEYS on do not exist */
    int64_t missed = N_KEYS - run_ids(f, 0, N_KEYS, false, &present_ns);
    int64_t let_through = run_ids(f, N_KEYS, N_ABSENT, false, &absent_ns);

    bg_filter_stats st;
    bg_filter_stats_get(f, &st);
    printf("  existing ids reported absent: %lld (must be 0: no false negatives)\n",
           (long long)missed);
    printf("  missing ids turned away: %lld of %d; let through (false positives): %lld = %.4f%%\n",
           (long long)(N_ABSENT - let_through), N_ABSENT, (long long)let_through,
           100.0 * (double)let_through / N_ABSENT);
    printf("  ns per id, batches of %d, hashing included: add %.1f, query %.1f (present), "
           "%.1f (absent)\n",
           WINDOW, add_ns / N_KEYS, present_ns / N_KEYS, absent_ns / N_ABSENT);
    printf("  stats: fill %.3f, estimated items %.0f, estimated p now %.5f\n", st.fill_ratio,
           st.estimated_items, st.estimated_fp_rate);
    bg_filter_free(f);
    return missed != 0;
}

int main(void)
{
    printf("bloomgate %s self-demo: a Bloom filter in front of a database turns away\n"
           "lookups of ids that do not exist before they reach the cache or the database.\n"
           "(Timings are one run on this machine; `make bench` measures properly.)\n",
           bg_version_string());
    int bad = 0;
    bad |= run(BG_VARIANT_BLOCKED, 0.01);
    bad |= run(BG_VARIANT_STANDARD, 0.01);
    return bad;
}
