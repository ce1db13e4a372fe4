/* The connection: connect, AUTH, timeouts, reconnect, and errors as values.
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
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "core/alloc_internal.h"
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

char *bg__strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = bg__malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
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

static int conn_error(bg_remote *r, const char *what)
{
    const char *why = r->c && r->c->errstr[0] ? r->c->errstr : "unknown error";
    r->broken = 1;
    return bg__remote_fail(r, BG_ECONN, "%s: %s", what, why);
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

int bg__remote_get_reply(bg_remote *r, redisReply **reply)
{
    void *rep = NULL;
    pipe_guard g;
    guard_begin(&g);
    int rc = redisGetReply(r->c, &rep);
    guard_end(&g);
    if (rc != REDIS_OK || !rep) {
        if (rep)
            freeReplyObject(rep);
        *reply = NULL;
        return conn_error(r, "no reply from Redis");
    }
    *reply = rep;
    return BG_OK;
}

int bg__remote_command(bg_remote *r, int argc, const char **argv, const size_t *lens,
                       redisReply **reply, int keep_errors)
{
    *reply = NULL;
    int rc = bg__remote_ready(r);
    if (rc != BG_OK)
        return rc;
    if (redisAppendCommandArgv(r->c, argc, argv, lens) != REDIS_OK)
        return conn_error(r, "cannot format the command");
    redisReply *rep;
    rc = bg__remote_get_reply(r, &rep);
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

/* Connects r->c anew (closing the old one) and authenticates. */
static int do_connect(bg_remote *r)
{
    if (r->c) {
        redisFree(r->c);
        r->c = NULL;
    }
    r->broken = 1;
    struct timeval ct = ms_to_tv(r->connect_timeout_ms);
    r->c = r->unix_socket ? redisConnectUnixWithTimeout(r->unix_socket, ct)
                          : redisConnectWithTimeout(r->host, r->port, ct);
    if (!r->c)
        return bg__remote_fail(r, BG_ENOMEM, "out of memory connecting");
    if (r->c->err) {
        if (r->unix_socket)
            return bg__remote_fail(r, BG_ECONN, "cannot connect to %s: %s", r->unix_socket,
                                   r->c->errstr);
        return bg__remote_fail(r, BG_ECONN, "cannot connect to %s:%d: %s", r->host, r->port,
                               r->c->errstr);
    }
    if (redisSetTimeout(r->c, ms_to_tv(r->command_timeout_ms)) != REDIS_OK)
        return conn_error(r, "cannot set the timeout");
    r->broken = 0;
    if (r->password) {
        const char *argv[3] = {"AUTH", r->username ? r->username : r->password, r->password};
        size_t lens[3] = {4, strlen(argv[1]), strlen(r->password)};
        redisReply *rep;
        int rc = bg__remote_command(r, r->username ? 3 : 2, argv, lens, &rep, 0);
        if (rc != BG_OK) {
            r->broken = 1; /* an unauthenticated connection is not usable */
            return rc;
        }
        freeReplyObject(rep);
    }
    r->errstr[0] = '\0';
    return BG_OK;
}

int bg__remote_ready(bg_remote *r)
{
    r->errstr[0] = '\0';
    if (!r->broken && r->c)
        return BG_OK;
    return do_connect(r);
}

int bg_remote_connect(bg_remote **out, const bg_remote_options *o)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!o || o->port < 0 || o->port > 65535)
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
        bg_remote_free(r);
        return BG_ENOMEM;
    }
    r->port = o->port ? o->port : 6379;
    r->connect_timeout_ms = o->connect_timeout_ms ? o->connect_timeout_ms : 2000;
    r->command_timeout_ms = o->command_timeout_ms ? o->command_timeout_ms : 2000;
    int rc = do_connect(r);
    if (rc == BG_ENOMEM) {
        bg_remote_free(r);
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

void bg_remote_free(bg_remote *r)
{
    if (!r)
        return;
    if (r->c)
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
