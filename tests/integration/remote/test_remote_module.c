/* SPDX-License-Identifier: BSD-3-Clause */
/* The module backend (remote_fixture.h), when $BLOOMGATE_MODULE names
 * bloomgate.so (skipped otherwise): the same operations through BF.*, and
 * staged creation. */
#include "remote_fixture.h"
#include "remote/remote_internal.h" /* bg__remote_filter_drop: deletes the filter a handle is on */

#include <bloomgate/remote.h>

#include "script_fault.h" /* lost requests and replies, at stage commit */

#include <time.h>

static void module_backend(void **state)
{
    (void)state;
    tu_ctx("module backend");
    enum { N = 10000, B = 500 };
    ts_server s;
    ts_start_module(&s);
    bg_remote *r = conn(&s, 0);
    bg_remote_filter *f, *g;
    bg_remote_filter_options o = {.backend = BG_REMOTE_MODULE, .capacity = N,
                                  .error_rate = 0.01, .nonscaling = 1};
    TU_EQ_I(bg_remote_filter_create(&f, r, "mod", &o), BG_OK);
    TU_EQ_I(bg_remote_filter_create(&g, r, "mod", &o), BG_EEXIST);
    bg_remote_filter_options bad = o;
    bad.seed = 1;
    TU_EQ_I(bg_remote_filter_create(&g, r, "mod2", &bad), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_test_and_add(f, "alice", 5), 1);
    TU_EQ_I(bg_remote_filter_test_and_add(f, "alice", 5), 0);
    TU_EQ_I(bg_remote_filter_contains(f, "alice", 5), 1);
    TU_EQ_I(bg_remote_filter_contains(f, "bob", 3), 0);

    tu_batch b;
    tu_batch_init(&b, B);
    /* One process adds, another (this one) checks. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        bg_remote *cr = NULL;
        bg_remote_options co = {.port = s.port};
        bg_remote_filter *cf = NULL;
        int ok = bg_remote_connect(&cr, &co) == BG_OK &&
                 bg_remote_filter_open(&cf, cr, "mod", BG_REMOTE_MODULE) == BG_OK;
        for (size_t i = 0; ok && i < N; i += B) {
            tu_batch_fill(&b, 1, 8, i, B);
            ok = bg_remote_filter_add_many(cf, b.keys, b.lens, B, NULL) >= 0;
        }
        _exit(ok ? 0 : 1);
    }
    int st_child;
    TU_EQ_I(waitpid(pid, &st_child, 0), pid);
    TU_TRUE(WIFEXITED(st_child) && WEXITSTATUS(st_child) == 0);
    bg_remote *r2 = conn(&s, 0);
    TU_EQ_I(bg_remote_filter_open(&g, r2, "mod", BG_REMOTE_MODULE), BG_OK);
    uint8_t res[B];
    for (size_t i = 0; i < N; i += B) {
        tu_batch_fill(&b, 1, 8, i, B);
        TU_EQ_I(bg_remote_filter_contains_many(g, b.keys, b.lens, B, res), B);
    }
    { /* a batch larger than the query script's 1000 keys per BF.MEXISTS */
        enum { BIG = 2500 };
        tu_batch big;
        tu_batch_init(&big, BIG);
        tu_batch_fill(&big, 1, 8, 1234, BIG);
        uint8_t *bres = malloc(BIG);
        assert_non_null(bres);
        TU_EQ_I(bg_remote_filter_contains_many(g, big.keys, big.lens, BIG, bres), BIG);
        for (size_t i = 0; i < BIG; i++)
            TU_EQ_I(bres[i], 1);
        free(bres);
        tu_batch_free(&big);
    }
    /* A user who may not run BG.MEXISTS (as on RedisBloom, which has no
     * such command) queries through the script: the same answers. */
    redisContext *c = ts_raw(&s);
    redisReply *acl = redisCommand(c, "ACL SETUSER nobg on nopass ~* +@all -bg.mexists");
    TU_TRUE(acl && acl->type == REDIS_REPLY_STATUS);
    freeReplyObject(acl);
    bg_remote *rs = NULL;
    bg_remote_options so = {.port = s.port, .username = "nobg", .password = "x"};
    TU_EQ_I(bg_remote_connect(&rs, &so), BG_OK);
    bg_remote_filter *h;
    TU_EQ_I(bg_remote_filter_open(&h, rs, "mod", BG_REMOTE_MODULE), BG_OK);
    uint8_t res2[B];
    for (size_t i = 0; i < N; i += 5 * B) {
        tu_batch_fill(&b, 1, 8, i, B);
        TU_EQ_I(bg_remote_filter_contains_many(h, b.keys, b.lens, B, res2), B);
        fill(&b, 9, i, B);
        int64_t want = bg_remote_filter_contains_many(g, b.keys, b.lens, B, res);
        TU_EQ_I(bg_remote_filter_contains_many(h, b.keys, b.lens, B, res2), want);
        TU_TRUE(memcmp(res, res2, B) == 0);
    }
    int64_t fp = 0, probes = 200000;
    for (int64_t i = 0; i < probes; i += B) {
        fill(&b, 9, (uint64_t)i, B);
        fp += bg_remote_filter_contains_many(g, b.keys, b.lens, B, NULL);
    }
    /* Filled to capacity, NONSCALING: one layer at exactly p (sampling sigma
     * ~2%). A scaling stack's first layer is sized for p / 2, as RedisBloom's
     * is, and measures about 0.47p here. */
    double rate = (double)fp / (double)probes;
    print_message("module FP rate %.5f (p = 0.01)\n", rate);
    TU_IN_RANGE_D(rate, 0.8 * 0.01, 1.2 * 0.01);
    bg_remote_filter_stats st;
    TU_EQ_I(bg_remote_filter_stats_get(g, &st), BG_OK);
    TU_EQ_I(st.backend, BG_REMOTE_MODULE);
    TU_EQ_U(st.capacity, N);
    TU_TRUE(st.items > N * 9 / 10 && st.items <= N + 1);
    TU_TRUE(st.layers >= 1 && st.bytes > 0);

    TU_EQ_I(bg_remote_filter_expire(g, 60000), BG_OK);
    TU_TRUE(ts_int(c, "PTTL mod") > 50000);
    TU_EQ_I(bg__remote_filter_drop(f), BG_OK);
    /* A dropped filter is not re-created by an add, nor read as "every key
     * absent" (BF.MEXISTS's 0s for a missing key: QUERIES in module.c). */
    TU_EQ_I(bg_remote_filter_add(g, "x", 1), BG_ENOTFOUND);
    TU_EQ_I(ts_int(c, "EXISTS mod"), 0);
    TU_EQ_I(bg_remote_filter_contains(g, "alice", 5), BG_ENOTFOUND);
    TU_EQ_I(bg_remote_filter_contains_many(g, b.keys, b.lens, B, res), BG_ENOTFOUND);
    TU_EQ_I(bg_remote_filter_contains(h, "alice", 5), BG_ENOTFOUND); /* by script */
    /* Nor a key of another type put in its place. */
    redisReply *set = redisCommand(c, "SET mod notafilter");
    TU_TRUE(set && set->type == REDIS_REPLY_STATUS);
    freeReplyObject(set);
    TU_EQ_I(bg_remote_filter_contains(g, "alice", 5), BG_EREMOTE);
    TU_TRUE(strstr(bg_remote_errstr(r2), "WRONGTYPE") != NULL);
    TU_EQ_I(bg_remote_filter_contains(h, "alice", 5), BG_EREMOTE);
    TU_TRUE(strstr(bg_remote_errstr(rs), "WRONGTYPE") != NULL);
    TU_EQ_I(ts_int(c, "DEL mod"), 1);
    bg_remote_filter_close(h);
    bg_remote_close(rs);
    bg_remote_filter_close(f);
    TU_EQ_I(bg_remote_filter_open(&f, r, "mod", BG_REMOTE_MODULE), BG_ENOTFOUND);
    TU_EQ_I(bg__remote_filter_drop(g), BG_ENOTFOUND);
    /* By name: a module filter, then nothing. */
    TU_EQ_I(bg_remote_filter_create(&f, r, "mod", &o), BG_OK);
    bg_remote_filter_close(f);
    TU_EQ_I(bg_remote_filter_delete(r, "mod", BG_REMOTE_MODULE), BG_OK);
    TU_EQ_I(ts_int(c, "EXISTS mod"), 0);
    TU_EQ_I(bg_remote_filter_delete(r, "mod", BG_REMOTE_MODULE), BG_ENOTFOUND);
    redisFree(c);
    bg_remote_filter_close(g);
    bg_remote_close(r2);
    bg_remote_close(r);
    tu_batch_free(&b);
    ts_stop(&s);
}

/* Staged creation (module backend): the filter is invisible until commit,
 * then it is `name` with everything added while staged; a commit after
 * someone else created `name` loses and leaves theirs alone. */
static void module_staged_create(void **state)
{
    (void)state;
    tu_ctx("module backend, staged creation");
    enum { N = 5000, B = 500 };
    ts_server s;
    ts_start_module(&s);
    bg_remote *r = conn(&s, 0), *r2 = conn(&s, 0);
    redisContext *c = ts_raw(&s);
    bg_remote_filter *f = NULL, *g = NULL;
    bg_remote_filter_options o = {.backend = BG_REMOTE_MODULE, .capacity = N,
                                  .error_rate = 0.01};

    /* Refused: the bitmap backend, shards, bad sizes, NULLs. */
    bg_remote_filter_options bad = o;
    bad.backend = BG_REMOTE_BITMAP;
    TU_EQ_I(bg_remote_filter_stage(&f, r, "st", &bad), BG_EINVAL);
    bad = o;
    bad.shards = 2;
    TU_EQ_I(bg_remote_filter_stage(&f, r, "st", &bad), BG_EINVAL);
    bad = o;
    bad.error_rate = 1;
    TU_EQ_I(bg_remote_filter_stage(&f, r, "st", &bad), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_stage(&f, r, "{st}", &o), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_stage(NULL, r, "st", &o), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_stage_commit(NULL), BG_EINVAL);
    TU_TRUE(f == NULL);
    TU_EQ_I(ts_count_keys(c, "*"), 0);

    /* Staged: only the staging key exists, with a time to live, and nobody
     * can open the name. */
    TU_EQ_I(bg_remote_filter_stage(&f, r, "st", &o), BG_OK);
    TU_EQ_I(ts_int(c, "EXISTS st"), 0);
    TU_EQ_I(ts_count_keys(c, "{st}:staging:*"), 1);
    TU_EQ_I(bg_remote_filter_open(&g, r2, "st", BG_REMOTE_MODULE), BG_ENOTFOUND);
    TU_EQ_I(bg_remote_filter_expire(f, 60000), BG_EINVAL);
    tu_batch b;
    tu_batch_init(&b, B);
    for (size_t i = 0; i < N; i += B) {
        tu_batch_fill(&b, 1, 8, i, B);
        TU_TRUE(bg_remote_filter_add_many(f, b.keys, b.lens, B, NULL) >= 0);
        TU_EQ_I(ts_int(c, "EXISTS st"), 0);
    }
    redisReply *rep = redisCommand(c, "KEYS {st}:staging:*");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 1);
    char staging[128];
    snprintf(staging, sizeof staging, "%s", rep->element[0]->str);
    freeReplyObject(rep);
    long long ttl = ts_int(c, "PTTL %s", staging);
    TU_TRUE(ttl > 0 && ttl <= BG_REMOTE_STAGE_TTL_MS);
    /* Adds renew the TTL (at most once a second). */
    TU_EQ_I(ts_int(c, "PEXPIRE %s 5000", staging), 1);
    struct timespec pause = {1, 100000000};
    nanosleep(&pause, NULL);
    TU_EQ_I(bg_remote_filter_add(f, "late", 4), BG_OK);
    TU_TRUE(ts_int(c, "PTTL %s", staging) > 60000);
    TU_EQ_I(bg_remote_filter_contains(f, "late", 4), 1);

    /* Commit: the name holds everything, without a TTL; the handle goes on
     * as a handle on the name. */
    TU_EQ_I(bg_remote_filter_stage_commit(f), BG_OK);
    TU_EQ_I(bg_remote_filter_stage_commit(f), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_stage_abort(f), BG_EINVAL); /* committed: not staged */
    TU_EQ_I(bg_remote_filter_stage_abort(NULL), BG_EINVAL);
    TU_EQ_I(ts_count_keys(c, "{st}:staging:*"), 0);
    TU_EQ_I(ts_int(c, "EXISTS st"), 1);
    TU_EQ_I(ts_int(c, "PTTL st"), -1);
    TU_EQ_I(bg_remote_filter_open(&g, r2, "st", BG_REMOTE_MODULE), BG_OK);
    uint8_t res[B];
    for (size_t i = 0; i < N; i += B) {
        tu_batch_fill(&b, 1, 8, i, B);
        TU_EQ_I(bg_remote_filter_contains_many(g, b.keys, b.lens, B, res), B);
    }
    TU_EQ_I(bg_remote_filter_contains(g, "late", 4), 1);
    TU_EQ_I(bg_remote_filter_add(f, "after", 5), BG_OK);
    TU_EQ_I(bg_remote_filter_contains(g, "after", 5), 1);
    bg_remote_filter_stats st;
    TU_EQ_I(bg_remote_filter_stats_get(g, &st), BG_OK);
    TU_EQ_U(st.capacity, N);
    TU_TRUE(st.items > N * 9 / 10 && st.items <= N + 2);
    TU_EQ_I(bg_remote_filter_expire(f, 60000), BG_OK);
    TU_EQ_I(ts_int(c, "PERSIST st"), 1);
    bg_remote_filter_close(f);

    /* A commit whose reply is lost ran: a retry finds the staging key gone
     * (BG_ENOTFOUND), and the name holds the filter. One whose request is
     * lost did not: a retry commits. */
    const int kinds[2] = {BG__REMOTE_TESTING_LOSE_REPLY, BG__REMOTE_TESTING_LOSE_REQUEST};
    const char *lost[2] = {"st-reply", "st-request"};
    for (int i = 0; i < 2; i++) {
        bg_remote_filter *h = NULL;
        TU_EQ_I(bg_remote_filter_stage(&h, r, lost[i], &o), BG_OK);
        TU_EQ_I(bg_remote_filter_add(h, "kept", 4), BG_OK);
        sf_arm(BG__SCRIPT_MODULE_STAGE_COMMIT, kinds[i], 1);
        TU_EQ_I(bg_remote_filter_stage_commit(h), BG_ECONN);
        TU_EQ_I(sf_disarm(), 1);
        TU_EQ_I(ts_int(c, "EXISTS %s", lost[i]), i == 0);
        TU_EQ_I(bg_remote_filter_stage_commit(h), i == 0 ? BG_ENOTFOUND : BG_OK);
        TU_EQ_I(ts_int(c, "BF.EXISTS %s kept", lost[i]), 1);
        TU_EQ_I(ts_int(c, "PTTL %s", lost[i]), -1);
        TU_EQ_I(ts_int(c, "DEL %s", lost[i]), 1);
        bg_remote_filter_close(h);
    }
    TU_EQ_I(ts_count_keys(c, "{st-*"), 0);

    /* A second creator, staged meanwhile, loses at commit: its staged
     * filter is deleted and the name keeps the first one's keys only. */
    TU_EQ_I(bg_remote_filter_stage(&f, r, "st", &o), BG_OK);
    for (size_t i = 0; i < 1000; i += B) {
        fill(&b, 10, i, B); /* keys the first filter never saw */
        TU_TRUE(bg_remote_filter_add_many(f, b.keys, b.lens, B, NULL) >= 0);
    }
    TU_EQ_I(bg_remote_filter_stage_commit(f), BG_EEXIST);
    TU_EQ_I(ts_count_keys(c, "{st}:staging:*"), 0);
    int64_t hits = 0;
    for (size_t i = 0; i < 1000; i += B) {
        fill(&b, 10, i, B); /* keys the first filter never saw */
        hits += bg_remote_filter_contains_many(g, b.keys, b.lens, B, NULL);
    }
    TU_TRUE(hits < 50); /* false positives only: ~1% of 1000 */
    bg_remote_filter_close(f);

    /* A staged filter that expired or was dropped: adds and commit get
     * BG_ENOTFOUND, and nothing appears under the name. */
    TU_EQ_I(bg__remote_filter_drop(g), BG_OK);
    TU_EQ_I(bg_remote_filter_stage(&f, r, "st", &o), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{st}:staging:*"), 1);
    rep = redisCommand(c, "EVAL %s 0", "for _, k in ipairs(redis.call('KEYS', '{st}:staging:*'))"
                                       " do redis.call('DEL', k) end return 1");
    assert_non_null(rep);
    freeReplyObject(rep);
    TU_EQ_I(bg_remote_filter_add(f, "x", 1), BG_ENOTFOUND);
    TU_EQ_I(bg_remote_filter_stage_commit(f), BG_ENOTFOUND);
    TU_EQ_I(ts_int(c, "EXISTS st"), 0);
    bg_remote_filter_close(f);
    /* Abort: the creator gives up; its staging key goes at once. */
    TU_EQ_I(bg_remote_filter_stage(&f, r, "st", &o), BG_OK);
    TU_EQ_I(bg_remote_filter_add(f, "x", 1), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{st}:staging:*"), 1);
    TU_EQ_I(bg_remote_filter_stage_abort(f), BG_OK);
    TU_EQ_I(ts_count_keys(c, "*"), 0);
    TU_EQ_I(bg_remote_filter_stage_commit(f), BG_ENOTFOUND);
    bg_remote_filter_close(f);

    redisFree(c);
    bg_remote_filter_close(g);
    bg_remote_close(r2);
    bg_remote_close(r);
    tu_batch_free(&b);
    ts_stop(&s);
}

int main(void)
{
    signal(SIGPIPE, SIG_DFL); /* the library must cope without SIG_IGN */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(module_backend),
        cmocka_unit_test(module_staged_create),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
