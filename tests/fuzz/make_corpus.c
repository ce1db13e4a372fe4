/* Writes the seed corpus for fuzz_file into a directory:
 *
 *   make_corpus DIR
 *
 * Valid files of both variants across shapes that reach different code
 * (m = 64, odd m, a single block, a few KB; k from 1 to the maximum; sized
 * by n and p or by m and k; empty, with keys, saturated; several seeds),
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
 * buffer (*len bytes; the caller frees it). */
static uint8_t *image(bg_filter_options o, uint64_t nkeys, size_t *len)
{
    bg_filter *f;
    int rc = bg_filter_new(&f, &o);
    if (rc != BG_OK)
        die("bg_filter_new", rc);
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
    if (buf == NULL)
        die("malloc", 0);
    if ((rc = bg_filter_encode(f, buf, (size_t)size, len)) != BG_OK)
        die("bg_filter_encode", rc);
    bg_filter_free(f);
    return buf;
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

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_corpus DIR\n");
        return 2;
    }
    dir = argv[1];
    const bg_variant S = BG_VARIANT_STANDARD, B = BG_VARIANT_BLOCKED;

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
    free(buf);
    return 0;
}
