/* SPDX-License-Identifier: BSD-3-Clause */
/* The guard's public calls: options, the read path, writes, counters.
 * The pieces live beside it: negative_cache.c, single_flight.c, swap.c
 * (local filter, rebuild and swap, hazard pointers), remote_filter.c.
 * docs/GUARD.md has the design. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <string.h>

#include <bloomgate/guard.h>
#include <bloomgate/hash.h>

#include "common/alloc.h"
#include "guard_internal.h"

#define FLIGHT_STRIPES 16u

/* ---- buffers --------------------------------------------------------------- */

int bg_guard_buf_set(bg_guard_buf *b, const void *data, size_t len)
{
    if (!b || (!data && len) || len == SIZE_MAX)
        return BG_EINVAL;
    if (len + 1 > b->cap || !b->data) {
        size_t cap = b->cap > (SIZE_MAX - 1) / 2 ? len + 1 : 2 * b->cap;
        if (cap < len + 1)
            cap = len + 1;
        if (cap < 16)
            cap = 16;
        uint8_t *p = bg__malloc(cap);
        if (!p)
            return BG_ENOMEM;
        if (len)
            memcpy(p, data, len); /* data may point into the old buffer */
        bg__free(b->data);
        b->data = p;
        b->cap = cap;
    } else if (len) {
        memmove(b->data, data, len);
    }
    ((uint8_t *)b->data)[len] = 0;
    b->len = len;
    return BG_OK;
}

void bg_guard_buf_free(bg_guard_buf *b)
{
    if (!b)
        return;
    bg__free(b->data);
    memset(b, 0, sizeof *b);
}

static void buf_clear(bg_guard_buf *b)
{
    b->len = 0;
    if (b->data)
        ((uint8_t *)b->data)[0] = 0;
}

/* ---- creation -------------------------------------------------------------- */

char *bg__guard_strdup(const char *s, int *fail)
{
    char *d = bg__strdup(s);
    if (s && !d)
        *fail = 1;
    return d;
}

static int check_options(const bg_guard_options *o)
{
    if (!o->source.get)
        return BG_EINVAL;
    if (o->filter_kind != BG_GUARD_FILTER_LOCAL && o->filter_kind != BG_GUARD_FILTER_REMOTE &&
        o->filter_kind != BG_GUARD_FILTER_NONE)
        return BG_EINVAL;
    if (o->filter_kind != BG_GUARD_FILTER_NONE && !o->source.scan)
        return BG_EINVAL;
    const bg_guard_cache *c = &o->cache;
    int any = c->get || c->set || c->set_absent || c->del;
    if (any && !(c->get && c->set && c->del))
        return BG_EINVAL;
    if (!(o->headroom >= 0) || isinf(o->headroom))
        return BG_EINVAL;
    if (!(o->negative_jitter < 1) || isnan(o->negative_jitter))
        return BG_EINVAL;
    if (o->negative_capacity > UINT32_MAX / 2)
        return BG_EINVAL;
    if (o->filter_kind == BG_GUARD_FILTER_REMOTE) {
        if (!o->remote || !o->remote_name || !o->remote_name[0])
            return BG_EINVAL;
        if (o->remote_backend != 0 && o->remote_backend != BG_REMOTE_BITMAP &&
            o->remote_backend != BG_REMOTE_MODULE)
            return BG_EINVAL;
        if (o->remote_shards > BG_REMOTE_MAX_SHARDS ||
            (o->remote_shards > 1 && o->remote_backend == BG_REMOTE_MODULE))
            return BG_EINVAL;
    } else if (o->remote_shards > 1) {
        return BG_EINVAL; /* shards of a filter that is not remote */
    }
    return BG_OK;
}

/* How long any entry this guard writes to the cache may live: values
 * cache_ttl_ms, negatives at most negative_ttl_ms * (1 + jitter)
 * (bg__neg_ttl), rounded up. o has its defaults filled in. */
static uint64_t distrust_ms(const bg_guard_options *o)
{
    uint64_t ms = o->cache_ttl_ms;
    if (o->cache.set_absent) {
        double neg = ceil((double)o->negative_ttl_ms * (1.0 + o->negative_jitter));
        uint64_t n = neg >= 0x1p63 ? UINT64_MAX / 2 : (uint64_t)neg;
        if (n > ms)
            ms = n;
    }
    return ms;
}

int bg_guard_new(bg_guard **out, const bg_guard_options *opts)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!opts)
        return BG_EINVAL;
    int rc = check_options(opts);
    if (rc != BG_OK)
        return rc;
    bg_guard *g = bg__calloc(1, sizeof *g);
    if (!g)
        return BG_ENOMEM;
    g->o = *opts;
    bg_guard_options *o = &g->o;
    if (o->headroom == 0)
        o->headroom = 2.0;
    if (o->cache_ttl_ms == 0)
        o->cache_ttl_ms = 300000;
    if (o->negative_ttl_ms == 0)
        o->negative_ttl_ms = 30000;
    if (o->negative_jitter == 0)
        o->negative_jitter = 0.2;
    else if (o->negative_jitter < 0)
        o->negative_jitter = 0; /* none */
    if (o->negative_capacity == 0)
        o->negative_capacity = 65536;
    if (o->remote_backend == 0)
        o->remote_backend = BG_REMOTE_BITMAP;
    g->distrust_ms = distrust_ms(o);
    atomic_init(&g->distrust_until, 0);
    atomic_init(&g->current, NULL);
    atomic_init(&g->pending, NULL);

    int fail = 0;
    if (o->filter_kind == BG_GUARD_FILTER_REMOTE) {
        g->ropts = *o->remote;
        g->ropts.host = g->rhost = bg__guard_strdup(o->remote->host, &fail);
        g->ropts.unix_socket = g->rsocket = bg__guard_strdup(o->remote->unix_socket, &fail);
        g->ropts.username = g->ruser = bg__guard_strdup(o->remote->username, &fail);
        g->ropts.password = g->rpass = bg__guard_strdup(o->remote->password, &fail);
        g->ropts.seeds = g->rseeds = bg__guard_strdup(o->remote->seeds, &fail);
        g->rname = bg__guard_strdup(o->remote_name, &fail);
        o->remote = &g->ropts;
        o->remote_name = g->rname;
    } else {
        o->remote = NULL;
        o->remote_name = NULL;
    }
    if (fail) {
        bg_guard_free(g);
        return BG_ENOMEM;
    }

    if (pthread_mutex_init(&g->rebuild_mu, NULL) != 0) {
        bg_guard_free(g);
        return BG_ENOMEM;
    }
    g->rebuild_mu_ok = 1;
    if ((rc = bg__guard_threads_init(g)) != BG_OK ||
        (rc = bg__neg_init(&g->neg, o->negative_capacity, o->negative_ttl_ms,
                           o->negative_jitter)) != BG_OK ||
        (rc = bg__flights_init(&g->flights, FLIGHT_STRIPES)) != BG_OK) {
        bg_guard_free(g);
        return rc;
    }
    if (o->filter_kind == BG_GUARD_FILTER_LOCAL) {
        bg_filter *f;
        rc = bg__local_build(g, &f);
        if (rc == BG_OK)
            atomic_store(&g->current, f);
    } else if (o->filter_kind == BG_GUARD_FILTER_REMOTE) {
        rc = bg__guard_remote_init(g);
    }
    if (rc != BG_OK) {
        bg_guard_free(g);
        return rc;
    }
    *out = g;
    return BG_OK;
}

void bg_guard_free(bg_guard *g)
{
    if (!g)
        return;
    bg__guard_threads_free(g);
    bg_filter_free(atomic_load(&g->current));
    bg_filter_free(atomic_load(&g->pending));
    bg__neg_destroy(&g->neg);
    bg__flights_destroy(&g->flights);
    if (g->rebuild_mu_ok)
        pthread_mutex_destroy(&g->rebuild_mu);
    bg__free(g->rname);
    bg__free(g->rhost);
    bg__free(g->rsocket);
    bg__free(g->ruser);
    bg__free(g->rpass);
    bg__free(g->rseeds);
    bg__free(g);
}

/* ---- the read path --------------------------------------------------------- */

int bg_guard_may_contain(bg_guard *g, const void *key, size_t len)
{
    if (!g || (!key && len))
        return BG_EINVAL;
    switch (g->o.filter_kind) {
    case BG_GUARD_FILTER_LOCAL:
        return bg__local_contains(g, key, len);
    case BG_GUARD_FILTER_REMOTE:
        return bg__guard_remote_contains(g, key, len);
    default:
        return 1;
    }
}

/* FAILED DELETES
 * A put's delete that fails (the cache was unreachable at that moment)
 * leaves the old entry in the cache, or leaves us not knowing whether it is
 * there: the cache may come back holding it (a Redis restarted from its
 * dump, a network partition that heals). Counting the error and reading the
 * cache on would serve the old row until the entry expires, and losing the
 * cache must cost load, not correctness.
 *
 * So a failed delete makes the guard distrust the cache's answers, hits and
 * negative entries alike, until every entry written before the failure has
 * expired: distrust_ms after it, the longest TTL this guard writes with
 * (cache_ttl_ms, or the longest negative TTL when it writes negatives).
 * Meanwhile gets skip c->get (counted in cache_skipped) and ask the source;
 * they still store what they read (c->set), which is current. Another
 * failure pushes the deadline further. The deadline is one atomic word,
 * read by every get that reaches the cache: one load when no delete failed,
 * a clock read otherwise, cleared by the first get that finds it past.
 *
 * LIMITATIONS
 * Entries written by other processes with a longer TTL can outlive the
 * window, and those processes know nothing of our failure: they read the
 * cache as usual (docs/GUARD.md, Limitations). */
static void distrust_cache(bg_guard *g)
{
    uint64_t now = bg__now_ms();
    uint64_t until = g->distrust_ms > UINT64_MAX - now ? UINT64_MAX : now + g->distrust_ms;
    uint_fast64_t cur = atomic_load(&g->distrust_until);
    while (cur < until && !atomic_compare_exchange_weak(&g->distrust_until, &cur, until))
        ;
}

/* 1 while a failed delete's window runs (FAILED DELETES). */
static int cache_distrusted(bg_guard *g)
{
    uint_fast64_t until = atomic_load(&g->distrust_until);
    if (until == 0)
        return 0;
    if (bg__now_ms() < until)
        return 1;
    /* Past: clear it, unless a newer failure pushed it meanwhile. */
    atomic_compare_exchange_strong(&g->distrust_until, &until, 0);
    return 0;
}

/* Deletes key's cache entry (a write, or a stale answer taken back). */
static void cache_del(bg_guard *g, const void *key, size_t len)
{
    const bg_guard_cache *c = &g->o.cache;
    if (c->del && c->del(c->ctx, key, len) < 0) {
        BG__COUNT(g, cache_errors);
        distrust_cache(g);
    }
}

/* STALE CACHE WRITES
 * A source query can overlap a write of its key: the leader reads the row,
 * the row changes, bg_guard_put deletes the cache entry, and only then does
 * the leader store what it read. Cache-aside's classic race: the old value
 * (or, for a key just created, an old "absent": a false negative) would be
 * served until its TTL expires, although the put returned.
 *
 * HOW IT IS CLOSED (in this process)
 * Every put and remove bumps the forget counter of the key's negative-cache
 * stripe (bg__neg_forget) *before* deleting the cache entry. The leader
 * reads that counter before asking the source (seq), and around its store:
 *   1. counter != seq: a write came in since the query began; the answer
 *      may be older than it: do not store it. Else the store is registered
 *      in the stripe (bg__neg_fill_begin), under the lock that bumps.
 *   2. store (c->set or c->set_absent).
 *   3. counter != seq now: a write came in between 1 and 2, so its delete
 *      may have run before our store landed: delete the entry ourselves.
 *   4. unregister (bg__neg_fill_end).
 * A bump moves the stripe's registered stores to "overtaken", and while
 * any overtaken store has not reached step 4, gets of the stripe's keys
 * skip the cache (bg__neg_suspect): between an overtaken store's landing
 * and its own delete, no get that started after the put reads it. Any
 * write whose bump falls after step 1 is thus covered: its own delete comes
 * after our store, or ours does and gets skip the cache until it has.
 *
 * FAILED STORES
 * A store that failed (a timeout) may still land later: a command sitting
 * in a stalled server's socket buffer runs when the server resumes. If a
 * put comes before it lands, the put's delete finds nothing and the late
 * store would bring the old answer back. So a failed store leaves its TTL
 * on the stripe (failed_store_until), and a put in that time makes the
 * stripe suspect until then: gets of its keys skip the cache. A store's
 * TTL must run from the moment it was sent for this to hold, however late
 * it lands: the Redis adapter sets an absolute expiry (PXAT).
 *
 * The counter and the counts are per stripe, not per key: a write of
 * another key of the stripe costs at most a skipped store, an extra delete
 * or a few cache reads skipped.
 *
 * LIMITATIONS
 * Instances in other processes have their own counters: one whose query
 * overlaps another's put can still store the old value after the put's
 * delete, for cache_ttl_ms at most (docs/GUARD.md, Limitations). */
static void cache_fill(bg_guard *g, const void *key, size_t len, uint64_t hash, uint64_t seq,
                       const bg_guard_buf *value /* NULL: a negative entry */)
{
    const bg_guard_cache *c = &g->o.cache;
    if (!bg__neg_fill_begin(&g->neg, hash, seq))
        return;
    uint64_t ttl = value ? g->o.cache_ttl_ms : bg__neg_ttl(&g->neg);
    int rc = value ? c->set(c->ctx, key, len, value->data, value->len, ttl)
                   : c->set_absent(c->ctx, key, len, ttl);
    if (rc < 0)
        BG__COUNT(g, cache_errors); /* the store may still land: FAILED STORES */
    if (bg__neg_seq(&g->neg, hash) != seq)
        cache_del(g, key, len);
    bg__neg_fill_end(&g->neg, hash, seq, rc < 0 ? ttl : 0); /* ttl >= 1: options default it */
}

/* Step 4 for the leader (or a thread that could not register a flight):
 * queries the source and records the answer everywhere. */
static int query_source(bg_guard *g, const void *key, size_t len, uint64_t hash,
                        bg_guard_buf *value)
{
    const bg_guard_cache *c = &g->o.cache;
    int filtered = g->o.filter_kind != BG_GUARD_FILTER_NONE;
    uint64_t seq = bg__neg_seq(&g->neg, hash);
    BG__COUNT(g, source_queries);
    int rc = g->o.source.get(g->o.source.ctx, key, len, value);
    if (rc == BG_GUARD_FOUND) {
        BG__COUNT(g, source_found);
        if (c->set)
            cache_fill(g, key, len, hash, seq, value);
    } else if (rc == BG_GUARD_ABSENT) {
        /* Without a filter an absent key is not a false positive, and the
         * baseline caches no negatives (the demo compares against it). */
        if (filtered) {
            BG__COUNT(g, false_positives);
            /* Stored only if no put forgot a key of its stripe meanwhile
             * (negative_cache.c, PUTS AND IN-FLIGHT QUERIES); the external
             * cache's entry under the same condition (STALE CACHE WRITES). */
            if (bg__neg_insert(&g->neg, key, len, hash, seq) && c->set_absent)
                cache_fill(g, key, len, hash, seq, NULL);
        }
    } else {
        BG__COUNT(g, source_errors);
        if (rc >= 0)
            rc = BG_EINVAL; /* a callback answering something undefined */
    }
    return rc;
}

int bg_guard_get(bg_guard *g, const void *key, size_t len, bg_guard_buf *value)
{
    if (!g || (!key && len) || !value)
        return BG_EINVAL;
    if (!key)
        key = "";
    BG__COUNT(g, requests);
    int filtered = g->o.filter_kind != BG_GUARD_FILTER_NONE;

    /* 1. The filter. An error (a remote outage) is returned: never "absent". */
    if (filtered) {
        int rc = bg_guard_may_contain(g, key, len);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            BG__COUNT(g, filtered);
            buf_clear(value);
            return BG_GUARD_ABSENT;
        }
    }

    /* 2. The negative cache (a recent false positive). */
    bg_hash h;
    bg_hash_key(key, len, BG__GUARD_SEED, &h);
    if (filtered && bg__neg_lookup(&g->neg, key, len, h.h1)) {
        BG__COUNT(g, negative_hits);
        buf_clear(value);
        return BG_GUARD_ABSENT;
    }

    /* 3. The cache; a failing one is skipped, and so is one that may hold
     * entries a failed delete left behind (FAILED DELETES). */
    const bg_guard_cache *c = &g->o.cache;
    if (c->get && (cache_distrusted(g) || bg__neg_suspect(&g->neg, h.h1))) {
        BG__COUNT(g, cache_skipped);
    } else if (c->get) {
        int rc = c->get(c->ctx, key, len, value);
        if (rc == BG_GUARD_CACHE_HIT) {
            BG__COUNT(g, cache_hits);
            return BG_GUARD_FOUND;
        }
        if (rc == BG_GUARD_CACHE_ABSENT) {
            BG__COUNT(g, negative_hits);
            buf_clear(value);
            return BG_GUARD_ABSENT;
        }
        if (rc != BG_GUARD_CACHE_MISS)
            BG__COUNT(g, cache_errors);
    }

    /* 4. The source, one query per key at a time. */
    bg__flight *leader;
    int rc;
    if (bg__flight_join(&g->flights, key, len, h.h1, &leader, &rc, value)) {
        BG__COUNT(g, collapsed);
    } else {
        rc = query_source(g, key, len, h.h1, value);
        bg__flight_finish(&g->flights, leader, rc, value);
    }
    if (rc == BG_GUARD_ABSENT)
        buf_clear(value);
    return rc;
}

/* ---- writes ---------------------------------------------------------------- */

/* What a put and a remove both do once the source changed: forget the
 * negative entry (bumping the stripe's counter first: STALE CACHE WRITES),
 * detach the query in flight, so that later gets do not join it and get
 * the row as it was (single_flight.c, DETACHING), then delete the cache
 * entry. */
static void invalidate(bg_guard *g, const void *key, size_t len)
{
    bg_hash h;
    bg_hash_key(key, len, BG__GUARD_SEED, &h);
    bg__neg_forget(&g->neg, key, len, h.h1);
    bg__flight_detach(&g->flights, key, len, h.h1);
    cache_del(g, key, len);
}

int bg_guard_put(bg_guard *g, const void *key, size_t len)
{
    if (!g || (!key && len))
        return BG_EINVAL;
    if (!key)
        key = "";
    BG__COUNT(g, puts);
    int rc = BG_OK;
    if (g->o.filter_kind == BG_GUARD_FILTER_LOCAL)
        rc = bg__local_add(g, key, len);
    else if (g->o.filter_kind == BG_GUARD_FILTER_REMOTE)
        rc = bg__guard_remote_add(g, key, len);
    /* Even if the filter failed: the cached answers are wrong now. */
    invalidate(g, key, len);
    return rc;
}

int bg_guard_remove(bg_guard *g, const void *key, size_t len)
{
    if (!g || (!key && len))
        return BG_EINVAL;
    if (!key)
        key = "";
    BG__COUNT(g, removes);
    invalidate(g, key, len);
    if (g->o.filter_kind == BG_GUARD_FILTER_LOCAL)
        return bg__local_remove(g, key, len);
    return BG_OK;
}

int bg_guard_rebuild(bg_guard *g)
{
    if (!g)
        return BG_EINVAL;
    int rc;
    switch (g->o.filter_kind) {
    case BG_GUARD_FILTER_LOCAL:
        rc = bg__local_rebuild(g);
        break;
    case BG_GUARD_FILTER_REMOTE:
        rc = bg__guard_remote_rebuild(g);
        break;
    default:
        return BG_OK; /* nothing to rebuild */
    }
    if (rc == BG_OK)
        BG__COUNT(g, rebuilds);
    else if (rc != BG_EBUSY) /* another's rebuild running is not a failure */
        BG__COUNT(g, rebuild_errors);
    return rc;
}

/* ---- counters -------------------------------------------------------------- */

int bg_guard_counters_get(bg_guard *g, bg_guard_counters *out)
{
    if (!g || !out)
        return BG_EINVAL;
    memset(out, 0, sizeof *out);
#define LOAD(f) out->f = atomic_load_explicit(&g->stats.f, memory_order_relaxed)
    LOAD(requests);
    LOAD(filtered);
    LOAD(negative_hits);
    LOAD(cache_hits);
    LOAD(cache_errors);
    LOAD(source_queries);
    LOAD(source_found);
    LOAD(false_positives);
    LOAD(source_errors);
    LOAD(collapsed);
    LOAD(puts);
    LOAD(removes);
    LOAD(rebuilds);
    LOAD(rebuild_errors);
    LOAD(cache_skipped);
#undef LOAD
    if (g->o.filter_kind == BG_GUARD_FILTER_LOCAL)
        bg__local_stats(g, &out->filter_items, &out->filter_bytes);
    else if (g->o.filter_kind == BG_GUARD_FILTER_REMOTE)
        bg__guard_remote_stats(g, &out->filter_items, &out->filter_bytes, &out->filter_shards);
    return BG_OK;
}
