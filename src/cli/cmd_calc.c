/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate calc: the sizing solver (<bloomgate/sizing.h>) as a table. */
#include "cli.h"
#include "cli_options.h"
#include "cli_output.h"

#include <getopt.h>
#include <math.h>
#include <string.h>

/* ---- shared with create ---------------------------------------------- */

int cli_sizing_option(int c, const char *arg, bg_sizing *s)
{
    uint64_t v;
    switch (c) {
    case 'n':
        if (cli_parse_count("--capacity", arg, 1, UINT64_MAX, &v) != 0)
            return -1;
        s->n = v;
        return 0;
    case 'p':
        return cli_parse_rate("--error-rate", arg, &s->p);
    case 'm':
        if (cli_parse_count("--bits", arg, 1, BG_MAX_BITS, &v) != 0)
            return -1;
        s->m = v;
        return 0;
    case 'k':
        if (cli_parse_count("--hashes", arg, 1, BG_MAX_K, &v) != 0)
            return -1;
        s->k = (uint32_t)v;
        return 0;
    }
    return -1;
}

const char *cli_sizing_given_error(const bg_sizing *s)
{
    int known = (s->n != 0) + (s->p != 0) + (s->m != 0) + (s->k != 0);
    if (known < 2)
        return "give two of -n/--capacity, -p/--error-rate, -m/--bits, -k/--hashes";
    if (s->n && s->m && s->p != 0)
        return "-n, -m and -p cannot all be given: n and m already fix the best p "
               "(give two of them, and -k if you like)";
    if (known == 2 && s->p != 0 && s->k)
        return "-p and -k fix only the bits per key: give -n or -m as well";
    return NULL;
}

void cli_sizing_explain(bg_variant v, const bg_sizing *given, int rc, char *buf, size_t size)
{
    if (rc == BG_EINVAL && v == BG_VARIANT_BLOCKED && given->k > BG_BLOCKED_MAX_K)
        snprintf(buf, size, "k = %u: the blocked variant has at most %u probes per key",
                 given->k, (unsigned)BG_BLOCKED_MAX_K);
    else if (rc == BG_EINVAL && v == BG_VARIANT_BLOCKED && given->p != 0 &&
             given->p < BG_BLOCKED_MIN_P)
        snprintf(buf, size, "p = %g: the blocked variant is not sized below p = %g", given->p,
                 BG_BLOCKED_MIN_P);
    else if (rc == BG_EINVAL && given->m != 0)
        snprintf(buf, size, "m = %llu bits is too small for these parameters",
                 (unsigned long long)given->m);
    else if (rc == BG_ETOOBIG)
        snprintf(buf, size, "the filter would need more than %llu bytes (the cap)",
                 (unsigned long long)BG_DEFAULT_MAX_BYTES);
    else if (rc == BG_EOVERFLOW && given->n != 0)
        snprintf(buf, size, "n = %llu keys would need more than 2^64 bits",
                 (unsigned long long)given->n);
    else
        snprintf(buf, size, "%s", bg_strerror(rc));
}

/* ---- calc -------------------------------------------------------------- */

/* Bits per cell of the array: a counting filter has 4-bit counters where
 * the others have bits, for the same m and k (sizing.h). */
static unsigned cell_bits(bg_variant v)
{
    return v == BG_VARIANT_COUNTING ? 4u : 1u;
}

/* Bytes of the array: m cells. m <= BG_MAX_BITS / cell_bits after solving
 * against the cap, so this does not wrap. */
static uint64_t array_bytes(bg_variant v, uint64_t m)
{
    return (m * cell_bits(v) + 7) / 8;
}

static int run(int argc, char **argv)
{
    static const struct option longs[] = {
        {"capacity", required_argument, NULL, 'n'},
        {"error-rate", required_argument, NULL, 'p'},
        {"bits", required_argument, NULL, 'm'},
        {"hashes", required_argument, NULL, 'k'},
        {"variant", required_argument, NULL, 'v'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    bg_sizing given = {0};
    bg_variant only = 0;
    bool json = false;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":n:p:m:k:h", longs, NULL)) != -1) {
        switch (c) {
        case 'n':
        case 'p':
        case 'm':
        case 'k':
            if (cli_sizing_option(c, optarg, &given) != 0)
                return CLI_EXIT_ERROR;
            break;
        case 'v':
            if (cli_parse_variant(optarg, &only) != 0)
                return CLI_EXIT_ERROR;
            if (only == BG_VARIANT_SCALABLE) {
                cli_error("calc: --variant scalable: a scalable filter is not sized as a whole: "
                          "each layer is sized by its own n and p as it is added (see "
                          "'bloomgate create --help'); size its first layer with --variant "
                          "standard or blocked");
                return CLI_EXIT_ERROR;
            }
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            return cli_help(&cli_cmd_calc);
        default:
            return cli_bad_option(&cli_cmd_calc, c, argv, longs);
        }
    }
    if (optind < argc)
        return cli_usage_error(&cli_cmd_calc, "unexpected argument '%s'", argv[optind]);
    const char *bad = cli_sizing_given_error(&given);
    if (bad)
        return cli_usage_error(&cli_cmd_calc, "%s", bad);

    bg_variant variants[3] = {BG_VARIANT_STANDARD, BG_VARIANT_BLOCKED, BG_VARIANT_COUNTING};
    size_t nvariants = 3;
    if (only) {
        variants[0] = only;
        nvariants = 1;
    }
    bg_sizing out[3];
    int rcs[3];
    char why[3][160];
    int ok = 0;
    for (size_t i = 0; i < nvariants; i++) {
        out[i] = given;
        /* The cap is on bytes (BG_DEFAULT_MAX_BYTES); a counter takes 4 bits. */
        rcs[i] = bg_sizing_solve(variants[i], &out[i],
                                 BG_DEFAULT_MAX_BYTES * 8 / cell_bits(variants[i]));
        if (rcs[i] == BG_OK)
            ok++;
        else
            cli_sizing_explain(variants[i], &given, rcs[i], why[i], sizeof why[i]);
    }

    char d[32];
    if (json) {
        printf("{\"given\":{");
        const char *sep = "";
        if (given.n) {
            printf("%s\"n\":%llu", sep, (unsigned long long)given.n);
            sep = ",";
        }
        if (given.p != 0) {
            printf("%s\"p\":%s", sep, cli_fmt_double(d, given.p));
            sep = ",";
        }
        if (given.m) {
            printf("%s\"m\":%llu", sep, (unsigned long long)given.m);
            sep = ",";
        }
        if (given.k)
            printf("%s\"k\":%u", sep, given.k);
        printf("},\"results\":[");
        for (size_t i = 0; i < nvariants; i++) {
            printf("%s{\"variant\":\"%s\",", i ? "," : "", bg_variant_name(variants[i]));
            if (rcs[i] != BG_OK) {
                printf("\"error\":");
                cli_json_string(stdout, why[i]);
                printf("}");
                continue;
            }
            const bg_sizing *s = &out[i];
            unsigned cb = cell_bits(variants[i]);
            printf("\"n\":%llu,\"m\":%llu,\"k\":%u,\"bytes\":%llu,", (unsigned long long)s->n,
                   (unsigned long long)s->m, s->k,
                   (unsigned long long)array_bytes(variants[i], s->m));
            if (cb != 1)
                printf("\"cell_bits\":%u,", cb);
            printf("\"bits_per_key\":%s,",
                   cli_fmt_double(d, s->n ? (double)s->m * cb / (double)s->n : NAN));
            printf("\"p\":%s}", cli_fmt_double(d, s->p));
        }
        printf("]}\n");
    } else if (ok > 0) { /* nothing sized: only the errors, on stderr */
        const char *sep = " ";
        printf("given:");
        if (given.n) {
            printf("%sn = %llu", sep, (unsigned long long)given.n);
            sep = ", ";
        }
        if (given.p != 0) {
            printf("%sp = %g", sep, given.p);
            sep = ", ";
        }
        if (given.m) {
            printf("%sm = %llu", sep, (unsigned long long)given.m);
            sep = ", ";
        }
        if (given.k)
            printf("%sk = %u", sep, given.k);
        printf("\n%-9s %14s %16s %3s %14s %10s %9s %11s\n", "variant", "n", "m (bits)", "k",
               "bytes", "size", "bits/key", "p (model)");
        for (size_t i = 0; i < nvariants; i++) {
            if (rcs[i] != BG_OK)
                continue;
            const bg_sizing *s = &out[i];
            uint64_t bytes = array_bytes(variants[i], s->m);
            char size[32];
            cli_fmt_bytes(size, sizeof size, bytes);
            printf("%-9s %14llu %16llu %3u %14llu %10s %9.3f %11.4g\n",
                   bg_variant_name(variants[i]), (unsigned long long)s->n,
                   (unsigned long long)s->m, s->k, (unsigned long long)bytes, size,
                   s->n ? (double)s->m * cell_bits(variants[i]) / (double)s->n : 0.0, s->p);
        }
        for (size_t i = 0; i < nvariants; i++)
            if (rcs[i] == BG_OK && variants[i] == BG_VARIANT_COUNTING)
                printf("(counting: m counts 4-bit counters, not bits; bytes and bits/key "
                       "include all 4)\n");
    }
    if (cli_stdout_close() != 0)
        return CLI_EXIT_ERROR;
    for (size_t i = 0; i < nvariants; i++)
        if (rcs[i] != BG_OK)
            cli_error("calc: %s: %s", bg_variant_name(variants[i]), why[i]);
    return ok > 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}

const cli_command cli_cmd_calc = {
    .name = "calc",
    .summary = "size a filter: give two of n, p, m, k and get the rest",
    .usage = "bloomgate calc [-n N] [-p P] [-m M] [-k K] [--variant V] [--json]\n",
    .help =
        "Solves the sizing model for each variant (or only --variant): from any two\n"
        "of n, p, m and k (or three: n, p, k or m, p, k or n, m, k) it prints n, m,\n"
        "k, the array's bytes, the bits per key and the model's false-positive\n"
        "rate p at n keys. Nothing is created. The counting variant has the\n"
        "standard one's m and k, with m 4-bit counters: 4x the bytes and bits per\n"
        "key. A scalable filter is sized layer by layer as it grows, so it is not\n"
        "in this table (size its first layer as standard or blocked).\n"
        "\n"
        "  -n, --capacity N     keys the filter is for (e.g. 1000000 or 1e6)\n"
        "  -p, --error-rate P   false-positive rate at n keys, in (0, 1), e.g. 0.01\n"
        "  -m, --bits M         size of the bit array in bits\n"
        "  -k, --hashes K       probes per key (1..32; blocked: 1..8)\n"
        "      --variant V      standard, blocked or counting (default: all three)\n"
        "      --json           one JSON object on stdout instead of the table\n"
        "  -h, --help           this help\n"
        "\n"
        "Not allowed: only one value; p and k alone; n, m and p together.\n"
        "A variant that cannot be sized is reported on stderr; the exit status is 2\n"
        "when no variant could be sized.\n"
        "\n"
        "Example: bloomgate calc -n 1e6 -p 0.01\n",
    .run = run,
};
