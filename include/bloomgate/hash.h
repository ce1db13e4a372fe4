/* SPDX-License-Identifier: BSD-3-Clause */
/* Hashing a key, once.
 *
 * A key is any byte string (const void *, size_t): binary-safe, and the empty
 * key (NULL, 0) is a key like any other. It is hashed exactly once per
 * operation with XXH3-128 (seeded) into a bg_hash; every variant, every batch
 * call and every home of a filter (memory, file, Redis) derives its probe
 * positions from that pair of 64-bit values, so a key that visits several
 * filters or layers, or a filter that lives in Redis, is hashed only once.
 * bg_hash_key is O(len), pure (no allocation, no shared state) and safe
 * from any number of threads. */
#ifndef BLOOMGATE_HASH_H
#define BLOOMGATE_HASH_H

#include <stddef.h>
#include <stdint.h>

#include <bloomgate/api.h>
#include <bloomgate/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* XXH3-128 of a key: h1 is the low 64 bits, h2 the high 64 bits. */
typedef struct bg_hash {
    uint64_t h1;
    uint64_t h2;
} bg_hash;

/* Hashes `len` bytes at `key` with `seed` into *out. `key` may be NULL only
 * when `len` is 0. Returns BG_OK or BG_EINVAL (NULL out, or NULL key with a
 * non-zero length). Nothing is allocated. */
BG_API int bg_hash_key(const void *key, size_t len, uint64_t seed, bg_hash *out);

#ifdef __cplusplus
}
#endif

#endif
