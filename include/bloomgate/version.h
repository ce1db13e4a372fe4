/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate version: the numbers below are the single source of truth
 * (CMakeLists.txt reads them). */
#ifndef BLOOMGATE_VERSION_H
#define BLOOMGATE_VERSION_H

#include <bloomgate/api.h>
#include <bloomgate/error.h>

#define BG_VERSION_MAJOR 0
#define BG_VERSION_MINOR 2
#define BG_VERSION_PATCH 0

/* The soname's number. Bump it whenever the ABI changes incompatibly
 * (a struct's layout, a function's signature, an enum value's meaning). */
#define BG_ABI_VERSION 3

#define BG_VERSION_HEX \
    ((BG_VERSION_MAJOR << 16) | (BG_VERSION_MINOR << 8) | BG_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version as BG_VERSION_HEX, as compiled into the library (not
 * the header): compare it with BG_VERSION_HEX to catch a header/library mismatch. */
BG_API unsigned bg_version(void);

/* The same as "MAJOR.MINOR.PATCH". Static storage; never free it. */
BG_API const char *bg_version_string(void);

#ifdef __cplusplus
}
#endif

#endif
