/* The variant-independent half of <bloomgate/filter.h>: argument checks,
 * hashing, batching, counters, union/intersection and statistics. The
 * variants (standard.c, blocked.c) only place and test bits. */
#include <math.h>
#include <string.h>

#include "alloc_internal.h"
#include "cpu.h"
#include "filter_internal.h"
#include "hash_inline.h"
#include "scalable_internal.h"

const bg__filter_ops *bg__ops_for(bg_variant v)
{
    switch (v) {
    case BG_VARIANT_STANDARD:
        return &bg__standard_ops;
    case BG_VARIANT_BLOCKED:
        return bg__blocked_ops();
    case BG_VARIANT_COUNTING:
        return &bg__counting_ops;
    case BG_VARIANT_SCALABLE:
        break; /* no array of its own: not a shape */
    }
    return NULL;
}

const char *bg_variant_name(bg_variant v)
{
    if (v == BG_VARIANT_SCALABLE)
        return bg__scalable_ops.name;
    const bg__filter_ops *ops = bg__ops_for(v);
    return ops ? ops->name : NULL;
}

int bg_variant_parse(const char *name, bg_variant *out)
{
    if (name == NULL || out == NULL)
        return BG_EINVAL;
    static const bg_variant all[] = {BG_VARIANT_STANDARD, BG_VARIANT_BLOCKED,
                                     BG_VARIANT_COUNTING, BG_VARIANT_SCALABLE};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(name, bg_variant_name(all[i])) == 0) {
            *out = all[i];
            return BG_OK;
        }
    }
    return BG_EVARIANT;
}

int bg_filter_new(bg_filter **out, const bg_filter_options *opts)
{
    if (out == NULL)
        return BG_EINVAL;
    *out = NULL;
    if (opts == NULL)
        return BG_EINVAL;
    if (opts->concurrency != BG_CONCURRENT_WRITERS && opts->concurrency != BG_SINGLE_WRITER)
        return BG_EINVAL;
    bg_variant variant = opts->variant ? opts->variant : BG_VARIANT_DEFAULT;
    if (variant == BG_VARIANT_SCALABLE)
        return bg__scalable_new(out, opts);
    const bg__filter_ops *ops = bg__ops_for(variant);
    if (ops == NULL)
        return BG_EVARIANT;
    if (opts->layer_variant || opts->expansion || opts->tightening != 0 || opts->max_layers ||
        opts->nonscaling)
        return BG_EINVAL; /* scalable options on another variant */

    /* The cap is on bytes; the solver's m counts cells of cell_bits bits.
     * The array is allocated in whole 64-bit words, so the cap is first
     * rounded down to one (as scalable.c does for its layers): the filter's
     * bytes never exceed it. */
    uint64_t max_bytes = opts->max_bytes ? opts->max_bytes : BG_DEFAULT_MAX_BYTES;
    max_bytes &= ~UINT64_C(7);
    if (max_bytes == 0)
        return BG_ETOOBIG; /* not even one word */
    uint64_t max_bits = max_bytes > BG_MAX_BITS / 8 ? BG_MAX_BITS : max_bytes * 8;
    max_bits /= ops->cell_bits;
    bg_sizing s = {.n = opts->capacity, .p = opts->error_rate, .m = opts->bits, .k = opts->hashes};
    int rc = bg_sizing_solve(variant, &s, max_bits);
    if (rc != BG_OK)
        return rc;

    /* The capacity is n when n was given or follows from (m, p); sized by m
     * and k alone, the solver's n is only the n for which k is optimal. */
    bool has_capacity = opts->capacity != 0 || (opts->bits != 0 && opts->error_rate != 0);
    bg__filter_shape shape = {
        .variant = variant,
        .m = s.m,
        .k = s.k,
        .seed = opts->seed,
        .capacity = has_capacity ? s.n : 0,
        .single_writer = opts->concurrency == BG_SINGLE_WRITER,
    };
    return bg__filter_alloc(out, &shape);
}

int bg__filter_shape_check(const bg__filter_shape *s, uint64_t max_bits)
{
    const bg__filter_ops *ops = bg__ops_for(s->variant);
    if (ops == NULL)
        return BG_EVARIANT;
    if (s->m < BG_MIN_BITS || s->k < 1 || s->k > BG_MAX_K)
        return BG_ECORRUPT;
    if (s->variant == BG_VARIANT_BLOCKED && (s->m % BG_BLOCK_BITS != 0 || s->k > BG_BLOCKED_MAX_K))
        return BG_ECORRUPT;
    /* max_bits is on the array, m * cell_bits bits. */
    if (s->m > max_bits / ops->cell_bits || s->m > BG_MAX_BITS / ops->cell_bits)
        return BG_ETOOBIG;
    return BG_OK;
}

/* m cell_bits <= BG_MAX_BITS = 2^63 (shape_check), so this fits in uint64_t. */
uint64_t bg__filter_array_bytes(const bg__filter_shape *s)
{
    return (s->m * bg__ops_for(s->variant)->cell_bits + 63) / 64 * 8;
}

static bg_filter *shell_new(const bg__filter_shape *s)
{
    bg_filter *f = bg__calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    f->ops = bg__ops_for(s->variant);
    f->m = s->m;
    f->k = s->k;
    f->nwords = bg__filter_array_bytes(s) / 8;
    f->nblocks = s->variant == BG_VARIANT_BLOCKED ? s->m / BG_BLOCK_BITS : 0;
    f->seed = s->seed;
    f->capacity = s->capacity;
    f->single_writer = s->single_writer;
    atomic_init(&f->items, s->items);
    return f;
}

int bg__filter_alloc(bg_filter **out, const bg__filter_shape *s)
{
    *out = NULL;
    uint64_t bytes = bg__filter_array_bytes(s);
    if (bytes > SIZE_MAX)
        return BG_EOVERFLOW;
    bg_filter *f = shell_new(s);
    if (f == NULL)
        return BG_ENOMEM;
    size_t align = bytes >= BG__HUGE_PAGE ? BG__HUGE_PAGE : 64;
    f->words = bg__aligned_calloc((size_t)bytes, align);
    if (f->words == NULL) {
        bg__free(f);
        return BG_ENOMEM;
    }
    if (align == BG__HUGE_PAGE)
        bg__advise_huge_pages((void *)f->words, (size_t)bytes);
    *out = f;
    return BG_OK;
}

int bg__filter_wrap_mapping(bg_filter **out, const bg__filter_shape *s, void *words,
                            void *mapping, size_t mapping_bytes)
{
    *out = NULL;
    bg_filter *f = shell_new(s);
    if (f == NULL) {
        if (mapping)
            bg__unmap(mapping, mapping_bytes);
        return BG_ENOMEM;
    }
    f->words = words;
    f->mapping = mapping;
    f->mapping_bytes = mapping_bytes;
    f->read_only = true;
    *out = f;
    return BG_OK;
}

void bg_filter_free(bg_filter *f)
{
    if (f == NULL)
        return;
    if (f->scalable) {
        bg__scalable_free(f);
        return;
    }
    if (f->mapping)
        bg__unmap(f->mapping, f->mapping_bytes);
    else if (!f->read_only) /* read-only words are a mapping's, owned or borrowed */
        bg__aligned_free((void *)f->words);
    bg__free(f);
}

/* CLONE
 * A copy is what a file image of the filter decodes to (the shape, the item
 * count and the array of each part; a scalable filter's growth parameters
 * and layers), built the way the decoder builds it, without the image in
 * between: one allocation per array and one pass over it. The words are
 * read with relaxed atomic loads, as bg_filter_encode reads them, so that
 * other threads may add meanwhile (each word is some value it had during
 * the call). */
static int clone_array(bg_filter **out, const bg_filter *f, bool single_writer)
{
    bg__filter_shape shape = {
        .variant = f->ops->variant,
        .m = f->m,
        .k = f->k,
        .seed = f->seed,
        .capacity = f->capacity,
        .items = atomic_load_explicit(&f->items, memory_order_relaxed),
        .single_writer = single_writer,
    };
    int rc = bg__filter_alloc(out, &shape);
    if (rc != BG_OK)
        return rc;
    (*out)->items = shape.items;
    _Atomic uint64_t *to = (*out)->words;
    for (uint64_t i = 0; i < f->nwords; i++)
        atomic_store_explicit(&to[i], atomic_load_explicit(&f->words[i], memory_order_relaxed),
                              memory_order_relaxed);
    return BG_OK;
}

int bg_filter_clone(bg_filter **out, const bg_filter *f)
{
    if (out == NULL)
        return BG_EINVAL;
    *out = NULL;
    if (f == NULL)
        return BG_EINVAL;
    if (!f->scalable)
        return clone_array(out, f, f->single_writer);
    bg__scalable_params p;
    bg__scalable_params_get(f, &p);
    bg_filter *c;
    int rc = bg__scalable_shell(&c, &p);
    if (rc != BG_OK)
        return rc;
    uint32_t n = bg__scalable_count(f); /* the layers it has now */
    for (uint32_t i = 0; i < n; i++) {
        bg_filter *layer;
        if ((rc = clone_array(&layer, bg__scalable_layer(f, i), p.single_writer)) != BG_OK) {
            bg_filter_free(c);
            return rc;
        }
        bg__scalable_push(c, layer);
    }
    *out = c;
    return BG_OK;
}

/* items += added, saturating at UINT64_MAX (a union with a full filter adds
 * "infinitely many"). No real count reaches 2^63, so a count in the top half
 * means "saturated". Concurrent writers take one `lock xadd`; if it finds the
 * count saturated (it may just have wrapped it), it stores UINT64_MAX back. */
static void count_new(bg_filter *f, uint64_t added)
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
static bool counts_every_add(const bg_filter *f)
{
    return f->ops->remove != NULL;
}

int bg_filter_hash(const bg_filter *f, const void *key, size_t len, bg_hash *out)
{
    if (f == NULL)
        return BG_EINVAL;
    return bg_hash_key(key, len, f->seed, out);
}

int bg_filter_test_and_add_hash(bg_filter *f, bg_hash h)
{
    if (f == NULL)
        return BG_EINVAL;
    if (f->read_only)
        return BG_EREADONLY;
    if (f->scalable)
        return bg__scalable_test_and_add(f, h);
    int added = f->ops->add(f, h);
    count_new(f, counts_every_add(f) ? 1 : (uint64_t)added);
    return added;
}

int bg_filter_add_hash(bg_filter *f, bg_hash h)
{
    int rc = bg_filter_test_and_add_hash(f, h);
    return rc < 0 ? rc : BG_OK;
}

int bg_filter_contains_hash(const bg_filter *f, bg_hash h)
{
    if (f == NULL)
        return BG_EINVAL;
    if (f->scalable)
        return bg__scalable_contains(f, h);
    return f->ops->contains(f, h);
}

int bg_filter_test_and_add(bg_filter *f, const void *key, size_t len)
{
    if (f == NULL || (key == NULL && len != 0))
        return BG_EINVAL;
    return bg_filter_test_and_add_hash(f, bg__hash(key, len, f->seed));
}

int bg_filter_add(bg_filter *f, const void *key, size_t len)
{
    int rc = bg_filter_test_and_add(f, key, len);
    return rc < 0 ? rc : BG_OK;
}

int bg_filter_contains(const bg_filter *f, const void *key, size_t len)
{
    if (f == NULL || (key == NULL && len != 0))
        return BG_EINVAL;
    return bg_filter_contains_hash(f, bg__hash(key, len, f->seed));
}

/* BATCHES
 * Keys: each variant's run_keys (BG__DEFINE_GROUP_OPS in filter_internal.h)
 * hashes BG__STEP keys at a time, prefetching each key's line as soon as it
 * is hashed, and probes the keys hashed BG__AHEAD before, so a large
 * filter's misses overlap with hashing and probing (measured at n = 1e8:
 * 14 ns per absent key against 17 ns when a chunk of keys is hashed first
 * and then probed; at n = 1e6, where nothing misses, that order is ~1 ns
 * faster, docs/PERFORMANCE.md). The blocked variant's AVX-512 code has its
 * own run_keys, which hashes eight keys per vector (blocked_avx512.c,
 * BATCHES OF KEYS).
 * Hashes: groups of BG__BATCH, group g + 1 prefetched before group g is
 * probed. */

/* Whether some key is NULL with a length (a NULL key of length 0 is the
 * empty key). Every batch call checks its whole array first, so that bad
 * input changes nothing. Without early exit and with an AVX2 clone, the
 * compiler checks four keys per vector step, about 2 instructions per key
 * (callgrind); the scalar loop took five, 5% of a batched query's on the
 * AMD EPYC guest (docs/PERFORMANCE.md). */
BG__AVX2_CLONE static bool some_key_null(const void *const *keys, const size_t *lens,
                                         size_t count)
{
    uint64_t bad = 0;
    for (size_t i = 0; i < count; i++)
        bad |= (uint64_t)(keys[i] == NULL) & (uint64_t)(lens[i] != 0);
    return bad != 0;
}

static int check_keys(const void *const *keys, const size_t *lens, size_t count)
{
    if (count == 0)
        return BG_OK;
    if (keys == NULL || lens == NULL)
        return BG_EINVAL;
    return some_key_null(keys, lens, count) ? BG_EINVAL : BG_OK;
}

static size_t group_len(size_t count, size_t at)
{
    return count - at < BG__BATCH ? count - at : BG__BATCH;
}

/* run_group over hashes, pipelined. Does not
 * touch the item count. */
static int64_t run_hashes(bg_filter *f, const bg_hash *h, size_t count, uint8_t *results,
                          bool adding)
{
    int64_t hits = 0;
    if (count == 0)
        return 0;
    f->ops->prefetch_group(f, h, group_len(count, 0));
    for (size_t at = 0; at < count; at += BG__BATCH) {
        size_t n = group_len(count, at);
        if (at + BG__BATCH < count)
            f->ops->prefetch_group(f, h + at + BG__BATCH, group_len(count, at + BG__BATCH));
        uint8_t *r = results ? results + at : NULL;
        hits += f->ops->run_group(f, h + at, n, r, adding);
    }
    return hits;
}

int64_t bg_filter_add_hashes(bg_filter *f, const bg_hash *hashes, size_t count, uint8_t *results)
{
    if (f == NULL || (hashes == NULL && count != 0))
        return BG_EINVAL;
    if (f->read_only)
        return BG_EREADONLY;
    if (f->scalable)
        return bg__scalable_run_hashes(f, hashes, count, results, true);
    int64_t added = run_hashes(f, hashes, count, results, true);
    count_new(f, counts_every_add(f) ? (uint64_t)count : (uint64_t)added);
    return added;
}

/* The casts drop const for run_hashes and run_keys, which write only when
 * `adding` is true. */
int64_t bg_filter_contains_hashes(const bg_filter *f, const bg_hash *hashes, size_t count,
                                  uint8_t *results)
{
    if (f == NULL || (hashes == NULL && count != 0))
        return BG_EINVAL;
    if (f->scalable)
        return bg__scalable_run_hashes((bg_filter *)f, hashes, count, results, false);
    return run_hashes((bg_filter *)f, hashes, count, results, false);
}

int64_t bg_filter_add_many(bg_filter *f, const void *const *keys, const size_t *lens, size_t count,
                           uint8_t *results)
{
    if (f == NULL)
        return BG_EINVAL;
    if (f->read_only)
        return BG_EREADONLY;
    int rc = check_keys(keys, lens, count);
    if (rc != BG_OK)
        return rc;
    if (f->scalable)
        return bg__scalable_run_keys(f, keys, lens, count, results, true);
    int64_t added = f->ops->run_keys(f, keys, lens, count, results, true);
    count_new(f, counts_every_add(f) ? (uint64_t)count : (uint64_t)added);
    return added;
}

int64_t bg_filter_contains_many(const bg_filter *f, const void *const *keys, const size_t *lens,
                                size_t count, uint8_t *results)
{
    if (f == NULL)
        return BG_EINVAL;
    int rc = check_keys(keys, lens, count);
    if (rc != BG_OK)
        return rc;
    if (f->scalable)
        return bg__scalable_run_keys((bg_filter *)f, keys, lens, count, results, false);
    return f->ops->run_keys((bg_filter *)f, keys, lens, count, results, false);
}

int bg_filter_clear(bg_filter *f)
{
    if (f == NULL)
        return BG_EINVAL;
    if (f->read_only)
        return BG_EREADONLY;
    if (f->scalable)
        return bg__scalable_clear(f);
    for (uint64_t i = 0; i < f->nwords; i++)
        atomic_store_explicit(&f->words[i], 0, memory_order_relaxed);
    atomic_store_explicit(&f->items, 0, memory_order_relaxed);
    return BG_OK;
}

/* items -= 1 for a removed key, never below 0 (a remove that undoes no add,
 * the caller's error, could otherwise take the count below 0). */
static void count_removed(bg_filter *f)
{
    uint64_t v = bg__load(&f->items);
    if (f->single_writer) {
        if (v > 0 && v != UINT64_MAX)
            atomic_store_explicit(&f->items, v - 1, memory_order_relaxed);
        return;
    }
    while (v > 0 && v != UINT64_MAX &&
           !atomic_compare_exchange_weak_explicit(&f->items, &v, v - 1, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

/* BG_OK if keys can be removed from f. */
static int check_removable(const bg_filter *f)
{
    if (f == NULL)
        return BG_EINVAL;
    if (f->ops->remove == NULL)
        return BG_EVARIANT;
    if (f->read_only)
        return BG_EREADONLY;
    return BG_OK;
}

int bg_filter_remove_hash(bg_filter *f, bg_hash h)
{
    int rc = check_removable(f);
    if (rc != BG_OK)
        return rc;
    if (!f->ops->remove(f, h))
        return BG_EABSENT;
    count_removed(f);
    return BG_OK;
}

int bg_filter_remove(bg_filter *f, const void *key, size_t len)
{
    if (f == NULL || (key == NULL && len != 0))
        return BG_EINVAL;
    return bg_filter_remove_hash(f, bg__hash(key, len, f->seed));
}

int64_t bg_filter_remove_many(bg_filter *f, const void *const *keys, const size_t *lens,
                              size_t count, uint8_t *results)
{
    int rc = check_removable(f);
    if (rc == BG_OK)
        rc = check_keys(keys, lens, count);
    if (rc != BG_OK)
        return rc;
    int64_t removed = 0;
    for (size_t i = 0; i < count; i++) {
        int r = f->ops->remove(f, bg__hash(keys[i], lens[i], f->seed));
        if (r)
            count_removed(f);
        if (results)
            results[i] = (uint8_t)r;
        removed += r;
    }
    return removed;
}

/* Whether src can be merged into dst. */
static int check_compatible(const bg_filter *a, const bg_filter *b)
{
    if (a == NULL || b == NULL)
        return BG_EINVAL;
    if (a->scalable || b->scalable)
        return BG_EVARIANT; /* layers of different shapes: no cell-wise merge */
    if (a->ops->variant != b->ops->variant || a->m != b->m || a->k != b->k || a->seed != b->seed)
        return BG_EINCOMPAT;
    if (a->read_only)
        return BG_EREADONLY;
    return BG_OK;
}

/* A fill-based estimate as an item count (saturating at UINT64_MAX). */
static uint64_t items_from_estimate(double est)
{
    return !(est < 18446744073709551616.0) ? UINT64_MAX : (uint64_t)llround(est);
}

/* dst |= src word by word, adding to *before and *after the bits of dst set
 * before and after. The pointers and the count are local copies: stores
 * through an _Atomic uint64_t * may alias the filter structs, and the
 * compiler would reload them for every word. A single writer stores every
 * word, no branch; concurrent writers set bits (bg__set_bits: a locked OR)
 * only in the words that change. */
BG__POPCNT_CLONE static void or_words(bg_filter *dst, const bg_filter *src, uint64_t *before,
                                      uint64_t *after)
{
    _Atomic uint64_t *d = dst->words;
    const _Atomic uint64_t *s = src->words;
    uint64_t count = dst->nwords, b = 0, a = 0;
    if (dst->single_writer) {
        for (uint64_t i = 0; i < count; i++) {
            uint64_t old = bg__load(&d[i]), next = old | bg__load(&s[i]);
            b += (uint64_t)__builtin_popcountll(old);
            a += (uint64_t)__builtin_popcountll(next);
            atomic_store_explicit(&d[i], next, memory_order_relaxed);
        }
    } else {
        for (uint64_t i = 0; i < count; i++) {
            uint64_t w = bg__load(&s[i]), old = bg__load(&d[i]);
            b += (uint64_t)__builtin_popcountll(old);
            a += (uint64_t)__builtin_popcountll(old | w);
            if (w & ~old)
                bg__set_bits(dst, &d[i], w);
        }
    }
    *before += b;
    *after += a;
}

/* dst &= src word by word; returns the bits of dst then set. */
BG__POPCNT_CLONE static uint64_t and_words(bg_filter *dst, const bg_filter *src)
{
    _Atomic uint64_t *d = dst->words;
    const _Atomic uint64_t *s = src->words;
    uint64_t count = dst->nwords, set = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t w = bg__load(&d[i]) & bg__load(&s[i]);
        set += (uint64_t)__builtin_popcountll(w);
        atomic_store_explicit(&d[i], w, memory_order_relaxed);
    }
    return set;
}

/* dst |= src. The keys src brings are not known one by one, so the item
 * count grows by what the fill says they added: est(after) - est(before),
 * both counted in this one pass. Adding the difference, instead of storing
 * an estimate, keeps the increments of adds that run meanwhile. */
int bg_filter_union(bg_filter *dst, const bg_filter *src)
{
    int rc = check_compatible(dst, src);
    if (rc != BG_OK)
        return rc;
    if (dst == src)
        return BG_OK;
    uint64_t before = 0, after = 0;
    if (dst->ops->merge)
        dst->ops->merge(dst, src, true, &before, &after);
    else
        or_words(dst, src, &before, &after);
    double gained = dst->ops->items_for_bits(dst, (double)after) -
                    dst->ops->items_for_bits(dst, (double)before);
    count_new(dst, gained > 0 ? items_from_estimate(gained) : 0);
    return BG_OK;
}

/* dst &= src; the count becomes the estimate from the new fill (exact in
 * expectation for the keys in both, plus the intersection's extra false
 * positives). Not concurrent-safe, so a plain store is fine. */
int bg_filter_intersect(bg_filter *dst, const bg_filter *src)
{
    int rc = check_compatible(dst, src);
    if (rc != BG_OK)
        return rc;
    if (dst == src)
        return BG_OK;
    uint64_t set = 0;
    if (dst->ops->merge) {
        uint64_t before = 0;
        dst->ops->merge(dst, src, false, &before, &set);
    } else {
        set = and_words(dst, src);
    }
    atomic_store_explicit(&dst->items, items_from_estimate(dst->ops->items_for_bits(dst, (double)set)),
                          memory_order_relaxed);
    return BG_OK;
}

/* A plain wrapper around the clones (cpu.h). */
BG__POPCNT_CLONE static uint64_t popcount_words(const _Atomic uint64_t *words, uint64_t from,
                                                uint64_t to)
{
    uint64_t n = 0;
    for (uint64_t i = from; i < to; i++)
        n += (uint64_t)__builtin_popcountll(bg__load(&words[i]));
    return n;
}

uint64_t bg__popcount(const _Atomic uint64_t *words, uint64_t from, uint64_t to)
{
    return popcount_words(words, from, to);
}

int bg_filter_stats_get(const bg_filter *f, bg_filter_stats *out)
{
    if (f == NULL || out == NULL)
        return BG_EINVAL;
    if (f->scalable)
        return bg__scalable_stats(f, out);
    bg_filter_stats st;
    memset(&st, 0, sizeof st);
    st.layers = 1;
    st.variant = f->ops->variant;
    st.bits = f->m;
    st.hashes = f->k;
    st.seed = f->seed;
    st.capacity = f->capacity;
    st.error_rate = f->capacity ? bg_sizing_fp_rate(st.variant, f->m, f->capacity, f->k) : 0;
    st.bytes = f->nwords * 8;
    st.items = bg__load(&f->items);
    f->ops->estimate(f, &st);
    st.fill_ratio = (double)st.bits_set / (double)f->m;
    *out = st;
    return BG_OK;
}

int bg_filter_layer_stats(const bg_filter *f, uint32_t layer, bg_filter_stats *out)
{
    if (f == NULL || out == NULL)
        return BG_EINVAL;
    if (f->scalable)
        return bg__scalable_layer_stats(f, layer, out);
    return layer == 0 ? bg_filter_stats_get(f, out) : BG_EINVAL;
}

int bg_filter_scaling_get(const bg_filter *f, bg_filter_scaling *out)
{
    if (f == NULL || out == NULL)
        return BG_EINVAL;
    if (!f->scalable)
        return BG_EVARIANT;
    return bg__scalable_scaling(f, out);
}

bg_variant bg_filter_variant(const bg_filter *f)
{
    return f ? f->ops->variant : (bg_variant)0;
}

uint64_t bg_filter_bits(const bg_filter *f)
{
    return f == NULL ? 0 : f->scalable ? bg__scalable_bits(f) : f->m;
}

uint32_t bg_filter_hashes(const bg_filter *f)
{
    return f == NULL ? 0 : f->scalable ? bg__scalable_hashes(f) : f->k;
}

uint64_t bg_filter_seed(const bg_filter *f)
{
    return f ? f->seed : 0;
}

uint64_t bg_filter_items(const bg_filter *f)
{
    return f == NULL ? 0 : f->scalable ? bg__scalable_items(f) : bg__load(&f->items);
}

uint64_t bg_filter_capacity(const bg_filter *f)
{
    return f == NULL ? 0 : f->scalable ? bg__scalable_capacity(f) : f->capacity;
}

uint64_t bg_filter_bytes(const bg_filter *f)
{
    return f == NULL ? 0 : f->scalable ? bg__scalable_bytes(f) : f->nwords * 8;
}
