/* SPDX-License-Identifier: BSD-3-Clause */
/* The products store on MariaDB or MySQL (MariaDB Connector/C): conninfo is
 *   mysql://user[:password]@host[:port]/database
 *   mysql://user[:password]@localhost/database?socket=/path/to/socket
 * ("mariadb://" too; user, password, database and socket are
 * percent-decoded).
 *
 * Connect, read and write timeouts are STORE_CONNECT_TIMEOUT_S each, so a
 * server that is down or hung fails a call within seconds. Queries use the
 * text protocol: ids and prices are formatted integers, and a name is
 * escaped with mysql_real_escape_string (which follows the connection's
 * charset, utf8mb4, and the server's NO_BACKSLASH_ESCAPES mode). Client
 * errors that mean the connection is gone (CR_SERVER_LOST and friends) and
 * a server shutting down are BG_ECONN; every other error is BG_EIO. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errmsg.h>
#include <mysql.h>

#include "store_internal.h"

/* Rows per INSERT, and INSERTs per transaction, when seeding. */
#define SEED_ROWS 1000u
#define SEED_BATCHES_PER_TX 50u

typedef struct url {
    char *user, *password, *host, *db, *socket;
    unsigned port;
} url;

static void url_free(url *u)
{
    free(u->user);
    free(u->password);
    free(u->host);
    free(u->db);
    free(u->socket);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* A percent-decoded copy of s[0..n), or NULL (out of memory, bad escape). */
static char *decode(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                free(d);
                return NULL;
            }
            d[j++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            d[j++] = s[i];
        }
    }
    d[j] = '\0';
    return d;
}

static int parse_url(const char *ci, url *u)
{
    memset(u, 0, sizeof *u);
    const char *p;
    if (strncmp(ci, "mysql://", 8) == 0)
        p = ci + 8;
    else if (strncmp(ci, "mariadb://", 10) == 0)
        p = ci + 10;
    else
        return store__fail(BG_EINVAL, "mariadb: conninfo must start with mysql:// or mariadb://");
    const char *at = strchr(p, '@');
    const char *slash = strchr(p, '/');
    if (!at || !slash || at > slash)
        return store__fail(BG_EINVAL, "mariadb: conninfo needs user@host/database");
    const char *colon = memchr(p, ':', (size_t)(at - p));
    if (colon) {
        u->user = decode(p, (size_t)(colon - p));
        u->password = decode(colon + 1, (size_t)(at - colon - 1));
    } else {
        u->user = decode(p, (size_t)(at - p));
    }
    const char *h = at + 1;
    const char *hp = memchr(h, ':', (size_t)(slash - h));
    u->host = decode(h, (size_t)((hp ? hp : slash) - h));
    if (hp) {
        int64_t port;
        if (store__parse_i64(hp + 1, (size_t)(slash - hp - 1), &port) != 0 || port < 1 ||
            port > 65535) {
            url_free(u);
            return store__fail(BG_EINVAL, "mariadb: bad port in conninfo");
        }
        u->port = (unsigned)port;
    }
    const char *q = strchr(slash + 1, '?');
    u->db = decode(slash + 1, q ? (size_t)(q - slash - 1) : strlen(slash + 1));
    if (q) {
        if (strncmp(q + 1, "socket=", 7) != 0) {
            url_free(u);
            return store__fail(BG_EINVAL, "mariadb: the only conninfo option is ?socket=");
        }
        u->socket = decode(q + 8, strlen(q + 8));
        if (!u->socket) {
            url_free(u);
            return store__fail(BG_EINVAL, "mariadb: bad socket in conninfo");
        }
    }
    if (!u->user || (colon && !u->password) || !u->host || !u->db) {
        url_free(u);
        return store__fail(BG_EINVAL, "mariadb: bad percent-escape in conninfo");
    }
    if (!u->user[0] || !u->db[0]) {
        url_free(u);
        return store__fail(BG_EINVAL, "mariadb: conninfo needs a user and a database");
    }
    return BG_OK;
}

static int conn_lost(unsigned e)
{
    switch (e) {
    case CR_CONNECTION_ERROR:
    case CR_CONN_HOST_ERROR:
    case CR_SERVER_GONE_ERROR:
    case CR_SERVER_LOST:
    case CR_SERVER_LOST_EXTENDED:
    case CR_COMMANDS_OUT_OF_SYNC: /* our own bug, but the connection is unusable */
    case 1053:                    /* ER_SERVER_SHUTDOWN */
    case 1152:                    /* ER_ABORTING_CONNECTION */
    case 1927:                    /* ER_CONNECTION_KILLED */
        return 1;
    default:
        return 0;
    }
}

static int fail_my(MYSQL *m, const char *what)
{
    unsigned e = mysql_errno(m);
    return store__fail(conn_lost(e) ? BG_ECONN : BG_EIO, "mariadb: %s: %s (%u)", what,
                       mysql_error(m), e);
}

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int lib_rc;

static void lib_init(void)
{
    lib_rc = mysql_library_init(0, NULL, NULL);
}

static void my_disconnect(void *arg)
{
    if (arg)
        mysql_close(arg);
}

static int my_fd(void *arg)
{
    return (int)mysql_get_socket(arg);
}

static int my_connect(const char *conninfo, int create, void **out)
{
    (void)create; /* a server: the database exists or the login fails */
    *out = NULL;
    pthread_once(&lib_once, lib_init);
    if (lib_rc != 0)
        return store__fail(BG_EIO, "mariadb: mysql_library_init failed");
    url u;
    int rc = parse_url(conninfo, &u);
    if (rc != BG_OK)
        return rc;
    MYSQL *m = mysql_init(NULL);
    if (!m) {
        url_free(&u);
        return store__fail(BG_ENOMEM, "mariadb: out of memory");
    }
    unsigned t = STORE_CONNECT_TIMEOUT_S;
    mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &t);
    mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &t);
    mysql_optionsv(m, MYSQL_OPT_WRITE_TIMEOUT, &t);
    mysql_optionsv(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (!mysql_real_connect(m, u.socket ? NULL : u.host, u.user, u.password, u.db, u.port,
                            u.socket, 0)) {
        unsigned e = mysql_errno(m);
        /* Refused credentials or an unknown database are not an outage. */
        rc = store__fail(e >= 2000 || conn_lost(e) ? BG_ECONN : BG_EIO,
                         "mariadb: cannot connect to %s: %s (%u)",
                         u.socket ? u.socket : u.host, mysql_error(m), e);
        mysql_close(m);
        url_free(&u);
        return rc;
    }
    url_free(&u);
    *out = m;
    return BG_OK;
}

static int query(MYSQL *m, const char *sql, size_t len, const char *what)
{
    if (mysql_real_query(m, sql, (unsigned long)len) != 0)
        return fail_my(m, what);
    return BG_OK;
}

static int query_s(MYSQL *m, const char *sql, const char *what)
{
    return query(m, sql, strlen(sql), what);
}

/* Runs a query expecting one row of one unsigned integer. */
static int query_u64(MYSQL *m, const char *sql, const char *what, uint64_t *out)
{
    int rc = query_s(m, sql, what);
    if (rc != BG_OK)
        return rc;
    MYSQL_RES *res = mysql_store_result(m);
    if (!res)
        return fail_my(m, what);
    MYSQL_ROW row = mysql_fetch_row(res);
    if (!row || !row[0])
        rc = mysql_errno(m) ? fail_my(m, what)
                            : store__fail(BG_EIO, "mariadb: %s: no result", what);
    else
        *out = strtoull(row[0], NULL, 10);
    mysql_free_result(res);
    return rc;
}

static int my_init(void *arg)
{
    return query_s(arg,
                   "CREATE TABLE IF NOT EXISTS products (id BIGINT PRIMARY KEY, "
                   "name TEXT NOT NULL, price_cents BIGINT NOT NULL) "
                   "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
                   "create table");
}

/* HOW SEEDING IS FAST: multi-row INSERTs of SEED_ROWS rows (one round trip
 * and one parse per batch), SEED_BATCHES_PER_TX batches per transaction (one
 * redo log flush each). INSERT IGNORE: rows another seeder inserted
 * meanwhile are skipped, not an error (*seeded counts ours only). */
static int my_seed(void *arg, uint64_t count, uint64_t *seeded)
{
    MYSQL *m = arg;
    *seeded = 0;
    uint64_t nonempty = 0;
    int rc = query_u64(m, "SELECT EXISTS (SELECT 1 FROM products)", "seed", &nonempty);
    if (rc != BG_OK || nonempty || count == 0)
        return rc;
    size_t cap = 64 + (size_t)SEED_ROWS * 80;
    char *sql = malloc(cap);
    if (!sql)
        return store__fail(BG_ENOMEM, "out of memory");
    uint64_t done = 0;
    unsigned batches = 0;
    rc = query_s(m, "START TRANSACTION", "seed");
    for (uint64_t id = 1; rc == BG_OK && id <= count;) {
        size_t len = (size_t)snprintf(sql, cap, "INSERT IGNORE INTO products (id, name, "
                                                "price_cents) VALUES ");
        for (unsigned r = 0; r < SEED_ROWS && id <= count; r++, id++)
            len += (size_t)snprintf(sql + len, cap - len, "%s(%" PRIu64 ",'product %" PRIu64
                                    "',%" PRId64 ")", r ? "," : "", id, id,
                                    store__seed_price(id));
        rc = query(m, sql, len, "seed insert");
        if (rc == BG_OK)
            done += mysql_affected_rows(m);
        if (rc == BG_OK && (++batches % SEED_BATCHES_PER_TX == 0 || id > count)) {
            rc = query_s(m, "COMMIT", "seed commit");
            if (rc == BG_OK && id <= count)
                rc = query_s(m, "START TRANSACTION", "seed");
        }
    }
    free(sql);
    if (rc != BG_OK) {
        if (!conn_lost(mysql_errno(m)))
            mysql_query(m, "ROLLBACK");
        /* Batches committed before the failure stay in the table, so a
         * later store_seed finds it non-empty and seeds nothing: empty the
         * table by hand to seed again. */
        *seeded = 0;
        return rc;
    }
    *seeded = done;
    return BG_OK;
}

static int my_get(void *arg, int64_t id, bg_guard_buf *json)
{
    MYSQL *m = arg;
    char sql[96];
    int n = snprintf(sql, sizeof sql, "SELECT name, price_cents FROM products WHERE id = %" PRId64,
                     id);
    int rc = query(m, sql, (size_t)n, "get");
    if (rc != BG_OK)
        return rc;
    MYSQL_RES *res = mysql_store_result(m);
    if (!res)
        return fail_my(m, "get");
    MYSQL_ROW row = mysql_fetch_row(res);
    if (!row) {
        rc = mysql_errno(m) ? fail_my(m, "get") : BG_GUARD_ABSENT;
    } else {
        unsigned long *lens = mysql_fetch_lengths(res);
        int64_t price;
        if (!row[0] || !row[1] || !lens ||
            store__parse_i64(row[1], (size_t)lens[1], &price) != 0) {
            rc = store__fail(BG_EIO, "mariadb: get: malformed row");
        } else {
            rc = store__json(json, id, row[0], (size_t)lens[0], price);
            if (rc == BG_OK)
                rc = BG_GUARD_FOUND;
        }
    }
    mysql_free_result(res);
    return rc;
}

static int my_put(void *arg, int64_t id, const char *name, int64_t price_cents)
{
    MYSQL *m = arg;
    size_t nlen = strlen(name);
    if (nlen > (SIZE_MAX - 256) / 2 || nlen > 0x3fffffff)
        return store__fail(BG_EINVAL, "mariadb: put: name too long");
    size_t cap = 2 * nlen + 256;
    char *sql = malloc(cap);
    if (!sql)
        return store__fail(BG_ENOMEM, "out of memory");
    size_t len = (size_t)snprintf(sql, cap, "INSERT INTO products (id, name, price_cents) "
                                            "VALUES (%" PRId64 ",'", id);
    len += mysql_real_escape_string(m, sql + len, name, (unsigned long)nlen);
    len += (size_t)snprintf(sql + len, cap - len,
                            "',%" PRId64 ") ON DUPLICATE KEY UPDATE name = VALUES(name), "
                            "price_cents = VALUES(price_cents)",
                            price_cents);
    int rc = query(m, sql, len, "put");
    free(sql);
    return rc;
}

static int my_del(void *arg, int64_t id)
{
    MYSQL *m = arg;
    char sql[64];
    int n = snprintf(sql, sizeof sql, "DELETE FROM products WHERE id = %" PRId64, id);
    int rc = query(m, sql, (size_t)n, "delete");
    if (rc != BG_OK)
        return rc;
    my_ulonglong a = mysql_affected_rows(m);
    return a != (my_ulonglong)-1 && a > 0 ? 1 : 0;
}

static int my_count(void *arg, uint64_t *out)
{
    return query_u64(arg, "SELECT COUNT(*) FROM products", "count", out);
}

static int my_page(void *arg, int64_t after, int64_t *ids, size_t max, size_t *n)
{
    MYSQL *m = arg;
    *n = 0;
    char sql[128];
    int len = snprintf(sql, sizeof sql,
                       "SELECT id FROM products WHERE id > %" PRId64 " ORDER BY id LIMIT %zu",
                       after, max);
    int rc = query(m, sql, (size_t)len, "scan");
    if (rc != BG_OK)
        return rc;
    MYSQL_RES *res = mysql_store_result(m);
    if (!res)
        return fail_my(m, "scan");
    MYSQL_ROW row;
    while (*n < max && (row = mysql_fetch_row(res)) != NULL) {
        unsigned long *lens = mysql_fetch_lengths(res);
        if (!row[0] || !lens || store__parse_i64(row[0], (size_t)lens[0], &ids[*n]) != 0) {
            rc = store__fail(BG_EIO, "mariadb: scan: malformed id");
            break;
        }
        (*n)++;
    }
    mysql_free_result(res);
    return rc;
}

const store_ops store__mariadb_ops = {
    .name = "mariadb",
    .connect = my_connect,
    .disconnect = my_disconnect,
    .socket = my_fd,
    .init = my_init,
    .seed = my_seed,
    .get = my_get,
    .put = my_put,
    .del = my_del,
    .count = my_count,
    .page = my_page,
};
