/* SPDX-License-Identifier: BSD-3-Clause */
/* The module backend: RedisBloom's BF.* commands, answered by bloomgate.so
 * or RedisBloom. The server keeps the parameters (and scales the filter), so
 * there is nothing to go stale: the key `name` is the filter (a staged one's
 * is its staging key until commit: STAGED CREATION below).
 *
 * This file holds the handle (create, open, stage and its commit, close),
 * adds and queries, stats, drop, expire and the ops tables. Publish and
 * fetch (module_transfer.c) and the rebuild (module_rebuild.c) are files of
 * their own: each is a protocol of several scripts and hidden keys that the
 * add and query path does not run. What the three share is bg__module_* in
 * module.h. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "module.h"

/* A staged handle's operations until its commit, then an ordinary one's. */
static const bg__remote_filter_ops module_ops, staged_ops;

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
    f->rb_marker = bg__module_marker_key(name);
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

int bg__module_reserve_args_make(bg__reserve_args *a, const bg_remote_filter_options *o)
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
    bg__reserve_args a;
    int rc = bg__module_reserve_args_make(&a, o);
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
char *bg__module_hidden_key(const char *name, const char *what)
{
    size_t n = strlen(name) + strlen(what) + 22;
    char *key = bg__malloc(n);
    if (key)
        snprintf(key, n, "{%s}:%s:%016" PRIx64, name, what, bg__random_u63());
    return key;
}

char *bg__module_marker_key(const char *name)
{
    size_t n = strlen(name) + 11;
    char *key = bg__malloc(n);
    if (key)
        snprintf(key, n, "{%s}:rebuild", name);
    return key;
}

static int stage(bg__module_filter *f, const bg_remote_filter_options *o)
{
    bg__reserve_args a;
    int rc = bg__module_reserve_args_make(&a, o);
    if (rc != BG_OK)
        return rc;
    char *staging = bg__module_hidden_key(f->name, "staging");
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
    bg__module_filter *f = bg__module_of(handle);
    const char *argv[5] = {NULL, NULL, "2", f->name, f->final_name};
    size_t lens[5] = {0, 0, 1, strlen(f->name), strlen(f->final_name)};
    redisReply *rep;
    int rc = bg__module_script(f->base.r, BG__SCRIPT_MODULE_STAGE_COMMIT, 5, argv, lens, &rep);
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
    bg__module_filter *f = bg__module_of(handle);
    int rc = info(f, out);
    if (rc == BG_OK)
        out->error_rate = f->base.error_rate;
    return rc;
}

/* ADDS WHILE A REBUILD IS PENDING (REBUILD in module_rebuild.c)
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
 * The script costs the server about three times the command's work, in
 * the same round trip (docs/REMOTE.md, "Module backend: queries"). */

int bg__module_key_script(bg__module_filter *f, int idx, int argc, const char **argv,
                          size_t *lens, redisReply **rep)
{
    return not_found(f, bg__module_script(f->base.r, idx, argc, argv, lens, rep));
}

/* A batch's reply: one integer per key. Returns the hits, or a status. */
int64_t bg__module_batch_results(bg__module_filter *f, const redisReply *rep, size_t count,
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

int bg__module_key_args_make(bg__key_args *a, size_t head, const void *const *keys,
                             const size_t *lens, size_t count)
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

void bg__module_key_args_free(bg__key_args *a)
{
    bg__free(a->argv);
    bg__free(a->lens);
}

/* The add of a filter that may be rebuilt (ADDS WHILE A REBUILD IS PENDING):
 * HGET marker and BF.INSERT pipelined; the script when a rebuild is pending
 * (or when a cluster redirection separated the two). */
static int64_t add_checked(bg__module_filter *f, bg__key_args *ins, size_t count, uint8_t *results)
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
        hits = bg__module_batch_results(f, b, count, results);
    }
    int redirected = !m || !b;
    for (int i = 0; i < 2; i++)
        if (calls[i].reply)
            freeReplyObject(calls[i].reply);
    if (hits < 0 || !pending)
        return hits;

    bg__key_args both;
    if ((rc = bg__module_key_args_make(&both, 5, (const void *const *)(ins->argv + 4),
                                       ins->lens + 4, count)) != BG_OK)
        return rc;
    bg__module_set_arg(&both, 2, "2");
    bg__module_set_arg(&both, 3, f->name);
    bg__module_set_arg(&both, 4, f->rb_marker);
    redisReply *rep;
    rc = bg__module_key_script(f, BG__SCRIPT_MODULE_ADD_BOTH, both.argc, both.argv, both.lens,
                               &rep);
    bg__module_key_args_free(&both);
    if (rc != BG_OK)
        return rc;
    if (redirected)
        hits = bg__module_batch_results(f, rep, count, results);
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
static int64_t query(bg__module_filter *f, bg__key_args *a, size_t count, uint8_t *results)
{
    redisReply *rep;
    int64_t hits = BG_EREMOTE;
    if (!f->base.r->query_script) {
        bg__module_set_arg(a, 2, "BG.MEXISTS");
        bg__module_set_arg(a, 3, f->name);
        hits = not_found(f, bg__remote_command(f->base.r, a->argc - 2, a->argv + 2, a->lens + 2,
                                               &rep, 0));
        if (hits == BG_EREMOTE && no_bg_mexists(f->base.r->errstr))
            f->base.r->query_script = 1;
    }
    if (f->base.r->query_script) {
        bg__module_set_arg(a, 2, "1");
        bg__module_set_arg(a, 3, f->name);
        hits = bg__module_key_script(f, BG__SCRIPT_MODULE_QUERY, a->argc, a->argv, a->lens, &rep);
    }
    if (hits != BG_OK)
        return hits;
    hits = bg__module_batch_results(f, rep, count, results);
    freeReplyObject(rep);
    return hits;
}

static int64_t module_run(bg_remote_filter *handle, int add, const void *const *keys,
                          const size_t *lens, size_t count, uint8_t *results)
{
    bg__module_filter *f = bg__module_of(handle);
    /* BF.MADD creates a missing filter: a dropped one must not come back,
     * so adds use BF.INSERT NOCREATE. */
    bg__key_args a;
    int rc = bg__module_key_args_make(&a, 4, keys, lens, count);
    if (rc != BG_OK)
        return rc;
    int64_t hits;
    if (!add) {
        hits = query(f, &a, count, results);
        bg__module_key_args_free(&a);
        return hits;
    }
    bg__module_set_arg(&a, 0, "BF.INSERT");
    bg__module_set_arg(&a, 1, f->name);
    bg__module_set_arg(&a, 2, "NOCREATE");
    bg__module_set_arg(&a, 3, "ITEMS");
    if (!f->final_name) {
        hits = add_checked(f, &a, count, results);
    } else {
        redisReply *rep;
        hits = not_found(f, bg__remote_command(f->base.r, a.argc, a.argv, a.lens, &rep, 0));
        if (hits == BG_OK) {
            hits = bg__module_batch_results(f, rep, count, results);
            freeReplyObject(rep);
        }
    }
    bg__module_key_args_free(&a);
    if (hits >= 0 && f->final_name) {
        int renewed = stage_renew(f); /* a staged filter is never rebuilt */
        if (renewed != BG_OK)
            hits = renewed;
    }
    return hits;
}

static int module_drop(bg_remote_filter *handle)
{
    bg__module_filter *f = bg__module_of(handle);
    int rc;
    if (f->final_name) {
        rc = key_command(f, "UNLINK", NULL); /* a staged filter: its staging key */
    } else {
        const char *argv[5] = {NULL, NULL, "2", f->name, f->rb_marker};
        size_t lens[5];
        for (int i = 2; i < 5; i++)
            lens[i] = strlen(argv[i]);
        redisReply *rep;
        rc = bg__module_script(f->base.r, BG__SCRIPT_MODULE_DROP, 5, argv, lens, &rep);
        if (rc == BG_OK) {
            rc = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1 ? BG_OK : BG_ENOTFOUND;
            freeReplyObject(rep);
        }
        bg__module_rb_clear(f);
    }
    if (rc == BG_ENOTFOUND)
        return bg__remote_fail(f->base.r, BG_ENOTFOUND, "%s does not exist", f->name);
    return rc;
}

static int module_expire(bg_remote_filter *handle, uint64_t ttl_ms)
{
    bg__module_filter *f = bg__module_of(handle);
    int rc = pexpire(f, ttl_ms);
    if (rc == BG_ENOTFOUND)
        return bg__remote_fail(f->base.r, BG_ENOTFOUND, "%s does not exist", f->name);
    return rc;
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
    bg__module_filter *f = bg__module_of(handle);
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
    .fetch = bg__module_fetch,
    .rebuild_begin = bg__module_rebuild_begin,
    .rebuild_add = bg__module_rebuild_add,
    .rebuild_commit = bg__module_rebuild_commit,
    .rebuild_abort = bg__module_rebuild_abort,
    .close = module_close,
};

/* A staged filter is being filled: it has no time to live of its own (the
 * staging's, until commit removes it) and is not rebuilt (commit it first). */
static const bg__remote_filter_ops staged_ops = {
    .run = module_run,
    .stats = module_stats,
    .drop = module_drop,
    .fetch = bg__module_fetch,
    .rebuild_add = bg__module_rebuild_add,
    .rebuild_commit = bg__module_rebuild_commit,
    .stage_commit = module_stage_commit,
    .close = module_close,
};
