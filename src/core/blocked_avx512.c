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
 *
 * WHY VECTOR ACCESS IS SAFE WITH CONCURRENT READERS AND WRITERS
 * While adds run, bits only ever go from 0 to 1. A 64-byte vector load or
 * store is carried out by x86-64 CPUs at least one aligned 8-byte element at
 * a time (Intel and AMD document whole 16-byte atomicity for AVX CPUs; no
 * implementation splits an aligned element), so a reader sees each word
 * before or after any concurrent write to it. Any such mix is a state between
 * the one before and the one after the write: it holds every bit of every
 * add that happened before the read, so there is no false negative, which is
 * the guarantee filter.h gives. Concurrent writers never store a whole line:
 * they use fetch-or per word, so no add is lost. (ISO C calls a non-atomic
 * access to an _Atomic object racy whatever the hardware does; this file is
 * the one place that relies on the platform instead.) ThreadSanitizer cannot
 * see through vector accesses, so TSan builds use the portable
 * implementation, where every access is a C11 atomic. */
#include "filter_internal.h"
#include "hash_inline.h"

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

/* The key's 512-bit mask: probe j's bit in word (s + j) mod 8. */
BG__TARGET static inline __m512i key_mask(const bg_filter *f, bg_hash h)
{
    const __m512i salt = _mm512_loadu_si512((const void *)bg__blocked_salt);
    __m512i bit = _mm512_srli_epi64(_mm512_mullo_epi64(_mm512_set1_epi64((long long)h.h2), salt), 58);
    /* payload bit b of a word is machine bit b ^ 7 (filter_internal.h) */
    bit = _mm512_xor_si512(bit, _mm512_set1_epi64(7));
    __mmask8 probes = (__mmask8)((1u << f->k) - 1);
    __m512i mask = _mm512_maskz_sllv_epi64(probes, _mm512_set1_epi64(1), bit);
    /* word w takes probe (w - s) mod 8 */
    const __m512i iota = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    __m512i from = _mm512_sub_epi64(iota, _mm512_set1_epi64((long long)bg__block_start(h.h1)));
    return _mm512_permutexvar_epi64(from, mask); /* vpermq uses the low 3 bits */
}

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

BG__DEFINE_GROUP_OPS(avx512, BG__TARGET)

static const bg__filter_ops avx512_ops = {
    .variant = BG_VARIANT_BLOCKED,
    .name = "blocked",
    .cell_bits = 1,
    .add = avx512_add,
    .contains = avx512_contains,
    .prefetch_group = avx512_prefetch_group,
    .run_group = avx512_run_group,
    .run_keys = avx512_run_keys,
    .items_for_bits = bg__blocked_items_for_bits,
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
