/* SPDX-License-Identifier: BSD-3-Clause */
/* Flags of bloomgate-products (getopt_long). Every value is checked here,
 * before anything starts: a bad one is a message naming the flag and its
 * range, and exit status 2. */
#define _POSIX_C_SOURCE 200809L

#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bloomgate/sizing.h>
#include <bloomgate/version.h>

#define DEFAULT_PORT 8080
#define DEFAULT_BIND "127.0.0.1"
#define DEFAULT_DB_PATH "products.db"
#define DEFAULT_SEED UINT64_C(1000000)
#define DEFAULT_REDIS "redis://127.0.0.1:6379"
#define DEFAULT_FILTER_NAME "products"
#define DEFAULT_ERROR_RATE 0.01
#define DEFAULT_HEADROOM 2.0
#define DEFAULT_CACHE_TTL_MS UINT64_C(300000)
/* The cache adapter's own command timeout (redis_cache.c): a cache slower
 * than that costs more than the database it saves. */
#define DEFAULT_CACHE_TIMEOUT_MS 100u
#define DEFAULT_NEGATIVE_TTL_MS UINT64_C(30000)
#define DEFAULT_MAX_CONNECTIONS 1024u
#define DEFAULT_TIMEOUT_S 30u
/* Below the 30 s that a container runtime or systemd gives before SIGKILL
 * (Kubernetes' grace period; systemd's TimeoutStopSec is 90 s), and above
 * the 5 s that a request may wait for SQLite's lock. */
#define DEFAULT_SHUTDOWN_TIMEOUT_S 10u
#define DEFAULT_CHECK_SAMPLE_LOCAL 1u
#define DEFAULT_CHECK_SAMPLE_REMOTE 64u

/* The smallest --error-rate: the blocked variant's floor (sizing.h), for
 * every variant, so that the range does not depend on the others. Below
 * 2^-32 the standard and counting variants are held to BG_MAX_K probes and
 * their bits per key grow without bound (1e-300 needs ~10^11 per key). */
#define MIN_ERROR_RATE BG_BLOCKED_MIN_P

/* The thread pool: 2 x CPUs. The handlers block on the database, so a
 * thread more per CPU overlaps those waits; measured with the demo on 2
 * CPUs, 8 or 16 threads gave no more requests/s than 4 for any database
 * and a far worse p99 (README.md). */
static unsigned default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > 256) n = 256;
    return (unsigned)n * 2u;
}

const char *config_variant_name(bg_variant v)
{
    switch (v) {
    case BG_VARIANT_STANDARD: return "standard";
    case BG_VARIANT_BLOCKED: return "blocked";
    case BG_VARIANT_COUNTING: return "counting";
    case BG_VARIANT_SCALABLE: return "scalable";
    case BG_VARIANT_REDISBLOOM: return "redisbloom";
    }
    return "?";
}

const char *config_filter_name(bg_guard_filter_kind k)
{
    switch (k) {
    case BG_GUARD_FILTER_LOCAL: return "local";
    case BG_GUARD_FILTER_REMOTE: return "remote";
    case BG_GUARD_FILTER_NONE: return "none";
    }
    return "?";
}

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
        "usage: %s [options]\n"
        "\n"
        "The products reference service: GET/POST/DELETE /products, /metrics, /healthz,\n"
        "with a Bloom filter (bloomgate_guard) in front of the cache and the database.\n"
        "\n"
        "HTTP:\n"
        "  --port N               TCP port, 0 for any free one (default %d)\n"
        "  --bind ADDR            IPv4 or IPv6 address to listen on, not a host name\n"
        "                         (default %s)\n"
        "  --threads N            worker threads, 1..1024 (default 2 x CPUs)\n"
        "  --max-connections N    concurrent connections, 1..65536 (default %u, lowered\n"
        "                         to what the open-file limit holds; a value given\n"
        "                         that it cannot hold is an error)\n"
        "  --timeout S            idle connection timeout in seconds, 0 none (default %u)\n"
        "  --shutdown-timeout S   on SIGINT or SIGTERM, how long to wait for the requests\n"
        "                         in flight, 0..3600 (default %u)\n"
        "Database:\n"
        "  --db KIND              sqlite | postgres | mariadb (default sqlite)\n"
        "  --db-path FILE         SQLite file, created at startup when missing (default %s)\n"
        "  --db-url URL           postgres: libpq conninfo or postgresql:// URL;\n"
        "                         mariadb: mysql://user[:pw]@host[:port]/db[?socket=PATH]\n"
        "  --seed N               products 1..N created on first run, when the table is\n"
        "                         empty; 0 never (default %llu)\n"
        "Cache:\n"
        "  --cache KIND           none | redis (default none)\n"
        "  --redis-url URL        the cache: redis://[[user]:pw@]host[:port],\n"
        "                         redis+cluster://[[user]:pw@]host[:port][,host[:port]...]\n"
        "                         (a Redis Cluster: seed nodes, asked in turn) or\n"
        "                         unix:///path (default %s)\n"
        "  --cache-ttl-ms N       TTL of cached products; needs --cache redis\n"
        "                         (default %llu)\n"
        "  --cache-timeout-ms N   how long one cache command may take, 1..60000; a\n"
        "                         lookup that times out goes on to the database, and\n"
        "                         the cache is skipped for a back-off (200 ms, doubling\n"
        "                         to 5 s); connecting may take 2 N; needs --cache redis\n"
        "                         (default %u)\n"
        "  --negative-ttl-ms N    TTL of confirmed false positives; needs a filter\n"
        "                         (default %llu)\n"
        "Filter:\n"
        "  --filter KIND          local | remote | none (default local)\n"
        "  --variant V            local: standard | blocked | counting (default blocked);\n"
        "                         counting makes DELETE remove ids from the filter\n"
        "  --error-rate P         false-positive rate at capacity, 1e-12 <= P < 1\n"
        "                         (default %g)\n"
        "  --capacity N           keys the filter is sized for; 0: count x headroom\n"
        "                         (default 0)\n"
        "  --headroom X           capacity / count, 1..1000; only with --capacity 0\n"
        "                         (default %g)\n"
        "  --filter-backend B     remote: bitmap | module (default bitmap)\n"
        "  --filter-url URL       remote: the Redis holding the filter, a URL as for\n"
        "                         --redis-url (default %s)\n"
        "  --filter-name NAME     remote: the filter's name (default %s)\n"
        "  --filter-shards S      remote bitmap: a filter created here is S filters,\n"
        "                         each with 1/S of the bits in its own cluster slot,\n"
        "                         1..%u (default 1); an existing filter keeps its\n"
        "                         own. For a filter over 2^32 bits (512 MiB), or more\n"
        "                         load than one Redis takes: on redis+cluster:// the\n"
        "                         shards spread over the masters\n"
        "  --rebuild-interval S   rebuild the filter from the database every S seconds,\n"
        "                         0 off (default 0); remote: what re-creates a filter\n"
        "                         that a restarted Redis lost\n"
        "  --check-sample N       time the filter check on 1 request in N for\n"
        "                         /metrics, 0 never (default %u local, %u remote)\n"
        "Other:\n"
        "  --help                 this text\n"
        "  --version              the version\n"
        "\n"
        "Every value is checked before anything starts, and a flag that would do\n"
        "nothing (--cache-ttl-ms without --cache redis, --headroom with --capacity,\n"
        "a filter's flags with --filter none, ...) is an error.\n"
        "Exit status: 0 after SIGINT or SIGTERM, 1 when a server is unreachable or the\n"
        "port is taken, 2 on a bad flag (or a --max-connections that the open-file\n"
        "limit cannot hold).\n",
        prog, DEFAULT_PORT, DEFAULT_BIND, DEFAULT_MAX_CONNECTIONS, DEFAULT_TIMEOUT_S,
        DEFAULT_SHUTDOWN_TIMEOUT_S,
        DEFAULT_DB_PATH, (unsigned long long)DEFAULT_SEED, DEFAULT_REDIS,
        (unsigned long long)DEFAULT_CACHE_TTL_MS, DEFAULT_CACHE_TIMEOUT_MS,
        (unsigned long long)DEFAULT_NEGATIVE_TTL_MS,
        DEFAULT_ERROR_RATE, DEFAULT_HEADROOM, DEFAULT_REDIS, DEFAULT_FILTER_NAME,
        (unsigned)BG_REMOTE_MAX_SHARDS, DEFAULT_CHECK_SAMPLE_LOCAL, DEFAULT_CHECK_SAMPLE_REMOTE);
}

static int bad(FILE *err, const char *fmt, ...)
{
    va_list ap;
    fputs("bloomgate-products: ", err);
    va_start(ap, fmt);
    vfprintf(err, fmt, ap);
    va_end(ap);
    fputs(" (see --help)\n", err);
    return CONFIG_EXIT_USAGE;
}

/* A decimal in [lo, hi]: digits only, no sign, no spaces. */
static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    uint64_t v = 0;
    if (*s == '\0') return -1;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    if (v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || errno != 0 || v != v) return -1;
    *out = v;
    return 0;
}

static void copy(char *dst, size_t cap, const char *src, size_t len)
{
    if (len >= cap) len = cap - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

/* Parses one host[:port] in [p, end) into host (cap bytes) and *port (6379
 * when absent). NULL, or what is wrong. */
static const char *parse_host(const char *p, const char *end, char *host, size_t cap, int *port)
{
    const char *hbegin = p, *hend, *portp = NULL;
    if (p < end && *p == '[') { /* [IPv6]:port */
        const char *close = memchr(p, ']', (size_t)(end - p));
        if (!close) return "unterminated [IPv6 address]";
        hbegin = p + 1;
        hend = close;
        if (close + 1 < end) {
            if (close[1] != ':') return "junk after ]";
            portp = close + 2;
        }
    } else {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        hend = colon ? colon : end;
        if (colon) portp = colon + 1;
    }
    if ((size_t)(hend - hbegin) >= cap) return "host too long";
    copy(host, cap, hbegin, (size_t)(hend - hbegin));
    if (host[0] == '\0' || strchr(host, '/'))
        return "bad host (paths and database numbers are not supported)";
    /* What the client's seed list and resolver take (as the CLI's URLs):
     * a name or IPv4 address, or an IPv6 address in brackets. */
    for (const char *h = host; *h; h++) {
        int ok = hbegin == p ? isalnum((unsigned char)*h) || *h == '.' || *h == '-' || *h == '_'
                             : isxdigit((unsigned char)*h) || *h == ':' || *h == '.';
        if (!ok)
            return hbegin == p ? "bad host: a character that is not a letter, digit, '.', '-' "
                                 "or '_' (IPv6 addresses go in brackets)"
                               : "bad IPv6 address: a character that is not a hex digit, ':' "
                                 "or '.'";
    }
    *port = 6379;
    if (portp) {
        char buf[8];
        size_t n = (size_t)(end - portp);
        uint64_t v;
        if (memchr(portp, '/', n)) return "paths and database numbers are not supported";
        if (n == 0 || n >= sizeof(buf)) return "bad port";
        copy(buf, sizeof(buf), portp, n);
        if (parse_u64(buf, 1, 65535, &v) != 0) return "port must be 1..65535";
        *port = (int)v;
    }
    return NULL;
}

/* The URL as messages show it: credentials as "***", for a password must
 * not reach a terminal's scrollback or a log. */
static void redact(const char *url, char *out, size_t cap)
{
    const char *scheme_end = strstr(url, "://");
    const char *at = scheme_end ? strrchr(scheme_end + 3, '@') : NULL;
    if (at)
        snprintf(out, cap, "%.*s***%s", (int)(scheme_end + 3 - url), url, at);
    else
        snprintf(out, cap, "%s", url);
}

int redis_url_parse(const char *url, redis_url *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    char shown[1100]; /* url in messages */
    redact(url, shown, sizeof(shown));
    if (strncmp(url, "unix://", 7) == 0) {
        const char *path = url + 7;
        if (path[0] != '/' || strlen(path) >= sizeof(out->unix_socket)) {
            snprintf(err, errlen, "'%s': want unix:///absolute/path", shown);
            return -1;
        }
        copy(out->unix_socket, sizeof(out->unix_socket), path, strlen(path));
        return 0;
    }
    const char *p;
    if (strncmp(url, "redis+cluster://", 16) == 0) {
        out->cluster = true;
        p = url + 16;
    } else if (strncmp(url, "redis://", 8) == 0) {
        p = url + 8;
    } else {
        snprintf(err, errlen, "'%s': want redis://[[user]:password@]host[:port], "
                 "redis+cluster://[[user]:password@]host[:port][,host[:port]...] or "
                 "unix:///path", shown);
        return -1;
    }
    const char *at = strrchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (!colon) {
            snprintf(err, errlen, "'%s': credentials must be [user]:password@", shown);
            return -1;
        }
        if ((size_t)(colon - p) >= sizeof(out->username) ||
            (size_t)(at - colon - 1) >= sizeof(out->password)) {
            snprintf(err, errlen, "'%s': credentials too long", shown);
            return -1;
        }
        copy(out->username, sizeof(out->username), p, (size_t)(colon - p));
        copy(out->password, sizeof(out->password), colon + 1, (size_t)(at - colon - 1));
        out->has_password = true;
        p = at + 1;
    }
    size_t rest = strlen(p);
    if (rest > 0 && p[rest - 1] == '/') rest--;
    const char *end = p + rest;
    /* host[:port], or for a cluster a list of them: the first is the seed
     * node, the others go to out->seeds, each with its port written (the
     * library wants one) and IPv6 in brackets. */
    size_t nseeds = 0;
    for (const char *item = p;;) {
        const char *comma = memchr(item, ',', (size_t)(end - item));
        const char *iend = comma ? comma : end;
        if (comma && !out->cluster) {
            snprintf(err, errlen, "'%s': several hosts (separated by ',') are for "
                     "redis+cluster:// (seed nodes of a cluster)", shown);
            return -1;
        }
        if (iend == item && (comma || item > p)) {
            snprintf(err, errlen, "'%s': an empty host:port between ',' (several seed nodes "
                     "are host1:port1,host2:port2)", shown);
            return -1;
        }
        char host[sizeof(out->host)];
        int port;
        const char *why = parse_host(item, iend, host, sizeof(host), &port);
        if (why && item == p) {
            snprintf(err, errlen, "'%s': %s", shown, why);
            return -1;
        }
        if (why) {
            snprintf(err, errlen, "'%s': seed node '%.*s': %s", shown, (int)(iend - item), item,
                     why);
            return -1;
        }
        if (item == p) {
            memcpy(out->host, host, sizeof(host));
            out->port = port;
        } else {
            int v6 = strchr(host, ':') != NULL;
            int n = snprintf(out->seeds + nseeds, sizeof(out->seeds) - nseeds, "%s%s%s%s:%d",
                             nseeds ? "," : "", v6 ? "[" : "", host, v6 ? "]" : "", port);
            if (n < 0 || (size_t)n >= sizeof(out->seeds) - nseeds) {
                /* The URL cut short: in full it would push the reason out
                 * of the message. */
                snprintf(err, errlen, "'%.60s...': the seed nodes are too long (at most %zu "
                         "characters as host:port,...)", shown, sizeof(out->seeds) - 1);
                return -1;
            }
            nseeds += (size_t)n;
        }
        if (!comma) break;
        item = comma + 1;
    }
    return 0;
}

void redis_url_options(const redis_url *u, bg_remote_options *ro)
{
    memset(ro, 0, sizeof(*ro));
    if (u->unix_socket[0]) {
        ro->unix_socket = u->unix_socket;
    } else {
        ro->host = u->host;
        ro->port = u->port;
    }
    ro->cluster = u->cluster;
    ro->seeds = u->seeds[0] ? u->seeds : NULL;
    ro->username = u->username[0] ? u->username : NULL;
    ro->password = u->has_password ? u->password : NULL;
    /* timeouts 0: each user picks its own (main.c) */
}

/* Whether a filter of --capacity keys at --error-rate fits what it will be
 * built in: a local filter's memory cap (BG_DEFAULT_MAX_BYTES; a counting
 * filter's array is 4 bits per position), a remote bitmap's
 * BG_REMOTE_MAX_BITS per shard. A module filter is sized by the module. 0,
 * or -1 with a message. (With --capacity 0 the size depends on the row
 * count, known only once the database is open: a filter too big for it is
 * exit status 1 then.) */
static int check_size(const products_config *c, char *msg, size_t cap)
{
    bg_variant variant = c->variant;
    uint64_t max_bits = BG_DEFAULT_MAX_BYTES * 8;
    uint64_t n = c->capacity;
    if (c->filter_kind == BG_GUARD_FILTER_REMOTE) {
        if (c->filter_backend == BG_REMOTE_MODULE) return 0;
        variant = BG_VARIANT_STANDARD;
        max_bits = BG_REMOTE_MAX_BITS;
        /* Each shard is sized for ceil(n / S) keys, as the library does
         * (remote.h, SHARDING), so S shards hold S times the bits. */
        n = n / c->filter_shards + (n % c->filter_shards != 0);
    } else if (variant == BG_VARIANT_COUNTING) {
        max_bits /= 4;
    }
    bg_sizing sz = {.n = n, .p = c->error_rate};
    int rc = bg_sizing_solve(variant, &sz, max_bits);
    if (rc == BG_OK) return 0;
    if (c->filter_kind == BG_GUARD_FILTER_REMOTE)
        snprintf(msg, cap, "--capacity %llu at --error-rate %g: %s (a remote bitmap filter "
                 "has at most 2^32 bits per shard, and --filter-shards is %u)",
                 (unsigned long long)c->capacity, c->error_rate, bg_strerror(rc),
                 (unsigned)c->filter_shards);
    else
        snprintf(msg, cap, "--capacity %llu at --error-rate %g: %s (a local filter takes at "
                 "most %llu GiB)", (unsigned long long)c->capacity, c->error_rate,
                 bg_strerror(rc), (unsigned long long)(BG_DEFAULT_MAX_BYTES >> 30));
    return -1;
}

enum {
    OPT_PORT = 256, OPT_BIND, OPT_THREADS, OPT_MAXCONN, OPT_TIMEOUT, OPT_SHUTDOWN_TIMEOUT, OPT_DB,
    OPT_DB_PATH, OPT_DB_URL, OPT_SEED, OPT_CACHE, OPT_REDIS_URL, OPT_CACHE_TTL, OPT_CACHE_TIMEOUT,
    OPT_NEG_TTL, OPT_FILTER, OPT_VARIANT, OPT_ERROR_RATE, OPT_CAPACITY, OPT_HEADROOM,
    OPT_FILTER_BACKEND, OPT_FILTER_URL, OPT_FILTER_NAME, OPT_FILTER_SHARDS, OPT_REBUILD,
    OPT_CHECK_SAMPLE, OPT_HELP, OPT_VERSION,
};

int config_parse(products_config *c, int argc, char **argv, FILE *out, FILE *err)
{
    static const struct option longopts[] = {
        {"port", required_argument, NULL, OPT_PORT},
        {"bind", required_argument, NULL, OPT_BIND},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"max-connections", required_argument, NULL, OPT_MAXCONN},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"shutdown-timeout", required_argument, NULL, OPT_SHUTDOWN_TIMEOUT},
        {"db", required_argument, NULL, OPT_DB},
        {"db-path", required_argument, NULL, OPT_DB_PATH},
        {"db-url", required_argument, NULL, OPT_DB_URL},
        {"seed", required_argument, NULL, OPT_SEED},
        {"cache", required_argument, NULL, OPT_CACHE},
        {"redis-url", required_argument, NULL, OPT_REDIS_URL},
        {"cache-ttl-ms", required_argument, NULL, OPT_CACHE_TTL},
        {"cache-timeout-ms", required_argument, NULL, OPT_CACHE_TIMEOUT},
        {"negative-ttl-ms", required_argument, NULL, OPT_NEG_TTL},
        {"filter", required_argument, NULL, OPT_FILTER},
        {"variant", required_argument, NULL, OPT_VARIANT},
        {"error-rate", required_argument, NULL, OPT_ERROR_RATE},
        {"capacity", required_argument, NULL, OPT_CAPACITY},
        {"headroom", required_argument, NULL, OPT_HEADROOM},
        {"filter-backend", required_argument, NULL, OPT_FILTER_BACKEND},
        {"filter-url", required_argument, NULL, OPT_FILTER_URL},
        {"filter-name", required_argument, NULL, OPT_FILTER_NAME},
        {"filter-shards", required_argument, NULL, OPT_FILTER_SHARDS},
        {"rebuild-interval", required_argument, NULL, OPT_REBUILD},
        {"check-sample", required_argument, NULL, OPT_CHECK_SAMPLE},
        {"help", no_argument, NULL, OPT_HELP},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    const char *prog = "bloomgate-products";
    int set_threads = 0, set_variant = 0, set_backend = 0, set_check = 0, set_redis = 0;
    int set_path = 0, set_ferr = 0, set_cache_ttl = 0, set_cache_timeout = 0, set_neg_ttl = 0;
    int set_headroom = 0, set_shards = 0;
    uint64_t v;
    double d;
    char msg[512];

    memset(c, 0, sizeof(*c));
    c->port = DEFAULT_PORT;
    c->bind = DEFAULT_BIND;
    c->max_connections = DEFAULT_MAX_CONNECTIONS;
    c->timeout_s = DEFAULT_TIMEOUT_S;
    c->shutdown_timeout_s = DEFAULT_SHUTDOWN_TIMEOUT_S;
    c->db = STORE_SQLITE;
    c->db_path = DEFAULT_DB_PATH;
    c->seed = DEFAULT_SEED;
    c->cache_url_text = DEFAULT_REDIS;
    c->cache_ttl_ms = DEFAULT_CACHE_TTL_MS;
    c->cache_timeout_ms = DEFAULT_CACHE_TIMEOUT_MS;
    c->negative_ttl_ms = DEFAULT_NEGATIVE_TTL_MS;
    c->filter_kind = BG_GUARD_FILTER_LOCAL;
    c->filter_backend = BG_REMOTE_BITMAP;
    c->filter_url_text = DEFAULT_REDIS;
    c->filter_name = DEFAULT_FILTER_NAME;
    c->filter_shards = 1;
    c->error_rate = DEFAULT_ERROR_RATE;
    c->headroom = DEFAULT_HEADROOM;
    c->variant = BG_VARIANT_BLOCKED;

    opterr = 0;
    optind = 0; /* glibc: start afresh (a parse may have stopped mid-argument) */
    for (;;) {
        int longindex = -1;
        int o = getopt_long(argc, argv, ":", longopts, &longindex);
        if (o == -1) break;
        const char *a = optarg;
        switch (o) {
        case OPT_PORT:
            if (parse_u64(a, 0, 65535, &v)) return bad(err, "--port '%s': want 0..65535", a);
            c->port = (int)v;
            break;
        case OPT_BIND: {
            /* Checked here, not at listen time: a name would fail only after
             * the database was opened and the filter built. */
            unsigned char addr[16];
            if (inet_pton(AF_INET, a, addr) != 1 && inet_pton(AF_INET6, a, addr) != 1)
                return bad(err, "--bind '%s': want an IPv4 or IPv6 address, not a host name", a);
            c->bind = a;
            break;
        }
        case OPT_THREADS:
            if (parse_u64(a, 1, 1024, &v)) return bad(err, "--threads '%s': want 1..1024", a);
            c->threads = (unsigned)v;
            set_threads = 1;
            break;
        case OPT_MAXCONN:
            if (parse_u64(a, 1, 65536, &v))
                return bad(err, "--max-connections '%s': want 1..65536", a);
            c->max_connections = (unsigned)v;
            c->max_connections_set = 1;
            break;
        case OPT_TIMEOUT:
            if (parse_u64(a, 0, 86400, &v)) return bad(err, "--timeout '%s': want 0..86400", a);
            c->timeout_s = (unsigned)v;
            break;
        case OPT_SHUTDOWN_TIMEOUT:
            if (parse_u64(a, 0, 3600, &v))
                return bad(err, "--shutdown-timeout '%s': want 0..3600", a);
            c->shutdown_timeout_s = (unsigned)v;
            break;
        case OPT_DB:
            if (store_kind_parse(a, &c->db) != 0)
                return bad(err, "--db '%s': want sqlite, postgres or mariadb", a);
            break;
        case OPT_DB_PATH:
            if (*a == '\0') return bad(err, "--db-path: empty path");
            c->db_path = a;
            set_path = 1;
            break;
        case OPT_DB_URL:
            if (*a == '\0') return bad(err, "--db-url: empty URL");
            c->db_url = a;
            break;
        case OPT_SEED:
            if (parse_u64(a, 0, UINT64_C(1000000000), &v))
                return bad(err, "--seed '%s': want 0..1000000000", a);
            c->seed = v;
            break;
        case OPT_CACHE:
            if (strcmp(a, "none") == 0) c->cache_redis = 0;
            else if (strcmp(a, "redis") == 0) c->cache_redis = 1;
            else return bad(err, "--cache '%s': want none or redis", a);
            break;
        case OPT_REDIS_URL:
            c->cache_url_text = a;
            set_redis = 1;
            break;
        case OPT_CACHE_TTL:
            if (parse_u64(a, 1, UINT64_C(86400000) * 365, &v))
                return bad(err, "--cache-ttl-ms '%s': want 1..31536000000", a);
            c->cache_ttl_ms = v;
            set_cache_ttl = 1;
            break;
        case OPT_CACHE_TIMEOUT:
            if (parse_u64(a, 1, 60000, &v))
                return bad(err, "--cache-timeout-ms '%s': want 1..60000", a);
            c->cache_timeout_ms = (unsigned)v;
            set_cache_timeout = 1;
            break;
        case OPT_NEG_TTL:
            if (parse_u64(a, 1, UINT64_C(86400000), &v))
                return bad(err, "--negative-ttl-ms '%s': want 1..86400000", a);
            c->negative_ttl_ms = v;
            set_neg_ttl = 1;
            break;
        case OPT_FILTER:
            if (strcmp(a, "local") == 0) c->filter_kind = BG_GUARD_FILTER_LOCAL;
            else if (strcmp(a, "remote") == 0) c->filter_kind = BG_GUARD_FILTER_REMOTE;
            else if (strcmp(a, "none") == 0) c->filter_kind = BG_GUARD_FILTER_NONE;
            else return bad(err, "--filter '%s': want local, remote or none", a);
            break;
        case OPT_VARIANT:
            if (strcmp(a, "standard") == 0) c->variant = BG_VARIANT_STANDARD;
            else if (strcmp(a, "blocked") == 0) c->variant = BG_VARIANT_BLOCKED;
            else if (strcmp(a, "counting") == 0) c->variant = BG_VARIANT_COUNTING;
            else return bad(err, "--variant '%s': want standard, blocked or counting", a);
            set_variant = 1;
            break;
        case OPT_ERROR_RATE:
            if (parse_double(a, &d) || !(d >= MIN_ERROR_RATE && d < 1.0))
                return bad(err, "--error-rate '%s': want a number with 1e-12 <= P < 1", a);
            c->error_rate = d;
            set_ferr = 1;
            break;
        case OPT_CAPACITY:
            if (parse_u64(a, 0, UINT64_C(1) << 40, &v))
                return bad(err, "--capacity '%s': want 0..1099511627776", a);
            c->capacity = v;
            break;
        case OPT_HEADROOM:
            if (parse_double(a, &d) || !(d >= 1.0 && d <= 1000.0))
                return bad(err, "--headroom '%s': want a number in 1..1000", a);
            c->headroom = d;
            set_headroom = 1;
            break;
        case OPT_FILTER_BACKEND:
            if (strcmp(a, "bitmap") == 0) c->filter_backend = BG_REMOTE_BITMAP;
            else if (strcmp(a, "module") == 0) c->filter_backend = BG_REMOTE_MODULE;
            else return bad(err, "--filter-backend '%s': want bitmap or module", a);
            set_backend = 1;
            break;
        case OPT_FILTER_URL:
            c->filter_url_text = a;
            set_backend = 1;
            break;
        case OPT_FILTER_NAME:
            if (*a == '\0' || strpbrk(a, "{} ") || strlen(a) > 200)
                return bad(err, "--filter-name '%s': want 1..200 characters without '{', '}' "
                                "or spaces", a);
            c->filter_name = a;
            set_backend = 1;
            break;
        case OPT_FILTER_SHARDS:
            if (parse_u64(a, 1, BG_REMOTE_MAX_SHARDS, &v))
                return bad(err, "--filter-shards '%s': want 1..%u", a,
                           (unsigned)BG_REMOTE_MAX_SHARDS);
            c->filter_shards = (uint32_t)v;
            set_shards = 1;
            break;
        case OPT_REBUILD:
            if (parse_u64(a, 0, 86400 * 30, &v))
                return bad(err, "--rebuild-interval '%s': want 0..2592000 seconds", a);
            c->rebuild_interval_s = (unsigned)v;
            break;
        case OPT_CHECK_SAMPLE:
            if (parse_u64(a, 0, 1000000, &v))
                return bad(err, "--check-sample '%s': want 0..1000000", a);
            c->check_sample = (unsigned)v;
            set_check = 1;
            break;
        case OPT_HELP:
            usage(out, prog);
            return CONFIG_EXIT_HELP;
        case OPT_VERSION:
            fprintf(out, "bloomgate-products %s\n", bg_version_string());
            return CONFIG_EXIT_HELP;
        case ':':
            return bad(err, "%s needs a value", argv[optind - 1]);
        default:
            return bad(err, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return bad(err, "unexpected argument '%s'", argv[optind]);

    /* Flags that would silently do nothing are mistakes: say so. */
    if (c->db == STORE_SQLITE) {
        if (c->db_url) return bad(err, "--db-url is for --db postgres or mariadb");
    } else {
        if (!c->db_url) return bad(err, "--db %s needs --db-url", store_kind_name(c->db));
        if (set_path) return bad(err, "--db-path is for --db sqlite");
    }
    if (c->cache_redis) {
        if (redis_url_parse(c->cache_url_text, &c->cache_url, msg, sizeof(msg)) != 0)
            return bad(err, "--redis-url %s", msg);
    } else if (set_redis) {
        return bad(err, "--redis-url needs --cache redis");
    } else if (set_cache_ttl) {
        return bad(err, "--cache-ttl-ms needs --cache redis");
    } else if (set_cache_timeout) {
        return bad(err, "--cache-timeout-ms needs --cache redis");
    }
    if (c->filter_kind == BG_GUARD_FILTER_REMOTE) {
        if (redis_url_parse(c->filter_url_text, &c->filter_url, msg, sizeof(msg)) != 0)
            return bad(err, "--filter-url %s", msg);
        if (set_variant) return bad(err, "--variant is for --filter local");
        if (set_shards && c->filter_backend == BG_REMOTE_MODULE)
            return bad(err, "--filter-shards is for --filter-backend bitmap (a module filter "
                            "is one key)");
    } else {
        if (set_backend)
            return bad(err, "--filter-backend, --filter-url and --filter-name are for "
                            "--filter remote");
        if (set_shards) return bad(err, "--filter-shards is for --filter remote");
    }
    if (c->filter_kind == BG_GUARD_FILTER_NONE) {
        /* No filter: nothing is sized, and no lookup is a false positive
         * (the guard keeps negatives only for those). */
        const char *flag = NULL;
        if (set_variant) flag = "--variant";
        else if (set_ferr) flag = "--error-rate";
        else if (c->capacity) flag = "--capacity";
        else if (set_headroom) flag = "--headroom";
        else if (set_neg_ttl) flag = "--negative-ttl-ms";
        else if (set_check) flag = "--check-sample";
        else if (c->rebuild_interval_s) flag = "--rebuild-interval";
        if (flag) return bad(err, "%s needs a filter (--filter local or remote)", flag);
    }
    if (c->capacity && set_headroom)
        return bad(err, "--headroom is for --capacity 0 (capacity = rows x headroom); "
                        "--capacity %llu sizes the filter alone",
                   (unsigned long long)c->capacity);
    if (c->capacity && check_size(c, msg, sizeof(msg)) != 0)
        return bad(err, "%s", msg);
    if (!set_threads) c->threads = default_threads();
    /* Each thread takes at least one connection (main.c, threads_fit): two
     * flags that disagree are refused; a default is lowered there. */
    if (set_threads && c->max_connections < c->threads)
        return bad(err, "--max-connections %u is below --threads %u: each thread takes "
                        "at least one connection",
                   c->max_connections, c->threads);
    if (!set_check) {
        c->check_sample = c->filter_kind == BG_GUARD_FILTER_LOCAL    ? DEFAULT_CHECK_SAMPLE_LOCAL
                          : c->filter_kind == BG_GUARD_FILTER_REMOTE ? DEFAULT_CHECK_SAMPLE_REMOTE
                                                                      : 0;
    }
    if (c->filter_kind == BG_GUARD_FILTER_NONE) c->check_sample = 0;
    return 0;
}
