/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate info URL: a remote filter's statistics as the server reports
 * them, with a bitmap filter's fill and the estimates drawn from it. */
#include "cli_remote_impl.h"
#include "cli.h"
#include "cli_output.h"

#include <math.h>
#include <stdio.h>

int cli_remote_info(const char *url, bool json)
{
    cli_remote *rf;
    if (cli_remote_open(url, &rf) != 0)
        return CLI_EXIT_ERROR;
    bg_remote_filter_stats s;
    int rc = bg_remote_filter_stats_get(rf->f, &s);
    if (rc != BG_OK) {
        cli_remote_error(rf->url.display, "cannot read the statistics", rc, rf->r);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    const char *disp = rf->url.display;
    char d[32], size[32];
    bool bitmap = s.backend == BG_REMOTE_BITMAP;
    /* From the bits set X of m, with k probes: the usual estimates,
     * n ~ -(m / k) ln(1 - X / m) (Swamidass & Baldi 2007) and p ~ (X / m)^k. */
    double fill = 0, est_items = 0, est_p = 0;
    if (bitmap && s.bits > 0 && s.hashes > 0) {
        fill = (double)s.bits_set / (double)s.bits;
        est_items = fill < 1.0 ? -((double)s.bits / s.hashes) * log1p(-fill) : INFINITY;
        est_p = pow(fill, (double)s.hashes);
    }
    if (json) {
        printf("{\"url\":");
        cli_json_string(stdout, disp);
        printf(",\"name\":");
        cli_json_string(stdout, rf->url.name);
        printf(",\"backend\":\"%s\",", cli_remote_backend_word(s.backend));
        if (bitmap) {
            printf("\"variant\":\"standard\",\"seed\":%llu,\"bits\":%llu,\"hashes\":%u,",
                   (unsigned long long)s.seed, (unsigned long long)s.bits, s.hashes);
            printf("\"capacity\":%llu,\"error_rate\":%s,", (unsigned long long)s.capacity,
                   s.capacity ? cli_fmt_double(d, s.error_rate) : "null");
            printf("\"items\":%llu,\"bytes\":%llu,\"bits_set\":%llu,",
                   (unsigned long long)s.items, (unsigned long long)s.bytes,
                   (unsigned long long)s.bits_set);
            printf("\"fill_ratio\":%s,", cli_fmt_double(d, fill));
            printf("\"estimated_items\":%s,", cli_fmt_double(d, est_items));
            printf("\"estimated_fp_rate\":%s,", cli_fmt_double(d, est_p));
            uint32_t shards = bg_remote_filter_shards(rf->f);
            printf("\"shards\":%u", shards);
            /* a sharded filter has a generation per shard, none of its own */
            if (shards > 1)
                printf("}\n");
            else
                printf(",\"generation\":%llu}\n", (unsigned long long)s.generation);
        } else {
            printf("\"capacity\":%llu,\"items\":%llu,\"bytes\":%llu,\"layers\":%u}\n",
                   (unsigned long long)s.capacity, (unsigned long long)s.items,
                   (unsigned long long)s.bytes, s.layers);
        }
    } else {
        printf("url:               %s\n", disp);
        printf("name:              %s\n", rf->url.name);
        printf("backend:           %s\n", cli_remote_backend_word(s.backend));
        cli_fmt_bytes(size, sizeof size, s.bytes);
        if (bitmap) {
            printf("variant:           standard\n");
            printf("seed:              %llu (0x%llx)\n", (unsigned long long)s.seed,
                   (unsigned long long)s.seed);
            printf("bits (m):          %llu\n", (unsigned long long)s.bits);
            printf("hashes (k):        %u\n", s.hashes);
            if (s.capacity) {
                printf("capacity (n):      %llu\n", (unsigned long long)s.capacity);
                printf("error rate (p):    %.6g at capacity (the model's)\n", s.error_rate);
            } else {
                printf("capacity (n):      0 (sized by m and k)\n");
            }
            printf("items:             %llu\n", (unsigned long long)s.items);
            printf("bytes:             %llu (%s, the bit array in Redis)\n",
                   (unsigned long long)s.bytes, size);
            printf("bits set:          %llu\n", (unsigned long long)s.bits_set);
            printf("fill ratio:        %.6f\n", fill);
            printf("estimated items:   %.0f\n", est_items);
            printf("estimated p now:   %.6g\n", est_p);
            uint32_t shards = bg_remote_filter_shards(rf->f);
            if (shards > 1)
                printf("shards:            %u (%s:s0 .. %s:s%u, each with its own generation; "
                       "the figures above are their sums)\n",
                       shards, rf->url.name, rf->url.name, shards - 1);
            else
                printf("generation:        %llu\n", (unsigned long long)s.generation);
        } else {
            printf("capacity (n):      %llu (BF.INFO)\n", (unsigned long long)s.capacity);
            printf("items:             %llu\n", (unsigned long long)s.items);
            printf("bytes:             %llu (%s, BF.INFO Size)\n", (unsigned long long)s.bytes,
                   size);
            printf("layers:            %u\n", s.layers);
        }
    }
    cli_remote_close(rf);
    return cli_stdout_close() == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}
