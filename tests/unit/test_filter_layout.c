/* SPDX-License-Identifier: BSD-3-Clause */
/* The bit layout through the filter calls (<bloomgate/filter.h>,
 * <bloomgate/layout.h>): for the standard variant and every blocked
 * implementation in tu_configs (test_filter_configs.h), the bits set and
 * every answer are those the documented formulas predict, computed here.
 * test_layout.c pins the positions themselves to literal values. */
#include "test_util.h"
#include "test_filter_configs.h"
#include "test_filter_util.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Key sets (the `set` argument of the tu_key_* generators), numbered as in
 * every filter suite, so that each test sees the keys it always has. */
enum {
    SET_A = 8,
    SET_B = 9,
};

/* ---- (i) bit layout -------------------------------------------------- */

/* The least x with bg_layout_reduce(x, range) == r (for r < range). */
static uint64_t preimage(uint64_t r, uint64_t range)
{
    return (uint64_t)((((unsigned __int128)r << 64) + range - 1) / range);
}

static int standard_predict(const uint8_t *set, bg_hash h, uint64_t m, uint32_t k)
{
    uint64_t pr[BG_MAX_K];
    tu_standard_probes(h, m, k, pr);
    for (uint32_t j = 0; j < k; j++)
        if (!set[pr[j]])
            return 0;
    return 1;
}

static void standard_bit_layout(void **state)
{
    (void)state;
    static const uint64_t ms[] = {64, 100, 257, 1000, 4099};
    static const uint32_t ks[] = {1, 2, 3, 7, 11};
    uint8_t *set = malloc(4099);
    assert_non_null(set);
    uint64_t rng = 12345;
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        if (tu_configs[c].variant != BG_VARIANT_STANDARD)
            continue;
        for (size_t mi = 0; mi < LEN(ms); mi++) {
            for (size_t ki = 0; ki < LEN(ks); ki++) {
                uint64_t m = ms[mi];
                uint32_t k = ks[ki];
                tu_ctx("%s: m=%" PRIu64 " k=%u", tu_configs[c].name, m, k);
                bg_filter *f =
                    tu_filter_make(&tu_configs[c],
                                   (bg_filter_options){.bits = m, .hashes = k, .seed = m * 31 + k});
                TU_EQ_U(bg_filter_bits(f), m);
                TU_EQ_U(bg_filter_hashes(f), k);
                /* Add keys to about a quarter fill, tracking the bits the
                 * documented formula sets. */
                memset(set, 0, m);
                uint64_t nset = 0, nkeys = m / (4 * k) + 1;
                uint8_t buf[TU_MAX_KEY];
                bg_hash *added = malloc(nkeys * sizeof *added);
                assert_non_null(added);
                for (uint64_t i = 0; i < nkeys; i++) {
                    size_t len = tu_key_random(SET_A, i, buf);
                    bg_hash h;
                    TU_EQ_I(bg_filter_hash(f, buf, len, &h), BG_OK);
                    added[i] = h;
                    uint64_t pr[BG_MAX_K];
                    tu_standard_probes(h, m, k, pr);
                    int fresh = 0;
                    for (uint32_t j = 0; j < k; j++) {
                        fresh |= !set[pr[j]];
                        nset += !set[pr[j]];
                        set[pr[j]] = 1;
                    }
                    /* test_and_add says "new" exactly when a bit was clear. */
                    TU_EQ_I(bg_filter_test_and_add(f, buf, len), fresh);
                }
                /* As many bits are set as the formula predicts ... */
                bg_filter_stats st;
                TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
                TU_EQ_U(st.bits_set, nset);
                /* ... and every probe pattern (a, b) answers as the
                 * formula predicts: for k <= 2 this pins each set bit. For
                 * large m, a sample. */
                uint64_t mismatches = 0, positives = 0, tried = 0;
                uint64_t step = m <= 1000 ? 1 : 37;
                for (uint64_t a = 0; a < m; a += step) {
                    for (uint64_t bb = 1; bb < m; bb += step) {
                        bg_hash h = {preimage(a, m), preimage(bb - 1, m - 1)};
                        int want = standard_predict(set, h, m, k);
                        mismatches += bg_filter_contains_hash(f, h) != want;
                        positives += (uint64_t)want;
                        tried++;
                        /* The largest preimage of the same (a, b) too. */
                        bg_hash hi = {a + 1 < m ? preimage(a + 1, m) - 1 : UINT64_MAX,
                                      bb < m - 1 ? preimage(bb, m - 1) - 1 : UINT64_MAX};
                        mismatches += bg_filter_contains_hash(f, hi) != want;
                    }
                }
                /* The added keys' own patterns, reached through the least
                 * preimage of their (a, b): positives whatever the fill. */
                for (uint64_t i = 0; i < nkeys; i++) {
                    uint64_t a = bg_layout_reduce(added[i].h1, m);
                    uint64_t bm1 = bg_layout_reduce(added[i].h2, m - 1);
                    bg_hash h = {preimage(a, m), preimage(bm1, m - 1)};
                    int want = standard_predict(set, h, m, k);
                    TU_EQ_I(want, 1);
                    positives += (uint64_t)want;
                    mismatches += bg_filter_contains_hash(f, h) != want;
                    mismatches += bg_filter_contains_hash(f, added[i]) != 1;
                }
                /* And arbitrary 128-bit hashes. */
                for (int i = 0; i < 20000; i++) {
                    bg_hash h = {tu_next(&rng), tu_next(&rng)};
                    mismatches += bg_filter_contains_hash(f, h) != standard_predict(set, h, m, k);
                }
                free(added);
                if (mismatches)
                    TU_FAIL_("%" PRIu64 " answers differ from the documented layout (%" PRIu64
                             " patterns, %" PRIu64 " positive)\n",
                             mismatches, tried, positives);
                TU_TRUE(positives > 0);
                bg_filter_free(f);
            }
        }
    }
    free(set);
}

/* The blocked variant's salts, regenerated as its source describes them:
 * SplitMix64 outputs from seed 0x626c6f6f6d676174 ("bloomgat"), low bit set. */
static void blocked_salts(uint64_t salt[BG_BLOCKED_MAX_K])
{
    uint64_t st = 0x626c6f6f6d676174u;
    for (uint32_t j = 0; j < BG_BLOCKED_MAX_K; j++)
        salt[j] = tu_next(&st) | 1;
}

/* Filter bit of probe j, from <bloomgate/filter.h>: block = (h1 nblocks) >> 64,
 * s = h1 & 7, bit (h2 SALT[j]) >> 58 of word (s + j) % 8 of the block. */
static uint64_t blocked_probe(const uint64_t *salt, bg_hash h, uint64_t nblocks, uint32_t j)
{
    uint64_t block = bg_layout_reduce(h.h1, nblocks), s = h.h1 & 7;
    return 512 * block + 64 * ((s + j) % 8) + ((h.h2 * salt[j]) >> 58);
}

static int blocked_predict(const uint8_t *set, const uint64_t *salt, bg_hash h,
                           uint64_t nblocks, uint32_t k)
{
    for (uint32_t j = 0; j < k; j++)
        if (!set[blocked_probe(salt, h, nblocks, j)])
            return 0;
    return 1;
}

static void blocked_bit_layout(void **state)
{
    (void)state;
    static const uint64_t nbs[] = {1, 3, 17};
    static const uint32_t ks[] = {1, 2, 3, 5, 7, 8};
    uint64_t salt[BG_BLOCKED_MAX_K];
    blocked_salts(salt);
    uint8_t *set = malloc(17 * BG_BLOCK_BITS);
    assert_non_null(set);
    uint64_t rng = 54321;
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        if (tu_configs[c].variant != BG_VARIANT_BLOCKED)
            continue;
        for (size_t ni = 0; ni < LEN(nbs); ni++) {
            for (size_t ki = 0; ki < LEN(ks); ki++) {
                uint64_t nb = nbs[ni], m = nb * BG_BLOCK_BITS;
                uint32_t k = ks[ki];
                tu_ctx("%s: blocks=%" PRIu64 " k=%u", tu_configs[c].name, nb, k);
                bg_filter *f =
                    tu_filter_make(&tu_configs[c],
                                   (bg_filter_options){.bits = m, .hashes = k, .seed = nb * 7 + k});
                TU_EQ_U(bg_filter_bits(f), m);
                memset(set, 0, m);
                uint64_t nset = 0, nkeys = m / (5 * k) + 1;
                uint8_t buf[TU_MAX_KEY];
                bg_hash *added = malloc(nkeys * sizeof *added);
                assert_non_null(added);
                for (uint64_t i = 0; i < nkeys; i++) {
                    size_t len = tu_key_random(SET_B, i, buf);
                    bg_hash h;
                    TU_EQ_I(bg_filter_hash(f, buf, len, &h), BG_OK);
                    added[i] = h;
                    int fresh = 0;
                    for (uint32_t j = 0; j < k; j++) {
                        uint64_t bit = blocked_probe(salt, h, nb, j);
                        fresh |= !set[bit];
                        nset += !set[bit];
                        set[bit] = 1;
                    }
                    TU_EQ_I(bg_filter_test_and_add(f, buf, len), fresh);
                }
                bg_filter_stats st;
                TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
                TU_EQ_U(st.bits_set, nset);
                uint64_t mismatches = 0, positives = 0;
                /* Each added key's h2 in every block and at every start word
                 * (h1's low 3 bits), at both ends of the block's preimage;
                 * then arbitrary hashes. */
                for (uint64_t i = 0; i < nkeys; i++) {
                    for (uint64_t blk = 0; blk < nb; blk++) {
                        uint64_t lo = preimage(blk, nb);
                        uint64_t hi = blk + 1 < nb ? preimage(blk + 1, nb) - 1 : UINT64_MAX;
                        for (uint64_t s8 = 0; s8 < 8; s8++) {
                            /* Same block, start word s8: the least h1 >= lo
                             * and the largest h1 <= hi with h1 & 7 == s8. */
                            bg_hash a = {(lo + ((s8 - lo) & 7)), added[i].h2};
                            bg_hash z = {hi - ((hi - s8) & 7), added[i].h2};
                            int want = blocked_predict(set, salt, a, nb, k);
                            TU_EQ_I(blocked_predict(set, salt, z, nb, k), want);
                            positives += (uint64_t)want;
                            mismatches += bg_filter_contains_hash(f, a) != want;
                            mismatches += bg_filter_contains_hash(f, z) != want;
                        }
                    }
                    mismatches += bg_filter_contains_hash(f, added[i]) != 1;
                }
                for (int i = 0; i < 20000; i++) {
                    bg_hash h = {tu_next(&rng), tu_next(&rng)};
                    mismatches += bg_filter_contains_hash(f, h) !=
                                  blocked_predict(set, salt, h, nb, k);
                }
                if (mismatches)
                    TU_FAIL_("%" PRIu64 " answers differ from the documented layout\n",
                             mismatches);
                TU_TRUE(positives >= nkeys);
                free(added);
                bg_filter_free(f);
            }
        }
    }
    free(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(standard_bit_layout),
        cmocka_unit_test(blocked_bit_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
