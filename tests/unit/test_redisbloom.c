/* SPDX-License-Identifier: BSD-3-Clause */
/* The RedisBloom variant (<bloomgate/redisbloom.h>): its hash functions,
 * sizing and positions against REDISBLOOM_FORMAT.md's examples, and the
 * chains RedisBloom 2.6.28 wrote (tests/fixtures/redisbloom/), rebuilt from
 * their SCANDUMP sequences and by replaying the commands that made them,
 * bit for bit, their answers to absent keys down to the SHA-256 of the
 * answer vector. */
#include "test_util.h"
#include "test_alloc.h"
#include "test_tmpdir.h"

#include "../src/core/murmur.h"
#include "../src/core/redisbloom_internal.h"

static void sha256_hex(const uint8_t *msg, size_t len, char hex[65]);

/* ---- hashing ------------------------------------------------------------ */

static void hash_vectors(void **state)
{
    (void)state;
    char hex[65];
    sha256_hex((const uint8_t *)"abc", 3, hex); /* FIPS 180-4's example */
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    static const struct {
        const char *item;
        uint64_t a64, b64;
        uint32_t a32, b32;
    } v[] = {
        {"", UINT64_C(0x1ab11ea5a7b2c56e), UINT64_C(0xbbddcb5ab56dd547), 0x106e08d9u, 0x456d9087u},
        {"item1", UINT64_C(0xa053790e072b2e8b), UINT64_C(0x707e5d60182eb075), 0xfb5a68e6u,
         0xd565ab38u},
        {"abcdefgh", UINT64_C(0xd435df7a565a8af1), UINT64_C(0xbf3d673c0b1029cf), 0xc70d55ddu,
         0xd8fd56f3u},
        {"fx:scale2:0", UINT64_C(0xe8db50d2d52c0294), UINT64_C(0x2c6a457d492020f6), 0x989192c4u,
         0xc55bf51eu},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        tu_ctx("item \"%s\"", v[i].item);
        size_t n = strlen(v[i].item);
        uint64_t a = bg__murmur64a(v[i].item, n, BG__MURMUR64A_SEED);
        TU_EQ_U(a, v[i].a64);
        TU_EQ_U(bg__murmur64a(v[i].item, n, a), v[i].b64);
        uint32_t a32 = bg__murmur2(v[i].item, n, BG__MURMUR2_SEED);
        TU_EQ_U(a32, v[i].a32);
        TU_EQ_U(bg__murmur2(v[i].item, n, a32), v[i].b32);
    }
}

/* bg_filter_hash gives (a, b) by the chain's options. */
static void filter_hash_is_murmur(void **state)
{
    (void)state;
    bg_filter *f;
    bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM, .capacity = 10, .error_rate = 0.1};
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    bg_hash h;
    TU_EQ_I(bg_filter_hash(f, "item1", 5, &h), BG_OK);
    TU_EQ_U(h.h1, UINT64_C(0xa053790e072b2e8b));
    TU_EQ_U(h.h2, UINT64_C(0x707e5d60182eb075));
    bg_filter_free(f);

    bg_rb_chain ch = {.nfilters = 1, .options = 0, .growth = 2};
    TU_EQ_I(bg_rb_new(&f, &ch, 0), BG_OK);
    bg_rb_link l;
    TU_EQ_I(bg_rb_link_plan(&l, 1000, 0.01, 0), BG_OK);
    TU_EQ_I(bg_rb_push_link(f, &l, NULL, 0), BG_OK);
    TU_EQ_I(bg_filter_hash(f, "item1", 5, &h), BG_OK);
    TU_EQ_U(h.h1, 0xfb5a68e6u);
    TU_EQ_U(h.h2, 0xd565ab38u);
    bg_filter_free(f);
}

/* ---- sizing ------------------------------------------------------------- */

static void sizing_table(void **state)
{
    (void)state;
    static const struct {
        uint64_t capacity;
        double error;
        uint32_t options;
        double bpe;
        uint32_t hashes;
        uint64_t bytes, bits;
        uint8_t n2;
        uint64_t entries;
    } t[] = {
        {10, 0.05, 5, 6.2352242295726885, 5, 8, 64, 0, 10},
        {100, 0.005, 5, 11.027753418256411, 8, 144, 1152, 0, 100},
        {1000, 0.005, 5, 11.027753418256411, 8, 1384, 11072, 0, 1000},
        {500, 0.05, 13, 6.2352242295726885, 5, 392, 3136, 0, 500},
        {100000, 0.0005, 5, 15.820282606940136, 11, 197760, 1582080, 0, 100000},
        {1000, 0.01, 0, 9.585058377367446, 7, 2048, 16384, 14, 1709},
        {1000, 0.01, 4, 9.585058377367446, 7, 2048, 16384, 14, 1709},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        tu_ctx("row %zu", i);
        bg_rb_link l;
        TU_EQ_I(bg_rb_link_plan(&l, t[i].capacity, t[i].error, t[i].options), BG_OK);
        TU_EQ_D(l.error, t[i].error);
        TU_EQ_D(l.bpe, t[i].bpe);
        TU_EQ_U(l.hashes, t[i].hashes);
        TU_EQ_U(l.bytes, t[i].bytes);
        TU_EQ_U(l.bits, t[i].bits);
        TU_EQ_U(l.n2, t[i].n2);
        TU_EQ_U(l.entries, t[i].entries);
        TU_EQ_U(l.size, 0);
    }
}


/* Positions mod bits are computed without a division (redisbloom.c, FAST
 * MODULO): the same as % for every divisor and value tried. */
static void fast_modulo(void **state)
{
    (void)state;
    static const uint64_t ds[] = {2, 3, 7, 8, 64, 1152, 11072, 1582080, 3136,
                                  UINT64_C(1) << 32, (UINT64_C(1) << 40) + 8,
                                  (UINT64_C(1) << 63) - 8, UINT64_C(1) << 63,
                                  UINT64_MAX - 7, UINT64_MAX};
    uint64_t rng = 12345;
    for (size_t i = 0; i < sizeof ds / sizeof ds[0] + 2000; i++) {
        uint64_t d = i < sizeof ds / sizeof ds[0] ? ds[i] : tu_next(&rng) >> (tu_next(&rng) % 62);
        if (d < 2)
            d = 2;
        tu_ctx("d = %" PRIu64, d);
        const uint64_t edges[] = {0, 1, d - 1, d, d + 1, 2 * d - 1, UINT64_MAX, UINT64_MAX - 1,
                                  UINT64_MAX - d, (UINT64_MAX / d) * d, (UINT64_MAX / d) * d - 1};
        for (size_t j = 0; j < sizeof edges / sizeof edges[0]; j++)
            TU_EQ_U(bg__rb_mod(edges[j], d), edges[j] % d);
        for (int j = 0; j < 500; j++) {
            uint64_t x = tu_next(&rng);
            TU_EQ_U(bg__rb_mod(x, d), x % d);
        }
    }
}

/* Positions after the first are stepped from the one before (redisbloom.c,
 * NEXT POSITION): position j is (a + j b mod 2^64) mod bits for every
 * divisor, start and step tried, steps that pass 2^64 included. */
static void next_position(void **state)
{
    (void)state;
    static const uint64_t ds[] = {2, 3, 8, 1152, 11072, 1582080, 110365728,
                                  UINT64_C(1) << 32, (UINT64_C(1) << 40) + 8,
                                  (UINT64_C(1) << 63) - 8, UINT64_C(1) << 63,
                                  (UINT64_C(1) << 63) + 8, UINT64_MAX - 7};
    uint64_t rng = 54321;
    for (size_t i = 0; i < sizeof ds / sizeof ds[0] + 300; i++) {
        uint64_t d = i < sizeof ds / sizeof ds[0] ? ds[i] : tu_next(&rng) >> (tu_next(&rng) % 62);
        if (d < 2)
            d = 2;
        const uint64_t edges[] = {0, 1, d - 1, d, UINT64_MAX, UINT64_MAX - 1, UINT64_MAX - d,
                                  (UINT64_MAX / d) * d, UINT64_C(1) << 63};
        size_t ne = sizeof edges / sizeof edges[0];
        for (size_t t = 0; t < ne * ne + 200; t++) {
            uint64_t a = t < ne * ne ? edges[t / ne] : tu_next(&rng);
            uint64_t b = t < ne * ne ? edges[t % ne] : tu_next(&rng);
            tu_ctx("d = %" PRIu64 ", a = %" PRIu64 ", b = %" PRIu64, d, a, b);
            for (uint32_t j = 0; j < 12; j++)
                TU_EQ_U(bg__rb_position(a, b, j, d), (a + (uint64_t)j * b) % d);
        }
    }
}

/* ---- positions ---------------------------------------------------------- */

/* The positions of a key in link 0, read back by adding it to an empty
 * chain and listing the bits set. */
static size_t bits_set(const bg_filter *f, uint64_t *pos, size_t cap)
{
    const uint8_t *d;
    size_t len, n = 0;
    TU_EQ_I(bg_rb_link_array(f, 0, &d, &len), BG_OK);
    for (size_t i = 0; i < len * 8; i++)
        if (d[i / 8] & (1u << (i % 8)) && n < cap)
            pos[n++] = i;
    return n;
}

static void sort_u64(uint64_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            uint64_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

static void check_positions(const bg_filter *f, uint64_t *want, size_t n)
{
    uint64_t got[32];
    sort_u64(want, n);
    TU_EQ_U(bits_set(f, got, 32), n);
    for (size_t i = 0; i < n; i++)
        TU_EQ_U(got[i], want[i]);
}

static void position_examples(void **state)
{
    (void)state;
    bg_filter *f;
    /* BF.RESERVE k 0.1 10; BF.ADD k item1 */
    bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM, .capacity = 10, .error_rate = 0.1};
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    TU_EQ_I(bg_filter_test_and_add(f, "item1", 5), 1);
    const uint8_t *d;
    size_t len;
    TU_EQ_I(bg_rb_link_array(f, 0, &d, &len), BG_OK);
    static const uint8_t want[8] = {0x01, 0x08, 0x00, 0x80, 0x00, 0x04, 0x20, 0x00};
    TU_EQ_U(len, 8);
    TU_TRUE(memcmp(d, want, 8) == 0);
    uint64_t p1[] = {11, 0, 53, 42, 31};
    check_positions(f, p1, 5);
    TU_EQ_I(bg_filter_test_and_add(f, "item1", 5), 0);
    TU_EQ_I(bg_filter_contains(f, "item1", 5), 1);
    bg_filter_free(f);

    /* item1 in link 0 of BF.RESERVE k 0.01 1000 */
    o.capacity = 1000;
    o.error_rate = 0.01;
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    TU_EQ_I(bg_filter_test_and_add(f, "item1", 5), 1);
    uint64_t p2[] = {10955, 768, 10869, 9898, 10783, 9812, 10697, 9726};
    check_positions(f, p2, 8);
    bg_filter_free(f);

    /* item1 in a legacy options-0 link with n2 = 14 */
    bg_rb_chain ch = {.nfilters = 1, .options = 0, .growth = 2};
    TU_EQ_I(bg_rb_new(&f, &ch, 0), BG_OK);
    bg_rb_link l;
    TU_EQ_I(bg_rb_link_plan(&l, 1000, 0.01, 0), BG_OK);
    TU_EQ_I(bg_rb_push_link(f, &l, NULL, 0), BG_OK);
    TU_EQ_I(bg_filter_test_and_add(f, "item1", 5), 1);
    uint64_t p3[] = {10470, 5150, 16214, 10894, 5574, 254, 11318};
    check_positions(f, p3, 7);
    bg_filter_free(f);
}



/* ---- conformance ----------------------------------------------------------- */

/* Binary keys of every length (the empty key too), added by every path,
 * are all found, also after the chain grew; distinct absent keys answer 1
 * at about the rate the links promise. */
static void no_false_negatives(void **state)
{
    (void)state;
    bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM, .capacity = 500, .error_rate = 0.01};
    bg_filter *f;
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    tu_batch b;
    tu_batch_init(&b, 1000);
    for (uint64_t round = 0; round < 8; round++) {
        tu_batch_fill(&b, 1, 1, round * 1000, 1000);
        if (round % 3 == 0) {
            TU_TRUE(bg_filter_add_many(f, b.keys, b.lens, b.count, NULL) >= 0);
        } else if (round % 3 == 1) {
            for (size_t i = 0; i < b.count; i++)
                TU_EQ_I(bg_filter_add(f, b.keys[i], b.lens[i]), BG_OK);
        } else {
            bg_hash *h = malloc(b.count * sizeof *h);
            for (size_t i = 0; i < b.count; i++)
                TU_EQ_I(bg_filter_hash(f, b.keys[i], b.lens[i], &h[i]), BG_OK);
            TU_TRUE(bg_filter_add_hashes(f, h, b.count, NULL) >= 0);
            free(h);
        }
    }
    bg_rb_chain ch;
    TU_EQ_I(bg_rb_chain_get(f, &ch), BG_OK);
    TU_TRUE(ch.nfilters >= 4);
    for (uint64_t round = 0; round < 8; round++) {
        tu_batch_fill(&b, 1, 1, round * 1000, 1000);
        TU_EQ_I(bg_filter_contains_many(f, b.keys, b.lens, b.count, NULL), (int64_t)b.count);
        for (size_t i = 0; i < b.count; i++)
            TU_EQ_I(bg_filter_contains(f, b.keys[i], b.lens[i]), 1);
    }
    TU_EQ_I(bg_filter_contains(f, NULL, 0), bg_filter_contains(f, "", 0));
    /* The links' errors add up to under 0.01; measured over 100,000 keys. */
    int64_t ones = 0;
    for (uint64_t round = 0; round < 100; round++) {
        tu_batch_fill(&b, 0, 2, round * 1000, 1000);
        ones += bg_filter_contains_many(f, b.keys, b.lens, b.count, NULL);
    }
    TU_LT_D((double)ones / 100000.0, 0.012);
    tu_batch_free(&b);
    bg_filter_free(f);
}

/* The batch calls prefetch, defer the keys that pass their first positions
 * and answer them later (redisbloom.c, BATCHES): their answers equal the
 * single calls', key by key, present and absent keys mixed, in batches of
 * odd sizes, over a chain of two links whose arrays are allocations of
 * their own (2 MiB and more). */
static void batch_answers(void **state)
{
    (void)state;
    bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM, .capacity = 1600000,
                           .error_rate = 0.01};
    bg_filter *f;
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    tu_batch b;
    tu_batch_init(&b, 1000);
    for (uint64_t at = 0; at < 1610000; at += 1000) {
        tu_batch_fill(&b, 0, 1, at, 1000);
        TU_TRUE(bg_filter_add_many(f, b.keys, b.lens, b.count, NULL) >= 0);
    }
    bg_rb_chain ch;
    TU_EQ_I(bg_rb_chain_get(f, &ch), BG_OK);
    TU_EQ_U(ch.nfilters, 2);
    static const size_t sizes[] = {1, 7, 63, 64, 65, 129, 997};
    uint8_t r[1000], rh[1000];
    bg_hash h[1000];
    int64_t ones = 0;
    for (size_t round = 0; round < 40; round++) {
        size_t n = sizes[round % (sizeof sizes / sizeof sizes[0])];
        /* Keys of set 1 below 1610000 are present; the others mostly absent. */
        tu_batch_fill(&b, 0, 1, 1600000 + round * 997, n);
        for (size_t i = 0; i < n; i++)
            TU_EQ_I(bg_filter_hash(f, b.keys[i], b.lens[i], &h[i]), BG_OK);
        int64_t many = bg_filter_contains_many(f, b.keys, b.lens, n, r);
        TU_EQ_I(bg_filter_contains_hashes(f, h, n, rh), many);
        int64_t want = 0;
        for (size_t i = 0; i < n; i++) {
            tu_ctx("round %zu, key %zu of %zu", round, i, n);
            int one = bg_filter_contains(f, b.keys[i], b.lens[i]);
            TU_EQ_I(r[i], one);
            TU_EQ_I(rh[i], one);
            want += one;
        }
        TU_EQ_I(many, want);
        ones += want;
    }
    TU_TRUE(ones > 0);
    tu_batch_free(&b);
    bg_filter_free(f);
}

/* bg_rb_push_link_owned makes the link of bg_rb_push_link without a copy:
 * the same answers, the array in place; refused links free theirs (ASan
 * and the leak checks see it). */
static void push_link_owned(void **state)
{
    (void)state;
    bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM, .capacity = 2000000,
                           .error_rate = 0.01, .concurrency = BG_SINGLE_WRITER};
    bg_filter *src;
    TU_EQ_I(bg_filter_new(&src, &o), BG_OK);
    tu_batch b;
    tu_batch_init(&b, 1000);
    for (uint64_t at = 0; at < 20000; at += 1000) {
        tu_batch_fill(&b, 0, 1, at, 1000);
        TU_TRUE(bg_filter_add_many(src, b.keys, b.lens, b.count, NULL) >= 0);
    }
    bg_rb_chain ch;
    bg_rb_link l;
    const uint8_t *data;
    size_t len;
    TU_EQ_I(bg_rb_chain_get(src, &ch), BG_OK);
    TU_EQ_I(bg_rb_link_get(src, 0, &l), BG_OK);
    TU_EQ_I(bg_rb_link_array(src, 0, &data, &len), BG_OK);
    TU_TRUE(len >= (size_t)2 << 20); /* an array placed for huge pages */

    bg_filter *copy, *own;
    TU_EQ_I(bg_rb_new(&copy, &ch, 0), BG_OK);
    TU_EQ_I(bg_rb_new(&own, &ch, 0), BG_OK);
    TU_EQ_I(bg_rb_push_link(copy, &l, data, len), BG_OK);
    uint8_t *mine = malloc(len);
    memcpy(mine, data, len);
    TU_EQ_I(bg_rb_push_link_owned(own, &l, mine, len), BG_OK);
    const uint8_t *got;
    size_t got_len;
    TU_EQ_I(bg_rb_link_array(own, 0, &got, &got_len), BG_OK);
    TU_TRUE(got == mine);
    TU_EQ_U(got_len, len);
    TU_TRUE(bg_filter_memory(own, NULL) >= len);
    uint8_t r1[1000], r2[1000];
    for (uint64_t at = 0; at < 40000; at += 1000) {
        tu_batch_fill(&b, 0, 1, at, 1000);
        TU_EQ_I(bg_filter_contains_many(own, b.keys, b.lens, b.count, r1),
                bg_filter_contains_many(copy, b.keys, b.lens, b.count, r2));
        TU_TRUE(memcmp(r1, r2, b.count) == 0);
    }
    /* Adds and clones work on the adopted array as on any other. */
    TU_EQ_I(bg_filter_test_and_add(own, "new key", 7), bg_filter_test_and_add(copy, "new key", 7));
    bg_filter *clone;
    TU_EQ_I(bg_filter_clone(&clone, own), BG_OK);
    TU_EQ_I(bg_filter_contains(clone, "new key", 7), 1);
    bg_filter_free(clone);

    /* Refused: freed by the call, the chain unchanged. */
    bg_rb_link bad = l;
    bad.hashes++;
    uint8_t *lost = malloc(len);
    memcpy(lost, data, len);
    TU_EQ_I(bg_rb_push_link_owned(own, &bad, lost, len), BG_ECORRUPT);
    lost = malloc(16);
    TU_EQ_I(bg_rb_push_link_owned(own, &l, lost, 16), BG_ECORRUPT);
    lost = malloc(len);
    TU_EQ_I(bg_rb_push_link_owned(src, &l, lost, len), BG_OK); /* a second link */
    TU_EQ_I(bg_rb_push_link_owned(own, &l, NULL, len), BG_EINVAL);
    TU_EQ_I(bg_rb_push_link_owned(NULL, &l, malloc(8), 8), BG_EINVAL);
    TU_EQ_I(bg_rb_chain_get(own, &ch), BG_OK);
    TU_EQ_U(ch.nfilters, 1);

    tu_batch_free(&b);
    bg_filter_free(own);
    bg_filter_free(copy);
    bg_filter_free(src);
}

/* ---- fixtures ----------------------------------------------------------- */

#ifndef BG_RB_FIXTURES
#error "BG_RB_FIXTURES: the directory of RedisBloom's fixtures (tests/CMakeLists.txt)"
#endif

typedef struct blob {
    uint8_t *data;
    size_t len;
} blob;

/* The file at BG_RB_FIXTURES/<rel>; false if it does not exist. */
static bool blob_read(blob *b, const char *fmt, ...) CMOCKA_PRINTF_ATTRIBUTE(2, 3);
static bool blob_read(blob *b, const char *fmt, ...)
{
    char rel[256], path[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rel, sizeof rel, fmt, ap);
    va_end(ap);
    snprintf(path, sizeof path, "%s/%s", BG_RB_FIXTURES, rel);
    b->data = NULL;
    b->len = 0;
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return false;
    TU_EQ_I(fseek(fp, 0, SEEK_END), 0);
    long n = ftell(fp);
    TU_TRUE(n >= 0);
    rewind(fp);
    b->len = (size_t)n;
    b->data = malloc(b->len + 1);
    assert_non_null(b->data);
    TU_EQ_U(fread(b->data, 1, b->len, fp), b->len);
    b->data[b->len] = 0; /* JSON files are read as strings */
    fclose(fp);
    return true;
}

static void blob_free(blob *b)
{
    free(b->data);
    b->data = NULL;
}

/* JSON, as far as the fixtures need it: the value after the keys of `path`,
 * each looked for ("key":) after the one before. */
static const char *json_find(const char *text, const char *const *path, size_t n)
{
    const char *at = text;
    for (size_t i = 0; i < n; i++) {
        char pat[96];
        snprintf(pat, sizeof pat, "\"%s\":", path[i]);
        at = strstr(at, pat);
        if (at == NULL)
            fail_msg("JSON key %s not found", path[i]);
        at += strlen(pat);
    }
    while (*at == ' ' || *at == '\n')
        at++;
    return at;
}

/* The integer array at `path` into *out (malloc'd); its length. */
static size_t json_ints(const char *text, const char *const *path, size_t n, uint64_t **out)
{
    const char *at = json_find(text, path, n);
    TU_TRUE(*at == '[');
    at++;
    size_t cap = 16, len = 0;
    uint64_t *v = malloc(cap * sizeof *v);
    for (;;) {
        while (*at == ' ' || *at == '\n' || *at == ',')
            at++;
        if (*at == ']')
            break;
        char *end;
        uint64_t x = strtoull(at, &end, 10);
        TU_TRUE(end != at);
        at = end;
        if (len == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
        v[len++] = x;
    }
    *out = v;
    return len;
}

static uint64_t json_u64(const char *text, const char *const *path, size_t n)
{
    const char *at = json_find(text, path, n);
    char *end;
    uint64_t x = strtoull(at, &end, 10);
    TU_TRUE(end != at);
    return x;
}

static void json_str(const char *text, const char *const *path, size_t n, char *buf, size_t size)
{
    const char *at = json_find(text, path, n);
    TU_TRUE(*at == '"');
    const char *end = strchr(at + 1, '"');
    TU_TRUE(end != NULL && (size_t)(end - at - 1) < size);
    memcpy(buf, at + 1, (size_t)(end - at - 1));
    buf[end - at - 1] = 0;
}

#define PATH(...) (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)


/* SHA-256 (FIPS 180-4) of a short message, for the fixtures' vector_sha256:
 * the hex digest into hex[65]. */
static void sha256_hex(const uint8_t *msg, size_t len, char hex[65])
{
    static const uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    size_t total = (len + 9 + 63) / 64 * 64;
    uint8_t *m = calloc(1, total);
    assert_non_null(m);
    memcpy(m, msg, len);
    m[len] = 0x80;
    for (unsigned i = 0; i < 8; i++)
        m[total - 1 - i] = (uint8_t)((uint64_t)len * 8 >> (8 * i));
#define ROR(x, n) ((x) >> (n) | (x) << (32 - (n)))
    for (size_t at = 0; at < total; at += 64) {
        uint32_t w[64];
        for (size_t i = 0; i < 16; i++)
            w[i] = (uint32_t)m[at + 4 * i] << 24 | (uint32_t)m[at + 4 * i + 1] << 16 |
                   (uint32_t)m[at + 4 * i + 2] << 8 | m[at + 4 * i + 3];
        for (int i = 16; i < 64; i++) {
            uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
        for (int i = 0; i < 64; i++) {
            uint32_t t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + k[i] +
                          w[i];
            uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            hh = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
    }
#undef ROR
    free(m);
    for (int i = 0; i < 8; i++)
        snprintf(hex + 8 * i, 9, "%08x", h[i]);
}

/* The JSON string at `path` into buf. */
static void json_str(const char *text, const char *const *path, size_t n, char *buf, size_t size);

/* The items of a fixture: "<prefix>:<name>:<i>". */
typedef struct items {
    char **key;
    size_t *len;
    size_t count;
} items;

static void items_make(items *it, const char *prefix, const char *name, size_t first, size_t count)
{
    it->key = malloc(count * sizeof *it->key);
    it->len = malloc(count * sizeof *it->len);
    it->count = count;
    for (size_t i = 0; i < count; i++) {
        char buf[64];
        int n = snprintf(buf, sizeof buf, "%s:%s:%zu", prefix, name, first + i);
        it->key[i] = strdup(buf);
        it->len[i] = (size_t)n;
    }
}

static void items_free(items *it)
{
    for (size_t i = 0; i < it->count; i++)
        free(it->key[i]);
    free(it->key);
    free(it->len);
}

/* The SCANDUMP sequence of a fixture (dir/scandump/NNN.bin). */
typedef struct dump_seq {
    blob part[16];
    size_t n; /* 000.bin is the header */
} dump_seq;

static void seq_read(dump_seq *s, const char *dir)
{
    s->n = 0;
    while (s->n < 16 && blob_read(&s->part[s->n], "%s/scandump/%03zu.bin", dir, s->n))
        s->n++;
    TU_TRUE(s->n >= 2);
}

static void seq_free(dump_seq *s)
{
    for (size_t i = 0; i < s->n; i++)
        blob_free(&s->part[i]);
}

/* The chain that replaying BF.LOADCHUNK of the sequence on a missing key
 * makes: the header at iterator 1, each chunk at its reply iterator. */
static bg_filter *seq_load(const dump_seq *s)
{
    bg_filter *f;
    TU_EQ_I(bg_rb_header_decode(&f, s->part[0].data, s->part[0].len, 0), BG_OK);
    int64_t it = 1;
    for (size_t i = 1; i < s->n; i++) {
        it += (int64_t)s->part[i].len;
        TU_EQ_I(bg_rb_load_chunk(f, it, s->part[i].data, s->part[i].len), BG_OK);
    }
    return f;
}

/* f's SCANDUMP sequence is the fixture's, byte for byte and iterator for
 * iterator: the header (every chain and link field) and every link's array. */
static void seq_check(const bg_filter *f, const dump_seq *s)
{
    uint8_t head[20 + 53 * 16];
    size_t len;
    char ctx[256];
    snprintf(ctx, sizeof ctx, "%s", tu_ctx_buf());
    TU_EQ_U(bg_rb_header_size(f), s->part[0].len);
    TU_EQ_I(bg_rb_header_encode(f, head, sizeof head, &len), BG_OK);
    TU_EQ_U(len, s->part[0].len);
    TU_TRUE(memcmp(head, s->part[0].data, len) == 0);
    int64_t it = 0, next;
    const uint8_t *data;
    TU_EQ_I(bg_rb_dump_chunk(f, it, &next, &data, &len), 1);
    TU_EQ_I(next, 1);
    for (size_t i = 1; i < s->n; i++) {
        it = next;
        TU_EQ_I(bg_rb_dump_chunk(f, it, &next, &data, &len), 0);
        tu_ctx("%s chunk %zu", ctx, i);
        TU_EQ_U(len, s->part[i].len);
        TU_EQ_I(next, it + (int64_t)len);
        TU_TRUE(memcmp(data, s->part[i].data, len) == 0);
    }
    TU_EQ_I(bg_rb_dump_chunk(f, next, &next, &data, &len), 0);
    TU_EQ_I(next, 0);
    TU_EQ_U(len, 0);
    tu_ctx("%s", ctx);
}

/* Every added item answers 1; the absent ones answer 1 exactly at
 * `ones` (one_indices). */
static void answers_check(bg_filter *f, const char *name, size_t added, const uint64_t *ones,
                          size_t nones, const char *sha)
{
    items it;
    if (added > 0) {
        items_make(&it, "fx", name, 0, added);
        uint8_t *r = malloc(added);
        for (size_t at = 0; at < added; at += 1000) {
            size_t n = added - at < 1000 ? added - at : 1000;
            TU_EQ_I(bg_filter_contains_many(f, (const void *const *)it.key + at, it.len + at, n,
                                            r + at),
                    (int64_t)n);
        }
        for (size_t i = 0; i < added; i++)
            TU_EQ_I(bg_filter_contains(f, it.key[i], it.len[i]), 1);
        free(r);
        items_free(&it);
    }
    items_make(&it, "absent", name, 0, 20000);
    uint8_t *r = malloc(20000);
    int64_t total = 0;
    for (size_t at = 0; at < 20000; at += 1000)
        total += bg_filter_contains_many(f, (const void *const *)it.key + at, it.len + at, 1000,
                                         r + at);
    TU_EQ_I(total, (int64_t)nones);
    size_t j = 0;
    for (size_t i = 0; i < 20000; i++) {
        int want = j < nones && ones[j] == i;
        if (want)
            j++;
        if (r[i] != want)
            fail_msg("[%s] absent:%s:%zu answers %d, RedisBloom %d", tu_ctx_buf(), name, i, r[i],
                     want);
        TU_EQ_I(bg_filter_contains(f, it.key[i], it.len[i]), want);
    }
    /* The string of 0/1 answers, as the fixture's vector_sha256 hashes it. */
    if (sha != NULL) {
        char vec[20000], hex[65];
        for (size_t i = 0; i < 20000; i++)
            vec[i] = (char)('0' + r[i]);
        sha256_hex((const uint8_t *)vec, sizeof vec, hex);
        assert_string_equal(hex, sha);
    }
    free(r);
    items_free(&it);
}

/* Adds items [first, first + count) in batches of `batch` (0: one
 * bg_filter_test_and_add each), checking that exactly the adds at
 * `zeros` (indices from 0 of the whole item set) answer 0. */
static void replay_adds(bg_filter *f, const char *name, size_t first, size_t count, size_t batch,
                        const uint64_t *zeros, size_t nzeros)
{
    items it;
    items_make(&it, "fx", name, first, count);
    uint8_t *r = malloc(count ? count : 1);
    for (size_t at = 0; at < count;) {
        if (batch == 0) {
            int rc = bg_filter_test_and_add(f, it.key[at], it.len[at]);
            TU_TRUE(rc == 0 || rc == 1);
            r[at++] = (uint8_t)rc;
            continue;
        }
        size_t n = count - at < batch ? count - at : batch;
        int64_t ones = bg_filter_add_many(f, (const void *const *)it.key + at, it.len + at, n,
                                          r + at);
        TU_TRUE(ones >= 0);
        at += n;
    }
    size_t j = 0;
    for (size_t i = 0; i < count; i++) {
        int want = !(j < nzeros && zeros[j] == first + i);
        if (!want)
            j++;
        if (r[i] != want)
            fail_msg("[%s] add of fx:%s:%zu answers %d, RedisBloom %d", tu_ctx_buf(), name,
                     first + i, r[i], want);
    }
    TU_EQ_U(j, nzeros);
    free(r);
    items_free(&it);
}

/* The keys of keys/, with the commands that made them. */
typedef struct fixture_key {
    const char *name;
    uint64_t capacity;
    double error;
    uint32_t expansion;
    bool nonscaling;
    size_t items;
    size_t batch; /* 0: one BF.ADD per item */
} fixture_key;

static const fixture_key fixture_keys[] = {
    {"scale2", 1000, 0.01, 2, false, 20000, 1000},
    {"onelink", 100000, 0.001, 0, false, 30000, 1000},
    {"nonscaling", 500, 0.05, 0, true, 505, 0},
    {"auto", 100, 0.01, 0, false, 250, 0},
    {"exp4", 10, 0.1, 4, false, 300, 1000},
    {"empty", 10000, 0.001, 0, false, 0, 1000},
    {"large", 20000, 0.02, 3, false, 200000, 1000},
};

/* Each key rebuilt from its SCANDUMP sequence answers as RedisBloom did,
 * and dumps back the same sequence. */
static void fixture_keys_loaded(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof fixture_keys / sizeof fixture_keys[0]; k++) {
        const fixture_key *fk = &fixture_keys[k];
        char dir[64];
        snprintf(dir, sizeof dir, "keys/%s", fk->name);
        tu_ctx("%s loaded", dir);
        dump_seq s;
        seq_read(&s, dir);
        bg_filter *f = seq_load(&s);
        seq_check(f, &s);

        blob mex, info;
        TU_TRUE(blob_read(&mex, "%s/mexists.json", dir));
        TU_TRUE(blob_read(&info, "%s/info.json", dir));
        const char *m = (const char *)mex.data, *in = (const char *)info.data;
        TU_EQ_U(bg_filter_capacity(f), json_u64(in, PATH("bf_info", "Capacity")));
        TU_EQ_U(bg_filter_items(f), json_u64(in, PATH("bf_card")));
        bg_rb_chain ch;
        TU_EQ_I(bg_rb_chain_get(f, &ch), BG_OK);
        TU_EQ_U(ch.nfilters, json_u64(in, PATH("bf_info", "Number of filters")));
        uint64_t *ones, *none;
        size_t nones = json_ints(m, PATH("absent", "one_indices"), &ones);
        TU_EQ_U(json_ints(m, PATH("added", "zero_indices"), &none), 0);
        char sha[80];
        json_str(m, PATH("absent", "vector_sha256"), sha, sizeof sha);
        answers_check(f, fk->name, fk->items, ones, nones, sha);
        free(ones);
        free(none);
        blob_free(&mex);
        blob_free(&info);
        bg_filter_free(f);
        seq_free(&s);
    }
}

/* Each key made again from scratch by the commands that made it: the same
 * add replies, header and arrays. */
static void fixture_keys_replayed(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof fixture_keys / sizeof fixture_keys[0]; k++) {
        const fixture_key *fk = &fixture_keys[k];
        char dir[64];
        snprintf(dir, sizeof dir, "keys/%s", fk->name);
        tu_ctx("%s replayed", dir);
        bg_filter_options o = {
            .variant = BG_VARIANT_REDISBLOOM,
            .capacity = fk->capacity,
            .error_rate = fk->error,
            .expansion = fk->expansion,
            .nonscaling = fk->nonscaling,
        };
        bg_filter *f;
        TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
        blob mex;
        TU_TRUE(blob_read(&mex, "%s/mexists.json", dir));
        uint64_t *zeros;
        size_t nzeros = json_ints((const char *)mex.data, PATH("add_replies", "zero_indices"), &zeros);
        replay_adds(f, fk->name, 0, fk->items, fk->batch, zeros, nzeros);
        if (fk->nonscaling) {
            /* The next new item: "ERR non scaling filter is full". */
            uint64_t at = json_u64((const char *)mex.data, PATH("add_replies", "rejected_item_index"));
            char key[64];
            int n = snprintf(key, sizeof key, "fx:%s:%" PRIu64, fk->name, at);
            TU_EQ_I(bg_filter_test_and_add(f, key, (size_t)n), BG_EFULL);
        }
        dump_seq s;
        seq_read(&s, dir);
        seq_check(f, &s);
        free(zeros);
        blob_free(&mex);
        seq_free(&s);
        bg_filter_free(f);
    }
}

/* The legacy chains: restored/ (RedisBloom's SCANDUMP right after RESTORE
 * of an old encoding) loads and answers as RedisBloom did; the BF.MADDs
 * that followed grow it, by its old options, into after/. */
static const struct {
    const char *name;
    size_t before, after;
} legacy_keys[] = {
    {"legacy_v0", 50, 400},
    {"legacy_v1", 600, 3000},
    {"legacy_v2", 2500, 6000},
    {"legacy_v3", 400, 4000},
};

static void legacy_grown(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof legacy_keys / sizeof legacy_keys[0]; k++) {
        const char *name = legacy_keys[k].name;
        char dir[64];
        tu_ctx("legacy %s", name);
        blob js;
        TU_TRUE(blob_read(&js, "legacy/%s/legacy.json", name));
        const char *j = (const char *)js.data;

        snprintf(dir, sizeof dir, "legacy/%s/restored", name);
        dump_seq s;
        seq_read(&s, dir);
        bg_filter *f = seq_load(&s);
        seq_check(f, &s);
        uint64_t *ones, *zeros;
        size_t n = json_ints(j, PATH("restored", "mexists_absent", "one_indices"), &ones);
        answers_check(f, name, legacy_keys[k].before, ones, n, NULL);
        free(ones);
        seq_free(&s);

        size_t nz = json_ints(j, PATH("post_adds", "zero_indices"), &zeros);
        replay_adds(f, name, legacy_keys[k].before, legacy_keys[k].after - legacy_keys[k].before,
                    1000, zeros, nz);
        snprintf(dir, sizeof dir, "legacy/%s/after", name);
        seq_read(&s, dir);
        seq_check(f, &s);
        n = json_ints(j, PATH("after", "mexists_absent", "one_indices"), &ones);
        answers_check(f, name, legacy_keys[k].after, ones, n, NULL);
        free(ones);
        free(zeros);
        seq_free(&s);
        bg_filter_free(f);
        blob_free(&js);
    }
}


/* ---- RDB values (DUMP payloads) ------------------------------------------
 * A loader's view: the module value's fields read one at a time, as a
 * Redis module's rdb_load reads them, handed to bg_rb_new and
 * bg_rb_push_link by the encoding version's table (REDISBLOOM_FORMAT.md
 * section 6). */

typedef struct rdb {
    const uint8_t *p, *end;
} rdb;

static uint8_t rdb_byte(rdb *r)
{
    TU_TRUE(r->p < r->end);
    return *r->p++;
}

static uint64_t rdb_be(rdb *r, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | rdb_byte(r);
    return v;
}

/* An RDB length; *lzf set for the LZF string form (0xC3). */
static uint64_t rdb_len(rdb *r, bool *lzf)
{
    uint8_t b = rdb_byte(r);
    if (lzf)
        *lzf = false;
    switch (b >> 6) {
    case 0:
        return b & 0x3f;
    case 1:
        return (uint64_t)(b & 0x3f) << 8 | rdb_byte(r);
    case 2:
        TU_TRUE(b == 0x80 || b == 0x81);
        return rdb_be(r, b == 0x80 ? 4 : 8);
    default:
        TU_TRUE(lzf != NULL && b == 0xc3);
        *lzf = true;
        return 0;
    }
}

/* LZF (liblzf's format): literal runs and back references. */
static void lzf_expand(const uint8_t *in, size_t n, uint8_t *out, size_t want)
{
    size_t i = 0, o = 0;
    while (i < n) {
        unsigned ctrl = in[i++];
        if (ctrl < 32) {
            size_t len = ctrl + 1;
            TU_TRUE(i + len <= n && o + len <= want);
            memcpy(out + o, in + i, len);
            i += len;
            o += len;
            continue;
        }
        size_t len = ctrl >> 5;
        if (len == 7)
            len += in[i++];
        size_t back = ((size_t)(ctrl & 0x1f) << 8) + in[i++] + 1;
        len += 2;
        TU_TRUE(back <= o && o + len <= want);
        for (size_t j = 0; j < len; j++, o++)
            out[o] = out[o - back];
    }
    TU_EQ_U(o, want);
}

static uint64_t rdb_unsigned(rdb *r)
{
    TU_EQ_U(rdb_len(r, NULL), 2);
    return rdb_len(r, NULL);
}

static double rdb_double(rdb *r)
{
    TU_EQ_U(rdb_len(r, NULL), 4);
    uint64_t v = 0;
    for (unsigned i = 0; i < 8; i++)
        v |= (uint64_t)rdb_byte(r) << (8 * i);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

/* A string buffer (malloc'd) and its length. */
static uint8_t *rdb_string(rdb *r, size_t *len)
{
    TU_EQ_U(rdb_len(r, NULL), 5);
    bool lzf;
    uint64_t n = rdb_len(r, &lzf);
    if (!lzf) {
        TU_TRUE(n <= (uint64_t)(r->end - r->p));
        uint8_t *b = malloc(n ? n : 1);
        memcpy(b, r->p, n);
        r->p += n;
        *len = n;
        return b;
    }
    uint64_t clen = rdb_len(r, NULL), ulen = rdb_len(r, NULL);
    TU_TRUE(clen <= (uint64_t)(r->end - r->p));
    uint8_t *b = malloc(ulen ? ulen : 1);
    lzf_expand(r->p, clen, b, ulen);
    r->p += clen;
    *len = ulen;
    return b;
}

/* The chain of a DUMP payload, loaded field by field. */
static bg_filter *dump_load(const blob *payload)
{
    rdb r = {payload->data, payload->data + payload->len - 10}; /* less version and CRC */
    TU_EQ_U(rdb_byte(&r), 7);
    uint64_t id = rdb_len(&r, NULL);
    TU_EQ_U(id >> 10, UINT64_C(0x3016e5a289bef804) >> 10); /* MBbloom-- */
    unsigned encver = (unsigned)(id & 1023);
    TU_TRUE(encver <= 4);
    bg_rb_chain ch = {.growth = 2};
    ch.size = rdb_unsigned(&r);
    uint64_t nfilters = rdb_unsigned(&r);
    TU_TRUE(nfilters >= 1 && nfilters <= UINT32_MAX);
    ch.nfilters = (uint32_t)nfilters;
    if (encver >= 2)
        ch.options = (uint32_t)rdb_unsigned(&r);
    if (encver >= 4)
        ch.growth = (uint32_t)rdb_unsigned(&r);
    bg_filter *f;
    TU_EQ_I(bg_rb_new(&f, &ch, 0), BG_OK);
    for (uint64_t i = 0; i < nfilters; i++) {
        bg_rb_link l = {0};
        l.entries = rdb_unsigned(&r);
        l.error = rdb_double(&r);
        l.hashes = (uint32_t)rdb_unsigned(&r);
        l.bpe = rdb_double(&r);
        if (encver == 0) {
            l.bits = (uint64_t)((double)l.entries * l.bpe);
        } else {
            l.bits = rdb_unsigned(&r);
            l.n2 = (uint8_t)rdb_unsigned(&r);
        }
        size_t len;
        uint8_t *array = rdb_string(&r, &len);
        l.size = rdb_unsigned(&r);
        TU_EQ_I(bg_rb_push_link(f, &l, array, len), BG_OK);
        free(array);
    }
    TU_EQ_U(rdb_len(&r, NULL), 0); /* the end opcode */
    TU_TRUE(r.p == r.end);
    return f;
}

/* Every DUMP payload (encoding 4, and the legacy inputs in 0 to 3) loads,
 * through bg_rb_new and bg_rb_push_link, into the chain RedisBloom's
 * SCANDUMP shows for it. */
static void dump_payloads_loaded(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof fixture_keys / sizeof fixture_keys[0]; k++) {
        char dir[64];
        snprintf(dir, sizeof dir, "keys/%s", fixture_keys[k].name);
        tu_ctx("%s dump.bin", dir);
        blob b;
        TU_TRUE(blob_read(&b, "%s/dump.bin", dir));
        bg_filter *f = dump_load(&b);
        dump_seq s;
        seq_read(&s, dir);
        seq_check(f, &s);
        seq_free(&s);
        bg_filter_free(f);
        blob_free(&b);
    }
    for (size_t k = 0; k < sizeof legacy_keys / sizeof legacy_keys[0]; k++) {
        static const char *const files[] = {"input.bin", "restored/dump.bin", "after/dump.bin"};
        static const char *const seqs[] = {"restored", "restored", "after"};
        for (size_t i = 0; i < 3; i++) {
            char dir[64];
            tu_ctx("legacy/%s/%s", legacy_keys[k].name, files[i]);
            blob b;
            TU_TRUE(blob_read(&b, "legacy/%s/%s", legacy_keys[k].name, files[i]));
            bg_filter *f = dump_load(&b);
            snprintf(dir, sizeof dir, "legacy/%s/%s", legacy_keys[k].name, seqs[i]);
            dump_seq s;
            seq_read(&s, dir);
            seq_check(f, &s);
            seq_free(&s);
            bg_filter_free(f);
            blob_free(&b);
        }
    }
}


/* ---- what is refused ------------------------------------------------------ */

static void put64(uint8_t *p, uint64_t v)
{
    for (unsigned i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void putf(uint8_t *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    put64(p, v);
}

/* BF.LOADCHUNK's header rules, each broken once on fx:scale2's header. */
static void header_refused(void **state)
{
    (void)state;
    blob h;
    TU_TRUE(blob_read(&h, "keys/scale2/scandump/000.bin"));
    TU_EQ_U(h.len, 20 + 53 * 5);
    uint8_t b[20 + 53 * 5 + 1];
    bg_filter *f = (bg_filter *)&f;
    for (int c = 0; c < 17; c++) {
        memcpy(b, h.data, h.len);
        size_t len = h.len;
        uint8_t *l2 = b + 20 + 53 * 2; /* a middle link */
        int want = BG_ECORRUPT;
        uint64_t max_bytes = 0;
        switch (c) {
        case 0: len = 19; break;
        case 1: len = 0; break;
        case 2: memset(b + 8, 0, 4); break;                /* nfilters 0 */
        case 3: len -= 1; break;
        case 4: b[len++] = 0; break;
        case 5: b[12] |= 0x10; break;                      /* an unknown option */
        case 6: b[0] ^= 1; break;                          /* size != sum */
        case 7: putf(l2 + 24, 0.0); break;                 /* error */
        case 8: putf(l2 + 24, 1.0); break;
        case 9: putf(l2 + 24, NAN); break;
        case 10: l2[52] = 64; break;                        /* n2 */
        case 11: l2[52] = 20; break;                        /* bits < 2^n2 */
        case 12: put64(l2 + 8, 0); put64(l2, 0); break;     /* bits 0 */
        case 13: put64(l2 + 8, 8 * 3120 + 8); break;        /* bits != 8 bytes */
        case 14: l2[40] ^= 1; break;                        /* hashes */
        case 15: max_bytes = 60423; want = BG_ETOOBIG; break;
        case 16: max_bytes = 60424; want = BG_OK; break;    /* exactly the arrays */
        }
        tu_ctx("header case %d", c);
        TU_EQ_I(bg_rb_header_decode(&f, b, len, max_bytes), want);
        if (want != BG_OK)
            TU_TRUE(f == NULL);
        bg_filter_free(f);
    }
    /* Unknown option bits are refused in a header but kept from RDB. */
    bg_rb_chain ch = {.nfilters = 1, .options = 0x25, .growth = 2};
    TU_EQ_I(bg_rb_new(&f, &ch, 0), BG_OK);
    bg_rb_chain got;
    TU_EQ_I(bg_rb_chain_get(f, &got), BG_OK);
    TU_EQ_U(got.options, 0x25);
    TU_EQ_U(got.nfilters, 0);
    /* No link yet: the filter calls refuse it. */
    TU_EQ_I(bg_filter_contains(f, "a", 1), BG_EINVAL);
    TU_EQ_I(bg_filter_test_and_add(f, "a", 1), BG_EINVAL);
    bg_filter_stats st;
    TU_EQ_I(bg_filter_stats_get(f, &st), BG_EINVAL);
    bg_filter_free(f);
    ch.nfilters = 0;
    TU_EQ_I(bg_rb_new(&f, &ch, 0), BG_ECORRUPT);
    TU_TRUE(f == NULL);
    TU_EQ_I(bg_rb_header_decode(NULL, h.data, h.len, 0), BG_EINVAL);
    TU_EQ_I(bg_rb_header_decode(&f, NULL, 5, 0), BG_EINVAL);
    blob_free(&h);
}

/* bg_rb_push_link's RDB checks. */
static void links_refused(void **state)
{
    (void)state;
    bg_rb_chain ch = {.nfilters = 1, .options = 5, .growth = 2};
    bg_filter *f;
    TU_EQ_I(bg_rb_new(&f, &ch, 4096), BG_OK);
    bg_rb_link good;
    TU_EQ_I(bg_rb_link_plan(&good, 1000, 0.005, 5), BG_OK);
    uint8_t *array = calloc(1, 8192);
    for (int c = 0; c < 10; c++) {
        bg_rb_link l = good;
        size_t len = (size_t)good.bytes;
        int want = BG_ECORRUPT;
        switch (c) {
        case 0: len -= 1; break;                             /* shorter than bits / 8 */
        case 1: len += 8; break;                             /* bits != 8 length */
        case 2: l.error = 0; break;
        case 3: l.error = -0.5; break;
        case 4: l.n2 = 14; break;                            /* 2^14 > 11072 bits */
        case 5: l.bits = 0; break;
        case 6: l.hashes = 9; break;
        case 7: l.bpe = NAN; break;
        case 8: len = 8192; l.bits = 8 * 8192; want = BG_ETOOBIG; break; /* max_bytes */
        case 9: want = BG_OK; break;
        }
        tu_ctx("link case %d", c);
        TU_EQ_I(bg_rb_push_link(f, &l, array, len), want);
        bg_rb_chain got;
        TU_EQ_I(bg_rb_chain_get(f, &got), BG_OK);
        TU_EQ_U(got.nfilters, want == BG_OK ? 1 : 0);
    }
    /* A power-of-two link, and a zeroed one made from its fields alone. */
    bg_rb_link p2;
    TU_EQ_I(bg_rb_link_plan(&p2, 100, 0.01, 0), BG_OK);
    TU_EQ_I(bg_rb_push_link(f, &p2, NULL, 0), BG_OK);
    TU_EQ_I(bg_rb_push_link(f, &p2, NULL, 1), BG_EINVAL);
    TU_EQ_I(bg_rb_push_link(NULL, &p2, NULL, 0), BG_EINVAL);
    TU_EQ_I(bg_rb_push_link(f, NULL, NULL, 0), BG_EINVAL);
    bg_rb_link got;
    TU_EQ_I(bg_rb_link_get(f, 1, &got), BG_OK);
    TU_TRUE(got.n2 == 10 && got.n2 == p2.n2 && got.bytes == p2.bytes && got.bits == p2.bits &&
            got.entries == p2.entries && got.hashes == p2.hashes && got.error == p2.error &&
            got.bpe == p2.bpe && got.size == 0);
    TU_EQ_I(bg_rb_link_get(f, 2, &got), BG_EINVAL);
    free(array);
    bg_filter_free(f);

    /* Not this variant. */
    bg_filter_options o = {.capacity = 100, .error_rate = 0.01};
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    TU_EQ_I(bg_rb_push_link(f, &good, NULL, 0), BG_EINVAL);
    bg_rb_chain c2;
    TU_EQ_I(bg_rb_chain_get(f, &c2), BG_EINVAL);
    TU_EQ_U(bg_rb_header_size(f), 0);
    TU_EQ_I(bg_rb_load_chunk(f, 9, "x", 1), BG_EINVAL);
    bg_filter_free(f);
}

/* BF.LOADCHUNK's chunk rules on fx:exp4 (links of 8, 40, 184, 848 bytes). */
static void chunks_refused(void **state)
{
    (void)state;
    dump_seq s;
    seq_read(&s, "keys/exp4");
    bg_filter *f = seq_load(&s);
    TU_EQ_U(s.n, 5);
    TU_EQ_U(s.part[1].len, 8);
    TU_EQ_U(s.part[2].len, 40);
    uint8_t junk[1024];
    memset(junk, 0xa5, sizeof junk);
    static const struct {
        int64_t it;
        size_t len;
        int want;
    } c[] = {
        {0, 0, BG_ECORRUPT},
        {-5, 0, BG_ECORRUPT},
        {3, 4, BG_ECORRUPT},                 /* it < length */
        {1, 20 + 53 * 4, BG_ECORRUPT},       /* a header on an existing key */
        {4, 4, BG_EOFFSET},                  /* start 0 */
        {1 + 1080, 0, BG_EOFFSET},           /* start 1081: position 1080, past the end */
        {1 + 1080 + 10, 10, BG_EOFFSET},
        {1 + 8 + 40 + 1, 41, BG_ECHUNK},     /* position 8: link 1, 40 bytes left */
        {1 + 4 + 5, 5, BG_ECHUNK},           /* position 4 in link 0, 4 left */
        {1 + 232 + 849, 849, BG_ECHUNK},     /* position 232: link 3 at 0, 848 long */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        tu_ctx("chunk case %zu", i);
        TU_EQ_I(bg_rb_load_chunk(f, c[i].it, junk, c[i].len), c[i].want);
    }
    tu_ctx("after refused chunks");
    seq_check(f, &s); /* nothing changed */
    /* Accepted: an empty chunk, the last byte, a whole link. */
    TU_EQ_I(bg_rb_load_chunk(f, 9, junk, 0), BG_OK);
    TU_EQ_I(bg_rb_load_chunk(f, 1 + 1079 + 1, junk, 1), BG_OK);
    TU_EQ_I(bg_rb_load_chunk(f, 1 + 8 + 40, junk, 40), BG_OK);
    const uint8_t *d;
    size_t len;
    TU_EQ_I(bg_rb_link_array(f, 1, &d, &len), BG_OK);
    TU_TRUE(len == 40 && memcmp(d, junk, 40) == 0);
    TU_EQ_I(bg_rb_link_array(f, 3, &d, &len), BG_OK);
    TU_EQ_U(d[847], 0xa5);
    TU_EQ_U(bg_filter_items(f), 283); /* counters never change */
    TU_EQ_I(bg_rb_load_chunk(f, 10, NULL, 1), BG_EINVAL);
    /* SCANDUMP past the end or before the start: the end of the sequence. */
    int64_t next = 7;
    const uint8_t *data = junk;
    TU_EQ_I(bg_rb_dump_chunk(f, -1, &next, &data, &len), 0);
    TU_TRUE(next == 0 && data == NULL && len == 0);
    TU_EQ_I(bg_rb_dump_chunk(f, 1081, &next, &data, &len), 0);
    TU_EQ_I(next, 0);
    TU_EQ_I(bg_rb_dump_chunk(f, 1080, &next, &data, &len), 0);
    TU_TRUE(next == 1081 && len == 1);
    TU_EQ_I(bg_rb_dump_chunk(f, 5, &next, &data, &len), 0); /* mid-link: to its end */
    TU_TRUE(next == 9 && len == 4);
    bg_filter_free(f);
    seq_free(&s);
}

/* A link over 16 MiB is dumped in chunks of at most 16 MiB, and loads back
 * from them. */
static void large_link_chunks(void **state)
{
    (void)state;
    bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM, .capacity = 20000000,
                           .error_rate = 0.01};
    bg_filter *f, *g;
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    uint64_t bytes = bg_filter_bytes(f);
    TU_TRUE(bytes > BG_RB_CHUNK_MAX && bytes < 2 * BG_RB_CHUNK_MAX);
    TU_EQ_I(bg_filter_test_and_add(f, "x", 1), 1);
    uint8_t head[20 + 53];
    size_t len;
    TU_EQ_I(bg_rb_header_encode(f, head, sizeof head, &len), BG_OK);
    TU_EQ_I(bg_rb_header_encode(f, head, sizeof head - 1, &len), BG_ETRUNC);
    TU_EQ_I(bg_rb_header_decode(&g, head, len, 0), BG_OK);
    int64_t it = 1, next;
    const uint8_t *data;
    TU_EQ_I(bg_rb_dump_chunk(f, it, &next, &data, &len), 0);
    TU_EQ_U(len, BG_RB_CHUNK_MAX);
    TU_EQ_I(bg_rb_load_chunk(g, next, data, len), BG_OK);
    it = next;
    TU_EQ_I(bg_rb_dump_chunk(f, it, &next, &data, &len), 0);
    TU_EQ_U(len, bytes - BG_RB_CHUNK_MAX);
    TU_EQ_I(bg_rb_load_chunk(g, next, data, len), BG_OK);
    TU_EQ_I(bg_rb_dump_chunk(f, next, &next, &data, &len), 0);
    TU_EQ_I(next, 0);
    TU_EQ_I(bg_filter_contains(g, "x", 1), 1);
    TU_EQ_U(bg_filter_items(g), 1);
    bg_filter_free(f);
    bg_filter_free(g);
}

/* Growth that cannot happen refuses the add and changes nothing. */
static void growth_refused(void **state)
{
    (void)state;
    /* ENTS_IS_BITS: the next capacity, 13 x 5, is beyond 64 bits' exponent. */
    bg_rb_chain ch = {.nfilters = 1, .options = BG_RB_ENTS_IS_BITS | BG_RB_FORCE64, .growth = 5};
    bg_filter *f;
    TU_EQ_I(bg_rb_new(&f, &ch, 0), BG_OK);
    bg_rb_link l;
    TU_EQ_I(bg_rb_link_plan(&l, 6, 0.1, ch.options), BG_OK); /* 64 bits */
    TU_EQ_U(l.n2, 6);
    TU_EQ_U(l.entries, 13);
    TU_EQ_I(bg_rb_push_link(f, &l, NULL, 0), BG_OK);
    int rc = 0;
    size_t added = 0;
    for (size_t i = 0; i < 1000 && rc >= 0; i++) {
        char key[32];
        rc = bg_filter_test_and_add(f, key, (size_t)snprintf(key, sizeof key, "k%zu", i));
        added += rc == 1;
    }
    TU_EQ_I(rc, BG_ETOOBIG);
    TU_EQ_U(bg_filter_items(f), added);
    TU_EQ_U(added, 13);
    bg_filter_free(f);

    /* max_bytes: the next link does not fit. */
    bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM, .capacity = 100,
                           .error_rate = 0.01, .max_bytes = 400};
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    TU_EQ_U(bg_filter_bytes(f), 144);
    rc = 0;
    added = 0;
    for (size_t i = 0; i < 10000 && rc >= 0; i++) {
        char key[32];
        rc = bg_filter_test_and_add(f, key, (size_t)snprintf(key, sizeof key, "k%zu", i));
        added += rc == 1;
    }
    TU_EQ_I(rc, BG_ETOOBIG);
    TU_EQ_U(added, 100);
    TU_EQ_U(bg_filter_items(f), 100);
    bg_filter_free(f);
    o.max_bytes = 143;
    TU_EQ_I(bg_filter_new(&f, &o), BG_ETOOBIG);
    TU_TRUE(f == NULL);

    /* bg_filter_new's arguments. */
    bg_filter_options bad[] = {
        {.variant = BG_VARIANT_REDISBLOOM, .capacity = 0, .error_rate = 0.01},
        {.variant = BG_VARIANT_REDISBLOOM, .capacity = 10, .error_rate = 1.0},
        {.variant = BG_VARIANT_REDISBLOOM, .capacity = 10, .error_rate = 0.01, .seed = 1},
        {.variant = BG_VARIANT_REDISBLOOM, .capacity = 10, .error_rate = 0.01, .bits = 64},
        {.variant = BG_VARIANT_REDISBLOOM, .capacity = 10, .error_rate = 0.01, .nonscaling = true,
         .expansion = 2},
        {.variant = BG_VARIANT_REDISBLOOM, .capacity = 10, .error_rate = 0.01,
         .expansion = BG_MAX_EXPANSION + 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tu_ctx("bad options %zu", i);
        TU_EQ_I(bg_filter_new(&f, &bad[i]), BG_EINVAL);
    }
}

/* What the calls of <bloomgate/filter.h> report on a chain. */
static void filter_calls(void **state)
{
    (void)state;
    dump_seq s;
    seq_read(&s, "keys/scale2");
    bg_filter *f = seq_load(&s), *c;
    bg_filter_stats st;
    TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
    TU_EQ_I(st.variant, BG_VARIANT_REDISBLOOM);
    TU_EQ_U(st.capacity, 31000);
    TU_EQ_U(st.items, 19814);
    TU_EQ_U(st.layers, 5);
    TU_EQ_U(st.bytes, 1384 + 3120 + 6960 + 15360 + 33600);
    TU_EQ_U(st.bits, 8 * st.bytes);
    TU_EQ_U(st.hashes, 12);
    TU_IN_RANGE_D(st.error_rate, 0.0096, 0.0097);
    TU_TRUE(st.bits_set > 0 && st.bits_set < st.bits);
    TU_EQ_U(bg_filter_hashes(f), 12);
    TU_EQ_U(bg_filter_seed(f), 0);
    TU_EQ_I(bg_filter_layer_stats(f, 1, &st), BG_OK);
    TU_EQ_U(st.capacity, 2000);
    TU_EQ_U(st.items, 2000);
    TU_EQ_I(bg_filter_layer_stats(f, 5, &st), BG_EINVAL);
    bg_filter_scaling sc;
    TU_EQ_I(bg_filter_scaling_get(f, &sc), BG_OK);
    TU_EQ_U(sc.expansion, 2);
    TU_EQ_U(sc.layers, 5);
    TU_EQ_U(sc.capacity, 1000);
    TU_TRUE(!sc.nonscaling);
    uint64_t mem = bg_filter_memory(f, NULL);
    TU_TRUE(mem > 60424 && mem < 60424 + 1024);
    TU_EQ_I(bg_filter_union(f, f), BG_EVARIANT);
    TU_EQ_I(bg_filter_remove(f, "a", 1), BG_EVARIANT);

    /* A clone dumps the same sequence and grows the same way. */
    TU_EQ_I(bg_filter_clone(&c, f), BG_OK);
    tu_ctx("clone");
    seq_check(c, &s);
    TU_EQ_I(bg_filter_test_and_add(c, "new key", 7), bg_filter_test_and_add(f, "new key", 7));
    bg_filter_free(c);

    /* Hash calls take the chain's own (a, b). */
    bg_hash h;
    TU_EQ_I(bg_filter_hash(f, "fx:scale2:7", 11, &h), BG_OK);
    TU_EQ_I(bg_filter_contains_hash(f, h), 1);
    TU_EQ_I(bg_filter_contains_hashes(f, &h, 1, NULL), 1);

    /* Clear keeps the links, empty. */
    TU_EQ_I(bg_filter_clear(f), BG_OK);
    TU_EQ_U(bg_filter_items(f), 0);
    TU_EQ_I(bg_filter_contains(f, "fx:scale2:7", 11), 0);
    TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
    TU_EQ_U(st.bits_set, 0);
    TU_EQ_U(st.layers, 5);
    bg_filter_free(f);
    seq_free(&s);
}

/* Every allocation a call makes may fail: a clean BG_ENOMEM, nothing
 * leaked. */
static void allocation_failures(void **state)
{
    (void)state;
    blob h;
    TU_TRUE(blob_read(&h, "keys/scale2/scandump/000.bin"));
    TU_EQ_I(bg_set_allocator(&fa_allocator), BG_OK);
    for (int what = 0; what < 4; what++) {
        int rc = BG_ENOMEM;
        for (long n = 1; rc == BG_ENOMEM && n < 100; n++) {
            tu_ctx("call %d, allocation %ld", what, n);
            bg_filter *f = NULL, *c = NULL;
            bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM, .capacity = 10,
                                   .error_rate = 0.1};
            if (what >= 2) { /* a filter to grow or clone, made before the faults */
                fa_reset(0);
                TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
                for (int i = 0; i < 10; i++)
                    TU_EQ_I(bg_filter_test_and_add(f, &i, sizeof i) >= 0, 1);
            }
            long before = fa.live;
            fa_reset(n);
            fa.live = before;
            switch (what) {
            case 0: rc = bg_filter_new(&f, &o); break;
            case 1: rc = bg_rb_header_decode(&f, h.data, h.len, 0); break;
            case 2: rc = bg_filter_clone(&c, f); break;
            case 3: {
                int k = 100;
                rc = 1;
                for (int i = 0; i < 40 && rc >= 0; i++, k++)
                    rc = bg_filter_test_and_add(f, &k, sizeof k);
                rc = rc < 0 ? rc : BG_OK;
                break;
            }
            }
            TU_TRUE(rc == BG_OK || rc == BG_ENOMEM);
            bg_filter_free(c);
            bg_filter_free(f);
            TU_EQ_I(fa.live, 0);
        }
        TU_EQ_I(rc, BG_OK);
    }
    TU_EQ_I(bg_set_allocator(NULL), BG_OK);
    blob_free(&h);
}

static int restore_allocator(void **state)
{
    (void)state;
    return bg_set_allocator(NULL);
}


/* ---- files (format version 3) ---------------------------------------------- */

/* Two chains are the same: fields, links, arrays. */
static void same_chain(const bg_filter *a, const bg_filter *b)
{
    bg_rb_chain ca, cb;
    TU_EQ_I(bg_rb_chain_get(a, &ca), BG_OK);
    TU_EQ_I(bg_rb_chain_get(b, &cb), BG_OK);
    TU_EQ_U(ca.size, cb.size);
    TU_EQ_U(ca.nfilters, cb.nfilters);
    TU_EQ_U(ca.options, cb.options);
    TU_EQ_U(ca.growth, cb.growth);
    for (uint32_t i = 0; i < ca.nfilters; i++) {
        bg_rb_link la, lb;
        const uint8_t *da, *db;
        size_t na, nb;
        TU_EQ_I(bg_rb_link_get(a, i, &la), BG_OK);
        TU_EQ_I(bg_rb_link_get(b, i, &lb), BG_OK);
        TU_TRUE(la.entries == lb.entries && la.error == lb.error && la.bpe == lb.bpe &&
                la.hashes == lb.hashes && la.bits == lb.bits && la.bytes == lb.bytes &&
                la.n2 == lb.n2 && la.size == lb.size);
        TU_EQ_I(bg_rb_link_array(a, i, &da, &na), BG_OK);
        TU_EQ_I(bg_rb_link_array(b, i, &db, &nb), BG_OK);
        TU_TRUE(na == nb && memcmp(da, db, na) == 0);
    }
}

/* Every fixture chain saved, loaded, mapped and decoded is the same chain,
 * and its image is canonical (decode then encode gives the same bytes). */
static void files_round_trip(void **state)
{
    (void)state;
    tu_tmpdir d;
    tu_tmpdir_make(&d, "redisbloom");
    static const char *const dirs[] = {"keys/scale2", "keys/nonscaling", "keys/empty",
                                       "keys/exp4", "legacy/legacy_v1/after",
                                       "legacy/legacy_v0/after"};
    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) {
        tu_ctx("%s as a file", dirs[k]);
        dump_seq s;
        seq_read(&s, dirs[k]);
        bg_filter *f = seq_load(&s), *g;
        const char *path = tu_tmp_file(&d, "chain.bgf");
        TU_EQ_I(bg_filter_save(f, path), BG_OK);
        TU_EQ_I(bg_filter_load(&g, path, 0), BG_OK);
        same_chain(f, g);
        bg_filter_free(g);
        TU_EQ_I(bg_filter_map(&g, path, 0), BG_OK);
        TU_TRUE(bg_filter_read_only(g));
        same_chain(f, g);
        seq_check(g, &s);
        bg_filter_stats sf, sg;
        TU_EQ_I(bg_filter_stats_get(f, &sf), BG_OK);
        TU_EQ_I(bg_filter_stats_get(g, &sg), BG_OK);
        TU_EQ_U(sg.bits_set, sf.bits_set); /* read from the mapping */
        TU_TRUE(sg.items == sf.items && sg.capacity == sf.capacity && sg.layers == sf.layers);
        TU_TRUE(bg_filter_memory(g, NULL) < bg_filter_memory(f, NULL)); /* arrays not its own */
        TU_EQ_I(bg_filter_test_and_add(g, "new", 3), BG_EREADONLY);
        TU_EQ_I(bg_rb_load_chunk(g, 9, "x", 1), BG_EREADONLY);
        bg_rb_link l;
        TU_EQ_I(bg_rb_link_get(g, 0, &l), BG_OK);
        TU_EQ_I(bg_rb_push_link(g, &l, NULL, 0), BG_EREADONLY);
        uint8_t *w;
        size_t n;
        TU_EQ_I(bg_rb_link_array_mut(g, 0, &w, &n), BG_EREADONLY);
        bg_filter *c;
        TU_EQ_I(bg_filter_clone(&c, g), BG_OK); /* writable */
        TU_TRUE(!bg_filter_read_only(c));
        same_chain(f, c);
        bg_filter_free(c);
        bg_filter_free(g);

        bg_file_info in;
        TU_EQ_I(bg_file_inspect(path, 0, &in), BG_OK);
        bg_rb_chain ch;
        TU_EQ_I(bg_rb_chain_get(f, &ch), BG_OK);
        TU_EQ_U(in.version, 3);
        TU_EQ_I(in.variant, BG_VARIANT_REDISBLOOM);
        TU_EQ_U(in.hash_id, BG_FILE_HASH_MURMUR);
        TU_EQ_U(in.layers, ch.nfilters);
        TU_EQ_U(in.items, ch.size);
        TU_EQ_U(in.capacity, bg_filter_capacity(f));
        TU_EQ_U(in.bits, bg_filter_bits(f));
        TU_EQ_U(in.payload_bytes, bg_filter_bytes(f));
        TU_EQ_U(in.scaling.expansion, ch.options & BG_RB_NO_SCALING ? 0 : ch.growth);
        TU_EQ_I(in.checksum_state, BG_CHECKSUM_OK);

        uint64_t size;
        TU_EQ_I(bg_filter_encoded_size(f, &size), BG_OK);
        TU_EQ_U(size, in.file_bytes);
        uint8_t *img = malloc(size), *again = malloc(size);
        size_t written;
        TU_EQ_I(bg_filter_encode(f, img, size - 1, &written), BG_EINVAL);
        TU_EQ_I(bg_filter_encode(f, img, size, &written), BG_OK);
        TU_EQ_U(written, size);
        uint64_t total;
        TU_EQ_I(bg_file_image_size(img, 128, &total), BG_OK);
        TU_EQ_U(total, size);
        /* Pieces of 100 bytes make the same image. */
        for (uint64_t at = 0; at < size; at += 100) {
            size_t len = size - at < 100 ? (size_t)(size - at) : 100;
            TU_EQ_I(bg_filter_encode_range(f, at, again + at, len), BG_OK);
        }
        TU_TRUE(memcmp(img, again, size) == 0);
        TU_EQ_I(bg_filter_encode_range(f, size, again, 1), BG_EINVAL);
        TU_EQ_I(bg_filter_decode(&g, img, size, 0), BG_OK);
        same_chain(f, g);
        TU_EQ_I(bg_filter_encode(g, again, size, NULL), BG_OK);
        TU_TRUE(memcmp(img, again, size) == 0);
        /* It keeps growing as it would have. */
        TU_EQ_I(bg_filter_test_and_add(g, "a new key", 9),
                bg_filter_test_and_add(f, "a new key", 9));
        same_chain(f, g);
        bg_filter_free(g);
        free(img);
        free(again);
        bg_filter_free(f);
        seq_free(&s);
    }
    tu_tmpdir_remove(&d);
}

/* The image of BF.RESERVE k 0.1 10; BF.ADD k item1, byte for byte. */
static void file_golden(void **state)
{
    (void)state;
    tu_ctx("golden");
    bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM, .capacity = 10, .error_rate = 0.1};
    bg_filter *f;
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    TU_EQ_I(bg_filter_test_and_add(f, "item1", 5), 1);
    uint8_t img[256];
    size_t n;
    TU_EQ_I(bg_filter_encode(f, img, sizeof img, &n), BG_OK);
    TU_EQ_U(n, 256);
    static const uint8_t head[64] = {
        0x89, 'B', 'G', 'F', 0x0d, 0x0a, 0x1a, 0x0a, /* magic */
        3, 0, 128, 0, 5, 2, 0, 0,                    /* version 3, 128, variant 5, hash 2 */
        1, 0, 0, 0, 5, 0, 0, 0,                      /* links 1, options 5 */
        2, 0, 0, 0, 0, 0, 0, 0,                      /* growth 2 */
        1, 0, 0, 0, 0, 0, 0, 0,                      /* size 1 */
        0, 0, 0, 0, 16, 0, 0, 0,                     /* max bytes 2^36 */
        128, 0, 0, 0, 0, 0, 0, 0,                    /* first link */
        0, 1, 0, 0, 0, 0, 0, 0,                      /* total 256 */
    };
    TU_TRUE(memcmp(img, head, 64) == 0);
    for (size_t i = 64; i < 120; i++)
        TU_EQ_U(img[i], 0);
    static const uint8_t link[64] = {
        10, 0, 0, 0, 0, 0, 0, 0,                          /* entries */
        0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xa9, 0x3f,   /* error 0.05 */
        0x4a, 0xf7, 0xd4, 0x9e, 0xde, 0xf0, 0x18, 0x40,   /* bpe */
        64, 0, 0, 0, 0, 0, 0, 0,                          /* bits */
        8, 0, 0, 0, 0, 0, 0, 0,                           /* bytes */
        1, 0, 0, 0, 0, 0, 0, 0,                           /* size */
        5, 0, 0, 0, 0,                                    /* hashes, n2 */
    };
    TU_TRUE(memcmp(img + 128, link, 64) == 0);
    static const uint8_t bits[8] = {0x01, 0x08, 0x00, 0x80, 0x00, 0x04, 0x20, 0x00};
    TU_TRUE(memcmp(img + 192, bits, 8) == 0);
    for (size_t i = 200; i < 256; i++)
        TU_EQ_U(img[i], 0);
    uint64_t sum = 0;
    for (unsigned i = 0; i < 8; i++)
        sum |= (uint64_t)img[120 + i] << (8 * i);
    TU_EQ_U(sum, UINT64_C(0x2f38e38d5c3f397a)); /* XXH3-64 of [0, 120) and [128, 256) */
    bg_filter_free(f);
}

/* Every field of a version-3 image broken once: its own status, nothing
 * allocated beyond the input. */
static void file_refused(void **state)
{
    (void)state;
    bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM, .capacity = 100, .error_rate = 0.01,
                           .max_bytes = 4096};
    bg_filter *f, *g;
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    for (int i = 0; i < 150; i++)
        TU_TRUE(bg_filter_test_and_add(f, &i, sizeof i) >= 0);
    bg_rb_chain ch;
    TU_EQ_I(bg_rb_chain_get(f, &ch), BG_OK);
    TU_EQ_U(ch.nfilters, 2);
    uint64_t size;
    TU_EQ_I(bg_filter_encoded_size(f, &size), BG_OK);
    uint8_t *img = malloc(size + 1), *b = malloc(size + 1);
    TU_EQ_I(bg_filter_encode(f, img, size, NULL), BG_OK);
    TU_EQ_I(bg_filter_decode(&g, img, size, 0), BG_OK);
    bg_filter_free(g);
    /* Link 0's array is 144 bytes, padded to 192: link 1's header is at 384. */
    static const struct {
        uint64_t off;
        uint64_t value;
        unsigned width;
        int want;
    } c[] = {
        {8, 4, 2, BG_EVERSION},
        {12, 4, 1, BG_EVERSION},           /* version 3 is RedisBloom only */
        {10, 64, 2, BG_ECORRUPT},
        {13, 1, 1, BG_ECORRUPT},           /* hash */
        {14, 1, 2, BG_ECORRUPT},           /* flags */
        {16, 0, 4, BG_ECORRUPT},           /* links */
        {16, 3, 4, BG_ECORRUPT},
        {28, 1, 4, BG_ECORRUPT},           /* reserved */
        {40, 0, 8, BG_ECORRUPT},           /* max bytes */
        {40, 300, 8, BG_ECORRUPT},         /* below the arrays */
        {48, 192, 8, BG_ECORRUPT},         /* first link */
        {56, 64, 8, BG_ECORRUPT},          /* total */
        {100, 1, 1, BG_ECORRUPT},
        {120, 1, 1, BG_ECHECKSUM},
        {128 + 8, 0, 8, BG_ECORRUPT},      /* link 0: error 0 */
        {128 + 24, 8 * 144 + 8, 8, BG_ECORRUPT}, /* bits */
        {128 + 32, 152, 8, BG_ECORRUPT},   /* bytes */
        {128 + 48, 9, 4, BG_ECORRUPT},     /* hashes */
        {128 + 52, 12, 1, BG_ECORRUPT},    /* n2: 2^12 > bits */
        {128 + 60, 1, 1, BG_ECORRUPT},     /* reserved */
        {128 + 64 + 144 + 10, 1, 1, BG_ECORRUPT}, /* padding */
        {384 + 32, 1000, 8, BG_ECORRUPT},  /* link 1 runs past the end */
        {128 + 64 + 5, 0xff, 1, BG_ECHECKSUM}, /* a bit */
        {128 + 40, 7, 8, BG_ECHECKSUM},    /* a size: any value loads */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        tu_ctx("file case %zu", i);
        memcpy(b, img, size);
        for (unsigned j = 0; j < c[i].width; j++)
            b[c[i].off + j] = (uint8_t)(c[i].value >> (8 * j));
        g = (bg_filter *)&g;
        TU_EQ_I(bg_filter_decode(&g, b, size, 0), c[i].want);
        TU_TRUE(g == NULL);
        if (c[i].want == BG_ECHECKSUM) {
            TU_EQ_I(bg_filter_decode(&g, b, size, BG_FILE_NO_VERIFY), BG_OK);
            bg_filter_free(g);
        }
    }
    tu_ctx("lengths");
    TU_EQ_I(bg_filter_decode(&g, img, size - 1, 0), BG_ETRUNC);
    TU_EQ_I(bg_filter_decode(&g, img, 128, 0), BG_ETRUNC);
    TU_EQ_I(bg_filter_decode(&g, img, 100, 0), BG_ETRUNC);
    img[size] = 0;
    TU_EQ_I(bg_filter_decode(&g, img, size + 1, 0), BG_ETRAILING);
    uint64_t total;
    memcpy(b, img, 128);
    b[40] = 0x10; /* max bytes 16 + ...: far below what total implies */
    memset(b + 41, 0, 7);
    TU_EQ_I(bg_file_image_size(b, 128, &total), BG_ECORRUPT);
    free(img);
    free(b);
    bg_filter_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hash_vectors),
        cmocka_unit_test(filter_hash_is_murmur),
        cmocka_unit_test(sizing_table),
        cmocka_unit_test(fast_modulo),
        cmocka_unit_test(next_position),
        cmocka_unit_test(position_examples),
        cmocka_unit_test(no_false_negatives),
        cmocka_unit_test(batch_answers),
        cmocka_unit_test(push_link_owned),
        cmocka_unit_test(fixture_keys_loaded),
        cmocka_unit_test(fixture_keys_replayed),
        cmocka_unit_test(legacy_grown),
        cmocka_unit_test(dump_payloads_loaded),
        cmocka_unit_test(header_refused),
        cmocka_unit_test(links_refused),
        cmocka_unit_test(chunks_refused),
        cmocka_unit_test(large_link_chunks),
        cmocka_unit_test(growth_refused),
        cmocka_unit_test(filter_calls),
        cmocka_unit_test_teardown(allocation_failures, restore_allocator),
        cmocka_unit_test(files_round_trip),
        cmocka_unit_test(file_golden),
        cmocka_unit_test(file_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
