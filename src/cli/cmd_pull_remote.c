/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate pull URL FILE: the filter as it was at one moment
 * (bg_remote_filter_fetch), saved as create saves: never over an existing
 * file without --force. */
#include "cli_remote_impl.h"
#include "cli.h"
#include "cli_output.h"
#include "cli_signals.h"

#include <stdio.h>
#include <sys/stat.h>

int cli_remote_pull(const char *url, const char *path, bool force, bool quiet, bool json)
{
    /* Fail before downloading what may be hundreds of MiB; cli_save_new
     * makes the refusal race-free. */
    struct stat st;
    if (!force && lstat(path, &st) == 0) {
        cli_error("%s: already exists (use --force to replace it)", path);
        return CLI_EXIT_ERROR;
    }
    cli_remote *rf;
    if (cli_remote_open(url, &rf) != 0)
        return CLI_EXIT_ERROR;
    bool module = rf->url.backend == CLI_URL_MODULE;
    bg_filter *f;
    int rc = bg_remote_filter_fetch(rf->f, &f);
    if (rc != BG_OK) {
        if (rc == BG_EINVAL) /* the one reason left: shards */
            cli_error("%s: cannot pull: a sharded filter has no single file to go into",
                      rf->url.display);
        else
            cli_remote_error(rf->url.display, "cannot pull", rc, rf->r);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    cli_moved m;
    cli_moved_of(f, &m);
    m.generation = module ? 0 : bg_remote_filter_generation(rf->f);
    if (cli_save_new(f, path, force) != 0) {
        bg_filter_free(f);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    bg_filter_free(f);
    if (json) {
        printf("{\"url\":");
        cli_json_string(stdout, rf->url.display);
        printf(",\"file\":");
        cli_json_string(stdout, path);
        cli_moved_json(module, &m);
    }
    if (!quiet) {
        char words[128];
        cli_moved_words(module, &m, words, sizeof words);
        if (module)
            fprintf(stderr, "bloomgate: pulled %s into %s: %s\n", rf->url.display, path, words);
        else
            fprintf(stderr, "bloomgate: pulled %s (generation %llu) into %s: %s\n",
                    rf->url.display, (unsigned long long)m.generation, path, words);
    }
    cli_remote_close(rf);
    if (json && cli_stdout_close() != 0)
        return CLI_EXIT_ERROR;
    return CLI_EXIT_OK;
}
