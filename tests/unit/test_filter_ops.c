/* SPDX-License-Identifier: BSD-3-Clause */
/* The filter conformance suite, beyond adding and querying
 * (<bloomgate/filter.h>, <bloomgate/hash.h>): bad keys and NULL filters,
 * clear, union and intersection (and what is incompatible), the stats
 * fields, and seeds and hashes with XXH3's golden values. Adding and
 * querying are test_filter.c; the bit layout test_filter_layout.c. Every
 * test runs over every entry of tu_configs (test_filter_configs.h). */
#include "test_util.h"
#include "test_filter_configs.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SEED 0x1234abcd5678ef00u

/* Key sets (the `set` argument of the tu_key_* generators), numbered as in
 * every filter suite, so that each test sees the keys it always has. */
enum {
    SET_RANDOM_TAA = 5,
    SET_A = 8,
    SET_B = 9,
    SET_COMMON = 10,
    SET_PROBE = 11,
};

/* ---- (d) bad arguments ----------------------------------------------- */

static void bad_keys(void **state)
{
    (void)state;
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        tu_ctx("%s", tu_configs[c].name);
        bg_filter *f = tu_filter_make(&tu_configs[c], (bg_filter_options){.capacity = 1000,
                                                                          .error_rate = 0.001});
        bg_hash h = {1, 2}, h0 = h;
        /* NULL with a length: rejected by every call that takes a key. */
        TU_EQ_I(bg_filter_add(f, NULL, 1), BG_EINVAL);
        TU_EQ_I(bg_filter_test_and_add(f, NULL, 5), BG_EINVAL);
        TU_EQ_I(bg_filter_contains(f, NULL, SIZE_MAX), BG_EINVAL);
        TU_EQ_I(bg_filter_hash(f, NULL, 3, &h), BG_EINVAL);
        TU_TRUE(h.h1 == h0.h1 && h.h2 == h0.h2);
        TU_EQ_I(bg_filter_hash(f, "x", 1, NULL), BG_EINVAL);
        TU_EQ_I(bg_hash_key(NULL, 1, 0, &h), BG_EINVAL);
        TU_EQ_I(bg_hash_key("x", 1, 0, NULL), BG_EINVAL);

        /* A batch with one bad key adds nothing at all, even the keys
         * before it. */
        const void *keys[] = {"one", "two", NULL, "four", ""};
        size_t lens[] = {3, 3, 1, 4, 0};
        uint8_t res[5] = {7, 7, 7, 7, 7};
        TU_EQ_I(bg_filter_add_many(f, keys, lens, 5, res), BG_EINVAL);
        TU_EQ_I(bg_filter_contains_many(f, keys, lens, 5, res), BG_EINVAL);
        TU_EQ_U(bg_filter_items(f), 0);
        bg_filter_stats st;
        TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
        TU_EQ_U(st.bits_set, 0);
        TU_EQ_I(bg_filter_contains(f, "one", 3), 0);
        TU_EQ_I(bg_filter_contains(f, "two", 3), 0);
        /* The bad key at any position of batches of 1 to 13 keys (the
         * check takes four keys per vector step, then the rest one by
         * one); the same batch with that key of length 0 is good. */
        const void *row[13];
        size_t row_lens[13];
        for (size_t n = 1; n <= 13; n++) {
            for (size_t bad = 0; bad < n; bad++) {
                tu_ctx("%s, bad key %zu of %zu", tu_configs[c].name, bad, n);
                for (size_t i = 0; i < n; i++) {
                    row[i] = i == bad ? NULL : "k";
                    row_lens[i] = 1;
                }
                TU_EQ_I(bg_filter_add_many(f, row, row_lens, n, NULL), BG_EINVAL);
                TU_EQ_I(bg_filter_contains_many(f, row, row_lens, n, NULL), BG_EINVAL);
                row_lens[bad] = 0;
                TU_EQ_I(bg_filter_contains_many(f, row, row_lens, n, NULL), 0);
            }
        }
        tu_ctx("%s", tu_configs[c].name);
        TU_EQ_U(bg_filter_items(f), 0);
        /* NULL arrays: an error with keys to read, nothing without. */
        TU_EQ_I(bg_filter_add_many(f, NULL, lens, 1, NULL), BG_EINVAL);
        TU_EQ_I(bg_filter_add_many(f, keys, NULL, 1, NULL), BG_EINVAL);
        TU_EQ_I(bg_filter_contains_many(f, NULL, lens, 1, NULL), BG_EINVAL);
        TU_EQ_I(bg_filter_contains_many(f, keys, NULL, 1, NULL), BG_EINVAL);
        TU_EQ_I(bg_filter_add_hashes(f, NULL, 1, NULL), BG_EINVAL);
        TU_EQ_I(bg_filter_contains_hashes(f, NULL, 1, NULL), BG_EINVAL);
        TU_EQ_I(bg_filter_add_many(f, NULL, NULL, 0, NULL), 0);
        TU_EQ_I(bg_filter_contains_many(f, NULL, NULL, 0, NULL), 0);
        TU_EQ_I(bg_filter_add_hashes(f, NULL, 0, NULL), 0);
        TU_EQ_I(bg_filter_contains_hashes(f, NULL, 0, NULL), 0);
        TU_EQ_U(bg_filter_items(f), 0);
        TU_EQ_I(bg_filter_stats_get(f, NULL), BG_EINVAL);

        /* The empty key is a key: NULL or not. */
        TU_EQ_I(bg_filter_contains(f, NULL, 0), 0);
        TU_EQ_I(bg_filter_add(f, NULL, 0), BG_OK);
        TU_EQ_I(bg_filter_contains(f, "", 0), 1);
        TU_EQ_I(bg_filter_contains(f, "abc", 0), 1); /* only len bytes count */
        bg_hash he1, he2;
        TU_EQ_I(bg_filter_hash(f, NULL, 0, &he1), BG_OK);
        TU_EQ_I(bg_filter_hash(f, "zzz", 0, &he2), BG_OK);
        TU_TRUE(he1.h1 == he2.h1 && he1.h2 == he2.h2);
        const void *ek[] = {NULL, "", NULL};
        size_t el[] = {0, 0, 0};
        TU_EQ_I(bg_filter_contains_many(f, ek, el, 3, NULL), 3);
        TU_EQ_I(bg_filter_add_many(f, ek, el, 3, NULL), 0);
        TU_EQ_U(bg_filter_items(f), 1 + 3 * tu_counts_every_add(&tu_configs[c]));
        bg_filter_free(f);
    }
}

static void null_filter(void **state)
{
    (void)state;
    tu_ctx("NULL filter");
    bg_hash h = {1, 2};
    const void *keys[] = {"a"};
    size_t lens[] = {1};
    uint8_t res[1] = {7};
    bg_filter_stats st;
    TU_EQ_I(bg_filter_add(NULL, "a", 1), BG_EINVAL);
    TU_EQ_I(bg_filter_add(NULL, NULL, 0), BG_EINVAL);
    TU_EQ_I(bg_filter_test_and_add(NULL, "a", 1), BG_EINVAL);
    TU_EQ_I(bg_filter_contains(NULL, "a", 1), BG_EINVAL);
    TU_EQ_I(bg_filter_hash(NULL, "a", 1, &h), BG_EINVAL);
    TU_EQ_I(bg_filter_add_hash(NULL, h), BG_EINVAL);
    TU_EQ_I(bg_filter_test_and_add_hash(NULL, h), BG_EINVAL);
    TU_EQ_I(bg_filter_contains_hash(NULL, h), BG_EINVAL);
    TU_EQ_I(bg_filter_add_many(NULL, keys, lens, 1, res), BG_EINVAL);
    TU_EQ_I(bg_filter_contains_many(NULL, keys, lens, 1, res), BG_EINVAL);
    TU_EQ_I(bg_filter_add_many(NULL, NULL, NULL, 0, NULL), BG_EINVAL);
    TU_EQ_I(bg_filter_add_hashes(NULL, &h, 1, res), BG_EINVAL);
    TU_EQ_I(bg_filter_contains_hashes(NULL, &h, 1, res), BG_EINVAL);
    TU_EQ_I(res[0], 7);
    TU_EQ_I(bg_filter_clear(NULL), BG_EINVAL);
    TU_EQ_I(bg_filter_stats_get(NULL, &st), BG_EINVAL);
    TU_EQ_I(bg_filter_union(NULL, NULL), BG_EINVAL);
    TU_EQ_I(bg_filter_intersect(NULL, NULL), BG_EINVAL);
    TU_EQ_I(bg_filter_variant(NULL), 0);
    TU_EQ_U(bg_filter_bits(NULL), 0);
    TU_EQ_U(bg_filter_hashes(NULL), 0);
    TU_EQ_U(bg_filter_seed(NULL), 0);
    TU_EQ_U(bg_filter_items(NULL), 0);
    TU_EQ_U(bg_filter_bytes(NULL), 0);
    TU_EQ_U(bg_filter_capacity(NULL), 0);
    bg_filter_free(NULL);

    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        tu_ctx("%s: union/intersect with NULL", tu_configs[c].name);
        bg_filter *f = tu_filter_make(&tu_configs[c], (bg_filter_options){.capacity = 1000,
                                                                          .error_rate = 0.01});
        TU_EQ_I(bg_filter_add(f, "a", 1), BG_OK);
        TU_EQ_I(bg_filter_union(f, NULL), BG_EINVAL);
        TU_EQ_I(bg_filter_union(NULL, f), BG_EINVAL);
        TU_EQ_I(bg_filter_intersect(f, NULL), BG_EINVAL);
        TU_EQ_I(bg_filter_intersect(NULL, f), BG_EINVAL);
        TU_EQ_I(bg_filter_contains(f, "a", 1), 1);
        TU_EQ_U(bg_filter_items(f), 1);
        bg_filter_free(f);
    }
}

/* ---- (e) clear ------------------------------------------------------- */

static void clear_empties(void **state)
{
    (void)state;
    tu_batch b;
    tu_batch_init(&b, TU_BATCH);
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        tu_ctx("%s", tu_configs[c].name);
        bg_filter *f = tu_filter_make(
            &tu_configs[c], (bg_filter_options){.capacity = 20000, .error_rate = 0.01, .seed = 5});
        uint64_t m = bg_filter_bits(f);
        uint32_t k = bg_filter_hashes(f);
        tu_add_keys(f, &b, 1, SET_A, 20000, TU_ADD_MANY);
        TU_TRUE(bg_filter_items(f) > 19000);
        TU_EQ_I(bg_filter_clear(f), BG_OK);
        bg_filter_stats st;
        TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
        TU_EQ_U(st.items, 0);
        TU_EQ_U(st.bits_set, 0);
        TU_EQ_D(st.fill_ratio, 0);
        TU_EQ_D(st.estimated_items, 0);
        TU_EQ_D(st.estimated_fp_rate, 0);
        /* The shape survives; no key is present any more. */
        TU_EQ_U(st.bits, m);
        TU_EQ_U(st.hashes, k);
        TU_EQ_U(st.seed, 5);
        TU_EQ_U(tu_count_present(f, &b, 1, SET_A, 20000), 0);
        /* And the filter is usable again. */
        tu_add_keys(f, &b, 1, SET_B, 5000, TU_ADD_SINGLE);
        tu_expect_all_found(f, &b, 1, SET_B, 5000, 1);
        TU_EQ_I(bg_filter_clear(f), BG_OK);
        TU_EQ_I(bg_filter_clear(f), BG_OK);
        TU_EQ_U(bg_filter_items(f), 0);
        bg_filter_free(f);
    }
    tu_batch_free(&b);
}

/* ---- (f) union and intersection -------------------------------------- */

static void union_and_intersection(void **state)
{
    (void)state;
    enum { NA = 30000, NB = 20000, NC = 10000 };
    tu_batch b;
    tu_batch_init(&b, TU_BATCH);
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        tu_ctx("%s: union", tu_configs[c].name);
        bg_filter_options o = {.capacity = 100000, .error_rate = 0.01, .seed = 42};
        bg_filter *a = tu_filter_make(&tu_configs[c], o), *bb = tu_filter_make(&tu_configs[c], o);
        tu_add_keys(a, &b, 1, SET_A, NA, TU_ADD_MANY);
        tu_add_keys(a, &b, 1, SET_COMMON, NC, TU_ADD_MANY);
        tu_add_keys(bb, &b, 1, SET_B, NB, TU_ADD_SINGLE);
        tu_add_keys(bb, &b, 1, SET_COMMON, NC, TU_ADD_SINGLE);
        tu_snapshot src_before = tu_take_snapshot(bb, &b);
        bg_filter_stats st, before;
        TU_EQ_I(bg_filter_stats_get(a, &before), BG_OK);

        TU_EQ_I(bg_filter_union(a, bb), BG_OK);
        tu_expect_all_found(a, &b, 1, SET_A, NA, 1);
        tu_expect_all_found(a, &b, 1, SET_B, NB, 1);
        tu_expect_all_found(a, &b, 1, SET_COMMON, NC, 0);
        /* src is untouched; dst's item count grew by what the fill says src
         * brought (estimate after - before), so the common keys count once. */
        tu_snapshot src_after = tu_take_snapshot(bb, &b);
        tu_expect_same_snapshot(&src_before, &src_after);
        TU_EQ_I(bg_filter_stats_get(a, &st), BG_OK);
        double gained = st.estimated_items - before.estimated_items;
        TU_IN_RANGE_D((double)st.items, (double)before.items + gained - 1,
                      (double)before.items + gained + 1);
        TU_IN_RANGE_D((double)st.items, 0.97 * (NA + NB + NC), 1.03 * (NA + NB + NC));
        TU_IN_RANGE_D(st.estimated_items, 0.97 * (NA + NB + NC), 1.03 * (NA + NB + NC));
        /* Union is idempotent, with itself a no-op; and adds after it still
         * find everything. */
        tu_snapshot u1 = tu_take_snapshot(a, &b);
        TU_EQ_I(bg_filter_union(a, bb), BG_OK);
        TU_EQ_I(bg_filter_union(a, a), BG_OK);
        tu_snapshot u2 = tu_take_snapshot(a, &b);
        tu_expect_same_snapshot(&u1, &u2);
        tu_add_keys(a, &b, 1, SET_RANDOM_TAA, 5000, TU_ADD_TEST_AND_ADD);
        tu_expect_all_found(a, &b, 1, SET_RANDOM_TAA, 5000, 0);
        tu_expect_all_found(a, &b, 1, SET_B, NB, 0);

        /* Union of an empty filter into one changes nothing but the
         * count; into an empty one copies. */
        bg_filter *empty = tu_filter_make(&tu_configs[c], o);
        TU_EQ_I(bg_filter_union(empty, bb), BG_OK);
        tu_expect_all_found(empty, &b, 1, SET_B, NB, 0);
        tu_snapshot e = tu_take_snapshot(empty, &b);
        TU_EQ_U(e.st.bits_set, src_after.st.bits_set);
        TU_EQ_U(e.answers, src_after.answers);
        bg_filter_free(empty);

        /* Intersection: keys in both are found; most keys in only one are
         * not. */
        tu_ctx("%s: intersection", tu_configs[c].name);
        bg_filter *x = tu_filter_make(&tu_configs[c], o), *y = tu_filter_make(&tu_configs[c], o);
        tu_add_keys(x, &b, 1, SET_A, NA, TU_ADD_SINGLE);
        tu_add_keys(x, &b, 1, SET_COMMON, NC, TU_ADD_SINGLE);
        tu_add_keys(y, &b, 1, SET_B, NB, TU_ADD_MANY);
        tu_add_keys(y, &b, 1, SET_COMMON, NC, TU_ADD_MANY);
        TU_EQ_I(bg_filter_intersect(x, y), BG_OK);
        tu_expect_all_found(x, &b, 1, SET_COMMON, NC, 1);
        /* The count is the estimate from the new fill: the common keys plus
         * the intersection's extra bits. */
        TU_TRUE(tu_count_present(x, &b, 1, SET_A, NA) < NA / 10);
        TU_TRUE(tu_count_present(x, &b, 1, SET_B, NB) < NB / 10);
        TU_EQ_I(bg_filter_stats_get(x, &st), BG_OK);
        TU_IN_RANGE_D((double)st.items, st.estimated_items - 1, st.estimated_items + 1);
        /* With itself: no change. */
        tu_snapshot i1 = tu_take_snapshot(x, &b);
        TU_EQ_I(bg_filter_intersect(x, x), BG_OK);
        tu_snapshot i2 = tu_take_snapshot(x, &b);
        tu_expect_same_snapshot(&i1, &i2);

        /* Filters that differ only in concurrency mode are compatible. */
        bg_filter_options o2 = o;
        o2.variant = tu_configs[c].variant;
        o2.concurrency = tu_configs[c].mode == BG_SINGLE_WRITER ? BG_CONCURRENT_WRITERS
                                                             : BG_SINGLE_WRITER;
        bg_filter *other_mode = NULL;
        TU_EQ_I(bg_filter_new(&other_mode, &o2), BG_OK);
        TU_EQ_I(bg_filter_union(other_mode, y), BG_OK);
        tu_expect_all_found(other_mode, &b, 1, SET_B, NB, 0);
        bg_filter_free(other_mode);

        bg_filter_free(a);
        bg_filter_free(bb);
        bg_filter_free(x);
        bg_filter_free(y);
    }
    tu_batch_free(&b);
}

static void incompatible_filters(void **state)
{
    (void)state;
    tu_batch b;
    tu_batch_init(&b, TU_BATCH);
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        const tu_config *cf = &tu_configs[c];
        tu_ctx("%s: incompatible", cf->name);
        bg_filter_options o = {.bits = 1 << 16, .hashes = 5, .seed = 7};
        bg_filter *dst = tu_filter_make(cf, o);
        tu_add_keys(dst, &b, 1, SET_A, 5000, TU_ADD_MANY);

        tu_config other_variant = *cf;
        other_variant.variant =
            cf->variant == BG_VARIANT_STANDARD ? BG_VARIANT_BLOCKED : BG_VARIANT_STANDARD;
        bg_filter_options o_m = o, o_k = o, o_seed = o;
        o_m.bits = 1 << 17;
        o_k.hashes = 6;
        o_seed.seed = 8;
        bg_filter *srcs[] = {
            tu_filter_make(&other_variant, o),
            tu_filter_make(cf, o_m),
            tu_filter_make(cf, o_k),
            tu_filter_make(cf, o_seed),
        };
        static const char *what[] = {"variant", "bits", "hashes", "seed"};
        for (size_t i = 0; i < LEN(srcs); i++) {
            tu_ctx("%s: incompatible %s", cf->name, what[i]);
            /* A full source, so that any bits leaking through would show. */
            tu_add_keys(srcs[i], &b, 1, SET_B, 20000, TU_ADD_MANY);
            tu_snapshot before = tu_take_snapshot(dst, &b);
            TU_EQ_I(bg_filter_union(dst, srcs[i]), BG_EINCOMPAT);
            tu_snapshot after = tu_take_snapshot(dst, &b);
            tu_expect_same_snapshot(&before, &after);
            TU_EQ_I(bg_filter_intersect(dst, srcs[i]), BG_EINCOMPAT);
            after = tu_take_snapshot(dst, &b);
            tu_expect_same_snapshot(&before, &after);
            /* Nor is the source touched the other way round. */
            tu_snapshot sb = tu_take_snapshot(srcs[i], &b);
            TU_EQ_I(bg_filter_union(srcs[i], dst), BG_EINCOMPAT);
            TU_EQ_I(bg_filter_intersect(srcs[i], dst), BG_EINCOMPAT);
            tu_snapshot sa = tu_take_snapshot(srcs[i], &b);
            tu_expect_same_snapshot(&sb, &sa);
        }
        tu_expect_all_found(dst, &b, 1, SET_A, 5000, 0);
        for (size_t i = 0; i < LEN(srcs); i++)
            bg_filter_free(srcs[i]);
        bg_filter_free(dst);
    }
    tu_batch_free(&b);
}

/* ---- (g) stats fields ------------------------------------------------ */

static void stats_fields(void **state)
{
    (void)state;
    static const struct {
        uint64_t n, m;
        double p;
        uint32_t k;
    } shapes[] = {
        {1000, 0, 0.01, 0},   {123457, 0, 0.001, 0}, {0, 10000, 0, 3},
        {0, 100, 0, 1},       {5000, 0, 0.02, 4},    {0, 64000, 0.01, 0},
        {777, 5000, 0, 0},
    };
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        bg_variant v = tu_configs[c].variant;
        for (size_t i = 0; i < LEN(shapes); i++) {
            tu_ctx("%s: shape %zu", tu_configs[c].name, i);
            bg_filter_options o = {.capacity = shapes[i].n, .bits = shapes[i].m,
                                   .error_rate = shapes[i].p, .hashes = shapes[i].k,
                                   .seed = 0xfeed0000u + i};
            bg_filter *f = tu_filter_make(&tu_configs[c], o);
            bg_sizing s = {.n = shapes[i].n, .m = shapes[i].m, .p = shapes[i].p,
                           .k = shapes[i].k};
            TU_EQ_I(bg_sizing_solve(v, &s, 0), BG_OK);
            bg_filter_stats st;
            memset(&st, 0xa5, sizeof st);
            TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
            TU_EQ_I(st.variant, v);
            TU_EQ_U(st.bits, s.m);
            TU_EQ_U(st.hashes, s.k);
            TU_EQ_U(st.seed, o.seed);
            uint64_t cell_bits = v == BG_VARIANT_COUNTING ? 4 : 1;
            TU_EQ_U(st.bytes, (s.m * cell_bits + 63) / 64 * 8);
            TU_TRUE(st.bytes * 8 >= st.bits * cell_bits && st.bytes * 8 < st.bits * cell_bits + 64);
            if (shapes[i].n) {
                TU_EQ_U(st.capacity, shapes[i].n);
                TU_EQ_D(st.error_rate, bg_sizing_fp_rate(v, s.m, s.n, s.k));
            } else if (shapes[i].p == 0) {
                /* Sized by m and k (or m alone): no capacity. */
                TU_EQ_U(st.capacity, 0);
                TU_EQ_D(st.error_rate, 0);
            }
            /* The accessors agree. */
            TU_EQ_I(bg_filter_variant(f), v);
            TU_EQ_U(bg_filter_bits(f), st.bits);
            TU_EQ_U(bg_filter_hashes(f), st.hashes);
            TU_EQ_U(bg_filter_seed(f), st.seed);
            TU_EQ_U(bg_filter_bytes(f), st.bytes);
            TU_EQ_U(bg_filter_capacity(f), st.capacity);
            TU_EQ_U(bg_filter_items(f), 0);
            /* Empty. */
            TU_EQ_U(st.items, 0);
            TU_EQ_U(st.bits_set, 0);
            TU_EQ_D(st.fill_ratio, 0);
            TU_EQ_D(st.estimated_items, 0);
            TU_EQ_D(st.estimated_fp_rate, 0);
            /* One key sets between 1 and k bits. */
            TU_EQ_I(bg_filter_add(f, "x", 1), BG_OK);
            TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
            TU_TRUE(st.bits_set >= 1 && st.bits_set <= st.hashes);
            TU_EQ_U(st.items, 1);
            TU_EQ_D(st.fill_ratio, (double)st.bits_set / (double)st.bits);
            bg_filter_free(f);
        }
        /* Full: every bit set, estimated items +inf, rate 1. */
        tu_ctx("%s: full", tu_configs[c].name);
        bg_filter *f =
            tu_filter_make(&tu_configs[c], (bg_filter_options){.bits = 512, .hashes = 4});
        tu_batch b;
        tu_batch_init(&b, TU_BATCH);
        tu_add_keys(f, &b, 1, SET_A, 20000, TU_ADD_MANY);
        tu_batch_free(&b);
        bg_filter_stats st;
        TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
        TU_EQ_U(st.bits_set, 512);
        TU_EQ_D(st.fill_ratio, 1);
        TU_TRUE(isinf(st.estimated_items) && st.estimated_items > 0);
        TU_EQ_D(st.estimated_fp_rate, 1);
        TU_EQ_I(bg_filter_contains(f, "anything", 8), 1);
        bg_filter_free(f);
    }
}

/* A union with a full filter adds the fill's estimate of what it brought,
 * +inf, to the item count: the count saturates at UINT64_MAX, whatever it
 * was before (it must not wrap around). */
static void union_saturates_items(void **state)
{
    (void)state;
    tu_batch b;
    tu_batch_init(&b, TU_BATCH);
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        tu_ctx("%s: union with a full filter", tu_configs[c].name);
        bg_filter_options o = {.bits = 512, .hashes = 4};
        bg_filter *full = tu_filter_make(&tu_configs[c], o);
        tu_add_keys(full, &b, 1, SET_A, 20000, TU_ADD_MANY);
        bg_filter_stats st;
        TU_EQ_I(bg_filter_stats_get(full, &st), BG_OK);
        TU_EQ_U(st.bits_set, 512);

        bg_filter *g = tu_filter_make(&tu_configs[c], o);
        TU_EQ_I(bg_filter_union(g, full), BG_OK);
        TU_EQ_U(bg_filter_items(g), UINT64_MAX);
        bg_filter_free(g);

        g = tu_filter_make(&tu_configs[c], o);
        TU_EQ_I(bg_filter_add(g, "y", 1), BG_OK);
        TU_EQ_U(bg_filter_items(g), 1);
        TU_EQ_I(bg_filter_union(g, full), BG_OK);
        TU_EQ_U(bg_filter_items(g), UINT64_MAX);
        /* Nothing is new in a full filter, so the count stays put. */
        TU_EQ_I(bg_filter_test_and_add(g, "z", 1), 0);
        TU_EQ_U(bg_filter_items(g), UINT64_MAX);
        bg_filter_free(g);
        bg_filter_free(full);
    }
    tu_batch_free(&b);
}

/* ---- (h) seeds and hashes -------------------------------------------- */

static void seeds_and_hashes(void **state)
{
    (void)state;
    tu_ctx("XXH3-128 golden values (seed 0; xxhsum -H2)");
    static const struct {
        const char *key;
        size_t len;
        uint64_t h1, h2;
    } golden[] = {
        {"", 0, 0x6001c324468d497fu, 0x99aa06d3014798d8u},
        {"a", 1, 0xe6c632b61e964e1fu, 0xa96faf705af16834u},
        {"abc", 3, 0x78af5f94892f3950u, 0x06b05ab6733a6185u},
        {"hello world", 11, 0xa99b8775cc15b6c7u, 0xdf8d09e93f874900u},
        {"\0", 1, 0xc44bdff4074eecdbu, 0xa6cd5e9392000f6au},
    };
    for (size_t i = 0; i < LEN(golden); i++) {
        bg_hash h;
        TU_EQ_I(bg_hash_key(golden[i].key, golden[i].len, 0, &h), BG_OK);
        TU_EQ_U(h.h1, golden[i].h1);
        TU_EQ_U(h.h2, golden[i].h2);
    }

    tu_ctx("seeds change hashes");
    uint8_t buf[TU_MAX_KEY];
    static const uint64_t seeds[] = {0, 1, 2, 0x8000000000000000u, UINT64_MAX, SEED};
    for (uint64_t i = 0; i < 2000; i++) {
        size_t len = tu_key_random(SET_PROBE, i, buf);
        bg_hash hs[LEN(seeds)];
        for (size_t s = 0; s < LEN(seeds); s++) {
            TU_EQ_I(bg_hash_key(i & 1 || len ? buf : NULL, len, seeds[s], &hs[s]), BG_OK);
            for (size_t t = 0; t < s; t++)
                TU_TRUE(hs[s].h1 != hs[t].h1 && hs[s].h2 != hs[t].h2);
        }
        /* Deterministic. */
        bg_hash again;
        TU_EQ_I(bg_hash_key(buf, len, seeds[1], &again), BG_OK);
        TU_TRUE(again.h1 == hs[1].h1 && again.h2 == hs[1].h2);
    }

    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        tu_ctx("%s: bg_filter_hash uses the filter's seed", tu_configs[c].name);
        for (size_t s = 0; s < LEN(seeds); s++) {
            bg_filter *f = tu_filter_make(&tu_configs[c], (bg_filter_options){.capacity = 100,
                                                                              .error_rate = 0.01,
                                                                              .seed = seeds[s]});
            TU_EQ_U(bg_filter_seed(f), seeds[s]);
            for (uint64_t i = 0; i < 200; i++) {
                size_t len = tu_key_random(SET_PROBE, i, buf);
                bg_hash a, b;
                TU_EQ_I(bg_filter_hash(f, buf, len, &a), BG_OK);
                TU_EQ_I(bg_hash_key(buf, len, seeds[s], &b), BG_OK);
                TU_TRUE(a.h1 == b.h1 && a.h2 == b.h2);
            }
            bg_filter_free(f);
        }
        /* Two filters of the same shape and different seeds place the same
         * keys differently. */
        tu_ctx("%s: seed changes placement", tu_configs[c].name);
        bg_filter_options o = {.capacity = 1000, .error_rate = 0.01, .seed = 1};
        bg_filter *f1 = tu_filter_make(&tu_configs[c], o);
        o.seed = 2;
        bg_filter *f2 = tu_filter_make(&tu_configs[c], o);
        tu_batch b;
        tu_batch_init(&b, TU_BATCH);
        tu_add_keys(f1, &b, 1, SET_A, 1000, TU_ADD_MANY);
        tu_add_keys(f2, &b, 1, SET_A, 1000, TU_ADD_MANY);
        tu_batch_free(&b);
        tu_batch pb;
        tu_batch_init(&pb, 1);
        tu_snapshot s1 = tu_take_snapshot(f1, &pb), s2 = tu_take_snapshot(f2, &pb);
        tu_batch_free(&pb);
        TU_TRUE(s1.answers != s2.answers);
        bg_filter_free(f1);
        bg_filter_free(f2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_keys),
        cmocka_unit_test(null_filter),
        cmocka_unit_test(clear_empties),
        cmocka_unit_test(union_and_intersection),
        cmocka_unit_test(incompatible_filters),
        cmocka_unit_test(stats_fields),
        cmocka_unit_test(union_saturates_items),
        cmocka_unit_test(seeds_and_hashes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
