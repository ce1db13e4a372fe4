/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cluster's topology tests: a slot resharded from one master to
 * another while a forked client adds and checks keys, and a master that
 * dies and whose replica takes over, under the same client handle. */
#include "cluster_test.h"

#include <fcntl.h>
#include <time.h>

#include "common/clock.h"

/* The node of cl[] that owns `slot` (it answers a key there without MOVED). */
static int owner_of(const char *key)
{
    for (int i = 0; i < CL_N; i++) {
        redisContext *c = ts_raw(&cl[i]);
        redisReply *rep = redisCommand(c, "EXISTS %s", key);
        int mine = rep && rep->type == REDIS_REPLY_INTEGER;
        if (rep)
            freeReplyObject(rep);
        redisFree(c);
        if (mine)
            return i;
    }
    fail_msg("nobody owns %s", key);
    return -1;
}

static void node_id(int i, char *out, size_t n)
{
    redisContext *c = ts_raw(&cl[i]);
    redisReply *rep = redisCommand(c, "CLUSTER MYID");
    assert_true(rep && rep->type == REDIS_REPLY_STRING);
    snprintf(out, n, "%s", rep->str);
    freeReplyObject(rep);
    redisFree(c);
}

static void ok_reply(redisContext *c, redisReply *rep, const char *what)
{
    (void)c;
    if (!rep || rep->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", what, rep && rep->str ? rep->str : "no reply");
    freeReplyObject(rep);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void reshard_while_clients_run(void **state)
{
    (void)state;
    tu_ctx("cluster resharding of one slot while clients run");
    bg_remote *r = cconn();
    bg_remote_filter *f = NULL;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 100000,
                                  .error_rate = P, .seed = 5, .shards = 8};
    TU_EQ_I(bg_remote_filter_create(&f, r, "rs", &o), BG_OK);

    int go[2], back[2];
    TU_EQ_I(pipe(go), 0);
    TU_EQ_I(pipe(back), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Adds 50 new keys, checks every key added so far, until told to
         * stop (and at least 20 rounds after). Exit 0, or 1 on an error,
         * 2 on a false negative. */
        close(go[1]);
        close(back[0]);
        fcntl(go[0], F_SETFL, O_NONBLOCK);
        bg_remote *cr = cconn();
        bg_remote_filter *cf = NULL;
        if (bg_remote_filter_open(&cf, cr, "rs", BG_REMOTE_BITMAP) != BG_OK)
            _exit(1);
        tu_batch b;
        tu_batch_init(&b, 2000);
        uint8_t res[2000];
        uint64_t added = 0;
        int code = 0, after = -1;
        while (code == 0 && after < 20) {
            char c;
            if (after < 0 && read(go[0], &c, 1) == 1)
                after = 0;
            if (after >= 0)
                after++;
            tu_batch_fill(&b, 0, 3, added, 50);
            if (bg_remote_filter_add_many(cf, b.keys, b.lens, b.count, NULL) < 0) {
                fprintf(stderr, "add: %s\n", bg_remote_errstr(cr));
                code = 1;
                break;
            }
            added += 50;
            /* The last 2000 keys (all of them at first). */
            uint64_t from = added > 2000 ? added - 2000 : 0;
            tu_batch_fill(&b, 0, 3, from, (size_t)(added - from));
            int64_t h = bg_remote_filter_contains_many(cf, b.keys, b.lens, b.count, res);
            if (h < 0) {
                fprintf(stderr, "contains: %s\n", bg_remote_errstr(cr));
                code = 1;
            } else if ((uint64_t)h != added - from) {
                code = 2;
            }
        }
        char line[64];
        int n = snprintf(line, sizeof line, "%" PRIu64 " %" PRIu64 "\n",
                         bg__remote_testing_redirects(cr), added);
        (void)!write(back[1], line, (size_t)n);
        _exit(code);
    }
    close(go[0]);
    close(back[1]);

    /* Move the slot of shard 3 to another master, the way redis-cli
     * --cluster reshard does, with pauses so the client meets every stage. */
    unsigned slot = bg__key_slot("{rs:s3}", 7);
    int src = owner_of("{rs:s3}:meta"), dst = (src + 1) % CL_N;
    char sid[64], did[64];
    node_id(src, sid, sizeof sid);
    node_id(dst, did, sizeof did);
    redisContext *cs = ts_raw(&cl[src]), *cd = ts_raw(&cl[dst]);
    sleep_ms(200);
    ok_reply(cd, redisCommand(cd, "CLUSTER SETSLOT %u IMPORTING %s", slot, sid), "IMPORTING");
    ok_reply(cs, redisCommand(cs, "CLUSTER SETSLOT %u MIGRATING %s", slot, did), "MIGRATING");
    sleep_ms(200);
    for (;;) {
        redisReply *keys = redisCommand(cs, "CLUSTER GETKEYSINSLOT %u 100", slot);
        assert_true(keys && keys->type == REDIS_REPLY_ARRAY);
        size_t nk = keys->elements;
        if (nk == 0) {
            freeReplyObject(keys);
            break;
        }
        const char *argv[108];
        size_t lens[108];
        char port[16];
        snprintf(port, sizeof port, "%d", cl[dst].port);
        const char *head[7] = {"MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS"};
        for (int i = 0; i < 7; i++) {
            argv[i] = head[i];
            lens[i] = strlen(head[i]);
        }
        for (size_t i = 0; i < nk; i++) {
            argv[7 + i] = keys->element[i]->str;
            lens[7 + i] = keys->element[i]->len;
        }
        ok_reply(cs, redisCommandArgv(cs, (int)(7 + nk), argv, lens), "MIGRATE");
        freeReplyObject(keys);
    }
    sleep_ms(200); /* the source has no keys left: ASK */
    /* Hand the slot over to the source first and to the destination only
     * 150 ms later. redis-cli tells the destination first; a tool that does
     * not leaves a window in which the source answers MOVED to the
     * destination and the destination, still importing, MOVED back. The
     * client must wait that out (BG__REDIRECTS), not give up after 16
     * redirections in a millisecond, as it once did on a fast machine. */
    int order[CL_N] = {src, dst};
    for (int i = 0, n = 2; i < CL_N; i++)
        if (i != src && i != dst)
            order[n++] = i;
    for (int i = 0; i < CL_N; i++) {
        redisContext *c = ts_raw(&cl[order[i]]);
        ok_reply(c, redisCommand(c, "CLUSTER SETSLOT %u NODE %s", slot, did), "SETSLOT NODE");
        redisFree(c);
        if (i == 0)
            sleep_ms(150);
    }
    sleep_ms(100); /* MOVED for the client's stale map */
    TU_EQ_I(owner_of("{rs:s3}:meta"), dst);
    /* The client may have died: no SIGPIPE for this test (main's SIG_DFL is
     * there to show that the library never raises one). */
    signal(SIGPIPE, SIG_IGN);
    (void)!write(go[1], "x", 1);
    signal(SIGPIPE, SIG_DFL);
    int st;
    TU_EQ_I(waitpid(pid, &st, 0), pid);
    char line[64] = {0};
    (void)!read(back[0], line, sizeof line - 1);
    unsigned long long redirects = 0, added = 0;
    sscanf(line, "%llu %llu", &redirects, &added);
    print_message("client: %llu keys added, %llu redirections followed\n", added, redirects);
    TU_TRUE(WIFEXITED(st));
    TU_EQ_I(WEXITSTATUS(st), 0);
    TU_TRUE(redirects > 0);
    close(go[1]);
    close(back[0]);

    /* A fresh client, and this one (stale map: MOVED), see every key. */
    tu_batch b;
    tu_batch_init(&b, 2000);
    for (uint64_t i = 0; i < added; i += 2000) {
        size_t n = added - i < 2000 ? (size_t)(added - i) : 2000;
        tu_batch_fill(&b, 0, 3, i, n);
        TU_EQ_I(bg_remote_filter_contains_many(f, b.keys, b.lens, b.count, NULL), (int64_t)n);
    }
    TU_EQ_I(bg__remote_filter_drop(f), BG_OK);
    tu_batch_free(&b);
    redisFree(cs);
    redisFree(cd);
    bg_remote_filter_close(f);
    bg_remote_close(r);
}

/* The connects to a dead master that its holds (cluster.c, HELD-DOWN
 * MASTERS: 100, 200, 400, 800, then 1000 ms) allow in `ms`: one at the
 * start and one as each runs out. */
static unsigned connects_allowed(uint64_t ms)
{
    unsigned n = 1;
    for (uint64_t hold = 100, at = hold; at <= ms; at += hold) {
        n++;
        hold = hold * 2 < 1000 ? hold * 2 : 1000;
    }
    return n;
}

/* A master dies (SIGKILL) and its replica takes over (CLUSTER FAILOVER
 * TAKEOVER, which is what the cluster does on its own after
 * cluster-node-timeout): no MOVED ever comes from the dead master, yet the
 * same client handle must find the new master by itself, and the filter
 * must have every key. Meanwhile calls fail (BG_ECONN), never "absent".
 * Last in the group (test_cluster.c, main): it leaves one master dead. */
void master_fails_over(void **state)
{
    (void)state;
    tu_ctx("a master dies and its replica takes over");
    enum { N = 8000, MORE = 2000 };
    bg_remote *r = cconn();
    bg_remote_filter *f = NULL;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 20000,
                                  .error_rate = P, .seed = 9, .shards = 8};
    TU_EQ_I(bg_remote_filter_create(&f, r, "fo", &o), BG_OK);
    tu_batch b;
    tu_batch_init(&b, N);
    tu_batch_fill(&b, 0, 4, 0, N);
    TU_TRUE(bg_remote_filter_add_many(f, b.keys, b.lens, N, NULL) >= 0);
    int victim = owner_of("{fo:s0}:meta");
    ts_server rep;
    tc_add_replica(&rep, cl, CL_N, victim);

    ts_kill(&cl[victim]);
    TU_EQ_I(bg_remote_filter_contains_many(f, b.keys, b.lens, N, NULL), BG_ECONN);
    TU_EQ_I(bg_remote_filter_contains_many(f, b.keys, b.lens, N, NULL), BG_ECONN);

    /* Held down (cluster.c, HELD-DOWN MASTERS): 50 calls, 2 ms apart, fail,
     * and the dead master is tried only as its holds of 100, 200 ms ... run
     * out, not on every call: however long the calls took on this host, no
     * more connects than the holds allow in that time (one more as slack),
     * and every other call was held. */
    enum { HELD_CALLS = 50 };
    uint64_t connects = bg__remote_testing_connects(r), t0 = bg__now_ms();
    int held = 0;
    for (int i = 0; i < HELD_CALLS; i++) {
        TU_EQ_I(bg_remote_filter_contains_many(f, b.keys, b.lens, 100, NULL), BG_ECONN);
        held += strstr(bg_remote_errstr(r), "Connection refused (held down for") != NULL;
        sleep_ms(2);
    }
    uint64_t took = bg__now_ms() - t0, tried = bg__remote_testing_connects(r) - connects;
    print_message("held down: %d calls in %" PRIu64 " ms, %d held, %" PRIu64 " connects (%u "
                  "allowed)\n", HELD_CALLS, took, held, tried, connects_allowed(took) + 1);
    TU_TRUE(tried <= connects_allowed(took) + 1);
    TU_TRUE(tried < HELD_CALLS / 2); /* else the time allowed them all: nothing shown */
    TU_TRUE(held >= HELD_CALLS - (int)tried); /* the others tried a connect */

    redisContext *c = ts_raw(&rep);
    ok_reply(c, redisCommand(c, "CLUSTER FAILOVER TAKEOVER"), "FAILOVER TAKEOVER");
    uint64_t redirects = bg__remote_testing_redirects(r);
    int64_t h = BG_ECONN;
    int failed = 0;
    for (int t = 0; t < 250; t++) { /* 5 s: the other masters learn it in ms */
        h = bg_remote_filter_contains_many(f, b.keys, b.lens, N, NULL);
        if (h != BG_ECONN)
            break;
        failed++;
        if (failed < 4 || failed % 50 == 0)
            print_message("  %s\n", bg_remote_errstr(r));
        sleep_ms(20);
    }
    if (h < 0)
        print_message("  %s: %s\n", bg_err_name((int)h), bg_remote_errstr(r));
    print_message("after the takeover: %d calls failed, then %" PRId64 " of %d keys found,"
                  " %" PRIu64 " re-routes\n",
                  failed, h, N, bg__remote_testing_redirects(r) - redirects);
    TU_EQ_I(h, N);
    TU_TRUE(bg__remote_testing_redirects(r) > redirects);
    tu_batch_fill(&b, 0, 5, 0, MORE);
    TU_EQ_I(bg_remote_filter_add_many(f, b.keys, b.lens, MORE, NULL), MORE);
    TU_EQ_I(bg_remote_filter_contains_many(f, b.keys, b.lens, MORE, NULL), MORE);
    TU_EQ_I(ts_int(c, "EXISTS {fo:s0}:meta"), 1); /* the promoted replica serves it */
    redisFree(c);
    tu_batch_free(&b);
    bg_remote_filter_close(f);
    bg_remote_close(r);
    ts_stop(&rep);
}
