/* SPDX-License-Identifier: BSD-3-Clause */
/* bg-products-dbctl: a throwaway PostgreSQL or MariaDB (tests/support/
 * db_server.h) that a shell test can stop and start again, for the
 * service's outage tests.
 *
 *   coproc DB { exec bg-products-dbctl postgres; }
 *   read -r conninfo <&"${DB[0]}"
 *   echo stop >&"${DB[1]}";  read -r reply <&"${DB[0]}"    "stopped"
 *   echo start >&"${DB[1]}"; read -r reply <&"${DB[0]}"    "started" or "error ..."
 *   close the pipe (or SIGTERM): the server stops, its directory is removed.
 *
 * The first line is the conninfo, or "error ..." (exit 1) when the server
 * did not start. */
#include "db_server.h"

static void on_signal(int sig)
{
    (void)sig; /* interrupts fgets: the loop ends, the server is destroyed */
}

int main(int argc, char **argv)
{
    dbs_kind kind;
    if (argc == 2 && strcmp(argv[1], "postgres") == 0)
        kind = DBS_POSTGRES;
    else if (argc == 2 && strcmp(argv[1], "mariadb") == 0)
        kind = DBS_MARIADB;
    else {
        fprintf(stderr, "usage: %s postgres|mariadb\n", argv[0]);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    static dbs_server s;
    char err[512];
    if (dbs_start(&s, kind, err, sizeof err) != 0) {
        printf("error %s\n", err);
        return 1;
    }
    printf("%s\n", s.conninfo);
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "stop", 4) == 0) {
            dbs_stop(&s);
            printf("stopped\n");
        } else if (strncmp(line, "start", 5) == 0) {
            if (dbs_restart(&s, err, sizeof err) == 0)
                printf("started\n");
            else
                printf("error %s\n", err);
        } else {
            printf("error unknown command (stop, start)\n");
        }
        fflush(stdout);
    }
    dbs_destroy(&s);
    return 0;
}
