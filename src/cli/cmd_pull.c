/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate pull: downloads a remote filter into a filter file
 * (bg_remote_filter_fetch, cmd_pull_remote.c), saved crash-safely like
 * create's. */
#include "cli.h"
#include "cli_options.h"
#include "cli_remote.h"

#include <unistd.h> /* optind */

static int run(int argc, char **argv)
{
    cli_simple_flags fl;
    int parsed = cli_parse_simple_flags(&cli_cmd_pull, true, argc, argv, &fl);
    if (parsed >= 0)
        return parsed;
    if (argc - optind < 2)
        return cli_usage_error(&cli_cmd_pull, argc - optind == 0 ? "no URL given"
                                                                 : "no FILE given");
    if (argc - optind > 2)
        return cli_usage_error(&cli_cmd_pull, "unexpected argument '%s'", argv[optind + 2]);
    const char *url = argv[optind], *path = argv[optind + 1];
    if (!cli_is_url(url))
        return cli_usage_error(&cli_cmd_pull, "'%s' is not a redis:// URL (the URL comes "
                                              "first, then FILE)", url);
    if (cli_is_url(path))
        return cli_usage_error(&cli_cmd_pull, "FILE must be a file, not a URL");
    return cli_remote_pull(url, path, fl.force, fl.quiet, fl.json);
}

const cli_command cli_cmd_pull = {
    .name = "pull",
    .summary = "download a remote filter from Redis into a filter file",
    .usage = "bloomgate pull [-f] [-q] [--json] URL FILE\n",
    .help =
        "Downloads the remote filter named by URL\n"
        "(redis://[:PASSWORD@]HOST[:PORT]/NAME[?backend=module]; see 'Remote\n"
        "filters' in docs/CLI.md) into FILE, as it was at one moment. Bitmap\n"
        "backend: a standard filter with the same m, k, seed and item count, all\n"
        "its bits from one generation (if the filter is replaced meanwhile, pull\n"
        "fails and FILE is not written). Module backend (bloomgate.so): a scalable\n"
        "filter equal to the server's, every layer (the server copies the filter\n"
        "once, then it is read in chunks). A key of RedisBloom's type (MBbloom--,\n"
        "held by RedisBloom or by bloomgate.so), whatever the backend: a redisbloom\n"
        "filter equal to it, read with BF.SCANDUMP (if an add changes it meanwhile,\n"
        "pull fails and FILE is not written). FILE is saved crash-safely and,\n"
        "without --force, never replaces an existing file.\n"
        "\n"
        "  -f, --force   replace FILE if it exists\n"
        "  -q, --quiet   no summary on stderr\n"
        "      --json    print url, file, bits, hashes, seed, items and generation\n"
        "                (module: backend, layers, bytes, items; RedisBloom's type:\n"
        "                backend \"redisbloom\", links, bytes, items) as JSON on stdout\n"
        "  -h, --help    this help\n"
        "\n"
        "Example: bloomgate pull redis://127.0.0.1:6379/users users.bgf\n"
        "         bloomgate check users.bgf alice\n",
    .run = run,
};
