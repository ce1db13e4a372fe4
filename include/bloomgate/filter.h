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
 *   standard: a = (h1 * m) >> 64, b = ((h2 * (m - 1)) >> 64) + 1, and probe j
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
 * order), so no add is ever lost. A contains that runs concurrently with the
 * add of the same key may answer either way; one that happens after it (a
 * join, a mutex, any release/acquire pair) answers "maybe present".
 * With BG_SINGLE_WRITER, at most one thread adds at a time (the caller
 * serializes adds) while any number of threads query: bits are written with
 * plain stores, no locked instruction (blocked inserts measured 2.5x to
 * 3.5x faster, standard ones, bound by cache misses, 1.1x to 1.3x:
 * docs/PERFORMANCE.md), and readers still never miss a finished add;
 * bg_filter_union into such a filter counts as its writer.
 * bg_filter_stats_get and the accessors may run during adds (they see some
 * state between the one before and the one after; the item count is exact
 * only without unions, which count by estimate). bg_filter_clear,
 * bg_filter_intersect and bg_filter_free must not run concurrently with
 * anything else on the same filter.
 *
 * MEMORY
 * bg_filter_new allocates (through <bloomgate/alloc.h>); bg_filter_free
 * releases. No other call allocates. */
#ifndef BLOOMGATE_FILTER_H
#define BLOOMGATE_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include <bloomgate/error.h>
#include <bloomgate/hash.h>
#include <bloomgate/sizing.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bg_filter bg_filter;

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
    uint64_t max_bytes;         /* cap on the bit array; 0: BG_DEFAULT_MAX_BYTES */
    bg_concurrency concurrency; /* see THREADS above */
} bg_filter_options;

/* Creates an empty filter sized from `opts` into *out (*out is set to NULL on
 * failure). Returns BG_OK, or the bg_sizing_solve errors, BG_EINVAL (NULL
 * argument, unknown concurrency) or BG_ENOMEM. Allocates; free with
 * bg_filter_free. */
BG_API int bg_filter_new(bg_filter **out, const bg_filter_options *opts);

/* Frees a filter. NULL is allowed. `f` is dead after the call. */
BG_API void bg_filter_free(bg_filter *f);

/* The hash of a key under this filter's seed, for the *_hash calls below and
 * for other filters with the same seed. BG_OK or BG_EINVAL. */
BG_API int bg_filter_hash(const bg_filter *f, const void *key, size_t len, bg_hash *out);

/* Adds a key. Returns BG_OK or BG_EINVAL (NULL f; NULL key with len > 0). */
BG_API int bg_filter_add(bg_filter *f, const void *key, size_t len);

/* Adds a key and reports whether it was new: 1 if at least one of its bits
 * was clear (the key was definitely absent before), 0 if all were set (it
 * was maybe present: nothing changed), or a negative status. Two threads
 * adding the same new key at once may both get 1. */
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
 * a NULL key with a non-zero length) nothing was added. */
BG_API int64_t bg_filter_add_many(bg_filter *f, const void *const *keys, const size_t *lens,
                                  size_t count, uint8_t *results);
BG_API int64_t bg_filter_contains_many(const bg_filter *f, const void *const *keys,
                                       const size_t *lens, size_t count, uint8_t *results);

/* The same on hashes already computed with this filter's seed. */
BG_API int64_t bg_filter_add_hashes(bg_filter *f, const bg_hash *hashes, size_t count,
                                    uint8_t *results);
BG_API int64_t bg_filter_contains_hashes(const bg_filter *f, const bg_hash *hashes,
                                         size_t count, uint8_t *results);

/* Empties the filter (all bits 0, item count 0). Not concurrent-safe. */
BG_API int bg_filter_clear(bg_filter *f);

/* dst |= src: afterwards dst contains every key of either. dst's item count
 * grows by the number of keys src added as the fill tells it (the cardinality
 * estimate of bg_filter_stats after, minus before), so keys in both count
 * once, and adds running meanwhile still count. Returns BG_OK,
 * BG_EINVAL, or BG_EINCOMPAT unless both have the same variant, m, k and
 * seed (nothing is changed then). Safe concurrently with adds to dst. */
BG_API int bg_filter_union(bg_filter *dst, const bg_filter *src);

/* dst &= src: afterwards dst contains every key present in both (and, as
 * with any Bloom intersection, somewhat more false positives than a filter
 * built from the common keys alone). Its item count becomes the cardinality
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
    uint64_t items;           /* adds that set at least one new bit (test-and-add 1s) */
    uint64_t bits_set;        /* popcount of the array */
    double fill_ratio;        /* bits_set / m */
    double estimated_items;   /* cardinality from fill (Swamidass & Baldi; blocked:
                                 -(m/k) ln(1 - X/m)); +inf when full */
    double estimated_fp_rate; /* rate from the current fill: (X/m)^k; blocked:
                                 the mean over blocks and start words s of
                                 prod_j X_{(s+j)%8} / 64, X_w the bits set in
                                 word w */
} bg_filter_stats;

/* Fills *out. BG_OK or BG_EINVAL. */
BG_API int bg_filter_stats_get(const bg_filter *f, bg_filter_stats *out);

/* Cheap accessors (no scan). They return 0 for a NULL filter. */
BG_API bg_variant bg_filter_variant(const bg_filter *f);
BG_API uint64_t bg_filter_bits(const bg_filter *f);
BG_API uint32_t bg_filter_hashes(const bg_filter *f);
BG_API uint64_t bg_filter_seed(const bg_filter *f);
BG_API uint64_t bg_filter_items(const bg_filter *f);
BG_API uint64_t bg_filter_bytes(const bg_filter *f);

/* A variant's name ("standard", "blocked") or NULL; and back (BG_OK or
 * BG_EVARIANT). */
BG_API const char *bg_variant_name(bg_variant v);
BG_API int bg_variant_parse(const char *name, bg_variant *out);

#ifdef __cplusplus
}
#endif

#endif
