/* The counting variant (filter.h COUNTING, src/core/counting.c).
 *
 * Counters are read back through bg_filter_encode: the payload of a counting
 * filter holds counter i in the high nibble of byte i / 2 when i is even,
 * the low nibble when odd, so every test can compare counters with a model
 * computed here, independently of the library (the probe formula is written
 * out again below, as in test_filter.c). Most tests run in both concurrency
 * modes; the threaded tests are test_counting_concurrency.c.
 *
 * Sizes: the false-positive test uses n = 1e6 keys and 1e6 absent queries
 * per rate; BG_TEST_FP_KEYS lowers both for quick runs (the bounds then
 * widen by 4 binomial standard deviations). */
#define _GNU_SOURCE /* mkdtemp */
#include "test_util.h"
#include "test_tmpdir.h"
#include "../src/core/filter_internal.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#define LEN(a) (sizeof(a) / sizeof((a)[0]))
#define BATCH 1024
#define SEED UINT64_C(0xc0a1e5ce11ed5eed)

static const bg_concurrency modes[] = {BG_CONCURRENT_WRITERS, BG_SINGLE_WRITER};

static const char *mode_name(bg_concurrency m)
{
    return m == BG_SINGLE_WRITER ? "single-writer" : "concurrent-writers";
}

/* Key sets (the `set` argument of the tu_key_* generators). */
enum {
    SET_MODEL = 1,
    SET_PRESENT,
    SET_ABSENT,
    SET_A,
    SET_B,
    SET_SHARED,
    SET_PROBE,
};

static bg_filter *make(bg_filter_options o, bg_concurrency mode)
{
    o.variant = BG_VARIANT_COUNTING;
    o.concurrency = mode;
    bg_filter *f = NULL;
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    assert_non_null(f);
    TU_EQ_I(bg_filter_variant(f), BG_VARIANT_COUNTING);
    return f;
}

/* ---- file images and counters ------------------------------------------ */

typedef struct image {
    uint8_t *buf;
    size_t len;
} image;

static image encode(const bg_filter *f)
{
    uint64_t n;
    TU_EQ_I(bg_filter_encoded_size(f, &n), BG_OK);
    image im = {malloc((size_t)n), (size_t)n};
    assert_non_null(im.buf);
    size_t written = 0;
    TU_EQ_I(bg_filter_encode(f, im.buf, im.len, &written), BG_OK);
    TU_EQ_U(written, n);
    return im;
}

static void image_free(image *im)
{
    free(im->buf);
    im->buf = NULL;
}

static const uint8_t *payload(const image *im)
{
    return im->buf + BG_FILE_HEADER_BYTES;
}

static size_t payload_len(const image *im)
{
    return im->len - BG_FILE_HEADER_BYTES;
}

/* Counter i of a payload, as filter.h COUNTING documents it. */
static unsigned counter(const uint8_t *p, uint64_t i)
{
    return (unsigned)(p[i / 2] >> (i % 2 ? 0 : 4)) & 15u;
}

/* Bit i of a standard filter's payload (filter.h BIT LAYOUT). */
static unsigned bit(const uint8_t *p, uint64_t i)
{
    return (unsigned)(p[i / 8] >> (7 - i % 8)) & 1u;
}

static void expect_same_payload(const bg_filter *a, const bg_filter *b)
{
    image ia = encode(a), ib = encode(b);
    TU_EQ_U(ia.len, ib.len);
    size_t diff = 0, first = SIZE_MAX;
    for (size_t i = 0; i < payload_len(&ia); i++) {
        if (payload(&ia)[i] != payload(&ib)[i]) {
            diff++;
            if (first == SIZE_MAX)
                first = i;
        }
    }
    if (diff)
        TU_FAIL_("payloads differ in %zu of %zu bytes (first: byte %zu, %#x != %#x)\n", diff,
                 payload_len(&ia), first, payload(&ia)[first], payload(&ib)[first]);
    image_free(&ia);
    image_free(&ib);
}

/* The standard variant's probe positions (<bloomgate/layout.h>). */
static void standard_probes(bg_hash h, uint64_t m, uint32_t k, uint64_t *out)
{
    TU_EQ_I(bg_layout_positions(h, m, k, out), BG_OK);
}

/* The probes of a key, deduplicated: how many distinct counters it has. */
static uint32_t distinct_probes(bg_hash h, uint64_t m, uint32_t k, uint64_t *out)
{
    uint64_t pr[BG_MAX_K];
    standard_probes(h, m, k, pr);
    uint32_t n = 0;
    for (uint32_t j = 0; j < k; j++) {
        uint32_t t = 0;
        while (t < n && out[t] != pr[j])
            t++;
        if (t == n)
            out[n++] = pr[j];
    }
    return n;
}

static bg_hash hash_of(const bg_filter *f, const void *key, size_t len)
{
    bg_hash h;
    TU_EQ_I(bg_filter_hash(f, key, len, &h), BG_OK);
    return h;
}

/* Adds or removes keys [first, first + count) of a set, by the batch call. */
static uint64_t add_range(bg_filter *f, tu_batch *b, uint64_t set, uint64_t first, uint64_t count)
{
    uint64_t added = 0;
    for (uint64_t at = 0; at < count; at += b->cap) {
        size_t n = (size_t)(count - at < b->cap ? count - at : b->cap);
        tu_batch_fill(b, 0, set, first + at, n);
        int64_t rc = bg_filter_add_many(f, b->keys, b->lens, n, NULL);
        TU_TRUE(rc >= 0);
        added += (uint64_t)rc;
    }
    return added;
}

static uint64_t count_present(const bg_filter *f, tu_batch *b, uint64_t set, uint64_t first,
                              uint64_t count)
{
    uint64_t present = 0;
    for (uint64_t at = 0; at < count; at += b->cap) {
        size_t n = (size_t)(count - at < b->cap ? count - at : b->cap);
        tu_batch_fill(b, 0, set, first + at, n);
        int64_t rc = bg_filter_contains_many(f, b->keys, b->lens, n, NULL);
        TU_TRUE(rc >= 0);
        present += (uint64_t)rc;
    }
    return present;
}

/* ---- (1) random adds and removes against a multiset model ------------- */

/* 200k operations on 50k keys, in a fixed pseudo-random order: add any key
 * (so keys are added several times), or remove one copy of a key the model
 * holds. Every answer is checked against the model as it happens: a key the
 * model holds is present, test-and-add on it says "not new", its remove
 * succeeds; the item count follows the documented rule. Afterwards every
 * held key is found, keys no longer held are mostly gone, and the counters
 * are byte for byte those of a fresh filter given each held key as many
 * times as the model holds it (counting is order-free below saturation). */
static void model_adds_and_removes(void **state)
{
    (void)state;
    enum { KEYS = 50000, OPS = 200000 };
    uint8_t *count = calloc(KEYS, 1);
    uint32_t *copies = malloc(OPS * sizeof *copies); /* one entry per held copy */
    assert_non_null(count);
    assert_non_null(copies);
    for (size_t mi = 0; mi < LEN(modes); mi++) {
        tu_ctx("%s: %d ops on %d keys", mode_name(modes[mi]), OPS, KEYS);
        bg_filter *f = make((bg_filter_options){.capacity = KEYS, .error_rate = 0.01,
                                                .seed = SEED}, modes[mi]);
        memset(count, 0, KEYS);
        size_t ncopies = 0;
        uint64_t rng = 20240601, items = 0, adds = 0, removes = 0, max_count = 0;
        uint64_t wrong_present = 0, wrong_new = 0, wrong_remove = 0, wrong_gone = 0;
        uint8_t key[TU_DISTINCT_LEN];
        for (uint64_t op = 0; op < OPS; op++) {
            uint64_t r = tu_next(&rng);
            bool add = ncopies == 0 || r % 100 < 60;
            uint32_t id;
            size_t slot = 0;
            if (add) {
                id = (uint32_t)((r >> 8) % KEYS);
            } else {
                slot = (size_t)((r >> 8) % ncopies);
                id = copies[slot];
            }
            tu_key_distinct(SET_MODEL, id, key);
            int before = bg_filter_contains(f, key, sizeof key);
            TU_TRUE(before == 0 || before == 1);
            wrong_present += count[id] > 0 && before != 1;
            if (add) {
                /* Rotate through the add calls; "new" is 1 exactly when the
                 * key was absent just before (one thread). */
                int isnew;
                switch (op % 3) {
                case 0:
                    isnew = bg_filter_test_and_add(f, key, sizeof key);
                    break;
                case 1:
                    TU_EQ_I(bg_filter_add(f, key, sizeof key), BG_OK);
                    isnew = !before;
                    break;
                default:
                    isnew = bg_filter_test_and_add_hash(f, hash_of(f, key, sizeof key));
                    break;
                }
                wrong_new += isnew != !before || (count[id] > 0 && isnew != 0);
                items++; /* every add counts, repeats too */
                count[id]++;
                max_count = count[id] > max_count ? count[id] : max_count;
                copies[ncopies++] = id;
                adds++;
            } else {
                int rc;
                switch (op % 3) {
                case 0:
                    rc = bg_filter_remove(f, key, sizeof key);
                    break;
                case 1:
                    rc = bg_filter_remove_hash(f, hash_of(f, key, sizeof key));
                    break;
                default: {
                    const void *ks[1] = {key};
                    size_t ls[1] = {sizeof key};
                    uint8_t res[1] = {7};
                    int64_t n = bg_filter_remove_many(f, ks, ls, 1, res);
                    rc = n == 1 && res[0] == 1 ? BG_OK : n == 0 && res[0] == 0 ? BG_EABSENT
                                                                                : BG_EINVAL;
                    break;
                }
                }
                wrong_remove += rc != BG_OK;
                count[id]--;
                /* no false negative for a key with copies left */
                wrong_gone += count[id] > 0 && bg_filter_contains(f, key, sizeof key) != 1;
                items--; /* filter.h COUNTING: every remove uncounts */
                copies[slot] = copies[--ncopies];
                removes++;
            }
            if (op % 4096 == 0)
                TU_EQ_U(bg_filter_items(f), items);
        }
        TU_EQ_U(wrong_present, 0);
        TU_EQ_U(wrong_new, 0);
        TU_EQ_U(wrong_remove, 0);
        TU_EQ_U(wrong_gone, 0);
        TU_EQ_U(bg_filter_items(f), items);
        TU_TRUE(max_count >= 5 && adds > 100000 && removes > 70000);

        /* Every held key is found; of the keys not held (most of them were
         * added and removed again), about the filter's rate are present. */
        uint64_t held = 0, missed = 0, not_held = 0, fp = 0;
        for (uint32_t id = 0; id < KEYS; id++) {
            tu_key_distinct(SET_MODEL, id, key);
            int c = bg_filter_contains(f, key, sizeof key);
            if (count[id]) {
                held++;
                missed += c != 1;
            } else {
                not_held++;
                fp += c == 1;
            }
        }
        TU_EQ_U(missed, 0);
        TU_TRUE(held > 20000 && not_held > 10000);
        TU_LE_D((double)fp / (double)not_held, 0.01);

        /* The counters are those of the model's multiset, added afresh. */
        bg_filter *fresh = make((bg_filter_options){.capacity = KEYS, .error_rate = 0.01,
                                                    .seed = SEED}, BG_SINGLE_WRITER);
        for (uint32_t id = 0; id < KEYS; id++) {
            tu_key_distinct(SET_MODEL, id, key);
            for (unsigned c = 0; c < count[id]; c++)
                TU_EQ_I(bg_filter_add(fresh, key, sizeof key), BG_OK);
        }
        bg_filter_stats st;
        TU_EQ_I(bg_filter_stats_get(fresh, &st), BG_OK);
        TU_EQ_U(st.saturated, 0); /* else the order would matter */
        expect_same_payload(f, fresh);
        print_message("    %s: %" PRIu64 " adds, %" PRIu64 " removes, %" PRIu64
                      " keys held (max %" PRIu64 " copies), fp among the others %.4f\n",
                      mode_name(modes[mi]), adds, removes, held, max_count,
                      (double)fp / (double)not_held);
        bg_filter_free(fresh);
        bg_filter_free(f);
    }
    free(count);
    free(copies);
}

/* ---- (2) false-positive rate, before and after removing half ----------- */

static void fp_rate_and_removal(void **state)
{
    (void)state;
    uint64_t n = (uint64_t)tu_env_long("BG_TEST_FP_KEYS", 1000000);
    uint64_t queries = n;
    static const double ps[] = {0.1, 0.01, 0.001};
    tu_batch b;
    tu_batch_init(&b, BATCH);
    static uint8_t res[BATCH];
    for (size_t pi = 0; pi < LEN(ps); pi++) {
        double p = ps[pi];
        double t0 = tu_now();
        tu_ctx("n=%" PRIu64 " p=%g", n, p);
        bg_filter_options o = {.capacity = n, .error_rate = p, .seed = SEED + pi};
        bg_filter *f = make(o, BG_CONCURRENT_WRITERS);
        uint64_t added = add_range(f, &b, SET_PRESENT, 0, n);
        TU_TRUE(added < n); /* a few looked present already... */
        TU_EQ_U(bg_filter_items(f), n); /* ...and count all the same */
        TU_EQ_U(count_present(f, &b, SET_PRESENT, 0, n), n);

        bg_filter_stats st;
        TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
        uint64_t m = st.bits;
        uint32_t k = st.hashes;
        /* The standard variant's sizing, 4 bits per counter. */
        bg_sizing sz = {.n = n, .p = p};
        TU_EQ_I(bg_sizing_solve(BG_VARIANT_STANDARD, &sz, 0), BG_OK);
        TU_EQ_U(m, sz.m);
        TU_EQ_U(k, sz.k);
        TU_EQ_U(st.bytes, (m * 4 + 63) / 64 * 8);
        TU_EQ_U(st.saturated, 0);
        TU_IN_RANGE_D(st.estimated_items, 0.98 * (double)n, 1.02 * (double)n);

        double sd = sqrt(p * (1 - p) / (double)queries);
        double slack = n >= 1000000 ? 0 : 4 * sd;
        uint64_t fps = count_present(f, &b, SET_ABSENT, 0, queries);
        double rate = (double)fps / (double)queries;
        TU_IN_RANGE_D(rate, 0.8 * p - slack, 1.2 * p + slack);
        TU_IN_RANGE_D(st.estimated_fp_rate, 0.9 * rate - slack, 1.1 * rate + slack);

        /* Remove the even keys: each removal succeeds, the odd keys stay,
         * and the filter is exactly one built from the odd keys alone. */
        uint64_t removed = 0;
        for (uint64_t at = 0; at < n; at += BATCH) {
            size_t cnt = (size_t)(n - at < BATCH ? n - at : BATCH);
            tu_batch_fill(&b, 0, SET_PRESENT, at, cnt);
            size_t half = 0;
            for (size_t i = 0; i < cnt; i += 2, half++) {
                b.keys[half] = b.keys[i];
                b.lens[half] = b.lens[i];
            }
            int64_t rc = bg_filter_remove_many(f, b.keys, b.lens, half, res);
            TU_EQ_I(rc, (int64_t)half);
            removed += (uint64_t)rc;
        }
        TU_EQ_U(removed, (n + 1) / 2);
        uint64_t odd_found = 0, even_found = 0;
        for (uint64_t at = 0; at < n; at += BATCH) {
            size_t cnt = (size_t)(n - at < BATCH ? n - at : BATCH);
            tu_batch_fill(&b, 0, SET_PRESENT, at, cnt);
            TU_TRUE(bg_filter_contains_many(f, b.keys, b.lens, cnt, res) >= 0);
            for (size_t i = 0; i < cnt; i++) {
                if ((at + i) % 2)
                    odd_found += res[i];
                else
                    even_found += res[i];
            }
        }
        TU_EQ_U(odd_found, n / 2);

        /* The rate falls to the model's rate for the n / 2 keys left, on
         * never-added keys and on the removed ones alike. */
        double p_half = bg_sizing_fp_rate(BG_VARIANT_COUNTING, m, n / 2, k);
        double sd2 = sqrt(p_half * (1 - p_half) / (double)(queries / 2));
        double slack2 = n >= 1000000 ? 2 * sd2 : 4 * sd2;
        double rate2 = (double)count_present(f, &b, SET_ABSENT, 0, queries) / (double)queries;
        double removed_rate = (double)even_found / (double)((n + 1) / 2);
        TU_IN_RANGE_D(rate2, 0.8 * p_half - slack2, 1.2 * p_half + slack2);
        TU_IN_RANGE_D(removed_rate, 0.8 * p_half - slack2, 1.2 * p_half + slack2);
        TU_LT_D(rate2, 0.5 * rate);
        TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
        TU_IN_RANGE_D(st.estimated_items, 0.98 * (double)(n / 2), 1.02 * (double)(n / 2));
        TU_EQ_U(st.items, n / 2); /* every remove uncounted */
        TU_IN_RANGE_D(st.estimated_fp_rate, 0.95 * p_half, 1.05 * p_half);

        bg_filter *odd = make(o, BG_SINGLE_WRITER);
        for (uint64_t at = 0; at < n; at += BATCH) {
            size_t cnt = (size_t)(n - at < BATCH ? n - at : BATCH);
            tu_batch_fill(&b, 0, SET_PRESENT, at, cnt);
            size_t half = 0;
            for (size_t i = 1; i < cnt; i += 2, half++) {
                b.keys[half] = b.keys[i];
                b.lens[half] = b.lens[i];
            }
            TU_TRUE(bg_filter_add_many(odd, b.keys, b.lens, half, NULL) >= 0);
        }
        expect_same_payload(f, odd);
        print_message("    p=%g (m=%" PRIu64 ", k=%u): measured %.6f, after removing half "
                      "%.6f (removed keys %.6f, model %.6f); %.2f s\n",
                      p, m, k, rate, rate2, removed_rate, p_half, tu_now() - t0);
        bg_filter_free(odd);
        bg_filter_free(f);
    }
    tu_batch_free(&b);
}

/* ---- (3) saturation ----------------------------------------------------- */

static void saturation(void **state)
{
    (void)state;
    enum { M = 1000, K = 4 };
    for (size_t mi = 0; mi < LEN(modes); mi++) {
        tu_ctx("%s: saturation", mode_name(modes[mi]));
        bg_filter *f = make((bg_filter_options){.bits = M, .hashes = K, .seed = 77}, modes[mi]);
        const char *hot = "hot key";
        uint64_t pos[K];
        uint32_t distinct = distinct_probes(hash_of(f, hot, 7), M, K, pos);
        TU_TRUE(distinct >= 1);

        /* 20 adds: new once, then never; its counters stop at 15. */
        TU_EQ_I(bg_filter_test_and_add(f, hot, 7), 1);
        for (int i = 1; i < 20; i++)
            TU_EQ_I(bg_filter_test_and_add(f, hot, 7), 0);
        TU_EQ_U(bg_filter_items(f), 20); /* every add counts */
        image im = encode(f);
        for (uint64_t i = 0; i < M; i++) {
            bool mine = false;
            for (uint32_t j = 0; j < distinct; j++)
                mine |= pos[j] == i;
            TU_EQ_U(counter(payload(&im), i), mine ? BG_COUNTER_MAX : 0);
        }
        image_free(&im);
        bg_filter_stats st;
        TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
        TU_EQ_U(st.saturated, distinct);
        TU_EQ_U(st.bits_set, distinct);

        /* 20 removes: each succeeds (no counter is 0) and changes nothing,
         * since saturated counters are never decremented. */
        image sat = encode(f);
        for (int i = 0; i < 20; i++)
            TU_EQ_I(bg_filter_remove(f, hot, 7), BG_OK);
        TU_EQ_I(bg_filter_contains(f, hot, 7), 1);
        im = encode(f);
        assert_memory_equal(payload(&im), payload(&sat), payload_len(&sat));
        image_free(&im);
        TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
        TU_EQ_U(st.saturated, distinct);

        /* A key sharing exactly one counter with the hot key (found by
         * search) works as usual: its other counters count, its shared one
         * stays saturated, and removing it as often as it was added takes
         * it out again. */
        uint8_t key[TU_DISTINCT_LEN];
        uint64_t kp[K], shared = 0;
        uint32_t kd = 0;
        uint64_t i = 0;
        for (;; i++) {
            tu_key_distinct(SET_SHARED, i, key);
            kd = distinct_probes(hash_of(f, key, sizeof key), M, K, kp);
            uint32_t common = 0;
            for (uint32_t a = 0; a < kd; a++)
                for (uint32_t c = 0; c < distinct; c++)
                    if (kp[a] == pos[c]) {
                        common++;
                        shared = kp[a];
                    }
            if (common == 1 && kd == K)
                break;
            TU_TRUE(i < 100000);
        }
        TU_EQ_I(bg_filter_contains(f, key, sizeof key), 0);
        for (int n = 0; n < 3; n++)
            TU_EQ_I(bg_filter_test_and_add(f, key, sizeof key), n == 0);
        im = encode(f);
        for (uint32_t a = 0; a < kd; a++)
            TU_EQ_U(counter(payload(&im), kp[a]), kp[a] == shared ? 15 : 3);
        image_free(&im);
        for (int n = 0; n < 3; n++)
            TU_EQ_I(bg_filter_remove(f, key, sizeof key), BG_OK);
        TU_EQ_I(bg_filter_contains(f, key, sizeof key), 0);
        TU_EQ_I(bg_filter_remove(f, key, sizeof key), BG_EABSENT);
        TU_EQ_I(bg_filter_contains(f, hot, 7), 1);
        im = encode(f);
        assert_memory_equal(payload(&im), payload(&sat), payload_len(&sat));
        image_free(&im);
        image_free(&sat);

        /* Union saturates too: the hot counters stay 15, and clear resets
         * everything. */
        TU_EQ_I(bg_filter_clear(f), BG_OK);
        TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
        TU_EQ_U(st.saturated, 0);
        TU_EQ_U(st.bits_set, 0);
        TU_EQ_I(bg_filter_contains(f, hot, 7), 0);
        bg_filter_free(f);
    }
}

/* ---- (4) removing an absent key changes nothing ------------------------- */

static void remove_absent_changes_nothing(void **state)
{
    (void)state;
    tu_batch b;
    tu_batch_init(&b, BATCH);
    static uint8_t res[BATCH + 1]; /* one more, to see that nothing is written past */
    for (size_t mi = 0; mi < LEN(modes); mi++) {
        tu_ctx("%s: remove absent", mode_name(modes[mi]));
        bg_filter *f = make((bg_filter_options){.capacity = 10000, .error_rate = 0.01,
                                                .seed = 3}, modes[mi]);
        /* An empty filter has nothing to remove. */
        TU_EQ_I(bg_filter_remove(f, "x", 1), BG_EABSENT);
        TU_EQ_I(bg_filter_remove(f, NULL, 0), BG_EABSENT);
        TU_EQ_U(bg_filter_items(f), 0);
        add_range(f, &b, SET_A, 0, 3000);
        /* Some keys many times, so that counters above 1 are common. */
        for (int r = 0; r < 3; r++)
            add_range(f, &b, SET_A, 0, 300);
        image before = encode(f);
        uint64_t items = bg_filter_items(f), tried = 0;
        uint8_t key[TU_DISTINCT_LEN];
        for (uint64_t i = 0; i < 2000; i++) {
            tu_key_distinct(SET_ABSENT, i, key);
            if (bg_filter_contains(f, key, sizeof key))
                continue; /* a false positive: not "definitely absent" */
            tried++;
            TU_EQ_I(i % 2 ? bg_filter_remove(f, key, sizeof key)
                          : bg_filter_remove_hash(f, hash_of(f, key, sizeof key)),
                    BG_EABSENT);
        }
        TU_TRUE(tried > 1900);
        /* A batch of absent keys: none removed, results all 0. */
        tu_batch_fill(&b, 0, SET_ABSENT, 5000, BATCH);
        size_t absent = 0;
        for (size_t i = 0; i < BATCH; i++) {
            if (!bg_filter_contains(f, b.keys[i], b.lens[i])) {
                b.keys[absent] = b.keys[i];
                b.lens[absent] = b.lens[i];
                absent++;
            }
        }
        memset(res, 0xee, sizeof res);
        TU_EQ_I(bg_filter_remove_many(f, b.keys, b.lens, absent, res), 0);
        for (size_t i = 0; i < absent; i++)
            TU_EQ_U(res[i], 0);
        TU_EQ_U(res[absent], 0xee);
        /* The whole image, header (item count) and checksum included. */
        image after = encode(f);
        TU_EQ_U(after.len, before.len);
        assert_memory_equal(after.buf, before.buf, before.len);
        TU_EQ_U(bg_filter_items(f), items);
        image_free(&after);
        image_free(&before);

        /* A batch mixing present and absent keys reports each. */
        const void *ks[4];
        size_t ls[4];
        uint8_t kbuf[4][TU_DISTINCT_LEN];
        tu_key_distinct(SET_A, 1000, kbuf[0]); /* added once */
        tu_key_distinct(SET_ABSENT, 0, kbuf[1]);
        tu_key_distinct(SET_A, 1001, kbuf[2]);
        tu_key_distinct(SET_ABSENT, 1, kbuf[3]);
        for (int i = 0; i < 4; i++) {
            ks[i] = kbuf[i];
            ls[i] = TU_DISTINCT_LEN;
        }
        TU_EQ_I(bg_filter_contains(f, kbuf[1], TU_DISTINCT_LEN), 0);
        TU_EQ_I(bg_filter_contains(f, kbuf[3], TU_DISTINCT_LEN), 0);
        memset(res, 0xee, 4);
        TU_EQ_I(bg_filter_remove_many(f, ks, ls, 4, res), 2);
        TU_TRUE(res[0] == 1 && res[1] == 0 && res[2] == 1 && res[3] == 0);
        TU_EQ_U(bg_filter_items(f), items - 2);
        TU_EQ_I(bg_filter_remove_many(f, ks, ls, 4, NULL), 0); /* all gone now */
        bg_filter_free(f);
    }
    tu_batch_free(&b);
}

/* Removing a key that was never added but tests present (a false
 * positive) is the caller's error, and filter.h says what it does: it
 * lowers counters other keys rely on, and they can vanish. It must still
 * leave well-formed counters: here the key's probes meet one counter twice
 * while that counter holds 1, so the second decrement finds 0 and must
 * leave it at 0 (not wrap to 15, nor borrow from the neighbouring
 * counter). Every other counter is checked against the model too. */
static void remove_false_positive(void **state)
{
    (void)state;
    enum { M = 64, K = 8 };
    for (size_t mi = 0; mi < LEN(modes); mi++) {
        tu_ctx("%s: remove a false positive", mode_name(modes[mi]));
        bg_filter_options o = {.bits = M, .hashes = K, .seed = 1234};
        bg_filter *f = NULL;
        uint8_t x[TU_DISTINCT_LEN], key[TU_DISTINCT_LEN];
        uint64_t xp[K], dup = M, victim = UINT64_MAX;
        for (uint64_t cand = 0; dup == M; cand++) {
            TU_TRUE(cand < 1000);
            bg_filter_free(f);
            f = make(o, modes[mi]);
            /* A key X with a counter it probes twice. */
            tu_key_distinct(SET_PROBE, cand, x);
            standard_probes(hash_of(f, x, sizeof x), M, K, xp);
            uint64_t twice = M;
            for (uint32_t a = 0; a < K; a++)
                for (uint32_t c = a + 1; c < K; c++)
                    if (xp[a] == xp[c])
                        twice = xp[a];
            if (twice == M)
                continue;
            /* Other keys until X tests present, keeping that counter at 1. */
            uint64_t on_twice = 0;
            for (uint64_t j = 0; j < 200 && !bg_filter_contains(f, x, sizeof x); j++) {
                tu_key_distinct(SET_A, j, key);
                uint64_t kp[K], hits = 0;
                standard_probes(hash_of(f, key, sizeof key), M, K, kp);
                for (uint32_t a = 0; a < K; a++)
                    hits += kp[a] == twice;
                if (on_twice + hits > 1)
                    continue;
                if (hits)
                    victim = j;
                on_twice += hits;
                TU_EQ_I(bg_filter_add(f, key, sizeof key), BG_OK);
            }
            if (bg_filter_contains(f, x, sizeof x) && on_twice == 1)
                dup = twice;
        }
        image before = encode(f);
        TU_EQ_I(bg_filter_remove(f, x, sizeof x), BG_OK); /* passes the check */
        image after = encode(f);
        unsigned want[M];
        for (uint64_t i = 0; i < M; i++)
            want[i] = counter(payload(&before), i);
        for (uint32_t a = 0; a < K; a++)
            if (want[xp[a]] != 15 && want[xp[a]] > 0)
                want[xp[a]]--;
        for (uint64_t i = 0; i < M; i++)
            TU_EQ_U(counter(payload(&after), i), want[i]);
        TU_EQ_U(counter(payload(&after), dup), 0);
        /* The key that held that counter is gone: the documented harm. */
        tu_key_distinct(SET_A, victim, key);
        TU_EQ_I(bg_filter_contains(f, key, sizeof key), 0);
        image_free(&before);
        image_free(&after);
        bg_filter_free(f);
    }
}

/* ---- (5) who may remove -------------------------------------------------- */

static void remove_errors(void **state)
{
    (void)state;
    const void *ks[] = {"a", "b"};
    size_t ls[] = {1, 1};
    uint8_t res[2] = {7, 7};
    bg_hash h = {1, 2};

    tu_ctx("NULL filter and keys");
    TU_EQ_I(bg_filter_remove(NULL, "a", 1), BG_EINVAL);
    TU_EQ_I(bg_filter_remove(NULL, NULL, 0), BG_EINVAL);
    TU_EQ_I(bg_filter_remove_hash(NULL, h), BG_EINVAL);
    TU_EQ_I(bg_filter_remove_many(NULL, ks, ls, 2, res), BG_EINVAL);
    bg_filter *c = make((bg_filter_options){.capacity = 100, .error_rate = 0.01},
                        BG_CONCURRENT_WRITERS);
    TU_EQ_I(bg_filter_add(c, "a", 1), BG_OK);
    TU_EQ_I(bg_filter_add(c, "b", 1), BG_OK);
    TU_EQ_I(bg_filter_remove(c, NULL, 1), BG_EINVAL);
    TU_EQ_I(bg_filter_remove_many(c, NULL, ls, 2, res), BG_EINVAL);
    TU_EQ_I(bg_filter_remove_many(c, ks, NULL, 2, res), BG_EINVAL);
    TU_EQ_I(bg_filter_remove_many(c, NULL, NULL, 0, NULL), 0);
    /* A bad key anywhere in a batch: nothing is removed, even before it. */
    const void *bad[] = {"a", NULL, "b"};
    size_t badl[] = {1, 1, 1};
    TU_EQ_I(bg_filter_remove_many(c, bad, badl, 3, res), BG_EINVAL);
    TU_TRUE(res[0] == 7 && res[1] == 7);
    TU_EQ_I(bg_filter_contains(c, "a", 1), 1);
    TU_EQ_U(bg_filter_items(c), 2);

    tu_ctx("the item count is of the multiset: repeats count");
    TU_EQ_I(bg_filter_test_and_add(c, "a", 1), 0); /* a second copy: not new... */
    TU_EQ_U(bg_filter_items(c), 3);               /* ...but counted */
    TU_EQ_I(bg_filter_remove(c, "a", 1), BG_OK);  /* one copy left */
    TU_EQ_I(bg_filter_contains(c, "a", 1), 1);
    TU_EQ_U(bg_filter_items(c), 2);
    TU_EQ_I(bg_filter_remove_many(c, ks, ls, 1, NULL), 1); /* the last copy */
    TU_EQ_I(bg_filter_contains(c, "a", 1), 0);
    TU_EQ_U(bg_filter_items(c), 1);
    TU_EQ_I(bg_filter_add_many(c, ks, ls, 2, NULL), 1); /* "a" new, "b" again */
    TU_EQ_U(bg_filter_items(c), 3);
    bg_hash hb = hash_of(c, "b", 1);
    TU_EQ_I(bg_filter_add_hashes(c, &hb, 1, NULL), 0);
    TU_EQ_U(bg_filter_items(c), 4);
    TU_EQ_I(bg_filter_remove(c, "b", 1), BG_OK);
    TU_EQ_I(bg_filter_remove(c, "b", 1), BG_OK);
    TU_EQ_U(bg_filter_items(c), 2);

    /* Other variants cannot remove, and are left alone. */
    static const bg_variant others[] = {BG_VARIANT_STANDARD, BG_VARIANT_BLOCKED};
    for (size_t v = 0; v < LEN(others); v++) {
        tu_ctx("%s: remove", bg_variant_name(others[v]));
        bg_filter *f;
        TU_EQ_I(bg_filter_new(&f, &(bg_filter_options){.variant = others[v], .capacity = 100,
                                                       .error_rate = 0.01}), BG_OK);
        TU_EQ_I(bg_filter_add(f, "a", 1), BG_OK);
        TU_EQ_I(bg_filter_remove(f, "a", 1), BG_EVARIANT);
        TU_EQ_I(bg_filter_remove_hash(f, hash_of(f, "a", 1)), BG_EVARIANT);
        TU_EQ_I(bg_filter_remove_many(f, ks, ls, 2, res), BG_EVARIANT);
        TU_EQ_I(bg_filter_remove_many(f, NULL, NULL, 0, NULL), BG_EVARIANT);
        TU_EQ_I(bg_filter_contains(f, "a", 1), 1);
        TU_EQ_U(bg_filter_items(f), 1);
        /* Incompatible with a counting filter of any shape. */
        TU_EQ_I(bg_filter_union(c, f), BG_EINCOMPAT);
        TU_EQ_I(bg_filter_union(f, c), BG_EINCOMPAT);
        bg_filter_free(f);
    }

    /* A mapped counting filter is read-only; a loaded one is not. */
    tu_ctx("mapped counting filter");
    tu_tmpdir d;
    tu_tmpdir_make(&d, "counting");
    const char *path = tu_tmp_file(&d, "c.bgf");
    TU_EQ_I(bg_filter_save(c, path), BG_OK);
    bg_filter *mapped, *loaded;
    TU_EQ_I(bg_filter_map(&mapped, path, 0), BG_OK);
    TU_TRUE(bg_filter_read_only(mapped));
    TU_EQ_I(bg_filter_variant(mapped), BG_VARIANT_COUNTING);
    TU_EQ_I(bg_filter_remove(mapped, "a", 1), BG_EREADONLY);
    TU_EQ_I(bg_filter_remove_hash(mapped, hash_of(mapped, "a", 1)), BG_EREADONLY);
    TU_EQ_I(bg_filter_remove_many(mapped, ks, ls, 2, res), BG_EREADONLY);
    TU_EQ_I(bg_filter_add(mapped, "z", 1), BG_EREADONLY);
    TU_EQ_I(bg_filter_contains(mapped, "a", 1), 1);
    TU_EQ_I(bg_filter_contains(mapped, "b", 1), 1);
    TU_EQ_I(bg_filter_union(mapped, c), BG_EREADONLY);
    TU_EQ_I(bg_filter_intersect(mapped, c), BG_EREADONLY);
    TU_EQ_I(bg_filter_load(&loaded, path, 0), BG_OK);
    TU_EQ_I(bg_filter_remove(loaded, "a", 1), BG_OK);
    TU_EQ_I(bg_filter_contains(loaded, "a", 1), 0);
    TU_EQ_I(bg_filter_contains(mapped, "a", 1), 1);
    /* Union from a mapped filter into a writable one is fine. */
    TU_EQ_I(bg_filter_union(loaded, mapped), BG_OK);
    TU_EQ_I(bg_filter_contains(loaded, "a", 1), 1);
    bg_filter_free(loaded);
    bg_filter_free(mapped);
    tu_tmpdir_remove(&d);
    bg_filter_free(c);
}

/* ---- (6) batch calls agree with single calls --------------------------- */

/* Twin filters: one driven by add_many / add_hashes / contains_many /
 * contains_hashes / remove_many, the other by the single calls, key by key.
 * Batches repeat keys (within a batch and across), remove keys added twice,
 * and mix in keys never added (which the single call reports the same
 * way, false positives included). Same answers, same counts, same bytes. */
static void batch_matches_single(void **state)
{
    (void)state;
    enum { ROUNDS = 400, MAXB = 700 };
    static const size_t sizes[] = {1, 2, 15, 16, 17, 31, 33, 100, 511, 700};
    tu_batch b;
    tu_batch_init(&b, MAXB);
    static uint8_t res[MAXB];
    static bg_hash h[MAXB];
    for (size_t mi = 0; mi < LEN(modes); mi++) {
        tu_ctx("%s: batches", mode_name(modes[mi]));
        bg_filter_options o = {.capacity = 20000, .error_rate = 0.05, .seed = 99};
        bg_filter *batch = make(o, modes[mi]), *single = make(o, modes[mi]);
        uint64_t next = 0, yes = 0, no = 0, removed = 0, absent = 0;
        for (size_t round = 0; round < ROUNDS; round++) {
            size_t cnt = sizes[round % LEN(sizes)];
            /* Keys from a window that slides slowly, so keys come back. */
            tu_batch_fill(&b, 1, SET_B, next, cnt);
            if (cnt > 3) {
                b.keys[cnt - 1] = b.keys[0];
                b.lens[cnt - 1] = b.lens[0];
            }
            int64_t want = 0, rc;
            switch (round % 4) {
            case 0: /* add_many / add_hashes */
            case 1:
                memset(res, 0xee, sizeof res);
                if (round % 4 == 0) {
                    rc = bg_filter_add_many(batch, b.keys, b.lens, cnt, res);
                } else {
                    for (size_t i = 0; i < cnt; i++)
                        h[i] = hash_of(batch, b.keys[i], b.lens[i]);
                    rc = bg_filter_add_hashes(batch, h, cnt, res);
                }
                for (size_t i = 0; i < cnt; i++) {
                    int r = bg_filter_test_and_add(single, b.keys[i], b.lens[i]);
                    TU_EQ_I(res[i], r);
                    want += r;
                }
                TU_EQ_I(rc, want);
                break;
            case 2: /* contains_many / contains_hashes */
                memset(res, 0xee, sizeof res);
                rc = bg_filter_contains_many(batch, b.keys, b.lens, cnt, res);
                for (size_t i = 0; i < cnt; i++) {
                    int r = bg_filter_contains(single, b.keys[i], b.lens[i]);
                    TU_EQ_I(res[i], r);
                    want += r;
                    yes += r == 1;
                    no += r == 0;
                    h[i] = hash_of(batch, b.keys[i], b.lens[i]);
                }
                TU_EQ_I(rc, want);
                TU_EQ_I(bg_filter_contains_hashes(batch, h, cnt, NULL), want);
                break;
            default: /* remove_many */
                memset(res, 0xee, sizeof res);
                rc = bg_filter_remove_many(batch, b.keys, b.lens, cnt, (round & 4) ? res : NULL);
                for (size_t i = 0; i < cnt; i++) {
                    int r = bg_filter_remove(single, b.keys[i], b.lens[i]);
                    TU_TRUE(r == BG_OK || r == BG_EABSENT);
                    if (round & 4)
                        TU_EQ_I(res[i], r == BG_OK);
                    want += r == BG_OK;
                    removed += r == BG_OK;
                    absent += r == BG_EABSENT;
                }
                if (!(round & 4))
                    TU_EQ_U(res[0], 0xee);
                TU_EQ_I(rc, want);
                break;
            }
            TU_EQ_U(bg_filter_items(batch), bg_filter_items(single));
            next += cnt / 3;
        }
        TU_TRUE(yes > 1000 && no > 500 && removed > 1000 && absent > 500);
        expect_same_payload(batch, single);
        bg_filter_free(batch);
        bg_filter_free(single);
    }
    tu_batch_free(&b);
}

/* ---- (7) union and intersection, counter by counter -------------------- */

static void union_and_intersection(void **state)
{
    (void)state;
    enum { M = 5000, K = 4 };
    tu_batch b;
    tu_batch_init(&b, BATCH);
    for (size_t mi = 0; mi < LEN(modes); mi++) {
        tu_ctx("%s: union, intersection", mode_name(modes[mi]));
        bg_filter_options o = {.bits = M, .hashes = K, .seed = 4242};
        bg_filter *a = make(o, modes[mi]), *bb = make(o, modes[mi]);
        /* Each has keys of its own, keys in common, and a few keys many
         * times, so sums reach 15 and both operands win minima. */
        add_range(a, &b, SET_A, 0, 600);
        add_range(bb, &b, SET_B, 0, 400);
        add_range(a, &b, SET_SHARED, 0, 200);
        add_range(bb, &b, SET_SHARED, 100, 200);
        for (int r = 0; r < 9; r++) {
            add_range(a, &b, SET_PROBE, 0, 5);
            add_range(bb, &b, SET_PROBE, 3, 5);
        }
        image ia = encode(a), ib = encode(bb);
        bg_filter *x = NULL;
        TU_EQ_I(bg_filter_decode(&x, ia.buf, ia.len, modes[mi] == BG_SINGLE_WRITER
                                                         ? BG_FILE_SINGLE_WRITER : 0), BG_OK);

        /* Union: the saturating sum; intersection: the minimum. */
        TU_EQ_I(bg_filter_union(a, bb), BG_OK);
        TU_EQ_I(bg_filter_intersect(x, bb), BG_OK);
        image iu = encode(a), ix = encode(x);
        uint64_t saturated = 0, nonzero_u = 0, nonzero_x = 0, a_min = 0, b_min = 0;
        for (uint64_t i = 0; i < M; i++) {
            unsigned ca = counter(payload(&ia), i), cb = counter(payload(&ib), i);
            unsigned sum = ca + cb > 15 ? 15 : ca + cb, min = ca < cb ? ca : cb;
            TU_EQ_U(counter(payload(&iu), i), sum);
            TU_EQ_U(counter(payload(&ix), i), min);
            saturated += ca + cb > 15;
            nonzero_u += sum != 0;
            nonzero_x += min != 0;
            a_min += min != 0 && ca < cb;
            b_min += min != 0 && cb < ca;
        }
        TU_TRUE(saturated > 0 && a_min > 50 && b_min > 50);
        bg_filter_stats st;
        TU_EQ_I(bg_filter_stats_get(a, &st), BG_OK);
        TU_EQ_U(st.bits_set, nonzero_u);
        TU_TRUE(st.saturated >= saturated);
        TU_EQ_I(bg_filter_stats_get(x, &st), BG_OK);
        TU_EQ_U(st.bits_set, nonzero_x);
        /* The item counts follow the fill (filter.h). */
        TU_EQ_U(bg_filter_items(x), (uint64_t)llround(st.estimated_items));
        /* src is untouched. */
        image ib2 = encode(bb);
        assert_memory_equal(ib2.buf, ib.buf, ib.len);
        image_free(&ib2);
        image_free(&iu);
        image_free(&ix);
        image_free(&ia);
        image_free(&ib);
        bg_filter_free(x);

        /* Union is the multiset sum: removing one side's keys again leaves
         * exactly the other side (no saturation here). */
        bg_filter *p = make((bg_filter_options){.capacity = 20000, .error_rate = 0.01,
                                                .seed = 5}, modes[mi]);
        bg_filter *q = make((bg_filter_options){.capacity = 20000, .error_rate = 0.01,
                                                .seed = 5}, modes[mi]);
        add_range(p, &b, SET_A, 0, 8000);
        add_range(q, &b, SET_B, 0, 6000);
        add_range(q, &b, SET_A, 0, 2000); /* in both */
        image iq = encode(q);
        TU_EQ_I(bg_filter_union(q, p), BG_OK);
        for (uint64_t at = 0; at < 8000; at += BATCH) {
            size_t cnt = (size_t)(8000 - at < BATCH ? 8000 - at : BATCH);
            tu_batch_fill(&b, 0, SET_A, at, cnt);
            TU_EQ_I(bg_filter_remove_many(q, b.keys, b.lens, cnt, NULL), (int64_t)cnt);
        }
        image iq2 = encode(q);
        assert_memory_equal(payload(&iq2), payload(&iq), payload_len(&iq));
        TU_EQ_U(count_present(q, &b, SET_A, 0, 2000), 2000);
        image_free(&iq);
        image_free(&iq2);

        /* Union into an empty filter copies; into itself changes nothing. */
        bg_filter *e = make((bg_filter_options){.capacity = 20000, .error_rate = 0.01,
                                                .seed = 5}, modes[mi]);
        TU_EQ_I(bg_filter_union(e, p), BG_OK);
        expect_same_payload(e, p);
        TU_EQ_I(bg_filter_union(e, e), BG_OK);
        expect_same_payload(e, p);

        /* Shapes must match: m, k, seed. Nothing changes on refusal. */
        image ie = encode(e);
        bg_filter *diff[3];
        diff[0] = make((bg_filter_options){.capacity = 20001, .error_rate = 0.01, .seed = 5},
                       modes[mi]);
        diff[1] = make((bg_filter_options){.bits = bg_filter_bits(e),
                                           .hashes = bg_filter_hashes(e) + 1, .seed = 5},
                       modes[mi]);
        diff[2] = make((bg_filter_options){.capacity = 20000, .error_rate = 0.01, .seed = 6},
                       modes[mi]);
        for (int i = 0; i < 3; i++) {
            TU_EQ_I(bg_filter_union(e, diff[i]), BG_EINCOMPAT);
            TU_EQ_I(bg_filter_intersect(e, diff[i]), BG_EINCOMPAT);
            bg_filter_free(diff[i]);
        }
        bg_filter *std;
        TU_EQ_I(bg_filter_new(&std, &(bg_filter_options){.variant = BG_VARIANT_STANDARD,
                                                         .bits = bg_filter_bits(e),
                                                         .hashes = bg_filter_hashes(e),
                                                         .seed = 5}), BG_OK);
        TU_EQ_I(bg_filter_union(e, std), BG_EINCOMPAT);
        TU_EQ_I(bg_filter_intersect(std, e), BG_EINCOMPAT);
        bg_filter_free(std);
        image ie2 = encode(e);
        assert_memory_equal(ie2.buf, ie.buf, ie.len);
        image_free(&ie);
        image_free(&ie2);
        bg_filter_free(e);
        bg_filter_free(p);
        bg_filter_free(q);
        bg_filter_free(a);
        bg_filter_free(bb);
    }
    tu_batch_free(&b);
}

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
    bg_filter *f = make((bg_filter_options){.bits = 100, .hashes = 3,
                                            .seed = UINT64_C(0x0123456789abcdef)},
                        BG_CONCURRENT_WRITERS);
    TU_EQ_I(bg_filter_add(f, "alice", 5), BG_OK);
    TU_EQ_I(bg_filter_add(f, "bob", 3), BG_OK);
    TU_EQ_I(bg_filter_add(f, NULL, 0), BG_OK);
    return f;
}

static uint64_t le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Any change to these bytes is a format change (see test_file.c). */
/* A concurrent union's rare path, without threads: its group loaded a word,
 * then an add or a remove changed it before the compare-and-swap. The union
 * must store the saturating sum of what the writer left and the source's
 * word (nothing of the writer's lost), and correct the group's counts of
 * non-zero counters, before and after, by what the writer changed. Words
 * are written as 16 nibbles, counter 0 lowest. */
static void concurrent_union_race(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        uint64_t loaded, now, s, want;
        int64_t fix_before, fix_after;
    } cases[] = {
        /* no race: no correction */
        {"none", 0x0000000000000010, 0x0000000000000010, 0x0000000000100000,
         0x0000000000100010, 0, 0},
        /* an add set counter 3; the union sets counter 5 */
        {"add", 0x0000000000000010, 0x0000000000001010, 0x0000000000100000,
         0x0000000000101010, 1, 1},
        /* a remove cleared counter 1, which the union also raises */
        {"remove", 0x0000000000000010, 0x0000000000000000, 0x0000000000000020,
         0x0000000000000020, -1, 0},
        /* an add took counter 0 to 14; the sum saturates at 15 */
        {"saturating", 0x000000000000000c, 0x000000000000000e, 0x0000000000000003,
         0x000000000000000f, 0, 0},
        /* adds and removes over the whole word */
        {"whole word", 0x1111111111111111, 0xf0f0f0f0f0f0f0f0, 0x0202020202020202,
         0xf2f2f2f2f2f2f2f2, -8, 0},
        /* the source adds nothing: the writer's word stays */
        {"empty source", 0x0000000000000001, 0x0000000000000300, 0,
         0x0000000000000300, 0, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tu_ctx("%s", cases[c].what);
        _Atomic uint64_t w = cases[c].now;
        uint64_t fix[2] = {7, 7}; /* added to, not set */
        TU_EQ_U(bg__counting_union_word(&w, cases[c].loaded, cases[c].s, fix), cases[c].want);
        TU_EQ_U(atomic_load(&w), cases[c].want);
        TU_EQ_I((int64_t)(fix[0] - 7), cases[c].fix_before);
        TU_EQ_I((int64_t)(fix[1] - 7), cases[c].fix_after);
    }
}

static void golden_bytes(void **state)
{
    (void)state;
    tu_ctx("golden counting");
    bg_filter *f = golden_counting_filter();
    image im = encode(f);
    TU_EQ_U(im.len, sizeof golden_counting);
    assert_memory_equal(im.buf, golden_counting, sizeof golden_counting);
    image_free(&im);

    const uint8_t *g = golden_counting;
    TU_EQ_U(g[12], 3);                /* variant: counting */
    TU_EQ_U(le(g + 16, 4), 3);        /* k */
    TU_EQ_U(le(g + 24, 8), 100);      /* m, in counters */
    TU_EQ_U(le(g + 48, 8), 3);        /* items */
    TU_EQ_U(le(g + 64, 8), 50);       /* payload bytes: 100 counters of 4 bits */
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
        standard_probes(hash_of(f, keys[i], strlen(keys[i])), 100, 3, pr);
        for (int j = 0; j < 3; j++)
            want[pr[j]]++;
    }
    unsigned total = 0;
    for (uint64_t i = 0; i < 100; i++) {
        TU_EQ_U(counter(g + 128, i), want[i]);
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
        bg_filter *f = make(shapes[s], BG_CONCURRENT_WRITERS);
        uint64_t n = shapes[s].capacity ? 4000 : 150;
        add_range(f, &b, SET_A, 0, n);
        for (int r = 0; r < 16; r++) /* saturate some counters */
            add_range(f, &b, SET_B, 0, 3);
        image im = encode(f);
        TU_EQ_U(payload_len(&im), (bg_filter_bits(f) + 1) / 2);
        if (bg_filter_bits(f) % 2)
            TU_EQ_U(payload(&im)[payload_len(&im) - 1] & 0x0f, 0);
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
            image again = encode(all[i]);
            TU_EQ_U(again.len, im.len);
            assert_memory_equal(again.buf, im.buf, im.len);
            image_free(&again);
            TU_EQ_I(bg_filter_stats_get(all[i], &s2), BG_OK);
            TU_EQ_U(s2.saturated, s1.saturated);
            TU_EQ_U(s2.bits_set, s1.bits_set);
            TU_EQ_U(s2.items, s1.items);
            TU_EQ_U(count_present(all[i], &b, SET_A, 0, n), n);
        }
        /* The loaded copies remove like the original. */
        for (uint64_t i = 0; i < n; i += 2) {
            uint8_t key[TU_DISTINCT_LEN];
            tu_key_distinct(SET_A, i, key);
            TU_EQ_I(bg_filter_remove(f, key, sizeof key), BG_OK);
            TU_EQ_I(bg_filter_remove(loaded, key, sizeof key), BG_OK);
            TU_EQ_I(bg_filter_remove(decoded, key, sizeof key), BG_OK);
        }
        expect_same_payload(f, loaded);
        expect_same_payload(f, decoded);
        /* A file whose padding nibble is not 0 is refused. */
        if (bg_filter_bits(f) % 2) {
            im.buf[im.len - 1] |= 0x01;
            bg_filter *bad = NULL;
            TU_EQ_I(bg_filter_decode(&bad, im.buf, im.len, BG_FILE_NO_VERIFY), BG_ECORRUPT);
            TU_TRUE(bad == NULL);
        }
        image_free(&im);
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
    for (size_t mode = 0; mode < LEN(modes); mode++) {
        for (size_t mi = 0; mi < LEN(ms); mi++) {
            for (size_t ki = 0; ki < LEN(ks); ki++) {
                uint64_t m = ms[mi];
                uint32_t k = ks[ki];
                tu_ctx("%s: m=%" PRIu64 " k=%u", mode_name(modes[mode]), m, k);
                bg_filter_options o = {.bits = m, .hashes = k, .seed = m * 31 + k};
                bg_filter *c = make(o, modes[mode]), *s;
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
                    standard_probes(hash_of(c, buf, len), m, k, pr);
                    for (uint32_t j = 0; j < k; j++)
                        want[pr[j]]++;
                }
                image ic = encode(c), is = encode(s);
                TU_EQ_U(payload_len(&ic), (m + 1) / 2);
                uint64_t mismatches = 0, above1 = 0;
                for (uint64_t i = 0; i < m; i++) {
                    unsigned v = counter(payload(&ic), i);
                    mismatches += v != (want[i] > 15 ? 15 : want[i]);
                    mismatches += (v != 0) != bit(payload(&is), i);
                    above1 += v > 1;
                }
                if (m % 2)
                    TU_EQ_U(payload(&ic)[m / 2] & 0x0f, 0);
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
                    sat += counter(payload(&ic), i) == 15;
                TU_EQ_U(sc.saturated, sat);
                TU_EQ_U(ss.saturated, 0);
                image_free(&ic);
                image_free(&is);
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
    bg_filter *c = make((bg_filter_options){.capacity = 100000, .error_rate = 0.01},
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
        cmocka_unit_test(model_adds_and_removes),
        cmocka_unit_test(fp_rate_and_removal),
        cmocka_unit_test(saturation),
        cmocka_unit_test(remove_absent_changes_nothing),
        cmocka_unit_test(remove_false_positive),
        cmocka_unit_test(remove_errors),
        cmocka_unit_test(batch_matches_single),
        cmocka_unit_test(union_and_intersection),
        cmocka_unit_test(concurrent_union_race),
        cmocka_unit_test(golden_bytes),
        cmocka_unit_test(files_round_trip),
        cmocka_unit_test(counters_sit_on_standard_bits),
        cmocka_unit_test(sizing_and_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
