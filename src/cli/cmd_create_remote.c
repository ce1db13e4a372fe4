/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate create URL: a new filter in Redis (bg_remote_filter_create),
 * checked against what the URL's backend takes; with --force an existing
 * one, a sharded filter's shards included, is dropped first. */
#include "cli_remote_impl.h"
#include "cli.h"
#include "cli_options.h"
#include "cli_output.h"

#include <stdio.h>

const char *cli_remote_create_args_error(bg_remote_backend b,
                                         const cli_remote_create_args *a)
{
    if (a->other_scaling)
        return "--max-layers, --layer-variant, --tightening, --first-share, --blocked-from "
               "and --max-bytes do not apply to a remote filter (neither BF.RESERVE nor a "
               "bitmap has such a setting)";
    if (b == BG_REMOTE_BITMAP) {
        if (a->variant && a->variant != BG_VARIANT_STANDARD)
            return "a bitmap remote filter is a standard filter: drop --variant (or use "
                   "?backend=module for a scalable one)";
        if (a->expansion || a->nonscaling)
            return "--expansion and --nonscaling apply to ?backend=module only";
        return cli_sizing_given_error(&a->given);
    }
    if (a->variant)
        return "?backend=module: the module chooses its own variant: drop --variant";
    if (a->given.m || a->given.k || a->seed_given)
        return "?backend=module is sized by -n and -p only (the module picks m, k and its "
               "hashing): drop -m, -k and --seed";
    if (!a->given.n || a->given.p == 0)
        return "?backend=module needs -n (capacity) and -p (error rate)";
    if (a->expansion && a->nonscaling)
        return "--nonscaling makes one layer that never grows: --expansion does not apply";
    return NULL;
}

static void print_created(const cli_remote *rf, const bg_remote_filter_stats *s,
                          const cli_remote_create_args *a)
{
    char d[32], size[32];
    const char *url = rf->url.display;
    if (a->json) {
        printf("{\"url\":");
        cli_json_string(stdout, url);
        printf(",\"name\":");
        cli_json_string(stdout, rf->url.name);
        printf(",\"backend\":\"%s\",", cli_remote_backend_word(s->backend));
        if (s->backend == BG_REMOTE_BITMAP) {
            printf("\"variant\":\"standard\",\"capacity\":%llu,\"error_rate\":%s,",
                   (unsigned long long)s->capacity,
                   s->capacity ? cli_fmt_double(d, s->error_rate) : "null");
            printf("\"bits\":%llu,\"hashes\":%u,\"seed\":%llu,\"bytes\":%llu",
                   (unsigned long long)s->bits, s->hashes, (unsigned long long)s->seed,
                   (unsigned long long)s->bytes);
            /* a sharded filter has a generation per shard, none of its own */
            uint32_t shards = bg_remote_filter_shards(rf->f);
            if (shards > 1)
                printf(",\"shards\":%u}\n", shards);
            else
                printf(",\"generation\":%llu}\n", (unsigned long long)s->generation);
        } else {
            printf("\"capacity\":%llu,\"error_rate\":%s,\"bytes\":%llu,\"layers\":%u}\n",
                   (unsigned long long)s->capacity, cli_fmt_double(d, a->given.p),
                   (unsigned long long)s->bytes, s->layers);
        }
    }
    if (a->quiet)
        return;
    cli_fmt_bytes(size, sizeof size, s->bytes);
    if (s->backend == BG_REMOTE_BITMAP) {
        fprintf(stderr, "bloomgate: created %s: standard (bitmap backend), m = %llu bits (%s), "
                        "k = %u",
                url, (unsigned long long)s->bits, size, s->hashes);
        if (s->capacity)
            fprintf(stderr, ", for %llu keys at p = %.4g (model)", (unsigned long long)s->capacity,
                    s->error_rate);
        fputc('\n', stderr);
    } else {
        fprintf(stderr,
                "bloomgate: created %s: module backend, for %llu keys at p = %.4g; %s on the "
                "server\n",
                url, (unsigned long long)s->capacity, a->given.p, size);
    }
}

int cli_remote_create(const char *url, const cli_remote_create_args *a)
{
    cli_url u;
    if (cli_url_parse(url, &u) != 0)
        return CLI_EXIT_ERROR;
    const char *bad = cli_remote_create_args_error((bg_remote_backend)u.backend, a);
    cli_url_free(&u);
    if (bad)
        return cli_usage_error(&cli_cmd_create, "%s", bad);

    cli_remote *rf;
    if (cli_remote_begin(url, &rf) != 0)
        return CLI_EXIT_ERROR;
    bg_remote_backend b = (bg_remote_backend)rf->url.backend;
    bg_remote_filter_options fo = {
        .backend = b,
        .capacity = a->given.n,
        .error_rate = a->given.p,
        .bits = a->given.m,
        .hashes = a->given.k,
        .seed = a->seed,
        .expansion = a->expansion,
        .nonscaling = a->nonscaling,
        .shards = rf->url.shards,
    };
    int rc = bg_remote_filter_create(&rf->f, rf->r, rf->url.name, &fo);
    if (rc == BG_EEXIST && a->force) {
        /* Drop what is there, also a sharded filter's shards in any state
         * and the leftovers of a failed create, and try again; if someone
         * else drops it first, nothing is found, which is as good. */
        rc = bg_remote_filter_delete(rf->r, rf->url.name, b);
        if (rc != BG_OK && rc != BG_ENOTFOUND) {
            cli_remote_error(rf->url.display, "cannot drop the existing filter", rc, rf->r);
            cli_remote_close(rf);
            return CLI_EXIT_ERROR;
        }
        rc = bg_remote_filter_create(&rf->f, rf->r, rf->url.name, &fo);
        if (rc == BG_EEXIST) {
            /* The drop found nothing it recognises as a filter, yet
             * something under the name blocks the create: not ours to
             * delete (bg_remote_filter_delete). */
            cli_error("%s: cannot create: keys under this name exist but are not recognisably "
                      "a filter's, so --force leaves them alone: delete them by hand if they "
                      "are a damaged filter's (their names: docs/PROTOCOL.md, Keys)",
                      rf->url.display);
            cli_remote_close(rf);
            return CLI_EXIT_ERROR;
        }
    }
    if (rc != BG_OK) {
        if (rc == BG_ETOOBIG)
            cli_error("%s: cannot create: the filter would need more than %llu bits (512 MiB), "
                      "the most a bitmap filter has",
                      rf->url.display, (unsigned long long)BG_REMOTE_MAX_BITS);
        else if (rc == BG_EINVAL || rc == BG_EOVERFLOW || rc == BG_EUNDERDET) {
            char why[200];
            cli_sizing_explain(BG_VARIANT_STANDARD, &a->given, rc, why, sizeof why);
            cli_error("%s: cannot create: %s", rf->url.display, why);
        } else
            cli_remote_error(rf->url.display, "cannot create", rc, rf->r);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    bg_remote_filter_stats s;
    rc = bg_remote_filter_stats_get(rf->f, &s);
    if (rc != BG_OK) {
        cli_remote_error(rf->url.display, "created, but cannot read its statistics", rc, rf->r);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    print_created(rf, &s, a);
    cli_remote_close(rf);
    if (a->json && cli_stdout_close() != 0)
        return CLI_EXIT_ERROR;
    return CLI_EXIT_OK;
}
