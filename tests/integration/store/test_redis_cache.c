/* SPDX-License-Identifier: BSD-3-Clause */
/* The guard's Redis cache adapter (bg_guard_redis_cache_*, guard.h) against
 * a real redis-server started here (redis_server.h). */
#include "test_util.h"

#include <pthread.h>

#include <bloomgate/guard.h>

#include "redis_server.h"
#include "common/clock.h" /* bg__now_ms */
#include "guard/guard_testing.h" /* the breaker's counters (testing build) */

static ts_server srv;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int setup(void **state)
{
    (void)state;
    ts_start(&srv, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ts_stop(&srv);
    return 0;
}

/* Options for the tests of what the adapter does, not of how it fails: the
 * test server, with timeouts far above the adapter's defaults (connect
 * 200 ms, command 100 ms). With the defaults, one reply slowed past 100 ms
 * on a loaded machine (a CI run, other tests starting servers) opened the
 * breaker, and test_threads saw 781 calls of one thread fail at once.
 * Timeouts and the breaker have their own tests (test_down_and_back here,
 * guard.test_guard_breaker). */
static bg_remote_options patient(void)
{
    return (bg_remote_options){.port = srv.port, .connect_timeout_ms = 10000,
                               .command_timeout_ms = 10000};
}

typedef struct cache_fixture {
    bg_guard_redis_cache *rc;
    bg_guard_cache c;
} cache_fixture;

static void open_cache(cache_fixture *f, const bg_remote_options *ro, const char *prefix,
                       uint64_t ttl)
{
    memset(f, 0, sizeof *f);
    assert_int_equal(bg_guard_redis_cache_new(&f->rc, ro, prefix, ttl, &f->c), BG_OK);
    assert_non_null(f->rc);
    assert_ptr_equal(f->c.ctx, f->rc);
    assert_non_null(f->c.get);
    assert_non_null(f->c.set);
    assert_non_null(f->c.set_absent);
    assert_non_null(f->c.del);
}

static int cget(cache_fixture *f, const char *key, bg_guard_buf *b)
{
    return f->c.get(f->c.ctx, key, strlen(key), b);
}

static void assert_hit(cache_fixture *f, const char *key, const void *val, size_t vlen)
{
    bg_guard_buf b = {0};
    int rc = cget(f, key, &b);
    if (rc != BG_GUARD_CACHE_HIT)
        fail_msg("get %s: %d, want a hit", key, rc);
    assert_int_equal(b.len, vlen);
    if (vlen)
        assert_memory_equal(b.data, val, vlen);
    bg_guard_buf_free(&b);
}

static void test_new_args(void **state)
{
    (void)state;
    bg_guard_redis_cache *rc = (void *)1;
    bg_guard_cache c;
    bg_remote_options ro = {.port = srv.port};
    assert_int_equal(bg_guard_redis_cache_new(NULL, &ro, NULL, 0, &c), BG_EINVAL);
    assert_int_equal(bg_guard_redis_cache_new(&rc, NULL, NULL, 0, &c), BG_EINVAL);
    assert_null(rc);
    assert_int_equal(bg_guard_redis_cache_new(&rc, &ro, NULL, 0, NULL), BG_EINVAL);
    bg_remote_options bad = {.port = 70000};
    assert_int_equal(bg_guard_redis_cache_new(&rc, &bad, NULL, 0, &c), BG_EINVAL);
    bg_guard_redis_cache_free(NULL);
    /* Nothing connects before the first call: a dead port is fine here. */
    bg_remote_options dead = {.port = 1};
    assert_int_equal(bg_guard_redis_cache_new(&rc, &dead, NULL, 0, &c), BG_OK);
    bg_guard_buf b = {0};
    assert_int_equal(c.get(c.ctx, "k", 1, &b), BG_ECONN);
    bg_guard_redis_cache_free(rc);
}

static void test_set_get_absent_del(void **state)
{
    (void)state;
    bg_remote_options ro = patient();
    cache_fixture f;
    open_cache(&f, &ro, NULL, 0);
    bg_guard_buf b = {0};
    assert_int_equal(cget(&f, "nokey", &b), BG_GUARD_CACHE_MISS);
    assert_int_equal(f.c.set(f.c.ctx, "k1", 2, "hello", 5, 0), BG_OK);
    assert_hit(&f, "k1", "hello", 5);
    /* The layout: "bg:" + key -> 'v' + value, default TTL 300 s. */
    redisContext *raw = ts_raw(&srv);
    redisReply *r = redisCommand(raw, "GET bg:k1");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(r->len, 6);
    assert_memory_equal(r->str, "vhello", 6);
    freeReplyObject(r);
    long long pttl = ts_int(raw, "PTTL bg:k1");
    assert_true(pttl > 290000 && pttl <= 300000);

    /* Negative entries. */
    assert_int_equal(f.c.set_absent(f.c.ctx, "k2", 2, 0), BG_OK);
    assert_int_equal(cget(&f, "k2", &b), BG_GUARD_CACHE_ABSENT);
    r = redisCommand(raw, "GET bg:k2");
    assert_int_equal(r->len, 1);
    assert_int_equal(r->str[0], 'a');
    freeReplyObject(r);

    /* Values that look like the marker are values. */
    assert_int_equal(f.c.set(f.c.ctx, "k3", 2, "a", 1, 0), BG_OK);
    assert_hit(&f, "k3", "a", 1);
    assert_int_equal(f.c.set(f.c.ctx, "k4", 2, "abc", 3, 0), BG_OK);
    assert_hit(&f, "k4", "abc", 3);
    assert_int_equal(f.c.set(f.c.ctx, "k5", 2, "", 0, 0), BG_OK);
    assert_hit(&f, "k5", "", 0);
    assert_int_equal(f.c.set(f.c.ctx, "k6", 2, "v", 1, 0), BG_OK);
    assert_hit(&f, "k6", "v", 1);

    /* A value replaces a negative entry and vice versa. */
    assert_int_equal(f.c.set(f.c.ctx, "k2", 2, "now", 3, 0), BG_OK);
    assert_hit(&f, "k2", "now", 3);
    assert_int_equal(f.c.set_absent(f.c.ctx, "k2", 2, 0), BG_OK);
    assert_int_equal(cget(&f, "k2", &b), BG_GUARD_CACHE_ABSENT);

    /* del removes either kind; deleting nothing is fine. */
    assert_int_equal(f.c.del(f.c.ctx, "k1", 2), BG_OK);
    assert_int_equal(f.c.del(f.c.ctx, "k2", 2), BG_OK);
    assert_int_equal(f.c.del(f.c.ctx, "k2", 2), BG_OK);
    assert_int_equal(cget(&f, "k1", &b), BG_GUARD_CACHE_MISS);
    assert_int_equal(cget(&f, "k2", &b), BG_GUARD_CACHE_MISS);

    /* Binary keys and values, long ones (heap buffers) too. */
    const char bk[] = {'x', 0, 'y'};
    const char bv[] = {0, 'a', 0, (char)0xff};
    assert_int_equal(f.c.set(f.c.ctx, bk, sizeof bk, bv, sizeof bv, 0), BG_OK);
    assert_int_equal(f.c.get(f.c.ctx, bk, sizeof bk, &b), BG_GUARD_CACHE_HIT);
    assert_int_equal(b.len, sizeof bv);
    assert_memory_equal(b.data, bv, sizeof bv);
    static char longk[1000], longv[100000];
    memset(longk, 'K', sizeof longk);
    for (size_t i = 0; i < sizeof longv; i++)
        longv[i] = (char)(i * 31);
    assert_int_equal(f.c.set(f.c.ctx, longk, sizeof longk, longv, sizeof longv, 0), BG_OK);
    assert_int_equal(f.c.get(f.c.ctx, longk, sizeof longk, &b), BG_GUARD_CACHE_HIT);
    assert_int_equal(b.len, sizeof longv);
    assert_memory_equal(b.data, longv, sizeof longv);
    assert_int_equal(f.c.del(f.c.ctx, longk, sizeof longk), BG_OK);
    assert_int_equal(f.c.get(f.c.ctx, longk, sizeof longk, &b), BG_GUARD_CACHE_MISS);

    /* A string under the prefix that we did not write reads as a miss. */
    freeReplyObject(redisCommand(raw, "SET bg:foreign xyz"));
    assert_int_equal(cget(&f, "foreign", &b), BG_GUARD_CACHE_MISS);
    /* A key of another type is Redis's error, a negative status. */
    freeReplyObject(redisCommand(raw, "RPUSH bg:list x"));
    assert_int_equal(cget(&f, "list", &b), BG_EREMOTE);

    /* Bad arguments. */
    assert_int_equal(f.c.get(f.c.ctx, NULL, 1, &b), BG_EINVAL);
    assert_int_equal(f.c.set(f.c.ctx, "k", 1, NULL, 1, 0), BG_EINVAL);
    assert_int_equal(f.c.get(f.c.ctx, "k", 1, NULL), BG_EINVAL);

    bg_guard_buf_free(&b);
    redisFree(raw);
    bg_guard_redis_cache_free(f.rc);
}

static void test_prefix_and_ttl(void **state)
{
    (void)state;
    bg_remote_options ro = patient();
    cache_fixture f;
    open_cache(&f, &ro, "products:", 60000);
    assert_int_equal(f.c.set(f.c.ctx, "42", 2, "{}", 2, 0), BG_OK);
    redisContext *raw = ts_raw(&srv);
    long long pttl = ts_int(raw, "PTTL products:42");
    assert_true(pttl > 55000 && pttl <= 60000);
    assert_int_equal(ts_int(raw, "EXISTS bg:42"), 0);

    /* An explicit TTL wins, and entries expire. The TTL is 1 s so that a
     * loaded host's stall cannot expire them before they are read back. */
    assert_int_equal(f.c.set(f.c.ctx, "short", 5, "x", 1, 1000), BG_OK);
    assert_int_equal(f.c.set_absent(f.c.ctx, "gone", 4, 1000), BG_OK);
    pttl = ts_int(raw, "PTTL products:gone");
    assert_true(pttl > 0 && pttl <= 1000);
    bg_guard_buf b = {0};
    assert_int_equal(cget(&f, "short", &b), BG_GUARD_CACHE_HIT);
    assert_int_equal(cget(&f, "gone", &b), BG_GUARD_CACHE_ABSENT);
    sleep_ms(1300);
    assert_int_equal(cget(&f, "short", &b), BG_GUARD_CACHE_MISS);
    assert_int_equal(cget(&f, "gone", &b), BG_GUARD_CACHE_MISS);
    assert_int_equal(cget(&f, "42", &b), BG_GUARD_CACHE_HIT);
    bg_guard_buf_free(&b);
    redisFree(raw);
    bg_guard_redis_cache_free(f.rc);
}

/* ---- threads ---- */

/* INFO stats total_connections_received. */
static long long connections_received(redisContext *raw)
{
    redisReply *r = redisCommand(raw, "INFO stats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    const char *p = strstr(r->str, "total_connections_received:");
    assert_non_null(p);
    long long n = atoll(p + strlen("total_connections_received:"));
    freeReplyObject(r);
    return n;
}

typedef struct cworker {
    cache_fixture *f;
    int index, errors;
} cworker;

static void *cworker_main(void *arg)
{
    cworker *w = arg;
    bg_guard_buf b = {0};
    char key[32], val[32];
    for (int i = 0; i < 2000; i++) {
        int kl = snprintf(key, sizeof key, "t%d:%d", w->index, i % 50);
        int vl = snprintf(val, sizeof val, "value %d %d", w->index, i);
        if (w->f->c.set(w->f->c.ctx, key, (size_t)kl, val, (size_t)vl, 0) != BG_OK)
            w->errors++;
        if (w->f->c.get(w->f->c.ctx, key, (size_t)kl, &b) != BG_GUARD_CACHE_HIT ||
            b.len != (size_t)vl || memcmp(b.data, val, b.len) != 0)
            w->errors++;
    }
    bg_guard_buf_free(&b);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    bg_remote_options ro = patient();
    cache_fixture f;
    open_cache(&f, &ro, NULL, 0);
    redisContext *raw = ts_raw(&srv);
    long long before = connections_received(raw);
    for (int round = 0; round < 2; round++) {
        pthread_t t[4];
        cworker w[4];
        for (int i = 0; i < 4; i++) {
            w[i] = (cworker){.f = &f, .index = i};
            assert_int_equal(pthread_create(&t[i], NULL, cworker_main, &w[i]), 0);
        }
        for (int i = 0; i < 4; i++)
            assert_int_equal(pthread_join(t[i], NULL), 0);
        for (int i = 0; i < 4; i++)
            assert_int_equal(w[i].errors, 0);
    }
    /* The second round's threads adopted the first round's connections:
     * 4 connections in all, not 8. */
    assert_int_equal(connections_received(raw) - before, 4);
    redisFree(raw);
    bg_guard_redis_cache_free(f.rc);
}

/* ---- outages ---- */

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

/* SIGSTOP, then waits (up to 60 s) until the server has stopped: the
 * signal takes effect when the process next runs, which a loaded host may
 * delay past the call meant to find it stopped. */
static void hang_server(ts_server *s)
{
    assert_int_equal(kill(s->pid, SIGSTOP), 0);
    double t0 = now_s();
    while (proc_state(s->pid) != 'T') {
        if (now_s() - t0 > 60)
            fail_msg("redis-server (pid %ld) did not stop within 60 s", (long)s->pid);
        sleep_ms(1);
    }
}

/* Calls get until it is not refused by the circuit breaker (redis_cache.c:
 * after a failure calls fail at once for a back-off of at most 5 s), for up
 * to 8 s; its answer. */
static int cget_when_back(cache_fixture *f, const char *key, bg_guard_buf *b)
{
    double t0 = now_s();
    int rc;
    while ((rc = cget(f, key, b)) == BG_ECONN && now_s() - t0 < 8)
        sleep_ms(10);
    return rc;
}

static void test_down_and_back(void **state)
{
    (void)state;
    bg_remote_options ro = {.port = srv.port, .connect_timeout_ms = 200,
                            .command_timeout_ms = 200};
    cache_fixture f;
    open_cache(&f, &ro, NULL, 0);
    bg_guard_buf b = {0};
    assert_int_equal(f.c.set(f.c.ctx, "up", 2, "1", 1, 0), BG_OK);

    /* Stopped (SIGSTOP: connections hang, nothing answers): a call fails
     * within the command timeout, not later, and the next ones at once (the
     * breaker is open). */
    hang_server(&srv);
    double t0 = now_s();
    int rc = cget(&f, "up", &b);
    double dt = now_s() - t0;
    fprintf(stderr, "# hung Redis: get -> %s in %.3f s\n", bg_err_name(rc), dt);
    assert_int_equal(rc, BG_ECONN);
    assert_true(dt < 1.5);
    /* The set must run inside the breaker's back-off (200 ms at first): a
     * host that stalled past it (the set may then rightly probe) runs it
     * again in the next, doubled, back-off. Inside one, it cannot take a
     * timeout either. */
    bg__guard_testing_breaker_state b1, b2;
    for (int tries = 0;; tries++) {
        bg__guard_testing_breaker(f.rc, &b1);
        t0 = now_s();
        rc = f.c.set(f.c.ctx, "x", 1, "y", 1, 0);
        dt = now_s() - t0;
        assert_int_equal(rc, BG_ECONN);
        bg__guard_testing_breaker(f.rc, &b2);
        if (b1.open_until_ms != 0 && b2.open_until_ms == b1.open_until_ms &&
            bg__now_ms() < b2.open_until_ms)
            break;
        fprintf(stderr, "# the set outlasted the back-off (%.3f s): again\n", dt);
        if (tries >= 5)
            fail_msg("6 sets outlasted their back-off");
        while (bg__now_ms() < b2.open_until_ms) /* over: the next call probes */
            sleep_ms(5);
        assert_int_equal(cget(&f, "up", &b), BG_ECONN); /* a probe: doubled */
    }
    assert_int_equal(b2.attempts, b1.attempts); /* no network I/O */
    assert_int_equal(b2.rejected, b1.rejected + 1);
    assert_true(dt < 0.2); /* under one command timeout */
    kill(srv.pid, SIGCONT);
    assert_int_equal(cget_when_back(&f, "up", &b), BG_GUARD_CACHE_HIT);
    assert_hit(&f, "up", "1", 1);

    /* Killed: refused at once. */
    ts_kill(&srv);
    t0 = now_s();
    for (int i = 0; i < 10; i++) {
        assert_int_equal(cget(&f, "up", &b), BG_ECONN);
        assert_int_equal(f.c.set(f.c.ctx, "x", 1, "y", 1, 0), BG_ECONN);
        assert_int_equal(f.c.set_absent(f.c.ctx, "x", 1, 0), BG_ECONN);
        assert_int_equal(f.c.del(f.c.ctx, "x", 1), BG_ECONN);
    }
    dt = now_s() - t0;
    fprintf(stderr, "# dead Redis: 40 calls in %.3f s\n", dt);
    assert_true(dt < 2.0);

    /* Back (an empty server: no dump): the same adapter works again, once
     * the breaker's back-off has passed. */
    ts_spawn(&srv);
    assert_int_equal(cget_when_back(&f, "up", &b), BG_GUARD_CACHE_MISS);
    assert_int_equal(f.c.set(f.c.ctx, "up", 2, "2", 1, 0), BG_OK);
    assert_hit(&f, "up", "2", 1);
    bg_guard_buf_free(&b);
    bg_guard_redis_cache_free(f.rc);
}

/* The server's count of SET commands run (INFO commandstats). */
static long long set_calls(redisContext *raw)
{
    redisReply *r = redisCommand(raw, "INFO commandstats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    const char *p = strstr(r->str, "cmdstat_set:calls=");
    long long n = p ? atoll(p + strlen("cmdstat_set:calls=")) : 0;
    freeReplyObject(r);
    return n;
}

static uint64_t realtime_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A SET that timed out against a stalled Redis runs when it resumes; its
 * entry must still expire a TTL after it was sent, not after it ran (the
 * guard's FAILED STORES assume so). The test proves it hit that window:
 * the server was stopped before the SET was sent and resumed more than the
 * TTL after, and the SET did run then (the server's count of SETs went up
 * by one after the resume), before EXISTS looks; or it fails. */
static void test_late_set_expires_on_time(void **state)
{
    (void)state;
    bg_remote_options ro = {.port = srv.port, .connect_timeout_ms = 200,
                            .command_timeout_ms = 200};
    cache_fixture f;
    open_cache(&f, &ro, "late:", 0);
    bg_guard_buf b = {0};
    assert_int_equal(cget(&f, "warm", &b), BG_GUARD_CACHE_MISS); /* connected */
    redisContext *raw = ts_raw(&srv);
    long long sets_before = set_calls(raw);
    hang_server(&srv);
    uint64_t sent_ms = realtime_ms();
    assert_int_equal(f.c.set(f.c.ctx, "k", 1, "old", 3, 1500), BG_ECONN);
    sleep_ms(2500); /* past the TTL counted from the send */
    uint64_t resumed_ms = realtime_ms();
    assert_int_equal(kill(srv.pid, SIGCONT), 0);
    /* The late SET runs when the server reads its old connection again;
     * wait for it (up to 60 s). */
    double t0 = now_s();
    long long sets;
    while ((sets = set_calls(raw)) == sets_before) {
        if (now_s() - t0 > 60)
            fail_msg("the SET sent to the stopped server did not run within 60 s of its "
                     "resume: the late-SET window was not hit");
        sleep_ms(5);
    }
    assert_int_equal(sets, sets_before + 1);
    assert_true(resumed_ms - sent_ms > 1500);
    long long exists = ts_int(raw, "EXISTS late:k");
    fprintf(stderr,
            "# a SET sent %.3f s before the server resumed and ran it, TTL 1.5 s: "
            "EXISTS %lld\n",
            (double)(resumed_ms - sent_ms) / 1000.0, exists);
    assert_int_equal(exists, 0);
    redisFree(raw);
    bg_guard_buf_free(&b);
    bg_guard_redis_cache_free(f.rc);
}

/* A Redis restart between two calls of one thread leaves its connection
 * stale: the next call finds it broken at once and is tried once more, on a
 * new connection. It succeeds and the breaker stays closed; without the
 * retry, every worker's first call after a restart failed and opened the
 * breaker, sending lookups to the database for a back-off (and a lookup
 * then did not wait for a hung Redis as configured: the products test's
 * rare failure). */
static void test_restart_between_calls(void **state)
{
    (void)state;
    bg_remote_options ro = {.port = srv.port, .connect_timeout_ms = 200,
                            .command_timeout_ms = 1000};
    cache_fixture f;
    open_cache(&f, &ro, NULL, 0);
    bg_guard_buf b = {0};
    assert_int_equal(f.c.set(f.c.ctx, "up", 2, "1", 1, 0), BG_OK);
    ts_kill(&srv);
    ts_spawn(&srv); /* the same port, empty */
    bg__guard_testing_breaker_state b1, b2;
    bg__guard_testing_breaker(f.rc, &b1);
    assert_int_equal(cget(&f, "up", &b), BG_GUARD_CACHE_MISS);
    bg__guard_testing_breaker(f.rc, &b2);
    assert_int_equal(b2.attempts, b1.attempts + 1);
    assert_int_equal(b2.backoff_ms, 0); /* closed */
    assert_int_equal(f.c.set(f.c.ctx, "up", 2, "2", 1, 0), BG_OK);
    assert_hit(&f, "up", "2", 1);
    bg_guard_buf_free(&b);
    bg_guard_redis_cache_free(f.rc);
}

/* ---- AUTH and unix sockets ---- */

static void test_auth_and_unix_socket(void **state)
{
    (void)state;
    ts_server s2;
    memset(&s2, 0, sizeof s2);
    tu_tmpdir_make(&s2.dir, "cache");
    s2.port = ts_free_port();
    char sock[300];
    snprintf(sock, sizeof sock, "%s", tu_tmp_file(&s2.dir, "redis.sock"));
    /* Started without a password (ts_wait_ping does not AUTH), then the
     * default user gets one and an ACL user is added. */
    ts_spawn_with(&s2, (const char *const[]){"--unixsocket", sock, NULL});
    redisContext *raw = ts_raw(&s2);
    freeReplyObject(redisCommand(raw, "ACL SETUSER alice on >pw ~* +@all"));
    freeReplyObject(redisCommand(raw, "CONFIG SET requirepass s3cret"));
    redisFree(raw);

    /* The default user's password, over TCP and over the socket. */
    bg_remote_options tcp = {.port = s2.port, .password = "s3cret"};
    bg_remote_options unix_ = {.unix_socket = sock, .password = "s3cret"};
    bg_remote_options acl = {.unix_socket = sock, .username = "alice", .password = "pw"};
    const bg_remote_options *good[] = {&tcp, &unix_, &acl};
    for (int i = 0; i < 3; i++) {
        cache_fixture f;
        open_cache(&f, good[i], NULL, 0);
        assert_int_equal(f.c.set(f.c.ctx, "k", 1, "v", 1, 0), BG_OK);
        assert_hit(&f, "k", "v", 1);
        bg_guard_redis_cache_free(f.rc);
    }
    /* Wrong or missing credentials: a negative status, no crash. */
    bg_remote_options wrong = {.unix_socket = sock, .password = "nope"};
    bg_remote_options none = {.unix_socket = sock};
    const bg_remote_options *bad[] = {&wrong, &none};
    for (int i = 0; i < 2; i++) {
        cache_fixture f;
        open_cache(&f, bad[i], NULL, 0);
        bg_guard_buf b = {0};
        int rc = cget(&f, "k", &b);
        assert_true(rc < 0);
        assert_int_equal(rc, BG_EREMOTE);
        bg_guard_redis_cache_free(f.rc);
    }
    ts_stop(&s2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_args),      cmocka_unit_test(test_set_get_absent_del),
        cmocka_unit_test(test_prefix_and_ttl), cmocka_unit_test(test_threads),
        cmocka_unit_test(test_down_and_back),  cmocka_unit_test(test_restart_between_calls),
        cmocka_unit_test(test_auth_and_unix_socket),
        cmocka_unit_test(test_late_set_expires_on_time),
    };
    return cmocka_run_group_tests_name("redis_cache", tests, setup, teardown);
}
