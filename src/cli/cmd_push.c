/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate push: uploads a filter file to Redis as a new generation of a
 * remote filter and makes it current (bg_remote_filter_publish,
 * cmd_push_remote.c): readers see the old filter, then the new one, never a
 * partial one. */
#include "cli.h"
#include "cli_options.h"
#include "cli_remote.h"

#include <unistd.h> /* optind */

static int run(int argc, char **argv)
{
    cli_simple_flags fl;
    int parsed = cli_parse_simple_flags(&cli_cmd_push, false, argc, argv, &fl);
    if (parsed >= 0)
        return parsed;
    if (argc - optind < 2)
        return cli_usage_error(&cli_cmd_push, argc - optind == 0 ? "no FILE given"
                                                                 : "no URL given");
    if (argc - optind > 2)
        return cli_usage_error(&cli_cmd_push, "unexpected argument '%s'", argv[optind + 2]);
    const char *path = argv[optind], *url = argv[optind + 1];
    if (cli_is_url(path))
        return cli_usage_error(&cli_cmd_push, "FILE comes first, then the URL");
    if (!cli_is_url(url))
        return cli_usage_error(&cli_cmd_push, "'%s' is not a redis:// URL", url);
    return cli_remote_push(path, url, fl.quiet, fl.json);
}

const cli_command cli_cmd_push = {
    .name = "push",
    .summary = "upload a filter file to Redis, replacing the remote filter at once",
    .usage = "bloomgate push [-q] [--json] FILE URL\n",
    .help =
        "Uploads the filter in FILE to the remote filter named by URL\n"
        "(redis://[:PASSWORD@]HOST[:PORT]/NAME[?backend=module]; see 'Remote\n"
        "filters' in docs/CLI.md), replacing it, or creating it if it does not\n"
        "exist. Readers see the old filter, then the new one, never a partial or\n"
        "empty one.\n"
        "\n"
        "Bitmap backend (the default): FILE is a standard filter. The bits go up\n"
        "under a new generation that no reader looks at, then one atomic step makes\n"
        "it current and deletes the old bits. Clients whose m, k and seed were the\n"
        "same go on working; the others get 'the filter was re-created' and open\n"
        "it again.\n"
        "Module backend (?backend=module, bloomgate.so): FILE is a scalable filter\n"
        "whose --max-bytes is at most the server's MAX_BYTES (512 MiB by default).\n"
        "It is loaded under a hidden key with BF.LOADCHUNK, checked whole by the\n"
        "server, then renamed over NAME (which keeps its time to live). A pending\n"
        "rebuild of NAME is cancelled.\n"
        "\n"
        "  -q, --quiet   no summary on stderr\n"
        "      --json    print file, url, bits, hashes, seed, items and the new\n"
        "                generation (module: backend, layers, bytes, items) as\n"
        "                JSON on stdout\n"
        "  -h, --help    this help\n"
        "\n"
        "Example (rebuild offline, swap in):\n"
        "  bloomgate create users.bgf -n 1e6 -p 0.01 --variant standard\n"
        "  psql -At -c 'select id from users' | bloomgate add users.bgf\n"
        "  bloomgate push users.bgf redis://127.0.0.1:6379/users\n"
        "Module:\n"
        "  bloomgate create ev.bgf -n 1e6 -p 0.01 --variant scalable --max-bytes 536870912\n"
        "  bloomgate push ev.bgf 'redis://127.0.0.1:6379/ev?backend=module'\n",
    .run = run,
};
