/* The filter conformance suite (<bloomgate/filter.h>, <bloomgate/hash.h>).
 *
 * Every test runs over every entry of `configs`: each variant in each
 * concurrency mode, and the blocked variant's portable and AVX2
 * implementations as well as the fastest the CPU has (in the spirit of GEN_THUNKS in xor_singleheader's
 * tests): a new variant or mode is one more line there. Keys come from
 * tests/support/test_util.h, so every run sees the same keys.
 *
 * Sizes: the no-false-negative and FP-rate tests use 1e6 keys per
 * configuration. BG_TEST_FP_KEYS (a number of keys, default 1000000) lowers
 * the FP-rate test's n and query count for quick local runs; the bounds
 * are then widened by the binomial standard deviation. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "test_util.h"

#include <bloomgate/file.h>

#include <stdbool.h>
#include <sys/mman.h>
#include <unistd.h>

/* Internal (src/core/filter_internal.h): bg__blocked_simd, lowered before
 * bg_filter_new, picks a slower blocked implementation even where a faster
 * one is available, so that each is held to this suite. Where the CPU
 * lacks AVX2 (or AVX-512) those rows run the next one down. */
#include "../src/core/filter_internal.h"

typedef struct config {
    bg_variant variant;
    bg_concurrency mode;
    bg__simd simd; /* blocked: the fastest implementation allowed */
    const char *name;
} config;

static const config configs[] = {
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
#define NCONFIGS (sizeof configs / sizeof configs[0])

/* A counting filter's item count counts every add, a repeated key too; the
 * others', the adds that found their key new (filter.h). */
static uint64_t counts_every_add(const config *c)
{
    return c->variant == BG_VARIANT_COUNTING;
}
#define LEN(a) (sizeof(a) / sizeof((a)[0]))

#define BATCH 1024
#define SEED 0x1234abcd5678ef00u

/* Key sets (the `set` argument of the tu_key_* generators). */
enum {
    SET_RANDOM_SINGLE = 1,
    SET_RANDOM_MANY,
    SET_RANDOM_HASH,
    SET_RANDOM_HASHES,
    SET_RANDOM_TAA,
    SET_PRESENT,
    SET_ABSENT,
    SET_A,
    SET_B,
    SET_COMMON,
    SET_PROBE,
};

static bg_filter *make(const config *c, bg_filter_options o)
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

/* ---- adding and checking sets of keys -------------------------------- */

typedef enum add_how {
    ADD_SINGLE,       /* bg_filter_add */
    ADD_TEST_AND_ADD, /* bg_filter_test_and_add */
    ADD_MANY,         /* bg_filter_add_many */
    ADD_HASH,         /* bg_filter_hash + bg_filter_add_hash / test_and_add_hash */
    ADD_HASHES,       /* bg_filter_hash + bg_filter_add_hashes */
} add_how;

/* Adds keys [0, count) of a set; returns how many were reported new (0 for
 * the calls that do not report it). */
static uint64_t add_keys(bg_filter *f, tu_batch *b, int random, uint64_t set, uint64_t count,
                         add_how how)
{
    static bg_hash h[BATCH];
    uint64_t added = 0;
    for (uint64_t at = 0; at < count; at += BATCH) {
        size_t n = (size_t)(count - at < BATCH ? count - at : BATCH);
        tu_batch_fill(b, random, set, at, n);
        switch (how) {
        case ADD_SINGLE:
            for (size_t i = 0; i < n; i++)
                TU_EQ_I(bg_filter_add(f, b->keys[i], b->lens[i]), BG_OK);
            break;
        case ADD_TEST_AND_ADD:
            for (size_t i = 0; i < n; i++) {
                int rc = bg_filter_test_and_add(f, b->keys[i], b->lens[i]);
                TU_TRUE(rc == 0 || rc == 1);
                added += (uint64_t)rc;
            }
            break;
        case ADD_MANY: {
            int64_t rc = bg_filter_add_many(f, b->keys, b->lens, n, NULL);
            TU_TRUE(rc >= 0 && rc <= (int64_t)n);
            added += (uint64_t)rc;
            break;
        }
        case ADD_HASH:
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
        case ADD_HASHES: {
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

/* Asserts that every key [0, count) of a set is reported present: by
 * bg_filter_contains always, and with `all_paths` also by contains_many,
 * contains_hash and contains_hashes. Misses are counted, so that a failure
 * says how many and which one first. */
static void expect_all_found(const bg_filter *f, tu_batch *b, int random, uint64_t set,
                             uint64_t count, int all_paths)
{
    static bg_hash h[BATCH];
    static uint8_t res[BATCH];
    uint64_t missed[4] = {0}, first = UINT64_MAX;
    for (uint64_t at = 0; at < count; at += BATCH) {
        size_t n = (size_t)(count - at < BATCH ? count - at : BATCH);
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

/* How many keys [0, count) of a set are reported present (contains_many). */
static uint64_t count_present(const bg_filter *f, tu_batch *b, int random, uint64_t set,
                              uint64_t count)
{
    uint64_t present = 0;
    for (uint64_t at = 0; at < count; at += BATCH) {
        size_t n = (size_t)(count - at < BATCH ? count - at : BATCH);
        tu_batch_fill(b, random, set, at, n);
        int64_t rc = bg_filter_contains_many(f, b->keys, b->lens, n, NULL);
        TU_TRUE(rc >= 0 && rc <= (int64_t)n);
        present += (uint64_t)rc;
    }
    return present;
}

/* A fingerprint of a filter's answers: a hash over contains() of `count`
 * probe keys, plus its stats. Equal before and after means unchanged, to
 * the resolution these tests need. */
typedef struct snapshot {
    bg_filter_stats st;
    uint64_t answers;
    uint64_t present;
} snapshot;

static snapshot take_snapshot(const bg_filter *f, tu_batch *b)
{
    snapshot s;
    memset(&s, 0, sizeof s);
    TU_EQ_I(bg_filter_stats_get(f, &s.st), BG_OK);
    s.answers = 0x5eed;
    for (uint64_t i = 0; i < 20000; i++) {
        size_t len = tu_key_random(SET_PROBE, i, b->store);
        int c = bg_filter_contains(f, b->store, len);
        s.answers = tu_mix64(s.answers ^ (uint64_t)(c + 2));
        s.present += c == 1;
    }
    return s;
}

static void expect_same_snapshot(const snapshot *a, const snapshot *b)
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

/* ---- (a) no false negatives ------------------------------------------ */

static void no_false_negatives(void **state)
{
    (void)state;
    tu_batch b;
    tu_batch_init(&b, BATCH);
    for (size_t c = 0; c < NCONFIGS; c++) {
        bg_filter *f = make(&configs[c], (bg_filter_options){.capacity = 2000000,
                                                             .error_rate = 0.01, .seed = SEED});
        /* 1e6 random binary keys (lengths 0..256, NULs, the empty key)
         * added one at a time, found by every query path. */
        tu_ctx("%s: bg_filter_add, 1e6 keys", configs[c].name);
        add_keys(f, &b, 1, SET_RANDOM_SINGLE, 1000000, ADD_SINGLE);
        expect_all_found(f, &b, 1, SET_RANDOM_SINGLE, 1000000, 1);

        /* Keys added by the other calls are found by the single ones. */
        tu_ctx("%s: bg_filter_add_many", configs[c].name);
        add_keys(f, &b, 1, SET_RANDOM_MANY, 300000, ADD_MANY);
        expect_all_found(f, &b, 1, SET_RANDOM_MANY, 300000, 0);
        tu_ctx("%s: bg_filter_add_hash", configs[c].name);
        add_keys(f, &b, 1, SET_RANDOM_HASH, 100000, ADD_HASH);
        expect_all_found(f, &b, 1, SET_RANDOM_HASH, 100000, 0);
        tu_ctx("%s: bg_filter_add_hashes", configs[c].name);
        add_keys(f, &b, 1, SET_RANDOM_HASHES, 100000, ADD_HASHES);
        expect_all_found(f, &b, 1, SET_RANDOM_HASHES, 100000, 0);
        tu_ctx("%s: bg_filter_test_and_add", configs[c].name);
        add_keys(f, &b, 1, SET_RANDOM_TAA, 100000, ADD_TEST_AND_ADD);
        expect_all_found(f, &b, 1, SET_RANDOM_TAA, 100000, 0);

        /* The first set is still there after all that. */
        tu_ctx("%s: first set again", configs[c].name);
        expect_all_found(f, &b, 1, SET_RANDOM_SINGLE, 1000000, 0);
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
    for (size_t c = 0; c < NCONFIGS; c++) {
        for (size_t i = 0; i < LEN(keys); i++) {
            tu_ctx("%s: key of %zu %s bytes", configs[c].name, keys[i].len,
                   keys[i].zero ? "NUL" : "0xff");
            bg_filter *f = make(&configs[c], (bg_filter_options){.capacity = 1000,
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
    tu_batch_init(&b, BATCH);
    for (size_t c = 0; c < NCONFIGS; c++) {
        for (size_t pi = 0; pi < LEN(ps); pi++) {
            double p = ps[pi];
            tu_ctx("%s: n=%" PRIu64 " p=%g", configs[c].name, n, p);
            bg_filter *f = make(&configs[c], (bg_filter_options){.capacity = n, .error_rate = p,
                                                                 .seed = SEED + pi});
            bg_filter_stats st;
            /* Add in stages and check the cardinality estimate at each. */
            static const double stages[] = {0.1, 0.3, 1.0};
            uint64_t done = 0, added = 0;
            for (size_t s = 0; s < LEN(stages); s++) {
                uint64_t upto = (uint64_t)((double)n * stages[s]);
                for (uint64_t at = done; at < upto; at += BATCH) {
                    size_t cnt = (size_t)(upto - at < BATCH ? upto - at : BATCH);
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
                uint64_t items = counts_every_add(&configs[c]) ? done : added;
                TU_EQ_U(st.items, items);
                TU_EQ_U(bg_filter_items(f), items);
                TU_IN_RANGE_D((double)added, (double)done * (1 - p), (double)done);
                TU_IN_RANGE_D(st.estimated_items, 0.98 * (double)done, 1.02 * (double)done);
            }
            /* The fill matches the model. */
            double m = (double)st.bits, k = (double)st.hashes, fill;
            if (configs[c].variant != BG_VARIANT_BLOCKED) /* standard, counting */
                fill = -expm1(k * (double)n * log1p(-1.0 / m));
            else /* k bits in k distinct words, each uniform over 64 */
                fill = -expm1(-k * (double)n / m);
            TU_IN_RANGE_D(st.fill_ratio, fill * 0.99, fill * 1.01);
            TU_EQ_D(st.fill_ratio, (double)st.bits_set / m);

            /* No false negatives among the added keys. */
            TU_EQ_U(count_present(f, &b, 0, SET_PRESENT, n), n);

            /* The measured rate over keys never added. */
            uint64_t fps = count_present(f, &b, 0, SET_ABSENT, queries);
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
                          configs[c].name, p, rate, st.error_rate, st.estimated_fp_rate,
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
    for (size_t c = 0; c < NCONFIGS; c++) {
        tu_ctx("%s", configs[c].name);
        bg_filter *f = make(&configs[c], (bg_filter_options){.capacity = 1000,
                                                             .error_rate = 0.001});
        /* repeats count in a counting filter only (filter.h, COUNTING) */
        uint64_t rep = counts_every_add(&configs[c]);
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
    for (size_t c = 0; c < NCONFIGS; c++) {
        for (int use_hashes = 0; use_hashes < 2; use_hashes++) {
            tu_ctx("%s: %s", configs[c].name, use_hashes ? "add_hashes" : "add_many");
            /* Small (n = KEYS / 4), so that the later batches hit many
             * false positives and both answers occur often. */
            bg_filter_options o = {.capacity = KEYS / 4, .error_rate = 0.05, .seed = 99};
            bg_filter *batch = make(&configs[c], o), *single = make(&configs[c], o);
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
    for (size_t c = 0; c < NCONFIGS; c++) {
        if (configs[c].variant != BG_VARIANT_BLOCKED && configs[c].variant != BG_VARIANT_STANDARD)
            continue;
        for (size_t sd = 0; sd < LEN(seeds); sd++) {
            tu_ctx("%s, seed %llu", configs[c].name, (unsigned long long)seeds[sd]);
            bg_filter_options o = {.capacity = KEYS / 2, .error_rate = 0.05, .seed = seeds[sd]};
            bg_filter *batch = make(&configs[c], o), *single = make(&configs[c], o);
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
    for (size_t c = 0; c < NCONFIGS; c++) {
        if (configs[c].variant != BG_VARIANT_BLOCKED)
            continue;
        tu_ctx("%s", configs[c].name);
        bg_filter_options o = {.capacity = 4000, .error_rate = 0.01};
        bg_filter *batch = make(&configs[c], o), *single = make(&configs[c], o);
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
    tu_batch_init(&b, BATCH);
    static uint8_t res[BATCH];
    static bg_hash h[BATCH];
    for (size_t c = 0; c < NCONFIGS; c++) {
        tu_ctx("%s", configs[c].name);
        bg_filter *f = make(&configs[c], (bg_filter_options){.bits = 1 << 17, .hashes = 3});
        add_keys(f, &b, 1, SET_RANDOM_SINGLE, 40000, ADD_MANY);
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

/* ---- (d) bad arguments ----------------------------------------------- */

static void bad_keys(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCONFIGS; c++) {
        tu_ctx("%s", configs[c].name);
        bg_filter *f = make(&configs[c], (bg_filter_options){.capacity = 1000,
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
                tu_ctx("%s, bad key %zu of %zu", configs[c].name, bad, n);
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
        tu_ctx("%s", configs[c].name);
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
        TU_EQ_U(bg_filter_items(f), 1 + 3 * counts_every_add(&configs[c]));
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

    for (size_t c = 0; c < NCONFIGS; c++) {
        tu_ctx("%s: union/intersect with NULL", configs[c].name);
        bg_filter *f = make(&configs[c], (bg_filter_options){.capacity = 1000,
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
    tu_batch_init(&b, BATCH);
    for (size_t c = 0; c < NCONFIGS; c++) {
        tu_ctx("%s", configs[c].name);
        bg_filter *f = make(&configs[c], (bg_filter_options){.capacity = 20000,
                                                             .error_rate = 0.01, .seed = 5});
        uint64_t m = bg_filter_bits(f);
        uint32_t k = bg_filter_hashes(f);
        add_keys(f, &b, 1, SET_A, 20000, ADD_MANY);
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
        TU_EQ_U(count_present(f, &b, 1, SET_A, 20000), 0);
        /* And the filter is usable again. */
        add_keys(f, &b, 1, SET_B, 5000, ADD_SINGLE);
        expect_all_found(f, &b, 1, SET_B, 5000, 1);
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
    tu_batch_init(&b, BATCH);
    for (size_t c = 0; c < NCONFIGS; c++) {
        tu_ctx("%s: union", configs[c].name);
        bg_filter_options o = {.capacity = 100000, .error_rate = 0.01, .seed = 42};
        bg_filter *a = make(&configs[c], o), *bb = make(&configs[c], o);
        add_keys(a, &b, 1, SET_A, NA, ADD_MANY);
        add_keys(a, &b, 1, SET_COMMON, NC, ADD_MANY);
        add_keys(bb, &b, 1, SET_B, NB, ADD_SINGLE);
        add_keys(bb, &b, 1, SET_COMMON, NC, ADD_SINGLE);
        snapshot src_before = take_snapshot(bb, &b);
        bg_filter_stats st, before;
        TU_EQ_I(bg_filter_stats_get(a, &before), BG_OK);

        TU_EQ_I(bg_filter_union(a, bb), BG_OK);
        expect_all_found(a, &b, 1, SET_A, NA, 1);
        expect_all_found(a, &b, 1, SET_B, NB, 1);
        expect_all_found(a, &b, 1, SET_COMMON, NC, 0);
        /* src is untouched; dst's item count grew by what the fill says src
         * brought (estimate after - before), so the common keys count once. */
        snapshot src_after = take_snapshot(bb, &b);
        expect_same_snapshot(&src_before, &src_after);
        TU_EQ_I(bg_filter_stats_get(a, &st), BG_OK);
        double gained = st.estimated_items - before.estimated_items;
        TU_IN_RANGE_D((double)st.items, (double)before.items + gained - 1,
                      (double)before.items + gained + 1);
        TU_IN_RANGE_D((double)st.items, 0.97 * (NA + NB + NC), 1.03 * (NA + NB + NC));
        TU_IN_RANGE_D(st.estimated_items, 0.97 * (NA + NB + NC), 1.03 * (NA + NB + NC));
        /* Union is idempotent, with itself a no-op; and adds after it still
         * find everything. */
        snapshot u1 = take_snapshot(a, &b);
        TU_EQ_I(bg_filter_union(a, bb), BG_OK);
        TU_EQ_I(bg_filter_union(a, a), BG_OK);
        snapshot u2 = take_snapshot(a, &b);
        expect_same_snapshot(&u1, &u2);
        add_keys(a, &b, 1, SET_RANDOM_TAA, 5000, ADD_TEST_AND_ADD);
        expect_all_found(a, &b, 1, SET_RANDOM_TAA, 5000, 0);
        expect_all_found(a, &b, 1, SET_B, NB, 0);

        /* Union of an empty filter into one changes nothing but the
         * count; into an empty one copies. */
        bg_filter *empty = make(&configs[c], o);
        TU_EQ_I(bg_filter_union(empty, bb), BG_OK);
        expect_all_found(empty, &b, 1, SET_B, NB, 0);
        snapshot e = take_snapshot(empty, &b);
        TU_EQ_U(e.st.bits_set, src_after.st.bits_set);
        TU_EQ_U(e.answers, src_after.answers);
        bg_filter_free(empty);

        /* Intersection: keys in both are found; most keys in only one are
         * not. */
        tu_ctx("%s: intersection", configs[c].name);
        bg_filter *x = make(&configs[c], o), *y = make(&configs[c], o);
        add_keys(x, &b, 1, SET_A, NA, ADD_SINGLE);
        add_keys(x, &b, 1, SET_COMMON, NC, ADD_SINGLE);
        add_keys(y, &b, 1, SET_B, NB, ADD_MANY);
        add_keys(y, &b, 1, SET_COMMON, NC, ADD_MANY);
        TU_EQ_I(bg_filter_intersect(x, y), BG_OK);
        expect_all_found(x, &b, 1, SET_COMMON, NC, 1);
        /* The count is the estimate from the new fill: the common keys plus
         * the intersection's extra bits. */
        TU_TRUE(count_present(x, &b, 1, SET_A, NA) < NA / 10);
        TU_TRUE(count_present(x, &b, 1, SET_B, NB) < NB / 10);
        TU_EQ_I(bg_filter_stats_get(x, &st), BG_OK);
        TU_IN_RANGE_D((double)st.items, st.estimated_items - 1, st.estimated_items + 1);
        /* With itself: no change. */
        snapshot i1 = take_snapshot(x, &b);
        TU_EQ_I(bg_filter_intersect(x, x), BG_OK);
        snapshot i2 = take_snapshot(x, &b);
        expect_same_snapshot(&i1, &i2);

        /* Filters that differ only in concurrency mode are compatible. */
        bg_filter_options o2 = o;
        o2.variant = configs[c].variant;
        o2.concurrency = configs[c].mode == BG_SINGLE_WRITER ? BG_CONCURRENT_WRITERS
                                                             : BG_SINGLE_WRITER;
        bg_filter *other_mode = NULL;
        TU_EQ_I(bg_filter_new(&other_mode, &o2), BG_OK);
        TU_EQ_I(bg_filter_union(other_mode, y), BG_OK);
        expect_all_found(other_mode, &b, 1, SET_B, NB, 0);
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
    tu_batch_init(&b, BATCH);
    for (size_t c = 0; c < NCONFIGS; c++) {
        const config *cf = &configs[c];
        tu_ctx("%s: incompatible", cf->name);
        bg_filter_options o = {.bits = 1 << 16, .hashes = 5, .seed = 7};
        bg_filter *dst = make(cf, o);
        add_keys(dst, &b, 1, SET_A, 5000, ADD_MANY);

        config other_variant = *cf;
        other_variant.variant =
            cf->variant == BG_VARIANT_STANDARD ? BG_VARIANT_BLOCKED : BG_VARIANT_STANDARD;
        bg_filter_options o_m = o, o_k = o, o_seed = o;
        o_m.bits = 1 << 17;
        o_k.hashes = 6;
        o_seed.seed = 8;
        bg_filter *srcs[] = {
            make(&other_variant, o), make(cf, o_m), make(cf, o_k), make(cf, o_seed),
        };
        static const char *what[] = {"variant", "bits", "hashes", "seed"};
        for (size_t i = 0; i < LEN(srcs); i++) {
            tu_ctx("%s: incompatible %s", cf->name, what[i]);
            /* A full source, so that any bits leaking through would show. */
            add_keys(srcs[i], &b, 1, SET_B, 20000, ADD_MANY);
            snapshot before = take_snapshot(dst, &b);
            TU_EQ_I(bg_filter_union(dst, srcs[i]), BG_EINCOMPAT);
            snapshot after = take_snapshot(dst, &b);
            expect_same_snapshot(&before, &after);
            TU_EQ_I(bg_filter_intersect(dst, srcs[i]), BG_EINCOMPAT);
            after = take_snapshot(dst, &b);
            expect_same_snapshot(&before, &after);
            /* Nor is the source touched the other way round. */
            snapshot sb = take_snapshot(srcs[i], &b);
            TU_EQ_I(bg_filter_union(srcs[i], dst), BG_EINCOMPAT);
            TU_EQ_I(bg_filter_intersect(srcs[i], dst), BG_EINCOMPAT);
            snapshot sa = take_snapshot(srcs[i], &b);
            expect_same_snapshot(&sb, &sa);
        }
        expect_all_found(dst, &b, 1, SET_A, 5000, 0);
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
    for (size_t c = 0; c < NCONFIGS; c++) {
        bg_variant v = configs[c].variant;
        for (size_t i = 0; i < LEN(shapes); i++) {
            tu_ctx("%s: shape %zu", configs[c].name, i);
            bg_filter_options o = {.capacity = shapes[i].n, .bits = shapes[i].m,
                                   .error_rate = shapes[i].p, .hashes = shapes[i].k,
                                   .seed = 0xfeed0000u + i};
            bg_filter *f = make(&configs[c], o);
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
        tu_ctx("%s: full", configs[c].name);
        bg_filter *f = make(&configs[c], (bg_filter_options){.bits = 512, .hashes = 4});
        tu_batch b;
        tu_batch_init(&b, BATCH);
        add_keys(f, &b, 1, SET_A, 20000, ADD_MANY);
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
    tu_batch_init(&b, BATCH);
    for (size_t c = 0; c < NCONFIGS; c++) {
        tu_ctx("%s: union with a full filter", configs[c].name);
        bg_filter_options o = {.bits = 512, .hashes = 4};
        bg_filter *full = make(&configs[c], o);
        add_keys(full, &b, 1, SET_A, 20000, ADD_MANY);
        bg_filter_stats st;
        TU_EQ_I(bg_filter_stats_get(full, &st), BG_OK);
        TU_EQ_U(st.bits_set, 512);

        bg_filter *g = make(&configs[c], o);
        TU_EQ_I(bg_filter_union(g, full), BG_OK);
        TU_EQ_U(bg_filter_items(g), UINT64_MAX);
        bg_filter_free(g);

        g = make(&configs[c], o);
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

    for (size_t c = 0; c < NCONFIGS; c++) {
        tu_ctx("%s: bg_filter_hash uses the filter's seed", configs[c].name);
        for (size_t s = 0; s < LEN(seeds); s++) {
            bg_filter *f = make(&configs[c], (bg_filter_options){.capacity = 100,
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
        tu_ctx("%s: seed changes placement", configs[c].name);
        bg_filter_options o = {.capacity = 1000, .error_rate = 0.01, .seed = 1};
        bg_filter *f1 = make(&configs[c], o);
        o.seed = 2;
        bg_filter *f2 = make(&configs[c], o);
        tu_batch b;
        tu_batch_init(&b, BATCH);
        add_keys(f1, &b, 1, SET_A, 1000, ADD_MANY);
        add_keys(f2, &b, 1, SET_A, 1000, ADD_MANY);
        tu_batch_free(&b);
        tu_batch pb;
        tu_batch_init(&pb, 1);
        snapshot s1 = take_snapshot(f1, &pb), s2 = take_snapshot(f2, &pb);
        tu_batch_free(&pb);
        TU_TRUE(s1.answers != s2.answers);
        bg_filter_free(f1);
        bg_filter_free(f2);
    }
}

/* ---- (i) bit layout -------------------------------------------------- */

/* The least x with bg_layout_reduce(x, range) == r (for r < range). */
static uint64_t preimage(uint64_t r, uint64_t range)
{
    return (uint64_t)((((unsigned __int128)r << 64) + range - 1) / range);
}

/* The standard variant's probe positions (<bloomgate/layout.h>). */
static void standard_probes(bg_hash h, uint64_t m, uint32_t k, uint64_t *out)
{
    TU_EQ_I(bg_layout_positions(h, m, k, out), BG_OK);
}

static int standard_predict(const uint8_t *set, bg_hash h, uint64_t m, uint32_t k)
{
    uint64_t pr[BG_MAX_K];
    standard_probes(h, m, k, pr);
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
    for (size_t c = 0; c < NCONFIGS; c++) {
        if (configs[c].variant != BG_VARIANT_STANDARD)
            continue;
        for (size_t mi = 0; mi < LEN(ms); mi++) {
            for (size_t ki = 0; ki < LEN(ks); ki++) {
                uint64_t m = ms[mi];
                uint32_t k = ks[ki];
                tu_ctx("%s: m=%" PRIu64 " k=%u", configs[c].name, m, k);
                bg_filter *f = make(&configs[c], (bg_filter_options){.bits = m, .hashes = k,
                                                                     .seed = m * 31 + k});
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
                    standard_probes(h, m, k, pr);
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
    for (size_t c = 0; c < NCONFIGS; c++) {
        if (configs[c].variant != BG_VARIANT_BLOCKED)
            continue;
        for (size_t ni = 0; ni < LEN(nbs); ni++) {
            for (size_t ki = 0; ki < LEN(ks); ki++) {
                uint64_t nb = nbs[ni], m = nb * BG_BLOCK_BITS;
                uint32_t k = ks[ki];
                tu_ctx("%s: blocks=%" PRIu64 " k=%u", configs[c].name, nb, k);
                bg_filter *f = make(&configs[c], (bg_filter_options){.bits = m, .hashes = k,
                                                                     .seed = nb * 7 + k});
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
        cmocka_unit_test(no_false_negatives),
        cmocka_unit_test(awkward_keys),
        cmocka_unit_test(fp_rate_and_estimates),
        cmocka_unit_test(test_and_add_semantics),
        cmocka_unit_test(batch_results_match_single_calls),
        cmocka_unit_test(batch_hashing_matches_single),
        cmocka_unit_test(batch_hashing_stays_inside_keys),
        cmocka_unit_test(contains_many_matches_contains),
        cmocka_unit_test(bad_keys),
        cmocka_unit_test(null_filter),
        cmocka_unit_test(clear_empties),
        cmocka_unit_test(union_and_intersection),
        cmocka_unit_test(incompatible_filters),
        cmocka_unit_test(stats_fields),
        cmocka_unit_test(union_saturates_items),
        cmocka_unit_test(seeds_and_hashes),
        cmocka_unit_test(standard_bit_layout),
        cmocka_unit_test(blocked_bit_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
