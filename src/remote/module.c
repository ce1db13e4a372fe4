/* The module backend: RedisBloom's BF.* commands, answered by bloomgate.so
 * or RedisBloom. The server keeps the parameters (and scales the filter), so
 * there is nothing to go stale: the key `name` is the filter (a staged one's
 * is its staging key until commit: STAGED CREATION below). */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <bloomgate/file.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "remote_internal.h"

/* A module filter's handle. The server keeps the shape; base holds the
 * capacity and error rate it was created (or rebuilt) with. */
typedef struct bg__module_filter {
    bg_remote_filter base;
    char *name;             /* the key (a staged filter's staging key) */
    char *final_name;       /* staged: the name commit gives it; else NULL */
    uint64_t stage_touched; /* staged: when its TTL was last renewed (ms) */
    char *rb_marker;        /* {name}:rebuild, which names a pending rebuild */
    char *rb_key;           /* the rebuild this handle began: its key; else NULL */
    uint64_t rb_capacity;   /* ... and its shape */
    double rb_error_rate;
} bg__module_filter;

static bg__module_filter *module_of(bg_remote_filter *f)
{
    return (bg__module_filter *)(void *)f;
}

/* A staged handle's operations until its commit, then an ordinary one's. */
static const bg__remote_filter_ops module_ops, staged_ops;

static char *marker_key(const char *name);

static int module_new(bg__module_filter **out, bg_remote *r, const char *name)
{
    bg__module_filter *f = bg__calloc(1, sizeof *f);
    if (!f)
        return BG_ENOMEM;
    f->base.ops = &module_ops;
    f->base.r = r;
    f->base.backend = BG_REMOTE_MODULE;
    f->base.shards = 1;
    f->base.rb_lease_ms = BG_REMOTE_REBUILD_LEASE_MS;
    f->name = bg__strdup(name);
    f->rb_marker = marker_key(name);
    if (!f->name || !f->rb_marker) {
        bg_remote_filter_close(&f->base);
        return BG_ENOMEM;
    }
    *out = f;
    return BG_OK;
}

/* Runs fill on a new handle on `name`: *out is the handle, or NULL. */
static int construct(bg_remote_filter **out, bg_remote *r, const char *name,
                     const bg_remote_filter_options *o,
                     int (*fill)(bg__module_filter *, const bg_remote_filter_options *))
{
    bg__module_filter *f;
    int rc = module_new(&f, r, name);
    if (rc == BG_OK && (rc = fill(f, o)) != BG_OK) {
        bg_remote_filter_close(&f->base);
        return rc;
    }
    if (rc == BG_OK)
        *out = &f->base;
    return rc;
}

static int not_found(bg__module_filter *f, int rc)
{
    const char *e = f->base.r->errstr;
    if (rc == BG_EREMOTE && (strstr(e, "not found") || strstr(e, "not exist")))
        return BG_ENOTFOUND;
    return rc;
}

/* BF.RESERVE's arguments after the key: error rate, capacity, then
 * EXPANSION e and NONSCALING as asked. */
typedef struct reserve_args {
    const char *argv[5];
    size_t lens[5];
    int argc;
    char p[40], n[24], e[16];
} reserve_args;

static int reserve_args_make(reserve_args *a, const bg_remote_filter_options *o)
{
    if (o->bits || o->hashes || o->seed || !o->capacity || !(o->error_rate > 0 && o->error_rate < 1))
        return BG_EINVAL;
    snprintf(a->p, sizeof a->p, "%.17g", o->error_rate);
    snprintf(a->n, sizeof a->n, "%" PRIu64, o->capacity);
    a->argc = 0;
    a->argv[a->argc++] = a->p;
    a->argv[a->argc++] = a->n;
    if (o->expansion) {
        snprintf(a->e, sizeof a->e, "%" PRIu32, o->expansion);
        a->argv[a->argc++] = "EXPANSION";
        a->argv[a->argc++] = a->e;
    }
    if (o->nonscaling)
        a->argv[a->argc++] = "NONSCALING";
    for (int i = 0; i < a->argc; i++)
        a->lens[i] = strlen(a->argv[i]);
    return BG_OK;
}

static int create(bg__module_filter *f, const bg_remote_filter_options *o)
{
    reserve_args a;
    int rc = reserve_args_make(&a, o);
    if (rc != BG_OK)
        return rc;
    const char *argv[7] = {"BF.RESERVE", f->name};
    size_t lens[7] = {10, strlen(f->name)};
    memcpy(argv + 2, a.argv, (size_t)a.argc * sizeof *argv);
    memcpy(lens + 2, a.lens, (size_t)a.argc * sizeof *lens);
    redisReply *rep;
    rc = bg__remote_command(f->base.r, a.argc + 2, argv, lens, &rep, 0);
    if (rc == BG_EREMOTE && strstr(f->base.r->errstr, "exists"))
        return BG_EEXIST;
    if (rc != BG_OK)
        return rc;
    freeReplyObject(rep);
    f->base.capacity = o->capacity;
    f->base.error_rate = o->error_rate;
    return BG_OK;
}

/* Runs script idx (src/remote/lua/module_<name>.lua): bg__remote_script. */
static int run_script(bg_remote *r, int idx, int argc, const char **argv, size_t *lens,
                      redisReply **rep)
{
    return bg__remote_script(r, idx, bg__script_src[idx], argc, argv, lens, rep);
}

/* STAGED CREATION (remote.h)
 * The filter is reserved under {name}:staging:<16 hex digits> with a time to
 * live, in one script, so that no staging key is ever left without one. A
 * name has no braces, so name's cluster slot is CRC16(name), the same as the
 * staging key's (its hash tag is name): commit's script may touch both.
 * commit renames it to name unless name exists (RENAME keeps the module's
 * value; PERSIST drops the staging TTL), all in one script, so two creators
 * racing cannot both win, and a reader sees either no filter or a complete
 * one. Scripts replicate their effects, so replicas see the same. */
#define BG__STAGE_RENEW_MS 1000u

/* A key no name can open, in name's cluster slot: {name}:<what>:<16 hex
 * digits>, random. NULL if out of memory. */
static char *hidden_key(const char *name, const char *what)
{
    size_t n = strlen(name) + strlen(what) + 22;
    char *key = bg__malloc(n);
    if (key)
        snprintf(key, n, "{%s}:%s:%016" PRIx64, name, what, bg__random_u63());
    return key;
}

static char *marker_key(const char *name)
{
    size_t n = strlen(name) + 11;
    char *key = bg__malloc(n);
    if (key)
        snprintf(key, n, "{%s}:rebuild", name);
    return key;
}

static int stage(bg__module_filter *f, const bg_remote_filter_options *o)
{
    reserve_args a;
    int rc = reserve_args_make(&a, o);
    if (rc != BG_OK)
        return rc;
    char *staging = hidden_key(f->name, "staging");
    if (!staging)
        return BG_ENOMEM;
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%u", BG_REMOTE_STAGE_TTL_MS);
    const char *src = bg__script_src[BG__SCRIPT_MODULE_STAGE];
    const char *argv[10] = {"EVAL", src, "1", staging, ttl};
    size_t lens[10] = {4, strlen(src), 1, strlen(staging), strlen(ttl)};
    memcpy(argv + 5, a.argv, (size_t)a.argc * sizeof *argv);
    memcpy(lens + 5, a.lens, (size_t)a.argc * sizeof *lens);
    redisReply *rep;
    rc = bg__remote_command(f->base.r, a.argc + 5, argv, lens, &rep, 0);
    if (rc != BG_OK) {
        bg__free(staging);
        return rc;
    }
    freeReplyObject(rep);
    f->final_name = f->name;
    f->name = staging;
    f->stage_touched = bg__now_ms();
    f->base.ops = &staged_ops;
    f->base.capacity = o->capacity;
    f->base.error_rate = o->error_rate;
    return BG_OK;
}

static int module_stage_commit(bg_remote_filter *handle)
{
    bg__module_filter *f = module_of(handle);
    const char *argv[5] = {NULL, NULL, "2", f->name, f->final_name};
    size_t lens[5] = {0, 0, 1, strlen(f->name), strlen(f->final_name)};
    redisReply *rep;
    int rc = run_script(f->base.r, BG__SCRIPT_MODULE_STAGE_COMMIT, 5, argv, lens, &rep);
    if (rc != BG_OK)
        return rc;
    long long won = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -2;
    freeReplyObject(rep);
    if (won == -1)
        return bg__remote_fail(f->base.r, BG_ENOTFOUND,
                               "the staged filter for %s expired or was dropped", f->final_name);
    if (won == 0)
        return bg__remote_fail(f->base.r, BG_EEXIST, "%s was created meanwhile", f->final_name);
    if (won != 1)
        return bg__remote_fail(f->base.r, BG_EREMOTE, "unexpected reply to the staging commit");
    bg__free(f->name);
    f->name = f->final_name;
    f->final_name = NULL;
    f->base.ops = &module_ops;
    return BG_OK;
}

/* `cmd name [arg]`, a command with an integer reply that is 0 when the key
 * does not exist (DEL, PEXPIRE): BG_OK, BG_ENOTFOUND (no message set), or
 * the command's status. */
static int key_command(bg__module_filter *f, const char *cmd, const char *arg)
{
    const char *argv[3] = {cmd, f->name, arg};
    size_t lens[3] = {strlen(cmd), strlen(f->name), arg ? strlen(arg) : 0};
    redisReply *rep;
    int rc = bg__remote_command(f->base.r, arg ? 3 : 2, argv, lens, &rep, 0);
    if (rc != BG_OK)
        return rc;
    long long n = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
    freeReplyObject(rep);
    return n ? BG_OK : BG_ENOTFOUND;
}

static int pexpire(bg__module_filter *f, uint64_t ttl_ms)
{
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%" PRIu64, ttl_ms);
    return key_command(f, "PEXPIRE", ttl);
}

/* Renews a staged filter's time to live, at most once per
 * BG__STAGE_RENEW_MS (after an add: the key exists). */
static int stage_renew(bg__module_filter *f)
{
    uint64_t now = bg__now_ms();
    if (now - f->stage_touched < BG__STAGE_RENEW_MS)
        return BG_OK;
    int rc = pexpire(f, BG_REMOTE_STAGE_TTL_MS);
    if (rc == BG_ENOTFOUND)
        return bg__remote_fail(f->base.r, BG_ENOTFOUND,
                               "the staged filter for %s expired or was dropped", f->final_name);
    if (rc == BG_OK)
        f->stage_touched = now;
    return rc;
}

/* BF.INFO name: alternating field names and integers. */
static int info(bg__module_filter *f, bg_remote_filter_stats *out)
{
    const char *argv[2] = {"BF.INFO", f->name};
    size_t lens[2] = {7, strlen(f->name)};
    redisReply *rep;
    int rc = bg__remote_command(f->base.r, 2, argv, lens, &rep, 0);
    if (rc != BG_OK)
        return not_found(f, rc);
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements % 2) {
        freeReplyObject(rep);
        return bg__remote_fail(f->base.r, BG_EREMOTE, "BF.INFO: unexpected reply");
    }
    for (size_t i = 0; i + 1 < rep->elements; i += 2) {
        const redisReply *name = rep->element[i], *v = rep->element[i + 1];
        if (name->type != REDIS_REPLY_STRING && name->type != REDIS_REPLY_STATUS)
            continue;
        uint64_t x = v->type == REDIS_REPLY_INTEGER && v->integer > 0 ? (uint64_t)v->integer : 0;
        if (strcmp(name->str, "Capacity") == 0)
            out->capacity = x;
        else if (strcmp(name->str, "Size") == 0)
            out->bytes = x;
        else if (strcmp(name->str, "Number of filters") == 0)
            out->layers = (uint32_t)(x > UINT32_MAX ? UINT32_MAX : x);
        else if (strcmp(name->str, "Number of items inserted") == 0)
            out->items = x;
    }
    freeReplyObject(rep);
    return BG_OK;
}

static int open_info(bg__module_filter *f, const bg_remote_filter_options *o)
{
    (void)o;
    bg_remote_filter_stats st = {0};
    int rc = info(f, &st);
    if (rc == BG_OK)
        f->base.capacity = st.capacity;
    return rc;
}

static int module_stats(bg_remote_filter *handle, bg_remote_filter_stats *out)
{
    bg__module_filter *f = module_of(handle);
    int rc = info(f, out);
    if (rc == BG_OK)
        out->error_rate = f->base.error_rate;
    return rc;
}

/* REBUILD (remote.h)
 * A rebuild is a second filter, {name}:rebuild:<16 hex digits>, reserved
 * with the new shape and named by the marker {name}:rebuild (a hash: key,
 * lease). Both live for the lease, renewed by every rebuild_add; they are
 * set in one script, so they expire together (a script sees one frozen
 * clock) and a dead rebuilder's rebuild goes away by itself. Commit renames
 * the rebuild over `name` in one script, so readers switch from the
 * complete old filter to the complete new one at once, and leaves the
 * marker holding only `done` (the rebuild's key) for a lease: a commit
 * retried after its reply was lost finds it and succeeds, as the bitmap
 * backend's does (its generation says the same). All three keys have
 * name's cluster slot (names have no braces).
 *
 * ADDS WHILE A REBUILD IS PENDING
 * A key added after the rebuild began must reach the rebuild too: the scan
 * of the source may have passed it. An add sends HGET marker and BF.INSERT
 * name in one round trip (pipelined, in that order). If the marker was
 * absent when Redis ran the HGET, any rebuild begins after it, so after the
 * key went into the source (its caller's contract: a key is in the source
 * before it is added), and that rebuild's scan finds the key. If the marker
 * was present, one script adds the key to name and to whichever rebuild is
 * pending when it runs; if the rebuild was committed meanwhile, name is the
 * new filter and gets the key. No rebuild pending, adds cost what they did
 * (BF.INSERT plus an HGET in the same round trip); RedisBloom's filters are
 * rebuilt the same way (plain commands inside the scripts).
 *
 * The scripts are src/remote/lua/module_<name>.lua (BG__SCRIPT_MODULE_<NAME>),
 * each with its KEYS, ARGV, reply and errors. */

/* QUERIES
 * BF.MEXISTS answers 0 for every key when the filter is missing, and, as
 * RedisBloom does, when the key holds another type: a reader would take a
 * dropped, flushed, evicted or overwritten filter for "every key is
 * absent", and a guard would turn that outage into "not found". So a query
 * is BG.MEXISTS, bloomgate.so's BF.MEXISTS that answers ERR not found and
 * WRONGTYPE instead (src/redis_module/commands.c). A server without it
 * (RedisBloom) or a user not allowed it gets a script instead
 * (module_query.lua), which looks at the key's type and asks BF.MEXISTS in
 * the same atomic step (a pipelined TYPE beside a BF.MEXISTS would leave a
 * window between the two in which the filter could go or come); the handle
 * remembers to use it.
 * The script costs the server about three times the command's work (100
 * keys: ~46,000 calls/s against ~135,000 on one core, redis-benchmark;
 * docs/REMOTE.md). */

static int script(bg__module_filter *f, int idx, int argc, const char **argv, size_t *lens,
                  redisReply **rep)
{
    return not_found(f, run_script(f->base.r, idx, argc, argv, lens, rep));
}

/* A batch's reply: one integer per key. Returns the hits, or a status. */
static int64_t batch_results(bg__module_filter *f, const redisReply *rep, size_t count,
                             uint8_t *results)
{
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements > count)
        return bg__remote_fail(f->base.r, BG_EREMOTE, "unexpected reply to a batch");
    /* A non-scaling filter that fills up mid-batch answers the items it took
     * and then the error, and stops (RedisBloom's BF.MADD / BF.INSERT): a
     * shorter array must end in that error, which is the answer. */
    if (rep->elements < count &&
        (rep->elements == 0 || rep->element[rep->elements - 1]->type != REDIS_REPLY_ERROR))
        return bg__remote_fail(f->base.r, BG_EREMOTE, "unexpected reply to a batch");
    int64_t hits = 0;
    for (size_t i = 0; i < rep->elements; i++) {
        const redisReply *e = rep->element[i];
        if (e->type == REDIS_REPLY_ERROR)
            return bg__remote_error_reply(f->base.r, e);
        int v = e->type == REDIS_REPLY_INTEGER && e->integer != 0;
        hits += v;
        if (results)
            results[i] = (uint8_t)v;
    }
    return hits;
}

/* argv/lens with `head` slots first, then the keys. */
typedef struct key_args {
    const char **argv;
    size_t *lens;
    int argc;
} key_args;

static int key_args_make(key_args *a, size_t head, const void *const *keys, const size_t *lens,
                         size_t count)
{
    if (count > (size_t)INT32_MAX - head)
        return BG_EOVERFLOW;
    a->argc = (int)(head + count);
    a->argv = bg__malloc((head + count) * sizeof *a->argv);
    a->lens = bg__malloc((head + count) * sizeof *a->lens);
    if (!a->argv || !a->lens) {
        bg__free(a->argv);
        bg__free(a->lens);
        return BG_ENOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        a->argv[head + i] = keys[i] ? keys[i] : "";
        a->lens[head + i] = lens[i];
    }
    return BG_OK;
}

static void key_args_free(key_args *a)
{
    bg__free(a->argv);
    bg__free(a->lens);
}

static void set_arg(key_args *a, int i, const char *s)
{
    a->argv[i] = s;
    a->lens[i] = strlen(s);
}

/* The add of a filter that may be rebuilt (ADDS WHILE A REBUILD IS PENDING):
 * HGET marker and BF.INSERT pipelined; the script when a rebuild is pending
 * (or when a cluster redirection separated the two). */
static int64_t add_checked(bg__module_filter *f, key_args *ins, size_t count, uint8_t *results)
{
    const char *hget[3] = {"HGET", f->rb_marker, "key"};
    size_t hlen[3] = {4, strlen(f->rb_marker), 3};
    bg__call calls[2] = {{3, hget, hlen, NULL}, {ins->argc, ins->argv, ins->lens, NULL}};
    int rc = bg__remote_fanout(f->base.r, calls, 2);
    if (rc != BG_OK)
        return rc;
    int64_t hits = BG_OK;
    int pending = 1;
    const redisReply *m = calls[0].reply, *b = calls[1].reply;
    if (m && m->type == REDIS_REPLY_ERROR)
        hits = bg__remote_error_reply(f->base.r, m);
    else if (b && b->type == REDIS_REPLY_ERROR)
        hits = not_found(f, bg__remote_error_reply(f->base.r, b));
    else if (m && b) {
        pending = m->type != REDIS_REPLY_NIL;
        hits = batch_results(f, b, count, results);
    }
    int redirected = !m || !b;
    for (int i = 0; i < 2; i++)
        if (calls[i].reply)
            freeReplyObject(calls[i].reply);
    if (hits < 0 || !pending)
        return hits;

    key_args both;
    if ((rc = key_args_make(&both, 5, (const void *const *)(ins->argv + 4), ins->lens + 4,
                                count)) != BG_OK)
        return rc;
    set_arg(&both, 2, "2");
    set_arg(&both, 3, f->name);
    set_arg(&both, 4, f->rb_marker);
    redisReply *rep;
    rc = script(f, BG__SCRIPT_MODULE_ADD_BOTH, both.argc, both.argv, both.lens, &rep);
    key_args_free(&both);
    if (rc != BG_OK)
        return rc;
    if (redirected)
        hits = batch_results(f, rep, count, results);
    freeReplyObject(rep);
    return hits;
}

/* Whether a query's error says this server or user cannot run BG.MEXISTS
 * (QUERIES): Redis's unknown-command and ACL errors. */
static int no_bg_mexists(const char *e)
{
    return strncmp(e, "ERR unknown command", 19) == 0 || strncmp(e, "NOPERM", 6) == 0;
}

/* QUERIES: `a` has the keys after 4 free slots. */
static int64_t query(bg__module_filter *f, key_args *a, size_t count, uint8_t *results)
{
    redisReply *rep;
    int64_t hits = BG_EREMOTE;
    if (!f->base.r->query_script) {
        set_arg(a, 2, "BG.MEXISTS");
        set_arg(a, 3, f->name);
        hits = not_found(f, bg__remote_command(f->base.r, a->argc - 2, a->argv + 2, a->lens + 2,
                                               &rep, 0));
        if (hits == BG_EREMOTE && no_bg_mexists(f->base.r->errstr))
            f->base.r->query_script = 1;
    }
    if (f->base.r->query_script) {
        set_arg(a, 2, "1");
        set_arg(a, 3, f->name);
        hits = script(f, BG__SCRIPT_MODULE_QUERY, a->argc, a->argv, a->lens, &rep);
    }
    if (hits != BG_OK)
        return hits;
    hits = batch_results(f, rep, count, results);
    freeReplyObject(rep);
    return hits;
}

static int64_t module_run(bg_remote_filter *handle, int add, const void *const *keys,
                          const size_t *lens, size_t count, uint8_t *results)
{
    bg__module_filter *f = module_of(handle);
    /* BF.MADD creates a missing filter: a dropped one must not come back,
     * so adds use BF.INSERT NOCREATE. */
    key_args a;
    int rc = key_args_make(&a, 4, keys, lens, count);
    if (rc != BG_OK)
        return rc;
    int64_t hits;
    if (!add) {
        hits = query(f, &a, count, results);
        key_args_free(&a);
        return hits;
    }
    set_arg(&a, 0, "BF.INSERT");
    set_arg(&a, 1, f->name);
    set_arg(&a, 2, "NOCREATE");
    set_arg(&a, 3, "ITEMS");
    if (!f->final_name) {
        hits = add_checked(f, &a, count, results);
    } else {
        redisReply *rep;
        hits = not_found(f, bg__remote_command(f->base.r, a.argc, a.argv, a.lens, &rep, 0));
        if (hits == BG_OK) {
            hits = batch_results(f, rep, count, results);
            freeReplyObject(rep);
        }
    }
    key_args_free(&a);
    if (hits >= 0 && f->final_name) {
        int renewed = stage_renew(f); /* a staged filter is never rebuilt */
        if (renewed != BG_OK)
            hits = renewed;
    }
    return hits;
}

static void rb_clear(bg__module_filter *f)
{
    bg__free(f->rb_key);
    f->rb_key = NULL;
}

static int module_rebuild_begin(bg_remote_filter *handle, const bg_remote_filter_options *o)
{
    bg__module_filter *f = module_of(handle);
    if (f->rb_key)
        return bg__remote_fail(f->base.r, BG_EEXIST, "this handle's rebuild is pending");
    /* BF.INFO does not report the error rate, so "the same shape" is
     * unknown: the caller gives it. */
    if (!o)
        return bg__remote_fail(f->base.r, BG_EINVAL,
                               "%s: give the rebuild's capacity and error rate", f->name);
    if (o->backend != 0 && o->backend != BG_REMOTE_MODULE)
        return BG_EINVAL;
    reserve_args ra;
    int rc = reserve_args_make(&ra, o);
    if (rc != BG_OK)
        return rc;
    char *key = hidden_key(f->name, "rebuild");
    if (!key)
        return BG_ENOMEM;
    char lease[24];
    snprintf(lease, sizeof lease, "%" PRIu64, f->base.rb_lease_ms);
    const char *argv[12] = {NULL, NULL, "3", f->name, f->rb_marker, key, lease};
    size_t lens[12];
    for (int i = 2; i < 7; i++)
        lens[i] = strlen(argv[i]);
    memcpy(argv + 7, ra.argv, (size_t)ra.argc * sizeof *argv);
    memcpy(lens + 7, ra.lens, (size_t)ra.argc * sizeof *lens);
    redisReply *rep;
    rc = script(f, BG__SCRIPT_MODULE_REBUILD_BEGIN, 7 + ra.argc, argv, lens, &rep);
    if (rc != BG_OK) {
        bg__free(key);
        return rc;
    }
    freeReplyObject(rep);
    f->rb_key = key;
    f->rb_capacity = o->capacity;
    f->rb_error_rate = o->error_rate;
    return BG_OK;
}

static int64_t module_rebuild_add(bg_remote_filter *handle, const void *const *keys,
                                  const size_t *lens, size_t count, uint8_t *results)
{
    bg__module_filter *f = module_of(handle);
    if (!f->rb_key)
        return bg__remote_fail(f->base.r, BG_EINVAL, "no rebuild begun on this handle");
    key_args a;
    int rc = key_args_make(&a, 6, keys, lens, count);
    if (rc != BG_OK)
        return rc;
    char lease[24];
    snprintf(lease, sizeof lease, "%" PRIu64, f->base.rb_lease_ms);
    set_arg(&a, 2, "2");
    set_arg(&a, 3, f->rb_marker);
    set_arg(&a, 4, f->rb_key);
    set_arg(&a, 5, lease);
    redisReply *rep;
    int64_t hits =
        run_script(f->base.r, BG__SCRIPT_MODULE_REBUILD_ADD, a.argc, a.argv, a.lens, &rep);
    key_args_free(&a);
    if (hits == BG_ESTALE)
        rb_clear(f);
    if (hits != BG_OK)
        return hits;
    hits = batch_results(f, rep, count, results);
    freeReplyObject(rep);
    return hits;
}

static int module_rebuild_commit(bg_remote_filter *handle)
{
    bg__module_filter *f = module_of(handle);
    if (!f->rb_key)
        return bg__remote_fail(f->base.r, BG_EINVAL, "no rebuild begun on this handle");
    char lease[24];
    snprintf(lease, sizeof lease, "%" PRIu64, f->base.rb_lease_ms);
    const char *argv[7] = {NULL, NULL, "3", f->rb_marker, f->rb_key, f->name, lease};
    size_t lens[7];
    for (int i = 2; i < 7; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep;
    int rc = run_script(f->base.r, BG__SCRIPT_MODULE_REBUILD_COMMIT, 7, argv, lens, &rep);
    if (rc == BG_ESTALE || rc == BG_ENOTFOUND)
        rb_clear(f);
    if (rc != BG_OK)
        return rc;
    freeReplyObject(rep);
    f->base.capacity = f->rb_capacity;
    f->base.error_rate = f->rb_error_rate;
    rb_clear(f);
    return BG_OK;
}

static int module_rebuild_abort(bg_remote_filter *handle)
{
    bg__module_filter *f = module_of(handle);
    const char *mine = f->rb_key ? f->rb_key : "";
    const char *argv[5] = {NULL, NULL, "1", f->rb_marker, mine};
    size_t lens[5];
    for (int i = 2; i < 5; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep;
    int rc = run_script(f->base.r, BG__SCRIPT_MODULE_REBUILD_ABORT, 5, argv, lens, &rep);
    if (rc != BG_OK)
        return rc;
    int done = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
    freeReplyObject(rep);
    rb_clear(f);
    return done ? BG_OK : bg__remote_fail(f->base.r, BG_ENOTFOUND, "no such rebuild is pending");
}

static int module_drop(bg_remote_filter *handle)
{
    bg__module_filter *f = module_of(handle);
    int rc;
    if (f->final_name) {
        rc = key_command(f, "UNLINK", NULL); /* a staged filter: its staging key */
    } else {
        const char *argv[5] = {NULL, NULL, "2", f->name, f->rb_marker};
        size_t lens[5];
        for (int i = 2; i < 5; i++)
            lens[i] = strlen(argv[i]);
        redisReply *rep;
        rc = run_script(f->base.r, BG__SCRIPT_MODULE_DROP, 5, argv, lens, &rep);
        if (rc == BG_OK) {
            rc = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1 ? BG_OK : BG_ENOTFOUND;
            freeReplyObject(rep);
        }
        rb_clear(f);
    }
    if (rc == BG_ENOTFOUND)
        return bg__remote_fail(f->base.r, BG_ENOTFOUND, "%s does not exist", f->name);
    return rc;
}

static int module_expire(bg_remote_filter *handle, uint64_t ttl_ms)
{
    bg__module_filter *f = module_of(handle);
    int rc = pexpire(f, ttl_ms);
    if (rc == BG_ENOTFOUND)
        return bg__remote_fail(f->base.r, BG_ENOTFOUND, "%s does not exist", f->name);
    return rc;
}

/* PUBLISH AND FETCH (remote.h UPLOAD AND DOWNLOAD)
 * The module's value is its own type, moved in and out as bloomgate's file
 * image (docs/FORMAT.md) by BF.LOADCHUNK and BF.SCANDUMP (docs/REDIS.md):
 * the bytes bg_filter_encode writes and bg_filter_decode reads.
 *
 * Publish loads the image under a hidden key, one chunk per script that also
 * renews the key's lease (the module sets the value anew when the last
 * chunk completes it, so the lease is set after every chunk: no moment
 * leaves a hidden key without one), then renames it over name in one
 * script. The module decodes the whole image, checksum included, before the
 * key holds a filter, so a damaged upload never replaces anything.
 *
 * Fetch first copies name to a hidden key in one script (COPY: an instant's
 * filter), then dumps the copy: dumping name itself would mix chunks from
 * before and after concurrent adds, which the image's checksum (computed at
 * BF.SCANDUMP's first call) refuses; a filter that is written to while it is
 * downloaded would then never download. */
#define BG__CHUNK ((size_t)4 << 20)

int bg__module_publish(bg_remote *r, const char *name, const bg_filter *local)
{
    if (bg_filter_variant(local) != BG_VARIANT_SCALABLE)
        return bg__remote_fail(r, BG_EVARIANT,
                               "only a scalable filter can be published to the module backend "
                               "(the module's filters are scalable)");
    uint64_t size;
    int rc = bg_filter_encoded_size(local, &size);
    if (rc != BG_OK)
        return rc;
    if (size <= BG_FILE_HEADER_BYTES || size > (uint64_t)INT64_MAX - 1)
        return bg__remote_fail(r, BG_ECORRUPT, "unexpected image size %" PRIu64, size);
    size_t bufsize = size - BG_FILE_HEADER_BYTES > BG__CHUNK ? BG__CHUNK
                                                            : (size_t)(size - BG_FILE_HEADER_BYTES);
    if (bufsize < BG_FILE_HEADER_BYTES)
        bufsize = BG_FILE_HEADER_BYTES;
    char *upload = hidden_key(name, "publish"), *marker = marker_key(name);
    uint8_t *buf = bg__malloc(bufsize);
    if (!upload || !marker || !buf) {
        rc = BG_ENOMEM;
        goto out;
    }

    char lease[24], it[24];
    snprintf(lease, sizeof lease, "%u", BG_REMOTE_STAGE_TTL_MS);
    /* The header first (iterator 1), then the rest in order: each chunk's
     * iterator is the image offset of its end, plus one. */
    for (uint64_t done = 0; done < size;) {
        size_t n = done == 0 ? BG_FILE_HEADER_BYTES
                             : (size - done > bufsize ? bufsize : (size_t)(size - done));
        if ((rc = bg_filter_encode_range(local, done, buf, n)) != BG_OK)
            goto out;
        snprintf(it, sizeof it, "%" PRIu64, done == 0 ? 1 : done + n + 1);
        const char *argv[7] = {NULL, NULL, "1", upload, lease, it, (const char *)buf};
        size_t lens[7] = {0, 0, 1, strlen(upload), strlen(lease), strlen(it), n};
        redisReply *rep;
        rc = run_script(r, BG__SCRIPT_MODULE_PUBLISH_CHUNK, 7, argv, lens, &rep);
        if (rc == BG_EREMOTE && done == 0 && strstr(r->errstr, "bad data")) {
            bg_filter_scaling sc = {0};
            (void)bg_filter_scaling_get(local, &sc);
            bg__remote_fail(r, rc, "the server refused the filter's header: bloomgate.so refuses "
                                   "a filter that may grow past its MAX_BYTES (512 MiB unless "
                                   "configured; this one's max_bytes is %" PRIu64 "), and "
                                   "RedisBloom cannot load bloomgate's image", sc.max_bytes);
        }
        if (rc != BG_OK)
            goto out;
        freeReplyObject(rep);
        done += n;
    }
    const char *argv[6] = {NULL, NULL, "3", upload, name, marker};
    size_t lens[6];
    for (int i = 2; i < 6; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep;
    rc = run_script(r, BG__SCRIPT_MODULE_PUBLISH_COMMIT, 6, argv, lens, &rep);
    if (rc == BG_OK)
        freeReplyObject(rep);
out:
    if (rc != BG_OK && upload)
        bg__remote_discard(r, upload, rc);
    bg__free(upload);
    bg__free(marker);
    bg__free(buf);
    return rc;
}

/* BF.SCANDUMP key it: [next iterator, bytes]. BG_OK and the reply (the
 * caller's), or a status. */
static int scandump(bg_remote *r, const char *key, uint64_t it, uint64_t *next,
                    redisReply **rep)
{
    char its[24];
    snprintf(its, sizeof its, "%" PRIu64, it);
    const char *argv[3] = {"BF.SCANDUMP", key, its};
    size_t lens[3] = {11, strlen(key), strlen(its)};
    int rc = bg__remote_command(r, 3, argv, lens, rep, 0);
    if (rc != BG_OK)
        return rc;
    const redisReply *a = *rep;
    if (a->type != REDIS_REPLY_ARRAY || a->elements != 2 ||
        a->element[0]->type != REDIS_REPLY_INTEGER || a->element[0]->integer < 0 ||
        a->element[1]->type != REDIS_REPLY_STRING) {
        freeReplyObject(*rep);
        *rep = NULL;
        return bg__remote_fail(r, BG_EREMOTE, "unexpected reply to BF.SCANDUMP");
    }
    *next = (uint64_t)a->element[0]->integer;
    return BG_OK;
}

/* Reads the dump of `key` into a new buffer *img of *size bytes. The buffer
 * grows with what the server sends (up to the size its header announces),
 * so a server that announces more than it sends costs nothing. */
static int dump_image(bg_remote *r, const char *key, uint8_t **img, uint64_t *size)
{
    *img = NULL;
    redisReply *rep;
    uint64_t next, total;
    int rc = scandump(r, key, 0, &next, &rep);
    if (rc != BG_OK)
        return rc;
    const redisReply *data = rep->element[1];
    if (next != 1 || data->len != BG_FILE_HEADER_BYTES) {
        size_t len = data->len;
        freeReplyObject(rep);
        return bg__remote_fail(r, BG_EREMOTE, "BF.SCANDUMP: unexpected first chunk (%zu bytes)",
                               len);
    }
    rc = bg_file_image_size(data->str, data->len, &total);
    if (rc == BG_OK && total > SIZE_MAX)
        rc = BG_ETOOBIG;
    if (rc != BG_OK) {
        freeReplyObject(rep);
        return bg__remote_fail(r, rc, "%s: the dump is not a bloomgate filter image: %s (a "
                                      "RedisBloom filter cannot be fetched)",
                               key, bg_strerror(rc));
    }
    size_t cap = BG__CHUNK + BG_FILE_HEADER_BYTES < total ? BG__CHUNK + BG_FILE_HEADER_BYTES
                                                         : (size_t)total;
    uint8_t *buf = bg__malloc(cap);
    if (!buf) {
        freeReplyObject(rep);
        return BG_ENOMEM;
    }
    memcpy(buf, data->str, BG_FILE_HEADER_BYTES);
    freeReplyObject(rep);
    uint64_t have = BG_FILE_HEADER_BYTES;
    for (;;) {
        if ((rc = scandump(r, key, next, &next, &rep)) != BG_OK)
            break;
        data = rep->element[1];
        if (next == 0) {
            rc = data->len == 0 && have == total
                     ? BG_OK
                     : bg__remote_fail(r, BG_EREMOTE, "BF.SCANDUMP ended at byte %" PRIu64
                                                      " of %" PRIu64, have, total);
            freeReplyObject(rep);
            break;
        }
        /* A chunk's iterator is the image offset of its end, plus one. */
        if (data->len == 0 || data->len > total - have || next != have + data->len + 1) {
            freeReplyObject(rep);
            rc = bg__remote_fail(r, BG_EREMOTE, "BF.SCANDUMP: unexpected chunk at byte %" PRIu64,
                                 have);
            break;
        }
        if (have + data->len > cap) {
            size_t grown = cap > total / 2 ? (size_t)total : cap * 2;
            if (grown < have + data->len)
                grown = (size_t)(have + data->len);
            uint8_t *more = bg__malloc(grown);
            if (!more) {
                freeReplyObject(rep);
                rc = BG_ENOMEM;
                break;
            }
            memcpy(more, buf, (size_t)have);
            bg__free(buf);
            buf = more;
            cap = grown;
        }
        memcpy(buf + have, data->str, data->len);
        have += data->len;
        freeReplyObject(rep);
    }
    if (rc != BG_OK) {
        bg__free(buf);
        return rc;
    }
    *img = buf;
    *size = total;
    return BG_OK;
}

static int module_fetch(bg_remote_filter *handle, bg_filter **out)
{
    bg__module_filter *f = module_of(handle);
    bg_remote *r = f->base.r;
    /* In the name's cluster slot (a staged handle's key is hidden itself). */
    char *copy = hidden_key(f->final_name ? f->final_name : f->name, "fetch");
    if (!copy)
        return BG_ENOMEM;
    char lease[24];
    snprintf(lease, sizeof lease, "%u", BG_REMOTE_STAGE_TTL_MS);
    const char *argv[6] = {NULL, NULL, "2", f->name, copy, lease};
    size_t lens[6];
    for (int i = 2; i < 6; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep;
    int rc = script(f, BG__SCRIPT_MODULE_FETCH_COPY, 6, argv, lens, &rep);
    if (rc != BG_OK) {
        bg__free(copy);
        return rc;
    }
    freeReplyObject(rep);
    uint8_t *img;
    uint64_t size = 0;
    rc = dump_image(r, copy, &img, &size);
    bg__remote_discard(r, copy, rc);
    bg__free(copy);
    if (rc != BG_OK)
        return rc;
    rc = bg_filter_decode(out, img, (size_t)size, 0);
    bg__free(img);
    if (rc != BG_OK)
        return bg__remote_fail(r, rc, "%s: the downloaded image does not decode: %s", f->name,
                               bg_strerror(rc));
    if (bg_filter_variant(*out) != BG_VARIANT_SCALABLE) { /* not what a module holds */
        bg_filter_free(*out);
        *out = NULL;
        return bg__remote_fail(r, BG_EVARIANT, "%s: the server sent a filter that is not "
                                               "scalable", f->name);
    }
    return BG_OK;
}

int bg__module_create(bg_remote_filter **out, bg_remote *r, const char *name,
                      const bg_remote_filter_options *o)
{
    return construct(out, r, name, o, create);
}

int bg__module_stage(bg_remote_filter **out, bg_remote *r, const char *name,
                     const bg_remote_filter_options *o)
{
    return construct(out, r, name, o, stage);
}

int bg__module_open(bg_remote_filter **out, bg_remote *r, const char *name)
{
    return construct(out, r, name, NULL, open_info);
}

static void module_close(bg_remote_filter *handle)
{
    bg__module_filter *f = module_of(handle);
    bg__free(f->name);
    bg__free(f->final_name);
    bg__free(f->rb_marker);
    bg__free(f->rb_key);
    bg__free(f);
}

static const bg__remote_filter_ops module_ops = {
    .run = module_run,
    .stats = module_stats,
    .drop = module_drop,
    .expire = module_expire,
    .fetch = module_fetch,
    .rebuild_begin = module_rebuild_begin,
    .rebuild_add = module_rebuild_add,
    .rebuild_commit = module_rebuild_commit,
    .rebuild_abort = module_rebuild_abort,
    .close = module_close,
};

/* A staged filter is being filled: it has no time to live of its own (the
 * staging's, until commit removes it) and is not rebuilt (commit it first). */
static const bg__remote_filter_ops staged_ops = {
    .run = module_run,
    .stats = module_stats,
    .drop = module_drop,
    .fetch = module_fetch,
    .rebuild_add = module_rebuild_add,
    .rebuild_commit = module_rebuild_commit,
    .stage_commit = module_stage_commit,
    .close = module_close,
};
