/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate-bench: bloomgate's filters against libbloom on the same keys,
 * and both against this machine's memory, with the performance targets
 * checked at the end (targets.c). docs/PERFORMANCE.md explains the method
 * and holds the figures; `bloomgate-bench --help` lists the options.
 * Every variant is measured the same way (inserts, present and absent
 * queries, single and batched); the counting variant also gets remove
 * passes, and the scalable one starts at n / SCALABLE_SHRINK keys so that
 * the inserts make it grow. This file holds the options and the order of
 * the run; bloomgate_bench.h says which file measures, runs and reports. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bloomgate_bench.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: bloomgate-bench [options]\n"
            "  --n LIST          key counts, e.g. 1e6,1e7 (default 1e6,1e7,1e8)\n"
            "  --p LIST          false-positive rates (default 0.01,0.001)\n"
            "  --variant LIST    standard,blocked,libbloom,counting,scalable (default all;\n"
            "                    without --variant, counting and scalable only at n <= 1e7)\n"
            "  --layer-variant V the scalable filter's layers: standard (default) or blocked\n"
            "  --writers LIST    concurrent,single: bloomgate's insert modes (default both)\n"
            "  --batch N         keys per *_many call and per key window (default and max 1024)\n"
            "  --min-time S      seconds of passes per figure, at least (default 0.25)\n"
            "  --present N       present keys queried, at most (default 4e6)\n"
            "  --absent N        absent keys queried (default 4e6)\n"
            "  --no-probe        skip the memory probe (and T1's side-by-side rounds, run at\n"
            "                    n = 1e8, p = 0.01 when blocked, libbloom and the probe are)\n"
            "  --key-lengths L   fixed key lengths (8..128 bytes) also measured at n = 1e6,\n"
            "                    blocked, single writer (default 8,16,36,64; none: skip)\n"
            "  --csv FILE        also write the rows as CSV ('-': stdout)\n"
            "  --json FILE       also write everything as JSON ('-': stdout)\n");
}

static int parse_count(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (errno || end == s || *end || !(d >= 1) || d > 1e15 || d != floor(d))
        return -1;
    *out = (uint64_t)d;
    return 0;
}

static int parse_list(const char *arg, const char *opt, options *o)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", arg);
    if (strcmp(opt, "n") == 0)
        o->n_count = 0;
    if (strcmp(opt, "p") == 0)
        o->p_count = 0;
    if (strcmp(opt, "variant") == 0) {
        memset(o->variant, 0, sizeof o->variant);
        o->variant_given = true;
    }
    if (strcmp(opt, "writers") == 0)
        memset(o->writers, 0, sizeof o->writers);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(opt, "n") == 0) {
            if (o->n_count == MAX_LIST || parse_count(tok, &o->n[o->n_count]) != 0)
                return -1;
            o->n_count++;
        } else if (strcmp(opt, "p") == 0) {
            char *end;
            double p = strtod(tok, &end);
            if (o->p_count == MAX_LIST || *end || !(p > 0 && p < 1))
                return -1;
            o->p[o->p_count++] = p;
        } else if (strcmp(opt, "variant") == 0) {
            int v = 0;
            while (v < V_COUNT && strcmp(tok, variant_names[v]) != 0)
                v++;
            if (v == V_COUNT)
                return -1;
            o->variant[v] = true;
        } else {
            int w = 0;
            while (w < W_COUNT && strcmp(tok, writer_names[w]) != 0)
                w++;
            if (w == W_COUNT)
                return -1;
            o->writers[w] = true;
        }
    }
    return 0;
}

static int parse_key_lengths(const char *arg, options *o)
{
    o->key_len_count = 0;
    if (strcmp(arg, "none") == 0)
        return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        uint64_t u;
        if (o->key_len_count == MAX_LIST || parse_count(tok, &u) != 0 ||
            u < BENCH_MIN_KEY_LEN || u > BENCH_MAX_KEY_LEN)
            return -1;
        o->key_lens[o->key_len_count++] = (size_t)u;
    }
    return o->key_len_count ? 0 : -1;
}

static int parse_args(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(a, "--no-probe") == 0) {
            o->probe = false;
            continue;
        }
        if (strncmp(a, "--", 2) != 0)
            return -1;
        char name[32];
        const char *val;
        const char *eq = strchr(a, '=');
        if (eq) {
            snprintf(name, sizeof name, "%.*s", (int)(eq - a - 2), a + 2);
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a + 2);
            if (i + 1 >= argc)
                return -1;
            val = argv[++i];
        }
        uint64_t u;
        if (strcmp(name, "n") == 0 || strcmp(name, "p") == 0 || strcmp(name, "variant") == 0 ||
            strcmp(name, "writers") == 0) {
            if (parse_list(val, name, o) != 0)
                return -1;
        } else if (strcmp(name, "layer-variant") == 0) {
            if (strcmp(val, "standard") == 0)
                o->layer_variant = BG_VARIANT_STANDARD;
            else if (strcmp(val, "blocked") == 0)
                o->layer_variant = BG_VARIANT_BLOCKED;
            else
                return -1;
        } else if (strcmp(name, "batch") == 0) {
            if (parse_count(val, &u) != 0 || u > BENCH_WINDOW)
                return -1;
            o->batch = (size_t)u;
        } else if (strcmp(name, "present") == 0) {
            if (parse_count(val, &u) != 0)
                return -1;
            o->present_queries = (size_t)u;
        } else if (strcmp(name, "absent") == 0) {
            if (parse_count(val, &u) != 0)
                return -1;
            o->absent_queries = (size_t)u;
        } else if (strcmp(name, "min-time") == 0) {
            char *end;
            o->min_time = strtod(val, &end);
            if (*end || !(o->min_time >= 0))
                return -1;
        } else if (strcmp(name, "key-lengths") == 0) {
            if (parse_key_lengths(val, o) != 0)
                return -1;
        } else if (strcmp(name, "csv") == 0) {
            o->csv = val;
        } else if (strcmp(name, "json") == 0) {
            o->json = val;
        } else {
            return -1;
        }
    }
    if (o->n_count == 0 || o->p_count == 0)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    options o = {
        .n = {1000000, 10000000, 100000000},
        .n_count = 3,
        .p = {0.01, 0.001},
        .p_count = 2,
        .variant = {true, true, true, true, true},
        .layer_variant = BG_VARIANT_STANDARD,
        .writers = {true, true},
        .batch = 1024,
        .min_time = 0.25,
        .present_queries = 4000000,
        .absent_queries = 4000000,
        .probe = true,
        .key_lens = {8, 16, 36, 64},
        .key_len_count = 4,
    };
    if (parse_args(argc, argv, &o) != 0) {
        usage(stderr);
        return 2;
    }
    if (bg_version() != BG_VERSION_HEX) {
        fprintf(stderr, "bloomgate-bench: header/library version mismatch\n");
        return 1;
    }
    double t_start = bench_now();
    print_machine(stdout);
    fflush(stdout);

    uint64_t max_n = 0;
    for (size_t i = 0; i < o.n_count; i++)
        max_n = o.n[i] > max_n ? o.n[i] : max_n;
    static bench_keys present, absent;
    if (max_n >= BENCH_ABSENT_BASE) {
        fprintf(stderr, "bloomgate-bench: n must be below 2^33\n");
        return 1;
    }
    bench_keys_make(&present, 0, (size_t)max_n);
    bench_keys_make(&absent, BENCH_ABSENT_BASE, o.absent_queries);
    uint8_t *results = malloc(o.batch);
    if (results == NULL)
        return 1;

    {
        /* The hash's share of every figure: bg_hash_key over the absent
         * keys (XXH3-128, the hash every bloomgate call computes). */
        pass_ctx hc = {.keys = &absent, .count = absent.count, .batch = BENCH_WINDOW};
        double h = measure(pass_hash_only, NULL, &hc, o.min_time);
        hash_alone_ns = h;
        printf("  hashing alone: bg_hash_key (XXH3-128) %.2f ns/key over the absent keys "
               "(mean length %.1f bytes)\n",
               h, mean_len(&absent));
    }
    if (o.probe) {
        fprintf(stderr, "memory probe over 1 GiB...\n");
        if (bench_probe_run(&probe_gib, GIB, 0, o.min_time) == 0 &&
            bench_probe_run(&probe_gib_huge, GIB, 1, o.min_time) == 0) {
            have_probe_gib = true;
            print_probe_line(stdout, "1 GiB, 4 KiB", &probe_gib);
            print_probe_line(stdout, "1 GiB, THP asked", &probe_gib_huge);
        }
    }

    for (size_t ni = 0; ni < o.n_count; ni++) {
        for (size_t pi = 0; pi < o.p_count; pi++) {
            uint64_t n = o.n[ni];
            double p = o.p[pi];
            fprintf(stderr, "n=%llu p=%g (%.0f s so far)\n", (unsigned long long)n, p,
                    bench_now() - t_start);
            run_cell(n, p, &present, &absent, &o, results);
            print_block(stdout, n, p, &o);
            fflush(stdout);
        }
    }
    if (o.key_len_count) {
        fprintf(stderr, "key lengths (%.0f s so far)\n", bench_now() - t_start);
        run_key_lengths(&o, results);
        print_key_lengths(stdout);
    }
    print_targets(stdout, &o);
    printf("total time %.0f s\n", bench_now() - t_start);
    if (o.csv)
        write_csv(o.csv);
    if (o.json)
        write_json(o.json);
    free(results);
    return 0;
}
