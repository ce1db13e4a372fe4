/* SPDX-License-Identifier: BSD-3-Clause */
/* The negative cache: keys the source recently said were absent although the
 * filter said "maybe" (confirmed false positives), so that repeats of one
 * such key cost one source query per TTL, not one per request.
 *
 * HOW IT WORKS
 * A hash table split into nstripes stripes (a power of two, at most 64),
 * each with its own mutex, so threads looking up different keys rarely meet.
 * A key's XXH3 hash picks its stripe (high bits) and, inside it, its bucket
 * (low bits). Each stripe owns a fixed array of cap slots (the capacity
 * split evenly; all allocated at creation) chained from nbuckets heads
 * (nbuckets >= cap, a power of two); an entry holds the hash, a copy of the
 * key and its expiry time. Lookups compare hash, length and bytes.
 *
 * EXPIRY
 * An entry lives ttl_ms * (1 + jitter * u), u uniform in [-1, 1): with
 * jitter, the entries written in one burst (say, a scan of a thousand bad
 * ids) do not all expire in the same millisecond and send their thousand
 * re-queries to the source together; they trickle back instead. u comes from
 * a per-thread SplitMix64 (no rand(): shared state, a lock in glibc, and
 * not thread-safe by the standard). An expired entry is dropped by the
 * lookup that finds it, or reused by eviction.
 *
 * EVICTION
 * A full stripe reuses the slot under its clock hand, which moves one slot
 * per eviction: slots are filled in index order and refilled in hand order,
 * so the victim is the stripe's oldest insertion, except after deletes (a
 * put's forget frees a slot, which the next insert takes). Cheap and
 * bounded; a stale negative costs one extra source query, never a wrong
 * answer, so an exact LRU is not worth its bookkeeping.
 *
 * PUTS AND IN-FLIGHT QUERIES
 * A put forgets the key's entry. A source query that started before the
 * put may still come back "absent" after it and would store a stale
 * negative for a whole TTL. So every forget bumps its stripe's counter,
 * the query reads the counter before asking the source (bg__neg_seq), and
 * the insert is dropped when the counter moved (any key of the stripe was
 * put meanwhile: rare, and dropping costs at most a query). guard.c uses
 * the same counter to keep such answers out of the external cache (STALE
 * CACHE WRITES there); removes bump it too. */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include <bloomgate/hash.h>

#include "common/alloc.h"
#include "guard_internal.h"

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* A uniform double in [0, 1) from this thread's SplitMix64, seeded on first
 * use from the clock, the state's address and a process-wide counter (so
 * two threads started in the same nanosecond still differ). */
static double thread_uniform(void)
{
    static _Thread_local uint64_t state;
    static _Thread_local int seeded;
    static atomic_uint_fast64_t threads;
    if (!seeded) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t n = atomic_fetch_add_explicit(&threads, 1, memory_order_relaxed);
        state = mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                      (uint64_t)(uintptr_t)&state ^ (n * UINT64_C(0x9e3779b97f4a7c15)));
        seeded = 1;
    }
    state += UINT64_C(0x9e3779b97f4a7c15);
    return (double)(mix64(state) >> 11) * 0x1.0p-53;
}

uint64_t bg__neg_ttl(const bg__neg_cache *c)
{
    double t = (double)c->ttl_ms;
    if (c->jitter > 0)
        t *= 1.0 + c->jitter * (2.0 * thread_uniform() - 1.0);
    return t < 1.0 ? 1 : (uint64_t)t;
}

int bg__neg_init(bg__neg_cache *c, size_t capacity, uint64_t ttl_ms, double jitter)
{
    memset(c, 0, sizeof *c);
    if (capacity == 0 || capacity > UINT32_MAX / 2)
        return BG_EINVAL;
    c->ttl_ms = ttl_ms;
    c->jitter = jitter;
    uint32_t ns = 1;
    while (ns < 64 && (size_t)ns * 2 <= capacity)
        ns *= 2;
    c->stripes = bg__calloc(ns, sizeof *c->stripes);
    if (!c->stripes)
        return BG_ENOMEM;
    c->nstripes = ns;
    for (uint32_t s = 0; s < ns; s++) {
        bg__neg_stripe *st = &c->stripes[s];
        st->cap = (uint32_t)(capacity / ns + (s < capacity % ns ? 1 : 0));
        st->nbuckets = 1;
        while (st->nbuckets < st->cap)
            st->nbuckets *= 2;
        st->heads = bg__malloc(st->nbuckets * sizeof *st->heads);
        st->slots = bg__calloc(st->cap, sizeof *st->slots);
        if (!st->heads || !st->slots)
            return BG_ENOMEM; /* bg__neg_destroy frees what was made */
        for (uint32_t b = 0; b < st->nbuckets; b++)
            st->heads[b] = BG__NEG_NIL;
        for (uint32_t i = 0; i < st->cap; i++)
            st->slots[i].next = i + 1 < st->cap ? i + 1 : BG__NEG_NIL;
        st->free_head = 0;
        if (pthread_mutex_init(&st->mu, NULL) != 0)
            return BG_ENOMEM;
        c->mutexes++;
    }
    return BG_OK;
}

void bg__neg_destroy(bg__neg_cache *c)
{
    if (!c->stripes)
        return;
    for (uint32_t s = 0; s < c->nstripes; s++) {
        bg__neg_stripe *st = &c->stripes[s];
        if (st->slots)
            for (uint32_t i = 0; i < st->cap; i++)
                bg__free(st->slots[i].key);
        bg__free(st->slots);
        bg__free(st->heads);
        if (s < c->mutexes)
            pthread_mutex_destroy(&st->mu);
    }
    bg__free(c->stripes);
    memset(c, 0, sizeof *c);
}

static bg__neg_stripe *stripe_of(bg__neg_cache *c, uint64_t hash)
{
    /* The high bits pick the stripe, the low bits the bucket. */
    return &c->stripes[c->nstripes == 1 ? 0 : (uint32_t)(hash >> 58) & (c->nstripes - 1)];
}

/* The slot index holding key in st, or BG__NEG_NIL; *prev_link gets the
 * link that points at it (for unlinking). Caller holds st->mu. */
static uint32_t find(bg__neg_stripe *st, const void *key, size_t len, uint64_t hash,
                     uint32_t **prev_link)
{
    uint32_t *link = &st->heads[hash & (st->nbuckets - 1)];
    while (*link != BG__NEG_NIL) {
        bg__neg_entry *e = &st->slots[*link];
        if (e->hash == hash && e->len == len && (len == 0 || memcmp(e->key, key, len) == 0)) {
            *prev_link = link;
            return *link;
        }
        link = &e->next;
    }
    return BG__NEG_NIL;
}

/* Unlinks slot i (linked at *link) and puts it on the free list. */
static void release(bg__neg_stripe *st, uint32_t *link, uint32_t i)
{
    bg__neg_entry *e = &st->slots[i];
    *link = e->next;
    bg__free(e->key);
    e->key = NULL;
    e->live = 0;
    e->next = st->free_head;
    st->free_head = i;
    st->used--;
}

/* Unlinks live slot i wherever it is chained. */
static void evict(bg__neg_stripe *st, uint32_t i)
{
    bg__neg_entry *e = &st->slots[i];
    uint32_t *link = &st->heads[e->hash & (st->nbuckets - 1)];
    while (*link != i)
        link = &st->slots[*link].next;
    release(st, link, i);
}

int bg__neg_lookup(bg__neg_cache *c, const void *key, size_t len, uint64_t hash)
{
    bg__neg_stripe *st = stripe_of(c, hash);
    int hit = 0;
    pthread_mutex_lock(&st->mu);
    uint32_t *link;
    uint32_t i = find(st, key, len, hash, &link);
    if (i != BG__NEG_NIL) {
        if (st->slots[i].expires_ms > bg__now_ms())
            hit = 1;
        else
            release(st, link, i);
    }
    pthread_mutex_unlock(&st->mu);
    return hit;
}

uint64_t bg__neg_seq(bg__neg_cache *c, uint64_t hash)
{
    bg__neg_stripe *st = stripe_of(c, hash);
    pthread_mutex_lock(&st->mu);
    uint64_t seq = st->forgets;
    pthread_mutex_unlock(&st->mu);
    return seq;
}

int bg__neg_insert(bg__neg_cache *c, const void *key, size_t len, uint64_t hash, uint64_t seq)
{
    bg__neg_stripe *st = stripe_of(c, hash);
    uint64_t expires = bg__now_ms() + bg__neg_ttl(c);
    /* Copy the key before taking the lock (allocation can be slow). */
    uint8_t *copy = bg__malloc(len ? len : 1);
    if (!copy)
        return 0;
    if (len)
        memcpy(copy, key, len);
    int stored = 0;
    pthread_mutex_lock(&st->mu);
    if (st->forgets != seq)
        goto out;
    uint32_t *link;
    uint32_t i = find(st, key, len, hash, &link);
    if (i != BG__NEG_NIL) {
        st->slots[i].expires_ms = expires;
        stored = 1;
        goto out;
    }
    if (st->free_head == BG__NEG_NIL) {
        /* Full: evict the slot under the hand (EVICTION above). */
        uint32_t v = st->hand;
        st->hand = st->hand + 1 < st->cap ? st->hand + 1 : 0;
        evict(st, v);
    }
    i = st->free_head;
    bg__neg_entry *e = &st->slots[i];
    st->free_head = e->next;
    e->hash = hash;
    e->expires_ms = expires;
    e->key = copy;
    copy = NULL;
    e->len = len;
    e->live = 1;
    uint32_t *head = &st->heads[hash & (st->nbuckets - 1)];
    e->next = *head;
    *head = i;
    st->used++;
    stored = 1;
out:
    pthread_mutex_unlock(&st->mu);
    bg__free(copy);
    return stored;
}

void bg__neg_forget(bg__neg_cache *c, const void *key, size_t len, uint64_t hash)
{
    bg__neg_stripe *st = stripe_of(c, hash);
    pthread_mutex_lock(&st->mu);
    st->forgets++;
    st->fills_overtaken += st->fills_current;
    st->fills_current = 0;
    if (st->failed_store_until > st->suspect_until && st->failed_store_until > bg__now_ms())
        st->suspect_until = st->failed_store_until;
    uint32_t *link;
    uint32_t i = find(st, key, len, hash, &link);
    if (i != BG__NEG_NIL)
        release(st, link, i);
    pthread_mutex_unlock(&st->mu);
}

int bg__neg_fill_begin(bg__neg_cache *c, uint64_t hash, uint64_t seq)
{
    bg__neg_stripe *st = stripe_of(c, hash);
    pthread_mutex_lock(&st->mu);
    int ok = st->forgets == seq;
    if (ok)
        st->fills_current++;
    pthread_mutex_unlock(&st->mu);
    return ok;
}

void bg__neg_fill_end(bg__neg_cache *c, uint64_t hash, uint64_t seq, uint64_t failed_ttl_ms)
{
    bg__neg_stripe *st = stripe_of(c, hash);
    uint64_t until = failed_ttl_ms ? bg__now_ms() + failed_ttl_ms : 0;
    pthread_mutex_lock(&st->mu);
    /* Counted as current until a forget moved it to overtaken. */
    if (st->forgets == seq)
        st->fills_current--;
    else
        st->fills_overtaken--;
    if (until > st->failed_store_until)
        st->failed_store_until = until;
    /* Overtaken already: its late landing would outlive the put's delete. */
    if (st->forgets != seq && until > st->suspect_until)
        st->suspect_until = until;
    pthread_mutex_unlock(&st->mu);
}

int bg__neg_suspect(bg__neg_cache *c, uint64_t hash)
{
    bg__neg_stripe *st = stripe_of(c, hash);
    pthread_mutex_lock(&st->mu);
    int suspect = st->fills_overtaken > 0 || (st->suspect_until && bg__now_ms() < st->suspect_until);
    pthread_mutex_unlock(&st->mu);
    return suspect;
}
