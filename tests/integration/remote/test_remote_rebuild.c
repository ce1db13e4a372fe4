/* SPDX-License-Identifier: BSD-3-Clause */
/* Rebuilds (remote_fixture.h): a bitmap filter rebuilt while others add,
 * lost bit arrays, the rebuild lease, and the module backend's rebuild when
 * $BLOOMGATE_MODULE names bloomgate.so. */
#include "remote_fixture.h"
#include "remote/remote_internal.h" /* bg__remote_filter_drop: deletes the filter a handle is on */

#include <bloomgate/remote.h>

#include "script_fault.h" /* lost requests and replies */

#include <time.h>

/* Lets the adder go; adds the source (set 6, keys 0..n-1) to w's rebuild
 * interleaved with set 8 (keys 0..n-1) through a handle opened before,
 * then waits for the adder to finish without error. */
static void fill_while_adding(adder *ad, bg_remote_filter *w, bg_remote_filter *a, size_t n)
{
    TU_EQ_I(write(ad->go[1], "g", 1), 1);
    for (size_t i = 0; i < n; i += 100) {
        add_set(w, 6, i, 100, 1);
        add_set(a, 8, i, 100, 0);
    }
    int status;
    TU_EQ_I(waitpid(ad->pid, &status, 0), ad->pid);
    TU_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < 2; i++) {
        close(ad->ready[i]);
        close(ad->go[i]);
    }
}

/* Rebuild with a new shape while another handle and another process add:
 * every key added during the rebuild is there after the commit. */
static void bitmap_rebuild(void **state)
{
    (void)state;
    tu_ctx("bitmap rebuild");
    enum { SRC = 1000, DURING = SRC, CHILD = 2000 };
    bg_remote *r = conn(&srv, 0), *rb = conn(&srv, 0);
    bg_remote_filter *a, *w;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 2000,
                                  .error_rate = 0.01, .seed = 1};
    TU_EQ_I(bg_remote_filter_create(&a, r, "rb", &o), BG_OK);
    add_set(a, 6, 0, SRC, 0); /* the source's keys, added before */
    TU_EQ_I(bg_remote_filter_open(&w, rb, "rb", BG_REMOTE_BITMAP), BG_OK);

    adder ad;
    adder_start(&ad, srv.port, "rb", BG_REMOTE_BITMAP, CHILD);
    bg_remote_filter_options no = {.capacity = 10000, .error_rate = 0.001, .seed = 2};
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, &no), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, &no), BG_EEXIST);
    fill_while_adding(&ad, w, a, SRC); /* and DURING keys of set 8 */
    expect_all(a, 8, DURING); /* queries read the current generation */
    /* The commit runs but its reply is lost: a retry finds it done. */
    sf_arm(BG__SCRIPT_REBUILD_COMMIT, BG__REMOTE_TESTING_LOSE_REPLY, 1);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_ECONN);
    TU_EQ_I(sf_disarm(), 1);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_EINVAL);
    TU_EQ_U(bg_remote_filter_seed(w), 2);

    expect_all(w, 6, SRC);
    expect_all(w, 8, DURING);
    expect_all(w, 9, CHILD);
    TU_EQ_I(bg_remote_filter_contains(a, "x", 1), BG_ESTALE); /* reshaped */
    redisContext *c = ts_raw(&srv);
    TU_EQ_I(ts_count_keys(c, "{rb}*"), 2);

    /* Same shape: old handles go on; abort; a publish cancels a rebuild. */
    bg_remote_filter_close(a);
    TU_EQ_I(bg_remote_filter_open(&a, r, "rb", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{rb}*"), 3);
    add_set(w, 6, 0, SRC, 1);
    add_set(a, 10, 0, 200, 0);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_OK);
    expect_all(a, 6, SRC);
    expect_all(a, 10, 200);
    TU_EQ_I(ts_count_keys(c, "{rb}*"), 2);

    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(a, NULL), BG_EEXIST);
    TU_EQ_I(bg_remote_filter_rebuild_abort(a), BG_OK); /* anyone's: a dead rebuilder */
    TU_EQ_I(bg_remote_filter_rebuild_abort(a), BG_ENOTFOUND);
    TU_EQ_I(ts_count_keys(c, "{rb}*"), 2);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, NULL, NULL, 0, NULL), 0);
    tu_batch b;
    tu_batch_init(&b, 10);
    tu_batch_fill(&b, 1, 6, 0, 10);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), BG_ESTALE);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_add(a, "y", 1), BG_OK); /* knows the rebuild is gone */

    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    bg_filter *lf; /* a's shape, so that a stays valid */
    bg_filter_options lo = {.variant = BG_VARIANT_STANDARD, .bits = bg_remote_filter_bits(a),
                            .hashes = bg_remote_filter_hashes(a), .seed = bg_remote_filter_seed(a)};
    TU_EQ_I(bg_filter_new(&lf, &lo), BG_OK);
    TU_EQ_I(bg_remote_filter_publish(r, "rb", BG_REMOTE_BITMAP, lf), BG_OK);
    bg_filter_free(lf);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), BG_ESTALE);
    TU_EQ_I(ts_count_keys(c, "{rb}*"), 2);
    TU_EQ_I(bg_remote_filter_add(a, "z", 1), BG_OK);
    tu_batch_free(&b);

    TU_EQ_I(bg__remote_filter_drop(a), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{rb}*"), 0);
    redisFree(c);
    bg_remote_filter_close(a);
    bg_remote_filter_close(w);
    bg_remote_close(r);
    bg_remote_close(rb);
}

/* A bit array lost under a filter (deleted, evicted under maxmemory,
 * overwritten by another client) is an error, never read as zeros nor grown
 * back nearly empty; a pending rebuild whose bit array is lost is
 * cancelled, never committed without the keys added before the loss. */
static void raw_ok(redisContext *c, const char *cmd, const char *key)
{
    redisReply *rep = redisCommand(c, "%s %s x", cmd, key);
    TU_TRUE(rep && rep->type != REDIS_REPLY_ERROR);
    freeReplyObject(rep);
}

static void bitmap_lost_bits(void **state)
{
    (void)state;
    tu_ctx("bitmap: lost bit arrays");
    bg_remote *r = conn(&srv, 0), *r2 = conn(&srv, 0);
    redisContext *c = ts_raw(&srv);
    bg_remote_filter *f, *g;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 2000,
                                  .error_rate = 0.01};
    TU_EQ_I(bg_remote_filter_create(&f, r, "lost", &o), BG_OK);
    add_set(f, 20, 0, 300, 0);
    char bits[64];
    snprintf(bits, sizeof bits, "{lost}:bits:%llu",
             (unsigned long long)bg_remote_filter_generation(f));
    /* Overwritten by a short string: every call refuses, nothing grows. */
    raw_ok(c, "SET", bits);
    TU_EQ_I(bg_remote_filter_contains(f, "k", 1), BG_EREMOTE);
    TU_TRUE(strstr(bg_remote_errstr(r), "wrong size") || strstr(bg_remote_errstr(r), "bytes"));
    TU_EQ_I(bg_remote_filter_add(f, "k", 1), BG_EREMOTE);
    bg_remote_filter_stats st;
    TU_EQ_I(bg_remote_filter_stats_get(f, &st), BG_EREMOTE);
    TU_EQ_I(ts_int(c, "STRLEN %s", bits), 1);
    /* Deleted: not found, and not made again by an add. */
    TU_EQ_I(ts_int(c, "DEL %s", bits), 1);
    TU_EQ_I(bg_remote_filter_contains(f, "k", 1), BG_ENOTFOUND);
    TU_EQ_I(bg_remote_filter_add(f, "k", 1), BG_ENOTFOUND);
    TU_EQ_I(ts_int(c, "EXISTS %s", bits), 0);
    /* Another type in its place. */
    raw_ok(c, "LPUSH", bits);
    TU_EQ_I(bg_remote_filter_contains(f, "k", 1), BG_EREMOTE);
    TU_TRUE(strstr(bg_remote_errstr(r), "WRONGTYPE") != NULL);
    TU_EQ_I(ts_int(c, "DEL %s", bits), 1);
    TU_EQ_I(bg_remote_filter_delete(r, "lost", BG_REMOTE_BITMAP), BG_OK);
    bg_remote_filter_close(f);

    /* A rebuild whose bit array is deleted midway: the next add cancels it
     * (and still reaches the current bits), the rebuilder learns it, and no
     * key added through anyone is lost. */
    TU_EQ_I(bg_remote_filter_create(&f, r, "lost", &o), BG_OK);
    TU_EQ_I(bg_remote_filter_open(&g, r2, "lost", BG_REMOTE_BITMAP), BG_OK);
    add_set(f, 21, 0, 100, 0);
    TU_EQ_I(bg_remote_filter_rebuild_begin(f, NULL), BG_OK);
    add_set(f, 21, 0, 100, 1);
    add_set(g, 22, 0, 100, 0); /* both generations */
    redisReply *next = redisCommand(c, "HGET {lost}:meta next");
    TU_TRUE(next && next->type == REDIS_REPLY_STRING);
    snprintf(bits, sizeof bits, "{lost}:bits:%s", next->str);
    freeReplyObject(next);
    TU_EQ_I(ts_int(c, "DEL %s", bits), 1);
    add_set(g, 23, 0, 100, 0);
    TU_EQ_I(ts_int(c, "EXISTS %s", bits), 0); /* not grown back */
    TU_EQ_I(ts_int(c, "HEXISTS {lost}:meta next"), 0);
    tu_batch b;
    tu_batch_init(&b, 100);
    tu_batch_fill(&b, 1, 21, 0, 100);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(f, b.keys, b.lens, 100, NULL), BG_ESTALE);
    TU_EQ_I(bg_remote_filter_rebuild_commit(f), BG_EINVAL); /* no rebuild on the handle */
    expect_all(g, 21, 100);
    expect_all(g, 22, 100);
    expect_all(g, 23, 100);

    /* Lost after the last add: the commit refuses and cancels it. */
    TU_EQ_I(bg_remote_filter_rebuild_begin(f, NULL), BG_OK);
    add_set(f, 21, 0, 100, 1);
    next = redisCommand(c, "HGET {lost}:meta next");
    TU_TRUE(next && next->type == REDIS_REPLY_STRING);
    snprintf(bits, sizeof bits, "{lost}:bits:%s", next->str);
    freeReplyObject(next);
    raw_ok(c, "SET", bits); /* overwritten: the wrong size */
    TU_EQ_I(bg_remote_filter_rebuild_commit(f), BG_ESTALE);
    TU_EQ_I(ts_int(c, "EXISTS %s", bits), 0);
    TU_EQ_I(ts_int(c, "HEXISTS {lost}:meta next"), 0);
    expect_all(f, 21, 100);
    expect_all(g, 23, 100);
    tu_batch_free(&b);
    TU_EQ_I(bg__remote_filter_drop(f), BG_OK);
    bg_remote_filter_close(f);
    bg_remote_filter_close(g);
    redisFree(c);
    bg_remote_close(r);
    bg_remote_close(r2);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* The server's clock in ms (TIME), the clock the lease scripts use. */
static long long server_ms(redisContext *c)
{
    redisReply *r = redisCommand(c, "TIME");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    long long ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return ms;
}

/* A pending rebuild's deadline (meta field next_lease), in the server's ms. */
static long long lease_deadline(redisContext *c, const char *meta)
{
    redisReply *r = redisCommand(c, "HGET %s next_lease", meta);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    long long dl = atoll(r->str);
    freeReplyObject(r);
    return dl;
}

/* The rebuild's lease (remote.h): rebuild_add keeps a rebuild alive; one
 * whose rebuilder stopped is deleted by the next add after its lease ran
 * out (no more double writes; the late rebuilder gets BG_ESTALE); one past
 * its lease that nobody deleted can still be committed; begin replaces a
 * rebuild whose lease ran out, not a live one. */
static void bitmap_rebuild_lease(void **state)
{
    (void)state;
    tu_ctx("bitmap rebuild lease");
    bg_remote *r = conn(&srv, 0), *rb = conn(&srv, 0);
    bg_remote_filter *a, *w;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 4000,
                                  .error_rate = 0.01, .seed = 1};
    TU_EQ_I(bg_remote_filter_create(&a, r, "rl", &o), BG_OK);
    TU_EQ_I(bg_remote_filter_open(&w, rb, "rl", BG_REMOTE_BITMAP), BG_OK);
    redisContext *c = ts_raw(&srv);

    TU_EQ_I(bg_remote_filter_set_rebuild_lease(NULL, 100), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_set_rebuild_lease(w, 0), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_set_rebuild_lease(w, BG_REMOTE_MAX_REBUILD_LEASE_MS + 1), BG_EINVAL);

    /* Alive: 2.5 s of rebuilding under a 2 s lease, renewed every 100 ms,
     * with adds through another handle in between. Each renewal moves the
     * deadline to the server's now + lease, checked against the server's
     * clock read around it (which no stall of this host can fail). The lease
     * is far above the 100 ms between renewals because a loaded CI host
     * stalled a 500 ms one past its deadline once; only a stall of 1.9 s
     * between a renewal and the next add could now end it early. */
    enum { ALIVE_LEASE_MS = 2000, ROUNDS = 25 };
    TU_EQ_I(bg_remote_filter_set_rebuild_lease(w, ALIVE_LEASE_MS), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    for (size_t i = 0; i < ROUNDS; i++) {
        long long before = server_ms(c);
        add_set(w, 6, i * 100, 100, 1);
        long long after = server_ms(c), dl = lease_deadline(c, "{rl}:meta");
        TU_TRUE(dl >= before + ALIVE_LEASE_MS && dl <= after + ALIVE_LEASE_MS);
        add_set(a, 8, i * 100, 100, 0);
        sleep_ms(100);
    }
    TU_EQ_I(ts_int(c, "HEXISTS {rl}:meta next"), 1);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_OK);
    expect_all(a, 6, ROUNDS * 100);
    expect_all(a, 8, ROUNDS * 100);

    /* Run out: the rebuilder stops calling; nothing happens until an add
     * comes, which deletes the rebuild and writes the current bits. The
     * lease is 1 s, so that the add right after begin falls within it even
     * on a stalled host. */
    TU_EQ_I(bg_remote_filter_set_rebuild_lease(w, 1000), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    add_set(a, 10, 0, 100, 0); /* within the lease: both generations */
    TU_EQ_I(ts_count_keys(c, "{rl}*"), 3);
    long long dl = lease_deadline(c, "{rl}:meta");
    sleep_ms(1200);
    TU_TRUE(server_ms(c) > dl);
    TU_EQ_I(ts_int(c, "HEXISTS {rl}:meta next"), 1);
    add_set(a, 10, 100, 100, 0);
    TU_EQ_I(ts_int(c, "HEXISTS {rl}:meta next"), 0);
    TU_EQ_I(ts_int(c, "HEXISTS {rl}:meta next_lease"), 0);
    TU_EQ_I(ts_count_keys(c, "{rl}*"), 2);
    expect_all(a, 10, 200);
    expect_all(w, 10, 200);
    tu_batch b;
    tu_batch_init(&b, 10);
    tu_batch_fill(&b, 1, 6, 0, 10);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), BG_ESTALE);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_EINVAL);

    /* Past its lease but untouched: the rebuilder may go on and commit. */
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    sleep_ms(300);
    add_set(w, 6, 0, 1500, 1);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_OK);
    expect_all(a, 6, 1500);

    /* begin: refused while another rebuild's lease runs, replaces it after. */
    TU_EQ_I(bg_remote_filter_set_rebuild_lease(w, 60000), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(a, NULL), BG_EEXIST);
    TU_EQ_I(bg_remote_filter_rebuild_abort(w), BG_OK);
    TU_EQ_I(bg_remote_filter_set_rebuild_lease(w, 100), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    sleep_ms(300);
    TU_EQ_I(bg_remote_filter_rebuild_begin(a, NULL), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{rl}*"), 3); /* w's bits are gone, a's are there */
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), BG_ESTALE);
    add_set(a, 6, 0, 1500, 1);
    add_set(a, 8, 0, 1500, 1);
    add_set(a, 10, 0, 200, 1);
    TU_EQ_I(bg_remote_filter_rebuild_commit(a), BG_OK);
    expect_all(w, 6, 1500);
    expect_all(w, 10, 200);
    tu_batch_free(&b);

    /* A sharded filter passes its lease to every shard's rebuild. */
    bg_remote_filter *m = NULL, *m2 = NULL;
    bg_remote_filter_options so = {.backend = BG_REMOTE_BITMAP, .capacity = 1000,
                                   .error_rate = 0.01, .shards = 2};
    TU_EQ_I(bg_remote_filter_create(&m, r, "rls", &so), BG_OK);
    TU_EQ_I(bg_remote_filter_open(&m2, rb, "rls", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_set_rebuild_lease(m, 100), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(m, NULL), BG_OK);
    TU_EQ_I(ts_int(c, "HEXISTS {rls:s0}:meta next"), 1);
    TU_EQ_I(ts_int(c, "HEXISTS {rls:s1}:meta next"), 1);
    sleep_ms(300);
    add_set(m2, 11, 0, 100, 0); /* reaches both shards: both run out */
    TU_EQ_I(ts_int(c, "HEXISTS {rls:s0}:meta next"), 0);
    TU_EQ_I(ts_int(c, "HEXISTS {rls:s1}:meta next"), 0);
    TU_EQ_I(bg__remote_filter_drop(m), BG_OK);
    bg_remote_filter_close(m);
    bg_remote_filter_close(m2);

    TU_EQ_I(bg__remote_filter_drop(a), BG_OK);
    redisFree(c);
    bg_remote_filter_close(a);
    bg_remote_filter_close(w);
    bg_remote_close(r);
    bg_remote_close(rb);
}

/* The first key of `pattern` (KEYS), into buf. */
static void first_key(redisContext *c, const char *pattern, char *buf, size_t size)
{
    redisReply *rep = redisCommand(c, "KEYS %s", pattern);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 1);
    snprintf(buf, size, "%s", rep->element[0]->str);
    freeReplyObject(rep);
}

/* A module filter rebuilt with a new capacity and error rate while another
 * handle and another process add: every key added during the rebuild is
 * there after the commit, keys only the old filter held are gone, readers
 * read the complete old filter until then, and the name keeps its time to
 * live. Then abort, the lease, and a drop during a rebuild. */
static void module_rebuild(void **state)
{
    (void)state;
    tu_ctx("module rebuild");
    enum { SRC = 1000, GONE = 1000, DURING = SRC, CHILD = 2000 };
    ts_server s;
    ts_start_module(&s);
    bg_remote *r = conn(&s, 0), *rb = conn(&s, 0);
    redisContext *c = ts_raw(&s);
    bg_remote_filter *a, *w;
    bg_remote_filter_options o = {.backend = BG_REMOTE_MODULE, .capacity = 3000,
                                  .error_rate = 0.01};
    TU_EQ_I(bg_remote_filter_create(&a, r, "mr", &o), BG_OK);
    add_set(a, 6, 0, SRC, 0);  /* the source's keys */
    add_set(a, 7, 0, GONE, 0); /* keys deleted from the source since */
    TU_EQ_I(bg_remote_filter_open(&w, rb, "mr", BG_REMOTE_MODULE), BG_OK);

    /* Refused: no shape (Redis does not report the error rate), a bitmap
     * shape, a seed; nothing is left behind. */
    bg_remote_filter_options no = {.capacity = 10000, .error_rate = 0.001};
    bg_remote_filter_options bad = no;
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_EINVAL);
    bad.backend = BG_REMOTE_BITMAP;
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, &bad), BG_EINVAL);
    bad = no;
    bad.seed = 3;
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, &bad), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_EINVAL);
    TU_EQ_I(ts_count_keys(c, "*"), 1);

    adder ad;
    adder_start(&ad, s.port, "mr", BG_REMOTE_MODULE, CHILD);
    TU_EQ_I(bg_remote_filter_expire(a, 600000), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, &no), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, &no), BG_EEXIST);
    TU_EQ_I(bg_remote_filter_rebuild_begin(a, &no), BG_EEXIST);
    TU_EQ_I(ts_count_keys(c, "{mr}:rebuild"), 1);
    TU_EQ_I(ts_count_keys(c, "{mr}:rebuild:*"), 1);
    char next[128];
    first_key(c, "{mr}:rebuild:*", next, sizeof next);
    long long ttl = ts_int(c, "PTTL %s", next);
    TU_TRUE(ttl > 0 && ttl <= BG_REMOTE_REBUILD_LEASE_MS);
    TU_TRUE(ts_int(c, "PTTL {mr}:rebuild") > 0);
    fill_while_adding(&ad, w, a, SRC); /* and DURING keys of set 8 */
    /* Until the commit, queries read the old filter, which has everything. */
    expect_all(a, 7, GONE);
    expect_all(a, 8, DURING);
    TU_EQ_I(ts_int(c, "BF.EXISTS %s %s", next, "never-added"), 0);
    /* The commit runs but its reply is lost: a retry finds it done. */
    sf_arm(BG__SCRIPT_MODULE_REBUILD_COMMIT, BG__REMOTE_TESTING_LOSE_REPLY, 1);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_ECONN);
    TU_EQ_I(sf_disarm(), 1);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_EINVAL);

    expect_all(a, 6, SRC);
    expect_all(a, 8, DURING);
    expect_all(a, 9, CHILD);
    tu_batch b;
    tu_batch_init(&b, 100);
    int64_t gone = 0;
    for (size_t i = 0; i < GONE; i += 100) {
        tu_batch_fill(&b, 1, 7, i, 100);
        gone += bg_remote_filter_contains_many(a, b.keys, b.lens, 100, NULL);
    }
    TU_TRUE(gone < 20); /* false positives only: ~0.1% of 1000 */
    bg_remote_filter_stats st;
    TU_EQ_I(bg_remote_filter_stats_get(a, &st), BG_OK);
    TU_EQ_U(st.capacity, 10000);
    ttl = ts_int(c, "PTTL mr");
    TU_TRUE(ttl > 500000 && ttl <= 600000);
    /* The marker now says the rebuild is done, for a lease. */
    TU_EQ_I(ts_count_keys(c, "*"), 2);
    ttl = ts_int(c, "PTTL {mr}:rebuild");
    TU_TRUE(ttl > 0 && ttl <= BG_REMOTE_REBUILD_LEASE_MS);
    redisReply *rep = redisCommand(c, "HGETALL {mr}:rebuild");
    assert_non_null(rep);
    TU_EQ_I(rep->elements, 2);
    TU_TRUE(strcmp(rep->element[0]->str, "done") == 0 &&
            strcmp(rep->element[1]->str, next) == 0);
    freeReplyObject(rep);

    /* A commit whose request was lost, retried after someone aborted the
     * rebuild: stale, and the filter is the committed one still. */
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, &no), BG_OK);
    sf_arm(BG__SCRIPT_MODULE_REBUILD_COMMIT, BG__REMOTE_TESTING_LOSE_REQUEST, 1);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_ECONN);
    TU_EQ_I(sf_disarm(), 1);
    TU_EQ_I(bg_remote_filter_rebuild_abort(a), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_ESTALE);
    expect_all(a, 9, CHILD);
    TU_EQ_I(ts_count_keys(c, "*"), 1);

    /* Abort: anyone's, by a handle that began none (a dead rebuilder). */
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, &no), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_abort(a), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_abort(a), BG_ENOTFOUND);
    TU_EQ_I(ts_count_keys(c, "*"), 1);
    tu_batch_fill(&b, 1, 6, 0, 10);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), BG_ESTALE);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_add(a, "y", 1), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, &no), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_abort(w), BG_OK);
    TU_EQ_I(ts_count_keys(c, "*"), 1);

    /* The lease: adds renew it; a rebuilder that stops past it loses its
     * rebuild (Redis expires it), and adds go on to the filter alone. */
    TU_EQ_I(bg_remote_filter_set_rebuild_lease(w, 0), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_set_rebuild_lease(w, 400), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, &no), BG_OK);
    first_key(c, "{mr}:rebuild:*", next, sizeof next);
    for (int i = 0; i < 4; i++) {
        sleep_ms(200);
        TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), i ? 0 : 10);
    }
    TU_EQ_I(bg_remote_filter_add(a, "both", 4), BG_OK);
    TU_EQ_I(ts_int(c, "BF.EXISTS %s both", next), 1);
    sleep_ms(600);
    TU_EQ_I(ts_count_keys(c, "*"), 1);
    TU_EQ_I(bg_remote_filter_add(a, "alone", 5), BG_OK);
    TU_EQ_I(bg_remote_filter_contains(a, "alone", 5), 1);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), BG_ESTALE);

    /* A drop takes a pending rebuild with it; its commit then fails. */
    TU_EQ_I(bg_remote_filter_set_rebuild_lease(w, BG_REMOTE_REBUILD_LEASE_MS), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, &no), BG_OK);
    TU_EQ_I(bg__remote_filter_drop(a), BG_OK);
    TU_EQ_I(ts_count_keys(c, "*"), 0);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_ENOTFOUND);
    TU_EQ_I(ts_count_keys(c, "*"), 0);

    tu_batch_free(&b);
    redisFree(c);
    bg_remote_filter_close(a);
    bg_remote_filter_close(w);
    bg_remote_close(r);
    bg_remote_close(rb);
    ts_stop(&s);
}

int main(void)
{
    signal(SIGPIPE, SIG_DFL); /* the library must cope without SIG_IGN */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bitmap_rebuild),
        cmocka_unit_test(bitmap_rebuild_lease),
        cmocka_unit_test(bitmap_lost_bits),
        cmocka_unit_test(module_rebuild),
    };
    return cmocka_run_group_tests(tests, srv_setup, srv_teardown);
}
