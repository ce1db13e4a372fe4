/* SPDX-License-Identifier: BSD-3-Clause */
/* The definitions behind test_scalable_util.h (its comments say what each
 * does). */
#include "test_scalable_util.h"

#include <stdbool.h>

#define BATCH 4096

bg_filter *tu_scalable(bg_filter_options o)
{
    o.variant = BG_VARIANT_SCALABLE;
    bg_filter *f = NULL;
    int rc = bg_filter_new(&f, &o);
    TU_EQ_I(rc, BG_OK);
    return f;
}

/* Keys [first, first + count) of `set` through add_many (adding) or
 * contains_many in batches; returns how many were reported new (adding) or
 * present. Any error fails the test. */
static uint64_t run_range(bg_filter *f, uint64_t set, uint64_t first, uint64_t count,
                          bool adding)
{
    tu_batch b;
    tu_batch_init(&b, BATCH);
    uint64_t hits = 0;
    for (uint64_t at = 0; at < count; at += BATCH) {
        size_t n = (size_t)(count - at < BATCH ? count - at : BATCH);
        tu_batch_fill(&b, 0, set, first + at, n);
        int64_t r = adding ? bg_filter_add_many(f, b.keys, b.lens, n, NULL)
                           : bg_filter_contains_many(f, b.keys, b.lens, n, NULL);
        TU_TRUE(r >= 0);
        hits += (uint64_t)r;
    }
    tu_batch_free(&b);
    return hits;
}

uint64_t tu_scalable_add_range(bg_filter *f, uint64_t set, uint64_t first, uint64_t count)
{
    return run_range(f, set, first, count, true);
}

uint64_t tu_scalable_count_present(const bg_filter *f, uint64_t set, uint64_t first,
                                   uint64_t count)
{
    /* contains_many does not write: the cast only shares the loop. */
    return run_range((bg_filter *)f, set, first, count, false);
}

int tu_add_key(bg_filter *f, uint64_t set, uint64_t i)
{
    uint8_t k[TU_DISTINCT_LEN];
    size_t n = tu_key_distinct(set, i, k);
    return bg_filter_test_and_add(f, k, n);
}

int tu_has_key(const bg_filter *f, uint64_t set, uint64_t i)
{
    uint8_t k[TU_DISTINCT_LEN];
    size_t n = tu_key_distinct(set, i, k);
    return bg_filter_contains(f, k, n);
}

uint32_t tu_layers_of(const bg_filter *f)
{
    bg_filter_stats st;
    TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
    return st.layers;
}

uint32_t tu_expected_layers(uint64_t n0, uint32_t expansion, uint64_t items)
{
    uint32_t layers = 1;
    uint64_t cap = n0, sum = n0;
    while (sum < items) {
        cap *= expansion;
        sum += cap;
        layers++;
    }
    return layers;
}

void tu_check_layers(const bg_filter *f)
{
    bg_filter_stats st;
    bg_filter_scaling sc;
    TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
    TU_EQ_I(bg_filter_scaling_get(f, &sc), BG_OK);
    TU_EQ_U(st.variant, BG_VARIANT_SCALABLE);
    TU_EQ_U(sc.layers, st.layers);
    TU_TRUE(st.layers >= 1 && st.layers <= sc.max_layers);
    uint64_t bits = 0, bytes = 0, items = 0, set = 0, cap = 0, n = sc.capacity;
    double est = 0, keep = 1, keep_est = 1;
    uint32_t k = 0;
    for (uint32_t i = 0; i < st.layers; i++) {
        bg_filter_stats ls;
        TU_EQ_I(bg_filter_layer_stats(f, i, &ls), BG_OK);
        tu_ctx("layer %u", i);
        /* A mixed stack's layers are blocked from blocked_from on. */
        TU_EQ_U(ls.variant, sc.blocked_from != 0 && i >= sc.blocked_from ? BG_VARIANT_BLOCKED
                                                                          : sc.layer_variant);
        TU_EQ_U(ls.seed, st.seed);
        TU_EQ_U(ls.layers, 1);
        TU_EQ_U(ls.capacity, n);
        if (i + 1 < st.layers)
            TU_TRUE(ls.items >= ls.capacity); /* only a full layer gets a successor */
        bits += ls.bits;
        bytes += ls.bytes;
        items += ls.items;
        set += ls.bits_set;
        cap += ls.capacity;
        est += ls.estimated_items;
        keep *= 1 - ls.error_rate;
        keep_est *= 1 - ls.estimated_fp_rate;
        k = ls.hashes;
        n *= sc.nonscaling ? 1 : sc.expansion;
    }
    bg_filter_stats none;
    TU_EQ_I(bg_filter_layer_stats(f, st.layers, &none), BG_EINVAL);
    TU_EQ_U(st.bits, bits);
    TU_EQ_U(st.bytes, bytes);
    TU_EQ_U(st.items, items);
    TU_EQ_U(st.bits_set, set);
    TU_EQ_U(st.capacity, cap);
    TU_EQ_U(st.hashes, k);
    TU_EQ_D(st.estimated_items, est);
    TU_EQ_D(st.error_rate, 1 - keep);
    TU_EQ_D(st.estimated_fp_rate, 1 - keep_est);
    TU_EQ_D(st.fill_ratio, (double)set / (double)bits);
    TU_EQ_U(st.saturated, 0);
    TU_EQ_U(bg_filter_bits(f), bits);
    TU_EQ_U(bg_filter_bytes(f), bytes);
    TU_EQ_U(bg_filter_capacity(f), cap);
    TU_EQ_U(bg_filter_items(f), items);
    TU_EQ_U(bg_filter_hashes(f), k);
    TU_TRUE(bytes <= sc.max_bytes);
    tu_ctx("-");
}

