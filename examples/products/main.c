/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate-products: the reference service. A product catalogue over HTTP
 * whose reads go through the guard (<bloomgate/guard.h>): Bloom filter,
 * then the optional Redis cache, then the database (store.h).
 *
 * Startup, one log line per step on stderr: make room for the connections
 * in the open-file limit (fds_fit: a line only when it lowers
 * --max-connections), open the database (and seed it on first run),
 * connect the cache, build the filter, start the periodic rebuild, listen. A database or filter server that is
 * unreachable at startup is exit status 1; a Redis cache that is not is
 * only a warning (the guard skips a failing cache and goes to the
 * database). SIGINT or SIGTERM stops it: no new connections, the requests
 * in flight finish, everything is freed, exit status 0. README.md has the
 * flags, routes and metrics. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <bloomgate/guard.h>
#include <bloomgate/remote.h>
#include <bloomgate/version.h>

#include "config.h"
#include "http.h"
#include "metrics.h"
#include "store.h"

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void logf_(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "bloomgate-products: %s\n", line);
}

static double secs_since(uint64_t t0)
{
    return (double)(metrics_now_ns() - t0) / 1e9;
}

/* ---- signals: a self-pipe, so that any thread may take the signal ------- */

static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t n = write(sig_pipe[1], &b, 1);
    (void)n;
    errno = saved;
}

static int signals_install(void)
{
    if (pipe(sig_pipe) != 0) return -1;
    for (int i = 0; i < 2; i++) fcntl(sig_pipe[i], F_SETFD, FD_CLOEXEC);
    fcntl(sig_pipe[1], F_SETFL, O_NONBLOCK);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0) return -1;
    return 0;
}

static const char *signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "?";
}

static int signals_wait(void)
{
    unsigned char b = 0;
    for (;;) {
        ssize_t n = read(sig_pipe[0], &b, 1);
        if (n == 1) return b;
        if (n < 0 && errno == EINTR) continue;
        return 0;
    }
}

/* Lets the requests in flight finish before the stop: no new connection
 * is accepted, and each answer closes its connection. Waits until none is
 * left, timeout_s has passed, or another SIGINT/SIGTERM comes; what is
 * left then is cut by http_stop (a handler still running is waited for:
 * each has its own bound, such as SQLite's busy timeout). */
static void drain(app *a, unsigned timeout_s)
{
    if (http_quiesce(a) != 0) {
        logf_("cannot stop accepting connections alone: requests in flight are cut");
        return;
    }
    unsigned n = http_in_flight(a);
    if (n == 0) return;
    logf_("waiting up to %u s for %u request%s in flight", timeout_s, n, n == 1 ? "" : "s");
    uint64_t t0 = metrics_now_ns(), limit = (uint64_t)timeout_s * 1000000000u;
    while ((n = http_in_flight(a)) > 0) {
        uint64_t waited = metrics_now_ns() - t0;
        if (waited >= limit) {
            logf_("gave up after %u s: %u request%s in flight cut", timeout_s, n,
                  n == 1 ? "" : "s");
            return;
        }
        struct pollfd p = {.fd = sig_pipe[0], .events = POLLIN};
        if (poll(&p, 1, 10) == 1) {
            logf_("%s again: %u request%s in flight cut", signal_name(signals_wait()), n,
                  n == 1 ? "" : "s");
            return;
        }
    }
}

/* ---- periodic rebuild --------------------------------------------------- */

typedef struct rebuilder {
    bg_guard *guard;
    unsigned interval_s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    pthread_t thread;
} rebuilder;

static void *rebuild_main(void *arg)
{
    rebuilder *rb = arg;
    pthread_mutex_lock(&rb->mu);
    for (;;) {
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += (time_t)rb->interval_s;
        while (!rb->stop) {
            int rc = pthread_cond_timedwait(&rb->cv, &rb->mu, &deadline);
            if (rc == ETIMEDOUT) break;
        }
        if (rb->stop) break;
        pthread_mutex_unlock(&rb->mu);

        uint64_t t0 = metrics_now_ns();
        int rc = bg_guard_rebuild(rb->guard);
        metrics_observe_rebuild(metrics_now_ns() - t0);
        if (rc == BG_OK) {
            bg_guard_counters c;
            bg_guard_counters_get(rb->guard, &c);
            logf_("filter rebuilt in %.3f s with %llu keys", secs_since(t0),
                  (unsigned long long)c.filter_items);
        } else {
            const char *es = store_errstr();
            logf_("filter rebuild failed after %.3f s: %s%s%s (the old filter stays)",
                  secs_since(t0), bg_strerror(rc), es[0] ? ": " : "", es);
        }
        pthread_mutex_lock(&rb->mu);
    }
    pthread_mutex_unlock(&rb->mu);
    return NULL;
}

static int rebuilder_start(rebuilder *rb, bg_guard *g, unsigned interval_s)
{
    pthread_condattr_t ca;
    rb->guard = g;
    rb->interval_s = interval_s;
    rb->stop = 0;
    pthread_mutex_init(&rb->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&rb->cv, &ca);
    pthread_condattr_destroy(&ca);
    return pthread_create(&rb->thread, NULL, rebuild_main, rb);
}

static void rebuilder_stop(rebuilder *rb)
{
    pthread_mutex_lock(&rb->mu);
    rb->stop = 1;
    pthread_cond_signal(&rb->cv);
    pthread_mutex_unlock(&rb->mu);
    pthread_join(rb->thread, NULL); /* a rebuild in progress finishes first */
    pthread_cond_destroy(&rb->cv);
    pthread_mutex_destroy(&rb->mu);
}

/* ---- open files --------------------------------------------------------- */

/* File descriptors the service needs besides its HTTP connections, counted
 * on a running service (ls /proc/PID/fd) and rounded up:
 *   - per libmicrohttpd worker thread: its epoll fd and, on builds that use
 *     one, an inter-thread pipe (3);
 *   - per thread that reaches the database (the workers, the main thread,
 *     the rebuild thread): its database connection (SQLite: the file and
 *     its WAL; a server: a socket), its Redis cache connection and its
 *     remote filter connection, each made on first use (to a Redis
 *     Cluster, one per master: CLUSTER_FDS);
 *   - the listening socket, the signal pipe, stdin, stdout and stderr;
 *   - FD_MARGIN for the rest: SQLite's -shm, shared by a process's
 *     connections; the cache probe at startup; what the libraries open.
 * A worker whose database connection cannot be opened (EMFILE) answers
 * 503: this budget is what keeps a connection flood from doing that. */
#define FD_MARGIN 32u

/* The masters are not known before connecting: a cluster is counted as
 * the three of the smallest one (redis-cli --cluster create); a larger
 * cluster eats into FD_MARGIN. */
#define CLUSTER_FDS 3u

static unsigned redis_fds(const redis_url *u)
{
    return u->cluster ? CLUSTER_FDS : 1u;
}

static uint64_t fds_reserved(const products_config *c)
{
    uint64_t per_thread = (c->db == STORE_SQLITE ? 2u : 1u) +
                          (c->cache_redis ? redis_fds(&c->cache_url) : 0u) +
                          (c->filter_kind == BG_GUARD_FILTER_REMOTE ? redis_fds(&c->filter_url)
                                                                    : 0u);
    return (uint64_t)c->threads * 3u + ((uint64_t)c->threads + 2u) * per_thread + 6u + FD_MARGIN;
}

/* Raises the soft RLIMIT_NOFILE to the hard one, then makes room for
 * cfg->max_connections plus fds_reserved: the default is lowered to fit,
 * with one log line; a --max-connections given that does not fit is
 * refused. 0, or the exit status (2: that flag, 1: no room at all),
 * logged. */
static int fds_fit(products_config *c)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0; /* unknown: nothing to do */
    if (rl.rlim_cur != rl.rlim_max) {
        struct rlimit up = rl;
        up.rlim_cur = rl.rlim_max;
        /* An unlimited hard limit is capped by fs.nr_open: keep the soft one. */
        if (setrlimit(RLIMIT_NOFILE, &up) == 0) rl = up;
    }
    uint64_t reserved = fds_reserved(c);
    if (rl.rlim_cur == RLIM_INFINITY || (uint64_t)rl.rlim_cur >= reserved + c->max_connections)
        return 0;
    uint64_t limit = (uint64_t)rl.rlim_cur;
    uint64_t room = limit > reserved ? limit - reserved : 0;
    if (c->max_connections_set) {
        logf_("--max-connections %u does not fit the open-file limit of %llu (ulimit -n; the "
              "service needs %llu for itself): raise the hard limit or give at most %llu",
              c->max_connections, (unsigned long long)limit, (unsigned long long)reserved,
              (unsigned long long)room);
        return 2;
    }
    if (room == 0) {
        logf_("the open-file limit of %llu (ulimit -n) leaves no room for connections: the "
              "service needs %llu for itself", (unsigned long long)limit,
              (unsigned long long)reserved);
        return 1;
    }
    logf_("max-connections lowered from %u to %llu: the open-file limit is %llu (ulimit -n) "
          "and the service needs %llu for itself", c->max_connections, (unsigned long long)room,
          (unsigned long long)limit, (unsigned long long)reserved);
    c->max_connections = (unsigned)room;
    return 0;
}

/* libmicrohttpd splits the connection limit among its pool's threads: a
 * thread left with none never wakes, and stopping the daemon waited for it
 * for ever. So there are never more threads than connections: the default
 * thread count, or any after fds_fit lowered the connections, is lowered,
 * with one log line (config.c refuses the two flags given in conflict). */
static void threads_fit(products_config *c)
{
    if (c->threads <= c->max_connections) return;
    logf_("threads lowered from %u to %u, one per connection", c->threads, c->max_connections);
    c->threads = c->max_connections;
}

/* ---- startup ------------------------------------------------------------ */

/* "host:port", "unix:/path" or "cluster host:port (seeds h:p,...)": what
 * the log lines name (never the credentials). */
static void describe_redis(char *buf, size_t cap, const redis_url *u)
{
    int v6 = strchr(u->host, ':') != NULL;
    if (u->unix_socket[0]) snprintf(buf, cap, "unix:%s", u->unix_socket);
    else snprintf(buf, cap, "%s%s%s%s:%d%s%s%s", u->cluster ? "cluster " : "", v6 ? "[" : "",
                  u->host, v6 ? "]" : "", u->port, u->seeds[0] ? " (seeds " : "", u->seeds,
                  u->seeds[0] ? ")" : "");
}

/* Started without descriptor 0, 1 or 2, the service would hand it to the
 * next socket it opens (the listener, a Redis or database connection), and
 * its log lines would go there. /dev/null takes each closed one first. */
static int hold_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) == -1 && errno == EBADF &&
            open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd)
            return -1;
    return 0;
}

int main(int argc, char **argv)
{
    if (hold_std_fds() != 0) return 1;
    products_config cfg;
    int rc = config_parse(&cfg, argc, argv, stdout, stderr);
    if (rc == CONFIG_EXIT_HELP) return 0;
    if (rc != 0) return 2;
    signal(SIGPIPE, SIG_IGN);

    int status = 1;
    store *st = NULL;
    bg_guard_redis_cache *rcache = NULL;
    bg_guard *guard = NULL;
    app a = {0}; /* the HTTP side, filled in at step 5 */
    rebuilder rb;
    int rebuilding = 0;
    char err[512];
    const char *conninfo = cfg.db == STORE_SQLITE ? cfg.db_path : cfg.db_url;

    logf_("version %s, pid %ld", bg_version_string(), (long)getpid());
    rc = fds_fit(&cfg);
    if (rc != 0) return rc;
    threads_fit(&cfg);

    /* 1. the database */
    uint64_t t0 = metrics_now_ns();
    err[0] = '\0';
    rc = store_open(&st, cfg.db, conninfo, err, sizeof(err));
    if (rc != BG_OK) {
        logf_("cannot open the %s database: %s", store_kind_name(cfg.db),
              err[0] ? err : bg_strerror(rc));
        goto out;
    }
    if (cfg.seed > 0) {
        uint64_t seeded = 0;
        err[0] = '\0';
        rc = store_seed(st, cfg.seed, &seeded, err, sizeof(err));
        if (rc != BG_OK) {
            logf_("cannot seed the database: %s", err[0] ? err : bg_strerror(rc));
            goto out;
        }
        if (seeded) logf_("db: seeded %llu products in %.2f s", (unsigned long long)seeded,
                          secs_since(t0));
    }
    uint64_t count = 0;
    rc = store_count(st, &count);
    if (rc != BG_OK) {
        logf_("cannot count the products: %s: %s", bg_strerror(rc), store_errstr());
        goto out;
    }
    logf_("db: %s %s, %llu products", store_kind_name(cfg.db),
          cfg.db == STORE_SQLITE ? cfg.db_path : "(--db-url)", (unsigned long long)count);

    /* 2. the cache */
    bg_guard_options go;
    memset(&go, 0, sizeof(go));
    go.source = store_source(st);
    bg_remote_options cache_ro;
    if (cfg.cache_redis) {
        char where[sizeof(cfg.cache_url.host) + sizeof(cfg.cache_url.seeds) + 32];
        describe_redis(where, sizeof(where), &cfg.cache_url);
        redis_url_options(&cfg.cache_url, &cache_ro);
        cache_ro.command_timeout_ms = cfg.cache_timeout_ms;
        cache_ro.connect_timeout_ms = 2 * cfg.cache_timeout_ms;
        rc = bg_guard_redis_cache_new(&rcache, &cache_ro, "products:", cfg.cache_ttl_ms, &go.cache);
        if (rc != BG_OK) {
            logf_("cannot set up the redis cache: %s", bg_strerror(rc));
            goto out;
        }
        /* The adapter connects lazily: probe once to say now whether it
         * answers. Not answering is not fatal (header comment). */
        bg_remote *probe = NULL;
        rc = bg_remote_connect(&probe, &cache_ro);
        if (rc == BG_OK) logf_("cache: redis %s", where);
        else logf_("cache: redis %s does not answer (%s%s%s); starting anyway, lookups skip the "
                   "cache until it does", where, bg_strerror(rc),
                   probe && bg_remote_errstr(probe)[0] ? ": " : "",
                   probe ? bg_remote_errstr(probe) : "");
        bg_remote_close(probe);
    } else {
        logf_("cache: none");
    }
    go.cache_ttl_ms = cfg.cache_ttl_ms;
    go.negative_ttl_ms = cfg.negative_ttl_ms;

    /* 3. the filter */
    go.filter_kind = cfg.filter_kind;
    go.filter.variant = cfg.variant;
    go.filter.error_rate = cfg.error_rate;
    go.filter.capacity = cfg.capacity;
    go.headroom = cfg.headroom;
    bg_remote_options filter_ro;
    char fwhere[sizeof(cfg.filter_url.host) + sizeof(cfg.filter_url.seeds) + 32] = "";
    if (cfg.filter_kind == BG_GUARD_FILTER_REMOTE) {
        redis_url_options(&cfg.filter_url, &filter_ro);
        /* Longer than the cache's: a filter check has no fallback (an
         * error is a 503), so a slow answer beats none. */
        filter_ro.connect_timeout_ms = 500;
        filter_ro.command_timeout_ms = 1000;
        describe_redis(fwhere, sizeof(fwhere), &cfg.filter_url);
        go.remote = &filter_ro;
        go.remote_name = cfg.filter_name;
        go.remote_backend = cfg.filter_backend;
        go.remote_shards = cfg.filter_shards;
    }
    t0 = metrics_now_ns();
    rc = bg_guard_new(&guard, &go);
    if (rc != BG_OK) {
        const char *es = store_errstr();
        if (cfg.filter_kind == BG_GUARD_FILTER_REMOTE)
            logf_("cannot open the remote filter '%s' on redis %s: %s%s%s", cfg.filter_name,
                  fwhere, bg_strerror(rc), es[0] ? ": " : "", es);
        else
            logf_("cannot build the filter: %s%s%s", bg_strerror(rc), es[0] ? ": " : "", es);
        guard = NULL;
        goto out;
    }
    {
        bg_guard_counters c;
        bg_guard_counters_get(guard, &c);
        char shards[80] = "";
        if (c.filter_shards > 1) /* as it is: an existing filter keeps its own */
            snprintf(shards, sizeof(shards), ", %u shards", (unsigned)c.filter_shards);
        if (cfg.filter_kind == BG_GUARD_FILTER_LOCAL)
            logf_("filter: local %s, p=%g, built in %.3f s with %llu keys, %llu bytes",
                  config_variant_name(cfg.variant), cfg.error_rate, secs_since(t0),
                  (unsigned long long)c.filter_items, (unsigned long long)c.filter_bytes);
        else if (cfg.filter_kind == BG_GUARD_FILTER_REMOTE)
            logf_("filter: remote %s '%s' on redis %s%s, ready in %.3f s with %llu keys",
                  cfg.filter_backend == BG_REMOTE_MODULE ? "module" : "bitmap", cfg.filter_name,
                  fwhere, shards, secs_since(t0), (unsigned long long)c.filter_items);
        else
            logf_("filter: none (every lookup goes to the cache and the database)");
    }

    /* 4. periodic rebuild */
    if (cfg.rebuild_interval_s > 0) {
        if (rebuilder_start(&rb, guard, cfg.rebuild_interval_s) != 0) {
            logf_("cannot start the rebuild thread");
            goto out;
        }
        rebuilding = 1;
        logf_("rebuild: every %u s", cfg.rebuild_interval_s);
    }

    /* 5. HTTP */
    if (signals_install() != 0) {
        logf_("cannot install signal handlers: %s", strerror(errno));
        goto out;
    }
    a.guard = guard;
    a.store = st;
    a.cfg = &cfg;
    a.info = (metrics_info){store_kind_name(cfg.db), cfg.cache_redis ? "redis" : "none",
                            config_filter_name(cfg.filter_kind),
                            cfg.filter_kind == BG_GUARD_FILTER_LOCAL
                                ? config_variant_name(cfg.variant)
                            : cfg.filter_kind == BG_GUARD_FILTER_REMOTE
                                ? (cfg.filter_backend == BG_REMOTE_MODULE ? "module" : "bitmap")
                                : "none"};
    int port = 0;
    if (http_start(&a, &port, err, sizeof(err)) != 0) {
        logf_("%s", err);
        goto out;
    }
    logf_("listening on http://%s%s%s:%d (%u threads)", strchr(cfg.bind, ':') ? "[" : "",
          cfg.bind, strchr(cfg.bind, ':') ? "]" : "", port, cfg.threads);

    int sig = signals_wait();
    logf_("stopping (%s)", signal_name(sig));
    status = 0;
    drain(&a, cfg.shutdown_timeout_s);

out:
    http_stop(&a);
    if (rebuilding) rebuilder_stop(&rb);
    bg_guard_free(guard);
    bg_guard_redis_cache_free(rcache);
    store_close(st);
    if (status == 0) logf_("stopped");
    return status;
}
