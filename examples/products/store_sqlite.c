/* The products store on SQLite: conninfo is a file path.
 *
 * Each thread opens the file itself with SQLITE_OPEN_NOMUTEX (store.c gives
 * every thread its own connection, so SQLite's per-connection mutex would
 * only cost), in WAL mode so that readers never wait for the writer, with
 * synchronous=NORMAL (durable at checkpoints, consistent always) and a busy
 * timeout for writers that meet each other. SQLite is a file, not a server:
 * it never answers BG_ECONN, every failure is BG_EIO. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store_internal.h"

#define BUSY_TIMEOUT_MS 5000

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
} lite;

static int fail_db(sqlite3 *db, const char *what)
{
    return store__fail(BG_EIO, "sqlite: %s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
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
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int rc = store__fail(BG_EIO, "sqlite: %s: %s", sql, msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return rc;
    }
    return BG_OK;
}

static int lite_connect(const char *conninfo, void **out)
{
    *out = NULL;
    if (!conninfo[0])
        return store__fail(BG_EINVAL, "sqlite: empty file name");
    lite *l = calloc(1, sizeof *l);
    if (!l)
        return store__fail(BG_ENOMEM, "out of memory");
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(conninfo, &l->db, flags, NULL) != SQLITE_OK) {
        int rc = store__fail(BG_EIO, "sqlite: cannot open %s: %s", conninfo,
                             l->db ? sqlite3_errmsg(l->db) : "out of memory");
        lite_disconnect(l);
        return rc;
    }
    sqlite3_busy_timeout(l->db, BUSY_TIMEOUT_MS);
    int rc = exec(l->db, "PRAGMA journal_mode=WAL");
    if (rc == BG_OK)
        rc = exec(l->db, "PRAGMA synchronous=NORMAL");
    if (rc != BG_OK) {
        lite_disconnect(l);
        return rc;
    }
    *out = l;
    return BG_OK;
}

/* The statement, reset and unbound, ready for binding. */
static int stmt(lite *l, int which, sqlite3_stmt **out)
{
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
