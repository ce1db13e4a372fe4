/* SPDX-License-Identifier: BSD-3-Clause */
/* The products service's storage: one table of products in SQLite,
 * PostgreSQL or MariaDB, seen by the guard as a bg_guard_source.
 *
 *   products(id BIGINT PRIMARY KEY, name TEXT NOT NULL, price_cents BIGINT NOT NULL)
 *
 * A key, for the guard and the HTTP paths alike, is the product id in
 * decimal without sign or leading zeros ("42"); any other key is absent
 * without a query. Ids are 0..INT64_MAX (a larger one is absent). A value
 * is the product as one JSON object:
 *   {"id":42,"name":"product 42","price_cents":4200}
 * whose name is escaped as a JSON string (quotes, backslashes, control
 * characters; invalid UTF-8, which only SQLite stores, becomes U+FFFD).
 * Seeding (store_seed) fills ids 1..count with that name and price
 * ((id * 7919) mod 100000 cents), so existing ids are exactly 1..count.
 *
 * Thread-safe: every call may come from any thread (one database
 * connection per thread, made on first use and remade after it broke; a
 * finished thread's connection is reused by the next new thread). A
 * database that is down makes calls fail with a negative status within the
 * connect timeout (STORE_CONNECT_TIMEOUT_S in store_internal.h, unless a
 * PostgreSQL conninfo sets connect_timeout; MariaDB reads and writes get the
 * same timeout); the store reconnects
 * by itself when it is back, and a read (get, count, scan) or a put (an
 * upsert: safe to repeat) that meets a connection broken since its
 * thread's last call reconnects and retries once, so a database restart
 * costs no failed read or put. A delete is not retried (its first try may
 * have been applied): it may fail once after a restart.
 *
 * ERRORS
 * BG_ECONN: the database is unreachable, or the connection broke or timed
 * out (SQLite: the file is missing, unreadable, damaged, moved or replaced,
 * or has no products table: store_sqlite.c, WHEN THE FILE GOES AWAY);
 * BG_EIO: any other database error (refused login, unknown database, a
 * constraint, invalid UTF-8 in a name); BG_EINVAL: a bad argument or
 * conninfo; BG_ENOMEM. store_errstr() then holds the driver's message.
 * Never a crash or an exit. */
#ifndef PRODUCTS_STORE_H
#define PRODUCTS_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <bloomgate/guard.h>

typedef struct store store;

typedef enum store_kind {
    STORE_SQLITE = 0,   /* conninfo: a file path, created by store_open when
                           missing; later, a missing file is BG_ECONN until
                           it is back (never re-created empty) */
    STORE_POSTGRES = 1, /* conninfo: a libpq connection string or URL */
    STORE_MARIADB = 2,  /* conninfo: mysql://user[:password]@host[:port]/database
                           or a unix socket: mysql://user@localhost/db?socket=/path */
} store_kind;

/* "sqlite", "postgres" (or "postgresql"), "mariadb" (or "mysql"). 0 or -1. */
int store_kind_parse(const char *name, store_kind *out);
const char *store_kind_name(store_kind k);

/* Opens the store into *out and checks the database answers (one
 * connection, the calling thread's), creating the table when missing.
 * BG_OK, or a negative status (ERRORS above; *out NULL) with the message in
 * err (always NUL-terminated when errlen > 0). Allocates; store_close
 * releases. */
int store_open(store **out, store_kind kind, const char *conninfo, char *err, size_t errlen);

/* Closes every thread's connection and frees s; NULL is allowed. Call it
 * when no thread uses s any more (threads may still be alive, but none may
 * be exiting during the call). s is dead after the call. */
void store_close(store *s);

/* Fills ids 1..count when the table is empty (batched, in transactions:
 * SQLite one, PostgreSQL one COPY, MariaDB multi-row INSERTs in several
 * transactions, so a MariaDB seed that fails midway leaves the rows
 * committed so far). *seeded: how many rows it inserted (0 when the table had rows).
 * BG_OK or a negative status with err. */
int store_seed(store *s, uint64_t count, uint64_t *seeded, char *err, size_t errlen);

/* Product id -> JSON value (replacing *json's contents): BG_GUARD_FOUND,
 * BG_GUARD_ABSENT or a negative status. */
int store_get(store *s, uint64_t id, bg_guard_buf *json);

/* Inserts (or replaces) a product. BG_OK or a negative status. */
int store_put(store *s, uint64_t id, const char *name, int64_t price_cents);

/* Deletes a product: 1 deleted, 0 there was none, or a negative status. */
int store_delete(store *s, uint64_t id);

/* Rows in the table. BG_OK or a negative status. */
int store_count(store *s, uint64_t *out);

/* The store as the guard's source: get, scan (every id, streamed in id
 * order with a server-side cursor or keyset pages, never all in memory)
 * and count. The source's ctx is s. */
bg_guard_source store_source(store *s);

/* Database queries made so far (get, scan pages, count, put, delete): what
 * the demo reports as database load. */
uint64_t store_queries(const store *s);

/* The last error message of the calling thread's connection (static
 * thread-local storage; "" when none). */
const char *store_errstr(void);

#endif
