/* SPDX-License-Identifier: BSD-3-Clause */
/* test_guard_remote's sharded tests: a guard over a sharded bitmap filter
 * made by another client, and one that creates, publishes and rebuilds its
 * own. */
#include "guard_remote_test.h"
#include "script_fault.h" /* a publish lost part-way, in sharded_create */

/* ---- bitmap: a sharded filter ---------------------------------------------------- */

/* A guard over a sharded filter made by someone else (another seed than the
 * guard's): it fills it by a rebuild, resizes it by another after deletes,
 * and a reader guard sees no false negative meanwhile. */
void sharded_rebuild(void **state)
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
long absent_in(bg_guard *g, const char *prefix, long from, long to)
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
void sharded_create(void **state)
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
