/* SPDX-License-Identifier: BSD-3-Clause */
/* The RedisBloom variant (<bloomgate/redisbloom.h>): its hash functions,
 * sizing and positions against REDISBLOOM_FORMAT.md's examples, and the
 * chains RedisBloom 2.6.28 wrote (tests/fixtures/redisbloom/), rebuilt from
 * their SCANDUMP sequences and by replaying the commands that made them,
 * bit for bit. */
#include "test_util.h"
#include "test_alloc.h"

#include "../src/core/murmur.h"

/* ---- hashing ------------------------------------------------------------ */

static void hash_vectors(void **state)
{
    (void)state;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hash_vectors),
        cmocka_unit_test(filter_hash_is_murmur),
        cmocka_unit_test(sizing_table),
        cmocka_unit_test(position_examples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
