/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal to bloomgate_guard: the guard's struct and the pieces guard.c
 * puts together (negative_cache.c, single_flight.c, swap.c, remote_filter.c). Not
 * API. docs/GUARD.md describes the design. */
#ifndef BG_GUARD_INTERNAL_H
#define BG_GUARD_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <bloomgate/guard.h>

#include "thread_records.h"

/* Hash seed of the guard's own tables (negative cache, single flight): any
 * fixed value; these tables never leave the process. */
#define BG__GUARD_SEED UINT64_C(0x6775617264)

/* Keys per batch when streaming the source into a filter. */
#define BG__GUARD_BATCH_LOCAL 1024u
#define BG__GUARD_BATCH_REMOTE 1000u

#include "common/clock.h" /* bg__now_ms */

/* Whether a call that began at t0 (bg__now_ms) and failed with
 * BG_ECONN failed at once, in under half its command timeout: its
 * connection was found closed (a Redis restart, a proxy's idle timeout),
 * not the server slow, so one more try on a new connection is worth it.
 * The remote filter (remote_filter.c, CONNECTIONS) and the Redis cache
 * (redis_cache.c, STALE CONNECTIONS) retry by this rule. */
static inline int bg__guard_broke_at_once(uint64_t t0, uint32_t command_timeout_ms)
{
    return bg__now_ms() - t0 < command_timeout_ms / 2;
}

/* ---- counters --------------------------------------------------------- */

typedef struct bg__guard_stats {
    atomic_uint_fast64_t requests, filtered, negative_hits, cache_hits, cache_errors,
        source_queries, source_found, false_positives, source_errors, collapsed, puts, removes,
        rebuilds, rebuild_errors, cache_skipped;
} bg__guard_stats;

#define BG__COUNT(g, field) atomic_fetch_add_explicit(&(g)->stats.field, 1, memory_order_relaxed)

/* ---- negative cache (negative_cache.c) -------------------------------- */

typedef struct bg__neg_entry {
    uint64_t hash;
    uint64_t expires_ms;
    uint8_t *key;  /* bg__malloc'd copy */
    size_t len;
    uint32_t next; /* bucket chain or free list; BG__NEG_NIL ends it */
    uint32_t live;
} bg__neg_entry;

#define BG__NEG_NIL UINT32_MAX

typedef struct bg__neg_stripe {
    pthread_mutex_t mu;
    uint32_t *heads;       /* nbuckets chain heads */
    uint32_t nbuckets;     /* a power of two */
    bg__neg_entry *slots;  /* cap entries */
    uint32_t cap, used;
    uint32_t free_head;    /* never-used or deleted slots */
    uint32_t hand;         /* eviction clock (EVICTION in negative_cache.c) */
    uint64_t forgets;      /* bumped by every forget: see bg__neg_seq */
    /* External-cache stores of this stripe's keys in progress (guard.c,
     * STALE CACHE WRITES): begun under the current forget count, or under
     * an older one (a put overtook them: gets skip the cache meanwhile). */
    uint32_t fills_current, fills_overtaken;
    uint64_t failed_store_until; /* a store that failed may land until then */
    uint64_t suspect_until;      /* gets skip the cache until then */
    char pad[64];          /* keeps stripes' mutexes off one cache line */
} bg__neg_stripe;

typedef struct bg__neg_cache {
    bg__neg_stripe *stripes;
    uint32_t nstripes; /* a power of two */
    uint32_t mutexes;  /* initialised so far (for cleanup) */
    uint64_t ttl_ms;
    double jitter;
} bg__neg_cache;

int bg__neg_init(bg__neg_cache *c, size_t capacity, uint64_t ttl_ms, double jitter);
void bg__neg_destroy(bg__neg_cache *c);
/* 1 if key has a live negative entry (an expired one is dropped: 0). */
int bg__neg_lookup(bg__neg_cache *c, const void *key, size_t len, uint64_t hash);
/* The key's stripe's forget count, read before a source query: insert then
 * refuses if a put forgot any key of the stripe meanwhile, and the guard
 * does not leave the query's answer in the external cache (guard.c,
 * STALE CACHE WRITES). */
uint64_t bg__neg_seq(bg__neg_cache *c, uint64_t hash);
/* Remembers key as absent for ttl +- jitter, unless the stripe's forget
 * count moved from seq. Best effort: out of memory just skips it. Returns
 * 1 if stored, 0 if not. */
int bg__neg_insert(bg__neg_cache *c, const void *key, size_t len, uint64_t hash, uint64_t seq);
/* Drops key's entry (if any) and bumps the stripe's forget count; stores
 * in progress are overtaken, and a store that failed lately makes the
 * stripe suspect (guard.c, STALE CACHE WRITES). */
void bg__neg_forget(bg__neg_cache *c, const void *key, size_t len, uint64_t hash);
/* Around an external-cache store of a query read under seq: begin returns 0
 * (do not store) if the forget count moved from seq, else registers the
 * store; end unregisters it. failed_ttl_ms: 0, or the TTL of a store that
 * failed (it may still land, until now + failed_ttl_ms). */
int bg__neg_fill_begin(bg__neg_cache *c, uint64_t hash, uint64_t seq);
void bg__neg_fill_end(bg__neg_cache *c, uint64_t hash, uint64_t seq, uint64_t failed_ttl_ms);
/* 1 if a get of a key of this stripe must skip the external cache: a store
 * that a put overtook is in progress, or may still land. */
int bg__neg_suspect(bg__neg_cache *c, uint64_t hash);
/* The TTL for a new entry: ttl_ms * (1 + jitter * u), u uniform in [-1, 1),
 * from a per-thread PRNG. At least 1. */
uint64_t bg__neg_ttl(const bg__neg_cache *c);

/* ---- single flight (single_flight.c) ---------------------------------- */

typedef struct bg__flight bg__flight;

typedef struct bg__flight_stripe {
    pthread_mutex_t mu;
    bg__flight *head; /* in-flight queries of keys hashing here */
    char pad[64];
} bg__flight_stripe;

typedef struct bg__flights {
    bg__flight_stripe *stripes;
    uint32_t nstripes;
    uint32_t mutexes;
} bg__flights;

int bg__flights_init(bg__flights *t, uint32_t nstripes);
void bg__flights_destroy(bg__flights *t);

/* Joins the in-flight query of key or starts one.
 * - Another thread's query is running: waits for it, copies its answer
 *   (status and, when FOUND, value) into *rc / value, returns 1 (collapsed).
 * - None: registers this thread as the leader in *leader and returns 0;
 *   the caller queries the source and must call bg__flight_finish. If
 *   registering fails (out of memory), *leader is NULL: the caller queries
 *   without collapsing (and calls bg__flight_finish with NULL, a no-op). */
int bg__flight_join(bg__flights *t, const void *key, size_t len, uint64_t hash,
                    bg__flight **leader, int *rc, bg_guard_buf *value);
/* Hands the leader's answer to the waiters and retires the flight (linked
 * or detached). */
void bg__flight_finish(bg__flights *t, bg__flight *f, int rc, const bg_guard_buf *value);
/* Unlinks key's in-flight query, if any, so that later misses start a new
 * one; its leader and waiters carry on (single_flight.c, DETACHING). */
void bg__flight_detach(bg__flights *t, const void *key, size_t len, uint64_t hash);

/* ---- per-thread state (swap.c) ---------------------------------------- */

/* What one thread keeps per guard: its hazard-pointer slots (local filter)
 * and its connection and filter handle (remote filter). Records are never
 * freed before the guard: a thread's exit returns its record to the pool
 * (in_use = 0), and the next new thread adopts it, connection included (remote_filter.c). */
typedef struct bg__guard_thread {
    bg__thread_rec rec;             /* first: thread_records.h */
    _Atomic(bg_filter *) hazard[2]; /* [0] current, [1] pending */
    bg_remote *conn;                /* remote: NULL until first use */
    bg_remote_filter *rf;           /* remote: NULL until opened */
    int rebuild_left;               /* remote: rf began a rebuild whose abort
                                       failed: it may be pending still */
} bg__guard_thread;

/* ---- the guard -------------------------------------------------------- */

struct bg_guard {
    bg_guard_options o;      /* defaults filled in; remote and remote_name
                                point at the copies below */
    bg_remote_options ropts; /* copy, strings below */
    char *rname, *rhost, *rsocket, *ruser, *rpass, *rseeds;

    /* Local filter (swap.c). */
    _Atomic(bg_filter *) current;
    _Atomic(bg_filter *) pending; /* non-NULL while a rebuild fills it */
    pthread_mutex_t rebuild_mu;   /* trylock: one rebuild at a time */
    int rebuild_mu_ok;

    /* Per-thread records (swap.c). */
    bg__thread_recs threads;

    bg__neg_cache neg;
    bg__flights flights;
    bg__guard_stats stats;

    /* FAILED DELETES (guard.c): gets skip the cache until this time
     * (bg__now_ms; 0: no failed delete pending), which a failed
     * delete pushes distrust_ms ahead. */
    atomic_uint_fast64_t distrust_until;
    uint64_t distrust_ms;
};

/* The calling thread's record, made on first use. BG_OK or BG_ENOMEM. */
int bg__guard_thread_get(bg_guard *g, bg__guard_thread **out);
int bg__guard_threads_init(bg_guard *g);
void bg__guard_threads_free(bg_guard *g);

/* Local filter (swap.c). */
int bg__local_build(bg_guard *g, bg_filter **out);
int bg__local_contains(bg_guard *g, const void *key, size_t len);
int bg__local_add(bg_guard *g, const void *key, size_t len);
int bg__local_remove(bg_guard *g, const void *key, size_t len);
int bg__local_rebuild(bg_guard *g);
void bg__local_stats(bg_guard *g, uint64_t *items, uint64_t *bytes);

/* Remote filter (remote_filter.c). */
int bg__guard_remote_init(bg_guard *g);
int bg__guard_remote_contains(bg_guard *g, const void *key, size_t len);
int bg__guard_remote_add(bg_guard *g, const void *key, size_t len);
int bg__guard_remote_rebuild(bg_guard *g);
void bg__guard_remote_stats(bg_guard *g, uint64_t *items, uint64_t *bytes, uint32_t *shards);
void bg__guard_remote_thread_close(bg__guard_thread *t);

/* Key batches streamed from source.scan (swap.c): copies each emitted key,
 * flushes every `max` keys through flush(arg, keys, lens, n). */
typedef struct bg__key_batch {
    int (*flush)(void *arg, const void *const *keys, const size_t *lens, size_t n);
    void *arg;
    size_t max, n;
    uint8_t *bytes;
    size_t used, cap;  /* of bytes */
    size_t *offs, *lens;
    const void **keys;
} bg__key_batch;

int bg__batch_init(bg__key_batch *b, size_t max,
                   int (*flush)(void *, const void *const *, const size_t *, size_t), void *arg);
void bg__batch_free(bg__key_batch *b);
/* source.scan's emit: arg is a bg__key_batch. */
int bg__batch_emit(void *arg, const void *key, size_t len);
int bg__batch_flush(bg__key_batch *b);
/* Streams the whole source through b: scan, then the last flush. */
int bg__batch_scan(bg_guard *g, bg__key_batch *b);

/* The capacity to size a filter for: options.filter.capacity, else
 * source.count() * headroom (at least 1024). */
int bg__guard_capacity(bg_guard *g, uint64_t *out);

/* A copy of s (NULL for NULL), bg__strdup; sets *fail when out of memory,
 * so that several copies can be checked once. */
char *bg__guard_strdup(const char *s, int *fail);

#endif
