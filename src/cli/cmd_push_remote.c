/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate push FILE URL: the file goes up as one new generation
 * (bg_remote_filter_publish), made current in one step. */
#include "cli_remote_impl.h"
#include "cli.h"
#include "cli_output.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int cli_remote_push(const char *path, const char *url, bool quiet, bool json)
{
    cli_url u;
    if (cli_url_parse(url, &u) != 0)
        return CLI_EXIT_ERROR;
    bool module = u.backend == CLI_URL_MODULE;
    cli_url_free(&u);
    bg_filter *f;
    int rc = bg_filter_map(&f, path, 0);
    if (rc != BG_OK) {
        cli_file_error(path, "cannot open", rc, errno);
        return CLI_EXIT_ERROR;
    }
    bg_variant want = module ? BG_VARIANT_SCALABLE : BG_VARIANT_STANDARD;
    if (bg_filter_variant(f) != want) {
        if (module)
            cli_error("%s: is a %s filter; only a scalable one can be pushed to the module "
                      "backend (the module's filters are scalable: create the file with "
                      "--variant scalable)",
                      path, bg_variant_name(bg_filter_variant(f)));
        else
            cli_error("%s: is a %s filter; only a standard one can be pushed to the bitmap "
                      "backend (create the file with --variant standard, or push a scalable "
                      "one to ?backend=module)",
                      path, bg_variant_name(bg_filter_variant(f)));
        bg_filter_free(f);
        return CLI_EXIT_ERROR;
    }
    cli_remote *rf;
    if (cli_remote_begin(url, &rf) != 0) {
        bg_filter_free(f);
        return CLI_EXIT_ERROR;
    }
    rc = bg_remote_filter_publish(rf->r, rf->url.name,
                                  module ? BG_REMOTE_MODULE : BG_REMOTE_BITMAP, f);
    if (rc != BG_OK) {
        if (rc == BG_ETOOBIG)
            cli_error("%s: cannot push %s: it has more than %llu bits, the most a bitmap "
                      "filter has",
                      rf->url.display, path, (unsigned long long)BG_REMOTE_MAX_BITS);
        else if (rc == BG_EEXIST) /* remote.h: only a sharded filter or its shards */
            cli_error("%s: cannot push: a sharded filter (or shards of one) has that name, "
                      "and push replaces only an unsharded filter; push to another name, or "
                      "drop it first (bloomgate create URL --force ... re-creates it)",
                      rf->url.display);
        else
            cli_remote_error(rf->url.display, "cannot push", rc, rf->r);
        if (rc == BG_EREMOTE && strstr(bg_remote_errstr(rf->r), "MAX_BYTES"))
            cli_error("%s: recreate the file with --max-bytes at most the server's MAX_BYTES "
                      "(512 MiB by default)", path);
        bg_filter_free(f);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    cli_moved m;
    cli_moved_of(f, &m);
    bg_filter_free(f);
    /* The generation now current: someone may already have pushed again,
     * so it is reported as read back, not as pushed. */
    if (!module && bg_remote_filter_open(&rf->f, rf->r, rf->url.name, BG_REMOTE_BITMAP) == BG_OK)
        m.generation = bg_remote_filter_generation(rf->f);
    if (json) {
        printf("{\"file\":");
        cli_json_string(stdout, path);
        printf(",\"url\":");
        cli_json_string(stdout, rf->url.display);
        cli_moved_json(module, &m);
    }
    if (!quiet) {
        char words[128];
        cli_moved_words(module, &m, words, sizeof words);
        if (module)
            fprintf(stderr, "bloomgate: pushed %s to %s: %s\n", path, rf->url.display, words);
        else
            fprintf(stderr, "bloomgate: pushed %s to %s: %s; now generation %llu\n", path,
                    rf->url.display, words, (unsigned long long)m.generation);
    }
    cli_remote_close(rf);
    if (json && cli_stdout_close() != 0)
        return CLI_EXIT_ERROR;
    return CLI_EXIT_OK;
}
