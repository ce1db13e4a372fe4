/* The blocked variant with AVX-512: the same layout and answers as
 * blocked.c, computed 8 probes at a time. Chosen at run time (cpuid) so the
 * library still runs on any x86-64 and anywhere else; the functions carry
 * their own target attribute, so no file needs special compiler flags.
 *
 * HOW IT WORKS
 * contains: the key's block is one 64-byte load into a register; eight
 * probes' bit numbers come from one 64-bit vector multiply (h2 * SALT[j])
 * and a shift by 55; vpermq picks each probe's word from the register and a
 * variable shift makes its bit mask; one test gives all eight answers. No
 * branch depends on the key, and k <= 8 is a single pass (k <= 32: four).
 * add: probes are turned into one 512-bit mask (a masked OR per probe into
 * the lane of its word), compared with the block to learn whether the key
 * is new, then written back: by plain stores of the 8 words when there is a
 * single writer, by a locked fetch-or of only the words that miss bits when
 * there are several.
 *
 * WHY A VECTOR LOAD IS SAFE UNDER CONCURRENT ADDS
 * While adds run, bits only ever go from 0 to 1, and every word is written
 * by whole 8-byte atomic operations. A 64-byte load observes each aligned
 * 8-byte word either before or after any concurrent write to it, so it reads
 * a subset of the current bits that contains every bit set by adds that
 * happened before it: no false negative, the guarantee filter.h states.
 * ThreadSanitizer cannot see through vector loads, so TSan builds use the
 * portable implementation, where every access is a C11 atomic. */
#include "filter_internal.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(BG_NO_SIMD)
#  if defined(__SANITIZE_THREAD__)
#    define BG__AVX512 0
#  elif defined(__has_feature)
#    if __has_feature(thread_sanitizer)
#      define BG__AVX512 0
#    endif
#  endif
#  ifndef BG__AVX512
#    define BG__AVX512 1
#  endif
#else
#  define BG__AVX512 0
#endif

#if BG__AVX512
#include <immintrin.h>

#define BG__TARGET __attribute__((target("avx512f,avx512dq")))

/* Lanes of pass j (probes j..j+7) that are real probes. */
static inline __mmask8 pass_lanes(uint32_t k, uint32_t j)
{
    return k - j >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (k - j)) - 1);
}

BG__TARGET static int avx512_contains(const bg_filter *f, bg_hash h)
{
    const _Atomic uint64_t *block = bg__block_of(f, h.h1);
    const __m512i words = _mm512_load_si512((const void *)block);
    const __m512i h2 = _mm512_set1_epi64((long long)h.h2);
    const __m512i one = _mm512_set1_epi64(1), low6 = _mm512_set1_epi64(63);
    const __m512i seven = _mm512_set1_epi64(7);
    __mmask8 clear = 0;
    for (uint32_t j = 0; j < f->k; j += 8) {
        __m512i salt = _mm512_loadu_si512((const void *)&bg__blocked_salt[j]);
        __m512i bit = _mm512_srli_epi64(_mm512_mullo_epi64(h2, salt), 55);
        __m512i word = _mm512_permutexvar_epi64(_mm512_srli_epi64(bit, 6), words);
        /* payload bit b of a word is machine bit b ^ 7 (filter_internal.h) */
        __m512i mask = _mm512_sllv_epi64(one, _mm512_and_si512(_mm512_xor_si512(bit, seven), low6));
        clear |= _mm512_mask_testn_epi64_mask(pass_lanes(f->k, j), word, mask);
    }
    return clear == 0;
}

BG__TARGET static int avx512_add(bg_filter *f, bg_hash h)
{
    _Atomic uint64_t *block = bg__block_of(f, h.h1);
    __m512i mask = _mm512_setzero_si512();
    for (uint32_t j = 0; j < f->k; j++) {
        uint64_t b = bg__probe_bit(h.h2, j);
        __m512i bit = _mm512_set1_epi64((long long)bg__bit(b & 63));
        mask = _mm512_mask_or_epi64(mask, (__mmask8)(1u << (b >> 6)), mask, bit);
    }
    const __m512i words = _mm512_load_si512((const void *)block);
    __mmask8 missing = _mm512_test_epi64_mask(_mm512_andnot_si512(words, mask), mask);
    if (missing == 0)
        return 0;
    uint64_t m[8];
    _mm512_storeu_si512((void *)m, mask);
    if (f->single_writer) {
        uint64_t w8[8];
        _mm512_storeu_si512((void *)w8, _mm512_or_si512(words, mask));
        for (int w = 0; w < 8; w++)
            atomic_store_explicit(&block[w], w8[w], memory_order_relaxed);
        return 1;
    }
    int added = 0;
    for (unsigned todo = missing; todo; todo &= todo - 1) {
        unsigned w = (unsigned)__builtin_ctz(todo);
        uint64_t old = atomic_fetch_or_explicit(&block[w], m[w], memory_order_relaxed);
        added |= (old & m[w]) != m[w];
    }
    return added;
}

static void avx512_prefetch(const bg_filter *f, bg_hash h)
{
    bg__prefetch(bg__block_of(f, h.h1));
}

BG__DEFINE_GROUP_OPS(avx512, BG__TARGET)

static const bg__filter_ops avx512_ops = {
    .variant = BG_VARIANT_BLOCKED,
    .name = "blocked",
    .add = avx512_add,
    .contains = avx512_contains,
    .prefetch_group = avx512_prefetch_group,
    .add_group = avx512_add_group,
    .contains_group = avx512_contains_group,
    .estimate = bg__blocked_estimate,
};

const bg__filter_ops *bg__blocked_avx512_ops(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
        return &avx512_ops;
    return NULL;
}

#else

const bg__filter_ops *bg__blocked_avx512_ops(void)
{
    return NULL;
}

#endif
