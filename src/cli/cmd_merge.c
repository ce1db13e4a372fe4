/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate merge / intersect: combine filter files.
 *
 * The first input is loaded into memory (writable), each other one is
 * mapped read-only, checked for compatibility and OR-ed (union) or AND-ed
 * (intersection) into it, and the result is saved to OUT with
 * bg_filter_save: nothing is written unless every input was read, verified
 * and compatible, and OUT is replaced atomically, so OUT may be one of the
 * inputs. */
#include "cli.h"
#include "cli_options.h"
#include "cli_output.h"
#include "cli_keys.h"
#include "cli_signals.h"
#include "cli_remote.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Says how b differs from a (variant, m, k, seed: what union needs equal).
 * Returns true if they are compatible. */
static bool compatible(const char *cmd, const bg_filter *a, const char *pa, const bg_filter *b,
                       const char *pb)
{
    char what[1024];
    size_t len = 0;
    what[0] = '\0';
    /* "k is 7 in a.bgf but 8 in b.bgf", for each field that differs */
#define DIFF(name, fmt, va, vb)                                                           \
    if (len < sizeof what)                                                                \
    len += (size_t)snprintf(what + len, sizeof what - len, "%s" name " is " fmt " in %s but " \
                            fmt " in %s", len ? ", " : "", va, pa, vb, pb)
    if (bg_filter_variant(a) != bg_filter_variant(b))
        DIFF("variant", "%s", bg_variant_name(bg_filter_variant(a)),
             bg_variant_name(bg_filter_variant(b)));
    if (bg_filter_bits(a) != bg_filter_bits(b))
        DIFF("m", "%llu", (unsigned long long)bg_filter_bits(a),
             (unsigned long long)bg_filter_bits(b));
    if (bg_filter_hashes(a) != bg_filter_hashes(b))
        DIFF("k", "%u", bg_filter_hashes(a), bg_filter_hashes(b));
    if (bg_filter_seed(a) != bg_filter_seed(b))
        DIFF("seed", "%llu", (unsigned long long)bg_filter_seed(a),
             (unsigned long long)bg_filter_seed(b));
#undef DIFF
    if (len == 0)
        return true;
    cli_error("%s: %s and %s are incompatible: %s; nothing written", cmd, pa, pb, what);
    return false;
}

/* Scalable filters have layers of different shapes, so there is no
 * cell-wise union or intersection (bg_filter_union: BG_EVARIANT). Refusing
 * by name, before anything else is read, gives the better message. */
static bool refuse_scalable(const char *cmd, const bg_filter *f, const char *path)
{
    bg_variant v = bg_filter_variant(f);
    if (v != BG_VARIANT_SCALABLE && v != BG_VARIANT_REDISBLOOM)
        return false;
    cli_error("%s: %s: a %s filter cannot be %s (its %s have different sizes); "
              "nothing written",
              cmd, path, bg_variant_name(v), strcmp(cmd, "merge") == 0 ? "merged" : "intersected",
              v == BG_VARIANT_SCALABLE ? "layers" : "links");
    return true;
}

/* True if path names the same file as one of the inputs. */
static bool is_input(const struct stat *out, char **inputs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(inputs[i], &st) == 0 && st.st_dev == out->st_dev && st.st_ino == out->st_ino)
            return true;
    }
    return false;
}

static int combine(const cli_command *cmd, bool intersect, int argc, char **argv)
{
    cli_simple_flags fl;
    int parsed = cli_parse_simple_flags(cmd, true, argc, argv, &fl);
    if (parsed >= 0)
        return parsed;
    bool force = fl.force, quiet = fl.quiet, json = fl.json;
    if (argc - optind < 3)
        return cli_usage_error(cmd, "give OUT and at least two input files");
    for (int i = optind; i < argc; i++)
        if (cli_is_url(argv[i]))
            return cli_url_refuse(argv[i], "merge and intersect work on files only: pull the "
                                           "remote filter into a file first (bloomgate pull URL "
                                           "FILE)");
    const char *out = argv[optind];
    char **inputs = argv + optind + 1;
    size_t n = (size_t)(argc - optind - 1);

    /* `bloomgate merge a.bgf b.bgf c.bgf` meaning "into a.bgf" would
     * otherwise silently replace a.bgf with b | c. */
    struct stat st;
    if (!force && stat(out, &st) == 0 && !is_input(&st, inputs, n)) {
        if (!cli_target_never_replaced(out))
            cli_error("%s: %s: already exists and is not one of the inputs (use --force to "
                      "replace it)",
                      cmd->name, out);
        return CLI_EXIT_ERROR;
    }

    char label[256];
    snprintf(label, sizeof label, "bloomgate %s %s", cmd->name, out);
    cli_progress prog;
    cli_progress_begin(&prog, label, "files", quiet);

    bg_filter *acc;
    errno = 0;
    int rc = bg_filter_load(&acc, inputs[0], BG_FILE_SINGLE_WRITER);
    if (rc != BG_OK) {
        int err = errno;
        cli_progress_end(&prog);
        cli_file_error(inputs[0], "cannot open", rc, err);
        cli_error("%s: nothing written", out);
        return CLI_EXIT_ERROR;
    }
    if (refuse_scalable(cmd->name, acc, inputs[0])) {
        cli_progress_end(&prog);
        bg_filter_free(acc);
        return CLI_EXIT_ERROR;
    }
    cli_progress_update(&prog, 1, 1, n);
    for (size_t i = 1; i < n; i++) {
        bg_filter *g;
        errno = 0;
        rc = bg_filter_map(&g, inputs[i], 0);
        if (rc != BG_OK) {
            int err = errno;
            cli_progress_end(&prog);
            cli_file_error(inputs[i], "cannot open", rc, err);
            cli_error("%s: nothing written", out);
            bg_filter_free(acc);
            return CLI_EXIT_ERROR;
        }
        if (refuse_scalable(cmd->name, g, inputs[i]) ||
            !compatible(cmd->name, acc, inputs[0], g, inputs[i])) {
            cli_progress_end(&prog);
            bg_filter_free(g);
            bg_filter_free(acc);
            return CLI_EXIT_ERROR;
        }
        rc = intersect ? bg_filter_intersect(acc, g) : bg_filter_union(acc, g);
        bg_filter_free(g);
        if (rc != BG_OK) {
            cli_progress_end(&prog);
            cli_error("%s: %s: %s; nothing written", cmd->name, inputs[i], bg_strerror(rc));
            bg_filter_free(acc);
            return CLI_EXIT_ERROR;
        }
        cli_progress_update(&prog, i + 1, i + 1, n);
    }
    cli_progress_end(&prog);
    int err;
    rc = cli_save(acc, out, &err);
    if (rc != BG_OK) {
        cli_file_error(out, "cannot save", rc, err);
        cli_error("%s: not changed", out);
        bg_filter_free(acc);
        return CLI_EXIT_ERROR;
    }
    bg_filter_stats s;
    bg_filter_stats_get(acc, &s);
    bg_filter_free(acc);
    char d[32];
    if (json) {
        printf("{\"file\":");
        cli_json_string(stdout, out);
        printf(",\"inputs\":[");
        for (size_t i = 0; i < n; i++) {
            if (i)
                putchar(',');
            cli_json_string(stdout, inputs[i]);
        }
        printf("],\"items\":%llu,\"fill_ratio\":%s,", (unsigned long long)s.items,
               cli_fmt_double(d, s.fill_ratio));
        printf("\"estimated_fp_rate\":%s}\n", cli_fmt_double(d, s.estimated_fp_rate));
        if (cli_stdout_close() != 0)
            return CLI_EXIT_ERROR;
    } else if (!quiet) {
        fprintf(stderr, "bloomgate: %s: %s of %zu files: %llu items (estimated), fill %.4f\n",
                out, intersect ? "intersection" : "union", n, (unsigned long long)s.items,
                s.fill_ratio);
    }
    return CLI_EXIT_OK;
}

static int run_merge(int argc, char **argv)
{
    return combine(&cli_cmd_merge, false, argc, argv);
}

static int run_intersect(int argc, char **argv)
{
    return combine(&cli_cmd_intersect, true, argc, argv);
}

#define COMBINE_HELP_OPTIONS                                                               \
    "  -f, --force   replace OUT even if it exists and is not one of the inputs\n"         \
    "  -q, --quiet   no summary and no progress line on stderr\n"                          \
    "      --json    print the result's file, inputs, items, fill_ratio and\n"             \
    "                estimated_fp_rate as JSON on stdout\n"                                \
    "  -h, --help    this help\n"                                                          \
    "\n"                                                                                   \
    "The inputs must have the same variant, m, k and seed (made by the same\n"             \
    "'bloomgate create' options); otherwise nothing is written and the message\n"         \
    "says what differs. Counting filters combine counter by counter (union: the\n"      \
    "sum, stopping at 15; intersection: the minimum); scalable and redisbloom\n"       \
    "filters cannot be combined. OUT may be one of the inputs; it is replaced\n"       \
    "atomically, only after every input was read and verified.\n"

const cli_command cli_cmd_merge = {
    .name = "merge",
    .summary = "union of filter files: a key added to any input may be present",
    .usage = "bloomgate merge [-f] [-q] [--json] OUT A B [C...]\n",
    .help = "Writes to OUT the union of the filters A, B, ...: every key added to any\n"
            "of them is reported maybe-present by OUT. The result is exactly the filter\n"
            "that adding all their keys to one filter would have built.\n"
            "\n" COMBINE_HELP_OPTIONS "\n"
            "Example: bloomgate merge all.bgf monday.bgf tuesday.bgf\n",
    .run = run_merge,
};

const cli_command cli_cmd_intersect = {
    .name = "intersect",
    .summary = "intersection of filter files: keys that may be in all inputs",
    .usage = "bloomgate intersect [-f] [-q] [--json] OUT A B [C...]\n",
    .help = "Writes to OUT the intersection of the filters A, B, ...: every key added\n"
            "to all of them is reported maybe-present by OUT (with somewhat more false\n"
            "positives than a filter built from the common keys alone).\n"
            "\n" COMBINE_HELP_OPTIONS,
    .run = run_intersect,
};
