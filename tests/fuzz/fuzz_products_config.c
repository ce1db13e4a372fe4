/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the products service's command line
 * (examples/products/config.c): every flag's parser, the Redis URLs with
 * their seed lists among them, and the checks between flags. A service's
 * flags come from an operator, but also from deployment templates and
 * environment expansions that can put anything there.
 *
 * Input: the arguments after the program's name, separated by NUL bytes
 * (at most MAX_ARGS; an empty input is no argument). config_parse runs on them with its help and error
 * output going to /dev/null.
 *
 * Properties checked on every input (a violation aborts):
 *   - the result is 0 (run), CONFIG_EXIT_HELP or CONFIG_EXIT_USAGE;
 *   - on 0, every value is in the range --help states, and so are the
 *     Redis URLs the run would use: a unix socket is an absolute path, a
 *     host is not empty, a port is 1..65535, a cluster is not a socket, and
 *     its seed list is one bg_remote_options.seeds takes;
 *   - --filter-shards above 1 only with a remote bitmap filter.
 * Nothing may crash, leak or read out of bounds. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz_util.h"

#define MAX_ARGS 24

static void check_url(const redis_url *u)
{
    FZ_CHECK(memchr(u->host, '\0', sizeof u->host) && memchr(u->seeds, '\0', sizeof u->seeds));
    if (u->unix_socket[0]) {
        FZ_CHECK(u->unix_socket[0] == '/' && !u->cluster && !u->seeds[0]);
        return;
    }
    FZ_CHECK(u->host[0] != '\0' && u->port >= 1 && u->port <= 65535);
    if (u->seeds[0] && !(u->cluster && fz_seeds_ok(u->seeds)))
        fprintf(stderr, "fuzz_products_config: seeds \"%s\"\n", u->seeds);
    FZ_CHECK(!u->seeds[0] || (u->cluster && fz_seeds_ok(u->seeds)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *devnull;
    if (!devnull && !(devnull = fopen("/dev/null", "w")))
        abort();
    /* A NUL-terminated copy, cut into arguments at its NUL bytes. */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[MAX_ARGS + 2] = {"bloomgate-products"};
    int argc = 1;
    for (size_t at = 0; size > 0 && at <= size && argc <= MAX_ARGS; at += strlen(text + at) + 1)
        argv[argc++] = text + at;
    argv[argc] = NULL;

    products_config c;
    int rc = config_parse(&c, argc, argv, devnull, devnull);
    FZ_CHECK(rc == 0 || rc == CONFIG_EXIT_HELP || rc == CONFIG_EXIT_USAGE);
    if (rc == 0) {
        FZ_CHECK(c.port >= 0 && c.port <= 65535);
        FZ_CHECK(c.threads >= 1 && c.threads <= 1024);
        FZ_CHECK(c.filter_shards >= 1 && c.filter_shards <= BG_REMOTE_MAX_SHARDS);
        FZ_CHECK(c.filter_shards == 1 || (c.filter_kind == BG_GUARD_FILTER_REMOTE &&
                                          c.filter_backend == BG_REMOTE_BITMAP));
        FZ_CHECK(c.error_rate >= 1e-12 && c.error_rate < 1);
        if (c.cache_redis)
            check_url(&c.cache_url);
        if (c.filter_kind == BG_GUARD_FILTER_REMOTE)
            check_url(&c.filter_url);
    }
    free(text);
    return 0;
}
