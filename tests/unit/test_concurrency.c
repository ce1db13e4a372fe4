/* SPDX-License-Identifier: BSD-3-Clause */
/* The THREADS section of <bloomgate/filter.h>, exercised: writers adding
 * disjoint key sets through every add call while readers query, in both
 * concurrency modes, for every variant. Also run under ThreadSanitizer
 * (make test-tsan), which checks that every access is race-free.
 *
 * Threads never call cmocka (its failure path longjmps): they count
 * problems in atomics, which the main thread asserts after joining. */
#include "test_util.h"

#include <pthread.h>
#include <stdatomic.h>

#define BATCH 256
#define WRITERS 4
#define READERS 2
#define P 0.01

/* Keys per writer; BG_TEST_CONC_KEYS overrides (TSan is ~10x slower). */
static uint64_t keys_per_writer(void)
{
    return (uint64_t)tu_env_long("BG_TEST_CONC_KEYS", 200000);
}

enum { SET_BASE = 100, SET_PRELOADED = 99, SET_ABSENT = 98 };

typedef struct shared {
    bg_filter *f;
    bg_filter *union_src; /* a filter unioned into f while writers run, or NULL */
    uint64_t per_writer;
    uint64_t preloaded;   /* keys of SET_PRELOADED added before any thread started */
    int writers;
    pthread_barrier_t start;
    atomic_int writers_done;
    atomic_ulong errors;           /* a call returned an error */
    atomic_ulong false_negatives;  /* a preloaded key reported absent */
    atomic_ulong reported_new;     /* sum of test_and_add / add_many "new" answers */
    atomic_ulong reader_queries;
    /* Writer w has finished adding keys [0, progress[w]); published with
     * release, read with acquire, so those adds happen before the read. */
    _Atomic uint64_t progress[WRITERS];
    atomic_ulong published_checked;
} shared;

typedef struct worker {
    shared *sh;
    int id;
} worker;

static void batch_of(tu_batch *b, uint64_t set, uint64_t first, size_t n)
{
    tu_batch_fill(b, 0, set, first, n);
}

/* Writer `id` adds keys [0, per_writer) of set SET_BASE + id, rotating
 * through the add calls every batch. */
static void *writer_main(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    tu_batch b;
    tu_batch_init(&b, BATCH);
    bg_hash h[BATCH];
    uint8_t res[BATCH];
    uint64_t set = SET_BASE + (uint64_t)w->id;
    pthread_barrier_wait(&sh->start);
    unsigned long errors = 0, reported = 0;
    for (uint64_t at = 0, round = 0; at < sh->per_writer; at += BATCH, round++) {
        size_t n = (size_t)(sh->per_writer - at < BATCH ? sh->per_writer - at : BATCH);
        batch_of(&b, set, at, n);
        switch ((round + (uint64_t)w->id) % 5) {
        case 0:
            for (size_t i = 0; i < n; i++)
                errors += bg_filter_add(sh->f, b.keys[i], b.lens[i]) != BG_OK;
            break;
        case 1:
            for (size_t i = 0; i < n; i++) {
                int rc = bg_filter_test_and_add(sh->f, b.keys[i], b.lens[i]);
                errors += rc < 0;
                reported += rc == 1;
            }
            break;
        case 2: {
            int64_t rc = bg_filter_add_many(sh->f, b.keys, b.lens, n, res);
            errors += rc < 0;
            reported += rc > 0 ? (unsigned long)rc : 0;
            break;
        }
        case 3:
            for (size_t i = 0; i < n; i++) {
                errors += bg_filter_hash(sh->f, b.keys[i], b.lens[i], &h[i]) != BG_OK;
                errors += bg_filter_add_hash(sh->f, h[i]) != BG_OK;
            }
            break;
        default: {
            for (size_t i = 0; i < n; i++)
                errors += bg_filter_hash(sh->f, b.keys[i], b.lens[i], &h[i]) != BG_OK;
            int64_t rc = bg_filter_add_hashes(sh->f, h, n, NULL);
            errors += rc < 0;
            break;
        }
        }
        atomic_store_explicit(&sh->progress[w->id], at + n, memory_order_release);
        /* Halfway, writer 0 unions another filter in: safe during adds with
         * concurrent writers, and the single writer's own act otherwise. */
        if (w->id == 0 && sh->union_src && at / BATCH == sh->per_writer / BATCH / 2)
            errors += bg_filter_union(sh->f, sh->union_src) != BG_OK;
    }
    atomic_fetch_add(&sh->errors, errors);
    atomic_fetch_add(&sh->reported_new, reported);
    atomic_fetch_add(&sh->writers_done, 1);
    tu_batch_free(&b);
    return NULL;
}

/* Readers query until every writer is done: keys preloaded before the
 * threads started (always found: adds never clear a bit), keys a writer has
 * published as added through a release/acquire pair (always found: the add
 * happened before the query), and keys in flight (either answer; only
 * errors count). */
static void *reader_main(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    tu_batch b;
    tu_batch_init(&b, BATCH);
    uint8_t res[BATCH];
    bg_hash h[BATCH];
    uint64_t rng = 777 + (uint64_t)w->id;
    unsigned long errors = 0, fn = 0, queries = 0, checked = 0;
    pthread_barrier_wait(&sh->start);
    for (uint64_t round = 0;; round++) {
        int done = atomic_load(&sh->writers_done) == sh->writers;
        uint64_t first = tu_next(&rng) % (sh->per_writer > BATCH ? sh->per_writer - BATCH : 1);
        /* Preloaded keys: never a false negative. */
        uint64_t pfirst = tu_next(&rng) % (sh->preloaded - BATCH);
        batch_of(&b, SET_PRELOADED, pfirst, BATCH);
        if (round & 1) {
            int64_t rc = bg_filter_contains_many(sh->f, b.keys, b.lens, BATCH, res);
            errors += rc < 0;
            for (size_t i = 0; i < BATCH; i++)
                fn += res[i] != 1;
        } else {
            for (size_t i = 0; i < BATCH; i++) {
                errors += bg_filter_hash(sh->f, b.keys[i], b.lens[i], &h[i]) != BG_OK;
                fn += bg_filter_contains_hash(sh->f, h[i]) != 1;
            }
            int64_t rc = bg_filter_contains_hashes(sh->f, h, BATCH, NULL);
            fn += rc >= 0 ? (unsigned long)(BATCH - rc) : 0;
            errors += rc < 0;
        }
        /* Keys a writer has published as added (release/acquire): found. */
        uint64_t wi = tu_next(&rng) % (uint64_t)sh->writers;
        uint64_t done_upto = atomic_load_explicit(&sh->progress[wi], memory_order_acquire);
        if (done_upto >= BATCH) {
            uint64_t from = done_upto - BATCH;
            if (round & 2)
                from = tu_next(&rng) % (done_upto - BATCH + 1);
            batch_of(&b, SET_BASE + wi, from, BATCH);
            for (size_t i = 0; i < BATCH; i++)
                fn += bg_filter_contains(sh->f, b.keys[i], b.lens[i]) != 1;
            int64_t rc = bg_filter_contains_many(sh->f, b.keys, b.lens, BATCH, NULL);
            fn += rc >= 0 ? (unsigned long)(BATCH - rc) : 0;
            checked += 2 * BATCH;
        }
        /* Keys in flight: any answer but an error. */
        batch_of(&b, SET_BASE + tu_next(&rng) % (uint64_t)sh->writers, first, BATCH);
        for (size_t i = 0; i < BATCH; i++) {
            int rc = bg_filter_contains(sh->f, b.keys[i], b.lens[i]);
            errors += rc != 0 && rc != 1;
        }
        int64_t rc = bg_filter_contains_many(sh->f, b.keys, b.lens, BATCH, res);
        errors += rc < 0 || rc > BATCH;
        /* Accessors and stats may run during adds and see a state between
         * the one before and the one after. */
        uint64_t items = bg_filter_items(sh->f);
        errors += items > (uint64_t)sh->writers * sh->per_writer * 2 + sh->preloaded + 100000;
        errors += bg_filter_bits(sh->f) == 0 || bg_filter_hashes(sh->f) == 0;
        if (round % 16 == 0) {
            bg_filter_stats st;
            errors += bg_filter_stats_get(sh->f, &st) != BG_OK;
            errors += st.bits_set > st.bits || !(st.fill_ratio >= 0 && st.fill_ratio <= 1);
            errors += !(st.estimated_items >= 0) || !(st.estimated_fp_rate >= 0);
        }
        queries += 3 * BATCH;
        if (done)
            break;
    }
    atomic_fetch_add(&sh->errors, errors);
    atomic_fetch_add(&sh->false_negatives, fn);
    atomic_fetch_add(&sh->reader_queries, queries);
    atomic_fetch_add(&sh->published_checked, checked);
    tu_batch_free(&b);
    return NULL;
}

/* Runs `writers` writers and READERS readers on a fresh filter, then checks
 * that every key is found and the item count is sane. */
static void run(bg_variant v, bg_concurrency mode, int writers, int with_union)
{
    shared sh;
    memset(&sh, 0, sizeof sh);
    sh.per_writer = keys_per_writer();
    sh.writers = writers;
    sh.preloaded = 20000;
    uint64_t total = (uint64_t)writers * sh.per_writer + sh.preloaded;
    bg_filter_options o = {.variant = v, .concurrency = mode, .capacity = total,
                           .error_rate = P, .seed = 31337};
    TU_EQ_I(bg_filter_new(&sh.f, &o), BG_OK);
    tu_batch b;
    tu_batch_init(&b, BATCH);
    for (uint64_t at = 0; at < sh.preloaded; at += BATCH) {
        size_t n = (size_t)(sh.preloaded - at < BATCH ? sh.preloaded - at : BATCH);
        batch_of(&b, SET_PRELOADED, at, n);
        TU_TRUE(bg_filter_add_many(sh.f, b.keys, b.lens, n, NULL) >= 0);
    }
    uint64_t items_preloaded = bg_filter_items(sh.f);
    /* The union source holds keys of its own; union only where it is
     * allowed during adds. */
    uint64_t union_keys = 5000;
    if (with_union) {
        TU_EQ_I(bg_filter_new(&sh.union_src, &o), BG_OK);
        for (uint64_t at = 0; at < union_keys; at += BATCH) {
            size_t n = (size_t)(union_keys - at < BATCH ? union_keys - at : BATCH);
            batch_of(&b, SET_ABSENT - 1, at, n);
            TU_TRUE(bg_filter_add_many(sh.union_src, b.keys, b.lens, n, NULL) >= 0);
        }
    }
    atomic_init(&sh.writers_done, 0);
    atomic_init(&sh.errors, 0);
    atomic_init(&sh.false_negatives, 0);
    atomic_init(&sh.reported_new, 0);
    atomic_init(&sh.reader_queries, 0);
    atomic_init(&sh.published_checked, 0);
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
    TU_TRUE(atomic_load(&sh.reader_queries) > 0);

    /* After the joins, every key of every writer is found, by both the
     * single and the batch call. */
    uint64_t missing = 0, missing_many = 0;
    for (int wi = 0; wi < writers; wi++) {
        for (uint64_t at = 0; at < sh.per_writer; at += BATCH) {
            size_t n = (size_t)(sh.per_writer - at < BATCH ? sh.per_writer - at : BATCH);
            batch_of(&b, SET_BASE + (uint64_t)wi, at, n);
            for (size_t i = 0; i < n; i++)
                missing += bg_filter_contains(sh.f, b.keys[i], b.lens[i]) != 1;
            missing_many += n - (uint64_t)bg_filter_contains_many(sh.f, b.keys, b.lens, n, NULL);
        }
    }
    TU_EQ_U(missing, 0);
    TU_EQ_U(missing_many, 0);
    uint64_t pre = 0;
    for (uint64_t at = 0; at < sh.preloaded; at += BATCH) {
        size_t n = (size_t)(sh.preloaded - at < BATCH ? sh.preloaded - at : BATCH);
        batch_of(&b, SET_PRELOADED, at, n);
        pre += (uint64_t)bg_filter_contains_many(sh.f, b.keys, b.lens, n, NULL);
    }
    TU_EQ_U(pre, sh.preloaded);
    if (with_union) {
        uint64_t u = 0;
        for (uint64_t at = 0; at < union_keys; at += BATCH) {
            size_t n = (size_t)(union_keys - at < BATCH ? union_keys - at : BATCH);
            batch_of(&b, SET_ABSENT - 1, at, n);
            u += (uint64_t)bg_filter_contains_many(sh.f, b.keys, b.lens, n, NULL);
        }
        TU_EQ_U(u, union_keys);
    }

    /* Items: every add that set a new bit was counted, none twice (the
     * keys are distinct), so between keys * (1 - 2p) and keys. A union
     * resets the count to the fill estimate, so only bounds apply then. */
    uint64_t keys = (uint64_t)writers * sh.per_writer;
    uint64_t items = bg_filter_items(sh.f);
    if (!with_union) {
        TU_IN_RANGE_D((double)(items - items_preloaded), (double)keys * (1 - 2 * P),
                      (double)keys);
        /* test_and_add / add_many's "new" answers are a subset of them. */
        TU_TRUE(atomic_load(&sh.reported_new) <= items - items_preloaded);
    } else {
        TU_IN_RANGE_D((double)items, 0.97 * (double)(total + union_keys),
                      1.03 * (double)(total + union_keys));
    }
    bg_filter_stats st;
    TU_EQ_I(bg_filter_stats_get(sh.f, &st), BG_OK);
    TU_IN_RANGE_D(st.estimated_items, 0.97 * (double)(total + (with_union ? union_keys : 0)),
                  1.03 * (double)(total + (with_union ? union_keys : 0)));
    /* The rate on absent keys is still about p. */
    uint64_t fps = 0, queries = 100000;
    for (uint64_t at = 0; at < queries; at += BATCH) {
        batch_of(&b, SET_ABSENT, at, BATCH);
        fps += (uint64_t)bg_filter_contains_many(sh.f, b.keys, b.lens, BATCH, NULL);
    }
    TU_IN_RANGE_D((double)fps / (double)queries, 0.5 * P, 1.5 * P);
    print_message("    %d writers + %d readers, %" PRIu64 " keys: %.2f s, %lu reader queries, "
                  "%lu of published keys\n",
                  writers, READERS, keys, t1 - t0, (unsigned long)atomic_load(&sh.reader_queries),
                  (unsigned long)atomic_load(&sh.published_checked));

    tu_batch_free(&b);
    bg_filter_free(sh.union_src);
    bg_filter_free(sh.f);
}

static void concurrent_writers_standard(void **state)
{
    (void)state;
    tu_ctx("standard, concurrent writers");
    run(BG_VARIANT_STANDARD, BG_CONCURRENT_WRITERS, WRITERS, 0);
}

static void concurrent_writers_blocked(void **state)
{
    (void)state;
    tu_ctx("blocked, concurrent writers");
    run(BG_VARIANT_BLOCKED, BG_CONCURRENT_WRITERS, WRITERS, 0);
}

static void concurrent_writers_with_union(void **state)
{
    (void)state;
    tu_ctx("standard, concurrent writers + union");
    run(BG_VARIANT_STANDARD, BG_CONCURRENT_WRITERS, WRITERS, 1);
    tu_ctx("blocked, concurrent writers + union");
    run(BG_VARIANT_BLOCKED, BG_CONCURRENT_WRITERS, WRITERS, 1);
}

static void single_writer_standard(void **state)
{
    (void)state;
    tu_ctx("standard, single writer");
    run(BG_VARIANT_STANDARD, BG_SINGLE_WRITER, 1, 0);
}

static void single_writer_blocked(void **state)
{
    (void)state;
    tu_ctx("blocked, single writer");
    run(BG_VARIANT_BLOCKED, BG_SINGLE_WRITER, 1, 0);
}

/* A union into a single-writer filter, done by its writer, while readers
 * query. */
static void single_writer_with_union(void **state)
{
    (void)state;
    tu_ctx("standard, single writer + union");
    run(BG_VARIANT_STANDARD, BG_SINGLE_WRITER, 1, 1);
    tu_ctx("blocked, single writer + union");
    run(BG_VARIANT_BLOCKED, BG_SINGLE_WRITER, 1, 1);
}

/* Many threads adding the SAME keys at once: nothing is lost, and each key
 * is reported new by at least one thread (several may say so). */
typedef struct same_keys {
    bg_filter *f;
    uint64_t n;
    pthread_barrier_t start;
    atomic_ulong news;
    atomic_ulong errors;
} same_keys;

static void *same_keys_main(void *arg)
{
    same_keys *s = arg;
    uint8_t buf[TU_DISTINCT_LEN];
    unsigned long news = 0, errors = 0;
    pthread_barrier_wait(&s->start);
    for (uint64_t i = 0; i < s->n; i++) {
        tu_key_distinct(SET_BASE, i, buf);
        int rc = bg_filter_test_and_add(s->f, buf, sizeof buf);
        errors += rc < 0;
        news += rc == 1;
    }
    atomic_fetch_add(&s->news, news);
    atomic_fetch_add(&s->errors, errors);
    return NULL;
}

static void same_keys_from_many_threads(void **state)
{
    (void)state;
    static const bg_variant vs[] = {BG_VARIANT_STANDARD, BG_VARIANT_BLOCKED};
    for (size_t vi = 0; vi < 2; vi++) {
        tu_ctx("%s: same keys, 4 threads", vs[vi] == BG_VARIANT_STANDARD ? "standard" : "blocked");
        same_keys s;
        memset(&s, 0, sizeof s);
        s.n = keys_per_writer() / 2;
        bg_filter_options o = {.variant = vs[vi], .capacity = s.n, .error_rate = P};
        TU_EQ_I(bg_filter_new(&s.f, &o), BG_OK);
        atomic_init(&s.news, 0);
        atomic_init(&s.errors, 0);
        TU_EQ_I(pthread_barrier_init(&s.start, NULL, 4), 0);
        pthread_t th[4];
        for (int i = 0; i < 4; i++)
            TU_EQ_I(pthread_create(&th[i], NULL, same_keys_main, &s), 0);
        for (int i = 0; i < 4; i++)
            TU_EQ_I(pthread_join(th[i], NULL), 0);
        pthread_barrier_destroy(&s.start);
        TU_EQ_U(atomic_load(&s.errors), 0);
        uint64_t items = bg_filter_items(s.f);
        /* Each key is new to at least one thread unless it was a false
         * positive; the counter counts every "new" answer. */
        TU_EQ_U(items, atomic_load(&s.news));
        TU_IN_RANGE_D((double)items, (double)s.n * (1 - 2 * P), 4.0 * (double)s.n);
        uint8_t buf[TU_DISTINCT_LEN];
        uint64_t missing = 0;
        for (uint64_t i = 0; i < s.n; i++) {
            tu_key_distinct(SET_BASE, i, buf);
            missing += bg_filter_contains(s.f, buf, sizeof buf) != 1;
        }
        TU_EQ_U(missing, 0);
        bg_filter_free(s.f);
    }
}

/* bg_filter_clone while a thread adds: each clone holds every key whose add
 * finished before the clone began (filter.h, bg_filter_clone), for a
 * standard, a blocked and a growing scalable filter. */
typedef struct clone_run {
    bg_filter *f;
    uint64_t n;
    atomic_ullong done; /* keys 0..done-1 are added (release) */
    atomic_ulong errors;
} clone_run;

static void *clone_writer_main(void *arg)
{
    clone_run *c = arg;
    uint8_t buf[TU_DISTINCT_LEN];
    for (uint64_t i = 0; i < c->n; i++) {
        tu_key_distinct(SET_BASE + 1, i, buf);
        if (bg_filter_add(c->f, buf, sizeof buf) < 0)
            atomic_fetch_add(&c->errors, 1);
        atomic_store_explicit(&c->done, i + 1, memory_order_release);
    }
    return NULL;
}

static void clone_while_adding(void **state)
{
    (void)state;
    static const bg_filter_options opts[] = {
        {.variant = BG_VARIANT_STANDARD, .capacity = 100000, .error_rate = P},
        {.variant = BG_VARIANT_BLOCKED, .capacity = 100000, .error_rate = P},
        {.variant = BG_VARIANT_SCALABLE, .capacity = 1000, .error_rate = P},
    };
    for (size_t v = 0; v < sizeof opts / sizeof *opts; v++) {
        tu_ctx("clone while adding: %s", bg_variant_name(opts[v].variant));
        clone_run c;
        memset(&c, 0, sizeof c);
        c.n = keys_per_writer() / 4;
        atomic_init(&c.done, 0);
        atomic_init(&c.errors, 0);
        TU_EQ_I(bg_filter_new(&c.f, &opts[v]), BG_OK);
        pthread_t th;
        TU_EQ_I(pthread_create(&th, NULL, clone_writer_main, &c), 0);
        uint64_t clones = 0, missing = 0;
        uint8_t buf[TU_DISTINCT_LEN];
        for (uint64_t seen = 0; seen < c.n;) {
            seen = atomic_load_explicit(&c.done, memory_order_acquire);
            bg_filter *copy;
            TU_EQ_I(bg_filter_clone(&copy, c.f), BG_OK);
            clones++;
            for (uint64_t i = 0; i < seen; i += 1 + seen / 512) {
                tu_key_distinct(SET_BASE + 1, i, buf);
                missing += bg_filter_contains(copy, buf, sizeof buf) != 1;
            }
            bg_filter_free(copy);
        }
        TU_EQ_I(pthread_join(th, NULL), 0);
        TU_EQ_U(atomic_load(&c.errors), 0);
        TU_EQ_U(missing, 0);
        TU_TRUE(clones >= 2);
        bg_filter_free(c.f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(concurrent_writers_standard),
        cmocka_unit_test(concurrent_writers_blocked),
        cmocka_unit_test(concurrent_writers_with_union),
        cmocka_unit_test(single_writer_standard),
        cmocka_unit_test(single_writer_blocked),
        cmocka_unit_test(single_writer_with_union),
        cmocka_unit_test(same_keys_from_many_threads),
        cmocka_unit_test(clone_while_adding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
