/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate bench and bloomgate demo: what a filter costs on this machine,
 * and what it saves, measured in memory (no file is written).
 *
 * Both size a filter for n keys at error rate p, add n keys "id:0" ..
 * "id:<n-1>" (the first half one call per key, the second half in batches),
 * then ask for the n present keys and for n absent ones ("id:<n>" ..
 * "id:<2n-1>"), each once one call per key and once in batches. Only the
 * library calls are timed: keys are formatted WINDOW at a time outside the
 * timed region, as a service has its key in hand when it asks.
 *
 * Every present key must be found (a filter has no false negatives): one
 * that is not is reported as a failure, exit status 2. The false-positive
 * rate is measured on the absent keys; its standard error is
 * sqrt(p (1 - p) / n): 1% of p at p = 0.01 and n = 10^6, 10% at n = 10^4.
 *
 * These are one run's figures, for a first look at a machine. make bench
 * (bench/, docs/PERFORMANCE.md) repeats runs, keeps the fastest, and
 * measures a baseline (libbloom) and the machine's memory beside them. */
#include "cli.h"
#include "cli_options.h"
#include "cli_output.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { WINDOW = 1024 };

/* Room for "id:" and 20 digits. */
typedef struct key_window {
    char text[WINDOW][24];
    const void *keys[WINDOW];
    size_t lens[WINDOW];
    uint8_t results[WINDOW];
} key_window;

/* The six timed passes, in the order they run (top of the file). */
enum {
    ADD_ONE,
    ADD_BATCHED,
    PRESENT_ONE,
    PRESENT_BATCHED,
    ABSENT_ONE,
    ABSENT_BATCHED,
    NPASSES
};
static const char *const pass_names[NPASSES] = {
    "add_one", "add_batched", "present_one", "present_batched", "absent_one", "absent_batched",
};

typedef struct measured {
    bg_variant variant;
    uint64_t m, bytes;
    uint32_t k;
    double ns[NPASSES];    /* per key */
    uint64_t hits[NPASSES]; /* answers 1: keys new (adds), found, or false positives */
} measured;

typedef struct bench_args {
    uint64_t n;
    double p;
    bg_variant variant; /* 0: the command's default */
    bool single_writer;
    bool json;
} bench_args;

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void format_keys(key_window *w, uint64_t first, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        w->lens[i] = (size_t)snprintf(w->text[i], sizeof w->text[i], "id:%llu",
                                      (unsigned long long)(first + i));
        w->keys[i] = w->text[i];
    }
}

typedef enum pass_kind { ADD, ASK } pass_kind;

/* Keys first .. first + count - 1 through f, one call per key or batched:
 * adds the time spent in the library to *ns and returns how many were
 * answered 1 (new, or maybe present), or a negative status. */
static int64_t pass(bg_filter *f, key_window *w, pass_kind kind, bool batched, uint64_t first,
                    uint64_t count, double *ns)
{
    int64_t hits = 0;
    for (uint64_t at = 0; at < count; at += WINDOW) {
        size_t n = count - at < WINDOW ? (size_t)(count - at) : WINDOW;
        format_keys(w, first + at, n);
        int64_t h = 0;
        double t0 = now_ns();
        if (batched) {
            h = kind == ADD ? bg_filter_add_many(f, w->keys, w->lens, n, w->results)
                            : bg_filter_contains_many(f, w->keys, w->lens, n, w->results);
        } else {
            for (size_t i = 0; i < n && h >= 0; i++) {
                int r = kind == ADD ? bg_filter_add(f, w->keys[i], w->lens[i])
                                    : bg_filter_contains(f, w->keys[i], w->lens[i]);
                h = r < 0 ? r : h + r;
            }
        }
        *ns += now_ns() - t0;
        if (h < 0)
            return h;
        hits += h;
    }
    return hits;
}

static double per_key(double ns, uint64_t keys)
{
    return keys ? ns / (double)keys : 0;
}

/* Sizes, fills and asks one filter (top of the file). 0, or -1 with the
 * message printed. */
static int measure(const char *cmd, const bench_args *a, bg_variant v, key_window *w,
                   measured *out)
{
    memset(out, 0, sizeof *out);
    out->variant = v;
    bg_filter_options o = {.variant = v, .capacity = a->n, .error_rate = a->p,
                           .concurrency = a->single_writer ? BG_SINGLE_WRITER
                                                           : BG_CONCURRENT_WRITERS};
    bg_filter *f;
    int rc = bg_filter_new(&f, &o);
    if (rc != BG_OK) {
        char why[160];
        bg_sizing given = {.n = a->n, .p = a->p};
        cli_sizing_explain(v, &given, rc, why, sizeof why);
        cli_error("%s: %s: %s", cmd, bg_variant_name(v), why);
        return -1;
    }
    out->m = bg_filter_bits(f);
    out->k = bg_filter_hashes(f);
    out->bytes = bg_filter_bytes(f);
    /* Writes the whole array once, so that the timed adds do not pay for
     * the kernel's first touch of each page (a scalable filter's later
     * layers still do, as they would in service). */
    (void)bg_filter_clear(f);
    uint64_t half = a->n / 2;
    /* Each pass's keys: id:first .. id:first+count-1. */
    const struct {
        uint64_t first, count;
        pass_kind kind;
        bool batched;
    } plan[NPASSES] = {
        [ADD_ONE] = {0, half, ADD, false},
        [ADD_BATCHED] = {half, a->n - half, ADD, true},
        [PRESENT_ONE] = {0, a->n, ASK, false},
        [PRESENT_BATCHED] = {0, a->n, ASK, true},
        [ABSENT_ONE] = {a->n, a->n, ASK, false},
        [ABSENT_BATCHED] = {a->n, a->n, ASK, true},
    };
    int64_t rc64 = 0;
    for (int i = 0; i < NPASSES && rc64 >= 0; i++) {
        double ns = 0;
        rc64 = pass(f, w, plan[i].kind, plan[i].batched, plan[i].first, plan[i].count, &ns);
        out->hits[i] = rc64 < 0 ? 0 : (uint64_t)rc64;
        out->ns[i] = per_key(ns, plan[i].count);
    }
    bg_filter_free(f);
    if (rc64 < 0) {
        /* A scalable filter that cannot grow past its cap, say. */
        cli_error("%s: %s: %s", cmd, bg_variant_name(v), bg_strerror((int)rc64));
        return -1;
    }
    const uint64_t *h = out->hits;
    if (h[PRESENT_BATCHED] != a->n || h[PRESENT_ONE] != a->n) {
        cli_error("%s: %s: FALSE NEGATIVES: %llu (batched) and %llu (one by one) of %llu added "
                  "keys were not found; please report this",
                  cmd, bg_variant_name(v), (unsigned long long)(a->n - h[PRESENT_BATCHED]),
                  (unsigned long long)(a->n - h[PRESENT_ONE]), (unsigned long long)a->n);
        return -1;
    }
    if (h[ABSENT_BATCHED] != h[ABSENT_ONE]) {
        cli_error("%s: %s: the batched and the one-by-one calls disagree on the absent keys "
                  "(%llu and %llu maybe present); please report this",
                  cmd, bg_variant_name(v), (unsigned long long)h[ABSENT_BATCHED],
                  (unsigned long long)h[ABSENT_ONE]);
        return -1;
    }
    return 0;
}

/* Options shared by bench and demo. 0 with *a filled, or an exit status
 * (help, usage error) + 1. */
static const struct option bench_longs[] = {
    {"capacity", required_argument, NULL, 'n'},
    {"error-rate", required_argument, NULL, 'p'},
    {"variant", required_argument, NULL, 'v'},
    {"single-writer", no_argument, NULL, 's'},
    {"help", no_argument, NULL, 'h'},
    {"json", no_argument, NULL, 'j'}, /* bench only: demo's list ends before it */
    {0, 0, 0, 0},
};
static const struct option demo_longs[] = {
    {"capacity", required_argument, NULL, 'n'},
    {"error-rate", required_argument, NULL, 'p'},
    {"variant", required_argument, NULL, 'v'},
    {"single-writer", no_argument, NULL, 's'},
    {"help", no_argument, NULL, 'h'},
    {0, 0, 0, 0},
};

static int parse(const cli_command *cmd, const struct option *longs, int argc, char **argv,
                 bench_args *a)
{
    *a = (bench_args){.n = 1000000, .p = 0.01};
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":n:p:h", longs, NULL)) != -1) {
        switch (c) {
        case 'n':
            /* 2n keys are numbered, and 10^10 keys take hours anyway. */
            if (cli_parse_count("--capacity", optarg, 1, 10000000000ull, &a->n) != 0)
                return CLI_EXIT_ERROR + 1;
            break;
        case 'p':
            if (cli_parse_rate("--error-rate", optarg, &a->p) != 0)
                return CLI_EXIT_ERROR + 1;
            break;
        case 'v':
            if (cli_parse_variant(optarg, &a->variant) != 0)
                return CLI_EXIT_ERROR + 1;
            break;
        case 's':
            a->single_writer = true;
            break;
        case 'j':
            a->json = true;
            break;
        case 'h':
            return cli_help(cmd) + 1;
        default:
            return cli_bad_option(cmd, c, argv, longs) + 1;
        }
    }
    if (optind < argc)
        return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]) + 1;
    return 0;
}

/* ---- bench ------------------------------------------------------------- */

static void print_json(const bench_args *a, const measured *r, size_t count)
{
    char d[32];
    printf("{\"n\":%llu,\"p\":%s,\"results\":[", (unsigned long long)a->n,
           cli_fmt_double(d, a->p));
    for (size_t i = 0; i < count; i++) {
        const measured *x = &r[i];
        printf("%s{\"variant\":\"%s\",\"bits\":%llu,\"hashes\":%u,\"bytes\":%llu,",
               i ? "," : "", bg_variant_name(x->variant), (unsigned long long)x->m, x->k,
               (unsigned long long)x->bytes);
        printf("\"bits_per_key\":%s,", cli_fmt_double(d, (double)x->bytes * 8 / (double)a->n));
        printf("\"ns_per_key\":{");
        for (int j = 0; j < NPASSES; j++)
            printf("%s\"%s\":%.2f", j ? "," : "", pass_names[j], x->ns[j]);
        printf("},\"found\":%llu,\"false_positives\":%llu,\"fp_rate\":%s}",
               (unsigned long long)x->hits[PRESENT_BATCHED],
               (unsigned long long)x->hits[ABSENT_BATCHED],
               cli_fmt_double(d, (double)x->hits[ABSENT_BATCHED] / (double)a->n));
    }
    printf("]}\n");
}

static void print_table(const bench_args *a, const measured *r, size_t count)
{
    printf("n = %llu keys, p = %g: nanoseconds per key, one call per key and batched "
           "(\"b\")\n",
           (unsigned long long)a->n, a->p);
    printf("%-10s %8s %2s %10s %7s %7s %7s %7s %7s %7s  %s\n", "variant", "bits/key", "k", "size",
           "add", "add b", "present", "pres. b", "absent", "abs. b", "false positives (rate)");
    for (size_t i = 0; i < count; i++) {
        const measured *x = &r[i];
        char size[32];
        cli_fmt_bytes(size, sizeof size, x->bytes);
        printf("%-10s %8.3f %2u %10s", bg_variant_name(x->variant),
               (double)x->bytes * 8 / (double)a->n, x->k, size);
        for (int j = 0; j < NPASSES; j++)
            printf(" %7.1f", x->ns[j]);
        printf("  %llu (%.5f)\n", (unsigned long long)x->hits[ABSENT_BATCHED],
               (double)x->hits[ABSENT_BATCHED] / (double)a->n);
    }
    printf("(one run on this machine; make bench measures properly: docs/PERFORMANCE.md)\n");
}

static int run_bench(int argc, char **argv)
{
    bench_args a;
    int st = parse(&cli_cmd_bench, bench_longs, argc, argv, &a);
    if (st)
        return st - 1;
    bg_variant all[] = {BG_VARIANT_STANDARD, BG_VARIANT_BLOCKED};
    bg_variant *vs = a.variant ? &a.variant : all;
    size_t count = a.variant ? 1 : 2;
    key_window *w = malloc(sizeof *w);
    measured r[2];
    if (!w) {
        cli_error("bench: out of memory");
        return CLI_EXIT_ERROR;
    }
    int bad = 0;
    for (size_t i = 0; i < count && !bad; i++)
        bad = measure("bench", &a, vs[i], w, &r[i]);
    free(w);
    if (bad)
        return CLI_EXIT_ERROR;
    if (a.json)
        print_json(&a, r, count);
    else
        print_table(&a, r, count);
    return cli_stdout_close() == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}

const cli_command cli_cmd_bench = {
    .name = "bench",
    .summary = "time a filter's adds and queries on this machine, and measure its error rate",
    .usage = "bloomgate bench [-n N] [-p P] [--variant V] [--single-writer] [--json]\n",
    .help =
        "Builds a filter in memory (no file) for N keys at error rate P, adds N keys,\n"
        "then asks for them and for N keys never added, and prints per variant: bits\n"
        "per key, k, size, nanoseconds per key for add and for present and absent\n"
        "queries (one call per key, and batched: hash all, prefetch, then probe), and\n"
        "the false-positive rate measured on the absent keys. Every added key must\n"
        "be found: one that is not is an error (exit status 2).\n"
        "\n"
        "  -n, --capacity N     keys (default 1000000; at most 1e10)\n"
        "  -p, --error-rate P   wanted false-positive rate, in (0, 1) (default 0.01)\n"
        "      --variant V      standard, blocked, counting, scalable or redisbloom\n"
        "                       (default: standard and blocked)\n"
        "      --single-writer  adds from one thread at a time (BG_SINGLE_WRITER):\n"
        "                       plain stores; the default, safe for any number of\n"
        "                       adding threads, pays for atomic ones\n"
        "      --json           one JSON object on stdout instead of the table\n"
        "  -h, --help           this help\n"
        "\n"
        "The figures are one run's: the rate's standard error is sqrt(p (1-p) / N),\n"
        "and times move with the machine's load. `make bench` (docs/PERFORMANCE.md)\n"
        "repeats runs and measures a baseline and the memory beside them.\n"
        "\n"
        "Example: bloomgate bench -n 1e7 -p 0.001\n",
    .run = run_bench,
};

/* ---- demo -------------------------------------------------------------- */

static int run_demo(int argc, char **argv)
{
    bench_args a;
    int st = parse(&cli_cmd_demo, demo_longs, argc, argv, &a);
    if (st)
        return st - 1;
    bg_variant v = a.variant ? a.variant : BG_VARIANT_DEFAULT;
    key_window *w = malloc(sizeof *w);
    if (!w) {
        cli_error("demo: out of memory");
        return CLI_EXIT_ERROR;
    }
    measured r;
    int bad = measure("demo", &a, v, w, &r);
    free(w);
    if (bad)
        return CLI_EXIT_ERROR;
    char size[32];
    cli_fmt_bytes(size, sizeof size, r.bytes);
    uint64_t let_through = r.hits[ABSENT_BATCHED], away = a.n - let_through;
    printf("A %s filter for %llu ids at a false-positive rate of %g: %s, %.2f bits per id, "
           "k = %u.\n",
           bg_variant_name(v), (unsigned long long)a.n, a.p, size,
           (double)r.bytes * 8 / (double)a.n, r.k);
    printf("Added %llu ids: %.1f ns each (%.1f batched).\n", (unsigned long long)a.n,
           r.ns[ADD_ONE], r.ns[ADD_BATCHED]);
    printf("Asked for %llu ids that do not exist: the filter turned away %llu (%.2f%%), "
           "%.1f ns each (%.1f batched).\n",
           (unsigned long long)a.n, (unsigned long long)away,
           100.0 * (double)away / (double)a.n, r.ns[ABSENT_ONE], r.ns[ABSENT_BATCHED]);
    printf("The other %llu (a measured rate of %.5f, for p = %g) would go on to the cache "
           "and the database.\n",
           (unsigned long long)let_through, (double)let_through / (double)a.n, a.p);
    printf("Every id that exists was found (%llu of %llu): a filter never turns away a key "
           "it holds.\n",
           (unsigned long long)r.hits[PRESENT_BATCHED], (unsigned long long)a.n);
    return cli_stdout_close() == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}

const cli_command cli_cmd_demo = {
    .name = "demo",
    .summary = "show what a filter saves: absent ids turned away before the cache and database",
    .usage = "bloomgate demo [-n N] [-p P] [--variant V] [--single-writer]\n",
    .help =
        "Sizes a filter (in memory) for N existing ids at error rate P, adds them,\n"
        "then asks for N ids that do not exist, as a service asks before it looks in\n"
        "its cache and database, and tells how many the filter turned away, how\n"
        "many would still reach the database (the measured false-positive rate),\n"
        "and how long each check took. Every existing id must be found.\n"
        "\n"
        "  -n, --capacity N     existing ids (default 1000000; at most 1e10)\n"
        "  -p, --error-rate P   wanted false-positive rate, in (0, 1) (default 0.01)\n"
        "      --variant V      standard, blocked, counting, scalable or redisbloom\n"
        "                       (default: blocked, the library's default)\n"
        "      --single-writer  adds from one thread at a time (BG_SINGLE_WRITER)\n"
        "  -h, --help           this help\n"
        "\n"
        "`make demo` runs the same idea end to end: an HTTP service with a database\n"
        "and a Redis cache, under load, with and without the filter.\n"
        "\n"
        "Example: bloomgate demo -n 1e7\n",
    .run = run_demo,
};
