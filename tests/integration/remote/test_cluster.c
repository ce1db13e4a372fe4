/* SPDX-License-Identifier: BSD-3-Clause */
/* A sharded bitmap filter over a 3-master Redis Cluster that the test
 * starts itself (ports 23000-23999, redis-cli --cluster create): no false
 * negatives across processes, the FP rate, a resizing rebuild, and one slot
 * holding a shard resharded from one master to another (the two masters
 * redirecting to each other for 150 ms on the way) while a forked
 * client adds and checks keys (it must see no error and no false negative).
 * The caller's own commands (bg_remote_command) go to the master of their
 * key. With bloomgate.so loaded in every master ($BLOOMGATE_MODULE), the module
 * backend's staged creation, rebuild, publish and fetch over the cluster.
 * Last, a master dies and its replica takes over: meanwhile the client
 * holds the dead master down instead of connecting on every call, and then
 * the same client handle must find the new master and every key.
 *
 * This file holds the setup, the routing, cross-process, module and seed
 * tests and main; the publish tests are in cluster_publish.c, resharding and
 * failover in cluster_reshard.c (cluster_test.h declares what they share). */
#include "cluster_test.h"

ts_server cl[CL_N];

static int setup(void **state)
{
    (void)state;
    tc_start(cl, CL_N);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tc_stop(cl, CL_N);
    return 0;
}

bg_remote *cconn(void)
{
    bg_remote *r = NULL;
    bg_remote_options o = {.port = cl[0].port, .cluster = 1, .command_timeout_ms = 5000};
    int rc = bg_remote_connect(&r, &o);
    if (rc != BG_OK)
        fail_msg("cluster connect: %s: %s", bg_err_name(rc), bg_remote_errstr(r));
    return r;
}

static void slot_known(void **state)
{
    (void)state;
    tu_ctx("CRC16 slots");
    /* The cluster spec's examples, and hash tags. */
    TU_EQ_I(bg__key_slot("123456789", 9), 0x31C3 & 16383);
    TU_EQ_I(bg__key_slot("{user1000}.following", 20), bg__key_slot("user1000", 8));
    TU_EQ_I(bg__key_slot("foo{}{bar}", 10), bg__key_slot("foo{}{bar}", 10));
    TU_EQ_I(bg__key_slot("foo{{bar}}zap", 13), bg__key_slot("{bar", 4));
    redisContext *c = ts_raw(&cl[0]);
    const char *keys[] = {"a", "hello", "{rs:s0}:meta", "foo{}{bar}", "x{y}z"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        TU_EQ_I(ts_int(c, "CLUSTER KEYSLOT %s", keys[i]),
                bg__key_slot(keys[i], strlen(keys[i])));
    redisFree(c);
}

/* The caller's own commands on a cluster connection go to the master of
 * the key in argv[1]: 60 keys spread over every master, each written
 * through the connection is on the master that owns its slot (a raw
 * connection to any other one is told MOVED), and read back through it. */
static void own_commands_routed(void **state)
{
    (void)state;
    tu_ctx("bg_remote_command routed by argv[1]");
    bg_remote *r = cconn();
    redisContext *raw[CL_N];
    int per_master[CL_N] = {0};
    for (int j = 0; j < CL_N; j++)
        raw[j] = ts_raw(&cl[j]);
    for (int i = 0; i < 60; i++) {
        char key[32], value[32];
        snprintf(key, sizeof key, "own:%d", i);
        snprintf(value, sizeof value, "v%d", i);
        const char *set[] = {"SET", key, value};
        size_t set_lens[] = {3, strlen(key), strlen(value)};
        redisReply *rep;
        TU_EQ_I(bg_remote_command(r, 3, set, set_lens, &rep), BG_OK);
        freeReplyObject(rep);
        int holders = 0;
        for (int j = 0; j < CL_N; j++) {
            redisReply *e = redisCommand(raw[j], "EXISTS %s", key);
            assert_non_null(e);
            if (e->type == REDIS_REPLY_INTEGER && e->integer == 1) {
                holders++;
                per_master[j]++;
            } else {
                TU_TRUE(e->type == REDIS_REPLY_ERROR && strncmp(e->str, "MOVED ", 6) == 0);
            }
            freeReplyObject(e);
        }
        TU_EQ_I(holders, 1);
        const char *get[] = {"GET", key};
        size_t get_lens[] = {3, strlen(key)};
        TU_EQ_I(bg_remote_command(r, 2, get, get_lens, &rep), BG_OK);
        TU_TRUE(rep->type == REDIS_REPLY_STRING && strcmp(rep->str, value) == 0);
        freeReplyObject(rep);
        /* Gone again: later tests count every key of the cluster. */
        const char *del[] = {"DEL", key};
        TU_EQ_I(bg_remote_command(r, 2, del, get_lens, &rep), BG_OK);
        TU_TRUE(rep->type == REDIS_REPLY_INTEGER && rep->integer == 1);
        freeReplyObject(rep);
    }
    for (int j = 0; j < CL_N; j++) {
        TU_TRUE(per_master[j] > 0);
        redisFree(raw[j]);
    }
    bg_remote_close(r);
}

/* How many of the masters hold a shard of the sharded filter `name`, by
 * the client's slot map. */
int masters_holding(const bg_remote *r, const char *name, uint32_t shards)
{
    int used[CL_N] = {0};
    for (uint32_t j = 0; j < shards; j++) {
        char k[64];
        snprintf(k, sizeof k, "{%s:s%u}:meta", name, j);
        size_t ni = r->slot_node[bg__key_slot(k, strlen(k))];
        for (int i = 0; i < CL_N; i++)
            used[i] |= (int)(r->nodes[ni].port == cl[i].port);
    }
    int n = 0;
    for (int i = 0; i < CL_N; i++)
        n += used[i];
    return n;
}

static void sharded_cross_process(void **state)
{
    (void)state;
    tu_ctx("sharded filter over the cluster");
    bg_remote *r = cconn();
    bg_remote_filter *f = NULL;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = N_KEYS,
                                  .error_rate = P, .seed = 11, .shards = 8};
    TU_EQ_I(bg_remote_filter_create(&f, r, "sh", &o), BG_OK);
    bg_remote_filter *dup = NULL;
    TU_EQ_I(bg_remote_filter_create(&dup, r, "sh", &o), BG_EEXIST);
    TU_TRUE(dup == NULL);
    /* The shards' masters: more than one holds some. */
    TU_TRUE(masters_holding(r, "sh", 8) >= 2);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        bg_remote *cr = cconn();
        bg_remote_filter *cf = NULL;
        int ok = bg_remote_filter_open(&cf, cr, "sh", BG_REMOTE_BITMAP) == BG_OK;
        tu_batch b;
        tu_batch_init(&b, 1000);
        for (uint64_t i = 0; ok && i < N_KEYS; i += 1000) {
            tu_batch_fill(&b, 0, 1, i, 1000);
            ok = bg_remote_filter_add_many(cf, b.keys, b.lens, b.count, NULL) >= 0;
        }
        _exit(ok ? 0 : 1);
    }
    int st;
    TU_EQ_I(waitpid(pid, &st, 0), pid);
    TU_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    bg_remote *r2 = cconn();
    bg_remote_filter *g = NULL;
    TU_EQ_I(bg_remote_filter_open(&g, r2, "sh", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_U(bg_remote_filter_bits(g), bg_remote_filter_bits(f));
    TU_TRUE(bg_remote_filter_bits(g) > 8 * 9000);
    tu_batch b;
    tu_batch_init(&b, 1000);
    uint8_t res[1000];
    for (uint64_t i = 0; i < N_KEYS; i += 1000) {
        tu_batch_fill(&b, 0, 1, i, 1000);
        TU_EQ_I(bg_remote_filter_contains_many(g, b.keys, b.lens, b.count, res), 1000);
    }
    uint64_t fp = 0, probes = 100000;
    for (uint64_t i = 0; i < probes; i += 1000) {
        tu_batch_fill(&b, 0, 2, i, 1000);
        int64_t h = bg_remote_filter_contains_many(g, b.keys, b.lens, b.count, res);
        TU_TRUE(h >= 0);
        fp += (uint64_t)h;
    }
    double rate = (double)fp / (double)probes;
    print_message("sharded FP rate %.5f (p = %.3f)\n", rate, P);
    TU_IN_RANGE_D(rate, 0.8 * P, 1.2 * P);
    bg_remote_filter_stats s;
    TU_EQ_I(bg_remote_filter_stats_get(g, &s), BG_OK);
    TU_EQ_U(s.layers, 8);
    TU_EQ_U(s.bits, bg_remote_filter_bits(g));

    /* Rebuilt over the cluster, resized: each shard's rebuild on its own
     * master, every key still there, through a handle that saw the swap and
     * one reopened after it (the old shape is refused). */
    uint64_t bits0 = bg_remote_filter_bits(g);
    bg_remote_filter_options bigger = {.capacity = 2 * N_KEYS, .error_rate = P / 10, .seed = 11};
    TU_EQ_I(bg_remote_filter_rebuild_begin(g, &bigger), BG_OK);
    for (uint64_t i = 0; i < N_KEYS; i += 1000) {
        tu_batch_fill(&b, 0, 1, i, 1000);
        TU_TRUE(bg_remote_filter_rebuild_add_many(g, b.keys, b.lens, b.count, NULL) >= 0);
    }
    TU_EQ_I(bg_remote_filter_rebuild_commit(g), BG_OK);
    TU_TRUE(bg_remote_filter_bits(g) > 2 * bits0);
    tu_batch_fill(&b, 0, 1, 0, 1000);
    TU_EQ_I(bg_remote_filter_contains_many(f, b.keys, b.lens, b.count, res), BG_ESTALE);
    bg_remote_filter_close(f);
    TU_EQ_I(bg_remote_filter_open(&f, r, "sh", BG_REMOTE_BITMAP), BG_OK);
    for (uint64_t i = 0; i < N_KEYS; i += 1000) {
        tu_batch_fill(&b, 0, 1, i, 1000);
        TU_EQ_I(bg_remote_filter_contains_many(g, b.keys, b.lens, b.count, res), 1000);
        TU_EQ_I(bg_remote_filter_contains_many(f, b.keys, b.lens, b.count, res), 1000);
    }

    TU_EQ_I(bg__remote_filter_drop(f), BG_OK);
    bg_remote_filter *h = NULL;
    TU_EQ_I(bg_remote_filter_open(&h, r2, "sh", BG_REMOTE_BITMAP), BG_ENOTFOUND);
    tu_batch_free(&b);
    bg_remote_filter_close(g);
    bg_remote_filter_close(f);
    bg_remote_close(r2);
    bg_remote_close(r);
}

/* Keys matching `pattern` on every master. */
long long cluster_keys(const char *pattern)
{
    long long n = 0;
    for (int i = 0; i < CL_N; i++) {
        redisContext *c = ts_raw(&cl[i]);
        n += ts_count_keys(c, pattern);
        redisFree(c);
    }
    return n;
}

/* How many of set `set` [first, first + count) the filter finds. */
int64_t found(bg_remote_filter *f, uint64_t set, uint64_t first, uint64_t count)
{
    tu_batch b;
    tu_batch_init(&b, 1000);
    int64_t hits = 0;
    for (uint64_t i = 0; i < count; i += 1000) {
        tu_batch_fill(&b, 0, set, first + i, 1000);
        int64_t h = bg_remote_filter_contains_many(f, b.keys, b.lens, b.count, NULL);
        if (h < 0)
            print_message("contains_many: %s\n", bg_strerror((int)h));
        TU_TRUE(h >= 0);
        hits += h;
    }
    tu_batch_free(&b);
    return hits;
}

/* Adds (or with `check`, expects present) keys 0..n-1 of `set`. */
static void module_keys(bg_remote_filter *f, uint64_t set, size_t n, int check)
{
    tu_batch b;
    tu_batch_init(&b, 500);
    for (size_t i = 0; i < n; i += 500) {
        size_t c = n - i < 500 ? n - i : 500;
        tu_batch_fill(&b, 1, set, i, c);
        int64_t got = check ? bg_remote_filter_contains_many(f, b.keys, b.lens, c, NULL)
                            : bg_remote_filter_add_many(f, b.keys, b.lens, c, NULL);
        if (got < 0 || (check && got != (int64_t)c))
            fail_msg("set %llu keys %zu..: %lld (%s)", (unsigned long long)set, i,
                     (long long)got, got < 0 ? bg_err_name((int)got) : "not all present");
    }
    tu_batch_free(&b);
}

/* The module backend on the cluster, for filters whose names live on
 * different masters: staged creation, a rebuild with adds from another
 * handle in between, publish and fetch. Every script's keys are in the
 * name's slot (no CROSSSLOT), and nothing hidden is left behind. */
static void module_on_cluster(void **state)
{
    (void)state;
    tu_ctx("module backend over the cluster");
    const char *mod = getenv("BLOOMGATE_MODULE");
    if (!mod || !*mod) {
        print_message("BLOOMGATE_MODULE not set: module test skipped\n");
        skip();
    }
    static const char *const names[] = {"mc-a", "mc-b", "mc-c", "mc-d", "mc-e", "mc-f"};
    enum { NAMES = sizeof names / sizeof *names };
    bg_remote *r = cconn(), *r2 = cconn();
    bg_filter *local;
    bg_filter_options lo = {.variant = BG_VARIANT_SCALABLE, .capacity = 500, .error_rate = 0.01,
                            .max_bytes = UINT64_C(256) << 20};
    TU_EQ_I(bg_filter_new(&local, &lo), BG_OK);
    tu_batch b;
    tu_batch_init(&b, 2000);
    tu_batch_fill(&b, 1, 3, 0, 2000);
    TU_TRUE(bg_filter_add_many(local, b.keys, b.lens, 2000, NULL) >= 0);
    tu_batch_free(&b);
    uint64_t isize;
    TU_EQ_I(bg_filter_encoded_size(local, &isize), BG_OK);
    uint8_t *want = malloc(isize), *got = malloc(isize);
    assert_non_null(want);
    assert_non_null(got);
    TU_EQ_I(bg_filter_encode(local, want, isize, NULL), BG_OK);

    for (int i = 0; i < NAMES; i++) {
        bg_remote_filter *f, *w;
        bg_remote_filter_options o = {.backend = BG_REMOTE_MODULE, .capacity = 1000,
                                      .error_rate = 0.01};
        TU_EQ_I(bg_remote_filter_stage(&f, r, names[i], &o), BG_OK);
        module_keys(f, 1, 1000, 0);
        bg_filter *staged;
        TU_EQ_I(bg_remote_filter_fetch(f, &staged), BG_OK);
        TU_TRUE(bg_filter_items(staged) > 980 && bg_filter_items(staged) <= 1000);
        bg_filter_free(staged);
        TU_EQ_I(bg_remote_filter_stage_commit(f), BG_OK);

        TU_EQ_I(bg_remote_filter_open(&w, r2, names[i], BG_REMOTE_MODULE), BG_OK);
        bg_remote_filter_options no = {.capacity = 2000, .error_rate = 0.01};
        TU_EQ_I(bg_remote_filter_rebuild_begin(w, &no), BG_OK);
        module_keys(f, 2, 500, 0); /* during the rebuild: must reach it */
        b = (tu_batch){0};
        tu_batch_init(&b, 1000);
        tu_batch_fill(&b, 1, 1, 0, 1000);
        TU_TRUE(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 1000, NULL) >= 0);
        tu_batch_free(&b);
        TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_OK);
        bg_remote_filter_stats st;
        TU_EQ_I(bg_remote_filter_stats_get(f, &st), BG_OK);
        TU_EQ_U(st.capacity, 2000);
        module_keys(f, 1, 1000, 1);
        module_keys(f, 2, 500, 1);

        TU_EQ_I(bg_remote_filter_publish(r, names[i], BG_REMOTE_MODULE, local), BG_OK);
        module_keys(w, 3, 2000, 1);
        bg_filter *back;
        TU_EQ_I(bg_remote_filter_fetch(w, &back), BG_OK);
        uint64_t bsize;
        TU_EQ_I(bg_filter_encoded_size(back, &bsize), BG_OK);
        TU_EQ_U(bsize, isize);
        TU_EQ_I(bg_filter_encode(back, got, isize, NULL), BG_OK);
        TU_TRUE(memcmp(want, got, isize) == 0);
        bg_filter_free(back);
        bg_remote_filter_close(w);
        bg_remote_filter_close(f);
    }
    /* The names span masters, and only they are left. */
    int masters = 0;
    long long keys = 0;
    for (int n = 0; n < CL_N; n++) {
        redisContext *c = ts_raw(&cl[n]);
        long long k = ts_int(c, "DBSIZE");
        masters += k > 0;
        keys += k;
        redisFree(c);
    }
    TU_TRUE(masters >= 2);
    TU_EQ_I(keys, NAMES);
    for (int i = 0; i < NAMES; i++) {
        bg_remote_filter *f;
        TU_EQ_I(bg_remote_filter_open(&f, r, names[i], BG_REMOTE_MODULE), BG_OK);
        TU_EQ_I(bg__remote_filter_drop(f), BG_OK);
        bg_remote_filter_close(f);
    }
    free(want);
    free(got);
    bg_filter_free(local);
    bg_remote_close(r);
    bg_remote_close(r2);
}

/* More seed nodes (bg_remote_options.seeds): a client whose first seed is
 * down connects through the next one that answers; none answering is
 * BG_ECONN with a message that says so; a malformed list is BG_EINVAL. */
static void seeds(void **state)
{
    (void)state;
    tu_ctx("seed nodes");
    int dead = ts_free_port(), dead2;
    do /* two different ports: equal ones make one seed */
        dead2 = ts_free_port();
    while (dead2 == dead);
    char list[128];
    snprintf(list, sizeof list, "127.0.0.1:%d,[::1]:%d,127.0.0.1:%d", dead2, dead2, cl[1].port);
    bg_remote_options o = {.port = dead, .cluster = 1, .seeds = list,
                           .connect_timeout_ms = 500};
    bg_remote *r = NULL;
    TU_EQ_I(bg_remote_connect(&r, &o), BG_OK);
    bg_remote_filter *f = NULL;
    bg_remote_filter_options fo = {.backend = BG_REMOTE_BITMAP, .capacity = 1000,
                                   .error_rate = P, .seed = 2, .shards = 4};
    TU_EQ_I(bg_remote_filter_create(&f, r, "seeds", &fo), BG_OK);
    TU_EQ_I(bg_remote_filter_add(f, "k", 1), BG_OK);
    TU_EQ_I(bg_remote_filter_contains(f, "k", 1), 1);
    TU_EQ_I(bg__remote_filter_drop(f), BG_OK);
    bg_remote_filter_close(f);
    bg_remote_close(r);

    /* A keyless command (SCRIPT LOAD) first on a new handle goes to the
     * first node it knows, the dead seed here: it must go on to one that
     * answers. (A throw-away handle: its script cache gets a stranger.) */
    TU_EQ_I(bg_remote_connect(&r, &o), BG_OK);
    TU_EQ_I(bg__remote_load_script(r, BG__SCRIPT_STATS, "return 1"), BG_OK);
    TU_EQ_I(strlen(r->sha[BG__SCRIPT_STATS]), 40);
    TU_TRUE(bg_remote_errstr(r)[0] == '\0');
    bg_remote_close(r);

    snprintf(list, sizeof list, "127.0.0.1:%d", dead2);
    TU_EQ_I(bg_remote_connect(&r, &o), BG_ECONN);
    print_message("all seeds down: %s\n", bg_remote_errstr(r));
    TU_TRUE(strstr(bg_remote_errstr(r), "no node of the cluster answers (2 tried") != NULL);
    bg_remote_close(r);

    const char *bad[] = {"", ",", "x", "127.0.0.1:", ":7000", "h:70000", "h:0", "h:7000,",
                         ",h:7000", "[::1", "[::1]7000", "[]:7000", "h:12a", "h:123456"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        o.seeds = bad[i];
        r = (bg_remote *)1;
        TU_EQ_I(bg_remote_connect(&r, &o), BG_EINVAL);
        TU_TRUE(r == NULL);
    }
    bg_remote_options plain = {.port = cl[0].port, .seeds = "127.0.0.1:1"};
    TU_EQ_I(bg_remote_connect(&r, &plain), BG_EINVAL);
}

int main(void)
{
    signal(SIGPIPE, SIG_DFL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slot_known),
        cmocka_unit_test(own_commands_routed),
        cmocka_unit_test(sharded_cross_process),
        cmocka_unit_test(published_shards),
        cmocka_unit_test(shard_places),
        cmocka_unit_test(reshard_while_clients_run),
        cmocka_unit_test(module_on_cluster),
        cmocka_unit_test(seeds),
        cmocka_unit_test(master_fails_over),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
