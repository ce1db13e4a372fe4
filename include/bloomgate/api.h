/* SPDX-License-Identifier: BSD-3-Clause */
/* Export macros for the public headers of every bloomgate library. */
#ifndef BLOOMGATE_API_H
#define BLOOMGATE_API_H

/* Makes a symbol visible outside the shared library that defines it. Each
 * library is built with -fvisibility=hidden, so only what is marked is
 * exported; libbloomgate marks its API BG_API, the libraries above it have
 * macros of their own built on this one (BG_REMOTE_API, BG_GUARD_API). */
#if defined(_WIN32)
#  define BG_API_EXPORT __declspec(dllexport)
#elif defined(__GNUC__)
#  define BG_API_EXPORT __attribute__((visibility("default")))
#else
#  define BG_API_EXPORT
#endif

/* Marks libbloomgate's (the core's) API. */
#define BG_API BG_API_EXPORT

#endif
