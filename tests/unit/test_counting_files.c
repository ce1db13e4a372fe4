/* SPDX-License-Identifier: BSD-3-Clause */
/* The counting variant's bytes (filter.h COUNTING, <bloomgate/file.h>):
 * the golden image, files that round-trip saturated counters and odd m,
 * counters that sit where the standard variant's bits are, and sizing with
 * its byte cap. The model tests are test_counting.c. */
#include "test_util.h"
#include "test_counting_util.h"
#include "test_filter_util.h"
#include "test_tmpdir.h"

#include <unistd.h>

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Key sets (the `set` argument of the tu_key_* generators), numbered as in
 * every counting suite, so that each test sees the keys it always has. */
enum {
    SET_A = 4,
    SET_B = 5,
};

/* ---- (8) files ----------------------------------------------------------- */

/* Counting, m = 100 counters, k = 3, seed 0x0123456789abcdef, keys "alice",
 * "bob", "" (test_file.c's golden standard filter, with counters). Variant
 * byte 3, payload 50 bytes at offset 128. The nine probes hit nine distinct
 * counters, 1 14 18 27 30 36 66 77 94: the golden standard filter's set
 * bits. Counter 1 (odd) is the low nibble of payload byte 0 (0x01), counter
 * 14 (even) the high nibble of byte 7 (0x10). */
static const uint8_t golden_counting[178] = {
    0x89, 0x42, 0x47, 0x46, 0x0d, 0x0a, 0x1a, 0x0a, 0x01, 0x00, 0x80, 0x00,
    0x03, 0x01, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x64, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xef, 0xcd, 0xab, 0x89,
    0x67, 0x45, 0x23, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x32, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xe4, 0x32, 0x7d, 0x62, 0x17, 0x7b, 0x89, 0x97, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x10, 0x00, 0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x10,
    0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00,
};

static bg_filter *golden_counting_filter(void)
{
    bg_filter *f = tu_counting_make((bg_filter_options){.bits = 100, .hashes = 3,
                                                        .seed = UINT64_C(0x0123456789abcdef)},
                                    BG_CONCURRENT_WRITERS);
    TU_EQ_I(bg_filter_add(f, "alice", 5), BG_OK);
    TU_EQ_I(bg_filter_add(f, "bob", 3), BG_OK);
    TU_EQ_I(bg_filter_add(f, NULL, 0), BG_OK);
    return f;
}
/* Any change to these bytes is a format change (see test_file.c). */
static void golden_bytes(void **state)
{
    (void)state;
    tu_ctx("golden counting");
    bg_filter *f = golden_counting_filter();
    tu_image im = tu_image_encode(f);
    TU_EQ_U(im.len, sizeof golden_counting);
    assert_memory_equal(im.buf, golden_counting, sizeof golden_counting);
    tu_image_free(&im);

    const uint8_t *g = golden_counting;
    TU_EQ_U(g[12], 3);                /* variant: counting */
    TU_EQ_U(tu_le(g + 16, 4), 3);        /* k */
    TU_EQ_U(tu_le(g + 24, 8), 100);      /* m, in counters */
    TU_EQ_U(tu_le(g + 48, 8), 3);        /* items */
    TU_EQ_U(tu_le(g + 64, 8), 50);       /* payload bytes: 100 counters of 4 bits */
    bg_file_info info;
    TU_EQ_I(bg_file_inspect_buffer(g, sizeof golden_counting, 0, &info), BG_OK);
    TU_EQ_I(info.checksum_state, BG_CHECKSUM_OK);
    TU_EQ_I(info.variant, BG_VARIANT_COUNTING);
    TU_EQ_U(info.payload_bytes, 50);

    /* Every counter is the number of the keys' probes on it (the formula of
     * filter.h, computed here), in the documented nibble. */
    unsigned want[100] = {0};
    const char *keys[] = {"alice", "bob", ""};
    for (int i = 0; i < 3; i++) {
        uint64_t pr[3];
        tu_standard_probes(tu_hash_of(f, keys[i], strlen(keys[i])), 100, 3, pr);
        for (int j = 0; j < 3; j++)
            want[pr[j]]++;
    }
    unsigned total = 0;
    for (uint64_t i = 0; i < 100; i++) {
        TU_EQ_U(tu_counter(g + 128, i), want[i]);
        total += want[i];
    }
    TU_EQ_U(total, 9);
    static const uint64_t set[] = {1, 14, 18, 27, 30, 36, 66, 77, 94};
    for (size_t i = 0; i < LEN(set); i++)
        TU_EQ_U(want[set[i]], 1);
    TU_EQ_U(g[128 + 0], 0x01);
    TU_EQ_U(g[128 + 7], 0x10);
    /* And the filter decodes back to the same bytes, with the same answers. */
    bg_filter *d;
    TU_EQ_I(bg_filter_decode(&d, g, sizeof golden_counting, 0), BG_OK);
    TU_EQ_I(bg_filter_contains(d, "alice", 5), 1);
    TU_EQ_I(bg_filter_remove(d, "bob", 3), BG_OK);
    TU_EQ_I(bg_filter_contains(d, "bob", 3), 0);
    TU_EQ_I(bg_filter_contains(d, "", 0), 1);
    TU_EQ_I(bg_filter_remove(d, "bob", 3), BG_EABSENT);
    bg_filter_free(d);
    bg_filter_free(f);
}

/* Save, load, map and decode give back the same bytes (saturated counters
 * included) and filters that answer and remove alike; with m odd, the
 * padding nibble is 0 in the image and a file where it is not is refused. */
static void files_round_trip(void **state)
{
    (void)state;
    tu_tmpdir d;
    tu_tmpdir_make(&d, "counting");
    const bg_filter_options shapes[] = {
        {.capacity = 20000, .error_rate = 0.01, .seed = 7},
        {.bits = 1001, .hashes = 5, .seed = 8},  /* odd m: half a byte of padding */
        {.bits = 1000, .hashes = 3, .seed = 10}, /* m / 16 not whole: a partial word */
    };
    tu_batch b;
    tu_batch_init(&b, 4000);
    for (size_t s = 0; s < LEN(shapes); s++) {
        tu_ctx("round trip shape %zu", s);
        bg_filter *f = tu_counting_make(shapes[s], BG_CONCURRENT_WRITERS);
        uint64_t n = shapes[s].capacity ? 4000 : 150;
        tu_add_range(f, &b, SET_A, 0, n);
        for (int r = 0; r < 16; r++) /* saturate some counters */
            tu_add_range(f, &b, SET_B, 0, 3);
        tu_image im = tu_image_encode(f);
        TU_EQ_U(tu_payload_len(&im), (bg_filter_bits(f) + 1) / 2);
        if (bg_filter_bits(f) % 2)
            TU_EQ_U(tu_payload(&im)[tu_payload_len(&im) - 1] & 0x0f, 0);
        const char *path = tu_tmp_file(&d, "f.bgf");
        TU_EQ_I(bg_filter_save(f, path), BG_OK);
        bg_filter *loaded, *mapped, *decoded;
        TU_EQ_I(bg_filter_load(&loaded, path, 0), BG_OK);
        TU_EQ_I(bg_filter_map(&mapped, path, 0), BG_OK);
        TU_EQ_I(bg_filter_decode(&decoded, im.buf, im.len, BG_FILE_SINGLE_WRITER), BG_OK);
        bg_filter *all[] = {loaded, mapped, decoded};
        bg_filter_stats s1, s2;
        TU_EQ_I(bg_filter_stats_get(f, &s1), BG_OK);
        TU_TRUE(s1.saturated > 0);
        for (int i = 0; i < 3; i++) {
            TU_EQ_I(bg_filter_variant(all[i]), BG_VARIANT_COUNTING);
            tu_image again = tu_image_encode(all[i]);
            TU_EQ_U(again.len, im.len);
            assert_memory_equal(again.buf, im.buf, im.len);
            tu_image_free(&again);
            TU_EQ_I(bg_filter_stats_get(all[i], &s2), BG_OK);
            TU_EQ_U(s2.saturated, s1.saturated);
            TU_EQ_U(s2.bits_set, s1.bits_set);
            TU_EQ_U(s2.items, s1.items);
            TU_EQ_U(tu_count_present_range(all[i], &b, SET_A, 0, n), n);
        }
        /* The loaded copies remove like the original. */
        for (uint64_t i = 0; i < n; i += 2) {
            uint8_t key[TU_DISTINCT_LEN];
            tu_key_distinct(SET_A, i, key);
            TU_EQ_I(bg_filter_remove(f, key, sizeof key), BG_OK);
            TU_EQ_I(bg_filter_remove(loaded, key, sizeof key), BG_OK);
            TU_EQ_I(bg_filter_remove(decoded, key, sizeof key), BG_OK);
        }
        tu_expect_same_payload(f, loaded);
        tu_expect_same_payload(f, decoded);
        /* A file whose padding nibble is not 0 is refused. */
        if (bg_filter_bits(f) % 2) {
            im.buf[im.len - 1] |= 0x01;
            bg_filter *bad = NULL;
            TU_EQ_I(bg_filter_decode(&bad, im.buf, im.len, BG_FILE_NO_VERIFY), BG_ECORRUPT);
            TU_TRUE(bad == NULL);
        }
        tu_image_free(&im);
        bg_filter_free(loaded);
        bg_filter_free(mapped);
        bg_filter_free(decoded);
        bg_filter_free(f);
        TU_EQ_I(unlink(path), 0);
    }
    tu_batch_free(&b);
    tu_tmpdir_remove(&d);
}

/* ---- (9) counters where the standard variant's bits are ---------------- */

/* For the same m, k and seed, the non-zero counters of a counting filter
 * are the set bits of a standard filter given the same keys; each counter
 * holds the number of probes that hit it (capped at 15), computed here from
 * the formula; and the statistics derived from the fill are the standard
 * filter's. m runs over odd values and values that leave a partial word. */
static void counters_sit_on_standard_bits(void **state)
{
    (void)state;
    static const uint64_t ms[] = {64, 100, 257, 1000, 4099, 65537};
    static const uint32_t ks[] = {1, 2, 3, 7, 11};
    uint8_t buf[TU_MAX_KEY];
    for (size_t mode = 0; mode < LEN(tu_counting_modes); mode++) {
        for (size_t mi = 0; mi < LEN(ms); mi++) {
            for (size_t ki = 0; ki < LEN(ks); ki++) {
                uint64_t m = ms[mi];
                uint32_t k = ks[ki];
                tu_ctx("%s: m=%" PRIu64 " k=%u", tu_mode_name(tu_counting_modes[mode]), m, k);
                bg_filter_options o = {.bits = m, .hashes = k, .seed = m * 31 + k};
                bg_filter *c = tu_counting_make(o, tu_counting_modes[mode]), *s;
                o.variant = BG_VARIANT_STANDARD;
                TU_EQ_I(bg_filter_new(&s, &o), BG_OK);
                TU_EQ_U(bg_filter_bits(c), m);
                TU_EQ_U(bg_filter_hashes(c), k);
                TU_EQ_U(bg_filter_bytes(c), (m * 4 + 63) / 64 * 8);
                unsigned *want = calloc(m, sizeof *want);
                assert_non_null(want);
                /* To about half fill, so that counters above 1 occur. */
                uint64_t nkeys = m / (2 * k) + 1;
                for (uint64_t i = 0; i < nkeys; i++) {
                    size_t len = tu_key_random(SET_A, i, buf);
                    int rs = bg_filter_test_and_add(s, buf, len);
                    int rc = bg_filter_test_and_add(c, buf, len);
                    TU_EQ_I(rc, rs); /* "new" when a bit / counter was 0 */
                    uint64_t pr[BG_MAX_K];
                    tu_standard_probes(tu_hash_of(c, buf, len), m, k, pr);
                    for (uint32_t j = 0; j < k; j++)
                        want[pr[j]]++;
                }
                tu_image ic = tu_image_encode(c), is = tu_image_encode(s);
                TU_EQ_U(tu_payload_len(&ic), (m + 1) / 2);
                uint64_t mismatches = 0, above1 = 0;
                for (uint64_t i = 0; i < m; i++) {
                    unsigned v = tu_counter(tu_payload(&ic), i);
                    mismatches += v != (want[i] > 15 ? 15 : want[i]);
                    mismatches += (v != 0) != tu_bit(tu_payload(&is), i);
                    above1 += v > 1;
                }
                if (m % 2)
                    TU_EQ_U(tu_payload(&ic)[m / 2] & 0x0f, 0);
                if (mismatches)
                    TU_FAIL_("%" PRIu64 " counters differ from the layout\n", mismatches);
                TU_TRUE(above1 > 0 || m * k < 200);
                bg_filter_stats sc, ss;
                TU_EQ_I(bg_filter_stats_get(c, &sc), BG_OK);
                TU_EQ_I(bg_filter_stats_get(s, &ss), BG_OK);
                TU_EQ_I(sc.variant, BG_VARIANT_COUNTING);
                TU_EQ_U(sc.bits_set, ss.bits_set);
                TU_EQ_U(sc.items, nkeys); /* every add; the standard: the new ones */
                TU_TRUE(ss.items <= nkeys);
                TU_EQ_D(sc.fill_ratio, ss.fill_ratio);
                TU_EQ_D(sc.estimated_fp_rate, ss.estimated_fp_rate);
                TU_EQ_D(sc.estimated_items, ss.estimated_items);
                uint64_t sat = 0;
                for (uint64_t i = 0; i < m; i++)
                    sat += tu_counter(tu_payload(&ic), i) == 15;
                TU_EQ_U(sc.saturated, sat);
                TU_EQ_U(ss.saturated, 0);
                tu_image_free(&ic);
                tu_image_free(&is);
                free(want);
                bg_filter_free(c);
                bg_filter_free(s);
            }
        }
    }
}

/* Sizing: a counting filter is the standard one with 4 bits per cell, and
 * its byte cap applies to those bits. */
static void sizing_and_cap(void **state)
{
    (void)state;
    tu_ctx("sizing");
    bg_filter *c = tu_counting_make((bg_filter_options){.capacity = 100000, .error_rate = 0.01},
                                    BG_CONCURRENT_WRITERS);
    bg_filter *s;
    TU_EQ_I(bg_filter_new(&s, &(bg_filter_options){.variant = BG_VARIANT_STANDARD,
                                                   .capacity = 100000, .error_rate = 0.01}),
            BG_OK);
    TU_EQ_U(bg_filter_bits(c), bg_filter_bits(s));
    TU_EQ_U(bg_filter_hashes(c), bg_filter_hashes(s));
    TU_EQ_U(bg_filter_bytes(c), (bg_filter_bits(s) * 4 + 63) / 64 * 8);
    bg_filter_stats st;
    TU_EQ_I(bg_filter_stats_get(c, &st), BG_OK);
    TU_EQ_U(st.capacity, 100000);
    TU_IN_RANGE_D(st.error_rate, 0.0099, 0.0101);
    uint64_t bytes = bg_filter_bytes(c);
    bg_filter_free(c);
    bg_filter_free(s);
    /* The cap is on bytes: a standard filter of m bits fits where the
     * counting one of m counters does not. */
    bg_filter *f = NULL;
    bg_filter_options o = {.variant = BG_VARIANT_COUNTING, .capacity = 100000,
                           .error_rate = 0.01, .max_bytes = bytes - 64};
    TU_EQ_I(bg_filter_new(&f, &o), BG_ETOOBIG);
    TU_TRUE(f == NULL);
    o.max_bytes = bytes;
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    bg_filter_free(f);
    o.variant = BG_VARIANT_STANDARD;
    o.max_bytes = bytes / 4 + 64;
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    bg_filter_free(f);
    bg_variant v;
    TU_EQ_I(bg_variant_parse("counting", &v), BG_OK);
    TU_EQ_I(v, BG_VARIANT_COUNTING);
    TU_TRUE(strcmp(bg_variant_name(BG_VARIANT_COUNTING), "counting") == 0);
}
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(golden_bytes),
        cmocka_unit_test(files_round_trip),
        cmocka_unit_test(counters_sit_on_standard_bits),
        cmocka_unit_test(sizing_and_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
