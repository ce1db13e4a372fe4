/* SPDX-License-Identifier: BSD-3-Clause */
/* The blocked variant with AVX-512: the same layout and answers as
 * blocked.c, all probes of a key at once. Chosen at run time (cpuid) so the
 * library still runs on any x86-64 and anywhere else; the functions carry
 * their own target attribute, so no file needs special compiler flags.
 *
 * HOW IT WORKS
 * One 64-bit vector multiply of h2 by the 8 salts and a shift by 58 gives
 * the 8 probes' bit numbers; a variable shift turns them into one-bit masks
 * (lanes j >= k zeroed); a lane rotation by s (vpermq) moves probe j's mask
 * to word (s + j) mod 8. That 512-bit mask is the key: contains is one load,
 * AND and compare against the block; add ORs it in, by plain stores of the
 * line with one 64-byte store when there is a single writer, by a locked
 * fetch-or of only the words that miss their bit when there are several.
 * Batches of keys (BATCHES OF KEYS below) hash eight keys per vector and
 * get the same mask from a table of rotated salts instead of the rotation.
 *
 * WHY VECTOR ACCESS IS SAFE WITH CONCURRENT READERS AND WRITERS
 * While adds run, bits only ever go from 0 to 1. A 64-byte vector load or
 * store is carried out by x86-64 CPUs at least one aligned 8-byte element at
 * a time (Intel and AMD document whole 16-byte atomicity for AVX CPUs; no
 * implementation splits an aligned element), so a reader sees each word
 * before or after any concurrent write to it. Any such mix is a state between
 * the one before and the one after the write: it holds every bit of every
 * add that happened before the read, so there is no false negative, which is
 * the guarantee filter.h gives. Concurrent writers never store a line
 * outside a hardware transaction: they use fetch-or per word, or plain
 * stores inside a transaction that the CPU commits only if no other core
 * touched its lines meanwhile (TRANSACTIONS), so no add is lost. (ISO C
 * calls a non-atomic access to an _Atomic object racy whatever the
 * hardware does; this file is the one place that relies on the platform
 * instead.) ThreadSanitizer cannot see through vector accesses, so TSan
 * builds use the portable implementation, where every access is a C11
 * atomic. */
#include "blocked_simd.h"
#include "hash_inline.h"

bool bg__blocked_tx = true;

#if BG__SIMD_X86
#include <cpuid.h>
#include <immintrin.h>
#include <stdlib.h>

#define BG__TARGET __attribute__((target("avx512f,avx512dq,avx512bw,rtm")))
#define BG__INLINE __attribute__((always_inline)) inline

/* Multiplying h2 by bg__blocked_salt_rot[s] (blocked.c) gives the probes'
 * bits already in their words, so no lane rotation (broadcast of s,
 * subtract, vpermq: 3 uops, 2 of them on the shuffle port) is needed; the
 * row is a memory operand of the multiply. */

/* The words of a block that hold one of the key's k probes when they start
 * at word s: (1 << k) - 1 rotated left by s within 8 bits. */
static inline __mmask8 probe_words(uint32_t k, unsigned s)
{
    unsigned pk = (1u << k) - 1;
    return (__mmask8)((pk << s) | (pk >> (8 - s)));
}

/* One bit in every word w: probe (w - s) mod 8's bit. Only the words of
 * probe_words(k, s) are the key's; the others hold a bit of no meaning and
 * are masked off by the callers. */
BG__TARGET static BG__INLINE __m512i key_bits(uint64_t h2, unsigned s)
{
    __m512i prod = _mm512_mullo_epi64(_mm512_set1_epi64((long long)h2),
                                      _mm512_load_si512((const void *)bg__blocked_salt_rot[s]));
    /* payload bit b of a word is machine bit b ^ 7 (filter_internal.h) */
    __m512i bit = _mm512_xor_si512(_mm512_srli_epi64(prod, 58), _mm512_set1_epi64(7));
    return _mm512_sllv_epi64(_mm512_set1_epi64(1), bit);
}

/* The key's 512-bit mask: probe j's bit in word (s + j) mod 8. */
BG__TARGET static BG__INLINE __m512i key_mask(const bg_filter *f, bg_hash h)
{
    const __m512i salt = _mm512_loadu_si512((const void *)bg__blocked_salt);
    __m512i prod = _mm512_mullo_epi64(_mm512_set1_epi64((long long)h.h2), salt);
    __m512i bit = _mm512_srli_epi64(prod, 58);
    /* payload bit b of a word is machine bit b ^ 7 (filter_internal.h) */
    bit = _mm512_xor_si512(bit, _mm512_set1_epi64(7));
    __mmask8 probes = (__mmask8)((1u << f->k) - 1);
    __m512i mask = _mm512_maskz_sllv_epi64(probes, _mm512_set1_epi64(1), bit);
    /* word w takes probe (w - s) mod 8 */
    const __m512i iota = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    __m512i from = _mm512_sub_epi64(iota, _mm512_set1_epi64((long long)bg__block_start(h.h1)));
    return _mm512_permutexvar_epi64(from, mask); /* vpermq uses the low 3 bits */
}

/* Each of the key's words holds exactly one of its bits, so the key is
 * absent iff one of those words ANDed with its bit is zero: one vptestnmq. */
BG__TARGET static BG__INLINE int contains_in(const bg_filter *f, bg_hash h, __mmask8 words_of_key)
{
    __m512i bits = key_bits(h.h2, bg__block_start(h.h1));
    __m512i words = _mm512_load_si512((const void *)bg__block_of(f, h.h1));
    return _mm512_mask_testn_epi64_mask(words_of_key, words, bits) == 0;
}

/* `plain`: store the line even with concurrent writers, which only a
 * hardware transaction makes safe (TRANSACTIONS below). */
BG__TARGET static BG__INLINE int add_in(bg_filter *f, bg_hash h, __mmask8 words_of_key,
                                        const bool plain)
{
    _Atomic uint64_t *block = bg__block_of(f, h.h1);
    __m512i mask = _mm512_maskz_mov_epi64(words_of_key, key_bits(h.h2, bg__block_start(h.h1)));
    __m512i words = _mm512_load_si512((const void *)block);
    __mmask8 missing = _mm512_mask_testn_epi64_mask(words_of_key, words, mask);
    if (missing == 0)
        return 0;
    if (plain || f->single_writer) {
        _mm512_store_si512((void *)block, _mm512_or_si512(words, mask));
        return 1;
    }
    uint64_t m[8];
    _mm512_storeu_si512((void *)m, mask);
    for (unsigned todo = missing; todo; todo &= todo - 1) {
        unsigned w = (unsigned)__builtin_ctz(todo);
        (void)atomic_fetch_or_explicit(&block[w], m[w], memory_order_relaxed); /* lock or */
    }
    return 1;
}

/* One key per call (the by-key and by-hash API, and the hash batches) keeps
 * the rotation: the bg__blocked_salt_rot row makes single queries of large
 * filters slower (the row's address depends on h1, which may delay the
 * multiply behind it), while batches of keys, which overlap such delays,
 * are not affected (docs/PERFORMANCE.md). */
BG__TARGET static inline int avx512_contains(const bg_filter *f, bg_hash h)
{
    __m512i mask = key_mask(f, h);
    __m512i words = _mm512_load_si512((const void *)bg__block_of(f, h.h1));
    return _mm512_test_epi64_mask(_mm512_andnot_si512(words, mask), mask) == 0;
}

BG__TARGET static inline int avx512_add(bg_filter *f, bg_hash h)
{
    _Atomic uint64_t *block = bg__block_of(f, h.h1);
    __m512i mask = key_mask(f, h);
    __m512i words = _mm512_load_si512((const void *)block);
    __mmask8 missing = _mm512_test_epi64_mask(_mm512_andnot_si512(words, mask), mask);
    if (missing == 0)
        return 0;
    if (f->single_writer) {
        _mm512_store_si512((void *)block, _mm512_or_si512(words, mask));
        return 1;
    }
    uint64_t m[8];
    _mm512_storeu_si512((void *)m, mask);
    for (unsigned todo = missing; todo; todo &= todo - 1) {
        unsigned w = (unsigned)__builtin_ctz(todo);
        (void)atomic_fetch_or_explicit(&block[w], m[w], memory_order_relaxed); /* lock or */
    }
    return 1;
}

static void avx512_prefetch(const bg_filter *f, bg_hash h)
{
    bg__prefetch(bg__block_of(f, h.h1));
}

BG__DEFINE_HASH_GROUP_OPS(avx512, BG__TARGET)

/* EIGHT HASHES AT ONCE
 * bg__hash (XXH3-128, seeded) of eight keys in the lanes of a vector: the
 * same function and the same values, step for step as xxhash 0.8.1's
 * XXH3_len_4to8_128b, XXH3_len_9to16_128b and XXH3_len_17to128_128b (one
 * XXH128_mix32B round for 17 to 32 bytes, two for 33 to 64). A group is
 * hashed by the path of the length class that holds at least
 * HASH8_MIN_LANES of its keys; its keys of other lengths, every key of a
 * group with no such class, and every key of 0 to 3 or over 64 bytes, are
 * hashed one by one. XXH3 needs 64x64->128 products; AVX-512 has no 128-bit
 * product, so each is four 32x32->64 vpmuludq (the portable
 * XXH_mult64to128 method). */

/* The 8-byte words at the addresses in `addr` (lanes of `live`; others 0).
 * The pragma: at -O0, GCC's macro form of the intrinsic converts the mask
 * to a plain char. */
BG__TARGET static BG__INLINE __m512i gather8(__m512i addr, __mmask8 live)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    return _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), live, addr, NULL, 1);
#pragma GCC diagnostic pop
}

/* The 4-byte words at the addresses in `addr`, zero-extended: a key of 4
 * bytes must not be read as 8 (it may end at the end of a page). */
BG__TARGET static BG__INLINE __m512i gather4(__m512i addr, __mmask8 live)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
    return _mm512_cvtepu32_epi64(
        _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), live, addr, NULL, 1));
#pragma GCC diagnostic pop
}

/* What hash8 needs of the seed, computed once per call. */
typedef struct hash8_consts {
    __m512i sec[8]; /* secret words 0..7, + seed (even) and - seed (odd): XXH3_mix16B */
    __m512i len_p1_lo, len_p1_hi; /* len * PRIME64_1 for len mod 16 = 0..15 (len 17..32) */
    __m512i flip4;                /* 4..8 bytes: the bitflip, with its folded seed */
    __m512i flip9_lo, flip9_hi;   /* 9..16 bytes */
    __m512i seed;
    /* The other constants: as memory operands when registers run out, a
     * load instead of a broadcast on the shuffle port per use. */
    __m512i c4, c8, c16, c24, c32, p1, p2, p4, p32_2m1, mx2, lo32, aval, bswap;
} hash8_consts;

/* a * b as 128 bits: returns the low 64, *hi the high 64. */
BG__TARGET static BG__INLINE __m512i mul64to128(const hash8_consts *c, __m512i a, __m512i b,
                                                __m512i *hi)
{
    const __m512i lo32 = c->lo32;
    __m512i ah = _mm512_srli_epi64(a, 32), bh = _mm512_srli_epi64(b, 32);
    __m512i ll = _mm512_mul_epu32(a, b), hl = _mm512_mul_epu32(ah, b);
    __m512i lh = _mm512_mul_epu32(a, bh), hh = _mm512_mul_epu32(ah, bh);
    __m512i cross = _mm512_add_epi64(
        _mm512_add_epi64(_mm512_srli_epi64(ll, 32), _mm512_and_si512(hl, lo32)), lh);
    *hi = _mm512_add_epi64(
        _mm512_add_epi64(_mm512_srli_epi64(hl, 32), _mm512_srli_epi64(cross, 32)), hh);
    return _mm512_or_si512(_mm512_slli_epi64(cross, 32), _mm512_and_si512(ll, lo32));
}

/* XXH3_mix16B: the fold of (in0 ^ secret word w) * (in1 ^ secret word w+1). */
BG__TARGET static BG__INLINE __m512i mix16(const hash8_consts *c, __m512i in0, __m512i in1,
                                           int w)
{
    __m512i hi,
        lo = mul64to128(c, _mm512_xor_si512(in0, c->sec[w]), _mm512_xor_si512(in1, c->sec[w + 1]),
                        &hi);
    return _mm512_xor_si512(lo, hi);
}

/* XXH3_avalanche */
BG__TARGET static BG__INLINE __m512i avalanche8(const hash8_consts *c, __m512i h)
{
    h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 37));
    h = _mm512_mullo_epi64(h, c->aval);
    return _mm512_xor_si512(h, _mm512_srli_epi64(h, 32));
}

/* Out of line, so that the compiler keeps these in registers (or uses them
 * as memory operands) instead of rebuilding each with a broadcast per use. */
BG__TARGET __attribute__((noinline)) static void hash8_init(hash8_consts *c, uint64_t seed)
{
    const xxh_u8 *sec = XXH3_kSecret;
    for (int i = 0; i < 8; i++) {
        uint64_t w = XXH_readLE64(sec + 8 * i);
        c->sec[i] = _mm512_set1_epi64((long long)(i % 2 ? w - seed : w + seed));
    }
    uint64_t t[16];
    for (uint64_t l = 17; l <= 32; l++)
        t[l % 16] = l * XXH_PRIME64_1;
    c->len_p1_lo = _mm512_loadu_si512((const void *)t);
    c->len_p1_hi = _mm512_loadu_si512((const void *)(t + 8));
    uint64_t seed4 = seed ^ ((uint64_t)XXH_swap32((uint32_t)seed) << 32);
    c->flip4 = _mm512_set1_epi64(
        (long long)((XXH_readLE64(sec + 16) ^ XXH_readLE64(sec + 24)) + seed4));
    c->flip9_lo = _mm512_set1_epi64(
        (long long)((XXH_readLE64(sec + 32) ^ XXH_readLE64(sec + 40)) - seed));
    c->flip9_hi = _mm512_set1_epi64(
        (long long)((XXH_readLE64(sec + 48) ^ XXH_readLE64(sec + 56)) + seed));
    c->seed = _mm512_set1_epi64((long long)seed);
    c->c4 = _mm512_set1_epi64(4);
    c->c8 = _mm512_set1_epi64(8);
    c->c16 = _mm512_set1_epi64(16);
    c->c24 = _mm512_set1_epi64(24);
    c->c32 = _mm512_set1_epi64(32);
    c->p1 = _mm512_set1_epi64((long long)XXH_PRIME64_1);
    c->p2 = _mm512_set1_epi64((long long)XXH_PRIME64_2);
    c->p4 = _mm512_set1_epi64((long long)XXH_PRIME64_4);
    c->p32_2m1 = _mm512_set1_epi64((long long)(XXH_PRIME32_2 - 1));
    c->mx2 = _mm512_set1_epi64((long long)UINT64_C(0x9FB21C651E98DF25));
    c->lo32 = _mm512_set1_epi64(0xffffffff);
    c->aval = _mm512_set1_epi64(0x165667919E3779F9LL);
    /* vpshufb indexes within 16-byte lanes: reverse each 8-byte half */
    c->bswap = _mm512_set_epi64(0x08090a0b0c0d0e0fLL, 0x0001020304050607LL,
                                0x08090a0b0c0d0e0fLL, 0x0001020304050607LL,
                                0x08090a0b0c0d0e0fLL, 0x0001020304050607LL,
                                0x08090a0b0c0d0e0fLL, 0x0001020304050607LL);
}

/* XXH3_len_4to8_128b: one 64-bit word from the first and last 4 bytes,
 * keyed, one 64x64->128 product by a length-dependent prime, mixed. */
BG__TARGET static BG__INLINE void hash8_4to8(const hash8_consts *c, __m512i ptr, __m512i len,
                                             __mmask8 vec, __m512i *h1, __m512i *h2)
{
    __m512i lo = gather4(ptr, vec);
    __m512i hi = gather4(_mm512_sub_epi64(_mm512_add_epi64(ptr, len), c->c4), vec);
    __m512i keyed = _mm512_xor_si512(_mm512_or_si512(lo, _mm512_slli_epi64(hi, 32)), c->flip4);
    __m512i mhi, mlo = mul64to128(c, keyed, _mm512_add_epi64(c->p1, _mm512_slli_epi64(len, 2)),
                                  &mhi);
    mhi = _mm512_add_epi64(mhi, _mm512_slli_epi64(mlo, 1));
    mlo = _mm512_xor_si512(mlo, _mm512_srli_epi64(mhi, 3));
    mlo = _mm512_xor_si512(mlo, _mm512_srli_epi64(mlo, 35));
    mlo = _mm512_mullo_epi64(mlo, c->mx2);
    *h1 = _mm512_xor_si512(mlo, _mm512_srli_epi64(mlo, 28));
    *h2 = avalanche8(c, mhi);
}

/* XXH3_len_9to16_128b: the first and last 8 bytes, a 64x64->128 product,
 * the length in its middle, a 128x64 product, both halves avalanched. */
BG__TARGET static BG__INLINE void hash8_9to16(const hash8_consts *c, __m512i ptr, __m512i len,
                                              __mmask8 vec, __m512i *h1, __m512i *h2)
{
    __m512i lo = gather8(ptr, vec);
    __m512i hi = gather8(_mm512_sub_epi64(_mm512_add_epi64(ptr, len), c->c8), vec);
    __m512i mhi, mlo = mul64to128(c, _mm512_xor_si512(_mm512_xor_si512(lo, hi), c->flip9_lo),
                                  c->p1, &mhi);
    mlo = _mm512_add_epi64(mlo, _mm512_slli_epi64(_mm512_sub_epi64(len, _mm512_set1_epi64(1)), 54));
    hi = _mm512_xor_si512(hi, c->flip9_hi);
    /* the 64-bit form: input_hi + (u32)input_hi * (PRIME32_2 - 1) */
    mhi = _mm512_add_epi64(mhi, _mm512_add_epi64(hi, _mm512_mul_epu32(hi, c->p32_2m1)));
    mlo = _mm512_xor_si512(mlo, _mm512_shuffle_epi8(mhi, c->bswap));
    __m512i hhi, hlo = mul64to128(c, mlo, c->p2, &hhi);
    hhi = _mm512_add_epi64(hhi, _mm512_mullo_epi64(mhi, c->p2));
    *h1 = avalanche8(c, hlo);
    *h2 = avalanche8(c, hhi);
}

/* XXH3_len_17to128_128b for 17..32 bytes (one XXH128_mix32B round) or,
 * with `two_rounds`, 33..64 (the round at +16 and -32 first). */
BG__TARGET static BG__INLINE void hash8_17to64(const hash8_consts *c, __m512i ptr, __m512i len,
                                               __mmask8 vec, const bool two_rounds, __m512i *h1,
                                               __m512i *h2)
{
    __m512i end = _mm512_add_epi64(ptr, len);
    __m512i lo, hi;
    if (two_rounds) {
        lo = _mm512_mullo_epi64(len, c->p1);
        __m512i a0 = gather8(_mm512_add_epi64(ptr, c->c16), vec);
        __m512i a1 = gather8(_mm512_add_epi64(ptr, c->c24), vec);
        __m512i b0 = gather8(_mm512_sub_epi64(end, c->c32), vec);
        __m512i b1 = gather8(_mm512_sub_epi64(end, c->c24), vec);
        lo = _mm512_xor_si512(_mm512_add_epi64(lo, mix16(c, a0, a1, 4)), _mm512_add_epi64(b0, b1));
        hi = _mm512_xor_si512(mix16(c, b0, b1, 6), _mm512_add_epi64(a0, a1));
    } else {
        /* len * PRIME64_1 by table (vpermt2q takes the low 4 bits of len) */
        lo = _mm512_permutex2var_epi64(c->len_p1_lo, len, c->len_p1_hi);
        hi = _mm512_setzero_si512();
    }
    __m512i a0 = gather8(ptr, vec);
    __m512i a1 = gather8(_mm512_add_epi64(ptr, c->c8), vec);
    __m512i b0 = gather8(_mm512_sub_epi64(end, c->c16), vec);
    __m512i b1 = gather8(_mm512_sub_epi64(end, c->c8), vec);
    lo = _mm512_xor_si512(_mm512_add_epi64(lo, mix16(c, a0, a1, 0)), _mm512_add_epi64(b0, b1));
    hi = _mm512_xor_si512(_mm512_add_epi64(hi, mix16(c, b0, b1, 2)), _mm512_add_epi64(a0, a1));
    __m512i outl = _mm512_add_epi64(lo, hi);
    __m512i outh = _mm512_add_epi64(
        _mm512_add_epi64(_mm512_mullo_epi64(lo, c->p1), _mm512_mullo_epi64(hi, c->p4)),
        _mm512_mullo_epi64(_mm512_sub_epi64(len, c->seed), c->p2));
    *h1 = avalanche8(c, outl);
    *h2 = _mm512_sub_epi64(_mm512_setzero_si512(), avalanche8(c, outh));
}

/* The lanes of `live` whose length is in [lo, hi]. */
BG__TARGET static BG__INLINE __mmask8 lens_in(__mmask8 live, __m512i len, uint64_t lo, uint64_t hi)
{
    __m512i from_lo = _mm512_sub_epi64(len, _mm512_set1_epi64((long long)lo));
    return _mm512_mask_cmple_epu64_mask(live, from_lo, _mm512_set1_epi64((long long)(hi - lo)));
}

/* Hashes keys[0..8) where `live` has their bit into h1[], h2[] (all eight
 * slots may be written), at about half the cost per key of bg__hash one key
 * at a time (docs/PERFORMANCE.md, "Key lengths"). The vector work costs as
 * much for one lane as for eight, so a group with fewer than
 * HASH8_MIN_LANES keys of one class is hashed one key at a time: with 5 or
 * fewer lanes of a class, the vector path and the rest cost more than
 * hashing all eight one at a time. At most one class can hold 6 of 8
 * lanes, so the order they are tried in only sets how many compares a
 * group costs. */
#define HASH8_MIN_LANES 6
BG__TARGET static BG__INLINE void hash8(const hash8_consts *c, const void *const *keys,
                                        const size_t *lens, __mmask8 live, uint64_t seed,
                                        uint64_t *h1, uint64_t *h2)
{
    __m512i ptr = _mm512_maskz_loadu_epi64(live, (const void *)keys);
    __m512i len = _mm512_maskz_loadu_epi64(live, (const void *)lens);
    __m512i x1, x2;
    __mmask8 vec;
#define BG__MOST(m) (__builtin_popcount(m) >= HASH8_MIN_LANES)
    if (BG__MOST(vec = lens_in(live, len, 17, 32)))
        hash8_17to64(c, ptr, len, vec, false, &x1, &x2);
    else if (BG__MOST(vec = lens_in(live, len, 9, 16)))
        hash8_9to16(c, ptr, len, vec, &x1, &x2);
    else if (BG__MOST(vec = lens_in(live, len, 4, 8)))
        hash8_4to8(c, ptr, len, vec, &x1, &x2);
    else if (BG__MOST(vec = lens_in(live, len, 33, 64)))
        hash8_17to64(c, ptr, len, vec, true, &x1, &x2);
    else {
        bg__hash_rest(keys, lens, live, seed, h1, h2);
        return;
    }
#undef BG__MOST
    _mm512_storeu_si512((void *)h1, x1);
    _mm512_storeu_si512((void *)h2, x2);
    if (__builtin_expect(live & ~vec, 0))
        bg__hash_rest(keys, lens, (unsigned)(live & ~vec), seed, h1, h2);
}

/* BATCHES OF KEYS
 * bg_filter_add_many and bg_filter_contains_many on this variant: hash8
 * hashes keys [at, at + 8) into a ring of AHEAD hashes while the loop
 * probes keys [at - AHEAD, at - AHEAD + 8), hashed AHEAD keys earlier. Two
 * things need that distance, not only cache misses: hash8's chain of
 * multiplies is ~100 cycles long, and probing a group right after hashing
 * it stalls on that chain even when the filter sits in L2.
 *
 * Large filters get a prefetch of each key's line (into L2, bg__prefetch),
 * so AHEAD misses are in flight. With hashing at ~2.4 ns per key, a
 * memory latency of ~150 ns takes some 64 keys to cover: fewer leave
 * misses exposed, more add ring traffic and gain nothing.
 *
 * The prefetch comes PREFETCH_LAG keys after the hash that gives its
 * address, not right after it: the address is then known when the prefetch
 * enters the core, instead of at the end of hash8's chain of multiplies, so
 * the prefetch does not hold up the instructions behind it (as in
 * blocked_avx2.c, "BATCHES OF KEYS").
 *
 * Filters up to PREFETCH_MIN_BYTES skip the prefetch: their lines are in
 * L2 anyway, and an extra multiply and prefetch per key is then pure cost;
 * above it the prefetch wins. The distances and the bound are tuned on the
 * benchmark: docs/PERFORMANCE.md. */
#define AHEAD 64       /* a multiple of 8 */
#define PREFETCH_LAG 8 /* a multiple of 8, below AHEAD */
#define PREFETCH_MIN_BYTES (UINT64_C(3) << 19) /* 1.5 MiB */

/* TRANSACTIONS
 * Concurrent writers must not lose each other's bits, so outside a
 * transaction every word that misses its bit takes a locked OR (add_in):
 * 4.5 per insert at p = 0.01 and 6.3 at 0.001, several times the cost of
 * a single writer's plain stores (docs/PERFORMANCE.md). Where the CPU has Intel's RTM (TSX), the batch
 * loop instead ORs each group of eight keys in with plain stores inside one
 * hardware transaction (add_in with `plain`: a 64-byte store of each line
 * that misses a bit): the CPU commits the group's stores all at once,
 * and aborts the transaction, discarding them, if another core touched one
 * of its lines meanwhile, so a concurrent add is never overwritten. An
 * aborted group (a conflict, an interrupt, a first write to a page) is
 * redone with locked ORs; after RTM_MAX_FAILURES aborts in a row the call
 * stops trying, so a CPU whose transactions always abort (TSX disabled by
 * microcode, or under a debugger) costs at most that many attempts per
 * call. The answers and bits are those of add_in; a concurrent batched
 * insert then costs about what a single writer's does. Groups of eight
 * keys per transaction: larger groups are no faster,
 * and a masked store of only the words that miss a bit is no cheaper than
 * the line store (docs/PERFORMANCE.md, "Concurrent adds in hardware
 * transactions"). */
#define RTM_MAX_FAILURES 8

/* Adds (or queries) keys [first, end) from the ring; returns how many were
 * new (or present). */
BG__TARGET static BG__INLINE int64_t probe_group(bg_filter *f, const uint64_t *ring1,
                                                 const uint64_t *ring2, size_t first,
                                                 size_t end, const __mmask8 *words_of,
                                                 uint8_t *results, const bool adding,
                                                 const bool plain)
{
    int64_t hits = 0;
    for (size_t i = first; i < end; i++) {
        bg_hash h = {ring1[i % AHEAD], ring2[i % AHEAD]};
        __mmask8 w = words_of[bg__block_start(h.h1)];
        int r = adding ? add_in(f, h, w, plain) : contains_in(f, h, w);
        if (results)
            results[i] = (uint8_t)r;
        hits += r;
    }
    return hits;
}

/* `tx` (with `adding`): concurrent adds, in transactions (TRANSACTIONS
 * above). */
BG__TARGET static BG__INLINE int64_t run_keys_in(bg_filter *f, const void *const *keys,
                                                 const size_t *lens, size_t count,
                                                 uint8_t *results, const bool adding,
                                                 const bool prefetch, const bool tx)
{
    int64_t hits = 0;
    uint64_t seed = f->seed;
    hash8_consts c;
    hash8_init(&c, seed);
    __mmask8 words_of[8];
    for (unsigned s = 0; s < 8; s++)
        words_of[s] = probe_words(f->k, s);
    uint64_t ring1[AHEAD] __attribute__((aligned(64))), ring2[AHEAD] __attribute__((aligned(64)));
    uint64_t commits = 0, aborts = 0;
    unsigned failures = 0;
    for (size_t at = 0; at < count + AHEAD; at += 8) {
        if (at >= AHEAD) {
            size_t first = at - AHEAD;
            size_t end = count - first < 8 ? count : first + 8;
            bool done = false;
            if (tx && failures < RTM_MAX_FAILURES) {
                /* an abort resumes at _xbegin with the transaction's
                 * stores, results and `got` discarded */
                if (_xbegin() == _XBEGIN_STARTED) {
                    int64_t got =
                        probe_group(f, ring1, ring2, first, end, words_of, results, true, true);
                    _xend();
                    hits += got;
                    done = true;
                }
                failures = done ? 0 : failures + 1;
                commits += done;
                aborts += !done;
            }
            if (!done)
                hits += probe_group(f, ring1, ring2, first, end, words_of, results, adding, false);
        }
        if (at < count) {
            size_t n = count - at < 8 ? count - at : 8;
            size_t slot = at % AHEAD;
            hash8(&c, keys + at, lens + at, (__mmask8)((1u << n) - 1), seed, ring1 + slot,
                  ring2 + slot);
        }
        if (prefetch && at >= PREFETCH_LAG && at - PREFETCH_LAG < count) {
            size_t first = at - PREFETCH_LAG, slot = first % AHEAD;
            size_t n = count - first < 8 ? count - first : 8;
            for (size_t i = 0; i < n; i++)
                bg__prefetch(bg__block_of(f, ring1[slot + i]));
        }
    }
    if (tx) {
        bg__filter_tail *t = bg__filter_tail_of(f); /* concurrent writers: has one */
        atomic_fetch_add_explicit(&t->tx_commits, commits, memory_order_relaxed);
        atomic_fetch_add_explicit(&t->tx_aborts, aborts, memory_order_relaxed);
    }
    return hits;
}

BG__TARGET static BG__INLINE int64_t run_keys(bg_filter *f, const void *const *keys,
                                              const size_t *lens, size_t count,
                                              uint8_t *results, const bool adding,
                                              const bool prefetch)
{
    return run_keys_in(f, keys, lens, count, results, adding, prefetch, false);
}

BG__DEFINE_SIMD_RUN_KEYS(avx512, BG__TARGET, PREFETCH_MIN_BYTES)

BG__TARGET __attribute__((noinline)) static int64_t avx512_add_keys_tx(
    bg_filter *f, const void *const *keys, const size_t *lens, size_t count, uint8_t *results)
{
    return run_keys_in(f, keys, lens, count, results, true, false, true);
}

BG__TARGET __attribute__((noinline)) static int64_t avx512_add_keys_tx_pf(
    bg_filter *f, const void *const *keys, const size_t *lens, size_t count, uint8_t *results)
{
    return run_keys_in(f, keys, lens, count, results, true, true, true);
}

/* run_keys of the ops for CPUs with RTM: concurrent writers' batched adds
 * in transactions, everything else as avx512_run_keys. */
static int64_t avx512_tx_run_keys(bg_filter *f, const void *const *keys, const size_t *lens,
                                  size_t count, uint8_t *results, bool adding)
{
    if (!adding || f->single_writer)
        return avx512_run_keys(f, keys, lens, count, results, adding);
    bool pf = f->nwords * 8 > PREFETCH_MIN_BYTES;
    return (pf ? avx512_add_keys_tx_pf : avx512_add_keys_tx)(f, keys, lens, count, results);
}

/* The two ops differ only in run_keys: avx512_tx_ops is chosen where the
 * CPU has RTM (bg__blocked_avx512_ops). */
#define AVX512_OPS(RUN_KEYS, TX)                                                             \
    {                                                                                        \
        .variant = BG_VARIANT_BLOCKED, .name = "blocked", .cell_bits = 1, .tx_counters = TX, \
        BG__ARRAY_OPS(avx512),                                                               \
        .run_keys = RUN_KEYS, .items_for_bits = bg__blocked_items_for_bits,                  \
        .estimate = bg__blocked_estimate,                                                    \
    }
static const bg__filter_ops avx512_ops = AVX512_OPS(avx512_run_keys, false);
static const bg__filter_ops avx512_tx_ops = AVX512_OPS(avx512_tx_run_keys, true);
#undef AVX512_OPS

/* RTM: CPUID leaf 7, EBX bit 11. The CPU clears it where TSX is switched
 * off (TSX_CTRL); where microcode makes every transaction abort instead,
 * run_keys_in gives up per call (TRANSACTIONS). Asked once: in a virtual
 * machine CPUID traps to the hypervisor, and this runs whenever a filter is
 * made or sized. */
static bool cpu_has_rtm(void)
{
    static atomic_int known; /* 0: not asked yet, 1: no, 2: yes */
    int v = atomic_load_explicit(&known, memory_order_relaxed);
    if (v == 0) {
        unsigned a, b, c, d;
        v = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_RTM) ? 2 : 1;
        atomic_store_explicit(&known, v, memory_order_relaxed);
    }
    return v == 2;
}

const bg__filter_ops *bg__blocked_avx512_ops(void)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq") ||
        !__builtin_cpu_supports("avx512bw"))
        return NULL;
    if (bg__blocked_tx && cpu_has_rtm() && getenv("BLOOMGATE_NO_TSX") == NULL)
        return &avx512_tx_ops;
    return &avx512_ops;
}

#else

const bg__filter_ops *bg__blocked_avx512_ops(void)
{
    return NULL;
}

#endif
