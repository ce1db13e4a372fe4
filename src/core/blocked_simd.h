/* SPDX-License-Identifier: BSD-3-Clause */
/* What the blocked variant's SIMD implementations (blocked_avx512.c,
 * blocked_avx2.c) share: when they are compiled (BG__SIMD_X86, cpu.h), the
 * keys their vector hashing leaves to bg__hash, and the copies of their
 * batch loop. Internal. */
#ifndef BG_BLOCKED_SIMD_H
#define BG_BLOCKED_SIMD_H

#include "cpu.h"
#include "filter_internal.h"

/* Hashes keys[i] for each bit i of `rest` into h1[i], h2[i]: the keys a
 * vector hash left to XXH3's other paths (hash.c). A call, not inlined, so
 * that it (which clobbers every vector register) is not in the hot loop. */
void bg__hash_rest(const void *const *keys, const size_t *lens, unsigned rest, uint64_t seed,
                   uint64_t *h1, uint64_t *h2);

/* PREFIX##_run_keys (bg__filter_ops.run_keys) over the file's
 * run_keys(f, keys, lens, count, results, adding, prefetch): one copy of
 * that loop per (adding, prefetch), each with the SIMD target attribute
 * TARGET, so neither is tested per key; the prefetch for filters larger
 * than PREFETCH_MIN_BYTES. */
#define BG__DEFINE_SIMD_RUN_KEYS(PREFIX, TARGET, PREFETCH_MIN_BYTES)                         \
    BG__SIMD_RUN_KEYS_COPY(PREFIX##_contains_keys, TARGET, false, false)                     \
    BG__SIMD_RUN_KEYS_COPY(PREFIX##_contains_keys_pf, TARGET, false, true)                   \
    BG__SIMD_RUN_KEYS_COPY(PREFIX##_add_keys, TARGET, true, false)                           \
    BG__SIMD_RUN_KEYS_COPY(PREFIX##_add_keys_pf, TARGET, true, true)                         \
    static int64_t PREFIX##_run_keys(bg_filter *f, const void *const *keys,                  \
                                     const size_t *lens, size_t count, uint8_t *results,     \
                                     bool adding)                                            \
    {                                                                                        \
        bool pf = f->nwords * 8 > (PREFETCH_MIN_BYTES);                                      \
        if (adding)                                                                          \
            return (pf ? PREFIX##_add_keys_pf : PREFIX##_add_keys)(f, keys, lens, count,     \
                                                                   results);                 \
        return (pf ? PREFIX##_contains_keys_pf : PREFIX##_contains_keys)(f, keys, lens,      \
                                                                         count, results);    \
    }

#define BG__SIMD_RUN_KEYS_COPY(NAME, TARGET, ADDING, PREFETCH)                               \
    TARGET __attribute__((noinline)) static int64_t NAME(bg_filter *f,                       \
                                                         const void *const *keys,            \
                                                         const size_t *lens, size_t count,   \
                                                         uint8_t *results)                   \
    {                                                                                        \
        return run_keys(f, keys, lens, count, results, ADDING, PREFETCH);                    \
    }

#endif
