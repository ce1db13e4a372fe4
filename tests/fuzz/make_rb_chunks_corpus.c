/* SPDX-License-Identifier: BSD-3-Clause */
/* Seeds for fuzz_rb_chunks (its input format is described there): the
 * SCANDUMP sequences RedisBloom 2.6.28 wrote (tests/fixtures/redisbloom,
 * the keys and legacy chains small enough for the fuzzer's inputs),
 * replayed as BF.LOADCHUNK pairs, then the same with one thing wrong each:
 * a header field, a chunk's iterator or length, chunks out of order.
 *
 *   make_rb_chunks_corpus DIR */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/bloomgate.h>

#ifndef BG_RB_FIXTURES
#error "BG_RB_FIXTURES: the directory of RedisBloom's fixtures"
#endif

static const char *dir;

static void die(const char *what)
{
    fprintf(stderr, "make_rb_chunks_corpus: %s\n", what);
    exit(1);
}

/* The growing seed being built. */
typedef struct out {
    uint8_t buf[1 << 16];
    size_t len;
} out;

static void put(out *o, uint64_t v, unsigned n)
{
    if (o->len + n > sizeof o->buf)
        die("seed too large");
    for (unsigned i = 0; i < n; i++)
        o->buf[o->len++] = (uint8_t)(v >> (8 * i));
}

static void put_bytes(out *o, const uint8_t *p, size_t n)
{
    if (o->len + n > sizeof o->buf)
        die("seed too large");
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}

static void record(out *o, int64_t it, const uint8_t *p, size_t n)
{
    put(o, (uint64_t)it, 4);
    put(o, n, 2);
    put_bytes(o, p, n);
}

static void write_seed(const char *name, const out *o)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    if (fp == NULL || fwrite(o->buf, 1, o->len, fp) != o->len || fclose(fp) != 0)
        die(path);
}

/* A fixture file into buf; its length, or -1 if there is none. */
static long read_part(const char *seq, size_t i, uint8_t *buf, size_t cap)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/scandump/%03zu.bin", BG_RB_FIXTURES, seq, i);
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return -1;
    size_t n = fread(buf, 1, cap, fp);
    fclose(fp);
    return (long)n;
}

/* The sequence's header and chunks as a seed; with `fault`, one thing
 * wrong (0: none). */
static void sequence(const char *seq, const char *name, int fault)
{
    static uint8_t part[16][1 << 14];
    long len[16];
    size_t n = 0;
    while (n < 16 && (len[n] = read_part(seq, n, part[n], sizeof part[n])) >= 0)
        n++;
    if (n < 2)
        die(seq);
    out o = {.len = 0};
    if (fault == 1)
        part[0][12] |= 0x10; /* an unknown option bit */
    if (fault == 2)
        part[0][0] ^= 1;     /* size != the links' sizes */
    put(&o, (uint64_t)len[0], 2);
    put_bytes(&o, part[0], (size_t)len[0]);
    int64_t it = 1;
    for (size_t i = 1; i < n; i++) {
        it += len[i];
        int64_t at = it;
        size_t k = i;
        if (fault == 3 && i == 1)
            at += 1; /* one byte late: too big for its link */
        if (fault == 4) {
            k = n - i; /* the chunks backwards, each at its own iterator */
            at = 1;
            for (size_t j = 1; j <= k; j++)
                at += len[j];
        }
        record(&o, at, part[k], (size_t)len[k]);
    }
    if (fault == 5)
        record(&o, 1, part[0], (size_t)len[0]); /* a header to an existing key */
    if (fault == 6)
        record(&o, it + 5, part[1], 3);         /* past the end */
    write_seed(name, &o);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_rb_chunks_corpus DIR\n");
        return 2;
    }
    dir = argv[1];
    static const char *const seqs[] = {"keys/auto", "keys/exp4", "keys/nonscaling",
                                       "legacy/legacy_v0/restored", "legacy/legacy_v0/after",
                                       "legacy/legacy_v1/restored", "legacy/legacy_v3/restored"};
    for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++) {
        char name[128];
        for (int fault = 0; fault <= 6; fault++) {
            snprintf(name, sizeof name, "%zu-%s-%d", i, strrchr(seqs[i], '/') + 1, fault);
            sequence(seqs[i], name, fault);
        }
    }
    /* A chain made here: BF.RESERVE 0.1 10 with item1, and its header alone. */
    bg_filter *f;
    bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM, .capacity = 10, .error_rate = 0.1};
    if (bg_filter_new(&f, &o) != BG_OK || bg_filter_add(f, "item1", 5) != BG_OK)
        die("bg_filter_new");
    uint8_t head[20 + 53];
    size_t hlen;
    if (bg_rb_header_encode(f, head, sizeof head, &hlen) != BG_OK)
        die("header");
    out s = {.len = 0};
    put(&s, hlen, 2);
    put_bytes(&s, head, hlen);
    write_seed("reserve-header-only", &s);
    const uint8_t *d;
    size_t n;
    if (bg_rb_link_array(f, 0, &d, &n) != BG_OK)
        die("array");
    record(&s, 1 + (int64_t)n, d, n);
    record(&s, 0, d, 0);
    record(&s, -3, d, 2);
    record(&s, 5, d, 4);
    write_seed("reserve-item1", &s);
    bg_filter_free(f);
    return 0;
}
