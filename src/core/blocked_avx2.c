/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocked variant with AVX2: the same layout and answers as blocked.c,
 * for x86-64 CPUs that have AVX2 but not AVX-512 (AMD before Zen 4, most
 * Intel client parts, many cloud machines). Chosen at run time after the
 * AVX-512 code (blocked_avx512.c) and before the portable one; the
 * functions carry their own target attribute. Why vector access is safe
 * with concurrent readers and writers: blocked_avx512.c, which holds for
 * 32-byte accesses as for 64-byte ones (each aligned 8-byte element is
 * read or written whole, bits only go from 0 to 1, concurrent writers use
 * a locked OR per word).
 *
 * HOW IT DIFFERS FROM THE AVX-512 CODE
 * AVX2 has four 64-bit lanes, no 64-bit multiply and no mask registers:
 * - a block (8 words) is two 256-bit halves;
 * - the low 64 bits of a 64x64 product are three 32x32->64 vpmuludq,
 *   lo(a) lo(b) + ((hi(a) lo(b) + lo(a) hi(b)) << 32), and a full
 *   128-bit product four (the portable XXH_mult64to128 method); a probe's
 *   bit number, the top 6 bits only, one vpmuludq and one vpmulld;
 * - the words that are not the key's get no bit from a shift count of 64
 *   or more (probe_row), instead of a mask register;
 * - batches hash four keys per vector, loading each key's bytes with one
 *   or two 16-byte loads and transposing them into lanes, not gathering
 *   (a lane of another length class reads a zeroed pad instead, so no load
 *   leaves its key);
 * - a batch works out each key's block offset, probe row and h2 in lanes,
 *   four keys at a time, before it probes (BATCHES OF KEYS).
 * Measured figures: docs/PERFORMANCE.md. */
#include "blocked_simd.h"
#include "hash_inline.h"

#if BG__SIMD_X86
#include <immintrin.h>

#define BG__TARGET __attribute__((target("avx2,bmi2")))
#define BG__INLINE __attribute__((always_inline)) inline

/* A block's worth of lanes: words 0-3 and 4-7. */
typedef struct v512 {
    __m256i w[2];
} v512;

/* The low 64 bits of a * b per lane, given bh = b >> 32. */
BG__TARGET static BG__INLINE __m256i mullo64(__m256i a, __m256i b, __m256i bh)
{
    __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b),
                                     _mm256_mul_epu32(a, bh));
    return _mm256_add_epi64(_mm256_mul_epu32(a, b), _mm256_slli_epi64(cross, 32));
}

/* WHAT A PROBE NEEDS, PER START WORD
 * For a key whose probes start at word s, the eight words' salts
 * (bg__blocked_salt_rot[s]), the same with each salt's 32-bit halves
 * swapped (for vpmulld, below), and per word the XOR that turns the top 6
 * bits of h2 * salt into the machine bit number: 7 in the key's k words
 * (payload bit b is machine bit b ^ 7, filter_internal.h) and 7 | 64 in
 * the others, whose shift count of 64 or more makes vpsllvq give 0, so the
 * words that are not the key's need no AND with a lane mask. A batch call
 * builds the rows for all eight s (probe_table); a single call builds its
 * key's row in registers. */
typedef struct probe_row {
    __m256i salt[2], salt_swapped[2], bit_xor[2];
} probe_row;

typedef struct probe_table {
    probe_row s[8];
} probe_table;

/* A row's byte offset in probe_table is s * ROW_BYTES. */
#define ROW_BYTES ((long long)sizeof(probe_row))

BG__TARGET static BG__INLINE probe_row probe_row_of(uint32_t k, unsigned s)
{
    /* the key's k words: s, s + 1, ..., s + k - 1 mod 8 */
    unsigned pk = (1u << k) - 1, words = ((pk << s) | (pk >> (8 - s))) & 0xff;
    const __m256i all = _mm256_set1_epi64x(words), seven = _mm256_set1_epi64x(7),
                  not_key = _mm256_set1_epi64x(64);
    const __m256i lane[2] = {_mm256_set_epi64x(8, 4, 2, 1), _mm256_set_epi64x(128, 64, 32, 16)};
    probe_row r;
    for (int i = 0; i < 2; i++) {
        r.salt[i] = _mm256_load_si256((const __m256i *)&bg__blocked_salt_rot[s][4 * i]);
        r.salt_swapped[i] = _mm256_shuffle_epi32(r.salt[i], 0xb1);
        __m256i in_key = _mm256_cmpeq_epi64(_mm256_and_si256(all, lane[i]), lane[i]);
        r.bit_xor[i] = _mm256_or_si256(seven, _mm256_andnot_si256(in_key, not_key));
    }
    return r;
}

/* Half i of the key's mask: in each word, the bit of the probe that lands
 * there, bit (h2 * salt) >> 58 in payload numbering, or 0 in the words
 * that are not the key's. Only bits 58..63 of the product are used: the
 * high 32 bits of lo(h2) lo(salt) plus the low 32 bits of the cross terms
 * hi(h2) lo(salt) + lo(h2) hi(salt), which one vpmulld gives (the salt's
 * halves swapped, the two 32-bit products then summed) instead of two more
 * vpmuludq: about 4% fewer instructions per batched query, and faster
 * batched queries on AMD Zen 3 (docs/PERFORMANCE.md); on Intel client
 * cores vpmulld is 2 uops and this may be a wash.
 * h2 is broadcast to every lane. */
BG__TARGET static BG__INLINE __m256i mask_half(__m256i h2, const probe_row *row, int i)
{
    __m256i cross = _mm256_mullo_epi32(h2, row->salt_swapped[i]);
    cross = _mm256_add_epi32(cross, _mm256_slli_epi64(cross, 32));
    __m256i prod = _mm256_add_epi32(_mm256_mul_epu32(h2, row->salt[i]), cross);
    __m256i bit = _mm256_xor_si256(_mm256_srli_epi64(prod, 58), row->bit_xor[i]);
    return _mm256_sllv_epi64(_mm256_set1_epi64x(1), bit);
}

BG__TARGET static BG__INLINE v512 key_mask(__m256i h2, const probe_row *row)
{
    return (v512){{mask_half(h2, row, 0), mask_half(h2, row, 1)}};
}

BG__TARGET static BG__INLINE int contains_in(const uint64_t *block, v512 m)
{
    const __m256i *half = (const __m256i *)(const void *)block;
    __m256i miss = _mm256_or_si256(_mm256_andnot_si256(_mm256_loadu_si256(half), m.w[0]),
                                   _mm256_andnot_si256(_mm256_loadu_si256(half + 1), m.w[1]));
    return _mm256_testz_si256(miss, miss);
}

BG__TARGET static BG__INLINE int add_in(const bg_filter *f, _Atomic uint64_t *block, v512 m)
{
    __m256i *half = (__m256i *)(void *)block;
    __m256i w0 = _mm256_loadu_si256(half), w1 = _mm256_loadu_si256(half + 1);
    __m256i miss0 = _mm256_andnot_si256(w0, m.w[0]), miss1 = _mm256_andnot_si256(w1, m.w[1]);
    __m256i miss = _mm256_or_si256(miss0, miss1);
    if (_mm256_testz_si256(miss, miss))
        return 0;
    if (f->single_writer) {
        _mm256_storeu_si256(half, _mm256_or_si256(w0, m.w[0]));
        _mm256_storeu_si256(half + 1, _mm256_or_si256(w1, m.w[1]));
        return 1;
    }
    uint64_t bits[8];
    _mm256_storeu_si256((__m256i *)bits, miss0);
    _mm256_storeu_si256((__m256i *)(bits + 4), miss1);
    const __m256i zero = _mm256_setzero_si256();
    unsigned full = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(miss0, zero))) |
                    (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(miss1, zero))) << 4;
    for (unsigned todo = ~full & 0xff; todo; todo &= todo - 1) {
        unsigned w = (unsigned)__builtin_ctz(todo);
        (void)atomic_fetch_or_explicit(&block[w], bits[w], memory_order_relaxed); /* lock or */
    }
    return 1;
}

BG__TARGET static int avx2_contains(const bg_filter *f, bg_hash h)
{
    probe_row row = probe_row_of(f->k, bg__block_start(h.h1));
    v512 m = key_mask(_mm256_set1_epi64x((long long)h.h2), &row);
    return contains_in((const uint64_t *)bg__block_of(f, h.h1), m);
}

BG__TARGET static int avx2_add(bg_filter *f, bg_hash h)
{
    probe_row row = probe_row_of(f->k, bg__block_start(h.h1));
    v512 m = key_mask(_mm256_set1_epi64x((long long)h.h2), &row);
    return add_in(f, bg__block_of(f, h.h1), m);
}

static void avx2_prefetch(const bg_filter *f, bg_hash h)
{
    bg__prefetch(bg__block_of(f, h.h1));
}

BG__DEFINE_HASH_GROUP_OPS(avx2, BG__TARGET)

/* FOUR HASHES AT ONCE
 * bg__hash (XXH3-128, seeded) of four keys in the lanes of a vector: the
 * same function and values, step for step as xxhash 0.8.1's
 * XXH3_len_4to8_128b, XXH3_len_9to16_128b and XXH3_len_17to128_128b (one
 * XXH128_mix32B round for 17 to 32 bytes, two for 33 to 64), as in
 * blocked_avx512.c's EIGHT HASHES AT ONCE. A group of four is hashed by the
 * path of the length class that holds at least HASH4_MIN_LANES of its keys;
 * the others, and keys of 0 to 3 or over 64 bytes, one by one. */

/* What hash4 needs of the seed, computed once per batch call. For each
 * 64-bit constant b that multiplies, b >> 32 too (mullo64). */
typedef struct hash4_consts {
    __m256i sec[8]; /* secret words 0..7, + seed (even) and - seed (odd): XXH3_mix16B */
    __m256i flip4, flip9_lo, flip9_hi, seed;
    __m256i p1, p1h, p2, p2h, p4, p4h, mx2, mx2h, aval, avalh;
    __m256i p32_2m1, lo32, bswap;
} hash4_consts;

BG__TARGET __attribute__((noinline)) static void hash4_init(hash4_consts *c, uint64_t seed)
{
    const xxh_u8 *sec = XXH3_kSecret;
    for (int i = 0; i < 8; i++) {
        uint64_t w = XXH_readLE64(sec + 8 * i);
        c->sec[i] = _mm256_set1_epi64x((long long)(i % 2 ? w - seed : w + seed));
    }
    uint64_t seed4 = seed ^ ((uint64_t)XXH_swap32((uint32_t)seed) << 32);
    c->flip4 = _mm256_set1_epi64x(
        (long long)((XXH_readLE64(sec + 16) ^ XXH_readLE64(sec + 24)) + seed4));
    c->flip9_lo = _mm256_set1_epi64x(
        (long long)((XXH_readLE64(sec + 32) ^ XXH_readLE64(sec + 40)) - seed));
    c->flip9_hi = _mm256_set1_epi64x(
        (long long)((XXH_readLE64(sec + 48) ^ XXH_readLE64(sec + 56)) + seed));
    c->seed = _mm256_set1_epi64x((long long)seed);
#define BG__CONST(name, value)                                                              \
    do {                                                                                    \
        c->name = _mm256_set1_epi64x((long long)(value));                                   \
        c->name##h = _mm256_set1_epi64x((long long)((uint64_t)(value) >> 32));              \
    } while (0)
    BG__CONST(p1, XXH_PRIME64_1);
    BG__CONST(p2, XXH_PRIME64_2);
    BG__CONST(p4, XXH_PRIME64_4);
    BG__CONST(mx2, UINT64_C(0x9FB21C651E98DF25));
    BG__CONST(aval, UINT64_C(0x165667919E3779F9));
#undef BG__CONST
    c->p32_2m1 = _mm256_set1_epi64x((long long)(XXH_PRIME32_2 - 1));
    c->lo32 = _mm256_set1_epi64x(0xffffffff);
    /* vpshufb indexes within 16-byte lanes: reverse each 8-byte half */
    c->bswap = _mm256_set_epi64x(0x08090a0b0c0d0e0fLL, 0x0001020304050607LL,
                                 0x08090a0b0c0d0e0fLL, 0x0001020304050607LL);
}

/* a * b as 128 bits: returns the low 64, *hi the high 64. */
BG__TARGET static BG__INLINE __m256i mul64to128(const hash4_consts *c, __m256i a, __m256i b,
                                                __m256i *hi)
{
    __m256i ah = _mm256_srli_epi64(a, 32), bh = _mm256_srli_epi64(b, 32);
    __m256i ll = _mm256_mul_epu32(a, b), hl = _mm256_mul_epu32(ah, b);
    __m256i lh = _mm256_mul_epu32(a, bh), hh = _mm256_mul_epu32(ah, bh);
    __m256i cross = _mm256_add_epi64(
        _mm256_add_epi64(_mm256_srli_epi64(ll, 32), _mm256_and_si256(hl, c->lo32)), lh);
    *hi = _mm256_add_epi64(
        _mm256_add_epi64(_mm256_srli_epi64(hl, 32), _mm256_srli_epi64(cross, 32)), hh);
    return _mm256_or_si256(_mm256_slli_epi64(cross, 32), _mm256_and_si256(ll, c->lo32));
}

/* XXH3_mix16B: the fold of (in0 ^ secret word w) * (in1 ^ secret word w+1). */
BG__TARGET static BG__INLINE __m256i mix16(const hash4_consts *c, __m256i in0, __m256i in1,
                                           int w)
{
    __m256i hi, lo = mul64to128(c, _mm256_xor_si256(in0, c->sec[w]),
                                _mm256_xor_si256(in1, c->sec[w + 1]), &hi);
    return _mm256_xor_si256(lo, hi);
}

/* XXH3_avalanche */
BG__TARGET static BG__INLINE __m256i avalanche4(const hash4_consts *c, __m256i h)
{
    h = _mm256_xor_si256(h, _mm256_srli_epi64(h, 37));
    h = mullo64(h, c->aval, c->avalh);
    return _mm256_xor_si256(h, _mm256_srli_epi64(h, 32));
}

/* Four 16-byte values, one per key, as lanes: *w0 their first 8 bytes,
 * *w1 their last 8. */
BG__TARGET static BG__INLINE void transpose4(const __m128i x[4], __m256i *w0, __m256i *w1)
{
    __m256i t0 = _mm256_inserti128_si256(_mm256_castsi128_si256(x[0]), x[2], 1);
    __m256i t1 = _mm256_inserti128_si256(_mm256_castsi128_si256(x[1]), x[3], 1);
    *w0 = _mm256_unpacklo_epi64(t0, t1);
    *w1 = _mm256_unpackhi_epi64(t0, t1);
}

/* The 16 bytes at p[i] + off for each lane i, as two lanes' worth of words
 * (off may be negative: from the end). */
BG__TARGET static BG__INLINE void load16(const uint8_t *const p[4], ptrdiff_t off, __m256i *w0,
                                         __m256i *w1)
{
    __m128i x[4];
    for (int i = 0; i < 4; i++)
        x[i] = _mm_loadu_si128((const __m128i *)(const void *)(p[i] + off));
    transpose4(x, w0, w1);
}

/* The 8 bytes at a[i] and at b[i], as two vectors. */
BG__TARGET static BG__INLINE void load8x2(const uint8_t *const a[4], const uint8_t *const b[4],
                                          __m256i *wa, __m256i *wb)
{
    __m128i x[4];
    for (int i = 0; i < 4; i++)
        x[i] = _mm_set_epi64x((long long)XXH_readLE64(b[i]), (long long)XXH_readLE64(a[i]));
    transpose4(x, wa, wb);
}

/* XXH3_len_4to8_128b: one 64-bit word from the first and last 4 bytes,
 * keyed, one 64x64->128 product by a length-dependent prime, mixed. */
BG__TARGET static BG__INLINE void hash4_4to8(const hash4_consts *c, const uint8_t *const p[4],
                                             const uint64_t l[4], __m256i len, __m256i *h1,
                                             __m256i *h2)
{
    long long in[4];
    for (int i = 0; i < 4; i++)
        in[i] = (long long)(XXH_readLE32(p[i]) | (uint64_t)XXH_readLE32(p[i] + l[i] - 4) << 32);
    __m256i keyed = _mm256_xor_si256(_mm256_set_epi64x(in[3], in[2], in[1], in[0]), c->flip4);
    __m256i mhi, mlo = mul64to128(c, keyed, _mm256_add_epi64(c->p1, _mm256_slli_epi64(len, 2)),
                                  &mhi);
    mhi = _mm256_add_epi64(mhi, _mm256_slli_epi64(mlo, 1));
    mlo = _mm256_xor_si256(mlo, _mm256_srli_epi64(mhi, 3));
    mlo = _mm256_xor_si256(mlo, _mm256_srli_epi64(mlo, 35));
    mlo = mullo64(mlo, c->mx2, c->mx2h);
    *h1 = _mm256_xor_si256(mlo, _mm256_srli_epi64(mlo, 28));
    *h2 = avalanche4(c, mhi);
}

/* XXH3_len_9to16_128b: the first and last 8 bytes, a 64x64->128 product,
 * the length in its middle, a 128x64 product, both halves avalanched. */
BG__TARGET static BG__INLINE void hash4_9to16(const hash4_consts *c, const uint8_t *const p[4],
                                              const uint64_t l[4], __m256i len, __m256i *h1,
                                              __m256i *h2)
{
    const uint8_t *last[4];
    for (int i = 0; i < 4; i++)
        last[i] = p[i] + l[i] - 8;
    __m256i lo, hi;
    load8x2(p, last, &lo, &hi);
    __m256i mhi, mlo = mul64to128(c, _mm256_xor_si256(_mm256_xor_si256(lo, hi), c->flip9_lo),
                                  c->p1, &mhi);
    mlo = _mm256_add_epi64(mlo,
                           _mm256_slli_epi64(_mm256_sub_epi64(len, _mm256_set1_epi64x(1)), 54));
    hi = _mm256_xor_si256(hi, c->flip9_hi);
    /* the 64-bit form: input_hi + (u32)input_hi * (PRIME32_2 - 1) */
    mhi = _mm256_add_epi64(mhi, _mm256_add_epi64(hi, _mm256_mul_epu32(hi, c->p32_2m1)));
    mlo = _mm256_xor_si256(mlo, _mm256_shuffle_epi8(mhi, c->bswap));
    __m256i hhi, hlo = mul64to128(c, mlo, c->p2, &hhi);
    hhi = _mm256_add_epi64(hhi, mullo64(mhi, c->p2, c->p2h));
    *h1 = avalanche4(c, hlo);
    *h2 = avalanche4(c, hhi);
}

/* XXH3_len_17to128_128b for 17..32 bytes (one XXH128_mix32B round) or,
 * with `two_rounds`, 33..64 (the round at +16 and -32 first). */
BG__TARGET static BG__INLINE void hash4_17to64(const hash4_consts *c, const uint8_t *const p[4],
                                               const uint64_t l[4], __m256i len,
                                               const bool two_rounds, __m256i *h1, __m256i *h2)
{
    const uint8_t *end[4];
    for (int i = 0; i < 4; i++)
        end[i] = p[i] + l[i];
    /* len * PRIME64_1: len < 2^32, so two products */
    __m256i lo = _mm256_add_epi64(_mm256_mul_epu32(len, c->p1),
                                  _mm256_slli_epi64(_mm256_mul_epu32(len, c->p1h), 32));
    __m256i hi = _mm256_setzero_si256();
    __m256i a0, a1, b0, b1;
    if (two_rounds) {
        load16(p, 16, &a0, &a1);
        load16(end, -32, &b0, &b1);
        lo = _mm256_xor_si256(_mm256_add_epi64(lo, mix16(c, a0, a1, 4)), _mm256_add_epi64(b0, b1));
        hi = _mm256_xor_si256(mix16(c, b0, b1, 6), _mm256_add_epi64(a0, a1));
    }
    load16(p, 0, &a0, &a1);
    load16(end, -16, &b0, &b1);
    lo = _mm256_xor_si256(_mm256_add_epi64(lo, mix16(c, a0, a1, 0)), _mm256_add_epi64(b0, b1));
    hi = _mm256_xor_si256(_mm256_add_epi64(hi, mix16(c, b0, b1, 2)), _mm256_add_epi64(a0, a1));
    __m256i outl = _mm256_add_epi64(lo, hi);
    __m256i outh = _mm256_add_epi64(
        _mm256_add_epi64(mullo64(lo, c->p1, c->p1h), mullo64(hi, c->p4, c->p4h)),
        mullo64(_mm256_sub_epi64(len, c->seed), c->p2, c->p2h));
    *h1 = avalanche4(c, outl);
    *h2 = _mm256_sub_epi64(_mm256_setzero_si256(), avalanche4(c, outh));
}

/* XXH3's length classes that hash4 computes in vector lanes, and each
 * one's shortest length and span (longest - shortest). */
enum { C4TO8, C9TO16, C17TO32, C33TO64, NCLASSES };
static const size_t class_lo[] = {4, 9, 17, 33}, class_span[] = {4, 7, 15, 31};

/* The order classes are tried in: the usual keys ("product:<id>") first. */
static const int class_order[NCLASSES] = {C17TO32, C9TO16, C4TO8, C33TO64};

static inline bool in_class(size_t len, int cls)
{
    return len - class_lo[cls] <= class_span[cls];
}

/* The class of a key `len` bytes long, or -1 (0-3 or over 64 bytes). */
static inline int class_of(size_t len)
{
    for (int i = 0; i < NCLASSES; i++)
        if (in_class(len, class_order[i]))
            return class_order[i];
    return -1;
}

/* The hashes of four keys of class `cls` (lengths l, also as lanes of len). */
BG__TARGET static BG__INLINE void hash4_class(const hash4_consts *c, int cls,
                                              const uint8_t *const p[4], const uint64_t l[4],
                                              __m256i len, __m256i *h1, __m256i *h2)
{
    switch (cls) {
    case C4TO8:
        hash4_4to8(c, p, l, len, h1, h2);
        break;
    case C9TO16:
        hash4_9to16(c, p, l, len, h1, h2);
        break;
    case C17TO32:
        hash4_17to64(c, p, l, len, false, h1, h2);
        break;
    default:
        hash4_17to64(c, p, l, len, true, h1, h2);
        break;
    }
}

/* The lanes of `live` whose key is of class `cls`. */
static inline unsigned lens_in(const size_t *lens, unsigned live, int cls)
{
    unsigned in = 0;
    for (unsigned i = 0; i < 4; i++)
        in |= (unsigned)((live >> i & 1) && in_class(lens[i], cls)) << i;
    return in;
}

/* Stands in for the keys of lanes outside the class being hashed: a lane
 * reads up to 64 bytes from its start, and its result is thrown away. */
static const uint8_t pad[64];

/* Hashes keys[0..4) where `live` has their bit into h1[], h2[] (all four
 * slots may be written): the groups whose keys are not all of one class,
 * and the last group of a batch when it has fewer than four (hash_group
 * hashes the others itself). A class needs three of the four keys (so at
 * most one class qualifies; not tuned: the keys batches usually see are all
 * of one class). Not inlined, so that its register needs do not weigh on
 * the batch loop. */
#define HASH4_MIN_LANES 3
BG__TARGET __attribute__((noinline)) static void hash4_any(const hash4_consts *c,
                                                           const void *const *keys,
                                                           const size_t *lens, unsigned live,
                                                           uint64_t seed, uint64_t *h1,
                                                           uint64_t *h2)
{
    int cls = -1;
    unsigned vec = 0;
    for (int i = 0; i < NCLASSES && cls < 0; i++)
        if (__builtin_popcount(vec = lens_in(lens, live, class_order[i])) >= HASH4_MIN_LANES)
            cls = class_order[i];
    if (cls < 0) {
        bg__hash_rest(keys, lens, live, seed, h1, h2);
        return;
    }
    const uint8_t *p[4];
    uint64_t l[4];
    for (unsigned i = 0; i < 4; i++) {
        bool in = vec >> i & 1;
        p[i] = in ? (const uint8_t *)keys[i] : pad;
        l[i] = in ? lens[i] : class_lo[cls];
    }
    /* from registers: a vector load of the four stores just made would
     * wait for them (no store forwarding from narrower stores) */
    __m256i len = _mm256_set_epi64x((long long)l[3], (long long)l[2], (long long)l[1],
                                    (long long)l[0]),
            x1, x2;
    hash4_class(c, cls, p, l, len, &x1, &x2);
    _mm256_storeu_si256((__m256i *)(void *)h1, x1);
    _mm256_storeu_si256((__m256i *)(void *)h2, x2);
    if (__builtin_expect(live & ~vec, 0))
        bg__hash_rest(keys, lens, live & ~vec, seed, h1, h2);
}

/* BATCHES OF KEYS
 * A pipeline over groups of four keys. Each step hashes the group at `at`
 * into a ring of AHEAD slots, prefetches the lines of the group hashed
 * PREFETCH_LAG keys earlier and probes the group hashed AHEAD keys
 * earlier. Everything a probe needs is worked out once per group, in
 * vector lanes, and kept in the ring: the block's byte offset, the byte
 * offset of the key's probe_row and h2. Four keys of one length class, the
 * usual group, are hashed inline; other groups by hash4_any.
 *
 * Why the prefetch lags: in a virtual machine whose host maps the filter
 * with 4 KiB pages, nearly every prefetch of a large filter walks the page
 * table, and a walk stalls the core once the prefetch is the oldest
 * instruction. The lag lets the prefetch's address be known when it enters
 * the core, so its walk starts at once. 32 keys ahead, the key's
 * translation is still in the 64-entry L1 TLB when its probe loads the
 * line (64 ahead, it mostly is not). The distances are tuned on AMD Zen 3
 * (docs/PERFORMANCE.md); in cache they make no difference, nor does a
 * prefetch into L1 instead of L2. Filters up to PREFETCH_MIN_BYTES, half
 * of that CPU's 512 KiB L2 per core, skip the prefetch (not tuned). */
#define AHEAD 32       /* a multiple of 4 */
#define PREFETCH_LAG 8 /* a multiple of 4, at least 4 */
#define PREFETCH_MIN_BYTES (UINT64_C(256) << 10)

typedef struct ring {
    uint64_t block[AHEAD]; /* byte offset of the key's block in f->words */
    uint64_t row[AHEAD];   /* byte offset of its probe_row in the probe_table */
    uint64_t h2[AHEAD];
} ring;

/* The byte offsets of the blocks of the four keys whose h1 are the lanes:
 * 64 * bg_layout_reduce(h1, nblocks), the high 64 bits of h1 * nblocks. With
 * nblocks < 2^32 (filters below 256 GiB), h1 = H 2^32 + L gives
 *   floor(h1 nblocks / 2^64) = floor((H nblocks + floor(L nblocks / 2^32)) / 2^32)
 * exactly (the dropped low 32 bits cannot carry into bit 64), and the sum
 * is below 2^64, so two vpmuludq do it. Larger filters, one lane at a time. */
BG__TARGET static BG__INLINE __m256i block_offsets(__m256i h1, uint64_t nblocks)
{
    if (__builtin_expect(nblocks >> 32 != 0, 0)) {
        uint64_t h[4];
        _mm256_storeu_si256((__m256i *)(void *)h, h1);
        for (int i = 0; i < 4; i++)
            h[i] = bg_layout_reduce(h[i], nblocks) << 6;
        return _mm256_loadu_si256((const __m256i *)(const void *)h);
    }
    const __m256i nb = _mm256_set1_epi64x((long long)nblocks);
    __m256i low = _mm256_srli_epi64(_mm256_mul_epu32(h1, nb), 32);
    __m256i sum = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(h1, 32), nb), low);
    return _mm256_slli_epi64(_mm256_srli_epi64(sum, 32), 6);
}

/* Hashes keys[0..n) (n <= 4) into ring slots [slot, slot + n). */
BG__TARGET static BG__INLINE void hash_group(const bg_filter *f, const hash4_consts *c,
                                             const void *const *keys, const size_t *lens,
                                             size_t n, ring *r, size_t slot)
{
    __m256i h1, h2;
    /* the class of the first key; then whether all four are in it:
     * unsigned len - lo <= span, by a signed compare with the sign flipped */
    int cls = class_of(lens[0]);
    __m256i len;
    bool one_class = false;
    if (n == 4 && cls >= 0) {
        const __m256i sign = _mm256_set1_epi64x(INT64_MIN);
        len = _mm256_loadu_si256((const __m256i *)(const void *)lens);
        __m256i from_lo = _mm256_xor_si256(
            _mm256_sub_epi64(len, _mm256_set1_epi64x((long long)class_lo[cls])), sign);
        __m256i beyond = _mm256_cmpgt_epi64(
            from_lo, _mm256_xor_si256(_mm256_set1_epi64x((long long)class_span[cls]), sign));
        one_class = _mm256_testz_si256(beyond, beyond);
    }
    if (one_class) {
        hash4_class(c, cls, (const uint8_t *const *)keys, (const uint64_t *)lens, len, &h1, &h2);
    } else {
        uint64_t a[4] = {0}, b[4] = {0}; /* lanes without a key stay 0 */
        hash4_any(c, keys, lens, (1u << n) - 1, f->seed, a, b);
        h1 = _mm256_loadu_si256((const __m256i *)(const void *)a);
        h2 = _mm256_loadu_si256((const __m256i *)(const void *)b);
    }
    __m256i row = _mm256_mul_epu32(_mm256_and_si256(h1, _mm256_set1_epi64x(7)),
                                   _mm256_set1_epi64x(ROW_BYTES));
    _mm256_storeu_si256((__m256i *)(void *)&r->block[slot], block_offsets(h1, f->nblocks));
    _mm256_storeu_si256((__m256i *)(void *)&r->row[slot], row);
    _mm256_storeu_si256((__m256i *)(void *)&r->h2[slot], h2);
}

/* Adds or looks up keys [first, first + n) (n <= 4), hashed into the ring
 * AHEAD keys earlier. A group's slots do not wrap around the ring (first
 * and AHEAD are multiples of 4), so they are one base plus constants. */
BG__TARGET static BG__INLINE uint64_t probe_group(bg_filter *f, char *words, const probe_table *t,
                                                  const ring *r, size_t first, size_t n,
                                                  uint8_t *results, const bool adding)
{
    uint64_t hits = 0;
    size_t slot0 = first % AHEAD;
    for (size_t i = 0; i < n; i++) {
        size_t slot = slot0 + i;
        const probe_row *row = (const probe_row *)(const void *)((const char *)t + r->row[slot]);
        _Atomic uint64_t *block = (_Atomic uint64_t *)(void *)(words + r->block[slot]);
        __m256i h2 = _mm256_broadcastq_epi64(_mm_loadl_epi64((const __m128i *)&r->h2[slot]));
        v512 m = key_mask(h2, row);
        unsigned found = (unsigned)(adding ? add_in(f, block, m)
                                           : contains_in((const uint64_t *)block, m));
        if (results)
            results[first + i] = (uint8_t)found;
        hits += found;
    }
    return hits;
}

static inline size_t up_to_4(size_t left)
{
    return left < 4 ? left : 4;
}

/* The state of one batch call. */
typedef struct batch {
    bg_filter *f;
    char *words; /* f->words, read once per call */
    const void *const *keys;
    const size_t *lens;
    size_t count;
    hash4_consts c;
    probe_table t;
    ring r;
} batch;

/* One step of the pipeline at key `at`. `whole`: every group it touches
 * has four keys (at >= AHEAD and at + 4 <= count), the steady state, where
 * the compiler drops the bounds. */
BG__TARGET static BG__INLINE uint64_t step(batch *b, size_t at, const bool whole,
                                           uint8_t *results, const bool adding,
                                           const bool prefetch)
{
    uint64_t hits = 0;
    if (whole || (at >= AHEAD && at - AHEAD < b->count))
        hits = probe_group(b->f, b->words, &b->t, &b->r, at - AHEAD,
                           whole ? 4 : up_to_4(b->count - (at - AHEAD)), results, adding);
    if (prefetch && (whole || (at >= PREFETCH_LAG && at - PREFETCH_LAG < b->count))) {
        size_t first = at - PREFETCH_LAG, n = whole ? 4 : up_to_4(b->count - first);
        size_t slot0 = first % AHEAD; /* no wrap, as in probe_group */
        for (size_t i = 0; i < n; i++)
            bg__prefetch(b->words + b->r.block[slot0 + i]);
    }
    if (whole || at < b->count)
        hash_group(b->f, &b->c, b->keys + at, b->lens + at, whole ? 4 : up_to_4(b->count - at),
                   &b->r, at % AHEAD);
    return hits;
}

/* The pipeline's steps over the whole batch. */
BG__TARGET static BG__INLINE uint64_t steps(batch *b, uint8_t *results, const bool adding,
                                            const bool prefetch)
{
    uint64_t hits = 0;
    const size_t count = b->count;
    for (size_t at = 0; at < count + AHEAD; at += 4) {
        if (at >= AHEAD && at + 4 <= count)
            hits += step(b, at, true, results, adding, prefetch);
        else
            hits += step(b, at, false, results, adding, prefetch);
    }
    return hits;
}

BG__TARGET static BG__INLINE int64_t run_keys(bg_filter *f, const void *const *keys,
                                              const size_t *lens, size_t count,
                                              uint8_t *results, const bool adding,
                                              const bool prefetch)
{
    batch b; /* not zeroed: each ring slot is written before it is read */
    b.f = f;
    b.words = (char *)f->words;
    b.keys = keys;
    b.lens = lens;
    b.count = count;
    hash4_init(&b.c, f->seed);
    for (unsigned s = 0; s < 8; s++)
        b.t.s[s] = probe_row_of(f->k, s);
    /* Two copies of the loop, with and without results, keep a test and a
     * branch per key out of each (2 of ~90 instructions per query). */
    return (int64_t)(results ? steps(&b, results, adding, prefetch)
                             : steps(&b, NULL, adding, prefetch));
}

BG__DEFINE_SIMD_RUN_KEYS(avx2, BG__TARGET, PREFETCH_MIN_BYTES)

static const bg__filter_ops avx2_ops = {
    .variant = BG_VARIANT_BLOCKED,
    .name = "blocked",
    .cell_bits = 1,
    BG__ARRAY_OPS(avx2),
    .run_keys = avx2_run_keys,
    .items_for_bits = bg__blocked_items_for_bits,
    .estimate = bg__blocked_estimate,
};

const bg__filter_ops *bg__blocked_avx2_ops(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2"))
        return &avx2_ops;
    return NULL;
}

#else

const bg__filter_ops *bg__blocked_avx2_ops(void)
{
    return NULL;
}

#endif
