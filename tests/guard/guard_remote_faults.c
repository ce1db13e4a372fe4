/* SPDX-License-Identifier: BSD-3-Clause */
/* test_guard_remote's fault tests: rebuilds that meet a fault. Another
 * client cancels one halfway; a failed one's abort is lost; a commit loses
 * its request or its reply (script_fault.h injects the losses). */
#include "guard_remote_test.h"
#include "script_fault.h"

/* Another client cancels the rebuild under way (whichever is pending: the
 * guard's) and begins its own, halfway through the guard's scan. */
typedef struct takeover {
    bg_remote_filter *h;
    const bg_remote_filter_options *shape;
} takeover;

static void cancel_and_take_over(void *arg)
{
    takeover *t = arg;
    TU_EQ_I(bg_remote_filter_rebuild_abort(t->h), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(t->h, t->shape), BG_OK);
}

/* The guard's rebuild of `name` is cancelled halfway by another client,
 * which begins its own: the guard's fails with BG_ESTALE (a rebuild error)
 * and leaves the other one pending (its own abort finds it). */
void rebuild_taken_over(bg_guard *g, const bg_remote_options *ro, const char *name,
                               bg_remote_backend backend, const bg_remote_filter_options *shape)
{
    bg_remote *r = NULL;
    takeover t = {.shape = shape};
    TU_EQ_I(bg_remote_connect(&r, ro), BG_OK);
    TU_EQ_I(bg_remote_filter_open(&t.h, r, name, backend), BG_OK);
    uint64_t errors = gc(g).rebuild_errors;
    src.mid_scan = cancel_and_take_over;
    src.mid_scan_arg = &t;
    TU_EQ_I(bg_guard_rebuild(g), BG_ESTALE);
    src.mid_scan = NULL;
    TU_EQ_U(gc(g).rebuild_errors, errors + 1);
    TU_EQ_I(bg_remote_filter_rebuild_abort(t.h), BG_OK);
    TU_EQ_I(bg_guard_rebuild(g), BG_OK);
    bg_remote_filter_close(t.h);
    bg_remote_close(r);
}

/* bg_guard_rebuild(g) on a thread of its own (its own thread record and
 * handle); its status. */
typedef struct rebuild_call {
    bg_guard *g;
    int rc;
} rebuild_call;

static void *rebuild_call_run(void *p)
{
    rebuild_call *c = p;
    c->rc = bg_guard_rebuild(c->g);
    return NULL;
}

static int rebuild_on_new_thread(bg_guard *g)
{
    rebuild_call c = {.g = g, .rc = BG_EINVAL};
    pthread_t th;
    TU_EQ_I(pthread_create(&th, NULL, rebuild_call_run, &c), 0);
    pthread_join(th, NULL);
    return c.rc;
}

/* A rebuild of g whose scan fails and whose abort is lost (script
 * `abort_script`), so that it is left pending in Redis. */
static void rebuild_left_pending(bg_guard *g, int abort_script)
{
    atomic_store(&src.fail_scan, BG_EIO);
    sf_arm(abort_script, BG__REMOTE_TESTING_LOSE_REQUEST, 1);
    TU_EQ_I(bg_guard_rebuild(g), BG_EIO);
    TU_EQ_I(sf_disarm(), 1);
    atomic_store(&src.fail_scan, 0);
}

/* The abort of a failed rebuild is lost (Redis away): the same thread's
 * next rebuild aborts the leftover first, on the handle that began it, and
 * succeeds. When another client has cancelled the leftover and begun its
 * own meanwhile, neither another thread's rebuild nor the same thread's
 * cancels that one: both get BG_EBUSY and it stays pending (an abort on a
 * handle without a rebuild of its own would have cancelled it). */
void rebuild_abort_lost(bg_guard *g, const bg_remote_options *ro, const char *name,
                               bg_remote_backend backend, const bg_remote_filter_options *shape)
{
    int abort_script = backend == BG_REMOTE_MODULE ? BG__SCRIPT_MODULE_REBUILD_ABORT
                                                   : BG__SCRIPT_REBUILD_ABORT;
    rebuild_left_pending(g, abort_script);
    TU_EQ_I(bg_guard_rebuild(g), BG_OK);

    bg_remote *r = NULL;
    bg_remote_filter *h = NULL;
    TU_EQ_I(bg_remote_connect(&r, ro), BG_OK);
    TU_EQ_I(bg_remote_filter_open(&h, r, name, backend), BG_OK);
    rebuild_left_pending(g, abort_script);
    TU_EQ_I(bg_remote_filter_rebuild_abort(h), BG_OK); /* whichever: the leftover */
    TU_EQ_I(bg_remote_filter_rebuild_begin(h, shape), BG_OK);
    TU_EQ_I(rebuild_on_new_thread(g), BG_EBUSY);
    TU_EQ_I(bg_guard_rebuild(g), BG_EBUSY);
    TU_EQ_I(bg_remote_filter_rebuild_abort(h), BG_OK); /* its own: still pending */
    TU_EQ_I(bg_guard_rebuild(g), BG_OK);
    TU_EQ_I(rebuild_on_new_thread(g), BG_OK);
    bg_remote_filter_close(h);
    bg_remote_close(r);
}

/* ---- both backends: a lost commit ------------------------------------------------ */

/* Deletes p<from>..p<to-1> from the source, then rebuilds through `a` with
 * the next `times` commits losing `fault`: the rebuild must end with
 * `want`, and (when BG_OK) `b` must then miss (nearly) all deleted keys. */
static void rebuild_with_lost_commit(bg_guard *a, bg_guard *b, int script, int fault, int times,
                                     int want, long from, long to)
{
    char k[64];
    for (long i = from; i < to; i++) {
        size_t kl = ms_key(k, "p", i);
        TU_TRUE(ms_map_del(&src.map, k, kl));
    }
    sf_arm(script, fault, times);
    int rc = bg_guard_rebuild(a);
    int fired = sf_disarm();
    TU_EQ_I(rc, want);
    TU_EQ_I(fired, times);
    if (want == BG_OK)
        TU_TRUE(absent_in(b, "p", from, to) >= (to - from) * 9 / 10);
    all_present(b, "p", to, NKEYS);
}

/* The commit of a rebuild is its one step that a network fault can turn
 * into "did it happen?": a lost request (not run) or a lost reply (run).
 * Either way one retry commits it, or finds it committed, and the scan's
 * work is kept; two losses in a row give BG_ECONN, abort the rebuild, and
 * leave nothing pending, so the other instance's next rebuild works. */
static void lost_commit(const bg_remote_options *ro, const char *name, bg_remote_backend be)
{
    int script = be == BG_REMOTE_MODULE ? BG__SCRIPT_MODULE_REBUILD_COMMIT
                                        : BG__SCRIPT_REBUILD_COMMIT;
    ms_init(&src);
    ms_add_range(&src, "p", NKEYS);
    bg_guard *a = remote_guard(ro, name, be, 0);
    bg_guard *b = remote_guard(ro, name, be, 0);
    rebuild_with_lost_commit(a, b, script, BG__REMOTE_TESTING_LOSE_REPLY, 1, BG_OK, 0, 100);
    rebuild_with_lost_commit(a, b, script, BG__REMOTE_TESTING_LOSE_REQUEST, 1, BG_OK, 100, 200);
    TU_EQ_U(gc(a).rebuilds, 2);
    rebuild_with_lost_commit(a, b, script, BG__REMOTE_TESTING_LOSE_REQUEST, 2, BG_ECONN, 200, 300);
    TU_EQ_U(gc(a).rebuild_errors, 1);
    TU_TRUE(absent_in(b, "p", 200, 300) == 0); /* not committed */
    TU_EQ_I(bg_guard_rebuild(b), BG_OK);
    TU_TRUE(absent_in(a, "p", 200, 300) >= 90);
    all_present(a, "p", 300, NKEYS);
    bg_guard_free(a);
    bg_guard_free(b);
    ms_free(&src);
}

void bitmap_lost_commit(void **state)
{
    (void)state;
    tu_ctx("bitmap: a rebuild's lost commit is retried");
    bg_remote_options ro = ropts(&srv);
    lost_commit(&ro, "lost", BG_REMOTE_BITMAP);
}

void module_lost_commit(void **state)
{
    (void)state;
    tu_ctx("module: a creation's or a rebuild's lost commit is retried");
    ts_server ms;
    ts_start_module(&ms);
    bg_remote_options ro = ropts(&ms);
    /* Creation: the staged filter's commit loses its reply (it ran: the
     * retry finds the staging key gone, the guard opens the name) or its
     * request (the retry commits). Either way bg_guard_new succeeds. */
    const int kinds[2] = {BG__REMOTE_TESTING_LOSE_REPLY, BG__REMOTE_TESTING_LOSE_REQUEST};
    const char *names[2] = {"lostc1", "lostc2"};
    redisContext *c = ts_raw(&ms);
    ms_init(&src);
    ms_add_range(&src, "p", NKEYS);
    for (int i = 0; i < 2; i++) {
        sf_arm(BG__SCRIPT_MODULE_STAGE_COMMIT, kinds[i], 1);
        bg_guard *g = remote_guard(&ro, names[i], BG_REMOTE_MODULE, 0);
        TU_EQ_I(sf_disarm(), 1);
        all_present(g, "p", 0, NKEYS);
        TU_EQ_I(ts_int(c, "EXISTS %s", names[i]), 1);
        bg_guard_free(g);
    }
    TU_EQ_I(ts_count_keys(c, "*"), 2); /* the two names, no staging key */
    redisFree(c);
    ms_free(&src);
    lost_commit(&ro, "lost", BG_REMOTE_MODULE);
    ts_stop(&ms);
}
