/* SPDX-License-Identifier: BSD-3-Clause */
/* The products store on SQLite: conninfo is a file path.
 *
 * Each thread opens the file itself with SQLITE_OPEN_NOMUTEX (store.c gives
 * every thread its own connection, so SQLite's per-connection mutex would
 * only cost), in WAL mode so that readers never wait for the writer, with
 * synchronous=NORMAL (durable at checkpoints, consistent always) and a busy
 * timeout for writers that meet each other.
 *
 * WHEN THE FILE GOES AWAY
 * Only store_open's connection may create the file (create); one opened
 * to serve must find it there, else an empty database would take the
 * place of one that is only away (moved, being restored) and that thread
 * would answer "no such table" from it for good. A failure that means the
 * connection cannot be trusted any more is BG_ECONN, so that store.c drops
 * it and the next call opens the file again:
 *   - the file cannot be opened (missing: SQLITE_CANTOPEN), read or
 *     written (SQLITE_IOERR*), or is damaged (SQLITE_CORRUPT,
 *     SQLITE_NOTADB);
 *   - a statement cannot be prepared, or fails with SQLITE_ERROR: our SQL
 *     is fixed, so that is a file without our table ("no such table"),
 *     not a database of ours;
 *   - the file was moved, unlinked or replaced under an open connection
 *     (SQLITE_READONLY_DBMOVED on a write; on reads SQLite goes on reading
 *     the old inode, so every MOVED_CHECK_NS a connection asks
 *     SQLITE_FCNTL_HAS_MOVED, one stat of the path, before its call).
 * A read or a put that meets one of these on an older connection is
 * retried once on a new one (store.c), so a file replaced in place costs
 * no failed request. Anything else (a constraint, SQLITE_BUSY after the
 * busy timeout, a full disk) is BG_EIO and the connection stays. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "store_internal.h"

#define BUSY_TIMEOUT_MS 5000

/* How often a connection checks that its file is still the one at its
 * path (WHEN THE FILE GOES AWAY). */
#define MOVED_CHECK_NS 1000000000LL

enum { ST_GET, ST_PUT, ST_DEL, ST_COUNT, ST_PAGE, ST_N };

static const char *const sql_text[ST_N] = {
    [ST_GET] = "SELECT name, price_cents FROM products WHERE id = ?1",
    [ST_PUT] = "INSERT OR REPLACE INTO products(id, name, price_cents) VALUES (?1, ?2, ?3)",
    [ST_DEL] = "DELETE FROM products WHERE id = ?1",
    [ST_COUNT] = "SELECT COUNT(*) FROM products",
    [ST_PAGE] = "SELECT id FROM products WHERE id > ?1 ORDER BY id LIMIT ?2",
};

typedef struct lite {
    sqlite3 *db;
    sqlite3_stmt *st[ST_N]; /* prepared on first use */
    long long checked_ns;   /* last SQLITE_FCNTL_HAS_MOVED check */
} lite;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The store status of SQLite result code `code` (extended or primary):
 * BG_ECONN when the connection should be dropped (WHEN THE FILE GOES
 * AWAY), else BG_EIO (BG_ENOMEM for SQLITE_NOMEM). */
static int lite_status(int code)
{
    if (code == SQLITE_READONLY_DBMOVED)
        return BG_ECONN;
    switch (code & 0xff) {
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_ERROR:
        return BG_ECONN;
    case SQLITE_NOMEM:
        return BG_ENOMEM;
    default:
        return BG_EIO;
    }
}

static int fail_db(sqlite3 *db, const char *what)
{
    if (!db)
        return store__fail(BG_ENOMEM, "sqlite: %s: out of memory", what);
    return store__fail(lite_status(sqlite3_extended_errcode(db)), "sqlite: %s: %s", what,
                       sqlite3_errmsg(db));
}

/* BG_ECONN if l's file is no longer the one at its path (checked every
 * MOVED_CHECK_NS), else BG_OK. */
static int lite_check_moved(lite *l)
{
    long long now = now_ns();
    if (now - l->checked_ns < MOVED_CHECK_NS)
        return BG_OK;
    l->checked_ns = now;
    int moved = 0;
    if (sqlite3_file_control(l->db, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK &&
        moved)
        return store__fail(BG_ECONN, "sqlite: %s was moved, removed or replaced",
                           sqlite3_db_filename(l->db, "main"));
    return BG_OK;
}

static void lite_disconnect(void *arg)
{
    lite *l = arg;
    if (!l)
        return;
    for (int i = 0; i < ST_N; i++)
        sqlite3_finalize(l->st[i]);
    sqlite3_close_v2(l->db);
    free(l);
}

static int exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int code = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (code != SQLITE_OK) {
        int rc = store__fail(lite_status(sqlite3_extended_errcode(db)), "sqlite: %s: %s", sql,
                             msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return rc;
    }
    return BG_OK;
}

/* Opens the file; only with create may it be made (WHEN THE FILE GOES
 * AWAY). A failure with create (store_open: a path that cannot be made or
 * is not a database) is BG_EIO, a configuration error; without, the file
 * may come back: BG_ECONN, and the next call tries again. */
static int lite_connect(const char *conninfo, int create, void **out)
{
    *out = NULL;
    if (!conninfo[0])
        return store__fail(BG_EINVAL, "sqlite: empty file name");
    lite *l = calloc(1, sizeof *l);
    if (!l)
        return store__fail(BG_ENOMEM, "out of memory");
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    int rc = BG_OK;
    if (sqlite3_open_v2(conninfo, &l->db, flags, NULL) != SQLITE_OK) {
        rc = l->db ? store__fail(BG_ECONN, "sqlite: cannot open %s: %s", conninfo,
                                 sqlite3_errmsg(l->db))
                   : store__fail(BG_ENOMEM, "out of memory");
    } else {
        sqlite3_extended_result_codes(l->db, 1);
        sqlite3_busy_timeout(l->db, BUSY_TIMEOUT_MS);
        rc = exec(l->db, "PRAGMA journal_mode=WAL");
        if (rc == BG_OK)
            rc = exec(l->db, "PRAGMA synchronous=NORMAL");
    }
    if (rc != BG_OK) {
        lite_disconnect(l);
        return create && rc == BG_ECONN ? BG_EIO : rc;
    }
    l->checked_ns = now_ns();
    *out = l;
    return BG_OK;
}

/* The statement, reset and unbound, ready for binding; first checks that
 * the file is still there (lite_check_moved). */
static int stmt(lite *l, int which, sqlite3_stmt **out)
{
    int rc = lite_check_moved(l);
    if (rc != BG_OK)
        return rc;
    if (!l->st[which] &&
        sqlite3_prepare_v3(l->db, sql_text[which], -1, SQLITE_PREPARE_PERSISTENT, &l->st[which],
                           NULL) != SQLITE_OK)
        return fail_db(l->db, "prepare");
    sqlite3_reset(l->st[which]);
    sqlite3_clear_bindings(l->st[which]);
    *out = l->st[which];
    return BG_OK;
}

static int lite_init(void *arg)
{
    lite *l = arg;
    return exec(l->db, "CREATE TABLE IF NOT EXISTS products ("
                       "id INTEGER PRIMARY KEY, name TEXT NOT NULL, price_cents INTEGER NOT NULL)");
}

/* HOW SEEDING IS FAST: one transaction (one fsync instead of one per row),
 * one prepared statement bound and stepped per row (no SQL parsing), rows
 * in id order (appends to the rowid b-tree). BEGIN IMMEDIATE takes the
 * write lock first, so two seeders cannot both see an empty table. */
static int lite_seed(void *arg, uint64_t count, uint64_t *seeded)
{
    lite *l = arg;
    *seeded = 0;
    int rc = exec(l->db, "BEGIN IMMEDIATE");
    if (rc != BG_OK)
        return rc;
    sqlite3_stmt *st = NULL;
    int empty = 0;
    if (sqlite3_prepare_v2(l->db, "SELECT NOT EXISTS (SELECT 1 FROM products)", -1, &st, NULL) !=
            SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        rc = fail_db(l->db, "seed");
    } else {
        empty = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == BG_OK && empty && count > 0) {
        if (sqlite3_prepare_v2(l->db,
                               "INSERT INTO products(id, name, price_cents) VALUES (?1, ?2, ?3)",
                               -1, &st, NULL) != SQLITE_OK)
            rc = fail_db(l->db, "seed");
        char name[48];
        for (uint64_t id = 1; rc == BG_OK && id <= count; id++) {
            int n = store__seed_name(name, sizeof name, id);
            sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
            sqlite3_bind_text(st, 2, name, n, SQLITE_STATIC);
            sqlite3_bind_int64(st, 3, store__seed_price(id));
            if (sqlite3_step(st) != SQLITE_DONE)
                rc = fail_db(l->db, "seed insert");
            sqlite3_reset(st);
        }
        sqlite3_finalize(st);
        if (rc == BG_OK)
            *seeded = count;
    }
    if (rc == BG_OK)
        rc = exec(l->db, "COMMIT");
    if (rc != BG_OK) {
        *seeded = 0;
        sqlite3_exec(l->db, "ROLLBACK", NULL, NULL, NULL);
    }
    return rc;
}

static int lite_get(void *arg, int64_t id, bg_guard_buf *json)
{
    lite *l = arg;
    sqlite3_stmt *st;
    int rc = stmt(l, ST_GET, &st);
    if (rc != BG_OK)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    int s = sqlite3_step(st);
    if (s == SQLITE_DONE) {
        rc = BG_GUARD_ABSENT;
    } else if (s == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        size_t len = (size_t)sqlite3_column_bytes(st, 0);
        rc = store__json(json, id, name, len, sqlite3_column_int64(st, 1));
        if (rc == BG_OK)
            rc = BG_GUARD_FOUND;
    } else {
        rc = fail_db(l->db, "get");
    }
    sqlite3_reset(st);
    return rc;
}

static int lite_put(void *arg, int64_t id, const char *name, int64_t price_cents)
{
    lite *l = arg;
    sqlite3_stmt *st;
    int rc = stmt(l, ST_PUT, &st);
    if (rc != BG_OK)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, price_cents);
    rc = sqlite3_step(st) == SQLITE_DONE ? BG_OK : fail_db(l->db, "put");
    sqlite3_reset(st);
    return rc;
}

static int lite_del(void *arg, int64_t id)
{
    lite *l = arg;
    sqlite3_stmt *st;
    int rc = stmt(l, ST_DEL, &st);
    if (rc != BG_OK)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_DONE)
        rc = sqlite3_changes(l->db) > 0 ? 1 : 0;
    else
        rc = fail_db(l->db, "delete");
    sqlite3_reset(st);
    return rc;
}

static int lite_count(void *arg, uint64_t *out)
{
    lite *l = arg;
    sqlite3_stmt *st;
    int rc = stmt(l, ST_COUNT, &st);
    if (rc != BG_OK)
        return rc;
    if (sqlite3_step(st) == SQLITE_ROW)
        *out = (uint64_t)sqlite3_column_int64(st, 0);
    else
        rc = fail_db(l->db, "count");
    sqlite3_reset(st);
    return rc;
}

static int lite_page(void *arg, int64_t after, int64_t *ids, size_t max, size_t *n)
{
    lite *l = arg;
    sqlite3_stmt *st;
    *n = 0;
    int rc = stmt(l, ST_PAGE, &st);
    if (rc != BG_OK)
        return rc;
    sqlite3_bind_int64(st, 1, after);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)max);
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW && *n < max)
        ids[(*n)++] = sqlite3_column_int64(st, 0);
    if (s != SQLITE_ROW && s != SQLITE_DONE)
        rc = fail_db(l->db, "scan");
    sqlite3_reset(st);
    return rc;
}

const store_ops store__sqlite_ops = {
    .name = "sqlite",
    .connect = lite_connect,
    .disconnect = lite_disconnect,
    .init = lite_init,
    .seed = lite_seed,
    .get = lite_get,
    .put = lite_put,
    .del = lite_del,
    .count = lite_count,
    .page = lite_page,
};
