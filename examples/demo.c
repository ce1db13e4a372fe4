/* `make demo` (for now): the library's self-demo. Sizes a filter for a
 * million ids at 1%, adds a million "existing" ids, then asks for a million
 * ids that do not exist, and shows how many the filter turns away: each one
 * turned away is a cache and database lookup saved. */
#define _POSIX_C_SOURCE 200809L

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
    char key[32];
    double t0 = now_ns();
    for (int i = 0; i < N_KEYS; i++) {
        int len = snprintf(key, sizeof key, "product:%d", i);
        bg_filter_add(f, key, (size_t)len);
    }
    double t1 = now_ns();
    int missed = 0, let_through = 0;
    for (int i = 0; i < N_KEYS; i++) { /* every existing id must pass */
        int len = snprintf(key, sizeof key, "product:%d", i);
        missed += bg_filter_contains(f, key, (size_t)len) != 1;
    }
    double t2 = now_ns();
    for (int i = 0; i < N_ABSENT; i++) { /* ids that do not exist */
        int len = snprintf(key, sizeof key, "product:%d", N_KEYS + i);
        let_through += bg_filter_contains(f, key, (size_t)len) == 1;
    }
    double t3 = now_ns();

    bg_filter_stats st;
    bg_filter_stats_get(f, &st);
    printf("  added %d ids in %.0f ms (%.1f ns each, key formatting included)\n", N_KEYS,
           (t1 - t0) / 1e6, (t1 - t0) / N_KEYS);
    printf("  existing ids reported absent: %d (must be 0: no false negatives)\n", missed);
    printf("  missing ids turned away: %d of %d; let through (false positives): %d = %.4f%%\n",
           N_ABSENT - let_through, N_ABSENT, let_through, 100.0 * let_through / N_ABSENT);
    printf("  query cost: %.1f ns (present), %.1f ns (absent)\n", (t2 - t1) / N_KEYS,
           (t3 - t2) / N_ABSENT);
    printf("  stats: fill %.3f, estimated items %.0f, estimated p now %.5f\n", st.fill_ratio,
           st.estimated_items, st.estimated_fp_rate);
    bg_filter_free(f);
    return missed != 0;
}

int main(void)
{
    printf("bloomgate %s self-demo: a Bloom filter in front of a database turns away\n"
           "lookups of ids that do not exist before they reach the cache or the database.\n",
           bg_version_string());
    int bad = 0;
    bad |= run(BG_VARIANT_BLOCKED, 0.01);
    bad |= run(BG_VARIANT_STANDARD, 0.01);
    return bad;
}
