/* SPDX-License-Identifier: BSD-3-Clause */
/* Writes the seed corpus for fuzz_file into a directory:
 *
 *   make_corpus DIR
 *
 * Valid files of every variant across shapes that reach different code
 * (m = 64, odd m, a single block, a few KB; k from 1 to the maximum; sized
 * by n and p or by m and k; empty, with keys, saturated; several seeds;
 * counting filters with an odd m and saturated counters; scalable filters
 * with one to several layers, standard or blocked layers, non-scaling, and
 * grown to each limit),
 * then invalid ones, each wrong in one way the loader must name (checked
 * here: a seed that does not get its status stops the run). The files
 * are made at run time with this build's encoder, so the corpus always
 * matches the current format and no binaries are committed. Keys are
 * deterministic (the same corpus every run). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/bloomgate.h>

static const char *dir;

static void die(const char *what, int rc)
{
    fprintf(stderr, "make_corpus: %s: %s\n", what, rc ? bg_strerror(rc) : "failed");
    exit(1);
}

static void write_file(const char *name, const uint8_t *buf, size_t len)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        die("path too long", 0);
    FILE *fp = fopen(path, "wb");
    if (fp == NULL || (len && fwrite(buf, 1, len, fp) != len) || fclose(fp) != 0)
        die(path, 0);
}

/* A filter of the given shape holding `nkeys` keys, encoded into a new
 * buffer (*len bytes; the caller frees it). A scalable filter that cannot
 * grow stops taking keys at the first add that returns `stop` (0: none may
 * fail). */
static uint8_t *image_until(bg_filter_options o, uint64_t nkeys, int stop, size_t *len)
{
    bg_filter *f;
    int rc = bg_filter_new(&f, &o);
    if (rc != BG_OK)
        die("bg_filter_new", rc);
    for (uint64_t i = 0; i < nkeys; i++) {
        char key[32];
        int n = snprintf(key, sizeof key, "key:%" PRIu64, i);
        rc = bg_filter_add(f, key, (size_t)n);
        if (stop != 0 && rc == stop)
            break;
        if (rc != BG_OK)
            die("bg_filter_add", rc);
    }
    if (stop != 0 && rc != stop)
        die("the filter did not fill up", 0);
    uint64_t size;
    if ((rc = bg_filter_encoded_size(f, &size)) != BG_OK)
        die("bg_filter_encoded_size", rc);
    uint8_t *buf = malloc((size_t)size);
    if (buf == NULL)
        die("malloc", 0);
    if ((rc = bg_filter_encode(f, buf, (size_t)size, len)) != BG_OK)
        die("bg_filter_encode", rc);
    bg_filter_free(f);
    return buf;
}

static uint8_t *image(bg_filter_options o, uint64_t nkeys, size_t *len)
{
    return image_until(o, nkeys, 0, len);
}

/* Writes buf[0, len) as `name` after checking that the loader says `want`
 * of it, so that each seed is what its name claims. */
static void seed(const char *name, const uint8_t *buf, size_t len, int want)
{
    bg_file_info info;
    int rc = bg_file_inspect_buffer(buf, len, 0, &info);
    if (rc != want) {
        fprintf(stderr, "make_corpus: %s: inspect says %s, not %s\n", name, bg_err_name(rc),
                bg_err_name(want));
        exit(1);
    }
    write_file(name, buf, len);
}

static void valid(const char *name, bg_filter_options o, uint64_t nkeys)
{
    size_t len;
    uint8_t *buf = image(o, nkeys, &len);
    seed(name, buf, len, BG_OK);
    free(buf);
}

/* A valid scalable image that must have `layers` layers (after adding until
 * `stop`, as image_until). */
static void valid_layers(const char *name, bg_filter_options o, uint64_t nkeys, int stop,
                         uint32_t layers)
{
    size_t len;
    uint8_t *buf = image_until(o, nkeys, stop, &len);
    bg_file_info info;
    int rc = bg_file_inspect_buffer(buf, len, 0, &info);
    if (rc != BG_OK || info.version != 2 || info.layers != layers) {
        fprintf(stderr, "make_corpus: %s: %s, version %u, %u layers, not version 2 with %u\n",
                name, bg_err_name(rc), info.version, info.layers, layers);
        exit(1);
    }
    seed(name, buf, len, BG_OK);
    free(buf);
}

/* Sets `bytes` little-endian bytes at buf[off] to v. */
static void put_le(uint8_t *buf, size_t off, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++)
        buf[off + i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *buf, size_t off, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes; i++)
        v |= (uint64_t)buf[off + i] << (8 * i);
    return v;
}

/* Writes a copy of buf[0, len) with `bytes` bytes at `off` set to v
 * (little-endian), after checking that the loader says `want` of it. */
static void mutant(const char *name, const uint8_t *buf, size_t len, size_t off, uint64_t v,
                   unsigned bytes, int want)
{
    uint8_t *copy = malloc(len);
    if (copy == NULL)
        die("malloc", 0);
    memcpy(copy, buf, len);
    put_le(copy, off, v, bytes);
    seed(name, copy, len, want);
    free(copy);
}

/* Scalable filters: format version 2, a container of version-1 layer
 * images (docs/FORMAT.md). Valid ones with 1, 2 and many layers, standard
 * and blocked layers, non-scaling, and grown to their limits; then invalid
 * ones, each wrong in one way. Small first layers keep every image well
 * under the fuzzer's -max_len. */
static void scalable_seeds(void)
{
    const bg_variant SC = BG_VARIANT_SCALABLE, B = BG_VARIANT_BLOCKED;
    valid_layers("scl-1layer-empty",
                 (bg_filter_options){.variant = SC, .capacity = 100, .error_rate = 0.01}, 0, 0, 1);
    valid_layers("scl-1layer",
                 (bg_filter_options){.variant = SC, .capacity = 100, .error_rate = 0.01,
                                     .seed = 21},
                 60, 0, 1);
    valid_layers("scl-2layers",
                 (bg_filter_options){.variant = SC, .capacity = 50, .error_rate = 0.01,
                                     .seed = 22},
                 80, 0, 2);
    valid_layers("scl-6layers",
                 (bg_filter_options){.variant = SC, .capacity = 10, .error_rate = 0.01,
                                     .seed = 23},
                 500, 0, 6);
    valid_layers("scl-blocked-3layers",
                 (bg_filter_options){.variant = SC, .capacity = 100, .error_rate = 0.001,
                                     .layer_variant = B, .seed = 24},
                 500, 0, 3);
    valid_layers("scl-exp4-tight08",
                 (bg_filter_options){.variant = SC, .capacity = 16, .error_rate = 0.05,
                                     .expansion = 4, .tightening = 0.8, .seed = 25},
                 200, 0, 3);
    valid_layers("scl-exp1",
                 (bg_filter_options){.variant = SC, .capacity = 30, .error_rate = 0.01,
                                     .expansion = 1, .seed = 26},
                 100, 0, 4);
    valid_layers("scl-nonscaling",
                 (bg_filter_options){.variant = SC, .capacity = 200, .error_rate = 0.01,
                                     .nonscaling = 1, .seed = 27},
                 100, 0, 1);
    valid_layers("scl-nonscaling-full",
                 (bg_filter_options){.variant = SC, .capacity = 40, .error_rate = 0.01,
                                     .nonscaling = 1, .seed = 28},
                 1000, BG_EFULL, 1);
    valid_layers("scl-maxlayers-full",
                 (bg_filter_options){.variant = SC, .capacity = 10, .error_rate = 0.01,
                                     .max_layers = 3, .seed = 29},
                 1000, BG_ELAYERS, 3);
    valid_layers("scl-maxbytes-full",
                 (bg_filter_options){.variant = SC, .capacity = 10, .error_rate = 0.01,
                                     .max_bytes = 600, .seed = 30},
                 1000, BG_ETOOBIG, 4);

    /* Invalid, one fault each. Container offsets: 8 version, 16 layers,
     * 56 items, 68 layer variant, 69 reserved, 80 first layer, 88 total;
     * the first layer's version-1 header is at 128 (its checksum field at
     * 248, its payload length at 192), its payload at 256. */
    size_t len;
    /* Capacity 100: a first layer of 152 bytes, so it has padding (at 50 it
     * is the 1024-bit minimum, 128 bytes, and has none). */
    uint8_t *buf = image((bg_filter_options){.variant = SC, .capacity = 100, .error_rate = 0.01,
                                             .seed = 31},
                         150, &len);
    seed("scl-bad-truncated", buf, len - 1, BG_ETRUNC);
    seed("scl-bad-header-only", buf, 128, BG_ETRUNC);
    uint8_t *longer = malloc(len + 64);
    if (longer == NULL)
        die("malloc", 0);
    memcpy(longer, buf, len);
    memset(longer + len, 0, 64);
    seed("scl-bad-trailing-layer-pad", longer, len + 64, BG_ETRAILING);
    free(longer);
    mutant("scl-bad-version-3", buf, len, 8, 3, 2, BG_EVERSION);
    mutant("scl-bad-version-1", buf, len, 8, 1, 2, BG_ECORRUPT);
    mutant("scl-bad-layers-more", buf, len, 16, get_le(buf, 16, 4) + 1, 4, BG_ECORRUPT);
    mutant("scl-bad-layers-fewer", buf, len, 16, get_le(buf, 16, 4) - 1, 4, BG_ECORRUPT);
    mutant("scl-bad-layers-zero", buf, len, 16, 0, 4, BG_ECORRUPT);
    mutant("scl-bad-items", buf, len, 56, get_le(buf, 56, 8) + 1, 8, BG_ECORRUPT);
    mutant("scl-bad-layer-variant", buf, len, 68, B, 1, BG_ECORRUPT);
    mutant("scl-bad-reserved", buf, len, 69, 1, 1, BG_ECORRUPT);
    mutant("scl-bad-first-layer", buf, len, 80, 192, 8, BG_ECORRUPT);
    mutant("scl-bad-total", buf, len, 88, len + 64, 8, BG_ETRUNC);
    mutant("scl-bad-nonscaling-2layers", buf, len, 14, 1, 2, BG_ECORRUPT);
    mutant("scl-bad-layer-checksum-field", buf, len, 248, 1, 1, BG_ECORRUPT);
    mutant("scl-bad-layer-magic", buf, len, 129, 'b', 1, BG_ECORRUPT);
    mutant("scl-bad-layer-payload-length", buf, len, 192, get_le(buf, 192, 8) + 1, 8,
           BG_ECORRUPT);
    /* the padding after the first layer's payload must be zeros */
    uint64_t pad_at = 256 + get_le(buf, 192, 8);
    if (pad_at % 64 == 0)
        die("scl-bad-padding: the first layer has no padding", 0);
    mutant("scl-bad-padding", buf, len, (size_t)pad_at, 1, 1, BG_ECORRUPT);
    /* a payload bit: only the checksum notices */
    mutant("scl-bad-checksum", buf, len, 256, buf[256] ^ 0x80u, 1, BG_ECHECKSUM);
    free(buf);
}

/* A RedisBloom chain of old options (RedisBloom before 2.2 wrote them):
 * power-of-two links, 32-bit hashing with options 0, growing by them. */
static uint8_t *legacy_image(uint32_t options, uint64_t capacity, uint64_t nkeys, size_t *len)
{
    bg_rb_chain ch = {.nfilters = 1, .options = options, .growth = 2};
    bg_rb_link l;
    bg_filter *f;
    int rc = bg_rb_new(&f, &ch, 0);
    if (rc == BG_OK && (rc = bg_rb_link_plan(&l, capacity, 0.01, options)) == BG_OK)
        rc = bg_rb_push_link(f, &l, NULL, 0);
    if (rc != BG_OK)
        die("legacy chain", rc);
    for (uint64_t i = 0; i < nkeys; i++) {
        char key[32];
        int n = snprintf(key, sizeof key, "key:%" PRIu64, i);
        if ((rc = bg_filter_add(f, key, (size_t)n)) != BG_OK)
            die("bg_filter_add", rc);
    }
    uint64_t size;
    if ((rc = bg_filter_encoded_size(f, &size)) != BG_OK)
        die("bg_filter_encoded_size", rc);
    uint8_t *buf = malloc((size_t)size);
    if (buf == NULL || (rc = bg_filter_encode(f, buf, (size_t)size, len)) != BG_OK)
        die("bg_filter_encode", rc);
    bg_filter_free(f);
    return buf;
}

/* RedisBloom chains: format version 3, a header, then each link's header
 * and array padded to 64 bytes (docs/FORMAT.md). Valid ones as BF.RESERVE
 * makes them (grown over several links, non-scaling and full), of old
 * options, then invalid ones, each wrong in one way. */
static void redisbloom_seeds(void)
{
    const bg_variant RB = BG_VARIANT_REDISBLOOM;
    valid("rb-reserve-empty",
          (bg_filter_options){.variant = RB, .capacity = 100, .error_rate = 0.01}, 0);
    valid("rb-reserve-4links",
          (bg_filter_options){.variant = RB, .capacity = 10, .error_rate = 0.1, .expansion = 4},
          300);
    size_t len;
    uint8_t *buf = image_until((bg_filter_options){.variant = RB, .capacity = 50,
                                                   .error_rate = 0.05, .nonscaling = true},
                               1000, BG_EFULL, &len);
    seed("rb-nonscaling-full", buf, len, BG_OK);
    free(buf);
    buf = legacy_image(0, 100, 300, &len);
    seed("rb-options0-grown", buf, len, BG_OK);
    free(buf);
    buf = legacy_image(4, 50, 40, &len);
    seed("rb-options4", buf, len, BG_OK);
    free(buf);

    buf = image((bg_filter_options){.variant = RB, .capacity = 20, .error_rate = 0.1,
                                    .expansion = 2},
                40, &len);
    mutant("rb-bad-version-4", buf, len, 8, 4, 2, BG_EVERSION);
    mutant("rb-bad-variant-4", buf, len, 12, BG_VARIANT_SCALABLE, 1, BG_EVERSION);
    mutant("rb-bad-hash", buf, len, 13, 1, 1, BG_ECORRUPT);
    mutant("rb-bad-links-0", buf, len, 16, 0, 4, BG_ECORRUPT);
    mutant("rb-bad-links-more", buf, len, 16, 7, 4, BG_ECORRUPT);
    mutant("rb-bad-max-bytes", buf, len, 40, 8, 8, BG_ECORRUPT);
    mutant("rb-bad-total", buf, len, 56, len + 64, 8, BG_ETRUNC);
    mutant("rb-bad-link-error", buf, len, 128 + 8, 0, 8, BG_ECORRUPT);
    mutant("rb-bad-link-bits", buf, len, 128 + 24, 8, 8, BG_ECORRUPT);
    mutant("rb-bad-link-hashes", buf, len, 128 + 48, 99, 4, BG_ECORRUPT);
    mutant("rb-bad-link-n2", buf, len, 128 + 52, 40, 1, BG_ECORRUPT);
    mutant("rb-bad-link-reserved", buf, len, 128 + 63, 1, 1, BG_ECORRUPT);
    mutant("rb-bad-checksum", buf, len, 128 + 64, buf[128 + 64] ^ 0x01u, 1, BG_ECHECKSUM);
    seed("rb-bad-truncated", buf, len - 1, BG_ETRUNC);
    free(buf);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_corpus DIR\n");
        return 2;
    }
    dir = argv[1];
    const bg_variant S = BG_VARIANT_STANDARD, B = BG_VARIANT_BLOCKED, C = BG_VARIANT_COUNTING;

    /* Standard. */
    valid("std-m64-k1-empty", (bg_filter_options){.variant = S, .bits = 64, .hashes = 1}, 0);
    valid("std-m64-k32-full",
          (bg_filter_options){.variant = S, .bits = 64, .hashes = BG_MAX_K, .seed = 3}, 200);
    valid("std-m100-k3", (bg_filter_options){.variant = S, .bits = 100, .hashes = 3, .seed = 7},
          5);
    valid("std-m1000-k5",
          (bg_filter_options){.variant = S, .bits = 1000, .hashes = 5, .seed = 0xdeadbeef}, 50);
    valid("std-m12345-k4-empty",
          (bg_filter_options){.variant = S, .bits = 12345, .hashes = 4, .seed = 1}, 0);
    valid("std-n200-p01",
          (bg_filter_options){.variant = S, .capacity = 200, .error_rate = 0.01}, 100);
    valid("std-4k-k7",
          (bg_filter_options){.variant = S, .bits = 8 * 4096, .hashes = 7, .seed = 99}, 1000);

    /* Blocked. */
    valid("blk-1block-k1-empty", (bg_filter_options){.variant = B, .bits = 512, .hashes = 1}, 0);
    valid("blk-1block-k8",
          (bg_filter_options){.variant = B, .bits = 512, .hashes = BG_BLOCKED_MAX_K, .seed = 5},
          10);
    valid("blk-2blocks-full",
          (bg_filter_options){.variant = B, .bits = 1024, .hashes = 8, .seed = 11}, 2000);
    valid("blk-n500-p001",
          (bg_filter_options){.variant = B, .capacity = 500, .error_rate = 0.001, .seed = 12},
          300);
    valid("blk-4k-k6",
          (bg_filter_options){.variant = B, .bits = 8 * 4096, .hashes = 6, .seed = 42}, 2000);

    /* Counting: 4-bit counters, two per payload byte. An odd m leaves the
     * last byte's low nibble unused (the tail the loader checks); many keys
     * in few counters saturate them at 15. */
    valid("cnt-m64-k1-empty", (bg_filter_options){.variant = C, .bits = 64, .hashes = 1}, 0);
    valid("cnt-m101-k3",
          (bg_filter_options){.variant = C, .bits = 101, .hashes = 3, .seed = 7}, 5);
    valid("cnt-m101-k32-saturated",
          (bg_filter_options){.variant = C, .bits = 101, .hashes = BG_MAX_K, .seed = 8}, 300);
    valid("cnt-n200-p01",
          (bg_filter_options){.variant = C, .capacity = 200, .error_rate = 0.01, .seed = 9},
          100);
    valid("cnt-4k-k5",
          (bg_filter_options){.variant = C, .bits = 2 * 4096, .hashes = 5, .seed = 77}, 1500);

    /* Invalid, one fault each (fault offsets: docs/FORMAT.md). */
    size_t len;
    uint8_t *buf = image((bg_filter_options){.variant = S, .bits = 100, .hashes = 3, .seed = 7},
                         5, &len);
    seed("bad-empty", buf, 0, BG_ETRUNC);
    seed("bad-magic-only", buf, 8, BG_ETRUNC);
    seed("bad-header-truncated", buf, 60, BG_ETRUNC);
    seed("bad-payload-truncated", buf, len - 1, BG_ETRUNC);
    uint8_t *longer = malloc(len + 1);
    if (longer == NULL)
        die("malloc", 0);
    memcpy(longer, buf, len);
    longer[len] = 0;
    seed("bad-trailing-byte", longer, len + 1, BG_ETRAILING);
    free(longer);

    buf[len - 1] |= 0x01; /* a bit past m = 100 */
    seed("bad-tail-bit", buf, len, BG_ECORRUPT);
    buf[len - 1] &= 0xfe;
    buf[len - 2] ^= 0x10; /* a payload bit the checksum no longer covers */
    seed("bad-checksum", buf, len, BG_ECHECKSUM);
    buf[len - 2] ^= 0x10;
    buf[1] ^= 0x20; /* 'B' -> 'b' */
    seed("bad-magic", buf, len, BG_EBADMAGIC);
    buf[1] ^= 0x20;
    buf[8] = 2; /* version */
    seed("bad-version", buf, len, BG_EVERSION);
    buf[8] = 1;
    buf[12] = 9; /* variant */
    seed("bad-variant", buf, len, BG_EVARIANT);
    /* A standard filter's payload (m bits) under the counting variant's
     * id, which needs 4 m bits: the lengths contradict each other. */
    buf[12] = (uint8_t)C;
    seed("bad-counting-payload-length", buf, len, BG_ECORRUPT);
    free(buf);

    /* Counting, m = 101: 404 payload bits, so the last byte's low nibble is
     * past the last counter and must be 0. */
    buf = image((bg_filter_options){.variant = C, .bits = 101, .hashes = 3, .seed = 7}, 5, &len);
    buf[len - 1] |= 0x01;
    seed("bad-cnt-tail-nibble", buf, len, BG_ECORRUPT);
    buf[len - 1] &= 0xf0;
    buf[len - 1] ^= 0x10; /* counter 100: a value the checksum no longer covers */
    seed("bad-cnt-checksum", buf, len, BG_ECHECKSUM);
    free(buf);

    scalable_seeds();
    redisbloom_seeds();
    return 0;
}
