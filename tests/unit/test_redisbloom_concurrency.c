/* SPDX-License-Identifier: BSD-3-Clause */
/* The RedisBloom variant under threads (redisbloom.h THREADS): writers add
 * key sets through many growths of a small chain, some keys by every
 * writer at once, while readers query keys added before the writers began
 * (never a false negative, however the link table changes under them),
 * read statistics and clone the chain. Afterwards every key is found, each
 * key some writers added got exactly one 1 in all (the adds behave as if
 * one after the other), the chain's size is the number of 1s and the sum of
 * its links' sizes, and no link holds more than its capacity. The same
 * adds one after the other then give the same counts. Also run under
 * ThreadSanitizer (make test-tsan).
 *
 * Threads never call cmocka (its failure path longjmps): they count
 * problems in atomics, which the main thread asserts after joining. */
#include "test_util.h"

#include <pthread.h>
#include <stdatomic.h>

#define WRITERS 4
#define READERS 2
#define BATCH 64

/* Keys each writer adds; BG_TEST_CONC_KEYS overrides (TSan is slower). */
static uint64_t keys_per_writer(void)
{
    return (uint64_t)tu_env_long("BG_TEST_CONC_KEYS", 20000);
}

typedef struct shared {
    bg_filter *f;
    uint64_t per_writer;
    pthread_barrier_t start;
    atomic_int writers_done;
    atomic_ulong errors;
    atomic_ulong ones;      /* adds that answered 1 */
    atomic_ulong false_neg; /* readers: a key added before they began, not found */
    atomic_ulong reads;
} shared;

typedef struct worker {
    shared *sh;
    int id;
} worker;

/* Key i of writer w: the even ones are every writer's (the same keys), the
 * odd ones its own. */
static size_t writer_key(int w, uint64_t i, char *buf, size_t size)
{
    if (i % 2 == 0)
        return (size_t)snprintf(buf, size, "common:%" PRIu64, i);
    return (size_t)snprintf(buf, size, "w%d:%" PRIu64, w, i);
}

static void *writer(void *arg)
{
    worker *wk = arg;
    shared *sh = wk->sh;
    pthread_barrier_wait(&sh->start);
    char store[BATCH][32];
    const void *keys[BATCH];
    size_t lens[BATCH];
    uint8_t res[BATCH];
    for (uint64_t at = 0; at < sh->per_writer; at += BATCH) {
        size_t n = 0;
        for (; n < BATCH && at + n < sh->per_writer; n++) {
            lens[n] = writer_key(wk->id, at + n, store[n], sizeof store[n]);
            keys[n] = store[n];
        }
        int64_t r;
        if ((at / BATCH) % 2 == 0) {
            r = bg_filter_add_many(sh->f, keys, lens, n, res);
        } else {
            r = 0;
            for (size_t i = 0; i < n && r >= 0; i++) {
                int one = bg_filter_test_and_add(sh->f, keys[i], lens[i]);
                r = one < 0 ? one : r + one;
            }
        }
        if (r < 0)
            atomic_fetch_add(&sh->errors, 1);
        else
            atomic_fetch_add(&sh->ones, (unsigned long)r);
    }
    atomic_fetch_add(&sh->writers_done, 1);
    return NULL;
}

/* Queries keys added before the writers began, reads statistics and
 * clones, until the writers are done. */
static void *reader(void *arg)
{
    worker *wk = arg;
    shared *sh = wk->sh;
    pthread_barrier_wait(&sh->start);
    char key[32];
    uint64_t i = 0;
    while (atomic_load(&sh->writers_done) < WRITERS) {
        int n = snprintf(key, sizeof key, "before:%" PRIu64, i++ % 1000);
        if (bg_filter_contains(sh->f, key, (size_t)n) != 1)
            atomic_fetch_add(&sh->false_neg, 1);
        atomic_fetch_add(&sh->reads, 1);
        if (i % 256 == 0) {
            bg_filter_stats st;
            bg_rb_chain ch;
            if (bg_filter_stats_get(sh->f, &st) != BG_OK || bg_rb_chain_get(sh->f, &ch) != BG_OK ||
                st.layers < 1)
                atomic_fetch_add(&sh->errors, 1);
        }
        if (wk->id == 0 && i % 2048 == 0) {
            bg_filter *c;
            if (bg_filter_clone(&c, sh->f) != BG_OK || bg_filter_contains(c, "before:7", 8) != 1)
                atomic_fetch_add(&sh->errors, 1);
            bg_filter_free(c);
        }
    }
    return NULL;
}

/* Adds the writers' keys one writer after the other; the number of 1s. */
static uint64_t sequential_ones(bg_filter *f, uint64_t per_writer)
{
    uint64_t ones = 0;
    char key[32];
    for (int w = 0; w < WRITERS; w++)
        for (uint64_t i = 0; i < per_writer; i++) {
            size_t n = writer_key(w, i, key, sizeof key);
            int r = bg_filter_test_and_add(f, key, n);
            TU_TRUE(r == 0 || r == 1);
            ones += (uint64_t)r;
        }
    return ones;
}

static bg_filter *make_chain(void)
{
    bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM, .capacity = 200, .error_rate = 0.01,
                           .expansion = 2, .concurrency = BG_CONCURRENT_WRITERS};
    bg_filter *f;
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    char key[32];
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(key, sizeof key, "before:%d", i);
        TU_TRUE(bg_filter_test_and_add(f, key, (size_t)n) >= 0);
    }
    return f;
}

static void writers_and_readers(void **state)
{
    (void)state;
    shared sh = {.f = make_chain(), .per_writer = keys_per_writer()};
    uint64_t before = bg_filter_items(sh.f);
    TU_EQ_I(pthread_barrier_init(&sh.start, NULL, WRITERS + READERS), 0);
    pthread_t th[WRITERS + READERS];
    worker wk[WRITERS + READERS];
    for (int i = 0; i < WRITERS + READERS; i++) {
        wk[i] = (worker){.sh = &sh, .id = i < WRITERS ? i : i - WRITERS};
        TU_EQ_I(pthread_create(&th[i], NULL, i < WRITERS ? writer : reader, &wk[i]), 0);
    }
    for (int i = 0; i < WRITERS + READERS; i++)
        TU_EQ_I(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&sh.start);

    TU_EQ_U(atomic_load(&sh.errors), 0);
    TU_EQ_U(atomic_load(&sh.false_neg), 0);
    TU_TRUE(atomic_load(&sh.reads) > 0);

    /* Every key is there; the counts are those of adds one at a time. */
    char key[32];
    for (int w = 0; w < WRITERS; w++)
        for (uint64_t i = 0; i < sh.per_writer; i++) {
            size_t n = writer_key(w, i, key, sizeof key);
            TU_EQ_I(bg_filter_contains(sh.f, key, n), 1);
        }
    bg_rb_chain ch;
    TU_EQ_I(bg_rb_chain_get(sh.f, &ch), BG_OK);
    TU_EQ_U(ch.size, before + atomic_load(&sh.ones));
    uint64_t sum = 0;
    for (uint32_t i = 0; i < ch.nfilters; i++) {
        bg_rb_link l;
        TU_EQ_I(bg_rb_link_get(sh.f, i, &l), BG_OK);
        TU_TRUE(l.size <= l.entries);
        if (i + 1 < ch.nfilters)
            TU_EQ_U(l.size, l.entries); /* a link grows only when full */
        sum += l.size;
    }
    TU_EQ_U(sum, ch.size);
    TU_TRUE(ch.nfilters >= 6);
    /* The same keys one writer after the other: about as many 1s (false
     * positives fall differently in another order), never more than the
     * distinct keys. */
    bg_filter *seq = make_chain();
    uint64_t ones = sequential_ones(seq, sh.per_writer);
    uint64_t distinct = sh.per_writer / 2 * (WRITERS + 1);
    TU_TRUE(atomic_load(&sh.ones) <= distinct && ones <= distinct);
    TU_TRUE(atomic_load(&sh.ones) + distinct / 50 >= ones && ones + distinct / 50 >= atomic_load(&sh.ones));
    bg_filter_free(seq);
    bg_filter_free(sh.f);
}

/* Single-writer chains (bg_rb_new, BG_SINGLE_WRITER) have no mutex: one
 * writer and readers beside it. */
static void single_writer_with_readers(void **state)
{
    (void)state;
    bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM, .capacity = 200, .error_rate = 0.01,
                           .concurrency = BG_SINGLE_WRITER};
    bg_filter *f;
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    uint64_t single = bg_filter_memory(f, NULL);
    bg_filter_free(f);
    o.concurrency = BG_CONCURRENT_WRITERS;
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    TU_TRUE(bg_filter_memory(f, NULL) > single); /* the mutex */
    bg_filter_free(f);

    o.concurrency = BG_SINGLE_WRITER;
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    char key[32];
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(key, sizeof key, "before:%d", i);
        TU_TRUE(bg_filter_test_and_add(f, key, (size_t)n) >= 0);
    }
    shared sh = {.f = f, .per_writer = keys_per_writer()};
    TU_EQ_I(pthread_barrier_init(&sh.start, NULL, 1 + READERS), 0);
    atomic_store(&sh.writers_done, WRITERS - 1); /* one writer below */
    pthread_t th[1 + READERS];
    worker wk[1 + READERS];
    for (int i = 0; i < 1 + READERS; i++) {
        wk[i] = (worker){.sh = &sh, .id = i == 0 ? 0 : i - 1};
        TU_EQ_I(pthread_create(&th[i], NULL, i == 0 ? writer : reader, &wk[i]), 0);
    }
    for (int i = 0; i < 1 + READERS; i++)
        TU_EQ_I(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&sh.start);
    TU_EQ_U(atomic_load(&sh.errors), 0);
    TU_EQ_U(atomic_load(&sh.false_neg), 0);
    for (uint64_t i = 0; i < sh.per_writer; i++) {
        size_t n = writer_key(0, i, key, sizeof key);
        TU_EQ_I(bg_filter_contains(f, key, n), 1);
    }
    bg_filter_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(writers_and_readers),
        cmocka_unit_test(single_writer_with_readers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
