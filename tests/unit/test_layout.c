/* SPDX-License-Identifier: BSD-3-Clause */
/* The bit layout, pinned. Where a key's bits land is part of the format: a
 * filter built here is read back from files and pushed into Redis bitmaps,
 * and other clients compute the same positions. So these tests pin the
 * standard positions of <bloomgate/layout.h> to literal values, recompute the
 * blocked ones from the formulas documented in <bloomgate/filter.h>, read the
 * bit array byte by byte in the documented numbering (bit i at byte i / 8,
 * mask 0x80 >> (i % 8)), and require exactly those bits, no others. They
 * run every blocked implementation this CPU has (portable, AVX2, AVX-512),
 * which must produce the same array bit for bit.
 *
 * One file, longer than the others, on purpose: it has one concern, the
 * golden positions, and its tests read best next to one another (each
 * variant's literal positions beside the formulas they come from, and the
 * implementations held to the same arrays). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "test_util.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "../src/core/filter_internal.h"

/* Payload bit i of f: byte i / 8 of the array as stored in memory. */
static int payload_bit(const bg_filter *f, uint64_t i)
{
    const unsigned char *bytes = (const unsigned char *)f->words;
    return (bytes[i / 8] & (0x80u >> (i % 8))) != 0;
}

static uint64_t count_bits(const bg_filter *f)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < f->m; i++)
        n += (uint64_t)payload_bit(f, i);
    return n;
}

/* The salts, restated here on purpose: changing them changes the format. */
static const uint64_t salt[8] = {
    0xb843f28d1cbe7cc1u, 0xbf5208508c24ba89u, 0x44191ad094bbb81fu, 0x5380e15d575cde27u,
    0x7c1006a45673361du, 0x966e0f470d6583c1u, 0x393056da196ce181u, 0xad9afafc3a99e0e7u,
};

/* XXH3-128 is part of the format too: pin one value. */
static void hash_is_xxh3_128(void **state)
{
    (void)state;
    bg_hash h;
    TU_EQ_I(bg_hash_key("bloomgate", 9, 0, &h), BG_OK);
    /* `printf bloomgate | xxh128sum` (Debian's xxhash package) prints the
     * canonical form, high half first: 0b401c44f42aac8a d3da6931c1a41b6e. */
    TU_EQ_U(h.h1, UINT64_C(0xd3da6931c1a41b6e));
    TU_EQ_U(h.h2, UINT64_C(0x0b401c44f42aac8a));
}

/* bg_layout_positions, the one definition of the standard positions, against
 * values written down once: any change to them is a format change. The
 * second case has positions past 2^32, the third k = BG_MAX_K in the
 * smallest array (every y_j term wraps). */
static void standard_positions_golden(void **state)
{
    (void)state;
    static const struct {
        const char *key;
        uint64_t seed, m;
        uint32_t k;
        uint64_t pos[BG_MAX_K];
    } cases[] = {
        {"bloomgate", 0, 100003, 11,
         {82757, 87152, 91547, 95943, 338, 4739, 9144, 13554, 17970, 22393, 26824}},
        {"bloomgate", 0, (UINT64_C(1) << 40) + 12345, 7,
         {UINT64_C(909902436777), UINT64_C(958222672060), UINT64_C(1006542907343),
          UINT64_C(1054863142627), UINT64_C(3671737792), UINT64_C(51991973081),
          UINT64_C(100312208374)}},
        {"", UINT64_C(0x0123456789abcdef), 64, 32,
         {42, 19, 60, 38, 18, 1, 52, 44, 42, 47, 60, 18, 50, 29, 20, 24,
          42, 11, 60, 62, 18, 57, 52, 4, 42, 39, 60, 42, 50, 21, 20, 48}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        bg_hash h;
        uint64_t got[BG_MAX_K];
        TU_EQ_I(bg_hash_key(cases[c].key, strlen(cases[c].key), cases[c].seed, &h), BG_OK);
        TU_EQ_I(bg_layout_positions(h, cases[c].m, cases[c].k, got), BG_OK);
        for (uint32_t j = 0; j < cases[c].k; j++)
            TU_EQ_U(got[j], cases[c].pos[j]);
        /* The iterator is the same sequence. */
        bg_layout_probe p = bg_layout_probe_first(h, cases[c].m);
        for (uint32_t j = 0; j < cases[c].k; j++, bg_layout_probe_next(&p)) {
            TU_EQ_U(p.j, j);
            TU_EQ_U(p.x, cases[c].pos[j]);
        }
    }
    bg_hash h = {1, 2};
    uint64_t out[BG_MAX_K];
    TU_EQ_I(bg_layout_positions(h, BG_MIN_BITS - 1, 3, out), BG_EINVAL);
    TU_EQ_I(bg_layout_positions(h, 100, 0, out), BG_EINVAL);
    TU_EQ_I(bg_layout_positions(h, 100, BG_MAX_K + 1, out), BG_EINVAL);
    TU_EQ_I(bg_layout_positions(h, 100, 3, NULL), BG_EINVAL);
}

/* Both ways of computing (x * range) >> 64 agree: the edges of both
 * operands and pseudo-random pairs. */
static void reduce_portable_agrees(void **state)
{
    (void)state;
    static const uint64_t edge[] = {0, 1, 2, 63, 64, 0xffffffffu, UINT64_C(0x100000000),
                                    UINT64_C(0x100000001), UINT64_C(1) << 63, UINT64_MAX - 1,
                                    UINT64_MAX};
    size_t ne = sizeof edge / sizeof edge[0];
    for (size_t i = 0; i < ne; i++)
        for (size_t j = 0; j < ne; j++)
            TU_EQ_U(bg_layout_reduce_portable(edge[i], edge[j]),
                    bg_layout_reduce(edge[i], edge[j]));
    uint64_t rng = 7;
    for (int i = 0; i < 1000000; i++) {
        uint64_t x = tu_next(&rng), r = tu_next(&rng) >> (i % 64);
        uint64_t want = bg_layout_reduce(x, r), got = bg_layout_reduce_portable(x, r);
        if (got != want)
            TU_EQ_U(got, want);
    }
}

static void standard_positions(void **state)
{
    (void)state;
    bg_filter *f;
    bg_filter_options o = {.variant = BG_VARIANT_STANDARD, .bits = 100003, .hashes = 7, .seed = 42};
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    uint64_t pos[7];
    for (uint64_t key = 0; key < 50; key++) {
        uint8_t buf[TU_DISTINCT_LEN];
        size_t len = tu_key_distinct(7, key, buf);
        bg_hash h;
        TU_EQ_I(bg_hash_key(buf, len, 42, &h), BG_OK);
        TU_EQ_I(bg_filter_add(f, buf, len), BG_OK);
        TU_EQ_I(bg_layout_positions(h, f->m, 7, pos), BG_OK);
        for (uint32_t j = 0; j < 7; j++)
            TU_TRUE(payload_bit(f, pos[j]));
    }
    /* Exactly those bits, no others. */
    unsigned char *expect = calloc((size_t)(f->m + 7) / 8, 1);
    for (uint64_t key = 0; key < 50; key++) {
        uint8_t buf[TU_DISTINCT_LEN];
        size_t len = tu_key_distinct(7, key, buf);
        bg_hash h;
        bg_hash_key(buf, len, 42, &h);
        TU_EQ_I(bg_layout_positions(h, f->m, 7, pos), BG_OK);
        for (uint32_t j = 0; j < 7; j++)
            expect[pos[j] / 8] |= (unsigned char)(0x80u >> (pos[j] % 8));
    }
    for (uint64_t i = 0; i < f->m; i++)
        TU_EQ_I(payload_bit(f, i), (expect[i / 8] & (0x80u >> (i % 8))) != 0);
    free(expect);
    bg_filter_free(f);
}

/* Expected payload of a blocked filter after adding keys (set, 0..count-1). */
static unsigned char *blocked_expected(const bg_filter *f, uint64_t set, uint64_t count)
{
    unsigned char *expect = calloc((size_t)f->m / 8, 1);
    for (uint64_t key = 0; key < count; key++) {
        uint8_t buf[TU_DISTINCT_LEN];
        size_t len = tu_key_distinct(set, key, buf);
        bg_hash h;
        bg_hash_key(buf, len, f->seed, &h);
        uint64_t block = bg_layout_reduce(h.h1, f->m / 512);
        uint64_t start = h.h1 & 7;
        for (uint32_t j = 0; j < f->k; j++) {
            uint64_t word = (start + j) % 8, bit = (h.h2 * salt[j]) >> 58;
            uint64_t i = block * 512 + word * 64 + bit;
            expect[i / 8] |= (unsigned char)(0x80u >> (i % 8));
        }
    }
    return expect;
}

static const char *const simd_name[] = {"portable", "avx2", "avx512"};

static void blocked_positions_impl(bg__simd simd)
{
    bg__simd saved = bg__blocked_simd;
    bg__blocked_simd = simd;
    for (uint32_t k = 1; k <= BG_BLOCKED_MAX_K; k++) {
        for (int sw = 0; sw < 2; sw++) {
            tu_ctx("blocked k=%u %s single_writer=%d", k, simd_name[simd], sw);
            bg_filter *f;
            bg_filter_options o = {.variant = BG_VARIANT_BLOCKED, .bits = 512 * 37, .hashes = k,
                                   .seed = 0x5eed, .concurrency = sw ? BG_SINGLE_WRITER : 0};
            TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
            TU_TRUE(f->ops == bg__blocked_ops_at(simd));
            const uint64_t count = 300;
            for (uint64_t key = 0; key < count; key++) {
                uint8_t buf[TU_DISTINCT_LEN];
                size_t len = tu_key_distinct(k, key, buf);
                TU_TRUE(bg_filter_add(f, buf, len) == BG_OK);
            }
            unsigned char *expect = blocked_expected(f, k, count);
            for (uint64_t i = 0; i < f->m; i++)
                TU_EQ_I(payload_bit(f, i), (expect[i / 8] & (0x80u >> (i % 8))) != 0);
            TU_TRUE(count_bits(f) > 0);
            free(expect);
            bg_filter_free(f);
        }
    }
    bg__blocked_simd = saved;
}

static void blocked_positions_portable(void **state)
{
    (void)state;
    blocked_positions_impl(BG__SIMD_NONE);
}

/* The tests of a `--simd` group (main) get its instruction set as their
 * state, and skip where the CPU lacks it. */
static bg__simd simd_or_skip(void **state)
{
    bg__simd simd = *(const bg__simd *)*state;
    if (bg__blocked_ops_at(simd) == NULL)
        skip();
    return simd;
}

static void blocked_positions_simd(void **state)
{
    blocked_positions_impl(simd_or_skip(state));
}

/* A SIMD implementation sets the bits and answers every query as the
 * portable one does, batch calls included (test_filter*.c run the whole
 * conformance suite, key lengths by class, over each implementation too). */
static void simd_answers_match(bg__simd simd)
{
    bg_filter *a, *b;
    bg_filter_options o = {.variant = BG_VARIANT_BLOCKED, .capacity = 20000, .error_rate = 0.05};
    bg__blocked_simd = BG__SIMD_NONE;
    TU_EQ_I(bg_filter_new(&a, &o), BG_OK);
    bg__blocked_simd = simd;
    TU_EQ_I(bg_filter_new(&b, &o), BG_OK);
    bg__blocked_simd = BG__SIMD_AVX512;
    TU_TRUE(a->ops == &bg__blocked_scalar_ops);
    TU_TRUE(b->ops == bg__blocked_ops_at(simd));
    tu_batch keys;
    tu_batch_init(&keys, 20000);
    tu_batch_fill(&keys, 1, 11, 0, 20000);
    TU_EQ_I(bg_filter_add_many(a, keys.keys, keys.lens, 20000, NULL),
            bg_filter_add_many(b, keys.keys, keys.lens, 20000, NULL));
    TU_EQ_I(memcmp((const void *)a->words, (const void *)b->words, a->nwords * 8), 0);
    uint8_t *ra = malloc(100000), *rb = malloc(100000);
    tu_batch probes;
    tu_batch_init(&probes, 100000);
    tu_batch_fill(&probes, 0, 12, 0, 100000);
    int64_t na = bg_filter_contains_many(a, probes.keys, probes.lens, 100000, ra);
    int64_t nb = bg_filter_contains_many(b, probes.keys, probes.lens, 100000, rb);
    TU_EQ_I(na, nb);
    TU_TRUE(na > 0); /* p = 0.05: some false positives, so the test has teeth */
    TU_EQ_I(memcmp(ra, rb, 100000), 0);
    for (size_t i = 0; i < 1000; i++)
        TU_EQ_I(bg_filter_contains(a, probes.keys[i], probes.lens[i]),
                bg_filter_contains(b, probes.keys[i], probes.lens[i]));
    free(ra);
    free(rb);
    tu_batch_free(&keys);
    tu_batch_free(&probes);
    bg_filter_free(a);
    bg_filter_free(b);
}

static void answers_match_simd(void **state)
{
    simd_answers_match(simd_or_skip(state));
}

/* The batch pipelines (keys hashed BG__AHEAD ahead in steps of BG__STEP;
 * hashes in groups of BG__BATCH) have edges at every multiple of those: each
 * batch size from 0 to 80, and some odd large ones, must answer key by key
 * as the single calls do, and add exactly the same bits. */
static void batch_edges_impl(bg_variant v, bg__simd simd)
{
    static const size_t big[] = {255, 256, 257, 1000, 1031};
    bg__blocked_simd = simd;
    tu_batch keys;
    tu_batch_init(&keys, 1100);
    for (size_t t = 0; t < 81 + sizeof big / sizeof big[0]; t++) {
        size_t count = t < 81 ? t : big[t - 81];
        tu_ctx("%s %s batch of %zu", bg_variant_name(v), simd_name[simd], count);
        bg_filter *a, *b;
        bg_filter_options o = {.variant = v, .capacity = 400, .error_rate = 0.2};
        TU_EQ_I(bg_filter_new(&a, &o), BG_OK);
        TU_EQ_I(bg_filter_new(&b, &o), BG_OK);
        tu_batch_fill(&keys, 1, 100 + t, 0, count);
        uint8_t res[1100], res_h[1100];
        int64_t added = bg_filter_add_many(a, keys.keys, keys.lens, count, res);
        int64_t single_new = 0;
        for (size_t i = 0; i < count; i++) {
            int r = bg_filter_test_and_add(b, keys.keys[i], keys.lens[i]);
            TU_EQ_I(res[i], r);
            single_new += r;
        }
        TU_EQ_I(added, single_new);
        TU_EQ_I(memcmp((const void *)a->words, (const void *)b->words, a->nwords * 8), 0);
        /* queries on fresh keys, half of them present */
        tu_batch_fill(&keys, 1, 100 + t, count / 2, count);
        bg_hash hs[1100];
        for (size_t i = 0; i < count; i++)
            bg_filter_hash(a, keys.keys[i], keys.lens[i], &hs[i]);
        int64_t present = bg_filter_contains_many(a, keys.keys, keys.lens, count, res);
        TU_EQ_I(bg_filter_contains_hashes(a, hs, count, res_h), present);
        int64_t single = 0;
        for (size_t i = 0; i < count; i++) {
            int r = bg_filter_contains(a, keys.keys[i], keys.lens[i]);
            TU_EQ_I(res[i], r);
            TU_EQ_I(res_h[i], r);
            single += r;
        }
        TU_EQ_I(present, single);
        bg_filter_free(a);
        bg_filter_free(b);
    }
    tu_batch_free(&keys);
    bg__blocked_simd = BG__SIMD_AVX512;
}

static void batch_edges(void **state)
{
    (void)state;
    batch_edges_impl(BG_VARIANT_STANDARD, BG__SIMD_NONE);
    batch_edges_impl(BG_VARIANT_BLOCKED, BG__SIMD_NONE);
}

static void batch_edges_simd(void **state)
{
    batch_edges_impl(BG_VARIANT_BLOCKED, simd_or_skip(state));
}

/* TRANSACTIONS (blocked_avx512.c): concurrent writers' batched adds in
 * hardware transactions where the CPU has RTM. The AVX-512 ops with and
 * without them differ only there, so the test compares three filters of
 * concurrent writers fed the same batches: portable, AVX-512 with
 * transactions, AVX-512 without. They must hold the same bits and give the
 * same answers, and the counters must show both paths taken: groups
 * committed in transactions, and groups that aborted and took locked ORs.
 * The aborts are made certain: the transactional filter's pages are handed
 * back to the kernel (MADV_DONTNEED; the filter is empty, so they read as
 * zeros again), and a transaction's first write to an unmapped page
 * aborts. Skipped without AVX-512 or RTM. */
static const bg__filter_ops *tx_ops_or_skip(void)
{
    bg__blocked_tx = false;
    const bg__filter_ops *plain = bg__blocked_avx512_ops();
    bg__blocked_tx = true;
    const bg__filter_ops *tx = bg__blocked_avx512_ops();
    if (plain == NULL || tx == plain) {
        print_message("    no AVX-512 or no RTM (or BLOOMGATE_NO_TSX is set)\n");
        skip();
    }
    return tx;
}

static void unmap_pages(bg_filter *f)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)f->words + page - 1) & ~(page - 1);
    uintptr_t hi = ((uintptr_t)f->words + f->nwords * 8) & ~(page - 1);
    if (hi > lo)
        TU_EQ_I(madvise((void *)lo, hi - lo, MADV_DONTNEED), 0);
}

static void tx_adds_match(void **state)
{
    (void)state;
    const bg__filter_ops *tx_ops = tx_ops_or_skip();
    for (uint32_t k = 1; k <= BG_BLOCKED_MAX_K; k++) {
        tu_ctx("k=%u", k);
        bg_filter *f[3]; /* portable, AVX-512 with transactions, without */
        bg_filter_options o = {.variant = BG_VARIANT_BLOCKED, .bits = 512 * 16384,
                               .hashes = k, .seed = 77};
        for (int i = 0; i < 3; i++) {
            bg__blocked_simd = i == 0 ? BG__SIMD_NONE : BG__SIMD_AVX512;
            bg__blocked_tx = i != 2;
            TU_EQ_I(bg_filter_new(&f[i], &o), BG_OK);
        }
        bg__blocked_simd = BG__SIMD_AVX512;
        bg__blocked_tx = true;
        TU_TRUE(f[1]->ops == tx_ops && f[2]->ops != tx_ops && f[0]->ops != tx_ops);
        unmap_pages(f[1]);
        tu_batch keys;
        tu_batch_init(&keys, 1000);
        for (uint64_t at = 0; at < 30000; at += 1000) {
            /* random lengths 0..256 (every hashing path), and every 7th
             * batch again, so that some adds find all their bits set */
            uint64_t first = at % 7000 == 0 && at > 0 ? at - 1000 : at;
            tu_batch_fill(&keys, 1, 200 + k, first, 1000);
            uint8_t res[3][1000];
            int64_t added[3];
            for (int i = 0; i < 3; i++)
                added[i] = bg_filter_add_many(f[i], keys.keys, keys.lens, 1000, res[i]);
            TU_EQ_I(added[1], added[0]);
            TU_EQ_I(added[2], added[0]);
            TU_EQ_I(memcmp(res[1], res[0], 1000), 0);
            TU_EQ_I(memcmp(res[2], res[0], 1000), 0);
        }
        for (int i = 1; i < 3; i++)
            TU_EQ_I(memcmp((const void *)f[i]->words, (const void *)f[0]->words,
                           f[0]->nwords * 8), 0);
        TU_EQ_U(bg_filter_items(f[1]), bg_filter_items(f[0]));
        TU_TRUE(atomic_load(&bg__filter_tail_of(f[1])->tx_commits) > 0);
        TU_TRUE(atomic_load(&bg__filter_tail_of(f[1])->tx_aborts) > 0);
        TU_TRUE(bg__filter_tail_of(f[2]) == NULL);
        tu_batch_free(&keys);
        for (int i = 0; i < 3; i++)
            bg_filter_free(f[i]);
    }
}

/* Threads adding disjoint keys at once through transactions, on a filter
 * small enough (16 KiB, 256 lines) that their groups of eight lines collide
 * and abort often: no bit may be lost, so the filter must end up exactly
 * as one thread adding every key makes it. */
#define TX_THREADS 4
#define TX_KEYS 20000 /* per thread */

typedef struct tx_thread {
    bg_filter *f;
    uint64_t set;
    pthread_barrier_t *start;
    int64_t errors;
} tx_thread;

static void *tx_thread_main(void *arg)
{
    tx_thread *t = arg;
    tu_batch keys;
    tu_batch_init(&keys, 100);
    pthread_barrier_wait(t->start);
    for (uint64_t at = 0; at < TX_KEYS; at += 100) {
        tu_batch_fill(&keys, 0, t->set, at, 100);
        t->errors += bg_filter_add_many(t->f, keys.keys, keys.lens, 100, NULL) < 0;
    }
    tu_batch_free(&keys);
    return NULL;
}

static void tx_threads_lose_nothing(void **state)
{
    (void)state;
    tx_ops_or_skip();
    bg_filter_options o = {.variant = BG_VARIANT_BLOCKED, .bits = 512 * 256, .hashes = 2};
    uint64_t commits = 0, aborts = 0;
    for (int round = 0; round < 5; round++) {
        tu_ctx("round %d", round);
        bg_filter *f, *ref;
        bg__blocked_simd = BG__SIMD_NONE;
        TU_EQ_I(bg_filter_new(&ref, &o), BG_OK);
        bg__blocked_simd = BG__SIMD_AVX512;
        TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
        pthread_barrier_t start;
        TU_EQ_I(pthread_barrier_init(&start, NULL, TX_THREADS), 0);
        tx_thread t[TX_THREADS];
        pthread_t th[TX_THREADS];
        for (int i = 0; i < TX_THREADS; i++) {
            t[i] = (tx_thread){.f = f, .set = 300 + (uint64_t)i, .start = &start};
            TU_EQ_I(pthread_create(&th[i], NULL, tx_thread_main, &t[i]), 0);
        }
        for (int i = 0; i < TX_THREADS; i++)
            TU_EQ_I(pthread_join(th[i], NULL), 0);
        pthread_barrier_destroy(&start);
        for (int i = 0; i < TX_THREADS; i++)
            TU_EQ_I(t[i].errors, 0);
        /* the reference: the same keys, one thread, portable code */
        tu_batch keys;
        tu_batch_init(&keys, 100);
        for (int i = 0; i < TX_THREADS; i++)
            for (uint64_t at = 0; at < TX_KEYS; at += 100) {
                tu_batch_fill(&keys, 0, 300 + (uint64_t)i, at, 100);
                TU_TRUE(bg_filter_add_many(ref, keys.keys, keys.lens, 100, NULL) >= 0);
            }
        tu_batch_free(&keys);
        TU_EQ_I(memcmp((const void *)f->words, (const void *)ref->words, f->nwords * 8), 0);
        commits += atomic_load(&bg__filter_tail_of(f)->tx_commits);
        aborts += atomic_load(&bg__filter_tail_of(f)->tx_aborts);
        bg_filter_free(f);
        bg_filter_free(ref);
    }
    print_message("    %" PRIu64 " groups committed in transactions, %" PRIu64 " aborted\n",
                  commits, aborts);
    TU_TRUE(commits > 0);
}

/* POSITIONS PAST 2^32
 * Where 32-bit indexes, hashes or products break a filter (every position
 * folded into the first 2^32, rates many times p past ~1e8 keys), small
 * arrays cannot tell: these tests use arrays of more than 2^32 positions
 * (2^33 bits; 1.25 x 2^32 counters; 2^32 - 3 blocks, the most the AVX2 batch
 * code reduces in vector lanes, and 1.5 x 2^32 blocks, 384 GiB, which it
 * reduces one lane at a time). The allocator hooks map such an array with
 * MAP_NORESERVE, and transparent huge pages are off for the test, so only
 * the 4 KiB pages the keys touch take memory (under 100 MB). The model is
 * sparse: the sorted list of the positions the formulas above give.
 * Checked: each position holds what the model says (a counter, the number
 * of probes that hit it, up to BG_COUNTER_MAX); every touched page holds
 * nothing else; the position a 32-bit truncation would pick is clear; the
 * share of positions past 2^32 is what a uniform spread gives; the whole
 * array holds nothing else (bg_filter_stats_get's count, standard and
 * counting, once each: 1 and 2.5 GiB of reads); added keys are found by
 * single and batch queries, and absent keys answer as the model does.
 * Skipped where the kernel refuses the mapping (vm.overcommit_memory = 2,
 * a ulimit) or cannot turn huge pages off (each touched page would take
 * 2 MiB). */
#define BIG_ARRAY ((size_t)1 << 30) /* mapped sparse from this size up */
static struct {
    void *addr;
    size_t len;
} big_map;

static void *big_malloc(size_t size)
{
    return malloc(size);
}

static void *big_calloc(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size)
        return NULL;
    if (count * size < BIG_ARRAY)
        return calloc(count, size);
    if (big_map.addr != NULL)
        return NULL; /* one at a time */
    void *p = mmap(NULL, count * size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    big_map.addr = p;
    big_map.len = count * size;
    return p;
}

static void *big_realloc(void *ptr, size_t size)
{
    return ptr != NULL && ptr == big_map.addr ? NULL : realloc(ptr, size);
}

static void big_free(void *ptr)
{
    if (ptr != NULL && ptr == big_map.addr) {
        munmap(ptr, big_map.len);
        big_map.addr = NULL;
        return;
    }
    free(ptr);
}

static const bg_allocator big_allocator = {big_malloc, big_calloc, big_realloc, big_free};

#define BIG_KEYS 2000u   /* added: half one by one, half in one batch */
#define BIG_ABSENT 2000u /* queried, never added */
#define TWO_32 (UINT64_C(1) << 32)

/* Cell i of f's array: bit i, or counter i (payload byte i / 2, the high
 * nibble for even i: filter.h COUNTING). */
static unsigned cell(const bg_filter *f, uint64_t i)
{
    if (f->ops->variant != BG_VARIANT_COUNTING)
        return (unsigned)payload_bit(f, i);
    unsigned byte = ((const unsigned char *)f->words)[i / 2];
    return i % 2 ? byte & 15u : byte >> 4;
}

/* Cells in a 4 KiB page. */
static uint64_t page_cells(const bg_filter *f)
{
    return f->ops->variant == BG_VARIANT_COUNTING ? 8192 : 32768;
}

/* The non-zero cells of page `page` of f's array (a byte at a time, not
 * cell(): thousands of pages are counted). */
static uint64_t page_nonzero(const bg_filter *f, uint64_t page)
{
    const unsigned char *b = (const unsigned char *)f->words + page * 4096;
    uint64_t bytes = f->nwords * 8 - page * 4096, n = 0;
    for (uint64_t i = 0; i < 4096 && i < bytes; i++)
        n += f->ops->variant == BG_VARIANT_COUNTING
                 ? (uint64_t)((b[i] >> 4) != 0) + (uint64_t)((b[i] & 15) != 0)
                 : (uint64_t)__builtin_popcount(b[i]);
    return n;
}

/* Key h's k positions: <bloomgate/layout.h>, or the blocked formulas of
 * <bloomgate/filter.h>. */
static void positions_of(const bg_filter *f, bg_hash h, uint64_t *out)
{
    uint64_t m = f->m; /* bits or counters */
    if (f->ops->variant == BG_VARIANT_BLOCKED) {
        uint64_t block = bg_layout_reduce(h.h1, m / 512), start = h.h1 & 7;
        for (uint32_t j = 0; j < f->k; j++)
            out[j] = block * 512 + ((start + j) % 8) * 64 + ((h.h2 * salt[j]) >> 58);
        return;
    }
    TU_EQ_I(bg_layout_positions(h, m, f->k, out), BG_OK);
}

/* Where a 32-bit index would have put position p: the block number cut to
 * 32 bits (blocked), or p itself (the others). */
static uint64_t truncated(const bg_filter *f, uint64_t p)
{
    if (f->ops->variant == BG_VARIANT_BLOCKED)
        return (p / 512 % TWO_32) * 512 + p % 512;
    return p % TWO_32;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* How many times p is in the sorted model. */
static uint64_t hits_of(const uint64_t *model, size_t n, uint64_t p)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (model[mid] < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint64_t c = 0;
    while (lo + c < n && model[lo + c] == p)
        c++;
    return c;
}

/* Checks one filter; false if its array could not be mapped. */
static bool check_past_32_bits(const bg_filter_options *o, bool scan_all)
{
    bg_filter *f = NULL;
    int rc = bg_filter_new(&f, o);
    if (rc == BG_ENOMEM)
        return false;
    TU_EQ_I(rc, BG_OK);
    uint32_t k = f->k;
    size_t npos = (size_t)BIG_KEYS * k;
    uint64_t *model = malloc(npos * sizeof *model);
    assert_non_null(model);
    tu_batch keys;
    tu_batch_init(&keys, BIG_KEYS);
    tu_batch_fill(&keys, 0, 61, 0, BIG_KEYS);
    for (size_t i = 0; i < BIG_KEYS; i++) {
        bg_hash h;
        TU_EQ_I(bg_filter_hash(f, keys.keys[i], keys.lens[i], &h), BG_OK);
        positions_of(f, h, model + i * k);
    }
    for (size_t i = 0; i < BIG_KEYS / 2; i++)
        TU_EQ_I(bg_filter_add(f, keys.keys[i], keys.lens[i]), BG_OK);
    /* every key is new: that the others took all k of a key's positions
     * (among over 2^32) is vanishingly unlikely */
    TU_EQ_I(bg_filter_add_many(f, keys.keys + BIG_KEYS / 2, keys.lens + BIG_KEYS / 2,
                               BIG_KEYS / 2, NULL),
            BIG_KEYS / 2);
    qsort(model, npos, sizeof *model, cmp_u64);

    /* Each distinct position holds the model's value; the positions past
     * 2^32 (blocked: in blocks past 2^32) are their uniform share. */
    uint64_t distinct = 0, past = 0;
    uint64_t unit = f->ops->variant == BG_VARIANT_BLOCKED ? 512 : 1;
    for (size_t i = 0; i < npos; i++) {
        past += model[i] / unit >= TWO_32;
        if (i > 0 && model[i] == model[i - 1])
            continue;
        distinct++;
        uint64_t c = hits_of(model, npos, model[i]);
        unsigned want = f->ops->variant == BG_VARIANT_COUNTING
                            ? (unsigned)(c < BG_COUNTER_MAX ? c : BG_COUNTER_MAX)
                            : 1u;
        TU_EQ_U(cell(f, model[i]), want);
        uint64_t t = truncated(f, model[i]);
        if (hits_of(model, npos, t) == 0)
            TU_EQ_U(cell(f, t), 0);
    }
    uint64_t units = f->m / unit;
    double share = units > TWO_32 ? (double)(units - TWO_32) / (double)units : 0.0;
    double sd = sqrt(share * (1 - share) / (double)npos);
    TU_IN_RANGE_D((double)past / (double)npos, share - 5 * sd - 1e-9, share + 5 * sd + 1e-9);

    /* Each page a position is in holds nothing but the model's cells. */
    uint64_t per_page = page_cells(f);
    for (size_t i = 0; i < npos;) {
        uint64_t page = model[i] / per_page, in_model = 0;
        for (; i < npos && model[i] / per_page == page; i++)
            in_model += i == 0 || model[i] != model[i - 1];
        TU_EQ_U(page_nonzero(f, page), in_model);
    }
    /* ... and so does the whole array, where reading it is affordable. */
    if (scan_all) {
        bg_filter_stats st;
        TU_EQ_I(bg_filter_stats_get(f, &st), BG_OK);
        TU_EQ_U(st.bits_set, distinct);
    }

    /* Queries: the added keys by both paths, then absent keys as modelled. */
    uint8_t *res = malloc(BIG_KEYS);
    assert_non_null(res);
    TU_EQ_I(bg_filter_contains_many(f, keys.keys, keys.lens, BIG_KEYS, res), BIG_KEYS);
    for (size_t i = 0; i < BIG_KEYS; i += 97)
        TU_EQ_I(bg_filter_contains(f, keys.keys[i], keys.lens[i]), 1);
    tu_batch_fill(&keys, 0, 62, 0, BIG_ABSENT);
    int64_t want = 0;
    for (size_t i = 0; i < BIG_ABSENT; i++) {
        bg_hash h;
        uint64_t pos[BG_MAX_K];
        TU_EQ_I(bg_filter_hash(f, keys.keys[i], keys.lens[i], &h), BG_OK);
        positions_of(f, h, pos);
        int all = 1;
        for (uint32_t j = 0; j < k; j++)
            all &= hits_of(model, npos, pos[j]) > 0;
        want += all;
    }
    TU_EQ_I(bg_filter_contains_many(f, keys.keys, keys.lens, BIG_ABSENT, res), want);
    free(res);
    free(model);
    tu_batch_free(&keys);
    bg_filter_free(f);
    return true;
}

static bg_filter_options big_options(bg_variant v, uint64_t bits, uint64_t seed, int sw)
{
    return (bg_filter_options){.variant = v, .bits = bits, .hashes = 7, .seed = seed,
                               .max_bytes = UINT64_C(1) << 40,
                               .concurrency = sw ? BG_SINGLE_WRITER : BG_CONCURRENT_WRITERS};
}

static void positions_past_32_bits(void **state)
{
    (void)state;
    if (SIZE_MAX < UINT64_C(1) << 40)
        skip(); /* a 32-bit build cannot address such arrays */
    if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0) {
        print_message("    cannot turn transparent huge pages off (prctl)\n");
        skip();
    }
    TU_EQ_I(bg_set_allocator(&big_allocator), BG_OK);
    static const uint64_t nblocks[] = {TWO_32 - 3, 3 * (TWO_32 / 2) + 4099};
    bool mapped = true;
    for (int sw = 0; sw < 2 && mapped; sw++) {
        bg_filter_options o;
        tu_ctx("standard m=2^33+1237 single_writer=%d", sw);
        o = big_options(BG_VARIANT_STANDARD, (UINT64_C(1) << 33) + 1237, 3, sw);
        mapped = check_past_32_bits(&o, sw == 0);
        tu_ctx("counting m=1.25*2^32+1237 single_writer=%d", sw);
        o = big_options(BG_VARIANT_COUNTING, TWO_32 + TWO_32 / 4 + 1237, 4, sw);
        mapped = mapped && check_past_32_bits(&o, sw == 0);
        for (int simd = BG__SIMD_NONE; simd <= BG__SIMD_AVX512 && mapped; simd++) {
            if (bg__blocked_ops_at((bg__simd)simd) == NULL)
                continue;
            bg__blocked_simd = (bg__simd)simd;
            for (size_t b = 0; b < 2 && mapped; b++) {
                tu_ctx("blocked %s nblocks=%" PRIu64 " single_writer=%d", simd_name[simd],
                       nblocks[b], sw);
                o = big_options(BG_VARIANT_BLOCKED, nblocks[b] * 512, 5, sw);
                mapped = check_past_32_bits(&o, false);
            }
        }
        bg__blocked_simd = BG__SIMD_AVX512;
    }
    (void)prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
    TU_EQ_I(bg_set_allocator(NULL), BG_OK);
    if (!mapped) {
        print_message("    [%s] the kernel refused a sparse mapping of the array\n", tu_ctx_buf());
        skip();
    }
}

/* Three groups run as ctest entries of their own (tests/CMakeLists.txt):
 * `--past-32-bits` (positions_past_32_bits), `--simd avx2` and
 * `--simd avx512` (the blocked code for that instruction set). Each skips
 * where the kernel refuses its mapping or the CPU lacks the instructions,
 * and ctest's summary then lists it as skipped: inside the main entry those
 * skips would count as passes, and a CI machine without AVX-512 would show
 * that code as tested. */
int main(int argc, char **argv)
{
    static const struct CMUnitTest portable[] = {
        cmocka_unit_test(hash_is_xxh3_128),
        cmocka_unit_test(standard_positions_golden),
        cmocka_unit_test(reduce_portable_agrees),
        cmocka_unit_test(standard_positions),
        cmocka_unit_test(blocked_positions_portable),
        cmocka_unit_test(batch_edges),
    };
    static const struct CMUnitTest past_32_bits[] = {
        cmocka_unit_test(positions_past_32_bits),
    };
    static const struct CMUnitTest tx[] = {
        cmocka_unit_test(tx_adds_match),
        cmocka_unit_test(tx_threads_lose_nothing),
    };
    if (argc == 1)
        return cmocka_run_group_tests_name("layout", portable, NULL, NULL);
    if (argc == 2 && strcmp(argv[1], "--past-32-bits") == 0)
        return cmocka_run_group_tests_name("layout past 2^32", past_32_bits, NULL, NULL);
    if (argc == 2 && strcmp(argv[1], "--tx") == 0)
        return cmocka_run_group_tests_name("avx512 transactions", tx, NULL, NULL);
    for (bg__simd simd = BG__SIMD_AVX2; simd <= BG__SIMD_AVX512; simd++) {
        if (argc != 3 || strcmp(argv[1], "--simd") != 0 || strcmp(argv[2], simd_name[simd]) != 0)
            continue;
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_prestate(blocked_positions_simd, &simd),
            cmocka_unit_test_prestate(answers_match_simd, &simd),
            cmocka_unit_test_prestate(batch_edges_simd, &simd),
        };
        return cmocka_run_group_tests_name(simd_name[simd], tests, NULL, NULL);
    }
    fprintf(stderr, "usage: %s [--past-32-bits | --simd avx2|avx512 | --tx]\n", argv[0]);
    return 2;
}
