/* SPDX-License-Identifier: BSD-3-Clause */
/* The products store (examples/products/store.h) on one backend, named by
 * argv[1]: sqlite, postgres or mariadb. PostgreSQL and MariaDB run as real
 * servers started here (db_server.h) and stopped afterwards, also to test
 * an outage and the reconnect after it. */
#include "test_util.h"

#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db_server.h"
#include "store.h"
#include "store_internal.h"

#define N_SEED 10000u

static store_kind kind;
static dbs_server server; /* postgres, mariadb */
static char sqlite_dir[256];
static char conninfo[512];
static store *st;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The JSON of a seeded product. */
static void seeded_json(char *buf, size_t cap, uint64_t id)
{
    snprintf(buf, cap, "{\"id\":%" PRIu64 ",\"name\":\"product %" PRIu64 "\",\"price_cents\":%"
             PRIu64 "}", id, id, (id * 7919u) % 100000u);
}

static void assert_get_json(uint64_t id, const char *want)
{
    bg_guard_buf b = {0};
    int rc = store_get(st, id, &b);
    if (rc != BG_GUARD_FOUND)
        fail_msg("get %" PRIu64 ": %d (%s)", id, rc, store_errstr());
    if (b.len != strlen(want) || memcmp(b.data, want, b.len) != 0)
        fail_msg("get %" PRIu64 ":\n  got  %.*s\n  want %s", id, (int)b.len, (char *)b.data,
                 want);
    assert_int_equal(((char *)b.data)[b.len], '\0');
    bg_guard_buf_free(&b);
}

static void assert_absent(uint64_t id)
{
    bg_guard_buf b = {0};
    int rc = store_get(st, id, &b);
    if (rc != BG_GUARD_ABSENT)
        fail_msg("get %" PRIu64 ": %d, want absent (%s)", id, rc, store_errstr());
    bg_guard_buf_free(&b);
}

static int setup(void **state)
{
    (void)state;
    char err[512];
    if (kind == STORE_SQLITE) {
        snprintf(sqlite_dir, sizeof sqlite_dir, "/tmp/bg-sqlite-XXXXXX");
        assert_non_null(mkdtemp(sqlite_dir));
        snprintf(conninfo, sizeof conninfo, "%s/products.db", sqlite_dir);
    } else {
        double t0 = now_s();
        if (dbs_start(&server, kind == STORE_POSTGRES ? DBS_POSTGRES : DBS_MARIADB, err,
                      sizeof err) != 0)
            fail_msg("cannot start the %s server: %s", store_kind_name(kind), err);
        fprintf(stderr, "# %s server up in %.1f s: %s\n", store_kind_name(kind), now_s() - t0,
                server.conninfo);
        snprintf(conninfo, sizeof conninfo, "%s", server.conninfo);
    }
    int rc = store_open(&st, kind, conninfo, err, sizeof err);
    if (rc != BG_OK)
        fail_msg("store_open(%s): %d %s", conninfo, rc, err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    store_close(st);
    st = NULL;
    if (kind == STORE_SQLITE) {
        dbs_rmtree(sqlite_dir);
    } else {
        dbs_destroy(&server);
    }
    return 0;
}

static void test_kind_names(void **state)
{
    (void)state;
    store_kind k;
    assert_int_equal(store_kind_parse("postgresql", &k), 0);
    assert_int_equal(k, STORE_POSTGRES);
    assert_int_equal(store_kind_parse("MySQL", &k), 0);
    assert_int_equal(k, STORE_MARIADB);
    assert_int_equal(store_kind_parse("sqlite", &k), 0);
    assert_int_equal(k, STORE_SQLITE);
    assert_int_equal(store_kind_parse("oracle", &k), -1);
    assert_int_equal(store_kind_parse(NULL, &k), -1);
    assert_string_equal(store_kind_name(STORE_MARIADB), "mariadb");
}

static void test_seed(void **state)
{
    (void)state;
    uint64_t seeded = 99, n = 0;
    char err[256];
    double t0 = now_s();
    int rc = store_seed(st, N_SEED, &seeded, err, sizeof err);
    if (rc != BG_OK)
        fail_msg("seed: %d %s", rc, err);
    fprintf(stderr, "# seeded %u rows in %.3f s\n", N_SEED, now_s() - t0);
    assert_int_equal(seeded, N_SEED);
    assert_int_equal(store_count(st, &n), BG_OK);
    assert_int_equal(n, N_SEED);
    /* The table has rows now: a second seed inserts none. */
    assert_int_equal(store_seed(st, N_SEED * 2, &seeded, err, sizeof err), BG_OK);
    assert_int_equal(seeded, 0);
    assert_int_equal(store_count(st, &n), BG_OK);
    assert_int_equal(n, N_SEED);
}

static void test_get(void **state)
{
    (void)state;
    assert_get_json(1, "{\"id\":1,\"name\":\"product 1\",\"price_cents\":7919}");
    assert_get_json(42, "{\"id\":42,\"name\":\"product 42\",\"price_cents\":32598}");
    char want[128];
    for (uint64_t id = 1; id <= N_SEED; id += 997) {
        seeded_json(want, sizeof want, id);
        assert_get_json(id, want);
    }
    seeded_json(want, sizeof want, N_SEED);
    assert_get_json(N_SEED, want);
    assert_absent(0);
    assert_absent(N_SEED + 1);
    assert_absent((uint64_t)INT64_MAX);
    assert_absent(UINT64_MAX); /* out of range: absent without a query */
    assert_int_equal(store_get(NULL, 1, &(bg_guard_buf){0}), BG_EINVAL);
}

static void test_source_keys(void **state)
{
    (void)state;
    bg_guard_source src = store_source(st);
    assert_ptr_equal(src.ctx, st);
    bg_guard_buf b = {0};
    assert_int_equal(src.get(src.ctx, "42", 2, &b), BG_GUARD_FOUND);
    assert_string_equal(b.data, "{\"id\":42,\"name\":\"product 42\",\"price_cents\":32598}");
    uint64_t q = store_queries(st);
    /* Not a canonical id: absent without a query. */
    static const char *const bad[] = {"042", "", "-1", "+1", "4a", "abc", "99999999999999999999",
                                      "9223372036854775808", " 42"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(src.get(src.ctx, bad[i], strlen(bad[i]), &b), BG_GUARD_ABSENT);
    assert_int_equal(store_queries(st), q);
    assert_int_equal(src.get(src.ctx, "0", 1, &b), BG_GUARD_ABSENT);
    assert_int_equal(store_queries(st), q + 1);
    uint64_t n = 0;
    assert_int_equal(src.count(src.ctx, &n), BG_OK);
    assert_int_equal(n, N_SEED);
    bg_guard_buf_free(&b);
}

static void test_put_delete(void **state)
{
    (void)state;
    uint64_t n;
    assert_int_equal(store_put(st, 20000, "fresh", 123), BG_OK);
    assert_get_json(20000, "{\"id\":20000,\"name\":\"fresh\",\"price_cents\":123}");
    assert_int_equal(store_count(st, &n), BG_OK);
    assert_int_equal(n, N_SEED + 1);
    /* put replaces */
    assert_int_equal(store_put(st, 20000, "renamed", -5), BG_OK);
    assert_get_json(20000, "{\"id\":20000,\"name\":\"renamed\",\"price_cents\":-5}");
    assert_int_equal(store_put(st, 7, "seven", 700), BG_OK);
    assert_get_json(7, "{\"id\":7,\"name\":\"seven\",\"price_cents\":700}");
    assert_int_equal(store_delete(st, 20000), 1);
    assert_int_equal(store_delete(st, 20000), 0);
    assert_absent(20000);
    assert_int_equal(store_delete(st, UINT64_MAX), 0);
    assert_int_equal(store_put(st, UINT64_MAX, "x", 1), BG_EINVAL);
    assert_int_equal(store_put(st, 1, NULL, 1), BG_EINVAL);
    /* back to the seeded row */
    assert_int_equal(store_put(st, 7, "product 7", (7 * 7919) % 100000), BG_OK);
    assert_int_equal(store_count(st, &n), BG_OK);
    assert_int_equal(n, N_SEED);
}

typedef struct scan_state {
    uint64_t next; /* the id expected next */
    uint64_t seen;
    uint64_t stop_at; /* 0: never */
} scan_state;

static int scan_emit(void *arg, const void *key, size_t len)
{
    scan_state *ss = arg;
    char want[24];
    int n = snprintf(want, sizeof want, "%" PRIu64, ss->next);
    if ((size_t)n != len || memcmp(key, want, len) != 0)
        fail_msg("scan: got %.*s, want %s", (int)len, (const char *)key, want);
    ss->next++;
    ss->seen++;
    if (ss->stop_at && ss->seen == ss->stop_at)
        return BG_EFULL; /* any negative status */
    return BG_OK;
}

/* Checks ids ascend strictly and records which were seen. */
typedef struct order_state {
    uint8_t *seen; /* indexed by id, ids < cap */
    uint64_t cap, last, n;
} order_state;

static int order_emit(void *arg, const void *key, size_t len)
{
    order_state *os = arg;
    char buf[24];
    assert_true(len > 0 && len < sizeof buf);
    memcpy(buf, key, len);
    buf[len] = '\0';
    uint64_t id = strtoull(buf, NULL, 10);
    if (os->n > 0 && id <= os->last)
        fail_msg("scan: %" PRIu64 " after %" PRIu64, id, os->last);
    assert_true(id < os->cap);
    os->seen[id] = 1;
    os->last = id;
    os->n++;
    return BG_OK;
}

static void test_scan(void **state)
{
    (void)state;
    bg_guard_source src = store_source(st);
    scan_state ss = {.next = 1};
    uint64_t q = store_queries(st);
    assert_int_equal(src.scan(src.ctx, scan_emit, &ss), BG_OK);
    assert_int_equal(ss.seen, N_SEED);
    assert_int_equal(ss.next, N_SEED + 1);
    /* N_SEED rows: full pages of STORE_PAGE, then a short (here empty) one. */
    assert_int_equal(store_queries(st) - q, N_SEED / STORE_PAGE + 1);

    /* The callback's negative status stops the scan and is returned. */
    scan_state stop = {.next = 1, .stop_at = 10};
    assert_int_equal(src.scan(src.ctx, scan_emit, &stop), BG_EFULL);
    assert_int_equal(stop.seen, 10);

    /* More than a page, with a hole: every id once, ascending. */
    assert_int_equal(store_put(st, 15000, "product 15000", 0), BG_OK);
    assert_int_equal(store_put(st, 0, "zero", 0), BG_OK);
    assert_int_equal(store_delete(st, 5000), 1);
    static uint8_t seen[15001];
    memset(seen, 0, sizeof seen);
    order_state os = {.seen = seen, .cap = sizeof seen};
    assert_int_equal(src.scan(src.ctx, order_emit, &os), BG_OK);
    assert_int_equal(os.n, N_SEED + 1);
    for (uint64_t id = 0; id < sizeof seen; id++)
        assert_int_equal(seen[id], id == 0 || (id <= N_SEED && id != 5000) || id == 15000);
    /* restore */
    assert_int_equal(store_delete(st, 15000), 1);
    assert_int_equal(store_delete(st, 0), 1);
    assert_int_equal(store_put(st, 5000, "product 5000", (5000 * 7919) % 100000), BG_OK);
}

static void test_json_escaping(void **state)
{
    (void)state;
    const char *name = "say \"hi\" \\ back\\slash\n\t\r\b\f\x01\x1f\x7f caf\xc3\xa9 \xe2\x82\xac "
                       "\xf0\x9f\x98\x80 </script>";
    const char *want = "{\"id\":30000,\"name\":\"say \\\"hi\\\" \\\\ back\\\\slash\\n\\t\\r\\b\\f"
                       "\\u0001\\u001f\x7f caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 </script>\","
                       "\"price_cents\":1}";
    assert_int_equal(store_put(st, 30000, name, 1), BG_OK);
    assert_get_json(30000, want);
    /* An empty name is a name. */
    assert_int_equal(store_put(st, 30001, "", 2), BG_OK);
    assert_get_json(30001, "{\"id\":30001,\"name\":\"\",\"price_cents\":2}");
    assert_int_equal(store_delete(st, 30000), 1);
    assert_int_equal(store_delete(st, 30001), 1);

    /* Invalid UTF-8 (only SQLite stores it; the others refuse it) becomes
     * U+FFFD: the output is always valid JSON. */
    bg_guard_buf b = {0};
    const char bad[] = "a\xff" "b\xc3" "c\xed\xa0\x80" "d\xc0\xaf" "e\xf4\x90\x80\x80" "\xe2\x82";
    assert_int_equal(store__json(&b, 5, bad, sizeof bad - 1, 0), BG_OK);
    assert_string_equal(b.data, "{\"id\":5,\"name\":\"a\\ufffdb\\ufffdc\\ufffd\\ufffd\\ufffdd"
                                "\\ufffd\\ufffde\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\","
                                "\"price_cents\":0}");
    bg_guard_buf_free(&b);
    if (kind == STORE_SQLITE) {
        assert_int_equal(store_put(st, 30002, "x\xffy", 3), BG_OK);
        assert_get_json(30002, "{\"id\":30002,\"name\":\"x\\ufffdy\",\"price_cents\":3}");
        assert_int_equal(store_delete(st, 30002), 1);
    } else {
        /* The server refuses invalid UTF-8: an error, not a crash. */
        int rc = store_put(st, 30002, "x\xffy", 3);
        assert_true(rc < 0);
        assert_int_equal(rc, BG_EIO);
        assert_true(store_errstr()[0] != '\0');
        assert_absent(30002);
    }
}

/* ---- concurrency ---- */

#define N_THREADS 4
#define GETS_PER_THREAD 3000

typedef struct worker {
    int index;
    int errors;
    char first_error[256];
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    uint64_t rng = (uint64_t)w->index * 1000003u + 17u;
    bg_guard_buf b = {0};
    char want[128];
    for (int i = 0; i < GETS_PER_THREAD; i++) {
        uint64_t id = 1 + tu_next(&rng) % (N_SEED + 50);
        int rc = store_get(st, id, &b);
        int ok;
        if (id <= N_SEED) {
            seeded_json(want, sizeof want, id);
            ok = rc == BG_GUARD_FOUND && b.len == strlen(want) && memcmp(b.data, want, b.len) == 0;
        } else {
            ok = rc == BG_GUARD_ABSENT;
        }
        if (!ok && w->errors++ == 0)
            snprintf(w->first_error, sizeof w->first_error, "get %" PRIu64 ": %d %s", id, rc,
                     store_errstr());
        /* A write now and then, on this thread's own id. */
        if (i % 500 == 0) {
            uint64_t mine = 40000 + (uint64_t)w->index;
            if (store_put(st, mine, "mine", i) != BG_OK || store_delete(st, mine) != 1) {
                if (w->errors++ == 0)
                    snprintf(w->first_error, sizeof w->first_error, "put/delete: %s",
                             store_errstr());
            }
        }
    }
    bg_guard_buf_free(&b);
    return NULL;
}

static void test_concurrency(void **state)
{
    (void)state;
    pthread_t t[N_THREADS];
    worker w[N_THREADS];
    uint64_t q = store_queries(st);
    double t0 = now_s();
    for (int i = 0; i < N_THREADS; i++) {
        w[i] = (worker){.index = i};
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    double dt = now_s() - t0;
    for (int i = 0; i < N_THREADS; i++)
        if (w[i].errors)
            fail_msg("thread %d: %d errors, first: %s", i, w[i].errors, w[i].first_error);
    uint64_t gets = (uint64_t)N_THREADS * GETS_PER_THREAD;
    assert_true(store_queries(st) - q >= gets);
    fprintf(stderr, "# %d threads: %" PRIu64 " gets in %.2f s (%.0f/s)\n", N_THREADS, gets, dt,
            (double)gets / dt);
    /* A second round: new threads adopt the finished threads' connections. */
    for (int i = 0; i < N_THREADS; i++) {
        w[i] = (worker){.index = i};
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < N_THREADS; i++)
        if (w[i].errors)
            fail_msg("round 2, thread %d: %d errors, first: %s", i, w[i].errors,
                     w[i].first_error);
}

/* ---- outages ---- */

static void *get_in_thread(void *arg)
{
    int *rc = arg;
    bg_guard_buf b = {0};
    *rc = store_get(st, 3, &b);
    bg_guard_buf_free(&b);
    return NULL;
}

/* Renames conninfo's database, -wal and -shm files from dir `from` to dir
 * `to` (each "" for sqlite_dir itself, else a subdirectory of it). */
static void sqlite_move(const char *from, const char *to)
{
    static const char *const suffix[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        char a[600], b[600];
        snprintf(a, sizeof a, "%s/%s%sproducts.db%s", sqlite_dir, from, from[0] ? "/" : "",
                 suffix[i]);
        snprintf(b, sizeof b, "%s/%s%sproducts.db%s", sqlite_dir, to, to[0] ? "/" : "",
                 suffix[i]);
        if (rename(a, b) != 0 && (i == 0 || errno != ENOENT))
            fail_msg("rename %s %s: %s", a, b, strerror(errno));
    }
}

/* store_get(id) on a new thread (which adopts a finished thread's record). */
static int get_on_new_thread(void)
{
    pthread_t t;
    int trc = -100;
    assert_int_equal(pthread_create(&t, NULL, get_in_thread, &trc), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    return trc;
}

/* SQLite has no server to lose; its outage is the file going away (moved,
 * being restored) and coming back. While it is away every call fails with
 * BG_ECONN and no thread creates an empty database in its place (which it
 * would then keep answering "no such table" from); when it is back, every
 * thread reads it again. A file without our table is BG_ECONN too. */
static void sqlite_outage(void)
{
    char away[600];
    snprintf(away, sizeof away, "%s/away", sqlite_dir);
    assert_int_equal(mkdir(away, 0700), 0);
    assert_int_equal(get_on_new_thread(), BG_GUARD_FOUND);
    assert_get_json(1, "{\"id\":1,\"name\":\"product 1\",\"price_cents\":7919}");

    sqlite_move("", "away");
    /* Connections opened before notice within a second (HAS_MOVED). */
    struct timespec pause = {1, 200000000};
    nanosleep(&pause, NULL);
    bg_guard_buf b = {0};
    for (int i = 0; i < 3; i++) {
        int rc = store_get(st, 1, &b);
        fprintf(stderr, "# file away: get -> %s (%s)\n", bg_err_name(rc), store_errstr());
        assert_int_equal(rc, BG_ECONN);
        assert_int_equal(get_on_new_thread(), BG_ECONN);
    }
    uint64_t n;
    assert_int_equal(store_count(st, &n), BG_ECONN);
    assert_int_equal(store_put(st, 1, "x", 1), BG_ECONN);
    assert_int_equal(store_delete(st, 1), BG_ECONN);
    if (access(conninfo, F_OK) == 0)
        fail_msg("%s was created while the database was away", conninfo);

    sqlite_move("away", "");
    assert_get_json(1, "{\"id\":1,\"name\":\"product 1\",\"price_cents\":7919}");
    assert_int_equal(get_on_new_thread(), BG_GUARD_FOUND);
    assert_int_equal(store_count(st, &n), BG_OK);
    assert_int_equal(n, N_SEED);

    /* A file that is not ours (an empty database: "no such table") in its
     * place, then ours again: the connection to the stranger is dropped. */
    sqlite_move("", "away");
    FILE *f = fopen(conninfo, "w");
    assert_non_null(f);
    fclose(f);
    nanosleep(&pause, NULL);
    int rc = store_get(st, 1, &b);
    fprintf(stderr, "# empty file: get -> %s (%s)\n", bg_err_name(rc), store_errstr());
    assert_int_equal(rc, BG_ECONN);
    assert_non_null(strstr(store_errstr(), "no such table"));
    assert_int_equal(get_on_new_thread(), BG_ECONN);
    assert_int_equal(unlink(conninfo), 0);
    sqlite_move("away", "");
    assert_get_json(2, "{\"id\":2,\"name\":\"product 2\",\"price_cents\":15838}");
    assert_int_equal(get_on_new_thread(), BG_GUARD_FOUND);
    assert_int_equal(rmdir(away), 0);
    bg_guard_buf_free(&b);

    /* An unopenable file at open time is a clean error. */
    store *bad = NULL;
    char err[256];
    rc = store_open(&bad, STORE_SQLITE, "/nonexistent-dir/x/products.db", err, sizeof err);
    assert_int_equal(rc, BG_EIO);
    assert_null(bad);
    assert_non_null(strstr(err, "unable to open"));
}

static void test_outage_and_reconnect(void **state)
{
    (void)state;
    if (kind == STORE_SQLITE) {
        sqlite_outage();
        return;
    }
    /* Prime a connection on another thread too (it exits: its record is
     * adopted later, connection broken by then). */
    pthread_t t;
    int trc = -100;
    assert_int_equal(pthread_create(&t, NULL, get_in_thread, &trc), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(trc, BG_GUARD_FOUND);
    assert_get_json(1, "{\"id\":1,\"name\":\"product 1\",\"price_cents\":7919}");

    dbs_stop(&server);
    bg_guard_buf b = {0};
    for (int i = 0; i < 3; i++) {
        double t0 = now_s();
        int rc = store_get(st, 1, &b);
        double dt = now_s() - t0;
        fprintf(stderr, "# server down: get -> %s (%s) in %.3f s\n", bg_err_name(rc),
                store_errstr(), dt);
        assert_int_equal(rc, BG_ECONN);
        assert_true(store_errstr()[0] != '\0');
        assert_true(dt < 5.0);
    }
    uint64_t n;
    assert_int_equal(store_count(st, &n), BG_ECONN);
    assert_int_equal(store_put(st, 1, "x", 1), BG_ECONN);
    scan_state ss = {.next = 1};
    bg_guard_source src = store_source(st);
    assert_int_equal(src.scan(src.ctx, scan_emit, &ss), BG_ECONN);
    assert_int_equal(src.get(src.ctx, "1", 1, &b), BG_ECONN);

    /* A store opened while the server is down: a clean error saying why. */
    store *bad = NULL;
    char err[512];
    int rc = store_open(&bad, kind, conninfo, err, sizeof err);
    assert_int_equal(rc, BG_ECONN);
    assert_null(bad);
    fprintf(stderr, "# open while down: %s\n", err);
    assert_true(strstr(err, "refused") != NULL || strstr(err, "connect") != NULL);

    char derr[512];
    if (dbs_restart(&server, derr, sizeof derr) != 0)
        fail_msg("restart: %s", derr);
    /* The same store works again, on this thread and on a new one. */
    assert_get_json(1, "{\"id\":1,\"name\":\"product 1\",\"price_cents\":7919}");
    assert_int_equal(store_count(st, &n), BG_OK);
    assert_int_equal(n, N_SEED);
    trc = -100;
    assert_int_equal(pthread_create(&t, NULL, get_in_thread, &trc), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(trc, BG_GUARD_FOUND);

    /* A restart between two calls: the read reconnects by itself. */
    dbs_stop(&server);
    if (dbs_restart(&server, derr, sizeof derr) != 0)
        fail_msg("restart: %s", derr);
    assert_get_json(2, "{\"id\":2,\"name\":\"product 2\",\"price_cents\":15838}");

    /* A restart between two calls, then a delete (which is never sent
     * twice): the connection the server closed is noticed before the
     * delete goes out, so it runs once, on a new connection. */
    assert_int_equal(store_put(st, 4001, "to delete", 1), BG_OK);
    dbs_stop(&server);
    if (dbs_restart(&server, derr, sizeof derr) != 0)
        fail_msg("restart: %s", derr);
    assert_int_equal(store_delete(st, 4001), 1);
    assert_absent(4001);
    bg_guard_buf_free(&b);
}

static void test_bad_conninfo(void **state)
{
    (void)state;
    store *bad = NULL;
    char err[256];
    if (kind == STORE_MARIADB) {
        static const char *const cis[] = {"", "postgres://bg@127.0.0.1/x", "mysql://127.0.0.1/db",
                                          "mysql://bg@127.0.0.1:99999/db", "mysql://bg@127.0.0.1",
                                          "mysql://b%zz@127.0.0.1/db",
                                          "mysql://bg@localhost/db?sock=/x"};
        for (size_t i = 0; i < sizeof cis / sizeof cis[0]; i++) {
            int rc = store_open(&bad, kind, cis[i], err, sizeof err);
            if (rc != BG_EINVAL)
                fail_msg("%s: %d %s", cis[i], rc, err);
            assert_null(bad);
            assert_true(err[0] != '\0');
        }
        /* Wrong password: refused, with the server's message. */
        char ci[512];
        snprintf(ci, sizeof ci, "mysql://bg:wrong@127.0.0.1:%d/bgtest", server.port);
        assert_true(store_open(&bad, kind, ci, err, sizeof err) < 0);
        assert_non_null(strstr(err, "Access denied"));
        /* The unix-socket form. */
        snprintf(ci, sizeof ci, "mysql://bg:bgpass@localhost/bgtest?socket=%s/mysqld.sock",
                 server.dir);
        assert_int_equal(store_open(&bad, kind, ci, err, sizeof err), BG_OK);
        uint64_t n;
        assert_int_equal(store_count(bad, &n), BG_OK);
        assert_int_equal(n, N_SEED);
        store_close(bad);
    } else if (kind == STORE_POSTGRES) {
        assert_true(store_open(&bad, kind, "host=127.0.0.1 port=1 user=bg dbname=x", err,
                               sizeof err) == BG_ECONN);
        assert_non_null(strstr(err, "refused"));
        char ci[512];
        snprintf(ci, sizeof ci, "host=127.0.0.1 port=%d user=bg dbname=nosuchdb", server.port);
        assert_true(store_open(&bad, kind, ci, err, sizeof err) < 0);
        assert_non_null(strstr(err, "nosuchdb"));
        assert_int_equal(store_open(&bad, kind, "not a = valid conninfo '", err, sizeof err) < 0,
                         1);
        /* The unix-socket form and a URL. */
        snprintf(ci, sizeof ci, "host=%s port=%d user=bg dbname=bgtest", server.dir, server.port);
        assert_int_equal(store_open(&bad, kind, ci, err, sizeof err), BG_OK);
        store_close(bad);
        snprintf(ci, sizeof ci, "postgresql://bg@127.0.0.1:%d/bgtest?connect_timeout=1",
                 server.port);
        assert_int_equal(store_open(&bad, kind, ci, err, sizeof err), BG_OK);
        store_close(bad);
    } else {
        assert_int_equal(store_open(&bad, kind, "", err, sizeof err), BG_EINVAL);
    }
    assert_int_equal(store_open(NULL, kind, "x", err, sizeof err), BG_EINVAL);
    assert_int_equal(store_open(&bad, (store_kind)7, "x", err, sizeof err), BG_EINVAL);
}

int main(int argc, char **argv)
{
    if (argc < 2 || store_kind_parse(argv[1], &kind) != 0) {
        fprintf(stderr, "usage: %s sqlite|postgres|mariadb\n", argv[0]);
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kind_names),    cmocka_unit_test(test_seed),
        cmocka_unit_test(test_get),           cmocka_unit_test(test_source_keys),
        cmocka_unit_test(test_put_delete),    cmocka_unit_test(test_scan),
        cmocka_unit_test(test_json_escaping), cmocka_unit_test(test_concurrency),
        cmocka_unit_test(test_bad_conninfo),  cmocka_unit_test(test_outage_and_reconnect),
    };
    return cmocka_run_group_tests_name(argv[1], tests, setup, teardown);
}
