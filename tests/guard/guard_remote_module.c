/* SPDX-License-Identifier: BSD-3-Clause */
/* test_guard_remote's module tests (when $BLOOMGATE_MODULE names
 * bloomgate.so): create, fill, get and rebuild through the module backend,
 * and a creation that no watcher sees half done. */
#include "guard_remote_test.h"

/* ---- module backend -------------------------------------------------------------- */

void module_backend(void **state)
{
    (void)state;
    tu_ctx("module backend");
    ts_server ms;
    ts_start_module(&ms);
    ms_init(&src);
    ms_add_range(&src, "p", NKEYS);
    bg_remote_options ro = ropts(&ms);
    bg_guard *a = remote_guard(&ro, "mod", BG_REMOTE_MODULE, 0);
    all_present(a, "p", 0, NKEYS);
    bg_guard *b = remote_guard(&ro, "mod", BG_REMOTE_MODULE, 0);
    TU_EQ_I(atomic_load(&src.scans), 1);
    bg_guard_buf v = {0};
    TU_EQ_I(bg_guard_get(b, "p9", 2, &v), BG_GUARD_FOUND);
    char k[64];
    for (long i = 0; i < 200; i++) {
        size_t kl = ms_key(k, "absent", i);
        TU_EQ_I(bg_guard_get(b, k, kl, &v), BG_GUARD_ABSENT);
    }
    TU_TRUE(gc(b).filtered >= 190);
    ms_add(&src, "new", 1);
    TU_EQ_I(bg_guard_put(b, "new1", 4), BG_OK);
    TU_EQ_I(bg_guard_may_contain(a, "new1", 4), 1);

    /* Rebuilds drop deleted keys; a reader sees no false negative. */
    rebuilds_drop_deleted(a, b, 3);
    TU_EQ_U(gc(a).rebuilds, 3);
    TU_EQ_U(gc(a).rebuild_errors, 0);
    TU_EQ_I(bg_guard_may_contain(b, "new1", 4), 1);

    /* A put through the other instance while a rebuild runs, of a key its
     * scan did not see, is in the new filter; one rebuild at a time. */
    atomic_store(&src.scan_sleep_ms, 300);
    atomic_store(&bad, 0);
    long scans = atomic_load(&src.scans);
    pthread_t rt;
    TU_EQ_I(pthread_create(&rt, NULL, rebuild_thread, a), 0);
    while (atomic_load(&src.scans) == scans) /* begun: its scan sleeps */
        ms_sleep_ms(1);
    TU_EQ_I(bg_guard_rebuild(b), BG_EBUSY); /* pending in Redis: another client's */
    ms_add(&src, "late", 1);
    TU_EQ_I(bg_guard_put(b, "late1", 5), BG_OK);
    pthread_join(rt, NULL);
    TU_EQ_I(atomic_load(&bad), 0);
    atomic_store(&src.scan_sleep_ms, 0);
    TU_EQ_U(gc(a).rebuilds, 4);
    TU_EQ_I(bg_guard_may_contain(a, "late1", 5), 1);
    TU_EQ_I(bg_guard_get(a, "late1", 5, &v), BG_GUARD_FOUND);

    /* A failing scan aborts the rebuild in Redis: the next one can start. */
    atomic_store(&src.fail_scan, BG_EIO);
    TU_EQ_I(bg_guard_rebuild(a), BG_EIO);
    atomic_store(&src.fail_scan, 0);
    TU_EQ_I(bg_guard_rebuild(b), BG_OK);
    all_present(a, "p", 100, NKEYS);
    bg_remote_filter_options shape = {.backend = BG_REMOTE_MODULE, .capacity = 2 * NKEYS,
                                      .error_rate = 0.01};
    rebuild_taken_over(a, &ro, "mod", BG_REMOTE_MODULE, &shape);
    rebuild_abort_lost(a, &ro, "mod", BG_REMOTE_MODULE, &shape);
    all_present(b, "p", 100, NKEYS);

    /* The filter gone (a restart without its data, FLUSHALL, an eviction):
     * an error, never "absent" (BF.MEXISTS alone answers 0 for a missing
     * key), until a rebuild makes it again. */
    redisContext *raw = ts_raw(&ms);
    redisReply *rep = redisCommand(raw, "FLUSHALL");
    TU_TRUE(rep && rep->type == REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    uint64_t filtered = gc(b).filtered;
    for (long i = 0; i < 20; i++) {
        size_t kl = ms_key(k, i % 2 ? "p" : "absent", i);
        TU_EQ_I(bg_guard_get(b, k, kl, &v), BG_ENOTFOUND);
    }
    TU_EQ_U(gc(b).filtered, filtered);
    /* A key of another type in its place: an error too. */
    rep = redisCommand(raw, "SET mod notafilter");
    TU_TRUE(rep && rep->type == REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    TU_EQ_I(bg_guard_get(b, "absent1", 7, &v), BG_EREMOTE);
    TU_EQ_U(gc(b).filtered, filtered);
    rep = redisCommand(raw, "DEL mod");
    freeReplyObject(rep);
    redisFree(raw);
    TU_EQ_I(bg_guard_rebuild(a), BG_OK);
    all_present(b, "p", 100, NKEYS);
    bg_guard_free(a);
    bg_guard_free(b);
    bg_guard_buf_free(&v);
    ms_free(&src);
    ts_stop(&ms);
}

/* Module backend: bg_guard_new fills the filter under a staging key and
 * renames it when complete, so an instance that looks meanwhile finds no
 * filter, never a partly filled one (which would answer "absent" for keys
 * the source has); and a creation whose scan fails leaves nothing behind.
 * The watcher is a raw hiredis connection in a thread (no cmocka asserts
 * there): it counts what it saw. */
typedef struct watch {
    int port;
    atomic_int stop, failed;
    atomic_long absent, partial, complete;
} watch;

static void *watch_module(void *arg)
{
    watch *w = arg;
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", w->port, tv);
    size_t argc = NKEYS + 2;
    const char **argv = malloc(argc * sizeof *argv);
    size_t *lens = malloc(argc * sizeof *lens);
    char(*keys)[16] = malloc(NKEYS * sizeof *keys);
    if (!c || c->err || !argv || !lens || !keys) {
        atomic_store(&w->failed, 1);
        goto out;
    }
    argv[0] = "BF.MEXISTS";
    argv[1] = "mod";
    lens[0] = 10;
    lens[1] = 3;
    for (long i = 0; i < NKEYS; i++) {
        argv[i + 2] = keys[i];
        lens[i + 2] = ms_key(keys[i], "p", i);
    }
    while (!atomic_load(&w->stop)) {
        /* BF.MEXISTS answers 0s for a missing key: ask EXISTS first (once
         * there, the filter is never removed here). */
        redisReply *r = redisCommand(c, "EXISTS mod");
        if (!r || r->type != REDIS_REPLY_INTEGER) {
            atomic_store(&w->failed, 1);
            if (r)
                freeReplyObject(r);
            break;
        }
        long long there = r->integer;
        freeReplyObject(r);
        if (!there) {
            atomic_fetch_add(&w->absent, 1);
            ms_sleep_ms(2);
            continue;
        }
        r = redisCommandArgv(c, (int)argc, argv, lens);
        if (!r) {
            atomic_store(&w->failed, 1);
            break;
        }
        if (r->type == REDIS_REPLY_ARRAY && r->elements == NKEYS) {
            size_t ones = 0;
            for (size_t i = 0; i < r->elements; i++)
                ones += r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer;
            atomic_fetch_add(ones == NKEYS ? &w->complete : &w->partial, 1);
        } else {
            atomic_store(&w->failed, 1);
        }
        freeReplyObject(r);
        ms_sleep_ms(2);
    }
out:
    if (c)
        redisFree(c);
    free(argv);
    free(lens);
    free(keys);
    return NULL;
}

void module_creation_is_atomic(void **state)
{
    (void)state;
    tu_ctx("module backend: creation is atomic");
    ts_server ms;
    ts_start_module(&ms);
    ms_init(&src);
    ms_add_range(&src, "p", NKEYS);
    bg_remote_options ro = ropts(&ms);
    redisContext *c = ts_raw(&ms);

    /* A scan that fails halfway: bg_guard_new fails, Redis is left empty
     * (no half-filled "mod" for the next instance to open). */
    atomic_store(&src.fail_scan, BG_EIO);
    bg_guard_options o = {.source = ms_callbacks(&src), .filter_kind = BG_GUARD_FILTER_REMOTE,
                          .filter = {.error_rate = 0.001}, .remote = &ro,
                          .remote_name = "mod", .remote_backend = BG_REMOTE_MODULE};
    bg_guard *g = NULL;
    TU_EQ_I(bg_guard_new(&g, &o), BG_EIO);
    TU_EQ_I(ts_count_keys(c, "*"), 0);
    atomic_store(&src.fail_scan, 0);

    /* A slow scan, watched from another connection throughout. */
    watch w = {.port = ms.port};
    atomic_store(&src.scan_sleep_ms, 300);
    pthread_t t;
    TU_EQ_I(pthread_create(&t, NULL, watch_module, &w), 0);
    g = remote_guard(&ro, "mod", BG_REMOTE_MODULE, 0);
    ms_sleep_ms(100);
    atomic_store(&w.stop, 1);
    pthread_join(t, NULL);
    atomic_store(&src.scan_sleep_ms, 0);
    print_message("watcher: %ld absent, %ld partial, %ld complete\n", atomic_load(&w.absent),
                  atomic_load(&w.partial), atomic_load(&w.complete));
    TU_EQ_I(atomic_load(&w.failed), 0);
    TU_TRUE(atomic_load(&w.absent) > 10); /* it watched during the scan */
    TU_EQ_I(atomic_load(&w.partial), 0);
    TU_TRUE(atomic_load(&w.complete) > 0);
    TU_EQ_I(ts_int(c, "PTTL mod"), -1);
    TU_EQ_I(ts_count_keys(c, "*"), 1);
    all_present(g, "p", 0, NKEYS);
    bg_guard_free(g);
    redisFree(c);
    ms_free(&src);
    ts_stop(&ms);
}
