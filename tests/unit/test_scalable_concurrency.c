/* SPDX-License-Identifier: BSD-3-Clause */
/* The scalable variant under threads (filter.h SCALABLE, THREADS): writers
 * add disjoint key sets through many growths, starting from a tiny first
 * layer, while readers query keys already added (never a false negative,
 * however the layer list changes under them), read statistics, and encode
 * the filter (each image decodes, with every key added before the encode
 * began). Afterwards every key is found, the item count is exactly the
 * number of adds that reported "new", and the layers are what growth makes,
 * each overshooting its capacity by at most one key per writer. Also run
 * under ThreadSanitizer (make test-tsan).
 *
 * Threads never call cmocka (its failure path longjmps): they count
 * problems in atomics, which the main thread asserts after joining. */
#include "test_util.h"

#include <pthread.h>
#include <stdatomic.h>

#define WRITERS 4
#define READERS 2
#define BATCH 128
#define N0 100
#define SET_BASE 200

/* Keys per writer; BG_TEST_CONC_KEYS overrides (TSan is ~10x slower). */
static uint64_t keys_per_writer(void)
{
    return (uint64_t)tu_env_long("BG_TEST_CONC_KEYS", 50000);
}

typedef struct shared {
    bg_filter *f;
    uint64_t per_writer;
    int writers;
    int encoders;                  /* readers that also encode */
    int want_error;                /* the one growth error writers may get, or 0 */
    pthread_barrier_t start;
    atomic_int writers_done;
    atomic_ulong errors;           /* a call returned an unexpected status */
    atomic_ulong limit_errors;     /* adds refused with want_error */
    atomic_ulong false_negatives;  /* a published key reported absent */
    atomic_ulong torn;             /* stats that went backwards or disagreed */
    atomic_ulong reported_new;     /* sum of the "new" answers */
    atomic_ulong queries;
    atomic_ulong images;           /* images encoded and checked */
    /* Writer w has finished adding keys [0, progress[w]); published with
     * release, read with acquire, so those adds happen before the read. */
    _Atomic uint64_t progress[WRITERS];
} shared;

typedef struct worker {
    shared *sh;
    int id;
} worker;

/* The status of a refused add: the expected limit, or an error. */
static void refused(shared *sh, int64_t rc)
{
    if (sh->want_error != 0 && rc == sh->want_error)
        atomic_fetch_add(&sh->limit_errors, 1);
    else
        atomic_fetch_add(&sh->errors, 1);
}

/* Adds keys in batches, cycling through test_and_add, add_many and
 * add_hashes. */
static void *writer_main(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    uint64_t set = SET_BASE + (uint64_t)w->id;
    tu_batch b;
    tu_batch_init(&b, BATCH);
    bg_hash hs[BATCH];
    uint8_t res[BATCH];
    pthread_barrier_wait(&sh->start);
    for (uint64_t at = 0; at < sh->per_writer; at += BATCH) {
        size_t n = (size_t)(sh->per_writer - at < BATCH ? sh->per_writer - at : BATCH);
        tu_batch_fill(&b, 0, set, at, n);
        int64_t added = 0;
        switch ((at / BATCH) % 3) {
        case 0:
            for (size_t i = 0; i < n; i++) {
                int r = bg_filter_test_and_add(sh->f, b.keys[i], b.lens[i]);
                if (r < 0) {
                    refused(sh, r);
                    break;
                }
                added += r;
            }
            break;
        case 1:
            memset(res, 0xff, sizeof res);
            added = bg_filter_add_many(sh->f, b.keys, b.lens, n, res);
            break;
        default:
            for (size_t i = 0; i < n; i++)
                if (bg_filter_hash(sh->f, b.keys[i], b.lens[i], &hs[i]) != BG_OK)
                    atomic_fetch_add(&sh->errors, 1);
            memset(res, 0xff, sizeof res);
            added = bg_filter_add_hashes(sh->f, hs, n, res);
            break;
        }
        if (added < 0) {
            /* The keys before the refused one were added, their results
             * set; the rest untouched. */
            refused(sh, added);
            added = 0;
            for (size_t i = 0; i < n && res[i] <= 1; i++)
                added += res[i];
        }
        atomic_fetch_add(&sh->reported_new, (unsigned long)added);
        /* With a limit, keys past it were not added: publish nothing more. */
        if (sh->want_error == 0)
            atomic_store_explicit(&sh->progress[w->id], at + n, memory_order_release);
    }
    tu_batch_free(&b);
    atomic_fetch_add(&sh->writers_done, 1);
    return NULL;
}

/* Every key published before the image was made is in it, and the image is
 * a valid file. */
static void check_image(shared *sh, uint64_t *seen_progress)
{
    uint64_t size;
    if (bg_filter_encoded_size(sh->f, &size) != BG_OK) {
        atomic_fetch_add(&sh->errors, 1);
        return;
    }
    uint8_t *buf = malloc((size_t)size);
    if (buf == NULL)
        return;
    size_t len;
    int rc = bg_filter_encode(sh->f, buf, (size_t)size, &len);
    if (rc == BG_EINVAL) { /* a layer was added since encoded_size: allowed */
        free(buf);
        return;
    }
    bg_filter *g = NULL;
    if (rc != BG_OK || bg_filter_decode(&g, buf, len, 0) != BG_OK) {
        atomic_fetch_add(&sh->errors, 1);
        free(buf);
        return;
    }
    for (int w = 0; w < sh->writers; w++) {
        uint8_t k[TU_DISTINCT_LEN];
        for (uint64_t i = 0; i < seen_progress[w]; i += 7) {
            size_t n = tu_key_distinct(SET_BASE + (uint64_t)w, i, k);
            if (bg_filter_contains(g, k, n) != 1)
                atomic_fetch_add(&sh->false_negatives, 1);
        }
    }
    atomic_fetch_add(&sh->images, 1);
    bg_filter_free(g);
    free(buf);
}

static void *reader_main(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    uint64_t rng = 0x1234 + (uint64_t)w->id;
    uint32_t last_layers = 0;
    uint64_t last_bits = 0;
    unsigned long rounds = 0;
    pthread_barrier_wait(&sh->start);
    while (atomic_load(&sh->writers_done) < sh->writers) {
        /* Keys already added, through both query calls. */
        uint64_t seen[WRITERS] = {0};
        for (int x = 0; x < sh->writers; x++)
            seen[x] = atomic_load_explicit(&sh->progress[x], memory_order_acquire);
        for (int q = 0; q < 64; q++) {
            int x = (int)(tu_next(&rng) % (uint64_t)sh->writers);
            if (seen[x] == 0)
                continue;
            uint64_t i = tu_next(&rng) % seen[x];
            uint8_t k[TU_DISTINCT_LEN];
            size_t n = tu_key_distinct(SET_BASE + (uint64_t)x, i, k);
            int r;
            if (q & 1) {
                r = bg_filter_contains(sh->f, k, n);
            } else {
                const void *keys[1] = {k};
                size_t lens[1] = {n};
                r = (int)bg_filter_contains_many(sh->f, keys, lens, 1, NULL);
            }
            if (r != 1)
                atomic_fetch_add(&sh->false_negatives, 1);
            atomic_fetch_add(&sh->queries, 1);
        }
        /* Statistics: layers and bits only grow, and every layer below the
         * count can be read. */
        bg_filter_stats st;
        if (bg_filter_stats_get(sh->f, &st) != BG_OK) {
            atomic_fetch_add(&sh->errors, 1);
        } else {
            if (st.layers < last_layers || st.bits < last_bits || st.layers < 1 ||
                st.layers > BG_MAX_LAYERS)
                atomic_fetch_add(&sh->torn, 1);
            last_layers = st.layers;
            last_bits = st.bits;
            uint32_t l = (uint32_t)(tu_next(&rng) % st.layers);
            bg_filter_stats ls;
            if (bg_filter_layer_stats(sh->f, l, &ls) != BG_OK ||
                ls.capacity != (uint64_t)N0 << l)
                atomic_fetch_add(&sh->torn, 1);
        }
        if (w->id < sh->encoders && rounds++ % 16 == 0)
            check_image(sh, seen);
    }
    return NULL;
}

static void run(bg_filter_options o, int writers, int encoders, int want_error,
                shared *sh)
{
    memset(sh, 0, sizeof *sh);
    o.variant = BG_VARIANT_SCALABLE;
    TU_EQ_I(bg_filter_new(&sh->f, &o), BG_OK);
    sh->per_writer = keys_per_writer();
    sh->writers = writers;
    sh->encoders = encoders;
    sh->want_error = want_error;
    TU_EQ_I(pthread_barrier_init(&sh->start, NULL, (unsigned)(writers + READERS)), 0);
    pthread_t th[WRITERS + READERS];
    worker wk[WRITERS + READERS];
    for (int i = 0; i < writers + READERS; i++) {
        wk[i] = (worker){sh, i < writers ? i : i - writers};
        TU_EQ_I(pthread_create(&th[i], NULL, i < writers ? writer_main : reader_main, &wk[i]), 0);
    }
    for (int i = 0; i < writers + READERS; i++)
        TU_EQ_I(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&sh->start);
    TU_EQ_U(atomic_load(&sh->errors), 0);
    TU_EQ_U(atomic_load(&sh->false_negatives), 0);
    TU_EQ_U(atomic_load(&sh->torn), 0);
}

/* The layers after the threads: capacities as growth makes them, each
 * layer but the newest full, none over its capacity by more than one key
 * per writer (each may have passed the "not full" check just before it
 * filled), and the totals their sums. */
static void check_layers(const bg_filter *f, int writers)
{
    bg_filter_stats st;
    TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
    uint64_t items = 0, cap = 0;
    for (uint32_t i = 0; i < st.layers; i++) {
        bg_filter_stats ls;
        TU_EQ_I(bg_filter_layer_stats(f, i, &ls), BG_OK);
        tu_ctx("layer %u of %u", i, st.layers);
        TU_EQ_U(ls.capacity, (uint64_t)N0 << i);
        if (i + 1 < st.layers)
            TU_TRUE(ls.items >= ls.capacity);
        TU_TRUE(ls.items <= ls.capacity + (uint64_t)writers);
        items += ls.items;
        cap += ls.capacity;
    }
    TU_EQ_U(st.items, items);
    TU_EQ_U(st.capacity, cap);
    tu_ctx("-");
}

static void concurrent_writers_through_growth(void **state)
{
    (void)state;
    shared sh;
    double t0 = tu_now();
    run((bg_filter_options){.capacity = N0, .error_rate = 0.01, .seed = 3}, WRITERS, 1, 0, &sh);
    double t1 = tu_now();
    uint64_t total = sh.per_writer * WRITERS;
    /* Every key, from every writer. */
    for (int w = 0; w < WRITERS; w++) {
        tu_ctx("writer %d", w);
        tu_batch b;
        tu_batch_init(&b, BATCH);
        for (uint64_t at = 0; at < sh.per_writer; at += BATCH) {
            size_t n = (size_t)(sh.per_writer - at < BATCH ? sh.per_writer - at : BATCH);
            tu_batch_fill(&b, 0, SET_BASE + (uint64_t)w, at, n);
            TU_EQ_I(bg_filter_contains_many(sh.f, b.keys, b.lens, n, NULL), (int64_t)n);
        }
        tu_batch_free(&b);
    }
    tu_ctx("totals");
    uint64_t items = bg_filter_items(sh.f);
    TU_EQ_U(items, atomic_load(&sh.reported_new));
    TU_TRUE(items <= total && items >= total * 97 / 100);
    check_layers(sh.f, WRITERS);
    bg_filter_stats st;
    TU_EQ_I(bg_filter_stats_get(sh.f, &st), BG_OK);
    TU_TRUE(st.layers >= 10); /* 100 (2^10 - 1) < 0.97 * 200000 with the defaults */
    print_message("  %d writers, %" PRIu64 " keys from capacity %d: %u layers, %" PRIu64
                  " items; %lu queries, %lu images checked, %.2f s\n",
                  WRITERS, total, N0, st.layers, items, atomic_load(&sh.queries),
                  atomic_load(&sh.images), t1 - t0);
    bg_filter_free(sh.f);
}

static void single_writer_through_growth(void **state)
{
    (void)state;
    shared sh;
    run((bg_filter_options){.capacity = N0, .error_rate = 0.01,
                            .concurrency = BG_SINGLE_WRITER},
        1, 1, 0, &sh);
    TU_EQ_U(bg_filter_items(sh.f), atomic_load(&sh.reported_new));
    check_layers(sh.f, 1);
    bg_filter_free(sh.f);
}

/* Writers hitting max_layers together: the layers stop at the cap, every
 * refusal is BG_ELAYERS, and the count still matches the "new" answers. */
static void writers_at_the_limit(void **state)
{
    (void)state;
    shared sh;
    run((bg_filter_options){.capacity = N0, .error_rate = 0.01, .max_layers = 4}, WRITERS, 0,
        BG_ELAYERS, &sh);
    TU_TRUE(atomic_load(&sh.limit_errors) > 0);
    bg_filter_stats st;
    TU_EQ_I(bg_filter_stats_get(sh.f, &st), BG_OK);
    TU_EQ_U(st.layers, 4);
    TU_EQ_U(st.items, atomic_load(&sh.reported_new));
    check_layers(sh.f, WRITERS);
    bg_filter_free(sh.f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(concurrent_writers_through_growth),
        cmocka_unit_test(single_writer_through_growth),
        cmocka_unit_test(writers_at_the_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
