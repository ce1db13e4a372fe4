/* SPDX-License-Identifier: BSD-3-Clause */
/* XXH3-128, compiled inline into the hot paths.
 *
 * Debian's libxxhash-dev ships the whole implementation in xxhash.h; with
 * XXH_INLINE_ALL it is compiled here as static functions, so hashing a short
 * key costs a few nanoseconds and no call into libxxhash.so. Internal. */
#ifndef BG_HASH_INLINE_H
#define BG_HASH_INLINE_H

#include <stddef.h>

#include <bloomgate/hash.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static inline bg_hash bg__hash(const void *key, size_t len, uint64_t seed)
{
    XXH128_hash_t x = XXH3_128bits_withSeed(key, len, seed);
    bg_hash h = {x.low64, x.high64};
    return h;
}

#endif
