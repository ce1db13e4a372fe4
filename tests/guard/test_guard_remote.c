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
 * began meanwhile (bitmap, sharded, module). */
#include "test_util.h"
#include "redis_server.h"
#include "redis_cluster.h"
#include "script_fault.h"
#include "guard_fixtures.h"

#define NKEYS 2000

static ts_server srv;
static ms_source src;

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

static bg_remote_options ropts(const ts_server *s)
{
    return (bg_remote_options){.port = s->port, .connect_timeout_ms = 500,
                               .command_timeout_ms = 1000};
}

static bg_guard *remote_guard(const bg_remote_options *ro, const char *name,
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

static void all_present(bg_guard *g, const char *prefix, long from, long to)
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

static atomic_int stop;
static atomic_long bad, reads;

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
static void rebuilds_drop_deleted(bg_guard *a, bg_guard *b, int rounds)
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

static void *rebuild_thread(void *p)
{
    int rc = bg_guard_rebuild(p);
    if (rc != BG_OK) {
        atomic_fetch_add(&bad, 1);
        print_error("rebuild: %s\n", bg_err_name(rc));
    }
    return NULL;
}

/* Another client cancels the rebuild under way (whichever is pending: the
 * guard's) and begins its own, halfway through the guard's scan. */
typedef struct takeover {
    bg_remote_filter *h;
    const bg_remote_filter_options *shape;
} takeover;

static void cancel_and_take_over(void *arg)
{
    takeover *t = arg;
    TU_EQ_I(bg_remote_filter_rebuild_abort(t->h), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(t->h, t->shape), BG_OK);
}

/* The guard's rebuild of `name` is cancelled halfway by another client,
 * which begins its own: the guard's fails with BG_ESTALE (a rebuild error)
 * and leaves the other one pending (its own abort finds it). */
static void rebuild_taken_over(bg_guard *g, const bg_remote_options *ro, const char *name,
                               bg_remote_backend backend, const bg_remote_filter_options *shape)
{
    bg_remote *r = NULL;
    takeover t = {.shape = shape};
    TU_EQ_I(bg_remote_connect(&r, ro), BG_OK);
    TU_EQ_I(bg_remote_filter_open(&t.h, r, name, backend), BG_OK);
    uint64_t errors = gc(g).rebuild_errors;
    src.mid_scan = cancel_and_take_over;
    src.mid_scan_arg = &t;
    TU_EQ_I(bg_guard_rebuild(g), BG_ESTALE);
    src.mid_scan = NULL;
    TU_EQ_U(gc(g).rebuild_errors, errors + 1);
    TU_EQ_I(bg_remote_filter_rebuild_abort(t.h), BG_OK);
    TU_EQ_I(bg_guard_rebuild(g), BG_OK);
    bg_remote_filter_close(t.h);
    bg_remote_close(r);
}

/* bg_guard_rebuild(g) on a thread of its own (its own thread record and
 * handle); its status. */
typedef struct rebuild_call {
    bg_guard *g;
    int rc;
} rebuild_call;

static void *rebuild_call_run(void *p)
{
    rebuild_call *c = p;
    c->rc = bg_guard_rebuild(c->g);
    return NULL;
}

static int rebuild_on_new_thread(bg_guard *g)
{
    rebuild_call c = {.g = g, .rc = BG_EINVAL};
    pthread_t th;
    TU_EQ_I(pthread_create(&th, NULL, rebuild_call_run, &c), 0);
    pthread_join(th, NULL);
    return c.rc;
}

/* A rebuild of g whose scan fails and whose abort is lost (script
 * `abort_script`), so that it is left pending in Redis. */
static void rebuild_left_pending(bg_guard *g, int abort_script)
{
    atomic_store(&src.fail_scan, BG_EIO);
    sf_arm(abort_script, BG__REMOTE_TESTING_LOSE_REQUEST, 1);
    TU_EQ_I(bg_guard_rebuild(g), BG_EIO);
    TU_EQ_I(sf_disarm(), 1);
    atomic_store(&src.fail_scan, 0);
}

/* The abort of a failed rebuild is lost (Redis away): the same thread's
 * next rebuild aborts the leftover first, on the handle that began it, and
 * succeeds. When another client has cancelled the leftover and begun its
 * own meanwhile, neither another thread's rebuild nor the same thread's
 * cancels that one: both get BG_EBUSY and it stays pending (an abort on a
 * handle without a rebuild of its own would have cancelled it). */
static void rebuild_abort_lost(bg_guard *g, const bg_remote_options *ro, const char *name,
                               bg_remote_backend backend, const bg_remote_filter_options *shape)
{
    int abort_script = backend == BG_REMOTE_MODULE ? BG__SCRIPT_MODULE_REBUILD_ABORT
                                                   : BG__SCRIPT_REBUILD_ABORT;
    rebuild_left_pending(g, abort_script);
    TU_EQ_I(bg_guard_rebuild(g), BG_OK);

    bg_remote *r = NULL;
    bg_remote_filter *h = NULL;
    TU_EQ_I(bg_remote_connect(&r, ro), BG_OK);
    TU_EQ_I(bg_remote_filter_open(&h, r, name, backend), BG_OK);
    rebuild_left_pending(g, abort_script);
    TU_EQ_I(bg_remote_filter_rebuild_abort(h), BG_OK); /* whichever: the leftover */
    TU_EQ_I(bg_remote_filter_rebuild_begin(h, shape), BG_OK);
    TU_EQ_I(rebuild_on_new_thread(g), BG_EBUSY);
    TU_EQ_I(bg_guard_rebuild(g), BG_EBUSY);
    TU_EQ_I(bg_remote_filter_rebuild_abort(h), BG_OK); /* its own: still pending */
    TU_EQ_I(bg_guard_rebuild(g), BG_OK);
    TU_EQ_I(rebuild_on_new_thread(g), BG_OK);
    bg_remote_filter_close(h);
    bg_remote_close(r);
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

/* ---- bitmap: a sharded filter ---------------------------------------------------- */

/* A guard over a sharded filter made by someone else (another seed than the
 * guard's): it fills it by a rebuild, resizes it by another after deletes,
 * and a reader guard sees no false negative meanwhile. */
static void sharded_rebuild(void **state)
{
    (void)state;
    tu_ctx("bitmap, sharded: rebuilds");
    ms_init(&src);
    ms_add_range(&src, "p", NKEYS);
    bg_remote_options ro = ropts(&srv);
    bg_remote *r = NULL;
    TU_EQ_I(bg_remote_connect(&r, &ro), BG_OK);
    bg_remote_filter *f = NULL;
    bg_remote_filter_options fo = {.backend = BG_REMOTE_BITMAP, .capacity = 4000,
                                   .error_rate = 0.01, .seed = 3, .shards = 4};
    TU_EQ_I(bg_remote_filter_create(&f, r, "gsh", &fo), BG_OK);
    bg_guard *a = remote_guard(&ro, "gsh", BG_REMOTE_BITMAP, 0); /* opens it: empty */
    bg_guard *b = remote_guard(&ro, "gsh", BG_REMOTE_BITMAP, 0);
    TU_EQ_I(bg_guard_rebuild(a), BG_OK);
    all_present(b, "p", 0, NKEYS);
    rebuilds_drop_deleted(a, b, 3);
    rebuild_taken_over(a, &ro, "gsh", BG_REMOTE_BITMAP, NULL); /* on every shard */
    rebuild_abort_lost(a, &ro, "gsh", BG_REMOTE_BITMAP, NULL); /* lost on shard 0 */
    all_present(b, "p", 100, NKEYS);
    bg_remote_filter_stats st;
    bg_remote_filter *g2 = NULL;
    TU_EQ_I(bg_remote_filter_open(&g2, r, "gsh", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_stats_get(g2, &st), BG_OK);
    TU_EQ_U(st.layers, 4);  /* still 4 shards */
    TU_EQ_U(st.seed, 3);    /* and the same seed */
    TU_EQ_U(st.hashes, 10); /* resized for p = 0.001 (k was 7 for 0.01) */
    TU_EQ_I(bg_remote_filter_delete(r, "gsh", BG_REMOTE_BITMAP), BG_OK);
    bg_remote_filter_close(g2);
    bg_remote_filter_close(f);
    bg_remote_close(r);
    bg_guard_free(a);
    bg_guard_free(b);
    ms_free(&src);
}

/* How many of keys <prefix>from..to-1 g's filter says are absent. */
static long absent_in(bg_guard *g, const char *prefix, long from, long to)
{
    char k[64];
    long n = 0;
    for (long i = from; i < to; i++) {
        size_t kl = ms_key(k, prefix, i);
        n += bg_guard_may_contain(g, k, kl) == 0;
    }
    return n;
}

/* What {name}:shards holds, -1 if nothing. */
static long shard_count(redisContext *c, const char *name)
{
    redisReply *rep = redisCommand(c, "GET {%s}:shards", name);
    assert_non_null(rep);
    long n = rep->type == REDIS_REPLY_STRING ? atol(rep->str) : -1;
    freeReplyObject(rep);
    return n;
}

/* A guard that creates a sharded filter: built here and published whole
 * (a failed scan, or a shard's upload lost halfway, leaves nothing anyone
 * opens), then shared, put to and rebuilt like any other. */
static void sharded_create(void **state)
{
    (void)state;
    tu_ctx("bitmap, sharded: created by the guard");
    ms_init(&src);
    ms_add_range(&src, "p", NKEYS);
    bg_remote_options ro = ropts(&srv);
    redisContext *c = ts_raw(&srv);
    bg_guard_options o = {.source = ms_callbacks(&src), .filter_kind = BG_GUARD_FILTER_REMOTE,
                          .filter = {.error_rate = 0.001, .seed = 7}, .remote = &ro,
                          .remote_name = "gsc", .remote_shards = 3};
    bg_guard *g = NULL;

    /* Refused: shards of a module or local filter, too many. */
    o.remote_backend = BG_REMOTE_MODULE;
    TU_EQ_I(bg_guard_new(&g, &o), BG_EINVAL);
    o.remote_backend = BG_REMOTE_BITMAP;
    o.remote_shards = BG_REMOTE_MAX_SHARDS + 1;
    TU_EQ_I(bg_guard_new(&g, &o), BG_EINVAL);
    o.remote_shards = 3;
    o.filter_kind = BG_GUARD_FILTER_LOCAL;
    TU_EQ_I(bg_guard_new(&g, &o), BG_EINVAL);
    o.filter_kind = BG_GUARD_FILTER_REMOTE;

    /* A scan that fails halfway: nothing in Redis. */
    atomic_store(&src.fail_scan, BG_EIO);
    TU_EQ_I(bg_guard_new(&g, &o), BG_EIO);
    TU_EQ_I(ts_count_keys(c, "*gsc*"), 0);
    atomic_store(&src.fail_scan, 0);

    /* The third shard's upload lost: two shards there, but no count, so
     * nobody opens a filter missing a third of the keys. */
    sf_arm_after(BG__SCRIPT_PUBLISH, BG__REMOTE_TESTING_LOSE_REQUEST, 2, 1);
    TU_EQ_I(bg_guard_new(&g, &o), BG_ECONN);
    TU_EQ_I(sf_disarm(), 1);
    TU_EQ_I(ts_count_keys(c, "{gsc:s*}:meta"), 2);
    TU_EQ_I(shard_count(c, "gsc"), -1);
    bg_remote *r = NULL;
    bg_remote_filter *f = NULL;
    TU_EQ_I(bg_remote_connect(&r, &ro), BG_OK);
    TU_EQ_I(bg_remote_filter_open(&f, r, "gsc", BG_REMOTE_BITMAP), BG_ENOTFOUND);

    /* A guard asking for another count, or another seed, is refused at the
     * leftovers (they are shards 0/3 and 1/3 of seed 7), writing nothing. */
    o.remote_shards = 2;
    TU_EQ_I(bg_guard_new(&g, &o), BG_EEXIST);
    o.remote_shards = 3;
    o.filter.seed = 8;
    TU_EQ_I(bg_guard_new(&g, &o), BG_EEXIST);
    o.filter.seed = 7;
    TU_EQ_I(ts_count_keys(c, "{gsc:s*}:meta"), 2);
    TU_EQ_I(shard_count(c, "gsc"), -1);

    /* Created (the leftovers replaced), opened by a second guard that asks
     * for no shards, every key found, absent keys filtered. */
    bg_guard *a = NULL;
    TU_EQ_I(bg_guard_new(&a, &o), BG_OK);
    TU_EQ_I(shard_count(c, "gsc"), 3);
    TU_EQ_I(ts_count_keys(c, "{gsc:s*}:meta"), 3);
    TU_EQ_I(bg_remote_filter_open(&f, r, "gsc", BG_REMOTE_BITMAP), BG_OK);
    bg_remote_filter_stats st;
    TU_EQ_I(bg_remote_filter_stats_get(f, &st), BG_OK);
    TU_EQ_U(st.layers, 3);
    TU_EQ_U(st.seed, 7);
    TU_TRUE(st.items > NKEYS * 99 / 100 && st.items <= NKEYS);
    bg_guard *b = remote_guard(&ro, "gsc", BG_REMOTE_BITMAP, 0);
    bg_guard_counters gc; /* the shards as they are, not as asked */
    TU_EQ_I(bg_guard_counters_get(b, &gc), BG_OK);
    TU_EQ_U(gc.filter_shards, 3);
    all_present(b, "p", 0, NKEYS);
    TU_TRUE(absent_in(b, "absent", 0, 5000) >= 4975); /* p = 0.001 */
    ms_add(&src, "new", 1);
    TU_EQ_I(bg_guard_put(b, "new1", 4), BG_OK);
    TU_EQ_I(bg_guard_may_contain(a, "new1", 4), 1);
    rebuilds_drop_deleted(a, b, 2);
    TU_EQ_I(shard_count(c, "gsc"), 3);
    bg_remote_filter_close(f); /* stale: the rebuilds resized the shards */
    TU_EQ_I(bg_remote_filter_open(&f, r, "gsc", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_delete(r, "gsc", BG_REMOTE_BITMAP), BG_OK);
    bg_remote_filter_close(f);
    bg_remote_close(r);
    bg_guard_free(a);
    bg_guard_free(b);
    redisFree(c);
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

/* ---- module backend -------------------------------------------------------------- */

static void module_backend(void **state)
{
    (void)state;
    tu_ctx("module backend");
    ts_server ms;
    ts_start_module(&ms);
    ms_init(&src);
    ms_add_range(&src, "p", NKEYS);
    bg_remote_options ro = ropts(&ms);
    bg_guard *a = remote_guard(&ro, "mod", BG_REMOTE_MODULE, 0);
    all_present(a, "p", 0, NKEYS);
    bg_guard *b = remote_guard(&ro, "mod", BG_REMOTE_MODULE, 0);
    TU_EQ_I(atomic_load(&src.scans), 1);
    bg_guard_buf v = {0};
    TU_EQ_I(bg_guard_get(b, "p9", 2, &v), BG_GUARD_FOUND);
    char k[64];
    for (long i = 0; i < 200; i++) {
        size_t kl = ms_key(k, "absent", i);
        TU_EQ_I(bg_guard_get(b, k, kl, &v), BG_GUARD_ABSENT);
    }
    TU_TRUE(gc(b).filtered >= 190);
    ms_add(&src, "new", 1);
    TU_EQ_I(bg_guard_put(b, "new1", 4), BG_OK);
    TU_EQ_I(bg_guard_may_contain(a, "new1", 4), 1);

    /* Rebuilds drop deleted keys; a reader sees no false negative. */
    rebuilds_drop_deleted(a, b, 3);
    TU_EQ_U(gc(a).rebuilds, 3);
    TU_EQ_U(gc(a).rebuild_errors, 0);
    TU_EQ_I(bg_guard_may_contain(b, "new1", 4), 1);

    /* A put through the other instance while a rebuild runs, of a key its
     * scan did not see, is in the new filter; one rebuild at a time. */
    atomic_store(&src.scan_sleep_ms, 300);
    atomic_store(&bad, 0);
    long scans = atomic_load(&src.scans);
    pthread_t rt;
    TU_EQ_I(pthread_create(&rt, NULL, rebuild_thread, a), 0);
    while (atomic_load(&src.scans) == scans) /* begun: its scan sleeps */
        ms_sleep_ms(1);
    TU_EQ_I(bg_guard_rebuild(b), BG_EBUSY); /* pending in Redis: another client's */
    ms_add(&src, "late", 1);
    TU_EQ_I(bg_guard_put(b, "late1", 5), BG_OK);
    pthread_join(rt, NULL);
    TU_EQ_I(atomic_load(&bad), 0);
    atomic_store(&src.scan_sleep_ms, 0);
    TU_EQ_U(gc(a).rebuilds, 4);
    TU_EQ_I(bg_guard_may_contain(a, "late1", 5), 1);
    TU_EQ_I(bg_guard_get(a, "late1", 5, &v), BG_GUARD_FOUND);

    /* A failing scan aborts the rebuild in Redis: the next one can start. */
    atomic_store(&src.fail_scan, BG_EIO);
    TU_EQ_I(bg_guard_rebuild(a), BG_EIO);
    atomic_store(&src.fail_scan, 0);
    TU_EQ_I(bg_guard_rebuild(b), BG_OK);
    all_present(a, "p", 100, NKEYS);
    bg_remote_filter_options shape = {.backend = BG_REMOTE_MODULE, .capacity = 2 * NKEYS,
                                      .error_rate = 0.01};
    rebuild_taken_over(a, &ro, "mod", BG_REMOTE_MODULE, &shape);
    rebuild_abort_lost(a, &ro, "mod", BG_REMOTE_MODULE, &shape);
    all_present(b, "p", 100, NKEYS);

    /* The filter gone (a restart without its data, FLUSHALL, an eviction):
     * an error, never "absent" (BF.MEXISTS alone answers 0 for a missing
     * key), until a rebuild makes it again. */
    redisContext *raw = ts_raw(&ms);
    redisReply *rep = redisCommand(raw, "FLUSHALL");
    TU_TRUE(rep && rep->type == REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    uint64_t filtered = gc(b).filtered;
    for (long i = 0; i < 20; i++) {
        size_t kl = ms_key(k, i % 2 ? "p" : "absent", i);
        TU_EQ_I(bg_guard_get(b, k, kl, &v), BG_ENOTFOUND);
    }
    TU_EQ_U(gc(b).filtered, filtered);
    /* A key of another type in its place: an error too. */
    rep = redisCommand(raw, "SET mod notafilter");
    TU_TRUE(rep && rep->type == REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    TU_EQ_I(bg_guard_get(b, "absent1", 7, &v), BG_EREMOTE);
    TU_EQ_U(gc(b).filtered, filtered);
    rep = redisCommand(raw, "DEL mod");
    freeReplyObject(rep);
    redisFree(raw);
    TU_EQ_I(bg_guard_rebuild(a), BG_OK);
    all_present(b, "p", 100, NKEYS);
    bg_guard_free(a);
    bg_guard_free(b);
    bg_guard_buf_free(&v);
    ms_free(&src);
    ts_stop(&ms);
}

/* Module backend: bg_guard_new fills the filter under a staging key and
 * renames it when complete, so an instance that looks meanwhile finds no
 * filter, never a partly filled one (which would answer "absent" for keys
 * the source has); and a creation whose scan fails leaves nothing behind.
 * The watcher is a raw hiredis connection in a thread (no cmocka asserts
 * there): it counts what it saw. */
typedef struct watch {
    int port;
    atomic_int stop, failed;
    atomic_long absent, partial, complete;
} watch;

static void *watch_module(void *arg)
{
    watch *w = arg;
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", w->port, tv);
    size_t argc = NKEYS + 2;
    const char **argv = malloc(argc * sizeof *argv);
    size_t *lens = malloc(argc * sizeof *lens);
    char(*keys)[16] = malloc(NKEYS * sizeof *keys);
    if (!c || c->err || !argv || !lens || !keys) {
        atomic_store(&w->failed, 1);
        goto out;
    }
    argv[0] = "BF.MEXISTS";
    argv[1] = "mod";
    lens[0] = 10;
    lens[1] = 3;
    for (long i = 0; i < NKEYS; i++) {
        argv[i + 2] = keys[i];
        lens[i + 2] = ms_key(keys[i], "p", i);
    }
    while (!atomic_load(&w->stop)) {
        /* BF.MEXISTS answers 0s for a missing key: ask EXISTS first (once
         * there, the filter is never removed here). */
        redisReply *r = redisCommand(c, "EXISTS mod");
        if (!r || r->type != REDIS_REPLY_INTEGER) {
            atomic_store(&w->failed, 1);
            if (r)
                freeReplyObject(r);
            break;
        }
        long long there = r->integer;
        freeReplyObject(r);
        if (!there) {
            atomic_fetch_add(&w->absent, 1);
            ms_sleep_ms(2);
            continue;
        }
        r = redisCommandArgv(c, (int)argc, argv, lens);
        if (!r) {
            atomic_store(&w->failed, 1);
            break;
        }
        if (r->type == REDIS_REPLY_ARRAY && r->elements == NKEYS) {
            size_t ones = 0;
            for (size_t i = 0; i < r->elements; i++)
                ones += r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer;
            atomic_fetch_add(ones == NKEYS ? &w->complete : &w->partial, 1);
        } else {
            atomic_store(&w->failed, 1);
        }
        freeReplyObject(r);
        ms_sleep_ms(2);
    }
out:
    if (c)
        redisFree(c);
    free(argv);
    free(lens);
    free(keys);
    return NULL;
}

static void module_creation_is_atomic(void **state)
{
    (void)state;
    tu_ctx("module backend: creation is atomic");
    ts_server ms;
    ts_start_module(&ms);
    ms_init(&src);
    ms_add_range(&src, "p", NKEYS);
    bg_remote_options ro = ropts(&ms);
    redisContext *c = ts_raw(&ms);

    /* A scan that fails halfway: bg_guard_new fails, Redis is left empty
     * (no half-filled "mod" for the next instance to open). */
    atomic_store(&src.fail_scan, BG_EIO);
    bg_guard_options o = {.source = ms_callbacks(&src), .filter_kind = BG_GUARD_FILTER_REMOTE,
                          .filter = {.error_rate = 0.001}, .remote = &ro,
                          .remote_name = "mod", .remote_backend = BG_REMOTE_MODULE};
    bg_guard *g = NULL;
    TU_EQ_I(bg_guard_new(&g, &o), BG_EIO);
    TU_EQ_I(ts_count_keys(c, "*"), 0);
    atomic_store(&src.fail_scan, 0);

    /* A slow scan, watched from another connection throughout. */
    watch w = {.port = ms.port};
    atomic_store(&src.scan_sleep_ms, 300);
    pthread_t t;
    TU_EQ_I(pthread_create(&t, NULL, watch_module, &w), 0);
    g = remote_guard(&ro, "mod", BG_REMOTE_MODULE, 0);
    ms_sleep_ms(100);
    atomic_store(&w.stop, 1);
    pthread_join(t, NULL);
    atomic_store(&src.scan_sleep_ms, 0);
    print_message("watcher: %ld absent, %ld partial, %ld complete\n", atomic_load(&w.absent),
                  atomic_load(&w.partial), atomic_load(&w.complete));
    TU_EQ_I(atomic_load(&w.failed), 0);
    TU_TRUE(atomic_load(&w.absent) > 10); /* it watched during the scan */
    TU_EQ_I(atomic_load(&w.partial), 0);
    TU_TRUE(atomic_load(&w.complete) > 0);
    TU_EQ_I(ts_int(c, "PTTL mod"), -1);
    TU_EQ_I(ts_count_keys(c, "*"), 1);
    all_present(g, "p", 0, NKEYS);
    bg_guard_free(g);
    redisFree(c);
    ms_free(&src);
    ts_stop(&ms);
}

/* ---- both backends: a lost commit ------------------------------------------------ */

/* Deletes p<from>..p<to-1> from the source, then rebuilds through `a` with
 * the next `times` commits losing `fault`: the rebuild must end with
 * `want`, and (when BG_OK) `b` must then miss (nearly) all deleted keys. */
static void rebuild_with_lost_commit(bg_guard *a, bg_guard *b, int script, int fault, int times,
                                     int want, long from, long to)
{
    char k[64];
    for (long i = from; i < to; i++) {
        size_t kl = ms_key(k, "p", i);
        TU_TRUE(ms_map_del(&src.map, k, kl));
    }
    sf_arm(script, fault, times);
    int rc = bg_guard_rebuild(a);
    int fired = sf_disarm();
    TU_EQ_I(rc, want);
    TU_EQ_I(fired, times);
    if (want == BG_OK)
        TU_TRUE(absent_in(b, "p", from, to) >= (to - from) * 9 / 10);
    all_present(b, "p", to, NKEYS);
}

/* The commit of a rebuild is its one step that a network fault can turn
 * into "did it happen?": a lost request (not run) or a lost reply (run).
 * Either way one retry commits it, or finds it committed, and the scan's
 * work is kept; two losses in a row give BG_ECONN, abort the rebuild, and
 * leave nothing pending, so the other instance's next rebuild works. */
static void lost_commit(const bg_remote_options *ro, const char *name, bg_remote_backend be)
{
    int script = be == BG_REMOTE_MODULE ? BG__SCRIPT_MODULE_REBUILD_COMMIT
                                        : BG__SCRIPT_REBUILD_COMMIT;
    ms_init(&src);
    ms_add_range(&src, "p", NKEYS);
    bg_guard *a = remote_guard(ro, name, be, 0);
    bg_guard *b = remote_guard(ro, name, be, 0);
    rebuild_with_lost_commit(a, b, script, BG__REMOTE_TESTING_LOSE_REPLY, 1, BG_OK, 0, 100);
    rebuild_with_lost_commit(a, b, script, BG__REMOTE_TESTING_LOSE_REQUEST, 1, BG_OK, 100, 200);
    TU_EQ_U(gc(a).rebuilds, 2);
    rebuild_with_lost_commit(a, b, script, BG__REMOTE_TESTING_LOSE_REQUEST, 2, BG_ECONN, 200, 300);
    TU_EQ_U(gc(a).rebuild_errors, 1);
    TU_TRUE(absent_in(b, "p", 200, 300) == 0); /* not committed */
    TU_EQ_I(bg_guard_rebuild(b), BG_OK);
    TU_TRUE(absent_in(a, "p", 200, 300) >= 90);
    all_present(a, "p", 300, NKEYS);
    bg_guard_free(a);
    bg_guard_free(b);
    ms_free(&src);
}

static void bitmap_lost_commit(void **state)
{
    (void)state;
    tu_ctx("bitmap: a rebuild's lost commit is retried");
    bg_remote_options ro = ropts(&srv);
    lost_commit(&ro, "lost", BG_REMOTE_BITMAP);
}

static void module_lost_commit(void **state)
{
    (void)state;
    tu_ctx("module: a creation's or a rebuild's lost commit is retried");
    ts_server ms;
    ts_start_module(&ms);
    bg_remote_options ro = ropts(&ms);
    /* Creation: the staged filter's commit loses its reply (it ran: the
     * retry finds the staging key gone, the guard opens the name) or its
     * request (the retry commits). Either way bg_guard_new succeeds. */
    const int kinds[2] = {BG__REMOTE_TESTING_LOSE_REPLY, BG__REMOTE_TESTING_LOSE_REQUEST};
    const char *names[2] = {"lostc1", "lostc2"};
    redisContext *c = ts_raw(&ms);
    ms_init(&src);
    ms_add_range(&src, "p", NKEYS);
    for (int i = 0; i < 2; i++) {
        sf_arm(BG__SCRIPT_MODULE_STAGE_COMMIT, kinds[i], 1);
        bg_guard *g = remote_guard(&ro, names[i], BG_REMOTE_MODULE, 0);
        TU_EQ_I(sf_disarm(), 1);
        all_present(g, "p", 0, NKEYS);
        TU_EQ_I(ts_int(c, "EXISTS %s", names[i]), 1);
        bg_guard_free(g);
    }
    TU_EQ_I(ts_count_keys(c, "*"), 2); /* the two names, no staging key */
    redisFree(c);
    ms_free(&src);
    lost_commit(&ro, "lost", BG_REMOTE_MODULE);
    ts_stop(&ms);
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
