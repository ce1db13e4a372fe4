/* SPDX-License-Identifier: BSD-3-Clause */
/* Remote filters: one Bloom filter held in Redis, shared by every instance
 * of a service.
 *
 *   bg_remote *r;
 *   bg_remote_options ro = { .host = "127.0.0.1", .port = 6379 };
 *   if (bg_remote_connect(&r, &ro) != BG_OK) ... bg_remote_errstr(r) says why
 *   bg_remote_filter *f;
 *   bg_remote_filter_options fo = { .backend = BG_REMOTE_BITMAP,
 *                                   .capacity = 1000000, .error_rate = 0.01 };
 *   int rc = bg_remote_filter_create(&f, r, "users", &fo);
 *   if (rc == BG_EEXIST) rc = bg_remote_filter_open(&f, r, "users", BG_REMOTE_BITMAP);
 *   bg_remote_filter_add(f, "alice", 5);
 *   if (bg_remote_filter_contains(f, "bob", 3) == 0) ... definitely absent
 *   bg_remote_filter_close(f);
 *   bg_remote_close(r);
 *
 * Built on hiredis as the separate library libbloomgate_remote (shared, on
 * libbloomgate; or the archive, with libbloomgate.a and hiredis).
 * docs/REMOTE.md is the guide (which backend when, examples, the CLI);
 * docs/PROTOCOL.md specifies the bitmap backend's keys and scripts.
 *
 * BACKENDS
 * BG_REMOTE_MODULE speaks RedisBloom's BF.* commands, to a server that has
 * bloomgate.so (or RedisBloom) loaded; the filter is the key `name` and the
 * server keeps its parameters. BF.RESERVE, BF.INSERT NOCREATE, BG.MEXISTS
 * (bloomgate.so's BF.MEXISTS that fails on a missing key or another type,
 * where BF.MEXISTS answers 0s), BF.INFO, BF.SCANDUMP, HGET, DEL and
 * PEXPIRE, and short scripts (EVAL) for STAGED CREATION, REBUILD and UPLOAD
 * AND DOWNLOAD below; the scripts call BF.* commands, which both modules
 * allow in scripts. Against RedisBloom (no BG.MEXISTS), or a user not
 * allowed it, queries are a script of TYPE and BF.MEXISTS, with the same
 * errors: a missing filter is BG_ENOTFOUND, never "every key absent" (the
 * connection remembers to use the script; it costs the server more than
 * the command, the same round trip).
 *
 * KEY LAYOUT (module)
 *   name                        the filter (RedisBloom's type or bloomgate's)
 *   {name}:staging:<16 hex>     a staged filter until commit (STAGED CREATION)
 *   {name}:rebuild              hash: key, lease while a rebuild is
 *                               pending; done, for a lease after its
 *                               commit (REBUILD)
 *   {name}:rebuild:<16 hex>     the pending rebuild's filter
 *   {name}:publish:<16 hex>     a publish's upload until it replaces name
 *   {name}:fetch:<16 hex>       a fetch's copy until its download ends
 * A name has no braces, so all of them are in name's cluster slot.
 * BG_REMOTE_BITMAP needs no module (any Redis >= 6.2): the filter is a
 * standard-variant filter (<bloomgate/filter.h>) whose bit array is a Redis
 * string, bit i at byte i / 8, mask 0x80 >> (i % 8) (SETBIT order, the
 * payload of a filter file), and the client computes the probe positions
 * with the library's hashing. A filter built locally with the same bits,
 * hashes and seed has the same bits: its payload can be uploaded as is.
 *
 * KEY LAYOUT (bitmap)
 *   {name}:meta                 hash: format, variant, bits, hashes, seed,
 *                               generation, items, capacity, error_rate,
 *                               lineage (the creation's generation), and
 *                               next and next_* while a rebuild is pending
 *   {name}:bits:<generation>    string of ceil(bits / 8) bytes
 *   {name}:bits:<next>          the pending rebuild's bits
 * The hash tag {name} keeps both in one cluster slot. The generation is a
 * random 63-bit number chosen at creation, so a filter dropped and created
 * again has another one.
 *
 * ATOMICITY AND STALE PARAMETERS (bitmap)
 * Every operation is one Lua script (EVALSHA; on NOSCRIPT, EVAL once) that
 * first compares the meta hash's generation with the one this handle opened,
 * then runs the whole batch (SETBIT / GETBIT per probe; a query stops at a
 * key's first clear bit). So a batch is atomic, and a handle whose filter
 * was dropped gets BG_ENOTFOUND, one whose filter was re-created (other parameters, or the
 * same ones) or reshaped by a publish or rebuild gets BG_ESTALE, and in both
 * cases nothing is written: a client never answers from parameters that are
 * no longer the server's. Open the filter again to go on. A publish or
 * rebuild that keeps bits, hashes and seed is not an error: the handle
 * follows the new generation (UPLOAD AND DOWNLOAD, REBUILD below). The meta
 * hash names a bit array only once it is complete, so nobody sees a partial
 * filter. A bit array lost under its meta hash (deleted, evicted under
 * maxmemory, overwritten by another client: not a string of exactly
 * ceil(m / 8) bytes) is an error to every operation but delete (BG_ENOTFOUND
 * when missing, BG_EREMOTE otherwise), never read as zeros nor grown back;
 * a pending rebuild whose bit array is lost is cancelled (its rebuilder
 * gets BG_ESTALE), never committed.
 *
 * LIMITS
 * A bitmap filter has at most BG_REMOTE_MAX_BITS bits (a Redis string holds
 * 512 MiB; BITFIELD offsets stop at 2^32 - 1): larger gets BG_ETOOBIG, or
 * shard it.
 *
 * SHARDING (bitmap)
 * Created with options.shards = S > 1, the logical filter `name` is S
 * ordinary bitmap filters `name:s0` .. `name:s<S-1>` (keys {name:s<j>}:...,
 * each its own hash tag, so each its own cluster slot), each sized for
 * capacity / S keys (or bits / S bits) with the same hashes and seed, plus
 * the string {name}:shards holding S, written last (open finds it when
 * there is no {name}:meta). A key goes to the shard
 *   j = floor(S * ((h1 ^ rotl64(h2, 32)) * 0x9e3779b97f4a7c15 mod 2^64) / 2^64)
 * of its bg_hash (h1, h2): mixed from both halves and taken from the high
 * bits, so it is uniform and independent of the probe positions, which
 * come from h1 and h2 mod the shard's bits; the shards fill evenly and the
 * FP rate is one shard's, the filter's. So one filter can exceed 2^32 bits
 * and one node's memory, and spread its load over a cluster's masters
 * (bg_remote_options.cluster: slot routing, MOVED and ASK, cluster.c).
 * A batch is split by shard, one script per shard, all sent before any
 * reply is read (the masters work in parallel: about one round trip per
 * batch): each shard's part is atomic, the batch as a whole is not (S
 * atomic parts). Add, contains,
 * test-and-add, the batches, stats (summed), delete, expire and rebuild
 * (shard by shard: REBUILD below) work on a sharded filter. It is
 * published from local filters built shard by shard
 * (bg_remote_filter_publish_shards, with bg_remote_shard_of) and fetched
 * into them (bg_remote_filter_fetch_shards), not by bg_remote_filter_publish
 * and _fetch (its shards do not make one local filter).
 *
 * ERRORS
 * Every call returns a status (error.h). BG_ECONN: the connection failed,
 * broke, or a reply did not come within command_timeout_ms; the handle is
 * then marked broken and the next call on it reconnects first (once; it
 * returns BG_ECONN if that fails), or call bg_remote_reconnect. A call that
 * failed with BG_ECONN may or may not have been applied by the server (the
 * reply was lost): the library never retries it. BG_EREMOTE: the server
 * replied an error; bg_remote_errstr holds its message. Never a crash, never
 * a wait longer than the timeouts.
 *
 * THREADS
 * A bg_remote (and every bg_remote_filter opened on it) is NOT thread-safe:
 * one thread at a time per connection, as for a hiredis redisContext. Use
 * one connection per thread (or a pool); filter handles are cheap.
 *
 * MEMORY
 * bg_remote_connect and bg_remote_filter_create / _open / _stage allocate
 * (through <bloomgate/alloc.h>, plus hiredis's own allocations);
 * bg_remote_close and bg_remote_filter_close release. The operations
 * allocate only hiredis's command and reply buffers and the batch's
 * argument array, freed before they return. Keys and names are borrowed
 * for the call only.
 *
 * COST
 * Every call blocks its thread for its round trips (each bounded by
 * command_timeout_ms). A script is sent as EVALSHA; the first use on a
 * connection that lacks it (NOSCRIPT) costs one more round trip.
 *   add, contains, test_and_add and the batches: one round trip per call,
 *     whatever the count (sharded: one per shard touched, all pipelined, so
 *     about one). Bitmap: the client sends the k probe positions of each key
 *     as decimal arguments (about 10 to 15 bytes each; adds send the
 *     pending rebuild's positions too), the server runs k SETBIT or up to k
 *     GETBIT per key; module: the keys themselves. The reply is about 4
 *     bytes per key. Module adds while a rebuild is pending: two round
 *     trips.
 *   create, open: a few round trips (bitmap open: one HMGET, and one read
 *     of the shard count when there is no meta hash); closes: none.
 *   stats: one round trip; bitmap: BITCOUNT, O(m) on the server.
 *   publish, fetch: ceil(bytes / a few MiB) round trips plus a few, moving
 *     the whole payload; the server copies or allocates it once.
 *   delete: two round trips (open, drop), and for the bitmap backend up
 *     to BG_REMOTE_MAX_SHARDS more (it asks for every shard name).
 *   rebuild: begin allocates the new bit array on the server; each
 *     rebuild_add_many is one round trip, as add_many. */
#ifndef BLOOMGATE_REMOTE_H
#define BLOOMGATE_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bloomgate/api.h>
#include <bloomgate/error.h>
#include <bloomgate/filter.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks this header's API. It lives in the separate library bloomgate_remote,
 * not in libbloomgate itself, hence a macro of its own (BG_API's symbols are
 * exactly libbloomgate's exports). */
#define BG_REMOTE_API BG_API_EXPORT

typedef struct bg_remote bg_remote;
typedef struct bg_remote_filter bg_remote_filter;

/* Most bits of an (unsharded) bitmap filter: 2^32, 512 MiB. */
#define BG_REMOTE_MAX_BITS (UINT64_C(1) << 32)

/* How to reach the server. Zero fields take the defaults. Initialise with
 * designated initialisers so that fields added later default to zero. */
typedef struct bg_remote_options {
    const char *host;            /* NULL: "127.0.0.1" */
    int port;                    /* 0: 6379 */
    const char *unix_socket;     /* non-NULL: this socket, not host and port */
    const char *username;        /* ACL user (Redis 6+); NULL: AUTH password */
    const char *password;        /* NULL: no AUTH */
    uint32_t connect_timeout_ms; /* 0: 2000 */
    uint32_t command_timeout_ms; /* 0: 2000; a reply slower than this: BG_ECONN */
    bool cluster;                /* true: host:port is a seed node of a Redis
                                    Cluster (SHARDING below); not with unix_socket */
    const char *seeds;           /* cluster only: more seed nodes, "HOST:PORT" items
                                    separated by ',' ("[::1]:7000" for IPv6), asked
                                    in turn when host:port does not answer; NULL:
                                    none. A bad list is BG_EINVAL. */
} bg_remote_options;

/* Connects into *out (copies the options' strings). On a connection or AUTH
 * failure *out is still set (so bg_remote_errstr can tell why; close it) and
 * the status is BG_ECONN or BG_EREMOTE; on BG_EINVAL or BG_ENOMEM *out is
 * NULL. Allocates; release with bg_remote_close. */
BG_REMOTE_API int bg_remote_connect(bg_remote **out, const bg_remote_options *opts);

/* Closes the connection and frees. NULL is allowed; `r` is dead after the
 * call. Filter handles opened on it must be closed before. */
BG_REMOTE_API void bg_remote_close(bg_remote *r);

/* Drops the connection and connects again with the same options (and AUTH).
 * BG_OK, BG_ECONN, BG_EREMOTE (AUTH refused) or BG_EINVAL. */
BG_REMOTE_API int bg_remote_reconnect(bg_remote *r);

/* The last failed call's message on this connection: the server's error
 * reply, or what broke the connection; "" after a success. Owned by `r`,
 * valid until its next call. Never NULL (a NULL r gets ""). */
BG_REMOTE_API const char *bg_remote_errstr(const bg_remote *r);

/* hiredis's reply type (<hiredis/hiredis.h>). */
struct redisReply;

/* One command of the caller's own on r, for data a program keeps in the
 * same Redis beside its filters (the guard's Redis cache adapter does):
 * argv[0..argc-1], argv[i] of lens[i] bytes, with r's timeouts, AUTH,
 * reconnect of a broken connection and, on a cluster, routing by the key
 * in argv[1] (MOVED and ASK followed). BG_OK with the reply in *reply
 * (the caller's: free it with freeReplyObject), else *reply is NULL:
 * BG_EREMOTE for an error reply (its message in bg_remote_errstr),
 * BG_ECONN (ERRORS above: not retried), BG_EINVAL or BG_ENOMEM. */
BG_REMOTE_API int bg_remote_command(bg_remote *r, int argc, const char **argv,
                                    const size_t *lens, struct redisReply **reply);

/* Which way the filter lives in Redis (see BACKENDS). */
typedef enum bg_remote_backend {
    BG_REMOTE_BITMAP = 1, /* a plain string and a hash: any Redis >= 6.2 */
    BG_REMOTE_MODULE = 2, /* BF.* commands: bloomgate.so or RedisBloom */
} bg_remote_backend;

/* How to create a remote filter. Bitmap: any two of capacity, error_rate,
 * bits and hashes, as bg_sizing_solve for the standard variant (capped at
 * BG_REMOTE_MAX_BITS), and a seed. Module: capacity and error_rate
 * (BF.RESERVE), optional expansion and nonscaling; seed, bits and hashes
 * must be 0 (the module hashes with its own). */
typedef struct bg_remote_filter_options {
    bg_remote_backend backend;
    uint64_t capacity;  /* n */
    double error_rate;  /* p */
    uint64_t bits;      /* m (bitmap) */
    uint32_t hashes;    /* k (bitmap) */
    uint64_t seed;      /* hash seed (bitmap) */
    uint32_t expansion; /* module: EXPANSION; 0: the server's default */
    bool nonscaling;    /* module: NONSCALING */
    uint32_t shards;    /* bitmap: 0 or 1 one filter; 2..BG_REMOTE_MAX_SHARDS: that
                           many sub-filters (SHARDING below) */
} bg_remote_filter_options;

/* Most shards of a sharded bitmap filter. */
#define BG_REMOTE_MAX_SHARDS 1024u

/* Creates the filter `name` (a non-empty string without '{' or '}') and
 * opens it into *out (NULL on failure). The bitmap backend makes the whole
 * bit array now (one SETRANGE at its last byte; Redis zero-fills it), then
 * writes the meta hash last, atomically refusing if another client created
 * the filter (or a sharded one of that name) meanwhile. Returns BG_OK,
 * BG_EEXIST, BG_EINVAL, the sizing errors, BG_ETOOBIG (above
 * BG_REMOTE_MAX_BITS), BG_ECONN, BG_EREMOTE or BG_ENOMEM. After a BG_ECONN
 * in the middle, an orphan bit array {name}:bits:<g> can remain, never
 * referenced by a meta hash (no reader sees it). Allocates; close with
 * bg_remote_filter_close. */
BG_REMOTE_API int bg_remote_filter_create(bg_remote_filter **out, bg_remote *r, const char *name,
                                   const bg_remote_filter_options *opts);

/* Opens an existing filter: reads and validates the server's parameters.
 * Returns BG_OK, BG_ENOTFOUND, BG_EINVAL, BG_ECONN, BG_EREMOTE, BG_ENOMEM,
 * and for the bitmap backend BG_EVERSION (a meta format this library does
 * not know), BG_EVARIANT (not a standard filter), BG_ETOOBIG (more bits than
 * BG_REMOTE_MAX_BITS) or BG_ECORRUPT (fields missing or out of range).
 * Allocates; close with bg_remote_filter_close. */
BG_REMOTE_API int bg_remote_filter_open(bg_remote_filter **out, bg_remote *r, const char *name,
                                 bg_remote_backend backend);

/* Frees the handle (the filter stays in Redis). NULL is allowed. */
BG_REMOTE_API void bg_remote_filter_close(bg_remote_filter *f);

/* Adds a key. BG_OK, or a negative status (ERRORS above, BG_ESTALE,
 * BG_ENOTFOUND, BG_EINVAL for a NULL key with len > 0). */
BG_REMOTE_API int bg_remote_filter_add(bg_remote_filter *f, const void *key, size_t len);

/* Adds a key: 1 if it was new (some bit was clear), 0 if maybe present
 * before, or a negative status. */
BG_REMOTE_API int bg_remote_filter_test_and_add(bg_remote_filter *f, const void *key, size_t len);

/* 1 if the key may be present, 0 if definitely absent, or a negative status. */
BG_REMOTE_API int bg_remote_filter_contains(bg_remote_filter *f, const void *key, size_t len);

/* Batches: one command, one round trip, atomic on the server (sharded:
 * one per shard, each atomic, SHARDING above). keys[i] points at lens[i]
 * bytes; results (may be NULL) gets one byte per key as in
 * bg_filter_add_many / bg_filter_contains_many. Return the count of new /
 * maybe-present keys, or a negative status (then results are unspecified;
 * on BG_ESTALE and BG_ENOTFOUND nothing was written, sharded: to the shard
 * that answered so; the others' parts may have been). count 0 makes no
 * round trip. */
BG_REMOTE_API int64_t bg_remote_filter_add_many(bg_remote_filter *f, const void *const *keys,
                                         const size_t *lens, size_t count, uint8_t *results);
BG_REMOTE_API int64_t bg_remote_filter_contains_many(bg_remote_filter *f, const void *const *keys,
                                              const size_t *lens, size_t count,
                                              uint8_t *results);

typedef struct bg_remote_filter_stats {
    bg_remote_backend backend;
    uint64_t bits;       /* bitmap: m; module: 0 (see bytes) */
    uint32_t hashes;     /* bitmap: k; module: 0 */
    uint64_t seed;       /* bitmap */
    uint64_t generation; /* bitmap */
    uint64_t capacity;   /* bitmap: as created (0 if sized by bits, hashes); module: BF.INFO */
    double error_rate;   /* bitmap: the model's p at capacity */
    uint64_t bytes;      /* bitmap: ceil(m / 8); module: BF.INFO Size */
    uint64_t items;      /* test-and-add 1s (bitmap: counted atomically in the meta hash) */
    uint64_t bits_set;   /* bitmap: BITCOUNT (O(m) on the server); module: 0 */
    uint32_t layers;     /* module: BF.INFO Number of filters; bitmap: 1 */
} bg_remote_filter_stats;

/* Fills *out from the server (bitmap: checks the generation, then BITCOUNT:
 * milliseconds for a large filter, call it for monitoring). Statuses as for
 * add. */
BG_REMOTE_API int bg_remote_filter_stats_get(bg_remote_filter *f, bg_remote_filter_stats *out);

/* Deletes the filter `name` on the server, whatever state it is in: the
 * filter's keys if it opens, atomically with a pending rebuild's (sharded:
 * each shard, then the count {name}:shards), and for the bitmap backend
 * also a sharded filter's count {name}:shards and every shard name:s<j>
 * still there, j < BG_REMOTE_MAX_SHARDS: those of a sharded filter that
 * lost some (a shard evicted, a drop that failed on one node), which does
 * not open, and those a sharded create or publish that failed part-way left
 * without their count. Any of these makes a create of `name` fail with
 * BG_EEXIST; after this call it can succeed (`bloomgate create --force`).
 * Asks for each of the 1024 shard names in turn: a round trip each.
 * BG_OK if anything was deleted, BG_ENOTFOUND if nothing was there, or the
 * first error (BG_ECONN, BG_EREMOTE, BG_ESTALE if the filter changed
 * between the open and the drop, BG_ECORRUPT if a key there is not a
 * filter's), after which the rest is left. */
BG_REMOTE_API int bg_remote_filter_delete(bg_remote *r, const char *name,
                                          bg_remote_backend backend);

/* Sets a time to live of ttl_ms milliseconds (>= 1) on all the filter's keys
 * at once (PEXPIRE; bitmap: atomically with the generation check). BG_OK,
 * BG_EINVAL (NULL, 0, a ttl beyond 2^62 ms; a staged module filter before
 * its commit), or the statuses of add. */
BG_REMOTE_API int bg_remote_filter_expire(bg_remote_filter *f, uint64_t ttl_ms);

/* UPLOAD AND DOWNLOAD
 *
 * Publishes the local filter `local` as a new filter `name` of the given
 * backend, replacing the one there (creating `name` if it does not exist),
 * so that readers see the old filter, then the new one, never a partial one.
 * A pending rebuild of `name` is cancelled (its commit gets BG_ESTALE).
 * `local` is borrowed for the call and must not change during it.
 *
 * Bitmap: `local` is a standard filter (else BG_EVARIANT; more bits than
 * BG_REMOTE_MAX_BITS: BG_ETOOBIG). Its payload is uploaded in steps of a few
 * MiB under a fresh bits key no reader looks at, then one script makes it
 * current (flips the meta hash's generation and parameters, items taken
 * from `local`) and deletes the previous bits; a sharded filter of that
 * name is left alone (BG_EEXIST: the new one would hide it, open finding
 * the meta hash first). A handle whose bits, hashes
 * and seed equal `local`'s goes on working across the swap, others get
 * BG_ESTALE. The upload key lives BG_REMOTE_STAGE_TTL_MS, renewed by every
 * step, until the script adopts it: after a BG_ECONN it expires by itself.
 *
 * Module (bloomgate.so; RedisBloom cannot load bloomgate's image and
 * replies an error, BG_EREMOTE): `local` is a scalable filter (else
 * BG_EVARIANT), the module's own kind, whatever its layers. Its file image
 * (<bloomgate/file.h>) is loaded with BF.LOADCHUNK, a few MiB per call,
 * under a hidden key {name}:publish:<16 hex digits> that lives
 * BG_REMOTE_STAGE_TTL_MS (renewed by every chunk); the server checks the
 * whole image before the key holds a filter. Then one script renames it
 * over `name`, keeping name's time to live; a `name` that holds another
 * kind of value is left alone (BG_EREMOTE, WRONGTYPE). Handles on `name`
 * go on working (the server keeps the parameters). On failure the hidden
 * key is deleted (after a BG_ECONN it expires by itself).
 *
 * Returns BG_OK, BG_EINVAL (NULL, a bad name, an unknown backend),
 * BG_EVARIANT, BG_ETOOBIG, BG_EEXIST (bitmap: a sharded filter, or one of
 * its shards, has that name), BG_ENOTFOUND (the upload expired before it
 * was complete), BG_ECONN, BG_EREMOTE or BG_ENOMEM. Allocates nothing that
 * outlives the call. */
BG_REMOTE_API int bg_remote_filter_publish(bg_remote *r, const char *name,
                                           bg_remote_backend backend, const bg_filter *local);

/* SHARDED PUBLISH (bitmap)
 * Uploads `count` (2..BG_REMOTE_MAX_SHARDS) local standard filters, all
 * with one seed, as the shards of the sharded filter `name` (SHARDING
 * above): shards[j] becomes `name:s<j>` through bg_remote_filter_publish,
 * and {name}:shards is written last, so a reader opens the filter only once
 * every shard is complete. shards[j] must hold exactly the keys whose
 * bg_remote_shard_of(h, count) is j, h hashed with that seed
 * (bg_filter_hash): a key added to another shard is never found, and the
 * library cannot check it. The shards need not have equal sizes; each is
 * at most BG_REMOTE_MAX_BITS. So a filter built offline (say by a service
 * from its database) can exceed one bitmap's 2^32 bits and one node's
 * memory.
 *
 * A sharded filter of `count` shards under `name` is replaced shard by
 * shard: until the last one, a reader's keys are answered by some old and
 * some new shards, each complete; handles follow each shard as for publish.
 * An unsharded filter `name`, or a sharded one with another count, is left
 * alone: BG_EEXIST. Each shard keeps its place (shard j of S) and seed, and
 * is replaced only by the same place and seed, atomically on the server:
 * else BG_EEXIST at the first such shard, writing nothing (a shard routed
 * for another count or seed would lack keys its readers look for; to
 * change the seed, drop the filter first). So clients that publish one
 * name at the same time (say, service instances starting together) with
 * other counts or seeds cannot mix their shards: the first to write shard
 * 0 keeps the name. With the same count and seed each shard is complete
 * whichever client's it is. A failed call can leave shards without
 * {name}:shards: nobody opens them, a publish again of that count and seed
 * replaces them, and bg_remote_filter_create of that name gets BG_EEXIST
 * on them (drop each `name:s<j>` as a filter of its own; `bloomgate create
 * --force` does). bg_remote_filter_publish never replaces a shard
 * (BG_EEXIST).
 *
 * Returns BG_OK, BG_EINVAL (NULL, a bad name, count out of range, seeds
 * that differ), BG_EVARIANT, BG_ETOOBIG, BG_EEXIST, BG_ECONN, BG_EREMOTE or
 * BG_ENOMEM. Allocates nothing that outlives the call. */
BG_REMOTE_API int bg_remote_filter_publish_shards(bg_remote *r, const char *name,
                                                  const bg_filter *const *shards, uint32_t count);

/* The shard (0..shards - 1) of a key hashed h, by the formula of SHARDING
 * above; 0 when shards <= 1. For building the shards of
 * bg_remote_filter_publish_shards. */
BG_REMOTE_API uint32_t bg_remote_shard_of(bg_hash h, uint32_t shards);

/* Downloads the filter into a new local filter *out, as it was at one
 * moment (NULL on failure). Free it with bg_filter_free.
 *
 * Bitmap: the current bits, in chunks of a few MiB, all of one generation
 * (if the filter is swapped or dropped meanwhile, BG_ESTALE or
 * BG_ENOTFOUND), into a standard filter with the same bits, hashes and seed
 * and the meta hash's item count. Adds during the download may or may not
 * be in it.
 *
 * Module (bloomgate.so): one script copies the filter to a hidden key
 * {name}:fetch:<16 hex digits> (COPY: the server clones the filter once, a
 * short stall and a second copy's memory until the download ends, which
 * then deletes it), read with BF.SCANDUMP into a scalable filter equal to
 * the server's at the copy: the same layers, bits and item counts, checked
 * whole by bg_filter_decode (checksum included). RedisBloom refuses to COPY
 * its filters (BG_EREMOTE), and its dump is not bloomgate's image anyway
 * (BG_EBADMAGIC). A staged handle fetches its staged filter.
 *
 * Sharded filters get BG_EINVAL (bg_remote_filter_fetch_shards). Statuses
 * as for add, plus BG_ENOMEM and the decoder's (<bloomgate/file.h> TRUST)
 * for an image Redis sent that does not decode. */
BG_REMOTE_API int bg_remote_filter_fetch(bg_remote_filter *f, bg_filter **out);

/* Downloads a sharded filter's `count` shards (count must be
 * bg_remote_filter_shards(f), else BG_EINVAL) into new local standard
 * filters out[0..count-1], each as bg_remote_filter_fetch downloads a
 * bitmap filter: one generation per shard, not one instant across shards.
 * bg_remote_filter_publish_shards takes them back, to another name or
 * another Redis (a copy, a backup). On failure every out[j] is NULL.
 * Statuses as for bg_remote_filter_fetch. */
BG_REMOTE_API int bg_remote_filter_fetch_shards(bg_remote_filter *f, bg_filter **out,
                                                uint32_t count);

/* STAGED CREATION (module backend; the bitmap backend gets BG_EINVAL: build
 * a local filter and bg_remote_filter_publish it, which is atomic too)
 *
 * Creates a filter that nobody sees until it is filled:
 *
 *   bg_remote_filter_stage(&f, r, "users", &opts);   // reserved, hidden
 *   for each batch of the source:
 *       bg_remote_filter_add_many(f, keys, lens, n, NULL);
 *   bg_remote_filter_stage_commit(f);                // now it is "users"
 *
 * stage reserves the filter (BF.RESERVE, as bg_remote_filter_create) under
 * a staging key {name}:staging:<16 random hex digits>, which no name can
 * open (names have no braces), in name's cluster slot (the hash tag). Until
 * commit, `name` does not exist: others opening it get BG_ENOTFOUND, never a
 * filter that holds only part of the source (which would answer "absent"
 * for keys it should hold). The handle adds, queries and reads stats of
 * the staged filter; abort deletes it (the creator gives up: its source
 * failed); expire is BG_EINVAL until commit.
 * commit renames the staging key to `name` in one script if `name` still
 * does not exist, and removes its time to live; the handle is then an
 * ordinary handle on `name`. If `name` was created meanwhile, commit deletes
 * the staged filter and returns BG_EEXIST (open `name` instead).
 *
 * The staging key lives BG_REMOTE_STAGE_TTL_MS, renewed by the handle's adds
 * (at most once a second, one PEXPIRE), so a staging key whose creator died
 * goes away by itself; a pause longer than that between two adds lets it
 * expire, and the next add or the commit gets BG_ENOTFOUND.
 *
 * stage: BG_OK, BG_EINVAL (bitmap backend, shards, and the arguments
 * bg_remote_filter_create refuses), BG_ECONN, BG_EREMOTE, BG_ENOMEM.
 * commit: BG_OK, BG_EEXIST, BG_ENOTFOUND (the staged filter expired or was
 * dropped), BG_EINVAL (not a staged handle, or committed already), BG_ECONN,
 * BG_EREMOTE. A commit that failed with BG_ECONN may have happened: a
 * retry commits if its request was lost, and answers BG_ENOTFOUND if it
 * ran (the staging key is gone); then open `name`, which holds the filter
 * (or, if the staged one had expired, whatever another client made).
 * abort: BG_OK (the staging key is deleted; the handle stays to be closed,
 * its operations then get BG_ENOTFOUND), BG_EINVAL (not a staged handle, or
 * committed already), BG_ECONN, BG_EREMOTE. */
#define BG_REMOTE_STAGE_TTL_MS 600000u
BG_REMOTE_API int bg_remote_filter_stage(bg_remote_filter **out, bg_remote *r, const char *name,
                                         const bg_remote_filter_options *opts);
BG_REMOTE_API int bg_remote_filter_stage_commit(bg_remote_filter *f);
BG_REMOTE_API int bg_remote_filter_stage_abort(bg_remote_filter *f);

/* REBUILD (both backends; bitmap filters sharded too)
 *
 * Refills a filter from its source of truth (to shed stale keys, or to
 * resize it) while it stays in service:
 *
 *   bg_remote_filter_rebuild_begin(f, &new_shape);  // or NULL: same shape
 *   for each batch of the source (read it AFTER begin returned):
 *       bg_remote_filter_rebuild_add_many(f, keys, lens, n, NULL);
 *   bg_remote_filter_rebuild_commit(f);              // the atomic swap
 *
 * Bitmap: begin creates an empty next generation (grown in steps of a few
 * MiB, invisible to readers) and records it in the meta hash as pending.
 * While it is pending, every add through any handle writes both the current
 * generation and the pending one, in one script (a handle that did not know
 * of the rebuild is refused by the script, reads it and retries: nothing is
 * missed). Queries read the current generation only, so they answer from a
 * complete filter throughout. commit makes the next generation current in
 * one script and deletes the old bits; handles with the old shape go on
 * working if the shape is unchanged, else they get BG_ESTALE.
 * Module: begin reserves the new filter (BF.RESERVE) under
 * {name}:rebuild:<16 hex>, named by the marker {name}:rebuild. Every add
 * asks for the marker in the same round trip (HGET before BF.INSERT,
 * pipelined); when a rebuild is pending, one script then adds the keys to
 * the filter and to the rebuild. Queries read `name`, the complete old
 * filter, until commit renames the rebuild over it in one script (keeping
 * name's time to live). Handles name only the key, so none goes stale.
 * Both: a key added before begin must come from the source, one added after
 * begin reaches both: after the commit none is missing, provided each key
 * is in the source before it is added (so that a rebuild that begins while
 * its add is under way finds it in the scan).
 *
 * begin: bitmap: `opts` NULL keeps bits, hashes, seed and capacity; else
 * they are sized as for bg_remote_filter_create (backend 0 or
 * BG_REMOTE_BITMAP). Module: `opts` gives capacity and error rate (and
 * expansion, nonscaling) as for bg_remote_filter_create (backend 0 or
 * BG_REMOTE_MODULE); NULL is BG_EINVAL, since Redis does not report a
 * filter's error rate.
 *
 * A sharded filter is rebuilt shard by shard: begin begins a rebuild on
 * every shard, rebuild_add_many sends each key to its shard's, and commit
 * swaps the shards one after another. A reader may meanwhile see some
 * shards new and others old, which never hides a key (both generations of
 * a shard hold all of its keys). Its seed chooses each key's shard, so the
 * rebuild keeps it and the number of shards (opts with another seed, or
 * other shards: BG_EINVAL); capacity and bits are split over the shards
 * as at creation. A commit that fails part-way leaves the filter correct,
 * some shards swapped: commit again to swap the rest, or abort them. It is
 * one rebuild: when a shard's is cancelled or dropped meanwhile (BG_ESTALE,
 * BG_ENOTFOUND from add or commit), or begin fails on one, the handle
 * cancels its rebuilds of the other shards (those not swapped yet) too.
 * BG_OK, BG_EEXIST (a rebuild is pending already: this handle's, or another
 * client's), the sizing errors, BG_ETOOBIG, and the statuses of add. */
BG_REMOTE_API int bg_remote_filter_rebuild_begin(bg_remote_filter *f,
                                                 const bg_remote_filter_options *opts);

/* Adds keys to the pending rebuild this handle began only (not to the
 * current filter), and renews its lease. As bg_remote_filter_add_many;
 * BG_EINVAL if this handle began no rebuild, BG_ESTALE if it was aborted,
 * committed or replaced (a publish cancels it), dropped with the filter, or
 * its lease ran out, meanwhile. */
BG_REMOTE_API int64_t bg_remote_filter_rebuild_add_many(bg_remote_filter *f,
                                                        const void *const *keys,
                                                        const size_t *lens, size_t count,
                                                        uint8_t *results);

/* Makes this handle's rebuild current, atomically. A retry after a lost
 * reply (BG_ECONN) is answered BG_OK if the first try did commit (module:
 * within the rebuild's lease after it). The handle takes the new shape and
 * generation.
 * BG_OK, BG_EINVAL (no rebuild begun here), BG_ESTALE (it was aborted or
 * replaced), BG_ENOTFOUND (the filter was dropped), BG_ECONN, BG_EREMOTE. */
BG_REMOTE_API int bg_remote_filter_rebuild_commit(bg_remote_filter *f);

/* Cancels this handle's rebuild, or, on a handle that began none, whichever
 * rebuild is pending (to clean up at once after a rebuilder that died,
 * without waiting for its lease). Deletes its bits (module: its filter).
 * Sharded, after a commit that failed part-way: the shards this handle has
 * not swapped yet only (the others' pending rebuilds, if any, are another
 * client's).
 * BG_OK, BG_ENOTFOUND (no such rebuild pending), BG_ECONN, BG_EREMOTE. */
BG_REMOTE_API int bg_remote_filter_rebuild_abort(bg_remote_filter *f);

/* THE REBUILD'S LEASE
 * A pending rebuild makes every add write twice, so one whose rebuilder died
 * must not stay pending for ever. begin gives it a lease of lease_ms on the
 * server's clock, and each rebuild_add_many renews it; once it has run out,
 * bitmap: the next add (from any client) or begin deletes the rebuild;
 * module: Redis expires the marker and the rebuild's filter together (both
 * have the lease as time to live). The late rebuilder's next call gets
 * BG_ESTALE (start again). Until then a late
 * rebuilder loses nothing: adds wrote both generations throughout. So the
 * lease must be longer than the longest pause between two rebuild_add_many
 * calls (reading a page of the source, say), not than the whole rebuild.
 * Sets the lease of the rebuilds this handle begins from now on.
 * A sharded filter gives it to every shard's rebuild. BG_OK, or BG_EINVAL
 * (0, or above BG_REMOTE_MAX_REBUILD_LEASE_MS). */
#define BG_REMOTE_REBUILD_LEASE_MS 60000u
#define BG_REMOTE_MAX_REBUILD_LEASE_MS (UINT64_C(7) * 24 * 3600 * 1000)
BG_REMOTE_API int bg_remote_filter_set_rebuild_lease(bg_remote_filter *f, uint64_t lease_ms);

/* Cheap accessors of what the handle opened (no round trip); 0 for NULL.
 * The module backend has no bits, hashes, seed or generation (0). */
BG_REMOTE_API bg_remote_backend bg_remote_filter_backend(const bg_remote_filter *f);
BG_REMOTE_API uint64_t bg_remote_filter_bits(const bg_remote_filter *f);
BG_REMOTE_API uint32_t bg_remote_filter_hashes(const bg_remote_filter *f);
BG_REMOTE_API uint64_t bg_remote_filter_seed(const bg_remote_filter *f);
BG_REMOTE_API uint64_t bg_remote_filter_generation(const bg_remote_filter *f);
/* How many shards the filter has (SHARDING): S for a sharded one, whose
 * generation is then 0 (each shard has its own), 1 otherwise; 0 for NULL. */
BG_REMOTE_API uint32_t bg_remote_filter_shards(const bg_remote_filter *f);

#ifdef __cplusplus
}
#endif

#endif
