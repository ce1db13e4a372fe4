/* SPDX-License-Identifier: BSD-3-Clause */
/* <bloomgate/filter.h>: argument checks, hashing, then the filter's own
 * table (bg__filter_ops, filter_internal.h) for everything else, and
 * union/intersection of two arrays. Which variant a filter is matters only
 * when it is made: bg_filter_new picks the table here, the decoders in
 * src/file. */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "filter_internal.h"
#include "hash_inline.h"
#include "scalable_internal.h"

const bg__filter_ops *bg__variant_ops(bg_variant v)
{
    switch (v) {
    case BG_VARIANT_STANDARD:
        return &bg__standard_ops;
    case BG_VARIANT_BLOCKED:
        return bg__blocked_ops();
    case BG_VARIANT_COUNTING:
        return &bg__counting_ops;
    case BG_VARIANT_SCALABLE:
        return &bg__scalable_ops;
    case BG_VARIANT_REDISBLOOM:
        return &bg__redisbloom_ops;
    }
    return NULL;
}

const bg__filter_ops *bg__ops_for(bg_variant v)
{
    const bg__filter_ops *ops = bg__variant_ops(v);
    return ops && ops->cell_bits != 0 ? ops : NULL;
}

const char *bg_variant_name(bg_variant v)
{
    const bg__filter_ops *ops = bg__variant_ops(v);
    return ops ? ops->name : NULL;
}

int bg_variant_parse(const char *name, bg_variant *out)
{
    if (name == NULL || out == NULL)
        return BG_EINVAL;
    static const bg_variant all[] = {BG_VARIANT_STANDARD, BG_VARIANT_BLOCKED,
                                     BG_VARIANT_COUNTING, BG_VARIANT_SCALABLE,
                                     BG_VARIANT_REDISBLOOM};
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
    const bg__filter_ops *ops = bg__variant_ops(opts->variant ? opts->variant : BG_VARIANT_DEFAULT);
    if (ops == NULL)
        return BG_EVARIANT;
    return ops->create(out, opts);
}

void bg_filter_free(bg_filter *f)
{
    if (f == NULL)
        return;
    f->ops->destroy(f);
}

int bg_filter_clone(bg_filter **out, const bg_filter *f)
{
    if (out == NULL)
        return BG_EINVAL;
    *out = NULL;
    if (f == NULL)
        return BG_EINVAL;
    return f->ops->clone(out, f);
}

/* A key's hash for f: XXH3-128 with its seed, unless its variant hashes
 * keys its own way (ops->hash). */
static inline bg_hash hash_for(const bg_filter *f, const void *key, size_t len)
{
    return f->ops->hash ? f->ops->hash(f, key, len) : bg__hash(key, len, f->seed);
}

int bg_filter_hash(const bg_filter *f, const void *key, size_t len, bg_hash *out)
{
    if (f == NULL || out == NULL || (key == NULL && len != 0))
        return BG_EINVAL;
    *out = hash_for(f, key, len);
    return BG_OK;
}

int bg_filter_test_and_add_hash(bg_filter *f, bg_hash h)
{
    if (f == NULL)
        return BG_EINVAL;
    if (f->read_only)
        return BG_EREADONLY;
    return f->ops->test_and_add(f, h);
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
    return f->ops->contains(f, h);
}

int bg_filter_test_and_add(bg_filter *f, const void *key, size_t len)
{
    if (f == NULL || (key == NULL && len != 0))
        return BG_EINVAL;
    return bg_filter_test_and_add_hash(f, hash_for(f, key, len));
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
    return bg_filter_contains_hash(f, hash_for(f, key, len));
}

/* Whether some key is NULL with a length (a NULL key of length 0 is the
 * empty key). Every batch call checks its whole array first, so that bad
 * input changes nothing. Without early exit and with an AVX2 clone, the
 * compiler checks four keys per vector step, about 2 instructions per key
 * (callgrind), where a scalar loop needs five, about 5% of a batched
 * query's (docs/PERFORMANCE.md). */
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

int64_t bg_filter_add_hashes(bg_filter *f, const bg_hash *hashes, size_t count, uint8_t *results)
{
    if (f == NULL || (hashes == NULL && count != 0))
        return BG_EINVAL;
    if (f->read_only)
        return BG_EREADONLY;
    return f->ops->hashes(f, hashes, count, results, true);
}

/* The casts drop const for the batch ops, which write only when `adding` is
 * true. */
int64_t bg_filter_contains_hashes(const bg_filter *f, const bg_hash *hashes, size_t count,
                                  uint8_t *results)
{
    if (f == NULL || (hashes == NULL && count != 0))
        return BG_EINVAL;
    return f->ops->hashes((bg_filter *)f, hashes, count, results, false);
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
    return f->ops->keys(f, keys, lens, count, results, true);
}

int64_t bg_filter_contains_many(const bg_filter *f, const void *const *keys, const size_t *lens,
                                size_t count, uint8_t *results)
{
    if (f == NULL)
        return BG_EINVAL;
    int rc = check_keys(keys, lens, count);
    if (rc != BG_OK)
        return rc;
    return f->ops->keys((bg_filter *)f, keys, lens, count, results, false);
}

int bg_filter_clear(bg_filter *f)
{
    if (f == NULL)
        return BG_EINVAL;
    if (f->read_only)
        return BG_EREADONLY;
    return f->ops->clear(f);
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
    return bg_filter_remove_hash(f, hash_for(f, key, len));
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
        int r = f->ops->remove(f, hash_for(f, keys[i], lens[i]));
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
    if (a->ops->cell_bits == 0 || b->ops->cell_bits == 0)
        return BG_EVARIANT; /* no array of its own (scalable): no cell-wise merge */
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
    bg__count_new(dst, gained > 0 ? items_from_estimate(gained) : 0);
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

int bg_filter_stats_get(const bg_filter *f, bg_filter_stats *out)
{
    if (f == NULL || out == NULL)
        return BG_EINVAL;
    return f->ops->stats(f, out);
}

int bg_filter_layer_stats(const bg_filter *f, uint32_t layer, bg_filter_stats *out)
{
    if (f == NULL || out == NULL)
        return BG_EINVAL;
    return f->ops->layer_stats(f, layer, out);
}

/* Layer i of f (layer_stats' numbering), or NULL: none, or not an array
 * of this library's layouts (a RedisBloom chain's links). */
static bg_filter *layer_array(const bg_filter *f, uint32_t i)
{
    if (f->ops->variant == BG_VARIANT_SCALABLE)
        return i < bg__scalable_count(f) ? bg__scalable_layer(f, i) : NULL;
    return i == 0 && f->ops->cell_bits != 0 ? (bg_filter *)(uintptr_t)f : NULL;
}

int bg_filter_layer_read(const bg_filter *f, uint32_t layer, void *buf, size_t len)
{
    if (f == NULL || buf == NULL)
        return BG_EINVAL;
    const bg_filter *l = layer_array(f, layer);
    if (l == NULL || len != l->nwords * 8)
        return BG_EINVAL;
    for (uint64_t i = 0; i < l->nwords; i++) {
        uint64_t w = bg__load(&l->words[i]);
        memcpy((char *)buf + i * 8, &w, 8);
    }
    return BG_OK;
}

int bg_filter_layer_write(bg_filter *f, uint32_t layer, const void *buf, size_t len,
                          uint64_t items)
{
    if (f == NULL || buf == NULL)
        return BG_EINVAL;
    bg_filter *l = layer_array(f, layer);
    if (l == NULL || len != l->nwords * 8)
        return BG_EINVAL;
    if (f->read_only || l->read_only)
        return BG_EREADONLY;
    /* Cells m.. of the last word: in payload numbering (byte i / 8, mask
     * 0x80 >> (i % 8), as bg__bit), bit offsets used .. 63 of it. */
    uint64_t used = l->m * l->ops->cell_bits - (l->nwords - 1) * 64;
    if (l->nwords != 0 && used < 64) {
        uint64_t last, spare = 0;
        memcpy(&last, (const char *)buf + (l->nwords - 1) * 8, 8);
        for (uint64_t b = used; b < 64; b++)
            spare |= bg__bit(b);
        if (last & spare)
            return BG_ECORRUPT;
    }
    for (uint64_t i = 0; i < l->nwords; i++) {
        uint64_t w;
        memcpy(&w, (const char *)buf + i * 8, 8);
        atomic_store_explicit(&l->words[i], w, memory_order_relaxed);
    }
    atomic_store_explicit(&l->items, items, memory_order_relaxed);
    return BG_OK;
}

int bg_filter_scaling_get(const bg_filter *f, bg_filter_scaling *out)
{
    if (f == NULL || out == NULL)
        return BG_EINVAL;
    return f->ops->scaling(f, out);
}

bg_variant bg_filter_variant(const bg_filter *f)
{
    return f ? f->ops->variant : (bg_variant)0;
}

/* What the accessors report, from the filter's table (a scalable filter's
 * sums over its layers); zeros for NULL. */
static bg__filter_sizes sizes_of(const bg_filter *f)
{
    bg__filter_sizes z = {0};
    if (f)
        f->ops->sizes(f, &z);
    return z;
}

uint64_t bg_filter_bits(const bg_filter *f)
{
    return sizes_of(f).bits;
}

uint32_t bg_filter_hashes(const bg_filter *f)
{
    return sizes_of(f).hashes;
}

uint64_t bg_filter_seed(const bg_filter *f)
{
    return f ? f->seed : 0;
}

uint64_t bg_filter_items(const bg_filter *f)
{
    return sizes_of(f).items;
}

uint64_t bg_filter_capacity(const bg_filter *f)
{
    return sizes_of(f).capacity;
}

uint64_t bg_filter_bytes(const bg_filter *f)
{
    return sizes_of(f).bytes;
}

uint64_t bg_filter_memory(const bg_filter *f, size_t (*size_of)(void *ptr))
{
    return bg__filter_memory(f, size_of);
}
