/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate create: a new, empty filter file.
 *
 * NOT OVERWRITING
 * Without --force an existing file is never replaced, even by a file that
 * appears between our check and our save: the filter is saved (crash-safely,
 * by bg_filter_save) under a temporary name beside the target, and that
 * name is then moved to the target with renameat2(RENAME_NOREPLACE), or,
 * where the file system does not support that, link(2) and unlink(2). Both
 * fail with EEXIST rather than replace anything, and both are atomic: the
 * target is either absent or the complete new file.
 *
 * A remote filter (a URL) is cmd_create_remote.c's. */
#include "cli.h"
#include "cli_options.h"
#include "cli_output.h"
#include "cli_signals.h"
#include "cli_remote.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A temporary name beside `path`: ".<name>.<pid>.create.tmp", the name cut
 * short so that the whole fits in NAME_MAX bytes (the pid and suffix take at
 * most 33), and, for a path near PATH_MAX, cut further so that the
 * temporary path stays below PATH_MAX where it can. Returns 0, or -1 if out
 * of memory. */
static int temp_name(const char *path, char **tmp)
{
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = path + dir_len;
    char pid[24];
    size_t extra = (size_t)snprintf(pid, sizeof pid, ".%ld.create.tmp", (long)getpid()) + 1;
    size_t keep = strlen(base) < NAME_MAX - 33 ? strlen(base) : NAME_MAX - 33;
    if (dir_len + 1 + keep + extra > PATH_MAX)
        keep = dir_len + extra < PATH_MAX ? PATH_MAX - 1 - dir_len - extra : 0;
    size_t size = dir_len + 1 + keep + extra;
    *tmp = malloc(size);
    if (!*tmp)
        return -1;
    snprintf(*tmp, size, "%.*s.%.*s%s", (int)dir_len, path, (int)keep, base, pid);
    return 0;
}

/* Moves `from` to `to` unless `to` exists. 0, or -1 with errno (EEXIST). */
static int move_no_replace(const char *from, const char *to)
{
#ifdef RENAME_NOREPLACE
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return -1;
#endif
    if (link(from, to) != 0)
        return -1;
    unlink(from);
    return 0;
}

/* Makes the rename or link durable, like bg_filter_save does for its own. */
static void sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

int cli_save_new(const bg_filter *f, const char *path, bool force)
{
    int err;
    if (force) {
        int rc = cli_save(f, path, &err);
        if (rc != BG_OK) {
            cli_file_error(path, "cannot save", rc, err);
            return -1;
        }
        return 0;
    }
    char *tmp;
    if (temp_name(path, &tmp) != 0) {
        cli_error("out of memory");
        return -1;
    }
    /* Signals held from the save to the move, so an interrupt cannot leave
     * the whole filter behind under the temporary name. */
    sigset_t old;
    cli_hold_signals(&old);
    int rc = cli_save(f, tmp, &err); /* holds them too; this mask stays */
    if (rc != BG_OK) {
        cli_release_signals(&old);
        cli_file_error(path, "cannot save", rc, err);
        free(tmp);
        return -1;
    }
    int moved = move_no_replace(tmp, path);
    err = errno;
    if (moved != 0)
        unlink(tmp);
    cli_release_signals(&old);
    if (moved != 0) {
        free(tmp);
        if (err != EEXIST)
            cli_error("%s: cannot create: %s", path, strerror(err));
        else if (!cli_target_never_replaced(path))
            cli_error("%s: already exists (use --force to replace it)", path);
        return -1;
    }
    free(tmp);
    sync_dir(path);
    return 0;
}

/* Layer i's error rate in a scalable filter's schedule (filter.h SCALABLE,
 * "The schedule"): p_0 = p s, p_i = p (1 - s) (1 - t) t^(i-1), s the first
 * share (1 - t unless given) and t the tightening (0.5 unless given). This
 * is the rate before the budget and margins adjust it, the one the library
 * holds against BG_BLOCKED_MIN_P when it opens a blocked layer. It is
 * computed with the library's operations in the library's order (with the
 * default share, p s t^i; else the series), so that a rate at the limit
 * compares the same way here as there. */
static double schedule_rate(const bg_filter_options *o, uint32_t i)
{
    double t = o->tightening ? o->tightening : 0.5;
    double s = o->first_share ? o->first_share : 1.0 - t;
    double r = o->error_rate * s;
    if (i == 0)
        return r;
    if (s == 1.0 - t)
        r *= t;
    else
        r = o->error_rate * (1.0 - s) * (1.0 - t);
    for (uint32_t j = 1; j < i; j++)
        r *= t;
    return r;
}

/* The options only a scalable filter takes, as given. */
typedef struct scaling_opts {
    const char *first;    /* the first one given, for the message, or NULL */
    bool expansion_given, max_layers_given, tightening_given, first_share_given,
        blocked_from_given;
} scaling_opts;

static void note_scaling(scaling_opts *so, const char *flag)
{
    if (!so->first)
        so->first = flag;
}

/* Checks the options against the variant; NULL if they fit, else what is
 * wrong (for a usage error). */
static const char *options_error(bg_variant v, const bg_sizing *given, const scaling_opts *so,
                                 const bg_filter_options *o, char *buf, size_t size)
{
    if (v == BG_VARIANT_REDISBLOOM) {
        if (given->m || given->k)
            return "--variant redisbloom is sized by -n and -p, as BF.RESERVE: drop -m and -k";
        if (!given->n || given->p == 0)
            return "--variant redisbloom needs -n (the first link's capacity) and -p (the "
                   "error rate BF.RESERVE takes)";
        if (so->max_layers_given || so->tightening_given || so->first_share_given ||
            so->blocked_from_given || o->layer_variant)
            return "--variant redisbloom takes --expansion, --nonscaling and --max-bytes only "
                   "(its links halve the error rate)";
        if (o->seed)
            return "--variant redisbloom hashes as RedisBloom does: no --seed";
        if (o->nonscaling && so->expansion_given)
            return "--nonscaling makes one link that never grows: --expansion does not apply";
        return NULL;
    }
    if (v != BG_VARIANT_SCALABLE) {
        if (so->first) {
            /* --expansion, --nonscaling and --max-bytes are redisbloom's too. */
            bool rb = strcmp(so->first, "--expansion") == 0 ||
                      strcmp(so->first, "--nonscaling") == 0 || strcmp(so->first, "--max-bytes") == 0;
            snprintf(buf, size, "%s applies to --variant scalable%s only", so->first,
                     rb ? " or redisbloom" : "");
            return buf;
        }
        return cli_sizing_given_error(given);
    }
    if (given->m || given->k)
        return "--variant scalable is sized by -n and -p (the first layer's capacity and the "
               "error rate of the whole stack); m and k are chosen per layer: drop -m and -k";
    if (!given->n || given->p == 0)
        return "--variant scalable needs -n (the first layer's capacity) and -p (the error "
               "rate of the whole stack)";
    if (o->nonscaling && (so->expansion_given || so->max_layers_given || so->tightening_given ||
                          so->first_share_given || so->blocked_from_given))
        return "--nonscaling makes one layer that never grows: --expansion, --max-layers, "
               "--tightening, --first-share and --blocked-from do not apply";
    /* The library's rules for a mixed stack (bg_filter_new: BG_EINVAL),
     * said here in the options' words. */
    if (so->blocked_from_given && o->layer_variant == BG_VARIANT_BLOCKED)
        return "--blocked-from makes the layers from that index on blocked, above standard "
               "ones: it needs standard layers (the default), not --layer-variant blocked";
    if (so->blocked_from_given && so->max_layers_given && o->blocked_from >= o->max_layers) {
        snprintf(buf, size,
                 "--blocked-from %u: must be below --max-layers (%u): no layer would be blocked",
                 o->blocked_from, o->max_layers);
        return buf;
    }
    return NULL;
}

static int run(int argc, char **argv)
{
    enum {
        OPT_VARIANT = 'v',
        OPT_EXPANSION = 256,
        OPT_NONSCALING,
        OPT_MAX_LAYERS,
        OPT_LAYER_VARIANT,
        OPT_TIGHTENING,
        OPT_MAX_BYTES,
        OPT_FIRST_SHARE,
        OPT_BLOCKED_FROM,
    };
    static const struct option longs[] = {
        {"capacity", required_argument, NULL, 'n'},
        {"error-rate", required_argument, NULL, 'p'},
        {"bits", required_argument, NULL, 'm'},
        {"hashes", required_argument, NULL, 'k'},
        {"variant", required_argument, NULL, OPT_VARIANT},
        {"seed", required_argument, NULL, 's'},
        {"expansion", required_argument, NULL, OPT_EXPANSION},
        {"nonscaling", no_argument, NULL, OPT_NONSCALING},
        {"max-layers", required_argument, NULL, OPT_MAX_LAYERS},
        {"layer-variant", required_argument, NULL, OPT_LAYER_VARIANT},
        {"tightening", required_argument, NULL, OPT_TIGHTENING},
        {"max-bytes", required_argument, NULL, OPT_MAX_BYTES},
        {"first-share", required_argument, NULL, OPT_FIRST_SHARE},
        {"blocked-from", required_argument, NULL, OPT_BLOCKED_FROM},
        {"force", no_argument, NULL, 'f'},
        {"quiet", no_argument, NULL, 'q'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    bg_sizing given = {0};
    bg_filter_options o = {0};
    scaling_opts so = {0};
    bool force = false, quiet = false, json = false, seed_given = false;
    const char *remote_refused = NULL; /* the first option no remote filter takes */
    uint64_t v64;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":n:p:m:k:s:fqh", longs, NULL)) != -1) {
        switch (c) {
        case 'n':
        case 'p':
        case 'm':
        case 'k':
            if (cli_sizing_option(c, optarg, &given) != 0)
                return CLI_EXIT_ERROR;
            break;
        case OPT_VARIANT:
            if (cli_parse_variant(optarg, &o.variant) != 0)
                return CLI_EXIT_ERROR;
            break;
        case 's':
            if (cli_parse_seed("--seed", optarg, &o.seed) != 0)
                return CLI_EXIT_ERROR;
            seed_given = true;
            break;
        case OPT_EXPANSION:
            note_scaling(&so, "--expansion");
            if (cli_parse_count("--expansion", optarg, 1, BG_MAX_EXPANSION, &v64) != 0)
                return CLI_EXIT_ERROR;
            o.expansion = (uint32_t)v64;
            so.expansion_given = true;
            break;
        case OPT_NONSCALING:
            note_scaling(&so, "--nonscaling");
            o.nonscaling = true;
            break;
        case OPT_MAX_LAYERS:
            note_scaling(&so, "--max-layers");
            remote_refused = remote_refused ? remote_refused : "--max-layers";
            if (cli_parse_count("--max-layers", optarg, 1, BG_MAX_LAYERS, &v64) != 0)
                return CLI_EXIT_ERROR;
            o.max_layers = (uint32_t)v64;
            so.max_layers_given = true;
            break;
        case OPT_LAYER_VARIANT:
            note_scaling(&so, "--layer-variant");
            remote_refused = remote_refused ? remote_refused : "--layer-variant";
            if (bg_variant_parse(optarg, &o.layer_variant) != BG_OK ||
                (o.layer_variant != BG_VARIANT_STANDARD && o.layer_variant != BG_VARIANT_BLOCKED)) {
                cli_error("--layer-variant: '%s' is not a layer variant (standard or blocked)",
                          optarg);
                return CLI_EXIT_ERROR;
            }
            break;
        case OPT_TIGHTENING:
            note_scaling(&so, "--tightening");
            remote_refused = remote_refused ? remote_refused : "--tightening";
            if (cli_parse_rate("--tightening", optarg, &o.tightening) != 0)
                return CLI_EXIT_ERROR;
            so.tightening_given = true;
            break;
        case OPT_FIRST_SHARE:
            note_scaling(&so, "--first-share");
            remote_refused = remote_refused ? remote_refused : "--first-share";
            if (cli_parse_rate("--first-share", optarg, &o.first_share) != 0)
                return CLI_EXIT_ERROR;
            so.first_share_given = true;
            break;
        case OPT_BLOCKED_FROM:
            note_scaling(&so, "--blocked-from");
            remote_refused = remote_refused ? remote_refused : "--blocked-from";
            if (cli_parse_count("--blocked-from", optarg, 1, BG_MAX_LAYERS - 1, &v64) != 0)
                return CLI_EXIT_ERROR;
            o.blocked_from = (uint32_t)v64;
            so.blocked_from_given = true;
            break;
        case OPT_MAX_BYTES:
            note_scaling(&so, "--max-bytes");
            remote_refused = remote_refused ? remote_refused : "--max-bytes";
            if (cli_parse_count("--max-bytes", optarg, 1, BG_MAX_BITS / 8, &o.max_bytes) != 0)
                return CLI_EXIT_ERROR;
            break;
        case 'f':
            force = true;
            break;
        case 'q':
            quiet = true;
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            return cli_help(&cli_cmd_create);
        default:
            return cli_bad_option(&cli_cmd_create, c, argv, longs);
        }
    }
    if (optind >= argc)
        return cli_usage_error(&cli_cmd_create, "no FILE given");
    const char *path = argv[optind++];
    if (optind < argc)
        return cli_usage_error(&cli_cmd_create, "unexpected argument '%s'", argv[optind]);
    if (cli_is_url(path)) {
        cli_remote_create_args ra = {
            .given = given,
            .variant = o.variant,
            .seed = o.seed,
            .seed_given = seed_given,
            .expansion = o.expansion,
            .nonscaling = o.nonscaling,
            .other_scaling = remote_refused,
            .force = force,
            .quiet = quiet,
            .json = json,
        };
        return cli_remote_create(path, &ra);
    }
    bg_variant v = o.variant ? o.variant : BG_VARIANT_DEFAULT;
    char badbuf[160];
    const char *bad = options_error(v, &given, &so, &o, badbuf, sizeof badbuf);
    if (bad)
        return cli_usage_error(&cli_cmd_create, "%s", bad);

    /* Fail early and cheaply on the common mistake, before allocating what
     * may be gigabytes; cli_save_new makes the refusal race-free. */
    struct stat st;
    if (!force && lstat(path, &st) == 0) {
        if (!cli_target_never_replaced(path))
            cli_error("%s: already exists (use --force to replace it)", path);
        return CLI_EXIT_ERROR;
    }

    o.capacity = given.n;
    o.error_rate = given.p;
    o.bits = given.m;
    o.hashes = given.k;
    o.concurrency = BG_SINGLE_WRITER;
    /* A mixed stack whose first blocked layer's rate is below what a
     * blocked layer can deliver could never open that layer: it would stop
     * growing at blocked_from layers (BG_ELAYERS on the add that needs one
     * more), so --blocked-from would only be a hidden --max-layers. */
    if (v == BG_VARIANT_SCALABLE && o.blocked_from &&
        schedule_rate(&o, o.blocked_from) < BG_BLOCKED_MIN_P) {
        cli_error("%s: cannot create a scalable filter: --blocked-from %u: layer %u's error "
                  "rate would be %g, below %g, the least a blocked layer is sized for, so the "
                  "filter could never grow past %u layers (give a smaller --blocked-from or "
                  "a larger -p, or no --blocked-from)",
                  path, o.blocked_from, o.blocked_from, schedule_rate(&o, o.blocked_from),
                  BG_BLOCKED_MIN_P, o.blocked_from);
        return CLI_EXIT_ERROR;
    }
    bg_filter *f;
    int rc = bg_filter_new(&f, &o);
    if (rc != BG_OK) {
        char why[240];
        if (v == BG_VARIANT_SCALABLE && rc == BG_ETOOBIG)
            snprintf(why, sizeof why, "its first layer would need more than %llu bytes (%s)",
                     (unsigned long long)(o.max_bytes ? o.max_bytes : BG_DEFAULT_MAX_BYTES),
                     o.max_bytes ? "--max-bytes" : "the default cap");
        else if (v == BG_VARIANT_SCALABLE && rc == BG_EINVAL &&
                 o.layer_variant == BG_VARIANT_BLOCKED && !o.nonscaling &&
                 schedule_rate(&o, 0) < BG_BLOCKED_MIN_P)
            snprintf(why, sizeof why,
                     "p = %g: its first layer's rate, %s = %g, is below %g, the least the "
                     "blocked variant is sized for (give a larger -p%s, or --layer-variant "
                     "standard)",
                     given.p, o.first_share ? "p x --first-share" : "p (1 - tightening)",
                     schedule_rate(&o, 0), BG_BLOCKED_MIN_P,
                     o.first_share ? " or --first-share" : "");
        else
            cli_sizing_explain(v == BG_VARIANT_SCALABLE && o.layer_variant ? o.layer_variant : v,
                               &given, rc, why, sizeof why);
        cli_error("%s: cannot create a %s filter: %s", path, bg_variant_name(v), why);
        return CLI_EXIT_ERROR;
    }
    if (cli_save_new(f, path, force) != 0) {
        bg_filter_free(f);
        return CLI_EXIT_ERROR;
    }

    bg_filter_stats s;
    bg_filter_stats_get(f, &s);
    bg_filter_scaling sc;
    bool scalable = bg_filter_scaling_get(f, &sc) == BG_OK;
    bg_filter_free(f);
    char d[32];
    if (json) {
        printf("{\"file\":");
        cli_json_string(stdout, path);
        /* For a scalable filter: the first layer's capacity and the rate
         * asked for the whole stack. */
        printf(",\"variant\":\"%s\",\"capacity\":%llu,\"error_rate\":%s,",
               bg_variant_name(s.variant),
               (unsigned long long)(scalable ? sc.capacity : s.capacity),
               cli_fmt_double(d, scalable ? sc.error_rate : s.error_rate));
        printf("\"bits\":%llu,\"hashes\":%u,\"seed\":%llu,\"bytes\":%llu",
               (unsigned long long)s.bits, s.hashes, (unsigned long long)s.seed,
               (unsigned long long)s.bytes);
        if (scalable) {
            putchar(',');
            cli_print_scaling_json(stdout, &sc);
            printf(",\"layers\":%u", sc.layers);
        }
        printf("}\n");
        if (cli_stdout_close() != 0)
            return CLI_EXIT_ERROR;
    }
    if (!quiet) {
        char size[32];
        cli_fmt_bytes(size, sizeof size, s.bytes);
        if (s.variant == BG_VARIANT_REDISBLOOM) {
            fprintf(stderr,
                    "bloomgate: created %s: redisbloom (BF.RESERVE %.4g %llu%s), link 0: %llu "
                    "bits (%s), k = %u",
                    path, given.p, (unsigned long long)given.n,
                    sc.nonscaling ? " NONSCALING" : "", (unsigned long long)s.bits, size, s.hashes);
            if (!sc.nonscaling)
                fprintf(stderr, "; grows x%u per link", sc.expansion);
            fputc('\n', stderr);
        } else if (scalable) {
            char mixed[48] = "";
            if (sc.blocked_from)
                snprintf(mixed, sizeof mixed, ", blocked from layer %u", sc.blocked_from);
            fprintf(stderr,
                    "bloomgate: created %s: scalable, %s layers%s%s; layer 0: m = %llu bits "
                    "(%s), k = %u, for %llu keys",
                    path, bg_variant_name(sc.layer_variant), mixed,
                    sc.nonscaling ? ", non-scaling" : "", (unsigned long long)s.bits, size,
                    s.hashes, (unsigned long long)sc.capacity);
            if (sc.nonscaling) {
                fprintf(stderr, " at p = %.4g; adding more fails\n", sc.error_rate);
            } else {
                char cap[32], share[80] = "";
                cli_fmt_bytes(cap, sizeof cap, sc.max_bytes);
                /* the default share, 1 - tightening, goes without saying; else
                 * p_0 = p s, p_1 = p (1 - s) (1 - t), then x t (the schedule) */
                if (sc.first_share != 1.0 - sc.tightening)
                    snprintf(share, sizeof share, "layer 0 at p x %g, layer 1 at p x %g, then ",
                             sc.first_share, (1.0 - sc.first_share) * (1.0 - sc.tightening));
                fprintf(stderr,
                        "; grows x%u per layer (%serror rate x%g), up to %u layers and %s; "
                        "p <= %g over all layers\n",
                        sc.expansion, share, sc.tightening, sc.max_layers, cap, sc.error_rate);
            }
        } else {
            const char *cells = s.variant == BG_VARIANT_COUNTING ? "4-bit counters" : "bits";
            fprintf(stderr, "bloomgate: created %s: %s, m = %llu %s (%s), k = %u", path,
                    bg_variant_name(s.variant), (unsigned long long)s.bits, cells, size,
                    s.hashes);
            if (s.capacity)
                fprintf(stderr, ", for %llu keys at p = %.4g (model)",
                        (unsigned long long)s.capacity, s.error_rate);
            fputc('\n', stderr);
        }
    }
    return CLI_EXIT_OK;
}

const cli_command cli_cmd_create = {
    .name = "create",
    .summary = "create an empty filter file",
    .usage = "bloomgate create FILE -n N -p P [--variant V] [--seed S] [--force]\n"
             "       bloomgate create FILE (any two of -n, -p, -m, -k) [...]\n"
             "       bloomgate create FILE -n N -p P --variant scalable [--expansion E]\n"
             "                        [--max-layers L] [--layer-variant V] [--tightening T]\n"
             "                        [--first-share S] [--blocked-from I] [--max-bytes B]\n"
             "                        [--nonscaling] [...]\n"
             "       bloomgate create FILE -n N -p P --variant redisbloom [--expansion E]\n"
             "                        [--nonscaling] [--max-bytes B] [...]\n"
             "       bloomgate create redis://[:PASSWORD@]HOST[:PORT]/NAME[?backend=module]\n"
             "                        -n N -p P [...]\n",
    .help =
        "Creates FILE holding an empty filter sized for N keys at false-positive\n"
        "rate P (or from any two of n, p, m, k, as 'bloomgate calc' solves them).\n"
        "An existing FILE is never replaced without --force, and FILE is only ever\n"
        "absent or complete (crash-safe).\n"
        "\n"
        "  -n, --capacity N     keys the filter is for (e.g. 1000000 or 1e6)\n"
        "  -p, --error-rate P   false-positive rate at N keys, in (0, 1)\n"
        "  -m, --bits M         size of the array in bits (counting: in counters)\n"
        "  -k, --hashes K       probes per key (1..32; blocked: 1..8)\n"
        "      --variant V      blocked (the default: faster, a few % more bits),\n"
        "                       standard (least space), counting (standard with\n"
        "                       4-bit counters: keys can be removed, 4x the space)\n"
        "                       scalable (grows as keys come: below) or\n"
        "                       redisbloom (RedisBloom's own filter: below)\n"
        "      --seed S         64-bit hash seed, decimal or 0x hex (default 0);\n"
        "                       only filters with the same seed can be merged\n"
        "  -f, --force          replace FILE if it exists\n"
        "  -q, --quiet          no summary on stderr\n"
        "      --json           print the new filter's parameters as JSON on stdout\n"
        "  -h, --help           this help\n"
        "\n"
        "Scalable filters (--variant scalable) take -n and -p only: N is the first\n"
        "layer's capacity and P bounds the false-positive rate of all layers\n"
        "together. When the newest layer holds its capacity, 'add' appends a layer\n"
        "E times larger with a tighter error rate. These options need it:\n"
        "      --expansion E     capacity factor per layer, 1..32768 (default 2)\n"
        "      --max-layers L    most layers, 1..64 (default 64)\n"
        "      --layer-variant V standard (default) or blocked layers\n"
        "      --tightening T    error-rate factor per layer, in (0, 1) (default 0.5)\n"
        "      --first-share S   layer 0's share of P, in (0, 1) (default 1 - T): layer 0\n"
        "                        gets P S, layer i >= 1 P (1 - S) (1 - T) T^(i-1)\n"
        "      --blocked-from I  layers I and up are blocked, 1..63 and below L; with\n"
        "                        standard layers only (the small first ones stay so)\n"
        "      --max-bytes B     most bytes of all layers together (default 64 GiB)\n"
        "      --nonscaling      one layer at P that never grows: adding a new key\n"
        "                        to it when full is an error (excludes the options\n"
        "                        above but --layer-variant and --max-bytes)\n"
        "\n"
        "RedisBloom filters (--variant redisbloom) are what RedisBloom's\n"
        "'BF.RESERVE NAME P N [EXPANSION E] [NONSCALING]' makes, bit for bit: a chain\n"
        "of links hashed with MurmurHash, whose first link holds N keys at P / 2 (P\n"
        "when non-scaling), each next one E times more at half the rate. They take\n"
        "-n, -p, --expansion, --nonscaling and --max-bytes.\n"
        "\n"
        "Remote filters: when FILE is a URL, redis://[:PASSWORD@]HOST[:PORT]/NAME,\n"
        "the filter NAME is created in Redis (see 'Remote filters' in docs/CLI.md).\n"
        "The bitmap backend (the default) makes a standard filter, sized by any\n"
        "two of -n, -p, -m, -k (at most 2^32 bits), with --seed. ?backend=module\n"
        "(BF.RESERVE; needs bloomgate.so or RedisBloom) takes -n and -p, and\n"
        "--expansion or --nonscaling (none of the other scalable options: BF.RESERVE\n"
        "has no such arguments). An existing remote filter is an error unless\n"
        "--force, which drops it and creates it again.\n"
        "\n"
        "Examples: bloomgate create users.bgf -n 1e6 -p 0.001\n"
        "          bloomgate create catalogue.bgf -n 1e6 -p 0.01 --variant counting\n"
        "          bloomgate create events.bgf -n 1e5 -p 0.001 --variant scalable\n"
        "          bloomgate create redis://127.0.0.1:6379/users -n 1000000 -p 0.01\n",
    .run = run,
};
