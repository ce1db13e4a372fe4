/* SPDX-License-Identifier: BSD-3-Clause */
/* The connection: connect, AUTH, timeouts, reconnect, and errors as values;
 * a cluster connection routes each command in cluster.c.
 *
 * SIGPIPE
 * hiredis writes with write(2), so a write to a socket the server closed
 * raises SIGPIPE, whose default action kills the process. A library must
 * not change the process's signal dispositions, so every exchange blocks
 * SIGPIPE in the calling thread, and before unblocking consumes a SIGPIPE
 * that the exchange itself made pending (the EPIPE error is what we report).
 * A SIGPIPE that was already pending before the call is left alone. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "remote_internal.h"

int bg__remote_fail(bg_remote *r, int status, const char *fmt, ...)
{
    if (r) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->errstr, sizeof r->errstr, fmt, ap);
        va_end(ap);
    }
    return status;
}

int bg__parse_u64(const char *s, size_t len, uint64_t *out)
{
    if (!s || len == 0 || len > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static struct timeval ms_to_tv(uint32_t ms)
{
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    return tv;
}

/* SIGPIPE guard (see the top of this file). */
typedef struct pipe_guard {
    sigset_t old;
    int was_pending;
} pipe_guard;

static void guard_begin(pipe_guard *g)
{
    sigset_t set, pending;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

static void guard_end(pipe_guard *g)
{
    if (!g->was_pending) {
        sigset_t set, pending;
        sigemptyset(&set);
        sigaddset(&set, SIGPIPE);
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE) == 1) {
            struct timespec zero = {0, 0};
            while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR)
                ;
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

int bg__remote_error_reply(bg_remote *r, const redisReply *reply)
{
    const char *s = reply->str ? reply->str : "";
    bg__remote_fail(r, BG_EREMOTE, "%s", s);
    if (strncmp(s, "BGSTALE", 7) == 0)
        return BG_ESTALE;
    if (strncmp(s, "BGNOTFOUND", 10) == 0)
        return BG_ENOTFOUND;
    if (strncmp(s, "BGEXISTS", 8) == 0)
        return BG_EEXIST;
    return BG_EREMOTE;
}

/* REPLY LIMITS
 * hiredis allocates an array reply's element pointers as soon as it reads
 * the header "*<n>", before any element has arrived, so a server (or
 * anything else on the port) that sends "*1333333333" makes it ask for
 * 10 GiB; hiredis 0.14 has no limit of its own (1.x added maxelements).
 * Every context's reader therefore builds arrays through r->reply_fn, a
 * copy of hiredis's own functions whose createArray refuses more elements
 * than the command can return: BG__ARRAY_CAP, or a batch's size
 * (bg__remote_allow_array). hiredis then fails the read ("out of memory");
 * io_error reports the real reason, and the connection is dropped like any
 * broken one. Bulk strings need no limit: hiredis keeps only the bytes that
 * really arrived. (Found by tests/fuzz/fuzz_remote_reply.c.) */
static void *capped_array(const redisReadTask *task, int elements)
{
    bg_remote *r = task->privdata;
    if (elements < 0 || (size_t)elements > r->array_cap) {
        r->array_refused = elements;
        return NULL;
    }
    return r->hiredis_create_array(task, elements);
}

static void cap_replies(bg_remote *r, redisContext *c)
{
    if (!r->hiredis_create_array) {
        r->reply_fn = *c->reader->fn;
        r->hiredis_create_array = r->reply_fn.createArray;
        r->reply_fn.createArray = capped_array;
    }
    c->reader->fn = &r->reply_fn;
    c->reader->privdata = r;
}

void bg__remote_allow_array(bg_remote *r, size_t count)
{
    r->array_cap = count > BG__ARRAY_CAP - 2 ? count + 2 : BG__ARRAY_CAP;
}

static int io_error(bg_remote *r, const redisContext *c, const char *what)
{
    if (r->array_refused >= 0 || r->array_refused < -1) {
        long long n = r->array_refused;
        r->array_refused = -1;
        return bg__remote_fail(r, BG_ECONN,
                               "%s: the server sent an array of %lld elements, more than the "
                               "%zu this command can return",
                               what, n, r->array_cap);
    }
    const char *why = c && c->errstr[0] ? c->errstr : "unknown error";
    return bg__remote_fail(r, BG_ECONN, "%s: %s", what, why);
}

int bg__remote_exchange(bg_remote *r, redisContext *c, int asking, int argc, const char **argv,
                        const size_t *lens, redisReply **reply)
{
    *reply = NULL;
    if (asking) {
        const char *aa[1] = {"ASKING"};
        size_t al[1] = {6};
        if (redisAppendCommandArgv(c, 1, aa, al) != REDIS_OK)
            return io_error(r, c, "cannot format the command");
    }
    if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK)
        return io_error(r, c, "cannot format the command");
    pipe_guard g;
    guard_begin(&g);
    void *rep = NULL;
    int rc = REDIS_OK;
    if (asking) {
        rc = redisGetReply(c, &rep);
        if (rep)
            freeReplyObject(rep); /* +OK; an error shows in the command's reply */
        rep = NULL;
    }
    if (rc == REDIS_OK)
        rc = redisGetReply(c, &rep);
    guard_end(&g);
    if (rc != REDIS_OK || !rep) {
        if (rep)
            freeReplyObject(rep);
        return io_error(r, c, "no reply from Redis");
    }
    *reply = rep;
    return BG_OK;
}

int bg__remote_open_context(bg_remote *r, const char *host, int port, const char *unix_socket,
                            redisContext **out)
{
    *out = NULL;
    struct timeval ct = ms_to_tv(r->connect_timeout_ms);
    redisContext *c = unix_socket ? redisConnectUnixWithTimeout(unix_socket, ct)
                                  : redisConnectWithTimeout(host, port, ct);
    if (!c)
        return bg__remote_fail(r, BG_ENOMEM, "out of memory connecting");
    int rc = BG_OK;
    if (c->err) {
        if (unix_socket)
            rc = bg__remote_fail(r, BG_ECONN, "cannot connect to %s: %s", unix_socket,
                                 c->errstr);
        else
            rc = bg__remote_fail(r, BG_ECONN, "cannot connect to %s:%d: %s", host, port,
                                 c->errstr);
    } else {
        /* hiredis 0.14 leaves its socket inheritable: a program that runs
         * another (the CLI's rebuild --command, a server that spawns
         * workers) would hand it our connection. */
        (void)fcntl(c->fd, F_SETFD, FD_CLOEXEC);
        cap_replies(r, c);
        if (redisSetTimeout(c, ms_to_tv(r->command_timeout_ms)) != REDIS_OK) {
            rc = io_error(r, c, "cannot set the timeout");
        } else if (r->password) {
            const char *argv[3] = {"AUTH", r->username ? r->username : r->password,
                                   r->password};
            size_t lens[3] = {4, strlen(argv[1]), strlen(r->password)};
            redisReply *rep;
            rc = bg__remote_exchange(r, c, 0, r->username ? 3 : 2, argv, lens, &rep);
            if (rc == BG_OK) {
                if (rep->type == REDIS_REPLY_ERROR)
                    rc = bg__remote_error_reply(r, rep);
                freeReplyObject(rep);
            }
        }
    }
    if (rc != BG_OK) {
        redisFree(c);
        return rc;
    }
    *out = c;
    return BG_OK;
}

int bg__remote_command(bg_remote *r, int argc, const char **argv, const size_t *lens,
                       redisReply **reply, int keep_errors)
{
    *reply = NULL;
    int rc = bg__remote_ready(r);
    if (rc != BG_OK)
        return rc;
    redisReply *rep = NULL;
    if (r->cluster) {
        rc = bg__cluster_command(r, argc, argv, lens, &rep);
    } else {
        rc = bg__remote_exchange(r, r->c, 0, argc, argv, lens, &rep);
        if (rc != BG_OK)
            r->broken = 1;
    }
    if (rc != BG_OK)
        return rc;
    if (rep->type == REDIS_REPLY_ERROR && !keep_errors) {
        rc = bg__remote_error_reply(r, rep);
        freeReplyObject(rep);
        return rc;
    }
    *reply = rep;
    return BG_OK;
}

int bg_remote_command(bg_remote *r, int argc, const char **argv, const size_t *lens,
                      redisReply **reply)
{
    if (reply)
        *reply = NULL;
    if (!r || argc < 1 || !argv || !lens || !reply)
        return BG_EINVAL;
    for (int i = 0; i < argc; i++)
        if (!argv[i])
            return BG_EINVAL;
    return bg__remote_command(r, argc, argv, lens, reply, 0);
}

int bg__remote_del(bg_remote *r, const char *key, int *deleted)
{
    const char *argv[2] = {"DEL", key};
    size_t lens[2] = {3, strlen(key)};
    redisReply *rep;
    int rc = bg__remote_command(r, 2, argv, lens, &rep, 0);
    if (rc != BG_OK)
        return rc;
    if (deleted)
        *deleted = rep->type == REDIS_REPLY_INTEGER && rep->integer > 0;
    freeReplyObject(rep);
    return BG_OK;
}

/* PIPELINING ACROSS MASTERS
 * bg__remote_fanout writes every call to its master's connection first,
 * flushes them all, and only then reads the replies, each connection's in
 * the order written. The masters work at the same time, so a batch split
 * into S parts costs about one round trip instead of S (on one server it is
 * plain pipelining). A call that was not executed where it was sent (MOVED,
 * ASK, TRYAGAIN, CLUSTERDOWN) gets reply NULL: the caller sends it again on
 * its own through bg__remote_command, which follows redirections. A broken
 * connection fails the whole fanout with BG_ECONN and is not retried: the
 * calls sent on it may have been applied (ERRORS in remote.h). */
static int must_resend(const redisReply *rep)
{
    if (rep->type != REDIS_REPLY_ERROR || !rep->str)
        return 0;
    return strncmp(rep->str, "MOVED ", 6) == 0 || strncmp(rep->str, "ASK ", 4) == 0 ||
           strncmp(rep->str, "TRYAGAIN", 8) == 0 || strncmp(rep->str, "CLUSTERDOWN", 11) == 0;
}

/* The connection of node `ni` (cluster) or the only one. */
static redisContext *fan_context(bg_remote *r, size_t ni)
{
    return r->cluster ? r->nodes[ni].c : r->c;
}

static void fan_close(bg_remote *r, size_t ni)
{
    if (r->cluster) {
        bg__cluster_node_close(r, ni);
    } else if (r->c) {
        redisFree(r->c);
        r->c = NULL;
        r->broken = 1;
    }
}

int bg__remote_fanout(bg_remote *r, bg__call *calls, size_t n)
{
    for (size_t i = 0; i < n; i++)
        calls[i].reply = NULL;
    int rc = bg__remote_ready(r);
    if (rc != BG_OK || n == 0)
        return rc;
    size_t *node = bg__calloc(n, sizeof *node);
    if (!node)
        return BG_ENOMEM;
    /* Route: every call's master, connected. */
    for (size_t i = 0; r->cluster && i < n; i++)
        if ((rc = bg__cluster_route(r, calls[i].argc, calls[i].argv, calls[i].lens,
                                    &node[i])) != BG_OK)
            goto out;
    /* Write: append everything, then flush each connection once. */
    for (size_t i = 0; i < n; i++)
        if (redisAppendCommandArgv(fan_context(r, node[i]), calls[i].argc, calls[i].argv,
                                   calls[i].lens) != REDIS_OK) {
            /* Commands already appended would never be read: drop them all. */
            rc = io_error(r, fan_context(r, node[i]), "cannot format the command");
            for (size_t j = 0; j <= i; j++)
                if (fan_context(r, node[j]))
                    fan_close(r, node[j]);
            goto out;
        }
    pipe_guard g;
    guard_begin(&g);
    for (size_t i = 0; i < n; i++) {
        redisContext *c = fan_context(r, node[i]);
        int done = 0;
        while (c && !done)
            if (redisBufferWrite(c, &done) != REDIS_OK) {
                if (rc == BG_OK)
                    rc = io_error(r, c, "cannot send to Redis");
                fan_close(r, node[i]);
                c = NULL;
            }
    }
    /* Read: each call's reply, connections in parallel, each in order. */
    for (size_t i = 0; i < n; i++) {
        redisContext *c = fan_context(r, node[i]);
        if (!c)
            continue; /* broke: rc says so */
        void *rep = NULL;
        if (redisGetReply(c, &rep) != REDIS_OK || !rep) {
            if (rc == BG_OK)
                rc = io_error(r, c, "no reply from Redis");
            fan_close(r, node[i]);
            continue;
        }
        if (must_resend(rep)) {
            freeReplyObject(rep);
            BG__REMOTE_TESTING_COUNT(r, redirects);
            continue;
        }
        calls[i].reply = rep;
    }
    guard_end(&g);
    if (rc != BG_OK)
        for (size_t i = 0; i < n; i++)
            if (calls[i].reply) {
                freeReplyObject(calls[i].reply);
                calls[i].reply = NULL;
            }
out:
    bg__free(node);
    return rc;
}

/* Connects anew (closing the old connections) and authenticates; a cluster
 * connection reads the slot map from the seed. */
static int do_connect(bg_remote *r)
{
    if (r->cluster)
        return bg__cluster_connect(r);
    if (r->c) {
        redisFree(r->c);
        r->c = NULL;
    }
    r->broken = 1;
    int rc = bg__remote_open_context(r, r->host, r->port, r->unix_socket, &r->c);
    if (rc != BG_OK)
        return rc;
    r->broken = 0;
    r->errstr[0] = '\0';
    return BG_OK;
}

int bg__remote_ready(bg_remote *r)
{
    r->errstr[0] = '\0';
    if (r->cluster)
        return BG_OK; /* masters connect on first use */
    if (!r->broken && r->c)
        return BG_OK;
    return do_connect(r);
}

int bg_remote_connect(bg_remote **out, const bg_remote_options *o)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!o || o->port < 0 || o->port > 65535 || (o->cluster && o->unix_socket) ||
        (o->seeds && !o->cluster))
        return BG_EINVAL;
    bg_remote *r = bg__calloc(1, sizeof *r);
    if (!r)
        return BG_ENOMEM;
    r->host = bg__strdup(o->host ? o->host : "127.0.0.1");
    r->unix_socket = bg__strdup(o->unix_socket);
    r->username = bg__strdup(o->username);
    r->password = bg__strdup(o->password);
    if (!r->host || (o->unix_socket && !r->unix_socket) || (o->username && !r->username) ||
        (o->password && !r->password)) {
        bg_remote_close(r);
        return BG_ENOMEM;
    }
    r->port = o->port ? o->port : 6379;
    r->array_cap = BG__ARRAY_CAP;
    r->array_refused = -1;
    r->connect_timeout_ms = o->connect_timeout_ms ? o->connect_timeout_ms : 2000;
    r->command_timeout_ms = o->command_timeout_ms ? o->command_timeout_ms : 2000;
    if (o->cluster) {
        r->cluster = 1;
        int sr = bg__cluster_init(r, o->seeds);
        if (sr != BG_OK) {
            bg_remote_close(r);
            return sr;
        }
    }
    int rc = do_connect(r);
    if (rc == BG_ENOMEM) {
        bg_remote_close(r);
        return rc;
    }
    *out = r;
    return rc;
}

int bg_remote_reconnect(bg_remote *r)
{
    if (!r)
        return BG_EINVAL;
    return do_connect(r);
}

void bg_remote_close(bg_remote *r)
{
    if (!r)
        return;
    if (r->cluster)
        bg__cluster_free(r);
    else if (r->c)
        redisFree(r->c);
    bg__free(r->host);
    bg__free(r->unix_socket);
    bg__free(r->username);
    bg__free(r->password);
    bg__free(r);
}

const char *bg_remote_errstr(const bg_remote *r)
{
    return r ? r->errstr : "";
}

/* SCRIPTS
 * A script's SHA1 is learnt with SCRIPT LOAD once per connection handle
 * (r->sha[idx]); a server that has not seen it (restarted, SCRIPT FLUSH, a
 * cluster master) answers NOSCRIPT, and the call is sent again as EVAL
 * with the source, which nothing executed before. */
int bg__remote_load_script(bg_remote *r, int idx, const char *src)
{
    if (r->sha[idx][0])
        return BG_OK;
    const char *la[3] = {"SCRIPT", "LOAD", src};
    size_t ll[3] = {6, 4, strlen(src)};
    redisReply *rep;
    int rc = bg__remote_command(r, 3, la, ll, &rep, 0);
    if (rc != BG_OK)
        return rc;
    if (rep->type != REDIS_REPLY_STRING || rep->len != 40) {
        freeReplyObject(rep);
        return bg__remote_fail(r, BG_EREMOTE, "SCRIPT LOAD: unexpected reply");
    }
    memcpy(r->sha[idx], rep->str, 40);
    r->sha[idx][40] = '\0';
    freeReplyObject(rep);
    return BG_OK;
}

int bg__remote_script(bg_remote *r, int idx, const char *src, int argc, const char **argv,
                      size_t *lens, redisReply **reply)
{
    *reply = NULL;
    redisReply *rep;
    int rc = bg__remote_load_script(r, idx, src);
    if (rc != BG_OK)
        return rc;
#ifdef BG_TESTING
    /* FAULT INJECTION (remote_testing.h): absent from the production build. */
    int inject = bg__remote_testing_script_fault(idx);
    if (inject == BG__REMOTE_TESTING_LOSE_REQUEST)
        return bg__remote_testing_lose_connection(r);
#endif
    argv[0] = "EVALSHA";
    lens[0] = 7;
    argv[1] = r->sha[idx];
    lens[1] = 40;
    rc = bg__remote_command(r, argc, argv, lens, &rep, 1);
    if (rc != BG_OK)
        return rc;
    if (rep->type == REDIS_REPLY_ERROR && rep->str && strncmp(rep->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(rep);
        argv[0] = "EVAL";
        lens[0] = 4;
        argv[1] = src;
        lens[1] = strlen(src);
        rc = bg__remote_command(r, argc, argv, lens, &rep, 1);
        if (rc != BG_OK)
            return rc;
    }
#ifdef BG_TESTING
    if (inject == BG__REMOTE_TESTING_LOSE_REPLY) {
        freeReplyObject(rep);
        return bg__remote_testing_lose_connection(r);
    }
#endif
    if (rep->type == REDIS_REPLY_ERROR) {
        rc = bg__remote_error_reply(r, rep);
        freeReplyObject(rep);
        return rc;
    }
    *reply = rep;
    return BG_OK;
}

void bg__remote_discard(bg_remote *r, const char *key, int status)
{
    if (status == BG_ECONN)
        return;
    char keep[BG__REMOTE_ERRSTR];
    memcpy(keep, r->errstr, sizeof keep);
    const char *argv[2] = {"UNLINK", key};
    size_t lens[2] = {6, strlen(key)};
    redisReply *rep;
    if (bg__remote_command(r, 2, argv, lens, &rep, 0) == BG_OK)
        freeReplyObject(rep);
    memcpy(r->errstr, keep, sizeof keep);
}
