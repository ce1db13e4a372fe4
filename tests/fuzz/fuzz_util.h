/* Helpers shared by the libFuzzer targets. */
#ifndef BG_FUZZ_UTIL_H
#define BG_FUZZ_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/error.h>

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
