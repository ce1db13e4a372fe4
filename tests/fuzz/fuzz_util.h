/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by the libFuzzer targets. */
#ifndef BG_FUZZ_UTIL_H
#define BG_FUZZ_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/error.h>

/* A property the target checks failed: says which and where (and why,
 * given printf arguments), then traps, so that libFuzzer keeps the input
 * as a crash. FZ_CHECK(cond); FZ_CHECKF(cond, "format", args...). */
__attribute__((noreturn, format(printf, 4, 5))) static inline void
fz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s:%d: check failed: %s%s%s\n", file, line, cond, *why ? ": " : "", why);
    __builtin_trap();
}

#define FZ_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fz_fail(__FILE__, __LINE__, #cond, "%s", "");                                          \
    } while (0)

#define FZ_CHECKF(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                                       \
    } while (0)

/* The n-byte little-endian number at p (n <= 8), as the format stores them. */
static inline uint64_t fz_get_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Whether rc is one of the statuses file.h TRUST lists for readers of
 * untrusted bytes. */
static inline int fz_is_trust_status(int rc)
{
    switch (rc) {
    case BG_EBADMAGIC:
    case BG_EVERSION:
    case BG_ETRUNC:
    case BG_ETRAILING:
    case BG_ECHECKSUM:
    case BG_EVARIANT:
    case BG_ETOOBIG:
    case BG_ECORRUPT:
        return 1;
    default:
        return 0;
    }
}

/* Whether list is what bg_remote_options.seeds takes: "HOST:PORT" items
 * separated by ',', each host non-empty (an IPv6 one in brackets), each
 * port 1..65535 written out. */
static inline int fz_seeds_ok(const char *list)
{
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        const char *colon = NULL;
        if (len && *p == '[') {
            const char *close = memchr(p, ']', len);
            if (!close || close == p + 1 || close + 1 >= p + len || close[1] != ':')
                return 0;
            colon = close + 1;
        } else {
            for (const char *c = p; c < p + len; c++)
                if (*c == ':')
                    colon = c;
            if (!colon || colon == p)
                return 0;
        }
        size_t digits = (size_t)(p + len - colon - 1);
        if (digits < 1 || digits > 5 || strspn(colon + 1, "0123456789") < digits)
            return 0;
        long port = strtol(colon + 1, NULL, 10);
        if (port < 1 || port > 65535)
            return 0;
        if (p[len] == '\0')
            return 1;
        p += len + 1;
    }
}

#endif
