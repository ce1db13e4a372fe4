/* The module backend: RedisBloom's BF.* commands, answered by bloomgate.so
 * or RedisBloom. The server keeps the parameters (and scales the filter), so
 * there is nothing to go stale: the key `name` is the filter (a staged one's
 * is its staging key until commit: STAGED CREATION below). */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/alloc_internal.h"
#include "remote_internal.h"

static int not_found(bg_remote_filter *f, int rc)
{
    const char *e = f->r->errstr;
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

int bg__module_create(bg_remote_filter *f, const bg_remote_filter_options *o)
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
    rc = bg__remote_command(f->r, a.argc + 2, argv, lens, &rep, 0);
    if (rc == BG_EREMOTE && strstr(f->r->errstr, "exists"))
        return BG_EEXIST;
    if (rc != BG_OK)
        return rc;
    freeReplyObject(rep);
    f->capacity = o->capacity;
    f->error_rate = o->error_rate;
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

#define STAGE_SCRIPT                                                                    \
    "redis.call('BF.RESERVE', KEYS[1], unpack(ARGV, 2))\n"                             \
    "redis.call('PEXPIRE', KEYS[1], ARGV[1])\n"                                         \
    "return 1\n"

#define STAGE_COMMIT_SCRIPT                                                             \
    "if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end\n"                       \
    "if redis.call('EXISTS', KEYS[2]) == 1 then\n"                                      \
    "  redis.call('UNLINK', KEYS[1])\n"                                                 \
    "  return 0\n"                                                                      \
    "end\n"                                                                             \
    "redis.call('RENAME', KEYS[1], KEYS[2])\n"                                          \
    "redis.call('PERSIST', KEYS[2])\n"                                                  \
    "return 1\n"

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int bg__module_stage(bg_remote_filter *f, const bg_remote_filter_options *o)
{
    reserve_args a;
    int rc = reserve_args_make(&a, o);
    if (rc != BG_OK)
        return rc;
    size_t n = strlen(f->name) + 32;
    char *staging = bg__malloc(n);
    if (!staging)
        return BG_ENOMEM;
    snprintf(staging, n, "{%s}:staging:%016" PRIx64, f->name, bg__random_u63());
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%u", BG_REMOTE_STAGE_TTL_MS);
    const char *argv[10] = {"EVAL", STAGE_SCRIPT, "1", staging, ttl};
    size_t lens[10] = {4, strlen(STAGE_SCRIPT), 1, strlen(staging), strlen(ttl)};
    memcpy(argv + 5, a.argv, (size_t)a.argc * sizeof *argv);
    memcpy(lens + 5, a.lens, (size_t)a.argc * sizeof *lens);
    redisReply *rep;
    rc = bg__remote_command(f->r, a.argc + 5, argv, lens, &rep, 0);
    if (rc != BG_OK) {
        bg__free(staging);
        return rc;
    }
    freeReplyObject(rep);
    f->final_name = f->name;
    f->name = staging;
    f->stage_touched = now_ms();
    f->capacity = o->capacity;
    f->error_rate = o->error_rate;
    return BG_OK;
}

int bg__module_stage_commit(bg_remote_filter *f)
{
    const char *argv[5] = {"EVAL", STAGE_COMMIT_SCRIPT, "2", f->name, f->final_name};
    size_t lens[5] = {4, strlen(STAGE_COMMIT_SCRIPT), 1, strlen(f->name), strlen(f->final_name)};
    redisReply *rep;
    int rc = bg__remote_command(f->r, 5, argv, lens, &rep, 0);
    if (rc != BG_OK)
        return rc;
    long long won = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -2;
    freeReplyObject(rep);
    if (won == -1)
        return bg__remote_fail(f->r, BG_ENOTFOUND, "the staged filter for %s expired or was dropped",
                               f->final_name);
    if (won == 0)
        return bg__remote_fail(f->r, BG_EEXIST, "%s was created meanwhile", f->final_name);
    if (won != 1)
        return bg__remote_fail(f->r, BG_EREMOTE, "unexpected reply to the staging commit");
    bg__free(f->name);
    f->name = f->final_name;
    f->final_name = NULL;
    return BG_OK;
}

/* `cmd name [arg]`, a command with an integer reply that is 0 when the key
 * does not exist (DEL, PEXPIRE): BG_OK, BG_ENOTFOUND (no message set), or
 * the command's status. */
static int key_command(bg_remote_filter *f, const char *cmd, const char *arg)
{
    const char *argv[3] = {cmd, f->name, arg};
    size_t lens[3] = {strlen(cmd), strlen(f->name), arg ? strlen(arg) : 0};
    redisReply *rep;
    int rc = bg__remote_command(f->r, arg ? 3 : 2, argv, lens, &rep, 0);
    if (rc != BG_OK)
        return rc;
    long long n = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
    freeReplyObject(rep);
    return n ? BG_OK : BG_ENOTFOUND;
}

static int pexpire(bg_remote_filter *f, uint64_t ttl_ms)
{
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%" PRIu64, ttl_ms);
    return key_command(f, "PEXPIRE", ttl);
}

/* Renews a staged filter's time to live, at most once per
 * BG__STAGE_RENEW_MS (after an add: the key exists). */
static int stage_renew(bg_remote_filter *f)
{
    uint64_t now = now_ms();
    if (now - f->stage_touched < BG__STAGE_RENEW_MS)
        return BG_OK;
    int rc = pexpire(f, BG_REMOTE_STAGE_TTL_MS);
    if (rc == BG_ENOTFOUND)
        return bg__remote_fail(f->r, BG_ENOTFOUND, "the staged filter for %s expired or was dropped",
                               f->final_name);
    if (rc == BG_OK)
        f->stage_touched = now;
    return rc;
}

/* BF.INFO name: alternating field names and integers. */
static int info(bg_remote_filter *f, bg_remote_filter_stats *out)
{
    const char *argv[2] = {"BF.INFO", f->name};
    size_t lens[2] = {7, strlen(f->name)};
    redisReply *rep;
    int rc = bg__remote_command(f->r, 2, argv, lens, &rep, 0);
    if (rc != BG_OK)
        return not_found(f, rc);
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements % 2) {
        freeReplyObject(rep);
        return bg__remote_fail(f->r, BG_EREMOTE, "BF.INFO: unexpected reply");
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

int bg__module_open(bg_remote_filter *f)
{
    bg_remote_filter_stats st = {0};
    int rc = info(f, &st);
    if (rc == BG_OK)
        f->capacity = st.capacity;
    return rc;
}

int bg__module_stats(bg_remote_filter *f, bg_remote_filter_stats *out)
{
    int rc = info(f, out);
    if (rc == BG_OK)
        out->error_rate = f->error_rate;
    return rc;
}

int64_t bg__module_run(bg_remote_filter *f, int add, const void *const *keys, const size_t *lens,
                       size_t count, uint8_t *results)
{
    if (count > (size_t)INT32_MAX - 2)
        return BG_EOVERFLOW;
    size_t argc = count + 2;
    const char **argv = bg__malloc(argc * sizeof *argv);
    size_t *alen = bg__malloc(argc * sizeof *alen);
    if (!argv || !alen) {
        bg__free(argv);
        bg__free(alen);
        return BG_ENOMEM;
    }
    argv[0] = add ? "BF.MADD" : "BF.MEXISTS";
    alen[0] = strlen(argv[0]);
    argv[1] = f->name;
    alen[1] = strlen(f->name);
    for (size_t i = 0; i < count; i++) {
        argv[i + 2] = keys[i] ? keys[i] : "";
        alen[i + 2] = lens[i];
    }
    redisReply *rep;
    /* BF.MADD creates a missing filter: a dropped one must not come back,
     * so check it exists in the same round trip (MULTI would not stop the
     * add; BF.INSERT NOCREATE does). */
    int64_t rc;
    if (add) {
        const char **a2 = bg__malloc((argc + 3) * sizeof *a2);
        size_t *l2 = bg__malloc((argc + 3) * sizeof *l2);
        if (!a2 || !l2) {
            bg__free(a2);
            bg__free(l2);
            rc = BG_ENOMEM;
            goto out;
        }
        a2[0] = "BF.INSERT";
        l2[0] = 9;
        a2[1] = f->name;
        l2[1] = alen[1];
        a2[2] = "NOCREATE";
        l2[2] = 8;
        a2[3] = "ITEMS";
        l2[3] = 5;
        memcpy(a2 + 4, argv + 2, count * sizeof *a2);
        memcpy(l2 + 4, alen + 2, count * sizeof *l2);
        rc = bg__remote_command(f->r, (int)(count + 4), a2, l2, &rep, 0);
        bg__free(a2);
        bg__free(l2);
    } else {
        rc = bg__remote_command(f->r, (int)argc, argv, alen, &rep, 0);
    }
    if (rc != BG_OK) {
        rc = not_found(f, (int)rc);
        goto out;
    }
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != count) {
        freeReplyObject(rep);
        rc = bg__remote_fail(f->r, BG_EREMOTE, "unexpected reply to a batch");
        goto out;
    }
    int64_t hits = 0;
    for (size_t i = 0; i < count; i++) {
        const redisReply *e = rep->element[i];
        if (e->type == REDIS_REPLY_ERROR) {
            rc = bg__remote_error_reply(f->r, e);
            freeReplyObject(rep);
            goto out;
        }
        int v = e->type == REDIS_REPLY_INTEGER && e->integer != 0;
        hits += v;
        if (results)
            results[i] = (uint8_t)v;
    }
    freeReplyObject(rep);
    rc = hits;
    if (add && f->final_name) {
        int renewed = stage_renew(f);
        if (renewed != BG_OK)
            rc = renewed;
    }
out:
    bg__free(argv);
    bg__free(alen);
    return rc;
}

int bg__module_drop(bg_remote_filter *f)
{
    int rc = key_command(f, "DEL", NULL);
    return rc == BG_ENOTFOUND ? bg__remote_fail(f->r, BG_ENOTFOUND, "%s does not exist", f->name)
                              : rc;
}

int bg__module_expire(bg_remote_filter *f, uint64_t ttl_ms)
{
    int rc = pexpire(f, ttl_ms);
    return rc == BG_ENOTFOUND ? bg__remote_fail(f->r, BG_ENOTFOUND, "%s does not exist", f->name)
                              : rc;
}
