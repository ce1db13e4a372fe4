/* SPDX-License-Identifier: BSD-3-Clause */
/* The bloomgate command-line tool: remote filters. The URL that names one
 * (url.c) and the commands' remote halves (remote.c and cmd_*_remote.c, or
 * remote_disabled.c without remote support). */
#ifndef BG_CLI_REMOTE_H
#define BG_CLI_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bloomgate/bloomgate.h>

/* A remote filter named by a URL (docs/CLI.md, "Remote filters"):
 *
 *   redis://[[USER]:PASSWORD@]HOST[:PORT]/NAME[?backend=bitmap|module&timeout=MS]
 *
 * HOST is an IPv4 address, a host name, or an IPv6 address in brackets;
 * PORT defaults to 6379. NAME (the filter's name, not a database number)
 * and the password are percent-decoded. `redis+cluster://HOST:PORT/NAME`
 * names a filter on a Redis Cluster (HOST:PORT a seed node; more seeds may
 * follow, separated by ',', into `seeds`), and `shards=S`
 * (2..BG_REMOTE_MAX_SHARDS, bitmap backend) makes create split the filter
 * into S sub-filters, one per hash slot; other subcommands find the shards
 * by themselves. */
typedef enum cli_url_backend {
    CLI_URL_BITMAP = 1, /* BG_REMOTE_BITMAP */
    CLI_URL_MODULE = 2, /* BG_REMOTE_MODULE */
} cli_url_backend;

typedef struct cli_url {
    char *host;          /* without brackets */
    int port;
    char *username;      /* NULL: none */
    char *password;      /* NULL: none */
    char *name;          /* decoded, non-empty */
    cli_url_backend backend;
    uint32_t timeout_ms; /* 0: the library's defaults */
    bool cluster;        /* redis+cluster://: HOST:PORT is a seed node of a cluster */
    char *seeds;         /* cluster: the seed nodes after the first, "H:P,H:P"; or NULL */
    uint32_t shards;     /* ?shards=S for create (bitmap backend); 0: unsharded */
    char *display;       /* the URL for messages, with the password as "***" */
} cli_url;

/* True if `word` names a remote filter rather than a file: it starts with
 * "redis://" or "redis+cluster://". Everything else is a path. */
bool cli_is_url(const char *word);

/* Parses `text` into *out. 0, or -1 after printing what is wrong with the
 * URL (never the password). Allocates; free with cli_url_free. */
int cli_url_parse(const char *text, cli_url *out);
void cli_url_free(cli_url *u);

/* For a subcommand that takes no remote filter: prints "URL: <why>" (or
 * what is wrong with the URL) and returns CLI_EXIT_ERROR. */
int cli_url_refuse(const char *text, const char *why);

/* The subcommands' remote halves: remote.c, which they share, and
 * cmd_<name>_remote.c beside each cmd_<name>.c. Without remote support
 * compiled in (BG_BUILD_REMOTE=OFF) remote_disabled.c takes their place:
 * each prints "built without remote support" and fails. Functions
 * returning int return an exit status; cli_remote_open and
 * cli_remote_contains_many return -1 after printing why. */
typedef struct cli_remote cli_remote;

/* Connects and opens the existing filter named by `url`. Allocates; free
 * with cli_remote_close (NULL allowed). */
int cli_remote_open(const char *url, cli_remote **out);
void cli_remote_close(cli_remote *rf);
/* The URL for messages (password hidden). Owned by rf: dead after
 * cli_remote_close. */
const char *cli_remote_display(const cli_remote *rf);
/* As bg_filter_contains_many, in round trips of at most CLI_REMOTE_BATCH
 * keys (check). The count of maybe-present keys, or -1 (message printed). */
int64_t cli_remote_contains_many(cli_remote *rf, const void *const *keys, const size_t *lens,
                                 size_t n, uint8_t *results);

/* add URL [KEY...]: the keys (the arguments, else standard input with
 * separator sep) in round trips of at most CLI_REMOTE_BATCH keys, then the
 * summary. */
int cli_remote_add(const char *url, char **args, size_t nargs, char sep, bool quiet, bool json);

/* What `create URL` was given; cli_remote_create checks what applies to
 * the URL's backend (usage errors otherwise). */
typedef struct cli_remote_create_args {
    bg_sizing given;
    bg_variant variant;        /* 0: not given */
    uint64_t seed;
    bool seed_given;
    uint32_t expansion;        /* 0: not given */
    bool nonscaling;
    const char *other_scaling; /* a scalable-only option given that no backend takes */
    bool force, quiet, json;
} cli_remote_create_args;
int cli_remote_create(const char *url, const cli_remote_create_args *a);
int cli_remote_info(const char *url, bool json);
/* push FILE URL, pull URL FILE (cmd_push.c, cmd_pull.c). */
int cli_remote_push(const char *path, const char *url, bool quiet, bool json);
int cli_remote_pull(const char *url, const char *path, bool force, bool quiet, bool json);

/* What `rebuild URL` was given (cmd_rebuild.c). cli_remote_rebuild checks
 * what applies to the URL's backend (usage errors otherwise). */
typedef struct cli_remote_rebuild_args {
    bg_sizing given;     /* all 0: keep the shape (bitmap) */
    uint32_t expansion;  /* module; 0: not given */
    bool nonscaling;     /* module */
    uint64_t lease_ms;   /* 0: the library's, BG_REMOTE_REBUILD_LEASE_MS */
    bool cancel;         /* --abort: cancel the pending rebuild, read no keys */
    char **keys;         /* the KEY arguments; none: standard input or command */
    const char *command; /* --command: the keys are this command's output */
    size_t nkeys;
    char sep;
    bool quiet, json;
} cli_remote_rebuild_args;
int cli_remote_rebuild(const char *url, const cli_remote_rebuild_args *a);

/* --lease's upper bound: remote.h's BG_REMOTE_MAX_REBUILD_LEASE_MS (7 days;
 * cmd_rebuild_remote.c checks they agree), here for a CLI built without
 * remote.h. */
#define CLI_MAX_LEASE_MS (UINT64_C(7) * 24 * 3600 * 1000)

/* Keys per round trip to Redis: each batch is one Lua script (or one
 * BF.INSERT) that runs atomically and holds the server meanwhile, so it is
 * kept to about a millisecond of its time. */
#define CLI_REMOTE_BATCH 1000u

#endif
