/* SPDX-License-Identifier: BSD-3-Clause */
/* The Redis cache adapter's circuit breaker (src/guard/redis_cache.c,
 * CIRCUIT BREAKER) against a real redis-server started here on a loopback
 * port in 47300-47399, in a temporary directory, hung with SIGSTOP (a hung
 * Redis accepts connections but never answers: every call would wait its
 * full timeout). The timeouts are 1 s, as the products service sets them.
 *
 * adapter: the first call times out and opens the breaker; then calls fail
 * at once without network I/O (the breaker's counters prove it); after the
 * back-off exactly one of 8 concurrent calls probes (and fails: the back-off
 * doubles); after SIGCONT the cache answers again, the back-off never past
 * its cap.
 * guard: 20 gets that pass the filter while Redis hangs make no cache call
 * once the breaker is open (one timeout per request at most), and the cache
 * is hit again after SIGCONT.
 *
 * WAITING ON A LOADED HOST
 * The tests wait for states, not for times: the server stopped (its
 * /proc stat), the back-off over (the breaker's own end time), the cache
 * answering again; each wait has a deadline of WAIT_S, far above what an
 * idle host needs. A clock is asserted only from below (a call that waits
 * a timeout takes at least that long). What runs at once (no network I/O)
 * is shown by the counters. Calls meant to run while the breaker is open
 * (a burst, the SET after the first GET) must fit in its back-off (200 ms at
 * first), and the 8 half-open calls within the probe: when a stalled host
 * made them outlast it (a late call may rightly have probed), they run
 * again in the next back-off, which the failed probe has doubled. */
#include "test_util.h"
#include "redis_server.h"
#include "guard_fixtures.h"

#include "common/clock.h" /* bg__now_ms */
#include "guard/guard_testing.h" /* the breaker's counters (testing build) */

#define TIMEOUT_MS 1000u
#define BACKOFF_MIN_MS 200u  /* RC_BACKOFF_MIN_MS */
#define BACKOFF_MAX_MS 5000u /* RC_BACKOFF_MAX_MS */
#define WAIT_S 60.0          /* the deadline of every wait */
#define BURST_TRIES 6        /* bursts outlasting their back-off before failing */

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

/* The state field of /proc/<pid>/stat ('T': stopped), or 0. */
static char proc_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the name may hold spaces */
    return p && p[1] == ' ' ? p[2] : 0;
}

/* SIGSTOP, then waits until the server has stopped: a signal is delivered
 * when the process next runs, which a loaded host may delay past the call
 * meant to find it hung. */
static void hang_server(void)
{
    TU_EQ_I(kill(srv.pid, SIGSTOP), 0);
    double t0 = tu_now();
    while (proc_state(srv.pid) != 'T') {
        if (tu_now() - t0 > WAIT_S)
            fail_msg("redis-server (pid %ld) did not stop within %.0f s", (long)srv.pid, WAIT_S);
        ms_sleep_ms(1);
    }
}

static bg__guard_testing_breaker_state bstate(bg_guard_redis_cache *rc)
{
    bg__guard_testing_breaker_state s;
    bg__guard_testing_breaker(rc, &s);
    return s;
}

/* Whether the breaker is open now and has been since `before` was read:
 * the same back-off, not yet over (a probe in between would have set
 * another end, or closed it). */
static int open_since(bg_guard_redis_cache *rc, const bg__guard_testing_breaker_state *before)
{
    bg__guard_testing_breaker_state now = bstate(rc);
    return before->open_until_ms != 0 && now.open_until_ms == before->open_until_ms &&
           bg__now_ms() < now.open_until_ms;
}

/* Waits until the back-off in force is over (the next call probes). */
static void wait_backoff_over(bg_guard_redis_cache *rc)
{
    double t0 = tu_now();
    for (;;) {
        uint64_t until = bstate(rc).open_until_ms, now = bg__now_ms();
        if (until == 0 || now >= until)
            return;
        if (tu_now() - t0 > WAIT_S)
            fail_msg("the back-off did not end within %.0f s", WAIT_S);
        ms_sleep_ms((long)(until - now));
    }
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
    double start, seconds;
} prober;

static void *prober_main(void *p)
{
    prober *a = p;
    bg_guard_buf b = {0};
    pthread_barrier_wait(&barrier);
    a->start = tu_now();
    a->rc = probe_cache.get(probe_cache.ctx, "up", 2, &b);
    a->seconds = tu_now() - a->start;
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
    TU_EQ_U(bstate(rc).backoff_ms, 0);

    hang_server();
    /* The first call waits its timeout, and opens the breaker. */
    double t0 = tu_now();
    TU_EQ_I(c.get(c.ctx, "up", 2, &b), BG_ECONN);
    double first = tu_now() - t0;
    TU_TRUE(first >= 0.9 * TIMEOUT_MS / 1000.0);
    bg__guard_testing_breaker_state s0 = bstate(rc);
    TU_EQ_U(s0.backoff_ms, BACKOFF_MIN_MS);

    /* Open: every call fails at once, with no network I/O (no call counted
     * as sent, every one as refused). */
    bg__guard_testing_breaker_state s1;
    double open;
    for (int burst = 0;; burst++) {
        s0 = bstate(rc);
        int other = 0;
        t0 = tu_now();
        for (int i = 0; i < 20; i++) {
            other += c.get(c.ctx, "up", 2, &b) != BG_ECONN;
            other += c.set(c.ctx, "x", 1, "y", 1, 0) != BG_ECONN;
            other += c.set_absent(c.ctx, "x", 1, 0) != BG_ECONN;
            other += c.del(c.ctx, "x", 1) != BG_ECONN;
        }
        open = tu_now() - t0;
        TU_EQ_I(other, 0);
        if (open_since(rc, &s0)) {
            s1 = bstate(rc);
            break;
        }
        print_message("80 calls took %.3f s, past the back-off of %" PRIu64 " ms: again\n",
                      open, s0.backoff_ms);
        if (burst + 1 >= BURST_TRIES)
            fail_msg("%d bursts of 80 calls outlasted their back-off", BURST_TRIES);
        wait_backoff_over(rc);
        TU_EQ_I(c.get(c.ctx, "up", 2, &b), BG_ECONN); /* a probe: the back-off doubles */
    }
    print_message("hung Redis: first call %.3f s, then 80 calls in %.6f s\n", first, open);
    TU_EQ_U(s1.attempts, s0.attempts);
    TU_EQ_U(s1.rejected, s0.rejected + 80);

    /* Half-open: once the back-off is over, one call of 8 concurrent ones
     * probes (and waits its timeout); the others fail at once. All but one
     * must end within 0.9 timeouts of the first call's start, so before the
     * probe ended: a thread the host held back until the probe had failed
     * may rightly probe again after the new back-off, so then the 8 calls
     * run again. */
    probe_cache = c;
    enum { N = 8 };
    pthread_t t[N];
    prober p[N];
    bg__guard_testing_breaker_state s2;
    int slow;
    for (int round = 0;; round++) {
        wait_backoff_over(rc);
        s1 = bstate(rc);
        pthread_barrier_init(&barrier, NULL, N);
        for (int i = 0; i < N; i++)
            TU_EQ_I(pthread_create(&t[i], NULL, prober_main, &p[i]), 0);
        for (int i = 0; i < N; i++)
            TU_EQ_I(pthread_join(t[i], NULL), 0);
        pthread_barrier_destroy(&barrier);
        s2 = bstate(rc);
        slow = 0;
        double lo = p[0].start;
        for (int i = 0; i < N; i++) {
            TU_EQ_I(p[i].rc, BG_ECONN);
            slow += p[i].seconds >= 0.9 * TIMEOUT_MS / 1000.0;
            lo = p[i].start < lo ? p[i].start : lo;
        }
        int late = 0;
        for (int i = 0; i < N; i++)
            late += p[i].start + p[i].seconds - lo >= 0.9 * TIMEOUT_MS / 1000.0;
        if (late <= 1)
            break;
        print_message("%d of the 8 calls ended late, past the probe: again\n", late);
        if (round + 1 >= BURST_TRIES)
            fail_msg("%d rounds of 8 calls did not end within one probe", BURST_TRIES);
    }
    TU_EQ_U(s2.attempts, s1.attempts + 1);  /* one probe went to Redis ... */
    TU_EQ_U(s2.rejected, s1.rejected + N - 1); /* ... the others did not */
    TU_TRUE(slow >= 1);                        /* the probe waited its timeout */
    TU_EQ_U(s2.backoff_ms, 2 * s1.backoff_ms); /* the probe failed: doubled */

    /* Back: the cache answers again once the back-off in force is over,
     * which never grows past its cap meanwhile. */
    TU_EQ_I(kill(srv.pid, SIGCONT), 0);
    t0 = tu_now();
    int got;
    while ((got = c.get(c.ctx, "up", 2, &b)) == BG_ECONN) {
        TU_TRUE(bstate(rc).backoff_ms <= BACKOFF_MAX_MS);
        if (tu_now() - t0 > WAIT_S)
            fail_msg("the cache did not answer within %.0f s of SIGCONT", WAIT_S);
        ms_sleep_ms(5);
    }
    double back = tu_now() - t0;
    print_message("back after SIGCONT in %.3f s\n", back);
    TU_EQ_I(got, BG_GUARD_CACHE_HIT);
    TU_EQ_U(bstate(rc).backoff_ms, 0);
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

    hang_server();
    /* The first get waits one timeout (its cache GET, which opens the
     * breaker); its SET then fails at once: one call sent, one refused, so
     * one timeout per request at most, not two. A host stalled past the
     * back-off between the two makes the SET a probe, rightly: then a get
     * in the next back-off, whose GET probes, shows the same. */
    char k[64];
    bg__guard_testing_breaker_state s0, s1;
    double t0, first;
    uint64_t first_gets = 0;
    for (int tries = 0;; tries++) {
        s0 = bstate(rc);
        size_t kl = ms_key(k, "p", tries == 0 ? 2 : 50 + tries);
        t0 = tu_now();
        TU_EQ_I(bg_guard_get(g, k, kl, &v), BG_GUARD_FOUND);
        first = tu_now() - t0;
        s1 = bstate(rc);
        first_gets++;
        TU_TRUE(first >= 0.9 * TIMEOUT_MS / 1000.0);
        if (s1.attempts != s0.attempts + 2 || tries + 1 >= BURST_TRIES)
            break;
        print_message("the first get's SET probed too (%.3f s): again\n", first);
        wait_backoff_over(rc);
    }
    TU_EQ_U(s1.attempts, s0.attempts + 1);
    TU_EQ_U(s1.rejected, s0.rejected + 1);
    bg_guard_counters c0 = gc(g);
    TU_EQ_U(c0.cache_errors, 2 * first_gets); /* a GET and a SET each */
    TU_EQ_U(c0.source_found, 1 + first_gets);  /* and p1's first get */
    /* Then 20 gets of keys that pass the filter: the source answers; the
     * breaker refuses their cache calls without any network I/O. */
    long next = 100, burst_gets = 0;
    double twenty;
    for (int burst = 0;; burst++) {
        s0 = bstate(rc);
        t0 = tu_now();
        for (long i = 0; i < 20; i++) {
            size_t kl = ms_key(k, "p", next++);
            TU_EQ_I(bg_guard_get(g, k, kl, &v), BG_GUARD_FOUND);
        }
        burst_gets += 20;
        twenty = tu_now() - t0;
        if (open_since(rc, &s0))
            break;
        print_message("20 gets took %.3f s, past the back-off of %" PRIu64 " ms: again\n",
                      twenty, s0.backoff_ms);
        if (burst + 1 >= BURST_TRIES)
            fail_msg("%d bursts of 20 gets outlasted their back-off", BURST_TRIES);
        wait_backoff_over(rc);
        size_t kl = ms_key(k, "p", next++); /* a probe: the back-off doubles */
        TU_EQ_I(bg_guard_get(g, k, kl, &v), BG_GUARD_FOUND);
        burst_gets++;
    }
    print_message("hung cache: first get %.3f s, 20 more in %.6f s\n", first, twenty);
    TU_EQ_U(bstate(rc).attempts, s0.attempts);
    bg_guard_counters c = gc(g);
    TU_EQ_U(c.cache_errors - c0.cache_errors, 2 * (uint64_t)burst_gets); /* a GET and a SET each */
    TU_EQ_U(c.source_found - c0.source_found, (uint64_t)burst_gets);

    TU_EQ_I(kill(srv.pid, SIGCONT), 0);
    t0 = tu_now();
    uint64_t hits = c.cache_hits;
    while (gc(g).cache_hits == hits) {
        TU_TRUE(bstate(rc).backoff_ms <= BACKOFF_MAX_MS);
        if (tu_now() - t0 > WAIT_S)
            fail_msg("no cache hit within %.0f s of SIGCONT", WAIT_S);
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
