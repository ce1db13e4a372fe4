/* SPDX-License-Identifier: BSD-3-Clause */
/* The filter half of the table for the variants with an array of their own
 * (standard, blocked, counting: BG__ARRAY_OPS in filter_internal.h), and
 * the array's allocation: making, copying, clearing, measuring and batching
 * over one array of cells. The variants themselves (standard.c, blocked*.c,
 * counting.c) only place and test cells. */
#include <math.h>
#include <string.h>

#include "alloc_internal.h"
#include "cpu.h"
#include "filter_internal.h"

int bg__array_create(bg_filter **out, const bg_filter_options *opts)
{
    bg_variant variant = opts->variant ? opts->variant : BG_VARIANT_DEFAULT;
    const bg__filter_ops *ops = bg__ops_for(variant);
    if (opts->layer_variant || opts->expansion || opts->tightening != 0 || opts->max_layers ||
        opts->nonscaling || opts->first_share != 0 || opts->blocked_from)
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

/* The array's alignment inside the filter's allocation (LAYOUT): a
 * blocked filter's blocks are cache lines. */
static size_t array_align(bg_variant v)
{
    return v == BG_VARIANT_BLOCKED ? 64 : 8;
}

/* The hooks promise no alignment beyond the struct's own (8 bytes), so a
 * filter whose array needs 64 asks for room to move it up. */
static size_t head_bytes(bool tail)
{
    return sizeof(bg_filter) + (tail ? sizeof(bg__filter_tail) : 0);
}

static void shell_init(bg_filter *f, const bg__filter_ops *ops, const bg__filter_shape *s,
                       bool tail)
{
    f->ops = ops;
    f->m = s->m;
    f->k = s->k;
    f->nwords = bg__filter_array_bytes(s) / 8;
    f->nblocks = s->variant == BG_VARIANT_BLOCKED ? s->m / BG_BLOCK_BITS : 0;
    f->seed = s->seed;
    f->capacity = s->capacity;
    f->single_writer = s->single_writer;
    f->has_tail = tail;
    atomic_init(&f->items, s->items);
}

int bg__filter_alloc(bg_filter **out, const bg__filter_shape *s)
{
    *out = NULL;
    uint64_t bytes = bg__filter_array_bytes(s);
    if (bytes > SIZE_MAX)
        return BG_EOVERFLOW;
    const bg__filter_ops *ops = bg__ops_for(s->variant);
    bool tail = ops->tx_counters && !s->single_writer;
    size_t head = head_bytes(tail);
    size_t align = array_align(s->variant);
    bool apart = bytes >= BG__HUGE_PAGE;
    size_t slack = align > 8 ? align - 8 : 0;
    if (!apart && bytes > SIZE_MAX - head - slack)
        return BG_EOVERFLOW;
    bg_filter *f = bg__calloc(1, apart ? head : head + slack + (size_t)bytes);
    if (f == NULL)
        return BG_ENOMEM;
    shell_init(f, ops, s, tail);
    if (apart) {
        /* Huge-page aligned where the library maps the array itself
         * (alloc.c). Through hooks, whose allocator counts every byte it
         * hands out (Redis's used_memory), aligning would cost up to 2 MiB
         * more: a cache line is enough, and the whole huge pages inside the
         * array still get the hint. */
        size_t big = bg__allocator_is_libc() ? BG__HUGE_PAGE : 64;
        f->words = bg__aligned_calloc((size_t)bytes, big);
        if (f->words == NULL) {
            bg__free(f);
            return BG_ENOMEM;
        }
        f->words_apart = true;
        bg__advise_huge_pages((void *)f->words, (size_t)bytes);
    } else {
        uintptr_t at = (uintptr_t)f + head;
        f->words = (_Atomic uint64_t *)((at + (align - 1)) & ~(uintptr_t)(align - 1));
    }
    *out = f;
    return BG_OK;
}

int bg__filter_wrap_mapping(bg_filter **out, const bg__filter_shape *s, void *words,
                            void *mapping, size_t mapping_bytes)
{
    *out = NULL;
    bg_filter *f = bg__calloc(1, head_bytes(true));
    if (f == NULL) {
        if (mapping)
            bg__unmap(mapping, mapping_bytes);
        return BG_ENOMEM;
    }
    shell_init(f, bg__ops_for(s->variant), s, true);
    f->words = words;
    f->read_only = true;
    bg__filter_tail *t = bg__filter_tail_of(f);
    t->mapping = mapping;
    t->mapping_bytes = mapping_bytes;
    *out = f;
    return BG_OK;
}

void bg__array_destroy(bg_filter *f)
{
    bg__filter_tail *t = bg__filter_tail_of(f);
    if (t != NULL && t->mapping)
        bg__unmap(t->mapping, t->mapping_bytes);
    if (f->words_apart)
        bg__aligned_free((void *)f->words);
    bg__free(f);
}

uint64_t bg__filter_memory(const bg_filter *f, size_t (*size_of)(void *ptr))
{
    if (f == NULL)
        return 0;
    if (f->ops->memory)
        return f->ops->memory(f, size_of);
    return f->ops->cell_bits == 0 ? bg__scalable_memory(f, size_of) : bg__array_memory(f, size_of);
}

/* What bg__filter_memory counts for a filter with an array. */
uint64_t bg__array_memory(const bg_filter *f, size_t (*size_of)(void *ptr))
{
    uint64_t head = head_bytes(f->has_tail);
    if (f->read_only)
        return size_of ? size_of((void *)(uintptr_t)f) : head;
    if (f->words_apart) {
        uint64_t own = size_of ? size_of((void *)(uintptr_t)f) : head;
        return own + bg__aligned_size((void *)f->words, size_of);
    }
    if (size_of)
        return size_of((void *)(uintptr_t)f);
    size_t align = array_align(f->ops->variant);
    return head + (align > 8 ? align - 8 : 0) + f->nwords * 8;
}

/* CLONE
 * A copy is what a file image of the filter decodes to (the shape, the item
 * count and the array of each part; a scalable filter's growth parameters
 * and layers), built the way the decoder builds it, without the image in
 * between: one allocation per array and one pass over it. The words are
 * read with relaxed atomic loads, as bg_filter_encode reads them, so that
 * other threads may add meanwhile (each word is some value it had during
 * the call). */
int bg__array_clone_as(bg_filter **out, const bg_filter *f, bool single_writer)
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

int bg__array_clone(bg_filter **out, const bg_filter *f)
{
    return bg__array_clone_as(out, f, f->single_writer);
}

/* BATCHES
 * Keys: each variant's run_keys (BG__DEFINE_GROUP_OPS in filter_internal.h)
 * hashes BG__STEP keys at a time, prefetching each key's line as soon as it
 * is hashed, and probes the keys hashed BG__AHEAD before, so a large
 * filter's misses overlap with hashing and probing (hashing a whole chunk
 * first and then probing it overlaps less once the filter outgrows the
 * caches; docs/PERFORMANCE.md). The blocked variant's AVX-512 code has its
 * own run_keys, which hashes eight keys per vector (blocked_avx512.c,
 * BATCHES OF KEYS).
 * Hashes: groups of BG__BATCH, group g + 1 prefetched before group g is
 * probed. */

static size_t group_len(size_t count, size_t at)
{
    return count - at < BG__BATCH ? count - at : BG__BATCH;
}

/* run_group over hashes, pipelined. */
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

int64_t bg__array_hashes(bg_filter *f, const bg_hash *h, size_t count, uint8_t *results,
                         bool adding)
{
    int64_t hits = run_hashes(f, h, count, results, adding);
    if (adding)
        bg__count_new(f, bg__counts_every_add(f) ? (uint64_t)count : (uint64_t)hits);
    return hits;
}

int64_t bg__array_keys(bg_filter *f, const void *const *keys, const size_t *lens, size_t count,
                       uint8_t *results, bool adding)
{
    int64_t hits = f->ops->run_keys(f, keys, lens, count, results, adding);
    if (adding)
        bg__count_new(f, bg__counts_every_add(f) ? (uint64_t)count : (uint64_t)hits);
    return hits;
}

int bg__array_clear(bg_filter *f)
{
    for (uint64_t i = 0; i < f->nwords; i++)
        atomic_store_explicit(&f->words[i], 0, memory_order_relaxed);
    atomic_store_explicit(&f->items, 0, memory_order_relaxed);
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

int bg__array_stats(const bg_filter *f, bg_filter_stats *out)
{
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

/* One layer, itself. */
int bg__array_layer_stats(const bg_filter *f, uint32_t layer, bg_filter_stats *out)
{
    return layer == 0 ? bg__array_stats(f, out) : BG_EINVAL;
}

int bg__array_scaling(const bg_filter *f, bg_filter_scaling *out)
{
    (void)f;
    (void)out;
    return BG_EVARIANT;
}

void bg__array_sizes(const bg_filter *f, bg__filter_sizes *out)
{
    out->bits = f->m;
    out->bytes = f->nwords * 8;
    out->items = bg__load(&f->items);
    out->capacity = f->capacity;
    out->hashes = f->k;
}
