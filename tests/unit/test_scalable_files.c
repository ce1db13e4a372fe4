/* SPDX-License-Identifier: BSD-3-Clause */
/* The scalable variant's file format (version 2, docs/FORMAT.md): save,
 * load, map and decode round trips; golden bytes; every malformed container
 * with its own status and nothing allocated, allocation failures included.
 * Growth and limits are test_scalable.c. */
#define _GNU_SOURCE /* mkdtemp */
#include "test_util.h"
#include "test_alloc.h"
#include "test_tmpdir.h"
#include "test_filter_util.h"
#include "test_scalable_util.h"

#include <stdbool.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Key sets (tu_key_distinct): added keys, and keys never added. */
enum { SET_ADDED = 1, SET_ABSENT = 2, SET_MORE = 3 };

/* ---- files --------------------------------------------------------------- */

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint8_t *encode(const bg_filter *f, size_t *len)
{
    uint64_t size;
    TU_EQ_I(bg_filter_encoded_size(f, &size), BG_OK);
    uint8_t *buf = malloc((size_t)size);
    TU_TRUE(buf != NULL);
    size_t n = 0;
    TU_EQ_I(bg_filter_encode(f, buf, (size_t)size, &n), BG_OK);
    TU_EQ_U(n, size);
    TU_EQ_I(bg_filter_encode(f, buf, (size_t)size - 1, &n), BG_EINVAL);
    *len = n;
    return buf;
}

/* A scratch directory and one file in it. */
typedef struct tmpdir {
    tu_tmpdir dir;
    char file[320];
} tmpdir;

static void tmpdir_make(tmpdir *d)
{
    tu_tmpdir_make(&d->dir, "scalable");
    snprintf(d->file, sizeof d->file, "%s/f.bgf", d->dir.path);
}

static void tmpdir_remove(tmpdir *d)
{
    tu_tmpdir_remove(&d->dir);
}

static void write_bytes(const char *path, const uint8_t *buf, size_t len)
{
    FILE *fp = fopen(path, "wb");
    TU_TRUE(fp != NULL);
    TU_EQ_U(fwrite(buf, 1, len, fp), len);
    TU_EQ_I(fclose(fp), 0);
}

/* Two filters answer alike: totals, layers, and every key of a sample. */
static void assert_same(const bg_filter *a, const bg_filter *b, uint64_t keys)
{
    bg_filter_stats sa, sb;
    TU_EQ_I(bg_filter_stats_get(a, &sa), BG_OK);
    TU_EQ_I(bg_filter_stats_get(b, &sb), BG_OK);
    TU_EQ_U(sa.layers, sb.layers);
    TU_EQ_U(sa.bits, sb.bits);
    TU_EQ_U(sa.items, sb.items);
    TU_EQ_U(sa.bits_set, sb.bits_set);
    TU_EQ_U(sa.capacity, sb.capacity);
    TU_EQ_U(sa.hashes, sb.hashes);
    TU_EQ_U(sa.seed, sb.seed);
    bg_filter_scaling ca, cb;
    TU_EQ_I(bg_filter_scaling_get(a, &ca), BG_OK);
    TU_EQ_I(bg_filter_scaling_get(b, &cb), BG_OK);
    TU_EQ_U(ca.layer_variant, cb.layer_variant);
    TU_EQ_U(ca.capacity, cb.capacity);
    TU_EQ_D(ca.error_rate, cb.error_rate);
    TU_EQ_U(ca.expansion, cb.expansion);
    TU_EQ_D(ca.tightening, cb.tightening);
    TU_EQ_U(ca.max_layers, cb.max_layers);
    TU_EQ_U(ca.max_bytes, cb.max_bytes);
    TU_EQ_I(ca.nonscaling, cb.nonscaling);
    TU_EQ_U(tu_scalable_count_present(b, SET_ADDED, 0, keys), keys);
    tu_batch bt;
    tu_batch_init(&bt, 2000);
    tu_batch_fill(&bt, 0, SET_ABSENT, 0, 2000);
    uint8_t ra[2000], rb[2000];
    TU_TRUE(bg_filter_contains_many(a, bt.keys, bt.lens, 2000, ra) >= 0);
    TU_TRUE(bg_filter_contains_many(b, bt.keys, bt.lens, 2000, rb) >= 0);
    assert_memory_equal(ra, rb, 2000);
    tu_batch_free(&bt);
}

/* A filter of more than 8 layers through save, load, map and decode: the
 * same bytes back from each, the same answers; the mapped copy read-only; a
 * loaded copy grows on. */
static void round_trip(void **state)
{
    (void)state;
    const uint64_t keys = 20000;
    bg_filter *f = tu_scalable((bg_filter_options){.capacity = 50, .error_rate = 0.01, .seed = 11});
    tu_scalable_add_range(f, SET_ADDED, 0, keys);
    TU_EQ_U(tu_layers_of(f), 9); /* 50 (2^9 - 1) = 25550 >= ~19900 > 12750 */
    size_t len;
    uint8_t *img = encode(f, &len);
    TU_EQ_U(len % 64, 0);

    tmpdir d;
    tmpdir_make(&d);
    TU_EQ_I(bg_filter_save(f, d.file), BG_OK);

    bg_file_info info;
    TU_EQ_I(bg_file_inspect(d.file, 0, &info), BG_OK);
    TU_EQ_U(info.version, 2);
    TU_EQ_U(info.header_bytes, 128);
    TU_EQ_U(info.variant, BG_VARIANT_SCALABLE);
    TU_EQ_U(info.hash_id, BG_FILE_HASH_XXH3_128);
    TU_EQ_U(info.seed, 11);
    TU_EQ_U(info.bits, bg_filter_bits(f));
    TU_EQ_U(info.hashes, bg_filter_hashes(f));
    TU_EQ_U(info.items, bg_filter_items(f));
    TU_EQ_U(info.layers, 9);
    TU_EQ_U(info.file_bytes, len);
    TU_EQ_U(info.payload_offset, 256);
    TU_TRUE(info.payload_bytes <= bg_filter_bytes(f) && info.payload_bytes > len / 2);
    TU_EQ_I(info.checksum_state, BG_CHECKSUM_OK);
    TU_EQ_U(info.scaling.layers, 9);
    TU_EQ_U(info.scaling.capacity, 50);
    TU_EQ_U(info.scaling.expansion, 2);
    TU_EQ_D(info.scaling.error_rate, 0.01);
    TU_EQ_U(info.scaling.layer_variant, BG_VARIANT_STANDARD);
    bg_filter_stats st;
    TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
    TU_EQ_U(info.capacity, st.capacity);
    bg_file_info binfo;
    TU_EQ_I(bg_file_inspect_buffer(img, len, 0, &binfo), BG_OK);
    TU_EQ_U(binfo.bits, info.bits);
    TU_EQ_U(binfo.checksum, info.checksum);

    bg_filter *copies[4] = {NULL, NULL, NULL, NULL};
    TU_EQ_I(bg_filter_decode(&copies[0], img, len, 0), BG_OK);
    TU_EQ_I(bg_filter_load(&copies[1], d.file, 0), BG_OK);
    TU_EQ_I(bg_filter_map(&copies[2], d.file, 0), BG_OK);
    TU_EQ_I(bg_filter_load(&copies[3], d.file, BG_FILE_NO_VERIFY | BG_FILE_SINGLE_WRITER),
            BG_OK);
    for (int c = 0; c < 4; c++) {
        tu_ctx("copy %d", c);
        size_t clen;
        uint8_t *cimg = encode(copies[c], &clen);
        TU_EQ_U(clen, len);
        assert_memory_equal(cimg, img, len);
        free(cimg);
        assert_same(f, copies[c], keys);
        tu_check_layers(copies[c]);
        TU_EQ_I(bg_filter_read_only(copies[c]), c == 2);
    }
    /* A mapped filter's layer reads as the decoded one's and is not written. */
    bg_filter_stats lst;
    TU_EQ_I(bg_filter_layer_stats(copies[2], 0, &lst), BG_OK);
    uint8_t *mapped = malloc(2 * lst.bytes);
    TU_TRUE(mapped != NULL);
    TU_EQ_I(bg_filter_layer_read(copies[2], 0, mapped, lst.bytes), BG_OK);
    TU_EQ_I(bg_filter_layer_read(copies[0], 0, mapped + lst.bytes, lst.bytes), BG_OK);
    assert_memory_equal(mapped, mapped + lst.bytes, lst.bytes);
    TU_EQ_I(bg_filter_layer_write(copies[2], 0, mapped, lst.bytes, lst.items), BG_EREADONLY);
    free(mapped);
    /* The file saved is the image encoded. */
    FILE *fp = fopen(d.file, "rb");
    TU_TRUE(fp != NULL);
    uint8_t *disk = malloc(len + 1);
    TU_EQ_U(fread(disk, 1, len + 1, fp), len);
    fclose(fp);
    assert_memory_equal(disk, img, len);
    free(disk);

    tu_ctx("mapped: read-only");
    bg_filter *m = copies[2];
    TU_EQ_I(tu_add_key(m, SET_MORE, 0), BG_EREADONLY);
    TU_EQ_I(bg_filter_add_many(m, NULL, NULL, 0, NULL), BG_EREADONLY);
    TU_EQ_I(bg_filter_clear(m), BG_EREADONLY);
    /* Saving a mapped filter works (the image of its layers). */
    TU_EQ_I(bg_filter_save(m, d.file), BG_OK);

    tu_ctx("loaded: grows on");
    bg_filter *l = copies[1];
    uint64_t before = bg_filter_items(l);
    tu_scalable_add_range(l, SET_MORE, 0, 20000);
    TU_EQ_U(tu_layers_of(l), tu_expected_layers(50, 2, bg_filter_items(l)));
    TU_TRUE(tu_layers_of(l) >= 10 && bg_filter_items(l) > before);
    tu_check_layers(l);
    TU_EQ_U(tu_scalable_count_present(l, SET_ADDED, 0, keys), keys);
    TU_EQ_U(tu_scalable_count_present(l, SET_MORE, 0, 20000), 20000);

    for (int c = 0; c < 4; c++)
        bg_filter_free(copies[c]);

    /* Each layer is a version-1 image (its checksum field 0: the container's
     * covers it): cut out, it decodes without verifying, as that layer. */
    tu_ctx("a layer cut out");
    uint64_t off = 128;
    for (uint32_t i = 0; i < 9; i++) {
        uint64_t pay = le64(img + off + 64);
        bg_filter *one;
        TU_EQ_I(bg_filter_decode(&one, img + off, (size_t)(128 + pay), 0), BG_ECHECKSUM);
        TU_EQ_I(bg_filter_decode(&one, img + off, (size_t)(128 + pay), BG_FILE_NO_VERIFY), BG_OK);
        bg_filter_stats ls, os;
        TU_EQ_I(bg_filter_layer_stats(f, i, &ls), BG_OK);
        TU_EQ_I(bg_filter_stats_get(one, &os), BG_OK);
        TU_EQ_U(os.bits, ls.bits);
        TU_EQ_U(os.bits_set, ls.bits_set);
        TU_EQ_U(os.items, ls.items);
        TU_EQ_U(os.capacity, ls.capacity);
        bg_filter_free(one);
        off += (128 + pay + 63) / 64 * 64;
    }
    TU_EQ_U(off, len);

    tmpdir_remove(&d);
    free(img);
    bg_filter_free(f);

    /* Non-scaling and blocked stacks too. */
    for (int kind = 0; kind < 2; kind++) {
        tu_ctx("kind %d", kind);
        f = tu_scalable((bg_filter_options){
            .capacity = 300, .error_rate = 0.02, .nonscaling = kind == 0,
            .layer_variant = kind == 1 ? BG_VARIANT_BLOCKED : 0, .expansion = kind == 1 ? 3 : 0,
            .tightening = kind == 1 ? 0.7 : 0, .max_layers = kind == 1 ? 6 : 0});
        uint64_t n = kind == 0 ? 250 : 3000;
        tu_scalable_add_range(f, SET_ADDED, 0, n);
        img = encode(f, &len);
        bg_filter *g;
        TU_EQ_I(bg_filter_decode(&g, img, len, 0), BG_OK);
        assert_same(f, g, n);
        size_t glen;
        uint8_t *gimg = encode(g, &glen);
        TU_EQ_U(glen, len);
        assert_memory_equal(gimg, img, len);
        free(gimg);
        bg_filter_free(g);
        free(img);
        bg_filter_free(f);
    }
}

/* ---- golden bytes and malformed containers ------------------------------- */

/* Standard layers, n0 = 2, p = 0.01, seed 42, keys "alice", "bob" (layer 0,
 * then full), "carol" (layer 1, capacity 4): 128 + 2 x 192 bytes. */
static const uint8_t golden2[512] = {
    0x89, 0x42, 0x47, 0x46, 0x0d, 0x0a, 0x1a, 0x0a, 0x02, 0x00, 0x80, 0x00,
    0x04, 0x01, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0x3f, 0x7b, 0x14, 0xae, 0x47,
    0xe1, 0x7a, 0x84, 0x3f, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xd5, 0x6d, 0x33, 0xd4, 0x33, 0xbe, 0x10, 0xe2, 0x89, 0x42, 0x47, 0x46,
    0x0d, 0x0a, 0x1a, 0x0a, 0x01, 0x00, 0x80, 0x00, 0x01, 0x01, 0x00, 0x00,
    0x16, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x2c, 0x23, 0xd9, 0xb8, 0x8b, 0x0a, 0xce, 0xc8,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x89, 0x42, 0x47, 0x46,
    0x0d, 0x0a, 0x1a, 0x0a, 0x01, 0x00, 0x80, 0x00, 0x01, 0x01, 0x00, 0x00,
    0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x80, 0x08, 0x49, 0x00, 0x00, 0xaa, 0x80, 0x08,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

/* The filter golden2 holds, decoded. A fresh stack of n0 = 2 no longer
 * comes out this small: scaling layers now get at least 1024 bits
 * (scalable.c MARGINS). The bytes pin the format, which did not
 * change: golden2 was made by this code's encoder from the adds above, and
 * its fields are checked one by one against docs/FORMAT.md below. */
static bg_filter *golden_filter(void)
{
    bg_filter *f = NULL;
    TU_EQ_I(bg_filter_decode(&f, golden2, sizeof golden2, 0), BG_OK);
    TU_EQ_U(tu_layers_of(f), 2);
    TU_EQ_I(bg_filter_contains(f, "alice", 5), 1);
    TU_EQ_I(bg_filter_contains(f, "bob", 3), 1);
    TU_EQ_I(bg_filter_contains(f, "carol", 5), 1);
    return f;
}

/* Any change to these bytes is a format change: a new version, with golden
 * bytes beside these. */
static void golden_bytes(void **state)
{
    (void)state;
    bg_filter *f = golden_filter();
    size_t len;
    uint8_t *img = encode(f, &len); /* decode, then encode: the same bytes */
    TU_EQ_U(len, sizeof golden2);
    if (memcmp(img, golden2, len) != 0) {
        for (size_t i = 0; i < len; i++)
            print_message("0x%02x,%s", img[i], i % 12 == 11 ? "\n" : " ");
        print_message("\n");
    }
    assert_memory_equal(img, golden2, len);
    free(img);

    /* The fields where docs/FORMAT.md puts them. */
    const uint8_t *g = golden2;
    assert_memory_equal(g, "\x89" "BGF\r\n\x1a\n", 8);
    TU_EQ_U(le64(g + 8) & 0xffff, 2);               /* version */
    TU_EQ_U(le64(g + 10) & 0xffff, 128);            /* header bytes */
    TU_EQ_U(g[12], BG_VARIANT_SCALABLE);
    TU_EQ_U(g[13], BG_FILE_HASH_XXH3_128);
    TU_EQ_U(le64(g + 14) & 0xffff, 0);              /* flags */
    TU_EQ_U(le64(g + 16) & 0xffffffff, 2);          /* layers */
    TU_EQ_U(le64(g + 20) & 0xffffffff, 2);          /* expansion */
    TU_EQ_U(le64(g + 24), UINT64_C(0x3fe0000000000000)); /* tightening 0.5 */
    double p;
    uint64_t pb = le64(g + 32);
    memcpy(&p, &pb, 8);
    TU_EQ_D(p, 0.01);
    TU_EQ_U(le64(g + 40), 42);                      /* seed */
    TU_EQ_U(le64(g + 48), 2);                       /* n0 */
    TU_EQ_U(le64(g + 56), 3);                       /* items */
    TU_EQ_U(le64(g + 64) & 0xffffffff, BG_MAX_LAYERS);
    TU_EQ_U(g[68], BG_VARIANT_STANDARD);
    TU_EQ_U(le64(g + 72), BG_DEFAULT_MAX_BYTES);
    TU_EQ_U(le64(g + 80), 128);                     /* first layer */
    TU_EQ_U(le64(g + 88), 512);                     /* total */
    for (unsigned i = 96; i < 120; i++)
        TU_EQ_U(g[i], 0);
    /* Layer 0 at 128 and layer 1 at 320: version-1 headers, checksum 0. */
    for (unsigned l = 0; l < 2; l++) {
        const uint8_t *h = g + 128 + 192 * l;
        assert_memory_equal(h, "\x89" "BGF\r\n\x1a\n", 8);
        TU_EQ_U(le64(h + 8) & 0xffff, 1);
        TU_EQ_U(h[12], BG_VARIANT_STANDARD);
        TU_EQ_U(le64(h + 24), 64);                  /* m */
        TU_EQ_U(le64(h + 32), 42);                  /* seed */
        TU_EQ_U(le64(h + 40), l ? 4 : 2);           /* capacity */
        TU_EQ_U(le64(h + 48), l ? 1 : 2);           /* items */
        TU_EQ_U(le64(h + 56), 128);
        TU_EQ_U(le64(h + 64), 8);                   /* payload bytes */
        TU_EQ_U(le64(h + 120), 0);                  /* checksum: the container's */
        for (unsigned i = 136; i < 192; i++)
            TU_EQ_U(h[i], 0);                       /* padding */
    }
    uint64_t sum;
    {
        XXH3_state_t st;
        XXH3_INITSTATE(&st);
        XXH3_64bits_reset(&st);
        XXH3_64bits_update(&st, g, 120);
        XXH3_64bits_update(&st, g + 128, 512 - 128);
        sum = XXH3_64bits_digest(&st);
    }
    TU_EQ_U(le64(g + 120), sum);

    bg_file_info info;
    TU_EQ_I(bg_file_inspect_buffer(g, sizeof golden2, 0, &info), BG_OK);
    TU_EQ_U(info.version, 2);
    TU_EQ_U(info.variant, BG_VARIANT_SCALABLE);
    TU_EQ_U(info.bits, 128);
    TU_EQ_U(info.capacity, 6);
    TU_EQ_U(info.items, 3);
    TU_EQ_U(info.layers, 2);
    TU_EQ_U(info.payload_offset, 256);
    TU_EQ_U(info.payload_bytes, 16);
    TU_EQ_U(info.checksum, sum);
    TU_EQ_U(info.hashes, bg_filter_hashes(f));
    bg_filter *g2;
    TU_EQ_I(bg_filter_decode(&g2, g, sizeof golden2, 0), BG_OK);
    TU_EQ_I(bg_filter_contains(g2, "alice", 5), 1);
    TU_EQ_I(bg_filter_contains(g2, "bob", 3), 1);
    TU_EQ_I(bg_filter_contains(g2, "carol", 5), 1);
    TU_EQ_I(bg_filter_test_and_add(g2, "carol", 5), 0);
    bg_filter_free(g2);
    bg_filter_free(f);
}

static uint64_t double_bits(double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    return v;
}

/* Stores the checksum the bytes deserve, so that a changed field, not the
 * checksum, decides the status. */
static void fix_checksum(uint8_t *buf, size_t len)
{
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, buf, 120);
    XXH3_64bits_update(&st, buf + 128, len - 128);
    tu_put_le(buf + 120, XXH3_64bits_digest(&st), 8);
}

/* The status of buf[0, len) through decode and inspect_buffer (which must
 * agree), and, when `files`, through load, map and inspect of a file holding
 * it. A failure allocates nothing (the counting allocator is installed). */
static tmpdir *files;

static int status_of(const uint8_t *buf, size_t len, unsigned flags)
{
    fa_reset(0);
    bg_filter *f = (bg_filter *)&f;
    int rc = bg_filter_decode(&f, buf, len, flags);
    if (rc == BG_OK) {
        if (bg_filter_variant(f) == BG_VARIANT_SCALABLE)
            tu_check_layers(f);
        bg_filter_free(f);
    } else {
        TU_TRUE(f == NULL);
        TU_EQ_I(fa.calls, 0);
    }
    bg_file_info info;
    TU_EQ_I(bg_file_inspect_buffer(buf, len, flags, &info), rc);
    if (files) {
        write_bytes(files->file, buf, len);
        TU_EQ_I(bg_file_inspect(files->file, flags, &info), rc);
        bg_filter *lf = (bg_filter *)&lf, *mf = (bg_filter *)&mf;
        /* Load checks the checksum as it reads into the arrays: only a
         * damaged checksum comes after an allocation. */
        long calls = fa.calls;
        TU_EQ_I(bg_filter_load(&lf, files->file, flags), rc);
        if (rc != BG_OK)
            TU_TRUE(lf == NULL && (fa.calls == calls || rc == BG_ECHECKSUM));
        calls = fa.calls;
        TU_EQ_I(bg_filter_map(&mf, files->file, flags), rc);
        if (rc != BG_OK)
            TU_TRUE(mf == NULL && fa.calls == calls);
        bg_filter_free(lf);
        bg_filter_free(mf);
    }
    TU_EQ_I(fa.live, 0);
    return rc;
}

/* golden2 with one field changed, checksum recomputed. */
static int field_status(unsigned off, uint64_t value, unsigned width)
{
    uint8_t buf[sizeof golden2];
    memcpy(buf, golden2, sizeof buf);
    tu_put_le(buf + off, value, width);
    fix_checksum(buf, sizeof buf);
    return status_of(buf, sizeof buf, 0);
}

static void malformed_containers(void **state)
{
    (void)state;
    TU_EQ_I(bg_set_allocator(&fa_allocator), BG_OK);
    tmpdir d;
    tmpdir_make(&d);
    files = &d;
    const size_t len = sizeof golden2;
    uint8_t buf[sizeof golden2 + 64];

    tu_ctx("intact");
    TU_EQ_I(status_of(golden2, len, 0), BG_OK);

    tu_ctx("every truncation");
    for (size_t n = 0; n < len; n++)
        TU_EQ_I(status_of(golden2, n, 0), BG_ETRUNC);

    tu_ctx("trailing bytes");
    memcpy(buf, golden2, len);
    memset(buf + len, 0, 64);
    TU_EQ_I(status_of(buf, len + 1, 0), BG_ETRAILING);
    TU_EQ_I(status_of(buf, len + 64, BG_FILE_NO_VERIFY), BG_ETRAILING);

    tu_ctx("padding");
    for (unsigned off = 264; off < 512; off++) {
        if (off >= 320 && off < 456)
            continue; /* layer 1's header and payload */
        memcpy(buf, golden2, len);
        buf[off] = 0x01;
        fix_checksum(buf, len);
        TU_EQ_I(status_of(buf, len, 0), BG_ECORRUPT);
        TU_EQ_I(status_of(buf, len, BG_FILE_NO_VERIFY), BG_ECORRUPT);
    }

    tu_ctx("checksum");
    memcpy(buf, golden2, len);
    buf[120] ^= 0x01;
    TU_EQ_I(status_of(buf, len, 0), BG_ECHECKSUM);
    TU_EQ_I(status_of(buf, len, BG_FILE_NO_VERIFY), BG_OK);
    files = NULL; /* 400 flips: buffers only */
    for (size_t i = 0; i < len; i++) {
        if (i >= 120 && i < 128)
            continue;
        memcpy(buf, golden2, len);
        buf[i] ^= 0x01;
        int rc = status_of(buf, len, 0);
        TU_TRUE(rc == BG_ECHECKSUM || rc == BG_EBADMAGIC || rc == BG_EVERSION ||
                rc == BG_ECORRUPT || rc == BG_EVARIANT || rc == BG_ETRUNC ||
                rc == BG_ETRAILING || rc == BG_ETOOBIG);
        bool payload = (i >= 256 && i < 264) || (i >= 448 && i < 456);
        if (payload) {
            TU_EQ_I(rc, BG_ECHECKSUM);
            TU_EQ_I(status_of(buf, len, BG_FILE_NO_VERIFY), BG_OK);
        }
    }
    files = &d;

    tu_ctx("versions");
    TU_EQ_I(field_status(8, 3, 2), BG_EVERSION);
    TU_EQ_I(field_status(12, BG_VARIANT_STANDARD, 1), BG_EVERSION); /* v2 is scalable only */
    TU_EQ_I(status_of(golden2, 12, 0), BG_ETRUNC);
    /* Version 1 does not know variant 4 (a v1 image relabelled). */
    bg_filter *v1;
    bg_filter_options o1 = {.variant = BG_VARIANT_STANDARD, .bits = 512, .hashes = 3};
    TU_EQ_I(bg_filter_new(&v1, &o1), BG_OK);
    size_t v1len;
    uint8_t *v1img = encode(v1, &v1len);
    TU_EQ_I(status_of(v1img, v1len, 0), BG_OK);
    v1img[12] = BG_VARIANT_SCALABLE;
    fix_checksum(v1img, v1len);
    TU_EQ_I(status_of(v1img, v1len, 0), BG_EVARIANT);
    free(v1img);
    bg_filter_free(v1);
    /* The container's own header with version 1: its fields are not
     * version 1's. */
    memcpy(buf, golden2, len);
    buf[8] = 1;
    fix_checksum(buf, len);
    TU_EQ_I(status_of(buf, len, 0), BG_ECORRUPT);

    tu_ctx("container fields");
    TU_EQ_I(field_status(10, 64, 2), BG_ECORRUPT);                 /* header bytes */
    TU_EQ_I(field_status(13, 2, 1), BG_ECORRUPT);                  /* hash */
    TU_EQ_I(field_status(14, 2, 2), BG_ECORRUPT);                  /* unknown flag */
    TU_EQ_I(field_status(14, 1, 2), BG_ECORRUPT);                  /* non-scaling, 2 layers */
    TU_EQ_I(field_status(16, 0, 4), BG_ECORRUPT);                  /* layer count 0 */
    TU_EQ_I(field_status(16, 1, 4), BG_ECORRUPT);                  /* 1: lengths disagree */
    TU_EQ_I(field_status(16, 3, 4), BG_ECORRUPT);                  /* 3: past the end */
    TU_EQ_I(field_status(16, 65, 4), BG_ECORRUPT);                 /* > max layers */
    TU_EQ_I(field_status(64, 1, 4), BG_ECORRUPT);                  /* max layers 1 < 2 */
    TU_EQ_I(field_status(64, 0, 4), BG_ECORRUPT);
    TU_EQ_I(field_status(64, 65, 4), BG_ECORRUPT);
    TU_EQ_I(field_status(20, 0, 4), BG_ECORRUPT);                  /* expansion 0, scaling */
    TU_EQ_I(field_status(20, BG_MAX_EXPANSION + 1, 4), BG_ECORRUPT);
    TU_EQ_I(field_status(20, 3, 4), BG_ECORRUPT);                  /* layer 1: 6, not 4 */
    const double bad_doubles[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -0.5, 2.0};
    for (size_t i = 0; i < sizeof bad_doubles / sizeof bad_doubles[0]; i++) {
        tu_ctx("double %g", bad_doubles[i]);
        TU_EQ_I(field_status(24, double_bits(bad_doubles[i]), 8), BG_ECORRUPT); /* tightening */
        TU_EQ_I(field_status(32, double_bits(bad_doubles[i]), 8), BG_ECORRUPT); /* p */
    }
    tu_ctx("container fields");
    TU_EQ_I(field_status(24, double_bits(0.25), 8), BG_OK); /* unused by the layers' check */
    TU_EQ_I(field_status(32, double_bits(0.5), 8), BG_OK);
    TU_EQ_I(field_status(40, 43, 8), BG_ECORRUPT);                 /* seed vs the layers' */
    TU_EQ_I(field_status(48, 0, 8), BG_ECORRUPT);                  /* n0 0 */
    TU_EQ_I(field_status(48, 3, 8), BG_ECORRUPT);                  /* n0 vs layer capacity */
    TU_EQ_I(field_status(56, 4, 8), BG_ECORRUPT);                  /* items vs the layers */
    TU_EQ_I(field_status(68, 0, 1), BG_EVARIANT);                  /* layer variant */
    TU_EQ_I(field_status(68, BG_VARIANT_COUNTING, 1), BG_EVARIANT);
    TU_EQ_I(field_status(68, 9, 1), BG_EVARIANT);
    TU_EQ_I(field_status(68, BG_VARIANT_BLOCKED, 1), BG_ECORRUPT); /* layers are standard */
    TU_EQ_I(field_status(69, 1, 1), BG_ECORRUPT);                  /* reserved */
    TU_EQ_I(field_status(71, 1, 1), BG_ECORRUPT);
    TU_EQ_I(field_status(72, 0, 8), BG_ECORRUPT);                  /* max bytes 0 */
    TU_EQ_I(field_status(72, 15, 8), BG_ECORRUPT);                 /* < the layers' 16 */
    TU_EQ_I(field_status(72, 16, 8), BG_OK);
    TU_EQ_I(field_status(80, 192, 8), BG_ECORRUPT);                /* first layer offset */
    TU_EQ_I(field_status(88, 576, 8), BG_ETRUNC);                  /* total length */
    TU_EQ_I(field_status(88, 448, 8), BG_ETRAILING);
    TU_EQ_I(field_status(88, 100, 8), BG_ECORRUPT);
    TU_EQ_I(field_status(96, 1, 1), BG_ECORRUPT);                  /* reserved */
    TU_EQ_I(field_status(119, 1, 1), BG_ECORRUPT);

    tu_ctx("layer fields");
    for (unsigned l = 0; l < 2; l++) {
        unsigned h = 128 + 192 * l;
        TU_EQ_I(field_status(h + 1, 'b', 1), BG_ECORRUPT);         /* magic */
        TU_EQ_I(field_status(h + 8, 2, 2), BG_ECORRUPT);           /* nested version 2 */
        TU_EQ_I(field_status(h + 12, BG_VARIANT_BLOCKED, 1), BG_ECORRUPT); /* m % 512 */
        TU_EQ_I(field_status(h + 12, 9, 1), BG_EVARIANT);
        TU_EQ_I(field_status(h + 16, 0, 4), BG_ECORRUPT);          /* k */
        TU_EQ_I(field_status(h + 24, 128, 8), BG_ECORRUPT);        /* m vs payload bytes */
        TU_EQ_I(field_status(h + 32, 43, 8), BG_ECORRUPT);         /* seed */
        TU_EQ_I(field_status(h + 40, l ? 8 : 4, 8), BG_ECORRUPT);  /* capacity */
        TU_EQ_I(field_status(h + 56, 192, 8), BG_ECORRUPT);        /* payload offset */
        TU_EQ_I(field_status(h + 100, 1, 1), BG_ECORRUPT);         /* reserved */
        TU_EQ_I(field_status(h + 120, 1, 8), BG_ECORRUPT);         /* its checksum: 0 */
    }
    /* Layer 0 not full, though layer 1 exists (items consistent otherwise). */
    memcpy(buf, golden2, len);
    tu_put_le(buf + 128 + 48, 1, 8);
    tu_put_le(buf + 56, 2, 8);
    fix_checksum(buf, len);
    TU_EQ_I(status_of(buf, len, 0), BG_ECORRUPT);
    /* More items in layer 0 than its capacity is fine (threads overshoot). */
    memcpy(buf, golden2, len);
    tu_put_le(buf + 128 + 48, 5, 8);
    tu_put_le(buf + 56, 6, 8);
    fix_checksum(buf, len);
    TU_EQ_I(status_of(buf, len, 0), BG_OK);
    /* Item counts that overflow when summed. */
    memcpy(buf, golden2, len);
    tu_put_le(buf + 128 + 48, UINT64_MAX, 8);
    tu_put_le(buf + 56, 0, 8);
    fix_checksum(buf, len);
    TU_EQ_I(status_of(buf, len, 0), BG_ECORRUPT);
    /* A layer announcing more bytes than the container has. */
    memcpy(buf, golden2, len);
    tu_put_le(buf + 320 + 24, UINT64_C(1) << 40, 8);
    tu_put_le(buf + 320 + 64, UINT64_C(1) << 37, 8);
    fix_checksum(buf, len);
    TU_EQ_I(status_of(buf, len, 0), BG_ECORRUPT);
    TU_TRUE(fa.largest < 4096);

    tu_ctx("arguments");
    bg_filter *f;
    TU_EQ_I(bg_filter_decode(NULL, golden2, len, 0), BG_EINVAL);
    TU_EQ_I(bg_filter_decode(&f, golden2, len, 1u << 7), BG_EINVAL);

    files = NULL;
    tmpdir_remove(&d);
    TU_EQ_I(bg_set_allocator(NULL), BG_OK);
}

/* Fail each allocation in turn while making, growing, decoding, loading and
 * mapping scalable filters: a clean BG_ENOMEM, nothing added, nothing
 * leaked. */
static void allocation_failures(void **state)
{
    (void)state;
    TU_EQ_I(bg_set_allocator(&fa_allocator), BG_OK);
    tmpdir d;
    tmpdir_make(&d);
    write_bytes(d.file, golden2, sizeof golden2);
    for (int what = 0; what < 4; what++) {
        tu_ctx("what %d", what);
        for (long n = 1;; n++) {
            fa_reset(n);
            bg_filter *f = (bg_filter *)&f;
            int rc;
            if (what == 0) {
                bg_filter_options o = {.variant = BG_VARIANT_SCALABLE, .capacity = 2,
                                       .error_rate = 0.01, .seed = 42};
                rc = bg_filter_new(&f, &o);
            } else if (what == 1) {
                rc = bg_filter_decode(&f, golden2, sizeof golden2, 0);
            } else if (what == 2) {
                rc = bg_filter_load(&f, d.file, 0);
            } else {
                rc = bg_filter_map(&f, d.file, 0);
            }
            if (fa.failed == 0) {
                TU_EQ_I(rc, BG_OK);
                bg_filter_free(f);
                TU_EQ_I(fa.live, 0);
                break;
            }
            TU_EQ_I(rc, BG_ENOMEM);
            TU_TRUE(f == NULL);
            TU_EQ_I(fa.live, 0);
        }
    }

    tu_ctx("growth");
    for (long n = 1;; n++) {
        fa_reset(0);
        bg_filter *f = golden_filter(); /* layer 1 holds 1 of 4 */
        TU_EQ_I(tu_add_key(f, SET_ADDED, 0), 1);
        TU_EQ_I(tu_add_key(f, SET_ADDED, 1), 1);
        TU_EQ_I(tu_add_key(f, SET_ADDED, 2), 1);
        uint64_t items = bg_filter_items(f);
        fa.fail_at = fa.calls + n;
        int rc = tu_add_key(f, SET_ADDED, 3); /* opens layer 2 */
        if (fa.failed == 0) {
            TU_EQ_I(rc, 1);
            TU_EQ_U(tu_layers_of(f), 3);
            bg_filter_free(f);
            TU_EQ_I(fa.live, 0);
            break;
        }
        TU_EQ_I(rc, BG_ENOMEM);
        TU_EQ_U(tu_layers_of(f), 2);
        TU_EQ_U(bg_filter_items(f), items);
        TU_EQ_I(tu_has_key(f, SET_ADDED, 3), 0);
        /* Not remembered: memory may come back. */
        TU_EQ_I(tu_add_key(f, SET_ADDED, 3), 1);
        TU_EQ_U(tu_layers_of(f), 3);
        bg_filter_free(f);
        TU_EQ_I(fa.live, 0);
    }
    tmpdir_remove(&d);
    TU_EQ_I(bg_set_allocator(NULL), BG_OK);
}


/* ---- version 4: a first share, mixed layers --------------------------------- */

/* buf (a version-4 image of len bytes) with one field changed, checksum
 * recomputed. */
static int v4_field_status(const uint8_t *img, size_t len, unsigned off, uint64_t value,
                           unsigned width)
{
    uint8_t *buf = malloc(len);
    TU_TRUE(buf != NULL);
    memcpy(buf, img, len);
    tu_put_le(buf + off, value, width);
    fix_checksum(buf, len);
    int rc = status_of(buf, len, 0);
    free(buf);
    return rc;
}

/* A stack with a first share and blocked layers above standard ones is
 * version 4: the same bytes back through decode, load and map, its
 * schedule and layer variants kept, grown on after a load; a stack
 * version 2 can state stays version 2; the new fields are checked
 * (range, layer variants, one image per filter). */
static void split_containers(void **state)
{
    (void)state;
    const uint64_t keys = 3000;
    bg_filter *f = tu_scalable((bg_filter_options){.capacity = 50, .error_rate = 0.01,
                                                   .seed = 12, .first_share = 0.5,
                                                   .tightening = 0.9, .blocked_from = 2});
    tu_scalable_add_range(f, SET_ADDED, 0, keys);
    uint32_t layers = tu_layers_of(f);
    TU_TRUE(layers >= 5);
    size_t len;
    uint8_t *img = encode(f, &len);
    TU_EQ_U(le64(img + 8) & 0xffff, 4);
    TU_EQ_U(le64(img + 96), double_bits(0.5));
    TU_EQ_U(le64(img + 104), 2); /* blocked from, then 12 zero bytes */
    TU_EQ_U(img[68], BG_VARIANT_STANDARD);

    tmpdir d;
    tmpdir_make(&d);
    TU_EQ_I(bg_filter_save(f, d.file), BG_OK);
    bg_file_info info;
    TU_EQ_I(bg_file_inspect(d.file, 0, &info), BG_OK);
    TU_EQ_U(info.version, 4);
    TU_EQ_U(info.layers, layers);
    TU_EQ_D(info.scaling.first_share, 0.5);
    TU_EQ_D(info.scaling.tightening, 0.9);
    TU_EQ_U(info.scaling.blocked_from, 2);
    uint64_t total;
    TU_EQ_I(bg_file_image_size(img, 128, &total), BG_OK);
    TU_EQ_U(total, len);

    bg_filter *copies[3] = {NULL, NULL, NULL};
    TU_EQ_I(bg_filter_decode(&copies[0], img, len, 0), BG_OK);
    TU_EQ_I(bg_filter_load(&copies[1], d.file, 0), BG_OK);
    TU_EQ_I(bg_filter_map(&copies[2], d.file, 0), BG_OK);
    for (int c = 0; c < 3; c++) {
        tu_ctx("copy %d", c);
        size_t clen;
        uint8_t *cimg = encode(copies[c], &clen);
        TU_EQ_U(clen, len);
        assert_memory_equal(cimg, img, len);
        free(cimg);
        assert_same(f, copies[c], keys);
        bg_filter_scaling sc;
        TU_EQ_I(bg_filter_scaling_get(copies[c], &sc), BG_OK);
        TU_EQ_D(sc.first_share, 0.5);
        TU_EQ_U(sc.blocked_from, 2);
        tu_check_layers(copies[c]);
    }
    tu_ctx("loaded: grows on");
    tu_scalable_add_range(copies[1], SET_MORE, 0, 20000);
    TU_EQ_U(tu_layers_of(copies[1]), tu_expected_layers(50, 2, bg_filter_items(copies[1])));
    tu_check_layers(copies[1]);
    TU_EQ_U(tu_scalable_count_present(copies[1], SET_ADDED, 0, keys), keys);
    for (int c = 0; c < 3; c++)
        bg_filter_free(copies[c]);
    tmpdir_remove(&d);

    tu_ctx("version 2 when it can state the filter");
    bg_filter *plain = tu_scalable((bg_filter_options){.capacity = 50, .error_rate = 0.01,
                                                       .tightening = 0.9,
                                                       .first_share = 1.0 - 0.9});
    size_t plen;
    uint8_t *pimg = encode(plain, &plen);
    TU_EQ_U(pimg[8], 2); /* the share is 1 - tightening: the classic schedule */
    free(pimg);
    bg_filter_free(plain);

    tu_ctx("fields");
    TU_EQ_I(bg_set_allocator(&fa_allocator), BG_OK);
    files = NULL;
    TU_EQ_I(status_of(img, len, 0), BG_OK);
    TU_EQ_I(v4_field_status(img, len, 96, 0, 8), BG_ECORRUPT);                   /* share 0 */
    TU_EQ_I(v4_field_status(img, len, 96, double_bits(1.0), 8), BG_ECORRUPT);     /* share 1 */
    TU_EQ_I(v4_field_status(img, len, 96, double_bits(-0.5), 8), BG_ECORRUPT);
    TU_EQ_I(v4_field_status(img, len, 96, double_bits(NAN), 8), BG_ECORRUPT);
    TU_EQ_I(v4_field_status(img, len, 104, 1, 4), BG_ECORRUPT);   /* layer 1 is standard */
    TU_EQ_I(v4_field_status(img, len, 104, 3, 4), BG_ECORRUPT);   /* layer 2 is blocked */
    TU_EQ_I(v4_field_status(img, len, 104, 64, 4), BG_ECORRUPT);  /* past max layers */
    TU_EQ_I(v4_field_status(img, len, 68, BG_VARIANT_BLOCKED, 1), BG_ECORRUPT); /* blocked under */
    for (unsigned off = 108; off < 120; off++)
        TU_EQ_I(v4_field_status(img, len, off, 1, 1), BG_ECORRUPT); /* reserved */
    TU_EQ_I(v4_field_status(img, len, 8, 2, 2), BG_ECORRUPT);     /* v2 has no such fields */
    TU_EQ_I(v4_field_status(img, len, 8, 5, 2), BG_EVERSION);
    TU_EQ_I(v4_field_status(img, len, 12, BG_VARIANT_REDISBLOOM, 1), BG_EVERSION);
    /* The share version 2 implies, with no blocked layer: version 2's
     * filter, so version 2's image. Layers all standard for this one. */
    bg_filter *s2 = tu_scalable((bg_filter_options){.capacity = 50, .error_rate = 0.01,
                                                    .first_share = 0.5, .tightening = 0.9});
    tu_scalable_add_range(s2, SET_ADDED, 0, 500);
    size_t s2len;
    uint8_t *s2img = encode(s2, &s2len);
    TU_EQ_U(s2img[8], 4);
    TU_EQ_I(status_of(s2img, s2len, 0), BG_OK);
    TU_EQ_I(v4_field_status(s2img, s2len, 96, double_bits(1.0 - 0.9), 8), BG_ECORRUPT);
    TU_EQ_I(v4_field_status(s2img, s2len, 96, double_bits(0.3), 8), BG_OK); /* shapes are stored */
    free(s2img);
    bg_filter_free(s2);
    TU_EQ_I(bg_set_allocator(NULL), BG_OK);

    free(img);
    bg_filter_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(golden_bytes),
        cmocka_unit_test(round_trip),
        cmocka_unit_test(malformed_containers),
        cmocka_unit_test(split_containers),
        cmocka_unit_test(allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
