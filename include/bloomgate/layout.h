/* SPDX-License-Identifier: BSD-3-Clause */
/* The standard layout's bit positions: where a key's bits are.
 *
 * A standard or counting filter's array is a stable format (docs/FORMAT.md):
 * the same bits in memory, in a file, in the Redis module's type and in a
 * plain Redis bitmap (<bloomgate/remote.h>), and clients in other languages
 * compute the same positions. This header is the one definition of them;
 * the core, the remote bitmap backend and the tests all use it.
 *
 * POSITIONS
 * From a key's bg_hash (<bloomgate/hash.h>) and the array's m cells:
 *   a = (h1 * m) >> 64,  b = ((h2 * (m - 1)) >> 64) + 1   (so 1 <= b < m)
 *   x_0 = a, y_0 = b;  x_{j+1} = (x_j + y_j) mod m;  y_{j+1} = (y_j + j) mod m
 * and probe j (0 <= j < k) is cell x_j: enhanced double hashing (Dillinger &
 * Manolios, "Bloom Filters in Probabilistic Verification", 2004), every
 * value a uint64_t. b is never 0, which would put all k probes on one cell;
 * the j term breaks the patterns of plain double hashing (keys sharing
 * (a, b) mod small factors of m). Each step is one add and a conditional
 * subtract, valid for any m up to BG_MAX_BITS (x + y < 2m <= 2^64).
 *
 * WHERE A CELL IS
 * Standard: bit i is bit (0x80 >> (i % 8)) of byte i / 8 of the array,
 * Redis's SETBIT order. Counting: counter i is the high nibble of byte i / 2
 * when i is even, the low nibble when odd (<bloomgate/filter.h> COUNTING).
 * The blocked variant has a layout of its own (<bloomgate/filter.h> BIT
 * LAYOUT).
 *
 * The iterator is inline so that a filter's probe loop compiles to the same
 * few instructions as if written out; bg_layout_positions is the same
 * sequence into an array. Everything here is pure: O(k), no allocation,
 * safe from any number of threads. */
#ifndef BLOOMGATE_LAYOUT_H
#define BLOOMGATE_LAYOUT_H

#include <stdint.h>

#include <bloomgate/api.h>
#include <bloomgate/error.h>
#include <bloomgate/hash.h>

#ifdef __cplusplus
extern "C" {
#endif

/* (x * range) >> 64 from four 32-bit products, for compilers without a
 * 128-bit integer type: the same value as bg_layout_reduce (a test compares
 * the two). */
static inline uint64_t bg_layout_reduce_portable(uint64_t x, uint64_t range)
{
    uint64_t xl = x & 0xffffffffu, xh = x >> 32, rl = range & 0xffffffffu, rh = range >> 32;
    uint64_t ll = xl * rl, lh = xl * rh, hl = xh * rl, hh = xh * rh;
    uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

/* (x * range) >> 64: maps a uniform 64-bit x to a uniform value in
 * [0, range) with one multiply (Lemire, "Fast random integer generation in
 * an interval", 2019); unlike x % range it has no division and no bias
 * beyond range / 2^64, and it uses all 64 bits of x. */
static inline uint64_t bg_layout_reduce(uint64_t x, uint64_t range)
{
#if defined(__SIZEOF_INT128__) && defined(__GNUC__)
    return (uint64_t)(__extension__((unsigned __int128)x * range >> 64));
#else
    return bg_layout_reduce_portable(x, range);
#endif
}

/* (x + y) mod m for x, y < m, without a division. */
static inline uint64_t bg_layout_step(uint64_t x, uint64_t y, uint64_t m)
{
    x += y;
    return x >= m ? x - m : x;
}

/* One key's walk over its probes: x is probe j's cell. */
typedef struct bg_layout_probe {
    uint64_t x; /* x_j: the cell of probe j */
    uint64_t y; /* y_j: the step to probe j + 1 */
    uint64_t m; /* cells in the array, 2..BG_MAX_BITS */
    uint32_t j; /* the probe's index, from 0 */
} bg_layout_probe;

/* Probe 0 of hash h in an array of m cells (m >= 2). */
static inline bg_layout_probe bg_layout_probe_first(bg_hash h, uint64_t m)
{
    bg_layout_probe p = {bg_layout_reduce(h.h1, m), bg_layout_reduce(h.h2, m - 1) + 1, m, 0};
    return p;
}

/* Moves *p to probe j + 1: x += y, then y += j (both mod m; j < m). */
static inline void bg_layout_probe_next(bg_layout_probe *p)
{
    p->x = bg_layout_step(p->x, p->y, p->m);
    p->y = bg_layout_step(p->y, p->j, p->m);
    p->j++;
}

/* Writes the k cells of hash h in an array of m cells to out[0..k-1], in
 * probe order (a cell may repeat). Returns BG_OK, or BG_EINVAL for a NULL
 * out, m outside BG_MIN_BITS..BG_MAX_BITS or k outside 1..BG_MAX_K
 * (<bloomgate/filter.h>). Nothing is allocated. */
BG_API int bg_layout_positions(bg_hash h, uint64_t m, uint32_t k, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif
