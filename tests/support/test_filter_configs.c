/* SPDX-License-Identifier: BSD-3-Clause */
/* The definitions behind test_filter_configs.h (its comments say what each
 * does). */
#include "test_filter_configs.h"

const tu_config tu_configs[TU_NCONFIGS] = {
    {BG_VARIANT_STANDARD, BG_CONCURRENT_WRITERS, BG__SIMD_AVX512, "standard/concurrent-writers"},
    {BG_VARIANT_STANDARD, BG_SINGLE_WRITER, BG__SIMD_AVX512, "standard/single-writer"},
    {BG_VARIANT_BLOCKED, BG_CONCURRENT_WRITERS, BG__SIMD_AVX512, "blocked/concurrent-writers"},
    {BG_VARIANT_BLOCKED, BG_SINGLE_WRITER, BG__SIMD_AVX512, "blocked/single-writer"},
    {BG_VARIANT_BLOCKED, BG_CONCURRENT_WRITERS, BG__SIMD_AVX2, "blocked-avx2/concurrent-writers"},
    {BG_VARIANT_BLOCKED, BG_SINGLE_WRITER, BG__SIMD_AVX2, "blocked-avx2/single-writer"},
    {BG_VARIANT_BLOCKED, BG_CONCURRENT_WRITERS, BG__SIMD_NONE, "blocked-portable/concurrent-writers"},
    {BG_VARIANT_BLOCKED, BG_SINGLE_WRITER, BG__SIMD_NONE, "blocked-portable/single-writer"},
    {BG_VARIANT_COUNTING, BG_CONCURRENT_WRITERS, BG__SIMD_AVX512, "counting/concurrent-writers"},
    {BG_VARIANT_COUNTING, BG_SINGLE_WRITER, BG__SIMD_AVX512, "counting/single-writer"},
};

uint64_t tu_counts_every_add(const tu_config *c)
{
    return c->variant == BG_VARIANT_COUNTING;
}

bg_filter *tu_filter_make(const tu_config *c, bg_filter_options o)
{
    o.variant = c->variant;
    o.concurrency = c->mode;
    bg_filter *f = NULL;
    bg__blocked_simd = c->simd;
    int rc = bg_filter_new(&f, &o);
    bg__blocked_simd = BG__SIMD_AVX512;
    TU_EQ_I(rc, BG_OK);
    assert_non_null(f);
    return f;
}

uint64_t tu_add_keys(bg_filter *f, tu_batch *b, int random, uint64_t set, uint64_t count,
                     tu_add_how how)
{
    static bg_hash h[TU_BATCH];
    uint64_t added = 0;
    for (uint64_t at = 0; at < count; at += TU_BATCH) {
        size_t n = (size_t)(count - at < TU_BATCH ? count - at : TU_BATCH);
        tu_batch_fill(b, random, set, at, n);
        switch (how) {
        case TU_ADD_SINGLE:
            for (size_t i = 0; i < n; i++)
                TU_EQ_I(bg_filter_add(f, b->keys[i], b->lens[i]), BG_OK);
            break;
        case TU_ADD_TEST_AND_ADD:
            for (size_t i = 0; i < n; i++) {
                int rc = bg_filter_test_and_add(f, b->keys[i], b->lens[i]);
                TU_TRUE(rc == 0 || rc == 1);
                added += (uint64_t)rc;
            }
            break;
        case TU_ADD_MANY: {
            int64_t rc = bg_filter_add_many(f, b->keys, b->lens, n, NULL);
            TU_TRUE(rc >= 0 && rc <= (int64_t)n);
            added += (uint64_t)rc;
            break;
        }
        case TU_ADD_HASH:
            for (size_t i = 0; i < n; i++) {
                TU_EQ_I(bg_filter_hash(f, b->keys[i], b->lens[i], &h[i]), BG_OK);
                if (i & 1) {
                    TU_EQ_I(bg_filter_add_hash(f, h[i]), BG_OK);
                } else {
                    int rc = bg_filter_test_and_add_hash(f, h[i]);
                    TU_TRUE(rc == 0 || rc == 1);
                }
            }
            break;
        case TU_ADD_HASHES: {
            for (size_t i = 0; i < n; i++)
                TU_EQ_I(bg_filter_hash(f, b->keys[i], b->lens[i], &h[i]), BG_OK);
            int64_t rc = bg_filter_add_hashes(f, h, n, NULL);
            TU_TRUE(rc >= 0 && rc <= (int64_t)n);
            added += (uint64_t)rc;
            break;
        }
        }
    }
    return added;
}

void tu_expect_all_found(const bg_filter *f, tu_batch *b, int random, uint64_t set,
                         uint64_t count, int all_paths)
{
    static bg_hash h[TU_BATCH];
    static uint8_t res[TU_BATCH];
    uint64_t missed[4] = {0}, first = UINT64_MAX;
    for (uint64_t at = 0; at < count; at += TU_BATCH) {
        size_t n = (size_t)(count - at < TU_BATCH ? count - at : TU_BATCH);
        tu_batch_fill(b, random, set, at, n);
        for (size_t i = 0; i < n; i++) {
            if (bg_filter_contains(f, b->keys[i], b->lens[i]) != 1) {
                missed[0]++;
                if (first == UINT64_MAX)
                    first = at + i;
            }
        }
        if (!all_paths)
            continue;
        memset(res, 0xee, sizeof res);
        int64_t rc = bg_filter_contains_many(f, b->keys, b->lens, n, res);
        uint64_t batch_missed = 0;
        for (size_t i = 0; i < n; i++)
            batch_missed += res[i] != 1;
        missed[1] += batch_missed;
        TU_EQ_I(rc, (int64_t)n - (int64_t)batch_missed);
        for (size_t i = 0; i < n; i++) {
            TU_EQ_I(bg_filter_hash(f, b->keys[i], b->lens[i], &h[i]), BG_OK);
            missed[2] += bg_filter_contains_hash(f, h[i]) != 1;
        }
        memset(res, 0xee, sizeof res);
        rc = bg_filter_contains_hashes(f, h, n, res);
        TU_EQ_I(rc, (int64_t)n);
        for (size_t i = 0; i < n; i++)
            missed[3] += res[i] != 1;
    }
    if (missed[0] || missed[1] || missed[2] || missed[3])
        TU_FAIL_("set %" PRIu64 ": false negatives: contains %" PRIu64 " (first: key %" PRIu64
                 "), contains_many %" PRIu64 ", contains_hash %" PRIu64
                 ", contains_hashes %" PRIu64 " of %" PRIu64 "\n",
                 set, missed[0], first, missed[1], missed[2], missed[3], count);
}

uint64_t tu_count_present(const bg_filter *f, tu_batch *b, int random, uint64_t set,
                          uint64_t count)
{
    uint64_t present = 0;
    for (uint64_t at = 0; at < count; at += TU_BATCH) {
        size_t n = (size_t)(count - at < TU_BATCH ? count - at : TU_BATCH);
        tu_batch_fill(b, random, set, at, n);
        int64_t rc = bg_filter_contains_many(f, b->keys, b->lens, n, NULL);
        TU_TRUE(rc >= 0 && rc <= (int64_t)n);
        present += (uint64_t)rc;
    }
    return present;
}

tu_snapshot tu_take_snapshot(const bg_filter *f, tu_batch *b)
{
    tu_snapshot s;
    memset(&s, 0, sizeof s);
    TU_EQ_I(bg_filter_stats_get(f, &s.st), BG_OK);
    s.answers = 0x5eed;
    for (uint64_t i = 0; i < 20000; i++) {
        size_t len = tu_key_random(TU_SNAPSHOT_SET, i, b->store);
        int c = bg_filter_contains(f, b->store, len);
        s.answers = tu_mix64(s.answers ^ (uint64_t)(c + 2));
        s.present += c == 1;
    }
    return s;
}

void tu_expect_same_snapshot(const tu_snapshot *a, const tu_snapshot *b)
{
    TU_EQ_U(a->st.bits_set, b->st.bits_set);
    TU_EQ_U(a->st.items, b->st.items);
    TU_EQ_U(a->st.bits, b->st.bits);
    TU_EQ_U(a->st.hashes, b->st.hashes);
    TU_EQ_U(a->st.seed, b->st.seed);
    TU_EQ_D(a->st.estimated_fp_rate, b->st.estimated_fp_rate);
    TU_EQ_U(a->present, b->present);
    TU_EQ_U(a->answers, b->answers);
}
