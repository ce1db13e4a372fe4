/* SPDX-License-Identifier: BSD-3-Clause */
/* The counting variant's calls beside add and contains (filter.h COUNTING):
 * who may remove and what a bad remove leaves; batch calls against single
 * calls, key by key; union and intersection counter by counter, and the
 * concurrent union's compare-and-swap retry, driven without threads.
 * The model tests are test_counting.c. */
#include "test_util.h"
#include "test_counting_util.h"
#include "test_tmpdir.h"
#include "../src/core/filter_internal.h"

#include <stdatomic.h>
#include <unistd.h>

#define LEN(a) (sizeof(a) / sizeof((a)[0]))
#define BATCH 1024

/* Key sets (the `set` argument of the tu_key_* generators), numbered as in
 * every counting suite, so that each test sees the keys it always has. */
enum {
    SET_A = 4,
    SET_B = 5,
    SET_SHARED = 6,
    SET_PROBE = 7,
};

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
    bg_filter *c = tu_counting_make((bg_filter_options){.capacity = 100, .error_rate = 0.01},
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
    bg_hash hb = tu_hash_of(c, "b", 1);
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
        TU_EQ_I(bg_filter_remove_hash(f, tu_hash_of(f, "a", 1)), BG_EVARIANT);
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
    TU_EQ_I(bg_filter_remove_hash(mapped, tu_hash_of(mapped, "a", 1)), BG_EREADONLY);
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
    for (size_t mi = 0; mi < LEN(tu_counting_modes); mi++) {
        tu_ctx("%s: batches", tu_mode_name(tu_counting_modes[mi]));
        bg_filter_options o = {.capacity = 20000, .error_rate = 0.05, .seed = 99};
        bg_filter *batch = tu_counting_make(o, tu_counting_modes[mi]),
                  *single = tu_counting_make(o, tu_counting_modes[mi]);
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
                        h[i] = tu_hash_of(batch, b.keys[i], b.lens[i]);
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
                    h[i] = tu_hash_of(batch, b.keys[i], b.lens[i]);
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
        tu_expect_same_payload(batch, single);
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
    for (size_t mi = 0; mi < LEN(tu_counting_modes); mi++) {
        tu_ctx("%s: union, intersection", tu_mode_name(tu_counting_modes[mi]));
        bg_filter_options o = {.bits = M, .hashes = K, .seed = 4242};
        bg_filter *a = tu_counting_make(o, tu_counting_modes[mi]),
                  *bb = tu_counting_make(o, tu_counting_modes[mi]);
        /* Each has keys of its own, keys in common, and a few keys many
         * times, so sums reach 15 and both operands win minima. */
        tu_add_range(a, &b, SET_A, 0, 600);
        tu_add_range(bb, &b, SET_B, 0, 400);
        tu_add_range(a, &b, SET_SHARED, 0, 200);
        tu_add_range(bb, &b, SET_SHARED, 100, 200);
        for (int r = 0; r < 9; r++) {
            tu_add_range(a, &b, SET_PROBE, 0, 5);
            tu_add_range(bb, &b, SET_PROBE, 3, 5);
        }
        tu_image ia = tu_image_encode(a), ib = tu_image_encode(bb);
        bg_filter *x = NULL;
        TU_EQ_I(bg_filter_decode(&x, ia.buf, ia.len, tu_counting_modes[mi] == BG_SINGLE_WRITER
                                                         ? BG_FILE_SINGLE_WRITER : 0), BG_OK);

        /* Union: the saturating sum; intersection: the minimum. */
        TU_EQ_I(bg_filter_union(a, bb), BG_OK);
        TU_EQ_I(bg_filter_intersect(x, bb), BG_OK);
        tu_image iu = tu_image_encode(a), ix = tu_image_encode(x);
        uint64_t saturated = 0, nonzero_u = 0, nonzero_x = 0, a_min = 0, b_min = 0;
        for (uint64_t i = 0; i < M; i++) {
            unsigned ca = tu_counter(tu_payload(&ia), i), cb = tu_counter(tu_payload(&ib), i);
            unsigned sum = ca + cb > 15 ? 15 : ca + cb, min = ca < cb ? ca : cb;
            TU_EQ_U(tu_counter(tu_payload(&iu), i), sum);
            TU_EQ_U(tu_counter(tu_payload(&ix), i), min);
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
        tu_image ib2 = tu_image_encode(bb);
        assert_memory_equal(ib2.buf, ib.buf, ib.len);
        tu_image_free(&ib2);
        tu_image_free(&iu);
        tu_image_free(&ix);
        tu_image_free(&ia);
        tu_image_free(&ib);
        bg_filter_free(x);

        /* Union is the multiset sum: removing one side's keys again leaves
         * exactly the other side (no saturation here). */
        bg_filter *p = tu_counting_make((bg_filter_options){.capacity = 20000, .error_rate = 0.01,
                                                            .seed = 5}, tu_counting_modes[mi]);
        bg_filter *q = tu_counting_make((bg_filter_options){.capacity = 20000, .error_rate = 0.01,
                                                            .seed = 5}, tu_counting_modes[mi]);
        tu_add_range(p, &b, SET_A, 0, 8000);
        tu_add_range(q, &b, SET_B, 0, 6000);
        tu_add_range(q, &b, SET_A, 0, 2000); /* in both */
        tu_image iq = tu_image_encode(q);
        TU_EQ_I(bg_filter_union(q, p), BG_OK);
        for (uint64_t at = 0; at < 8000; at += BATCH) {
            size_t cnt = (size_t)(8000 - at < BATCH ? 8000 - at : BATCH);
            tu_batch_fill(&b, 0, SET_A, at, cnt);
            TU_EQ_I(bg_filter_remove_many(q, b.keys, b.lens, cnt, NULL), (int64_t)cnt);
        }
        tu_image iq2 = tu_image_encode(q);
        assert_memory_equal(tu_payload(&iq2), tu_payload(&iq), tu_payload_len(&iq));
        TU_EQ_U(tu_count_present_range(q, &b, SET_A, 0, 2000), 2000);
        tu_image_free(&iq);
        tu_image_free(&iq2);

        /* Union into an empty filter copies; into itself changes nothing. */
        bg_filter *e = tu_counting_make((bg_filter_options){.capacity = 20000, .error_rate = 0.01,
                                                            .seed = 5}, tu_counting_modes[mi]);
        TU_EQ_I(bg_filter_union(e, p), BG_OK);
        tu_expect_same_payload(e, p);
        TU_EQ_I(bg_filter_union(e, e), BG_OK);
        tu_expect_same_payload(e, p);

        /* Shapes must match: m, k, seed. Nothing changes on refusal. */
        tu_image ie = tu_image_encode(e);
        bg_filter *diff[3];
        diff[0] = tu_counting_make((bg_filter_options){.capacity = 20001, .error_rate = 0.01,
                                                       .seed = 5},
                                   tu_counting_modes[mi]);
        diff[1] = tu_counting_make((bg_filter_options){.bits = bg_filter_bits(e),
                                                       .hashes = bg_filter_hashes(e) + 1,
                                                       .seed = 5},
                                   tu_counting_modes[mi]);
        diff[2] = tu_counting_make((bg_filter_options){.capacity = 20000, .error_rate = 0.01,
                                                       .seed = 6},
                                   tu_counting_modes[mi]);
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
        tu_image ie2 = tu_image_encode(e);
        assert_memory_equal(ie2.buf, ie.buf, ie.len);
        tu_image_free(&ie);
        tu_image_free(&ie2);
        bg_filter_free(e);
        bg_filter_free(p);
        bg_filter_free(q);
        bg_filter_free(a);
        bg_filter_free(bb);
    }
    tu_batch_free(&b);
}

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(remove_errors),
        cmocka_unit_test(batch_matches_single),
        cmocka_unit_test(union_and_intersection),
        cmocka_unit_test(concurrent_union_race),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
