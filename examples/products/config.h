/* SPDX-License-Identifier: BSD-3-Clause */
/* The products service's command line: every option is a flag with a
 * default (config_usage prints them), validated before anything starts. */
#ifndef PRODUCTS_CONFIG_H
#define PRODUCTS_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <bloomgate/guard.h>

#include "store.h"

/* A parsed Redis URL: redis://[[user]:password@]host[:port][/],
 * redis+cluster://[[user]:password@]host[:port][,host[:port]...][/] (seed
 * nodes of a Redis Cluster; IPv6 hosts in brackets) or
 * unix:///path/to/socket. The strings live in the struct. */
typedef struct redis_url {
    char host[256];        /* a cluster's first seed node */
    int port;
    char unix_socket[256]; /* "" unless unix:// */
    char username[128];    /* "" : none */
    char password[256];    /* "" : none */
    bool has_password;
    bool cluster;          /* redis+cluster:// */
    char seeds[1024];      /* cluster: the other seed nodes as bg_remote_options.seeds
                              wants them, "host:port,[v6]:port"; "" : none */
} redis_url;

/* Parses url into *out. 0, or -1 with a message in err (which shows the
 * URL with its credentials as "***"). */
int redis_url_parse(const char *url, redis_url *out, char *err, size_t errlen);

/* Fills *ro from u (host, port or socket, credentials, cluster and seeds),
 * timeouts 0 (the defaults of what it is given to); the strings point into
 * u (ro is valid while u is). */
void redis_url_options(const redis_url *u, bg_remote_options *ro);

typedef struct products_config {
    /* HTTP */
    int port;           /* 0: any free port (logged) */
    const char *bind;   /* an IPv4 or IPv6 address */
    unsigned threads;   /* libmicrohttpd's thread pool */
    unsigned max_connections;
    int max_connections_set; /* given as a flag: refused, not lowered, when the
                                open-file limit cannot hold it (main.c) */
    unsigned timeout_s; /* idle connection timeout */
    unsigned shutdown_timeout_s; /* how long SIGINT/SIGTERM waits for the
                                    requests in flight (main.c drain) */
    /* storage */
    store_kind db;
    const char *db_path; /* sqlite */
    const char *db_url;  /* postgres, mariadb */
    uint64_t seed;       /* products seeded on first run (empty table) */
    /* cache */
    int cache_redis;
    redis_url cache_url;
    const char *cache_url_text;
    uint64_t cache_ttl_ms;
    unsigned cache_timeout_ms; /* per command; connecting may take twice that */
    uint64_t negative_ttl_ms;
    /* filter */
    bg_guard_filter_kind filter_kind;
    bg_remote_backend filter_backend;
    redis_url filter_url;
    const char *filter_url_text;
    const char *filter_name;
    uint32_t filter_shards; /* remote bitmap: shards of a filter the guard creates
                               (bg_guard_options.remote_shards); 1: one filter */
    double error_rate;
    uint64_t capacity; /* 0: from the source's count * headroom */
    double headroom;
    bg_variant variant;
    unsigned rebuild_interval_s; /* 0: off */
    unsigned check_sample;       /* time the filter check on 1 request in N; 0: never */
} products_config;

/* What config_parse returns besides 0. */
#define CONFIG_EXIT_HELP 1 /* --help or --version printed: exit 0 */
#define CONFIG_EXIT_USAGE 2 /* a bad flag, message printed: exit 2 */

/* Parses argv into *c (defaults first). 0 to run, CONFIG_EXIT_HELP or
 * CONFIG_EXIT_USAGE. Messages go to out (help) and err (errors). The
 * config's strings point into argv. */
int config_parse(products_config *c, int argc, char **argv, FILE *out, FILE *err);

const char *config_variant_name(bg_variant v);
const char *config_filter_name(bg_guard_filter_kind k);

#endif
