/* SPDX-License-Identifier: BSD-3-Clause */
/* BG__SHARED marks a function of libbloomgate that bloomgate's own libraries
 * above the core (libbloomgate_remote, libbloomgate_guard) call: the core is
 * built with -fvisibility=hidden, so without the mark the shared library
 * would not export it and each of them would need a copy of the core.
 *
 * Exported for bloomgate's own libraries: NOT API. No public header declares
 * these functions, and they have no stability promise: a function marked
 * here may change or disappear in any release, ABI version or not. Programs
 * use the headers in include/bloomgate/ only.
 *
 * Only declarations in src/common/ carry the mark (tests/install checks that
 * the shared library exports the BG_API functions of the public headers and
 * these, nothing else). */
#ifndef BG_COMMON_SHARED_H
#define BG_COMMON_SHARED_H

#if defined(__GNUC__) || defined(__clang__)
#  define BG__SHARED __attribute__((visibility("default")))
#else
#  define BG__SHARED
#endif

#endif
