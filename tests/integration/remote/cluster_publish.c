/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cluster's publish tests: sharded filters built locally and published
 * shard by shard over the cluster, and the places and seeds that shards
 * keep against publishes of another shape. */
#include "cluster_test.h"
#include "script_fault.h" /* a publish that fails part-way, in shard_places */

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

/* A sharded filter built locally and published shard by shard (a service
 * building it from its database): its routing is the client's, every key
 * is found over the cluster with the FP rate asked for, bad input writes
 * nothing, and a publish again replaces every shard. */
void published_shards(void **state)
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
void shard_places(void **state)
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
