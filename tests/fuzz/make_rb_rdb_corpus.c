/* SPDX-License-Identifier: BSD-3-Clause */
/* Writes the seed corpus for fuzz_rb_rdb into a directory:
 *
 *   make_rb_rdb_corpus DIR
 *
 * Seeds: every DUMP payload RedisBloom 2.6.28 wrote in
 * tests/fixtures/redisbloom (the seven keys' dump.bin, the legacy inputs of
 * encodings 0 to 3 and their re-encoded and grown dumps: LZF strings
 * included), then payloads written here, uncompressed, of chains made with
 * the library (BF.RESERVE's shapes, grown, non-scaling), each also as
 * encver 1 to 3 (the fields those encodings lack left out), and a few
 * broken ones (nfilters 0, a wrong hash count, a cut value). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/bloomgate.h>

#include "redis_module/rb_rdb.h"

#ifndef BG_RB_FIXTURES
#error "BG_RB_FIXTURES: the path of tests/fixtures/redisbloom"
#endif

#define RB_NAME_CODE UINT64_C(0xc05b968a26fbe)

static const char *dir;
static unsigned seeds;

static void die(const char *what)
{
    fprintf(stderr, "make_rb_rdb_corpus: %s\n", what);
    exit(1);
}

static void put(const char *name, const void *buf, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || (len && fwrite(buf, 1, len, f) != len) || fclose(f) != 0)
        die(path);
    seeds++;
}

static void copy_fixture(const char *rel, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", BG_RB_FIXTURES, rel);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        die(path);
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    put(name, buf, n);
}

/* ---- an uncompressed payload writer ------------------------------------------- */

typedef struct wr {
    unsigned char p[1 << 16];
    size_t n;
    int encver; /* which fields to leave out */
    unsigned field;
} wr;

static void wr_put(wr *w, const void *b, size_t n)
{
    if (w->n + n > sizeof w->p)
        die("payload too long");
    memcpy(w->p + w->n, b, n);
    w->n += n;
}

static void wr_len(wr *w, uint64_t v)
{
    unsigned char b[9];
    if (v < 64) {
        b[0] = (unsigned char)v;
        wr_put(w, b, 1);
    } else if (v < 16384) {
        b[0] = (unsigned char)(0x40 | (v >> 8));
        b[1] = (unsigned char)v;
        wr_put(w, b, 2);
    } else {
        b[0] = 0x81;
        for (int i = 0; i < 8; i++)
            b[1 + i] = (unsigned char)(v >> (56 - 8 * i));
        wr_put(w, b, 9);
    }
}

/* The writer sees fields in encver 4's order; `field` counts them so that
 * an older encver's missing ones (options, growth; bits and n2 for 0) are
 * skipped: chain fields 0-3, then 8 per link (bits at 4, n2 at 5). */
static int keep(wr *w)
{
    unsigned i = w->field++;
    if (i < 4)
        return !((i == 2 && w->encver < 2) || (i == 3 && w->encver < 4));
    unsigned k = (i - 4) % 8;
    return !(w->encver < 1 && (k == 4 || k == 5));
}

static void wr_unsigned(void *io, uint64_t v)
{
    if (!keep(io))
        return;
    wr_len(io, 2);
    wr_len(io, v);
}

static void wr_double(void *io, double v)
{
    if (!keep(io))
        return;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(bits >> (8 * i));
    wr_len(io, 4);
    wr_put(io, b, 8);
}

static void wr_string(void *io, const void *buf, size_t len)
{
    if (!keep(io))
        return;
    wr_len(io, 5);
    wr_len(io, len);
    wr_put(io, buf, len);
}

static void payload(const char *name, const bg_filter *f, int encver)
{
    static wr w;
    memset(&w, 0, sizeof w);
    w.p[w.n++] = 0x07;
    wr_len(&w, RB_NAME_CODE << 10 | (uint64_t)encver);
    w.encver = encver;
    bgr_rdb_writer wt = {&w, wr_unsigned, wr_double, wr_string};
    if (bgr_rb_rdb_save(&wt, f) != BG_OK)
        die("save");
    /* End opcode, RDB version 10, and a CRC the fuzzer does not read. */
    static const unsigned char tail[11] = {0, 10, 0};
    wr_put(&w, tail, sizeof tail);
    put(name, w.p, w.n);
    /* The same cut short. */
    char cut[256];
    snprintf(cut, sizeof cut, "%s-cut", name);
    put(cut, w.p, w.n / 2);
}

static bg_filter *chain(double p, uint64_t n, uint32_t expansion, int nonscaling, unsigned adds)
{
    bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM, .capacity = n, .error_rate = p,
                           .expansion = expansion, .nonscaling = nonscaling != 0};
    bg_filter *f;
    if (bg_filter_new(&f, &o) != BG_OK)
        die("bg_filter_new");
    for (unsigned i = 0; i < adds; i++) {
        char key[32];
        int len = snprintf(key, sizeof key, "seed:%u", i);
        if (bg_filter_test_and_add(f, key, (size_t)len) < 0)
            break;
    }
    return f;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: make_rb_rdb_corpus DIR");
    dir = argv[1];

    static const char *keys[] = {"scale2", "onelink", "nonscaling", "auto", "exp4", "empty", "large"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char rel[256], name[256];
        snprintf(rel, sizeof rel, "keys/%s/dump.bin", keys[i]);
        snprintf(name, sizeof name, "fixture-%s", keys[i]);
        copy_fixture(rel, name);
    }
    for (int v = 0; v < 4; v++) {
        static const char *parts[] = {"input.bin", "restored/dump.bin", "after/dump.bin"};
        for (int k = 0; k < 3; k++) {
            char rel[256], name[256];
            snprintf(rel, sizeof rel, "legacy/legacy_v%d/%s", v, parts[k]);
            snprintf(name, sizeof name, "legacy-v%d-%d", v, k);
            copy_fixture(rel, name);
        }
    }

    struct {
        const char *name;
        double p;
        uint64_t n;
        uint32_t expansion;
        int nonscaling;
        unsigned adds;
    } made[] = {
        {"tiny", 0.1, 10, 2, 0, 0},
        {"grown", 0.1, 10, 4, 0, 120},
        {"exp1", 0.05, 5, 1, 0, 40},
        {"full", 0.05, 20, 0, 1, 40},
        {"onelink", 0.01, 200, 2, 0, 150},
    };
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
        bg_filter *f = chain(made[i].p, made[i].n, made[i].expansion, made[i].nonscaling,
                             made[i].adds);
        for (int encver = 1; encver <= 4; encver++) {
            char name[256];
            snprintf(name, sizeof name, "made-%s-v%d", made[i].name, encver);
            payload(name, f, encver);
        }
        bg_filter_free(f);
    }

    /* Broken: no links; a hash count one off. */
    static const unsigned char nolinks[] = {0x07, 0x81, 0x30, 0x16, 0xe5, 0xa2, 0x89, 0xbe, 0xf8,
                                            0x04, 0x02, 0x00, 0x02, 0x00, 0x02, 0x05, 0x02, 0x02,
                                            0x00};
    put("broken-nolinks", nolinks, sizeof nolinks);
    static const unsigned char example[] = {
        0x07, 0x81, 0x30, 0x16, 0xe5, 0xa2, 0x89, 0xbe, 0xf8, 0x04, 0x02, 0x01, 0x02, 0x01,
        0x02, 0x05, 0x02, 0x02, 0x02, 0x0a, 0x04, 0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xa9,
        0x3f, 0x02, 0x05, 0x04, 0x4a, 0xf7, 0xd4, 0x9e, 0xde, 0xf0, 0x18, 0x40, 0x02, 0x40,
        0x40, 0x02, 0x00, 0x05, 0x08, 0x01, 0x08, 0x00, 0x80, 0x00, 0x04, 0x20, 0x00, 0x02,
        0x01, 0x00, 0x0a, 0x00, 0xd4, 0xef, 0x7c, 0xb2, 0xa2, 0x37, 0xda, 0x4c};
    put("format-example", example, sizeof example);
    unsigned char wrong[sizeof example];
    memcpy(wrong, example, sizeof example);
    wrong[30] = 0x06; /* hashes 5 -> 6 */
    put("broken-hashes", wrong, sizeof wrong);
    printf("make_rb_rdb_corpus: %u seeds in %s\n", seeds, dir);
    return 0;
}
