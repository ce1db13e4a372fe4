/* SPDX-License-Identifier: BSD-3-Clause */
/* Compact filters: a small one-layer filter kept in one block (module.h,
 * THE VALUE).
 *
 * WHY
 * A server may hold one small filter per user, so what one costs is most
 * of what such a server holds. As the library's scalable filter, a filter
 * reserved at (0.01, 200) is three blocks: the module's bgr_value (16
 * bytes), the stack (128: its struct and growth state) and its layer (72
 * bytes of struct and 240 of bits: 320), 464 bytes as jemalloc sizes them,
 * on top of Redis's own ~100 per key. The bits are 240 of those bytes.
 * Kept here instead, while it has one standard layer, it is one block of
 * a 16-byte header and the layer's bits: 256 bytes (NONSCALING) or 320
 * (scaling, whose first layer is sized for p / 2 with a margin: 296 bytes
 * of bits).
 *
 * HOW IT WORKS
 * The bits are the library's layer's, byte for byte: bit i at byte i / 8,
 * mask 0x80 >> (i % 8) (<bloomgate/layout.h>, the payload numbering a layer
 * keeps in memory too), probed at the positions of <bloomgate/layout.h>
 * from the key's bg_hash with seed BGR_SEED, as the layer itself probes
 * them. An add sets the key's k bits and counts the key if one of them was
 * clear, as the layer's test-and-add does; a key absent from a full filter
 * (items = capacity) is where the library would grow or refuse: a
 * NONSCALING one refuses (BG_EFULL, as the library), a scaling one answers
 * BGR_GROW and the caller makes the library's filter
 * (bgr_compact_expand) and adds there, which grows it.
 *
 * Everything else a filter is follows from (p, n, expansion): the library's
 * filter bgr_filter_make(p, n, expansion) makes, with these bits and this
 * count written into its layer (bg_filter_layer_write), is the filter
 * itself. That is how every rarer operation (SCANDUMP, RDB save, AOF
 * rewrite, DEBUG DIGEST) sees it, and what growth starts from. The header
 * keeps m and k too, so that a probe costs no sizing.
 *
 * A filter becomes compact when made (BF.RESERVE, BF.INSERT, BF.ADD's
 * auto-creation) or loaded (RDB, RESTORE, the last BF.LOADCHUNK) if
 * bgr_compact_from accepts it: the library's scalable filter of one
 * standard layer, with seed BGR_SEED, whose fields fit the header (below).
 * A loaded filter was made by some server, perhaps with other module
 * arguments (LAYERS, MAX_BYTES), so it is accepted only if the filter
 * rebuilt from its header has the same file image, byte for byte: a
 * compact filter always materializes into exactly the filter it replaced.
 *
 * THE HEADER (16 bytes; in memory only, never stored)
 *   word  bit 0      1: tells a compact value from a bgr_value, whose
 *                    first 8 bytes are a pointer (aligned: bit 0 clear)
 *                    or NULL (module.h, bgr_is_compact)
 *         bit 1      NONSCALING
 *         bits 2-7   k (1..63)
 *         bits 8-23  m (bits, 2..65535)
 *         bits 24-39 expansion (0 for NONSCALING)
 *         bits 40-44 e, bits 45-63 d: the error rate is exactly d / 10^e
 *                    (d < 2^19, e <= 22, where 10^e is a double exactly:
 *                    the quotient is then the double nearest d / 10^e,
 *                    the one strtod gives for the decimal d / 10^e, so
 *                    every rate down to 1e-18 that a client writes with
 *                    up to 5 significant digits is one; others keep the
 *                    library's filter)
 *   capacity (u32), items (u32), then 8 ceil(m / 64) bytes of bits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "redis_module/module.h"

struct bgr_compact {
    uint64_t word;
    uint32_t capacity;
    uint32_t items;
    unsigned char bits[];
};

_Static_assert(sizeof(struct bgr_compact) == 16, "the compact header");

#define MARK UINT64_C(1)
#define NONSCALING_BIT UINT64_C(2)
#define K_SHIFT 2
#define K_MAX 63u
#define M_SHIFT 8
#define M_MAX 0xffffu
#define EXPANSION_SHIFT 24
#define EXPANSION_MAX 0xffffu
#define EXP_SHIFT 40
#define EXP_MAX 22u
#define MANT_SHIFT 45
#define MANT_MAX ((UINT64_C(1) << 19) - 1)

_Static_assert(BG_MAX_EXPANSION <= EXPANSION_MAX, "expansion fits its 16 bits");

/* 10^0 .. 10^22, every one a double exactly: 10^e = 2^e 5^e, 5^22 < 2^53. */
static const double POW10[EXP_MAX + 1] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                          1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                          1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static unsigned field(const bgr_compact *c, unsigned shift, uint64_t max)
{
    return (unsigned)((c->word >> shift) & max);
}

static uint32_t c_k(const bgr_compact *c)
{
    return field(c, K_SHIFT, K_MAX);
}

static uint64_t c_m(const bgr_compact *c)
{
    return field(c, M_SHIFT, M_MAX);
}

static double c_rate(const bgr_compact *c)
{
    return (double)(c->word >> MANT_SHIFT) / POW10[field(c, EXP_SHIFT, 31)];
}

/* The array's bytes: whole 64-bit words, as the layer's. */
static size_t c_bytes(const bgr_compact *c)
{
    return (size_t)((c_m(c) + 63) / 64 * 8);
}

/* d, e with d / 10^e == p exactly (THE HEADER), the smallest e; false if
 * there are none. */
static bool rate_encode(double p, uint64_t *d, unsigned *e)
{
    for (unsigned i = 0; i <= EXP_MAX; i++) {
        double x = floor(p * POW10[i] + 0.5);
        if (x > (double)MANT_MAX)
            return false;
        if (x >= 1 && x / POW10[i] == p) {
            *d = (uint64_t)x;
            *e = i;
            return true;
        }
    }
    return false;
}

bool bgr_compact_nonscaling(const bgr_compact *c)
{
    return (c->word & NONSCALING_BIT) != 0;
}

uint32_t bgr_compact_expansion(const bgr_compact *c)
{
    return field(c, EXPANSION_SHIFT, EXPANSION_MAX);
}

uint64_t bgr_compact_capacity(const bgr_compact *c)
{
    return c->capacity;
}

uint64_t bgr_compact_items(const bgr_compact *c)
{
    return c->items;
}

size_t bgr_compact_size(const bgr_compact *c)
{
    return sizeof *c + c_bytes(c);
}

/* ---- made and unmade ---------------------------------------------------- */

/* TEMPLATES
 * Making the library's filter from a header costs its sizing (the solver's
 * pow and log calls, and the rounds of the margins: most of the time an
 * RDB save or load spends on a small key, which then took about 1.7 times
 * as long as with the library's filters). Keys share shapes (one filter
 * per user, all reserved alike), so the last few empty filters made are
 * kept, one per slot by their header, and copied (bg_filter_clone: the
 * blocks and their bits) instead. Filters are made from headers only on
 * Redis's main thread or in a child it forked to save, so the slots need
 * no lock. They hold at most TEMPLATES small filters (a header allows 8
 * KiB of bits) for the life of the server. */
#define TEMPLATES 8

static struct template {
    uint64_t word;
    uint32_t capacity;
    bg_filter *empty;
} templates[TEMPLATES];

/* An empty filter of c's shape, new: a template's copy. */
static int make_empty(const bgr_compact *c, bg_filter **out)
{
    uint64_t mix = (c->word ^ c->capacity) * UINT64_C(0x9e3779b97f4a7c15);
    struct template *t = &templates[mix >> 61];
    if (t->empty == NULL || t->word != c->word || t->capacity != c->capacity) {
        bg_filter *f;
        int rc = bgr_filter_make(&f, c_rate(c), c->capacity,
                                 bgr_compact_nonscaling(c) ? 0 : bgr_compact_expansion(c));
        if (rc != BG_OK)
            return rc;
        /* The same sizing as when the header was made: the same m and k. */
        if (bg_filter_bits(f) != c_m(c) || bg_filter_hashes(f) != c_k(c)) {
            bg_filter_free(f);
            return BG_ECORRUPT;
        }
        bg_filter_free(t->empty);
        *t = (struct template){c->word, c->capacity, f};
    }
    return bg_filter_clone(out, t->empty);
}

_Static_assert(TEMPLATES == 8, "make_empty takes the slot from the top 3 bits");

int bgr_compact_expand(const bgr_compact *c, bg_filter **out)
{
    bg_filter *f;
    int rc = make_empty(c, &f);
    if (rc != BG_OK)
        return rc;
    if ((rc = bg_filter_layer_write(f, 0, c->bits, c_bytes(c), c->items)) != BG_OK) {
        bg_filter_free(f);
        return rc;
    }
    *out = f;
    return BG_OK;
}

/* Whether a and b have the same file image, byte for byte. */
static bool same_image(const bg_filter *a, const bg_filter *b)
{
    uint64_t na, nb;
    if (bg_filter_encoded_size(a, &na) != BG_OK || bg_filter_encoded_size(b, &nb) != BG_OK ||
        na != nb || na > SIZE_MAX / 2)
        return false;
    char *buf = RedisModule_Alloc((size_t)(2 * na));
    bool same = bg_filter_encode_range(a, 0, buf, (size_t)na) == BG_OK &&
                bg_filter_encode_range(b, 0, buf + na, (size_t)na) == BG_OK &&
                memcmp(buf, buf + na, (size_t)na) == 0;
    RedisModule_Free(buf);
    return same;
}

bgr_compact *bgr_compact_from(const bg_filter *f, bool made_here)
{
    bg_filter_scaling sc;
    if (bg_filter_variant(f) != BG_VARIANT_SCALABLE || bg_filter_scaling_get(f, &sc) != BG_OK ||
        sc.layers != 1 || sc.layer_variant != BG_VARIANT_STANDARD ||
        bg_filter_seed(f) != BGR_SEED || bg_filter_read_only(f))
        return NULL;
    uint64_t m = bg_filter_bits(f), items = bg_filter_items(f);
    uint32_t k = bg_filter_hashes(f), expansion = sc.nonscaling ? 0 : sc.expansion;
    uint64_t d;
    unsigned e;
    if (m < 2 || m > M_MAX || k < 1 || k > K_MAX || sc.capacity > UINT32_MAX ||
        items > sc.capacity || expansion > EXPANSION_MAX || !rate_encode(sc.error_rate, &d, &e))
        return NULL;
    size_t bytes = (size_t)bg_filter_bytes(f);
    if (bytes != (m + 63) / 64 * 8)
        return NULL;
    bgr_compact *c = RedisModule_Alloc(sizeof *c + bytes);
    c->word = MARK | (sc.nonscaling ? NONSCALING_BIT : 0) | (uint64_t)k << K_SHIFT |
              m << M_SHIFT | (uint64_t)expansion << EXPANSION_SHIFT | (uint64_t)e << EXP_SHIFT |
              d << MANT_SHIFT;
    c->capacity = (uint32_t)sc.capacity;
    c->items = (uint32_t)items;
    if (bg_filter_layer_read(f, 0, c->bits, bytes) != BG_OK) {
        RedisModule_Free(c);
        return NULL;
    }
    /* A filter bgr_filter_make just made from the rate, capacity and
     * expansion read back here is what the header rebuilds by
     * construction; any other must prove it. */
    if (!made_here) {
        bg_filter *g = NULL;
        bool same = bgr_compact_expand(c, &g) == BG_OK && same_image(f, g);
        bg_filter_free(g);
        if (!same) {
            RedisModule_Free(c);
            return NULL;
        }
    }
    return c;
}

bgr_compact *bgr_compact_clone(const bgr_compact *c)
{
    bgr_compact *d = RedisModule_Alloc(bgr_compact_size(c));
    memcpy(d, c, bgr_compact_size(c));
    return d;
}

void bgr_compact_free(bgr_compact *c)
{
    RedisModule_Free(c);
}

/* ---- adding and querying ------------------------------------------------ */

static bool has_hash(const bgr_compact *c, bg_hash h)
{
    uint32_t k = c_k(c);
    bg_layout_probe p = bg_layout_probe_first(h, c_m(c));
    for (;;) {
        if (!(c->bits[p.x >> 3] & (0x80u >> (p.x & 7))))
            return false;
        if (p.j + 1 == k)
            return true;
        bg_layout_probe_next(&p);
    }
}

int bgr_compact_contains(const bgr_compact *c, const void *key, size_t len)
{
    bg_hash h;
    if (bg_hash_key(key, len, BGR_SEED, &h) != BG_OK)
        return 0;
    return has_hash(c, h);
}

int bgr_compact_test_and_add(bgr_compact *c, const void *key, size_t len)
{
    bg_hash h;
    int rc = bg_hash_key(key, len, BGR_SEED, &h);
    if (rc != BG_OK)
        return rc;
    if (c->items >= c->capacity) {
        if (has_hash(c, h))
            return 0;
        return bgr_compact_nonscaling(c) ? BG_EFULL : BGR_GROW;
    }
    uint32_t k = c_k(c);
    unsigned char added = 0;
    bg_layout_probe p = bg_layout_probe_first(h, c_m(c));
    for (;;) {
        unsigned char mask = (unsigned char)(0x80u >> (p.x & 7));
        added |= (unsigned char)(~c->bits[p.x >> 3] & mask);
        c->bits[p.x >> 3] |= mask;
        if (p.j + 1 == k)
            break;
        bg_layout_probe_next(&p);
    }
    c->items += added != 0;
    return added != 0;
}
