/* SPDX-License-Identifier: BSD-3-Clause */
/* The RedisBloom variant (<bloomgate/redisbloom.h>): RedisBloom 2.6's
 * "chain of links", with its fields, sizing, hashing, growth and encodings,
 * written from REDISBLOOM_FORMAT.md.
 *
 * HOW IT WORKS
 * A chain is a list of plain Bloom filters, the links; only the last one
 * takes new keys. A key is hashed once per operation into (a, b) (RedisBloom's
 * MurmurHash pair, carried in a bg_hash), and link l tests or sets positions
 * h_j = a + j b (mod 2^64), j < hashes, reduced mod 2^n2 (a mask) or mod
 * bits (RedisBloom's own arithmetic, so the positions are its positions;
 * computed without a division: FAST MODULO, NEXT POSITION). Growth sizes the next link
 * from the last one's entries and
 * error, under the chain's options, which may be old ones (32-bit hashing,
 * power-of-two sizes) when the chain was stored by an old RedisBloom.
 *
 * LAYOUT
 * A link is one allocation, its fields then its array, unless the array
 * takes BG__HUGE_PAGE or more: then it is an allocation of its own, placed
 * for huge pages (link_alloc_at). The chain is the
 * bg_filter with its fields behind it in one block, and the table of link
 * pointers, inline for one link (most Redis keys never grow), else an
 * allocation doubled when full; the tables it replaces stay until the chain
 * is freed, for readers that still hold them (THREADS). A chain made for
 * concurrent writers has its mutex behind it in the same block.
 *
 * LIMITS
 * Everything stored is checked before use (LOADING in the header), so
 * every position falls inside its link's array: bits = 8 x bytes, and
 * 2^n2 <= bits. Sizes RedisBloom would compute past 64 bits (a product that
 * wraps, a power of two beyond 2^63) refuse the new link with BG_ETOOBIG,
 * where RedisBloom's arithmetic is undefined or fails the same add. */
#define _POSIX_C_SOURCE 200809L /* pthread mutexes under -std=c11 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <bloomgate/redisbloom.h>

#include "alloc_internal.h"
#include "filter_internal.h"
#include "murmur.h"
#include "redisbloom_internal.h"

/* ---- structures ------------------------------------------------------ */

typedef struct rb_link {
    uint64_t entries;
    double error;
    double bpe;
    uint64_t bytes;
    _Atomic uint64_t size;
    uint64_t reduce; /* n2 > 0: 2^n2 - 1 (a mask); else bits (a divisor) */
    uint64_t magic[2]; /* n2 = 0: ceil(2^128 / bits), low and high words (FAST MODULO) */
    uint64_t wrap;     /* n2 = 0: 2^64 mod bits (NEXT POSITION) */
    uint32_t hashes;
    uint8_t n2;
    bool apart;       /* `data` is an allocation of its own (bg__aligned_calloc) */
    bool adopted;     /* `data` is the caller's, adopted (bg_rb_push_link_owned; bg__free) */
    uint8_t *data;    /* the array: `words`, its own allocation, or a file mapping */
    uint64_t words[]; /* the array, `bytes` bytes (rounded up to words), unless apart or mapped */
} rb_link;

/* Links whose pointers the chain's block holds itself. */
#define INLINE_LINKS 1u

/* Most links room is made for before any is pushed (bg_rb_new): the count
 * a loader announces is not believed beyond it. */
#define RESERVE_MAX 64u

/* A table of link pointers that replaced a smaller one (THREADS). */
typedef struct rb_table {
    struct rb_table *prev; /* the table before it, or NULL */
    uint32_t cap;
    rb_link *slot[];
} rb_table;

typedef struct rb_chain {
    bg_filter f;
    _Atomic uint64_t size;
    uint64_t max_bytes;
    uint64_t total_bytes;      /* all links' arrays (writers only) */
    _Atomic(rb_link **) links; /* `inline_links` or the newest table's slots */
    rb_table *tables;          /* every table made, newest first (freed with the chain) */
    _Atomic uint32_t nfilters;
    uint32_t cap;
    uint32_t options;
    uint32_t growth;
    void *mapping; /* a read-only chain's file mapping (bg_filter_map), or NULL */
    size_t mapping_bytes;
    rb_link *inline_links[INLINE_LINKS];
} rb_chain;

static rb_chain *chain_of(const bg_filter *f)
{
    return (rb_chain *)(uintptr_t)f;
}

static bool is_rb(const bg_filter *f)
{
    return f != NULL && f->ops == &bg__redisbloom_ops;
}

static uint8_t *link_data(const rb_link *l)
{
    return l->data;
}

/* THREADS
 * Adds may run in many threads at once, and queries beside them, unless the
 * filter was made for a single writer. Queries never lock: a link is built
 * completely before the count that shows it is raised (release), a reader
 * loads the count (acquire) and then the table, so every link below the
 * count it sees is complete; a table that grows is replaced, never freed
 * while the chain lives. Bits and counters are atomic bytes and words
 * (relaxed: plain loads and stores on x86-64 and arm64). Writers take the
 * chain's mutex (a tail of its block, present only for concurrent writers)
 * for an add whose key no link has: the test, any growth and the sets are
 * one step, so concurrent adds behave as the same adds one after the other.
 * A key some link has answers 0 without the lock (bits are never cleared
 * while adds run). */
static uint32_t count_of(const rb_chain *c)
{
    return atomic_load_explicit(&c->nfilters, memory_order_acquire);
}

/* Link i, below a count from count_of. */
static rb_link *link_at(const rb_chain *c, uint32_t i)
{
    rb_link **t = atomic_load_explicit(&((rb_chain *)(uintptr_t)c)->links, memory_order_acquire);
    return t[i];
}

static uint64_t link_size(const rb_link *l)
{
    return atomic_load_explicit(&((rb_link *)(uintptr_t)l)->size, memory_order_relaxed);
}

static uint64_t chain_size(const rb_chain *c)
{
    return atomic_load_explicit(&((rb_chain *)(uintptr_t)c)->size, memory_order_relaxed);
}

/* Byte i of a link's array, or a store to it: relaxed atomics, so that
 * queries may read while an add writes (THREADS). */
static inline uint8_t byte_at(const uint8_t *d, uint64_t i)
{
    return atomic_load_explicit((const _Atomic uint8_t *)(uintptr_t)(d + i), memory_order_relaxed);
}

static inline void byte_set(uint8_t *d, uint64_t i, uint8_t v)
{
    atomic_store_explicit((_Atomic uint8_t *)(uintptr_t)(d + i), v, memory_order_relaxed);
}

/* The mutex of a chain made for concurrent writers, or NULL. */
static pthread_mutex_t *lock_of(const rb_chain *c)
{
    return c->f.has_tail ? (pthread_mutex_t *)(uintptr_t)(c + 1) : NULL;
}

/* ---- sizing (REDISBLOOM_FORMAT.md section 2) -------------------------- */

/* ln(2)^2 and ln(2) with the digits RedisBloom uses. */
#define LN2_SQUARED 0.480453013918201
#define LN2 0.693147180559945

static double bpe_of(double error)
{
    return -(log(error) / LN2_SQUARED);
}

/* The hash count a link's bpe implies, in double (so that it can be
 * compared with any stored value, NaN included). */
static double hashes_of(double bpe)
{
    return ceil(LN2 * bpe);
}

static bool rate_ok(double e)
{
    return e > 0.0 && e < 1.0; /* false for NaN */
}

/* 2^64 as a double: doubles at or above it do not convert to uint64_t. */
#define TWO_64 18446744073709551616.0

int bg_rb_link_plan(bg_rb_link *out, uint64_t entries, double error, uint32_t options)
{
    if (out == NULL || !rate_ok(error))
        return BG_EINVAL;
    double bpe = bpe_of(error);
    double k = hashes_of(bpe);
    if (!(k >= 0.0 && k <= (double)UINT32_MAX))
        return BG_ETOOBIG;
    uint64_t bits_raw;
    uint8_t n2;
    uint64_t ents;
    if (options & BG_RB_ENTS_IS_BITS) {
        /* 2^64 bits would not fit the fields (nor any memory). */
        if (entries >= 64)
            return BG_ETOOBIG;
        n2 = (uint8_t)entries;
        bits_raw = UINT64_C(1) << n2;
        ents = (uint64_t)((double)bits_raw / bpe);
    } else if (options & BG_RB_NOROUND) {
        double x = (double)entries * bpe;
        if (!(x < TWO_64))
            return BG_ETOOBIG;
        bits_raw = (uint64_t)x;
        if (bits_raw == 0)
            bits_raw = 1;
        n2 = 0;
        ents = entries;
    } else {
        /* The power of two strictly above x. Below 1 bit RedisBloom's
         * arithmetic is undefined: refused. */
        double x = (double)entries * bpe;
        if (!(x >= 1.0))
            return BG_EINVAL;
        int e = (int)logb(x);
        if (e > 62)
            return BG_ETOOBIG;
        n2 = (uint8_t)(e + 1);
        bits_raw = UINT64_C(1) << n2;
        uint64_t spare = (uint64_t)((double)bits_raw - x);
        uint64_t extra = (uint64_t)((double)spare / bpe);
        if (extra > UINT64_MAX - entries)
            return BG_ETOOBIG;
        ents = entries + extra;
    }
    uint64_t bytes = (bits_raw / 64 + (bits_raw % 64 != 0)) * 8;
    *out = (bg_rb_link){
        .entries = ents,
        .error = error,
        .bpe = bpe,
        .hashes = (uint32_t)k,
        .bits = bytes * 8,
        .bytes = bytes,
        .n2 = n2,
        .size = 0,
    };
    return BG_OK;
}

/* RedisBloom's checks of a stored link whose array is `length` bytes
 * (REDISBLOOM_FORMAT.md section 6, after the array-length check). */
bool bg__rb_link_ok(const bg_rb_link *l, uint64_t length)
{
    if (!rate_ok(l->error) || l->n2 > 63)
        return false;
    if (l->n2 != 0 && l->bits < (UINT64_C(1) << l->n2))
        return false;
    if (l->bits == 0 || length > UINT64_MAX / 8 || l->bits != 8 * length)
        return false;
    return (double)l->hashes == hashes_of(l->bpe);
}

/* ---- links ----------------------------------------------------------- */

/* FAST MODULO
 * A position is h mod bits, RedisBloom's own arithmetic. A 64-bit division
 * costs tens of cycles and every probe of a link of n2 = 0 needs one, so
 * the remainder is computed instead from a constant made once per link
 * (Lemire, Kaser, Kurz, "Faster Remainder by Direct Computation", 2019):
 * with M = ceil(2^128 / d), h mod d = ((M h mod 2^128) d) >> 128, exact
 * for every 64-bit h and 1 < d < 2^64 since M has 128 >= 64 + log2(d)
 * bits. Four 64-bit multiplications instead of a division; test_redisbloom
 * checks it against % over random and edge values, and the fixtures pin
 * every position. */
static void magic_of(uint64_t d, uint64_t m[2])
{
    m[0] = m[1] = 0;
    if (d < 2)
        return;
    /* floor((2^128 - 1) / d) + 1, by long division in 64-bit halves. */
    unsigned __int128 all = ~(unsigned __int128)0;
    unsigned __int128 q = all / d + 1;
    m[0] = (uint64_t)q;
    m[1] = (uint64_t)(q >> 64);
}

static inline uint64_t fast_mod(uint64_t x, const uint64_t m[2], uint64_t d)
{
    /* low = M x mod 2^128 */
    unsigned __int128 lo_part = (unsigned __int128)m[0] * x;
    uint64_t low0 = (uint64_t)lo_part;
    uint64_t low1 = (uint64_t)(lo_part >> 64) + m[1] * x;
    /* (low d) >> 128 */
    unsigned __int128 a = (unsigned __int128)low0 * d;
    unsigned __int128 b = (unsigned __int128)low1 * d + (uint64_t)(a >> 64);
    return (uint64_t)(b >> 64);
}

/* NEXT POSITION
 * A key's positions in a link of n2 = 0 are x_j mod bits, x_j = a + j b
 * mod 2^64. Only x_0 and b are reduced by FAST MODULO; from there
 *   x_{j+1} mod bits = (x_j mod bits) + (b mod bits) - w (2^64 mod bits)
 * modulo bits, w being 1 when x_j + b passed 2^64, else 0: an add and two
 * conditional corrections per position instead of four multiplications.
 * Exact: both sides are congruent mod bits, and each correction keeps the
 * value in [0, bits), which needs bits <= 2^63 (STEP_MAX_BITS; larger
 * links, beyond any memory, reduce every position). test_redisbloom checks
 * it against % over random and edge values. */
#define STEP_MAX_BITS (UINT64_C(1) << 63)

static uint64_t wrap_of(uint64_t d)
{
    return d < 2 ? 0 : (uint64_t)(((unsigned __int128)1 << 64) % d);
}

/* The position after p (< d), r = b mod d, w = 2^64 mod d, `carried`
 * when x + b passed 2^64. */
static inline uint64_t next_position(uint64_t p, uint64_t r, bool carried, uint64_t w,
                                     uint64_t d)
{
    uint64_t q = p + r; /* < 2d <= 2^64 */
    q = q >= d ? q - d : q;
    /* A mask, not a branch: a carry comes about every other step, at
     * random, which a branch predictor cannot learn. */
    uint64_t less = w & (0 - (uint64_t)carried);
    uint64_t t = q - less;
    return q >= less ? t : t + d;
}

uint64_t bg__rb_mod(uint64_t x, uint64_t d)
{
    uint64_t m[2];
    magic_of(d, m);
    return d < 2 ? 0 : fast_mod(x, m, d);
}

/* A new link with l's fields and a zeroed array of `bytes` bytes, or NULL
 * (out of memory, or beyond size_t); with `mapped` not NULL, the link's
 * array is those bytes (borrowed) instead.
 *
 * An array of BG__HUGE_PAGE or more is an allocation of its own, placed
 * and advised as a standard filter's array is (array.c, alloc.c): probes
 * land on random lines, and with 4 KiB pages nearly every one of them
 * would also walk the page table. */
static rb_link *link_alloc_at(const bg_rb_link *l, uint64_t bytes, const uint8_t *mapped)
{
    bool apart = mapped == NULL && bytes >= BG__HUGE_PAGE;
    uint64_t words = mapped || apart ? 0 : bytes / 8 + (bytes % 8 != 0);
    if (words > (SIZE_MAX - sizeof(rb_link)) / 8 || bytes > SIZE_MAX - 8)
        return NULL;
    rb_link *n = bg__calloc(1, sizeof(rb_link) + (size_t)words * 8);
    if (n == NULL)
        return NULL;
    if (apart) {
        /* Whole words, as the inline array has. */
        size_t size = (size_t)(bytes / 8 + (bytes % 8 != 0)) * 8;
        size_t align = bg__allocator_is_libc() ? BG__HUGE_PAGE : 64;
        n->data = bg__aligned_calloc(size, align);
        if (n->data == NULL) {
            bg__free(n);
            return NULL;
        }
        n->apart = true;
        bg__advise_huge_pages(n->data, size);
    } else {
        n->data = mapped ? (uint8_t *)(uintptr_t)mapped : (uint8_t *)n->words;
    }
    n->entries = l->entries;
    n->error = l->error;
    n->bpe = l->bpe;
    n->bytes = bytes;
    atomic_init(&n->size, l->size);
    n->hashes = l->hashes;
    n->n2 = l->n2;
    n->reduce = l->n2 ? (UINT64_C(1) << l->n2) - 1 : bytes * 8;
    magic_of(n->reduce, n->magic);
    n->wrap = wrap_of(n->reduce);
    return n;
}

static rb_link *link_alloc(const bg_rb_link *l, uint64_t bytes)
{
    return link_alloc_at(l, bytes, NULL);
}

static void link_free(rb_link *l)
{
    if (l != NULL && l->apart)
        bg__aligned_free(l->data);
    if (l != NULL && l->adopted)
        bg__free(l->data);
    bg__free(l);
}

static void link_fields(const rb_link *l, bg_rb_link *out)
{
    *out = (bg_rb_link){
        .entries = l->entries,
        .error = l->error,
        .bpe = l->bpe,
        .hashes = l->hashes,
        .bits = l->bytes * 8,
        .bytes = l->bytes,
        .n2 = l->n2,
        .size = link_size(l),
    };
}

/* Room in the table for `want` links. A larger table replaces the current
 * one for new readers; the old one stays for readers that still hold it
 * (THREADS). BG_OK or BG_ENOMEM. Writers only. */
static int table_room(rb_chain *c, uint32_t want)
{
    if (want <= c->cap)
        return BG_OK;
    uint32_t cap = c->cap;
    while (cap < want)
        cap = cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2;
    rb_table *t = bg__malloc(sizeof *t + (size_t)cap * sizeof t->slot[0]);
    if (t == NULL)
        return BG_ENOMEM;
    uint32_t n = atomic_load_explicit(&c->nfilters, memory_order_relaxed);
    rb_link **old = atomic_load_explicit(&c->links, memory_order_relaxed);
    if (n)
        memcpy(t->slot, old, (size_t)n * sizeof t->slot[0]);
    t->prev = c->tables;
    t->cap = cap;
    c->tables = t;
    c->cap = cap;
    atomic_store_explicit(&c->links, t->slot, memory_order_release);
    return BG_OK;
}

/* A chain with no links, in one block with a mutex behind it for
 * concurrent writers (THREADS), or NULL. */
static rb_chain *chain_alloc(const bg_rb_chain *ch, uint64_t max_bytes, bool single_writer)
{
    size_t size = sizeof(rb_chain) + (single_writer ? 0 : sizeof(pthread_mutex_t));
    rb_chain *c = bg__malloc(size);
    if (c == NULL)
        return NULL;
    memset(c, 0, sizeof *c);
    c->f.ops = &bg__redisbloom_ops;
    c->f.single_writer = single_writer;
    c->f.has_tail = !single_writer;
    atomic_init(&c->size, ch->size);
    atomic_init(&c->nfilters, 0);
    atomic_init(&c->links, c->inline_links);
    c->options = ch->options;
    c->growth = ch->growth;
    c->max_bytes = max_bytes ? max_bytes : BG_DEFAULT_MAX_BYTES;
    c->cap = INLINE_LINKS;
    if (!single_writer && pthread_mutex_init(lock_of(c), NULL) != 0) {
        bg__free(c);
        return NULL;
    }
    return c;
}

static void rb_destroy(bg_filter *f)
{
    rb_chain *c = chain_of(f);
    uint32_t n = atomic_load_explicit(&c->nfilters, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++)
        link_free(link_at(c, i));
    for (rb_table *t = c->tables, *prev; t; t = prev) {
        prev = t->prev;
        bg__free(t);
    }
    if (lock_of(c))
        pthread_mutex_destroy(lock_of(c));
    if (c->mapping)
        bg__unmap(c->mapping, c->mapping_bytes);
    bg__free(c);
}

/* Appends a link made by link_alloc (room made): stored, then shown by the
 * count (release). Writers only. */
static void chain_append(rb_chain *c, rb_link *l)
{
    uint32_t n = atomic_load_explicit(&c->nfilters, memory_order_relaxed);
    atomic_load_explicit(&c->links, memory_order_relaxed)[n] = l;
    c->total_bytes += l->bytes;
    atomic_store_explicit(&c->nfilters, n + 1, memory_order_release);
}

/* Whether `bytes` more fit in the chain's cap. */
static bool fits(const rb_chain *c, uint64_t bytes)
{
    return c->total_bytes <= c->max_bytes && bytes <= c->max_bytes - c->total_bytes;
}

/* ---- making ---------------------------------------------------------- */

int bg__rb_new_as(bg_filter **out, const bg_rb_chain *chain, uint64_t max_bytes,
                  bool single_writer)
{
    if (out == NULL)
        return BG_EINVAL;
    *out = NULL;
    if (chain == NULL)
        return BG_EINVAL;
    if (chain->nfilters == 0)
        return BG_ECORRUPT;
    rb_chain *c = chain_alloc(chain, max_bytes, single_writer);
    if (c == NULL)
        return BG_ENOMEM;
    uint32_t reserve = chain->nfilters < RESERVE_MAX ? chain->nfilters : RESERVE_MAX;
    if (table_room(c, reserve) != BG_OK) {
        rb_destroy(&c->f);
        return BG_ENOMEM;
    }
    *out = &c->f;
    return BG_OK;
}

int bg_rb_new(bg_filter **out, const bg_rb_chain *chain, uint64_t max_bytes)
{
    return bg__rb_new_as(out, chain, max_bytes, true);
}

/* bg_rb_push_link, or with `adopt` bg_rb_push_link_owned's work but for
 * freeing the array on failure. */
static int push_link(bg_filter *f, const bg_rb_link *fields, const void *array, size_t len,
                     bool adopt)
{
    if (!is_rb(f) || fields == NULL || (array == NULL && len != 0))
        return BG_EINVAL;
    if (f->read_only)
        return BG_EREADONLY;
    uint64_t length = array ? (uint64_t)len : fields->bytes;
    if (array != NULL && length < fields->bits / 8 + (fields->bits % 8 != 0))
        return BG_ECORRUPT;
    if (!bg__rb_link_ok(fields, length))
        return BG_ECORRUPT;
    rb_chain *c = chain_of(f);
    uint32_t n = atomic_load_explicit(&c->nfilters, memory_order_relaxed);
    if (!fits(c, length) || n == UINT32_MAX)
        return BG_ETOOBIG;
    if (table_room(c, n + 1) != BG_OK)
        return BG_ENOMEM;
    rb_link *l = link_alloc_at(fields, length, adopt ? array : NULL);
    if (l == NULL)
        return BG_ENOMEM;
    if (adopt) {
        /* The caller's pages are small ones already: the hint lets the
         * kernel merge them, now where it can (alloc.c). */
        l->adopted = true;
        bg__adopt_huge_pages(l->data, (size_t)length);
    } else if (array != NULL && length != 0) {
        memcpy(link_data(l), array, (size_t)length);
    }
    chain_append(c, l);
    return BG_OK;
}

int bg_rb_push_link(bg_filter *f, const bg_rb_link *fields, const void *array, size_t len)
{
    return push_link(f, fields, array, len, false);
}

int bg_rb_push_link_owned(bg_filter *f, const bg_rb_link *fields, void *array, size_t len)
{
    if (array == NULL)
        return BG_EINVAL;
    int rc = push_link(f, fields, array, len, true);
    if (rc != BG_OK)
        bg__free(array);
    return rc;
}

/* bg_filter_new with BG_VARIANT_REDISBLOOM: BF.RESERVE. */
static int rb_create(bg_filter **out, const bg_filter_options *o)
{
    *out = NULL;
    if (o->capacity == 0 || !rate_ok(o->error_rate) || o->bits != 0 || o->hashes != 0 ||
        o->seed != 0 || o->layer_variant != 0 || o->tightening != 0 || o->max_layers != 0 ||
        o->first_share != 0 || o->blocked_from != 0)
        return BG_EINVAL;
    if (o->nonscaling ? o->expansion != 0 : o->expansion > BG_MAX_EXPANSION)
        return BG_EINVAL;
    bg_rb_chain ch = {
        .size = 0,
        .nfilters = 1,
        .options = BG_RB_OPTIONS_DEFAULT | (o->nonscaling ? BG_RB_NO_SCALING : 0),
        .growth = o->expansion ? o->expansion : 2,
    };
    bg_rb_link l;
    int rc = bg_rb_link_plan(&l, o->capacity, o->nonscaling ? o->error_rate : o->error_rate * 0.5,
                             ch.options);
    if (rc != BG_OK)
        return rc;
    rb_chain *c = chain_alloc(&ch, o->max_bytes, o->concurrency == BG_SINGLE_WRITER);
    if (c == NULL)
        return BG_ENOMEM;
    if (!fits(c, l.bytes)) {
        rb_destroy(&c->f);
        return BG_ETOOBIG;
    }
    rb_link *link = link_alloc(&l, l.bytes);
    if (link == NULL) {
        rb_destroy(&c->f);
        return BG_ENOMEM;
    }
    chain_append(c, link);
    *out = &c->f;
    return BG_OK;
}

/* CLONE (array.c): the links the chain has when the call begins, each
 * byte read as a query reads it, so that adds may run meanwhile; the copy
 * is writable, in the source's concurrency mode (a mapped chain's copy:
 * concurrent writers, as a loaded file's). */
static int rb_clone(bg_filter **out, const bg_filter *f)
{
    const rb_chain *src = chain_of(f);
    uint32_t n = count_of(src);
    bg_rb_chain ch = {.size = chain_size(src), .nfilters = n, .options = src->options,
                      .growth = src->growth};
    rb_chain *c = chain_alloc(&ch, src->max_bytes, f->single_writer && !f->read_only);
    if (c == NULL)
        return BG_ENOMEM;
    if (table_room(c, n) != BG_OK) {
        rb_destroy(&c->f);
        return BG_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
        const rb_link *s = link_at(src, i);
        bg_rb_link fl;
        link_fields(s, &fl);
        rb_link *l = link_alloc(&fl, s->bytes);
        if (l == NULL) {
            rb_destroy(&c->f);
            return BG_ENOMEM;
        }
        const uint8_t *from = link_data(s);
        uint8_t *to = link_data(l);
        for (uint64_t j = 0; j < s->bytes; j++)
            to[j] = byte_at(from, j);
        chain_append(c, l);
    }
    *out = &c->f;
    return BG_OK;
}

/* ---- hashing and probing (REDISBLOOM_FORMAT.md sections 4, 5) --------- */

static bg_hash rb_hash(const bg_filter *f, const void *key, size_t len)
{
    bg_hash h;
    if (chain_of(f)->options & BG_RB_FORCE64) {
        h.h1 = bg__murmur64a(key, len, BG__MURMUR64A_SEED);
        h.h2 = bg__murmur64a(key, len, h.h1);
    } else {
        uint32_t a = bg__murmur2(key, len, BG__MURMUR2_SEED);
        h.h1 = a;
        h.h2 = bg__murmur2(key, len, a);
    }
    return h;
}

static inline uint64_t position(const rb_link *l, uint64_t x)
{
    return l->n2 ? x & l->reduce : fast_mod(x, l->magic, l->reduce);
}

/* A key's positions in a link, in order: position(l, a + j b) for
 * j < hashes, by NEXT POSITION where it applies. */
typedef struct rb_probe {
    uint64_t x, p, r; /* a + j b; its position; b mod bits (NEXT POSITION) */
    uint64_t b;
    bool step;        /* NEXT POSITION applies */
} rb_probe;

static inline rb_probe probe_first(const rb_link *l, bg_hash h)
{
    bool step = l->n2 == 0 && l->reduce <= STEP_MAX_BITS;
    return (rb_probe){
        .x = h.h1,
        .p = position(l, h.h1),
        .r = step ? fast_mod(h.h2, l->magic, l->reduce) : 0,
        .b = h.h2,
        .step = step,
    };
}

static inline void probe_next(const rb_link *l, rb_probe *pr)
{
    uint64_t y = pr->x + pr->b;
    pr->p = pr->step ? next_position(pr->p, pr->r, y < pr->x, l->wrap, l->reduce)
                     : position(l, y);
    pr->x = y;
}

uint64_t bg__rb_position(uint64_t a, uint64_t b, uint32_t j, uint64_t d)
{
    rb_link l = {.reduce = d, .n2 = 0, .wrap = wrap_of(d)};
    magic_of(d, l.magic);
    rb_probe pr = probe_first(&l, (bg_hash){a, b});
    for (uint32_t i = 0; i < j; i++)
        probe_next(&l, &pr);
    return pr.p;
}

static inline bool link_has(const rb_link *l, bg_hash h)
{
    const uint8_t *d = link_data(l);
    rb_probe pr = probe_first(l, h);
    for (uint32_t j = 0; j < l->hashes; j++, probe_next(l, &pr))
        if (!(byte_at(d, pr.p >> 3) & (1u << (pr.p & 7))))
            return false;
    return true;
}

static inline void link_set(rb_link *l, bg_hash h)
{
    uint8_t *d = link_data(l);
    rb_probe pr = probe_first(l, h);
    for (uint32_t j = 0; j < l->hashes; j++, probe_next(l, &pr))
        byte_set(d, pr.p >> 3, (uint8_t)(byte_at(d, pr.p >> 3) | (1u << (pr.p & 7))));
}

/* Sets h's bits in l; whether one of them was clear (l did not have h).
 * A bit already set is not stored again: a page written for nothing would
 * be copied if Redis's fork for BGSAVE shares it. */
static inline bool link_test_set(rb_link *l, bg_hash h)
{
    uint8_t *d = link_data(l);
    rb_probe pr = probe_first(l, h);
    bool clear = false;
    for (uint32_t j = 0; j < l->hashes; j++, probe_next(l, &pr)) {
        uint8_t b = byte_at(d, pr.p >> 3), bit = (uint8_t)(1u << (pr.p & 7));
        if (!(b & bit)) {
            byte_set(d, pr.p >> 3, (uint8_t)(b | bit));
            clear = true;
        }
    }
    return clear;
}

/* Whether one of links [0, n) has h, the newest first. */
static int any_link(const rb_chain *c, uint32_t n, bg_hash h)
{
    rb_link **t = atomic_load_explicit(&((rb_chain *)(uintptr_t)c)->links, memory_order_acquire);
    for (uint32_t i = n; i-- > 0;)
        if (link_has(t[i], h))
            return 1;
    return 0;
}

/* A single key's lookup or add asks for its lines before probing, as the
 * batch calls do (BATCHES): a probe's loop stops at the first clear bit, so
 * without the prefetch the second position's load waits on the branch
 * that tests the first, and an absent key, which reads ~2 positions per
 * link, pays about two misses in a row instead of one. */
/* Links smaller than this fit in L1, where early loads gain nothing. */
#define PREFETCH_MIN_BYTES 32768u

/* The lines of a key's first two positions in links [0, n); when adding,
 * of all its positions in the newest link, which an add reads all of
 * (a new key: to set them; a key it has: to find it there). */
static inline void chain_prefetch(const rb_chain *c, uint32_t n, bg_hash h, bool adding)
{
    rb_link **t = atomic_load_explicit(&((rb_chain *)(uintptr_t)c)->links, memory_order_acquire);
    for (uint32_t j = n; j-- > 0;) {
        const rb_link *l = t[j];
        if (l->bytes < PREFETCH_MIN_BYTES)
            continue;
        const uint8_t *d = link_data(l);
        if (adding && j == n - 1) {
            rb_probe pr = probe_first(l, h);
            for (uint32_t k = 0; k < l->hashes; k++, probe_next(l, &pr))
                bg__prefetch(d + (pr.p >> 3));
        } else {
            bg__prefetch(d + (position(l, h.h1) >> 3));
            bg__prefetch(d + (position(l, h.h1 + h.h2) >> 3));
        }
    }
}

static int rb_contains(const bg_filter *f, bg_hash h)
{
    const rb_chain *c = chain_of(f);
    uint32_t n = count_of(c);
    if (n == 0)
        return BG_EINVAL;
    chain_prefetch(c, n, h, false);
    return any_link(c, n, h);
}

/* Appends the link that follows the full last one (section 3). */
static int grow(rb_chain *c, uint32_t n)
{
    if (c->options & BG_RB_NO_SCALING)
        return BG_EFULL;
    const rb_link *last = link_at(c, n - 1);
    if (c->growth != 0 && last->entries > UINT64_MAX / c->growth)
        return BG_ETOOBIG;
    bg_rb_link l;
    int rc = bg_rb_link_plan(&l, last->entries * c->growth, last->error * 0.5, c->options);
    if (rc == BG_EINVAL)
        rc = BG_ETOOBIG; /* a link RedisBloom could not make either */
    if (rc != BG_OK)
        return rc;
    if (!fits(c, l.bytes) || n == UINT32_MAX)
        return BG_ETOOBIG;
    if ((rc = table_room(c, n + 1)) != BG_OK)
        return rc;
    rb_link *next = link_alloc(&l, l.bytes);
    if (next == NULL)
        return BG_ENOMEM;
    chain_append(c, next);
    return BG_OK;
}

/* The add of a key no link had a moment ago, by the one writer there is
 * now (single writer, or under the mutex): links [0, checked) were
 * searched by this writer already. */
static int add_new(rb_chain *c, bg_hash h, uint32_t checked)
{
    uint32_t n = atomic_load_explicit(&c->nfilters, memory_order_relaxed);
    if (checked < n && any_link(c, n, h))
        return 0;
    rb_link *last = link_at(c, n - 1);
    if (link_size(last) >= last->entries) {
        int rc = grow(c, n);
        if (rc != BG_OK)
            return rc;
        last = link_at(c, n);
    }
    link_set(last, h);
    atomic_store_explicit(&last->size, link_size(last) + 1, memory_order_relaxed);
    atomic_store_explicit(&c->size, chain_size(c) + 1, memory_order_relaxed);
    return 1;
}

/* The add of h to a chain of n >= 1 links whose lines for h were asked
 * for already. */
static int test_and_add(bg_filter *f, uint32_t n, bg_hash h)
{
    rb_chain *c = chain_of(f);
    rb_link *last = link_at(c, n - 1);
    if (lock_of(c) == NULL && link_size(last) < last->entries) {
        /* One writer and room in the newest link: RedisBloom's "no link
         * has it, then set it in the newest" in one pass over the newest,
         * as the key's bits there are read to be set anyway: all of them
         * set already is exactly "the newest has it", and then nothing
         * changed. */
        if (any_link(c, n - 1, h) || !link_test_set(last, h))
            return 0;
        atomic_store_explicit(&last->size, link_size(last) + 1, memory_order_relaxed);
        atomic_store_explicit(&c->size, chain_size(c) + 1, memory_order_relaxed);
        return 1;
    }
    if (any_link(c, n, h))
        return 0; /* without the lock: bits are never cleared during adds */
    pthread_mutex_t *lock = lock_of(c);
    if (lock == NULL)
        return add_new(c, h, n);
    pthread_mutex_lock(lock);
    int r = add_new(c, h, 0); /* other writers may have added it meanwhile */
    pthread_mutex_unlock(lock);
    return r;
}

static int rb_test_and_add(bg_filter *f, bg_hash h)
{
    const rb_chain *c = chain_of(f);
    uint32_t n = count_of(c);
    if (n == 0)
        return BG_EINVAL;
    chain_prefetch(c, n, h, true);
    return test_and_add(f, n, h);
}

/* BATCHES
 * The batch calls pipeline keys as the array variants do (filter_internal.h,
 * BG__DEFINE_RUN_KEYS), with one difference: keys are hashed a chunk at a
 * time before any is probed. RedisBloom's hash is two MurmurHash passes,
 * the second seeded by the first, several times XXH3's work: in a tight
 * loop of its own, the hashes of independent keys overlap in the CPU, where
 * between probes that wait for memory they would not. Then the lines of a
 * key's first two positions in every link beyond L1 are asked for BG__AHEAD
 * keys before it is probed. An absent key is looked for in every link and
 * mostly stops at one of those two positions in each; a present one reads
 * all its positions in the link that has it (SURVIVORS, below). */

/* Keys hashed before their chunk is probed. */
#define CHUNK 64

/* Whether some link of the chain may have h, by the key's first two
 * positions in each (their lines prefetched); when one may, the lines of
 * its other positions in that link are asked for too (SURVIVORS). */
static bool chain_maybe(const rb_chain *c, bg_hash h)
{
    uint32_t n = count_of(c);
    rb_link **t = atomic_load_explicit(&((rb_chain *)(uintptr_t)c)->links, memory_order_acquire);
    for (uint32_t i = n; i-- > 0;) {
        const rb_link *l = t[i];
        const uint8_t *d = link_data(l);
        rb_probe pr = probe_first(l, h);
        uint32_t j = 0;
        for (; j < l->hashes && j < 2; j++, probe_next(l, &pr))
            if (!(byte_at(d, pr.p >> 3) & (1u << (pr.p & 7))))
                break;
        if (j < l->hashes && j < 2)
            continue;
        if (l->bytes >= PREFETCH_MIN_BYTES)
            for (; j < l->hashes; j++, probe_next(l, &pr))
                bg__prefetch(d + (pr.p >> 3));
        return true;
    }
    return false;
}

/* Keys a survivor waits before its full test. */
#define DEFER 8

/* The batch calls over at most CHUNK hashes: see BATCHES. *hits grows by
 * the 1s. BG_OK or a growth error, the keys before the refused one added
 * and their results set.
 *
 * SURVIVORS
 * A query that finds a key's first two positions set in a link (a present
 * key, or one of the absent ones that get this far) needs its other
 * positions' lines too, which were not prefetched: their loads are started
 * then, and the key's full test waits DEFER keys, while other keys are
 * probed. Adds are made in order, without waiting. */
static int pipeline(bg_filter *f, const bg_hash *h, size_t count, uint8_t *results, bool adding,
                    int64_t *hits)
{
    const rb_chain *c = chain_of(f);
    size_t ahead = 0; /* keys [0, ahead) are prefetched, 2 BG__STEP at a time */
    uint8_t wait[CHUNK];
    size_t waiting = 0, resolved = 0;
    for (size_t i = 0; i <= count; i++) {
        /* Survivors whose lines have had DEFER keys' time, all at the end. */
        while (resolved < waiting && (i == count || (size_t)wait[resolved] + DEFER <= i)) {
            size_t w = wait[resolved++];
            int r = any_link(c, count_of(c), h[w]);
            if (results)
                results[w] = (uint8_t)r;
            *hits += r;
        }
        if (i == count)
            break;
        if (ahead <= i + BG__AHEAD - BG__STEP && ahead < count) {
            uint32_t n = count_of(c);
            for (size_t end = ahead + BG__STEP * 2; ahead < end && ahead < count; ahead++)
                chain_prefetch(c, n, h[ahead], adding);
        }
        int r;
        if (adding) {
            r = test_and_add(f, count_of(c), h[i]);
            if (r < 0)
                return r;
        } else if (chain_maybe(c, h[i])) {
            wait[waiting++] = (uint8_t)i;
            continue;
        } else {
            r = 0;
        }
        if (results)
            results[i] = (uint8_t)r;
        *hits += r;
    }
    return BG_OK;
}

static int64_t rb_hashes(bg_filter *f, const bg_hash *h, size_t count, uint8_t *results,
                         bool adding)
{
    if (count_of(chain_of(f)) == 0)
        return BG_EINVAL;
    int64_t hits = 0;
    for (size_t at = 0; at < count; at += CHUNK) {
        size_t n = count - at < CHUNK ? count - at : CHUNK;
        int rc = pipeline(f, h + at, n, results ? results + at : NULL, adding, &hits);
        if (rc < 0)
            return rc;
    }
    return hits;
}

static int64_t rb_keys(bg_filter *f, const void *const *keys, const size_t *lens, size_t count,
                       uint8_t *results, bool adding)
{
    if (count_of(chain_of(f)) == 0)
        return BG_EINVAL;
    bg_hash h[CHUNK];
    int64_t hits = 0;
    for (size_t at = 0; at < count; at += CHUNK) {
        size_t n = count - at < CHUNK ? count - at : CHUNK;
        for (size_t i = 0; i < n; i++)
            h[i] = rb_hash(f, keys[at + i], lens[at + i]);
        int rc = pipeline(f, h, n, results ? results + at : NULL, adding, &hits);
        if (rc < 0)
            return rc;
    }
    return hits;
}

static int rb_clear(bg_filter *f)
{
    rb_chain *c = chain_of(f);
    uint32_t n = count_of(c);
    for (uint32_t i = 0; i < n; i++) {
        rb_link *l = link_at(c, i);
        memset(link_data(l), 0, (size_t)l->bytes);
        atomic_store_explicit(&l->size, 0, memory_order_relaxed);
    }
    atomic_store_explicit(&c->size, 0, memory_order_relaxed);
    return BG_OK;
}

/* ---- statistics ------------------------------------------------------ */

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Over link_data (the link's own words or a mapping's bytes), byte by
 * byte as queries read them, since adds may run meanwhile (THREADS);
 * eight bytes are gathered per popcount. */
static uint64_t link_popcount(const rb_link *l)
{
    const uint8_t *d = link_data(l);
    uint64_t n = 0, i = 0;
    for (; i + 8 <= l->bytes; i += 8) {
        uint64_t w = 0;
        for (unsigned j = 0; j < 8; j++)
            w |= (uint64_t)byte_at(d, i + j) << (8 * j);
        n += (uint64_t)__builtin_popcountll(w);
    }
    for (; i < l->bytes; i++)
        n += (uint64_t)__builtin_popcount(byte_at(d, i));
    return n;
}

/* One link's statistics: its bits and hashes, the fill model of a standard
 * Bloom filter over the positions it uses (2^n2 or bits). */
static void link_stats(const rb_link *l, bg_filter_stats *st)
{
    memset(st, 0, sizeof *st);
    st->variant = BG_VARIANT_REDISBLOOM;
    st->bits = l->bytes * 8;
    st->hashes = l->hashes;
    st->capacity = l->entries;
    st->error_rate = l->error;
    st->bytes = l->bytes;
    st->items = link_size(l);
    st->bits_set = link_popcount(l);
    st->fill_ratio = st->bits ? (double)st->bits_set / (double)st->bits : 0.0;
    double m = l->n2 ? ldexp(1.0, l->n2) : (double)st->bits;
    double x = (double)st->bits_set / m;
    if (x > 1.0)
        x = 1.0;
    st->estimated_items = x >= 1.0 ? INFINITY
                          : l->hashes ? -(m / l->hashes) * log1p(-x)
                                      : 0.0;
    st->estimated_fp_rate = pow(x, (double)l->hashes);
    st->layers = 1;
}

static int rb_stats(const bg_filter *f, bg_filter_stats *out)
{
    const rb_chain *c = chain_of(f);
    uint32_t n = count_of(c);
    if (n == 0)
        return BG_EINVAL;
    bg_filter_stats st;
    memset(&st, 0, sizeof st);
    st.variant = BG_VARIANT_REDISBLOOM;
    st.layers = n;
    double keep_est = 1.0;
    for (uint32_t i = 0; i < n; i++) {
        bg_filter_stats ls;
        link_stats(link_at(c, i), &ls);
        st.bits = add_sat(st.bits, ls.bits);
        st.bytes = add_sat(st.bytes, ls.bytes);
        st.bits_set = add_sat(st.bits_set, ls.bits_set);
        st.capacity = add_sat(st.capacity, ls.capacity);
        st.estimated_items += ls.estimated_items;
        st.error_rate += ls.error_rate;
        st.hashes = ls.hashes;
        keep_est *= 1.0 - ls.estimated_fp_rate;
    }
    st.items = chain_size(c);
    st.estimated_fp_rate = 1.0 - keep_est;
    st.fill_ratio = st.bits ? (double)st.bits_set / (double)st.bits : 0.0;
    *out = st;
    return BG_OK;
}

static int rb_layer_stats(const bg_filter *f, uint32_t layer, bg_filter_stats *out)
{
    const rb_chain *c = chain_of(f);
    if (layer >= count_of(c))
        return BG_EINVAL;
    link_stats(link_at(c, layer), out);
    return BG_OK;
}

static int rb_scaling(const bg_filter *f, bg_filter_scaling *out)
{
    const rb_chain *c = chain_of(f);
    uint32_t n = count_of(c);
    if (n == 0)
        return BG_EINVAL;
    bool nonscaling = (c->options & BG_RB_NO_SCALING) != 0;
    *out = (bg_filter_scaling){
        .layer_variant = BG_VARIANT_REDISBLOOM,
        .capacity = link_at(c, 0)->entries,
        .error_rate = link_at(c, 0)->error,
        .expansion = nonscaling ? 0 : c->growth,
        .tightening = 0.5,
        .first_share = 0.5,
        .max_layers = UINT32_MAX,
        .max_bytes = c->max_bytes,
        .nonscaling = nonscaling,
        .layers = n,
    };
    return BG_OK;
}

static void rb_sizes(const bg_filter *f, bg__filter_sizes *out)
{
    const rb_chain *c = chain_of(f);
    bg__filter_sizes z = {0};
    uint32_t n = count_of(c);
    for (uint32_t i = 0; i < n; i++) {
        const rb_link *l = link_at(c, i);
        z.bits = add_sat(z.bits, l->bytes * 8);
        z.bytes = add_sat(z.bytes, l->bytes);
        z.capacity = add_sat(z.capacity, l->entries);
        z.hashes = l->hashes;
    }
    z.items = chain_size(c);
    *out = z;
}

static uint64_t rb_memory(const bg_filter *f, size_t (*size_of)(void *ptr))
{
    const rb_chain *c = chain_of(f);
    uint64_t n = size_of ? size_of((void *)(uintptr_t)c)
                         : sizeof *c + (lock_of(c) ? sizeof(pthread_mutex_t) : 0);
    for (const rb_table *t = c->tables; t; t = t->prev)
        n += size_of ? size_of((void *)(uintptr_t)t) : sizeof *t + (uint64_t)t->cap * sizeof t->slot[0];
    uint32_t count = count_of(c);
    for (uint32_t i = 0; i < count; i++) {
        const rb_link *l = link_at(c, i);
        bool own = l->data == (const uint8_t *)l->words;
        n += size_of ? size_of((void *)(uintptr_t)l)
                     : sizeof *l + (own ? (l->bytes / 8 + (l->bytes % 8 != 0)) * 8 : 0);
        if (l->apart)
            n += bg__aligned_size(l->data, size_of);
        if (l->adopted)
            n += size_of ? size_of(l->data) : l->bytes;
    }
    return n;
}

/* ---- read-only chains in a file mapping (src/file) ---------------------- */

int bg__rb_new_mapped(bg_filter **out, const bg_rb_chain *chain, uint64_t max_bytes, void *mapping,
                      size_t mapping_bytes)
{
    int rc = bg_rb_new(out, chain, max_bytes);
    if (rc != BG_OK) {
        bg__unmap(mapping, mapping_bytes);
        return rc;
    }
    rb_chain *c = chain_of(*out);
    c->f.read_only = true;
    c->mapping = mapping;
    c->mapping_bytes = mapping_bytes;
    return BG_OK;
}

int bg__rb_push_mapped(bg_filter *f, const bg_rb_link *fields, const uint8_t *array)
{
    rb_chain *c = chain_of(f);
    uint32_t n = atomic_load_explicit(&c->nfilters, memory_order_relaxed);
    if (!fits(c, fields->bytes) || n == UINT32_MAX)
        return BG_ETOOBIG;
    if (table_room(c, n + 1) != BG_OK)
        return BG_ENOMEM;
    rb_link *l = link_alloc_at(fields, fields->bytes, array);
    if (l == NULL)
        return BG_ENOMEM;
    chain_append(c, l);
    return BG_OK;
}

uint64_t bg__rb_max_bytes(const bg_filter *f)
{
    return chain_of(f)->max_bytes;
}

/* ---- getters --------------------------------------------------------- */

int bg_rb_chain_get(const bg_filter *f, bg_rb_chain *out)
{
    if (!is_rb(f) || out == NULL)
        return BG_EINVAL;
    const rb_chain *c = chain_of(f);
    *out = (bg_rb_chain){
        .size = chain_size(c), .nfilters = count_of(c), .options = c->options, .growth = c->growth};
    return BG_OK;
}

int bg_rb_link_get(const bg_filter *f, uint32_t i, bg_rb_link *out)
{
    if (!is_rb(f) || out == NULL || i >= count_of(chain_of(f)))
        return BG_EINVAL;
    link_fields(link_at(chain_of(f), i), out);
    return BG_OK;
}

int bg_rb_link_array(const bg_filter *f, uint32_t i, const uint8_t **data, size_t *len)
{
    if (!is_rb(f) || data == NULL || len == NULL || i >= count_of(chain_of(f)))
        return BG_EINVAL;
    const rb_link *l = link_at(chain_of(f), i);
    *data = link_data(l);
    *len = (size_t)l->bytes;
    return BG_OK;
}

int bg_rb_link_array_mut(bg_filter *f, uint32_t i, uint8_t **data, size_t *len)
{
    if (f != NULL && f->read_only && is_rb(f))
        return BG_EREADONLY;
    const uint8_t *d;
    int rc = bg_rb_link_array(f, i, &d, len);
    if (rc == BG_OK)
        *data = (uint8_t *)(uintptr_t)d;
    return rc;
}

/* ---- SCANDUMP / LOADCHUNK (REDISBLOOM_FORMAT.md section 8) ------------ */

/* Offsets inside the header: the chain's fields, then a link's. */
enum {
    H_SIZE = 0, H_NFILTERS = 8, H_OPTIONS = 12, H_GROWTH = 16,
    L_BYTES = 0, L_BITS = 8, L_SIZE = 16, L_ERROR = 24, L_BPE = 32, L_HASHES = 40,
    L_ENTRIES = 44, L_N2 = 52,
};
_Static_assert(L_N2 + 1 == BG_RB_HEADER_LINK, "a link's header is 53 bytes");
_Static_assert(H_GROWTH + 4 == BG_RB_HEADER_CHAIN, "the chain's header is 20 bytes");

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void put_f64(uint8_t *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    put_le(p, v, 8);
}

static double get_f64(const uint8_t *p)
{
    uint64_t v = get_le(p, 8);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

size_t bg_rb_header_size(const bg_filter *f)
{
    if (!is_rb(f))
        return 0;
    return BG_RB_HEADER_CHAIN + (size_t)count_of(chain_of(f)) * BG_RB_HEADER_LINK;
}

int bg_rb_header_encode(const bg_filter *f, void *buf, size_t cap, size_t *len)
{
    if (!is_rb(f) || buf == NULL)
        return BG_EINVAL;
    const rb_chain *c = chain_of(f);
    uint32_t n = count_of(c);
    size_t need = BG_RB_HEADER_CHAIN + (size_t)n * BG_RB_HEADER_LINK;
    if (cap < need)
        return BG_ETRUNC;
    uint8_t *p = buf;
    put_le(p + H_SIZE, chain_size(c), 8);
    put_le(p + H_NFILTERS, n, 4);
    put_le(p + H_OPTIONS, c->options, 4);
    put_le(p + H_GROWTH, c->growth, 4);
    for (uint32_t i = 0; i < n; i++) {
        const rb_link *l = link_at(c, i);
        uint8_t *q = p + BG_RB_HEADER_CHAIN + (size_t)i * BG_RB_HEADER_LINK;
        put_le(q + L_BYTES, l->bytes, 8);
        put_le(q + L_BITS, l->bytes * 8, 8);
        put_le(q + L_SIZE, link_size(l), 8);
        put_f64(q + L_ERROR, l->error);
        put_f64(q + L_BPE, l->bpe);
        put_le(q + L_HASHES, l->hashes, 4);
        put_le(q + L_ENTRIES, l->entries, 8);
        q[L_N2] = l->n2;
    }
    if (len)
        *len = need;
    return BG_OK;
}

static void read_link(const uint8_t *q, bg_rb_link *l)
{
    *l = (bg_rb_link){
        .bytes = get_le(q + L_BYTES, 8),
        .bits = get_le(q + L_BITS, 8),
        .size = get_le(q + L_SIZE, 8),
        .error = get_f64(q + L_ERROR),
        .bpe = get_f64(q + L_BPE),
        .hashes = (uint32_t)get_le(q + L_HASHES, 4),
        .entries = get_le(q + L_ENTRIES, 8),
        .n2 = q[L_N2],
    };
}

int bg_rb_header_decode(bg_filter **out, const void *buf, size_t len, uint64_t max_bytes)
{
    if (out == NULL)
        return BG_EINVAL;
    *out = NULL;
    if (buf == NULL && len != 0)
        return BG_EINVAL;
    const uint8_t *p = buf;
    if (len < BG_RB_HEADER_CHAIN)
        return BG_ECORRUPT;
    bg_rb_chain ch = {
        .size = get_le(p + H_SIZE, 8),
        .nfilters = (uint32_t)get_le(p + H_NFILTERS, 4),
        .options = (uint32_t)get_le(p + H_OPTIONS, 4),
        .growth = (uint32_t)get_le(p + H_GROWTH, 4),
    };
    if (ch.nfilters == 0 ||
        (uint64_t)len != BG_RB_HEADER_CHAIN + (uint64_t)ch.nfilters * BG_RB_HEADER_LINK)
        return BG_ECORRUPT;
    if (ch.options & ~BG_RB_OPTIONS_KNOWN)
        return BG_ECORRUPT;
    uint64_t sizes = 0, total = 0;
    bool over = false;
    for (uint32_t i = 0; i < ch.nfilters; i++) {
        bg_rb_link l;
        read_link(p + BG_RB_HEADER_CHAIN + (size_t)i * BG_RB_HEADER_LINK, &l);
        if (!bg__rb_link_ok(&l, l.bytes))
            return BG_ECORRUPT;
        sizes += l.size; /* mod 2^64, as RedisBloom sums them */
        if (l.bytes > UINT64_MAX - total)
            over = true;
        else
            total += l.bytes;
    }
    if (sizes != ch.size)
        return BG_ECORRUPT;
    uint64_t cap = max_bytes ? max_bytes : BG_DEFAULT_MAX_BYTES;
    if (over || total > cap)
        return BG_ETOOBIG;
    bg_filter *f;
    int rc = bg_rb_new(&f, &ch, max_bytes);
    if (rc != BG_OK)
        return rc;
    rb_chain *c = chain_of(f);
    if ((rc = table_room(c, ch.nfilters)) != BG_OK) {
        bg_filter_free(f);
        return rc;
    }
    for (uint32_t i = 0; i < ch.nfilters; i++) {
        bg_rb_link l;
        read_link(p + BG_RB_HEADER_CHAIN + (size_t)i * BG_RB_HEADER_LINK, &l);
        rb_link *n = link_alloc(&l, l.bytes);
        if (n == NULL) {
            bg_filter_free(f);
            return BG_ENOMEM;
        }
        chain_append(c, n);
    }
    *out = f;
    return BG_OK;
}

/* The link holding stream position pos, and pos's offset inside it; false
 * past the last link. */
static bool locate(const rb_chain *c, uint64_t pos, uint32_t *link, uint64_t *off)
{
    uint32_t n = count_of(c);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t b = link_at(c, i)->bytes;
        if (pos < b) {
            *link = i;
            *off = pos;
            return true;
        }
        pos -= b;
    }
    return false;
}

int bg_rb_dump_chunk(const bg_filter *f, int64_t it, int64_t *next, const uint8_t **data,
                     size_t *len)
{
    if (!is_rb(f) || next == NULL || data == NULL || len == NULL)
        return BG_EINVAL;
    *data = NULL;
    *len = 0;
    if (it == 0) {
        *next = 1;
        return 1;
    }
    *next = 0;
    uint32_t i;
    uint64_t off;
    if (it < 0 || !locate(chain_of(f), (uint64_t)it - 1, &i, &off))
        return 0;
    const rb_link *l = link_at(chain_of(f), i);
    uint64_t n = l->bytes - off;
    if (n > BG_RB_CHUNK_MAX)
        n = BG_RB_CHUNK_MAX;
    *data = link_data(l) + off;
    *len = (size_t)n;
    *next = it + (int64_t)n; /* it - 1 + n <= the stream's length, far below 2^63 */
    return 0;
}

int bg_rb_load_chunk(bg_filter *f, int64_t it, const void *data, size_t len)
{
    if (!is_rb(f) || (data == NULL && len != 0))
        return BG_EINVAL;
    if (f->read_only)
        return BG_EREADONLY;
    if (it <= 0 || (uint64_t)it < (uint64_t)len)
        return BG_ECORRUPT;
    uint64_t start = (uint64_t)it - len;
    uint32_t i;
    uint64_t off;
    if (start < 1 || !locate(chain_of(f), start - 1, &i, &off))
        return BG_EOFFSET;
    rb_link *l = link_at(chain_of(f), i);
    if (len > l->bytes - off)
        return BG_ECHUNK;
    if (len != 0)
        memcpy(link_data(l) + off, data, len);
    return BG_OK;
}

const bg__filter_ops bg__redisbloom_ops = {
    .variant = BG_VARIANT_REDISBLOOM,
    .name = "redisbloom",
    .cell_bits = 0,
    .create = rb_create,
    .clone = rb_clone,
    .destroy = rb_destroy,
    .test_and_add = rb_test_and_add,
    .contains = rb_contains,
    .hashes = rb_hashes,
    .keys = rb_keys,
    .clear = rb_clear,
    .stats = rb_stats,
    .layer_stats = rb_layer_stats,
    .scaling = rb_scaling,
    .sizes = rb_sizes,
    .hash = rb_hash,
    .memory = rb_memory,
};
