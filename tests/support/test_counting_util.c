/* SPDX-License-Identifier: BSD-3-Clause */
/* The definitions behind test_counting_util.h (its comments say what each
 * does). */
#include "test_counting_util.h"

const bg_concurrency tu_counting_modes[2] = {BG_CONCURRENT_WRITERS, BG_SINGLE_WRITER};

const char *tu_mode_name(bg_concurrency m)
{
    return m == BG_SINGLE_WRITER ? "single-writer" : "concurrent-writers";
}

bg_filter *tu_counting_make(bg_filter_options o, bg_concurrency mode)
{
    o.variant = BG_VARIANT_COUNTING;
    o.concurrency = mode;
    bg_filter *f = NULL;
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    assert_non_null(f);
    TU_EQ_I(bg_filter_variant(f), BG_VARIANT_COUNTING);
    return f;
}

tu_image tu_image_encode(const bg_filter *f)
{
    uint64_t n;
    TU_EQ_I(bg_filter_encoded_size(f, &n), BG_OK);
    tu_image im = {malloc((size_t)n), (size_t)n};
    assert_non_null(im.buf);
    size_t written = 0;
    TU_EQ_I(bg_filter_encode(f, im.buf, im.len, &written), BG_OK);
    TU_EQ_U(written, n);
    return im;
}

void tu_image_free(tu_image *im)
{
    free(im->buf);
    im->buf = NULL;
}

const uint8_t *tu_payload(const tu_image *im)
{
    return im->buf + BG_FILE_HEADER_BYTES;
}

size_t tu_payload_len(const tu_image *im)
{
    return im->len - BG_FILE_HEADER_BYTES;
}

unsigned tu_counter(const uint8_t *p, uint64_t i)
{
    return (unsigned)(p[i / 2] >> (i % 2 ? 0 : 4)) & 15u;
}

unsigned tu_bit(const uint8_t *p, uint64_t i)
{
    return (unsigned)(p[i / 8] >> (7 - i % 8)) & 1u;
}

void tu_expect_same_payload(const bg_filter *a, const bg_filter *b)
{
    tu_image ia = tu_image_encode(a), ib = tu_image_encode(b);
    TU_EQ_U(ia.len, ib.len);
    size_t diff = 0, first = SIZE_MAX;
    for (size_t i = 0; i < tu_payload_len(&ia); i++) {
        if (tu_payload(&ia)[i] != tu_payload(&ib)[i]) {
            diff++;
            if (first == SIZE_MAX)
                first = i;
        }
    }
    if (diff)
        TU_FAIL_("payloads differ in %zu of %zu bytes (first: byte %zu, %#x != %#x)\n", diff,
                 tu_payload_len(&ia), first, tu_payload(&ia)[first], tu_payload(&ib)[first]);
    tu_image_free(&ia);
    tu_image_free(&ib);
}

bg_hash tu_hash_of(const bg_filter *f, const void *key, size_t len)
{
    bg_hash h;
    TU_EQ_I(bg_filter_hash(f, key, len, &h), BG_OK);
    return h;
}

uint64_t tu_add_range(bg_filter *f, tu_batch *b, uint64_t set, uint64_t first, uint64_t count)
{
    uint64_t added = 0;
    for (uint64_t at = 0; at < count; at += b->cap) {
        size_t n = (size_t)(count - at < b->cap ? count - at : b->cap);
        tu_batch_fill(b, 0, set, first + at, n);
        int64_t rc = bg_filter_add_many(f, b->keys, b->lens, n, NULL);
        TU_TRUE(rc >= 0);
        added += (uint64_t)rc;
    }
    return added;
}

uint64_t tu_count_present_range(const bg_filter *f, tu_batch *b, uint64_t set, uint64_t first,
                                uint64_t count)
{
    uint64_t present = 0;
    for (uint64_t at = 0; at < count; at += b->cap) {
        size_t n = (size_t)(count - at < b->cap ? count - at : b->cap);
        tu_batch_fill(b, 0, set, first + at, n);
        int64_t rc = bg_filter_contains_many(f, b->keys, b->lens, n, NULL);
        TU_TRUE(rc >= 0);
        present += (uint64_t)rc;
    }
    return present;
}
