/* SPDX-License-Identifier: BSD-3-Clause */
/* The Redis cache adapter (THE REDIS CACHE ADAPTER in guard.h): a
 * bg_guard_cache whose entries are Redis strings.
 *
 * ENTRIES
 *   prefix + key  ->  'v' + value     a cached value
 *   prefix + key  ->  'a'             a negative entry (the key is absent)
 * each with a PX time to live. The tag byte keeps the two apart: a value
 * that starts with 'a', or is empty, is stored as "va..." or "v". A string
 * under the prefix with any other shape was not written by us: it reads as
 * a miss (the guard then asks the source and overwrites it).
 *
 * CONNECTIONS
 * Each calling thread has its own bg_remote (remote.h: a hiredis context
 * with its timeouts, AUTH, unix socket, SIGPIPE handling, and reconnect on
 * the call after one broke), made on the thread's first call, and sends
 * its commands with bg_remote_command: the remote client, not a hiredis
 * context of the adapter's own, because it already does all of that and
 * cluster routing, which the adapter would otherwise repeat. Records live
 * in a push-only list and are freed only by bg_guard_redis_cache_free; a
 * thread's exit marks its record free (connection kept) for the next new
 * thread to adopt, so a thread-per-request server does not connect per
 * request. A Redis that is down yields BG_ECONN, which the guard counts and
 * skips; the circuit breaker below makes that cheap. bg_remote_options.cluster
 * works too: GET, SET and DEL have one key, routed by slot.
 *
 * TIMEOUTS
 * The guard asks the cache on every get that passes the filter, before the
 * database. A healthy Redis answers in well under a millisecond on a LAN; a
 * database lookup by key takes a few. A cache call that waits a second (the
 * client's default is 2 s) costs more than the database it is meant to
 * spare, on every request, so the adapter's defaults are short: connect
 * RC_CONNECT_TIMEOUT_MS and command RC_COMMAND_TIMEOUT_MS (0 in the options
 * picks them; other values are kept). Short enough that a hung Redis costs
 * a request little more than a database query; long enough for Redis's own
 * pauses (a fork for BGSAVE on a large data set, tens of ms) not to count as
 * an outage. A false timeout costs a breaker opening: reads from the
 * database for a back-off, and a put's failed delete (guard.c, FAILED
 * DELETES).
 *
 * CIRCUIT BREAKER
 * A Redis that hangs (SIGSTOP, a full network buffer, a partition that drops
 * packets) does not refuse connections: every call waits its full timeout.
 * Without a breaker each request would pay a GET's timeout and then a SET's,
 * and every worker thread would sit in them. So, shared by all threads of
 * one adapter:
 *   closed     calls go to Redis. A call that fails with BG_ECONN (a
 *              connection refused or broken, a timeout) opens the breaker
 *              for RC_BACKOFF_MIN_MS.
 *   open       calls fail at once with BG_ECONN (what the failed call
 *              returned), with no network I/O, until the back-off ends.
 *   half-open  the first call after the back-off (one: a compare-and-swap
 *              elects it) goes to Redis, the others still fail at once. It
 *              succeeds: closed. It fails: open again for twice the back-off,
 *              at most RC_BACKOFF_MAX_MS.
 * A call that got any reply (an error reply too: the server is alive) counts
 * as a success; BG_ENOMEM and the like say nothing about Redis. Calls that
 * were already waiting when the breaker opened fail on their own and do not
 * double the back-off (only a failed probe does), so one hang of N threads
 * costs one short back-off, not N doublings. The state is one atomic word
 * read by every call (the back-off's end, 0 when closed), a probe flag, and
 * a mutex around the transitions, which happen once per back-off at most.
 * After Redis is back, the cache is used again within the back-off in
 * force, at most RC_BACKOFF_MAX_MS plus one timeout.
 *
 * STALE CONNECTIONS
 * A thread's connection outlives a Redis restart (or a proxy's idle
 * timeout) unknown to it; its next call finds it closed at once. Such a
 * call, one that failed with BG_ECONN in under half its command timeout,
 * is tried once more on a new connection before it counts: otherwise every
 * worker's first call after a restart would fail and open the breaker, and
 * lookups would go to the database for a back-off. GET, SET and DEL may
 * run twice. A refused connect fails at once too, and costs a second one;
 * a timeout is not retried (a hung Redis would cost two).
 *
 * LIMITATION: free the adapter only when no thread uses it and none is
 * exiting (its destructor would touch a freed record). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include <bloomgate/guard.h>

#include "common/alloc.h"
#include "guard_internal.h"
#include "guard_testing.h"

#define RC_DEFAULT_TTL_MS UINT64_C(300000)
#define RC_DEFAULT_PREFIX "bg:"

/* TIMEOUTS and CIRCUIT BREAKER above. */
#define RC_CONNECT_TIMEOUT_MS 200u
#define RC_COMMAND_TIMEOUT_MS 100u
#define RC_BACKOFF_MIN_MS UINT64_C(200)
#define RC_BACKOFF_MAX_MS UINT64_C(5000)

/* Keys up to this long are built on the stack. */
#define RC_STACK_KEY 256

typedef struct rc_thread {
    bg__thread_rec rec;       /* first: thread_records.h */
    bg_remote *conn;          /* NULL until first use */
} rc_thread;

struct bg_guard_redis_cache {
    bg_remote_options ro;     /* strings point at the copies below */
    char *host, *unix_socket, *username, *password, *seeds;
    char *prefix;
    size_t prefix_len;
    uint64_t default_ttl_ms;
    bg__thread_recs threads;  /* a connection per thread, kept for the next */

    /* CIRCUIT BREAKER above. */
    atomic_uint_fast64_t open_until; /* bg__now_ms; 0: closed */
    atomic_int probing;              /* a half-open call is running */
    pthread_mutex_t breaker_mu;      /* transitions; guards backoff_ms */
    int breaker_mu_ok;
    uint64_t backoff_ms;             /* the back-off in force; 0: closed */
#ifdef BG_TESTING
    bg__guard_testing_counts testing; /* calls sent and refused (guard_testing.h) */
#endif
};

static void rc_thread_free(bg__thread_rec *r)
{
    bg_remote_close(((rc_thread *)r)->conn);
}

void bg_guard_redis_cache_free(bg_guard_redis_cache *c)
{
    if (!c)
        return;
    bg__thread_recs_free(&c->threads, rc_thread_free);
    if (c->breaker_mu_ok)
        pthread_mutex_destroy(&c->breaker_mu);
    bg__free(c->host);
    bg__free(c->unix_socket);
    bg__free(c->username);
    bg__free(c->password);
    bg__free(c->seeds);
    bg__free(c->prefix);
    bg__free(c);
}

/* The calling thread's connection, made (or remade) as needed: BG_OK with
 * *out, BG_ECONN (Redis unreachable: *out NULL) or BG_ENOMEM. */
static int rc_conn(bg_guard_redis_cache *c, bg_remote **out)
{
    *out = NULL;
    bg__thread_rec *r;
    int grc = bg__thread_rec_get(&c->threads, sizeof(rc_thread), NULL, NULL, &r);
    if (grc != BG_OK)
        return grc;
    rc_thread *t = (rc_thread *)r;
    if (!t->conn) {
        /* On BG_ECONN bg_remote_connect still hands back the handle (to be
         * reconnected by the next command); keep it. */
        int rc = bg_remote_connect(&t->conn, &c->ro);
        if (!t->conn)
            return rc == BG_OK ? BG_ENOMEM : rc;
        if (rc != BG_OK)
            return rc;
    }
    *out = t->conn;
    return BG_OK;
}

/* prefix + key, in stack (when it fits) or in a bg__malloc'd buffer that
 * the caller frees with rc_key_free. NULL when out of memory. */
static char *rc_key(const bg_guard_redis_cache *c, const void *key, size_t len,
                    char stack[RC_STACK_KEY], size_t *outlen)
{
    if (len > SIZE_MAX - c->prefix_len)
        return NULL;
    size_t n = c->prefix_len + len;
    char *k = n <= RC_STACK_KEY ? stack : bg__malloc(n ? n : 1);
    if (!k)
        return NULL;
    memcpy(k, c->prefix, c->prefix_len);
    if (len)
        memcpy(k + c->prefix_len, key, len);
    *outlen = n;
    return k;
}

static void rc_key_free(char *k, const char stack[RC_STACK_KEY])
{
    if (k != stack)
        bg__free(k);
}

/* May this call go to Redis (CIRCUIT BREAKER above)? BG_OK, with *probe
 * set when it is the half-open call, or BG_ECONN: fail at once. */
static int breaker_admit(bg_guard_redis_cache *c, int *probe)
{
    *probe = 0;
    uint_fast64_t until = atomic_load(&c->open_until);
    if (until == 0)
        return BG_OK;
    uint64_t now = bg__now_ms();
    int idle = 0;
    if (now >= until && atomic_compare_exchange_strong(&c->probing, &idle, 1)) {
        /* A probe that ended between our load and the CAS stored its
         * verdict before clearing the flag: read it again. */
        until = atomic_load(&c->open_until);
        if (until == 0 || now < until)
            atomic_store(&c->probing, 0);
        if (until == 0)
            return BG_OK; /* closed meanwhile: a plain call */
        if (now >= until) {
            *probe = 1;
            return BG_OK;
        }
    }
    BG__GUARD_TESTING_COUNT(c, rejected);
    return BG_ECONN;
}

/* Records the outcome rc of an admitted call. */
static void breaker_report(bg_guard_redis_cache *c, int probe, int rc)
{
    int failed = rc == BG_ECONN;
    int answered = rc == BG_OK || rc == BG_EREMOTE;
    if (!probe && !failed)
        return; /* closed stays closed; a call older than the opening proves little */
    pthread_mutex_lock(&c->breaker_mu);
    if (probe && answered) {
        c->backoff_ms = 0;
        atomic_store(&c->open_until, 0);
    } else if (failed && (probe || atomic_load(&c->open_until) == 0)) {
        if (!probe || c->backoff_ms == 0)
            c->backoff_ms = RC_BACKOFF_MIN_MS;
        else if (c->backoff_ms < RC_BACKOFF_MAX_MS / 2)
            c->backoff_ms *= 2;
        else
            c->backoff_ms = RC_BACKOFF_MAX_MS;
        atomic_store(&c->open_until, bg__now_ms() + c->backoff_ms);
    }
    /* else: a probe that said nothing (out of memory): the next call probes */
    if (probe)
        atomic_store(&c->probing, 0);
    pthread_mutex_unlock(&c->breaker_mu);
}

#ifdef BG_TESTING
/* The breaker's state for the tests (guard_testing.h): here, because only
 * this file knows the adapter's struct. */
void bg__guard_testing_breaker(bg_guard_redis_cache *c, bg__guard_testing_breaker_state *out)
{
    out->attempts = atomic_load(&c->testing.attempts);
    out->rejected = atomic_load(&c->testing.rejected);
    pthread_mutex_lock(&c->breaker_mu);
    out->backoff_ms = c->backoff_ms;
    out->open_until_ms = atomic_load(&c->open_until);
    pthread_mutex_unlock(&c->breaker_mu);
}
#endif

/* One command on the calling thread's connection, through the breaker. */
static int rc_command(bg_guard_redis_cache *c, int argc, const char **argv, const size_t *lens,
                      redisReply **reply)
{
    *reply = NULL;
    int probe;
    int rc = breaker_admit(c, &probe);
    if (rc != BG_OK)
        return rc;
    BG__GUARD_TESTING_COUNT(c, attempts);
    bg_remote *r;
    rc = rc_conn(c, &r);
    if (rc == BG_OK) {
        uint64_t t0 = bg__now_ms();
        rc = bg_remote_command(r, argc, argv, lens, reply);
        /* STALE CONNECTIONS: once more, on a new connection (the client
         * reconnects first). */
        if (rc == BG_ECONN && bg__guard_broke_at_once(t0, c->ro.command_timeout_ms))
            rc = bg_remote_command(r, argc, argv, lens, reply);
    }
    breaker_report(c, probe, rc);
    return rc;
}

/* `cmd` (GET or DEL) of prefix+key, one reply into *reply. */
static int rc_key_command(bg_guard_redis_cache *c, const char *cmd, const void *key, size_t len,
                          redisReply **reply)
{
    *reply = NULL;
    char stack[RC_STACK_KEY];
    size_t klen = 0;
    char *k = rc_key(c, key, len, stack, &klen);
    if (!k)
        return BG_ENOMEM;
    const char *argv[2] = {cmd, k};
    size_t lens[2] = {strlen(cmd), klen};
    int rc = rc_command(c, 2, argv, lens, reply);
    rc_key_free(k, stack);
    return rc;
}

static int rc_get(void *ctx, const void *key, size_t len, bg_guard_buf *value)
{
    bg_guard_redis_cache *c = ctx;
    if (!c || (!key && len) || !value)
        return BG_EINVAL;
    redisReply *rep;
    int rc = rc_key_command(c, "GET", key, len, &rep);
    if (rc != BG_OK)
        return rc;
    if (rep->type == REDIS_REPLY_NIL) {
        rc = BG_GUARD_CACHE_MISS;
    } else if (rep->type != REDIS_REPLY_STRING) {
        rc = BG_EREMOTE; /* GET never answers anything else */
    } else if (rep->len == 1 && rep->str[0] == 'a') {
        rc = BG_GUARD_CACHE_ABSENT;
    } else if (rep->len >= 1 && rep->str[0] == 'v') {
        rc = bg_guard_buf_set(value, rep->str + 1, rep->len - 1);
        if (rc == BG_OK)
            rc = BG_GUARD_CACHE_HIT;
    } else {
        rc = BG_GUARD_CACHE_MISS; /* not ours (ENTRIES above) */
    }
    freeReplyObject(rep);
    return rc;
}

/* SET prefix+key tag+value PXAT (now + ttl), in Unix ms: the entry's life
 * runs from when the command was sent, not from when Redis runs it. A SET
 * that timed out may sit in a stalled server's buffer and run seconds
 * later; with a relative PX it would then live a whole TTL from there,
 * longer than the guard assumes when it stops trusting the cache after a
 * failure (guard.c, FAILED STORES). The clock is this host's wall clock,
 * read by Redis in its own: the two must agree to within a small part of
 * the TTL (NTP). Needs Redis >= 6.2. */
static int rc_store(bg_guard_redis_cache *c, const void *key, size_t len, char tag,
                    const void *value, size_t vlen, uint64_t ttl_ms)
{
    if (!c || (!key && len) || (!value && vlen) || vlen == SIZE_MAX)
        return BG_EINVAL;
    if (ttl_ms == 0)
        ttl_ms = c->default_ttl_ms;
    /* Cap at 100 years: the deadline stays far inside a signed 64-bit ms. */
    if (ttl_ms > UINT64_C(3155760000000))
        ttl_ms = UINT64_C(3155760000000);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t at_ms = (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u + ttl_ms;
    char kstack[RC_STACK_KEY];
    size_t klen = 0;
    char *k = rc_key(c, key, len, kstack, &klen);
    if (!k)
        return BG_ENOMEM;
    char vstack[RC_STACK_KEY];
    char *v = vlen + 1 <= sizeof vstack ? vstack : bg__malloc(vlen + 1);
    if (!v) {
        rc_key_free(k, kstack);
        return BG_ENOMEM;
    }
    v[0] = tag;
    if (vlen)
        memcpy(v + 1, value, vlen);
    char at[24];
    int al = snprintf(at, sizeof at, "%llu", (unsigned long long)at_ms);
    const char *argv[5] = {"SET", k, v, "PXAT", at};
    size_t lens[5] = {3, klen, vlen + 1, 4, (size_t)al};
    redisReply *rep;
    int rc = rc_command(c, 5, argv, lens, &rep);
    if (v != vstack)
        bg__free(v);
    rc_key_free(k, kstack);
    if (rc != BG_OK)
        return rc;
    freeReplyObject(rep); /* +OK: errors came back as BG_EREMOTE */
    return BG_OK;
}

static int rc_set(void *ctx, const void *key, size_t len, const void *value, size_t vlen,
                  uint64_t ttl_ms)
{
    return rc_store(ctx, key, len, 'v', value, vlen, ttl_ms);
}

static int rc_set_absent(void *ctx, const void *key, size_t len, uint64_t ttl_ms)
{
    return rc_store(ctx, key, len, 'a', NULL, 0, ttl_ms);
}

static int rc_del(void *ctx, const void *key, size_t len)
{
    bg_guard_redis_cache *c = ctx;
    if (!c || (!key && len))
        return BG_EINVAL;
    redisReply *rep;
    int rc = rc_key_command(c, "DEL", key, len, &rep);
    if (rc != BG_OK)
        return rc;
    freeReplyObject(rep);
    return BG_OK;
}

int bg_guard_redis_cache_new(bg_guard_redis_cache **out, const bg_remote_options *ro,
                             const char *prefix, uint64_t default_ttl_ms, bg_guard_cache *cache)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!ro || !cache || ro->port < 0 || ro->port > 65535 || (ro->cluster && ro->unix_socket))
        return BG_EINVAL;
    bg_guard_redis_cache *c = bg__calloc(1, sizeof *c);
    if (!c)
        return BG_ENOMEM;
    atomic_init(&c->threads.head, NULL); /* freed before bg__thread_recs_init on OOM */
    atomic_init(&c->open_until, 0);
    atomic_init(&c->probing, 0);
#ifdef BG_TESTING
    atomic_init(&c->testing.attempts, 0);
    atomic_init(&c->testing.rejected, 0);
#endif
    int oom = 0;
    c->ro = *ro;
    c->host = bg__guard_strdup(ro->host, &oom);
    c->unix_socket = bg__guard_strdup(ro->unix_socket, &oom);
    c->username = bg__guard_strdup(ro->username, &oom);
    c->password = bg__guard_strdup(ro->password, &oom);
    c->seeds = bg__guard_strdup(ro->seeds, &oom);
    c->prefix = bg__guard_strdup(prefix ? prefix : RC_DEFAULT_PREFIX, &oom);
    if (oom) {
        bg_guard_redis_cache_free(c);
        return BG_ENOMEM;
    }
    c->ro.host = c->host;
    c->ro.unix_socket = c->unix_socket;
    c->ro.username = c->username;
    c->ro.password = c->password;
    c->ro.seeds = c->seeds;
    if (c->ro.connect_timeout_ms == 0)
        c->ro.connect_timeout_ms = RC_CONNECT_TIMEOUT_MS;
    if (c->ro.command_timeout_ms == 0)
        c->ro.command_timeout_ms = RC_COMMAND_TIMEOUT_MS;
    c->prefix_len = strlen(c->prefix);
    c->default_ttl_ms = default_ttl_ms ? default_ttl_ms : RC_DEFAULT_TTL_MS;
    if (bg__thread_recs_init(&c->threads) != BG_OK) {
        bg_guard_redis_cache_free(c);
        return BG_ENOMEM;
    }
    if (pthread_mutex_init(&c->breaker_mu, NULL) != 0) {
        bg_guard_redis_cache_free(c);
        return BG_ENOMEM;
    }
    c->breaker_mu_ok = 1;
    bg_guard_cache cb = {.ctx = c, .get = rc_get, .set = rc_set, .set_absent = rc_set_absent,
                         .del = rc_del};
    *cache = cb;
    *out = c;
    return BG_OK;
}
