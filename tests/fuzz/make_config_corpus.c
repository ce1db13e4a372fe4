/* SPDX-License-Identifier: BSD-3-Clause */
/* Writes the seed corpus for fuzz_products_config into a directory:
 *
 *   make_config_corpus DIR
 *
 * Each seed is a command line of bloomgate-products after the program's
 * name, its arguments separated by NUL bytes: the README's examples, the
 * cluster URLs with seed lists and IPv6 hosts, sharded filters, and lines
 * each flag check refuses. */
#include <stdio.h>
#include <string.h>

/* A literal's bytes, embedded NULs included (sizeof, not strlen). */
#define SEED(lit) {lit, sizeof(lit) - 1}

static const struct {
    const char *s;
    size_t len;
} seeds[] = {
    SEED(""),
    SEED("--help"),
    SEED("--port\0" "0\0" "--threads\0" "4"),
    SEED("--db\0" "postgres\0" "--db-url\0" "postgresql://u:pw@127.0.0.1/products"),
    SEED("--cache\0" "redis\0" "--redis-url\0" "redis://:secret@127.0.0.1:6379"),
    SEED("--cache\0" "redis\0" "--redis-url\0" "unix:///run/redis.sock\0" "--cache-ttl-ms\0"
         "5000"),
    SEED("--cache\0" "redis\0" "--redis-url\0" "redis+cluster://u:p@h1:7000,h2:7001,[::1]:7002/"),
    SEED("--filter\0" "remote\0" "--filter-url\0" "redis+cluster://10.0.0.5:7000,10.0.0.6\0"
         "--filter-shards\0" "16\0" "--capacity\0" "1000000000\0" "--error-rate\0" "0.001"),
    SEED("--filter\0" "remote\0" "--filter-backend\0" "module\0" "--filter-shards\0" "2"),
    SEED("--filter\0" "remote\0" "--filter-url\0" "redis://h:1,h:2"),
    SEED("--filter\0" "remote\0" "--filter-url\0" "redis+cluster://h:1,,h:2"),
    SEED("--filter\0" "remote\0" "--filter-url\0" "redis+cluster://[::1"),
    /* once accepted: a '[' inside a host made a seed list the client refuses */
    SEED("--cache\0" "redis\0" "--redis-url\0" "redis+cluster://h:1,[[::1]:2"),
    SEED("--filter\0" "none\0" "--rebuild-interval\0" "5"),
    SEED("--filter\0" "local\0" "--variant\0" "counting\0" "--headroom\0" "3"),
    SEED("--bind\0" "::1\0" "--max-connections\0" "64\0" "--timeout\0" "0"),
    SEED("--negative-ttl-ms\0" "1000\0" "--check-sample\0" "0\0" "extra"),
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_config_corpus DIR\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/seed-%03zu", argv[1], i);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(seeds[i].s, 1, seeds[i].len, f) != seeds[i].len || fclose(f) != 0) {
            perror(path);
            return 1;
        }
    }
    return 0;
}
