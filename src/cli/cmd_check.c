/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate check: asks a filter file about keys.
 *
 * The file is mapped read-only (bg_filter_map), so only the pages the probes
 * touch are read: with --no-verify, checking a few keys against a huge file
 * costs a few page faults. Keys are checked in batches with
 * bg_filter_contains_many and the answers go into one output buffer that is
 * written in large blocks (cli_out), never a stdio call per key. A remote
 * filter (a URL) answers through cmd_check_remote.c. */
#include "cli.h"
#include "cli_options.h"
#include "cli_output.h"
#include "cli_keys.h"
#include "cli_remote.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum show { SHOW_ALL, SHOW_ABSENT, SHOW_PRESENT };

typedef struct checker {
    const bg_filter *f;
    cli_remote *rf;  /* a remote filter instead of f */
    enum show show;
    bool count_only; /* -c */
    bool quiet;      /* -q */
    bool json;
    char term;       /* ends each output record: '\n', or '\0' with -0 */
    cli_out out;
    uint64_t keys, maybe;
    bool first_json; /* no result printed yet (JSON commas) */
    uint8_t results[CLI_BATCH];
} checker;

static void emit(checker *c, const void *const *keys, const size_t *lens, size_t n)
{
    static const char maybe[] = "\tmaybe";
    static const char no[] = "\tno";
    cli_out *o = &c->out;
    for (size_t i = 0; i < n; i++) {
        bool present = c->results[i] != 0;
        if (c->show == SHOW_ABSENT ? present : c->show == SHOW_PRESENT ? !present : false)
            continue;
        if (c->json) {
            cli_out_write(o, c->first_json ? "\n{\"key\":" : ",\n{\"key\":",
                          c->first_json ? 8 : 9);
            c->first_json = false;
            cli_out_json_string(o, keys[i], lens[i]);
            if (present)
                cli_out_write(o, ",\"maybe\":true}", 14);
            else
                cli_out_write(o, ",\"maybe\":false}", 15);
            continue;
        }
        cli_out_write(o, keys[i], lens[i]);
        if (c->show == SHOW_ALL) {
            if (present)
                cli_out_write(o, maybe, sizeof maybe - 1);
            else
                cli_out_write(o, no, sizeof no - 1);
        }
        cli_out_byte(o, c->term);
    }
}

/* Checks one batch (a cli_batch_fn). */
static int check_batch(void *ctx, const void *const *keys, const size_t *lens, size_t n,
                       uint64_t before)
{
    checker *c = ctx;
    (void)before; /* c->keys counts them too */
    int64_t rc;
    if (c->rf) {
        rc = cli_remote_contains_many(c->rf, keys, lens, n, c->results);
        if (rc < 0)
            return -1; /* message printed */
    } else {
        rc = bg_filter_contains_many(c->f, keys, lens, n, c->results);
        if (rc < 0) {
            cli_error("check: %s", bg_strerror((int)rc));
            return -1;
        }
    }
    c->keys += n;
    c->maybe += (uint64_t)rc;
    if (!c->quiet && !c->count_only)
        emit(c, keys, lens, n);
    return 0;
}

static int run(int argc, char **argv)
{
    static const struct option longs[] = {
        {"null", no_argument, NULL, '0'},
        {"absent", no_argument, NULL, 'a'},
        {"present", no_argument, NULL, 'P'},
        {"count", no_argument, NULL, 'c'},
        {"quiet", no_argument, NULL, 'q'},
        {"json", no_argument, NULL, 'j'},
        {"no-verify", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    checker *c = calloc(1, sizeof *c);
    if (!c) {
        cli_error("out of memory");
        return CLI_EXIT_ERROR;
    }
    c->term = '\n';
    c->first_json = true;
    unsigned flags = 0;
    int opt, status = CLI_EXIT_ERROR;
    optind = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":0cqh", longs, NULL)) != -1) {
        switch (opt) {
        case '0':
            c->term = '\0';
            break;
        case 'a':
        case 'P':
            if (c->show != SHOW_ALL && c->show != (opt == 'a' ? SHOW_ABSENT : SHOW_PRESENT)) {
                status = cli_usage_error(&cli_cmd_check, "--absent and --present exclude each other");
                goto done;
            }
            c->show = opt == 'a' ? SHOW_ABSENT : SHOW_PRESENT;
            break;
        case 'c':
            c->count_only = true;
            break;
        case 'q':
            c->quiet = true;
            break;
        case 'j':
            c->json = true;
            break;
        case 'V':
            flags |= BG_FILE_NO_VERIFY;
            break;
        case 'h':
            status = cli_help(&cli_cmd_check);
            goto done;
        default:
            status = cli_bad_option(&cli_cmd_check, opt, argv, longs);
            goto done;
        }
    }
    if (optind >= argc) {
        status = cli_usage_error(&cli_cmd_check, "no FILE given");
        goto done;
    }
    const char *path = argv[optind++];
    size_t nargs = (size_t)(argc - optind);

    /* A remote filter is named in messages and JSON without its password,
     * and under "url" instead of "file". */
    const char *field = "{\"file\":";
    bg_filter *f = NULL;
    if (cli_is_url(path)) {
        if (cli_remote_open(path, &c->rf) != 0)
            goto done;
        path = cli_remote_display(c->rf);
        field = "{\"url\":";
    } else {
        int rc = bg_filter_map(&f, path, flags);
        if (rc != BG_OK) {
            cli_file_error(path, "cannot open", rc, errno);
            goto done;
        }
        c->f = f;
    }
    if (cli_out_open(&c->out, STDOUT_FILENO) != 0) {
        bg_filter_free(f);
        goto done;
    }
    if (c->json && !c->quiet && !c->count_only) {
        cli_out_write(&c->out, field, strlen(field));
        cli_out_json_string(&c->out, path, strlen(path));
        cli_out_write(&c->out, ",\"results\":[", 12);
    }
    int failed = cli_keys_each(argv + optind, nargs, c->term, "check", path, c->quiet, check_batch,
                               c) < 0;
    bg_filter_free(f);
    /* A failed check prints no totals, except that --json closes the
     * results it streamed already, saying that they stop short (the reason
     * is on stderr). */
    if (!c->quiet && (!failed || (c->json && !c->count_only))) {
        uint64_t absent = c->keys - c->maybe;
        if (c->json) {
            if (c->count_only) {
                cli_out_write(&c->out, field, strlen(field));
                cli_out_json_string(&c->out, path, strlen(path));
                cli_out_write(&c->out, ",", 1);
            } else {
                cli_out_write(&c->out, c->first_json ? "]," : "\n],", c->first_json ? 2 : 3);
            }
            if (failed)
                cli_out_printf(&c->out, "\"error\":\"the check stopped part-way (the message "
                                        "is on standard error)\",");
            cli_out_printf(&c->out, "\"keys\":%llu,\"maybe\":%llu,\"absent\":%llu}\n",
                           (unsigned long long)c->keys, (unsigned long long)c->maybe,
                           (unsigned long long)absent);
        } else if (c->count_only) {
            if (c->show == SHOW_ABSENT)
                cli_out_printf(&c->out, "%llu\n", (unsigned long long)absent);
            else if (c->show == SHOW_PRESENT)
                cli_out_printf(&c->out, "%llu\n", (unsigned long long)c->maybe);
            else
                cli_out_printf(&c->out, "keys\t%llu\nmaybe\t%llu\nno\t%llu\n",
                               (unsigned long long)c->keys, (unsigned long long)c->maybe,
                               (unsigned long long)absent);
        }
    }
    if (cli_out_close(&c->out) != 0 || failed)
        goto done;
    status = c->maybe == c->keys ? CLI_EXIT_OK : CLI_EXIT_ABSENT;
done:
    cli_remote_close(c->rf);
    free(c);
    return status;
}

const cli_command cli_cmd_check = {
    .name = "check",
    .summary = "ask a filter file whether keys may be present",
    .usage = "bloomgate check [-0] [--absent|--present] [-c] [-q] [--json] [--no-verify]\n"
             "                FILE|URL [--] [KEY...]\n",
    .help =
        "Looks up each KEY (or, when none is given, each key on standard input, as\n"
        "for 'bloomgate add') in the filter in FILE and prints one line per key:\n"
        "KEY<TAB>maybe (it may be present) or KEY<TAB>no (definitely absent).\n"
        "\n"
        "  -0, --null        keys on stdin end with NUL; output records too\n"
        "      --absent      print only the definitely absent keys (just the key)\n"
        "      --present     print only the keys that may be present (just the key)\n"
        "  -c, --count       print totals only: keys, maybe, no (one line each);\n"
        "                    with --absent or --present, only that number\n"
        "  -q, --quiet       print nothing; the exit status is the answer\n"
        "      --json        one JSON object: file, results [{key, maybe}] (or none\n"
        "                    with -c), keys, maybe, absent\n"
        "      --no-verify   skip the checksum: opening is O(1) whatever the size,\n"
        "                    but damaged bytes go unnoticed\n"
        "  -h, --help        this help\n"
        "  --                end of options: later arguments are keys, even '-x'\n"
        "\n"
        "URL, redis://[:PASSWORD@]HOST[:PORT]/NAME[?backend=module], names a remote\n"
        "filter (docs/CLI.md, 'Remote filters'): the keys are asked in batches,\n"
        "one round trip each; the output is the same (in JSON, \"url\" instead of\n"
        "\"file\"). --no-verify does not apply.\n"
        "\n"
        "Exit status: 0 if every key may be present, 1 if some key is definitely\n"
        "absent, 2 on error.\n"
        "\n"
        "Example (1 means free; 2, an error, must not):\n"
        "  bloomgate check -q users.bgf alice; [ $? -eq 1 ] && echo 'alice is free'\n",
    .run = run,
};
