/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate_guard with a remote filter, against a real redis-server the test
 * starts itself (tests/support/redis_server.h).
 *
 * Bitmap backend: bg_guard_new creates the filter and fills it from the
 * source; a second guard (another instance) opens it, sees the keys and
 * the first one's puts; a rebuild drops deleted keys (and resizes, so the
 * second guard's handles go stale and reopen); a reader thread sees no
 * false negative during rebuilds; a killed server makes gets fail with
 * BG_ECONN (never absent), and once it is back on the same port, gets work
 * again. A sharded filter made by another client is filled and resized by
 * rebuilds. Module backend (when $BLOOMGATE_MODULE names bloomgate.so): create,
 * fill, get; rebuilds drop deleted keys, keep a put made while they run,
 * and cause no false negative; creation is atomic (a watcher never sees a
 * partly filled filter, a failed one leaves nothing). Both backends: a
 * rebuild whose commit loses its request or its reply still commits, on one
 * retry (script_fault.h injects the loss); one that another client cancels
 * halfway fails with BG_ESTALE and leaves alone the rebuild that client
 * began meanwhile (bitmap, sharded, module).
 *
 * This file holds the shared setup, the bitmap tests and main; the sharded,
 * module and fault tests are in guard_remote_sharded.c, guard_remote_module.c
 * and guard_remote_faults.c (guard_remote_test.h declares what they share). */
#include "guard_remote_test.h"
#include "redis_cluster.h"

ts_server srv;
ms_source src;

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

bg_remote_options ropts(const ts_server *s)
{
    return (bg_remote_options){.port = s->port, .connect_timeout_ms = 500,
                               .command_timeout_ms = 1000};
}

bg_guard *remote_guard(const bg_remote_options *ro, const char *name,
                              bg_remote_backend backend, uint64_t capacity)
{
    bg_guard_options o = {.source = ms_callbacks(&src), .filter_kind = BG_GUARD_FILTER_REMOTE,
                          .filter = {.capacity = capacity, .error_rate = 0.001, .seed = 7},
                          .remote = ro, .remote_name = name, .remote_backend = backend};
    bg_guard *g = NULL;
    int rc = bg_guard_new(&g, &o);
    if (rc != BG_OK)
        fail_msg("bg_guard_new(%s): %s", name, bg_err_name(rc));
    return g;
}

void all_present(bg_guard *g, const char *prefix, long from, long to)
{
    char k[64];
    for (long i = from; i < to; i++) {
        size_t kl = ms_key(k, prefix, i);
        TU_EQ_I(bg_guard_may_contain(g, k, kl), 1);
    }
}

/* ---- bitmap: create, share, put ---------------------------------------------- */

static void bitmap_create_and_share(void **state)
{
    (void)state;
    tu_ctx("bitmap: create from the source, shared by a second guard");
    ms_init(&src);
    ms_add_range(&src, "p", NKEYS);
    bg_remote_options ro = ropts(&srv);
    bg_guard *a = remote_guard(&ro, "share", BG_REMOTE_BITMAP, 0);
    TU_EQ_I(atomic_load(&src.scans), 1);
    all_present(a, "p", 0, NKEYS);

    bg_guard *b = remote_guard(&ro, "share", BG_REMOTE_BITMAP, 0);
    TU_EQ_I(atomic_load(&src.scans), 1); /* opened, not built again */
    all_present(b, "p", 0, NKEYS);
    long filtered = 0;
    char k[64];
    bg_guard_buf v = {0};
    for (long i = 0; i < 500; i++) {
        size_t kl = ms_key(k, "absent", i);
        int rc = bg_guard_get(b, k, kl, &v);
        TU_EQ_I(rc, BG_GUARD_ABSENT);
    }
    filtered = (long)gc(b).filtered;
    TU_TRUE(filtered >= 490);
    TU_EQ_I(bg_guard_get(b, "p5", 2, &v), BG_GUARD_FOUND);
    TU_TRUE(strcmp(v.data, "value of p5") == 0);

    /* A put through one instance is seen by the other. */
    ms_add(&src, "new", 1);
    TU_EQ_I(bg_guard_put(a, "new1", 4), BG_OK);
    TU_EQ_I(bg_guard_may_contain(b, "new1", 4), 1);
    TU_EQ_I(bg_guard_get(b, "new1", 4, &v), BG_GUARD_FOUND);

    bg_guard_counters c = gc(a);
    TU_TRUE(c.filter_items >= NKEYS && c.filter_bytes > 0);
    bg_guard_free(a);
    bg_guard_free(b);
    bg_guard_buf_free(&v);
    ms_free(&src);
}

/* ---- bitmap: rebuild ------------------------------------------------------------ */

atomic_int stop;
atomic_long bad;
static atomic_long reads;

static void *reader(void *p)
{
    bg_guard *g = p;
    bg_guard_buf v = {0};
    char k[64];
    uint64_t st = 99;
    while (!atomic_load(&stop)) {
        long i = 100 + (long)(tu_next(&st) % (NKEYS - 100));
        size_t kl = ms_key(k, "p", i);
        int rc = bg_guard_get(g, k, kl, &v);
        if (rc != BG_GUARD_FOUND) {
            atomic_fetch_add(&bad, 1);
            print_error("reader: %s -> %s\n", k, bg_err_name(rc));
        }
        atomic_fetch_add(&reads, 1);
    }
    bg_guard_buf_free(&v);
    return NULL;
}

/* Halfway through a rebuild's scan (the rebuild pending in Redis, half
 * its keys in), waits until the reader has made a few more reads: so they
 * do overlap the rebuild, however fast it is and however the two threads
 * are scheduled (a 2-core machine ran three rebuilds before the reader's
 * first read). Gives up after 10 s, which the read count then shows. */
static atomic_long reads_mid_rebuild;

static void wait_for_reads(void *arg)
{
    (void)arg;
    long from = atomic_load(&reads);
    for (int i = 0; i < 10000 && atomic_load(&reads) < from + 3; i++)
        ms_sleep_ms(1);
    atomic_fetch_add(&reads_mid_rebuild, atomic_load(&reads) - from);
}

/* Deletes keys p0..p99 from the source, then runs `rounds` rebuilds of a
 * while a reader thread gets the other keys through b: it must find every
 * one, and afterwards b must miss (nearly) all the deleted ones. */
void rebuilds_drop_deleted(bg_guard *a, bg_guard *b, int rounds)
{
    char k[64];
    for (long i = 0; i < 100; i++) {
        size_t kl = ms_key(k, "p", i);
        TU_TRUE(ms_map_del(&src.map, k, kl));
    }
    atomic_store(&stop, 0);
    atomic_store(&bad, 0);
    atomic_store(&reads, 0);
    atomic_store(&reads_mid_rebuild, 0);
    src.mid_scan = wait_for_reads;
    pthread_t t;
    TU_EQ_I(pthread_create(&t, NULL, reader, b), 0);
    for (int r = 0; r < rounds; r++)
        TU_EQ_I(bg_guard_rebuild(a), BG_OK);
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    src.mid_scan = NULL;
    TU_EQ_I(atomic_load(&bad), 0);
    TU_TRUE(atomic_load(&reads_mid_rebuild) >= 3L * rounds);
    long gone = 0;
    for (long i = 0; i < 100; i++) {
        size_t kl = ms_key(k, "p", i);
        gone += bg_guard_may_contain(b, k, kl) == 0;
    }
    TU_TRUE(gone >= 95);
    all_present(b, "p", 100, NKEYS);
}

void *rebuild_thread(void *p)
{
    int rc = bg_guard_rebuild(p);
    if (rc != BG_OK) {
        atomic_fetch_add(&bad, 1);
        print_error("rebuild: %s\n", bg_err_name(rc));
    }
    return NULL;
}

static void bitmap_rebuild(void **state)
{
    (void)state;
    tu_ctx("bitmap: rebuild drops deleted keys, no false negatives meanwhile");
    ms_init(&src);
    ms_add_range(&src, "p", NKEYS);
    bg_remote_options ro = ropts(&srv);
    /* Capacity 0: sized from count(), so a rebuild after deletes reshapes
     * the filter and the other guard's handles go stale (and reopen). */
    bg_guard *a = remote_guard(&ro, "rb", BG_REMOTE_BITMAP, 0);
    bg_guard *b = remote_guard(&ro, "rb", BG_REMOTE_BITMAP, 0);
    rebuilds_drop_deleted(a, b, 5);
    TU_EQ_U(gc(a).rebuilds, 5);

    /* One rebuild at a time, across instances too: a slow scan. */
    atomic_store(&src.scan_sleep_ms, 300);
    pthread_t rt;
    long scans = atomic_load(&src.scans);
    TU_EQ_I(pthread_create(&rt, NULL, rebuild_thread, a), 0);
    while (atomic_load(&src.scans) == scans) /* begun: its scan runs */
        ms_sleep_ms(1);
    TU_EQ_I(bg_guard_rebuild(b), BG_EBUSY); /* pending in Redis: another client's */
    pthread_join(rt, NULL);
    TU_EQ_I(atomic_load(&bad), 0);
    atomic_store(&src.scan_sleep_ms, 0);

    /* A failing scan aborts the rebuild in Redis: the next one can start. */
    atomic_store(&src.fail_scan, BG_EIO);
    TU_EQ_I(bg_guard_rebuild(a), BG_EIO);
    TU_EQ_U(gc(a).rebuild_errors, 1);
    atomic_store(&src.fail_scan, 0);
    TU_EQ_I(bg_guard_rebuild(b), BG_OK);
    all_present(a, "p", 100, NKEYS);
    rebuild_taken_over(a, &ro, "rb", BG_REMOTE_BITMAP, NULL);
    rebuild_abort_lost(a, &ro, "rb", BG_REMOTE_BITMAP, NULL);
    all_present(b, "p", 100, NKEYS);
    bg_guard_free(a);
    bg_guard_free(b);
    ms_free(&src);
}

/* ---- a cluster, reached through a seed list ------------------------------------ */

typedef struct seeded_reader {
    bg_guard *g;
    long found, errors;
} seeded_reader;

/* Gets p0..p99 twice on a thread of its own, so on new connections (the
 * guard's and the cache's) made after bg_guard_new returned. */
static void *seeded_gets(void *arg)
{
    seeded_reader *sr = arg;
    bg_guard_buf v = {0};
    char k[64];
    for (int round = 0; round < 2; round++)
        for (long i = 0; i < 100; i++) {
            size_t kl = ms_key(k, "p", i);
            int rc = bg_guard_get(sr->g, k, kl, &v);
            sr->found += rc == BG_GUARD_FOUND;
            sr->errors += rc < 0;
        }
    bg_guard_buf_free(&v);
    return NULL;
}

/* The guard and its Redis cache copy the options' seed list like their
 * other strings: a thread that connects later must not read the caller's
 * (here overwritten) buffer. The first seed is dead, so the list is what
 * every connection needs. A sharded filter and the cache on a 3-master
 * cluster. */
static void cluster_seeds_copied(void **state)
{
    (void)state;
    tu_ctx("cluster: the seed list is copied");
    ts_server cl[3];
    tc_start(cl, 3);
    ms_init(&src);
    ms_add_range(&src, "p", NKEYS);
    char seeds[64];
    snprintf(seeds, sizeof seeds, "127.0.0.1:%d", cl[1].port);
    bg_remote_options ro = {.port = ts_free_port(), .cluster = 1, .seeds = seeds,
                            .connect_timeout_ms = 500, .command_timeout_ms = 2000};
    bg_guard_redis_cache *rc = NULL;
    bg_guard_options o = {.source = ms_callbacks(&src), .filter_kind = BG_GUARD_FILTER_REMOTE,
                          .filter = {.error_rate = 0.01, .seed = 5}, .remote = &ro,
                          .remote_name = "cs", .remote_shards = 3};
    TU_EQ_I(bg_guard_redis_cache_new(&rc, &ro, "cs:", 0, &o.cache), BG_OK);
    bg_guard *g = NULL;
    TU_EQ_I(bg_guard_new(&g, &o), BG_OK);
    snprintf(seeds, sizeof seeds, "x:1"); /* what a guard without copies would read */

    seeded_reader sr = {.g = g};
    pthread_t t;
    TU_EQ_I(pthread_create(&t, NULL, seeded_gets, &sr), 0);
    pthread_join(t, NULL);
    TU_EQ_I(sr.errors, 0);
    TU_EQ_I(sr.found, 200);
    bg_guard_counters c = gc(g);
    TU_TRUE(c.cache_hits >= 100); /* the second round, from the cluster's cache */
    TU_EQ_I(c.cache_errors, 0);
    bg_guard_free(g);
    bg_guard_redis_cache_free(rc);
    ms_free(&src);
    tc_stop(cl, 3);
}

/* ---- bitmap: outage ------------------------------------------------------------- */

static void bitmap_outage(void **state)
{
    (void)state;
    tu_ctx("bitmap: a dead server is an error, never absent");
    ms_init(&src);
    ms_add_range(&src, "p", NKEYS);
    bg_remote_options ro = ropts(&srv);
    bg_guard *g = remote_guard(&ro, "outage", BG_REMOTE_BITMAP, 4000);
    bg_guard_buf v = {0};
    TU_EQ_I(bg_guard_get(g, "p1", 2, &v), BG_GUARD_FOUND);

    redisContext *raw = ts_raw(&srv);
    redisReply *rep = redisCommand(raw, "SAVE");
    TU_TRUE(rep && rep->type == REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    redisFree(raw);
    ts_kill(&srv);
    char k[64];
    for (long i = 0; i < 20; i++) {
        size_t kl = ms_key(k, i % 2 ? "p" : "absent", i);
        TU_EQ_I(bg_guard_get(g, k, kl, &v), BG_ECONN);
    }
    TU_EQ_I(bg_guard_may_contain(g, "p1", 2), BG_ECONN);
    TU_EQ_I(bg_guard_put(g, "p1", 2), BG_ECONN);
    TU_EQ_I(bg_guard_rebuild(g), BG_ECONN);
    bg_guard_counters c = gc(g); /* stats skipped, no crash */
    TU_EQ_U(c.filtered, 0);
    TU_EQ_U(c.source_queries, 1);

    ts_spawn(&srv); /* same port, same data (dump.rdb) */
    TU_EQ_I(bg_guard_get(g, "p1", 2, &v), BG_GUARD_FOUND);
    all_present(g, "p", 0, NKEYS);
    TU_EQ_I(bg_guard_rebuild(g), BG_OK);
    all_present(g, "p", 0, NKEYS);

    tu_ctx("bitmap: a restart under a working connection costs no call");
    rep = NULL;
    raw = ts_raw(&srv);
    rep = redisCommand(raw, "SAVE");
    TU_TRUE(rep && rep->type == REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    redisFree(raw);
    ts_kill(&srv);
    ts_spawn(&srv);
    TU_EQ_I(bg_guard_get(g, "p1", 2, &v), BG_GUARD_FOUND);
    TU_EQ_I(bg_guard_put(g, "p-new", 5), BG_OK);
    TU_EQ_I(bg_guard_may_contain(g, "p-new", 5), 1);

    /* Restarted without its data: the filter is gone (an error, not
     * absent), and a rebuild creates it again from the source. */
    ts_kill(&srv);
    unlink(tu_tmp_file(&srv.dir, "dump.rdb"));
    ts_spawn(&srv);
    /* The first call finds the old connection broken and retries at once
     * on a new one (remote_filter.c, CONNECTIONS): not BG_ECONN. */
    TU_EQ_I(bg_guard_get(g, "p1", 2, &v), BG_ENOTFOUND);
    TU_EQ_I(bg_guard_get(g, "p1", 2, &v), BG_ENOTFOUND);
    TU_EQ_I(bg_guard_rebuild(g), BG_OK);
    TU_EQ_I(bg_guard_get(g, "p1", 2, &v), BG_GUARD_FOUND);
    all_present(g, "p", 0, NKEYS);
    bg_guard_free(g);
    bg_guard_buf_free(&v);
    ms_free(&src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bitmap_create_and_share),
        cmocka_unit_test(bitmap_rebuild),
        cmocka_unit_test(sharded_rebuild),
        cmocka_unit_test(sharded_create),
        cmocka_unit_test(cluster_seeds_copied),
        cmocka_unit_test(bitmap_outage),
        cmocka_unit_test(module_backend),
        cmocka_unit_test(module_creation_is_atomic),
        cmocka_unit_test(bitmap_lost_commit),
        cmocka_unit_test(module_lost_commit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
