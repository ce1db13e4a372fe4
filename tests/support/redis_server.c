/* SPDX-License-Identifier: BSD-3-Clause */
/* The servers behind redis_server.h. */
#include "redis_server.h"

#define TS_MAX_SERVERS 8
static pid_t ts_pids[TS_MAX_SERVERS];

void ts_kill_all(void)
{
    for (int i = 0; i < TS_MAX_SERVERS; i++)
        if (ts_pids[i] > 0) {
            kill(ts_pids[i], SIGCONT);
            kill(ts_pids[i], SIGKILL);
            waitpid(ts_pids[i], NULL, 0);
            ts_pids[i] = 0;
        }
}

void ts_track(pid_t pid, pid_t old)
{
    static int registered;
    if (!registered) {
        atexit(ts_kill_all);
        registered = 1;
    }
    for (int i = 0; i < TS_MAX_SERVERS; i++)
        if (ts_pids[i] == old) {
            ts_pids[i] = pid;
            return;
        }
}

int ts_free_port_in(int lo, int n)
{
    /* Calls in the same second get different candidates: a port handed
     * out but not yet bound still binds here. */
    static uint64_t calls;
    uint64_t st = (uint64_t)getpid() * 7919u + (uint64_t)time(NULL) + ++calls * 104729u;
    for (int tries = 0; tries < 200; tries++) {
        int port = lo + (int)(tu_next(&st) % (uint64_t)n);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(fd >= 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok)
            return port;
    }
    fail_msg("no free port in %d-%d", lo, lo + n - 1);
    return -1;
}

int ts_free_port(void)
{
    return ts_free_port_in(21000, 1000);
}

int ts_wait_ping(pid_t pid, int port)
{
    char want[32];
    snprintf(want, sizeof want, "process_id:%ld\r\n", (long)pid);
    for (int i = 0; i < 500; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return 0; /* it exited: the log says why (a port taken meanwhile?) */
        struct timeval tv = {0, 200000};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
        if (c && !c->err) {
            /* The tests run in parallel on random ports: the server that
             * answers must be our child, not another test's. */
            redisReply *r = redisCommand(c, "INFO server");
            int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, want);
            if (r)
                freeReplyObject(r);
            redisFree(c);
            if (ok)
                return 1;
        } else if (c) {
            redisFree(c);
        }
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

int ts_spawn_try(ts_server *s, const char *const *extra)
{
    const char *bin = getenv("REDIS_SERVER");
    if (!bin || !*bin)
        bin = "redis-server";
    char port[16];
    snprintf(port, sizeof port, "%d", s->port);
    pid_t parent = getpid();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int fd = open(tu_tmp_file(&s->dir, "log"), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        const char *argv[32] = {bin, "--port", port, "--bind", "127.0.0.1", "--dir", s->dir.path,
                                "--save", "", "--appendonly", "no", "--daemonize", "no",
                                "--protected-mode", "no"};
        int n = 15;
        if (s->module[0]) {
            argv[n++] = "--loadmodule";
            argv[n++] = s->module;
        }
        for (int i = 0; extra && extra[i] && n < 31; i++)
            argv[n++] = extra[i];
        argv[n] = NULL;
        execvp(bin, (char *const *)argv);
        _exit(127);
    }
    ts_track(pid, 0);
    s->pid = pid;
    if (ts_wait_ping(pid, s->port))
        return 1;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    ts_track(0, pid);
    s->pid = 0;
    return 0;
}

void ts_spawn_with(ts_server *s, const char *const *extra)
{
    if (!ts_spawn_try(s, extra)) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "cat %s >&2", tu_tmp_file(&s->dir, "log"));
        (void)!system(cmd);
        fail_msg("redis-server on port %d did not answer PING", s->port);
    }
}

void ts_spawn(ts_server *s)
{
    ts_spawn_with(s, NULL);
}

void ts_start(ts_server *s, const char *module)
{
    memset(s, 0, sizeof *s);
    if (module)
        snprintf(s->module, sizeof s->module, "%s", module);
    tu_tmpdir_make(&s->dir, "remote");
    for (int tries = 1; tries < 5; tries++) {
        s->port = ts_free_port();
        if (ts_spawn_try(s, NULL))
            return;
    }
    s->port = ts_free_port();
    ts_spawn(s);
}

void ts_kill(ts_server *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGCONT);
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        ts_track(0, s->pid);
        s->pid = 0;
    }
}

void ts_stop(ts_server *s)
{
    ts_kill(s);
    if (s->dir.path[0]) {
        tu_tmpdir_remove(&s->dir);
        s->dir.path[0] = '\0';
    }
}

void ts_start_module(ts_server *s)
{
    const char *mod = getenv("BLOOMGATE_MODULE");
    if (!mod || !*mod) {
        print_message("BLOOMGATE_MODULE not set: module test skipped\n");
        skip();
    }
    ts_start(s, mod);
}

redisContext *ts_raw(const ts_server *s)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisSetTimeout(c, tv);
    return c;
}

long long ts_int(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_INTEGER)
        fail_msg("expected an integer from %s, got type %d (%s)", fmt, r->type,
                 r->str ? r->str : "");
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

long long ts_count_keys(redisContext *c, const char *pattern)
{
    redisReply *r = redisCommand(c, "KEYS %s", pattern);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    long long n = (long long)r->elements;
    freeReplyObject(r);
    return n;
}
