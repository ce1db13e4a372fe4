/* SPDX-License-Identifier: BSD-3-Clause */
/* The definitions behind test_filter_util.h (its comments say what each
 * does). */
#include "test_filter_util.h"

void tu_assert_same_filter(const bg_filter *a, const bg_filter *b)
{
    uint64_t na, nb;
    TU_EQ_I(bg_filter_encoded_size(a, &na), BG_OK);
    TU_EQ_I(bg_filter_encoded_size(b, &nb), BG_OK);
    TU_EQ_U(na, nb);
    uint8_t *ia = malloc((size_t)na), *ib = malloc((size_t)nb);
    assert_non_null(ia);
    assert_non_null(ib);
    TU_EQ_I(bg_filter_encode(a, ia, (size_t)na, NULL), BG_OK);
    TU_EQ_I(bg_filter_encode(b, ib, (size_t)nb, NULL), BG_OK);
    assert_memory_equal(ia, ib, (size_t)na);
    free(ia);
    free(ib);
}

uint64_t tu_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void tu_put_le(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

int tu_decode_status(const uint8_t *buf, size_t len, unsigned flags)
{
    bg_filter *f = (bg_filter *)&f;
    int rc = bg_filter_decode(&f, buf, len, flags);
    if (rc == BG_OK) {
        bg_filter_free(f);
    } else {
        TU_TRUE(f == NULL);
    }
    bg_file_info info;
    int rc2 = bg_file_inspect_buffer(buf, len, flags, &info);
    TU_EQ_I(rc2, rc); /* the header-only check agrees */
    return rc;
}

void tu_standard_probes(bg_hash h, uint64_t m, uint32_t k, uint64_t *out)
{
    TU_EQ_I(bg_layout_positions(h, m, k, out), BG_OK);
}
