/* The bit layout, pinned. Where a key's bits land is part of the format: a
 * filter built here is read back from files and pushed into Redis bitmaps,
 * and other clients compute the same positions. So these tests recompute the
 * positions from the formulas documented in <bloomgate/filter.h>, read the
 * bit array byte by byte in the documented numbering (bit i at byte i / 8,
 * mask 0x80 >> (i % 8)), and require exactly those bits, no others. They
 * run every blocked implementation this CPU has (portable, AVX2, AVX-512),
 * which must produce the same array bit for bit. */
#include "test_util.h"

#include "../src/core/filter_internal.h"

/* Payload bit i of f: byte i / 8 of the array as stored in memory. */
static int payload_bit(const bg_filter *f, uint64_t i)
{
    const unsigned char *bytes = (const unsigned char *)f->words;
    return (bytes[i / 8] & (0x80u >> (i % 8))) != 0;
}

static uint64_t count_bits(const bg_filter *f)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < f->m; i++)
        n += (uint64_t)payload_bit(f, i);
    return n;
}

static uint64_t mulhi(uint64_t a, uint64_t b)
{
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

/* The salts, restated here on purpose: changing them changes the format. */
static const uint64_t salt[8] = {
    0xb843f28d1cbe7cc1u, 0xbf5208508c24ba89u, 0x44191ad094bbb81fu, 0x5380e15d575cde27u,
    0x7c1006a45673361du, 0x966e0f470d6583c1u, 0x393056da196ce181u, 0xad9afafc3a99e0e7u,
};

/* XXH3-128 is part of the format too: pin one value. */
static void hash_is_xxh3_128(void **state)
{
    (void)state;
    bg_hash h;
    TU_EQ_I(bg_hash_key("bloomgate", 9, 0, &h), BG_OK);
    /* `printf bloomgate | xxh128sum` (Debian's xxhash package) prints the
     * canonical form, high half first: 0b401c44f42aac8a d3da6931c1a41b6e. */
    TU_EQ_U(h.h1, UINT64_C(0xd3da6931c1a41b6e));
    TU_EQ_U(h.h2, UINT64_C(0x0b401c44f42aac8a));
}

static void standard_positions(void **state)
{
    (void)state;
    bg_filter *f;
    bg_filter_options o = {.variant = BG_VARIANT_STANDARD, .bits = 100003, .hashes = 7, .seed = 42};
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    for (uint64_t key = 0; key < 50; key++) {
        uint8_t buf[TU_DISTINCT_LEN];
        size_t len = tu_key_distinct(7, key, buf);
        bg_hash h;
        TU_EQ_I(bg_hash_key(buf, len, 42, &h), BG_OK);
        TU_EQ_I(bg_filter_add(f, buf, len), BG_OK);
        uint64_t m = f->m, x = mulhi(h.h1, m), y = mulhi(h.h2, m - 1) + 1;
        for (uint32_t j = 0; j < 7; j++) {
            TU_TRUE(payload_bit(f, x));
            x = (x + y) % m;
            y = (y + j) % m;
        }
    }
    /* Exactly those bits, no others. */
    unsigned char *expect = calloc((size_t)(f->m + 7) / 8, 1);
    for (uint64_t key = 0; key < 50; key++) {
        uint8_t buf[TU_DISTINCT_LEN];
        size_t len = tu_key_distinct(7, key, buf);
        bg_hash h;
        bg_hash_key(buf, len, 42, &h);
        uint64_t m = f->m, x = mulhi(h.h1, m), y = mulhi(h.h2, m - 1) + 1;
        for (uint32_t j = 0; j < 7; j++) {
            expect[x / 8] |= (unsigned char)(0x80u >> (x % 8));
            x = (x + y) % m;
            y = (y + j) % m;
        }
    }
    for (uint64_t i = 0; i < f->m; i++)
        TU_EQ_I(payload_bit(f, i), (expect[i / 8] & (0x80u >> (i % 8))) != 0);
    free(expect);
    bg_filter_free(f);
}

/* Expected payload of a blocked filter after adding keys (set, 0..count-1). */
static unsigned char *blocked_expected(const bg_filter *f, uint64_t set, uint64_t count)
{
    unsigned char *expect = calloc((size_t)f->m / 8, 1);
    for (uint64_t key = 0; key < count; key++) {
        uint8_t buf[TU_DISTINCT_LEN];
        size_t len = tu_key_distinct(set, key, buf);
        bg_hash h;
        bg_hash_key(buf, len, f->seed, &h);
        uint64_t block = mulhi(h.h1, f->m / 512);
        uint64_t start = h.h1 & 7;
        for (uint32_t j = 0; j < f->k; j++) {
            uint64_t word = (start + j) % 8, bit = (h.h2 * salt[j]) >> 58;
            uint64_t i = block * 512 + word * 64 + bit;
            expect[i / 8] |= (unsigned char)(0x80u >> (i % 8));
        }
    }
    return expect;
}

static const char *const simd_name[] = {"portable", "avx2", "avx512"};

static void blocked_positions_impl(bg__simd simd)
{
    bg__simd saved = bg__blocked_simd;
    bg__blocked_simd = simd;
    for (uint32_t k = 1; k <= BG_BLOCKED_MAX_K; k++) {
        for (int sw = 0; sw < 2; sw++) {
            tu_ctx("blocked k=%u %s single_writer=%d", k, simd_name[simd], sw);
            bg_filter *f;
            bg_filter_options o = {.variant = BG_VARIANT_BLOCKED, .bits = 512 * 37, .hashes = k,
                                   .seed = 0x5eed, .concurrency = sw ? BG_SINGLE_WRITER : 0};
            TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
            TU_TRUE(f->ops == bg__blocked_ops_at(simd));
            const uint64_t count = 300;
            for (uint64_t key = 0; key < count; key++) {
                uint8_t buf[TU_DISTINCT_LEN];
                size_t len = tu_key_distinct(k, key, buf);
                TU_TRUE(bg_filter_add(f, buf, len) == BG_OK);
            }
            unsigned char *expect = blocked_expected(f, k, count);
            for (uint64_t i = 0; i < f->m; i++)
                TU_EQ_I(payload_bit(f, i), (expect[i / 8] & (0x80u >> (i % 8))) != 0);
            TU_TRUE(count_bits(f) > 0);
            free(expect);
            bg_filter_free(f);
        }
    }
    bg__blocked_simd = saved;
}

static void blocked_positions_portable(void **state)
{
    (void)state;
    blocked_positions_impl(BG__SIMD_NONE);
}

static void blocked_positions_avx2(void **state)
{
    (void)state;
    if (bg__blocked_ops_at(BG__SIMD_AVX2) == NULL)
        skip();
    blocked_positions_impl(BG__SIMD_AVX2);
}

static void blocked_positions_avx512(void **state)
{
    (void)state;
    if (bg__blocked_ops_at(BG__SIMD_AVX512) == NULL)
        skip();
    blocked_positions_impl(BG__SIMD_AVX512);
}

/* A SIMD implementation sets the bits and answers every query as the
 * portable one does, batch calls included (test_filter.c runs its whole
 * suite, key lengths by class, over each implementation too). */
static void simd_answers_match(bg__simd simd)
{
    bg_filter *a, *b;
    bg_filter_options o = {.variant = BG_VARIANT_BLOCKED, .capacity = 20000, .error_rate = 0.05};
    bg__blocked_simd = BG__SIMD_NONE;
    TU_EQ_I(bg_filter_new(&a, &o), BG_OK);
    bg__blocked_simd = simd;
    TU_EQ_I(bg_filter_new(&b, &o), BG_OK);
    bg__blocked_simd = BG__SIMD_AVX512;
    TU_TRUE(a->ops == &bg__blocked_scalar_ops);
    TU_TRUE(b->ops == bg__blocked_ops_at(simd));
    tu_batch keys;
    tu_batch_init(&keys, 20000);
    tu_batch_fill(&keys, 1, 11, 0, 20000);
    TU_EQ_I(bg_filter_add_many(a, keys.keys, keys.lens, 20000, NULL),
            bg_filter_add_many(b, keys.keys, keys.lens, 20000, NULL));
    TU_EQ_I(memcmp((const void *)a->words, (const void *)b->words, a->nwords * 8), 0);
    uint8_t *ra = malloc(100000), *rb = malloc(100000);
    tu_batch probes;
    tu_batch_init(&probes, 100000);
    tu_batch_fill(&probes, 0, 12, 0, 100000);
    int64_t na = bg_filter_contains_many(a, probes.keys, probes.lens, 100000, ra);
    int64_t nb = bg_filter_contains_many(b, probes.keys, probes.lens, 100000, rb);
    TU_EQ_I(na, nb);
    TU_TRUE(na > 0); /* p = 0.05: some false positives, so the test has teeth */
    TU_EQ_I(memcmp(ra, rb, 100000), 0);
    for (size_t i = 0; i < 1000; i++)
        TU_EQ_I(bg_filter_contains(a, probes.keys[i], probes.lens[i]),
                bg_filter_contains(b, probes.keys[i], probes.lens[i]));
    free(ra);
    free(rb);
    tu_batch_free(&keys);
    tu_batch_free(&probes);
    bg_filter_free(a);
    bg_filter_free(b);
}

static void avx2_answers_match(void **state)
{
    (void)state;
    if (bg__blocked_ops_at(BG__SIMD_AVX2) == NULL)
        skip();
    simd_answers_match(BG__SIMD_AVX2);
}

static void avx512_answers_match(void **state)
{
    (void)state;
    if (bg__blocked_ops_at(BG__SIMD_AVX512) == NULL)
        skip();
    simd_answers_match(BG__SIMD_AVX512);
}

/* The batch pipelines (keys hashed BG__AHEAD ahead in steps of BG__STEP;
 * hashes in groups of BG__BATCH) have edges at every multiple of those: each
 * batch size from 0 to 80, and some odd large ones, must answer key by key
 * as the single calls do, and add exactly the same bits. */
static void batch_edges_impl(bg_variant v, bg__simd simd)
{
    static const size_t big[] = {255, 256, 257, 1000, 1031};
    bg__blocked_simd = simd;
    tu_batch keys;
    tu_batch_init(&keys, 1100);
    for (size_t t = 0; t < 81 + sizeof big / sizeof big[0]; t++) {
        size_t count = t < 81 ? t : big[t - 81];
        tu_ctx("%s %s batch of %zu", bg_variant_name(v), simd_name[simd], count);
        bg_filter *a, *b;
        bg_filter_options o = {.variant = v, .capacity = 400, .error_rate = 0.2};
        TU_EQ_I(bg_filter_new(&a, &o), BG_OK);
        TU_EQ_I(bg_filter_new(&b, &o), BG_OK);
        tu_batch_fill(&keys, 1, 100 + t, 0, count);
        uint8_t res[1100], res_h[1100];
        int64_t added = bg_filter_add_many(a, keys.keys, keys.lens, count, res);
        int64_t single_new = 0;
        for (size_t i = 0; i < count; i++) {
            int r = bg_filter_test_and_add(b, keys.keys[i], keys.lens[i]);
            TU_EQ_I(res[i], r);
            single_new += r;
        }
        TU_EQ_I(added, single_new);
        TU_EQ_I(memcmp((const void *)a->words, (const void *)b->words, a->nwords * 8), 0);
        /* queries on fresh keys, half of them present */
        tu_batch_fill(&keys, 1, 100 + t, count / 2, count);
        bg_hash hs[1100];
        for (size_t i = 0; i < count; i++)
            bg_filter_hash(a, keys.keys[i], keys.lens[i], &hs[i]);
        int64_t present = bg_filter_contains_many(a, keys.keys, keys.lens, count, res);
        TU_EQ_I(bg_filter_contains_hashes(a, hs, count, res_h), present);
        int64_t single = 0;
        for (size_t i = 0; i < count; i++) {
            int r = bg_filter_contains(a, keys.keys[i], keys.lens[i]);
            TU_EQ_I(res[i], r);
            TU_EQ_I(res_h[i], r);
            single += r;
        }
        TU_EQ_I(present, single);
        bg_filter_free(a);
        bg_filter_free(b);
    }
    tu_batch_free(&keys);
    bg__blocked_simd = BG__SIMD_AVX512;
}

static void batch_edges(void **state)
{
    (void)state;
    batch_edges_impl(BG_VARIANT_STANDARD, BG__SIMD_NONE);
    for (int simd = BG__SIMD_NONE; simd <= BG__SIMD_AVX512; simd++)
        if (bg__blocked_ops_at((bg__simd)simd) != NULL)
            batch_edges_impl(BG_VARIANT_BLOCKED, (bg__simd)simd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hash_is_xxh3_128),
        cmocka_unit_test(standard_positions),
        cmocka_unit_test(blocked_positions_portable),
        cmocka_unit_test(blocked_positions_avx2),
        cmocka_unit_test(blocked_positions_avx512),
        cmocka_unit_test(avx2_answers_match),
        cmocka_unit_test(avx512_answers_match),
        cmocka_unit_test(batch_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
