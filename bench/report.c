/* SPDX-License-Identifier: BSD-3-Clause */
/* Reporting: the table of each (n, p) with the lines under it, the key
 * lengths' table, the CSV and the JSON, all from the results run.c fills
 * (bloomgate_bench.h). The targets' verdicts are targets.c's. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <string.h>
#include <time.h>

#include "bloomgate_bench.h"

/* The hardware limit for independent reads over the filter's size. */
double best_independent(const probe_set *ps)
{
    double a = ps->small.independent_ns, b = ps->small_huge.independent_ns;
    return b > 0 && b < a ? b : a;
}

static void fmt_ns(char *buf, size_t size, double v)
{
    if (isnan(v))
        snprintf(buf, size, "%7s", "-");
    else
        snprintf(buf, size, "%7.1f", v);
}

double fp_rate(const row *r)
{
    return r->absent_queried ? (double)r->fp_count / (double)r->absent_queried : NAN;
}

void print_machine(FILE *out)
{
    char model[256] = "unknown";
    FILE *ci = fopen("/proc/cpuinfo", "r");
    if (ci) {
        char line[512];
        while (fgets(line, sizeof line, ci)) {
            if (strncmp(line, "model name", 10) == 0) {
                char *colon = strchr(line, ':');
                if (colon) {
                    snprintf(model, sizeof model, "%s", colon + 2);
                    model[strcspn(model, "\n")] = 0;
                }
                break;
            }
        }
        fclose(ci);
    }
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
    fprintf(out, "bloomgate-bench: bloomgate %s vs libbloom %s, %s\n", bg_version_string(),
            bloom_version(), date);
    fprintf(out, "cpu: %s; compiler: gcc %s\n", model, __VERSION__);
}

void print_probe_line(FILE *out, const char *label, const bench_probe *pr)
{
    char thp[16] = "?";
    if (pr->huge_mib >= 0) {
        double share = pr->huge_mib * 1048576.0 / (double)pr->bytes;
        snprintf(thp, sizeof thp, "%.0f%%", share > 1 ? 100.0 : share * 100);
    }
    fprintf(out,
            "  memory probe, %-22s %7.1f MiB (THP %4s): dependent %6.1f ns/read, independent "
            "%5.2f ns/read (plain %.2f, prefetched %.2f); locked OR %.2f ns/op; with %.2f ns of "
            "arithmetic per read %.2f ns/read\n",
            label, (double)pr->bytes / 1048576.0, thp, pr->dependent_ns, pr->independent_ns,
            pr->independent_plain_ns, pr->independent_prefetch_ns, pr->locked_or_ns, pr->arith_ns,
            pr->reads_with_arith_ns);
}

side_ratio side_ratio_of(int which)
{
    side_ratio sr = {NAN, NAN, NAN};
    double v[SIDE_ROUNDS];
    size_t count = side_round_count;
    if (count == 0)
        return sr;
    for (size_t i = 0; i < count; i++) {
        const side_round *r = &side_rounds[i];
        v[i] = which == 0 ? r->libbloom / r->blocked : r->blocked / r->probe;
    }
    sr.median = bench_median(v, count); /* sorts v */
    sr.lo = v[0];
    sr.hi = v[count - 1];
    return sr;
}

static void print_side_by_side(FILE *out)
{
    fprintf(out,
            "  side by side, %zu rounds, each one slice of: the probe's best independent read "
            "(4 KiB and THP buffers), the blocked batched absent query (%zu keys), libbloom's "
            "absent query (%zu keys); order rotated\n",
            side_round_count, side_blocked_keys, side_libbloom_keys);
    fprintf(out, "    %5s %9s %11s %12s %17s %14s\n", "round", "probe ns", "blocked ns",
            "libbloom ns", "libbloom/blocked", "blocked/probe");
    for (size_t i = 0; i < side_round_count; i++) {
        const side_round *r = &side_rounds[i];
        fprintf(out, "    %5zu %9.2f %11.2f %12.1f %16.1fx %13.2fx\n", i + 1, r->probe,
                r->blocked, r->libbloom, r->libbloom / r->blocked, r->blocked / r->probe);
    }
    side_ratio a = side_ratio_of(0), b = side_ratio_of(1);
    fprintf(out, "    median of the rounds' ratios: libbloom/blocked %.1fx (%.1f-%.1fx), "
                 "blocked/probe %.2fx (%.2f-%.2fx)\n",
            a.median, a.lo, a.hi, b.median, b.lo, b.hi);
}

void print_block(FILE *out, uint64_t n, double p, const options *o)
{
    fprintf(out, "\nn = %.0e (%llu), p = %g   [present queries: %llu, absent queries: %zu, "
                 "batches of %zu]\n",
            (double)n, (unsigned long long)n, p,
            (unsigned long long)(n < o->present_queries ? n : o->present_queries),
            o->absent_queries, o->batch);
    const probe_set *ps = find_probe(n, p);
    if (ps) {
        print_probe_line(out, "filter-sized, 4 KiB", &ps->small);
        print_probe_line(out, "filter-sized, THP asked", &ps->small_huge);
    }
    fprintf(out, "  %-9s %-10s %8s %6s %3s %9s %4s | %-15s | %-15s | %-15s | %-15s | %-9s %6s %9s\n",
            "variant", "writers", "bits/key", "B/key", "k", "MiB", "THP", " insert ns/op",
            "present q ns/op", " absent q ns/op", " remove ns/op", "FP rate", "FP/p", "model p");
    fprintf(out, "  %-9s %-10s %8s %6s %3s %9s %4s | %7s %7s | %7s %7s | %7s %7s | %7s %7s |\n", "",
            "", "", "", "", "", "", "single", "batch", "single", "batch", "single", "batch",
            "single", "batch");
    const row *sc = NULL;
    for (size_t i = 0; i < row_count; i++) {
        const row *r = &rows[i];
        if (r->n != n || r->p != p)
            continue;
        if (r->variant == V_SCALABLE && !sc)
            sc = r;
        char a[8][16];
        fmt_ns(a[0], sizeof a[0], r->ins_single);
        fmt_ns(a[1], sizeof a[1], r->ins_batch);
        fmt_ns(a[2], sizeof a[2], r->present_single);
        fmt_ns(a[3], sizeof a[3], r->present_batch);
        fmt_ns(a[4], sizeof a[4], r->absent_single);
        fmt_ns(a[5], sizeof a[5], r->absent_batch);
        fmt_ns(a[6], sizeof a[6], r->remove_single);
        fmt_ns(a[7], sizeof a[7], r->remove_batch);
        char thp[8] = "?";
        if (r->huge_mib >= 0) {
            double share = r->huge_mib * 1048576.0 / (double)r->bytes;
            snprintf(thp, sizeof thp, "%.0f%%", share > 1 ? 100.0 : share * 100);
        }
        /* bits/key counts m (a counting filter's m counters, a scalable
         * one's bits over all layers); B/key is the memory. */
        fprintf(out, "  %-9s %-10s %8.3f %6.3f %3u %9.1f %4s | %s %s | ", variant_names[r->variant],
                r->writers < 0 ? "-" : writer_names[r->writers], (double)r->bits / (double)n,
                (double)r->bytes / (double)n, r->k, (double)r->bytes / 1048576.0, thp, a[0], a[1]);
        if (r->absent_queried)
            fprintf(out, "%s %s | %s %s | %s %s | %9.6f %6.3f %9.6f\n", a[2], a[3], a[4], a[5], a[6],
                    a[7], fp_rate(r), fp_rate(r) / p, r->model_p);
        else
            fprintf(out, "%-15s | %-15s | %s %s |\n", "(as above)", "(as above)", a[6], a[7]);
    }
    if (sc)
        fprintf(out, "  scalable: %s layers, first layer for n/%d = %llu keys, expansion 2, "
                     "tightening 0.5: %u layers after the n inserts (each insert pass starts "
                     "from one empty layer and grows; its allocations are timed); k is the "
                     "newest layer's; model p is the rate its layers' fill gives (their "
                     "compound rate at capacity: %.6f)\n",
                bg_variant_name(o->layer_variant), SCALABLE_SHRINK,
                (unsigned long long)sc->first_capacity, sc->layers, sc->capacity_p);
    const row *bl = query_row(n, p, V_BLOCKED), *lb = query_row(n, p, V_LIBBLOOM);
    if (bl && ps)
        fprintf(out, "  blocked batched absent query = %.2fx the probe's best independent read "
                     "(%.2f ns)\n",
                bl->absent_batch / best_independent(ps), best_independent(ps));
    if (bl && ps)
        fprintf(out, "  the probe's reads with %.2f ns of arithmetic each: %.2f ns (%.2fx its "
                     "best independent read; %.2fx if none overlapped)\n",
                ps->small.arith_ns, ps->small.reads_with_arith_ns,
                ps->small.reads_with_arith_ns / best_independent(ps),
                (ps->small.arith_ns + best_independent(ps)) / best_independent(ps));
    if (bl && lb)
        fprintf(out, "  libbloom absent query / blocked batched absent query = %.1fx\n",
                lb->absent_single / bl->absent_batch);
    for (size_t i = 0; i < row_count; i++) {
        const row *r = &rows[i];
        if (r->n != n || r->p != p || isnan(r->stats_s))
            continue;
        fprintf(out, "  scan, %-8s stats %7.2f ms (sum of the same bytes %7.2f ms: %.2fx), "
                     "union %7.2f ms (plain or %7.2f ms: %.2fx; into a concurrent-writers "
                     "filter %7.2f ms)\n",
                variant_names[r->variant], r->stats_s * 1e3, r->stream.read_s * 1e3,
                r->stats_s / r->stream.read_s, r->union_s * 1e3, r->stream.or_s * 1e3,
                r->union_s / r->stream.or_s, r->union_concurrent_s * 1e3);
    }
    if (n == SIDE_N && p == SIDE_P && side_round_count)
        print_side_by_side(out);
}

void print_key_lengths(FILE *out)
{
    if (key_len_row_count == 0)
        return;
    fprintf(out, "\nKEY LENGTHS: blocked, n = 1e6, single writer, fixed-length binary keys, "
                 "ns per key (queries: absent keys)\n");
    fprintf(out, "%7s %8s %8s %10s %10s %10s %10s\n", "bytes", "p", "hash", "ins single",
            "ins batch", "qry single", "qry batch");
    for (size_t i = 0; i < key_len_row_count; i++) {
        const key_len_row *r = &key_len_rows[i];
        fprintf(out, "%7zu %8g %8.2f %10.2f %10.2f %10.2f %10.2f\n", r->len, r->p, r->hash,
                r->ins_single, r->ins_batch, r->absent_single, r->absent_batch);
    }
}

void write_csv(const char *path)
{
    FILE *out = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (out == NULL) {
        fprintf(stderr, "bloomgate-bench: %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(out, "n,p,variant,writers,bits,k,bytes,bits_per_key,insert_single_ns,insert_batch_ns,"
                 "present_single_ns,present_batch_ns,absent_single_ns,absent_batch_ns,"
                 "present_queried,absent_queried,fp_count,fp_rate,fp_ratio,model_p,"
                 "probe_dependent_ns,probe_independent_ns,bytes_per_key,remove_single_ns,"
                 "remove_batch_ns,layers\n");
    for (size_t i = 0; i < row_count; i++) {
        const row *r = &rows[i];
        const probe_set *ps = find_probe(r->n, r->p);
        fprintf(out, "%llu,%g,%s,%s,%llu,%u,%llu,%.4f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%llu,%llu,%llu,"
                     "%.7f,%.4f,%.7f,%.3f,%.3f,%.4f,%.3f,%.3f,%u\n",
                (unsigned long long)r->n, r->p, variant_names[r->variant],
                r->writers < 0 ? "-" : writer_names[r->writers], (unsigned long long)r->bits, r->k,
                (unsigned long long)r->bytes, (double)r->bits / (double)r->n, r->ins_single,
                r->ins_batch, r->present_single, r->present_batch, r->absent_single,
                r->absent_batch, (unsigned long long)r->present_queried,
                (unsigned long long)r->absent_queried, (unsigned long long)r->fp_count,
                fp_rate(r), fp_rate(r) / r->p, r->model_p, ps ? ps->small.dependent_ns : NAN,
                ps ? best_independent(ps) : NAN, (double)r->bytes / (double)r->n,
                r->remove_single, r->remove_batch, r->layers);
    }
    if (out != stdout)
        fclose(out);
}

static void json_num(FILE *out, const char *key, double v, const char *sep)
{
    if (isnan(v))
        fprintf(out, "\"%s\": null%s", key, sep);
    else
        fprintf(out, "\"%s\": %.7g%s", key, v, sep);
}

static void json_probe(FILE *out, const char *key, const bench_probe *pr, const char *sep)
{
    fprintf(out, "\"%s\": {\"bytes\": %llu, \"huge_pages_asked\": %s, ", key,
            (unsigned long long)pr->bytes, pr->huge ? "true" : "false");
    json_num(out, "dependent_ns", pr->dependent_ns, ", ");
    json_num(out, "independent_ns", pr->independent_ns, ", ");
    json_num(out, "independent_plain_ns", pr->independent_plain_ns, ", ");
    json_num(out, "independent_prefetch_ns", pr->independent_prefetch_ns, ", ");
    json_num(out, "locked_or_ns", pr->locked_or_ns, ", ");
    json_num(out, "arith_ns", pr->arith_ns, ", ");
    json_num(out, "reads_with_arith_ns", pr->reads_with_arith_ns, ", ");
    json_num(out, "thp_mib", pr->huge_mib, "");
    fprintf(out, "}%s", sep);
}

void write_json(const char *path)
{
    FILE *out = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (out == NULL) {
        fprintf(stderr, "bloomgate-bench: %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(out, "{\n  \"bloomgate\": \"%s\",\n  \"libbloom\": \"%s\",\n  \"rows\": [\n",
            bg_version_string(), bloom_version());
    for (size_t i = 0; i < row_count; i++) {
        const row *r = &rows[i];
        fprintf(out, "    {\"n\": %llu, \"p\": %g, \"variant\": \"%s\", \"writers\": \"%s\", "
                     "\"bits\": %llu, \"k\": %u, \"bytes\": %llu, ",
                (unsigned long long)r->n, r->p, variant_names[r->variant],
                r->writers < 0 ? "-" : writer_names[r->writers], (unsigned long long)r->bits, r->k,
                (unsigned long long)r->bytes);
        json_num(out, "insert_single_ns", r->ins_single, ", ");
        json_num(out, "insert_batch_ns", r->ins_batch, ", ");
        json_num(out, "present_single_ns", r->present_single, ", ");
        json_num(out, "present_batch_ns", r->present_batch, ", ");
        json_num(out, "absent_single_ns", r->absent_single, ", ");
        json_num(out, "absent_batch_ns", r->absent_batch, ", ");
        json_num(out, "remove_single_ns", r->remove_single, ", ");
        json_num(out, "remove_batch_ns", r->remove_batch, ", ");
        fprintf(out, "\"layers\": %u, ", r->layers);
        fprintf(out, "\"absent_queried\": %llu, \"fp_count\": %llu, ",
                (unsigned long long)r->absent_queried, (unsigned long long)r->fp_count);
        json_num(out, "fp_rate", fp_rate(r), ", ");
        json_num(out, "model_p", r->model_p, ", ");
        json_num(out, "capacity_p", r->capacity_p, ", ");
        json_num(out, "thp_mib", r->huge_mib, ", ");
        json_num(out, "stats_ms", r->stats_s * 1e3, ", ");
        json_num(out, "union_ms", r->union_s * 1e3, ", ");
        json_num(out, "union_concurrent_ms", r->union_concurrent_s * 1e3, ", ");
        json_num(out, "plain_sum_ms", r->stream.read_s * 1e3, ", ");
        json_num(out, "plain_or_ms", r->stream.or_s * 1e3, "");
        fprintf(out, "}%s\n", i + 1 < row_count ? "," : "");
    }
    fprintf(out, "  ],\n  \"probes\": [\n");
    for (size_t i = 0; i < probe_count; i++) {
        fprintf(out, "    {\"n\": %llu, \"p\": %g, ", (unsigned long long)probes[i].n, probes[i].p);
        json_probe(out, "filter_sized", &probes[i].small, ", ");
        json_probe(out, "filter_sized_thp", &probes[i].small_huge, "");
        fprintf(out, "}%s\n", i + 1 < probe_count ? "," : "");
    }
    fprintf(out, "  ],\n  \"key_lengths\": [\n");
    for (size_t i = 0; i < key_len_row_count; i++) {
        const key_len_row *r = &key_len_rows[i];
        fprintf(out, "    {\"bytes\": %zu, \"p\": %g, ", r->len, r->p);
        json_num(out, "hash_ns", r->hash, ", ");
        json_num(out, "insert_single_ns", r->ins_single, ", ");
        json_num(out, "insert_batch_ns", r->ins_batch, ", ");
        json_num(out, "absent_single_ns", r->absent_single, ", ");
        json_num(out, "absent_batch_ns", r->absent_batch, "");
        fprintf(out, "}%s\n", i + 1 < key_len_row_count ? "," : "");
    }
    fprintf(out, "  ],\n  \"side_by_side\": {\"n\": %llu, \"p\": %g, \"blocked_keys\": %zu, "
                 "\"libbloom_keys\": %zu, \"rounds\": [",
            (unsigned long long)SIDE_N, SIDE_P, side_blocked_keys, side_libbloom_keys);
    for (size_t i = 0; i < side_round_count; i++) {
        const side_round *r = &side_rounds[i];
        fprintf(out, "%s{", i ? ", " : "");
        json_num(out, "probe_ns", r->probe, ", ");
        json_num(out, "blocked_ns", r->blocked, ", ");
        json_num(out, "libbloom_ns", r->libbloom, "}");
    }
    fprintf(out, "]}");
    if (have_probe_gib) {
        fprintf(out, ",\n  ");
        json_probe(out, "probe_1gib", &probe_gib, ",\n  ");
        json_probe(out, "probe_1gib_thp", &probe_gib_huge, "");
    }
    fprintf(out, "\n}\n");
    if (out != stdout)
        fclose(out);
}
