/* SPDX-License-Identifier: BSD-3-Clause */
/* The in-process exact store of the seen example: which articles each user
 * has seen, as one open-addressing hash set of (user, article) pairs.
 *
 * HOW IT WORKS
 * A pair is the 64-bit word (user << 32 | article), stored plus one so that
 * 0 marks an empty slot. Slots: a power of two at least twice the expected
 * count (load <= 0.5, so a probe sequence is short), linear probing from the
 * slot the high bits of a multiplicative hash pick. With 2 million pairs
 * the table is 32 MiB: a lookup is a cache miss, as in any large exact
 * store, which is why the batch call computes every slot and prefetches it
 * before it probes.
 *
 * Not thread-safe for inserts; any number of threads may query once the
 * inserts are done (and joined). */
#ifndef SEEN_PAIRSET_H
#define SEEN_PAIRSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct pairset {
    uint64_t *slots;
    uint64_t mask;  /* slots - 1 */
    unsigned shift; /* 64 - log2(slots) */
    size_t count;
} pairset;

/* Sizes an empty set for `expected` pairs. 0, or -1 when the table would
 * not fit in memory (then *s holds nothing to free). Allocates; release with
 * pairset_free. */
int pairset_init(pairset *s, size_t expected);

/* Frees the table; *s is empty afterwards. */
void pairset_free(pairset *s);

/* Adds (user, article): 1 if it was new, 0 if present, -1 if the set is
 * full (more pairs than pairset_init was told, twice over). user must be
 * below UINT32_MAX. */
int pairset_insert(pairset *s, uint32_t user, uint32_t article);

/* 1 if (user, article) is in the set, else 0. */
int pairset_contains(const pairset *s, uint32_t user, uint32_t article);

/* out[i] = pairset_contains(s, user, articles[i]) for i < n, with the slots
 * of a group prefetched before they are probed. */
void pairset_contains_many(const pairset *s, uint32_t user, const uint32_t *articles, size_t n,
                           uint8_t *out);

/* Bytes of the table. */
size_t pairset_bytes(const pairset *s);

#endif
