/* SPDX-License-Identifier: BSD-3-Clause */
/* What the library compiles for x86-64 CPU features beyond the baseline
 * (SSE2), and how a function gets them: its own SIMD files for the blocked
 * variant (blocked_simd.h), and function clones (target_clones) for loops
 * that need no hand-written vector code, only the instructions. A clone set
 * is chosen once, when the library is loaded, by a resolver that asks the
 * CPU. Internal. */
#ifndef BG_CPU_H
#define BG_CPU_H

/* 1 where the x86-64 SIMD code and the clones are compiled: a
 * GCC-compatible compiler for x86-64, no BG_NO_SIMD, and not
 * ThreadSanitizer. TSan cannot see through vector accesses (such builds use
 * the portable code, where every access is a C11 atomic), and a clone's
 * resolver runs while the dynamic loader relocates, before TSan's runtime
 * is set up, and crashes it. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(BG_NO_SIMD)
#  if defined(__SANITIZE_THREAD__)
#    define BG__SIMD_X86 0
#  elif defined(__has_feature)
#    if __has_feature(thread_sanitizer)
#      define BG__SIMD_X86 0
#    endif
#  endif
#  ifndef BG__SIMD_X86
#    define BG__SIMD_X86 1
#  endif
#else
#  define BG__SIMD_X86 0
#endif

/* BG__AVX2_CLONE: an AVX2 copy of the function beside the baseline one, for
 * loops the compiler vectorizes or written in GCC vectors (filter.c's key
 * check, blocked.c's rate from the fill, counting.c's scans).
 * BG__POPCNT_CLONE: a copy with the POPCNT instruction, for the scans that
 * count bits (array.c's statistics, filter.c's union and intersection).
 * The x86-64 baseline has no POPCNT, so there __builtin_popcountll is a
 * call into libgcc, about a dozen instructions per word
 * (docs/PERFORMANCE.md, "Scans").
 * Both only on static functions: GCC exports a clone set's dispatcher
 * whatever the visibility, so a function other files call is a plain
 * wrapper around a cloned static one. */
#if BG__SIMD_X86
#  define BG__AVX2_CLONE __attribute__((target_clones("avx2", "default")))
#  define BG__POPCNT_CLONE __attribute__((target_clones("popcnt", "default")))
#else
#  define BG__AVX2_CLONE
#  define BG__POPCNT_CLONE
#endif

#endif
