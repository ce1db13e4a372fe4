/* SPDX-License-Identifier: BSD-3-Clause */
/* The bitmap backend on a plain server (remote_fixture.h): basics, no
 * false negatives across processes, the false-positive rate, stale-parameter
 * detection, the same bits as a local filter, the limits, and destroy by
 * name. */
#include "remote_fixture.h"

#include <bloomgate/file.h>
#include <bloomgate/remote.h>

#include "remote/remote_internal.h" /* the connection's descriptor, in bitmap_basics */

#include <fcntl.h>

static void bitmap_basics(void **state)
{
    (void)state;
    tu_ctx("bitmap basics");
    bg_remote *r = conn(&srv, 0);
    bg_remote_filter *f = NULL;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 1000,
                                  .error_rate = 0.01, .seed = 42};
    TU_EQ_I(bg_remote_filter_create(&f, r, "basics", &o), BG_OK);
    TU_TRUE(bg_remote_filter_bits(f) >= 9000 && bg_remote_filter_hashes(f) == 7);
    TU_TRUE(bg_remote_filter_generation(f) != 0);
    TU_EQ_I(bg_remote_filter_contains(f, "alice", 5), 0);
    TU_EQ_I(bg_remote_filter_test_and_add(f, "alice", 5), 1);
    TU_EQ_I(bg_remote_filter_test_and_add(f, "alice", 5), 0);
    TU_EQ_I(bg_remote_filter_add(f, NULL, 0), BG_OK); /* the empty key */
    TU_EQ_I(bg_remote_filter_contains(f, "", 0), 1);
    TU_EQ_I(bg_remote_filter_contains(f, "alice", 5), 1);
    TU_EQ_I(bg_remote_filter_contains(f, NULL, 3), BG_EINVAL);
    /* The connection is not inherited by programs the caller runs. */
    TU_TRUE(r->c != NULL && (fcntl(r->c->fd, F_GETFD) & FD_CLOEXEC));

    /* A second create refuses; open sees the same parameters. */
    bg_remote_filter *g = NULL;
    TU_EQ_I(bg_remote_filter_create(&g, r, "basics", &o), BG_EEXIST);
    TU_TRUE(g == NULL);
    TU_EQ_I(bg_remote_filter_open(&g, r, "basics", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_U(bg_remote_filter_bits(g), bg_remote_filter_bits(f));
    TU_EQ_U(bg_remote_filter_hashes(g), bg_remote_filter_hashes(f));
    TU_EQ_U(bg_remote_filter_seed(g), 42);
    TU_EQ_U(bg_remote_filter_generation(g), bg_remote_filter_generation(f));
    TU_EQ_I(bg_remote_filter_contains(g, "alice", 5), 1);

    bg_remote_filter_stats st;
    TU_EQ_I(bg_remote_filter_stats_get(g, &st), BG_OK);
    TU_EQ_I(st.backend, BG_REMOTE_BITMAP);
    TU_EQ_U(st.items, 2);
    TU_TRUE(st.bits_set >= 8 && st.bits_set <= 14);
    TU_EQ_U(st.capacity, 1000);
    TU_EQ_U(st.bytes, (st.bits + 7) / 8);

    /* Expire reaches both keys. */
    redisContext *c = ts_raw(&srv);
    TU_EQ_I(bg_remote_filter_expire(f, 60000), BG_OK);
    TU_TRUE(ts_int(c, "PTTL {basics}:meta") > 50000);
    TU_TRUE(ts_int(c, "PTTL {basics}:bits:%llu",
                   (unsigned long long)bg_remote_filter_generation(f)) > 50000);
    TU_EQ_I(bg_remote_filter_expire(f, 0), BG_EINVAL);

    /* Drop: everything goes, and the handles are told. */
    TU_EQ_I(bg__remote_filter_drop(f), BG_OK);
    TU_EQ_I(ts_int(c, "EXISTS {basics}:meta"), 0);
    TU_EQ_I(ts_count_keys(c, "{basics}*"), 0);
    TU_EQ_I(bg_remote_filter_add(g, "x", 1), BG_ENOTFOUND);
    TU_EQ_I(bg_remote_filter_contains(f, "x", 1), BG_ENOTFOUND);
    TU_EQ_I(ts_count_keys(c, "{basics}*"), 0); /* nothing recreated */
    TU_EQ_I(bg__remote_filter_drop(f), BG_ENOTFOUND);
    bg_remote_filter_close(g);
    bg_remote_filter_close(f);
    TU_EQ_I(bg_remote_filter_open(&f, r, "basics", BG_REMOTE_BITMAP), BG_ENOTFOUND);
    TU_TRUE(f == NULL);

    /* Arguments. */
    TU_EQ_I(bg_remote_filter_create(&f, r, "a{b}", &o), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_create(&f, r, "", &o), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_open(&f, r, "x", (bg_remote_backend)7), BG_EINVAL);
    bg_remote_filter_options bad = {.backend = BG_REMOTE_BITMAP, .error_rate = 0.01, .hashes = 3};
    TU_EQ_I(bg_remote_filter_create(&f, r, "x", &bad), BG_EUNDERDET);
    redisFree(c);
    bg_remote_close(r);
}

/* One process adds, another (forked, its own connection) and a second
 * connection of this process check: no false negatives. */
static void bitmap_cross_process(void **state)
{
    (void)state;
    tu_ctx("bitmap cross-process");
    enum { N = 20000, B = 500 };
    bg_remote *r = conn(&srv, 0);
    bg_remote_filter *f = NULL;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = N, .error_rate = 0.01,
                                  .seed = 7};
    TU_EQ_I(bg_remote_filter_create(&f, r, "xproc", &o), BG_OK);
    bg_remote_filter_close(f);
    bg_remote_close(r); /* nothing shared with the child but the server */

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int ok = 1;
        bg_remote *cr = NULL;
        bg_remote_options co = {.port = srv.port};
        bg_remote_filter *cf = NULL;
        tu_batch b;
        tu_batch_init(&b, B);
        ok = bg_remote_connect(&cr, &co) == BG_OK &&
             bg_remote_filter_open(&cf, cr, "xproc", BG_REMOTE_BITMAP) == BG_OK;
        for (size_t i = 0; ok && i < N; i += B) {
            tu_batch_fill(&b, 1, 99, i, B); /* random-length binary keys */
            ok = bg_remote_filter_add_many(cf, b.keys, b.lens, B, NULL) >= 0;
        }
        tu_batch_free(&b);
        bg_remote_filter_close(cf);
        bg_remote_close(cr);
        _exit(ok ? 0 : 1);
    }
    int status;
    TU_EQ_I(waitpid(pid, &status, 0), pid);
    TU_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    bg_remote *r1 = conn(&srv, 0), *r2 = conn(&srv, 0);
    bg_remote_filter *f1, *f2;
    TU_EQ_I(bg_remote_filter_open(&f1, r1, "xproc", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_open(&f2, r2, "xproc", BG_REMOTE_BITMAP), BG_OK);
    tu_batch b;
    tu_batch_init(&b, B);
    uint8_t res[B];
    for (size_t i = 0; i < N; i += B) {
        tu_batch_fill(&b, 1, 99, i, B);
        TU_EQ_I(bg_remote_filter_contains_many(i % 2 ? f1 : f2, b.keys, b.lens, B, res), B);
        for (size_t j = 0; j < B; j++)
            TU_EQ_I(res[j], 1);
    }
    for (size_t i = 0; i < 100; i++)
        TU_EQ_I(bg_remote_filter_contains(f1, b.keys[i], b.lens[i]), 1);
    tu_batch_free(&b);
    TU_EQ_I(bg__remote_filter_drop(f1), BG_OK);
    bg_remote_filter_close(f1);
    bg_remote_filter_close(f2);
    bg_remote_close(r1);
    bg_remote_close(r2);
}

/* n distinct keys added, 200,000 absent ones queried: the measured rate is
 * within 20% of the model's p (expected 2000 false positives, sd ~45). */
static void bitmap_fp_rate(void **state)
{
    (void)state;
    enum { N = 20000, Q = 200000, B = 1000 };
    tu_ctx("bitmap fp rate");
    bg_remote *r = conn(&srv, 0);
    bg_remote_filter *f = NULL;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = N, .error_rate = 0.01,
                                  .seed = 12345};
    TU_EQ_I(bg_remote_filter_create(&f, r, "fprate", &o), BG_OK);
    tu_batch b;
    tu_batch_init(&b, B);
    for (size_t i = 0; i < N; i += B) {
        fill(&b, 1, i, B);
        /* New, but for the few that are false positives already. */
        TU_TRUE(bg_remote_filter_add_many(f, b.keys, b.lens, B, NULL) >= B * 98 / 100);
    }
    int64_t fp = 0;
    for (size_t i = 0; i < Q; i += B) {
        fill(&b, 2, i, B);
        int64_t n = bg_remote_filter_contains_many(f, b.keys, b.lens, B, NULL);
        TU_TRUE(n >= 0);
        fp += n;
    }
    bg_remote_filter_stats st;
    TU_EQ_I(bg_remote_filter_stats_get(f, &st), BG_OK);
    TU_TRUE(st.items >= N * 99 / 100 && st.items <= N);
    double p = bg_sizing_fp_rate(BG_VARIANT_STANDARD, st.bits, N, st.hashes);
    double rate = (double)fp / Q;
    tu_ctx("bitmap fp rate %.5f vs p %.5f", rate, p);
    TU_IN_RANGE_D(rate, 0.8 * p, 1.2 * p);
    TU_IN_RANGE_D(p, 0.009, 0.0105);
    tu_batch_free(&b);
    TU_EQ_I(bg__remote_filter_drop(f), BG_OK);
    bg_remote_filter_close(f);
    bg_remote_close(r);
}

/* A opens; B drops and re-creates the filter with other parameters; A's
 * next operations are refused with BG_ESTALE and write nothing. */
static void bitmap_stale(void **state)
{
    (void)state;
    tu_ctx("bitmap stale parameters");
    bg_remote *ra = conn(&srv, 0), *rb = conn(&srv, 0);
    bg_remote_filter *a, *b;
    bg_remote_filter_options o1 = {.backend = BG_REMOTE_BITMAP, .capacity = 1000,
                                   .error_rate = 0.01};
    bg_remote_filter_options o2 = {.backend = BG_REMOTE_BITMAP, .capacity = 5000,
                                   .error_rate = 0.001, .seed = 9};
    TU_EQ_I(bg_remote_filter_create(&b, rb, "stale", &o1), BG_OK);
    TU_EQ_I(bg_remote_filter_open(&a, ra, "stale", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_add(a, "before", 6), BG_OK);

    TU_EQ_I(bg__remote_filter_drop(b), BG_OK);
    bg_remote_filter_close(b);
    TU_EQ_I(bg_remote_filter_create(&b, rb, "stale", &o2), BG_OK);
    TU_TRUE(bg_remote_filter_generation(b) != bg_remote_filter_generation(a));

    TU_EQ_I(bg_remote_filter_add(a, "x", 1), BG_ESTALE);
    TU_TRUE(strstr(bg_remote_errstr(ra), "re-created") != NULL);
    TU_EQ_I(bg_remote_filter_test_and_add(a, "x", 1), BG_ESTALE);
    TU_EQ_I(bg_remote_filter_contains(a, "before", 6), BG_ESTALE);
    const void *keys[3] = {"p", "q", "r"};
    size_t lens[3] = {1, 1, 1};
    TU_EQ_I(bg_remote_filter_add_many(a, keys, lens, 3, NULL), BG_ESTALE);
    TU_EQ_I(bg_remote_filter_contains_many(a, keys, lens, 3, NULL), BG_ESTALE);
    bg_remote_filter_stats st;
    TU_EQ_I(bg_remote_filter_stats_get(a, &st), BG_ESTALE);
    TU_EQ_I(bg_remote_filter_expire(a, 1000), BG_ESTALE);
    TU_EQ_I(bg__remote_filter_drop(a), BG_ESTALE);

    /* Nothing was written: B's filter is empty and A's old array is gone. */
    TU_EQ_I(bg_remote_filter_stats_get(b, &st), BG_OK);
    TU_EQ_U(st.items, 0);
    TU_EQ_U(st.bits_set, 0);
    redisContext *c = ts_raw(&srv);
    TU_EQ_I(ts_count_keys(c, "{stale}*"), 2);
    TU_EQ_I(ts_int(c, "PTTL {stale}:meta"), -1);
    redisFree(c);

    /* Opening again gives the new parameters. */
    bg_remote_filter_close(a);
    TU_EQ_I(bg_remote_filter_open(&a, ra, "stale", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_U(bg_remote_filter_seed(a), 9);
    TU_EQ_U(bg_remote_filter_bits(a), bg_remote_filter_bits(b));
    TU_EQ_I(bg_remote_filter_add(a, "x", 1), BG_OK);
    TU_EQ_I(bg_remote_filter_contains(b, "x", 1), 1);
    TU_EQ_I(bg__remote_filter_drop(a), BG_OK);
    bg_remote_filter_close(a);
    bg_remote_filter_close(b);
    bg_remote_close(ra);
    bg_remote_close(rb);
}

/* The bitmap is a local standard filter's payload, byte for byte: upload a
 * local filter and query it remotely, and add remotely and compare bytes. */
static void bitmap_local_agrees(void **state)
{
    (void)state;
    tu_ctx("bitmap agrees with a local filter");
    enum { N = 5000, B = 500 };
    bg_filter *lf;
    bg_filter_options lo = {.variant = BG_VARIANT_STANDARD, .capacity = N, .error_rate = 0.02,
                            .seed = 0xfeedu};
    TU_EQ_I(bg_filter_new(&lf, &lo), BG_OK);
    uint64_t m = bg_filter_bits(lf);
    tu_batch b;
    tu_batch_init(&b, B);
    for (size_t i = 0; i < N; i += B) {
        tu_batch_fill(&b, 1, 3, i, B);
        TU_TRUE(bg_filter_add_many(lf, b.keys, b.lens, B, NULL) >= 0);
    }
    uint64_t size;
    TU_EQ_I(bg_filter_encoded_size(lf, &size), BG_OK);
    uint8_t *img = malloc(size);
    assert_non_null(img);
    TU_EQ_I(bg_filter_encode(lf, img, size, NULL), BG_OK);
    bg_file_info info;
    TU_EQ_I(bg_file_inspect_buffer(img, size, 0, &info), BG_OK);
    TU_EQ_U(info.payload_bytes, (m + 7) / 8);
    const uint8_t *payload = img + info.payload_offset;

    bg_remote *r = conn(&srv, 0);
    bg_remote_filter *up, *fresh;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .bits = m,
                                  .hashes = bg_filter_hashes(lf), .seed = 0xfeedu};
    TU_EQ_I(bg_remote_filter_create(&up, r, "upload", &o), BG_OK);
    TU_EQ_U(bg_remote_filter_bits(up), m);
    redisContext *c = ts_raw(&srv);
    redisReply *rep = redisCommand(c, "SET {upload}:bits:%llu %b",
                                   (unsigned long long)bg_remote_filter_generation(up), payload,
                                   (size_t)info.payload_bytes);
    assert_non_null(rep);
    freeReplyObject(rep);

    /* Every key, added or not, gets the same answer from both. */
    agrees(up, lf, N, 40000);

    /* The other way: remote adds set the local filter's bits. */
    TU_EQ_I(bg_remote_filter_create(&fresh, r, "fresh", &o), BG_OK);
    for (size_t i = 0; i < N; i += B) {
        tu_batch_fill(&b, 1, 3, i, B);
        TU_TRUE(bg_remote_filter_add_many(fresh, b.keys, b.lens, B, NULL) >= 0);
    }
    rep = redisCommand(c, "GET {fresh}:bits:%llu",
                       (unsigned long long)bg_remote_filter_generation(fresh));
    assert_non_null(rep);
    TU_EQ_I(rep->type, REDIS_REPLY_STRING);
    TU_EQ_U(rep->len, info.payload_bytes);
    TU_TRUE(memcmp(rep->str, payload, rep->len) == 0);
    freeReplyObject(rep);

    TU_EQ_I(bg__remote_filter_drop(up), BG_OK);
    TU_EQ_I(bg__remote_filter_drop(fresh), BG_OK);
    bg_remote_filter_close(up);
    bg_remote_filter_close(fresh);
    redisFree(c);
    bg_remote_close(r);
    tu_batch_free(&b);
    free(img);
    bg_filter_free(lf);
}

/* 2^32 bits at most; meta hashes this library cannot use are refused. */
static void bitmap_limits(void **state)
{
    (void)state;
    tu_ctx("bitmap limits");
    bg_remote *r = conn(&srv, 0);
    bg_remote_filter *f = NULL;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP,
                                  .bits = BG_REMOTE_MAX_BITS + 1, .hashes = 3};
    TU_EQ_I(bg_remote_filter_create(&f, r, "big", &o), BG_ETOOBIG);
    o = (bg_remote_filter_options){.backend = BG_REMOTE_BITMAP, .capacity = 1000000000,
                                   .error_rate = 0.0001};
    TU_EQ_I(bg_remote_filter_create(&f, r, "big", &o), BG_ETOOBIG);
    o = (bg_remote_filter_options){.backend = BG_REMOTE_BITMAP, .capacity = 10,
                                   .error_rate = 0.01, .nonscaling = 1};
    TU_EQ_I(bg_remote_filter_create(&f, r, "big", &o), BG_EINVAL);
    redisContext *c = ts_raw(&srv);
    TU_EQ_I(ts_count_keys(c, "{big}*"), 0); /* refused before anything was written */

    /* Far too few bits for the capacity: the model rate is 1, which the
     * filter's meta hash then holds, and open takes. */
    bg_remote_filter_options tiny = {.backend = BG_REMOTE_BITMAP, .capacity = 1000000,
                                      .bits = 10};
    TU_EQ_I(bg_remote_filter_create(&f, r, "tiny", &tiny), BG_OK);
    bg_remote_filter_close(f);
    TU_EQ_I(bg_remote_filter_open(&f, r, "tiny", BG_REMOTE_BITMAP), BG_OK);
    bg_remote_filter_stats ts;
    TU_EQ_I(bg_remote_filter_stats_get(f, &ts), BG_OK);
    TU_EQ_U(ts.bits, 64);
    TU_EQ_D(ts.error_rate, 1.0);
    TU_EQ_I(bg__remote_filter_drop(f), BG_OK);
    bg_remote_filter_close(f);

    static const struct {
        const char *fields;
        int want;
    } cases[] = {
        {"format 2 variant standard bits 1024 hashes 3 seed 0 generation 5 capacity 0 error_rate 0",
         BG_EVERSION},
        {"format 1 variant blocked bits 1024 hashes 3 seed 0 generation 5 capacity 0 error_rate 0",
         BG_EVARIANT},
        {"format 1 variant standard bits 8589934592 hashes 3 seed 0 generation 5 capacity 0 "
         "error_rate 0",
         BG_ETOOBIG},
        {"format 1 variant standard bits 1024 hashes 0 seed 0 generation 5 capacity 0 error_rate 0",
         BG_ECORRUPT},
        {"format 1 variant standard bits -5 hashes 3 seed 0 generation 5 capacity 0 error_rate 0",
         BG_ECORRUPT},
        {"format 1 variant standard bits 1024 hashes 3 seed 0 capacity 0 error_rate 0",
         BG_ECORRUPT},
        {"format 1 variant standard bits 1024 hashes 3 seed 0 generation 5 capacity 0 "
         "error_rate 1.5",
         BG_ECORRUPT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_ctx("bitmap open case %zu", i);
        redisReply *rep = redisCommand(c, "DEL {odd}:meta");
        freeReplyObject(rep);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "HSET {odd}:meta %s", cases[i].fields);
        rep = redisCommand(c, cmd);
        assert_non_null(rep);
        freeReplyObject(rep);
        TU_EQ_I(bg_remote_filter_open(&f, r, "odd", BG_REMOTE_BITMAP), cases[i].want);
        TU_TRUE(f == NULL);
        TU_TRUE(strlen(bg_remote_errstr(r)) > 0);
    }
    redisReply *rep = redisCommand(c, "DEL {odd}:meta");
    freeReplyObject(rep);
    /* A key of another type is the server's error, kept. */
    rep = redisCommand(c, "SET {str}:meta x");
    freeReplyObject(rep);
    TU_EQ_I(bg_remote_filter_open(&f, r, "str", BG_REMOTE_BITMAP), BG_EREMOTE);
    TU_TRUE(strstr(bg_remote_errstr(r), "WRONGTYPE") != NULL);
    rep = redisCommand(c, "DEL {str}:meta");
    freeReplyObject(rep);
    redisFree(c);
    bg_remote_close(r);
}

/* Deletes every key matching `pattern` (KEYS), behind the library's back. */
static void del_keys(redisContext *c, const char *pattern)
{
    redisReply *rep = redisCommand(
        c, "EVAL %s 0 %s",
        "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end return 1",
        pattern);
    assert_non_null(rep);
    TU_EQ_I(rep->type, REDIS_REPLY_INTEGER);
    freeReplyObject(rep);
}

/* A sharded filter "name" of 4 shards, created and closed. */
static void create_sharded(bg_remote *r, const char *name)
{
    bg_remote_filter *f;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 1000,
                                  .error_rate = 0.01, .shards = 4};
    TU_EQ_I(bg_remote_filter_create(&f, r, name, &o), BG_OK);
    TU_EQ_I(bg_remote_filter_add(f, "k", 1), BG_OK);
    bg_remote_filter_close(f);
}

/* `name` does not open and blocks a create; destroy deletes every key of
 * it, and then a create succeeds. */
static void destroy_blocked(bg_remote *r, redisContext *c, const char *name, const char *keys)
{
    bg_remote_filter *f;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 1000,
                                  .error_rate = 0.01, .shards = 2};
    TU_EQ_I(bg_remote_filter_open(&f, r, name, BG_REMOTE_BITMAP), BG_ENOTFOUND);
    TU_EQ_I(bg_remote_filter_create(&f, r, name, &o), BG_EEXIST);
    TU_EQ_I(bg_remote_filter_delete(r, name, BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(ts_count_keys(c, keys), 0);
    TU_EQ_I(bg_remote_filter_create(&f, r, name, &o), BG_OK);
    bg_remote_filter_close(f);
    TU_EQ_I(bg_remote_filter_delete(r, name, BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(ts_count_keys(c, keys), 0);
}

/* bg_remote_filter_delete: a filter by its name, whatever state it is in,
 * so that a create of the name succeeds after it. */
static void bitmap_destroy(void **state)
{
    (void)state;
    tu_ctx("bitmap: destroy by name");
    bg_remote *r = conn(&srv, 0);
    redisContext *c = ts_raw(&srv);
    TU_EQ_I(bg_remote_filter_delete(r, "none", BG_REMOTE_BITMAP), BG_ENOTFOUND);
    TU_EQ_I(bg_remote_filter_delete(NULL, "none", BG_REMOTE_BITMAP), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_delete(r, "a{b}", BG_REMOTE_BITMAP), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_delete(r, "none", (bg_remote_backend)7), BG_EINVAL);

    /* An unsharded filter with a rebuild pending: all three keys go. */
    bg_remote_filter *f;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 1000,
                                  .error_rate = 0.01};
    TU_EQ_I(bg_remote_filter_create(&f, r, "d1", &o), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(f, NULL), BG_OK);
    bg_remote_filter_close(f);
    TU_EQ_I(ts_count_keys(c, "{d1}*"), 3);
    TU_EQ_I(bg_remote_filter_delete(r, "d1", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{d1}*"), 0);

    /* A sharded filter that lost shard 2 (evicted, say). */
    create_sharded(r, "d2");
    del_keys(c, "{d2:s2}*");
    destroy_blocked(r, c, "d2", "{d2*");
    /* A drop that failed part-way: the count and shard 0 gone, 1..3 left
     * (the first gap does not end the shards). */
    create_sharded(r, "d3");
    del_keys(c, "{d3}:shards");
    del_keys(c, "{d3:s0}*");
    destroy_blocked(r, c, "d3", "{d3*");
    /* A healthy sharded filter, and a stray shard far past its count. */
    create_sharded(r, "d4");
    TU_EQ_I(bg_remote_filter_create(&f, r, "d4:s1000", &o), BG_OK);
    bg_remote_filter_close(f);
    TU_EQ_I(bg_remote_filter_delete(r, "d4", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{d4*"), 0);
    TU_EQ_I(bg_remote_filter_delete(r, "d4", BG_REMOTE_BITMAP), BG_ENOTFOUND);

    /* A filter whose bit array is gone (evicted, say): its meta hash goes
     * too, and the name can be created again. */
    TU_EQ_I(bg_remote_filter_create(&f, r, "d5", &o), BG_OK);
    bg_remote_filter_close(f);
    del_keys(c, "{d5}:bits:*");
    TU_EQ_I(bg_remote_filter_delete(r, "d5", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{d5}*"), 0);
    TU_EQ_I(bg_remote_filter_create(&f, r, "d5", &o), BG_OK);
    bg_remote_filter_close(f);
    TU_EQ_I(bg_remote_filter_delete(r, "d5", BG_REMOTE_BITMAP), BG_OK);

    /* A stale handle's drop deletes nothing of the filter that replaced
     * its own, sharded or not. */
    bg_remote_filter *stale, *now;
    bg_remote_filter_options so = o;
    so.shards = 2;
    for (int sharded = 0; sharded < 2; sharded++) {
        const bg_remote_filter_options *oo = sharded ? &so : &o;
        TU_EQ_I(bg_remote_filter_create(&stale, r, "d6", oo), BG_OK);
        TU_EQ_I(bg_remote_filter_delete(r, "d6", BG_REMOTE_BITMAP), BG_OK);
        TU_EQ_I(bg_remote_filter_create(&now, r, "d6", oo), BG_OK);
        TU_EQ_I(bg_remote_filter_add(now, "kept", 4), BG_OK);
        TU_EQ_I(bg__remote_filter_drop(stale), BG_ESTALE);
        bg_remote_filter_close(now);
        TU_EQ_I(bg_remote_filter_open(&now, r, "d6", BG_REMOTE_BITMAP), BG_OK);
        TU_EQ_I(bg_remote_filter_contains(now, "kept", 4), 1);
        TU_EQ_I(bg__remote_filter_drop(now), BG_OK);
        TU_EQ_I(ts_count_keys(c, "{d6*"), 0);
        bg_remote_filter_close(now);
        bg_remote_filter_close(stale);
    }
    redisFree(c);
    bg_remote_close(r);
}

int main(void)
{
    signal(SIGPIPE, SIG_DFL); /* the library must cope without SIG_IGN */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bitmap_basics),
        cmocka_unit_test(bitmap_cross_process),
        cmocka_unit_test(bitmap_fp_rate),
        cmocka_unit_test(bitmap_stale),
        cmocka_unit_test(bitmap_local_agrees),
        cmocka_unit_test(bitmap_limits),
        cmocka_unit_test(bitmap_destroy),
    };
    return cmocka_run_group_tests(tests, srv_setup, srv_teardown);
}
