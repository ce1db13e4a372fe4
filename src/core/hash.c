/* SPDX-License-Identifier: BSD-3-Clause */
#include <bloomgate/hash.h>

#include "blocked_simd.h"
#include "hash_inline.h"

int bg_hash_key(const void *key, size_t len, uint64_t seed, bg_hash *out)
{
    if (out == NULL || (key == NULL && len != 0))
        return BG_EINVAL;
    *out = bg__hash(key, len, seed);
    return BG_OK;
}

void bg__hash_rest(const void *const *keys, const size_t *lens, unsigned rest, uint64_t seed,
                   uint64_t *h1, uint64_t *h2)
{
    for (; rest; rest &= rest - 1) {
        unsigned i = (unsigned)__builtin_ctz(rest);
        bg_hash h = bg__hash(keys[i], lens[i], seed);
        h1[i] = h.h1;
        h2[i] = h.h2;
    }
}
