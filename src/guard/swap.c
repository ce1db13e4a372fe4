/* SPDX-License-Identifier: BSD-3-Clause */
/* The local filter: building it from the source, rebuilding it while it
 * serves, swapping it in, and freeing the old one safely; plus the
 * per-thread records that make that possible.
 *
 * REBUILD AND SWAP
 *   1. N = a new empty filter; pending = N.
 *   2. source.scan streams every key into N (batches of
 *      BG__GUARD_BATCH_LOCAL through bg_filter_add_many).
 *   3. old = exchange(current, N); pending = NULL.
 *   4. wait until no thread holds a hazard pointer to old; free old.
 * A failed step 2 sets pending = NULL, waits for N's hazards and frees N;
 * current was never touched. rebuild_mu (trylock) lets one rebuild run at a
 * time; the second gets BG_EBUSY.
 *
 * NO KEY IS LOST (puts during a rebuild)
 * bg_guard_put(K) is called after the source gained K, and adds K first to
 * pending (if any), then to current; every load and store of current and
 * pending is seq_cst, so they all fall in one total order S. Take the put's
 * load of pending:
 *   - it returned N: K is added to N;
 *   - it returned NULL before step 1 stored N: the scan of step 2 starts
 *     after that store, so after K entered the source, and sees K;
 *   - it returned NULL after step 3 cleared pending: step 3 stored
 *     current = N before, so the put's later load of current returns N (or
 *     a newer filter, whose own scan started after this put's load of
 *     pending and so sees K), and K is added to it.
 * Either way the filter that ends up current has K. (The order matters:
 * adding to current first and pending second loses K when the swap falls
 * between the two.) With pending == current (between the two stores of step
 * 3) the put adds once, so a counting filter does not count it twice.
 *
 * MEMORY RECLAMATION: HAZARD POINTERS (Michael, "Hazard Pointers: Safe
 * Memory Reclamation for Lock-Free Objects", IEEE TPDS 2004)
 * Every thread that touches a filter owns two slots in its record, one for
 * current and one for pending. To use the filter in src (current or
 * pending), a thread does
 *     p = load(src); loop { store(slot, p); q = load(src); if q == p break; p = q }
 *     ... use p ...; store(slot, NULL)
 * and the rebuild, after removing X from both current and pending, scans
 * every slot of every record and waits while one of them equals X, then
 * frees X.
 * Proof sketch (all seq_cst, one total order S): suppose a thread uses X,
 * so its validating load of src returned X. That load precedes in S the
 * store that removed X from src (X is never stored again), which precedes
 * the reclaimer's loads of the slots. The thread's store(slot, X) precedes
 * its validating load, so it precedes the reclaimer's load of that slot:
 * the reclaimer reads X there (or a later value of the slot, which the
 * thread stores only once it is done with X) and waits. So X is freed only
 * after every thread that can use it has cleared its slot. A thread whose
 * validation failed never uses X. An address reused by the allocator for a
 * newer filter is harmless: the validated pointer is then that live filter.
 * Readers never block, never write shared cache lines other than their own
 * slot, and never retry more often than src changes (once per rebuild).
 * The reclaimer waits (sched_yield, then short sleeps) only for readers in
 * the middle of one filter call: nanoseconds to microseconds, or the O(m)
 * of bg_guard_counters_get's stats read.
 *
 * PER-THREAD RECORDS
 * A thread's slots live in its record (thread_records.h): adopted from a
 * finished thread or pushed on the push-only list g->threads, which the
 * reclaimer walks without a lock. When a thread exits its slots are cleared
 * and the record (and its remote connection, remote_filter.c) serves the
 * next new thread. bg_guard_free frees every record. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "guard_internal.h"

/* ---- per-thread records ------------------------------------------------ */

static void thread_init(bg__thread_rec *r)
{
    bg__guard_thread *t = (bg__guard_thread *)r;
    atomic_init(&t->hazard[0], NULL);
    atomic_init(&t->hazard[1], NULL);
}

/* Its thread ends: no filter is in use by it any more. */
static void thread_exit(bg__thread_rec *r)
{
    bg__guard_thread *t = (bg__guard_thread *)r;
    atomic_store(&t->hazard[0], NULL);
    atomic_store(&t->hazard[1], NULL);
}

static void thread_free(bg__thread_rec *r)
{
    bg__guard_remote_thread_close((bg__guard_thread *)r);
}

int bg__guard_threads_init(bg_guard *g)
{
    return bg__thread_recs_init(&g->threads);
}

void bg__guard_threads_free(bg_guard *g)
{
    bg__thread_recs_free(&g->threads, thread_free);
}

int bg__guard_thread_get(bg_guard *g, bg__guard_thread **out)
{
    bg__thread_rec *r;
    int rc = bg__thread_rec_get(&g->threads, sizeof **out, thread_init, thread_exit, &r);
    *out = (bg__guard_thread *)r;
    return rc;
}

/* ---- hazard pointers --------------------------------------------------- */

/* Publishes in *slot the filter src points at, validated (see the proof
 * above); NULL if src is NULL. */
static bg_filter *protect(_Atomic(bg_filter *) *slot, _Atomic(bg_filter *) *src)
{
    bg_filter *p = atomic_load(src);
    for (;;) {
        atomic_store(slot, p);
        bg_filter *q = atomic_load(src);
        if (q == p)
            return p;
        p = q;
    }
}

static void unprotect(_Atomic(bg_filter *) *slot)
{
    atomic_store_explicit(slot, NULL, memory_order_release);
}

static void backoff(unsigned *spins)
{
    if (++*spins < 64) {
        sched_yield();
    } else {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
}

/* Frees f once no slot holds it. f must already be unreachable from current
 * and pending. */
static void retire(bg_guard *g, bg_filter *f)
{
    if (!f)
        return;
    for (bg__thread_rec *r = atomic_load(&g->threads.head); r; r = r->next)
        for (int i = 0; i < 2; i++) {
            bg__guard_thread *t = (bg__guard_thread *)r;
            unsigned spins = 0;
            while (atomic_load(&t->hazard[i]) == f)
                backoff(&spins);
        }
    bg_filter_free(f);
}

/* ---- key batches ------------------------------------------------------- */

int bg__batch_init(bg__key_batch *b, size_t max,
                   int (*flush)(void *, const void *const *, const size_t *, size_t), void *arg)
{
    memset(b, 0, sizeof *b);
    b->flush = flush;
    b->arg = arg;
    b->max = max;
    b->cap = (size_t)64 << 10;
    b->bytes = bg__malloc(b->cap);
    b->offs = bg__malloc(max * sizeof *b->offs);
    b->lens = bg__malloc(max * sizeof *b->lens);
    b->keys = bg__malloc(max * sizeof *b->keys);
    if (!b->bytes || !b->offs || !b->lens || !b->keys) {
        bg__batch_free(b);
        return BG_ENOMEM;
    }
    return BG_OK;
}

void bg__batch_free(bg__key_batch *b)
{
    bg__free(b->bytes);
    bg__free(b->offs);
    bg__free(b->lens);
    bg__free((void *)b->keys);
    memset(b, 0, sizeof *b);
}

int bg__batch_flush(bg__key_batch *b)
{
    if (b->n == 0)
        return BG_OK;
    for (size_t i = 0; i < b->n; i++)
        b->keys[i] = b->bytes + b->offs[i];
    int rc = b->flush(b->arg, b->keys, b->lens, b->n);
    b->n = 0;
    b->used = 0;
    return rc < 0 ? rc : BG_OK;
}

int bg__batch_emit(void *arg, const void *key, size_t len)
{
    bg__key_batch *b = arg;
    if (!key && len)
        return BG_EINVAL;
    if (len > b->cap - b->used) {
        int rc = bg__batch_flush(b);
        if (rc != BG_OK)
            return rc;
        if (len > b->cap) {
            /* A key longer than the buffer: grow it (empty after the flush). */
            size_t cap = len > SIZE_MAX / 2 ? len : 2 * len;
            uint8_t *bytes = bg__malloc(cap);
            if (!bytes)
                return BG_ENOMEM;
            bg__free(b->bytes);
            b->bytes = bytes;
            b->cap = cap;
        }
    }
    if (len)
        memcpy(b->bytes + b->used, key, len);
    b->offs[b->n] = b->used;
    b->lens[b->n] = len;
    b->used += len;
    if (++b->n == b->max)
        return bg__batch_flush(b);
    return BG_OK;
}

int bg__batch_scan(bg_guard *g, bg__key_batch *b)
{
    int rc = g->o.source.scan(g->o.source.ctx, bg__batch_emit, b);
    if (rc < 0)
        return rc;
    if (rc > 0)
        return BG_EINVAL; /* an answer guard.h does not define */
    return bg__batch_flush(b);
}

/* ---- building ---------------------------------------------------------- */

int bg__guard_capacity(bg_guard *g, uint64_t *out)
{
    if (g->o.filter.capacity) {
        *out = g->o.filter.capacity;
        return BG_OK;
    }
    if (!g->o.source.count)
        return BG_EINVAL;
    uint64_t n = 0;
    int rc = g->o.source.count(g->o.source.ctx, &n);
    if (rc < 0)
        return rc;
    if (rc > 0)
        return BG_EINVAL; /* an answer guard.h does not define */
    double c = ceil((double)n * g->o.headroom);
    if (!(c < 0x1p63))
        return BG_EOVERFLOW;
    *out = c < 1024.0 ? 1024 : (uint64_t)c;
    return BG_OK;
}

static int flush_local(void *arg, const void *const *keys, const size_t *lens, size_t n)
{
    int64_t rc = bg_filter_add_many(arg, keys, lens, n, NULL);
    return rc < 0 ? (int)rc : BG_OK;
}

/* A new empty filter shaped by the options (capacity 0: from count()). */
static int local_new(bg_guard *g, bg_filter **out)
{
    bg_filter_options fo = g->o.filter;
    fo.concurrency = BG_CONCURRENT_WRITERS; /* puts come from any thread */
    if (fo.capacity == 0 && fo.bits == 0) {
        int rc = bg__guard_capacity(g, &fo.capacity);
        if (rc != BG_OK)
            return rc;
    }
    if (fo.error_rate == 0 && fo.bits == 0 && fo.hashes == 0)
        fo.error_rate = 0.01;
    return bg_filter_new(out, &fo);
}

int bg__local_build(bg_guard *g, bg_filter **out)
{
    *out = NULL;
    bg_filter *f;
    int rc = local_new(g, &f);
    if (rc != BG_OK)
        return rc;
    bg__key_batch b;
    rc = bg__batch_init(&b, BG__GUARD_BATCH_LOCAL, flush_local, f);
    if (rc == BG_OK) {
        rc = bg__batch_scan(g, &b);
        bg__batch_free(&b);
    }
    if (rc != BG_OK) {
        bg_filter_free(f);
        return rc;
    }
    *out = f;
    return BG_OK;
}

int bg__local_rebuild(bg_guard *g)
{
    if (pthread_mutex_trylock(&g->rebuild_mu) != 0)
        return BG_EBUSY;
    bg_filter *n;
    int rc = local_new(g, &n);
    bg__key_batch b;
    if (rc == BG_OK) {
        atomic_store(&g->pending, n); /* from now on puts add to n too */
        rc = bg__batch_init(&b, BG__GUARD_BATCH_LOCAL, flush_local, n);
        if (rc == BG_OK) {
            rc = bg__batch_scan(g, &b);
            bg__batch_free(&b);
        }
        if (rc != BG_OK) {
            atomic_store(&g->pending, NULL);
            retire(g, n);
        } else {
            bg_filter *old = atomic_exchange(&g->current, n);
            atomic_store(&g->pending, NULL);
            retire(g, old);
        }
    }
    pthread_mutex_unlock(&g->rebuild_mu);
    return rc;
}

/* ---- using it ------------------------------------------------------------ */

int bg__local_contains(bg_guard *g, const void *key, size_t len)
{
    bg__guard_thread *t;
    int rc = bg__guard_thread_get(g, &t);
    if (rc != BG_OK)
        return rc;
    bg_filter *f = protect(&t->hazard[0], &g->current);
    rc = bg_filter_contains(f, key, len);
    unprotect(&t->hazard[0]);
    return rc;
}

int bg__local_add(bg_guard *g, const void *key, size_t len)
{
    bg__guard_thread *t;
    int rc = bg__guard_thread_get(g, &t);
    if (rc != BG_OK)
        return rc;
    /* pending first, then current: NO KEY IS LOST above. */
    bg_filter *p = protect(&t->hazard[1], &g->pending);
    bg_filter *c = protect(&t->hazard[0], &g->current);
    if (p && p != c)
        rc = bg_filter_add(p, key, len);
    int rc2 = bg_filter_add(c, key, len);
    unprotect(&t->hazard[0]);
    unprotect(&t->hazard[1]);
    return rc != BG_OK ? rc : rc2;
}

/* Counting filters only; the current filter only. A remove from the pending
 * one could undo an add that never happened there (the scan ran after the
 * source lost the key) and take counts other keys rely on: a false
 * negative. Left in the pending filter, the key is one false positive until
 * the next rebuild. */
int bg__local_remove(bg_guard *g, const void *key, size_t len)
{
    if (g->o.filter.variant != BG_VARIANT_COUNTING)
        return BG_OK; /* every filter of this guard has the options' variant */
    bg__guard_thread *t;
    int rc = bg__guard_thread_get(g, &t);
    if (rc != BG_OK)
        return rc;
    bg_filter *c = protect(&t->hazard[0], &g->current);
    rc = bg_filter_remove(c, key, len);
    unprotect(&t->hazard[0]);
    return rc == BG_EABSENT ? BG_OK : rc;
}

void bg__local_stats(bg_guard *g, uint64_t *items, uint64_t *bytes)
{
    bg__guard_thread *t;
    if (bg__guard_thread_get(g, &t) != BG_OK)
        return;
    bg_filter *c = protect(&t->hazard[0], &g->current);
    *items = bg_filter_items(c);
    *bytes = bg_filter_bytes(c);
    unprotect(&t->hazard[0]);
}
