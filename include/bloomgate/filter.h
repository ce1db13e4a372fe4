/* SPDX-License-Identifier: BSD-3-Clause */
/* In-memory Bloom filters.
 *
 * A filter answers "maybe present" or "definitely absent" for byte-string
 * keys. It never gives a false negative: a key that was added is always
 * reported present (after add, union, and under concurrent use as described
 * under THREADS). Absent keys are reported present with probability about p,
 * the rate asked for at creation (see <bloomgate/sizing.h> for the math).
 *
 *   bg_filter *f;
 *   bg_filter_options o = { .capacity = 1000000, .error_rate = 0.01 };
 *   if (bg_filter_new(&f, &o) != BG_OK) ...
 *   bg_filter_add(f, "alice", 5);
 *   if (bg_filter_contains(f, "bob", 3) == 0) ... definitely absent
 *   bg_filter_free(f);
 *
 * BIT LAYOUT
 * Bit i of the filter is bit (0x80 >> (i % 8)) of byte i / 8 of its bit
 * array (the payload of a filter file): Redis's SETBIT order, so the array
 * can live in a file or a Redis string unchanged. Probe positions:
 *   standard (and counting): <bloomgate/layout.h> defines them and computes
 *     them: a = (h1 * m) >> 64, b = ((h2 * (m - 1)) >> 64) + 1, and probe j
 *     is x_j, where x_0 = a, x_{j+1} = (x_j + y_j) mod m, y_0 = b,
 *     y_{j+1} = (y_j + j) mod m (enhanced double hashing, Dillinger &
 *     Manolios 2004), all in uint64_t; b is never 0.
 *   blocked: block = (h1 * nblocks) >> 64 (nblocks = m / 512), s = h1 & 7,
 *     and probe j (k <= 8) is bit (h2 * SALT[j]) >> 58 of word (s + j) % 8 of
 *     that block, i.e. filter bit 512 block + 64 ((s + j) % 8) + that
 *     (SALT: 8 fixed odd 64-bit constants, src/core/blocked.c).
 *
 * THREADS
 * With BG_CONCURRENT_WRITERS (the default), any number of threads may call
 * bg_filter_add*, bg_filter_test_and_add, bg_filter_contains* and
 * bg_filter_union (as destination) on one filter at once: bits are set with
 * atomic fetch-or and read with atomic loads (C11 <stdatomic.h>, relaxed
 * order), so no add is ever lost. (On x86-64 CPUs with AVX-512 and Intel
 * TSX, the blocked variant's bg_filter_add_many sets each group of eight
 * keys' bits in one hardware transaction instead, which the CPU aborts and
 * the library redoes with fetch-or if another thread touched the same
 * lines: the same guarantee, at about single-writer speed. The environment
 * variable BLOOMGATE_NO_TSX, set when a filter is created or loaded, turns
 * that off for the filter.) A contains that runs concurrently with the
 * add of the same key may answer either way; one that happens after it (a
 * join, a mutex, any release/acquire pair) answers "maybe present".
 * With BG_SINGLE_WRITER, at most one thread adds at a time (the caller
 * serializes adds) while any number of threads query: bits are written with
 * plain stores, no locked instruction (cheaper for the blocked variant
 * above all; the standard one is bound by cache misses either way:
 * docs/PERFORMANCE.md), and readers still never miss a finished add;
 * bg_filter_union into such a filter counts as its writer.
 * bg_filter_stats_get and the accessors may run during adds (they see some
 * state between the one before and the one after; the item count is exact
 * only without unions, which count by estimate). bg_filter_clear,
 * bg_filter_intersect and bg_filter_free must not run concurrently with
 * anything else on the same filter. Scalable filters: see SCALABLE.
 * Counting filters: bg_filter_remove* joins the writing calls. With
 * BG_CONCURRENT_WRITERS every counter update is a compare-and-swap on its
 * 64-bit word, so concurrent adds, removes, unions (as destination) and
 * queries never lose an increment or a decrement; with BG_SINGLE_WRITER a
 * remove is a write like an add (one writing thread at a time). A remove
 * checks that its k counters are non-zero, then decrements them one by
 * one: the two steps together are not atomic. When every remove undoes an
 * add of the same key that happened before it (program order, a join, any
 * release/acquire pair), then however the calls interleave:
 *   - such a remove never returns BG_EABSENT;
 *   - a key with more finished adds than removes is always found, also
 *     while keys sharing its counters are added and removed;
 *   - once the calls are done, the counters are those of the same calls
 *     made one after the other, in any order, as long as no counter
 *     reached BG_COUNTER_MAX;
 *   - a query racing with an add or a remove of its own key may answer
 *     either way.
 * A remove that undoes no finished add (a key never added, one remove more
 * than adds, a remove racing with the add it means to undo) is the caller's
 * error, as without threads. Two removes racing for the last copy of a key
 * may both succeed (at least one does), and the second then takes counts
 * other keys rely on. No counter ever goes below 0: a decrement that finds
 * 0 leaves it there.
 *
 * COUNTING (BG_VARIANT_COUNTING)
 * A standard filter whose m cells are 4-bit counters instead of bits, so
 * that keys can be removed (bg_filter_remove), for 4x the memory. Counter i
 * is the high nibble (bits 7..4) of payload byte i / 2 when i is even, the
 * low nibble when odd. An add increments the key's k counters, a remove
 * decrements them. A counter saturates at BG_COUNTER_MAX and is then never
 * decremented again (its true count is unknown, so lowering it could hide
 * another key). Remove only keys that were added: removing a key that was
 * never added (a false positive) lowers counters other keys rely on, and
 * can make them vanish; every counting Bloom filter has this limit.
 * The counters sit exactly where a standard filter of the same m, k and
 * seed has its bits, so sizing, the false-positive rate and the estimates
 * are the standard variant's. With the optimal k, some counter reaches 16
 * with probability below 1.37e-15 m (Fan et al., "Summary Cache", 2000; the
 * derivation is in src/core/counting.c), for distinct keys up to capacity:
 * adding one key j times adds j to its counters, so 15 adds of one key
 * saturate them. A key whose probes meet one counter twice counts twice
 * there, in adds and removes alike. bg_filter_test_and_add reports a key
 * new when one of its counters was 0. The item count is of the multiset the
 * counters hold: every add counts (a repeated key too) and every remove
 * uncounts, so adding a key twice and removing it once leaves it counted
 * once, and present. In bg_filter_stats, bits_set is the
 * number of non-zero counters and saturated the number at BG_COUNTER_MAX.
 * bg_filter_union adds counters (saturating), bg_filter_intersect takes
 * their minimum; bg_filter_union(f, f) changes nothing. Threads: THREADS.
 *
 * SCALABLE (BG_VARIANT_SCALABLE)
 * A stack of layers (standard or blocked filters, one seed, so a key is
 * hashed once) that grows: when the newest layer holds its capacity, a new
 * layer is added with capacity x expansion and error rate x tightening.
 * These are RedisBloom's BF.RESERVE/BF.ADD semantics (EXPANSION,
 * NONSCALING; tightening 0.5). bg_filter_union, bg_filter_intersect and
 * bg_filter_remove do not apply (BG_EVARIANT).
 *
 * The schedule. Layer i gets the error rate
 *   p_0 = p s,   p_i = p (1 - s) (1 - t) t^(i-1)  (i >= 1),
 * s the first layer's share (opts.first_share) and t the tightening, so
 * the layers' rates sum to p s + p (1 - s) (1 - t^(L-1)) < p however many
 * (L) layers are added. The default s = 1 - t makes it p (1 - t) t^i, the
 * series of Almeida et al. ("Scalable Bloom Filters", 2007), RedisBloom's
 * at t = 0.5 (p/2, p/4, ...). A deep stack pays for a fast-falling series
 * twice: at t = 0.5 layer 13 is sized for p x 6e-5, costing ~30 bits per
 * item and, standard, ~2 cache misses per absent key; s = 0.5 with t = 0.9
 * keeps the first layer at RedisBloom's p / 2 (a small filter is
 * unchanged) and spreads the other half slowly, so layer 13 still gets
 * p x 0.014 (~19 bits per item), and the stack's compound rate is the same
 * bound p.
 *
 * Mixed stacks. With standard layers, opts.blocked_from = b > 0 makes
 * layers b, b + 1, ... blocked: the small early layers, which sit in the
 * CPU's caches, stay standard (fewest bits), and the large late ones cost
 * one cache line per query instead of up to k.
 *
 * The bound. That sum bounds the expected rates; one layer's actual
 * rate scatters around its target (relative sd ~0.55 k / sqrt(bits) for a
 * standard layer, about twice that for a blocked one). The bound is kept
 * for each filter, not only on average:
 *   - each scaling layer is sized for its rate divided by (1 + 3 sd), and
 *     has at least 1024 bits;
 *   - when a layer is retired its rate r_j is computed from its bits
 *     (exactly for standard layers of up to 4096 bits), and layer i gets
 *     p_i' = min(p_i, sum_{j <= i} p_j - sum_{j < i} r_j), at least p_i / 8;
 * so the retired layers' rates sum to at most sum_{j < i} p_j, the newest
 * layer keeps the later layers' rates, sum_{j > i} p_j, of slack for its
 * own scatter, and the
 * compound rate 1 - prod_i (1 - r_i) stays below p unless a layer lands
 * beyond 3 sd of its target (about 1 layer in 1000, were the scatter
 * Gaussian; src/core/scalable.c THE BUDGET, MARGINS). The margins cost
 * memory mostly at small capacities: at p = 0.01 a standard first layer
 * has 6% more bits than a plain filter at its rate at capacity 100,
 * 2.2% at 1000, 0.7% at 10^4, 0.2% at 10^5 (blocked: 0-4%, 1.3%, 0.4%),
 * and at capacity 10 the 1024-bit minimum; layer capacities, and so layer
 * counts, follow the rule above.
 *
 * Adds. A key is added to the newest layer only if no layer has it, so
 * repeats do not use capacity; test-and-add returns 0 for a key some layer
 * has, even when the filter could not grow. Non-scaling (opts.nonscaling):
 * one layer at p (not tightened), and adding a new key to it when full
 * returns BG_EFULL; it takes no expansion (BG_EINVAL; bg_filter_scaling
 * reports 0). Growth stops with BG_ELAYERS at max_layers, and also at a
 * blocked layer whose rate would fall below BG_BLOCKED_MIN_P (layer 33 at
 * p = 0.01, tightening 0.5: use standard layers to go further), and with
 * BG_ETOOBIG when the next layer would not fit in max_bytes (all layers'
 * bytes together) or its capacity overflows 64 bits. A refused add changes
 * nothing; a batch stops at the key that was refused, the keys before it
 * added. Refusals other than BG_ENOMEM last until bg_filter_clear, which
 * goes back to one empty layer. Unlike other filters, an add may allocate:
 * the add that opens a layer allocates it (BG_ENOMEM: nothing added).
 *
 * Threads. Queries never lock or wait and always see a complete list of
 * complete layers; adds are lock-free except the one that opens a layer,
 * which takes a mutex (others keep adding to the full layer meanwhile, so a
 * layer may hold up to one key per concurrent adder more than its
 * capacity). bg_filter_clear and bg_filter_free are not concurrent-safe, as
 * for every filter.
 *
 * MEMORY
 * bg_filter_new and bg_filter_clone allocate (through <bloomgate/alloc.h>);
 * bg_filter_free releases. No other call here allocates, except an add to
 * a scalable filter that opens a new layer (and the file calls of
 * <bloomgate/file.h>). Keys are borrowed for the call only; the filter
 * keeps no pointer to them. Strings returned by bg_variant_name are static.
 *
 * COST
 * No call here does I/O. Hashing a key is O(len). An add, contains or
 * test_and_add is O(k): a standard (or counting) filter touches up to k
 * cache lines (a query of an absent key stops at its first clear bit,
 * about 2 probes at the optimal k), a blocked filter exactly one. A
 * scalable filter probes its layers newest first, so up to `layers` times
 * that. The batch calls cost the same per key but overlap the cache misses
 * of many keys (bg_filter_add_many). bg_filter_union, bg_filter_intersect,
 * bg_filter_clear and bg_filter_stats_get are O(m) passes over the array;
 * bg_filter_clone is an allocation and an O(m) copy; the accessors are
 * O(1). */
#ifndef BLOOMGATE_FILTER_H
#define BLOOMGATE_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bloomgate/api.h>
#include <bloomgate/error.h>
#include <bloomgate/hash.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bg_filter bg_filter;

/* Filter variants. Values are stable: they are written to files. */
typedef enum bg_variant {
    BG_VARIANT_STANDARD = 1, /* k probes over the whole array: least space */
    BG_VARIANT_BLOCKED  = 2, /* k probes in one 64-byte cache line: one miss per op */
    BG_VARIANT_COUNTING = 3, /* standard, with 4-bit counters: keys can be removed */
    BG_VARIANT_SCALABLE = 4, /* a stack of standard or blocked layers that grows */
    BG_VARIANT_REDISBLOOM = 5, /* RedisBloom's chain of links, bit for bit (<bloomgate/redisbloom.h>) */
} bg_variant;

/* The variant chosen when none is given: blocked. An operation costs one
 * cache miss instead of up to k (docs/PERFORMANCE.md), for 1% to 10% more
 * bits at p from 0.1 to 0.001; below that its overhead grows (23% at 1e-4:
 * docs/SIZING.md), and the standard variant is the better choice. */
#define BG_VARIANT_DEFAULT BG_VARIANT_BLOCKED

/* Most probes per key. p = 2^-32 needs k = 32; a smaller p still sizes (m
 * grows to reach it with k = BG_MAX_K), only less space-efficiently. */
#define BG_MAX_K 32u

/* Most probes per key of the blocked variant: one per 64-bit word of its
 * 512-bit block. The best k reaches it at p ~ 3e-3; below, m grows to reach
 * p with k = 8 (9% more bits than standard at 1e-3, 23% at 1e-4). */
#define BG_BLOCKED_MAX_K 8u

/* Smallest p the blocked variant is sized for: below it the model cannot be
 * evaluated precisely enough to promise p (src/core/sizing.c), and the
 * blocked variant would need 16x the standard variant's bits anyway. */
#define BG_BLOCKED_MIN_P 1e-12

/* Fewest bits in a filter: one 64-bit word (standard), one block (blocked). */
#define BG_MIN_BITS 64u

/* Bits in a block of the blocked variant: one 64-byte cache line. */
#define BG_BLOCK_BITS 512u

/* Default cap on a filter's bit array: 64 GiB (2^39 bits), enough for about
 * 5.5e10 keys at p = 0.01. Callers may lower or raise it, up to BG_MAX_BITS. */
#define BG_DEFAULT_MAX_BYTES (UINT64_C(1) << 36)

/* Hard ceiling on m: 2^63 bits (2^60 bytes), so that the index arithmetic
 * (a + b < 2m) can never wrap. */
#define BG_MAX_BITS (UINT64_C(1) << 63)

typedef enum bg_concurrency {
    BG_CONCURRENT_WRITERS = 0, /* default: adds from many threads at once */
    BG_SINGLE_WRITER = 1,      /* one adding thread at a time, many readers */
} bg_concurrency;

/* How to build a filter. Zero means "default" or "derive": give any two of
 * capacity (n), error_rate (p), bits (m) and hashes (k), as for
 * bg_sizing_solve. Initialise with designated initialisers so that fields
 * added later default to zero. */
typedef struct bg_filter_options {
    bg_variant variant;         /* 0: BG_VARIANT_DEFAULT */
    uint64_t capacity;          /* n: expected distinct keys */
    double error_rate;          /* p: wanted false-positive rate at n keys */
    uint64_t bits;              /* m: explicit size in bits */
    uint32_t hashes;            /* k: explicit probes per key */
    uint64_t seed;              /* hash seed; part of the filter's identity */
    uint64_t max_bytes;         /* cap on the bit array (scalable: on all layers
                                   together); 0: BG_DEFAULT_MAX_BYTES */
    bg_concurrency concurrency; /* see THREADS above */
    /* Scalable variant only (non-zero with another variant: BG_EINVAL).
     * A scalable filter needs capacity and error_rate (its first layer's),
     * not bits or hashes. */
    bg_variant layer_variant;   /* standard or blocked; 0: BG_VARIANT_STANDARD */
    uint32_t expansion;         /* capacity growth per layer, 1..BG_MAX_EXPANSION; 0: 2 */
    double tightening;          /* error-rate factor per layer, in (0, 1); 0: 0.5 */
    uint32_t max_layers;        /* 1..BG_MAX_LAYERS; 0: BG_MAX_LAYERS */
    bool nonscaling;            /* one layer, BG_EFULL when full */
    double first_share;         /* the first layer's share of error_rate, in (0, 1);
                                   0: 1 - tightening (SCALABLE, the schedule) */
    uint32_t blocked_from;      /* standard layers only: layers from this index
                                   on (1..BG_MAX_LAYERS - 1) are blocked; 0: none */
} bg_filter_options;

/* The counting variant's counters stop at this value. */
#define BG_COUNTER_MAX 15u

/* Most layers of a scalable filter. With expansion 2, 64 layers hold 2^64
 * times the first layer's capacity: a memory cap is always reached first. */
#define BG_MAX_LAYERS 64u

/* Largest expansion (RedisBloom's bound). */
#define BG_MAX_EXPANSION 32768u

/* Creates an empty filter sized from `opts` into *out (*out is set to NULL on
 * failure). Returns BG_OK, or the bg_sizing_solve errors, BG_EINVAL (NULL
 * argument, unknown concurrency, scalable options out of range or given for
 * another variant), BG_EVARIANT (unknown variant or layer variant) or
 * BG_ENOMEM. Allocates; free with bg_filter_free. */
BG_API int bg_filter_new(bg_filter **out, const bg_filter_options *opts);

/* Copies `f` into a new filter *out (NULL on failure): the same variant,
 * parameters, concurrency mode, bits (counters) and item count, and for a
 * scalable filter its growth parameters and every layer it has when the
 * call begins; what the file image of `f` would decode to, without the
 * image. The copy owns its memory and is writable, also when `f` is a
 * mapped file (bg_filter_map). Safe while other threads add to `f` (THREADS):
 * the copy is then some state between the one before the call and the one
 * after. Returns BG_OK, BG_EINVAL (NULL) or BG_ENOMEM. Allocates; free with
 * bg_filter_free. */
BG_API int bg_filter_clone(bg_filter **out, const bg_filter *f);

/* Frees a filter. NULL is allowed. `f` is dead after the call. */
BG_API void bg_filter_free(bg_filter *f);

/* The hash of a key under this filter's seed, for the *_hash calls below and
 * for other filters with the same seed. BG_OK or BG_EINVAL. */
BG_API int bg_filter_hash(const bg_filter *f, const void *key, size_t len, bg_hash *out);

/* Adds a key. Returns BG_OK, BG_EINVAL (NULL f; NULL key with len > 0),
 * BG_EREADONLY, or a scalable filter's growth errors (as test_and_add). */
BG_API int bg_filter_add(bg_filter *f, const void *key, size_t len);

/* Adds a key and reports whether it was new: 1 if at least one of its bits
 * was clear (the key was definitely absent before), 0 if all were set (it
 * was maybe present: no bit changed; a counting filter still increments
 * the key's counters and its item count, COUNTING), or a negative status.
 * Two threads
 * adding the same new key at once may both get 1. A scalable filter that
 * needs a new layer for the key and cannot have one returns BG_EFULL
 * (non-scaling), BG_ELAYERS, BG_ETOOBIG (max_bytes) or BG_ENOMEM, and
 * nothing is added. */
BG_API int bg_filter_test_and_add(bg_filter *f, const void *key, size_t len);

/* 1 if the key may be present, 0 if it is definitely absent, or a negative
 * status (BG_EINVAL). */
BG_API int bg_filter_contains(const bg_filter *f, const void *key, size_t len);

/* The same three, on a key hashed with this filter's seed (bg_filter_hash).
 * A bg_hash made with another seed gives meaningless answers. */
BG_API int bg_filter_add_hash(bg_filter *f, bg_hash h);
BG_API int bg_filter_test_and_add_hash(bg_filter *f, bg_hash h);
BG_API int bg_filter_contains_hash(const bg_filter *f, bg_hash h);

/* Batch calls over `count` keys: keys[i] points at lens[i] bytes. They hash
 * all keys of a group, prefetch their cache lines, then probe, so that the
 * memory latency of many keys overlaps: use them whenever keys come in
 * groups. `results` (may be NULL) receives one byte per key: for add_many
 * 1 if the key was new (as bg_filter_test_and_add), for contains_many 1 if
 * it may be present. Both return the number of keys that were new /
 * maybe present (>= 0), or a negative status; on BG_EINVAL (a NULL array, or
 * a NULL key with a non-zero length) nothing was added. On a scalable
 * filter's growth error (see test_and_add) the keys before the refused one
 * were added, with their results set, and the rest were not. */
BG_API int64_t bg_filter_add_many(bg_filter *f, const void *const *keys, const size_t *lens,
                                  size_t count, uint8_t *results);
BG_API int64_t bg_filter_contains_many(const bg_filter *f, const void *const *keys,
                                       const size_t *lens, size_t count, uint8_t *results);

/* The same on hashes already computed with this filter's seed. */
BG_API int64_t bg_filter_add_hashes(bg_filter *f, const bg_hash *hashes, size_t count,
                                    uint8_t *results);
BG_API int64_t bg_filter_contains_hashes(const bg_filter *f, const bg_hash *hashes,
                                         size_t count, uint8_t *results);

/* Removes a key from a counting filter: decrements its counters (saturated
 * ones stay). Returns BG_OK, BG_EABSENT if the key is definitely absent
 * (some counter is 0: nothing is changed), BG_EVARIANT if the filter is not
 * a counting one, BG_EREADONLY, or BG_EINVAL. Remove only keys that were
 * added (COUNTING above). */
BG_API int bg_filter_remove(bg_filter *f, const void *key, size_t len);
BG_API int bg_filter_remove_hash(bg_filter *f, bg_hash h);

/* Removes `count` keys as bg_filter_remove does, one after the other;
 * results[i] (may be NULL) is 1 if key i was removed, 0 if it was definitely
 * absent. Returns the number removed, or a negative status (then nothing
 * was removed). */
BG_API int64_t bg_filter_remove_many(bg_filter *f, const void *const *keys, const size_t *lens,
                                     size_t count, uint8_t *results);

/* Empties the filter (all bits 0, item count 0; a scalable filter goes back
 * to one empty layer). Not concurrent-safe. */
BG_API int bg_filter_clear(bg_filter *f);

/* dst |= src: afterwards dst contains every key of either. dst's item count
 * grows by the number of keys src added as the fill tells it (the cardinality
 * estimate of bg_filter_stats after, minus before), so keys in both count
 * once, and adds running meanwhile still count. Counting filters: the
 * counter-wise sum, saturating at BG_COUNTER_MAX. Returns BG_OK,
 * BG_EINVAL, BG_EREADONLY (dst mapped), BG_EVARIANT (a scalable filter: its
 * layers have no common shape), or BG_EINCOMPAT unless both have the same
 * variant, m, k and seed (nothing is changed then). Safe concurrently with
 * adds to dst. */
BG_API int bg_filter_union(bg_filter *dst, const bg_filter *src);

/* dst &= src: afterwards dst contains every key present in both (and, as
 * with any Bloom intersection, somewhat more false positives than a filter
 * built from the common keys alone). Counting filters: the counter-wise
 * minimum. Its item count becomes the cardinality
 * estimate from its new fill. Same errors as
 * bg_filter_union. Not concurrent-safe. */
BG_API int bg_filter_intersect(bg_filter *dst, const bg_filter *src);

/* Everything about a filter. Filled by bg_filter_stats, which scans the bit
 * array (O(m / 64) popcounts): call it for monitoring, not per request. */
typedef struct bg_filter_stats {
    bg_variant variant;
    uint64_t bits;            /* m */
    uint32_t hashes;          /* k */
    uint64_t seed;
    uint64_t capacity;        /* n the filter was sized for (0 if sized by m, k) */
    double error_rate;        /* the model's p at capacity (0 if capacity is 0) */
    uint64_t bytes;           /* memory of the bit array */
    uint64_t items;           /* adds that set at least one new bit (test-and-add 1s);
                                 counting: every add less every remove (COUNTING) */
    uint64_t bits_set;        /* popcount of the array */
    double fill_ratio;        /* bits_set / m */
    double estimated_items;   /* cardinality from fill (Swamidass & Baldi; blocked:
                                 -(m/k) ln(1 - X/m)); +inf when full */
    double estimated_fp_rate; /* rate from the current fill: (X/m)^k; blocked:
                                 the mean over blocks and start words s of
                                 prod_j X_{(s+j)%8} / 64, X_w the bits set in
                                 word w */
    uint64_t saturated;       /* counting: counters at BG_COUNTER_MAX; else 0 */
    uint32_t layers;          /* scalable: layers now; else 1 */
} bg_filter_stats;

/* Fills *out. BG_OK or BG_EINVAL. For a counting filter "bits" are counters
 * and bits_set the non-zero ones. For a scalable filter the totals over its
 * layers: bits, bytes, items, bits_set, capacity and estimated_items are
 * sums, hashes is the newest layer's, error_rate and estimated_fp_rate are
 * 1 - prod_i (1 - p_i) over the layers. */
BG_API int bg_filter_stats_get(const bg_filter *f, bg_filter_stats *out);

/* Statistics of one layer of a scalable filter (0 is the oldest, up to
 * layers - 1); any other filter has one layer, itself. BG_OK, BG_EINVAL
 * (also for a layer that does not exist). */
BG_API int bg_filter_layer_stats(const bg_filter *f, uint32_t layer, bg_filter_stats *out);

/* One layer's array as it lies in memory: bit (or counter) i where
 * <bloomgate/layout.h> and BIT LAYOUT put it, bg_filter_layer_stats' bytes
 * long, the same bytes a file image of the filter holds for that layer.
 * Layer numbering is bg_filter_layer_stats'. These two let a caller keep a
 * small filter's bits in a form of its own (the Redis module keeps a
 * one-layer filter in one block: docs/REDIS.md) and make the library's
 * filter again when it needs one.
 *
 * bg_filter_layer_read copies the array into buf[0, len): BG_OK, or
 * BG_EINVAL (NULL filter or buf, no such layer, len not the array's bytes,
 * or a RedisBloom filter, whose links are not this library's layout). It
 * reads as bg_filter_encode does (each word some value it had during the
 * call). Allocates nothing.
 *
 * bg_filter_layer_write replaces the array with buf[0, len) and the layer's
 * item count with `items`: BG_OK, BG_EINVAL (as above), BG_EREADONLY (a
 * mapped filter) or BG_ECORRUPT (a bit or counter set past the layer's m
 * cells, which no add can set). The bits are taken as given: the caller
 * vouches that they and the count are what adds to such a layer made (no
 * measured rate of the layer is recomputed; write a layer before the stack
 * grows past it). Not concurrent-safe. Allocates nothing. */
BG_API int bg_filter_layer_read(const bg_filter *f, uint32_t layer, void *buf, size_t len);
BG_API int bg_filter_layer_write(bg_filter *f, uint32_t layer, const void *buf, size_t len,
                                 uint64_t items);

/* How a scalable filter grows, as created (defaults filled in; layer_variant
 * is the first layer's: with blocked_from, later layers are blocked). */
typedef struct bg_filter_scaling {
    bg_variant layer_variant;
    uint64_t capacity;     /* the first layer's */
    double error_rate;     /* the p asked for (the whole stack's bound) */
    uint32_t expansion;
    double tightening;
    uint32_t max_layers;
    uint64_t max_bytes;
    bool nonscaling;
    uint32_t layers;       /* now */
    double first_share;    /* the first layer's share of error_rate */
    uint32_t blocked_from; /* the first blocked layer of a mixed stack; 0: none */
} bg_filter_scaling;

/* Fills *out for a scalable filter. BG_OK, BG_EVARIANT (not scalable) or
 * BG_EINVAL. */
BG_API int bg_filter_scaling_get(const bg_filter *f, bg_filter_scaling *out);

/* Cheap accessors (no scan). They return 0 for a NULL filter. */
BG_API bg_variant bg_filter_variant(const bg_filter *f);
BG_API uint64_t bg_filter_bits(const bg_filter *f);
BG_API uint32_t bg_filter_hashes(const bg_filter *f);
BG_API uint64_t bg_filter_seed(const bg_filter *f);
BG_API uint64_t bg_filter_items(const bg_filter *f);
BG_API uint64_t bg_filter_bytes(const bg_filter *f);
/* n it was sized for (0 if sized by m and k); scalable: its layers' sum. */
BG_API uint64_t bg_filter_capacity(const bg_filter *f);

/* The memory `f` holds from the allocator: its structures and bit arrays
 * with their alignment slack, every layer of a scalable filter included
 * (bg_filter_bytes counts the arrays' bytes alone). With size_of NULL, the
 * bytes the library asked for; else the sum of size_of(p) over the blocks p
 * it holds, for an allocator that rounds sizes up (the Redis module passes
 * RedisModule_MallocSize). An array the library maps itself (see
 * <bloomgate/alloc.h>) counts as its mapping's length; the file a filter
 * of bg_filter_map reads its bits from does not count. Allocates nothing;
 * costs one step per layer. 0 for a NULL filter. */
BG_API uint64_t bg_filter_memory(const bg_filter *f, size_t (*size_of)(void *ptr));

/* A variant's name ("standard", "blocked", "counting", "scalable", "redisbloom") or
 * NULL; and back (BG_OK or BG_EVARIANT). */
BG_API const char *bg_variant_name(bg_variant v);
BG_API int bg_variant_parse(const char *name, bg_variant *out);

#ifdef __cplusplus
}
#endif

#endif
