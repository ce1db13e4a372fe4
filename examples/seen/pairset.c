/* SPDX-License-Identifier: BSD-3-Clause */
/* The in-process exact store (pairset.h). */
#include "pairset.h"

#include <stdlib.h>

static uint64_t pair_word(uint32_t user, uint32_t article)
{
    return ((uint64_t)user << 32 | article) + 1u;
}

/* Fibonacci hashing after a xor-shift: the high bits of the product
 * depend on every bit of the word. */
static uint64_t pair_slot(const pairset *s, uint64_t w)
{
    w ^= w >> 29;
    return (w * UINT64_C(0x9e3779b97f4a7c15)) >> s->shift;
}

int pairset_init(pairset *s, size_t expected)
{
    s->slots = NULL;
    s->count = 0;
    uint64_t n = 16;
    unsigned bits = 4;
    while (n < (uint64_t)expected * 2u) {
        if (n > SIZE_MAX / sizeof *s->slots / 2u)
            return -1;
        n *= 2u;
        bits++;
    }
    s->slots = calloc((size_t)n, sizeof *s->slots);
    if (!s->slots)
        return -1;
    s->mask = n - 1u;
    s->shift = 64u - bits;
    return 0;
}

void pairset_free(pairset *s)
{
    free(s->slots);
    s->slots = NULL;
    s->count = 0;
}

int pairset_insert(pairset *s, uint32_t user, uint32_t article)
{
    if (s->count >= s->mask)
        return -1;
    uint64_t w = pair_word(user, article);
    for (uint64_t i = pair_slot(s, w);; i = (i + 1u) & s->mask) {
        if (s->slots[i] == w)
            return 0;
        if (s->slots[i] == 0) {
            s->slots[i] = w;
            s->count++;
            return 1;
        }
    }
}

static int probe_from(const pairset *s, uint64_t i, uint64_t w)
{
    for (;; i = (i + 1u) & s->mask) {
        if (s->slots[i] == w)
            return 1;
        if (s->slots[i] == 0)
            return 0;
    }
}

int pairset_contains(const pairset *s, uint32_t user, uint32_t article)
{
    uint64_t w = pair_word(user, article);
    return probe_from(s, pair_slot(s, w), w);
}

/* Slots per prefetch group: enough misses in flight to cover the latency,
 * few enough to stay in L1. */
#define GROUP 32u

void pairset_contains_many(const pairset *s, uint32_t user, const uint32_t *articles, size_t n,
                           uint8_t *out)
{
    uint64_t slot[GROUP], word[GROUP];
    for (size_t base = 0; base < n; base += GROUP) {
        size_t g = n - base < GROUP ? n - base : GROUP;
        for (size_t j = 0; j < g; j++) {
            word[j] = pair_word(user, articles[base + j]);
            slot[j] = pair_slot(s, word[j]);
            __builtin_prefetch(&s->slots[slot[j]]);
        }
        for (size_t j = 0; j < g; j++)
            out[base + j] = (uint8_t)probe_from(s, slot[j], word[j]);
    }
}

size_t pairset_bytes(const pairset *s)
{
    return (size_t)(s->mask + 1u) * sizeof *s->slots;
}
