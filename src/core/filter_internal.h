/* SPDX-License-Identifier: BSD-3-Clause */
/* The filter object and the table each variant fills. Internal. */
#ifndef BG_FILTER_INTERNAL_H
#define BG_FILTER_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <bloomgate/filter.h>
#include <bloomgate/layout.h>
#include <bloomgate/sizing.h>

/* Keys per group in the batch calls. Group g + 1's lines are prefetched
 * before group g is probed, so up to 2 * BG__BATCH misses are in flight:
 * about what one core's line-fill buffers and L2 queue can track. */
#define BG__BATCH 16

/* What the accessors of <bloomgate/filter.h> report (a scalable filter's
 * totals over its layers). */
typedef struct bg__filter_sizes {
    uint64_t bits, bytes, items, capacity;
    uint32_t hashes;
} bg__filter_sizes;

/* The table each variant fills, chosen once when a filter is made (by
 * bg_filter_new, the clone, the decoders): filter.c checks a call's
 * arguments and hands it to the filter's table, never asking which variant
 * it is.
 *
 * THE FILTER: every variant fills these. The variants with an array of
 * their own share the functions of array.c (BG__ARRAY_OPS); the scalable
 * variant has its own (scalable.c), which call each layer's table directly.
 * Arguments are checked (non-NULL filter and arrays, valid keys, a writable
 * filter for the writing calls); contracts are those of the public calls.
 *
 * THE ARRAY: the cells themselves, for the variants that have them
 * (standard, blocked, counting; NULL for scalable, whose cell_bits is 0).
 * The batch loops of BG__DEFINE_GROUP_OPS inline the variant's own add and
 * contains, so a key costs no indirect call there. */
typedef struct bg__filter_ops {
    bg_variant variant;
    const char *name;
    /* Bits per cell of the array: 1 (a bit), 4 (the counting variant's
     * counters); the array holds m cells, m * cell_bits bits. 0: no array
     * of its own (scalable: its layers have them). */
    unsigned cell_bits;
    /* Filters for concurrent writers count hardware transactions in their
     * tail (LAYOUT; the AVX-512 ops with RTM). */
    bool tx_counters;

    /* ---- the filter ---- */
    /* bg_filter_new with this variant (opts non-NULL, concurrency valid). */
    int (*create)(bg_filter **out, const bg_filter_options *opts);
    int (*clone)(bg_filter **out, const bg_filter *f);
    void (*destroy)(bg_filter *f);
    /* 1 new, 0 maybe present, or a growth error (scalable); counts the
     * item. */
    int (*test_and_add)(bg_filter *f, bg_hash h);
    /* 1 if all of the key's cells are set (non-zero), else 0. */
    int (*contains)(const bg_filter *f, bg_hash h);
    /* The batch calls (add when adding, counting the items; else contains):
     * the number of 1s, or a growth error (the keys before the refused one
     * added, their results set). Write only when adding. */
    int64_t (*hashes)(bg_filter *f, const bg_hash *h, size_t count, uint8_t *results,
                      bool adding);
    int64_t (*keys)(bg_filter *f, const void *const *keys, const size_t *lens, size_t count,
                    uint8_t *results, bool adding);
    int (*clear)(bg_filter *f);
    int (*stats)(const bg_filter *f, bg_filter_stats *out);
    int (*layer_stats)(const bg_filter *f, uint32_t layer, bg_filter_stats *out);
    /* BG_EVARIANT for a filter that does not grow. */
    int (*scaling)(const bg_filter *f, bg_filter_scaling *out);
    void (*sizes)(const bg_filter *f, bg__filter_sizes *out);
    /* The key's bg_hash for this filter; NULL: XXH3-128 with the filter's
     * seed (bg__hash). A variant that hashes keys its own way (RedisBloom's
     * MurmurHash) sets it, and its batch calls over keys hash with it. */
    bg_hash (*hash)(const bg_filter *f, const void *key, size_t len);
    /* bg__filter_memory for this variant; NULL: the array's, or the
     * scalable variant's for a filter without an array of its own. */
    uint64_t (*memory)(const bg_filter *f, size_t (*size_of)(void *ptr));

    /* ---- the array ---- */
    /* Asks the CPU to start loading the lines of a group of keys. */
    void (*prefetch_group)(const bg_filter *f, const bg_hash *h, size_t n);
    /* add (adding) or contains over a group of hashes whose lines were
     * prefetched earlier; results[i] (may be NULL) gets each answer; returns
     * how many were 1. Writes only when adding; does not count items. One
     * indirect call per group, not per key. */
    int64_t (*run_group)(bg_filter *f, const bg_hash *h, size_t n, uint8_t *results,
                         bool adding);
    /* add (adding) or contains over keys, hashing each BG__AHEAD keys before
     * its probe and prefetching its line then (array.c: BATCHES). Does not
     * count items. */
    int64_t (*run_keys)(bg_filter *f, const void *const *keys, const size_t *lens, size_t count,
                        uint8_t *results, bool adding);
    /* The number of distinct keys that set `bits_set` bits on average (the
     * inverse of the expected fill; +inf when every bit is set). */
    double (*items_for_bits)(const bg_filter *f, double bits_set);
    /* Scans the array once: bits_set, estimated_items, estimated_fp_rate
     * (and saturated, for counters). */
    void (*estimate)(const bg_filter *f, bg_filter_stats *st);
    /* The current false-positive rate exactly, for the variant's own probe
     * scheme, where `estimate`'s is a model and the exact count is cheap
     * enough (standard.c EXACT RATE); NaN otherwise. NULL: none (blocked:
     * `estimate`'s rate is exact already; counting: not a scalable layer). */
    double (*exact_rate)(const bg_filter *f);
    /* Counting only (NULL otherwise): decrements the key's counters if none
     * is 0 and returns 1, else changes nothing and returns 0. */
    int (*remove)(bg_filter *f, bg_hash h);
    /* dst's cells op= src's (union if is_union, else intersection), adding
     * to *before and *after the cells of dst set (non-zero) before and after.
     * Union must be safe concurrently with adds to dst; intersection need
     * not be. NULL: bitwise or / and on the words (filter.c). */
    void (*merge)(bg_filter *dst, const bg_filter *src, bool is_union, uint64_t *before,
                  uint64_t *after);
} bg__filter_ops;

/* array.c: the filter half of the table for the variants with an array,
 * PREFIX##_test_and_add and _contains being the variant's own
 * (BG__DEFINE_HASH_GROUP_OPS defines the first). */
int bg__array_create(bg_filter **out, const bg_filter_options *opts);
int bg__array_clone(bg_filter **out, const bg_filter *f);
void bg__array_destroy(bg_filter *f);
int64_t bg__array_hashes(bg_filter *f, const bg_hash *h, size_t count, uint8_t *results,
                         bool adding);
int64_t bg__array_keys(bg_filter *f, const void *const *keys, const size_t *lens, size_t count,
                       uint8_t *results, bool adding);
int bg__array_clear(bg_filter *f);
int bg__array_stats(const bg_filter *f, bg_filter_stats *out);
int bg__array_layer_stats(const bg_filter *f, uint32_t layer, bg_filter_stats *out);
int bg__array_scaling(const bg_filter *f, bg_filter_scaling *out);
void bg__array_sizes(const bg_filter *f, bg__filter_sizes *out);

#define BG__ARRAY_OPS(PREFIX)                                                                \
    .create = bg__array_create, .clone = bg__array_clone, .destroy = bg__array_destroy,      \
    .test_and_add = PREFIX##_test_and_add, .contains = PREFIX##_contains,                    \
    .hashes = bg__array_hashes, .keys = bg__array_keys, .clear = bg__array_clear,            \
    .stats = bg__array_stats, .layer_stats = bg__array_layer_stats,                          \
    .scaling = bg__array_scaling, .sizes = bg__array_sizes,                                  \
    .prefetch_group = PREFIX##_prefetch_group, .run_group = PREFIX##_run_group

/* A copy of an array filter with its own memory (array.c, CLONE), writable,
 * with the given concurrency mode (a scalable filter's layers take the
 * stack's). */
int bg__array_clone_as(bg_filter **out, const bg_filter *f, bool single_writer);

/* LAYOUT
 * Small filters are common (a Redis server may hold one per key), so a
 * filter is one allocation, this struct with its array right behind it
 * (aligned to a cache line for the blocked variant, whose blocks are lines;
 * 8 bytes suffice for the others), and the struct holds only what every
 * filter uses. What few filters need lives in a bg__filter_tail between the
 * two, present only for them (has_tail): the transaction counters of the
 * AVX-512 ops with RTM under concurrent writers, and the file mapping a
 * read-only filter's words lie in. An array of BG__HUGE_PAGE or more is an
 * allocation of its own (words_apart), huge-page aligned with the C
 * library's allocator (alloc.c). A scalable filter's struct is followed by
 * its state instead (scalable.c, LAYOUT). */
struct bg_filter {
    const bg__filter_ops *ops;
    _Atomic uint64_t *words; /* bit i as in <bloomgate/filter.h>; NULL for scalable */
    uint64_t m;              /* bits */
    uint64_t nblocks;        /* blocked: m / 512 */
    uint64_t nwords;         /* 64-bit words in the array */
    uint64_t seed;
    uint64_t capacity;       /* n the filter was sized for, or 0 */
    _Atomic uint64_t items;
    uint32_t k;
    bool single_writer;
    bool read_only;          /* bits are a read-only file mapping (bg_filter_map) */
    bool has_tail;           /* a bg__filter_tail follows the struct */
    bool words_apart;        /* words are an allocation of their own (bg__aligned_calloc) */
};

typedef struct bg__filter_tail {
    /* Blocked, AVX-512 with RTM: groups of keys its concurrent batch adds
     * committed in hardware transactions, and attempts that aborted (their
     * groups then took locked ORs); blocked_avx512.c, TRANSACTIONS. */
    _Atomic uint64_t tx_commits, tx_aborts;
    void *mapping;           /* the file mapping `words` lie in, or NULL (borrowed) */
    size_t mapping_bytes;
} bg__filter_tail;

/* The tail of a filter that has one (has_tail), else NULL. */
static inline bg__filter_tail *bg__filter_tail_of(const bg_filter *f)
{
    return f->has_tail ? (bg__filter_tail *)(void *)((char *)(uintptr_t)f + sizeof *f) : NULL;
}

/* Bytes a filter holds from the allocator (struct, tail, array, alignment
 * slack; a scalable filter's state and layers), as requested, or as
 * size_of(ptr) reports for each allocation when size_of is not NULL. File
 * mappings are not counted. */
uint64_t bg__filter_memory(const bg_filter *f, size_t (*size_of)(void *ptr));
uint64_t bg__array_memory(const bg_filter *f, size_t (*size_of)(void *ptr));
uint64_t bg__scalable_memory(const bg_filter *f, size_t (*size_of)(void *ptr));

/* What a filter is, apart from its bits: what bg_filter_new derives from its
 * options and what a file's header records. */
typedef struct bg__filter_shape {
    bg_variant variant;
    uint64_t m;
    uint32_t k;
    uint64_t seed;
    uint64_t capacity;
    uint64_t items;
    bool single_writer;
} bg__filter_shape;

/* Checks that a shape is one this library can build (known variant; m and k
 * in range for it; m <= max_bits), so that a shape read from a file is held
 * to the same rules as one from the solver. BG_OK, BG_EVARIANT, BG_ETOOBIG
 * or BG_ECORRUPT. */
int bg__filter_shape_check(const bg__filter_shape *s, uint64_t max_bits);

/* Bytes of the array of a checked shape: 8 ceil(m cell_bits / 64). */
uint64_t bg__filter_array_bytes(const bg__filter_shape *s);

/* A new filter of a checked shape with a zeroed bit array of its own.
 * BG_OK, BG_EOVERFLOW (array beyond size_t) or BG_ENOMEM. */
int bg__filter_alloc(bg_filter **out, const bg__filter_shape *s);

/* A new read-only filter of a checked shape whose bits are `words` (64-byte
 * aligned, bg__filter_array_bytes long), inside a file mapping of
 * `mapping_bytes` at `mapping` that bg_filter_free unmaps (the filter owns it
 * from now on, even when this fails). With mapping NULL the words are
 * borrowed from a mapping someone else owns and unmaps later (a scalable
 * filter's layers). BG_OK or BG_ENOMEM. */
int bg__filter_wrap_mapping(bg_filter **out, const bg__filter_shape *s, void *words,
                            void *mapping, size_t mapping_bytes);

extern const bg__filter_ops bg__standard_ops;
extern const bg__filter_ops bg__counting_ops;
extern const bg__filter_ops bg__redisbloom_ops; /* redisbloom.c */

/* counting.c: one word of a union into a filter made for concurrent
 * writers, loaded as `loaded` before another writer may have changed *w:
 * stores the saturating sum of what *w holds and s; fix[0] and fix[1] get
 * the change in non-zero counters, before and after the union, against
 * what `loaded` gave (mod 2^64). Returns what *w holds after. */
uint64_t bg__counting_union_word(_Atomic uint64_t *w, uint64_t loaded, uint64_t s,
                                 uint64_t fix[2]);

/* The ops of a variant, or NULL (blocked: the fastest this CPU has). */
const bg__filter_ops *bg__variant_ops(bg_variant v);

/* The ops of a variant with an array of its own (standard, blocked,
 * counting), or NULL. */
const bg__filter_ops *bg__ops_for(bg_variant v);

/* The blocked variant has a portable implementation (blocked.c) and two
 * SIMD ones, AVX-512 (blocked_avx512.c) and AVX2 (blocked_avx2.c), chosen
 * at run time: bg__blocked_ops returns the fastest the CPU has, up to
 * bg__blocked_simd, which tests lower before creating a filter to compare
 * them; bg__blocked_ops_at returns exactly one (NULL: the CPU lacks it). */
typedef enum bg__simd { BG__SIMD_NONE, BG__SIMD_AVX2, BG__SIMD_AVX512 } bg__simd;
extern const bg__filter_ops bg__blocked_scalar_ops;
extern bg__simd bg__blocked_simd;
const bg__filter_ops *bg__blocked_ops(void);
const bg__filter_ops *bg__blocked_ops_at(bg__simd level);
const bg__filter_ops *bg__blocked_avx512_ops(void); /* NULL when unsupported */
/* The AVX-512 ops add concurrent writers' batches in hardware transactions
 * where the CPU has RTM (blocked_avx512.c, TRANSACTIONS), unless this is
 * false (tests lower it before creating a filter) or the environment has
 * BLOOMGATE_NO_TSX. */
extern bool bg__blocked_tx;
const bg__filter_ops *bg__blocked_avx2_ops(void);   /* NULL when unsupported */
void bg__blocked_estimate(const bg_filter *f, bg_filter_stats *st);
double bg__blocked_items_for_bits(const bg_filter *f, double bits_set);

/* The blocked layout, shared by all implementations (see blocked.c):
 * bg__blocked_salt[j] = BG__SALT_j. */
extern const uint64_t bg__blocked_salt[BG_BLOCKED_MAX_K];
/* bg__blocked_salt_rot[s][w] = bg__blocked_salt[(w - s) mod 8], 64-byte
 * aligned (blocked.c). */
extern const uint64_t bg__blocked_salt_rot[8][BG_BLOCKED_MAX_K];
#define BG__SALT_0 UINT64_C(0xb843f28d1cbe7cc1)
#define BG__SALT_1 UINT64_C(0xbf5208508c24ba89)
#define BG__SALT_2 UINT64_C(0x44191ad094bbb81f)
#define BG__SALT_3 UINT64_C(0x5380e15d575cde27)
#define BG__SALT_4 UINT64_C(0x7c1006a45673361d)
#define BG__SALT_5 UINT64_C(0x966e0f470d6583c1)
#define BG__SALT_6 UINT64_C(0x393056da196ce181)
#define BG__SALT_7 UINT64_C(0xad9afafc3a99e0e7)

/* The mask of bit b (0..63, in payload numbering: byte b / 8, mask
 * 0x80 >> (b % 8)) inside a 64-bit word loaded natively from the payload.
 * On a little-endian CPU byte j of the word holds bits 8j..8j+7, so payload
 * bit b is machine bit 8 (b / 8) + 7 - b % 8 = b ^ 7. */
static inline uint64_t bg__bit(uint64_t b)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return UINT64_C(1) << (63 - b);
#else
    return UINT64_C(1) << (b ^ 7);
#endif
}

static inline uint64_t bg__load(const _Atomic uint64_t *w)
{
    return atomic_load_explicit(w, memory_order_relaxed);
}

/* items += added, saturating at UINT64_MAX (a union with a full filter adds
 * "infinitely many"). No real count reaches 2^63, so a count in the top half
 * means "saturated". Concurrent writers take one `lock xadd`; if it finds the
 * count saturated (it may just have wrapped it), it stores UINT64_MAX back. */
static inline void bg__count_new(bg_filter *f, uint64_t added)
{
    if (added == 0)
        return;
    const uint64_t half = UINT64_C(1) << 63;
    if (f->single_writer) {
        uint64_t v = bg__load(&f->items);
        atomic_store_explicit(&f->items, v > UINT64_MAX - added ? UINT64_MAX : v + added,
                              memory_order_relaxed);
        return;
    }
    if (added < half) {
        if (atomic_fetch_add_explicit(&f->items, added, memory_order_relaxed) >= half)
            atomic_store_explicit(&f->items, UINT64_MAX, memory_order_relaxed);
        return;
    }
    uint64_t v = bg__load(&f->items), sum;
    do
        sum = v > UINT64_MAX - added ? UINT64_MAX : v + added;
    while (!atomic_compare_exchange_weak_explicit(&f->items, &v, sum, memory_order_relaxed,
                                                  memory_order_relaxed));
}

/* What the item count counts (filter.h, bg_filter_stats.items): a counting
 * filter holds a multiset (every add increments, every remove decrements
 * the key's counters), so it counts every add and uncounts every remove;
 * the other variants count the adds that found their key new. */
static inline bool bg__counts_every_add(const bg_filter *f)
{
    return f->ops->remove != NULL;
}

/* Sets `mask` in *w; returns true if some bit of it was clear when read.
 * The plain load first skips the locked instruction (~5 ns) when the bits
 * are already set, which is most of the time in a filled filter. The
 * fetch-or's result is not used, so x86 compilers emit one `lock or`
 * instead of a compare-exchange loop; "new" is judged from the load, so two
 * threads adding the same key at once may both see it as new (filter.h
 * allows exactly that). */
static inline bool bg__set_bits(const bg_filter *f, _Atomic uint64_t *w, uint64_t mask)
{
    uint64_t old = bg__load(w);
    if ((old & mask) == mask)
        return false;
    if (f->single_writer)
        atomic_store_explicit(w, old | mask, memory_order_relaxed);
    else
        (void)atomic_fetch_or_explicit(w, mask, memory_order_relaxed);
    return true;
}

/* Into L2, not L1 (prefetcht1): a batch keeps ~30 misses in flight, more
 * than L1's ~16 line-fill buffers can track but within L2's ~48, and the L2
 * hit that follows costs little (docs/PERFORMANCE.md). */
static inline void bg__prefetch(const void *p)
{
#if defined(__GNUC__)
    __builtin_prefetch(p, 0, 1);
#else
    (void)p;
#endif
}

static inline _Atomic uint64_t *bg__block_of(const bg_filter *f, uint64_t h1)
{
    return f->words + (bg_layout_reduce(h1, f->nblocks) << 3);
}

/* The word of the block where the key's probes start. */
static inline unsigned bg__block_start(uint64_t h1)
{
    return (unsigned)(h1 & 7);
}

/* Probe j's bit (in payload numbering, 0..63) inside its word, as a mask. */
static inline uint64_t bg__probe_mask(uint64_t h2, uint32_t j)
{
    return bg__bit((h2 * bg__blocked_salt[j]) >> 58);
}

/* The batch calls over keys hash and prefetch BG__STEP keys at a time (a
 * tight loop, so independent hashes overlap in the CPU) and probe the keys
 * hashed BG__AHEAD earlier: a miss (~170 ns here) then completes while the
 * keys in between are hashed and probed (~8 ns each). */
#define BG__STEP 8
#define BG__AHEAD 32 /* a multiple of BG__STEP */

/* Defines PREFIX##_test_and_add, _prefetch_group, _run_group and _run_keys
 * from the variant's PREFIX##_add, PREFIX##_contains and PREFIX##_prefetch,
 * which the compiler inlines into them: a single add costs one indirect call
 * (ops->test_and_add), a batch one per group. ATTR is a function attribute
 * (a SIMD target) or nothing. */
#define BG__DEFINE_GROUP_OPS(PREFIX, ATTR)                                                   \
    BG__DEFINE_HASH_GROUP_OPS(PREFIX, ATTR)                                                  \
    BG__DEFINE_RUN_KEYS(PREFIX, ATTR)

/* The two halves of BG__DEFINE_GROUP_OPS: _test_and_add, _prefetch_group
 * and _run_group, then _run_keys (a variant with its own run_keys uses the
 * first only). */
#define BG__DEFINE_HASH_GROUP_OPS(PREFIX, ATTR)                                              \
    ATTR static int PREFIX##_test_and_add(bg_filter *f, bg_hash h)                           \
    {                                                                                        \
        int added = PREFIX##_add(f, h);                                                      \
        bg__count_new(f, bg__counts_every_add(f) ? 1 : (uint64_t)added);                     \
        return added;                                                                        \
    }                                                                                        \
    static void PREFIX##_prefetch_group(const bg_filter *f, const bg_hash *h, size_t n)      \
    {                                                                                        \
        for (size_t i = 0; i < n; i++)                                                       \
            PREFIX##_prefetch(f, h[i]);                                                      \
    }                                                                                        \
    ATTR static int64_t PREFIX##_run_group(bg_filter *f, const bg_hash *h, size_t n,         \
                                           uint8_t *results, bool adding)                    \
    {                                                                                        \
        int64_t hits = 0;                                                                    \
        for (size_t i = 0; i < n; i++) {                                                     \
            int r = adding ? PREFIX##_add(f, h[i]) : PREFIX##_contains(f, h[i]);             \
            if (results)                                                                     \
                results[i] = (uint8_t)r;                                                     \
            hits += r;                                                                       \
        }                                                                                    \
        return hits;                                                                         \
    }

#define BG__DEFINE_RUN_KEYS(PREFIX, ATTR)                                                    \
    ATTR static int64_t PREFIX##_run_keys(bg_filter *f, const void *const *keys,             \
                                          const size_t *lens, size_t count, uint8_t *results,\
                                          bool adding)                                       \
    {                                                                                        \
        bg_hash ring[BG__AHEAD];                                                             \
        int64_t hits = 0;                                                                    \
        /* Each step probes keys [at - AHEAD, +STEP), hashed AHEAD keys    */           \
        /* earlier, then reuses their ring slots for keys [at, at + STEP). */           \
        for (size_t at = 0; at < count + BG__AHEAD; at += BG__STEP) {                        \
            size_t first = at - BG__AHEAD; /* wraps while at < AHEAD: then skipped */        \
            for (size_t i = first; at >= BG__AHEAD && i < first + BG__STEP && i < count; i++) { \
                int r = adding ? PREFIX##_add(f, ring[i % BG__AHEAD])                        \
                               : PREFIX##_contains(f, ring[i % BG__AHEAD]);                  \
                if (results)                                                                 \
                    results[i] = (uint8_t)r;                                                 \
                hits += r;                                                                   \
            }                                                                                \
            for (size_t i = at; i < at + BG__STEP && i < count; i++) {                       \
                ring[i % BG__AHEAD] = bg__hash(keys[i], lens[i], f->seed);                   \
                PREFIX##_prefetch(f, ring[i % BG__AHEAD]);                                   \
            }                                                                                \
        }                                                                                    \
        return hits;                                                                         \
    }

/* Popcount of words [from, to). */
uint64_t bg__popcount(const _Atomic uint64_t *words, uint64_t from, uint64_t to);

#endif
