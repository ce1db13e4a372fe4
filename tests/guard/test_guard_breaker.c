/* The Redis cache adapter's circuit breaker (src/guard/redis_cache.c,
 * CIRCUIT BREAKER) against a real redis-server started here on a loopback
 * port in 47300-47399, in a temporary directory, hung with SIGSTOP (a hung
 * Redis accepts connections but never answers: every call would wait its
 * full timeout). The timeouts are 1 s, as the products service sets them.
 *
 * adapter: the first call times out and opens the breaker; then calls fail
 * at once without network I/O (the breaker's counters prove it); after the
 * back-off exactly one of 8 concurrent calls probes (and fails: the back-off
 * doubles); after SIGCONT the cache answers again within the cap.
 * guard: 20 gets that pass the filter while Redis hangs take well under one
 * timeout once the breaker is open, and the cache is hit again after SIGCONT. */
#include "test_util.h"
#include "redis_server.h"
#include "guard_fixtures.h"

#include "guard/guard_internal.h"

#define TIMEOUT_MS 1000u
#define BACKOFF_MIN_MS 200u  /* RC_BACKOFF_MIN_MS */
#define BACKOFF_MAX_MS 5000u /* RC_BACKOFF_MAX_MS */

static ts_server srv;

static int setup(void **state)
{
    (void)state;
    memset(&srv, 0, sizeof srv);
    tu_tmpdir_make(&srv.dir, "breaker");
    srv.port = ts_free_port_in(47300, 100);
    ts_spawn(&srv);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ts_stop(&srv); /* SIGCONT, then SIGKILL */
    return 0;
}

typedef struct breaker_stats {
    uint64_t attempts, rejected, backoff_ms;
} breaker_stats;

static breaker_stats bstats(bg_guard_redis_cache *rc)
{
    breaker_stats s;
    bg__guard_redis_cache_breaker(rc, &s.attempts, &s.rejected, &s.backoff_ms);
    return s;
}

static bg_guard_redis_cache *open_cache(bg_guard_cache *c)
{
    bg_remote_options ro = {.port = srv.port, .connect_timeout_ms = TIMEOUT_MS,
                            .command_timeout_ms = TIMEOUT_MS};
    bg_guard_redis_cache *rc = NULL;
    TU_EQ_I(bg_guard_redis_cache_new(&rc, &ro, "brk:", 0, c), BG_OK);
    return rc;
}

/* ---- the adapter -------------------------------------------------------------- */

static bg_guard_cache probe_cache;
static pthread_barrier_t barrier;

typedef struct prober {
    int rc;
    double seconds;
} prober;

static void *prober_main(void *p)
{
    prober *a = p;
    bg_guard_buf b = {0};
    pthread_barrier_wait(&barrier);
    double t0 = tu_now();
    a->rc = probe_cache.get(probe_cache.ctx, "up", 2, &b);
    a->seconds = tu_now() - t0;
    bg_guard_buf_free(&b);
    return NULL;
}

static void adapter_breaker(void **state)
{
    (void)state;
    tu_ctx("adapter: a hung Redis opens the breaker");
    bg_guard_cache c;
    bg_guard_redis_cache *rc = open_cache(&c);
    bg_guard_buf b = {0};
    TU_EQ_I(c.set(c.ctx, "up", 2, "1", 1, 0), BG_OK);
    TU_EQ_I(c.get(c.ctx, "up", 2, &b), BG_GUARD_CACHE_HIT);
    TU_EQ_U(bstats(rc).backoff_ms, 0);

    TU_EQ_I(kill(srv.pid, SIGSTOP), 0);
    /* The first call waits its timeout, and opens the breaker. */
    double t0 = tu_now();
    TU_EQ_I(c.get(c.ctx, "up", 2, &b), BG_ECONN);
    double first = tu_now() - t0;
    TU_TRUE(first >= 0.9 * TIMEOUT_MS / 1000.0);
    breaker_stats s0 = bstats(rc);
    TU_EQ_U(s0.backoff_ms, BACKOFF_MIN_MS);

    /* Open: every call fails at once, with no network I/O. */
    t0 = tu_now();
    for (int i = 0; i < 20; i++) {
        TU_EQ_I(c.get(c.ctx, "up", 2, &b), BG_ECONN);
        TU_EQ_I(c.set(c.ctx, "x", 1, "y", 1, 0), BG_ECONN);
        TU_EQ_I(c.set_absent(c.ctx, "x", 1, 0), BG_ECONN);
        TU_EQ_I(c.del(c.ctx, "x", 1), BG_ECONN);
    }
    double open = tu_now() - t0;
    breaker_stats s1 = bstats(rc);
    print_message("hung Redis: first call %.3f s, then 80 calls in %.6f s\n", first, open);
    TU_EQ_U(s1.attempts, s0.attempts);
    TU_EQ_U(s1.rejected, s0.rejected + 80);
    /* The counters show no call reached the network; the clock only that
     * none waited a timeout (loose: a loaded host stalls for 100s of ms). */
    TU_TRUE(open < 0.5 * TIMEOUT_MS / 1000.0);

    /* Half-open: after the back-off, one call of 8 concurrent ones probes
     * (and waits its timeout); the others still fail at once. */
    ms_sleep_ms(BACKOFF_MIN_MS + 50);
    probe_cache = c;
    enum { N = 8 };
    pthread_t t[N];
    prober p[N];
    pthread_barrier_init(&barrier, NULL, N);
    for (int i = 0; i < N; i++)
        TU_EQ_I(pthread_create(&t[i], NULL, prober_main, &p[i]), 0);
    for (int i = 0; i < N; i++)
        TU_EQ_I(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&barrier);
    int slow = 0;
    for (int i = 0; i < N; i++) {
        TU_EQ_I(p[i].rc, BG_ECONN);
        slow += p[i].seconds >= 0.5 * TIMEOUT_MS / 1000.0;
    }
    breaker_stats s2 = bstats(rc);
    TU_EQ_U(s2.attempts, s1.attempts + 1);
    TU_EQ_I(slow, 1);
    TU_EQ_U(s2.backoff_ms, 2 * BACKOFF_MIN_MS); /* the probe failed: doubled */

    /* Back: the cache answers again within the cap (here, within the
     * back-off in force plus a call). */
    TU_EQ_I(kill(srv.pid, SIGCONT), 0);
    t0 = tu_now();
    int got;
    while ((got = c.get(c.ctx, "up", 2, &b)) == BG_ECONN) {
        if (tu_now() - t0 > (BACKOFF_MAX_MS + TIMEOUT_MS) / 1000.0)
            fail_msg("the cache did not answer within %u ms of SIGCONT",
                     BACKOFF_MAX_MS + TIMEOUT_MS);
        ms_sleep_ms(5);
    }
    double back = tu_now() - t0;
    print_message("back after SIGCONT in %.3f s\n", back);
    TU_EQ_I(got, BG_GUARD_CACHE_HIT);
    TU_EQ_U(bstats(rc).backoff_ms, 0);
    TU_EQ_I(c.del(c.ctx, "up", 2), BG_OK);
    TU_EQ_I(c.get(c.ctx, "up", 2, &b), BG_GUARD_CACHE_MISS);
    bg_guard_buf_free(&b);
    bg_guard_redis_cache_free(rc);
}

/* ---- through the guard -------------------------------------------------------- */

static void guard_with_hung_cache(void **state)
{
    (void)state;
    tu_ctx("guard: gets stay fast while the cache hangs");
    ms_source src;
    ms_init(&src);
    ms_add_range(&src, "p", 1000);
    bg_guard_options o = {.source = ms_callbacks(&src)};
    bg_guard_redis_cache *rc = open_cache(&o.cache);
    bg_guard *g = NULL;
    TU_EQ_I(bg_guard_new(&g, &o), BG_OK);
    bg_guard_buf v = {0};
    TU_EQ_I(bg_guard_get(g, "p1", 2, &v), BG_GUARD_FOUND);
    TU_EQ_I(bg_guard_get(g, "p1", 2, &v), BG_GUARD_FOUND);
    TU_EQ_U(gc(g).cache_hits, 1);

    TU_EQ_I(kill(srv.pid, SIGSTOP), 0);
    /* The first get waits one timeout (its cache GET); its SET then fails
     * at once: one timeout per request at most, not two. */
    double t0 = tu_now();
    TU_EQ_I(bg_guard_get(g, "p2", 2, &v), BG_GUARD_FOUND);
    double first = tu_now() - t0;
    TU_TRUE(first < 1.5 * TIMEOUT_MS / 1000.0);
    /* Then 20 gets of keys that pass the filter: the source answers, fast:
     * the breaker refuses their cache calls without any network I/O. */
    breaker_stats s0 = bstats(rc);
    char k[64];
    t0 = tu_now();
    for (long i = 0; i < 20; i++) {
        size_t kl = ms_key(k, "p", 100 + i);
        TU_EQ_I(bg_guard_get(g, k, kl, &v), BG_GUARD_FOUND);
    }
    double twenty = tu_now() - t0;
    print_message("hung cache: first get %.3f s, 20 more in %.6f s\n", first, twenty);
    TU_EQ_U(bstats(rc).attempts, s0.attempts);
    TU_TRUE(twenty < 0.5 * TIMEOUT_MS / 1000.0); /* none waited a timeout */
    bg_guard_counters c = gc(g);
    TU_EQ_U(c.cache_errors, 42); /* a GET and a SET each */
    TU_EQ_U(c.source_found, 22);

    TU_EQ_I(kill(srv.pid, SIGCONT), 0);
    t0 = tu_now();
    uint64_t hits = c.cache_hits;
    while (gc(g).cache_hits == hits) {
        if (tu_now() - t0 > (BACKOFF_MAX_MS + 2 * TIMEOUT_MS) / 1000.0)
            fail_msg("no cache hit within %u ms of SIGCONT", BACKOFF_MAX_MS + 2 * TIMEOUT_MS);
        TU_EQ_I(bg_guard_get(g, "p3", 2, &v), BG_GUARD_FOUND);
        ms_sleep_ms(5);
    }
    bg_guard_free(g);
    bg_guard_redis_cache_free(rc);
    bg_guard_buf_free(&v);
    ms_free(&src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(adapter_breaker, setup, teardown),
        cmocka_unit_test_setup_teardown(guard_with_hung_cache, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
