/* SPDX-License-Identifier: BSD-3-Clause */
/* bg-dbserver: a throwaway PostgreSQL or MariaDB (db_server.h) for scripts.
 *
 *   bg-dbserver postgres|mariadb
 *
 * Starts the server, prints one line, its conninfo, on stdout, then runs
 * until it gets SIGTERM, SIGINT or SIGHUP, or, when its standard input is a
 * pipe, until that pipe reaches end of file (so a coprocess stops with the
 * script); then it stops the server and removes its directory. A script:
 *
 *   coproc DB { exec bg-dbserver postgres; }     (exec: DB_PID is bg-dbserver)
 *   read -r conninfo <&"${DB[0]}"
 *   ... use "$conninfo" ...
 *   kill "$DB_PID"; wait "$DB_PID"               (or close ${DB[1]}: EOF stops it)
 *
 * If bg-dbserver dies (even SIGKILL), the server gets its parent-death
 * signal and stops too. Exit status 0, or 1 when the server did not start
 * (the reason on stderr). */
#include "db_server.h"

#include <errno.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

int main(int argc, char **argv)
{
    dbs_kind kind;
    if (argc == 2 && (strcmp(argv[1], "postgres") == 0 || strcmp(argv[1], "postgresql") == 0))
        kind = DBS_POSTGRES;
    else if (argc == 2 && (strcmp(argv[1], "mariadb") == 0 || strcmp(argv[1], "mysql") == 0))
        kind = DBS_MARIADB;
    else {
        fprintf(stderr, "usage: %s postgres|mariadb\n", argv[0]);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    static dbs_server s;
    char err[512];
    if (dbs_start(&s, kind, err, sizeof err) != 0) {
        fprintf(stderr, "bg-dbserver: %s\n", err);
        return 1;
    }
    printf("%s\n", s.conninfo);
    fflush(stdout);
    struct stat in;
    int watch_stdin = fstat(0, &in) == 0 && S_ISFIFO(in.st_mode);
    while (!stop_requested) {
        struct pollfd p = {.fd = watch_stdin ? 0 : -1, .events = POLLIN};
        int n = poll(&p, 1, 500);
        if (n > 0) {
            char buf[256];
            if (read(0, buf, sizeof buf) <= 0)
                break; /* EOF: whoever started us is gone */
        } else if (n < 0 && errno != EINTR) {
            break;
        }
        int status;
        if (waitpid(s.pid, &status, WNOHANG) == s.pid) {
            s.pid = 0;
            fprintf(stderr, "bg-dbserver: the server exited\n");
            dbs_log_tail(&s);
            dbs_destroy(&s);
            return 1;
        }
    }
    dbs_destroy(&s);
    return 0;
}
