/* SPDX-License-Identifier: BSD-3-Clause */
/* The guard tests' in-memory source and cache.
 *
 * ms_source: a thread-safe map key -> value behind one mutex, with call
 * counters, an optional sleep in get and in scan, and injectable failures.
 * Its scan emits a snapshot taken under the lock when it starts, so a key
 * inserted before the scan starts is always seen (what the guard's rebuild
 * relies on, as a database scan in one transaction gives).
 * mc_cache: the same map holding values or negative entries, with counters
 * and injectable failures (of every call, or of deletes only). TTLs are
 * ignored (entries never expire).
 * Both use libc malloc, not the library's allocator, so the allocation
 * tests count only the guard's own allocations (guard_fixtures.c, in the
 * bg_test_guard library). */
#ifndef BG_GUARD_FIXTURES_H
#define BG_GUARD_FIXTURES_H

#include "test_util.h"

#include <pthread.h>
#include <stdatomic.h>

#include <bloomgate/guard.h>

#define MS_BUCKETS 4096u

typedef struct ms_entry {
    struct ms_entry *next;
    size_t len, vlen;
    int absent;  /* mc_cache: a negative entry */
    uint8_t *key;
    uint8_t *val;
} ms_entry;

/* The map under both, behind one mutex. */
typedef struct ms_map {
    pthread_mutex_t mu;
    ms_entry *b[MS_BUCKETS];
    size_t count;
} ms_map;

void ms_map_init(ms_map *m);
void ms_map_clear(ms_map *m);
void ms_map_free(ms_map *m);
/* Sets key to val (a negative entry when `absent`), copying both. */
void ms_map_set(ms_map *m, const void *key, size_t len, const void *val, size_t vlen, int absent);
/* Deletes key; 1 if it was there. */
int ms_map_del(ms_map *m, const void *key, size_t len);

/* ---- the source ------------------------------------------------------------ */

typedef struct ms_source {
    ms_map map;
    atomic_long gets, scans, counts;
    atomic_int get_sleep_ms;  /* each get sleeps this long */
    atomic_int scan_sleep_ms; /* each scan sleeps this long after its snapshot */
    atomic_int fail_get;      /* non-zero: get returns it */
    atomic_int fail_scan;     /* non-zero: scan returns it halfway */
    /* Called halfway through each scan, when set (set it while no scan
     * runs): a test's hook into the middle of a rebuild. */
    void (*mid_scan)(void *arg);
    void *mid_scan_arg;
} ms_source;

void ms_sleep_ms(long ms);

/* bg_guard_source's get, scan and count over an ms_source (ctx). */
int ms_get(void *ctx, const void *key, size_t len, bg_guard_buf *value);
int ms_scan(void *ctx, int (*emit)(void *, const void *, size_t), void *arg);
int ms_count(void *ctx, uint64_t *out);

void ms_init(ms_source *s);
void ms_free(ms_source *s);

/* Key "<prefix><i>" into buf (64 bytes); its length. */
size_t ms_key(char *buf, const char *prefix, long i);

/* Adds key "<prefix><i>" with value "value of <prefix><i>". */
void ms_add(ms_source *s, const char *prefix, long i);

/* Adds keys "<prefix>0" to "<prefix><n - 1>" (ms_add). */
void ms_add_range(ms_source *s, const char *prefix, long n);

/* The guard's source callbacks over s. */
bg_guard_source ms_callbacks(ms_source *s);

/* ---- the cache ------------------------------------------------------------- */

typedef struct mc_cache {
    ms_map map;
    atomic_long gets, sets, set_absents, dels;
    atomic_int fail;     /* non-zero: every call returns it */
    atomic_int fail_del; /* non-zero: del returns it, deleting nothing */
} mc_cache;

/* bg_guard_cache's calls over an mc_cache (ctx). */
int mc_get(void *ctx, const void *key, size_t len, bg_guard_buf *value);
int mc_set(void *ctx, const void *key, size_t len, const void *value, size_t vlen,
           uint64_t ttl_ms);
int mc_set_absent(void *ctx, const void *key, size_t len, uint64_t ttl_ms);
int mc_del(void *ctx, const void *key, size_t len);

/* What the cache holds for key, behind the guard's back: -1 nothing, 0 a
 * negative entry, 1 a value (copied into out, NUL-terminated, cut to cap). */
int mc_peek(mc_cache *c, const void *key, size_t len, char *out, size_t cap);

void mc_init(mc_cache *c);
void mc_free(mc_cache *c);

/* The guard's cache callbacks over c. */
bg_guard_cache mc_callbacks(mc_cache *c);

/* ---- helpers ----------------------------------------------------------------- */

/* The guard's counters (the test fails if it cannot read them). */
bg_guard_counters gc(bg_guard *g);

/* A key "<prefix><i>" the guard's filter says "maybe" about, i from 0. */
long maybe_key(bg_guard *g, const char *prefix, char *buf, size_t *len);

/* The same, "definitely absent". */
long absent_key(bg_guard *g, const char *prefix, char *buf, size_t *len);

#endif
