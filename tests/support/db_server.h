/* SPDX-License-Identifier: BSD-3-Clause */
/* Throwaway PostgreSQL and MariaDB servers for tests and the demo: each in
 * its own temporary directory, on a free loopback port, run as an
 * unprivileged user, stopped and removed afterwards (db_server.c, in the
 * bg_test_db library, which links libpq and libmariadb). No cmocka:
 * functions return 0 or -1 with a message.
 *
 *   dbs_server s;
 *   char err[512];
 *   if (dbs_start(&s, DBS_POSTGRES, err, sizeof err) != 0) ... err says why
 *   store_open(&st, STORE_POSTGRES, s.conninfo, ...);
 *   dbs_stop(&s);                    server down, data kept (outage tests)
 *   dbs_restart(&s, err, sizeof err); up again: same port, data, conninfo
 *   dbs_destroy(&s);                 down, directory removed
 *
 * WHAT IT RUNS
 * PostgreSQL: <bin>/initdb (-U bg, trust auth, UTF8, C locale, --no-sync)
 * into DIR/data, then `postgres -D DIR/data -k DIR -p PORT -h 127.0.0.1`,
 * then CREATE DATABASE bgtest. conninfo:
 *   host=127.0.0.1 port=PORT user=bg dbname=bgtest
 * <bin> is $BG_PG_BIN, else the newest /usr/lib/postgresql/<v>/bin.
 * MariaDB: `mariadb-install-db --no-defaults --auth-root-authentication-
 * method=normal --skip-test-db --skip-name-resolve` into DIR/data, then
 * `mariadbd --no-defaults --datadir --socket=DIR/mysqld.sock --port
 * --bind-address=127.0.0.1 --skip-name-resolve`, then a database bgtest and
 * a user bg (password bgpass) allowed from 127.0.0.1 and localhost.
 * conninfo:
 *   mysql://bg:bgpass@127.0.0.1:PORT/bgtest
 * Binaries: $BG_MARIADBD and $BG_MARIADB_INSTALL_DB, else found on PATH,
 * /usr/sbin or /usr/bin. Server logs: DIR/log (dbs_log_tail prints it).
 *
 * USERS
 * Run as root (CI, make test), the servers run as `postgres` / `mysql`
 * (the Debian packages' users), or as $BG_DB_USER, or, when none of these
 * exists, as a system user `bgtest` made with useradd. The servers refuse
 * root, hence this. Run as another user, they run as that user.
 *
 * PORTS
 * A port in [$BG_DB_PORT_MIN, $BG_DB_PORT_MAX] (default 24500-24999) that
 * nobody listens on; if the server still fails to bind it (another test
 * took it meanwhile), another port is tried.
 *
 * CLEANUP
 * The server is a child of the calling thread: it asks the kernel for a
 * signal when that thread dies (PR_SET_PDEATHSIG: SIGQUIT for PostgreSQL,
 * an immediate shutdown that frees its shared memory; SIGKILL for MariaDB),
 * and an atexit handler stops every server still running and removes its
 * directory. So a failing test (cmocka longjmps) or a crash leaves nothing
 * running. Call dbs_start from a thread that outlives the server (the main
 * thread). Not thread-safe: one thread manages the servers. */
#ifndef BG_TEST_DB_SERVER_H
#define BG_TEST_DB_SERVER_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef enum dbs_kind { DBS_POSTGRES = 0, DBS_MARIADB = 1 } dbs_kind;

typedef struct dbs_server {
    dbs_kind kind;
    pid_t pid;          /* the server; 0 while stopped */
    int port;
    char dir[256];      /* the temporary directory: data/, the socket, log */
    char conninfo[512]; /* for store_open (STORE_POSTGRES / STORE_MARIADB) */
    char user[64];      /* the OS user it runs as */
    uid_t uid;
    gid_t gid;
} dbs_server;

/* Makes a fresh server of `kind` and starts it (WHAT IT RUNS above): 0, or
 * -1 with a message in err (nothing left behind). Takes seconds. */
int dbs_start(dbs_server *s, dbs_kind kind, char *err, size_t errlen);

/* Stops the server (a clean shutdown; SIGKILL after 20 s). The data stay
 * for dbs_restart. Clients see their connections closed. */
void dbs_stop(dbs_server *s);

/* Starts a stopped server again, on the same port with the same data and
 * conninfo: 0, or -1 with a message. */
int dbs_restart(dbs_server *s, char *err, size_t errlen);

/* Stops the server and removes its directory. s is then unused. */
void dbs_destroy(dbs_server *s);

/* Prints the last ~4 KB of the server's log to stderr. */
void dbs_log_tail(const dbs_server *s);

/* rm -rf path (no symlink is followed). */
void dbs_rmtree(const char *path);

#endif
