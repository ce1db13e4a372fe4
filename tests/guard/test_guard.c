/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate_guard, single-threaded semantics: the read path step by step
 * (filter, negative cache, cache, source), writes, the NONE filter, option
 * checks, and rebuild-and-swap (deleted keys vanish, counting removes,
 * BG_EBUSY, a failing scan keeps the old filter). The source and cache are
 * the in-memory ones of guard_fixtures.h, whose counters prove which steps
 * a get touched. */
#include "test_util.h"
#include "guard_fixtures.h"

#define NKEYS 1000

typedef struct fixture {
    ms_source src;
    mc_cache cache;
    bg_guard *g;
} fixture;

static fixture fx;

static int setup(void **state)
{
    (void)state;
    ms_init(&fx.src);
    mc_init(&fx.cache);
    ms_add_range(&fx.src, "p", NKEYS);
    fx.g = NULL;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    bg_guard_free(fx.g);
    fx.g = NULL;
    mc_free(&fx.cache);
    ms_free(&fx.src);
    return 0;
}

static bg_guard_options base_options(int with_cache)
{
    bg_guard_options o = {.source = ms_callbacks(&fx.src)};
    if (with_cache)
        o.cache = mc_callbacks(&fx.cache);
    return o;
}

static void make(const bg_guard_options *o)
{
    int rc = bg_guard_new(&fx.g, o);
    if (rc != BG_OK)
        fail_msg("bg_guard_new: %s", bg_err_name(rc));
}

/* ---- the read path ------------------------------------------------------------ */

static void absent_is_filtered(void **state)
{
    (void)state;
    tu_ctx("absent keys are filtered");
    bg_guard_options o = base_options(1);
    make(&o);
    TU_EQ_I(atomic_load(&fx.src.scans), 1);
    TU_EQ_I(atomic_load(&fx.src.counts), 1); /* capacity 0: sized from count() */
    bg_guard_buf v = {0};
    long filtered = 0;
    char k[64];
    for (long i = 0; i < 1000; i++) {
        size_t kl = ms_key(k, "absent", i);
        if (bg_guard_may_contain(fx.g, k, kl) != 0)
            continue;
        TU_EQ_I(bg_guard_get(fx.g, k, kl, &v), BG_GUARD_ABSENT);
        TU_EQ_U(v.len, 0);
        filtered++;
    }
    TU_TRUE(filtered > 950); /* p = 0.01 */
    bg_guard_counters c = gc(fx.g);
    TU_EQ_U(c.requests, filtered);
    TU_EQ_U(c.filtered, filtered);
    TU_EQ_U(c.source_queries, 0);
    TU_EQ_I(atomic_load(&fx.src.gets), 0);
    TU_EQ_I(atomic_load(&fx.cache.gets), 0);
    TU_TRUE(c.filter_items >= NKEYS - 5 && c.filter_items <= NKEYS);
    TU_TRUE(c.filter_bytes > 0);
    bg_guard_buf_free(&v);
}

static void present_goes_through_cache(void **state)
{
    (void)state;
    tu_ctx("present key: cache miss, source, cache hit");
    bg_guard_options o = base_options(1);
    make(&o);
    bg_guard_buf v = {0};
    TU_EQ_I(bg_guard_get(fx.g, "p5", 2, &v), BG_GUARD_FOUND);
    TU_EQ_U(v.len, strlen("value of p5"));
    TU_TRUE(strcmp(v.data, "value of p5") == 0);
    TU_EQ_I(atomic_load(&fx.cache.gets), 1);
    TU_EQ_I(atomic_load(&fx.src.gets), 1);
    TU_EQ_I(atomic_load(&fx.cache.sets), 1);
    bg_guard_counters c = gc(fx.g);
    TU_EQ_U(c.source_queries, 1);
    TU_EQ_U(c.source_found, 1);
    TU_EQ_U(c.cache_hits, 0);

    memset(v.data, 'x', v.len);
    TU_EQ_I(bg_guard_get(fx.g, "p5", 2, &v), BG_GUARD_FOUND);
    TU_TRUE(strcmp(v.data, "value of p5") == 0);
    TU_EQ_I(atomic_load(&fx.src.gets), 1); /* the cache answered */
    c = gc(fx.g);
    TU_EQ_U(c.cache_hits, 1);
    TU_EQ_U(c.source_queries, 1);
    TU_EQ_U(c.requests, 2);
    bg_guard_buf_free(&v);
}

/* A filter of capacity 1 at p = 0.5 holding 1000 keys says "maybe" to most
 * keys: false positives on demand. */
static void false_positive_negative_cache(void **state)
{
    (void)state;
    tu_ctx("false positive: one query, then the negative cache until its TTL");
    bg_guard_options o = base_options(0);
    o.filter = (bg_filter_options){.capacity = 1, .error_rate = 0.5};
    /* 1 s: the ten gets below must all fall within it on a loaded host */
    o.negative_ttl_ms = 1000;
    o.negative_jitter = -1; /* none */
    make(&o);
    char k[64];
    size_t kl;
    maybe_key(fx.g, "fp", k, &kl);
    bg_guard_buf v = {0};
    TU_EQ_I(bg_guard_get(fx.g, k, kl, &v), BG_GUARD_ABSENT);
    TU_EQ_I(atomic_load(&fx.src.gets), 1);
    bg_guard_counters c = gc(fx.g);
    TU_EQ_U(c.false_positives, 1);
    TU_EQ_U(c.source_queries, 1);
    for (int i = 0; i < 10; i++)
        TU_EQ_I(bg_guard_get(fx.g, k, kl, &v), BG_GUARD_ABSENT);
    TU_EQ_I(atomic_load(&fx.src.gets), 1);
    c = gc(fx.g);
    TU_EQ_U(c.negative_hits, 10);
    TU_EQ_U(c.filtered, 0);

    ms_sleep_ms(1200); /* past the TTL: one more query */
    TU_EQ_I(bg_guard_get(fx.g, k, kl, &v), BG_GUARD_ABSENT);
    TU_EQ_I(atomic_load(&fx.src.gets), 2);
    TU_EQ_I(bg_guard_get(fx.g, k, kl, &v), BG_GUARD_ABSENT);
    TU_EQ_I(atomic_load(&fx.src.gets), 2);
    c = gc(fx.g);
    TU_EQ_U(c.false_positives, 2);
    TU_EQ_U(c.negative_hits, 11);

    /* The key is created: a put forgets the negative entry. */
    ms_add(&fx.src, "fp", strtol(k + 2, NULL, 10));
    TU_EQ_I(bg_guard_put(fx.g, k, kl), BG_OK);
    TU_EQ_I(bg_guard_get(fx.g, k, kl, &v), BG_GUARD_FOUND);
    TU_EQ_U(v.len, strlen("value of ") + kl);
    TU_EQ_I(atomic_load(&fx.src.gets), 3);
    TU_EQ_U(gc(fx.g).puts, 1);
    bg_guard_buf_free(&v);
}

static void jitter_spreads_expiry(void **state)
{
    (void)state;
    tu_ctx("jitter: negative entries expire spread over ttl +- jitter");
    bg_guard_options o = base_options(0);
    o.filter = (bg_filter_options){.capacity = 1, .error_rate = 0.5};
    o.negative_ttl_ms = 1000;
    o.negative_jitter = 0.5;
    make(&o);
    /* 40 false positives, cached at once; at 500..1500 ms they expire. The
     * scale leaves room for a loaded machine's pauses (at 100 ms, one of
     * ~40 ms once made 36 of 40 expire). The check must look at every
     * entry between 950 and 1100 ms after it was cached: a host that
     * stalled the round past that runs it again, on new keys. */
    char keys[40][64];
    size_t lens[40];
    bg_guard_buf v = {0};
    long next = 0, mid;
    for (int round = 0;; round++) {
        long n = 0, gets0 = atomic_load(&fx.src.gets);
        double first = tu_now();
        for (; n < 40; next++) {
            lens[n] = ms_key(keys[n], "jit", next);
            if (bg_guard_may_contain(fx.g, keys[n], lens[n]) == 1) {
                TU_EQ_I(bg_guard_get(fx.g, keys[n], lens[n], &v), BG_GUARD_ABSENT);
                n++;
            }
        }
        double last = tu_now();
        long base = atomic_load(&fx.src.gets);
        TU_EQ_I(base - gets0, 40);
        ms_sleep_ms(1000);
        double c0 = tu_now();
        for (long i = 0; i < n; i++)
            TU_EQ_I(bg_guard_get(fx.g, keys[i], lens[i], &v), BG_GUARD_ABSENT);
        double c1 = tu_now();
        mid = atomic_load(&fx.src.gets) - base;
        if (c0 - last >= 0.95 && c1 - first <= 1.1)
            break;
        print_message("checked %.0f..%.0f ms after caching: again\n", (c0 - last) * 1e3,
                      (c1 - first) * 1e3);
        if (round + 1 >= 5)
            fail_msg("5 rounds missed the 950..1100 ms window");
    }
    /* About half expired by 1000 ms (uniform over 500..1500), surely not none or all. */
    TU_TRUE(mid > 4 && mid < 36);
    bg_guard_buf_free(&v);
}

static void cache_absent_entry(void **state)
{
    (void)state;
    tu_ctx("a false positive goes to the cache's negative entry too");
    bg_guard_options o = base_options(1);
    o.filter = (bg_filter_options){.capacity = 1, .error_rate = 0.5};
    make(&o);
    char k[64];
    size_t kl;
    maybe_key(fx.g, "fpc", k, &kl);
    bg_guard_buf v = {0};
    TU_EQ_I(bg_guard_get(fx.g, k, kl, &v), BG_GUARD_ABSENT);
    TU_EQ_I(atomic_load(&fx.cache.set_absents), 1);
    /* Another instance (a second guard on the same cache) hits the entry. */
    bg_guard *g2;
    TU_EQ_I(bg_guard_new(&g2, &o), BG_OK);
    TU_EQ_I(bg_guard_get(g2, k, kl, &v), BG_GUARD_ABSENT);
    TU_EQ_I(atomic_load(&fx.src.gets), 1);
    TU_EQ_U(gc(g2).negative_hits, 1);
    /* A put deletes the cache entry as well. */
    ms_add(&fx.src, "fpc", strtol(k + 3, NULL, 10));
    TU_EQ_I(bg_guard_put(g2, k, kl), BG_OK);
    TU_EQ_I(bg_guard_get(g2, k, kl, &v), BG_GUARD_FOUND);
    bg_guard_free(g2);
    bg_guard_buf_free(&v);
}

static void source_error_is_an_error(void **state)
{
    (void)state;
    tu_ctx("a failing source is an error, never absent");
    bg_guard_options o = base_options(1);
    make(&o);
    bg_guard_buf v = {0};
    atomic_store(&fx.src.fail_get, BG_ECONN);
    TU_EQ_I(bg_guard_get(fx.g, "p7", 2, &v), BG_ECONN);
    bg_guard_counters c = gc(fx.g);
    TU_EQ_U(c.source_errors, 1);
    TU_EQ_U(c.source_queries, 1);
    TU_EQ_U(c.false_positives, 0);
    TU_EQ_I(atomic_load(&fx.cache.set_absents), 0);
    /* Nothing negative was remembered: once the source is back, found. */
    atomic_store(&fx.src.fail_get, 0);
    TU_EQ_I(bg_guard_get(fx.g, "p7", 2, &v), BG_GUARD_FOUND);
    /* A callback answering nonsense is an error too. */
    atomic_store(&fx.src.fail_get, 7);
    TU_EQ_I(bg_guard_get(fx.g, "p8", 2, &v), BG_EINVAL);
    TU_EQ_U(gc(fx.g).source_errors, 2);
    bg_guard_buf_free(&v);
}

static void cache_error_is_skipped(void **state)
{
    (void)state;
    tu_ctx("a failing cache is skipped and counted");
    bg_guard_options o = base_options(1);
    make(&o);
    atomic_store(&fx.cache.fail, BG_ECONN);
    bg_guard_buf v = {0};
    TU_EQ_I(bg_guard_get(fx.g, "p9", 2, &v), BG_GUARD_FOUND);
    TU_TRUE(strcmp(v.data, "value of p9") == 0);
    bg_guard_counters c = gc(fx.g);
    TU_EQ_U(c.cache_errors, 2); /* the get and the set */
    TU_EQ_U(c.source_found, 1);
    TU_EQ_I(bg_guard_get(fx.g, "p9", 2, &v), BG_GUARD_FOUND);
    TU_EQ_I(atomic_load(&fx.src.gets), 2);
    TU_EQ_I(bg_guard_put(fx.g, "p9", 2), BG_OK); /* the del fails: counted, not returned */
    TU_EQ_U(gc(fx.g).cache_errors, 5);
    bg_guard_buf_free(&v);
}

/* Calls get until it reads the cache (its gets counter moves), for up to
 * 5 s; the seconds since t0 when it did. */
static double until_cache_read(const char *key, bg_guard_buf *v, double t0)
{
    size_t kl = strlen(key);
    for (;;) {
        long before = atomic_load(&fx.cache.gets);
        double t = tu_now();
        TU_TRUE(bg_guard_get(fx.g, key, kl, v) >= 0);
        if (atomic_load(&fx.cache.gets) > before)
            return t - t0;
        if (t - t0 > 5)
            fail_msg("the cache was not read again within 5 s");
        ms_sleep_ms(2);
    }
}

static void failed_delete_distrusts_cache(void **state)
{
    (void)state;
    tu_ctx("after a failed delete, the cache is not read for a TTL");
    bg_guard_options o = base_options(1);
    o.filter = (bg_filter_options){.capacity = 1, .error_rate = 0.5}; /* false positives */
    /* TTLs of 1 s and 0.5 s: the checks of the window below must fall
     * within it on a loaded host (a stall of 100 ms is not rare there) */
    o.cache_ttl_ms = 1000;
    o.negative_ttl_ms = 500;
    o.negative_jitter = -1;
    make(&o);
    bg_guard_buf v = {0};
    /* A value and a negative entry in the cache. */
    TU_EQ_I(bg_guard_get(fx.g, "p5", 2, &v), BG_GUARD_FOUND);
    char k[64], held[64];
    size_t kl;
    maybe_key(fx.g, "fp", k, &kl);
    TU_EQ_I(bg_guard_get(fx.g, k, kl, &v), BG_GUARD_ABSENT);
    TU_EQ_I(atomic_load(&fx.cache.set_absents), 1);

    /* Both rows change, and the cache cannot delete (unreachable for a
     * moment): the old entries stay. */
    ms_map_set(&fx.src.map, "p5", 2, "p5 v2", 5, 0);
    ms_map_set(&fx.src.map, k, kl, "created", 7, 0);
    atomic_store(&fx.cache.fail_del, BG_ECONN);
    double t0 = tu_now();
    TU_EQ_I(bg_guard_put(fx.g, "p5", 2), BG_OK);
    TU_EQ_I(bg_guard_put(fx.g, k, kl), BG_OK);
    atomic_store(&fx.cache.fail_del, 0);
    TU_EQ_I(mc_peek(&fx.cache, "p5", 2, held, sizeof held), 1);
    TU_TRUE(strcmp(held, "value of p5") == 0);
    TU_EQ_I(mc_peek(&fx.cache, k, kl, held, sizeof held), 0);
    TU_EQ_U(gc(fx.g).cache_errors, 2);

    /* The stale entries are not served: the source answers. */
    long cache_gets = atomic_load(&fx.cache.gets);
    TU_EQ_I(bg_guard_get(fx.g, "p5", 2, &v), BG_GUARD_FOUND);
    TU_TRUE(strcmp(v.data, "p5 v2") == 0);
    TU_EQ_I(bg_guard_get(fx.g, k, kl, &v), BG_GUARD_FOUND);
    TU_TRUE(strcmp(v.data, "created") == 0);
    TU_EQ_I(atomic_load(&fx.cache.gets), cache_gets);
    bg_guard_counters c = gc(fx.g);
    TU_EQ_U(c.cache_skipped, 2);
    TU_EQ_U(c.cache_hits, 0);
    TU_EQ_U(c.negative_hits, 0);
    /* Writes go on: the cache now holds the new rows. */
    TU_EQ_I(mc_peek(&fx.cache, "p5", 2, held, sizeof held), 1);
    TU_TRUE(strcmp(held, "p5 v2") == 0);

    /* Once cache_ttl_ms (the longer TTL) has passed since the failure, the
     * cache is read again. */
    double dt = until_cache_read("p5", &v, t0);
    TU_TRUE(dt >= 0.995);
    TU_TRUE(strcmp(v.data, "p5 v2") == 0);
    TU_EQ_U(gc(fx.g).cache_hits, 1);
    print_message("cache read again %.0f ms after the failed delete\n", dt * 1000);
    bg_guard_buf_free(&v);
}

static void failed_delete_window_covers_negatives(void **state)
{
    (void)state;
    tu_ctx("a remove's failed delete; negatives outliving values set the window");
    bg_guard_options o = base_options(1);
    o.cache_ttl_ms = 100;
    o.negative_ttl_ms = 1000;
    o.negative_jitter = 0.5; /* negatives live up to 1500 ms */
    make(&o);
    bg_guard_buf v = {0};
    TU_EQ_I(bg_guard_get(fx.g, "p6", 2, &v), BG_GUARD_FOUND);
    TU_TRUE(ms_map_del(&fx.src.map, "p6", 2));
    atomic_store(&fx.cache.fail_del, BG_EIO);
    double t0 = tu_now();
    TU_EQ_I(bg_guard_remove(fx.g, "p6", 2), BG_OK);
    atomic_store(&fx.cache.fail_del, 0);
    /* The filter still says maybe; the stale value in the cache is not
     * served. */
    TU_EQ_I(bg_guard_get(fx.g, "p6", 2, &v), BG_GUARD_ABSENT);
    TU_EQ_U(gc(fx.g).cache_skipped, 1);
    TU_TRUE(until_cache_read("p7", &v, t0) >= 1.495);
    /* Without set_absent only the values' TTL counts. */
    bg_guard_free(fx.g);
    o.cache.set_absent = NULL;
    make(&o);
    atomic_store(&fx.cache.fail_del, BG_EIO);
    t0 = tu_now();
    TU_EQ_I(bg_guard_put(fx.g, "p7", 2), BG_OK);
    atomic_store(&fx.cache.fail_del, 0);
    double dt = until_cache_read("p7", &v, t0);
    TU_TRUE(dt >= 0.095 && dt < 1.0); /* 1.5 s if the negatives' TTL counted */
    bg_guard_buf_free(&v);
}

static void none_filter_asks_the_source(void **state)
{
    (void)state;
    tu_ctx("BG_GUARD_FILTER_NONE: every get reaches the source");
    bg_guard_options o = base_options(0);
    o.filter_kind = BG_GUARD_FILTER_NONE;
    o.source.scan = NULL; /* not needed */
    make(&o);
    TU_EQ_I(atomic_load(&fx.src.scans), 0);
    bg_guard_buf v = {0};
    for (int i = 0; i < 5; i++)
        TU_EQ_I(bg_guard_get(fx.g, "nope", 4, &v), BG_GUARD_ABSENT);
    TU_EQ_I(bg_guard_get(fx.g, "p1", 2, &v), BG_GUARD_FOUND);
    TU_EQ_I(atomic_load(&fx.src.gets), 6);
    bg_guard_counters c = gc(fx.g);
    TU_EQ_U(c.filtered, 0);
    TU_EQ_U(c.negative_hits, 0);
    TU_EQ_U(c.false_positives, 0);
    TU_EQ_U(c.source_queries, 6);
    TU_EQ_I(bg_guard_may_contain(fx.g, "nope", 4), 1);
    TU_EQ_I(bg_guard_put(fx.g, "x", 1), BG_OK);
    TU_EQ_I(bg_guard_rebuild(fx.g), BG_OK);
    bg_guard_buf_free(&v);
}

static void options_and_arguments(void **state)
{
    (void)state;
    tu_ctx("option and argument checks");
    bg_guard *g = (bg_guard *)&fx; /* must be reset to NULL on failure */
    bg_guard_options o = base_options(1);
    TU_EQ_I(bg_guard_new(NULL, &o), BG_EINVAL);
    TU_EQ_I(bg_guard_new(&g, NULL), BG_EINVAL);
    TU_TRUE(g == NULL);
    bg_guard_options bad = o;
    bad.source.get = NULL;
    TU_EQ_I(bg_guard_new(&g, &bad), BG_EINVAL);
    bad = o;
    bad.source.scan = NULL;
    TU_EQ_I(bg_guard_new(&g, &bad), BG_EINVAL);
    bad = o;
    bad.cache.del = NULL;
    TU_EQ_I(bg_guard_new(&g, &bad), BG_EINVAL);
    bad = o;
    bad.negative_jitter = 1.0;
    TU_EQ_I(bg_guard_new(&g, &bad), BG_EINVAL);
    bad = o;
    bad.headroom = -1;
    TU_EQ_I(bg_guard_new(&g, &bad), BG_EINVAL);
    bad = o;
    bad.filter_kind = (bg_guard_filter_kind)7;
    TU_EQ_I(bg_guard_new(&g, &bad), BG_EINVAL);
    bad = o;
    bad.filter_kind = BG_GUARD_FILTER_REMOTE; /* no remote options */
    TU_EQ_I(bg_guard_new(&g, &bad), BG_EINVAL);
    bad = o;
    bad.source.count = NULL; /* capacity 0 needs count() */
    TU_EQ_I(bg_guard_new(&g, &bad), BG_EINVAL);
    bad.filter.capacity = 5000;
    TU_EQ_I(bg_guard_new(&g, &bad), BG_OK);
    bg_guard_free(g);
    bg_guard_free(NULL);

    make(&o);
    bg_guard_buf v = {0};
    TU_EQ_I(bg_guard_get(NULL, "a", 1, &v), BG_EINVAL);
    TU_EQ_I(bg_guard_get(fx.g, NULL, 1, &v), BG_EINVAL);
    TU_EQ_I(bg_guard_get(fx.g, "a", 1, NULL), BG_EINVAL);
    TU_EQ_I(bg_guard_may_contain(fx.g, NULL, 1), BG_EINVAL);
    TU_EQ_I(bg_guard_put(NULL, "a", 1), BG_EINVAL);
    TU_EQ_I(bg_guard_remove(fx.g, NULL, 2), BG_EINVAL);
    TU_EQ_I(bg_guard_rebuild(NULL), BG_EINVAL);
    TU_EQ_I(bg_guard_counters_get(fx.g, NULL), BG_EINVAL);
    /* The empty key is a key. */
    ms_map_set(&fx.src.map, "", 0, "empty", 5, 0);
    TU_EQ_I(bg_guard_put(fx.g, NULL, 0), BG_OK);
    TU_EQ_I(bg_guard_get(fx.g, NULL, 0, &v), BG_GUARD_FOUND);
    TU_TRUE(strcmp(v.data, "empty") == 0);

    /* Buffers. */
    bg_guard_buf b = {0};
    TU_EQ_I(bg_guard_buf_set(&b, "abc", 3), BG_OK);
    TU_EQ_I(bg_guard_buf_set(&b, (char *)b.data + 1, 2), BG_OK); /* aliasing */
    TU_TRUE(b.len == 2 && memcmp(b.data, "bc", 3) == 0);
    char big[1000];
    memset(big, 'z', sizeof big);
    TU_EQ_I(bg_guard_buf_set(&b, big, sizeof big), BG_OK);
    TU_TRUE(b.len == 1000 && b.cap > 1000 && ((char *)b.data)[1000] == 0);
    TU_EQ_I(bg_guard_buf_set(&b, NULL, 0), BG_OK);
    TU_EQ_U(b.len, 0);
    TU_EQ_I(bg_guard_buf_set(NULL, "a", 1), BG_EINVAL);
    bg_guard_buf_free(&b);
    TU_TRUE(b.data == NULL && b.cap == 0);
    bg_guard_buf_free(NULL);
    bg_guard_buf_free(&v);
}

/* ---- rebuild and swap ---------------------------------------------------------- */

static void rebuild_drops_deleted_keys(void **state)
{
    (void)state;
    tu_ctx("rebuild: keys deleted from the source leave the filter");
    bg_guard_options o = base_options(1);
    o.filter = (bg_filter_options){.variant = BG_VARIANT_STANDARD, .capacity = 4000,
                                   .error_rate = 0.001};
    make(&o);
    char k[64];
    for (long i = 0; i < 100; i++) {
        size_t kl = ms_key(k, "p", i);
        TU_TRUE(ms_map_del(&fx.src.map, k, kl));
        TU_EQ_I(bg_guard_remove(fx.g, k, kl), BG_OK); /* standard: cache only */
        TU_EQ_I(bg_guard_may_contain(fx.g, k, kl), 1);
    }
    TU_EQ_I(bg_guard_rebuild(fx.g), BG_OK);
    long gone = 0;
    for (long i = 0; i < 100; i++) {
        size_t kl = ms_key(k, "p", i);
        gone += bg_guard_may_contain(fx.g, k, kl) == 0;
    }
    TU_TRUE(gone >= 97);
    for (long i = 100; i < NKEYS; i++) {
        size_t kl = ms_key(k, "p", i);
        TU_EQ_I(bg_guard_may_contain(fx.g, k, kl), 1);
    }
    bg_guard_counters c = gc(fx.g);
    TU_EQ_U(c.rebuilds, 1);
    TU_EQ_U(c.removes, 100);
    TU_EQ_U(c.rebuild_errors, 0);
    TU_TRUE(c.filter_items >= NKEYS - 105 && c.filter_items <= NKEYS - 100);
}

static void counting_remove_is_immediate(void **state)
{
    (void)state;
    tu_ctx("counting filter: bg_guard_remove makes the key absent at once");
    bg_guard_options o = base_options(1);
    o.filter = (bg_filter_options){.variant = BG_VARIANT_COUNTING, .error_rate = 0.001};
    make(&o);
    char k[64];
    bg_guard_buf v = {0};
    for (long i = 0; i < 50; i++) {
        size_t kl = ms_key(k, "p", i);
        TU_EQ_I(bg_guard_get(fx.g, k, kl, &v), BG_GUARD_FOUND); /* now cached */
        TU_TRUE(ms_map_del(&fx.src.map, k, kl));
        TU_EQ_I(bg_guard_remove(fx.g, k, kl), BG_OK);
        TU_EQ_I(bg_guard_may_contain(fx.g, k, kl), 0);
        TU_EQ_I(bg_guard_get(fx.g, k, kl, &v), BG_GUARD_ABSENT);
    }
    for (long i = 50; i < NKEYS; i++) {
        size_t kl = ms_key(k, "p", i);
        TU_EQ_I(bg_guard_may_contain(fx.g, k, kl), 1);
    }
    /* Also across a rebuild, and a put brings a key back. */
    TU_EQ_I(bg_guard_rebuild(fx.g), BG_OK);
    ms_add(&fx.src, "p", 3);
    TU_EQ_I(bg_guard_put(fx.g, "p3", 2), BG_OK);
    TU_EQ_I(bg_guard_get(fx.g, "p3", 2, &v), BG_GUARD_FOUND);
    TU_EQ_I(bg_guard_remove(fx.g, "p3", 2), BG_OK);
    TU_EQ_I(bg_guard_may_contain(fx.g, "p3", 2), 0);
    bg_guard_buf_free(&v);
}

static void *rebuild_thread(void *arg)
{
    return (void *)(intptr_t)bg_guard_rebuild(arg);
}

static void rebuild_busy(void **state)
{
    (void)state;
    tu_ctx("a second concurrent rebuild gets BG_EBUSY");
    bg_guard_options o = base_options(0);
    make(&o);
    atomic_store(&fx.src.scan_sleep_ms, 300);
    pthread_t t;
    TU_EQ_I(pthread_create(&t, NULL, rebuild_thread, fx.g), 0);
    while (atomic_load(&fx.src.scans) < 2)
        ms_sleep_ms(1);
    TU_EQ_I(bg_guard_rebuild(fx.g), BG_EBUSY);
    bg_guard_buf v = {0};
    TU_EQ_I(bg_guard_get(fx.g, "p4", 2, &v), BG_GUARD_FOUND); /* readers go on */
    void *ret;
    TU_EQ_I(pthread_join(t, &ret), 0);
    TU_EQ_I((intptr_t)ret, BG_OK);
    bg_guard_counters c = gc(fx.g);
    TU_EQ_U(c.rebuilds, 1);
    TU_EQ_U(c.rebuild_errors, 0);
    atomic_store(&fx.src.scan_sleep_ms, 0);
    TU_EQ_I(bg_guard_rebuild(fx.g), BG_OK); /* free again */
    bg_guard_buf_free(&v);
}

static void failed_rebuild_keeps_filter(void **state)
{
    (void)state;
    tu_ctx("a failing scan leaves the old filter in place");
    bg_guard_options o = base_options(0);
    make(&o);
    char k[64];
    /* A key deleted from the source stays in the old filter... */
    TU_TRUE(ms_map_del(&fx.src.map, "p0", 2));
    atomic_store(&fx.src.fail_scan, BG_EIO);
    TU_EQ_I(bg_guard_rebuild(fx.g), BG_EIO);
    bg_guard_counters c = gc(fx.g);
    TU_EQ_U(c.rebuild_errors, 1);
    TU_EQ_U(c.rebuilds, 0);
    TU_EQ_I(bg_guard_may_contain(fx.g, "p0", 2), 1); /* ...the old filter */
    bg_guard_buf v = {0};
    for (long i = 1; i < NKEYS; i++) {
        size_t kl = ms_key(k, "p", i);
        TU_EQ_I(bg_guard_get(fx.g, k, kl, &v), BG_GUARD_FOUND);
    }
    /* Puts made during the failed rebuild are in the old filter too. */
    ms_add(&fx.src, "new", 1);
    TU_EQ_I(bg_guard_put(fx.g, "new1", 4), BG_OK);
    TU_EQ_I(bg_guard_may_contain(fx.g, "new1", 4), 1);
    atomic_store(&fx.src.fail_scan, 0);
    TU_EQ_I(bg_guard_rebuild(fx.g), BG_OK);
    TU_EQ_I(bg_guard_may_contain(fx.g, "new1", 4), 1);
    /* Any failure is counted, BG_EINVAL from the scan (or from a bad key it
     * emits) too; only another rebuild running (BG_EBUSY) is not. */
    atomic_store(&fx.src.fail_scan, BG_EINVAL);
    TU_EQ_I(bg_guard_rebuild(fx.g), BG_EINVAL);
    atomic_store(&fx.src.fail_scan, 0);
    c = gc(fx.g);
    TU_EQ_U(c.rebuild_errors, 2);
    TU_EQ_U(c.rebuilds, 1);
    bg_guard_buf_free(&v);
}

/* A scan that answers what guard.h does not define (a positive number) or
 * emits a NULL key with a length fails the rebuild with BG_EINVAL, counted;
 * the old filter stays. */
static int bad_scan_mode; /* 0: as the source; 1: returns 7; 2: a NULL key */

static int mode_scan(void *ctx, int (*emit)(void *, const void *, size_t), void *arg)
{
    int rc = ms_scan(ctx, emit, arg);
    if (rc < 0 || bad_scan_mode == 0)
        return rc;
    return bad_scan_mode == 1 ? 7 : emit(arg, NULL, 3);
}

static void rebuild_bad_scans(void **state)
{
    (void)state;
    tu_ctx("scans that answer out of range");
    bg_guard_options o = base_options(0);
    o.source.scan = mode_scan;
    bg_guard *g = NULL;
    bad_scan_mode = 1;
    TU_EQ_I(bg_guard_new(&g, &o), BG_EINVAL);
    TU_TRUE(g == NULL);
    bad_scan_mode = 0;
    make(&o);
    TU_TRUE(ms_map_del(&fx.src.map, "p0", 2));
    for (int mode = 1; mode <= 2; mode++) {
        bad_scan_mode = mode;
        TU_EQ_I(bg_guard_rebuild(fx.g), BG_EINVAL);
        TU_EQ_U(gc(fx.g).rebuild_errors, (uint64_t)mode);
        TU_EQ_I(bg_guard_may_contain(fx.g, "p0", 2), 1); /* the old filter */
    }
    bad_scan_mode = 0;
    TU_EQ_I(bg_guard_rebuild(fx.g), BG_OK);
    TU_EQ_U(gc(fx.g).rebuilds, 1);
}

static void new_fails_with_source(void **state)
{
    (void)state;
    tu_ctx("bg_guard_new returns the source's scan error");
    bg_guard_options o = base_options(0);
    atomic_store(&fx.src.fail_scan, BG_EIO);
    bg_guard *g = NULL;
    TU_EQ_I(bg_guard_new(&g, &o), BG_EIO);
    TU_TRUE(g == NULL);
    o.filter = (bg_filter_options){.capacity = 100, .error_rate = 2.0}; /* bad sizing */
    atomic_store(&fx.src.fail_scan, 0);
    TU_TRUE(bg_guard_new(&g, &o) < 0);
    TU_TRUE(g == NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(absent_is_filtered, setup, teardown),
        cmocka_unit_test_setup_teardown(present_goes_through_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(false_positive_negative_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(jitter_spreads_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(cache_absent_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(source_error_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(cache_error_is_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_delete_distrusts_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_delete_window_covers_negatives, setup, teardown),
        cmocka_unit_test_setup_teardown(none_filter_asks_the_source, setup, teardown),
        cmocka_unit_test_setup_teardown(options_and_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(rebuild_drops_deleted_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(counting_remove_is_immediate, setup, teardown),
        cmocka_unit_test_setup_teardown(rebuild_busy, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_rebuild_keeps_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(new_fails_with_source, setup, teardown),
        cmocka_unit_test_setup_teardown(rebuild_bad_scans, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
