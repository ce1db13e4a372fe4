/* SPDX-License-Identifier: BSD-3-Clause */
/* The remote halves of the commands in a CLI built without remote support
 * (BG_BUILD_REMOTE=OFF, or no hiredis): compiled instead of remote.c and every
 * cmd_*_remote.c. A URL is still recognised, and refused with "built
 * without remote support". */
#include "cli.h"
#include "cli_output.h"
#include "cli_remote.h"

/* Prints why a URL cannot be used (or what is wrong with it); -1. */
static int no_remote(const char *url)
{
    cli_url u;
    if (cli_url_parse(url, &u) == 0) {
        cli_error("%s: built without remote support (the remote client needs libhiredis-dev "
                  "at build time: docs/BUILDING.md)",
                  u.display);
        cli_url_free(&u);
    }
    return -1;
}

int cli_remote_open(const char *url, cli_remote **out)
{
    *out = NULL;
    return no_remote(url);
}

void cli_remote_close(cli_remote *rf)
{
    (void)rf;
}

const char *cli_remote_display(const cli_remote *rf)
{
    (void)rf;
    return "";
}

int64_t cli_remote_contains_many(cli_remote *rf, const void *const *keys, const size_t *lens,
                                 size_t n, uint8_t *results)
{
    (void)rf, (void)keys, (void)lens, (void)n, (void)results;
    return -1;
}

int cli_remote_add(const char *url, char **args, size_t nargs, char sep, bool quiet, bool json)
{
    (void)args, (void)nargs, (void)sep, (void)quiet, (void)json;
    no_remote(url);
    return CLI_EXIT_ERROR;
}

int cli_remote_create(const char *url, const cli_remote_create_args *a)
{
    (void)a;
    no_remote(url);
    return CLI_EXIT_ERROR;
}

int cli_remote_info(const char *url, bool json)
{
    (void)json;
    no_remote(url);
    return CLI_EXIT_ERROR;
}

int cli_remote_push(const char *path, const char *url, bool quiet, bool json)
{
    (void)path, (void)quiet, (void)json;
    no_remote(url);
    return CLI_EXIT_ERROR;
}

int cli_remote_pull(const char *url, const char *path, bool force, bool quiet, bool json)
{
    (void)path, (void)force, (void)quiet, (void)json;
    no_remote(url);
    return CLI_EXIT_ERROR;
}

int cli_remote_rebuild(const char *url, const cli_remote_rebuild_args *a)
{
    (void)a;
    no_remote(url);
    return CLI_EXIT_ERROR;
}
