/* A sharded bitmap filter over a 3-master Redis Cluster that the test
 * starts itself (ports 23000-23999, redis-cli --cluster create): no false
 * negatives across processes, the FP rate, a resizing rebuild, and one slot
 * holding a shard resharded from one master to another (the two masters
 * redirecting to each other for 150 ms on the way) while a forked
 * client adds and checks keys (it must see no error and no false negative).
 * With bloomgate.so loaded in every master ($BLOOMGATE_MODULE), the module
 * backend's staged creation, rebuild, publish and fetch over the cluster.
 * Last, a master dies and its replica takes over: meanwhile the client
 * holds the dead master down instead of connecting on every call, and then
 * the same client handle must find the new master and every key. */
#include "test_util.h"
#include "redis_server.h"
#include "redis_cluster.h"

#include <bloomgate/file.h>
#include <bloomgate/remote.h>

#include <fcntl.h>
#include <time.h>

#include "common/clock.h"
#include "remote/remote_internal.h"
#include "script_fault.h" /* a publish that fails part-way, in shard_places */

#define CL_N 3
static ts_server cl[CL_N];

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

static bg_remote *cconn(void)
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

/* How many of the masters hold a shard of the sharded filter `name`, by
 * the client's slot map. */
static int masters_holding(const bg_remote *r, const char *name, uint32_t shards)
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

#define N_KEYS 20000u
#define P 0.01

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
static long long cluster_keys(const char *pattern)
{
    long long n = 0;
    for (int i = 0; i < CL_N; i++) {
        redisContext *c = ts_raw(&cl[i]);
        n += ts_count_keys(c, pattern);
        redisFree(c);
    }
    return n;
}

#define PUB_S 5u

/* S local filters, one per shard, each holding the keys of set `set`
 * [first, first + count) that bg_remote_shard_of routes to it. */
static void build_s_shards(bg_filter **out, uint32_t S, uint64_t seed, uint64_t set,
                           uint64_t first, uint64_t count)
{
    bg_filter_options fo = {.variant = BG_VARIANT_STANDARD, .capacity = N_KEYS / S + 1,
                            .error_rate = P, .seed = seed};
    for (uint32_t j = 0; j < S; j++)
        TU_EQ_I(bg_filter_new(&out[j], &fo), BG_OK);
    tu_batch b;
    tu_batch_init(&b, 1000);
    for (uint64_t i = 0; i < count; i += 1000) {
        size_t n = count - i < 1000 ? (size_t)(count - i) : 1000;
        tu_batch_fill(&b, 0, set, first + i, n);
        for (size_t x = 0; x < n; x++) {
            bg_hash h;
            TU_EQ_I(bg_filter_hash(out[0], b.keys[x], b.lens[x], &h), BG_OK);
            TU_EQ_I(bg_filter_add_hash(out[bg_remote_shard_of(h, S)], h), BG_OK);
        }
    }
    tu_batch_free(&b);
}

static void build_shards(bg_filter **out, uint64_t seed, uint64_t set, uint64_t first,
                         uint64_t count)
{
    build_s_shards(out, PUB_S, seed, set, first, count);
}

static void free_s_shards(bg_filter **f, uint32_t S)
{
    for (uint32_t j = 0; j < S; j++)
        bg_filter_free(f[j]);
}

static void free_shards(bg_filter **f)
{
    free_s_shards(f, PUB_S);
}

/* How many of set `set` [first, first + count) the filter finds. */
static int64_t found(bg_remote_filter *f, uint64_t set, uint64_t first, uint64_t count)
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

/* A sharded filter built locally and published shard by shard (a service
 * building it from its database): its routing is the client's, every key
 * is found over the cluster with the FP rate asked for, bad input writes
 * nothing, and a publish again replaces every shard. */
static void published_shards(void **state)
{
    (void)state;
    tu_ctx("sharded filter published from local shards");
    bg_remote *r = cconn();

    /* bg_remote_shard_of is the routing of a sharded handle: each key added
     * through one is in the shard it names. */
    bg_remote_filter *sx = NULL;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 4000,
                                  .error_rate = P, .seed = 9, .shards = 4};
    TU_EQ_I(bg_remote_filter_create(&sx, r, "shx", &o), BG_OK);
    tu_batch b;
    tu_batch_init(&b, 1000);
    tu_batch_fill(&b, 0, 6, 0, 1000);
    TU_EQ_I(bg_remote_filter_add_many(sx, b.keys, b.lens, b.count, NULL), 1000);
    bg_remote_filter *sub[4];
    for (uint32_t j = 0; j < 4; j++) {
        char name[16];
        snprintf(name, sizeof name, "shx:s%u", j);
        TU_EQ_I(bg_remote_filter_open(&sub[j], r, name, BG_REMOTE_BITMAP), BG_OK);
    }
    int per[4] = {0};
    for (size_t x = 0; x < b.count; x++) {
        bg_hash h;
        TU_EQ_I(bg_hash_key(b.keys[x], b.lens[x], 9, &h), BG_OK);
        uint32_t j = bg_remote_shard_of(h, 4);
        TU_EQ_I(bg_remote_filter_contains(sub[j], b.keys[x], b.lens[x]), 1);
        per[j]++;
    }
    for (uint32_t j = 0; j < 4; j++) {
        TU_TRUE(per[j] >= 150 && per[j] <= 350); /* uniform: 250 each */
        bg_remote_filter_close(sub[j]);
    }
    TU_EQ_I(bg__remote_filter_drop(sx), BG_OK);
    bg_remote_filter_close(sx);
    TU_EQ_U(bg_remote_shard_of((bg_hash){1, 2}, 1), 0);
    TU_EQ_U(bg_remote_shard_of((bg_hash){1, 2}, 0), 0);

    /* Refused, nothing written. */
    bg_filter *sh[PUB_S];
    build_shards(sh, 21, 7, 0, N_KEYS);
    const bg_filter *const *csh = (const bg_filter *const *)sh;
    TU_EQ_I(bg_remote_filter_publish_shards(r, "pub", csh, 1), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_publish_shards(r, "pub", csh, BG_REMOTE_MAX_SHARDS + 1), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_publish_shards(r, "pub", NULL, PUB_S), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_publish_shards(NULL, "pub", csh, PUB_S), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_publish_shards(r, "p{u}b", csh, PUB_S), BG_EINVAL);
    bg_filter *keep = sh[3], *other;
    bg_filter_options fo = {.variant = BG_VARIANT_STANDARD, .capacity = 100, .error_rate = P,
                            .seed = 22};
    TU_EQ_I(bg_filter_new(&other, &fo), BG_OK);
    sh[3] = other;
    TU_EQ_I(bg_remote_filter_publish_shards(r, "pub", csh, PUB_S), BG_EINVAL);
    TU_TRUE(strstr(bg_remote_errstr(r), "seeds differ") != NULL);
    bg_filter_free(other);
    fo.variant = BG_VARIANT_BLOCKED;
    fo.seed = 21;
    TU_EQ_I(bg_filter_new(&other, &fo), BG_OK);
    sh[3] = other;
    TU_EQ_I(bg_remote_filter_publish_shards(r, "pub", csh, PUB_S), BG_EVARIANT);
    bg_filter_free(other);
    sh[3] = NULL;
    TU_EQ_I(bg_remote_filter_publish_shards(r, "pub", csh, PUB_S), BG_EINVAL);
    sh[3] = keep;
    TU_EQ_I(cluster_keys("*pub*"), 0);

    /* Published: over more than one master, every key found through a
     * fresh connection, the FP rate of one shard. */
    TU_EQ_I(bg_remote_filter_publish_shards(r, "pub", csh, PUB_S), BG_OK);
    TU_EQ_I(cluster_keys("{pub}:shards"), 1);
    TU_TRUE(masters_holding(r, "pub", PUB_S) >= 2);
    bg_remote *r2 = cconn();
    bg_remote_filter *g = NULL;
    TU_EQ_I(bg_remote_filter_open(&g, r2, "pub", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_U(bg_remote_filter_seed(g), 21);
    TU_EQ_I(found(g, 7, 0, N_KEYS), N_KEYS);
    double rate = (double)found(g, 8, 0, 100000) / 100000.0;
    print_message("published shards: FP rate %.5f (p = %.3f)\n", rate, P);
    TU_IN_RANGE_D(rate, 0.8 * P, 1.2 * P);
    bg_remote_filter_stats st;
    TU_EQ_I(bg_remote_filter_stats_get(g, &st), BG_OK);
    TU_EQ_U(st.layers, PUB_S);
    uint64_t items = 0; /* the adds that found their key new, per shard */
    for (uint32_t j = 0; j < PUB_S; j++)
        items += bg_filter_items(sh[j]);
    TU_EQ_U(st.items, items);

    /* Fetched shard by shard and published under another name: a copy
     * that finds every key. */
    bg_filter *got[PUB_S];
    TU_EQ_I(bg_remote_filter_shards(g), PUB_S);
    TU_EQ_I(bg_remote_filter_fetch_shards(g, got, PUB_S - 1), BG_EINVAL);
    TU_TRUE(got[0] == NULL);
    TU_EQ_I(bg_remote_filter_fetch_shards(g, got, PUB_S), BG_OK);
    for (uint32_t j = 0; j < PUB_S; j++) {
        TU_EQ_U(bg_filter_bits(got[j]), bg_filter_bits(sh[j]));
        TU_EQ_U(bg_filter_seed(got[j]), 21);
        TU_EQ_U(bg_filter_items(got[j]), bg_filter_items(sh[j]));
    }
    TU_EQ_I(bg_remote_filter_publish_shards(r, "pub2", (const bg_filter *const *)got, PUB_S),
            BG_OK);
    bg_remote_filter *g2 = NULL;
    TU_EQ_I(bg_remote_filter_open(&g2, r2, "pub2", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(found(g2, 7, 0, N_KEYS), N_KEYS);
    TU_EQ_I(bg__remote_filter_drop(g2), BG_OK);
    bg_remote_filter_close(g2);
    for (uint32_t j = 0; j < PUB_S; j++)
        bg_filter_free(got[j]);

    /* An unsharded filter over it: refused (it would shadow the shards). */
    TU_EQ_I(bg_remote_filter_publish(r, "pub", BG_REMOTE_BITMAP, sh[0]), BG_EEXIST);
    TU_TRUE(strstr(bg_remote_errstr(r), "a sharded filter has this name") != NULL);
    bg_remote_filter *x = NULL;
    bg_remote_filter_options small = {.backend = BG_REMOTE_BITMAP, .capacity = 100,
                                      .error_rate = P};
    TU_EQ_I(bg_remote_filter_create(&x, r, "pub", &small), BG_EEXIST);
    TU_EQ_I(cluster_keys("{pub}:*"), 1); /* only the count */
    TU_EQ_I(found(g, 7, 0, N_KEYS), N_KEYS);

    /* Another count, or an unsharded filter of that name: refused. */
    TU_EQ_I(bg_remote_filter_publish_shards(r, "pub", csh, PUB_S - 1), BG_EEXIST);
    TU_TRUE(strstr(bg_remote_errstr(r), "has 5 shards, not 4") != NULL);
    TU_EQ_I(bg_remote_filter_publish(r, "one", BG_REMOTE_BITMAP, sh[0]), BG_OK);
    TU_EQ_I(bg_remote_filter_publish_shards(r, "one", csh, PUB_S), BG_EEXIST);
    TU_TRUE(strstr(bg_remote_errstr(r), "unsharded") != NULL);
    small.shards = 3; /* nor created sharded */
    TU_EQ_I(bg_remote_filter_create(&x, r, "one", &small), BG_EEXIST);
    TU_TRUE(x == NULL);
    TU_EQ_I(cluster_keys("{one:s*"), 0);
    bg_remote_filter *one = NULL;
    TU_EQ_I(bg_remote_filter_open(&one, r, "one", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_shards(one), 1);
    TU_EQ_I(bg_remote_filter_fetch_shards(one, got, 1), BG_EINVAL);
    TU_EQ_I(bg__remote_filter_drop(one), BG_OK);
    bg_remote_filter_close(one);

    /* Published again from other keys (the second half of the set and a
     * new one): the open handle follows every shard (same shape), the
     * first half is gone (FP aside). */
    free_shards(sh);
    build_shards(sh, 21, 7, N_KEYS / 2, N_KEYS / 2);
    TU_EQ_I(bg_remote_filter_publish_shards(r, "pub", csh, PUB_S), BG_OK);
    TU_EQ_I(found(g, 7, N_KEYS / 2, N_KEYS / 2), N_KEYS / 2);
    TU_TRUE(found(g, 7, 0, N_KEYS / 2) < N_KEYS / 2 / 20);
    TU_EQ_I(cluster_keys("{pub:s*}:bits:*"), PUB_S); /* the old bits deleted */

    TU_EQ_I(bg__remote_filter_drop(g), BG_OK);
    TU_EQ_I(cluster_keys("*pub*"), 0);
    free_shards(sh);
    tu_batch_free(&b);
    bg_remote_filter_close(g);
    bg_remote_close(r2);
    bg_remote_close(r);
}

/* The PTTL of the one key that matches `pattern` over the cluster (-2
 * when none does, -3 when more than one does); deleted then if `del`. */
static long long cluster_pttl(const char *pattern, int del)
{
    long long ttl = -2;
    int seen = 0;
    for (int i = 0; i < CL_N; i++) {
        redisContext *c = ts_raw(&cl[i]);
        redisReply *rep = redisCommand(c, "KEYS %s", pattern);
        TU_TRUE(rep && rep->type == REDIS_REPLY_ARRAY);
        for (size_t e = 0; e < rep->elements; e++, seen++) {
            redisReply *t = redisCommand(c, "PTTL %s", rep->element[e]->str);
            TU_TRUE(t && t->type == REDIS_REPLY_INTEGER);
            ttl = t->integer;
            freeReplyObject(t);
            if (del)
                freeReplyObject(redisCommand(c, "DEL %s", rep->element[e]->str));
        }
        freeReplyObject(rep);
        redisFree(c);
    }
    return seen > 1 ? -3 : ttl;
}

static int publish_s(bg_remote *r, const char *name, bg_filter **sh, uint32_t S)
{
    return bg_remote_filter_publish_shards(r, name, (const bg_filter *const *)sh, S);
}

/* Shards keep their place and seed (bitmap.c, SHARD PLACES). A publish
 * that would put a shard routed for another count, or hashed with another
 * seed, under the name is refused at the first shard it would replace,
 * writing nothing: two clients publishing one name at once with other
 * counts cannot mix their shards (the first to reach s0 keeps it), which
 * would lose keys. A failed publish's leftovers are completed by the same
 * publish again, and a filter of its own never replaces a shard. */
static void shard_places(void **state)
{
    (void)state;
    tu_ctx("shards keep their place and seed");
    bg_remote *r = cconn();
    bg_filter *sh[PUB_S], *four[4], *reseeded[PUB_S];
    build_shards(sh, 21, 7, 0, N_KEYS);
    build_s_shards(four, 4, 21, 7, 0, N_KEYS);
    build_s_shards(reseeded, PUB_S, 22, 7, 0, N_KEYS);

    /* The third shard's publish is lost: two shards, no count. */
    sf_arm_after(BG__SCRIPT_PUBLISH, BG__REMOTE_TESTING_LOSE_REQUEST, 2, 1);
    TU_EQ_I(publish_s(r, "pl", sh, PUB_S), BG_ECONN);
    TU_EQ_I(sf_disarm(), 1);
    TU_EQ_I(cluster_keys("{pl:s*}:meta"), 2);
    TU_EQ_I(cluster_keys("{pl}:shards"), 0);
    int64_t left = cluster_keys("*pl*");
    /* Its upload, which no meta hash names, expires by itself (ORPHANS);
     * the adopted bits do not. */
    long long orphan = cluster_pttl("{pl:s2}:bits:*", 0);
    TU_TRUE(orphan > 0 && orphan <= BG_REMOTE_STAGE_TTL_MS);
    TU_EQ_I(cluster_pttl("{pl:s0}:bits:*", 0), -1);

    /* Another count, another seed: refused at s0, nothing written. */
    TU_EQ_I(publish_s(r, "pl", four, 4), BG_EEXIST);
    TU_TRUE(strstr(bg_remote_errstr(r), "it is shard 0/5, not 0/4") != NULL);
    TU_EQ_I(publish_s(r, "pl", reseeded, PUB_S), BG_EEXIST);
    TU_TRUE(strstr(bg_remote_errstr(r), "its seed is 21, not 22") != NULL);
    TU_EQ_I(bg_remote_filter_publish(r, "pl:s0", BG_REMOTE_BITMAP, sh[0]), BG_EEXIST);
    TU_TRUE(strstr(bg_remote_errstr(r), "it is shard 0/5 of a sharded filter") != NULL);
    TU_EQ_I(cluster_keys("*pl*"), left);
    TU_EQ_I(cluster_keys("{pl}:shards"), 0);

    /* The same publish again completes it. */
    TU_EQ_I(publish_s(r, "pl", sh, PUB_S), BG_OK);
    bg_remote *r2 = cconn();
    bg_remote_filter *g = NULL;
    TU_EQ_I(bg_remote_filter_open(&g, r2, "pl", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(found(g, 7, 0, N_KEYS), N_KEYS);

    /* Published: a re-seeded publish (which open handles route by the old
     * seed) is refused too; the filter is as it was. */
    left = cluster_keys("*pl*");
    TU_EQ_I(publish_s(r, "pl", reseeded, PUB_S), BG_EEXIST);
    TU_EQ_I(found(g, 7, 0, N_KEYS), N_KEYS);
    TU_EQ_I(cluster_keys("*pl*"), left);
    TU_EQ_I(bg__remote_filter_drop(g), BG_OK);
    bg_remote_filter_close(g);

    /* Shards created empty have their places as well. */
    bg_remote_filter *c = NULL;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 4000,
                                  .error_rate = P, .seed = 21, .shards = 4};
    TU_EQ_I(bg_remote_filter_create(&c, r, "pc", &o), BG_OK);
    TU_EQ_I(bg_remote_filter_publish(r, "pc:s3", BG_REMOTE_BITMAP, four[3]), BG_EEXIST);
    TU_TRUE(strstr(bg_remote_errstr(r), "it is shard 3/4 of a sharded filter") != NULL);
    TU_EQ_I(cluster_pttl("{pc:s3}:bits:*", 0), -1);
    TU_EQ_I(publish_s(r, "pc", four, 4), BG_OK);
    bg_remote_filter_close(c); /* reshaped: its handle is stale */
    TU_EQ_I(bg_remote_filter_open(&c, r2, "pc", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(found(c, 7, 0, N_KEYS), N_KEYS);
    TU_EQ_I(cluster_pttl("{pc:s3}:bits:*", 0), -1);
    TU_EQ_I(bg__remote_filter_drop(c), BG_OK);
    bg_remote_filter_close(c);
    /* What is left: the bits the lost publish uploaded, which no meta hash
     * names (after a lost connection the client cannot delete them). */
    TU_EQ_I(cluster_keys("*p[lc]*"), 1);
    TU_TRUE(cluster_pttl("{pl:s2}:bits:*", 1) > 0);
    TU_EQ_I(cluster_keys("*p[lc]*"), 0);

    free_shards(sh);
    free_shards(reseeded);
    free_s_shards(four, 4);
    bg_remote_close(r2);
    bg_remote_close(r);
}

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

static void reshard_while_clients_run(void **state)
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
 * Last in the file: it leaves one master dead. */
static void master_fails_over(void **state)
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

int main(void)
{
    signal(SIGPIPE, SIG_DFL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slot_known),
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
