/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal to bloomgate_remote: the connection and filter handles, and the
 * helpers every backend uses. Not API. */
#ifndef BG_REMOTE_INTERNAL_H
#define BG_REMOTE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include <bloomgate/hash.h>
#include <bloomgate/remote.h>

#include "remote_testing.h" /* the hooks of the testing build (BG_TESTING) */

#define BG__REMOTE_ERRSTR 256

/* The Lua scripts: the bitmap backend's (bitmap.c), then the module
 * backend's (module.c). Their SHA1s are cached per connection handle
 * (MODULE_STAGE's is not: it goes once per staged filter, by EVAL). Each is
 * a file, src/remote/lua/<name>.lua for BG__SCRIPT_<NAME>, embedded by the
 * build as bg__script_src (docs/PROTOCOL.md specifies the bitmap ones). */
enum {
    BG__SCRIPT_ADD_BITFIELD,
    BG__SCRIPT_GET_BITFIELD,
    BG__SCRIPT_ADD_SETBIT,
    BG__SCRIPT_GET_SETBIT,
    BG__SCRIPT_CREATE,
    BG__SCRIPT_STATS,
    BG__SCRIPT_DROP,
    BG__SCRIPT_EXPIRE,
    BG__SCRIPT_PUBLISH,
    BG__SCRIPT_FETCH,
    BG__SCRIPT_REBUILD_BEGIN,
    BG__SCRIPT_REBUILD_ADD,
    BG__SCRIPT_REBUILD_COMMIT,
    BG__SCRIPT_REBUILD_ABORT,
    BG__SCRIPT_MODULE_QUERY,
    BG__SCRIPT_MODULE_ADD_BOTH,
    BG__SCRIPT_MODULE_REBUILD_BEGIN,
    BG__SCRIPT_MODULE_REBUILD_ADD,
    BG__SCRIPT_MODULE_REBUILD_COMMIT,
    BG__SCRIPT_MODULE_REBUILD_ABORT,
    BG__SCRIPT_MODULE_DROP,
    BG__SCRIPT_MODULE_PUBLISH_CHUNK,
    BG__SCRIPT_MODULE_PUBLISH_COMMIT,
    BG__SCRIPT_MODULE_FETCH_COPY,
    BG__SCRIPT_MODULE_STAGE_COMMIT,
    BG__SCRIPT_MODULE_STAGE,
    BG__SCRIPTS
};

/* The scripts' sources, by index (generated from src/remote/lua/). */
extern const char *const bg__script_src[BG__SCRIPTS];

/* One master of a cluster (cluster.c, CLUSTER ROUTING). */
typedef struct bg__node {
    char *host;
    int port;
    redisContext *c;   /* NULL until first used, or after it broke */
    unsigned failures; /* connects failed in a row (HELD-DOWN MASTERS, cluster.c) */
    uint64_t retry_at; /* no connect before this (monotonic ms); 0: any time */
    char why[BG__REMOTE_ERRSTR]; /* the last failed connect's message */
} bg__node;

#define BG__SLOTS 16384
#define BG__NO_NODE UINT16_MAX

struct bg_remote {
    redisContext *c;      /* NULL while disconnected; cluster: the last node used */
    int broken;           /* the next call reconnects first */
    char *host, *unix_socket, *username, *password;
    int port;
    uint32_t connect_timeout_ms, command_timeout_ms;
    char errstr[BG__REMOTE_ERRSTR];
    char sha[BG__SCRIPTS][41]; /* SCRIPT LOAD results; "" until loaded */
    int cluster;               /* route by slot (the fields below) */
    bg__node *nodes;           /* cluster: the masters known so far */
    size_t nnodes;
    uint16_t *slot_node;       /* cluster: BG__SLOTS node indices, or BG__NO_NODE */
    uint64_t slots_read_at;    /* cluster: CLUSTER SLOTS last read for a down master */
    int query_script;          /* module queries by script: no BG.MEXISTS here (module.c) */
    /* REPLY LIMITS (connection.c): every context's reader builds arrays
     * through reply_fn, whose createArray refuses more than array_cap
     * elements (and notes the count in array_refused). */
    redisReplyObjectFunctions reply_fn;
    void *(*hiredis_create_array)(const redisReadTask *, int);
    size_t array_cap;
    long long array_refused; /* -1: none refused */
#ifdef BG_TESTING
    bg__remote_testing_conn testing; /* counters and the bench's switch (remote_testing.h) */
#endif
};

/* The most elements any array reply may have outside a batch (CLUSTER SLOTS
 * has at most 16384 ranges; everything else is far smaller). */
#define BG__ARRAY_CAP 65536u

/* Lets array replies have up to `count` + 2 elements (a batch's results and
 * a generation), or back to BG__ARRAY_CAP for count 0. */
void bg__remote_allow_array(bg_remote *r, size_t count);


/* One command on c (after ASKING when `asking`), one reply into *reply.
 * BG_OK or BG_ECONN; the caller decides what a broken context means. */
int bg__remote_exchange(bg_remote *r, redisContext *c, int asking, int argc, const char **argv,
                        const size_t *lens, redisReply **reply);

/* Connects to host:port (or the socket) and authenticates, into *out. */
int bg__remote_open_context(bg_remote *r, const char *host, int port, const char *unix_socket,
                            redisContext **out);

/* CLUSTER ROUTING (cluster.c) */

/* The cluster slot of a key: CRC16 (XMODEM) of its hash tag, mod 16384. */
unsigned bg__key_slot(const char *key, size_t len);

/* Sets up the slot map and the nodes: the seed host:port, then `seeds`
 * (a "HOST:PORT,..." list, may be NULL). BG_OK, BG_EINVAL (a bad list) or
 * BG_ENOMEM; bg__cluster_free frees what it made either way. */
int bg__cluster_init(bg_remote *r, const char *seeds);

/* Closes every master's connection, forgets the holds and reads the slot
 * map again from the seeds. */
int bg__cluster_connect(bg_remote *r);

void bg__cluster_free(bg_remote *r);

/* One command to its key's master, following redirections. */
int bg__cluster_command(bg_remote *r, int argc, const char **argv, const size_t *lens,
                        redisReply **reply);

/* Into *node, the master of the command's key, connected (for a fanout:
 * BG_EINVAL for a keyless command). */
int bg__cluster_route(bg_remote *r, int argc, const char **argv, const size_t *lens, size_t *node);

/* Closes master i's connection (r->c too if it is that one). */
void bg__cluster_node_close(bg_remote *r, size_t i);

/* FILTER HANDLES
 * A handle is one of three kinds, each a private struct whose first member
 * is struct bg_remote_filter: a bitmap filter (bitmap.h), a module filter
 * (module.c) or a sharded filter of S bitmap handles (sharded.c). The
 * constructor (create, open, stage) picks the kind and sets `ops`; every
 * other call goes through it, so no call outside a constructor asks which
 * kind a handle is. A NULL entry is an operation the kind does not have
 * (the public call returns BG_EINVAL). */
typedef struct bg__remote_filter_ops {
    /* A batch of count >= 1 keys, checked (add: 1 adds, 0 queries). */
    int64_t (*run)(bg_remote_filter *f, int add, const void *const *keys, const size_t *lens,
                   size_t count, uint8_t *results);
    int (*stats)(bg_remote_filter *f, bg_remote_filter_stats *out);
    int (*drop)(bg_remote_filter *f);
    int (*expire)(bg_remote_filter *f, uint64_t ttl_ms);
    int (*fetch)(bg_remote_filter *f, bg_filter **out);
    /* out[0..count-1] are NULL on entry; count is the handle's shards. */
    int (*fetch_shards)(bg_remote_filter *f, bg_filter **out, uint32_t count);
    int (*rebuild_begin)(bg_remote_filter *f, const bg_remote_filter_options *o);
    int64_t (*rebuild_add)(bg_remote_filter *f, const void *const *keys, const size_t *lens,
                           size_t count, uint8_t *results);
    int (*rebuild_commit)(bg_remote_filter *f);
    int (*rebuild_abort)(bg_remote_filter *f);
    int (*stage_commit)(bg_remote_filter *f);
    /* Frees the handle and all it owns (never touches the server). */
    void (*close)(bg_remote_filter *f);
} bg__remote_filter_ops;

/* What every kind of handle has: the first member of each. The shape is
 * what the accessors report (module: capacity and error rate only). */
struct bg_remote_filter {
    const bg__remote_filter_ops *ops;
    bg_remote *r;
    bg_remote_backend backend;
    uint32_t shards; /* 1, or a sharded filter's S */
    uint64_t m, seed, generation, capacity;
    uint32_t k;
    double error_rate;
    uint64_t rb_lease_ms; /* the lease of the rebuilds it begins */
#ifdef BG_TESTING
    bg__remote_testing_bitmap_mode testing_mode; /* bitmap: the bench's (remote_testing.h) */
#endif
};

/* Sets r->errstr (printf-style, truncated) and returns status. */
int bg__remote_fail(bg_remote *r, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Reconnects first if the connection is broken. BG_OK or BG_ECONN. */
int bg__remote_ready(bg_remote *r);

/* One command from argv, one reply into *reply (caller frees it with
 * freeReplyObject). An error reply is returned as BG_EREMOTE (message kept,
 * reply freed, *reply NULL) unless keep_errors is set (then BG_OK and the
 * reply is the caller's). */
int bg__remote_command(bg_remote *r, int argc, const char **argv, const size_t *lens,
                       redisReply **reply, int keep_errors);

/* DEL key; *deleted (may be NULL) says whether it was there. BG_OK or the
 * command's status. */
int bg__remote_del(bg_remote *r, const char *key, int *deleted);

/* One command of a fanout: argv in, reply out (the caller frees it). */
typedef struct bg__call {
    int argc;
    const char **argv;
    const size_t *lens;
    redisReply *reply; /* NULL: not executed (a redirection): send it again alone */
} bg__call;

/* Sends all n calls, each to its key's master, before reading any reply
 * (PIPELINING ACROSS MASTERS in connection.c). BG_OK (each call has its
 * reply, error replies included, or NULL to resend), or BG_ECONN / BG_ENOMEM
 * / BG_EREMOTE with no replies kept. */
int bg__remote_fanout(bg_remote *r, bg__call *calls, size_t n);

/* Learns script idx's SHA1 into r->sha[idx] (SCRIPT LOAD) unless known. */
int bg__remote_load_script(bg_remote *r, int idx, const char *src);

/* Runs script `idx`, whose source is `src`: argv[0..1] are left for
 * "EVALSHA" and the SHA1 (or "EVAL" and the source after NOSCRIPT), then
 * argv[2] is the number of keys, the keys and the arguments. An error reply
 * is returned as its status (bg__remote_error_reply); else *reply is the
 * caller's (freeReplyObject). The testing build's fault hook may lose the
 * request or the reply (remote_testing.h, FAULT INJECTION). */
int bg__remote_script(bg_remote *r, int idx, const char *src, int argc, const char **argv,
                      size_t *lens, redisReply **reply);

/* Best-effort UNLINK of a key no reader looks at (an upload, a copy, an
 * orphan bit array) after a call that ended with `status`, keeping errstr
 * (the first error is the one to report). Nothing after BG_ECONN: the
 * connection is gone, and the key's lease (or the orphan's note) covers it. */
void bg__remote_discard(bg_remote *r, const char *key, int status);

/* Maps an error reply to a status: our scripts' BGSTALE / BGNOTFOUND /
 * BGEXISTS prefixes, else BG_EREMOTE. Keeps the message in r->errstr. */
int bg__remote_error_reply(bg_remote *r, const redisReply *reply);

/* Parses a whole decimal uint64. 0 on success, -1 if not one. */
int bg__parse_u64(const char *s, size_t len, uint64_t *out);

/* Deletes the filter this handle is on (its kind's drop): only if the
 * handle is not stale (bitmap: BG_ESTALE, nothing deleted). The handle
 * stays to be closed. bg_remote_filter_delete and stage_abort use it; the
 * tests use it to delete exactly the filter they opened. */
int bg__remote_filter_drop(bg_remote_filter *f);

/* Constructors of the backends. Each allocates a handle of its kind into
 * *out (NULL on failure; close with bg_remote_filter_close). */
/* `place`: NULL for a filter of its own, or a shard's place "j/S" (shard
 * j of S), kept in its meta hash as `shard` (bitmap.c, SHARD PLACES). */
int bg__bitmap_create(bg_remote_filter **out, bg_remote *r, const char *name,
                      const bg_remote_filter_options *o, const char *place);
int bg__bitmap_open(bg_remote_filter **out, bg_remote *r, const char *name);
int bg__bitmap_publish(bg_remote *r, const char *name, const bg_filter *local, const char *place);

int bg__module_create(bg_remote_filter **out, bg_remote *r, const char *name,
                      const bg_remote_filter_options *o);
int bg__module_stage(bg_remote_filter **out, bg_remote *r, const char *name,
                     const bg_remote_filter_options *o);
int bg__module_open(bg_remote_filter **out, bg_remote *r, const char *name);
int bg__module_publish(bg_remote *r, const char *name, const bg_filter *local);

/* Sharded filters (sharded.c): o->shards > 1. */
int bg__sharded_create(bg_remote_filter **out, bg_remote *r, const char *name,
                       const bg_remote_filter_options *o);
int bg__sharded_open(bg_remote_filter **out, bg_remote *r, const char *name);
int bg__sharded_publish(bg_remote *r, const char *name, const bg_filter *const *shards,
                        uint32_t count);
/* Deletes whatever shards of `name` there are, by name (for destroy);
 * *found is set if any was. */
int bg__sharded_delete_leftovers(bg_remote *r, const char *name, int *found);
uint32_t bg__shard_of(const bg_hash *h, uint32_t shards);

/* A random number in [1, 2^63): getrandom, or the clock and pid (bitmap.c). */
uint64_t bg__random_u63(void);

#endif
