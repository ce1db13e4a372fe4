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
 * later swaps. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(single_flight),
        cmocka_unit_test(rebuild_under_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
