/* SPDX-License-Identifier: BSD-3-Clause */
/* The products store, common part: kinds, keys, JSON, the query counter,
 * and one connection per thread (store_internal.h says how the backends
 * fit in).
 *
 * PER-THREAD CONNECTIONS
 * None of the three client libraries lets two threads use one connection
 * at once, and a pool would need a lock on every call. So each thread gets
 * its own record (connection included), kept in a pthread key:
 *   - records are never freed before store_close, which closes them all;
 *   - a thread's exit (the key's destructor) only marks its record free,
 *     connection still open, and the next new thread adopts it. A server
 *     that runs a thread per request (libmicrohttpd can) thus reuses a few
 *     connections instead of connecting for every request.
 * A connection whose call returned BG_ECONN is closed at once; the thread's
 * next call connects again (and fails fast, within the connect timeout,
 * while the database is down). Only store_open's connection may create the
 * database (ops->connect's create); every later one opens what is there.
 * LIMITATION: store_close must come after every thread is done with the
 * store; a thread may still be alive then, but must not exit during the
 * call (its destructor would touch a freed record). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

typedef struct store_conn {
    void *db;                 /* NULL until connected, and after it broke */
    atomic_int in_use;        /* a live thread owns it */
    struct store_conn *next;  /* immutable once published */
} store_conn;

struct store {
    store_kind kind;
    const store_ops *ops;
    char *conninfo;
    pthread_key_t key;
    _Atomic(store_conn *) conns; /* push-only list of every record */
    atomic_uint_fast64_t queries;
};

static _Thread_local char tls_err[512];

int store__fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_err, sizeof tls_err, fmt, ap);
    va_end(ap);
    return status;
}

void store__ok(void)
{
    tls_err[0] = '\0';
}

const char *store_errstr(void)
{
    return tls_err;
}

int store__parse_i64(const char *s, size_t len, int64_t *out)
{
    if (!s || len == 0 || len > 20)
        return -1;
    size_t i = 0;
    int neg = 0;
    if (s[0] == '-' || s[0] == '+') {
        neg = s[0] == '-';
        i = 1;
        if (len == 1)
            return -1;
    }
    uint64_t v = 0;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (limit - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (neg)
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    else
        *out = (int64_t)v;
    return 0;
}

int store__seed_name(char *buf, size_t cap, uint64_t id)
{
    return snprintf(buf, cap, "product %" PRIu64, id);
}

int64_t store__seed_price(uint64_t id)
{
    /* id * 7919 can exceed 64 bits for ids beyond 2^51: reduce first. */
    return (int64_t)(((id % 100000u) * 7919u) % 100000u);
}

/* ---- JSON ---- */

typedef struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_reserve(sbuf *b, size_t more)
{
    if (b->oom)
        return;
    if (more > SIZE_MAX - b->len - 1) {
        b->oom = 1;
        return;
    }
    size_t need = b->len + more + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return;
    }
    b->p = p;
    b->cap = cap;
}

static void sb_put(sbuf *b, const char *s, size_t n)
{
    sb_reserve(b, n);
    if (b->oom)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 if invalid
 * (overlong forms, surrogates and code points above U+10FFFF included). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, min = 0x80, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, min = 0x800, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

static void sb_json_string(sbuf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    sb_put(b, "\"", 1);
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len && !b->oom) {
        /* Copy the longest run that needs no escaping in one go. */
        size_t run = i;
        while (run < len && u[run] >= 0x20 && u[run] < 0x80 && u[run] != '"' && u[run] != '\\')
            run++;
        if (run > i) {
            sb_put(b, s + i, run - i);
            i = run;
            continue;
        }
        unsigned char c = u[i];
        if (c == '"') {
            sb_put(b, "\\\"", 2);
        } else if (c == '\\') {
            sb_put(b, "\\\\", 2);
        } else if (c == '\n') {
            sb_put(b, "\\n", 2);
        } else if (c == '\r') {
            sb_put(b, "\\r", 2);
        } else if (c == '\t') {
            sb_put(b, "\\t", 2);
        } else if (c == '\b') {
            sb_put(b, "\\b", 2);
        } else if (c == '\f') {
            sb_put(b, "\\f", 2);
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            sb_put(b, e, 6);
        } else {
            size_t n = utf8_seq(u + i, len - i);
            if (n == 0) {
                sb_put(b, "\\ufffd", 6);
                i++;
            } else {
                sb_put(b, s + i, n);
                i += n;
            }
            continue;
        }
        i++;
    }
    sb_put(b, "\"", 1);
}

int store__json(bg_guard_buf *json, int64_t id, const char *name, size_t len,
                int64_t price_cents)
{
    sbuf b = {0};
    char num[64];
    int n = snprintf(num, sizeof num, "{\"id\":%" PRId64 ",\"name\":", id);
    sb_put(&b, num, (size_t)n);
    sb_json_string(&b, name ? name : "", name ? len : 0);
    n = snprintf(num, sizeof num, ",\"price_cents\":%" PRId64 "}", price_cents);
    sb_put(&b, num, (size_t)n);
    int rc = b.oom ? BG_ENOMEM : bg_guard_buf_set(json, b.p, b.len);
    free(b.p);
    if (rc != BG_OK)
        return store__fail(BG_ENOMEM, "out of memory formatting a product");
    return BG_OK;
}

/* ---- per-thread connections ---- */

static void conn_destructor(void *arg)
{
    store_conn *c = arg;
    atomic_store_explicit(&c->in_use, 0, memory_order_release);
}

/* The calling thread's record, connected (create: see ops->connect);
 * *made: whether it connected just now. BG_OK or a negative status. */
static int conn_get(store *s, store_conn **out, int *made, int create)
{
    *made = 0;
    store_conn *c = pthread_getspecific(s->key);
    if (!c) {
        /* Adopt a record a finished thread left, else make one. */
        for (store_conn *x = atomic_load_explicit(&s->conns, memory_order_acquire); x;
             x = x->next) {
            int zero = 0;
            if (atomic_compare_exchange_strong_explicit(&x->in_use, &zero, 1,
                                                        memory_order_acquire,
                                                        memory_order_relaxed)) {
                c = x;
                break;
            }
        }
        int fresh = !c;
        if (fresh) {
            c = calloc(1, sizeof *c);
            if (!c)
                return store__fail(BG_ENOMEM, "out of memory");
            atomic_init(&c->in_use, 1);
        }
        if (pthread_setspecific(s->key, c) != 0) {
            if (fresh)
                free(c);
            else
                atomic_store_explicit(&c->in_use, 0, memory_order_release);
            return store__fail(BG_ENOMEM, "out of memory (pthread_setspecific)");
        }
        if (fresh) {
            c->next = atomic_load_explicit(&s->conns, memory_order_relaxed);
            while (!atomic_compare_exchange_weak_explicit(&s->conns, &c->next, c,
                                                          memory_order_release,
                                                          memory_order_relaxed))
                ;
        }
    }
    if (!c->db) {
        void *db = NULL;
        int rc = s->ops->connect(s->conninfo, create, &db);
        if (rc != BG_OK)
            return rc;
        c->db = db;
        *made = 1;
    }
    *out = c;
    return BG_OK;
}

/* After a backend call: a broken connection is dropped (the next call
 * reconnects). Returns rc. */
static int conn_done(store *s, store_conn *c, int rc)
{
    if (rc == BG_ECONN && c->db) {
        s->ops->disconnect(c->db);
        c->db = NULL;
    }
    if (rc >= 0)
        store__ok();
    return rc;
}

/* Whether an idle connection is still usable. Between calls the server has
 * nothing to say (no LISTEN, no pipelining), so a socket that polls
 * readable holds the server's goodbye: EOF, a reset, or the "terminating
 * connection" error a restarting server sends before closing. A false
 * alarm (some unsolicited notice) costs one reconnect, nothing more. */
static int conn_idle_ok(const store *s, const store_conn *c)
{
    int fd = s->ops->socket ? s->ops->socket(c->db) : -1;
    if (fd < 0)
        return 1;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) == 0;
}

/* Runs one backend call on the calling thread's connection. A call that
 * is safe to repeat (`repeatable`: the reads, and put, an upsert that
 * leaves the same row however often it runs) and finds a connection broken
 * which it did not just make (a database restarted since this record's
 * last call, or a record adopted from a finished thread) reconnects and
 * runs once more, so one database restart costs no failed request. Delete
 * is not repeated: if the first try was applied and its reply lost, the
 * second would report "there was none". Instead, before a call that is not
 * repeatable, a connection it did not just make is checked with
 * conn_idle_ok and replaced when the server has already closed it: nothing
 * was sent on it, so the call goes out once, on the new connection.
 * `create` is ops->connect's: 1 only for store_open's table creation. */
#define STORE_CALL(s, create, counted, repeatable, call)                                     \
    do {                                                                                     \
        for (int try_ = 0;; try_++) {                                                        \
            store_conn *c_;                                                                  \
            int made_;                                                                       \
            int rc_ = conn_get((s), &c_, &made_, (create));                                  \
            if (rc_ == BG_OK && !(repeatable) && !made_ && !conn_idle_ok((s), c_)) {         \
                conn_done((s), c_, BG_ECONN);                                                \
                rc_ = conn_get((s), &c_, &made_, (create));                                  \
            }                                                                                \
            if (rc_ != BG_OK)                                                                \
                return rc_;                                                                  \
            if (counted)                                                                     \
                atomic_fetch_add_explicit(&(s)->queries, 1, memory_order_relaxed);           \
            void *db = c_->db;                                                               \
            rc_ = (call);                                                                    \
            rc_ = conn_done((s), c_, rc_);                                                   \
            if (rc_ != BG_ECONN || !(repeatable) || made_ || try_ > 0)                       \
                return rc_;                                                                  \
        }                                                                                    \
    } while (0)

/* ---- the API ---- */

static void copy_err(char *err, size_t errlen)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", tls_err);
}

static int store_init_table(store *s)
{
    STORE_CALL(s, 1, 0, 0, s->ops->init(db));
}

int store_open(store **out, store_kind kind, const char *conninfo, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!out || !conninfo) {
        store__fail(BG_EINVAL, "store_open: NULL argument");
        copy_err(err, errlen);
        return BG_EINVAL;
    }
    *out = NULL;
    const store_ops *ops;
    switch (kind) {
    case STORE_SQLITE:
        ops = &store__sqlite_ops;
        break;
    case STORE_POSTGRES:
        ops = &store__postgres_ops;
        break;
    case STORE_MARIADB:
        ops = &store__mariadb_ops;
        break;
    default:
        store__fail(BG_EINVAL, "unknown store kind %d", (int)kind);
        copy_err(err, errlen);
        return BG_EINVAL;
    }
    store *s = calloc(1, sizeof *s);
    char *ci = strdup(conninfo);
    if (!s || !ci || pthread_key_create(&s->key, conn_destructor) != 0) {
        free(s);
        free(ci);
        store__fail(BG_ENOMEM, "out of memory");
        copy_err(err, errlen);
        return BG_ENOMEM;
    }
    s->kind = kind;
    s->ops = ops;
    s->conninfo = ci;
    atomic_init(&s->queries, 0);
    atomic_init(&s->conns, NULL);
    int rc = store_init_table(s);
    if (rc != BG_OK) {
        copy_err(err, errlen);
        char keep[sizeof tls_err];
        memcpy(keep, tls_err, sizeof keep);
        store_close(s);
        memcpy(tls_err, keep, sizeof keep);
        return rc;
    }
    *out = s;
    return BG_OK;
}

void store_close(store *s)
{
    if (!s)
        return;
    /* The calling thread's record would otherwise dangle in its TLS. */
    pthread_setspecific(s->key, NULL);
    pthread_key_delete(s->key);
    store_conn *c = atomic_load_explicit(&s->conns, memory_order_acquire);
    while (c) {
        store_conn *next = c->next;
        if (c->db)
            s->ops->disconnect(c->db);
        free(c);
        c = next;
    }
    free(s->conninfo);
    free(s);
}

static int store_seed_call(store *s, uint64_t count, uint64_t *seeded)
{
    STORE_CALL(s, 0, 0, 0, s->ops->seed(db, count, seeded));
}

int store_seed(store *s, uint64_t count, uint64_t *seeded, char *err, size_t errlen)
{
    uint64_t dummy;
    if (!seeded)
        seeded = &dummy;
    *seeded = 0;
    if (err && errlen)
        err[0] = '\0';
    if (!s || count > (uint64_t)INT64_MAX) {
        store__fail(BG_EINVAL, "store_seed: bad argument");
        copy_err(err, errlen);
        return BG_EINVAL;
    }
    int rc = store_seed_call(s, count, seeded);
    if (rc < 0)
        copy_err(err, errlen);
    return rc;
}

int store_get(store *s, uint64_t id, bg_guard_buf *json)
{
    if (!s || !json)
        return store__fail(BG_EINVAL, "store_get: NULL argument");
    if (id > (uint64_t)INT64_MAX)
        return BG_GUARD_ABSENT; /* no such row can exist */
    STORE_CALL(s, 0, 1, 1, s->ops->get(db, (int64_t)id, json));
}

int store_put(store *s, uint64_t id, const char *name, int64_t price_cents)
{
    if (!s || !name)
        return store__fail(BG_EINVAL, "store_put: NULL argument");
    if (id > (uint64_t)INT64_MAX)
        return store__fail(BG_EINVAL, "store_put: id %" PRIu64 " is out of range", id);
    STORE_CALL(s, 0, 1, 1, s->ops->put(db, (int64_t)id, name, price_cents));
}

int store_delete(store *s, uint64_t id)
{
    if (!s)
        return store__fail(BG_EINVAL, "store_delete: NULL argument");
    if (id > (uint64_t)INT64_MAX)
        return 0;
    STORE_CALL(s, 0, 1, 0, s->ops->del(db, (int64_t)id));
}

int store_count(store *s, uint64_t *out)
{
    if (!s || !out)
        return store__fail(BG_EINVAL, "store_count: NULL argument");
    STORE_CALL(s, 0, 1, 1, s->ops->count(db, out));
}

static int store_page(store *s, int64_t after, int64_t *ids, size_t max, size_t *n)
{
    STORE_CALL(s, 0, 1, 1, s->ops->page(db, after, ids, max, n));
}

uint64_t store_queries(const store *s)
{
    return s ? atomic_load_explicit(&((store *)s)->queries, memory_order_relaxed) : 0;
}

/* ---- the guard's source ---- */

/* A key is the id in decimal, no sign, no leading zeros: "0" .. INT64_MAX. */
static int key_to_id(const void *key, size_t len, uint64_t *id)
{
    const char *k = key;
    if (!k || len == 0 || len > 19 || (len > 1 && k[0] == '0') || k[0] == '-' || k[0] == '+')
        return -1;
    int64_t v;
    if (store__parse_i64(k, len, &v) != 0 || v < 0)
        return -1;
    *id = (uint64_t)v;
    return 0;
}

static int source_get(void *ctx, const void *key, size_t len, bg_guard_buf *value)
{
    uint64_t id;
    if (key_to_id(key, len, &id) != 0)
        return BG_GUARD_ABSENT;
    return store_get(ctx, id, value);
}

static int source_scan(void *ctx, int (*emit)(void *arg, const void *key, size_t len), void *arg)
{
    store *s = ctx;
    if (!s || !emit)
        return store__fail(BG_EINVAL, "scan: NULL argument");
    int64_t *ids = malloc(STORE_PAGE * sizeof *ids);
    if (!ids)
        return store__fail(BG_ENOMEM, "out of memory");
    int64_t after = INT64_MIN;
    int rc = BG_OK;
    for (;;) {
        size_t n = 0;
        rc = store_page(s, after, ids, STORE_PAGE, &n);
        if (rc < 0)
            break;
        for (size_t i = 0; i < n; i++) {
            char k[24];
            int kl = snprintf(k, sizeof k, "%" PRId64, ids[i]);
            rc = emit(arg, k, (size_t)kl);
            if (rc < 0)
                break;
        }
        if (rc < 0 || n < STORE_PAGE)
            break;
        after = ids[n - 1];
    }
    free(ids);
    return rc < 0 ? rc : BG_OK;
}

static int source_count(void *ctx, uint64_t *out)
{
    return store_count(ctx, out);
}

bg_guard_source store_source(store *s)
{
    bg_guard_source src = {.ctx = s, .get = source_get, .scan = source_scan,
                           .count = source_count};
    return src;
}
