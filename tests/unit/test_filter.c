/* SPDX-License-Identifier: BSD-3-Clause */
/* The filter conformance suite (<bloomgate/filter.h>, <bloomgate/hash.h>):
 * no false negatives, the false-positive rate and the estimates, and what
 * test-and-add and the batch calls report. Bad arguments, clear, union,
 * stats and seeds are test_filter_ops.c; the bit layout
 * test_filter_layout.c.
 *
 * Every test runs over every entry of tu_configs (test_filter_configs.h):
 * each variant in each concurrency mode, and each blocked implementation.
 * Keys come from tests/support/test_util.h, so every run sees the same keys.
 *
 * Sizes: the no-false-negative and FP-rate tests use 1e6 keys per
 * configuration. BG_TEST_FP_KEYS (a number of keys, default 1000000) lowers
 * the FP-rate test's n and query count for quick local runs; the bounds
 * are then widened by the binomial standard deviation. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "test_util.h"
#include "test_filter_configs.h"

#include <stdbool.h>
#include <sys/mman.h>
#include <unistd.h>

#define LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SEED 0x1234abcd5678ef00u

/* Key sets (the `set` argument of the tu_key_* generators), numbered as in
 * every filter suite, so that each test sees the keys it always has. */
enum {
    SET_RANDOM_SINGLE = 1,
    SET_RANDOM_MANY = 2,
    SET_RANDOM_HASH = 3,
    SET_RANDOM_HASHES = 4,
    SET_RANDOM_TAA = 5,
    SET_PRESENT = 6,
    SET_ABSENT = 7,
    SET_PROBE = 11,
};

/* ---- (a) no false negatives ------------------------------------------ */

static void no_false_negatives(void **state)
{
    (void)state;
    tu_batch b;
    tu_batch_init(&b, TU_BATCH);
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        bg_filter *f = tu_filter_make(
            &tu_configs[c],
            (bg_filter_options){.capacity = 2000000, .error_rate = 0.01, .seed = SEED});
        /* 1e6 random binary keys (lengths 0..256, NULs, the empty key)
         * added one at a time, found by every query path. */
        tu_ctx("%s: bg_filter_add, 1e6 keys", tu_configs[c].name);
        tu_add_keys(f, &b, 1, SET_RANDOM_SINGLE, 1000000, TU_ADD_SINGLE);
        tu_expect_all_found(f, &b, 1, SET_RANDOM_SINGLE, 1000000, 1);

        /* Keys added by the other calls are found by the single ones. */
        tu_ctx("%s: bg_filter_add_many", tu_configs[c].name);
        tu_add_keys(f, &b, 1, SET_RANDOM_MANY, 300000, TU_ADD_MANY);
        tu_expect_all_found(f, &b, 1, SET_RANDOM_MANY, 300000, 0);
        tu_ctx("%s: bg_filter_add_hash", tu_configs[c].name);
        tu_add_keys(f, &b, 1, SET_RANDOM_HASH, 100000, TU_ADD_HASH);
        tu_expect_all_found(f, &b, 1, SET_RANDOM_HASH, 100000, 0);
        tu_ctx("%s: bg_filter_add_hashes", tu_configs[c].name);
        tu_add_keys(f, &b, 1, SET_RANDOM_HASHES, 100000, TU_ADD_HASHES);
        tu_expect_all_found(f, &b, 1, SET_RANDOM_HASHES, 100000, 0);
        tu_ctx("%s: bg_filter_test_and_add", tu_configs[c].name);
        tu_add_keys(f, &b, 1, SET_RANDOM_TAA, 100000, TU_ADD_TEST_AND_ADD);
        tu_expect_all_found(f, &b, 1, SET_RANDOM_TAA, 100000, 0);

        /* The first set is still there after all that. */
        tu_ctx("%s: first set again", tu_configs[c].name);
        tu_expect_all_found(f, &b, 1, SET_RANDOM_SINGLE, 1000000, 0);
        bg_filter_free(f);
    }
    tu_batch_free(&b);
}

/* Specific awkward keys, each in a fresh filter, so that nothing else can
 * make them present. */
static void awkward_keys(void **state)
{
    (void)state;
    static const uint8_t zeros[300] = {0};
    uint8_t ff[300];
    memset(ff, 0xff, sizeof ff);
    static const struct {
        size_t len;
        int zero; /* 1: bytes from zeros, 0: from ff */
    } keys[] = {{0, 1}, {1, 1}, {2, 1}, {7, 1}, {8, 1}, {16, 1}, {17, 1},
                {128, 1}, {129, 1}, {240, 1}, {241, 1}, {256, 1}, {300, 1},
                {1, 0}, {3, 0}, {64, 0}, {255, 0}, {300, 0}};
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        for (size_t i = 0; i < LEN(keys); i++) {
            tu_ctx("%s: key of %zu %s bytes", tu_configs[c].name, keys[i].len,
                   keys[i].zero ? "NUL" : "0xff");
            bg_filter *f = tu_filter_make(&tu_configs[c], (bg_filter_options){.capacity = 1000,
                                                                              .error_rate = 0.001});
            const void *k = keys[i].zero ? (const void *)zeros : (const void *)ff;
            TU_EQ_I(bg_filter_contains(f, k, keys[i].len), 0);
            TU_EQ_I(bg_filter_test_and_add(f, k, keys[i].len), 1);
            TU_EQ_I(bg_filter_contains(f, k, keys[i].len), 1);
            /* A prefix or extension differs from the key (NULs count). */
            if (keys[i].len > 0)
                TU_EQ_I(bg_filter_contains(f, k, keys[i].len - 1), 0);
            TU_EQ_I(bg_filter_contains(f, k, keys[i].len + 1 <= 300 ? keys[i].len + 1 : 1), 0);
            bg_filter_free(f);
        }
    }
}

/* ---- (b) and (g): false-positive rate, estimates ---------------------- */

static void fp_rate_and_estimates(void **state)
{
    (void)state;
    uint64_t n = (uint64_t)tu_env_long("BG_TEST_FP_KEYS", 1000000);
    uint64_t queries = n;
    static const double ps[] = {0.1, 0.01, 0.001};
    tu_batch b;
    tu_batch_init(&b, TU_BATCH);
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        for (size_t pi = 0; pi < LEN(ps); pi++) {
            double p = ps[pi];
            tu_ctx("%s: n=%" PRIu64 " p=%g", tu_configs[c].name, n, p);
            bg_filter *f = tu_filter_make(
                &tu_configs[c],
                (bg_filter_options){.capacity = n, .error_rate = p, .seed = SEED + pi});
            bg_filter_stats st;
            /* Add in stages and check the cardinality estimate at each. */
            static const double stages[] = {0.1, 0.3, 1.0};
            uint64_t done = 0, added = 0;
            for (size_t s = 0; s < LEN(stages); s++) {
                uint64_t upto = (uint64_t)((double)n * stages[s]);
                for (uint64_t at = done; at < upto; at += TU_BATCH) {
                    size_t cnt = (size_t)(upto - at < TU_BATCH ? upto - at : TU_BATCH);
                    tu_batch_fill(&b, 0, SET_PRESENT, at, cnt);
                    int64_t rc = bg_filter_add_many(f, b.keys, b.lens, cnt, NULL);
                    TU_TRUE(rc >= 0);
                    added += (uint64_t)rc;
                }
                done = upto;
                TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
                /* items counts adds that set a new bit: all but the keys
                 * that were false positives when added; a counting
                 * filter's, every add (filter.h, COUNTING). */
                uint64_t items = tu_counts_every_add(&tu_configs[c]) ? done : added;
                TU_EQ_U(st.items, items);
                TU_EQ_U(bg_filter_items(f), items);
                TU_IN_RANGE_D((double)added, (double)done * (1 - p), (double)done);
                TU_IN_RANGE_D(st.estimated_items, 0.98 * (double)done, 1.02 * (double)done);
            }
            /* The fill matches the model. */
            double m = (double)st.bits, k = (double)st.hashes, fill;
            if (tu_configs[c].variant != BG_VARIANT_BLOCKED) /* standard, counting */
                fill = -expm1(k * (double)n * log1p(-1.0 / m));
            else /* k bits in k distinct words, each uniform over 64 */
                fill = -expm1(-k * (double)n / m);
            TU_IN_RANGE_D(st.fill_ratio, fill * 0.99, fill * 1.01);
            TU_EQ_D(st.fill_ratio, (double)st.bits_set / m);

            /* No false negatives among the added keys. */
            TU_EQ_U(tu_count_present(f, &b, 0, SET_PRESENT, n), n);

            /* The measured rate over keys never added. */
            uint64_t fps = tu_count_present(f, &b, 0, SET_ABSENT, queries);
            double rate = (double)fps / (double)queries;
            double sd = sqrt(p * (1 - p) / (double)queries);
            double slack = n >= 1000000 ? 0 : 4 * sd;
            TU_IN_RANGE_D(rate, 0.8 * p - slack, 1.2 * p + slack);
            /* The model's and the fill's predictions agree with it. */
            TU_IN_RANGE_D(st.error_rate, 0.95 * p, 1.05 * p);
            TU_IN_RANGE_D(rate, 0.9 * st.error_rate - slack, 1.1 * st.error_rate + slack);
            TU_IN_RANGE_D(st.estimated_fp_rate, 0.9 * rate - slack, 1.1 * rate + slack);
            print_message("    %s p=%g: measured %.6f, model %.6f, from fill %.6f, "
                          "estimated items %.0f\n",
                          tu_configs[c].name, p, rate, st.error_rate, st.estimated_fp_rate,
                          st.estimated_items);
            bg_filter_free(f);
        }
    }
    tu_batch_free(&b);
}

/* ---- (c) counting, test-and-add, batch results ----------------------- */

static void test_and_add_semantics(void **state)
{
    (void)state;
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        tu_ctx("%s", tu_configs[c].name);
        bg_filter *f = tu_filter_make(&tu_configs[c], (bg_filter_options){.capacity = 1000,
                                                                          .error_rate = 0.001});
        /* repeats count in a counting filter only (filter.h, COUNTING) */
        uint64_t rep = tu_counts_every_add(&tu_configs[c]);
        TU_EQ_U(bg_filter_items(f), 0);
        TU_EQ_I(bg_filter_test_and_add(f, "alice", 5), 1);
        TU_EQ_I(bg_filter_test_and_add(f, "alice", 5), 0);
        TU_EQ_U(bg_filter_items(f), 1 + rep);
        TU_EQ_I(bg_filter_add(f, "alice", 5), BG_OK);
        TU_EQ_U(bg_filter_items(f), 1 + 2 * rep);
        TU_EQ_I(bg_filter_add(f, "bob", 3), BG_OK);
        TU_EQ_U(bg_filter_items(f), 2 + 2 * rep);
        TU_EQ_I(bg_filter_test_and_add(f, "bob", 3), 0);
        bg_hash h;
        TU_EQ_I(bg_filter_hash(f, "carol", 5, &h), BG_OK);
        TU_EQ_I(bg_filter_test_and_add_hash(f, h), 1);
        TU_EQ_I(bg_filter_test_and_add_hash(f, h), 0);
        TU_EQ_I(bg_filter_test_and_add(f, "carol", 5), 0);
        TU_EQ_I(bg_filter_add_hash(f, h), BG_OK);
        TU_EQ_U(bg_filter_items(f), 3 + 6 * rep); /* 4 repeats of carol, 1 of bob */
        /* The empty key, in both spellings, is one key. */
        TU_EQ_I(bg_filter_test_and_add(f, NULL, 0), 1);
        TU_EQ_I(bg_filter_test_and_add(f, "", 0), 0);
        TU_EQ_I(bg_filter_contains(f, "", 0), 1);
        TU_EQ_U(bg_filter_items(f), 4 + 7 * rep);
        bg_filter_free(f);
    }
}

/* add_many and add_hashes against a twin filter fed by test_and_add one key
 * at a time: the same results, element by element, the same return value,
 * and the same item count. Batches repeat keys, within a batch and across
 * batches, and run at fills where many keys are already (falsely)
 * present. */
static void batch_results_match_single_calls(void **state)
{
    (void)state;
    enum { KEYS = 40000, MAXB = 700 };
    static const size_t sizes[] = {1, 2, 15, 16, 17, 31, 33, 100, 511, 700};
    tu_batch b;
    tu_batch_init(&b, MAXB);
    static uint8_t res[MAXB];
    static bg_hash h[MAXB];
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        for (int use_hashes = 0; use_hashes < 2; use_hashes++) {
            tu_ctx("%s: %s", tu_configs[c].name, use_hashes ? "add_hashes" : "add_many");
            /* Small (n = KEYS / 4), so that the later batches hit many
             * false positives and both answers occur often. */
            bg_filter_options o = {.capacity = KEYS / 4, .error_rate = 0.05, .seed = 99};
            bg_filter *batch = tu_filter_make(&tu_configs[c], o),
                      *single = tu_filter_make(&tu_configs[c], o);
            uint64_t key_no = 0, ones = 0, zeros = 0;
            for (size_t round = 0; key_no < KEYS; round++) {
                size_t cnt = sizes[round % LEN(sizes)];
                tu_batch_fill(&b, 1, SET_RANDOM_MANY, key_no, cnt);
                /* Repeat a key inside the batch, and one from before. */
                if (cnt > 3) {
                    b.keys[cnt - 1] = b.keys[0];
                    b.lens[cnt - 1] = b.lens[0];
                    b.lens[1] = tu_key_random(SET_RANDOM_MANY, key_no / 2,
                                              b.store + 1 * TU_MAX_KEY);
                    b.keys[1] = b.store + 1 * TU_MAX_KEY;
                }
                memset(res, 0xee, sizeof res);
                int64_t rc;
                if (use_hashes) {
                    for (size_t i = 0; i < cnt; i++)
                        TU_EQ_I(bg_filter_hash(batch, b.keys[i], b.lens[i], &h[i]), BG_OK);
                    rc = bg_filter_add_hashes(batch, h, cnt, (round & 1) ? res : NULL);
                } else {
                    rc = bg_filter_add_many(batch, b.keys, b.lens, cnt, (round & 1) ? res : NULL);
                }
                int64_t want = 0;
                for (size_t i = 0; i < cnt; i++) {
                    int r = bg_filter_test_and_add(single, b.keys[i], b.lens[i]);
                    TU_TRUE(r == 0 || r == 1);
                    if (round & 1)
                        TU_EQ_I(res[i], r);
                    want += r;
                    ones += r == 1;
                    zeros += r == 0;
                }
                if (!(round & 1))
                    TU_EQ_U(res[0], 0xee); /* NULL results: nothing written */
                TU_EQ_I(rc, want);
                TU_EQ_U(bg_filter_items(batch), bg_filter_items(single));
                key_no += cnt;
            }
            /* Both answers were exercised. */
            TU_TRUE(ones > 1000 && zeros > 1000);
            bg_filter_free(batch);
            bg_filter_free(single);
        }
    }
    tu_batch_free(&b);
}

/* The batch calls may hash keys their own way (the blocked variant's
 * SIMD code hashes eight (AVX-512) or four (AVX2) keys of 4..8, 9..16, 17..32
 * or 33..64 bytes per vector, other lengths one by one): whatever the mix of lengths, seeds and
 * batch sizes, add_many must set exactly the bits single adds set (the
 * encoded filters are byte for byte the same) and contains_many must answer
 * as contains. Each round draws 7 in 8 keys from one length class, so that
 * every vector path runs with full, partial and mixed groups, and the rest
 * from 0..80 bytes; some rounds draw every key from 0..80 (groups with no
 * majority class); NULL keys of length 0 are in it too. */
static void batch_hashing_matches_single(void **state)
{
    (void)state;
    enum { KEYS = 30000, MAXB = 300 };
    static const size_t sizes[] = {1, 5, 6, 7, 8, 9, 15, 16, 63, 64, 65, 129, 300};
    static const uint64_t seeds[] = {0, 1, SEED, UINT64_MAX};
    /* the length classes: each vector path's, two hashed one by one, and
     * all lengths mixed (groups with no majority class) */
    static const size_t class_lo[] = {17, 9, 4, 33, 0, 65, 0};
    static const size_t class_hi[] = {32, 16, 8, 64, 3, 80, 80};
    static uint8_t store[MAXB][80];
    static const void *keys[MAXB];
    static size_t lens[MAXB];
    static uint8_t res[MAXB];
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        if (tu_configs[c].variant != BG_VARIANT_BLOCKED &&
            tu_configs[c].variant != BG_VARIANT_STANDARD)
            continue;
        for (size_t sd = 0; sd < LEN(seeds); sd++) {
            tu_ctx("%s, seed %llu", tu_configs[c].name, (unsigned long long)seeds[sd]);
            bg_filter_options o = {.capacity = KEYS / 2, .error_rate = 0.05, .seed = seeds[sd]};
            bg_filter *batch = tu_filter_make(&tu_configs[c], o),
                      *single = tu_filter_make(&tu_configs[c], o);
            uint64_t st = 0x5eed ^ seeds[sd], key_no = 0, yes = 0, no = 0;
            for (size_t round = 0; key_no < KEYS; round++) {
                size_t cnt = sizes[round % LEN(sizes)];
                size_t cl = (round / LEN(sizes)) % LEN(class_lo);
                size_t span = class_hi[cl] - class_lo[cl] + 1;
                for (size_t i = 0; i < cnt; i++) {
                    uint64_t r = tu_next(&st);
                    /* 7 in 8 keys from class cl, else 0..80 bytes; 1 in 64 a NULL key */
                    size_t len = (r & 7) ? class_lo[cl] + (size_t)((r >> 3) % span)
                                         : (size_t)((r >> 3) % 81);
                    for (size_t j = 0; j < len; j++)
                        store[i][j] = (uint8_t)(tu_next(&st) >> 56);
                    keys[i] = ((r >> 10) & 63) == 0 ? NULL : store[i];
                    lens[i] = keys[i] ? len : 0;
                }
                int64_t rc = bg_filter_add_many(batch, keys, lens, cnt, res);
                int64_t want = 0;
                for (size_t i = 0; i < cnt; i++) {
                    int r = bg_filter_test_and_add(single, keys[i] ? keys[i] : "", lens[i]);
                    TU_EQ_I(res[i], r);
                    want += r;
                }
                TU_EQ_I(rc, want);
                /* Queries of other keys, as many present as absent. */
                for (size_t i = 0; i < cnt; i++)
                    store[i][0] ^= (uint8_t)(i & 1);
                rc = bg_filter_contains_many(batch, keys, lens, cnt, res);
                want = 0;
                for (size_t i = 0; i < cnt; i++) {
                    int r = bg_filter_contains(single, keys[i] ? keys[i] : "", lens[i]);
                    TU_EQ_I(res[i], r);
                    want += r;
                    yes += r == 1;
                    no += r == 0;
                }
                TU_EQ_I(rc, want);
                key_no += cnt;
            }
            TU_TRUE(yes > 1000 && no > 1000);
            TU_EQ_U(bg_filter_items(batch), bg_filter_items(single));
            uint64_t na, nb;
            TU_EQ_I(bg_filter_encoded_size(batch, &na), BG_OK);
            TU_EQ_I(bg_filter_encoded_size(single, &nb), BG_OK);
            TU_EQ_U(na, nb);
            uint8_t *ea = malloc((size_t)na), *eb = malloc((size_t)nb);
            assert_non_null(ea);
            assert_non_null(eb);
            size_t wa, wb;
            TU_EQ_I(bg_filter_encode(batch, ea, (size_t)na, &wa), BG_OK);
            TU_EQ_I(bg_filter_encode(single, eb, (size_t)nb, &wb), BG_OK);
            TU_EQ_U(wa, wb);
            TU_TRUE(memcmp(ea, eb, wa) == 0);
            free(ea);
            free(eb);
            bg_filter_free(batch);
            bg_filter_free(single);
        }
    }
}

/* Batch hashing reads only the keys' own bytes: eight keys of each length
 * 0..80, each ending on the last byte of a page followed by an inaccessible
 * one, then each starting on the first byte of a page preceded by one. A
 * vector path that read 8 bytes of a 4-byte key, or before a key, would
 * fault here (AddressSanitizer does not check vector gathers). The answers
 * must still be the single calls'. */
static void batch_hashing_stays_inside_keys(void **state)
{
    (void)state;
    enum { LANES = 8, MAXLEN = 80 };
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    /* per lane: [no access][data][no access] */
    uint8_t *map = mmap(NULL, 3 * page * LANES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(map != MAP_FAILED);
    uint8_t *data[LANES];
    for (size_t i = 0; i < LANES; i++) {
        data[i] = map + (3 * i + 1) * page;
        assert_int_equal(mprotect(data[i], page, PROT_READ | PROT_WRITE), 0);
    }
    uint64_t st = 0xed9e;
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        if (tu_configs[c].variant != BG_VARIANT_BLOCKED)
            continue;
        tu_ctx("%s", tu_configs[c].name);
        bg_filter_options o = {.capacity = 4000, .error_rate = 0.01};
        bg_filter *batch = tu_filter_make(&tu_configs[c], o),
                  *single = tu_filter_make(&tu_configs[c], o);
        for (int at_start = 0; at_start < 2; at_start++) {
            for (size_t len = 0; len <= MAXLEN; len++) {
                const void *keys[LANES];
                size_t lens[LANES];
                uint8_t res[LANES];
                for (size_t i = 0; i < LANES; i++) {
                    uint8_t *k = at_start ? data[i] : data[i] + page - len;
                    for (size_t j = 0; j < len; j++)
                        k[j] = (uint8_t)(tu_next(&st) >> 56);
                    keys[i] = k;
                    lens[i] = len;
                }
                int64_t rc = bg_filter_add_many(batch, keys, lens, LANES, res);
                int64_t want = 0;
                for (size_t i = 0; i < LANES; i++) {
                    int r = bg_filter_test_and_add(single, keys[i], lens[i]);
                    TU_EQ_I(res[i], r);
                    want += r;
                }
                TU_EQ_I(rc, want);
                TU_EQ_I(bg_filter_contains_many(single, keys, lens, LANES, res), LANES);
            }
        }
        TU_EQ_U(bg_filter_items(batch), bg_filter_items(single));
        bg_filter_free(batch);
        bg_filter_free(single);
    }
    munmap(map, 3 * page * LANES);
}

/* contains_many / contains_hashes agree with contains, key by key, on a
 * half-full filter where both answers are common. */
static void contains_many_matches_contains(void **state)
{
    (void)state;
    enum { KEYS = 50000 };
    static const size_t sizes[] = {1, 3, 16, 17, 64, 255, 1000};
    tu_batch b;
    tu_batch_init(&b, TU_BATCH);
    static uint8_t res[TU_BATCH];
    static bg_hash h[TU_BATCH];
    for (size_t c = 0; c < TU_NCONFIGS; c++) {
        tu_ctx("%s", tu_configs[c].name);
        bg_filter *f =
            tu_filter_make(&tu_configs[c], (bg_filter_options){.bits = 1 << 17, .hashes = 3});
        tu_add_keys(f, &b, 1, SET_RANDOM_SINGLE, 40000, TU_ADD_MANY);
        bg_filter_stats before;
        TU_EQ_I(bg_filter_stats_get(f, &before), BG_OK);
        uint64_t key_no = 0, yes = 0, no = 0;
        for (size_t round = 0; key_no < KEYS; round++) {
            size_t cnt = sizes[round % LEN(sizes)];
            /* Alternate between added and other keys within a batch. */
            for (size_t i = 0; i < cnt; i++) {
                uint8_t *buf = b.store + i * TU_MAX_KEY;
                uint64_t set = (key_no + i) % 2 ? SET_RANDOM_SINGLE : SET_PROBE;
                b.lens[i] = tu_key_random(set, key_no + i, buf);
                b.keys[i] = buf;
            }
            memset(res, 0xee, sizeof res);
            int64_t rc = bg_filter_contains_many(f, b.keys, b.lens, cnt, res);
            int64_t want = 0;
            for (size_t i = 0; i < cnt; i++) {
                int r = bg_filter_contains(f, b.keys[i], b.lens[i]);
                TU_EQ_I(res[i], r);
                want += r;
                yes += r == 1;
                no += r == 0;
                TU_EQ_I(bg_filter_hash(f, b.keys[i], b.lens[i], &h[i]), BG_OK);
                TU_EQ_I(bg_filter_contains_hash(f, h[i]), r);
            }
            TU_EQ_I(rc, want);
            TU_EQ_I(bg_filter_contains_many(f, b.keys, b.lens, cnt, NULL), want);
            memset(res, 0xee, sizeof res);
            TU_EQ_I(bg_filter_contains_hashes(f, h, cnt, res), want);
            for (size_t i = 0; i < cnt; i++)
                TU_EQ_I(res[i], bg_filter_contains_hash(f, h[i]));
            TU_EQ_I(bg_filter_contains_hashes(f, h, cnt, NULL), want);
            key_no += cnt;
        }
        TU_TRUE(yes > 5000 && no > 5000);
        /* Queries change nothing. */
        bg_filter_stats after;
        TU_EQ_I(bg_filter_stats_get(f, &after), BG_OK);
        TU_EQ_U(after.items, before.items);
        TU_EQ_U(after.bits_set, before.bits_set);
        bg_filter_free(f);
    }
    tu_batch_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_false_negatives),
        cmocka_unit_test(awkward_keys),
        cmocka_unit_test(fp_rate_and_estimates),
        cmocka_unit_test(test_and_add_semantics),
        cmocka_unit_test(batch_results_match_single_calls),
        cmocka_unit_test(batch_hashing_matches_single),
        cmocka_unit_test(batch_hashing_stays_inside_keys),
        cmocka_unit_test(contains_many_matches_contains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
