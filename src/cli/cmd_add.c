/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate add: adds keys to a filter file.
 *
 * The file is loaded into memory, the keys are added in batches straight
 * from the read buffer (cli.h, "keys"), and the filter is saved back with
 * bg_filter_save only after the last key: any failure before that (a read
 * error, a key over the limit, a signal, a scalable filter that cannot grow)
 * leaves the file exactly as it was, and the save itself replaces the file
 * atomically. A remote filter (a URL) is cmd_add_remote.c's. */
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

/* The number of the first key of a failed batch that was not added: the
 * batch calls set results[i] for each key before the failing one and leave
 * the rest alone, so the results were filled with NOT_ADDED first. 0 if
 * that cannot be told. */
#define NOT_ADDED 0xffu

static uint64_t failed_key(const uint8_t *results, size_t count, uint64_t before)
{
    for (size_t i = 0; i < count; i++)
        if (results[i] == NOT_ADDED)
            return before + i + 1;
    return 0;
}

/* Explains why keys could not be added to the filter in `path` (status rc
 * from bg_filter_add_many): for a scalable filter that cannot grow
 * (BG_EFULL, BG_ELAYERS, BG_ETOOBIG), what limit was reached and how to
 * raise it. `key` is the 1-based number of the key that failed, 0 if
 * unknown. */
static void add_error(const bg_filter *f, const char *path, int rc, uint64_t key)
{
    char at[64] = "";
    if (key)
        snprintf(at, sizeof at, " (key %llu)", (unsigned long long)key);
    bg_filter_scaling sc;
    if (bg_filter_scaling_get(f, &sc) != BG_OK) {
        cli_error("%s: cannot add%s: %s", path, at, bg_strerror(rc));
        return;
    }
    char cap[32];
    switch (rc) {
    case BG_EFULL:
        cli_error("%s: cannot add%s: the filter is full: it is non-scaling and holds its "
                  "capacity of %llu keys",
                  path, at, (unsigned long long)sc.capacity);
        cli_error("%s: recreate it with a larger -n, or without --nonscaling", path);
        break;
    case BG_ELAYERS:
        if (sc.layers >= sc.max_layers) {
            cli_error("%s: cannot add%s: the filter cannot grow: it has %u layers, the most it "
                      "was created with (--max-layers %u)",
                      path, at, sc.layers, sc.max_layers);
        } else if (sc.layer_variant == BG_VARIANT_BLOCKED ||
                   (sc.blocked_from && sc.layers >= sc.blocked_from)) {
            /* each layer's rate is tightened: the next would be below what
             * a blocked layer can deliver (filter.h, SCALABLE); in a mixed
             * stack, layer `layers` is blocked once it is >= blocked_from */
            cli_error("%s: cannot add%s: the filter cannot grow: after %u layers, the next "
                      "layer's error rate would be below %g, the least a blocked layer can "
                      "deliver",
                      path, at, sc.layers, BG_BLOCKED_MIN_P);
            cli_error("%s: recreate it with %s, or a larger -n or --expansion so that it "
                      "needs fewer layers",
                      path,
                      sc.blocked_from ? "a larger --blocked-from (or none)"
                                      : "--layer-variant standard");
        } else {
            cli_error("%s: cannot add%s: the filter cannot grow: after %u layers, the next "
                      "layer's error rate would be 0 (--tightening too small)",
                      path, at, sc.layers);
        }
        break;
    case BG_ETOOBIG:
        cli_fmt_bytes(cap, sizeof cap, sc.max_bytes);
        if (sc.layer_variant == BG_VARIANT_REDISBLOOM)
            cli_error("%s: cannot add%s: the filter cannot grow: its next link would take its "
                      "%u link%s past %s cap of %llu bytes (%s, --max-bytes), or cannot be "
                      "made at all (RedisBloom: \"ERR problem inserting into filter\")",
                      path, at, sc.layers, sc.layers == 1 ? "" : "s",
                      sc.layers == 1 ? "its" : "their", (unsigned long long)sc.max_bytes, cap);
        else
            cli_error("%s: cannot add%s: the filter cannot grow: a new layer would take its %u "
                      "layer%s past %s cap of %llu bytes (%s, --max-bytes)",
                      path, at, sc.layers, sc.layers == 1 ? "" : "s",
                      sc.layers == 1 ? "its" : "their", (unsigned long long)sc.max_bytes, cap);
        break;
    default:
        cli_error("%s: cannot add%s: %s", path, at, bg_strerror(rc));
    }
}

typedef struct adder {
    bg_filter *f;
    const char *path;
    int64_t added; /* keys that were new */
    uint8_t results[CLI_BATCH];
} adder;

/* Adds one batch (a cli_batch_fn). */
static int add_batch(void *ctx, const void *const *keys, const size_t *lens, size_t count,
                     uint64_t before)
{
    adder *a = ctx;
    memset(a->results, NOT_ADDED, count);
    int64_t rc = bg_filter_add_many(a->f, keys, lens, count, a->results);
    if (rc < 0) {
        add_error(a->f, a->path, (int)rc, failed_key(a->results, count, before));
        return -1;
    }
    a->added += rc;
    return 0;
}

static int run(int argc, char **argv)
{
    static const struct option longs[] = {
        {"null", no_argument, NULL, '0'},
        {"quiet", no_argument, NULL, 'q'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    char sep = '\n';
    bool quiet = false, json = false;
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
        case 'h':
            return cli_help(&cli_cmd_add);
        default:
            return cli_bad_option(&cli_cmd_add, c, argv, longs);
        }
    }
    if (optind >= argc)
        return cli_usage_error(&cli_cmd_add, "no FILE given");
    const char *path = argv[optind++];
    size_t nargs = (size_t)(argc - optind);
    if (cli_is_url(path))
        return cli_remote_add(path, argv + optind, nargs, sep, quiet, json);

    bg_filter *f;
    int rc = bg_filter_load(&f, path, BG_FILE_SINGLE_WRITER);
    if (rc != BG_OK) {
        int err = errno;
        cli_file_error(path, "cannot load", rc, err);
        if (rc == BG_EIO && err == ENOENT)
            cli_error("%s: create it first: bloomgate create %s -n N -p P", path, path);
        return CLI_EXIT_ERROR;
    }

    adder a = {.f = f, .path = path};
    int64_t read = cli_keys_each(argv + optind, nargs, sep, "add", path, quiet, add_batch, &a);
    int64_t added = a.added;
    if (read < 0) {
        cli_error("%s: not changed", path);
        bg_filter_free(f);
        return CLI_EXIT_ERROR;
    }
    int err;
    rc = cli_save(f, path, &err);
    if (rc != BG_OK) {
        cli_file_error(path, "cannot save", rc, err);
        cli_error("%s: not changed", path);
        bg_filter_free(f);
        return CLI_EXIT_ERROR;
    }

    /* Accessors, not bg_filter_stats_get: that scans the whole array. */
    uint64_t items = bg_filter_items(f), capacity = bg_filter_capacity(f);
    bg_variant variant = bg_filter_variant(f);
    uint64_t bits = bg_filter_bits(f);
    uint32_t hashes = bg_filter_hashes(f);
    bg_filter_scaling sc;
    bool scalable = bg_filter_scaling_get(f, &sc) == BG_OK;
    bg_filter_free(f);
    if (json) {
        printf("{\"file\":");
        cli_json_string(stdout, path);
        printf(",\"keys\":%llu,\"new\":%lld,\"items\":%llu,\"capacity\":%llu",
               (unsigned long long)read, (long long)added, (unsigned long long)items,
               (unsigned long long)capacity);
        if (scalable)
            printf(",\"layers\":%u", sc.layers);
        printf("}\n");
        if (cli_stdout_close() != 0)
            return CLI_EXIT_ERROR;
    }
    if (!quiet) {
        if (!json) {
            fprintf(stderr, "bloomgate: %s: %llu key%s read, %lld new; %llu item%s", path,
                    (unsigned long long)read, read == 1 ? "" : "s", (long long)added,
                    (unsigned long long)items, items == 1 ? "" : "s");
            if (scalable)
                fprintf(stderr, " in %u %s%s (capacity %llu)", sc.layers,
                        sc.layer_variant == BG_VARIANT_REDISBLOOM ? "link" : "layer",
                        sc.layers == 1 ? "" : "s", (unsigned long long)capacity);
            fputc('\n', stderr);
        }
        /* Past its capacity a filter still never misses a key, but lets more
         * absent keys through than it was built for: say so. (A scalable
         * filter grows instead.) */
        if (!scalable && capacity > 0 && items > capacity)
            fprintf(stderr,
                    "bloomgate: %s: warning: %llu items exceed the capacity %llu; the "
                    "false-positive rate is now about %.3g (built for %g)\n",
                    path, (unsigned long long)items, (unsigned long long)capacity,
                    bg_sizing_fp_rate(variant, bits, items, hashes),
                    bg_sizing_fp_rate(variant, bits, capacity, hashes));
    }
    return CLI_EXIT_OK;
}

const cli_command cli_cmd_add = {
    .name = "add",
    .summary = "add keys (arguments, or lines of stdin) to a filter file",
    .usage = "bloomgate add [-0] [-q] [--json] FILE|URL [--] [KEY...]\n",
    .help =
        "Adds the KEYs to the filter in FILE, or, when no KEY is given, every key\n"
        "read from standard input: one key per line, or NUL-separated with -0.\n"
        "FILE is replaced only once all keys are in, atomically: if anything fails\n"
        "(a read error, a key over the limit, an interrupt, a scalable filter\n"
        "that cannot grow any more) it is left unchanged. A scalable filter adds\n"
        "layers as it fills; the summary then gives their number.\n"
        "\n"
        "Keys on standard input: every line is a key, byte for byte, without its\n"
        "'\\n' (an empty line is the empty key; a '\\r' is kept); the last line needs\n"
        "no '\\n'. At most 16 MiB per key.\n"
        "\n"
        "  -0, --null    keys on stdin end with a NUL byte instead of a newline\n"
        "  -q, --quiet   no summary and no progress line on stderr\n"
        "      --json    print the summary as JSON on stdout: file, keys (read),\n"
        "                new (definitely absent before), items, capacity (and\n"
        "                layers, for a scalable filter)\n"
        "  -h, --help    this help\n"
        "  --            end of options: later arguments are keys, even '-x'\n"
        "\n"
        "URL, redis://[:PASSWORD@]HOST[:PORT]/NAME[?backend=module], names a remote\n"
        "filter (docs/CLI.md, 'Remote filters'): the keys go to Redis in batches,\n"
        "each one round trip applied atomically. A failure part-way\n"
        "leaves the earlier batches added (the message says how many keys); the\n"
        "--json summary has \"url\" instead of \"file\".\n"
        "\n"
        "Examples: bloomgate add users.bgf alice bob\n"
        "          psql -At -c 'select id from products' | bloomgate add products.bgf\n"
        "          psql -At -c 'select id from users' | bloomgate add redis://127.0.0.1:6379/users\n",
    .run = run,
};
