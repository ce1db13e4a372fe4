/* SPDX-License-Identifier: BSD-3-Clause */
/* The remote filter (BG_GUARD_FILTER_REMOTE): one filter in Redis shared by
 * every instance, reached through <bloomgate/remote.h>.
 *
 * CONNECTIONS
 * A bg_remote and its filter handles are not thread-safe, so each thread
 * has its own connection and handle in its record (swap.c, PER-THREAD
 * RECORDS), made on first use. A record outlives its thread (the next new
 * thread adopts it, connection included) and bg_guard_free closes them all.
 * A broken connection reconnects on its next call (the client does that),
 * and a call that found its connection broken at once (a Redis that
 * restarted, an idle connection a proxy closed) is retried once, on the new
 * connection: otherwise every thread's first call after a Redis restart
 * would fail. A call that waited for its timeout is not retried: a hung
 * server would cost two timeouts (run below). A handle that gets
 * BG_ESTALE (the filter was re-created or reshaped by a rebuild elsewhere)
 * is reopened and the call retried once; one that gets BG_ENOTFOUND
 * (dropped, or a Redis restarted without its data) is closed, the status
 * returned, and the next call opens it again.
 *
 * CREATION
 * bg_guard_new opens the filter; if it does not exist, the guard creates it
 * from the source. Bitmap backend: the filter is built in this process (a
 * standard bg_filter of the same shape), then, if nobody created it
 * meanwhile, uploaded with bg_remote_filter_publish, which makes it visible
 * complete, in one step. (Creating the empty filter in Redis first and
 * filling it there would let other instances open it half filled and answer
 * "absent" for keys not yet added: false negatives.) Two instances racing
 * through this both publish complete filters; the second replaces the
 * first, and a put made through the first in between is only in the first:
 * a false negative until the next rebuild. Start one instance first, or
 * create the filter ahead (bloomgate push), to avoid that window. With
 * options.remote_shards S > 1 the filter is built as S local filters, each
 * key in the one bg_remote_shard_of names, and published shard by shard,
 * the shard count last (bg_remote_filter_publish_shards): again nobody
 * opens it before it is complete. Racing instances must then agree on S
 * (they share a configuration): a filter found under the name, however
 * sharded, is opened as it is, but two publishing at once with different
 * S would mix shards routed differently.
 * Module
 * backend: the same in Redis: bg_remote_filter_stage reserves it under a
 * hidden staging key, bg_remote_filter_add_many fills it in batches, and
 * bg_remote_filter_stage_commit renames it to the name unless someone
 * created it meanwhile (BG_EEXIST: ours is dropped and theirs opened).
 * Nobody opens a partly filled filter, and of instances racing through
 * this the first commit wins: the others drop theirs and open it. A commit
 * that fails with BG_ECONN is tried once more: BG_OK if its request was
 * lost; if its reply was, the staging key is gone (BG_ENOTFOUND) and the
 * name holds our filter, or another instance's if ours expired first:
 * either is complete, so the guard opens it.
 * bg_guard_rebuild of a filter that no longer exists creates it again this
 * way (a Redis restarted without persistence).
 *
 * REBUILD
 * bg_remote_filter_rebuild_begin, the source streamed through
 * rebuild_add_many in batches, rebuild_commit; on failure rebuild_abort,
 * unless the failure is that the rebuild was cancelled or dropped meanwhile
 * (BG_ESTALE, BG_ENOTFOUND, returned as they are): then it is not ours to
 * abort, and another client's may be pending by now.
 * Every add, from any instance, reaches the rebuild too while it is pending
 * (remote.h, REBUILD), so puts are kept. A rebuild pending from another
 * client gives BG_EBUSY. If our abort fails too (Redis went away), the
 * rebuild stays pending there and refuses every later one until its lease
 * runs out: the next rebuild on the same thread aborts it first, on the
 * handle that began it (rebuild_left), which cancels that rebuild only.
 * Another handle's abort could not tell it from another client's begun
 * since (once ours expired), so other threads' rebuilds get BG_EBUSY until
 * the lease ends, as other clients' do. A commit that fails with BG_ECONN is tried
 * once more before giving up: its request or its reply was lost, and the
 * retry, on a new connection, commits it or finds it committed (remote.h),
 * so a network blip at that moment does not throw away a whole scan of the
 * source. Unlike other calls (CONNECTIONS) this one is retried even after a
 * timeout: a hung server costs a second timeout once per rebuild.
 * Bitmap: the shape is kept unless options.filter.capacity is 0; then it
 * is resized from count() * headroom, and other handles reopen on their
 * BG_ESTALE. Module: the new filter is reserved as at creation
 * (options.filter, capacity from count() * headroom when 0), since Redis
 * does not report a filter's error rate; handles name only the key, so
 * none goes stale. */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <string.h>

#include <bloomgate/remote.h>

#include "common/alloc.h"
#include "guard_internal.h"

/* Closes t's filter handle. A rebuild it began and could not abort
 * (rebuild_left) is then left to its lease: only this handle could tell
 * it from another client's (REBUILD). */
static void close_handle(bg__guard_thread *t)
{
    bg_remote_filter_close(t->rf);
    t->rf = NULL;
    t->rebuild_left = 0;
}

void bg__guard_remote_thread_close(bg__guard_thread *t)
{
    close_handle(t);
    bg_remote_close(t->conn);
    t->conn = NULL;
}

/* The calling thread's record with a connection (not necessarily an open
 * filter handle). */
static int thread_conn(bg_guard *g, bg__guard_thread **out)
{
    bg__guard_thread *t;
    int rc = bg__guard_thread_get(g, &t);
    if (rc != BG_OK)
        return rc;
    if (!t->conn) {
        rc = bg_remote_connect(&t->conn, &g->ropts);
        if (rc != BG_OK) {
            bg_remote_close(t->conn); /* set on BG_ECONN / BG_EREMOTE */
            t->conn = NULL;
            return rc;
        }
    }
    *out = t;
    return BG_OK;
}

static int reopen(bg_guard *g, bg__guard_thread *t)
{
    close_handle(t);
    return bg_remote_filter_open(&t->rf, t->conn, g->rname, g->o.remote_backend);
}

/* The calling thread's record with an open handle. */
static int thread_filter(bg_guard *g, bg__guard_thread **out)
{
    bg__guard_thread *t;
    int rc = thread_conn(g, &t);
    if (rc != BG_OK)
        return rc;
    if (!t->rf && (rc = reopen(g, t)) != BG_OK)
        return rc;
    *out = t;
    return BG_OK;
}

/* bg__guard_broke_at_once with the client's timeout (0: its 2 s). */
static bool broke_at_once(const bg_guard *g, uint64_t t0)
{
    uint32_t timeout = g->ropts.command_timeout_ms ? g->ropts.command_timeout_ms : 2000;
    return bg__guard_broke_at_once(t0, timeout);
}

/* Runs op on the thread's handle: a connection found broken is retried
 * once on a new one, BG_ESTALE reopens and retries once, BG_ENOTFOUND
 * closes the handle (CONNECTIONS above). Both retries are safe: a query
 * and an add (bits only set) can run twice with the result of once. */
static int run(bg_guard *g, int (*op)(bg_remote_filter *, const void *, size_t),
               const void *key, size_t len)
{
    bg__guard_thread *t;
    int rc = thread_filter(g, &t);
    if (rc != BG_OK)
        return rc;
    uint64_t t0 = bg__now_ms();
    rc = op(t->rf, key, len);
    if (rc == BG_ECONN && broke_at_once(g, t0))
        rc = op(t->rf, key, len);
    if (rc == BG_ESTALE) {
        rc = reopen(g, t);
        if (rc == BG_OK)
            rc = op(t->rf, key, len);
    }
    if (rc == BG_ENOTFOUND || rc == BG_ESTALE) {
        close_handle(t);
    }
    return rc;
}

int bg__guard_remote_contains(bg_guard *g, const void *key, size_t len)
{
    return run(g, bg_remote_filter_contains, key, len);
}

int bg__guard_remote_add(bg_guard *g, const void *key, size_t len)
{
    return run(g, bg_remote_filter_add, key, len);
}

void bg__guard_remote_stats(bg_guard *g, uint64_t *items, uint64_t *bytes, uint32_t *shards)
{
    bg__guard_thread *t;
    bg_remote_filter_stats st;
    if (thread_filter(g, &t) != BG_OK || bg_remote_filter_stats_get(t->rf, &st) != BG_OK)
        return;
    *items = st.items;
    *bytes = st.bytes;
    *shards = bg_remote_filter_shards(t->rf);
}

/* ---- creation ------------------------------------------------------------ */

static int flush_remote(void *arg, const void *const *keys, const size_t *lens, size_t n)
{
    int64_t rc = bg_remote_filter_add_many(arg, keys, lens, n, NULL);
    return rc < 0 ? (int)rc : BG_OK;
}

static int flush_local(void *arg, const void *const *keys, const size_t *lens, size_t n)
{
    int64_t rc = bg_filter_add_many(arg, keys, lens, n, NULL);
    return rc < 0 ? (int)rc : BG_OK;
}

static int stream(bg_guard *g, size_t batch,
                  int (*flush)(void *, const void *const *, const size_t *, size_t), void *arg)
{
    bg__key_batch b;
    int rc = bg__batch_init(&b, batch, flush, arg);
    if (rc == BG_OK) {
        rc = bg__batch_scan(g, &b);
        bg__batch_free(&b);
    }
    return rc;
}

/* The local shards of a sharded filter being built: each key goes to the
 * one bg_remote_shard_of names, which is where a sharded handle looks. */
typedef struct local_shards {
    bg_filter **f;
    uint32_t n;
} local_shards;

static int flush_shards(void *arg, const void *const *keys, const size_t *lens, size_t n)
{
    local_shards *s = arg;
    for (size_t i = 0; i < n; i++) {
        bg_hash h;
        int rc = bg_filter_hash(s->f[0], keys[i], lens[i], &h);
        if (rc == BG_OK)
            rc = bg_filter_add_hash(s->f[bg_remote_shard_of(h, s->n)], h);
        if (rc != BG_OK)
            return rc;
    }
    return BG_OK;
}

/* As create_bitmap, in options.remote_shards shards of 1/S of the
 * capacity (or bits) each, with one seed; published shard by shard, the
 * count last (bg_remote_filter_publish_shards). */
static int create_sharded(bg_guard *g, bg__guard_thread *t, const bg_filter_options *whole)
{
    uint32_t n = g->o.remote_shards;
    bg_filter_options fo = *whole;
    fo.capacity = whole->capacity / n + (whole->capacity % n != 0);
    fo.bits = whole->bits / n + (whole->bits % n != 0);
    local_shards s = {bg__calloc(n, sizeof *s.f), n};
    if (!s.f)
        return BG_ENOMEM;
    int rc = BG_OK;
    for (uint32_t j = 0; rc == BG_OK && j < n; j++)
        rc = bg_filter_new(&s.f[j], &fo);
    if (rc == BG_OK)
        rc = stream(g, BG__GUARD_BATCH_LOCAL, flush_shards, &s);
    if (rc == BG_OK) {
        rc = reopen(g, t); /* as in create_bitmap */
        if (rc == BG_ENOTFOUND) {
            rc = bg_remote_filter_publish_shards(t->conn, g->rname,
                                                 (const bg_filter *const *)s.f, n);
            /* BG_EEXIST: made meanwhile, otherwise; or shards of another
             * count or seed are there (another client's publish under way,
             * or a failed one's leftovers: remote.h, SHARDED PUBLISH), and
             * then there is nothing to open, which is not "not found". */
            if (rc == BG_OK || rc == BG_EEXIST) {
                int published = rc;
                rc = reopen(g, t);
                if (rc == BG_ENOTFOUND && published == BG_EEXIST)
                    rc = BG_EEXIST;
            }
        }
    }
    for (uint32_t j = 0; j < n; j++)
        bg_filter_free(s.f[j]);
    bg__free(s.f);
    return rc;
}

static int create_bitmap(bg_guard *g, bg__guard_thread *t)
{
    const bg_filter_options *o = &g->o.filter;
    bg_filter_options fo = {.variant = BG_VARIANT_STANDARD, .capacity = o->capacity,
                            .error_rate = o->error_rate, .bits = o->bits, .hashes = o->hashes,
                            .seed = o->seed, .max_bytes = BG_REMOTE_MAX_BITS / 8};
    if (fo.capacity == 0 && fo.bits == 0) {
        int rc = bg__guard_capacity(g, &fo.capacity);
        if (rc != BG_OK)
            return rc;
    }
    if (fo.error_rate == 0 && fo.bits == 0 && fo.hashes == 0)
        fo.error_rate = 0.01;
    if (g->o.remote_shards > 1)
        return create_sharded(g, t, &fo);
    bg_filter *local;
    int rc = bg_filter_new(&local, &fo);
    if (rc != BG_OK)
        return rc;
    rc = stream(g, BG__GUARD_BATCH_LOCAL, flush_local, local);
    if (rc == BG_OK) {
        /* Another instance may have created it while we scanned: keep its. */
        rc = reopen(g, t);
        if (rc == BG_ENOTFOUND) {
            rc = bg_remote_filter_publish(t->conn, g->rname, BG_REMOTE_BITMAP, local);
            if (rc == BG_OK)
                rc = reopen(g, t);
        }
    }
    bg_filter_free(local);
    return rc;
}

static int create_module(bg_guard *g, bg__guard_thread *t)
{
    const bg_filter_options *o = &g->o.filter;
    bg_remote_filter_options ro = {.backend = BG_REMOTE_MODULE, .capacity = o->capacity,
                                   .error_rate = o->error_rate > 0 ? o->error_rate : 0.01,
                                   .expansion = o->expansion, .nonscaling = o->nonscaling};
    if (ro.capacity == 0) {
        int rc = bg__guard_capacity(g, &ro.capacity);
        if (rc != BG_OK)
            return rc;
    }
    close_handle(t);
    int rc = bg_remote_filter_stage(&t->rf, t->conn, g->rname, &ro);
    if (rc != BG_OK)
        return rc;
    rc = stream(g, BG__GUARD_BATCH_REMOTE, flush_remote, t->rf);
    if (rc == BG_OK)
        rc = bg_remote_filter_stage_commit(t->rf);
    int lost = rc == BG_ECONN;
    if (lost) /* its request or reply was lost: try again (CREATION) */
        rc = bg_remote_filter_stage_commit(t->rf);
    if (rc == BG_EEXIST || (lost && rc == BG_ENOTFOUND)) {
        /* Another instance published its complete filter first (commit
         * dropped ours), or, after a lost reply, ours is the name already
         * (the staging key is gone): use whichever is there. */
        close_handle(t);
        return reopen(g, t);
    }
    if (rc != BG_OK && rc != BG_ECONN)
        (void)bg_remote_filter_stage_abort(t->rf); /* else its TTL removes it */
    return rc;
}

/* Opens the filter on t, creating it from the source when it is missing. */
static int open_or_create(bg_guard *g, bg__guard_thread *t, int *created)
{
    *created = 0;
    int rc = reopen(g, t);
    if (rc != BG_ENOTFOUND)
        return rc;
    *created = 1;
    rc = g->o.remote_backend == BG_REMOTE_BITMAP ? create_bitmap(g, t) : create_module(g, t);
    if (rc != BG_OK) {
        close_handle(t);
    }
    return rc;
}

int bg__guard_remote_init(bg_guard *g)
{
    bg__guard_thread *t;
    int rc = thread_conn(g, &t);
    if (rc != BG_OK)
        return rc;
    int created;
    return open_or_create(g, t, &created);
}

/* ---- rebuild --------------------------------------------------------------- */

/* Whether a rebuild call's status says the rebuild is no longer ours: it
 * was cancelled (by `rebuild --abort`, a publish, its lease running out)
 * or dropped with the filter meanwhile (remote.h). Then there is nothing
 * of ours to abort, and an abort, which on a handle without a rebuild of
 * its own cancels whichever is pending, could cancel another client's. */
static int rebuild_gone(int64_t rc)
{
    return rc == BG_ESTALE || rc == BG_ENOTFOUND;
}

typedef struct rebuild_feed {
    bg_remote_filter *rf;
    int gone; /* an add found the rebuild gone */
} rebuild_feed;

static int flush_rebuild(void *arg, const void *const *keys, const size_t *lens, size_t n)
{
    rebuild_feed *feed = arg;
    int64_t rc = bg_remote_filter_rebuild_add_many(feed->rf, keys, lens, n, NULL);
    feed->gone = rebuild_gone(rc);
    return rc < 0 ? (int)rc : BG_OK;
}

static int rebuild_locked(bg_guard *g)
{
    bg__guard_thread *t;
    int rc = thread_conn(g, &t);
    if (rc != BG_OK)
        return rc;
    if (t->rebuild_left) { /* on the handle that began it: only that one */
        rc = bg_remote_filter_rebuild_abort(t->rf);
        if (rc != BG_OK && rc != BG_ENOTFOUND)
            return rc;
        t->rebuild_left = 0;
    }
    int created;
    if ((rc = open_or_create(g, t, &created)) != BG_OK || created)
        return rc; /* created from the source just now: that is the rebuild */
    const bg_filter_options *fo = &g->o.filter;
    /* A resize keeps the filter's seed: a sharded filter routes keys to its
     * shards by it, so its rebuild may not change it (remote.h). */
    bg_remote_filter_options ro = {.backend = g->o.remote_backend,
                                   .error_rate = fo->error_rate > 0 ? fo->error_rate : 0.01};
    const bg_remote_filter_options *shape = NULL; /* keep it */
    if (g->o.remote_backend == BG_REMOTE_MODULE) {
        ro.capacity = fo->capacity;
        ro.expansion = fo->expansion;
        ro.nonscaling = fo->nonscaling;
        shape = &ro;
    } else {
        ro.seed = bg_remote_filter_seed(t->rf);
        if (fo->capacity == 0 && fo->bits == 0)
            shape = &ro;
    }
    if (shape && ro.capacity == 0 && (rc = bg__guard_capacity(g, &ro.capacity)) != BG_OK)
        return rc;
    rc = bg_remote_filter_rebuild_begin(t->rf, shape);
    if (rc == BG_EEXIST)
        return BG_EBUSY; /* another client's rebuild is pending */
    if (rc != BG_OK)
        return rc;
    rebuild_feed feed = {.rf = t->rf};
    rc = stream(g, BG__GUARD_BATCH_REMOTE, flush_rebuild, &feed);
    if (rc == BG_OK) {
        rc = bg_remote_filter_rebuild_commit(t->rf);
        if (rc == BG_ECONN) /* a lost request or reply: one retry (REBUILD) */
            rc = bg_remote_filter_rebuild_commit(t->rf);
        feed.gone = rebuild_gone(rc);
    }
    if (rc != BG_OK && !feed.gone) {
        int ar = bg_remote_filter_rebuild_abort(t->rf);
        if (ar != BG_OK && ar != BG_ENOTFOUND)
            t->rebuild_left = 1;
    }
    return rc;
}

int bg__guard_remote_rebuild(bg_guard *g)
{
    if (pthread_mutex_trylock(&g->rebuild_mu) != 0)
        return BG_EBUSY;
    int rc = rebuild_locked(g);
    pthread_mutex_unlock(&g->rebuild_mu);
    return rc;
}
