/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate remove: removes keys from a counting filter file.
 *
 * The same shape as add (cmd_add.c): the file is loaded into memory, the
 * keys are removed in batches straight from the read buffer with
 * bg_filter_remove_many, and the filter is saved back only after the last
 * key, so any failure before that leaves the file exactly as it was.
 *
 * A key that is definitely absent (one of its counters is 0) is not an
 * error: the library changes nothing for it, and it is counted and
 * reported. With --strict, one such key makes the whole run change nothing
 * (exit status 1), for callers that want all the removals or none. */
#include "cli.h"
#include "cli_options.h"
#include "cli_output.h"
#include "cli_keys.h"
#include "cli_signals.h"
#include "cli_remote.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

typedef struct remover {
    bg_filter *f;
    const char *path;
    uint64_t keys, removed;
    uint64_t first_absent; /* 1-based number of the first absent key, 0: none yet */
    uint8_t results[CLI_BATCH];
} remover;

/* Removes one batch (a cli_batch_fn). */
static int remove_batch(void *ctx, const void *const *keys, const size_t *lens, size_t n,
                        uint64_t before)
{
    remover *r = ctx;
    (void)before; /* r->keys counts them too */
    int64_t rc = bg_filter_remove_many(r->f, keys, lens, n, r->results);
    if (rc < 0) {
        cli_error("%s: cannot remove: %s", r->path, bg_strerror((int)rc));
        return -1;
    }
    for (size_t i = 0; r->first_absent == 0 && i < n; i++)
        if (r->results[i] == 0)
            r->first_absent = r->keys + i + 1;
    r->keys += n;
    r->removed += (uint64_t)rc;
    return 0;
}

static int run(int argc, char **argv)
{
    static const struct option longs[] = {
        {"null", no_argument, NULL, '0'},
        {"quiet", no_argument, NULL, 'q'},
        {"json", no_argument, NULL, 'j'},
        {"strict", no_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    char sep = '\n';
    bool quiet = false, json = false, strict = false;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":0qh", longs, NULL)) != -1) {
        switch (c) {
        case '0':
            sep = '\0';
            break;
        case 'q':
            quiet = true;
            break;
        case 'j':
            json = true;
            break;
        case 'S':
            strict = true;
            break;
        case 'h':
            return cli_help(&cli_cmd_remove);
        default:
            return cli_bad_option(&cli_cmd_remove, c, argv, longs);
        }
    }
    if (optind >= argc)
        return cli_usage_error(&cli_cmd_remove, "no FILE given");
    const char *path = argv[optind++];
    size_t nargs = (size_t)(argc - optind);
    if (cli_is_url(path))
        return cli_url_refuse(path, "remote filters cannot remove keys (a bitmap filter has "
                                    "bits, not counters); remove works on counting filter "
                                    "files only");

    bg_filter *f;
    int rc = bg_filter_load(&f, path, BG_FILE_SINGLE_WRITER);
    if (rc != BG_OK) {
        cli_file_error(path, "cannot load", rc, errno);
        return CLI_EXIT_ERROR;
    }
    /* Before reading any key: a pipe feeding us should not be drained for
     * nothing. */
    bg_variant v = bg_filter_variant(f);
    if (v != BG_VARIANT_COUNTING) {
        const char *name = bg_variant_name(v);
        cli_error("%s: not a counting filter (variant %s); only counting filters can remove "
                  "keys",
                  path, name ? name : "unknown");
        bg_filter_free(f);
        return CLI_EXIT_ERROR;
    }

    remover r = {.f = f, .path = path};
    if (cli_keys_each(argv + optind, nargs, sep, "remove", path, quiet, remove_batch, &r) < 0) {
        cli_error("%s: not changed", path);
        bg_filter_free(f);
        return CLI_EXIT_ERROR;
    }
    uint64_t absent = r.keys - r.removed;
    if (strict && absent > 0) {
        bg_filter_free(f);
        if (json) {
            printf("{\"file\":");
            cli_json_string(stdout, path);
            printf(",\"keys\":%llu,\"removed\":0,\"absent\":%llu,\"changed\":false}\n",
                   (unsigned long long)r.keys, (unsigned long long)absent);
            if (cli_stdout_close() != 0)
                return CLI_EXIT_ERROR;
        }
        if (!quiet)
            cli_error("%s: %llu of %llu keys are definitely absent (the first: key %llu); "
                      "--strict: not changed",
                      path, (unsigned long long)absent, (unsigned long long)r.keys,
                      (unsigned long long)r.first_absent);
        return CLI_EXIT_ABSENT;
    }
    int err;
    rc = cli_save(f, path, &err);
    if (rc != BG_OK) {
        cli_file_error(path, "cannot save", rc, err);
        cli_error("%s: not changed", path);
        bg_filter_free(f);
        return CLI_EXIT_ERROR;
    }
    uint64_t items = bg_filter_items(f);
    bg_filter_free(f);
    if (json) {
        printf("{\"file\":");
        cli_json_string(stdout, path);
        printf(",\"keys\":%llu,\"removed\":%llu,\"absent\":%llu,\"changed\":%s,\"items\":%llu}\n",
               (unsigned long long)r.keys, (unsigned long long)r.removed,
               (unsigned long long)absent, "true", (unsigned long long)items);
        if (cli_stdout_close() != 0)
            return CLI_EXIT_ERROR;
    } else if (!quiet) {
        fprintf(stderr, "bloomgate: %s: %llu key%s read, %llu removed, %llu definitely absent "
                        "(nothing to remove); %llu item%s\n",
                path, (unsigned long long)r.keys, r.keys == 1 ? "" : "s",
                (unsigned long long)r.removed, (unsigned long long)absent,
                (unsigned long long)items, items == 1 ? "" : "s");
    }
    return CLI_EXIT_OK;
}

const cli_command cli_cmd_remove = {
    .name = "remove",
    .summary = "remove keys from a counting filter file (keys given as for add)",
    .usage = "bloomgate remove [-0] [-q] [--json] [--strict] FILE [--] [KEY...]\n",
    .help =
        "Removes the KEYs from the counting filter in FILE (made with 'create\n"
        "--variant counting'), or, when no KEY is given, every key read from\n"
        "standard input, as for 'bloomgate add'. Each key's counters are\n"
        "decremented (counters stuck at 15 stay). A key that is definitely absent\n"
        "(some counter is 0) is left alone and counted in the summary. FILE is\n"
        "replaced only once all keys are done, atomically: if anything fails it is\n"
        "left unchanged. Other variants cannot remove keys: that is an error.\n"
        "\n"
        "Remove only keys that were added. A key that was never added but is a\n"
        "false positive gets removed anyway, and lowers counters that other keys\n"
        "rely on: those keys can then be reported absent. Every counting Bloom\n"
        "filter has this limit.\n"
        "\n"
        "  -0, --null    keys on stdin end with a NUL byte instead of a newline\n"
        "  -q, --quiet   no summary and no progress line on stderr\n"
        "      --json    print the summary as JSON on stdout: file, keys (read),\n"
        "                removed, absent, changed, items\n"
        "      --strict  all or nothing: if any key is definitely absent, change\n"
        "                nothing and exit with status 1\n"
        "  -h, --help    this help\n"
        "  --            end of options: later arguments are keys, even '-x'\n"
        "\n"
        "Exit status: 0 done (absent keys included, unless --strict); 1 with\n"
        "--strict, some key was definitely absent and FILE is unchanged; 2 error.\n"
        "\n"
        "Example: psql -At -c 'select id from deleted_products' |\n"
        "           bloomgate remove products.bgf\n",
    .run = run,
};
