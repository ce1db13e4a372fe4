/* SPDX-License-Identifier: BSD-3-Clause */
/* The in-memory source and cache behind guard_fixtures.h. */
#include "guard_fixtures.h"

static uint32_t ms_hash(const void *key, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ ((const uint8_t *)key)[i]) * 16777619u;
    return h % MS_BUCKETS;
}

void ms_map_init(ms_map *m)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
}

void ms_map_clear(ms_map *m)
{
    for (uint32_t i = 0; i < MS_BUCKETS; i++) {
        ms_entry *e = m->b[i];
        while (e) {
            ms_entry *n = e->next;
            free(e->key);
            free(e->val);
            free(e);
            e = n;
        }
        m->b[i] = NULL;
    }
    m->count = 0;
}

void ms_map_free(ms_map *m)
{
    ms_map_clear(m);
    pthread_mutex_destroy(&m->mu);
}

/* Caller holds m->mu. */
static ms_entry **ms_find(ms_map *m, const void *key, size_t len)
{
    ms_entry **l = &m->b[ms_hash(key, len)];
    while (*l && !((*l)->len == len && memcmp((*l)->key, key, len) == 0))
        l = &(*l)->next;
    return l;
}

void ms_map_set(ms_map *m, const void *key, size_t len, const void *val, size_t vlen,
                int absent)
{
    pthread_mutex_lock(&m->mu);
    ms_entry **l = ms_find(m, key, len);
    ms_entry *e = *l;
    if (!e) {
        e = calloc(1, sizeof *e);
        e->key = malloc(len ? len : 1);
        memcpy(e->key, key, len);
        e->len = len;
        *l = e;
        m->count++;
    }
    free(e->val);
    e->val = malloc(vlen ? vlen : 1);
    memcpy(e->val, val, vlen);
    e->vlen = vlen;
    e->absent = absent;
    pthread_mutex_unlock(&m->mu);
}

int ms_map_del(ms_map *m, const void *key, size_t len)
{
    pthread_mutex_lock(&m->mu);
    ms_entry **l = ms_find(m, key, len);
    ms_entry *e = *l;
    if (e) {
        *l = e->next;
        free(e->key);
        free(e->val);
        free(e);
        m->count--;
    }
    pthread_mutex_unlock(&m->mu);
    return e != NULL;
}

void ms_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int ms_get(void *ctx, const void *key, size_t len, bg_guard_buf *value)
{
    ms_source *s = ctx;
    atomic_fetch_add(&s->gets, 1);
    int sl = atomic_load(&s->get_sleep_ms);
    if (sl)
        ms_sleep_ms(sl);
    int f = atomic_load(&s->fail_get);
    if (f)
        return f;
    int rc = BG_GUARD_ABSENT;
    pthread_mutex_lock(&s->map.mu);
    ms_entry *e = *ms_find(&s->map, key, len);
    if (e)
        rc = bg_guard_buf_set(value, e->val, e->vlen) == BG_OK ? BG_GUARD_FOUND : BG_ENOMEM;
    pthread_mutex_unlock(&s->map.mu);
    return rc;
}

int ms_scan(void *ctx, int (*emit)(void *, const void *, size_t), void *arg)
{
    ms_source *s = ctx;
    atomic_fetch_add(&s->scans, 1);
    pthread_mutex_lock(&s->map.mu);
    size_t n = s->map.count, at = 0;
    uint8_t **keys = malloc((n ? n : 1) * sizeof *keys);
    size_t *lens = malloc((n ? n : 1) * sizeof *lens);
    for (uint32_t i = 0; i < MS_BUCKETS; i++)
        for (ms_entry *e = s->map.b[i]; e; e = e->next) {
            keys[at] = malloc(e->len ? e->len : 1);
            memcpy(keys[at], e->key, e->len);
            lens[at++] = e->len;
        }
    pthread_mutex_unlock(&s->map.mu);
    int sl = atomic_load(&s->scan_sleep_ms);
    if (sl)
        ms_sleep_ms(sl);
    int rc = BG_OK;
    for (size_t i = 0; i < n && rc >= 0; i++) {
        if (i == n / 2 && s->mid_scan)
            s->mid_scan(s->mid_scan_arg);
        if (i == n / 2 && atomic_load(&s->fail_scan))
            rc = atomic_load(&s->fail_scan);
        else
            rc = emit(arg, keys[i], lens[i]);
    }
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    free(lens);
    return rc < 0 ? rc : BG_OK;
}

int ms_count(void *ctx, uint64_t *out)
{
    ms_source *s = ctx;
    atomic_fetch_add(&s->counts, 1);
    pthread_mutex_lock(&s->map.mu);
    *out = s->map.count;
    pthread_mutex_unlock(&s->map.mu);
    return BG_OK;
}

void ms_init(ms_source *s)
{
    memset(s, 0, sizeof *s);
    ms_map_init(&s->map);
}

void ms_free(ms_source *s)
{
    ms_map_free(&s->map);
}

size_t ms_key(char *buf, const char *prefix, long i)
{
    return (size_t)snprintf(buf, 64, "%s%ld", prefix, i);
}

void ms_add(ms_source *s, const char *prefix, long i)
{
    char k[64], v[96];
    size_t kl = ms_key(k, prefix, i);
    int vl = snprintf(v, sizeof v, "value of %s", k);
    ms_map_set(&s->map, k, kl, v, (size_t)vl, 0);
}

void ms_add_range(ms_source *s, const char *prefix, long n)
{
    for (long i = 0; i < n; i++)
        ms_add(s, prefix, i);
}

bg_guard_source ms_callbacks(ms_source *s)
{
    return (bg_guard_source){.ctx = s, .get = ms_get, .scan = ms_scan, .count = ms_count};
}

int mc_get(void *ctx, const void *key, size_t len, bg_guard_buf *value)
{
    mc_cache *c = ctx;
    atomic_fetch_add(&c->gets, 1);
    int f = atomic_load(&c->fail);
    if (f)
        return f;
    int rc = BG_GUARD_CACHE_MISS;
    pthread_mutex_lock(&c->map.mu);
    ms_entry *e = *ms_find(&c->map, key, len);
    if (e && e->absent)
        rc = BG_GUARD_CACHE_ABSENT;
    else if (e)
        rc = bg_guard_buf_set(value, e->val, e->vlen) == BG_OK ? BG_GUARD_CACHE_HIT : BG_ENOMEM;
    pthread_mutex_unlock(&c->map.mu);
    return rc;
}

int mc_set(void *ctx, const void *key, size_t len, const void *value, size_t vlen,
           uint64_t ttl_ms)
{
    (void)ttl_ms;
    mc_cache *c = ctx;
    atomic_fetch_add(&c->sets, 1);
    int f = atomic_load(&c->fail);
    if (f)
        return f;
    ms_map_set(&c->map, key, len, value, vlen, 0);
    return BG_OK;
}

int mc_set_absent(void *ctx, const void *key, size_t len, uint64_t ttl_ms)
{
    (void)ttl_ms;
    mc_cache *c = ctx;
    atomic_fetch_add(&c->set_absents, 1);
    int f = atomic_load(&c->fail);
    if (f)
        return f;
    ms_map_set(&c->map, key, len, "", 0, 1);
    return BG_OK;
}

int mc_del(void *ctx, const void *key, size_t len)
{
    mc_cache *c = ctx;
    atomic_fetch_add(&c->dels, 1);
    int f = atomic_load(&c->fail);
    if (!f)
        f = atomic_load(&c->fail_del);
    if (f)
        return f;
    ms_map_del(&c->map, key, len);
    return BG_OK;
}

int mc_peek(mc_cache *c, const void *key, size_t len, char *out, size_t cap)
{
    pthread_mutex_lock(&c->map.mu);
    ms_entry *e = *ms_find(&c->map, key, len);
    int rc = !e ? -1 : e->absent ? 0 : 1;
    if (rc == 1)
        snprintf(out, cap, "%.*s", (int)e->vlen, (const char *)e->val);
    pthread_mutex_unlock(&c->map.mu);
    return rc;
}

void mc_init(mc_cache *c)
{
    memset(c, 0, sizeof *c);
    ms_map_init(&c->map);
}

void mc_free(mc_cache *c)
{
    ms_map_free(&c->map);
}

bg_guard_cache mc_callbacks(mc_cache *c)
{
    return (bg_guard_cache){.ctx = c, .get = mc_get, .set = mc_set, .set_absent = mc_set_absent,
                            .del = mc_del};
}

bg_guard_counters gc(bg_guard *g)
{
    bg_guard_counters c;
    TU_EQ_I(bg_guard_counters_get(g, &c), BG_OK);
    return c;
}

long maybe_key(bg_guard *g, const char *prefix, char *buf, size_t *len)
{
    for (long i = 0; i < 1000000; i++) {
        *len = ms_key(buf, prefix, i);
        if (bg_guard_may_contain(g, buf, *len) == 1)
            return i;
    }
    fail_msg("no false positive found");
    return -1;
}

long absent_key(bg_guard *g, const char *prefix, char *buf, size_t *len)
{
    for (long i = 0; i < 1000000; i++) {
        *len = ms_key(buf, prefix, i);
        if (bg_guard_may_contain(g, buf, *len) == 0)
            return i;
    }
    fail_msg("no filtered key found");
    return -1;
}
