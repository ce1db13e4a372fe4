/* SPDX-License-Identifier: BSD-3-Clause */
/* The guard: the read path of a service, with a Bloom filter in front of
 * its cache and its database ("the source").
 *
 *   bg_guard *g;
 *   bg_guard_options o = { .source = my_source, .cache = my_cache,
 *                          .filter = { .error_rate = 0.01 } };
 *   if (bg_guard_new(&g, &o) != BG_OK) ...   builds the filter from the source
 *   bg_guard_buf v = {0};
 *   int rc = bg_guard_get(g, "42", 2, &v);
 *   if (rc == BG_GUARD_FOUND) ... v.data, v.len
 *   else if (rc == BG_GUARD_ABSENT) ... 404
 *   else ... rc < 0: bg_strerror(rc)
 *   bg_guard_buf_free(&v);
 *   bg_guard_free(g);
 *
 * Built as the separate library libbloomgate_guard (shared, on
 * libbloomgate_remote and libbloomgate, with hiredis and pthreads; or the
 * archive, with the other two archives). docs/GUARD.md has the design,
 * the figures and when not to use a Bloom filter.
 *
 * THE READ PATH (bg_guard_get)
 *   1. filter: "definitely absent" -> BG_GUARD_ABSENT; cache and source are
 *      not touched. This is the whole point: most lookups of ids that do
 *      not exist end here, in memory.
 *   2. negative cache (in this process): a key the source recently said was
 *      absent although the filter said "maybe" (a false positive) ->
 *      BG_GUARD_ABSENT.
 *   3. cache (optional callbacks, e.g. the Redis adapter below): a hit ->
 *      BG_GUARD_FOUND with the cached value; a cached "absent" (set by another
 *      instance's false positive) -> BG_GUARD_ABSENT.
 *   4. source, single flight: of all threads missing the same key at once,
 *      one queries the source and the others wait for its answer. Found ->
 *      the value is put in the cache, BG_GUARD_FOUND. Absent -> a confirmed
 *      false positive: counted, remembered in the negative cache for
 *      negative_ttl_ms +- jitter (and in the cache's absent entry, if it
 *      has one), BG_GUARD_ABSENT. An answer is not left in either cache if
 *      a put or remove (of this guard) ran while it was being queried.
 * A cache that fails is skipped (counted in cache_errors): the answer comes
 * from the source. After a failed cache delete (WRITES) step 3 is skipped
 * for a while. A source that fails is an error (its status is returned),
 * never "absent": a guard never turns an outage into 404s.
 *
 * WRITES
 * bg_guard_put(key) after the source gained (or changed) the key: adds it
 * to the filter (to both filters while a rebuild runs), forgets any
 * negative entry for it here, detaches the source query in flight for it
 * (if any) and deletes its cache entry, so the next get reads the source:
 * a get that starts after bg_guard_put returned never gets an answer read
 * before the call (gets already waiting on the detached query may; they
 * were concurrent with it), and that query's answer is not cached (a
 * store of it already on its way makes gets of keys near this one skip the
 * cache until the store is taken back; so does one that failed and may
 * land late, for its TTL: docs/GUARD.md, "No stale store").
 * If the cache's delete fails, the old entry may still be there (or come
 * back with the cache): the guard then reads no cache entry (hit or
 * negative) until every entry it wrote before the failure has expired, the
 * longer of cache_ttl_ms and the longest negative TTL (negative_ttl_ms *
 * (1 + negative_jitter), when the cache has set_absent) after the failure;
 * gets ask the source meanwhile (counted in cache_skipped) and still fill
 * the cache. A failed delete is counted in cache_errors, not returned.
 * bg_guard_remove(key) after the source lost the key: the same, and removes
 * it from a local counting filter; any other filter
 * keeps saying "maybe" (one source query per get, cached as negative) until
 * the next rebuild drops it. A counting filter being rebuilt keeps the key
 * in the new filter until the rebuild after (removing it there could undo
 * an add the scan never made). Call bg_guard_remove only for a key that
 * was added: if a rebuild completes between the source's delete and the
 * end of the call, the new filter may not hold the key, and the remove then lowers
 * counters other keys rely on (docs/GUARD.md, LIMITATIONS).
 *
 * REBUILD AND SWAP (bg_guard_rebuild)
 * Builds a new filter from the source's scan of every key, then swaps it
 * in with one atomic pointer store. Readers never block and never see a
 * partial filter: they use the old one until the swap. A put that arrives
 * while the rebuild runs goes to the old and the new filter, so no key is
 * lost whichever filter the scan and the put reach first (the put's key is
 * in the source before bg_guard_put is called: either the scan sees it or
 * the put reaches the new filter). The old filter is freed once no reader
 * uses it any more. One rebuild at a time: a second concurrent call gets
 * BG_EBUSY. A failed rebuild (source error, out of memory) leaves the old
 * filter in place.
 * A remote filter is rebuilt in Redis (bg_remote_filter_rebuild_*: adds
 * from every instance reach both filters there, readers switch atomically);
 * a module filter is reserved anew from options.filter, as at creation.
 *
 * FILTERS
 * BG_GUARD_FILTER_LOCAL (default): a bg_filter in this process, sized from
 * options.filter; when its capacity is 0, from source.count() * headroom.
 * A counting variant makes bg_guard_remove effective. BG_GUARD_FILTER_REMOTE:
 * the filter is the remote filter options.remote_name on options.remote,
 * shared by every instance (opened if it exists, else created and filled
 * from the source, sharded when options.remote_shards asks: docs/GUARD.md);
 * each thread uses its own connection, made on first use.
 * BG_GUARD_FILTER_NONE: no filter, every get goes to the cache and source
 * (the baseline the demo compares against).
 *
 * THREADS
 * Every function may be called from any number of threads at once on one
 * guard, except bg_guard_free. The callbacks are called from those threads
 * concurrently: they must be thread-safe.
 *
 * MEMORY
 * bg_guard_new allocates, bg_guard_free releases. A value handed back in a
 * bg_guard_buf is owned by the caller until bg_guard_buf_free.
 *
 * COST
 * A get that the filter answers costs one filter query: in memory with a
 * local filter (no I/O), one round trip with a remote one. Past the filter,
 * a get costs one cache get and, on a miss, one source get and one cache
 * store. A put or remove costs a filter add and a cache delete.
 * bg_guard_rebuild scans the whole source; a local rebuild holds a second
 * filter until the swap. */
#ifndef BLOOMGATE_GUARD_H
#define BLOOMGATE_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include <bloomgate/api.h>
#include <bloomgate/error.h>
#include <bloomgate/filter.h>
#include <bloomgate/remote.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks this header's API (the library bloomgate_guard). */
#define BG_GUARD_API BG_API_EXPORT

typedef struct bg_guard bg_guard;

/* What bg_guard_get and a source's get (bg_guard_source) answer. Both
 * return an int: one of these (non-negative), or a negative bg_status. */
typedef enum bg_guard_result {
    BG_GUARD_ABSENT = 0,
    BG_GUARD_FOUND = 1,
} bg_guard_result;

/* A growable byte buffer for values. Zero-initialise; reused across calls. */
typedef struct bg_guard_buf {
    void *data; /* NUL-terminated for convenience (not counted in len) */
    size_t len;
    size_t cap;
} bg_guard_buf;

/* Copies len bytes into b (growing it). BG_OK, BG_EINVAL (NULL b, or NULL
 * data with len > 0) or BG_ENOMEM. */
BG_GUARD_API int bg_guard_buf_set(bg_guard_buf *b, const void *data, size_t len);

/* Releases b's memory and zeroes it. NULL is allowed. */
BG_GUARD_API void bg_guard_buf_free(bg_guard_buf *b);

/* Where values come from: the database. */
typedef struct bg_guard_source {
    void *ctx;
    /* Looks key up: BG_GUARD_FOUND with the value in *value, BG_GUARD_ABSENT
     * (bg_guard_result), or a negative status (then the guard's get returns
     * it). Required. */
    int (*get)(void *ctx, const void *key, size_t len, bg_guard_buf *value);
    /* Streams every key to emit (rebuild); stops and returns emit's status
     * when it is negative. BG_OK or a negative status (anything else fails
     * the rebuild with BG_EINVAL, as does an emit of a NULL key with a
     * length). Required unless the filter is BG_GUARD_FILTER_NONE. */
    int (*scan)(void *ctx, int (*emit)(void *arg, const void *key, size_t len), void *arg);
    /* How many keys there are, to size the filter (optional: needed only
     * when options.filter.capacity is 0). BG_OK or a negative status
     * (anything else: BG_EINVAL). */
    int (*count)(void *ctx, uint64_t *out);
} bg_guard_source;

/* What a cache's get (bg_guard_cache) answers. It returns an int: one of
 * these (non-negative), or a negative bg_status. */
typedef enum bg_guard_cache_result {
    BG_GUARD_CACHE_MISS = 0,
    BG_GUARD_CACHE_HIT = 1,
    BG_GUARD_CACHE_ABSENT = 2, /* a negative entry: the key is known absent */
} bg_guard_cache_result;

/* The cache in front of the source (optional: all NULL means none). */
typedef struct bg_guard_cache {
    void *ctx;
    /* BG_GUARD_CACHE_HIT (value in *value), _MISS, _ABSENT
     * (bg_guard_cache_result) or a negative status. */
    int (*get)(void *ctx, const void *key, size_t len, bg_guard_buf *value);
    /* Stores a value for ttl_ms (0: the cache's default). */
    int (*set)(void *ctx, const void *key, size_t len, const void *value, size_t vlen,
               uint64_t ttl_ms);
    /* Stores a negative entry for ttl_ms (optional: NULL keeps negatives in
     * this process only). */
    int (*set_absent)(void *ctx, const void *key, size_t len, uint64_t ttl_ms);
    /* Deletes the key's entry, value or negative. */
    int (*del)(void *ctx, const void *key, size_t len);
} bg_guard_cache;

typedef enum bg_guard_filter_kind {
    BG_GUARD_FILTER_LOCAL = 0,
    BG_GUARD_FILTER_REMOTE = 1,
    BG_GUARD_FILTER_NONE = 2,
} bg_guard_filter_kind;

typedef struct bg_guard_options {
    bg_guard_source source;
    bg_guard_cache cache;
    bg_guard_filter_kind filter_kind;
    /* Local: how each (re)built filter is sized. capacity 0: count() *
     * headroom; error_rate 0: 0.01. Remote: capacity and error_rate of a
     * filter the guard creates. */
    bg_filter_options filter;
    double headroom;              /* 0: 2.0 (room to grow between rebuilds) */
    /* Remote filter (filter_kind BG_GUARD_FILTER_REMOTE). */
    const bg_remote_options *remote; /* copied */
    const char *remote_name;         /* copied */
    bg_remote_backend remote_backend; /* 0: BG_REMOTE_BITMAP */
    /* Caching. */
    uint64_t cache_ttl_ms;        /* values; 0: 300000 */
    uint64_t negative_ttl_ms;     /* negatives; 0: 30000 */
    double negative_jitter;       /* +- this fraction of negative_ttl_ms, below 1;
                                     0: 0.2; negative: none (exact TTLs) */
    size_t negative_capacity;     /* most negatives kept in this process; 0: 65536 */
    /* Remote filter, added last (the struct grows at its end). */
    uint32_t remote_shards;       /* bitmap: a filter the guard creates is sharded
                                     this many ways, 2..BG_REMOTE_MAX_SHARDS, each
                                     shard its own cluster slot; 0 or 1: one filter.
                                     An existing filter is opened as it is, however
                                     it is sharded. Module: 0 or 1. */
} bg_guard_options;

/* Creates a guard and builds (local) or opens (remote) its filter from the
 * source, into *out. BG_OK, BG_EINVAL (NULL or missing callbacks, bad
 * options), the source's status, the filter's or the remote client's. */
BG_GUARD_API int bg_guard_new(bg_guard **out, const bg_guard_options *opts);

/* Frees a guard. NULL is allowed. No other call may be running (threads
 * that used the guard may still be alive, but not exiting meanwhile). */
BG_GUARD_API void bg_guard_free(bg_guard *g);

/* The read path (THE READ PATH above): BG_GUARD_FOUND with the value in
 * *value, BG_GUARD_ABSENT (bg_guard_result), or a negative status. */
BG_GUARD_API int bg_guard_get(bg_guard *g, const void *key, size_t len, bg_guard_buf *value);

/* The filter's answer alone: 1 "maybe present", 0 "definitely absent"
 * (always 1 with BG_GUARD_FILTER_NONE), or a negative status. Not counted. */
BG_GUARD_API int bg_guard_may_contain(bg_guard *g, const void *key, size_t len);

/* After the source gained key (WRITES above). BG_OK or a negative status. */
BG_GUARD_API int bg_guard_put(bg_guard *g, const void *key, size_t len);

/* After the source lost key (WRITES above). BG_OK or a negative status. */
BG_GUARD_API int bg_guard_remove(bg_guard *g, const void *key, size_t len);

/* Rebuilds the filter from the source and swaps it in (REBUILD AND SWAP).
 * BG_OK, BG_EBUSY, or the source's, filter's or remote client's status
 * (remote: BG_ESTALE if another client cancelled the rebuild meanwhile;
 * the filter is then as it was, and a later rebuild may start. A failed
 * rebuild whose abort failed too, Redis being away, stays pending until
 * its lease runs out: meanwhile rebuilds get BG_EBUSY, except on the
 * thread that began it, whose next rebuild aborts it first). */
BG_GUARD_API int bg_guard_rebuild(bg_guard *g);

typedef struct bg_guard_counters {
    uint64_t requests;        /* bg_guard_get calls */
    uint64_t filtered;        /* answered absent by the filter alone */
    uint64_t negative_hits;   /* answered absent by a negative entry (here or in the cache) */
    uint64_t cache_hits;      /* answered found by the cache */
    uint64_t cache_errors;    /* cache calls that failed (skipped) */
    uint64_t source_queries;  /* source get calls */
    uint64_t source_found;    /* ... that found the key */
    uint64_t false_positives; /* ... that did not: the filter said maybe, the source no */
    uint64_t source_errors;   /* ... that failed */
    uint64_t collapsed;       /* gets that waited for another thread's source query */
    uint64_t puts, removes;
    uint64_t rebuilds;        /* completed */
    uint64_t rebuild_errors;  /* failed, BG_EBUSY (another rebuild running) aside */
    uint64_t filter_items;    /* keys in the current filter (as it counts them) */
    uint64_t filter_bytes;    /* its memory (local) or Redis size (remote) */
    uint64_t cache_skipped;   /* gets that did not read the cache: a delete
                                 failed less than a TTL ago, or a store a
                                 put overtook may still land (WRITES) */
    uint32_t filter_shards;   /* remote: the filter's shards as it is (1: not
                                 sharded), whatever remote_shards asked; 0
                                 for a local filter or none */
} bg_guard_counters;

/* A snapshot of the counters (each read atomically; not a consistent cut).
 * BG_OK or BG_EINVAL (NULL). Cheap: relaxed loads, no lock. */
BG_GUARD_API int bg_guard_counters_get(bg_guard *g, bg_guard_counters *out);

/* THE REDIS CACHE ADAPTER
 * A bg_guard_cache over Redis (hiredis): each entry is the string key
 * prefix + key with a PX TTL, holding 'v' + the value, or the single byte
 * 'a' for a negative entry (so a value can never be mistaken for one). One
 * connection per calling thread, made on first use and remade after it
 * broke. A call that fails with BG_ECONN (Redis refused, broke the
 * connection or did not answer within a timeout) opens a circuit breaker
 * shared by all threads: every call then fails at once with BG_ECONN, with
 * no network I/O, for a back-off of 200 ms that doubles after each failed
 * retry, up to 5 s; after the back-off one call (only one) tries Redis
 * again, and a success closes the breaker. So a hung Redis costs a request
 * one timeout while the breaker opens and nothing after, and the guard
 * skips the cache meanwhile. Redis that is back is used again within the
 * back-off in force (5 s at most, plus one timeout).
 * TIMEOUTS: a cache is worth asking only if it answers faster than the
 * database, so connect_timeout_ms 0 in the options means 200 ms here and
 * command_timeout_ms 0 means 100 ms (not the remote client's 2 s); other
 * values are kept. A slower answer counts as a failure (the breaker opens)
 * and, for a put's delete, stops cache reads for a TTL (WRITES). */
typedef struct bg_guard_redis_cache bg_guard_redis_cache;

/* Connects lazily to the Redis in *ro (copied; its timeouts 0: the
 * adapter's, TIMEOUTS above) and fills *cache with the callbacks (ctx is
 * the adapter). prefix NULL: "bg:". ttl 0 in the
 * callbacks: default_ttl_ms (0: 300000). BG_OK, BG_EINVAL or BG_ENOMEM
 * (nothing connects yet). Allocates; bg_guard_redis_cache_free releases it,
 * after the guard that uses it is freed. */
BG_GUARD_API int bg_guard_redis_cache_new(bg_guard_redis_cache **out, const bg_remote_options *ro,
                                          const char *prefix, uint64_t default_ttl_ms,
                                          bg_guard_cache *cache);

/* NULL is allowed. */
BG_GUARD_API void bg_guard_redis_cache_free(bg_guard_redis_cache *c);

#ifdef __cplusplus
}
#endif

#endif
