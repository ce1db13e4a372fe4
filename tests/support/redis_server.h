/* SPDX-License-Identifier: BSD-3-Clause */
/* A real redis-server for the remote tests (redis_server.c): started on a
 * free loopback port in 21000-21999 with its own temporary directory,
 * killed afterwards.
 *
 * The child asks the kernel to SIGKILL it when the test process dies
 * (PR_SET_PDEATHSIG), and every server started is also killed by an atexit
 * handler, so a failing (longjmp-ing) or crashing test leaves no server
 * behind. $REDIS_SERVER names the binary (default: redis-server on PATH). */
#ifndef BG_TEST_REDIS_SERVER_H
#define BG_TEST_REDIS_SERVER_H

#include "test_tmpdir.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <hiredis/hiredis.h>

typedef struct ts_server {
    pid_t pid;
    int port;
    tu_tmpdir dir;
    char module[512]; /* "" or the module to load */
} ts_server;

/* Kills every server still tracked (the atexit handler). */
void ts_kill_all(void);

/* Tracks pid in old's place (0: a new entry; pid 0: forget old), so that
 * ts_kill_all kills it. */
void ts_track(pid_t pid, pid_t old);

/* A port in [lo, lo + n) nobody listens on now. */
int ts_free_port_in(int lo, int n);

/* A port in 21000-21999 nobody listens on now. */
int ts_free_port(void);

/* 1 once the server answers PING, 0 after ~5 s. */
int ts_wait_ping(pid_t pid, int port);

/* (Re)starts s's server on s->port in s->dir (it loads dump.rdb if any),
 * with `extra` (NULL-terminated, or NULL) appended to its arguments; 0 if
 * it exited or did not answer (s->pid is then 0). */
int ts_spawn_try(ts_server *s, const char *const *extra);

/* As ts_spawn_try, and a test failure (with the server's log) if it fails. */
void ts_spawn_with(ts_server *s, const char *const *extra);
void ts_spawn(ts_server *s);

/* A new server on a free port: another port if someone takes this one
 * between the check and the bind (the tests run in parallel). */
void ts_start(ts_server *s, const char *module);

/* SIGKILL, without cleaning the directory (ts_spawn can start it again). */
void ts_kill(ts_server *s);

/* Kills the server and removes its directory. */
void ts_stop(ts_server *s);

/* Starts a server with bloomgate.so loaded ($BLOOMGATE_MODULE, set by the
 * CMake tests), or skips the calling test when it is not set. */
void ts_start_module(ts_server *s);

/* A plain hiredis connection, for checks behind the library's back. */
redisContext *ts_raw(const ts_server *s);

/* One integer reply of a printf-style command. */
long long ts_int(redisContext *c, const char *fmt, ...);

/* How many keys match a KEYS pattern. */
long long ts_count_keys(redisContext *c, const char *pattern);

#endif
