/* SPDX-License-Identifier: BSD-3-Clause */
/* The products store on PostgreSQL (libpq): conninfo is a libpq connection
 * string or URL.
 *
 * Every connection prepares each statement once (PQprepare), on its first
 * use (the table may not exist before store_open's init), so a get is then
 * one round trip with no parsing or planning. A
 * connection attempt takes at most connect_timeout seconds: the
 * conninfo's, else STORE_CONNECT_TIMEOUT_S (it is placed before the
 * expanded conninfo in PQconnectdbParams, where a later value wins).
 * A failed call whose connection is no longer CONNECTION_OK is BG_ECONN
 * (store.c then reconnects on the next call); any other failure is BG_EIO.
 * libpq blocks SIGPIPE itself around its writes. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "store_internal.h"

enum { PS_GET, PS_PUT, PS_DEL, PS_COUNT, PS_PAGE, PS_N };

static const struct {
    const char *name, *sql;
    int nparams;
} stmts[PS_N] = {
    [PS_GET] = {"bg_get", "SELECT name, price_cents FROM products WHERE id = $1::bigint", 1},
    [PS_PUT] = {"bg_put",
                "INSERT INTO products(id, name, price_cents) VALUES ($1::bigint, $2::text, "
                "$3::bigint) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, "
                "price_cents = EXCLUDED.price_cents",
                3},
    [PS_DEL] = {"bg_del", "DELETE FROM products WHERE id = $1::bigint", 1},
    [PS_COUNT] = {"bg_count", "SELECT COUNT(*) FROM products", 0},
    [PS_PAGE] = {"bg_page",
                 "SELECT id FROM products WHERE id > $1::bigint ORDER BY id LIMIT $2::bigint", 2},
};

/* A failure on conn: BG_ECONN if the connection is gone, else BG_EIO. */
static int fail_pg(PGconn *conn, const PGresult *res, const char *what)
{
    const char *msg = res ? PQresultErrorMessage(res) : "";
    if (!msg || !*msg)
        msg = PQerrorMessage(conn);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        n--;
    int status = PQstatus(conn) == CONNECTION_OK ? BG_EIO : BG_ECONN;
    /* libpq's messages span lines ("...refused\n\tIs the server running"):
     * one line reads better in a log or an HTTP error. */
    char one[400];
    size_t j = 0;
    for (size_t i = 0; i < n && j + 1 < sizeof one; i++) {
        char ch = msg[i] == '\n' || msg[i] == '\t' ? ' ' : msg[i];
        if (ch == ' ' && j > 0 && one[j - 1] == ' ')
            continue;
        one[j++] = ch;
    }
    one[j] = '\0';
    return store__fail(status, "postgres: %s: %s", what, one);
}

/* libpq prints NOTICEs (CREATE TABLE IF NOT EXISTS has one) to stderr by
 * default; a library does not print. */
static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

typedef struct pg {
    PGconn *conn;
    unsigned prepared; /* bit i: stmts[i] is prepared on conn */
} pg;

static void pg_disconnect(void *arg)
{
    pg *p = arg;
    if (!p)
        return;
    PQfinish(p->conn);
    free(p);
}

static int pg_fd(void *arg)
{
    return PQsocket(((pg *)arg)->conn);
}

static int pg_connect(const char *conninfo, int create, void **out)
{
    (void)create; /* a server: the database exists or the login fails */
    *out = NULL;
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", STORE_CONNECT_TIMEOUT_S);
    const char *const keys[] = {"connect_timeout", "dbname", NULL};
    const char *const vals[] = {timeout, conninfo, NULL};
    PGconn *conn = PQconnectdbParams(keys, vals, 1);
    if (!conn)
        return store__fail(BG_ENOMEM, "postgres: out of memory");
    if (PQstatus(conn) != CONNECTION_OK) {
        int rc = fail_pg(conn, NULL, "cannot connect");
        PQfinish(conn);
        return rc;
    }
    PQsetNoticeProcessor(conn, quiet, NULL);
    pg *p = calloc(1, sizeof *p);
    if (!p) {
        PQfinish(conn);
        return store__fail(BG_ENOMEM, "postgres: out of memory");
    }
    p->conn = conn;
    *out = p;
    return BG_OK;
}

/* Runs a prepared statement (preparing it first if needed) with text
 * parameters. NULL only when out of memory; check PQresultStatus. */
static PGresult *run(pg *p, int which, const char *const *params)
{
    if (!(p->prepared & (1u << which))) {
        PGresult *res = PQprepare(p->conn, stmts[which].name, stmts[which].sql,
                                  stmts[which].nparams, NULL);
        if (!res || PQresultStatus(res) != PGRES_COMMAND_OK)
            return res;
        PQclear(res);
        p->prepared |= 1u << which;
    }
    return PQexecPrepared(p->conn, stmts[which].name, stmts[which].nparams, params, NULL, NULL,
                          0);
}

static int pg_exec(PGconn *conn, const char *sql, ExecStatusType want, PGresult **keep)
{
    PGresult *res = PQexec(conn, sql);
    if (!res || PQresultStatus(res) != want) {
        int rc = fail_pg(conn, res, sql);
        PQclear(res);
        return rc;
    }
    if (keep)
        *keep = res;
    else
        PQclear(res);
    return BG_OK;
}

static int pg_init(void *arg)
{
    return pg_exec(((pg *)arg)->conn,
                   "CREATE TABLE IF NOT EXISTS products (id BIGINT PRIMARY KEY, "
                   "name TEXT NOT NULL, price_cents BIGINT NOT NULL)",
                   PGRES_COMMAND_OK, NULL);
}

/* HOW SEEDING IS FAST: one COPY ... FROM STDIN in one transaction; the rows
 * go as tab-separated text in 256 KiB chunks (no per-row round trip, no
 * per-row parse and plan). The table is locked first (SHARE ROW EXCLUSIVE
 * conflicts with itself), so two seeders cannot both see it empty. */
static int pg_seed(void *arg, uint64_t count, uint64_t *seeded)
{
    PGconn *conn = ((pg *)arg)->conn;
    *seeded = 0;
    int rc = pg_exec(conn, "BEGIN", PGRES_COMMAND_OK, NULL);
    if (rc != BG_OK)
        return rc;
    rc = pg_exec(conn, "LOCK TABLE products IN SHARE ROW EXCLUSIVE MODE", PGRES_COMMAND_OK, NULL);
    PGresult *res = NULL;
    if (rc == BG_OK)
        rc = pg_exec(conn, "SELECT EXISTS (SELECT 1 FROM products)", PGRES_TUPLES_OK, &res);
    int empty = rc == BG_OK && PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "f") == 0;
    PQclear(res);
    uint64_t copied = 0;
    if (rc == BG_OK && empty && count > 0) {
        rc = pg_exec(conn, "COPY products (id, name, price_cents) FROM STDIN", PGRES_COPY_IN,
                     NULL);
        enum { CHUNK = 256 * 1024 };
        char *buf = rc == BG_OK ? malloc(CHUNK) : NULL;
        if (rc == BG_OK && !buf)
            rc = store__fail(BG_ENOMEM, "out of memory");
        size_t used = 0;
        for (uint64_t id = 1; rc == BG_OK && id <= count; id++) {
            if (CHUNK - used < 96) {
                if (PQputCopyData(conn, buf, (int)used) != 1)
                    rc = fail_pg(conn, NULL, "COPY");
                used = 0;
            }
            int n = snprintf(buf + used, CHUNK - used, "%" PRIu64 "\tproduct %" PRIu64 "\t%" PRId64
                             "\n", id, id, store__seed_price(id));
            used += (size_t)n;
        }
        if (rc == BG_OK && used > 0 && PQputCopyData(conn, buf, (int)used) != 1)
            rc = fail_pg(conn, NULL, "COPY");
        free(buf);
        if (PQputCopyEnd(conn, rc == BG_OK ? NULL : "aborted by the client") != 1 && rc == BG_OK)
            rc = fail_pg(conn, NULL, "COPY end");
        /* Drain every result of the COPY, even after a failure. */
        while ((res = PQgetResult(conn)) != NULL) {
            if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                if (rc == BG_OK)
                    rc = fail_pg(conn, res, "COPY");
            } else {
                copied = strtoull(PQcmdTuples(res), NULL, 10);
            }
            PQclear(res);
            if (PQstatus(conn) != CONNECTION_OK)
                break;
        }
    }
    if (rc == BG_OK)
        rc = pg_exec(conn, "COMMIT", PGRES_COMMAND_OK, NULL);
    if (rc != BG_OK) {
        if (PQstatus(conn) == CONNECTION_OK)
            PQclear(PQexec(conn, "ROLLBACK"));
        return rc;
    }
    *seeded = copied;
    return BG_OK;
}

static int pg_get(void *arg, int64_t id, bg_guard_buf *json)
{
    pg *p = arg;
    PGconn *conn = p->conn;
    char ids[24];
    snprintf(ids, sizeof ids, "%" PRId64, id);
    const char *params[1] = {ids};
    PGresult *res = run(p, PS_GET, params);
    int rc;
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK) {
        rc = fail_pg(conn, res, "get");
    } else if (PQntuples(res) == 0) {
        rc = BG_GUARD_ABSENT;
    } else {
        int64_t price;
        const char *pv = PQgetvalue(res, 0, 1);
        if (store__parse_i64(pv, strlen(pv), &price) != 0) {
            rc = store__fail(BG_EIO, "postgres: get: bad price %s", pv);
        } else {
            rc = store__json(json, id, PQgetvalue(res, 0, 0), (size_t)PQgetlength(res, 0, 0),
                             price);
            if (rc == BG_OK)
                rc = BG_GUARD_FOUND;
        }
    }
    PQclear(res);
    return rc;
}

static int pg_put(void *arg, int64_t id, const char *name, int64_t price_cents)
{
    pg *p = arg;
    PGconn *conn = p->conn;
    char ids[24], prices[24];
    snprintf(ids, sizeof ids, "%" PRId64, id);
    snprintf(prices, sizeof prices, "%" PRId64, price_cents);
    const char *params[3] = {ids, name, prices};
    PGresult *res = run(p, PS_PUT, params);
    int rc = res && PQresultStatus(res) == PGRES_COMMAND_OK ? BG_OK : fail_pg(conn, res, "put");
    PQclear(res);
    return rc;
}

static int pg_del(void *arg, int64_t id)
{
    pg *p = arg;
    PGconn *conn = p->conn;
    char ids[24];
    snprintf(ids, sizeof ids, "%" PRId64, id);
    const char *params[1] = {ids};
    PGresult *res = run(p, PS_DEL, params);
    int rc;
    if (!res || PQresultStatus(res) != PGRES_COMMAND_OK)
        rc = fail_pg(conn, res, "delete");
    else
        rc = strtoull(PQcmdTuples(res), NULL, 10) > 0 ? 1 : 0;
    PQclear(res);
    return rc;
}

static int pg_count(void *arg, uint64_t *out)
{
    pg *p = arg;
    PGconn *conn = p->conn;
    PGresult *res = run(p, PS_COUNT, NULL);
    int rc = BG_OK;
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
        rc = fail_pg(conn, res, "count");
    else
        *out = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return rc;
}

static int pg_page(void *arg, int64_t after, int64_t *ids, size_t max, size_t *n)
{
    pg *p = arg;
    PGconn *conn = p->conn;
    *n = 0;
    char afters[24], maxs[24];
    snprintf(afters, sizeof afters, "%" PRId64, after);
    snprintf(maxs, sizeof maxs, "%zu", max);
    const char *params[2] = {afters, maxs};
    PGresult *res = run(p, PS_PAGE, params);
    int rc = BG_OK;
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK) {
        rc = fail_pg(conn, res, "scan");
    } else {
        int rows = PQntuples(res);
        for (int i = 0; i < rows && *n < max; i++) {
            const char *v = PQgetvalue(res, i, 0);
            if (store__parse_i64(v, strlen(v), &ids[*n]) != 0) {
                rc = store__fail(BG_EIO, "postgres: scan: bad id %s", v);
                break;
            }
            (*n)++;
        }
    }
    PQclear(res);
    return rc;
}

const store_ops store__postgres_ops = {
    .name = "postgres",
    .connect = pg_connect,
    .disconnect = pg_disconnect,
    .socket = pg_fd,
    .init = pg_init,
    .seed = pg_seed,
    .get = pg_get,
    .put = pg_put,
    .del = pg_del,
    .count = pg_count,
    .page = pg_page,
};
