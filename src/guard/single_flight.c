/* SPDX-License-Identifier: BSD-3-Clause */
/* Single flight: of all threads that miss the same key at once, one (the
 * leader) queries the source; the others wait for its answer and get a copy.
 * A burst of requests for one uncached key (a hot product whose cache entry
 * just expired, or a false positive hammered by a client) then costs the
 * source one query, not one per thread.
 *
 * HOW IT WORKS
 * A small table of stripes, each a mutex and a list of in-flight queries
 * (bg__flight: the key, a condition variable, a reference count, the
 * answer). A thread that misses takes the key's stripe lock and looks for
 * the key: found, it takes a reference and waits on the flight's condition
 * variable until the leader marks it done, copies the answer and drops the
 * reference (the last one out frees the flight); not found, it links a new
 * flight and becomes the leader. The leader queries with no lock held, then
 * (bg__flight_finish) stores the answer, unlinks the flight, so that later
 * misses start a new query, and broadcasts. The list is short (one entry per
 * key being queried right now), so a linear scan is fine.
 *
 * DETACHING (bg__flight_detach, called by puts and removes)
 * A query that began before a write may answer with the row as it was: a
 * get that starts after the write returned must not join it. So a write
 * unlinks the key's flight at once: later misses find no flight and start
 * a fresh query (of the new row), while the threads already waiting on the
 * detached flight stay on it and get its answer (they were concurrent with
 * the write: either answer is right for them). bg__flight_finish then
 * finds the flight unlinked and only hands out the answer. Several
 * detached flights of one key may run at once; at most one is linked.
 *
 * LIMITATIONS
 * Waiters wait as long as the source takes: the source's own timeouts bound
 * them. A flight that cannot be allocated is not an error: the thread just
 * queries alone. A waiter whose copy of the value cannot be allocated gets
 * BG_ENOMEM. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "common/alloc.h"
#include "guard_internal.h"

struct bg__flight {
    bg__flight *next;
    uint64_t hash;
    uint8_t *key;
    size_t len;
    pthread_cond_t cv;
    unsigned refs; /* the leader plus the waiters */
    int linked;    /* in its stripe's list: not finished, not detached */
    int done;
    int rc;
    bg_guard_buf value; /* the answer's value, when rc is BG_GUARD_FOUND */
};

int bg__flights_init(bg__flights *t, uint32_t nstripes)
{
    memset(t, 0, sizeof *t);
    t->stripes = bg__calloc(nstripes, sizeof *t->stripes);
    if (!t->stripes)
        return BG_ENOMEM;
    t->nstripes = nstripes;
    for (uint32_t s = 0; s < nstripes; s++) {
        if (pthread_mutex_init(&t->stripes[s].mu, NULL) != 0)
            return BG_ENOMEM;
        t->mutexes++;
    }
    return BG_OK;
}

void bg__flights_destroy(bg__flights *t)
{
    if (!t->stripes)
        return;
    for (uint32_t s = 0; s < t->mutexes; s++)
        pthread_mutex_destroy(&t->stripes[s].mu);
    bg__free(t->stripes);
    memset(t, 0, sizeof *t);
}

static void flight_free(bg__flight *f)
{
    pthread_cond_destroy(&f->cv);
    bg_guard_buf_free(&f->value);
    bg__free(f->key);
    bg__free(f);
}

static bg__flight_stripe *stripe_of(bg__flights *t, uint64_t hash)
{
    return &t->stripes[(uint32_t)(hash >> 32) & (t->nstripes - 1)];
}

/* The link pointing at key's linked flight (or at the list's NULL end).
 * Caller holds st->mu. */
static bg__flight **find(bg__flight_stripe *st, const void *key, size_t len, uint64_t hash)
{
    bg__flight **link = &st->head;
    while (*link && !((*link)->hash == hash && (*link)->len == len &&
                      (len == 0 || memcmp((*link)->key, key, len) == 0)))
        link = &(*link)->next;
    return link;
}

int bg__flight_join(bg__flights *t, const void *key, size_t len, uint64_t hash,
                    bg__flight **leader, int *rc, bg_guard_buf *value)
{
    *leader = NULL;
    bg__flight_stripe *st = stripe_of(t, hash);
    pthread_mutex_lock(&st->mu);
    bg__flight *f = *find(st, key, len, hash);
    if (f) {
        f->refs++;
        while (!f->done)
            pthread_cond_wait(&f->cv, &st->mu);
        *rc = f->rc;
        if (f->rc == BG_GUARD_FOUND && bg_guard_buf_set(value, f->value.data, f->value.len) != BG_OK)
            *rc = BG_ENOMEM;
        int last = --f->refs == 0;
        pthread_mutex_unlock(&st->mu);
        if (last)
            flight_free(f);
        return 1;
    }
    /* Lead: allocated under the lock, so that no second leader can slip in
     * between the search and the link (one allocation, short). */
    f = bg__calloc(1, sizeof *f);
    if (f) {
        f->key = bg__malloc(len ? len : 1);
        if (!f->key || pthread_cond_init(&f->cv, NULL) != 0) {
            bg__free(f->key);
            bg__free(f);
            f = NULL;
        }
    }
    if (f) {
        if (len)
            memcpy(f->key, key, len);
        f->len = len;
        f->hash = hash;
        f->refs = 1;
        f->linked = 1;
        f->next = st->head;
        st->head = f;
    }
    pthread_mutex_unlock(&st->mu);
    *leader = f;
    return 0;
}

void bg__flight_finish(bg__flights *t, bg__flight *f, int rc, const bg_guard_buf *value)
{
    if (!f)
        return;
    /* Copy the value before taking the lock (allocation can be slow). */
    if (rc == BG_GUARD_FOUND && bg_guard_buf_set(&f->value, value->data, value->len) != BG_OK)
        rc = BG_ENOMEM; /* for the waiters; the leader has its own copy */
    bg__flight_stripe *st = stripe_of(t, f->hash);
    pthread_mutex_lock(&st->mu);
    if (f->linked) { /* else a write detached it (DETACHING above) */
        bg__flight **link = &st->head;
        while (*link != f)
            link = &(*link)->next;
        *link = f->next;
        f->linked = 0;
    }
    f->rc = rc;
    f->done = 1;
    pthread_cond_broadcast(&f->cv);
    int last = --f->refs == 0;
    pthread_mutex_unlock(&st->mu);
    if (last)
        flight_free(f);
}

void bg__flight_detach(bg__flights *t, const void *key, size_t len, uint64_t hash)
{
    bg__flight_stripe *st = stripe_of(t, hash);
    pthread_mutex_lock(&st->mu);
    bg__flight **link = find(st, key, len, hash);
    bg__flight *f = *link;
    if (f) {
        *link = f->next;
        f->next = NULL;
        f->linked = 0;
    }
    pthread_mutex_unlock(&st->mu);
}
