/* bloomgate_remote against real redis-server processes (redis_server.h).
 *
 * The bitmap backend on a plain server: basics, no false negatives across
 * processes, the false-positive rate, stale-parameter detection, the same
 * bits as a local filter, the limits, and a server killed or frozen in the
 * middle of batches. The module backend, when $BLOOMGATE_MODULE names
 * bloomgate.so: the same operations through BF.*. */
#include "test_util.h"
#include "redis_server.h"

#include <bloomgate/file.h>
#include <bloomgate/remote.h>

#include "script_fault.h" /* lost requests and replies, in the rebuild tests */

#include <fcntl.h>
#include <poll.h>
#include <time.h>

static ts_server srv; /* the shared plain server */

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

static bg_remote *conn(const ts_server *s, uint32_t timeout_ms)
{
    bg_remote *r = NULL;
    bg_remote_options o = {.port = s->port, .command_timeout_ms = timeout_ms};
    int rc = bg_remote_connect(&r, &o);
    if (rc != BG_OK)
        fail_msg("connect: %s: %s", bg_err_name(rc), bg_remote_errstr(r));
    return r;
}

static void fill(tu_batch *b, uint64_t set, uint64_t first, size_t n)
{
    tu_batch_fill(b, 0, set, first, n);
}

/* ---- bitmap --------------------------------------------------------- */

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
    TU_EQ_I(bg_remote_filter_drop(f), BG_OK);
    TU_EQ_I(ts_int(c, "EXISTS {basics}:meta"), 0);
    TU_EQ_I(ts_count_keys(c, "{basics}*"), 0);
    TU_EQ_I(bg_remote_filter_add(g, "x", 1), BG_ENOTFOUND);
    TU_EQ_I(bg_remote_filter_contains(f, "x", 1), BG_ENOTFOUND);
    TU_EQ_I(ts_count_keys(c, "{basics}*"), 0); /* nothing recreated */
    TU_EQ_I(bg_remote_filter_drop(f), BG_ENOTFOUND);
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
    bg_remote_free(r);
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
    bg_remote_free(r); /* nothing shared with the child but the server */

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
        bg_remote_free(cr);
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
    TU_EQ_I(bg_remote_filter_drop(f1), BG_OK);
    bg_remote_filter_close(f1);
    bg_remote_filter_close(f2);
    bg_remote_free(r1);
    bg_remote_free(r2);
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
    TU_EQ_I(bg_remote_filter_drop(f), BG_OK);
    bg_remote_filter_close(f);
    bg_remote_free(r);
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

    TU_EQ_I(bg_remote_filter_drop(b), BG_OK);
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
    TU_EQ_I(bg_remote_filter_drop(a), BG_ESTALE);

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
    TU_EQ_I(bg_remote_filter_drop(a), BG_OK);
    bg_remote_filter_close(a);
    bg_remote_filter_close(b);
    bg_remote_free(ra);
    bg_remote_free(rb);
}

/* f answers as lf does, key for key, for keys 0..n-1 of set 3 (lf's) and
 * 0..absent-1 of set 4 (not added). */
static void agrees(bg_remote_filter *f, const bg_filter *lf, size_t n, size_t absent)
{
    enum { B = 500 };
    tu_batch b;
    tu_batch_init(&b, B);
    uint8_t res[B];
    for (uint64_t set = 3; set <= 4; set++)
        for (size_t i = 0; i < (set == 3 ? n : absent); i += B) {
            tu_batch_fill(&b, 1, set, i, B);
            TU_TRUE(bg_remote_filter_contains_many(f, b.keys, b.lens, B, res) >= 0);
            for (size_t j = 0; j < B; j++)
                TU_EQ_I(res[j], bg_filter_contains(lf, b.keys[j], b.lens[j]));
        }
    tu_batch_free(&b);
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

    TU_EQ_I(bg_remote_filter_drop(up), BG_OK);
    TU_EQ_I(bg_remote_filter_drop(fresh), BG_OK);
    bg_remote_filter_close(up);
    bg_remote_filter_close(fresh);
    redisFree(c);
    bg_remote_free(r);
    tu_batch_free(&b);
    free(img);
    bg_filter_free(lf);
}

/* ---- generations: publish, fetch, swap, rebuild ----------------------- */

static uint8_t *image_of(const bg_filter *f, uint64_t *size)
{
    TU_EQ_I(bg_filter_encoded_size(f, size), BG_OK);
    uint8_t *img = malloc(*size);
    assert_non_null(img);
    TU_EQ_I(bg_filter_encode(f, img, *size, NULL), BG_OK);
    return img;
}

/* The fetched filter is `want`'s file image, byte for byte: the same
 * layers, bits, item counts, seed and scaling. */
static void same_image(bg_remote_filter *f, const bg_filter *want)
{
    bg_filter *back;
    TU_EQ_I(bg_remote_filter_fetch(f, &back), BG_OK);
    uint64_t s1, s2;
    uint8_t *i1 = image_of(want, &s1), *i2 = image_of(back, &s2);
    TU_EQ_U(s1, s2);
    TU_TRUE(memcmp(i1, i2, s1) == 0);
    free(i1);
    free(i2);
    bg_filter_free(back);
}

/* A new local filter of options `lo`, holding keys 0..n-1 of `set`. */
static bg_filter *filled_filter(const bg_filter_options *lo, uint64_t set, size_t n)
{
    bg_filter *lf;
    TU_EQ_I(bg_filter_new(&lf, lo), BG_OK);
    tu_batch b;
    tu_batch_init(&b, 500);
    for (size_t i = 0; i < n; i += 500) {
        size_t c = n - i < 500 ? n - i : 500;
        tu_batch_fill(&b, 1, set, i, c);
        TU_TRUE(bg_filter_add_many(lf, b.keys, b.lens, c, NULL) >= 0);
    }
    tu_batch_free(&b);
    return lf;
}

static bg_filter *local_filter(uint64_t capacity, double p, uint64_t seed, uint64_t set,
                               size_t n)
{
    bg_filter_options lo = {.variant = BG_VARIANT_STANDARD, .capacity = capacity,
                            .error_rate = p, .seed = seed};
    return filled_filter(&lo, set, n);
}

/* Publish a local filter, agree key by key, fetch it back byte for byte;
 * a second publish swaps it under an open handle; a large one goes up in
 * several pieces. */
static void bitmap_publish_fetch(void **state)
{
    (void)state;
    tu_ctx("bitmap publish and fetch");
    enum { N = 5000, B = 500 };
    bg_filter *lf = local_filter(N, 0.02, 0xabcu, 3, N);
    bg_remote *r = conn(&srv, 0);
    TU_EQ_I(bg_remote_filter_publish(r, "pub", BG_REMOTE_BITMAP, lf), BG_OK);
    bg_remote_filter *f;
    TU_EQ_I(bg_remote_filter_open(&f, r, "pub", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_U(bg_remote_filter_bits(f), bg_filter_bits(lf));
    TU_EQ_U(bg_remote_filter_seed(f), 0xabcu);
    agrees(f, lf, N, 20000);
    tu_batch b;
    tu_batch_init(&b, B);
    uint8_t res[B];
    bg_remote_filter_stats st;
    TU_EQ_I(bg_remote_filter_stats_get(f, &st), BG_OK);
    TU_EQ_U(st.items, bg_filter_items(lf));

    /* Fetch: the same image, byte for byte (header, items, checksum). */
    same_image(f, lf);

    /* Publish again (other keys, same shape): the open handle follows. */
    uint64_t g1 = bg_remote_filter_generation(f);
    bg_filter *lf2 = local_filter(N, 0.02, 0xabcu, 5, N);
    TU_EQ_I(bg_remote_filter_publish(r, "pub", BG_REMOTE_BITMAP, lf2), BG_OK);
    tu_batch_fill(&b, 1, 5, 0, B);
    TU_EQ_I(bg_remote_filter_contains_many(f, b.keys, b.lens, B, res), B);
    TU_TRUE(bg_remote_filter_generation(f) != g1);
    redisContext *c = ts_raw(&srv);
    TU_EQ_I(ts_count_keys(c, "{pub}*"), 2); /* the old bits are gone */
    same_image(f, lf2);

    /* Refusals. */
    bg_filter *blk;
    bg_filter_options bo = {.variant = BG_VARIANT_BLOCKED, .capacity = 1000, .error_rate = 0.01};
    TU_EQ_I(bg_filter_new(&blk, &bo), BG_OK);
    TU_EQ_I(bg_remote_filter_publish(r, "pub", BG_REMOTE_BITMAP, blk), BG_EVARIANT);
    bg_filter_free(blk);
    TU_EQ_I(bg_remote_filter_publish(r, "a{b}", BG_REMOTE_BITMAP, lf), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_publish(r, "pub", BG_REMOTE_BITMAP, NULL), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_fetch(f, NULL), BG_EINVAL);

    /* Several pieces each way (> 4 MiB). */
    bg_filter *big;
    bg_filter_options go = {.variant = BG_VARIANT_STANDARD, .bits = 80000000, .hashes = 3,
                            .seed = 1};
    TU_EQ_I(bg_filter_new(&big, &go), BG_OK);
    for (size_t i = 0; i < 2000; i += B) {
        tu_batch_fill(&b, 1, 6, i, B);
        TU_TRUE(bg_filter_add_many(big, b.keys, b.lens, B, NULL) >= 0);
    }
    TU_EQ_I(bg_remote_filter_publish(r, "pub", BG_REMOTE_BITMAP, big), BG_OK);
    TU_EQ_I(bg_remote_filter_contains(f, "x", 1), BG_ESTALE); /* reshaped */
    bg_remote_filter_close(f);
    TU_EQ_I(bg_remote_filter_open(&f, r, "pub", BG_REMOTE_BITMAP), BG_OK);
    tu_batch_fill(&b, 1, 6, 1500, B);
    TU_EQ_I(bg_remote_filter_contains_many(f, b.keys, b.lens, B, res), B);
    same_image(f, big);
    bg_filter_free(big);

    TU_EQ_I(bg_remote_filter_drop(f), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{pub}*"), 0);
    bg_filter *back;
    TU_EQ_I(bg_remote_filter_fetch(f, &back), BG_ENOTFOUND);
    TU_TRUE(back == NULL);
    bg_remote_filter_close(f);
    redisFree(c);
    bg_remote_free(r);
    tu_batch_free(&b);
    bg_filter_free(lf);
    bg_filter_free(lf2);
}

/* A reader process: checks the known-present keys (set 7, K of them) in a
 * loop until its handle goes stale (the final reshape). Exit 0: never a 0
 * and at least 5 generations seen; 1: a false negative; 2: another error;
 * 3: too long; 4: too few swaps seen. */
static void swap_reader(int port, int ready_fd, size_t K)
{
    bg_remote *cr = NULL;
    bg_remote_options co = {.port = port};
    bg_remote_filter *cf = NULL;
    if (bg_remote_connect(&cr, &co) != BG_OK ||
        bg_remote_filter_open(&cf, cr, "swap", BG_REMOTE_BITMAP) != BG_OK)
        _exit(2);
    tu_batch b;
    tu_batch_init(&b, 250);
    uint8_t res[250];
    int code = 3, gens = 1;
    uint64_t g = bg_remote_filter_generation(cf);
    double end = tu_now() + 60;
    for (int loops = 0; tu_now() < end; loops++) {
        int stale = 0;
        for (size_t i = 0; i < K && !stale; i += 250) {
            tu_batch_fill(&b, 1, 7, i, 250);
            int64_t n = bg_remote_filter_contains_many(cf, b.keys, b.lens, 250, res);
            if (n == BG_ESTALE) {
                stale = 1;
            } else if (n < 0) {
                code = 2;
                goto done;
            } else if (n != 250) {
                code = 1;
                goto done;
            }
            if (bg_remote_filter_generation(cf) != g) {
                g = bg_remote_filter_generation(cf);
                gens++;
            }
        }
        if (stale) {
            code = gens >= 5 ? 0 : 4;
            goto done;
        }
        if (loops == 0 && write(ready_fd, "r", 1) != 1)
            _exit(2);
    }
done:
    tu_batch_free(&b);
    bg_remote_filter_close(cf);
    bg_remote_free(cr);
    _exit(code);
}

/* 20 publishes of rebuilt filters (each holding the known keys, plus
 * others) under 2 reader processes, which never see a false negative; a
 * reshape at the end sends them BG_ESTALE. */
static void bitmap_swap_readers(void **state)
{
    (void)state;
    tu_ctx("bitmap swaps under concurrent readers");
    enum { K = 1000, SWAPS = 20, READERS = 2 };
    bg_remote *r = conn(&srv, 0);
    bg_filter *lf = local_filter(20000, 0.01, 77, 7, K);
    TU_EQ_I(bg_remote_filter_publish(r, "swap", BG_REMOTE_BITMAP, lf), BG_OK);
    bg_filter_free(lf);

    int fds[2];
    TU_EQ_I(pipe(fds), 0);
    pid_t pids[READERS];
    for (int i = 0; i < READERS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            close(fds[0]);
            swap_reader(srv.port, fds[1], K);
        }
    }
    close(fds[1]);
    char ready[READERS];
    TU_EQ_I(read(fds[0], ready, 1), 1);
    TU_EQ_I(read(fds[0], ready + 1, 1), 1);
    close(fds[0]);

    for (int s = 0; s < SWAPS; s++) {
        lf = local_filter(20000, 0.01, 77, 7, K);
        tu_batch b;
        tu_batch_init(&b, 500);
        tu_batch_fill(&b, 1, 100 + (uint64_t)s, 0, 500); /* this rebuild's own keys */
        TU_TRUE(bg_filter_add_many(lf, b.keys, b.lens, 500, NULL) >= 0);
        tu_batch_free(&b);
        TU_EQ_I(bg_remote_filter_publish(r, "swap", BG_REMOTE_BITMAP, lf), BG_OK);
        bg_filter_free(lf);
        nanosleep(&(struct timespec){.tv_nsec = 30000000}, NULL);
    }
    redisContext *c = ts_raw(&srv);
    TU_EQ_I(ts_count_keys(c, "{swap}*"), 2);
    /* A reshape: the readers' handles go stale, and they stop. */
    lf = local_filter(40000, 0.01, 77, 7, K);
    TU_EQ_I(bg_remote_filter_publish(r, "swap", BG_REMOTE_BITMAP, lf), BG_OK);
    bg_filter_free(lf);
    for (int i = 0; i < READERS; i++) {
        int status;
        TU_EQ_I(waitpid(pids[i], &status, 0), pids[i]);
        TU_TRUE(WIFEXITED(status));
        TU_EQ_I(WEXITSTATUS(status), 0);
    }
    TU_EQ_I(ts_count_keys(c, "{swap}*"), 2);
    redisFree(c);
    bg_remote_filter *f;
    TU_EQ_I(bg_remote_filter_open(&f, r, "swap", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_drop(f), BG_OK);
    bg_remote_filter_close(f);
    bg_remote_free(r);
}

/* Another process: opens `name`, says so on ready_fd, waits for go_fd,
 * then adds keys 0..n-1 of set 9 (during a rebuild, or a fetch). */
static void rebuild_adder(int port, const char *name, bg_remote_backend backend, int ready_fd,
                          int go_fd, size_t n)
{
    bg_remote *cr = NULL;
    bg_remote_options co = {.port = port};
    bg_remote_filter *cf = NULL;
    char x;
    if (bg_remote_connect(&cr, &co) != BG_OK ||
        bg_remote_filter_open(&cf, cr, name, backend) != BG_OK ||
        write(ready_fd, "r", 1) != 1 || read(go_fd, &x, 1) != 1)
        _exit(2);
    tu_batch b;
    tu_batch_init(&b, 50);
    int ok = 1;
    for (size_t i = 0; ok && i < n; i += 50) {
        tu_batch_fill(&b, 1, 9, i, 50);
        ok = bg_remote_filter_add_many(cf, b.keys, b.lens, 50, NULL) >= 0;
    }
    tu_batch_free(&b);
    bg_remote_filter_close(cf);
    bg_remote_free(cr);
    _exit(ok ? 0 : 1);
}

static void expect_all(bg_remote_filter *f, uint64_t set, size_t n)
{
    tu_batch b;
    tu_batch_init(&b, 100);
    uint8_t res[100];
    for (size_t i = 0; i < n; i += 100) {
        size_t c = n - i < 100 ? n - i : 100;
        tu_batch_fill(&b, 1, set, i, c);
        int64_t got = bg_remote_filter_contains_many(f, b.keys, b.lens, c, res);
        if (got != (int64_t)c)
            fail_msg("set %llu keys %zu..: %lld of %zu present (%s)", (unsigned long long)set, i,
                     (long long)got, c, got < 0 ? bg_err_name((int)got) : "");
    }
    tu_batch_free(&b);
}

static void add_set(bg_remote_filter *f, uint64_t set, size_t first, size_t n, int rebuild)
{
    tu_batch b;
    tu_batch_init(&b, 100);
    for (size_t i = first; i < first + n; i += 100) {
        tu_batch_fill(&b, 1, set, i, 100);
        int64_t rc = rebuild ? bg_remote_filter_rebuild_add_many(f, b.keys, b.lens, 100, NULL)
                             : bg_remote_filter_add_many(f, b.keys, b.lens, 100, NULL);
        if (rc < 0)
            fail_msg("add: %s", bg_err_name((int)rc));
    }
    tu_batch_free(&b);
}

/* Another process that adds during a rebuild (rebuild_adder), started and
 * waiting for the word. */
typedef struct adder {
    pid_t pid;
    int ready[2], go[2];
} adder;

static void adder_start(adder *ad, int port, const char *name, bg_remote_backend backend,
                        size_t n)
{
    TU_EQ_I(pipe(ad->ready), 0);
    TU_EQ_I(pipe(ad->go), 0);
    ad->pid = fork();
    assert_true(ad->pid >= 0);
    if (ad->pid == 0)
        rebuild_adder(port, name, backend, ad->ready[1], ad->go[0], n);
    char x;
    TU_EQ_I(read(ad->ready[0], &x, 1), 1);
}

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
    sf_arm(BG__SCRIPT_REBUILD_COMMIT, BG__FAULT_LOSE_REPLY, 1);
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

    TU_EQ_I(bg_remote_filter_drop(a), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{rb}*"), 0);
    redisFree(c);
    bg_remote_filter_close(a);
    bg_remote_filter_close(w);
    bg_remote_free(r);
    bg_remote_free(rb);
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
    TU_EQ_I(bg_remote_filter_destroy(r, "lost", BG_REMOTE_BITMAP), BG_OK);
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
    TU_EQ_I(bg_remote_filter_drop(f), BG_OK);
    bg_remote_filter_close(f);
    bg_remote_filter_close(g);
    redisFree(c);
    bg_remote_free(r);
    bg_remote_free(r2);
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
    TU_EQ_I(bg_remote_filter_drop(m), BG_OK);
    bg_remote_filter_close(m);
    bg_remote_filter_close(m2);

    TU_EQ_I(bg_remote_filter_drop(a), BG_OK);
    redisFree(c);
    bg_remote_filter_close(a);
    bg_remote_filter_close(w);
    bg_remote_free(r);
    bg_remote_free(rb);
}

/* Adds keys [first, first + n) of `set` through *f (name `name` on r),
 * reopening the handle once if a rebuild reshaped the filter. */
static void add_reopen(bg_remote_filter **f, bg_remote *r, const char *name, uint64_t set,
                       size_t first, size_t n)
{
    tu_batch b;
    tu_batch_init(&b, n);
    tu_batch_fill(&b, 1, set, first, n);
    int64_t rc = bg_remote_filter_add_many(*f, b.keys, b.lens, n, NULL);
    if (rc == BG_ESTALE) {
        bg_remote_filter_close(*f);
        *f = NULL;
        TU_EQ_I(bg_remote_filter_open(f, r, name, BG_REMOTE_BITMAP), BG_OK);
        rc = bg_remote_filter_add_many(*f, b.keys, b.lens, n, NULL);
    }
    if (rc < 0)
        fail_msg("add to %s: %s", name, bg_err_name((int)rc));
    tu_batch_free(&b);
}

/* A reader process: checks set 6's first n keys again and again until a
 * byte arrives on stop_fd; exits 1 on a false negative, 2 on an error other
 * than a reshape (which it follows by reopening), 3 if it never ran. */
static void sharded_reader(int port, const char *name, size_t n, int stop_fd)
{
    bg_remote *cr = NULL;
    bg_remote_options co = {.port = port};
    bg_remote_filter *cf = NULL;
    if (bg_remote_connect(&cr, &co) != BG_OK ||
        bg_remote_filter_open(&cf, cr, name, BG_REMOTE_BITMAP) != BG_OK)
        _exit(2);
    tu_batch b;
    tu_batch_init(&b, n);
    tu_batch_fill(&b, 1, 6, 0, n);
    long rounds = 0;
    for (;;) {
        struct pollfd p = {.fd = stop_fd, .events = POLLIN};
        if (poll(&p, 1, 0) > 0)
            break;
        int64_t got = bg_remote_filter_contains_many(cf, b.keys, b.lens, n, NULL);
        if (got == BG_ESTALE) {
            bg_remote_filter_close(cf);
            if (bg_remote_filter_open(&cf, cr, name, BG_REMOTE_BITMAP) != BG_OK)
                _exit(2);
            continue;
        }
        if (got < 0)
            _exit(2);
        if (got != (int64_t)n)
            _exit(1);
        rounds++;
    }
    _exit(rounds > 0 ? 0 : 3);
}

/* A sharded filter rebuilt five times (new shape, same shape) while another
 * handle adds and another process reads: no key is ever missing, though the
 * shards swap one after another; the seed cannot change; abort cancels
 * every shard's rebuild; one shard's cancelled cancels the rest; after a
 * commit lost part-way, abort cancels only this handle's shards. */
static void sharded_rebuild(void **state)
{
    (void)state;
    tu_ctx("sharded rebuild");
    enum { SRC = 1000, PER_ROUND = 200, ROUNDS = 5 };
    bg_remote *r = conn(&srv, 0), *rw = conn(&srv, 0);
    bg_remote_filter *a, *w;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 4000,
                                  .error_rate = 0.01, .seed = 5, .shards = 4};
    TU_EQ_I(bg_remote_filter_create(&a, r, "srb", &o), BG_OK);
    add_set(a, 6, 0, SRC, 0);
    TU_EQ_I(bg_remote_filter_open(&w, rw, "srb", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_set_rebuild_lease(w, 30000), BG_OK);
    bg_remote_filter_options other_seed = {.capacity = 8000, .error_rate = 0.001, .seed = 6};
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, &other_seed), BG_EINVAL);
    uint64_t bits0 = bg_remote_filter_bits(w);

    int stop[2];
    TU_EQ_I(pipe(stop), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        sharded_reader(srv.port, "srb", SRC, stop[0]);

    bg_remote_filter_options bigger = {.capacity = 8000, .error_rate = 0.001, .seed = 5};
    for (size_t round = 0; round < ROUNDS; round++) {
        TU_EQ_I(bg_remote_filter_rebuild_begin(w, round % 2 ? NULL : &bigger), BG_OK);
        if (round == 0) {
            TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_EEXIST);
            TU_EQ_I(bg_remote_filter_rebuild_begin(a, NULL), BG_EEXIST);
        }
        /* The source: set 6 and the set 8 keys of earlier rounds, read after
         * begin; meanwhile this round's set 8 keys are added through a. */
        for (size_t i = 0; i < SRC; i += 100) {
            add_set(w, 6, i, 100, 1);
            add_reopen(&a, r, "srb", 8, round * PER_ROUND + i / 5, PER_ROUND / 10);
        }
        if (round)
            add_set(w, 8, 0, round * PER_ROUND, 1);
        TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_OK);
        TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_EINVAL);
        expect_all(w, 6, SRC);
        expect_all(w, 8, (round + 1) * PER_ROUND);
    }
    TU_EQ_I(write(stop[1], "s", 1), 1);
    int status;
    TU_EQ_I(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("reader: exit status %d (1: a false negative)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    close(stop[0]);
    close(stop[1]);
    TU_TRUE(bg_remote_filter_bits(w) > bits0); /* sized for 8000 at p = 0.001 */
    redisContext *c = ts_raw(&srv);
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 8); /* 4 shards: meta and one bit array each */

    /* Abort from a handle that began none: every shard's rebuild goes. */
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 12);
    bg_remote_filter_close(a);
    TU_EQ_I(bg_remote_filter_open(&a, r, "srb", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_abort(a), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_abort(a), BG_ENOTFOUND);
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 8);
    tu_batch b;
    tu_batch_init(&b, 10);
    tu_batch_fill(&b, 1, 6, 0, 10);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), BG_ESTALE);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), BG_EINVAL);
    expect_all(a, 6, SRC);

    /* One shard's rebuild cancelled (by a handle on that shard alone) ends
     * the whole rebuild, in add and in commit: no other shard's stays
     * pending, writing twice until its lease runs out. */
    bg_remote_filter *s1, *s2;
    TU_EQ_I(bg_remote_filter_open(&s1, r, "srb:s1", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_open(&s2, r, "srb:s2", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_abort(s1), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), BG_ESTALE);
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 8);
    TU_EQ_I(bg_remote_filter_rebuild_abort(a), BG_ENOTFOUND);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    add_set(w, 6, 0, SRC, 1);
    TU_EQ_I(bg_remote_filter_rebuild_abort(s2), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_ESTALE); /* s0 and s1 swapped, s3 not */
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 8);
    TU_EQ_I(bg_remote_filter_rebuild_abort(a), BG_ENOTFOUND);
    expect_all(a, 6, SRC);

    /* A commit lost at shard 2: shards 0 and 1 are swapped, and another
     * client begins a rebuild of shard 0. This handle's abort cancels its
     * own shards 2 and 3 only. */
    bg_remote_filter *s0;
    TU_EQ_I(bg_remote_filter_open(&s0, r, "srb:s0", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    add_set(w, 6, 0, SRC, 1);
    sf_arm_after(BG__SCRIPT_REBUILD_COMMIT, BG__FAULT_LOSE_REQUEST, 2, 1);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_ECONN);
    TU_EQ_I(sf_disarm(), 1);
    TU_EQ_I(bg_remote_filter_rebuild_begin(s0, NULL), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 11); /* s0's new rebuild, s2's and s3's */
    TU_EQ_I(bg_remote_filter_rebuild_abort(w), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 9);
    TU_TRUE(bg_remote_filter_rebuild_add_many(s0, b.keys, b.lens, 10, NULL) >= 0);
    TU_EQ_I(bg_remote_filter_rebuild_abort(s0), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 8);
    expect_all(a, 6, SRC);
    tu_batch_free(&b);
    bg_remote_filter_close(s0);
    bg_remote_filter_close(s1);
    bg_remote_filter_close(s2);

    TU_EQ_I(bg_remote_filter_drop(a), BG_OK);
    TU_EQ_I(ts_count_keys(c, "*srb*"), 0);
    redisFree(c);
    bg_remote_filter_close(a);
    bg_remote_filter_close(w);
    bg_remote_free(r);
    bg_remote_free(rw);
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
    TU_EQ_I(bg_remote_filter_drop(f), BG_OK);
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
    bg_remote_free(r);
}

/* ---- connections ---------------------------------------------------- */

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
    TU_EQ_I(bg_remote_filter_destroy(r, name, BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(ts_count_keys(c, keys), 0);
    TU_EQ_I(bg_remote_filter_create(&f, r, name, &o), BG_OK);
    bg_remote_filter_close(f);
    TU_EQ_I(bg_remote_filter_destroy(r, name, BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(ts_count_keys(c, keys), 0);
}

/* bg_remote_filter_destroy: a filter by its name, whatever state it is in,
 * so that a create of the name succeeds after it. */
static void bitmap_destroy(void **state)
{
    (void)state;
    tu_ctx("bitmap: destroy by name");
    bg_remote *r = conn(&srv, 0);
    redisContext *c = ts_raw(&srv);
    TU_EQ_I(bg_remote_filter_destroy(r, "none", BG_REMOTE_BITMAP), BG_ENOTFOUND);
    TU_EQ_I(bg_remote_filter_destroy(NULL, "none", BG_REMOTE_BITMAP), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_destroy(r, "a{b}", BG_REMOTE_BITMAP), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_destroy(r, "none", (bg_remote_backend)7), BG_EINVAL);

    /* An unsharded filter with a rebuild pending: all three keys go. */
    bg_remote_filter *f;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 1000,
                                  .error_rate = 0.01};
    TU_EQ_I(bg_remote_filter_create(&f, r, "d1", &o), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(f, NULL), BG_OK);
    bg_remote_filter_close(f);
    TU_EQ_I(ts_count_keys(c, "{d1}*"), 3);
    TU_EQ_I(bg_remote_filter_destroy(r, "d1", BG_REMOTE_BITMAP), BG_OK);
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
    TU_EQ_I(bg_remote_filter_destroy(r, "d4", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{d4*"), 0);
    TU_EQ_I(bg_remote_filter_destroy(r, "d4", BG_REMOTE_BITMAP), BG_ENOTFOUND);

    /* A filter whose bit array is gone (evicted, say): its meta hash goes
     * too, and the name can be created again. */
    TU_EQ_I(bg_remote_filter_create(&f, r, "d5", &o), BG_OK);
    bg_remote_filter_close(f);
    del_keys(c, "{d5}:bits:*");
    TU_EQ_I(bg_remote_filter_destroy(r, "d5", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{d5}*"), 0);
    TU_EQ_I(bg_remote_filter_create(&f, r, "d5", &o), BG_OK);
    bg_remote_filter_close(f);
    TU_EQ_I(bg_remote_filter_destroy(r, "d5", BG_REMOTE_BITMAP), BG_OK);

    /* A stale handle's drop deletes nothing of the filter that replaced
     * its own, sharded or not. */
    bg_remote_filter *stale, *now;
    bg_remote_filter_options so = o;
    so.shards = 2;
    for (int sharded = 0; sharded < 2; sharded++) {
        const bg_remote_filter_options *oo = sharded ? &so : &o;
        TU_EQ_I(bg_remote_filter_create(&stale, r, "d6", oo), BG_OK);
        TU_EQ_I(bg_remote_filter_destroy(r, "d6", BG_REMOTE_BITMAP), BG_OK);
        TU_EQ_I(bg_remote_filter_create(&now, r, "d6", oo), BG_OK);
        TU_EQ_I(bg_remote_filter_add(now, "kept", 4), BG_OK);
        TU_EQ_I(bg_remote_filter_drop(stale), BG_ESTALE);
        bg_remote_filter_close(now);
        TU_EQ_I(bg_remote_filter_open(&now, r, "d6", BG_REMOTE_BITMAP), BG_OK);
        TU_EQ_I(bg_remote_filter_contains(now, "kept", 4), 1);
        TU_EQ_I(bg_remote_filter_drop(now), BG_OK);
        TU_EQ_I(ts_count_keys(c, "{d6*"), 0);
        bg_remote_filter_close(now);
        bg_remote_filter_close(stale);
    }
    redisFree(c);
    bg_remote_free(r);
}

static void connect_errors(void **state)
{
    (void)state;
    tu_ctx("connect errors");
    bg_remote *r = NULL;
    bg_remote_options o = {.port = ts_free_port(), .connect_timeout_ms = 500};
    TU_EQ_I(bg_remote_connect(&r, &o), BG_ECONN);
    assert_non_null(r);
    TU_TRUE(strlen(bg_remote_errstr(r)) > 0);
    bg_remote_filter *f;
    TU_EQ_I(bg_remote_filter_open(&f, r, "x", BG_REMOTE_BITMAP), BG_ECONN);
    bg_remote_free(r);
    TU_EQ_I(bg_remote_connect(NULL, &o), BG_EINVAL);
    TU_EQ_I(bg_remote_connect(&r, NULL), BG_EINVAL);
    TU_TRUE(r == NULL);
    TU_EQ_I(bg_remote_reconnect(NULL), BG_EINVAL);
    /* AUTH against a server without a password: the server's message. */
    o = (bg_remote_options){.port = srv.port, .password = "secret"};
    TU_EQ_I(bg_remote_connect(&r, &o), BG_EREMOTE);
    TU_TRUE(strstr(bg_remote_errstr(r), "AUTH") != NULL || strstr(bg_remote_errstr(r), "auth"));
    bg_remote_free(r);
    TU_TRUE(strcmp(bg_remote_errstr(NULL), "") == 0);
}

/* Keys [0, n) of b added (or counted present) in calls of 1000, each well
 * within a command timeout on a host loaded several times over (a call of
 * 20000 once took over 1 s there); the number added (present). */
static int64_t in_parts(bg_remote_filter *f, const tu_batch *b, size_t n, int add)
{
    int64_t total = 0;
    for (size_t i = 0; i < n; i += 1000) {
        size_t part = n - i < 1000 ? n - i : 1000;
        int64_t rc = add ? bg_remote_filter_add_many(f, b->keys + i, b->lens + i, part, NULL)
                         : bg_remote_filter_contains_many(f, b->keys + i, b->lens + i, part, NULL);
        if (rc < 0)
            return rc;
        total += rc;
    }
    return total;
}

/* A frozen, then killed server mid-batch: BG_ECONN within the timeout, no
 * crash, and the filter works again once the server is back. With shards,
 * the batch's parts are pipelined on the one connection (the fanout).
 * The timeout leaves a loaded machine time for a whole batch of 20000 adds
 * (300 ms did not, once, on a 2-core machine running the suite); the calls
 * that must succeed go in parts (in_parts). */
static void dies_mid_batch(uint32_t shards)
{
    enum { B = 20000, TIMEOUT_MS = 1000 };
    ts_server s;
    ts_start(&s, NULL);
    bg_remote *r = conn(&s, TIMEOUT_MS);
    bg_remote_filter *f;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 200000,
                                  .error_rate = 0.01, .shards = shards};
    TU_EQ_I(bg_remote_filter_create(&f, r, "dies", &o), BG_OK);
    tu_batch b;
    tu_batch_init(&b, B);
    fill(&b, 5, 0, B);
    TU_EQ_I(in_parts(f, &b, B, 1), B);
    redisContext *c = ts_raw(&s);
    redisReply *rep = redisCommand(c, "SAVE");
    freeReplyObject(rep);
    redisFree(c);

    tu_ctx("frozen server");
    kill(s.pid, SIGSTOP);
    double t0 = tu_now();
    TU_EQ_I(bg_remote_filter_add_many(f, b.keys, b.lens, B, NULL), BG_ECONN);
    TU_TRUE(tu_now() - t0 < 2.0 * TIMEOUT_MS / 1000);
    TU_TRUE(strlen(bg_remote_errstr(r)) > 0);
    kill(s.pid, SIGCONT);

    tu_ctx("killed server");
    pid_t killer = fork();
    assert_true(killer >= 0);
    if (killer == 0) {
        struct timespec ts = {0, 150000000};
        nanosleep(&ts, NULL);
        kill(s.pid, SIGKILL);
        _exit(0);
    }
    int rc = BG_OK;
    t0 = tu_now();
    for (uint64_t i = 1; rc >= 0 && tu_now() - t0 < 10; i++) {
        fill(&b, 6, i * B, B);
        rc = (int)bg_remote_filter_add_many(f, b.keys, b.lens, B, NULL);
    }
    TU_EQ_I(rc, BG_ECONN);
    waitpid(killer, NULL, 0);
    waitpid(s.pid, NULL, 0);
    ts_track(0, s.pid);
    s.pid = 0;
    /* While it is down, calls fail fast. */
    TU_EQ_I(bg_remote_filter_contains(f, "k", 1), BG_ECONN);

    tu_ctx("server back");
    ts_spawn(&s);
    fill(&b, 5, 0, B);
    TU_EQ_I(in_parts(f, &b, B, 0), B);
    TU_EQ_I(bg_remote_reconnect(r), BG_OK);
    TU_EQ_I(bg_remote_filter_contains(f, b.keys[0], b.lens[0]), 1);
    tu_batch_free(&b);
    bg_remote_filter_close(f);
    bg_remote_free(r);
    ts_stop(&s);
}

static void server_dies_mid_batch(void **state)
{
    (void)state;
    dies_mid_batch(0);
}

static void server_dies_mid_sharded_batch(void **state)
{
    (void)state;
    dies_mid_batch(4);
}

/* ---- module --------------------------------------------------------- */

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
    TU_EQ_I(bg_remote_filter_drop(f), BG_OK);
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
    bg_remote_free(rs);
    bg_remote_filter_close(f);
    TU_EQ_I(bg_remote_filter_open(&f, r, "mod", BG_REMOTE_MODULE), BG_ENOTFOUND);
    TU_EQ_I(bg_remote_filter_drop(g), BG_ENOTFOUND);
    /* By name: a module filter, then nothing. */
    TU_EQ_I(bg_remote_filter_create(&f, r, "mod", &o), BG_OK);
    bg_remote_filter_close(f);
    TU_EQ_I(bg_remote_filter_destroy(r, "mod", BG_REMOTE_MODULE), BG_OK);
    TU_EQ_I(ts_int(c, "EXISTS mod"), 0);
    TU_EQ_I(bg_remote_filter_destroy(r, "mod", BG_REMOTE_MODULE), BG_ENOTFOUND);
    redisFree(c);
    bg_remote_filter_close(g);
    bg_remote_free(r2);
    bg_remote_free(r);
    tu_batch_free(&b);
    ts_stop(&s);
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
    sf_arm(BG__SCRIPT_MODULE_REBUILD_COMMIT, BG__FAULT_LOSE_REPLY, 1);
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
    sf_arm(BG__SCRIPT_MODULE_REBUILD_COMMIT, BG__FAULT_LOSE_REQUEST, 1);
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
    TU_EQ_I(bg_remote_filter_drop(a), BG_OK);
    TU_EQ_I(ts_count_keys(c, "*"), 0);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_ENOTFOUND);
    TU_EQ_I(ts_count_keys(c, "*"), 0);

    tu_batch_free(&b);
    redisFree(c);
    bg_remote_filter_close(a);
    bg_remote_filter_close(w);
    bg_remote_free(r);
    bg_remote_free(rb);
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
    const int kinds[2] = {BG__FAULT_LOSE_REPLY, BG__FAULT_LOSE_REQUEST};
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
    TU_EQ_I(bg_remote_filter_drop(g), BG_OK);
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
    TU_EQ_I(bg_remote_filter_stage(&f, r, "st", &o), BG_OK);
    TU_EQ_I(bg_remote_filter_drop(f), BG_OK);
    TU_EQ_I(ts_count_keys(c, "*"), 0);
    TU_EQ_I(bg_remote_filter_stage_commit(f), BG_ENOTFOUND);
    bg_remote_filter_close(f);

    redisFree(c);
    bg_remote_filter_close(g);
    bg_remote_free(r2);
    bg_remote_free(r);
    tu_batch_free(&b);
    ts_stop(&s);
}

/* A scalable local filter (capacity of its first layer, p = 0.01) holding
 * keys 0..n-1 of `set`. */
static bg_filter *scalable_filter(uint64_t capacity, uint64_t set, size_t n)
{
    /* The module refuses a filter that may grow past its MAX_BYTES. */
    bg_filter_options lo = {.variant = BG_VARIANT_SCALABLE, .capacity = capacity,
                            .error_rate = 0.01, .max_bytes = UINT64_C(256) << 20};
    return filled_filter(&lo, set, n);
}

/* Module publish and fetch: a local scalable filter of several layers goes
 * up and answers as it did, and comes back byte for byte, also while
 * another process adds (fetch dumps a copy); a second publish replaces the
 * filter under an open handle, keeps the name's time to live and cancels a
 * pending rebuild; a large filter goes up and down in several chunks;
 * refusals and failures leave no hidden key behind. */
static void module_publish_fetch(void **state)
{
    (void)state;
    tu_ctx("module publish and fetch");
    enum { N = 5000, B = 500, DURING = 30000 };
    ts_server s;
    ts_start_module(&s);
    bg_remote *r = conn(&s, 0), *r2 = conn(&s, 0);
    redisContext *c = ts_raw(&s);

    bg_filter *lf = scalable_filter(1000, 3, N); /* layers of 1000, 2000, 4000 */
    bg_filter_scaling sc;
    TU_EQ_I(bg_filter_scaling_get(lf, &sc), BG_OK);
    TU_EQ_U(sc.layers, 3);
    int prc = bg_remote_filter_publish(r, "mp", BG_REMOTE_MODULE, lf);
    if (prc != BG_OK)
        fail_msg("publish: %s (%s)", bg_err_name(prc), bg_remote_errstr(r));
    TU_EQ_I(ts_count_keys(c, "*"), 1); /* no upload left behind */
    TU_EQ_I(ts_int(c, "PTTL mp"), -1);
    bg_remote_filter *f, *w;
    TU_EQ_I(bg_remote_filter_open(&f, r, "mp", BG_REMOTE_MODULE), BG_OK);
    bg_remote_filter_stats st;
    TU_EQ_I(bg_remote_filter_stats_get(f, &st), BG_OK);
    TU_EQ_U(st.items, bg_filter_items(lf));
    TU_EQ_U(st.layers, 3);
    agrees(f, lf, N, 20000);
    same_image(f, lf);
    tu_batch b;
    tu_batch_init(&b, B);

    /* Fetch while another process adds: each download is one moment's
     * filter (a dump of the live key would fail its checksum). */
    adder ad;
    adder_start(&ad, s.port, "mp", BG_REMOTE_MODULE, DURING);
    TU_EQ_I(write(ad.go[1], "g", 1), 1);
    uint64_t items_seen = bg_filter_items(lf), fetches = 0, mid = 0;
    int status;
    while (waitpid(ad.pid, &status, WNOHANG) == 0) {
        bg_filter *back;
        int rc = bg_remote_filter_fetch(f, &back);
        if (rc != BG_OK)
            fail_msg("fetch during adds: %s (%s)", bg_err_name(rc), bg_remote_errstr(r));
        uint64_t items = bg_filter_items(back);
        TU_TRUE(items >= items_seen);
        mid += items > bg_filter_items(lf) && items < bg_filter_items(lf) + DURING;
        items_seen = items;
        fetches++;
        tu_batch_fill(&b, 1, 3, 0, B);
        TU_EQ_I(bg_filter_contains_many(back, b.keys, b.lens, B, NULL), B);
        bg_filter_free(back);
    }
    TU_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < 2; i++) {
        close(ad.ready[i]);
        close(ad.go[i]);
    }
    print_message("%llu fetches during adds, %llu mid-way\n", (unsigned long long)fetches,
                  (unsigned long long)mid);
    TU_TRUE(mid >= 1);
    TU_EQ_I(ts_count_keys(c, "*"), 1); /* every copy deleted */

    /* Publish again over a filter with a time to live and a pending
     * rebuild: the open handle reads the new filter, the TTL stays, the
     * rebuild is gone. */
    TU_EQ_I(bg_remote_filter_expire(f, 600000), BG_OK);
    TU_EQ_I(bg_remote_filter_open(&w, r2, "mp", BG_REMOTE_MODULE), BG_OK);
    bg_remote_filter_options no = {.capacity = 10000, .error_rate = 0.01};
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, &no), BG_OK);
    TU_EQ_I(ts_count_keys(c, "*"), 3);
    bg_filter *lf2 = scalable_filter(1000, 5, 3000);
    TU_EQ_I(bg_remote_filter_publish(r, "mp", BG_REMOTE_MODULE, lf2), BG_OK);
    TU_EQ_I(ts_count_keys(c, "*"), 1);
    long long ttl = ts_int(c, "PTTL mp");
    TU_TRUE(ttl > 500000 && ttl <= 600000);
    expect_all(f, 5, 3000);
    int64_t old = 0;
    for (size_t i = 0; i < N; i += B) {
        tu_batch_fill(&b, 1, 3, i, B);
        old += bg_remote_filter_contains_many(f, b.keys, b.lens, B, NULL);
    }
    TU_TRUE(old < 100); /* false positives only: ~1% of 5000 */
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_ESTALE);
    TU_EQ_I(bg_remote_filter_add(w, "new", 3), BG_OK);
    TU_EQ_I(bg_remote_filter_contains(f, "new", 3), 1);
    bg_remote_filter_close(w);

    /* Refusals, and nothing left behind. */
    bg_filter *std = local_filter(1000, 0.01, 0, 3, 100);
    TU_EQ_I(bg_remote_filter_publish(r, "mp", BG_REMOTE_MODULE, std), BG_EVARIANT);
    TU_EQ_I(bg_remote_filter_publish(r, "mp", BG_REMOTE_BITMAP, lf), BG_EVARIANT);
    TU_EQ_I(bg_remote_filter_publish(r, "mp", (bg_remote_backend)0, lf), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_publish(r, "mp", (bg_remote_backend)9, lf), BG_EINVAL);
    TU_EQ_I(bg_remote_filter_publish(r, "m{p}", BG_REMOTE_MODULE, lf), BG_EINVAL);
    bg_filter_free(std);
    bg_filter *huge; /* may grow to 64 GiB, the library's default cap */
    bg_filter_options ho = {.variant = BG_VARIANT_SCALABLE, .capacity = 100, .error_rate = 0.01};
    TU_EQ_I(bg_filter_new(&huge, &ho), BG_OK);
    TU_EQ_I(bg_remote_filter_publish(r, "mp", BG_REMOTE_MODULE, huge), BG_EREMOTE);
    TU_TRUE(strstr(bg_remote_errstr(r), "MAX_BYTES") != NULL);
    bg_filter_free(huge);
    TU_EQ_I(ts_count_keys(c, "*"), 1);
    expect_all(f, 5, 3000);
    TU_EQ_I(ts_int(c, "RPUSH lst a"), 1);
    TU_EQ_I(bg_remote_filter_publish(r, "lst", BG_REMOTE_MODULE, lf), BG_EREMOTE);
    TU_TRUE(strstr(bg_remote_errstr(r), "WRONGTYPE") != NULL);
    TU_EQ_I(ts_int(c, "LLEN lst"), 1);
    TU_EQ_I(ts_int(c, "DEL lst"), 1);
    TU_EQ_I(ts_count_keys(c, "*"), 1);

    /* Several chunks each way: a 23 MiB image goes up in 4 MiB loads and
     * comes down in two 16 MiB dumps. */
    bg_filter *big = scalable_filter(15000000, 6, 2000);
    uint64_t bytes;
    TU_EQ_I(bg_filter_encoded_size(big, &bytes), BG_OK);
    TU_TRUE(bytes > (UINT64_C(16) << 20));
    TU_EQ_I(bg_remote_filter_publish(r, "mp", BG_REMOTE_MODULE, big), BG_OK);
    expect_all(f, 6, 2000);
    same_image(f, big);
    TU_EQ_I(ts_count_keys(c, "*"), 1);
    bg_filter_free(big);

    /* A staged handle fetches its staged filter. */
    bg_remote_filter *g;
    bg_remote_filter_options so = {.backend = BG_REMOTE_MODULE, .capacity = 100,
                                   .error_rate = 0.01};
    TU_EQ_I(bg_remote_filter_stage(&g, r2, "sg", &so), BG_OK);
    TU_EQ_I(bg_remote_filter_add(g, "staged", 6), BG_OK);
    bg_filter *back;
    TU_EQ_I(bg_remote_filter_fetch(g, &back), BG_OK);
    TU_EQ_I(bg_filter_contains(back, "staged", 6), 1);
    TU_EQ_U(bg_filter_items(back), 1);
    bg_filter_free(back);
    TU_EQ_I(bg_remote_filter_drop(g), BG_OK);
    bg_remote_filter_close(g);

    /* A key being loaded cannot be dumped; a dropped filter cannot be
     * fetched; neither leaves its copy behind. */
    uint8_t head[BG_FILE_HEADER_BYTES];
    TU_EQ_I(bg_filter_encode_range(lf, 0, head, sizeof head), BG_OK);
    TU_EQ_I(ts_int(c, "DEL mp"), 1);
    redisReply *rep = redisCommand(c, "BF.LOADCHUNK mp 1 %b", head, sizeof head);
    assert_non_null(rep);
    TU_EQ_I(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    TU_EQ_I(bg_remote_filter_fetch(f, &back), BG_EREMOTE);
    TU_TRUE(strstr(bg_remote_errstr(r), "being loaded") != NULL);
    TU_TRUE(back == NULL);
    TU_EQ_I(ts_count_keys(c, "*"), 1);
    TU_EQ_I(ts_int(c, "DEL mp"), 1);
    TU_EQ_I(bg_remote_filter_fetch(f, &back), BG_ENOTFOUND);
    TU_EQ_I(ts_count_keys(c, "*"), 0);

    bg_remote_filter_close(f);
    bg_filter_free(lf);
    bg_filter_free(lf2);
    tu_batch_free(&b);
    redisFree(c);
    bg_remote_free(r);
    bg_remote_free(r2);
    ts_stop(&s);
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
        cmocka_unit_test(bitmap_publish_fetch),
        cmocka_unit_test(bitmap_swap_readers),
        cmocka_unit_test(bitmap_rebuild),
        cmocka_unit_test(bitmap_rebuild_lease),
        cmocka_unit_test(bitmap_lost_bits),
        cmocka_unit_test(sharded_rebuild),
        cmocka_unit_test(bitmap_limits),
        cmocka_unit_test(bitmap_destroy),
        cmocka_unit_test(connect_errors),
        cmocka_unit_test(server_dies_mid_batch),
        cmocka_unit_test(server_dies_mid_sharded_batch),
        cmocka_unit_test(module_backend),
        cmocka_unit_test(module_staged_create),
        cmocka_unit_test(module_rebuild),
        cmocka_unit_test(module_publish_fetch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
