/* bloomgate create: a new, empty filter file.
 *
 * NOT OVERWRITING
 * Without --force an existing file is never replaced, even by a file that
 * appears between our check and our save: the filter is saved (crash-safely,
 * by bg_filter_save) under a temporary name beside the target, and that
 * name is then moved to the target with renameat2(RENAME_NOREPLACE), or,
 * where the file system does not support that, link(2) and unlink(2). Both
 * fail with EEXIST rather than replace anything, and both are atomic: the
 * target is either absent or the complete new file. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory part of `path` ("." if none) and a temporary name beside
 * it. Returns 0, or -1 if out of memory. */
static int temp_name(const char *path, char **tmp)
{
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = path + dir_len;
    size_t size = strlen(path) + 64;
    *tmp = malloc(size);
    if (!*tmp)
        return -1;
    snprintf(*tmp, size, "%.*s.%s.%ld.create.tmp", (int)dir_len, path, base, (long)getpid());
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

static int save_new(const bg_filter *f, const char *path, bool force)
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
    int rc = cli_save(f, tmp, &err);
    if (rc != BG_OK) {
        cli_file_error(path, "cannot save", rc, err);
        free(tmp);
        return -1;
    }
    if (move_no_replace(tmp, path) != 0) {
        err = errno;
        unlink(tmp);
        free(tmp);
        if (err == EEXIST)
            cli_error("%s: already exists (use --force to replace it)", path);
        else
            cli_error("%s: cannot create: %s", path, strerror(err));
        return -1;
    }
    free(tmp);
    sync_dir(path);
    return 0;
}

static int run(int argc, char **argv)
{
    static const struct option longs[] = {
        {"capacity", required_argument, NULL, 'n'},
        {"error-rate", required_argument, NULL, 'p'},
        {"bits", required_argument, NULL, 'm'},
        {"hashes", required_argument, NULL, 'k'},
        {"variant", required_argument, NULL, 'v'},
        {"seed", required_argument, NULL, 's'},
        {"force", no_argument, NULL, 'f'},
        {"quiet", no_argument, NULL, 'q'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    bg_sizing given = {0};
    bg_filter_options o = {0};
    bool force = false, quiet = false, json = false;
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
        case 'v':
            if (cli_parse_variant(optarg, &o.variant) != 0)
                return CLI_EXIT_ERROR;
            break;
        case 's':
            if (cli_parse_seed("--seed", optarg, &o.seed) != 0)
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
            return cli_bad_option(&cli_cmd_create, c, argv);
        }
    }
    if (optind >= argc)
        return cli_usage_error(&cli_cmd_create, "no FILE given");
    const char *path = argv[optind++];
    if (optind < argc)
        return cli_usage_error(&cli_cmd_create, "unexpected argument '%s'", argv[optind]);
    const char *bad = cli_sizing_given_error(&given);
    if (bad)
        return cli_usage_error(&cli_cmd_create, "%s", bad);

    /* Fail early and cheaply on the common mistake, before allocating what
     * may be gigabytes; save_new makes the refusal race-free. */
    struct stat st;
    if (!force && lstat(path, &st) == 0) {
        cli_error("%s: already exists (use --force to replace it)", path);
        return CLI_EXIT_ERROR;
    }

    o.capacity = given.n;
    o.error_rate = given.p;
    o.bits = given.m;
    o.hashes = given.k;
    o.concurrency = BG_SINGLE_WRITER;
    bg_filter *f;
    int rc = bg_filter_new(&f, &o);
    if (rc != BG_OK) {
        char why[160];
        bg_variant v = o.variant ? o.variant : BG_VARIANT_DEFAULT;
        cli_sizing_explain(v, &given, rc, why, sizeof why);
        cli_error("%s: cannot create a %s filter: %s", path, bg_variant_name(v), why);
        return CLI_EXIT_ERROR;
    }
    if (save_new(f, path, force) != 0) {
        bg_filter_free(f);
        return CLI_EXIT_ERROR;
    }

    bg_filter_stats s;
    bg_filter_stats_get(f, &s);
    bg_filter_free(f);
    char d[32];
    if (json) {
        printf("{\"file\":");
        cli_json_string(stdout, path);
        printf(",\"variant\":\"%s\",\"capacity\":%llu,\"error_rate\":%s,",
               bg_variant_name(s.variant), (unsigned long long)s.capacity,
               cli_fmt_double(d, s.error_rate));
        printf("\"bits\":%llu,\"hashes\":%u,\"seed\":%llu,\"bytes\":%llu}\n",
               (unsigned long long)s.bits, s.hashes, (unsigned long long)s.seed,
               (unsigned long long)s.bytes);
        if (cli_stdout_close() != 0)
            return CLI_EXIT_ERROR;
    }
    if (!quiet) {
        char size[32];
        cli_fmt_bytes(size, sizeof size, s.bytes);
        fprintf(stderr, "bloomgate: created %s: %s, m = %llu bits (%s), k = %u", path,
                bg_variant_name(s.variant), (unsigned long long)s.bits, size, s.hashes);
        if (s.capacity)
            fprintf(stderr, ", for %llu keys at p = %.4g (model)", (unsigned long long)s.capacity,
                    s.error_rate);
        fputc('\n', stderr);
    }
    return CLI_EXIT_OK;
}

const cli_command cli_cmd_create = {
    .name = "create",
    .summary = "create an empty filter file",
    .usage = "bloomgate create FILE -n N -p P [--variant V] [--seed S] [--force]\n"
             "       bloomgate create FILE (any two of -n, -p, -m, -k) [...]\n",
    .help =
        "Creates FILE holding an empty filter sized for N keys at false-positive\n"
        "rate P (or from any two of n, p, m, k, as 'bloomgate calc' solves them).\n"
        "An existing FILE is never replaced without --force, and FILE is only ever\n"
        "absent or complete (crash-safe).\n"
        "\n"
        "  -n, --capacity N     keys the filter is for (e.g. 1000000 or 1e6)\n"
        "  -p, --error-rate P   false-positive rate at N keys, in (0, 1)\n"
        "  -m, --bits M         size of the bit array in bits\n"
        "  -k, --hashes K       probes per key (1..32; blocked: 1..8)\n"
        "      --variant V      blocked (the default: faster, a few % more bits)\n"
        "                       or standard (least space)\n"
        "      --seed S         64-bit hash seed, decimal or 0x hex (default 0);\n"
        "                       only filters with the same seed can be merged\n"
        "  -f, --force          replace FILE if it exists\n"
        "  -q, --quiet          no summary on stderr\n"
        "      --json           print the new filter's parameters as JSON on stdout\n"
        "  -h, --help           this help\n"
        "\n"
        "Example: bloomgate create users.bgf -n 1e6 -p 0.001\n",
    .run = run,
};
