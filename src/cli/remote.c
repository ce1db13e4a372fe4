/* SPDX-License-Identifier: BSD-3-Clause */
/* Remote filters: what the remote halves of the commands share. A
 * cli_remote is a parsed URL, one connection with its timeouts and
 * credentials, and the filter opened on it; remote calls that fail are
 * reported here in one wording; push and pull describe a filter alike.
 * Each command's own remote half is cmd_<name>_remote.c, beside
 * cmd_<name>.c.
 *
 * HOW IT WORKS
 * A URL is parsed (url.c), one connection is made, and the filter is opened
 * (or created) on it. add and check hand each batch of keys from the key
 * reader (keys.c) to bg_remote_filter_add_many / _contains_many in round
 * trips of at most CLI_REMOTE_BATCH keys; the output is the files' own.
 *
 * LIMITATIONS
 * Each round trip is atomic on the server, but an add of many keys is not:
 * a failure after some batches leaves those keys added (a file, by
 * contrast, is only replaced at the end). The message says how many were
 * sent before the failure. Bitmap filters cannot remove keys.
 *
 * Built only with BG_BUILD_REMOTE, like every cmd_*_remote.c; without it
 * remote_disabled.c takes their place. */
#include "cli_remote_impl.h"
#include "cli_output.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cli_remote_backend_word(bg_remote_backend b)
{
    return b == BG_REMOTE_MODULE ? "module" : "bitmap";
}

void cli_remote_error(const char *display, const char *what, int rc, const bg_remote *r)
{
    const char *detail = bg_remote_errstr(r);
    /* Followed by the client's own detail. EVERSION and ECORRUPT come from
     * Redis data here, not from a file: not bg_strerror's file wording. */
    static const struct {
        int rc;
        const char *why;
    } with_detail[] = {
        {BG_ECONN, "cannot reach Redis (connection failed, broke or timed out)"},
        {BG_EVERSION, "the filter in Redis was made by another version of bloomgate"},
        {BG_ECORRUPT, "the filter's data in Redis is damaged"},
    };
    for (size_t i = 0; i < sizeof with_detail / sizeof with_detail[0]; i++)
        if (rc == with_detail[i].rc) {
            cli_error("%s: %s: %s%s%s", display, what, with_detail[i].why,
                      detail[0] ? ": " : "", detail);
            return;
        }
    switch (rc) {
    case BG_EREMOTE:
        cli_error("%s: %s: Redis replied an error: %s", display, what,
                  detail[0] ? detail : "(no message)");
        /* The two replies people meet first, with what to do. */
        if (strncmp(detail, "NOAUTH", 6) == 0 || strstr(detail, "unauthenticated"))
            cli_error("%s: the server wants a password: redis://:PASSWORD@HOST:PORT/NAME",
                      display);
        else if (strstr(detail, "unknown command") && strstr(detail, "BF."))
            cli_error("%s: ?backend=module needs bloomgate.so (or RedisBloom) loaded in the "
                      "server; the default bitmap backend needs no module",
                      display);
        break;
    case BG_ESTALE:
        cli_error("%s: %s: the filter was re-created or replaced meanwhile (its parameters "
                  "changed); run the command again",
                  display, what);
        break;
    case BG_ENOTFOUND:
        cli_error("%s: %s: no such filter (create it first: bloomgate create URL -n N -p P)",
                  display, what);
        break;
    case BG_EEXIST:
        cli_error("%s: %s: the filter already exists (use --force to drop and re-create it)",
                  display, what);
        break;
    default:
        cli_error("%s: %s: %s", display, what, bg_strerror(rc));
    }
}

static int connect_url(const cli_url *u, bg_remote **out)
{
    bg_remote_options ro = {
        .host = u->host,
        .port = u->port,
        .username = u->username,
        .password = u->password,
        .connect_timeout_ms = u->timeout_ms,
        .command_timeout_ms = u->timeout_ms,
        .cluster = u->cluster,
        .seeds = u->seeds,
    };
    int rc = bg_remote_connect(out, &ro);
    if (rc != BG_OK) {
        cli_remote_error(u->display, "cannot connect", rc, *out);
        bg_remote_close(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

int cli_remote_begin(const char *text, cli_remote **out)
{
    cli_remote *rf = calloc(1, sizeof *rf);
    if (!rf) {
        cli_error("out of memory");
        return -1;
    }
    if (cli_url_parse(text, &rf->url) != 0) {
        free(rf);
        return -1;
    }
    if (connect_url(&rf->url, &rf->r) != 0) {
        cli_url_free(&rf->url);
        free(rf);
        return -1;
    }
    *out = rf;
    return 0;
}

void cli_remote_close(cli_remote *rf)
{
    if (!rf)
        return;
    bg_remote_filter_close(rf->f);
    bg_remote_close(rf->r);
    cli_url_free(&rf->url);
    free(rf);
}

/* A reply to `argv` on rf's connection that is a status or string equal to
 * `want`, or an integer > 0 when want is NULL. Errors count as no. */
static bool reply_is(cli_remote *rf, const char *cmd, const char *key, const char *want)
{
    const char *argv[2] = {cmd, key};
    size_t lens[2] = {strlen(cmd), strlen(key)};
    redisReply *rep;
    if (bg_remote_command(rf->r, 2, argv, lens, &rep) != BG_OK)
        return false;
    bool yes = want ? (rep->type == REDIS_REPLY_STATUS || rep->type == REDIS_REPLY_STRING) &&
                          strcmp(rep->str, want) == 0
                    : rep->type == REDIS_REPLY_INTEGER && rep->integer > 0;
    freeReplyObject(rep);
    return yes;
}

/* After "no such filter": whether the name holds a filter of the other
 * backend, the URL's likeliest mistake, and if so what to write. A module
 * filter is the key NAME of the module's type; a bitmap filter is the keys
 * {NAME}:meta (one array) or {NAME}:shards (sharded). Costs a round trip or
 * two on the error path only. */
static void hint_other_backend(cli_remote *rf)
{
    const char *name = rf->url.name, *display = rf->url.display;
    if (rf->url.backend == CLI_URL_MODULE) {
        size_t n = strlen(name) + sizeof "{}:shards";
        char *meta = malloc(n), *shards = malloc(n);
        if (meta && shards) {
            snprintf(meta, n, "{%s}:meta", name);
            snprintf(shards, n, "{%s}:shards", name);
            if (reply_is(rf, "EXISTS", meta, NULL) || reply_is(rf, "EXISTS", shards, NULL))
                cli_error("%s: a bitmap filter has that name: leave out ?backend=module",
                          display);
        }
        free(meta);
        free(shards);
    } else if (reply_is(rf, "TYPE", name, "bloomgate") || reply_is(rf, "TYPE", name, "MBbloom--")) {
        cli_error("%s: the key is a module filter: add ?backend=module to the URL", display);
    }
}

int cli_remote_open(const char *url, cli_remote **out)
{
    cli_remote *rf;
    if (cli_remote_begin(url, &rf) != 0)
        return -1;
    int rc = bg_remote_filter_open(&rf->f, rf->r, rf->url.name,
                                   (bg_remote_backend)rf->url.backend);
    if (rc != BG_OK) {
        cli_remote_error(rf->url.display, "cannot open", rc, rf->r);
        if (rc == BG_ENOTFOUND)
            hint_other_backend(rf);
        cli_remote_close(rf);
        return -1;
    }
    *out = rf;
    return 0;
}

const char *cli_remote_display(const cli_remote *rf)
{
    return rf->url.display;
}

/* ---- what push and pull report ----------------------------------------- */

void cli_moved_of(const bg_filter *f, cli_moved *m)
{
    bg_filter_scaling sc = {0};
    (void)bg_filter_scaling_get(f, &sc);
    *m = (cli_moved){.bits = bg_filter_bits(f), .seed = bg_filter_seed(f),
                 .items = bg_filter_items(f), .bytes = bg_filter_bytes(f),
                 .hashes = bg_filter_hashes(f), .layers = sc.layers};
}

void cli_moved_json(bool module, const cli_moved *m)
{
    if (module)
        printf(",\"backend\":\"module\",\"layers\":%u,\"bytes\":%llu,\"items\":%llu}\n",
               m->layers, (unsigned long long)m->bytes, (unsigned long long)m->items);
    else
        printf(",\"bits\":%llu,\"hashes\":%u,\"seed\":%llu,\"items\":%llu,\"generation\":%llu}\n",
               (unsigned long long)m->bits, m->hashes, (unsigned long long)m->seed,
               (unsigned long long)m->items, (unsigned long long)m->generation);
}

void cli_moved_words(bool module, const cli_moved *m, char *buf, size_t size)
{
    if (module) {
        char b[32];
        cli_fmt_bytes(b, sizeof b, m->bytes);
        snprintf(buf, size, "scalable, %u layer%s (%s), %llu items", m->layers,
                 m->layers == 1 ? "" : "s", b, (unsigned long long)m->items);
    } else {
        snprintf(buf, size, "m = %llu bits, k = %u, %llu items", (unsigned long long)m->bits,
                 m->hashes, (unsigned long long)m->items);
    }
}
