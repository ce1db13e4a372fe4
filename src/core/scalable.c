/* SPDX-License-Identifier: BSD-3-Clause */
/* The scalable variant (filter.h SCALABLE): a stack of standard or blocked
 * filters, the layers, that grows one layer at a time.
 *
 * HOW IT WORKS
 * Layer i is an ordinary bg_filter made by bg_filter_new with capacity
 * n_i = n0 e^i and error rate p_0 = p s, p_i = p (1 - s) (1 - t) t^(i-1)
 * for i >= 1 (e the expansion, t the tightening, s the first layer's share;
 * THE SCHEDULE), every layer with the filter's seed: a key is hashed once
 * and the same bg_hash probes every layer. A key is present if any layer has
 * it. test-and-add looks for the key in every layer, newest first (the newest
 * is the largest, so most present keys are found there at the first try);
 * only a key no layer has is added, to the newest layer, so repeats never
 * use capacity. When the newest layer's item count has reached its capacity
 * the next new key first opens layer i + 1. The compound false-positive rate
 * is 1 - prod_i (1 - p_i) <= sum_i p_i < p s + p (1 - s) = p, however many
 * layers there are (Almeida, Baquero, Preguica, Hutchison, "Scalable Bloom
 * Filters", 2007, whose series is s = 1 - t). RedisBloom's BF.* commands
 * behave the same way with e = EXPANSION, t = 0.5 and s = 0.5 (its first
 * link gets p / 2); its NONSCALING filters are one layer at p, not p s, and
 * so are ours.
 * Its table, bg__scalable_ops (at the end of this file), takes every call
 * of <bloomgate/filter.h> on such a filter; the layers are called through
 * their own tables, not the public calls, so a layer costs one indirect
 * call and no repeated argument checks.
 *
 * THE SCHEDULE
 * Why a first share apart from t: a stack that has grown deep is queried
 * through all its layers for every absent key, and its deepest layers hold
 * most of its items. With s = 1 - t, a small t starves the deep layers (at
 * t = 0.5 layer 13 gets p 2^-14: ~30 bits per item, k = 20) and a large t
 * starves the first (at t = 0.9 it gets p / 10, so every small filter, the
 * common case, grows by ~4.8 bits per item). Splitting the two keeps the
 * first layer at p s and gives the deeper ones the rest as a slow series:
 * with s = 0.5, t = 0.9, layers 1..13 get p 5e-2 .. p 1.4e-2, so a stack
 * grown from 100 to 10^6 items costs ~19 bits per item in its large layers
 * instead of ~29, and each of them stops an absent key sooner. The sum of
 * every layer's share is s + (1 - s) (1 - t) sum_i t^i = 1, so the bound
 * below holds unchanged. s = 1 - t is computed exactly as before
 * (p (1 - t) then t per layer), so such stacks keep their shapes bit for
 * bit.
 *
 * Mixed stacks (blocked_from = b > 0, with standard layers): layer i is
 * blocked when i >= b. The layer variant only changes how a layer is sized
 * and probed; its rate, the budget and the margins are the same, each
 * computed for the layer's own variant.
 *
 * THE BUDGET
 * That bound is on the layers' expected rates. One layer's actual rate is a
 * function of its bits and scatters around p_i: its relative sd is about
 * 0.55 k / sqrt(m_i) for a standard layer (the occupancy variance of the
 * fill, sqrt(e^-L (1 - (1 + L) e^-L)) / f per bit at L = ln 2, times k),
 * 13% at n_i = 100 and 4% at 1000, about twice that for blocked layers.
 * So the rate of a layer that is retired is computed, once, from its bits (r_j: exact, standard.c EXACT RATE, for a
 * standard layer of up to 4096 bits, where the fill model (X / m)^k is 1% to
 * 15% low; else the variant's `estimate`, exact for blocked layers and
 * within ~0.1% for larger standard ones), and the next layer is sized for
 * what the ones before it left of the budget:
 *   p_i' = min(p_i, B_i),  B_i = sum_{j <= i} p_j - sum_{j < i} r_j,
 * but at least p_i / 8 (so a freak layer cannot make the next one huge).
 * The retired layers' rates then add up to at most sum_{j < i} p_j unless
 * that floor was hit, and the newest layer, sized for at most its share,
 * has sum_{j > i} p_j (= p (1 - s) t^i; p_i for s = t = 1/2) of slack for
 * its own scatter. (B_i above p_i is not handed on: the newest layer's slack does
 * not grow with it, so a small layer given the surplus could overshoot by
 * more than that slack.)
 *
 * MARGINS
 * The budget corrects a layer only after it is retired, and the floor p_i / 8
 * caps the correction; a small layer can miss by more than either covers
 * (at n0 = 10 the first layer's rate scatters by ~40% and its fill model is
 * 15% low, so without margins most stacks would end above p). So every
 * scaling layer is
 *   - sized for p_i' / (1 + 3 sd), sd = c k / sqrt(m) its own scatter at that
 *     size (c = 0.55 standard, 1.1 blocked; with_margin), so that its rate
 *     passes p_i' in ~1 layer of 1000 (were the scatter Gaussian);
 *   - at least LAYER_MIN_BITS = 1024 bits: below that neither model holds
 *     (a handful of keys, a few blocks), and 128 bytes is nothing to save.
 *     Its k is then the best for (n_i, 1024) and its rate far below p_i'
 *     (unless max_bytes has no 128 bytes left for it).
 * tests/unit/test_scalable.c (rate_below_p_per_filter) holds every stack
 * below p over many seeds, from n0 = 10 to 1000 at p = 0.01 and 0.001,
 * standard and blocked layers. Memory, a first layer at p = 0.01 against a
 * plain filter at its rate p s: standard +6% at n0 = 100, +2.2% at 1000,
 * +0.7% at 10^4, +0.2% at 10^5; blocked (whole blocks) +0-4%, +1.3%, +0.4%;
 * at n0 = 10 the 1024-bit minimum. Capacities, and so the layer counts
 * RedisBloom users see, do not change. Non-scaling filters are one layer at
 * p, as a standard filter: no margin, no floor.
 *
 * GROWTH AND ITS LIMITS
 * A new layer may fail: BG_EFULL (non-scaling), BG_ELAYERS (max_layers
 * reached, or p_i below what the layer variant can be sized for:
 * BG_BLOCKED_MIN_P for blocked layers, which with p = 0.01, t = 0.5 is
 * layer 33; or p_i rounding to 0), BG_ETOOBIG (n_i overflows 64 bits, or the
 * layer does not fit in what max_bytes leaves: every layer is made with
 * max_bytes = the budget not used by the layers before it, rounded down to
 * whole 64-bit words), BG_ENOMEM. The key is then not added. All but
 * BG_ENOMEM are permanent until bg_filter_clear, so the first one is
 * remembered (`stuck`) and later adds fail at once, without the lock or the
 * sizing solver.
 *
 * THREADS
 * The layers' pointers (LAYOUT) and a count: a new layer is built
 * completely, its pointer stored, then the count raised, both with release
 * order; readers load the count with acquire order, so every layer below
 * the count they see is complete, and they never lock or wait. Adds run
 * lock-free on the layers' atomic bits and counters (filter.h THREADS);
 * with concurrent writers growth takes a mutex, and the thread that gets it
 * first checks that no one grew the stack meanwhile. Consequences, all
 * documented in filter.h:
 *   - a layer can overshoot its capacity by up to the number of threads
 *     adding at the moment it fills (each saw it not yet full);
 *   - two threads adding the same new key at once may both get 1 (as with a
 *     plain filter); one of them may then have added it to a layer that a
 *     growth just retired, the other to the new one;
 *   - bg_filter_clear and bg_filter_free are not concurrent-safe.
 * The mutex is a pthread mutex, not C11's mtx_t: ThreadSanitizer (GCC 12)
 * intercepts only the former. */
#define _POSIX_C_SOURCE 200809L /* pthread mutexes under -std=c11 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "alloc_internal.h"
#include "cpu.h"
#include "hash_inline.h"
#include "scalable_internal.h"

/* LAYOUT
 * A small filter is most of what a Redis server holds (one per key), so the
 * stack's own state is kept small: layer 0's pointer inline, the others in
 * `more`, an array allocated at the first growth and doubled when full. A
 * doubled array replaces the old one for new readers, but a reader that
 * loaded the old one may still be reading it, so the old ones stay (chained
 * through `prev`, half the size of the live one together) until the filter
 * is freed. Each slot also keeps the measured rate of the layer below it
 * (THE BUDGET), so that rates cost no memory before there is a retired
 * layer. The mutex that serializes growth exists only for concurrent
 * writers; a single writer grows the stack itself. The state lives in the
 * same allocation as the filter that owns it. */
typedef struct layer_slots {
    struct layer_slots *prev; /* the array this one replaced, or NULL */
    uint32_t cap;
    struct {
        _Atomic(bg_filter *) layer; /* layer i + 1 */
        double rate_below;          /* retired layer i's measured rate r_i, or NaN */
    } slot[];
} layer_slots;

/* The growth parameters are kept in their narrowest types (expansion <=
 * BG_MAX_EXPANSION, max_layers and blocked_from <= BG_MAX_LAYERS, the count
 * <= max_layers, a growth error >= -128); the seed, the concurrency mode
 * and n0 are the filter's own fields (seed, single_writer, capacity, which
 * a scalable filter has no other use for). params_of gives them back as a
 * bg__scalable_params. */
struct bg__scalable {
    double error_rate;
    double tightening;
    double first_share;
    uint64_t max_bytes;
    uint16_t expansion;
    uint8_t max_layers;
    uint8_t layer_variant;
    uint8_t blocked_from;
    bool nonscaling;
    _Atomic uint8_t count;
    _Atomic int8_t stuck;             /* the permanent growth error met, or 0 */
    _Atomic(bg_filter *) first;       /* layer 0 */
    _Atomic(layer_slots *) more;      /* layers 1.., or NULL before the first growth */
};

_Static_assert(BG_MAX_EXPANSION <= UINT16_MAX && BG_MAX_LAYERS <= UINT8_MAX,
               "the growth parameters' narrow types");

/* The outer filter and its state, one allocation, with a tail for a filter
 * that writers share (the mutex held while a layer is added) or that lies
 * in a file mapping it owns (read-only: it never grows). */
typedef struct scalable_block {
    bg_filter f;
    struct bg__scalable s;
    union {
        pthread_mutex_t grow;
        struct {
            void *at;
            size_t bytes;
        } mapping;
    } tail[];
} scalable_block;

/* A one-layer filter's block fits jemalloc's 128-byte size class (the
 * Redis module's allocator), as small filters are what a server holds
 * most of. */
_Static_assert(sizeof(scalable_block) <= 128, "a scalable filter's block");

static struct bg__scalable *state_of(const bg_filter *f)
{
    return &((scalable_block *)(uintptr_t)f)->s;
}

static bg__scalable_params params_of(const bg_filter *f)
{
    const struct bg__scalable *s = state_of(f);
    return (bg__scalable_params){
        .capacity = f->capacity,
        .error_rate = s->error_rate,
        .tightening = s->tightening,
        .first_share = s->first_share,
        .blocked_from = s->blocked_from,
        .max_bytes = s->max_bytes,
        .seed = f->seed,
        .layer_variant = (bg_variant)s->layer_variant,
        .expansion = s->expansion,
        .max_layers = s->max_layers,
        .nonscaling = s->nonscaling,
        .single_writer = f->single_writer,
    };
}

/* The growth mutex, or NULL: a single writer grows the stack itself. */
static pthread_mutex_t *grow_lock(bg_filter *f)
{
    return f->has_tail && !f->read_only ? &((scalable_block *)f)->tail[0].grow : NULL;
}

/* Keys per step of the batch calls. */
#define CHUNK 64

/* ---- parameters --------------------------------------------------------- */

static bool rate_ok(double x)
{
    return x > 0.0 && x < 1.0; /* false for NaN */
}

int bg__scalable_params_check(const bg__scalable_params *p)
{
    if (p->layer_variant != BG_VARIANT_STANDARD && p->layer_variant != BG_VARIANT_BLOCKED)
        return BG_EVARIANT;
    if (p->capacity == 0 || !rate_ok(p->error_rate) || !rate_ok(p->tightening) ||
        !rate_ok(p->first_share) || p->max_layers < 1 || p->max_layers > BG_MAX_LAYERS ||
        p->max_bytes == 0 || p->blocked_from >= p->max_layers)
        return BG_ECORRUPT;
    /* A mixed stack starts standard; a non-scaling filter is one layer at p. */
    if (p->blocked_from != 0 && p->layer_variant != BG_VARIANT_STANDARD)
        return BG_ECORRUPT;
    if (p->nonscaling && (p->blocked_from != 0 || !bg__scalable_classic(p)))
        return BG_ECORRUPT;
    if (p->nonscaling ? p->expansion != 0 : p->expansion < 1 || p->expansion > BG_MAX_EXPANSION)
        return BG_ECORRUPT;
    return BG_OK;
}

bool bg__scalable_layer_capacity(const bg__scalable_params *p, uint32_t i, uint64_t *out)
{
    uint64_t n = p->capacity;
    for (uint32_t j = 0; j < i && !p->nonscaling; j++) {
        if (n > UINT64_MAX / p->expansion)
            return false;
        n *= p->expansion;
    }
    *out = n;
    return true;
}

bool bg__scalable_classic(const bg__scalable_params *p)
{
    return p->first_share == 1.0 - p->tightening;
}

bg_variant bg__scalable_layer_variant(const bg__scalable_params *p, uint32_t i)
{
    return p->blocked_from != 0 && i >= p->blocked_from ? BG_VARIANT_BLOCKED : p->layer_variant;
}

/* p_0 = p s, p_i = p (1 - s) (1 - t) t^(i-1) (THE SCHEDULE), by repeated
 * multiplication (no pow(): the same bits on every platform); for s = 1 - t
 * the same operations as p (1 - t) t^i, so a classic stack's rates are what
 * they always were. p itself for a non-scaling filter. */
static double layer_rate(const bg__scalable_params *p, uint32_t i)
{
    if (p->nonscaling)
        return p->error_rate;
    double r = p->error_rate * p->first_share;
    if (i == 0)
        return r;
    if (bg__scalable_classic(p))
        r *= p->tightening;
    else
        r = p->error_rate * (1.0 - p->first_share) * (1.0 - p->tightening);
    for (uint32_t j = 1; j < i; j++)
        r *= p->tightening;
    return r;
}

/* Each scaling layer is sized for target / (1 + MARGIN_Z sd) (MARGINS), sd
 * its rate's relative scatter at that size. */
#define MARGIN_Z 3.0

/* A scaling layer has at least this many bits (MARGINS). */
#define LAYER_MIN_BITS 1024u

/* The rate to size a scaling layer of n keys for (MARGINS), so that its
 * actual rate stays below `target`: target / (1 + z sd), where sd = c k /
 * sqrt(m) is the relative scatter of the rate at the m, k that rate itself
 * gives (c = 0.55 standard, 1.1 blocked: THE BUDGET). sd grows slowly as
 * the rate falls, so a few rounds of the fixed point settle it. */
static double with_margin(bg_variant v, uint64_t n, double target)
{
    double scatter = v == BG_VARIANT_BLOCKED ? 1.1 : 0.55;
    double r = target;
    for (int round = 0; round < 4; round++) {
        bg_sizing s = {.n = n, .p = r};
        if (bg_sizing_solve(v, &s, BG_MAX_BITS) != BG_OK)
            return r; /* bg_filter_new gives the verdict */
        r = target / (1.0 + MARGIN_Z * scatter * s.k / sqrt((double)s.m));
    }
    return r;
}

/* Layer i for a stack whose layers below it use `used` bytes and left
 * `rate_left` of the rate (THE BUDGET; layer_rate(p, 0) for layer 0). */
static int layer_new(const bg__scalable_params *p, uint32_t i, uint64_t used, double rate_left,
                     bg_filter **out)
{
    *out = NULL;
    uint64_t cap;
    if (!bg__scalable_layer_capacity(p, i, &cap))
        return BG_ETOOBIG;
    double rate = layer_rate(p, i);
    bg_variant variant = bg__scalable_layer_variant(p, i);
    /* Layer 0's rate is what the caller asked for: the solver's verdict
     * (BG_EINVAL) stands. A later layer's is ours: too small a rate means
     * the stack cannot tighten further. */
    bool blocked = variant == BG_VARIANT_BLOCKED;
    if (i > 0 && !(blocked ? rate >= BG_BLOCKED_MIN_P : rate > 0.0))
        return BG_ELAYERS;
    if (rate_left < rate)
        rate = rate_left > rate / 8 ? rate_left : rate / 8;
    if (blocked && rate < BG_BLOCKED_MIN_P && i > 0)
        rate = BG_BLOCKED_MIN_P;
    uint64_t bytes_left = used < p->max_bytes ? (p->max_bytes - used) & ~UINT64_C(7) : 0;
    if (bytes_left == 0)
        return BG_ETOOBIG;
    uint64_t bits = 0;
    if (!p->nonscaling) {
        double target = rate;
        rate = with_margin(variant, cap, target);
        if (blocked && rate < BG_BLOCKED_MIN_P && target >= BG_BLOCKED_MIN_P)
            rate = BG_BLOCKED_MIN_P;
        bg_sizing s = {.n = cap, .p = rate};
        if (bg_sizing_solve(variant, &s, BG_MAX_BITS) == BG_OK &&
            s.m < LAYER_MIN_BITS && bytes_left >= LAYER_MIN_BITS / 8) {
            bits = LAYER_MIN_BITS; /* k and the rate follow from (n, m) */
            rate = 0.0;
        }
    }
    bg_filter_options o = {
        .variant = variant,
        .capacity = cap,
        .error_rate = rate,
        .bits = bits,
        .seed = p->seed,
        .max_bytes = bytes_left,
        .concurrency = p->single_writer ? BG_SINGLE_WRITER : BG_CONCURRENT_WRITERS,
    };
    int rc = bg_filter_new(out, &o);
    return rc == BG_EOVERFLOW ? BG_ETOOBIG : rc;
}

/* ---- the stack ------------------------------------------------------------ */

static uint32_t count_of(const struct bg__scalable *s)
{
    return atomic_load_explicit(&s->count, memory_order_acquire);
}

/* Layer i, below a count loaded with count_of: the acquire load ordered it
 * after the layer's publication, so a relaxed load suffices. */
static bg_filter *layer_at(const struct bg__scalable *s, uint32_t i)
{
    if (i == 0)
        return atomic_load_explicit(&s->first, memory_order_relaxed);
    /* Acquire: a doubled array's slots were filled before it was stored. */
    const layer_slots *m = atomic_load_explicit(&s->more, memory_order_acquire);
    return atomic_load_explicit(&m->slot[i - 1].layer, memory_order_relaxed);
}

uint32_t bg__scalable_count(const bg_filter *f)
{
    return count_of(state_of(f));
}

bg_filter *bg__scalable_layer(const bg_filter *f, uint32_t i)
{
    return layer_at(state_of(f), i);
}

void bg__scalable_params_get(const bg_filter *f, bg__scalable_params *out)
{
    *out = params_of(f);
}

/* Room for layer n (n >= 1) in `more`: the array, doubled (or made) when
 * full, the old one kept for readers that may still hold it (LAYOUT).
 * BG_OK or BG_ENOMEM. Under the writer's exclusion. */
static int make_room(struct bg__scalable *s, uint32_t n)
{
    layer_slots *m = atomic_load_explicit(&s->more, memory_order_relaxed);
    if (m != NULL && n - 1 < m->cap)
        return BG_OK;
    uint32_t cap = m != NULL ? 2 * m->cap : 1;
    if (cap > BG_MAX_LAYERS - 1)
        cap = BG_MAX_LAYERS - 1;
    layer_slots *g = bg__malloc(sizeof *g + cap * sizeof g->slot[0]);
    if (g == NULL)
        return BG_ENOMEM;
    g->prev = m;
    g->cap = cap;
    for (uint32_t i = 0; i < cap; i++) {
        bool old = m != NULL && i < m->cap;
        atomic_init(&g->slot[i].layer,
                    old ? atomic_load_explicit(&m->slot[i].layer, memory_order_relaxed) : NULL);
        g->slot[i].rate_below = old ? m->slot[i].rate_below : NAN;
    }
    atomic_store_explicit(&s->more, g, memory_order_release);
    return BG_OK;
}

/* Appends a complete layer (room made for it): pointer first, then the
 * count, both released. */
static void publish(struct bg__scalable *s, uint32_t n, bg_filter *layer)
{
    if (n == 0) {
        atomic_store_explicit(&s->first, layer, memory_order_release);
    } else {
        layer_slots *m = atomic_load_explicit(&s->more, memory_order_relaxed);
        atomic_store_explicit(&m->slot[n - 1].layer, layer, memory_order_release);
    }
    atomic_store_explicit(&s->count, (uint8_t)(n + 1), memory_order_release);
}

static int shell_new(bg_filter **out, const bg__scalable_params *p, void *mapping,
                     size_t mapping_bytes)
{
    *out = NULL;
    bool tail = mapping != NULL || !p->single_writer;
    scalable_block *b = bg__calloc(1, sizeof *b + (tail ? sizeof b->tail[0] : 0));
    if (b == NULL)
        return BG_ENOMEM;
    bg_filter *f = &b->f;
    if (mapping != NULL) {
        b->tail[0].mapping.at = mapping;
        b->tail[0].mapping.bytes = mapping_bytes;
        f->read_only = true;
    } else if (tail && pthread_mutex_init(&b->tail[0].grow, NULL) != 0) {
        bg__free(b);
        return BG_ENOMEM;
    }
    struct bg__scalable *s = &b->s;
    f->capacity = p->capacity;
    s->error_rate = p->error_rate;
    s->tightening = p->tightening;
    s->first_share = p->first_share;
    s->blocked_from = (uint8_t)p->blocked_from;
    s->max_bytes = p->max_bytes;
    s->expansion = (uint16_t)p->expansion;
    s->max_layers = (uint8_t)p->max_layers;
    s->layer_variant = (uint8_t)p->layer_variant;
    s->nonscaling = p->nonscaling;
    atomic_init(&s->first, NULL);
    atomic_init(&s->more, NULL);
    atomic_init(&s->count, 0);
    atomic_init(&s->stuck, 0);
    f->ops = &bg__scalable_ops;
    f->seed = p->seed;
    f->single_writer = p->single_writer;
    f->has_tail = tail;
    atomic_init(&f->items, 0);
    *out = f;
    return BG_OK;
}

int bg__scalable_shell(bg_filter **out, const bg__scalable_params *p)
{
    return shell_new(out, p, NULL, 0);
}

int bg__scalable_shell_mapped(bg_filter **out, const bg__scalable_params *p, void *mapping,
                              size_t mapping_bytes)
{
    return shell_new(out, p, mapping, mapping_bytes);
}

int bg__scalable_push(bg_filter *f, bg_filter *layer)
{
    struct bg__scalable *s = state_of(f);
    uint32_t n = count_of(s);
    if (n > 0 && make_room(s, n) != BG_OK)
        return BG_ENOMEM;
    publish(s, n, layer);
    return BG_OK;
}

/* The layer borrows its words from the outer filter's mapping, which only
 * the outer filter unmaps (bg__filter_wrap_mapping with no mapping). */
int bg__scalable_push_mapped(bg_filter *f, const bg__filter_shape *sh, void *words)
{
    bg_filter *l;
    int rc = bg__filter_wrap_mapping(&l, sh, words, NULL, 0);
    if (rc == BG_OK && (rc = bg__scalable_push(f, l)) != BG_OK)
        bg_filter_free(l);
    return rc;
}

static int scalable_new(bg_filter **out, const bg_filter_options *o)
{
    *out = NULL;
    if (o->capacity == 0 || !rate_ok(o->error_rate) || o->bits != 0 || o->hashes != 0)
        return BG_EINVAL;
    double tightening = o->tightening != 0 ? o->tightening : 0.5;
    bg__scalable_params p = {
        .layer_variant = o->layer_variant ? o->layer_variant : BG_VARIANT_STANDARD,
        .capacity = o->capacity,
        .error_rate = o->error_rate,
        .expansion = o->nonscaling ? 0 : o->expansion ? o->expansion : 2,
        .tightening = tightening,
        .first_share = o->first_share != 0 ? o->first_share : 1.0 - tightening,
        .blocked_from = o->blocked_from,
        .max_layers = o->max_layers ? o->max_layers : BG_MAX_LAYERS,
        .max_bytes = o->max_bytes ? o->max_bytes : BG_DEFAULT_MAX_BYTES,
        .nonscaling = o->nonscaling,
        .seed = o->seed,
        .single_writer = o->concurrency == BG_SINGLE_WRITER,
    };
    /* RedisBloom: "Nonscaling filters cannot expand"; nor do they have a
     * schedule: one layer at p. */
    if (o->nonscaling && (o->expansion != 0 || o->first_share != 0 || o->blocked_from != 0))
        return BG_EINVAL;
    int rc = bg__scalable_params_check(&p);
    if (rc != BG_OK)
        return rc == BG_EVARIANT ? BG_EVARIANT : BG_EINVAL;
    bg_filter *layer;
    if ((rc = layer_new(&p, 0, 0, layer_rate(&p, 0), &layer)) != BG_OK)
        return rc;
    bg_filter *f;
    if ((rc = bg__scalable_shell(&f, &p)) != BG_OK) {
        bg_filter_free(layer);
        return rc;
    }
    (void)bg__scalable_push(f, layer); /* layer 0 takes no room */
    *out = f;
    return BG_OK;
}

static void scalable_free(bg_filter *f)
{
    struct bg__scalable *s = state_of(f);
    uint32_t n = count_of(s);
    for (uint32_t i = 0; i < n; i++)
        bg_filter_free(layer_at(s, i));
    for (layer_slots *m = atomic_load_explicit(&s->more, memory_order_relaxed), *prev; m;
         m = prev) {
        prev = m->prev;
        bg__free(m);
    }
    scalable_block *b = (scalable_block *)f;
    if (grow_lock(f) != NULL)
        pthread_mutex_destroy(grow_lock(f));
    else if (f->read_only)
        bg__unmap(b->tail[0].mapping.at, b->tail[0].mapping.bytes);
    bg__free(f); /* the scalable_block */
}

static int scalable_clear(bg_filter *f)
{
    struct bg__scalable *s = state_of(f);
    uint32_t n = count_of(s);
    layer_slots *m = atomic_load_explicit(&s->more, memory_order_relaxed);
    for (uint32_t i = 1; i < n; i++) {
        bg_filter_free(layer_at(s, i));
        atomic_store_explicit(&m->slot[i - 1].layer, NULL, memory_order_relaxed);
    }
    for (uint32_t i = 0; m != NULL && i < m->cap; i++)
        m->slot[i].rate_below = NAN;
    atomic_store_explicit(&s->count, 1, memory_order_release);
    atomic_store_explicit(&s->stuck, 0, memory_order_relaxed);
    bg_filter *l = layer_at(s, 0);
    return l->ops->clear(l);
}

/* ---- adding and querying ------------------------------------------------- */

static bool full(const bg_filter *l)
{
    return bg__load(&l->items) >= l->capacity;
}

/* What layers [0, n) left of the rate for layer n (THE BUDGET): the sum of
 * the nominal rates up to n minus the retired layers' measured ones, each
 * measured once. Under the mutex. */
static double budget_for(struct bg__scalable *s, const bg__scalable_params *p, uint32_t n)
{
    double budget = layer_rate(p, n);
    layer_slots *m = atomic_load_explicit(&s->more, memory_order_relaxed);
    for (uint32_t j = 0; j < n; j++) {
        double *rate_of = &m->slot[j].rate_below; /* room for layer n made: j < n <= cap */
        if (isnan(*rate_of)) {
            const bg_filter *l = layer_at(s, j);
            double r = l->ops->exact_rate ? l->ops->exact_rate(l) : NAN;
            if (isnan(r)) {
                bg_filter_stats st = {0};
                l->ops->estimate(l, &st);
                r = st.estimated_fp_rate;
            }
            *rate_of = r;
        }
        budget += layer_rate(p, j) - *rate_of;
    }
    return budget;
}

/* Adds layer n to a stack of n layers whose newest is full. BG_OK also when
 * another thread did it first; else a growth error (GROWTH AND ITS LIMITS). */
static int grow(bg_filter *f, uint32_t n)
{
    struct bg__scalable *s = state_of(f);
    int rc = atomic_load_explicit(&s->stuck, memory_order_relaxed);
    if (rc != 0)
        return rc;
    if (s->nonscaling)
        return BG_EFULL;
    if (n >= s->max_layers)
        return BG_ELAYERS;
    pthread_mutex_t *lock = grow_lock(f);
    if (lock != NULL)
        pthread_mutex_lock(lock);
    if (count_of(s) == n && (rc = make_room(s, n)) == BG_OK) {
        uint64_t used = 0;
        for (uint32_t i = 0; i < n; i++)
            used += layer_at(s, i)->nwords * 8;
        bg_filter *layer;
        bg__scalable_params p = params_of(f);
        rc = layer_new(&p, n, used, budget_for(s, &p, n), &layer);
        if (rc == BG_OK)
            publish(s, n, layer);
        else if (rc != BG_ENOMEM)
            atomic_store_explicit(&s->stuck, (int8_t)rc, memory_order_relaxed);
    }
    if (lock != NULL)
        pthread_mutex_unlock(lock);
    return rc;
}

/* QUERIES
 * An absent key is looked for in every layer, so a deep stack pays per
 * layer what a plain filter pays once. So no layer costs a call: the
 * standard and blocked probes are inlined here (the layers' own code, the
 * same bits: filter.h BIT LAYOUT), and a key's blocked masks are made once
 * and serve every blocked layer with the same k (which word of a block and
 * which bit of it a probe takes depend on the hash alone; only the block
 * depends on the layer).
 *
 * A batch goes layer by layer, newest first, over a chunk's keys: within
 * one layer the keys' lines are independent loads of one array, and for a
 * layer larger than PREFETCH_MIN_BYTES (out of L1) the line of the key
 * AHEAD places on is asked for before each probe, so that about AHEAD
 * misses are in flight; smaller layers are probed where they sit. Going key
 * by key through every layer instead, with the far layers' lines of the
 * next 16 keys asked for together (96 lines at once on a stack grown from
 * 100 to 10^6 items, 6 of its 14 layers far), costs 1.3-1.8x as much
 * (bench/stack_bench.c). A key found in a layer is not looked for in the
 * older ones. */
#define AHEAD 16
#define PREFETCH_MIN_BYTES (UINT64_C(32) << 10)

/* The probes are inlined into every loop that calls them (GCC would
 * otherwise keep one out-of-line copy, a call per layer). */
#if defined(__GNUC__)
#define PROBE_INLINE __attribute__((always_inline)) inline
#else
#define PROBE_INLINE inline
#endif

/* A block, as one vector: the compiler makes it what the CPU it targets
 * has (four SSE2 registers on the x86-64 baseline). */
typedef uint64_t block_vec __attribute__((vector_size(64)));

/* A key's probes in a blocked layer of k probes: word w of `mask` holds
 * the bits the key needs in word w of its block. */
typedef struct key_masks {
    block_vec mask;
    uint32_t k; /* 0: not made yet */
} key_masks;

/* Where the SIMD code is compiled (cpu.h), the block is read with plain
 * vector loads, as the blocked variant's SIMD implementations read it
 * (blocked_avx512.c): an aligned 64-bit load is atomic on those CPUs
 * either way, and a query racing with an add may answer either way
 * (filter.h THREADS). Elsewhere, ThreadSanitizer builds included, every
 * word is a C11 atomic load. */
static PROBE_INLINE bool blocked_has(const bg_filter *l, bg_hash h, key_masks *km)
{
    if (km->k != l->k) {
        unsigned st = bg__block_start(h.h1);
        uint64_t m[8] = {0};
        for (uint32_t j = 0; j < l->k; j++)
            m[(st + j) & 7] = bg__probe_mask(h.h2, j);
        memcpy(&km->mask, m, sizeof m);
        km->k = l->k;
    }
#if BG__SIMD_X86
    typedef uint64_t half_vec __attribute__((vector_size(32)));
    typedef uint64_t quarter_vec __attribute__((vector_size(16)));
    block_vec b;
    memcpy(&b, (const void *)bg__block_of(l, h.h1), sizeof b);
    block_vec miss = km->mask & ~b;
    half_vec lo, hi;
    memcpy(&lo, &miss, sizeof lo);
    memcpy(&hi, (const char *)&miss + sizeof lo, sizeof hi);
    lo |= hi;
    quarter_vec q0, q1;
    memcpy(&q0, &lo, sizeof q0);
    memcpy(&q1, (const char *)&lo + sizeof q0, sizeof q1);
    q0 |= q1;
    return (q0[0] | q0[1]) == 0;
#else
    const _Atomic uint64_t *b = bg__block_of(l, h.h1);
    uint64_t m[8], missing = 0;
    memcpy(m, &km->mask, sizeof m);
    for (unsigned w = 0; w < 8; w++)
        missing |= m[w] & ~bg__load(&b[w]);
    return missing == 0;
#endif
}

static PROBE_INLINE bool standard_has(const bg_filter *l, bg_hash h)
{
    bg_layout_probe p = bg_layout_probe_first(h, l->m);
    for (;;) {
        if (!(bg__load(&l->words[p.x >> 6]) & bg__bit(p.x & 63)))
            return false;
        if (p.j + 1 == l->k)
            return true;
        bg_layout_probe_next(&p);
    }
}

/* Whether layer l is blocked. A layer is standard or blocked, and every
 * standard filter has the one table bg__standard_ops (blocked ones have a
 * table per instruction set), so comparing the pointer, which the call
 * through the layer loaded anyway, tells them apart without reading the
 * table: a key's lookup in a filter not used for a while then waits for one
 * cache miss fewer. */
static PROBE_INLINE bool is_blocked(const bg_filter *l)
{
    return l->ops != &bg__standard_ops;
}

static PROBE_INLINE bool layer_has(const bg_filter *l, bg_hash h, key_masks *km)
{
    return is_blocked(l) ? blocked_has(l, h, km) : standard_has(l, h);
}

/* Adds h, which layers [0, checked) did not contain a moment ago: checks the
 * layers that could have gained it since (those above, and the newest when
 * it is no longer the one this add would go to), grows if the newest is full,
 * then adds to the newest. 1, 0 or a growth error. */
static int add_absent(bg_filter *f, bg_hash h, uint32_t checked)
{
    struct bg__scalable *s = state_of(f);
    key_masks km = {.k = 0};
    for (;;) {
        uint32_t n = count_of(s);
        for (uint32_t i = n - 1; i-- > checked;)
            if (layer_has(layer_at(s, i), h, &km))
                return 0;
        bg_filter *top = layer_at(s, n - 1);
        if (!full(top))
            return top->ops->test_and_add(top, h); /* 0 if it has the key */
        if (n - 1 >= checked && layer_has(top, h, &km))
            return 0;
        int rc = grow(f, n);
        if (rc != BG_OK)
            return rc;
        checked = n;
    }
}

/* Whether any of layers [0, n) has h, newest first. */
static int any_layer(const struct bg__scalable *s, uint32_t n, bg_hash h)
{
    key_masks km = {.k = 0};
    for (uint32_t i = n; i-- > 0;)
        if (layer_has(layer_at(s, i), h, &km))
            return 1;
    return 0;
}

static int scalable_contains(const bg_filter *f, bg_hash h)
{
    const struct bg__scalable *s = state_of(f);
    return any_layer(s, count_of(s), h);
}

/* The newest layer is not searched first: its own test-and-add says 0 for
 * a key it has (add_absent searches it before growing past it). */
static int scalable_test_and_add(bg_filter *f, bg_hash h)
{
    const struct bg__scalable *s = state_of(f);
    uint32_t n = count_of(s);
    if (any_layer(s, n - 1, h))
        return 0;
    return add_absent(f, h, n - 1);
}

/* The line where a key's probes start in layer l, blocked or standard. */
static PROBE_INLINE const void *first_line(const bg_filter *l, bg_hash h, bool blocked)
{
    return blocked ? (const void *)bg__block_of(l, h.h1)
                   : (const void *)&l->words[bg_layout_reduce(h.h1, l->m) >> 6];
}

/* One layer's pass of find_present over the keys not found yet: `found`
 * with the keys this layer has added. `blocked` is a constant at each call,
 * so that each call compiles to one variant's probe, chosen once per layer
 * instead of once per key. A layer out of L1 (`far`) has the line of the
 * key AHEAD places on asked for before each probe. */
static PROBE_INLINE uint64_t find_in_layer(const bg_filter *l, const bg_hash *h, size_t count,
                                           key_masks *km, uint64_t found, bool far, bool blocked)
{
    if (far)
        for (size_t i = 0; i < count && i < AHEAD; i++)
            bg__prefetch(first_line(l, h[i], blocked));
    for (size_t i = 0; i < count; i++) {
        if (far && i + AHEAD < count)
            bg__prefetch(first_line(l, h[i + AHEAD], blocked));
        if (!(found >> i & 1) &&
            (blocked ? blocked_has(l, h[i], &km[i]) : standard_has(l, h[i])))
            found |= UINT64_C(1) << i;
    }
    return found;
}

/* present[i] = whether any of layers [0, n) has h[i] (count <= CHUNK): layer
 * by layer, newest first (QUERIES); a single layer through its own batch
 * call. An AVX2 copy tests a block in two vector halves. */
BG__AVX2_CLONE static void find_present(const struct bg__scalable *s, uint32_t n, const bg_hash *h, size_t count,
                         uint8_t *present)
{
    if (n == 1) {
        /* One layer: its own batch call, whose loop the variant tunes
         * (SIMD, deeper prefetching) for a single array. */
        bg_filter *layer = layer_at(s, 0); /* contains only: no write */
        (void)layer->ops->hashes(layer, h, count, present, false);
        return;
    }
    _Static_assert(CHUNK <= 64, "found is one bit per key of a chunk");
    key_masks km[CHUNK];
    for (size_t i = 0; i < count; i++)
        km[i].k = 0; /* made when a blocked layer needs them */
    uint64_t found = 0;
    for (uint32_t j = n; j-- > 0;) {
        const bg_filter *l = layer_at(s, j); /* contains only: no write */
        bool far = l->nwords * 8 > PREFETCH_MIN_BYTES;
        if (is_blocked(l))
            found = find_in_layer(l, h, count, km, found, far, true);
        else
            found = find_in_layer(l, h, count, km, found, far, false);
    }
    for (size_t i = 0; i < count; i++)
        present[i] = (uint8_t)(found >> i & 1);
}

/* ONE LAYER
 * A stack of one layer answers a batch through the layer's own batch call,
 * whose loop the variant tunes for a single array (SIMD hashing of eight
 * keys at a time, SIMD probes, deeper prefetching): a query always, an add
 * when the stack's one writer finds room in the layer for every key of the
 * batch, since then no key can make it grow. The layer's add says 0 for a
 * key it has and counts the new ones, as add_absent would key by key. */
static bg_filter *direct_layer(const bg_filter *f, size_t count, bool adding)
{
    const struct bg__scalable *s = state_of(f);
    if (count_of(s) != 1)
        return NULL;
    bg_filter *top = layer_at(s, 0);
    if (adding) {
        uint64_t items = bg__load(&top->items);
        if (!f->single_writer || items > top->capacity || count > top->capacity - items)
            return NULL;
    }
    return top;
}

/* One chunk of a batch; *hits grows by the 1s. BG_OK or a growth error
 * (results before the failing key are set). */
static int run_chunk(bg_filter *f, const bg_hash *h, size_t count, uint8_t *results, bool adding,
                     int64_t *hits)
{
    const struct bg__scalable *s = state_of(f);
    uint8_t present[CHUNK];
    bg_filter *direct = direct_layer(f, count, adding);
    if (direct != NULL) {
        *hits += direct->ops->hashes(direct, h, count, results, adding);
        return BG_OK;
    }
    uint32_t n = count_of(s);
    find_present(s, n, h, count, present);
    for (size_t i = 0; i < count; i++) {
        int r = present[i];
        /* checked = n - 1: keys earlier in this batch may have gone into
         * the newest layer since find_present looked at it. */
        if (adding && (r = r ? 0 : add_absent(f, h[i], n - 1)) < 0)
            return r;
        if (results)
            results[i] = (uint8_t)r;
        *hits += r;
    }
    return BG_OK;
}

static int64_t scalable_hashes(bg_filter *f, const bg_hash *h, size_t count, uint8_t *results,
                               bool adding)
{
    int64_t hits = 0;
    for (size_t at = 0; at < count; at += CHUNK) {
        size_t n = count - at < CHUNK ? count - at : CHUNK;
        int rc = run_chunk(f, h + at, n, results ? results + at : NULL, adding, &hits);
        if (rc != BG_OK)
            return rc;
    }
    return hits;
}

static int64_t scalable_keys(bg_filter *f, const void *const *keys, const size_t *lens,
                             size_t count, uint8_t *results, bool adding)
{
    bg_filter *direct = direct_layer(f, count, adding);
    if (direct != NULL)
        return direct->ops->keys(direct, keys, lens, count, results, adding);
    bg_hash h[CHUNK];
    int64_t hits = 0;
    for (size_t at = 0; at < count; at += CHUNK) {
        size_t n = count - at < CHUNK ? count - at : CHUNK;
        for (size_t i = 0; i < n; i++)
            h[i] = bg__hash(keys[at + i], lens[at + i], f->seed);
        int rc = run_chunk(f, h, n, results ? results + at : NULL, adding, &hits);
        if (rc != BG_OK)
            return rc;
    }
    return hits;
}

/* ---- statistics ----------------------------------------------------------- */

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static int scalable_stats(const bg_filter *f, bg_filter_stats *out)
{
    const struct bg__scalable *s = state_of(f);
    uint32_t n = count_of(s);
    bg_filter_stats st;
    memset(&st, 0, sizeof st);
    st.variant = BG_VARIANT_SCALABLE;
    st.seed = f->seed;
    st.layers = n;
    double keep = 1.0, keep_est = 1.0; /* prod (1 - p_i), prod (1 - est_i) */
    for (uint32_t i = 0; i < n; i++) {
        bg_filter_stats ls;
        (void)bg_filter_stats_get(layer_at(s, i), &ls);
        st.bits = add_sat(st.bits, ls.bits);
        st.bytes = add_sat(st.bytes, ls.bytes);
        st.items = add_sat(st.items, ls.items);
        st.bits_set = add_sat(st.bits_set, ls.bits_set);
        st.capacity = add_sat(st.capacity, ls.capacity);
        st.estimated_items += ls.estimated_items;
        st.hashes = ls.hashes;
        keep *= 1.0 - ls.error_rate;
        keep_est *= 1.0 - ls.estimated_fp_rate;
    }
    st.error_rate = 1.0 - keep;
    st.estimated_fp_rate = 1.0 - keep_est;
    st.fill_ratio = st.bits ? (double)st.bits_set / (double)st.bits : 0.0;
    *out = st;
    return BG_OK;
}

static int scalable_layer_stats(const bg_filter *f, uint32_t layer, bg_filter_stats *out)
{
    const struct bg__scalable *s = state_of(f);
    if (layer >= count_of(s))
        return BG_EINVAL;
    return bg_filter_stats_get(layer_at(s, layer), out);
}

static int scalable_scaling(const bg_filter *f, bg_filter_scaling *out)
{
    const struct bg__scalable *s = state_of(f);
    *out = (bg_filter_scaling){
        .layer_variant = (bg_variant)s->layer_variant,
        .capacity = f->capacity,
        .error_rate = s->error_rate,
        .expansion = s->expansion,
        .tightening = s->tightening,
        .max_layers = s->max_layers,
        .max_bytes = s->max_bytes,
        .nonscaling = s->nonscaling,
        .layers = count_of(s),
        .first_share = s->first_share,
        .blocked_from = s->blocked_from,
    };
    return BG_OK;
}

static void scalable_sizes(const bg_filter *f, bg__filter_sizes *out)
{
    const struct bg__scalable *s = state_of(f);
    bg__filter_sizes z = {0};
    uint32_t n = count_of(s);
    for (uint32_t i = 0; i < n; i++) {
        const bg_filter *l = layer_at(s, i);
        z.bits = add_sat(z.bits, l->m);
        z.bytes = add_sat(z.bytes, l->nwords * 8);
        z.items = add_sat(z.items, bg__load(&l->items));
        z.capacity = add_sat(z.capacity, l->capacity);
    }
    z.hashes = layer_at(s, n - 1)->k;
    *out = z;
}

/* ---- memory --------------------------------------------------------------- */

uint64_t bg__scalable_memory(const bg_filter *f, size_t (*size_of)(void *ptr))
{
    const struct bg__scalable *s = state_of(f);
    uint64_t n = size_of ? size_of((void *)(uintptr_t)f)
                         : sizeof(scalable_block) +
                               (f->has_tail ? sizeof((scalable_block *)0)->tail[0] : 0);
    for (const layer_slots *m = atomic_load_explicit(&s->more, memory_order_acquire); m;
         m = m->prev)
        n += size_of ? size_of((void *)(uintptr_t)m) : sizeof *m + m->cap * sizeof m->slot[0];
    uint32_t count = count_of(s);
    for (uint32_t i = 0; i < count; i++)
        n += bg__array_memory(layer_at(s, i), size_of);
    return n;
}

/* ---- copying -------------------------------------------------------------- */

/* CLONE (array.c): the growth parameters, then a copy of every layer the
 * filter has when the call begins, in the stack's concurrency mode. */
static int scalable_clone(bg_filter **out, const bg_filter *f)
{
    const struct bg__scalable *s = state_of(f);
    bg_filter *c;
    bg__scalable_params p = params_of(f);
    int rc = bg__scalable_shell(&c, &p);
    if (rc != BG_OK)
        return rc;
    uint32_t n = count_of(s); /* the layers it has now */
    for (uint32_t i = 0; i < n; i++) {
        bg_filter *layer;
        if ((rc = bg__array_clone_as(&layer, layer_at(s, i), f->single_writer)) != BG_OK) {
            bg_filter_free(c);
            return rc;
        }
        if ((rc = bg__scalable_push(c, layer)) != BG_OK) {
            bg_filter_free(layer);
            bg_filter_free(c);
            return rc;
        }
    }
    *out = c;
    return BG_OK;
}

const bg__filter_ops bg__scalable_ops = {
    .variant = BG_VARIANT_SCALABLE,
    .name = "scalable",
    .cell_bits = 0,
    .create = scalable_new,
    .clone = scalable_clone,
    .destroy = scalable_free,
    .test_and_add = scalable_test_and_add,
    .contains = scalable_contains,
    .hashes = scalable_hashes,
    .keys = scalable_keys,
    .clear = scalable_clear,
    .stats = scalable_stats,
    .layer_stats = scalable_layer_stats,
    .scaling = scalable_scaling,
    .sizes = scalable_sizes,
};
