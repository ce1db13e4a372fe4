/* SPDX-License-Identifier: BSD-3-Clause */
/* The two hash functions of RedisBloom's Bloom filters (redisbloom.c),
 * inline for the probe path. Both are Austin Appleby's MurmurHash, placed
 * in the public domain; written here from their description in
 * REDISBLOOM_FORMAT.md section 4. Blocks are read little-endian on every
 * host (RedisBloom reads them in host order, which is little-endian on the
 * machines it runs on). Internal. */
#ifndef BG_MURMUR_H
#define BG_MURMUR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The seeds RedisBloom hashes with: a = H(key, seed), b = H(key, a). */
#define BG__MURMUR64A_SEED UINT64_C(0xc6a4a7935bd1e995)
#define BG__MURMUR2_SEED UINT32_C(0x9747b28c)

static inline uint64_t bg__le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline uint32_t bg__le32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

/* MurmurHash64A: 64-bit blocks, all arithmetic mod 2^64. */
static inline uint64_t bg__murmur64a(const void *key, size_t len, uint64_t seed)
{
    const uint64_t m = UINT64_C(0xc6a4a7935bd1e995);
    const unsigned r = 47;
    const uint8_t *p = key;
    uint64_t h = seed ^ ((uint64_t)len * m);
    for (size_t n = len / 8; n > 0; n--, p += 8) {
        uint64_t k = bg__le64(p);
        k *= m;
        k ^= k >> r;
        k *= m;
        h ^= k;
        h *= m;
    }
    size_t rest = len & 7;
    if (rest != 0) {
        uint64_t t = 0;
        for (size_t j = 0; j < rest; j++)
            t |= (uint64_t)p[j] << (8 * j);
        h ^= t;
        h *= m;
    }
    h ^= h >> r;
    h *= m;
    h ^= h >> r;
    return h;
}

/* MurmurHash2, 32-bit: 32-bit blocks, arithmetic mod 2^32. The length
 * enters mod 2^32, as the original's int length does. */
static inline uint32_t bg__murmur2(const void *key, size_t len, uint32_t seed)
{
    const uint32_t m = UINT32_C(0x5bd1e995);
    const uint8_t *p = key;
    uint32_t h = seed ^ (uint32_t)len;
    for (size_t n = len / 4; n > 0; n--, p += 4) {
        uint32_t k = bg__le32(p);
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    size_t rest = len & 3;
    if (rest != 0) {
        uint32_t t = 0;
        for (size_t j = 0; j < rest; j++)
            t |= (uint32_t)p[j] << (8 * j);
        h ^= t;
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

#endif
