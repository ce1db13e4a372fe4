/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate rebuild: refills a remote filter from a full list of keys and
 * swaps the result in atomically (bg_remote_filter_rebuild_*). This file
 * parses the options; cmd_rebuild_remote.c checks what applies to which
 * backend, once the URL is parsed, and does the rebuild. */
#include "cli.h"
#include "cli_options.h"
#include "cli_remote.h"

#include <getopt.h>
#include <unistd.h>

/* Remembers the first option given that --abort does not take. */
static void note(const char **first, const char *flag)
{
    if (!*first)
        *first = flag;
}

static int run(int argc, char **argv)
{
    enum { OPT_EXPANSION = 256, OPT_NONSCALING, OPT_LEASE, OPT_ABORT, OPT_COMMAND };
    static const struct option longs[] = {
        {"null", no_argument, NULL, '0'},
        {"capacity", required_argument, NULL, 'n'},
        {"error-rate", required_argument, NULL, 'p'},
        {"bits", required_argument, NULL, 'm'},
        {"hashes", required_argument, NULL, 'k'},
        {"expansion", required_argument, NULL, OPT_EXPANSION},
        {"nonscaling", no_argument, NULL, OPT_NONSCALING},
        {"lease", required_argument, NULL, OPT_LEASE},
        {"abort", no_argument, NULL, OPT_ABORT},
        {"command", required_argument, NULL, OPT_COMMAND},
        {"quiet", no_argument, NULL, 'q'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    cli_remote_rebuild_args a = {.sep = '\n'};
    const char *not_with_abort = NULL; /* the first option --abort does not take */
    uint64_t v64;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":0n:p:m:k:qh", longs, NULL)) != -1) {
        switch (c) {
        case '0':
            a.sep = '\0';
            note(&not_with_abort, "-0");
            break;
        case 'n':
        case 'p':
        case 'm':
        case 'k':
            if (cli_sizing_option(c, optarg, &a.given) != 0)
                return CLI_EXIT_ERROR;
            note(&not_with_abort, c == 'n' ? "-n" : c == 'p' ? "-p" : c == 'm' ? "-m" : "-k");
            break;
        case OPT_EXPANSION:
            if (cli_parse_count("--expansion", optarg, 1, BG_MAX_EXPANSION, &v64) != 0)
                return CLI_EXIT_ERROR;
            a.expansion = (uint32_t)v64;
            note(&not_with_abort, "--expansion");
            break;
        case OPT_NONSCALING:
            a.nonscaling = true;
            note(&not_with_abort, "--nonscaling");
            break;
        case OPT_LEASE:
            if (cli_parse_count("--lease", optarg, 1, CLI_MAX_LEASE_MS, &a.lease_ms) != 0)
                return CLI_EXIT_ERROR;
            note(&not_with_abort, "--lease");
            break;
        case OPT_ABORT:
            a.cancel = true;
            break;
        case OPT_COMMAND:
            if (!optarg[0])
                return cli_usage_error(&cli_cmd_rebuild, "--command: the command is empty");
            a.command = optarg;
            note(&not_with_abort, "--command");
            break;
        case 'q':
            a.quiet = true;
            break;
        case 'j':
            a.json = true;
            break;
        case 'h':
            return cli_help(&cli_cmd_rebuild);
        default:
            return cli_bad_option(&cli_cmd_rebuild, c, argv, longs);
        }
    }
    if (optind >= argc)
        return cli_usage_error(&cli_cmd_rebuild, "no URL given");
    const char *url = argv[optind++];
    if (!cli_is_url(url))
        return cli_usage_error(&cli_cmd_rebuild,
                               "'%s' is not a redis:// URL (a file is rebuilt with create "
                               "--force and add, or built and then uploaded with push)",
                               url);
    a.keys = argv + optind;
    a.nkeys = (size_t)(argc - optind);
    if (a.cancel && (not_with_abort || a.nkeys > 0))
        return cli_usage_error(&cli_cmd_rebuild,
                               "--abort cancels the pending rebuild and reads no keys: drop %s",
                               not_with_abort ? not_with_abort : "the KEYs");
    if (a.command && a.nkeys > 0)
        return cli_usage_error(&cli_cmd_rebuild,
                               "the keys are the output of --command: drop the KEYs");
    return cli_remote_rebuild(url, &a);
}

const cli_command cli_cmd_rebuild = {
    .name = "rebuild",
    .summary = "refill a remote filter from all its keys, swapped in at once",
    .usage = "bloomgate rebuild [-0] [-q] [--json] [--lease MS] URL --command CMD\n"
             "       bloomgate rebuild [-0] [-q] [--json] [--lease MS] URL [--] [KEY...]\n"
             "       bloomgate rebuild (any two of -n, -p, -m, -k) [...] URL [KEY...]\n"
             "       bloomgate rebuild -n N -p P [--expansion E | --nonscaling] [...]\n"
             "                         'redis://HOST[:PORT]/NAME?backend=module' [KEY...]\n"
             "       bloomgate rebuild --abort [-q] [--json] URL\n",
    .help =
        "Refills the existing remote filter named by URL (see 'Remote filters' in\n"
        "docs/CLI.md) from the output of CMD, from the KEYs, or, when neither is\n"
        "given, from standard input (one key per line, or NUL-separated with -0, as\n"
        "for add): the full list of keys it should hold, which drops the keys that\n"
        "are gone from it. The new filter is built beside the old one and swapped\n"
        "in at once (shard by shard for a sharded filter): readers see the old\n"
        "filter until then, never an empty or partial one, and keys that other\n"
        "clients add meanwhile go to both. If anything fails (a read error, a key\n"
        "over the limit, no keys at all, CMD exiting with a status other than 0,\n"
        "Redis unreachable or replying an error), the rebuild is cancelled and the\n"
        "filter is left as it was.\n"
        "\n"
        "Bitmap backend (the default; sharded filters too): the filter keeps its\n"
        "m, k and seed, or is resized by any two of -n, -p, -m, -k (the seed, and\n"
        "the number of shards, are kept). ?backend=module: -n and -p are required\n"
        "(Redis does not report a module filter's error rate), with --expansion or\n"
        "--nonscaling if wanted, as for create.\n"
        "\n"
        "      --command CMD   the keys are the output of CMD, run with /bin/sh -c once\n"
        "                      the rebuild has begun (stdin /dev/null, no terminal,\n"
        "                      stderr shown); committed only if CMD exits with 0\n"
        "  -0, --null          keys end with a NUL byte instead of a newline\n"
        "  -n, --capacity N    the new filter's capacity\n"
        "  -p, --error-rate P  the new filter's false-positive rate at N keys\n"
        "  -m, --bits M        the new filter's bits (bitmap; split over the shards)\n"
        "  -k, --hashes K      the new filter's probes per key (bitmap)\n"
        "      --expansion E   module: capacity factor per layer\n"
        "      --nonscaling    module: one layer that never grows\n"
        "      --lease MS      cancel the rebuild if no batch of keys comes for MS\n"
        "                      milliseconds (default 60000): a source that is slow to\n"
        "                      start (a long query) needs more\n"
        "      --abort         cancel whichever rebuild is pending (one whose\n"
        "                      rebuilder was interrupted), instead of rebuilding\n"
        "  -q, --quiet         no summary and no progress line on stderr\n"
        "      --json          print the summary as JSON on stdout: url, keys (read),\n"
        "                      items, capacity, and bits, hashes, seed, generation\n"
        "                      (module: backend, layers, bytes)\n"
        "  -h, --help          this help\n"
        "  --                  end of options: later arguments are keys\n"
        "\n"
        "The keys must be the source's as of the moment the rebuild began, or\n"
        "later: a key added just before then reaches only the old filter. CMD\n"
        "starts only once the rebuild has begun, and its failure (a connection lost\n"
        "half-way) cancels the rebuild. A producer piped into rebuild starts at the\n"
        "same moment, maybe before, and its failure is not seen: a pipe is fine\n"
        "when nothing adds keys meanwhile and the producer cannot fail part-way. An\n"
        "interrupt (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT) before the commit ends CMD,\n"
        "cancels the rebuild and ends the program by the signal; one after the\n"
        "commit stops nothing (exit status 0). A second interrupt, or SIGKILL,\n"
        "leaves the rebuild pending (adds write to both filters, another rebuild\n"
        "is refused) until its lease runs out, or 'rebuild --abort'.\n"
        "A FILE is rebuilt with 'create --force' and 'add', or built and pushed.\n"
        "\n"
        "Examples:\n"
        "  bloomgate rebuild redis://127.0.0.1:6379/users \\\n"
        "      --command \"psql -At -c 'select id from users'\"\n"
        "  bloomgate rebuild -n 2e7 -p 0.001 'redis+cluster://10.0.0.5:7000/users' \\\n"
        "      --command \"psql -At -c 'select id from users'\"\n"
        "  seq 1 1000 | bloomgate rebuild redis://127.0.0.1:6379/test\n"
        "  bloomgate rebuild --abort redis://127.0.0.1:6379/users\n",
    .run = run,
};
