#include <bloomgate/hash.h>

#include "hash_inline.h"

int bg_hash_key(const void *key, size_t len, uint64_t seed, bg_hash *out)
{
    if (out == NULL || (key == NULL && len != 0))
        return BG_EINVAL;
    *out = bg__hash(key, len, seed);
    return BG_OK;
}
