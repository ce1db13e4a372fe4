/* SPDX-License-Identifier: BSD-3-Clause */
/* Pieces of a filter's file image and copies of a filter
 * (<bloomgate/file.h>, <bloomgate/filter.h>): bg_filter_encode_range
 * reassembles the image; bg_file_image_size reads the size from the header
 * alone; bg_filter_clone gives what the image decodes to, and fails cleanly
 * when an allocation does. The format itself is test_file.c. */
#include "test_util.h"
#include "test_alloc.h"
#include "test_tmpdir.h"
#include "test_file_golden.h"
#include "test_filter_util.h"

#include <string.h>
#include <unistd.h>

/* ---- pieces of an image: bg_filter_encode_range, bg_file_image_size ---- */

/* A filter of each shape a file can hold, with keys, into *f and its whole
 * image (malloc'd) into *img, *len. */
static const bg_filter_options piece_shapes[] = {
    {.variant = BG_VARIANT_STANDARD, .bits = 100, .hashes = 3, .seed = 7},
    {.variant = BG_VARIANT_STANDARD, .capacity = 3000, .error_rate = 0.01, .seed = 8},
    {.variant = BG_VARIANT_BLOCKED, .capacity = 2000, .error_rate = 0.001, .seed = 9},
    {.variant = BG_VARIANT_COUNTING, .bits = 1001, .hashes = 4, .seed = 10},
    {.variant = BG_VARIANT_SCALABLE, .capacity = 10, .error_rate = 0.01, .seed = 11},
    {.variant = BG_VARIANT_SCALABLE, .capacity = 50, .error_rate = 0.001, .seed = 12,
     .layer_variant = BG_VARIANT_BLOCKED, .expansion = 4},
    {.variant = BG_VARIANT_SCALABLE, .capacity = 100, .error_rate = 0.01, .seed = 13,
     .nonscaling = 1},
};
#define N_PIECE_SHAPES (sizeof piece_shapes / sizeof piece_shapes[0])

static bg_filter *piece_filter(size_t shape, uint8_t **img, size_t *len)
{
    bg_filter *f;
    TU_EQ_I(bg_filter_new(&f, &piece_shapes[shape]), BG_OK);
    uint8_t key[TU_DISTINCT_LEN];
    for (uint64_t i = 0; i < 700; i++) {
        size_t n = tu_key_distinct(shape, i, key);
        int rc = bg_filter_add(f, key, n);
        if (rc == BG_EFULL)
            break;
        TU_EQ_I(rc, BG_OK);
    }
    uint64_t size;
    TU_EQ_I(bg_filter_encoded_size(f, &size), BG_OK);
    *img = malloc((size_t)size);
    assert_non_null(*img);
    TU_EQ_I(bg_filter_encode(f, *img, (size_t)size, len), BG_OK);
    TU_EQ_U(*len, size);
    return f;
}

/* Every split of an image into ranges, at random points, gives back its
 * bytes; so do ranges around each segment boundary and the checksum. */
static void encode_range_reassembles(void **state)
{
    (void)state;
    uint64_t rng = 42;
    for (size_t sh = 0; sh < N_PIECE_SHAPES; sh++) {
        uint8_t *img;
        size_t len;
        bg_filter *f = piece_filter(sh, &img, &len);
        bg_filter_stats st;
        TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
        if (sh == 4)
            TU_TRUE(st.layers >= 5); /* several layers, as meant */
        uint8_t *out = malloc(len + 1);
        assert_non_null(out);
        for (int split = 0; split < 40; split++) {
            tu_ctx("shape %zu (%zu bytes), split %d", sh, len, split);
            memset(out, 0xa5, len + 1);
            /* Small pieces for some splits, large for others. */
            uint64_t most = split % 4 == 0 ? 7 : split % 4 == 1 ? 64 : split % 4 == 2 ? 300 : len;
            for (size_t at = 0; at < len;) {
                size_t n = (size_t)(tu_next(&rng) % most) + (split % 5 == 0 ? 0 : 1);
                if (n > len - at)
                    n = len - at;
                TU_EQ_I(bg_filter_encode_range(f, at, out + at, n), BG_OK);
                at += n;
            }
            assert_memory_equal(out, img, len);
            TU_EQ_U(out[len], 0xa5); /* nothing written past the range */
        }
        tu_ctx("shape %zu: single ranges", sh);
        /* Ranges starting or ending at each byte around the checksum and
         * the first boundaries, one at a time. */
        for (uint64_t a = 110; a < 200 && a < len; a++) {
            for (uint64_t b = a; b < a + 24 && b <= len; b++) {
                memset(out, 0xa5, len);
                TU_EQ_I(bg_filter_encode_range(f, a, out, (size_t)(b - a)), BG_OK);
                assert_memory_equal(out, img + a, (size_t)(b - a));
            }
        }
        tu_ctx("shape %zu: bounds", sh);
        TU_EQ_I(bg_filter_encode_range(f, 0, out, len), BG_OK);
        assert_memory_equal(out, img, len);
        TU_EQ_I(bg_filter_encode_range(f, len, out, 0), BG_OK);
        TU_EQ_I(bg_filter_encode_range(f, len, NULL, 0), BG_OK);
        TU_EQ_I(bg_filter_encode_range(f, 0, out, len + 1), BG_EINVAL);
        TU_EQ_I(bg_filter_encode_range(f, len - 1, out, 2), BG_EINVAL);
        TU_EQ_I(bg_filter_encode_range(f, len + 1, out, 0), BG_EINVAL);
        TU_EQ_I(bg_filter_encode_range(f, UINT64_MAX, out, 1), BG_EINVAL);
        TU_EQ_I(bg_filter_encode_range(f, 1, out, SIZE_MAX), BG_EINVAL);
        TU_EQ_I(bg_filter_encode_range(f, 0, NULL, 1), BG_EINVAL);
        TU_EQ_I(bg_filter_encode_range(NULL, 0, out, 1), BG_EINVAL);

        /* Pieces taken across a change are not one image: the decoder says
         * so (the header's checksum is of the old bits; a scalable header's
         * item count no longer adds up). */
        tu_ctx("shape %zu: a change between pieces", sh);
        uint8_t head[BG_FILE_HEADER_BYTES];
        TU_EQ_I(bg_filter_encode_range(f, 0, head, sizeof head), BG_OK);
        int rc = bg_filter_add(f, "a key added in between", 22);
        if (rc == BG_OK && bg_filter_items(f) != st.items) {
            uint64_t now;
            TU_EQ_I(bg_filter_encoded_size(f, &now), BG_OK);
            if (now == len) {
                TU_EQ_I(bg_filter_encode_range(f, 0, out, len), BG_OK);
                memcpy(out, head, sizeof head);
                rc = tu_decode_status(out, len, 0);
                TU_TRUE(rc == BG_ECHECKSUM || rc == BG_ECORRUPT); /* scalable: items differ */
            }
        }
        free(out);
        free(img);
        bg_filter_free(f);
    }
}

/* ---- bg_filter_clone ----------------------------------------------------- */

/* A clone is what the image decodes to, for every shape and both writer
 * modes: the same image at once, and after the same further adds (so a
 * scalable clone grows as the decoded filter does); the original is left
 * as it was. A mapped file's clone is writable. */
static void clone_is_the_decoded_image(void **state)
{
    (void)state;
    tu_tmpdir d;
    tu_tmpdir_make(&d, "file");
    for (size_t shape = 0; shape < N_PIECE_SHAPES; shape++)
        for (int mode = 0; mode < 2; mode++) {
            tu_ctx("clone: shape %zu, %s", shape, mode ? "single writer" : "concurrent");
            bg_filter_options o = piece_shapes[shape];
            o.concurrency = mode ? BG_SINGLE_WRITER : BG_CONCURRENT_WRITERS;
            bg_filter *f, *c, *dec;
            TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
            uint8_t key[TU_DISTINCT_LEN];
            for (uint64_t i = 0; i < 700; i++) {
                size_t n = tu_key_distinct(shape, i, key);
                TU_TRUE(bg_filter_add(f, key, n) >= 0 || o.nonscaling);
            }
            uint64_t size;
            TU_EQ_I(bg_filter_encoded_size(f, &size), BG_OK);
            uint8_t *img = malloc((size_t)size);
            assert_non_null(img);
            TU_EQ_I(bg_filter_encode(f, img, (size_t)size, NULL), BG_OK);
            TU_EQ_I(bg_filter_clone(&c, f), BG_OK);
            TU_EQ_I(bg_filter_decode(&dec, img, (size_t)size,
                                     mode ? BG_FILE_SINGLE_WRITER : 0), BG_OK);
            tu_assert_same_filter(f, c);
            for (uint64_t i = 700; i < 2000; i++) {
                size_t n = tu_key_distinct(shape, i, key);
                int a = bg_filter_add(c, key, n), b = bg_filter_add(dec, key, n);
                TU_EQ_I(a, b);
            }
            tu_assert_same_filter(c, dec);
            uint8_t *now = malloc((size_t)size);
            assert_non_null(now);
            TU_EQ_I(bg_filter_encode(f, now, (size_t)size, NULL), BG_OK);
            assert_memory_equal(img, now, (size_t)size);

            const char *path = tu_tmp_file(&d, "clone.bgf");
            TU_EQ_I(bg_filter_save(f, path), BG_OK);
            bg_filter *mapped, *mc;
            TU_EQ_I(bg_filter_map(&mapped, path, 0), BG_OK);
            TU_EQ_I(bg_filter_clone(&mc, mapped), BG_OK);
            tu_assert_same_filter(mapped, mc);
            size_t n = tu_key_distinct(shape, 5000, key);
            TU_EQ_I(bg_filter_add(mapped, key, n), BG_EREADONLY);
            int added = bg_filter_add(mc, key, n);
            TU_TRUE(added == BG_OK || (o.nonscaling && added == BG_EFULL));
            if (added == BG_OK)
                TU_EQ_I(bg_filter_contains(mc, key, n), 1);
            bg_filter_free(mc);
            bg_filter_free(mapped);
            free(img);
            free(now);
            bg_filter_free(dec);
            bg_filter_free(c);
            bg_filter_free(f);
        }
    tu_tmpdir_remove(&d);

    tu_ctx("clone: arguments");
    bg_filter *c = (bg_filter *)&c, *f;
    TU_EQ_I(bg_filter_clone(&c, NULL), BG_EINVAL);
    TU_TRUE(c == NULL);
    bg_filter_options o = {.capacity = 10, .error_rate = 0.1};
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    TU_EQ_I(bg_filter_clone(NULL, f), BG_EINVAL);
    bg_filter_free(f);
}

/* Failing each allocation of a clone in turn (a scalable filter of several
 * layers): a clean BG_ENOMEM, *out NULL, nothing leaked. */
static void clone_allocation_failure(void **state)
{
    (void)state;
    tu_ctx("clone: allocation failures");
    TU_EQ_I(bg_set_allocator(&fa_allocator), BG_OK);
    fa_reset(0);
    uint8_t *img;
    size_t len;
    bg_filter *f = piece_filter(4, &img, &len), *c;
    bg_filter_scaling sc;
    TU_EQ_I(bg_filter_scaling_get(f, &sc), BG_OK);
    TU_TRUE(sc.layers >= 3);
    long base = fa.live;
    for (long n = 1;; n++) {
        fa.calls = 0;
        fa.failed = 0;
        fa.fail_at = n;
        c = (bg_filter *)&c;
        int rc = bg_filter_clone(&c, f);
        if (fa.failed == 0) {
            TU_EQ_I(rc, BG_OK);
            tu_assert_same_filter(f, c);
            bg_filter_free(c);
            break;
        }
        TU_EQ_I(rc, BG_ENOMEM);
        TU_TRUE(c == NULL);
        TU_EQ_I(fa.live, base);
    }
    TU_EQ_I(fa.live, base);
    bg_filter_free(f);
    free(img);
    TU_EQ_I(fa.live, 0);
    TU_EQ_I(bg_set_allocator(NULL), BG_OK);
}

/* bg_file_image_size: the total from the header alone, for every shape;
 * refusals agree with the decoder; nothing is allocated. */
static void image_size_from_the_header(void **state)
{
    (void)state;
    TU_EQ_I(bg_set_allocator(&fa_allocator), BG_OK);
    fa_reset(0);
    for (size_t sh = 0; sh < N_PIECE_SHAPES; sh++) {
        tu_ctx("shape %zu", sh);
        uint8_t *img;
        size_t len;
        bg_filter *f = piece_filter(sh, &img, &len);
        fa_reset(0);
        uint64_t total = 0;
        TU_EQ_I(bg_file_image_size(img, BG_FILE_HEADER_BYTES, &total), BG_OK);
        TU_EQ_U(total, len);
        TU_EQ_I(bg_file_image_size(img, len, &total), BG_OK); /* more than the header: fine */
        TU_EQ_U(total, len);
        for (size_t n = 0; n < BG_FILE_HEADER_BYTES; n++)
            TU_EQ_I(bg_file_image_size(img, n, &total), BG_ETRUNC);
        TU_EQ_I(bg_file_image_size(NULL, 0, &total), BG_ETRUNC);
        TU_EQ_I(bg_file_image_size(NULL, 1, &total), BG_EINVAL);
        TU_EQ_I(bg_file_image_size(img, len, NULL), BG_EINVAL);

        /* Flip each header bit in turn: whatever image_size refuses, the
         * decoder refuses too (version 1: with the same status, the checks
         * being the same ones); what it accepts has the length it names. */
        uint8_t *mut = malloc(len);
        assert_non_null(mut);
        int scalable = bg_filter_variant(f) == BG_VARIANT_SCALABLE;
        for (unsigned bit = 0; bit < 8 * 120; bit++) {
            tu_ctx("shape %zu, header bit %u", sh, bit);
            memcpy(mut, img, len);
            mut[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            int rc = bg_file_image_size(mut, BG_FILE_HEADER_BYTES, &total);
            int drc = tu_decode_status(mut, len, BG_FILE_NO_VERIFY);
            if (rc != BG_OK) {
                TU_TRUE(drc != BG_OK);
                if (!scalable)
                    TU_EQ_I(drc, rc);
            } else if (drc == BG_OK) {
                TU_EQ_U(total, len);
            }
        }
        fa_reset(0);
        free(mut);

        if (scalable) {
            tu_ctx("shape %zu: implausible totals", sh);
            uint8_t head[BG_FILE_HEADER_BYTES];
            memcpy(head, img, sizeof head);
            uint32_t layers = (uint32_t)tu_le(head + 16, 4);
            uint64_t max_bytes = tu_le(head + 72, 8);
            const uint64_t bad[] = {
                0, 127, 128, len + 1, len - 63,       /* below the header, not x 64 */
                128 + 192 * (uint64_t)layers - 64,    /* too short for the layers */
                (128 + (128 + 63) * (uint64_t)layers + max_bytes + 64) / 64 * 64,
                UINT64_MAX - 63, UINT64_C(1) << 63,
            };
            for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                tu_put_le(head + 88, bad[i], 8);
                TU_EQ_I(bg_file_image_size(head, sizeof head, &total), BG_ECORRUPT);
            }
            tu_put_le(head + 88, 128 + 192 * (uint64_t)layers, 8); /* smallest plausible */
            TU_EQ_I(bg_file_image_size(head, sizeof head, &total), BG_OK);
            TU_EQ_U(total, 128 + 192 * (uint64_t)layers);
        }
        TU_EQ_I(fa.calls, 0);
        free(img);
        bg_filter_free(f);
    }
    tu_ctx("not images");
    uint64_t total;
    TU_EQ_I(bg_file_image_size("hello, world", 12, &total), BG_EBADMAGIC);
    uint8_t head[BG_FILE_HEADER_BYTES];
    memcpy(head, tu_golden_blocked, sizeof head);
    tu_put_le(head + 8, 3, 2);
    TU_EQ_I(bg_file_image_size(head, sizeof head, &total), BG_EVERSION);
    TU_EQ_I(bg_file_image_size(tu_golden_blocked, sizeof head, &total), BG_OK);
    TU_EQ_U(total, sizeof tu_golden_blocked);
    memcpy(head, tu_golden_blocked, sizeof head);
    tu_put_le(head + 24, UINT64_C(1) << 40, 8); /* a consistent header for 128 GiB */
    tu_put_le(head + 64, UINT64_C(1) << 37, 8);
    TU_EQ_I(bg_file_image_size(head, sizeof head, &total), BG_OK);
    TU_EQ_U(total, 128 + (UINT64_C(1) << 37));
    TU_EQ_I(bg_set_allocator(NULL), BG_OK);
}
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(encode_range_reassembles),
        cmocka_unit_test(image_size_from_the_header),
        cmocka_unit_test(clone_is_the_decoded_image),
        cmocka_unit_test(clone_allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
