/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal to the products store: what store.c (the common part) and the
 * three backends (store_sqlite.c, store_postgres.c, store_mariadb.c) share.
 * Not part of store.h.
 *
 * HOW IT FITS
 * store.c owns the store, the per-thread connections and the query
 * counter; a backend only knows how to talk to one database over one
 * connection (its `db`, opaque here). Every backend call runs on the
 * calling thread's own connection, so backends need no locks. A backend
 * call that finds the connection broken or unusable returns BG_ECONN:
 * store.c then drops that connection and the thread's next call makes a
 * new one. */
#ifndef PRODUCTS_STORE_INTERNAL_H
#define PRODUCTS_STORE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* Rows per scan page (keyset pagination: WHERE id > last ORDER BY id LIMIT). */
#define STORE_PAGE 10000u

/* Seconds a connection attempt may take when the conninfo says nothing. */
#define STORE_CONNECT_TIMEOUT_S 2

typedef struct store_ops {
    const char *name;
    /* Connects (on the calling thread) into *db. create: the database may
     * be made when missing (SQLite: store_open's first connection only; a
     * connection made to serve must not create a file, or a database that
     * is only away for a moment would be replaced by an empty one). BG_OK,
     * BG_ECONN, BG_EINVAL (a conninfo it cannot parse), BG_ENOMEM or
     * BG_EIO, with a message. */
    int (*connect)(const char *conninfo, int create, void **db);
    /* Closes and frees db. NULL is allowed. */
    void (*disconnect)(void *db);
    /* The connection's socket, or -1 (none, as for SQLite). store.c polls
     * it before a call that must not be repeated (see STORE_CALL). */
    int (*socket)(void *db);
    /* Creates the table when missing. */
    int (*init)(void *db);
    /* Seeds ids 1..count when the table is empty (store_seed). */
    int (*seed)(void *db, uint64_t count, uint64_t *seeded);
    /* Looks id up; formats the row with store__json. */
    int (*get)(void *db, int64_t id, bg_guard_buf *json);
    int (*put)(void *db, int64_t id, const char *name, int64_t price_cents);
    /* 1 deleted, 0 none, or a negative status. */
    int (*del)(void *db, int64_t id);
    int (*count)(void *db, uint64_t *out);
    /* Up to max ids greater than `after`, ascending, into ids; *n how many. */
    int (*page)(void *db, int64_t after, int64_t *ids, size_t max, size_t *n);
} store_ops;

extern const store_ops store__sqlite_ops;
extern const store_ops store__postgres_ops;
extern const store_ops store__mariadb_ops;

/* Sets the calling thread's message (store_errstr) and returns status. */
int store__fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clears the calling thread's message. */
void store__ok(void);

/* {"id":<id>,"name":<name as a JSON string>,"price_cents":<price>} into
 * *json (replacing its contents). name is len bytes, taken as UTF-8: an
 * invalid sequence becomes U+FFFD, so the output is always valid JSON.
 * BG_OK or BG_ENOMEM. */
int store__json(bg_guard_buf *json, int64_t id, const char *name, size_t len,
                int64_t price_cents);

/* The seeded product's name and price. */
int store__seed_name(char *buf, size_t cap, uint64_t id);
int64_t store__seed_price(uint64_t id);

/* Parses a decimal int64 (optionally signed) of len bytes: 0 or -1. */
int store__parse_i64(const char *s, size_t len, int64_t *out);

#endif
