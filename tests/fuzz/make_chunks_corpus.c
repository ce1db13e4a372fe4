/* SPDX-License-Identifier: BSD-3-Clause */
/* Writes the seed corpus for fuzz_chunks into a directory:
 *
 *   make_chunks_corpus DIR
 *
 * Each seed is a LOADCHUNK sequence in fuzz_chunks.c's input format (a
 * config byte, then records: iter as 8 bytes, len as 2, the bytes): the
 * SCANDUMP of a small scalable filter (one to several layers, standard or
 * blocked layers, non-scaling, empty) in chunks of one of the fuzzer's
 * sizes, made with the codec itself (bgr_scan_step, bg_filter_encode_range),
 * so the corpus always matches the current format. Then broken variants:
 * chunks swapped, repeated, skipped, cut, grown; a damaged byte (refused by
 * the checksum); a header above the small cap; a header of a version-1
 * image; probes of a finished filter. Keys are deterministic. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/bloomgate.h>

#include "redis_module/chunks.h"

static const char *dir;

/* fuzz_chunks.c's CHUNK_SIZES, and its config bit for the small cap. */
static const uint64_t CHUNK_SIZES[8] = {1, 7, 50, 64, 333, 1000, 4096, 65536};
#define SMALL_CAP_BIT 8u
#define GROWTH_CAP_BIT 16u /* and its cap, 4096 */

static void die(const char *what, int rc)
{
    fprintf(stderr, "make_chunks_corpus: %s: %s\n", what, rc ? bgr_status_name(rc) : "failed");
    exit(1);
}

/* A growing seed. */
typedef struct seq {
    uint8_t buf[16384];
    size_t len;
} seq;

static void seq_start(seq *s, unsigned config)
{
    s->buf[0] = (uint8_t)config;
    s->len = 1;
}

static void seq_add(seq *s, long long iter, const uint8_t *bytes, size_t n)
{
    if (s->len + 10 + n > sizeof s->buf || n > 0xffff)
        die("seed too long", 0);
    for (unsigned i = 0; i < 8; i++)
        s->buf[s->len++] = (uint8_t)((uint64_t)iter >> (8 * i));
    s->buf[s->len++] = (uint8_t)n;
    s->buf[s->len++] = (uint8_t)(n >> 8);
    if (n != 0)
        memcpy(s->buf + s->len, bytes, n);
    s->len += n;
}

static void seq_write(const seq *s, const char *name)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        die("path too long", 0);
    FILE *fp = fopen(path, "wb");
    if (fp == NULL || fwrite(s->buf, 1, s->len, fp) != s->len || fclose(fp) != 0)
        die(path, 0);
}

/* A filter's SCANDUMP: steps[i] is (iter, offset, len). */
typedef struct dump {
    uint8_t img[8192];
    size_t len;
    size_t steps;
    bgr_span step[1024]; /* next = the iter LOADCHUNK takes */
} dump;

static bg_filter *filter_with(bg_filter_options o, uint64_t nkeys)
{
    bg_filter *f;
    int rc = bg_filter_new(&f, &o);
    if (rc != BG_OK)
        die("bg_filter_new", rc);
    for (uint64_t i = 0; i < nkeys; i++) {
        char key[32];
        int n = snprintf(key, sizeof key, "key:%" PRIu64, i);
        rc = bg_filter_add(f, key, (size_t)n);
        if (rc == BG_EFULL)
            break;
        if (rc != BG_OK)
            die("bg_filter_add", rc);
    }
    return f;
}

static void scandump(const bg_filter *f, uint64_t chunk_max, dump *d)
{
    uint64_t total;
    int rc = bg_filter_encoded_size(f, &total);
    if (rc != BG_OK || total > sizeof d->img)
        die("image too large for a seed", rc);
    d->len = (size_t)total;
    d->steps = 0;
    bgr_span s;
    for (bgr_scan_step(total, 0, chunk_max, &s); s.len != 0; bgr_scan_step(total, s.next, chunk_max, &s)) {
        if (d->steps == sizeof d->step / sizeof d->step[0])
            die("too many steps", 0);
        if ((rc = bg_filter_encode_range(f, s.offset, d->img + s.offset, (size_t)s.len)) != BG_OK)
            die("bg_filter_encode_range", rc);
        d->step[d->steps++] = s;
    }
}

/* The records of steps [from, to) of d into s. */
static void add_steps(seq *s, const dump *d, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        seq_add(s, d->step[i].next, d->img + d->step[i].offset, (size_t)d->step[i].len);
}

static void valid(const char *name, bg_filter_options o, uint64_t nkeys, unsigned config)
{
    bg_filter *f = filter_with(o, nkeys);
    dump *d = malloc(sizeof *d);
    if (d == NULL)
        die("malloc", 0);
    scandump(f, CHUNK_SIZES[config & 7], d);
    seq s;
    seq_start(&s, config);
    add_steps(&s, d, 0, d->steps);
    /* A few SCANDUMP probes of the finished filter. */
    seq_add(&s, 0, NULL, 0);
    seq_add(&s, 1, NULL, 0);
    seq_add(&s, 130, NULL, 0);
    seq_add(&s, (long long)d->len, NULL, 0);
    seq_add(&s, -1, NULL, 0);
    seq_write(&s, name);
    free(d);
    bg_filter_free(f);
}

/* Broken sequences from one filter's SCANDUMP. */
static void broken(void)
{
    const unsigned SZ = 2; /* 50-byte chunks */
    bg_filter *f = filter_with((bg_filter_options){.variant = BG_VARIANT_SCALABLE, .capacity = 20,
                                                   .error_rate = 0.01, .seed = 5},
                               400);
    dump *d = malloc(sizeof *d);
    if (d == NULL)
        die("malloc", 0);
    scandump(f, CHUNK_SIZES[SZ], d);
    if (d->steps < 6)
        die("too few steps for the broken seeds", 0);
    seq s;

    seq_start(&s, SZ); /* chunks 2 and 3 swapped */
    add_steps(&s, d, 0, 2);
    add_steps(&s, d, 3, 4);
    add_steps(&s, d, 2, 3);
    add_steps(&s, d, 4, d->steps);
    seq_write(&s, "bad-swapped");

    seq_start(&s, SZ); /* chunk 2 twice, then the rest */
    add_steps(&s, d, 0, 3);
    add_steps(&s, d, 2, d->steps);
    seq_write(&s, "bad-repeated");

    seq_start(&s, SZ); /* chunk 2 missing */
    add_steps(&s, d, 0, 2);
    add_steps(&s, d, 3, d->steps);
    seq_write(&s, "bad-skipped");

    seq_start(&s, SZ); /* the last chunk one byte short, then one byte long */
    add_steps(&s, d, 0, d->steps - 1);
    bgr_span last = d->step[d->steps - 1];
    seq_add(&s, last.next - 1, d->img + last.offset, (size_t)last.len - 1);
    seq_add(&s, last.next + 1, d->img + last.offset + last.len - 1, 2);
    seq_write(&s, "bad-cut-and-grown");

    seq_start(&s, SZ); /* a chunk past the end, and a header again */
    add_steps(&s, d, 0, 2);
    seq_add(&s, (long long)d->len + 100, d->img + 200, 50);
    seq_add(&s, 1, d->img, 128);
    seq_add(&s, 0, NULL, 0);
    add_steps(&s, d, 2, d->steps);
    seq_write(&s, "bad-past-end");

    seq_start(&s, SZ); /* a damaged payload byte: the checksum refuses it */
    d->img[260] ^= 0x10;
    add_steps(&s, d, 0, d->steps);
    d->img[260] ^= 0x10;
    seq_write(&s, "bad-checksum");

    seq_start(&s, SZ | SMALL_CAP_BIT); /* more than the small cap */
    add_steps(&s, d, 0, d->steps);
    if (d->len <= 1024)
        die("bad-over-cap is not over the cap", 0);
    seq_write(&s, "bad-over-cap");

    seq_start(&s, SZ); /* a 129-byte header */
    seq_add(&s, 1, d->img, 129);
    seq_write(&s, "bad-long-header");

    free(d);
    bg_filter_free(f);

    /* A version-1 image: not a module filter. */
    f = filter_with((bg_filter_options){.variant = BG_VARIANT_STANDARD, .bits = 1000, .hashes = 4},
                    10);
    uint8_t head[BG_FILE_HEADER_BYTES];
    int rc = bg_filter_encode_range(f, 0, head, sizeof head);
    if (rc != BG_OK)
        die("bg_filter_encode_range", rc);
    seq_start(&s, SZ);
    seq_add(&s, 1, head, sizeof head);
    seq_write(&s, "bad-version-1");
    bg_filter_free(f);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_chunks_corpus DIR\n");
        return 2;
    }
    dir = argv[1];
    const bg_variant SC = BG_VARIANT_SCALABLE;
    valid("scl-empty-50", (bg_filter_options){.variant = SC, .capacity = 100, .error_rate = 0.01}, 0,
          2);
    valid("scl-1layer-333",
          (bg_filter_options){.variant = SC, .capacity = 100, .error_rate = 0.01, .seed = 1}, 60, 4);
    valid("scl-3layers-64",
          (bg_filter_options){.variant = SC, .capacity = 20, .error_rate = 0.01, .seed = 2}, 120, 3);
    valid("scl-5layers-1000",
          (bg_filter_options){.variant = SC, .capacity = 10, .error_rate = 0.01, .seed = 3}, 250, 5);
    valid("scl-blocked-4096",
          (bg_filter_options){.variant = SC, .capacity = 50, .error_rate = 0.01, .seed = 4,
                              .layer_variant = BG_VARIANT_BLOCKED},
          150, 6);
    valid("scl-nonscaling-65536",
          (bg_filter_options){.variant = SC, .capacity = 40, .error_rate = 0.01, .seed = 6,
                              .nonscaling = 1},
          1000, 7);
    valid("scl-2layers-7",
          (bg_filter_options){.variant = SC, .capacity = 10, .error_rate = 0.1, .seed = 7}, 15, 1);
    valid("scl-1layer-1",
          (bg_filter_options){.variant = SC, .capacity = 10, .error_rate = 0.1, .seed = 8}, 3, 0);
    /* A version-4 image: a first share and blocked layers above standard
     * ones (the module's LAYERS auto for small scaling filters). */
    valid("scl-mixed-v4",
          (bg_filter_options){.variant = SC, .capacity = 10, .error_rate = 0.01, .seed = 11,
                              .first_share = 0.5, .tightening = 0.9, .blocked_from = 2},
          200, 2);
    /* Growth capped at 4096 bytes: accepted under the fuzzer's growth cap;
     * the default cap (64 GiB) is refused under it. */
    valid("scl-maxbytes-4096-growthcap",
          (bg_filter_options){.variant = SC, .capacity = 10, .error_rate = 0.01, .seed = 9,
                              .max_bytes = 4096},
          100, 3 | GROWTH_CAP_BIT);
    valid("bad-growth-over-cap",
          (bg_filter_options){.variant = SC, .capacity = 10, .error_rate = 0.01, .seed = 10}, 30,
          3 | GROWTH_CAP_BIT);
    broken();
    return 0;
}
