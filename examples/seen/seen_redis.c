/* SPDX-License-Identifier: BSD-3-Clause */
/* Redis in bloomgate-seen: the connection, loading and checking the users'
 * SETs and module filters, and what the server says of its memory and its
 * time. */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seen.h"

/* ---- Redis ------------------------------------------------------------------ */

void redis_connect(redis_conn *rs, const config *c)
{
    struct timeval tv = {5, 0};
    rs->rc = redisConnectWithTimeout(c->host, c->port, tv);
    if (!rs->rc || rs->rc->err)
        die("cannot connect to Redis at %s:%d: %s", c->host, c->port,
            rs->rc ? rs->rc->errstr : "out of memory");
    redisSetTimeout(rs->rc, tv);
    rs->filter_used = -1;
    bg_remote_options o = {.host = c->host, .port = c->port, .command_timeout_ms = 5000};
    int rc = bg_remote_connect(&rs->r, &o);
    if (rc != BG_OK)
        die("cannot connect to Redis at %s:%d: %s", c->host, c->port,
            rs->r ? bg_remote_errstr(rs->r) : bg_strerror(rc));
}

void redis_close(redis_conn *rs, const config *c)
{
    if (rs->rf)
        for (uint32_t u = 0; u < c->users; u++)
            bg_remote_filter_close(rs->rf[u]);
    free(rs->rf);
    bg_remote_close(rs->r);
    if (rs->rc)
        redisFree(rs->rc);
}

/* Reads the replies of n pipelined commands; dies on an error reply. */
static void redis_drain(redisContext *rc, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        void *rep;
        if (redisGetReply(rc, &rep) != REDIS_OK)
            die("%s: %s", what, rc->errstr);
        redisReply *r = rep;
        if (r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, PROG ": %s: %s\n", what, r->str);
            freeReplyObject(r);
            exit(1);
        }
        freeReplyObject(r);
    }
}

/* What the data in Redis is a function of. */
static void redis_params(const config *c, char *buf, size_t len)
{
    snprintf(buf, len,
             "users=%" PRIu32 " history=%" PRIu32 " articles=%" PRIu32 " seed=%" PRIu64
             " capacity=%" PRIu64 " error_rate=%.17g",
             c->users, c->history, c->articles, c->seed, c->capacity, c->error_rate);
}

static const char *module_hint(const char *err)
{
    return strstr(err, "unknown command") ? " (is bloomgate.so loaded? redis-server --loadmodule "
                                            "BUILD/src/redis_module/bloomgate.so)"
                                          : "";
}

/* INFO memory's used_memory, in bytes (0 if Redis will not say). */
static double used_memory(redis_conn *rs)
{
    redisReply *r = redisCommand(rs->rc, "INFO memory");
    double n = 0;
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, "used_memory:");
        if (p)
            n = strtod(p + strlen("used_memory:"), NULL);
    }
    if (r)
        freeReplyObject(r);
    return n;
}

/* Replaces whatever Redis holds for these users by their histories: the
 * filters bf:seen:<u> (BF.RESERVE NONSCALING, then one BF.INSERT with the
 * whole history: 2 round trips a user), the SETs seen:<u> (SADD, pipelined
 * 64 users at a time), then seen:params. used_memory before and after the
 * filters gives their real cost per user, key and allocator overhead
 * included, which MEMORY USAGE only estimates. */
void redis_load(const world *w, redis_conn *rs)
{
    const config *c = w->cfg;
    double t0 = now_s();
    enum { PIPE = 64 };
    redisAppendCommand(rs->rc, "DEL seen:params");
    redis_drain(rs->rc, 1, "DEL");
    for (uint32_t u = 0; u < c->users;) {
        size_t k = 0;
        for (; k < PIPE && u < c->users; k++, u++)
            redisAppendCommand(rs->rc, "DEL bf:seen:%" PRIu32 " seen:%" PRIu32, u, u);
        redis_drain(rs->rc, k, "DEL");
    }

    size_t hn = c->history;
    char *buf = xcalloc(hn * PIPE, KEY_MAX);
    const void **keys = xcalloc(hn * PIPE, sizeof *keys);
    size_t *lens = xcalloc(hn * PIPE, sizeof *lens);
    rs->rf = xcalloc(c->users, sizeof *rs->rf);
    double used0 = used_memory(rs);
    bg_remote_filter_options fo = {.backend = BG_REMOTE_MODULE,
                                   .capacity = c->capacity,
                                   .error_rate = c->error_rate,
                                   .nonscaling = 1};
    for (uint32_t u = 0; u < c->users; u++) {
        char name[32];
        snprintf(name, sizeof name, "bf:seen:%" PRIu32, u);
        int rc = bg_remote_filter_create(&rs->rf[u], rs->r, name, &fo);
        if (rc != BG_OK) {
            const char *e = rc == BG_EREMOTE ? bg_remote_errstr(rs->r) : bg_strerror(rc);
            die("BF.RESERVE %s: %s%s", name, e, module_hint(e));
        }
        keys_format(w->hist + (size_t)u * hn, hn, buf, keys, lens);
        int64_t n = bg_remote_filter_add_many(rs->rf[u], keys, lens, hn, NULL);
        if (n < 0)
            die("BF.INSERT %s: %s", name, bg_remote_errstr(rs->r));
    }
    double used1 = used_memory(rs);
    if (used0 > 0 && used1 > used0)
        rs->filter_used = (used1 - used0) / c->users;

    const char **argv = xcalloc(hn + 2, sizeof *argv);
    size_t *argvlen = xcalloc(hn + 2, sizeof *argvlen);
    for (uint32_t u = 0; u < c->users;) {
        size_t k = 0;
        for (; k < PIPE && u < c->users; k++, u++) {
            char setkey[32];
            argv[0] = "SADD";
            argvlen[0] = 4;
            argvlen[1] = (size_t)snprintf(setkey, sizeof setkey, "seen:%" PRIu32, u);
            argv[1] = setkey;
            keys_format(w->hist + (size_t)u * hn, hn, buf + k * hn * KEY_MAX, keys + k * hn,
                        lens + k * hn);
            for (size_t j = 0; j < hn; j++) {
                argv[2 + j] = keys[k * hn + j];
                argvlen[2 + j] = lens[k * hn + j];
            }
            /* hiredis copies the arguments into its output buffer here. */
            if (redisAppendCommandArgv(rs->rc, (int)(hn + 2), argv, argvlen) != REDIS_OK)
                die("SADD: %s", rs->rc->errstr);
        }
        redis_drain(rs->rc, k, "SADD");
    }
    char params[256];
    redis_params(c, params, sizeof params);
    redisAppendCommand(rs->rc, "SET seen:params %s", params);
    redis_drain(rs->rc, 1, "SET seen:params");
    free(argv);
    free(argvlen);
    free(buf);
    free(keys);
    free(lens);
    fprintf(stderr, "loaded %" PRIu32 " users x %" PRIu32 " seen into Redis in %.1f s\n", c->users,
            c->history, now_s() - t0);
}

/* Checks that Redis holds these users (seen:params), and opens the filter
 * handles when `filters` and they are not open yet. */
void redis_check(const world *w, redis_conn *rs, int filters)
{
    const config *c = w->cfg;
    char want[256];
    redis_params(c, want, sizeof want);
    redisReply *r = redisCommand(rs->rc, "GET seen:params");
    if (!r)
        die("Redis: %s", rs->rc->errstr);
    if (r->type != REDIS_REPLY_STRING || strcmp(r->str, want) != 0) {
        if (r->type == REDIS_REPLY_STRING)
            fprintf(stderr, PROG ": Redis at %s:%d holds other users (seen:params is \"%s\"): "
                    "run with --load\n", c->host, c->port, r->str);
        else
            fprintf(stderr, PROG ": Redis at %s:%d holds no users (no key seen:params): run "
                    "with --load\n", c->host, c->port);
        freeReplyObject(r);
        exit(1);
    }
    freeReplyObject(r);
    if (!filters || rs->rf)
        return;
    rs->rf = xcalloc(c->users, sizeof *rs->rf);
    for (uint32_t u = 0; u < c->users; u++) {
        char name[32];
        snprintf(name, sizeof name, "bf:seen:%" PRIu32, u);
        int rc = bg_remote_filter_open(&rs->rf[u], rs->r, name, BG_REMOTE_MODULE);
        if (rc != BG_OK) {
            const char *e = rc == BG_EREMOTE ? bg_remote_errstr(rs->r) : bg_strerror(rc);
            die("BF.INFO %s: %s%s", name, e, module_hint(e));
        }
    }
}

/* MEMORY USAGE key, in bytes (0 if Redis will not say). */
uint64_t redis_memory(redis_conn *rs, const char *key)
{
    redisReply *r = redisCommand(rs->rc, "MEMORY USAGE %s", key);
    uint64_t n = r && r->type == REDIS_REPLY_INTEGER && r->integer > 0 ? (uint64_t)r->integer : 0;
    if (r)
        freeReplyObject(r);
    return n;
}

/* MEMORY USAGE of the filters of up to 16 users spread over all of them,
 * averaged: bytes per user, 0 if Redis will not say. */
double redis_filter_memory(redis_conn *rs, uint32_t users)
{
    uint32_t n = users < 16 ? users : 16;
    double sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "bf:seen:%" PRIu32, (uint32_t)((uint64_t)i * users / n));
        sum += (double)redis_memory(rs, name);
    }
    return n ? sum / n : 0;
}

/* One commandstats line's field ("calls=" or "usec="), 0 if absent. */
static double cmdstat_field(const char *line, const char *eol, const char *field)
{
    const char *f = strstr(line, field);
    return f && (!eol || f < eol) ? strtod(f + strlen(field), NULL) : 0;
}

server_usec redis_server_usec(redis_conn *rs)
{
    server_usec s = {0};
    redisReply *r = redisCommand(rs->rc, "INFO commandstats");
    if (r && r->type == REDIS_REPLY_STRING) {
        for (const char *p = strstr(r->str, "cmdstat_"); p; p = strstr(p + 1, "cmdstat_")) {
            const char *name = p + strlen("cmdstat_");
            const char *colon = strchr(name, ':');
            const char *eol = strchr(name, '\n');
            if (!colon || (eol && colon > eol))
                continue;
            double usec = cmdstat_field(colon, eol, "usec=");
            size_t len = (size_t)(colon - name);
            if (len == strlen("smismember") && memcmp(name, "smismember", len) == 0) {
                s.exact = usec;
            } else if (len >= 3 && len < sizeof s.cmd[0].name &&
                       (memcmp(name, "bf.", 3) == 0 || memcmp(name, "bg.", 3) == 0) &&
                       s.ncmds < MAX_FILTER_CMDS) {
                s.filter += usec;
                memcpy(s.cmd[s.ncmds].name, name, len);
                s.cmd[s.ncmds].name[len] = '\0';
                s.cmd[s.ncmds].calls = cmdstat_field(colon, eol, "calls=");
                s.cmd[s.ncmds++].usec = usec;
            }
        }
    }
    if (r)
        freeReplyObject(r);
    return s;
}

void server_usec_names(const server_usec *before, const server_usec *after, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < after->ncmds; i++) {
        double calls = after->cmd[i].calls;
        for (size_t j = 0; j < before->ncmds; j++)
            if (strcmp(before->cmd[j].name, after->cmd[i].name) == 0)
                calls -= before->cmd[j].calls;
        if (calls <= 0 || o + strlen(after->cmd[i].name) + 2 > len)
            continue;
        if (o)
            buf[o++] = '+';
        for (const char *c = after->cmd[i].name; *c; c++)
            buf[o++] = (char)toupper((unsigned char)*c);
        buf[o] = '\0';
    }
    if (!o)
        snprintf(buf, len, "-");
}
