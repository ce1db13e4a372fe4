/* SPDX-License-Identifier: BSD-3-Clause */
/* The counting variant under threads (filter.h THREADS, src/core/counting.c):
 * writers adding disjoint key sets and removing keys they added earlier,
 * while readers query and one writer unions another filter in; threads
 * hammering the same few counter words; and removes racing for the last
 * copy of a key. Also run under ThreadSanitizer (make test-tsan), which
 * checks that every access is race-free.
 *
 * "No lost update" is checked exactly: adds and removes commute as long as
 * no counter saturates, so after the threads finish the counters must equal,
 * byte for byte, those of a filter that replays the same operations on one
 * thread. Each test first proves that no interleaving can saturate a
 * counter: a filter given every add and no remove (the most any counter can
 * ever hold) has no counter at 15.
 *
 * Threads never call cmocka (its failure path longjmps): they count
 * problems in atomics, which the main thread asserts after joining.
 * BG_TEST_CONC_KEYS sets the keys per writer (TSan is ~10x slower). */
#include "test_util.h"
#include "test_counting_util.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#define BATCH 64
#define WRITERS 4
#define READERS 2
#define P 0.01
#define LAG 100 /* a key's removes come this many keys after its adds */

enum { SET_BASE = 200, SET_PRELOADED = 199, SET_UNION = 198, SET_HOT = 300 };

static uint64_t keys_per_writer(void)
{
    return (uint64_t)tu_env_long("BG_TEST_CONC_KEYS", 100000);
}

/* The plan for key i of a writer: added 1 or 2 times, then removed as
 * many times (i % 3 == 0: gone in the end), one time fewer (i % 3 == 1) or
 * not at all. A key with a final count above 0 never drops to 0 once its
 * first add is done. */
static unsigned plan_adds(uint64_t i)
{
    return 1 + (unsigned)(i % 2);
}

static unsigned plan_removes(uint64_t i)
{
    unsigned a = plan_adds(i);
    return i % 3 == 0 ? a : i % 3 == 1 ? a - 1 : 0;
}

static bool plan_stays(uint64_t i)
{
    return plan_adds(i) > plan_removes(i);
}

/* ---- writers and readers on one filter ---------------------------------- */

typedef struct shared {
    bg_filter *f;
    bg_filter *union_src; /* unioned into f by writer 0 halfway */
    uint64_t per_writer;
    uint64_t preloaded;
    int writers;
    pthread_barrier_t start;
    atomic_int writers_done;
    atomic_ulong errors;          /* a call returned an unexpected status */
    atomic_ulong false_negatives; /* a key that must be present was not */
    atomic_ulong removes;         /* removes that returned BG_OK */
    atomic_ulong reader_checked;
    /* Writer w has done every add of its keys [0, progress[w]) (release /
     * acquire, so those adds happen before a reader's queries). */
    _Atomic uint64_t progress[WRITERS];
} shared;

typedef struct worker {
    shared *sh;
    int id;
} worker;

/* One add of a key, by one of the add calls (chosen by `how`). */
static unsigned long add_one(bg_filter *f, const uint8_t *key, uint64_t how)
{
    bg_hash h;
    switch (how % 4) {
    case 0:
        return bg_filter_add(f, key, TU_DISTINCT_LEN) != BG_OK;
    case 1: {
        int rc = bg_filter_test_and_add(f, key, TU_DISTINCT_LEN);
        return rc != 0 && rc != 1;
    }
    case 2: {
        const void *ks[1] = {key};
        size_t ls[1] = {TU_DISTINCT_LEN};
        int64_t rc = bg_filter_add_many(f, ks, ls, 1, NULL);
        return rc != 0 && rc != 1;
    }
    default:
        if (bg_filter_hash(f, key, TU_DISTINCT_LEN, &h) != BG_OK)
            return 1;
        return bg_filter_add_hash(f, h) != BG_OK;
    }
}

/* One remove of a key that was added before: must succeed. */
static unsigned long remove_one(bg_filter *f, const uint8_t *key, uint64_t how)
{
    bg_hash h;
    switch (how % 3) {
    case 0:
        return bg_filter_remove(f, key, TU_DISTINCT_LEN) != BG_OK;
    case 1:
        if (bg_filter_hash(f, key, TU_DISTINCT_LEN, &h) != BG_OK)
            return 1;
        return bg_filter_remove_hash(f, h) != BG_OK;
    default: {
        const void *ks[1] = {key};
        size_t ls[1] = {TU_DISTINCT_LEN};
        uint8_t res[1] = {7};
        return bg_filter_remove_many(f, ks, ls, 1, res) != 1 || res[0] != 1;
    }
    }
}

/* Writer `id`: the plan for keys [0, per_writer) of set SET_BASE + id, with
 * key i's removes done while key i + LAG is added. The same function
 * replays a writer on one thread (sh->f a fresh filter, no barrier). */
static unsigned long run_writer(shared *sh, int id, bool threaded)
{
    uint8_t key[TU_DISTINCT_LEN];
    uint64_t set = SET_BASE + (uint64_t)id;
    unsigned long errors = 0, removes = 0;
    for (uint64_t i = 0; i < sh->per_writer + LAG; i++) {
        if (i < sh->per_writer) {
            tu_key_distinct(set, i, key);
            for (unsigned a = 0; a < plan_adds(i); a++)
                errors += add_one(sh->f, key, i + a);
            if (threaded)
                atomic_store_explicit(&sh->progress[id], i + 1, memory_order_release);
        }
        if (i >= LAG) {
            uint64_t r = i - LAG;
            tu_key_distinct(set, r, key);
            for (unsigned a = 0; a < plan_removes(r); a++) {
                unsigned long bad = remove_one(sh->f, key, r + a);
                errors += bad;
                removes += !bad;
            }
        }
        if (id == 0 && sh->union_src && i == sh->per_writer / 2)
            errors += bg_filter_union(sh->f, sh->union_src) != BG_OK;
    }
    atomic_fetch_add(&sh->removes, removes);
    return errors;
}

static void *writer_main(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(&w->sh->start);
    unsigned long errors = run_writer(w->sh, w->id, true);
    atomic_fetch_add(&w->sh->errors, errors);
    atomic_fetch_add(&w->sh->writers_done, 1);
    return NULL;
}

/* Readers query until every writer is done: preloaded keys (never removed:
 * always found), keys a writer has published whose plan keeps them (found:
 * their count never returns to 0 after the first add), and any other key
 * (either answer; only errors count). */
static void *reader_main(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    tu_batch b;
    tu_batch_init(&b, BATCH);
    uint8_t res[BATCH];
    uint64_t rng = 4242 + (uint64_t)w->id;
    unsigned long errors = 0, fn = 0, checked = 0;
    pthread_barrier_wait(&sh->start);
    for (uint64_t round = 0;; round++) {
        int done = atomic_load(&sh->writers_done) == sh->writers;
        uint64_t first = tu_next(&rng) % (sh->preloaded - BATCH);
        tu_batch_fill(&b, 0, SET_PRELOADED, first, BATCH);
        int64_t rc = bg_filter_contains_many(sh->f, b.keys, b.lens, BATCH, res);
        errors += rc < 0;
        for (size_t i = 0; i < BATCH; i++)
            fn += res[i] != 1;
        checked += BATCH;

        uint64_t wi = tu_next(&rng) % (uint64_t)sh->writers;
        uint64_t upto = atomic_load_explicit(&sh->progress[wi], memory_order_acquire);
        if (upto >= BATCH) {
            uint64_t from = round & 1 ? upto - BATCH : tu_next(&rng) % (upto - BATCH + 1);
            tu_batch_fill(&b, 0, SET_BASE + wi, from, BATCH);
            rc = bg_filter_contains_many(sh->f, b.keys, b.lens, BATCH, res);
            errors += rc < 0;
            for (size_t i = 0; i < BATCH; i++) {
                if (!plan_stays(from + i))
                    continue;
                fn += res[i] != 1 || bg_filter_contains(sh->f, b.keys[i], b.lens[i]) != 1;
                checked++;
            }
        }
        /* Keys in flight: any answer but an error. */
        tu_batch_fill(&b, 0, SET_BASE + tu_next(&rng) % (uint64_t)sh->writers,
                      tu_next(&rng) % sh->per_writer, BATCH);
        for (size_t i = 0; i < BATCH; i++) {
            int c = bg_filter_contains(sh->f, b.keys[i], b.lens[i]);
            errors += c != 0 && c != 1;
        }
        if (round % 64 == 0) {
            bg_filter_stats st;
            errors += bg_filter_stats_get(sh->f, &st) != BG_OK;
            errors += st.bits_set > st.bits || st.saturated != 0;
        }
        if (done)
            break;
    }
    atomic_fetch_add(&sh->errors, errors);
    atomic_fetch_add(&sh->false_negatives, fn);
    atomic_fetch_add(&sh->reader_checked, checked);
    tu_batch_free(&b);
    return NULL;
}

static void add_set(bg_filter *f, uint64_t set, uint64_t count)
{
    tu_batch b;
    tu_batch_init(&b, 1024);
    for (uint64_t at = 0; at < count; at += 1024) {
        size_t n = (size_t)(count - at < 1024 ? count - at : 1024);
        tu_batch_fill(&b, 0, set, at, n);
        TU_TRUE(bg_filter_add_many(f, b.keys, b.lens, n, NULL) >= 0);
    }
    tu_batch_free(&b);
}

static bg_filter *make(const bg_filter_options *o, bg_concurrency mode)
{
    bg_filter_options x = *o;
    x.concurrency = mode;
    bg_filter *f = NULL;
    TU_EQ_I(bg_filter_new(&f, &x), BG_OK);
    return f;
}

static void run(bg_concurrency mode, int writers)
{
    shared sh;
    memset(&sh, 0, sizeof sh);
    sh.per_writer = keys_per_writer();
    sh.writers = writers;
    sh.preloaded = 20000;
    uint64_t union_keys = 5000;
    uint64_t distinct = (uint64_t)writers * sh.per_writer + sh.preloaded + union_keys;
    bg_filter_options o = {.variant = BG_VARIANT_COUNTING, .capacity = distinct,
                           .error_rate = P, .seed = 31337};
    sh.f = make(&o, mode);
    sh.union_src = make(&o, BG_SINGLE_WRITER);
    add_set(sh.f, SET_PRELOADED, sh.preloaded);
    add_set(sh.union_src, SET_UNION, union_keys);

    /* No interleaving can saturate a counter: every add, no remove. */
    bg_filter *bound = make(&o, BG_SINGLE_WRITER);
    add_set(bound, SET_PRELOADED, sh.preloaded);
    add_set(bound, SET_UNION, union_keys);
    uint8_t key[TU_DISTINCT_LEN];
    for (int w = 0; w < writers; w++) {
        for (uint64_t i = 0; i < sh.per_writer; i++) {
            tu_key_distinct(SET_BASE + (uint64_t)w, i, key);
            for (unsigned a = 0; a < plan_adds(i); a++)
                TU_EQ_I(bg_filter_add(bound, key, sizeof key), BG_OK);
        }
    }
    bg_filter_stats st;
    TU_EQ_I(bg_filter_stats_get(bound, &st), BG_OK);
    TU_EQ_U(st.saturated, 0);
    bg_filter_free(bound);

    atomic_init(&sh.writers_done, 0);
    atomic_init(&sh.errors, 0);
    atomic_init(&sh.false_negatives, 0);
    atomic_init(&sh.removes, 0);
    atomic_init(&sh.reader_checked, 0);
    for (int i = 0; i < WRITERS; i++)
        atomic_init(&sh.progress[i], 0);
    TU_EQ_I(pthread_barrier_init(&sh.start, NULL, (unsigned)(writers + READERS)), 0);
    pthread_t th[WRITERS + READERS];
    worker wk[WRITERS + READERS];
    double t0 = tu_now();
    for (int i = 0; i < writers + READERS; i++) {
        wk[i] = (worker){.sh = &sh, .id = i < writers ? i : i - writers};
        TU_EQ_I(pthread_create(&th[i], NULL, i < writers ? writer_main : reader_main, &wk[i]), 0);
    }
    for (int i = 0; i < writers + READERS; i++)
        TU_EQ_I(pthread_join(th[i], NULL), 0);
    double t1 = tu_now();
    pthread_barrier_destroy(&sh.start);

    TU_EQ_U(atomic_load(&sh.errors), 0);
    TU_EQ_U(atomic_load(&sh.false_negatives), 0);
    TU_TRUE(atomic_load(&sh.reader_checked) > 0);
    uint64_t want_removes = 0;
    for (uint64_t i = 0; i < sh.per_writer; i++)
        want_removes += plan_removes(i);
    TU_EQ_U(atomic_load(&sh.removes), want_removes * (uint64_t)writers);

    /* Afterwards: every key whose plan keeps it is found; the keys removed
     * for good are as absent as keys never added. */
    uint64_t missing = 0, gone = 0, gone_present = 0;
    for (int w = 0; w < writers; w++) {
        for (uint64_t i = 0; i < sh.per_writer; i++) {
            tu_key_distinct(SET_BASE + (uint64_t)w, i, key);
            int c = bg_filter_contains(sh.f, key, sizeof key);
            if (plan_stays(i)) {
                missing += c != 1;
            } else {
                gone++;
                gone_present += c == 1;
            }
        }
    }
    TU_EQ_U(missing, 0);
    TU_LE_D((double)gone_present / (double)gone, P);

    /* The counters are exactly those of the same operations on one thread. */
    shared seq;
    memset(&seq, 0, sizeof seq);
    seq.f = make(&o, BG_SINGLE_WRITER);
    seq.union_src = sh.union_src;
    seq.per_writer = sh.per_writer;
    atomic_init(&seq.removes, 0);
    add_set(seq.f, SET_PRELOADED, sh.preloaded);
    for (int w = 0; w < writers; w++)
        TU_EQ_U(run_writer(&seq, w, false), 0);
    /* The payload only: the item count (header) depends on which add of a
     * shared counter came first. */
    tu_expect_same_payload(sh.f, seq.f);
    print_message("    %s, %d writers + %d readers, %" PRIu64 " keys each: %.2f s, %lu keys "
                  "checked by readers\n",
                  mode == BG_SINGLE_WRITER ? "single writer" : "concurrent writers", writers,
                  READERS, sh.per_writer, t1 - t0, (unsigned long)atomic_load(&sh.reader_checked));
    bg_filter_free(seq.f);
    bg_filter_free(sh.union_src);
    bg_filter_free(sh.f);
}

static void concurrent_writers_removers_readers(void **state)
{
    (void)state;
    tu_ctx("counting, concurrent writers");
    run(BG_CONCURRENT_WRITERS, WRITERS);
}

static void single_writer_with_readers(void **state)
{
    (void)state;
    tu_ctx("counting, single writer");
    run(BG_SINGLE_WRITER, 1);
}

/* ---- the same few words from every thread ------------------------------- */

/* 64 counters (4 words), 4 threads, each adding and removing its own two
 * keys over and over, thread 0 also unioning in a filter that holds one key
 * about a hundred times: almost every compare-and-swap meets another
 * thread's. A lost increment or decrement would leave the counters off;
 * afterwards they must be exactly those of each thread's last add, plus the
 * union key's counters saturated (its 100 unions take them to 15 whatever
 * the interleaving: before that every update is exact and the other keys'
 * net share is never negative, and after it they stay). */
typedef struct hot {
    bg_filter *f;
    bg_filter *union_src;
    uint64_t rounds;
    uint64_t union_every;
    pthread_barrier_t start;
    atomic_ulong errors;
    atomic_ulong unions;
} hot;

typedef struct hot_worker {
    hot *h;
    int id;
} hot_worker;

static void *hot_main(void *arg)
{
    hot_worker *w = arg;
    hot *h = w->h;
    uint8_t a[TU_DISTINCT_LEN], b[TU_DISTINCT_LEN];
    tu_key_distinct(SET_HOT, 2 * (uint64_t)w->id, a);
    tu_key_distinct(SET_HOT, 2 * (uint64_t)w->id + 1, b);
    unsigned long errors = 0;
    pthread_barrier_wait(&h->start);
    for (uint64_t r = 0; r < h->rounds; r++) {
        errors += add_one(h->f, a, r);
        errors += add_one(h->f, b, r + 1);
        errors += bg_filter_contains(h->f, a, sizeof a) != 1;
        errors += remove_one(h->f, a, r);
        errors += remove_one(h->f, b, r + 1);
        if (w->id == 0 && r % h->union_every == 0) {
            errors += bg_filter_union(h->f, h->union_src) != BG_OK;
            atomic_fetch_add(&h->unions, 1);
        }
    }
    errors += add_one(h->f, a, 0);
    atomic_fetch_add(&h->errors, errors);
    return NULL;
}

static void hot_counters(void **state)
{
    (void)state;
    enum { THREADS = 4 };
    tu_ctx("counting, 4 threads on 4 words");
    hot h;
    memset(&h, 0, sizeof h);
    h.rounds = keys_per_writer();
    h.union_every = h.rounds / 100 ? h.rounds / 100 : 1;
    bg_filter_options o = {.variant = BG_VARIANT_COUNTING, .bits = 64, .hashes = 3, .seed = 11};
    h.f = make(&o, BG_CONCURRENT_WRITERS);
    h.union_src = make(&o, BG_SINGLE_WRITER);
    TU_EQ_I(bg_filter_add(h.union_src, "union", 5), BG_OK);
    TU_EQ_I(bg_filter_add(h.f, "resident", 8), BG_OK);

    /* Most any counter but the union key's can hold: every key once. Below
     * 15, so those counts are exact in any order. */
    bg_filter *bound = make(&o, BG_SINGLE_WRITER), *want = make(&o, BG_SINGLE_WRITER);
    uint8_t key[TU_DISTINCT_LEN];
    for (uint64_t i = 0; i < 2 * THREADS; i++) {
        tu_key_distinct(SET_HOT, i, key);
        TU_EQ_I(bg_filter_add(bound, key, sizeof key), BG_OK);
        if (i % 2 == 0)
            TU_EQ_I(bg_filter_add(want, key, sizeof key), BG_OK);
    }
    TU_EQ_I(bg_filter_add(bound, "resident", 8), BG_OK);
    for (int i = 0; i < 15; i++)
        TU_EQ_I(bg_filter_add(want, "union", 5), BG_OK);
    TU_EQ_I(bg_filter_add(want, "resident", 8), BG_OK);
    bg_filter_stats st;
    TU_EQ_I(bg_filter_stats_get(bound, &st), BG_OK);
    TU_EQ_U(st.saturated, 0);
    bg_filter_free(bound);

    atomic_init(&h.errors, 0);
    atomic_init(&h.unions, 0);
    TU_EQ_I(pthread_barrier_init(&h.start, NULL, THREADS), 0);
    pthread_t th[THREADS];
    hot_worker wk[THREADS];
    double t0 = tu_now();
    for (int i = 0; i < THREADS; i++) {
        wk[i] = (hot_worker){.h = &h, .id = i};
        TU_EQ_I(pthread_create(&th[i], NULL, hot_main, &wk[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        TU_EQ_I(pthread_join(th[i], NULL), 0);
    double t1 = tu_now();
    pthread_barrier_destroy(&h.start);
    TU_EQ_U(atomic_load(&h.errors), 0);
    TU_TRUE(atomic_load(&h.unions) >= 15);
    TU_EQ_I(bg_filter_contains(h.f, "resident", 8), 1);
    tu_expect_same_payload(h.f, want);
    print_message("    %d threads x %" PRIu64 " rounds of 5 operations on 4 words, %lu unions: "
                  "%.2f s\n",
                  THREADS, h.rounds, (unsigned long)atomic_load(&h.unions), t1 - t0);
    bg_filter_free(want);
    bg_filter_free(h.union_src);
    bg_filter_free(h.f);
}

/* ---- two removes racing for the last copy ------------------------------- */

/* A key added once, removed by two threads at once (the caller's error that
 * filter.h THREADS describes): at least one remove succeeds, both may, and
 * no counter ever goes below 0: the filter, holding only that key, is empty
 * again afterwards whatever the interleaving. The two threads meet by
 * spinning on a round number rather than at a barrier, so that their
 * removes start within a cache-line transfer of each other and often
 * overlap. */
typedef struct race {
    bg_filter *f;
    uint64_t rounds;
    atomic_ulong go;   /* round that may start */
    atomic_ulong done; /* removes finished, over all rounds */
    atomic_int ok[2];
    unsigned long both, bad; /* written by thread 0 only */
} race;

typedef struct race_worker {
    race *r;
    int id;
} race_worker;

static void spin_until(atomic_ulong *v, unsigned long want)
{
    for (unsigned n = 0; atomic_load_explicit(v, memory_order_acquire) < want; n++)
        if (n > 1000)
            sched_yield();
}

/* Thread 0 checks the round that just ended: answers, and an empty filter. */
static void race_check(race *r)
{
    int a = atomic_load(&r->ok[0]), b = atomic_load(&r->ok[1]);
    r->bad += !((a == BG_OK || a == BG_EABSENT) && (b == BG_OK || b == BG_EABSENT));
    r->bad += a != BG_OK && b != BG_OK;
    r->both += a == BG_OK && b == BG_OK;
    bg_filter_stats st;
    r->bad += bg_filter_stats_get(r->f, &st) != BG_OK || st.bits_set != 0;
}

static void *race_main(void *arg)
{
    race_worker *w = arg;
    race *r = w->r;
    for (unsigned long i = 1; i <= r->rounds; i++) {
        if (w->id == 0) {
            spin_until(&r->done, 2 * (i - 1));
            if (i > 1)
                race_check(r);
            r->bad += bg_filter_add(r->f, "last", 4) != BG_OK;
            atomic_store_explicit(&r->go, i, memory_order_release);
            /* Let thread 1 catch up by a varying amount: a head start of
             * about one cache-line transfer would rarely overlap. */
            for (volatile unsigned long d = 0; d < (i * 37) % 256; d++) {
            }
        }
        spin_until(&r->go, i);
        atomic_store(&r->ok[w->id], bg_filter_remove(r->f, "last", 4));
        atomic_fetch_add_explicit(&r->done, 1, memory_order_release);
    }
    if (w->id == 0) {
        spin_until(&r->done, 2 * r->rounds);
        race_check(r);
    }
    return NULL;
}

static void racing_last_removes(void **state)
{
    (void)state;
    tu_ctx("counting, two removes of a key added once");
    race r;
    memset(&r, 0, sizeof r);
    r.rounds = keys_per_writer() / 5;
    atomic_init(&r.go, 0);
    atomic_init(&r.done, 0);
    /* k = 8 counters, so the two removes take a while and overlap. */
    r.f = make(&(bg_filter_options){.variant = BG_VARIANT_COUNTING, .bits = 4096, .hashes = 8},
               BG_CONCURRENT_WRITERS);
    pthread_t th[2];
    race_worker wk[2];
    for (int i = 0; i < 2; i++) {
        wk[i] = (race_worker){.r = &r, .id = i};
        TU_EQ_I(pthread_create(&th[i], NULL, race_main, &wk[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        TU_EQ_I(pthread_join(th[i], NULL), 0);
    TU_EQ_U(r.bad, 0);
    print_message("    %" PRIu64 " rounds, both removes succeeded in %lu\n", r.rounds, r.both);
    bg_filter_free(r.f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(concurrent_writers_removers_readers),
        cmocka_unit_test(single_writer_with_readers),
        cmocka_unit_test(hot_counters),
        cmocka_unit_test(racing_last_removes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
