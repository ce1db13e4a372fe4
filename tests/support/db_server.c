/* SPDX-License-Identifier: BSD-3-Clause */
/* The servers behind db_server.h (its first comment says what runs, as
 * whom, on which ports, and how everything is cleaned up). */
#include "db_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <libpq-fe.h>
#include <mysql.h>

/* From <grp.h>, which declares it only under _DEFAULT_SOURCE; this file
 * asks for POSIX alone. */
extern int setgroups(size_t n, const gid_t *groups);

#define DBS_MAX 8
static dbs_server *dbs__live[DBS_MAX];

static int dbs__fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int dbs__fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static void dbs__sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static double dbs__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void dbs_rmtree(const char *path)
{
    struct stat st;
    if (!path[0] || lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                    continue;
                char sub[1024];
                if ((size_t)snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < sizeof sub)
                    dbs_rmtree(sub);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* The signal that stops the server cleanly and fast. */
static int dbs__stop_signal(const dbs_server *s)
{
    return s->kind == DBS_POSTGRES ? SIGINT /* fast shutdown */ : SIGTERM;
}

/* Stops pid: the clean signal, then SIGKILL after timeout_s. */
static void dbs__stop_pid(pid_t pid, int sig, double timeout_s)
{
    if (pid <= 0)
        return;
    kill(pid, sig);
    double end = dbs__now() + timeout_s;
    while (dbs__now() < end) {
        pid_t w = waitpid(pid, NULL, WNOHANG);
        if (w == pid || (w < 0 && errno == ECHILD))
            return;
        dbs__sleep_ms(20);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void dbs__cleanup_all(void)
{
    for (int i = 0; i < DBS_MAX; i++)
        if (dbs__live[i]) {
            dbs_server *s = dbs__live[i];
            dbs__live[i] = NULL;
            dbs__stop_pid(s->pid, s->kind == DBS_POSTGRES ? SIGQUIT : SIGTERM, 10);
            s->pid = 0;
            dbs_rmtree(s->dir);
            s->dir[0] = '\0';
        }
}

static void dbs__track(dbs_server *s, int on)
{
    static int registered;
    if (!registered) {
        atexit(dbs__cleanup_all);
        registered = 1;
    }
    for (int i = 0; i < DBS_MAX; i++)
        if (dbs__live[i] == s)
            dbs__live[i] = NULL;
    if (on)
        for (int i = 0; i < DBS_MAX; i++)
            if (!dbs__live[i]) {
                dbs__live[i] = s;
                return;
            }
}

/* "DIR/name" in one of four static buffers. */
static const char *dbs__path(const dbs_server *s, const char *name)
{
    static char buf[4][400];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, 400, "%s/%s", s->dir, name);
    return p;
}

void dbs_log_tail(const dbs_server *s)
{
    FILE *f = fopen(dbs__path(s, "log"), "r");
    if (!f)
        return;
    if (fseek(f, -4096, SEEK_END) != 0)
        fseek(f, 0, SEEK_SET);
    char buf[4097];
    size_t n = fread(buf, 1, 4096, f);
    buf[n] = '\0';
    fclose(f);
    fprintf(stderr, "---- %s ----\n%s\n----\n", dbs__path(s, "log"), buf);
}

static int dbs__env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

/* A loopback port in the range that nobody listens on now, or -1. */
static int dbs__free_port(void)
{
    int lo = dbs__env_int("BG_DB_PORT_MIN", 24500), hi = dbs__env_int("BG_DB_PORT_MAX", 24999);
    if (lo < 1 || hi > 65535 || hi < lo)
        return -1;
    static unsigned seed;
    if (!seed)
        seed = (unsigned)getpid() * 7919u ^ (unsigned)time(NULL);
    for (int tries = 0; tries < 200; tries++) {
        seed = seed * 1103515245u + 12345u;
        int port = lo + (int)((seed >> 8) % (unsigned)(hi - lo + 1));
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            return -1;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok)
            return port;
    }
    return -1;
}

/* Which OS user runs the server (USERS in db_server.h). */
static int dbs__pick_user(dbs_server *s, char *err, size_t errlen)
{
    if (geteuid() != 0) {
        struct passwd *pw = getpwuid(geteuid());
        snprintf(s->user, sizeof s->user, "%s", pw ? pw->pw_name : "?");
        s->uid = geteuid();
        s->gid = getegid();
        return 0;
    }
    const char *env = getenv("BG_DB_USER");
    const char *cands[3] = {env && *env ? env : NULL,
                            s->kind == DBS_POSTGRES ? "postgres" : "mysql", "bgtest"};
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < 3; i++) {
            struct passwd *pw = cands[i] ? getpwnam(cands[i]) : NULL;
            if (pw && pw->pw_uid != 0) {
                snprintf(s->user, sizeof s->user, "%s", pw->pw_name);
                s->uid = pw->pw_uid;
                s->gid = pw->pw_gid;
                return 0;
            }
        }
        if (pass == 0 &&
            system("useradd -r -M -d /nonexistent -s /usr/sbin/nologin bgtest >/dev/null 2>&1") ==
                -1)
            break;
    }
    return dbs__fail(err, errlen, "no unprivileged user to run the database server as "
                                  "(tried $BG_DB_USER, postgres/mysql, bgtest)");
}

/* Forks and execs argv as s's user in s->dir, output to DIR/log, with the
 * parent-death signal pdeath (0: none). The child's pid, or -1. */
static pid_t dbs__spawn(const dbs_server *s, char *const *argv, int pdeath)
{
    const char *log = dbs__path(s, "log");
    char logpath[400];
    snprintf(logpath, sizeof logpath, "%s", log);
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
        dup2(devnull, 0);
        close(devnull);
    }
    if (geteuid() == 0) {
        /* Credentials first: changing them clears the parent-death signal. */
        if (setgroups(0, NULL) != 0 || setgid(s->gid) != 0 || setuid(s->uid) != 0) {
            perror("dbs: cannot drop privileges");
            _exit(126);
        }
    }
    if (pdeath)
        prctl(PR_SET_PDEATHSIG, pdeath);
    if (getppid() != parent)
        _exit(125);
    if (chdir(s->dir) != 0)
        _exit(124);
    setenv("LC_ALL", "C", 1);
    setenv("HOME", s->dir, 1);
    unsetenv("PGDATA");
    unsetenv("PGHOST");
    unsetenv("PGPORT");
    execvp(argv[0], argv);
    fprintf(stderr, "dbs: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Runs argv to completion (at most timeout_s). 0 if it exited 0. */
static int dbs__run(const dbs_server *s, char *const *argv, double timeout_s, char *err,
                    size_t errlen)
{
    pid_t pid = dbs__spawn(s, argv, SIGKILL);
    if (pid < 0)
        return dbs__fail(err, errlen, "fork: %s", strerror(errno));
    double end = dbs__now() + timeout_s;
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (dbs__now() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            dbs_log_tail(s);
            return dbs__fail(err, errlen, "%s did not finish in %.0f s", argv[0], timeout_s);
        }
        dbs__sleep_ms(20);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        dbs_log_tail(s);
        return dbs__fail(err, errlen, "%s failed (status %d; log above, %s)", argv[0],
                         WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status),
                         dbs__path(s, "log"));
    }
    return 0;
}

static int dbs__exists(const char *path)
{
    return access(path, X_OK) == 0;
}

/* The directory of initdb and postgres. */
static int dbs__pg_bin(char *out, size_t cap)
{
    const char *env = getenv("BG_PG_BIN");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return 0;
    }
    int best = -1;
    DIR *d = opendir("/usr/lib/postgresql");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            int v = atoi(e->d_name);
            char p[300];
            snprintf(p, sizeof p, "/usr/lib/postgresql/%s/bin/postgres", e->d_name);
            if (v > best && dbs__exists(p))
                best = v;
        }
        closedir(d);
    }
    if (best < 0)
        return -1;
    snprintf(out, cap, "/usr/lib/postgresql/%d/bin", best);
    return 0;
}

/* The path of a binary: $env, else PATH, /usr/sbin, /usr/bin. */
static int dbs__find(const char *env, const char *name, char *out, size_t cap)
{
    const char *v = getenv(env);
    if (v && *v) {
        snprintf(out, cap, "%s", v);
        return 0;
    }
    const char *path = getenv("PATH");
    char buf[2048];
    snprintf(buf, sizeof buf, "%s:/usr/sbin:/usr/bin:/usr/local/sbin:/usr/local/bin",
             path ? path : "");
    for (char *save = NULL, *dir = strtok_r(buf, ":", &save); dir;
         dir = strtok_r(NULL, ":", &save)) {
        snprintf(out, cap, "%s/%s", dir, name);
        if (dbs__exists(out))
            return 0;
    }
    return -1;
}

/* ---- PostgreSQL ---- */

static int dbs__pg_exec(const char *conninfo, const char *sql, char *err, size_t errlen)
{
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK) {
        dbs__fail(err, errlen, "postgres: %s", PQerrorMessage(c));
        PQfinish(c);
        return -1;
    }
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok)
        dbs__fail(err, errlen, "postgres: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    return ok ? 0 : -1;
}

static int dbs__pg_launch(dbs_server *s, char *err, size_t errlen)
{
    char bin[300], exe[400], port[16], sock[300], data[300];
    if (dbs__pg_bin(bin, sizeof bin) != 0)
        return dbs__fail(err, errlen, "PostgreSQL server binaries not found under "
                                      "/usr/lib/postgresql (run scripts/deps.sh, or set "
                                      "BG_PG_BIN)");
    snprintf(exe, sizeof exe, "%s/postgres", bin);
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(sock, sizeof sock, "%s", s->dir);
    snprintf(data, sizeof data, "%s", dbs__path(s, "data"));
    char *argv[] = {exe, "-D", data, "-k", sock, "-p", port, "-h", "127.0.0.1", NULL};
    s->pid = dbs__spawn(s, argv, SIGQUIT);
    if (s->pid < 0) {
        s->pid = 0;
        return dbs__fail(err, errlen, "fork: %s", strerror(errno));
    }
    dbs__track(s, 1);
    char ping[256];
    snprintf(ping, sizeof ping, "host=127.0.0.1 port=%d user=bg dbname=postgres connect_timeout=2",
             s->port);
    double end = dbs__now() + 60;
    while (dbs__now() < end) {
        if (PQping(ping) == PQPING_OK)
            return 0;
        int status;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            s->pid = 0;
            return 1; /* exited: maybe the port was taken; the caller retries */
        }
        dbs__sleep_ms(50);
    }
    dbs_log_tail(s);
    return dbs__fail(err, errlen, "postgres on port %d did not answer within 60 s", s->port);
}

static int dbs__pg_init(dbs_server *s, char *err, size_t errlen)
{
    char bin[300], exe[400], data[300];
    if (dbs__pg_bin(bin, sizeof bin) != 0)
        return dbs__fail(err, errlen, "PostgreSQL server binaries not found under "
                                      "/usr/lib/postgresql (run scripts/deps.sh, or set "
                                      "BG_PG_BIN)");
    snprintf(exe, sizeof exe, "%s/initdb", bin);
    snprintf(data, sizeof data, "%s", dbs__path(s, "data"));
    char *argv[] = {exe, "-D", data, "-U", "bg", "--auth=trust", "-E", "UTF8", "--locale=C",
                    "--no-sync", "--no-instructions", NULL};
    return dbs__run(s, argv, 120, err, errlen);
}

/* ---- MariaDB ---- */

static int dbs__my_root(const dbs_server *s, MYSQL **out)
{
    MYSQL *m = mysql_init(NULL);
    if (!m)
        return -1;
    unsigned t = 2;
    mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &t);
    if (!mysql_real_connect(m, NULL, "root", "", NULL, 0, dbs__path(s, "mysqld.sock"), 0)) {
        mysql_close(m);
        return -1;
    }
    *out = m;
    return 0;
}

static int dbs__my_launch(dbs_server *s, char *err, size_t errlen)
{
    char exe[400];
    if (dbs__find("BG_MARIADBD", "mariadbd", exe, sizeof exe) != 0)
        return dbs__fail(err, errlen, "mariadbd not found (run scripts/deps.sh, which installs "
                                      "mariadb-server, or set BG_MARIADBD)");
    char a_data[320], a_sock[320], a_port[32], a_pid[320], a_tmp[320];
    snprintf(a_data, sizeof a_data, "--datadir=%s", dbs__path(s, "data"));
    snprintf(a_sock, sizeof a_sock, "--socket=%s", dbs__path(s, "mysqld.sock"));
    snprintf(a_port, sizeof a_port, "--port=%d", s->port);
    snprintf(a_pid, sizeof a_pid, "--pid-file=%s", dbs__path(s, "mysqld.pid"));
    snprintf(a_tmp, sizeof a_tmp, "--tmpdir=%s", s->dir);
    char *argv[] = {exe, "--no-defaults", a_data, a_sock, a_port, a_pid, a_tmp,
                    "--bind-address=127.0.0.1", "--skip-name-resolve", "--skip-log-bin",
                    "--innodb-use-native-aio=0", NULL}; /* errors: stderr, i.e. DIR/log */
    s->pid = dbs__spawn(s, argv, SIGKILL);
    if (s->pid < 0) {
        s->pid = 0;
        return dbs__fail(err, errlen, "fork: %s", strerror(errno));
    }
    dbs__track(s, 1);
    double end = dbs__now() + 90;
    while (dbs__now() < end) {
        MYSQL *m;
        if (dbs__my_root(s, &m) == 0) {
            mysql_close(m);
            return 0;
        }
        int status;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            s->pid = 0;
            return 1; /* exited: maybe the port was taken; the caller retries */
        }
        dbs__sleep_ms(50);
    }
    dbs_log_tail(s);
    return dbs__fail(err, errlen, "mariadbd on port %d did not answer within 90 s", s->port);
}

static int dbs__my_init(dbs_server *s, char *err, size_t errlen)
{
    char exe[400];
    if (dbs__find("BG_MARIADB_INSTALL_DB", "mariadb-install-db", exe, sizeof exe) != 0)
        return dbs__fail(err, errlen, "mariadb-install-db not found (run scripts/deps.sh, "
                                      "which installs mariadb-server)");
    char a_data[320];
    snprintf(a_data, sizeof a_data, "--datadir=%s", dbs__path(s, "data"));
    char *argv[] = {exe, "--no-defaults", a_data, "--auth-root-authentication-method=normal",
                    "--skip-test-db", "--skip-name-resolve", NULL};
    return dbs__run(s, argv, 180, err, errlen);
}

static int dbs__my_setup(dbs_server *s, char *err, size_t errlen)
{
    MYSQL *m;
    if (dbs__my_root(s, &m) != 0)
        return dbs__fail(err, errlen, "mariadb: cannot connect as root");
    static const char *const sql[] = {
        "CREATE DATABASE IF NOT EXISTS bgtest CHARACTER SET utf8mb4",
        "CREATE USER IF NOT EXISTS 'bg'@'127.0.0.1' IDENTIFIED BY 'bgpass'",
        "CREATE USER IF NOT EXISTS 'bg'@'localhost' IDENTIFIED BY 'bgpass'",
        "GRANT ALL ON bgtest.* TO 'bg'@'127.0.0.1'",
        "GRANT ALL ON bgtest.* TO 'bg'@'localhost'",
    };
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++)
        if (mysql_query(m, sql[i]) != 0) {
            dbs__fail(err, errlen, "mariadb: %s: %s", sql[i], mysql_error(m));
            mysql_close(m);
            return -1;
        }
    mysql_close(m);
    return 0;
}

/* ---- the API ---- */

/* Starts the server process on s->port with the existing data: 0, 1 (it
 * exited at once: port taken?) or -1. */
static int dbs__launch(dbs_server *s, char *err, size_t errlen)
{
    return s->kind == DBS_POSTGRES ? dbs__pg_launch(s, err, errlen)
                                   : dbs__my_launch(s, err, errlen);
}

/* Launches, trying other ports while the server exits at once. */
static int dbs__launch_retry(dbs_server *s, int may_move, char *err, size_t errlen)
{
    for (int tries = 0; tries < 5; tries++) {
        int rc = dbs__launch(s, err, errlen);
        if (rc <= 0)
            return rc;
        if (!may_move)
            break;
        int port = dbs__free_port();
        if (port < 0)
            break;
        s->port = port;
    }
    dbs_log_tail(s);
    return dbs__fail(err, errlen, "%s exited at start (log above)",
                     s->kind == DBS_POSTGRES ? "postgres" : "mariadbd");
}

static void dbs__set_conninfo(dbs_server *s)
{
    if (s->kind == DBS_POSTGRES)
        snprintf(s->conninfo, sizeof s->conninfo,
                 "host=127.0.0.1 port=%d user=bg dbname=bgtest", s->port);
    else
        snprintf(s->conninfo, sizeof s->conninfo, "mysql://bg:bgpass@127.0.0.1:%d/bgtest",
                 s->port);
}

int dbs_start(dbs_server *s, dbs_kind kind, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->kind = kind;
    if (err && errlen)
        err[0] = '\0';
    if (dbs__pick_user(s, err, errlen) != 0)
        return -1;
    const char *base = getenv("BG_DB_TMPDIR");
    snprintf(s->dir, sizeof s->dir, "%s/bg-%s-XXXXXX", base && *base ? base : "/tmp",
             kind == DBS_POSTGRES ? "pg" : "my");
    if (!mkdtemp(s->dir)) {
        s->dir[0] = '\0';
        return dbs__fail(err, errlen, "mkdtemp: %s", strerror(errno));
    }
    dbs__track(s, 1);
    if (geteuid() == 0 && chown(s->dir, s->uid, s->gid) != 0) {
        dbs__fail(err, errlen, "chown %s: %s", s->dir, strerror(errno));
        goto fail;
    }
    s->port = dbs__free_port();
    if (s->port < 0) {
        dbs__fail(err, errlen, "no free port in $BG_DB_PORT_MIN..$BG_DB_PORT_MAX");
        goto fail;
    }
    if ((kind == DBS_POSTGRES ? dbs__pg_init(s, err, errlen) : dbs__my_init(s, err, errlen)) != 0)
        goto fail;
    if (dbs__launch_retry(s, 1, err, errlen) != 0)
        goto fail;
    if (kind == DBS_POSTGRES) {
        char ci[256];
        snprintf(ci, sizeof ci, "host=127.0.0.1 port=%d user=bg dbname=postgres", s->port);
        if (dbs__pg_exec(ci, "CREATE DATABASE bgtest", err, errlen) != 0)
            goto fail;
    } else if (dbs__my_setup(s, err, errlen) != 0) {
        goto fail;
    }
    dbs__set_conninfo(s);
    return 0;
fail:
    dbs__stop_pid(s->pid, SIGKILL, 0);
    s->pid = 0;
    dbs_rmtree(s->dir);
    s->dir[0] = '\0';
    dbs__track(s, 0);
    return -1;
}

void dbs_stop(dbs_server *s)
{
    dbs__stop_pid(s->pid, dbs__stop_signal(s), 20);
    s->pid = 0;
}

int dbs_restart(dbs_server *s, char *err, size_t errlen)
{
    if (s->pid > 0)
        return 0;
    if (!s->dir[0])
        return dbs__fail(err, errlen, "dbs_restart: the server was destroyed");
    return dbs__launch_retry(s, 0, err, errlen);
}

void dbs_destroy(dbs_server *s)
{
    dbs_stop(s);
    dbs_rmtree(s->dir);
    s->dir[0] = '\0';
    dbs__track(s, 0);
}
