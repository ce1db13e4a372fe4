/* SPDX-License-Identifier: BSD-3-Clause */
/* Whole filters to and from the server (remote_fixture.h): publish and
 * fetch on the bitmap backend, publishes swapped under concurrent readers,
 * and publish and fetch on the module backend when $BLOOMGATE_MODULE names
 * bloomgate.so. */
#include "remote_fixture.h"
#include "remote/remote_internal.h" /* bg__remote_filter_drop: deletes the filter a handle is on */

#include <bloomgate/file.h>
#include <bloomgate/remote.h>

#include <time.h>

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

    TU_EQ_I(bg__remote_filter_drop(f), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{pub}*"), 0);
    bg_filter *back;
    TU_EQ_I(bg_remote_filter_fetch(f, &back), BG_ENOTFOUND);
    TU_TRUE(back == NULL);
    bg_remote_filter_close(f);
    redisFree(c);
    bg_remote_close(r);
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
    bg_remote_close(cr);
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
    TU_EQ_I(bg__remote_filter_drop(f), BG_OK);
    bg_remote_filter_close(f);
    bg_remote_close(r);
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
    TU_EQ_I(bg__remote_filter_drop(g), BG_OK);
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
    bg_remote_close(r);
    bg_remote_close(r2);
    ts_stop(&s);
}

int main(void)
{
    signal(SIGPIPE, SIG_DFL); /* the library must cope without SIG_IGN */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bitmap_publish_fetch),
        cmocka_unit_test(bitmap_swap_readers),
        cmocka_unit_test(module_publish_fetch),
    };
    return cmocka_run_group_tests(tests, srv_setup, srv_teardown);
}
