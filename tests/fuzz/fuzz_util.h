/* Helpers shared by the libFuzzer targets (fuzz_file.c, fuzz_chunks.c). */
#ifndef BG_FUZZ_UTIL_H
#define BG_FUZZ_UTIL_H

#include <stdint.h>

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

#endif
