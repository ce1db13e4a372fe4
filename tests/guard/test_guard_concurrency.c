/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate_guard under threads (labels guard and concurrency: also run
 * under ThreadSanitizer by make test-tsan).
 *
 * single flight: 16 threads miss one key at once while the source takes
 * 50 ms per query: exactly one source query, for an absent key (a forced
 * false positive) and for a present one, and every thread gets the same
 * answer.
 * no false negatives across rebuilds: reader threads get known keys while
 * a thread rebuilds and swaps the filter 100 times and a writer adds keys
 * to the source, puts them, and checks the filter has them then and after
 * later swaps.
 * writes during a source query: a get stopped (by a gate, not a sleep)
 * inside the source or the cache's set while the row changes and is put;
 * a get started after the put reads the new row, and the stopped one
 * leaves no old answer in the cache. */
#include "test_util.h"
#include "guard_fixtures.h"

#define THREADS 16

static ms_source src;
static mc_cache cache;
static bg_guard *g;
static pthread_barrier_t barrier;

typedef struct sf_arg {
    const char *key;
    int rc;
    char value[64];
} sf_arg;

static void *sf_thread(void *p)
{
    sf_arg *a = p;
    bg_guard_buf v = {0};
    pthread_barrier_wait(&barrier);
    a->rc = bg_guard_get(g, a->key, strlen(a->key), &v);
    if (a->rc == BG_GUARD_FOUND)
        snprintf(a->value, sizeof a->value, "%s", (char *)v.data);
    bg_guard_buf_free(&v);
    return NULL;
}

static void run_burst(const char *key, sf_arg *args)
{
    pthread_t t[THREADS];
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        args[i] = (sf_arg){.key = key, .rc = -999};
        TU_EQ_I(pthread_create(&t[i], NULL, sf_thread, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
}

static void single_flight(void **state)
{
    (void)state;
    tu_ctx("single flight");
    ms_init(&src);
    mc_init(&cache);
    ms_add_range(&src, "p", 1000);
    /* A filter that says "maybe" to most keys: capacity 1, p = 0.5. */
    bg_guard_options o = {.source = ms_callbacks(&src), .cache = mc_callbacks(&cache),
                          .filter = {.capacity = 1, .error_rate = 0.5}};
    TU_EQ_I(bg_guard_new(&g, &o), BG_OK);
    char k[64];
    size_t kl;
    maybe_key(g, "fp", k, &kl);
    atomic_store(&src.get_sleep_ms, 50);

    /* Absent (a false positive): one query; late threads, if any, find the
     * negative entry instead of starting a second. */
    sf_arg args[THREADS];
    run_burst(k, args);
    for (int i = 0; i < THREADS; i++)
        TU_EQ_I(args[i].rc, BG_GUARD_ABSENT);
    TU_EQ_I(atomic_load(&src.gets), 1);
    bg_guard_counters c = gc(g);
    TU_EQ_U(c.source_queries, 1);
    TU_EQ_U(c.false_positives, 1);
    TU_EQ_U(c.collapsed + c.negative_hits, THREADS - 1);
    TU_TRUE(c.collapsed >= 1);
    print_message("absent: %" PRIu64 " collapsed, %" PRIu64 " negative hits\n", c.collapsed,
                  c.negative_hits);

    /* Present: one query, every thread the same value (late ones from the
     * cache, filled before the flight ends). */
    run_burst("p42", args);
    for (int i = 0; i < THREADS; i++) {
        TU_EQ_I(args[i].rc, BG_GUARD_FOUND);
        TU_TRUE(strcmp(args[i].value, "value of p42") == 0);
    }
    TU_EQ_I(atomic_load(&src.gets), 2);
    bg_guard_counters c2 = gc(g);
    TU_EQ_U(c2.source_queries, 2);
    TU_EQ_U(c2.source_found, 1);
    TU_EQ_U((c2.collapsed - c.collapsed) + c2.cache_hits, THREADS - 1);

    /* Errors are shared too, and not remembered. */
    atomic_store(&src.fail_get, BG_ETOOBIG);
    run_burst("p43", args);
    for (int i = 0; i < THREADS; i++)
        TU_EQ_I(args[i].rc, BG_ETOOBIG);
    TU_EQ_I(atomic_load(&src.gets), 3);
    atomic_store(&src.fail_get, 0);
    atomic_store(&src.get_sleep_ms, 0);
    bg_guard_buf v = {0};
    TU_EQ_I(bg_guard_get(g, "p43", 3, &v), BG_GUARD_FOUND);
    bg_guard_buf_free(&v);

    bg_guard_free(g);
    g = NULL;
    mc_free(&cache);
    ms_free(&src);
}

/* ---- no false negatives across rebuilds ------------------------------------- */

#define INITIAL 20000
#define REBUILDS 100

static atomic_int stop;
static atomic_long reader_gets, writer_puts, bad;

static void *reader(void *p)
{
    uint64_t st = (uint64_t)(uintptr_t)p;
    bg_guard_buf v = {0};
    char k[64];
    while (!atomic_load(&stop)) {
        long i = (long)(tu_next(&st) % INITIAL);
        size_t kl = ms_key(k, "p", i);
        int rc = bg_guard_get(g, k, kl, &v);
        if (rc != BG_GUARD_FOUND) {
            atomic_fetch_add(&bad, 1);
            print_error("reader: %s -> %d\n", k, rc);
        }
        atomic_fetch_add(&reader_gets, 1);
    }
    bg_guard_buf_free(&v);
    return NULL;
}

#define WINDOW 512 /* the writer's keys kept in the source and rechecked */

static void *writer(void *p)
{
    (void)p;
    char k[64];
    long n = 0;
    while (!atomic_load(&stop)) {
        ms_add(&src, "w", n);
        size_t kl = ms_key(k, "w", n);
        int rc = bg_guard_put(g, k, kl);
        if (rc != BG_OK || bg_guard_may_contain(g, k, kl) != 1) {
            atomic_fetch_add(&bad, 1);
            print_error("writer: %s put %d\n", k, rc);
        }
        n++;
        /* The last WINDOW keys put, again now (after later swaps). Older
         * ones leave the source, so that it (and each scan) stays near
         * INITIAL keys however fast this loop runs. */
        if (n % 64 == 0)
            for (long i = n > WINDOW ? n - WINDOW : 0; i < n; i++) {
                kl = ms_key(k, "w", i);
                if (bg_guard_may_contain(g, k, kl) != 1) {
                    atomic_fetch_add(&bad, 1);
                    print_error("writer: %s lost\n", k);
                }
            }
        if (n > WINDOW) {
            kl = ms_key(k, "w", n - WINDOW - 1);
            ms_map_del(&src.map, k, kl);
        }
        atomic_store(&writer_puts, n);
    }
    return NULL;
}

static void *rebuilder(void *p)
{
    (void)p;
    for (int i = 0; i < REBUILDS; i++) {
        int rc = bg_guard_rebuild(g);
        if (rc != BG_OK) {
            atomic_fetch_add(&bad, 1);
            print_error("rebuild %d: %s\n", i, bg_err_name(rc));
        }
    }
    atomic_store(&stop, 1);
    return NULL;
}

static void rebuild_under_load(void **state)
{
    (void)state;
    tu_ctx("no false negatives across %d rebuilds", REBUILDS);
    ms_init(&src);
    ms_add_range(&src, "p", INITIAL);
    /* Fixed capacity (so the sizing does not change under the test) with
     * room for the writer's keys. */
    bg_guard_options o = {.source = ms_callbacks(&src),
                          .filter = {.capacity = 2 * INITIAL, .error_rate = 0.01}};
    TU_EQ_I(bg_guard_new(&g, &o), BG_OK);
    atomic_store(&stop, 0);
    atomic_store(&bad, 0);
    double t0 = tu_now();
    pthread_t r1, r2, w, rb;
    TU_EQ_I(pthread_create(&r1, NULL, reader, (void *)(uintptr_t)1), 0);
    TU_EQ_I(pthread_create(&r2, NULL, reader, (void *)(uintptr_t)2), 0);
    TU_EQ_I(pthread_create(&w, NULL, writer, NULL), 0);
    TU_EQ_I(pthread_create(&rb, NULL, rebuilder, NULL), 0);
    pthread_join(rb, NULL);
    pthread_join(r1, NULL);
    pthread_join(r2, NULL);
    pthread_join(w, NULL);
    long puts = atomic_load(&writer_puts);
    print_message("%d rebuilds in %.2f s, %ld gets, %ld puts\n", REBUILDS, tu_now() - t0,
                  atomic_load(&reader_gets), puts);
    TU_EQ_I(atomic_load(&bad), 0);
    TU_TRUE(atomic_load(&reader_gets) > 0 && puts > 0);
    /* The written keys still in the source, after the last swap. */
    char k[64];
    for (long i = puts > WINDOW ? puts - WINDOW : 0; i < puts; i++) {
        size_t kl = ms_key(k, "w", i);
        TU_EQ_I(bg_guard_may_contain(g, k, kl), 1);
    }
    bg_guard_counters c = gc(g);
    TU_EQ_U(c.rebuilds, REBUILDS);
    TU_EQ_U(c.rebuild_errors, 0);
    TU_EQ_U(c.source_found + c.collapsed, c.requests); /* two readers may meet */
    bg_guard_free(g);
    g = NULL;
    ms_free(&src);
}

/* ---- writes during a source query -------------------------------------------- */

/* A gate: the first call through it after gate_arm stops there until
 * gate_release; gate_wait returns once that call has stopped. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int armed, stopped, open;
} gate;

static gate src_gate, set_gate;

static void gate_init(gate *gt)
{
    pthread_mutex_init(&gt->mu, NULL);
    pthread_cond_init(&gt->cv, NULL);
    gt->armed = gt->stopped = gt->open = 0;
}

static void gate_destroy(gate *gt)
{
    pthread_cond_destroy(&gt->cv);
    pthread_mutex_destroy(&gt->mu);
}

static void gate_arm(gate *gt)
{
    pthread_mutex_lock(&gt->mu);
    gt->armed = 1;
    gt->stopped = gt->open = 0;
    pthread_mutex_unlock(&gt->mu);
}

static void gate_pass(gate *gt)
{
    pthread_mutex_lock(&gt->mu);
    if (gt->armed) {
        gt->armed = 0;
        gt->stopped = 1;
        pthread_cond_broadcast(&gt->cv);
        while (!gt->open)
            pthread_cond_wait(&gt->cv, &gt->mu);
    }
    pthread_mutex_unlock(&gt->mu);
}

/* A deadline `seconds` from now on CLOCK_REALTIME (pthread_cond_timedwait's). */
static struct timespec deadline_in(double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)((seconds - (double)(long)seconds) * 1e9);
    ts.tv_sec += (time_t)seconds + ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    return ts;
}

static void gate_wait(gate *gt)
{
    struct timespec dl = deadline_in(10);
    int timed_out = 0;
    pthread_mutex_lock(&gt->mu);
    while (!gt->stopped && !timed_out)
        timed_out = pthread_cond_timedwait(&gt->cv, &gt->mu, &dl) != 0;
    pthread_mutex_unlock(&gt->mu);
    if (timed_out)
        fail_msg("no call reached the gate within 10 s");
}

static void gate_release(gate *gt)
{
    pthread_mutex_lock(&gt->mu);
    gt->open = 1;
    pthread_cond_broadcast(&gt->cv);
    pthread_mutex_unlock(&gt->mu);
}

/* The source reads the row first, then stops at src_gate: a slow answer
 * holding the row as it was when the query ran. */
static int gated_get(void *ctx, const void *key, size_t len, bg_guard_buf *value)
{
    int rc = ms_get(ctx, key, len, value);
    gate_pass(&src_gate);
    return rc;
}

/* The cache's set stops at set_gate before storing. */
static int gated_set(void *ctx, const void *key, size_t len, const void *value, size_t vlen,
                     uint64_t ttl_ms)
{
    gate_pass(&set_gate);
    return mc_set(ctx, key, len, value, vlen, ttl_ms);
}

/* The cache's set and set_absent stop at set_gate before storing, then at
 * stored_gate after: between the two the store has landed and the call has
 * not returned. */
static gate stored_gate;

static int twice_gated_set(void *ctx, const void *key, size_t len, const void *value,
                           size_t vlen, uint64_t ttl_ms)
{
    gate_pass(&set_gate);
    int rc = mc_set(ctx, key, len, value, vlen, ttl_ms);
    gate_pass(&stored_gate);
    return rc;
}

static int twice_gated_set_absent(void *ctx, const void *key, size_t len, uint64_t ttl_ms)
{
    gate_pass(&set_gate);
    int rc = mc_set_absent(ctx, key, len, ttl_ms);
    gate_pass(&stored_gate);
    return rc;
}

/* A set that times out without storing, its store left to land later
 * (late_store_land), as a command in a stalled server's buffer does. */
static struct {
    char key[64], value[64];
    size_t klen, vlen;
    uint64_t ttl_ms;
    int pending;
} late;

static int late_set(void *ctx, const void *key, size_t len, const void *value, size_t vlen,
                    uint64_t ttl_ms)
{
    (void)ctx;
    if (len >= sizeof late.key || vlen >= sizeof late.value)
        return BG_EINVAL;
    memcpy(late.key, key, len);
    memcpy(late.value, value, vlen);
    late.klen = len;
    late.vlen = vlen;
    late.ttl_ms = ttl_ms;
    late.pending = 1;
    return BG_ECONN;
}

static void late_store_land(void)
{
    TU_TRUE(late.pending);
    TU_EQ_I(mc_set(&cache, late.key, late.klen, late.value, late.vlen, late.ttl_ms), BG_OK);
    late.pending = 0;
}

/* A get on its own thread; getter_wait waits for its end, up to a bound. */
typedef struct getter {
    pthread_t t;
    char key[64];
    int rc;
    char value[64];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
} getter;

static void *getter_main(void *p)
{
    getter *a = p;
    bg_guard_buf v = {0};
    int rc = bg_guard_get(g, a->key, strlen(a->key), &v);
    pthread_mutex_lock(&a->mu);
    a->rc = rc;
    snprintf(a->value, sizeof a->value, "%s", rc == BG_GUARD_FOUND ? (char *)v.data : "");
    a->done = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    bg_guard_buf_free(&v);
    return NULL;
}

static void getter_start(getter *a, const char *key)
{
    memset(a, 0, sizeof *a);
    snprintf(a->key, sizeof a->key, "%s", key);
    a->rc = -999;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    TU_EQ_I(pthread_create(&a->t, NULL, getter_main, a), 0);
}

/* 1 if the get ended within `seconds`. */
static int getter_wait(getter *a, double seconds)
{
    struct timespec dl = deadline_in(seconds);
    pthread_mutex_lock(&a->mu);
    while (!a->done && pthread_cond_timedwait(&a->cv, &a->mu, &dl) == 0)
        ;
    int done = a->done;
    pthread_mutex_unlock(&a->mu);
    return done;
}

static void getter_join(getter *a)
{
    TU_EQ_I(pthread_join(a->t, NULL), 0);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
}

static void set_row(const char *key, const char *value)
{
    ms_map_set(&src.map, key, strlen(key), value, strlen(value), 0);
}

/* A guard over the gated source and cache; a filter that says "maybe" to
 * most keys (capacity 1, p = 0.5, 1000 keys), so that false positives are
 * at hand. */
static void write_race_setup_with(int (*set)(void *, const void *, size_t, const void *, size_t,
                                            uint64_t),
                                  int (*set_absent)(void *, const void *, size_t, uint64_t))
{
    ms_init(&src);
    mc_init(&cache);
    ms_add_range(&src, "p", 1000);
    gate_init(&src_gate);
    gate_init(&set_gate);
    set_row("k", "old");
    bg_guard_options o = {.source = ms_callbacks(&src), .cache = mc_callbacks(&cache),
                          .filter = {.capacity = 1, .error_rate = 0.5}};
    o.source.get = gated_get;
    o.cache.set = set;
    if (set_absent)
        o.cache.set_absent = set_absent;
    TU_EQ_I(bg_guard_new(&g, &o), BG_OK);
}

static void write_race_setup(void)
{
    write_race_setup_with(gated_set, NULL);
}

static void write_race_teardown(void)
{
    bg_guard_free(g);
    g = NULL;
    gate_destroy(&src_gate);
    gate_destroy(&set_gate);
    mc_free(&cache);
    ms_free(&src);
}

/* The cache must not hold `stale` for key, and a get must read `want`. */
static void check_after(const char *key, const char *stale, const char *want)
{
    char held[64] = "";
    int what = mc_peek(&cache, key, strlen(key), held, sizeof held);
    if (stale ? what == 1 && strcmp(held, stale) == 0 : what == 0)
        fail_msg("the cache kept the answer from before the put: %s", stale ? held : "absent");
    bg_guard_buf v = {0};
    for (int i = 0; i < 2; i++) { /* from the source, then perhaps from the cache */
        TU_EQ_I(bg_guard_get(g, key, strlen(key), &v), BG_GUARD_FOUND);
        TU_TRUE(strcmp(v.data, want) == 0);
    }
    bg_guard_buf_free(&v);
}

static void put_during_query(void **state)
{
    (void)state;
    tu_ctx("a get after a put does not join a query begun before it");
    write_race_setup();
    /* A reads "old", then stops inside the source. */
    gate_arm(&src_gate);
    getter a, b;
    getter_start(&a, "k");
    gate_wait(&src_gate);
    /* The row changes and the writer puts it. */
    set_row("k", "new");
    TU_EQ_I(bg_guard_put(g, "k", 1), BG_OK);
    /* B starts after the put returned: it must query the source itself.
     * Had it joined A's flight it would wait for A (released only below). */
    getter_start(&b, "k");
    int b_alone = getter_wait(&b, 2.0);
    gate_release(&src_gate);
    getter_join(&a);
    getter_join(&b);
    TU_EQ_I(a.rc, BG_GUARD_FOUND); /* concurrent with the put: either row */
    TU_EQ_I(b.rc, BG_GUARD_FOUND);
    if (!b_alone || strcmp(b.value, "new") != 0)
        fail_msg("get after the put: \"%s\"%s", b.value,
                 b_alone ? "" : " (it waited for the query begun before the put)");
    TU_EQ_I(atomic_load(&src.gets), 2);
    long sets = atomic_load(&cache.sets);
    check_after("k", "old", "new");
    /* Only B stored its answer: A saw the put and skipped its store. */
    TU_EQ_I(sets, 1);
    write_race_teardown();
}

static void create_during_query(void **state)
{
    (void)state;
    tu_ctx("a key created during a false positive's query is found after its put");
    write_race_setup();
    char k[64];
    size_t kl;
    maybe_key(g, "c", k, &kl);
    gate_arm(&src_gate);
    getter a, b;
    getter_start(&a, k); /* the source answers absent, then A stops */
    gate_wait(&src_gate);
    set_row(k, "created");
    TU_EQ_I(bg_guard_put(g, k, kl), BG_OK);
    getter_start(&b, k);
    int b_alone = getter_wait(&b, 2.0);
    gate_release(&src_gate);
    getter_join(&a);
    getter_join(&b);
    TU_EQ_I(a.rc, BG_GUARD_ABSENT); /* concurrent with the put */
    if (!b_alone || b.rc != BG_GUARD_FOUND)
        fail_msg("get after the put: %d%s", b.rc,
                 b_alone ? "" : " (it waited for the query begun before the put)");
    TU_TRUE(strcmp(b.value, "created") == 0);
    TU_EQ_I(atomic_load(&cache.set_absents), 0);
    check_after(k, NULL, "created");
    TU_EQ_U(gc(g).false_positives, 1);
    write_race_teardown();
}

static void put_between_check_and_store(void **state)
{
    (void)state;
    tu_ctx("a put that slips in between a query's check and its store");
    write_race_setup();
    /* A reads "old", finds no put since its query began, and stops inside
     * the cache's set, before storing. */
    gate_arm(&set_gate);
    getter a, b;
    getter_start(&a, "k");
    gate_wait(&set_gate);
    set_row("k", "new");
    TU_EQ_I(bg_guard_put(g, "k", 1), BG_OK); /* its delete finds nothing yet */
    getter_start(&b, "k");
    TU_TRUE(getter_wait(&b, 10.0));
    TU_EQ_I(b.rc, BG_GUARD_FOUND);
    TU_TRUE(strcmp(b.value, "new") == 0);
    /* A stores "old" now, after the put's delete: it must take it back. */
    long dels = atomic_load(&cache.dels);
    gate_release(&set_gate);
    getter_join(&a);
    getter_join(&b);
    long sets = atomic_load(&cache.sets), dels_after = atomic_load(&cache.dels);
    check_after("k", "old", "new");
    TU_EQ_I(sets, 2);
    TU_EQ_I(dels_after, dels + 1);
    write_race_teardown();
}

/* A put's delete runs while A's store of "old" is on its way; the store
 * lands after it, and A has not yet seen the put (its set has not
 * returned). A get that starts after the put returned must not read it;
 * then A deletes it. key: "k" (a row), or a false positive that the put
 * creates (A's store is then "absent": a false negative if read). */
static void store_lands_after_delete(const char *key, const char *want)
{
    gate_init(&stored_gate);
    gate_arm(&set_gate);
    gate_arm(&stored_gate);
    getter a, b;
    getter_start(&a, key);
    gate_wait(&set_gate); /* A about to store */
    set_row(key, want);
    TU_EQ_I(bg_guard_put(g, key, strlen(key)), BG_OK); /* its delete finds nothing */
    gate_release(&set_gate);
    gate_wait(&stored_gate); /* A's answer is in the cache now */
    getter_start(&b, key);
    TU_TRUE(getter_wait(&b, 10.0));
    if (b.rc != BG_GUARD_FOUND || strcmp(b.value, want) != 0)
        fail_msg("a get after the put: %d \"%s\" (A's store, from before the put)", b.rc,
                 b.value);
    TU_TRUE(gc(g).cache_skipped >= 1);
    gate_release(&stored_gate);
    getter_join(&a);
    getter_join(&b);
    check_after(key, strcmp(key, "k") == 0 ? "old" : NULL, want);
    gate_destroy(&stored_gate);
}

static void store_lands_after_put(void **state)
{
    (void)state;
    tu_ctx("a store that lands after a put's delete, taken back only later");
    write_race_setup_with(twice_gated_set, NULL);
    store_lands_after_delete("k", "new");
    write_race_teardown();
}

static void negative_lands_after_put(void **state)
{
    (void)state;
    tu_ctx("a negative entry that lands after the put of its created key");
    write_race_setup_with(mc_set, twice_gated_set_absent);
    char k[64];
    size_t kl;
    maybe_key(g, "c", k, &kl);
    store_lands_after_delete(k, "created");
    write_race_teardown();
}

/* A store that failed (timed out) lands after a put: the put's delete found
 * nothing, so gets of the stripe skip the cache until the failed store's
 * TTL has run out (FAILED STORES in guard.c). */
static void failed_store_lands_late(void **state)
{
    (void)state;
    tu_ctx("a failed store that lands after a put");
    write_race_setup_with(late_set, NULL);
    bg_guard_buf v = {0};
    TU_EQ_I(bg_guard_get(g, "k", 1, &v), BG_GUARD_FOUND); /* reads "old", its set fails */
    TU_TRUE(strcmp(v.data, "old") == 0);
    TU_EQ_U(gc(g).cache_errors, 1);
    set_row("k", "new");
    TU_EQ_I(bg_guard_put(g, "k", 1), BG_OK);
    late_store_land(); /* "old" lands now, after the put's delete */
    for (int i = 0; i < 3; i++) {
        TU_EQ_I(bg_guard_get(g, "k", 1, &v), BG_GUARD_FOUND);
        if (strcmp(v.data, "new") != 0)
            fail_msg("get %d after the put read \"%s\", the late store", i, v.data);
    }
    bg_guard_buf_free(&v);
    write_race_teardown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(single_flight),
        cmocka_unit_test(rebuild_under_load),
        cmocka_unit_test(put_during_query),
        cmocka_unit_test(create_during_query),
        cmocka_unit_test(put_between_check_and_store),
        cmocka_unit_test(store_lands_after_put),
        cmocka_unit_test(negative_lands_after_put),
        cmocka_unit_test(failed_store_lands_late),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
