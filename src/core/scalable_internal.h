/* SPDX-License-Identifier: BSD-3-Clause */
/* The scalable variant's table, and what the file code (src/file) needs to
 * write and rebuild a scalable filter's layers. Internal. */
#ifndef BG_SCALABLE_INTERNAL_H
#define BG_SCALABLE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "filter_internal.h"

/* The scalable variant's table (scalable.c): a filter with no array of its
 * own, whose calls go to its layers' tables. */
extern const bg__filter_ops bg__scalable_ops;

/* ---- for the file code (src/file) ------------------------------------- */

/* Everything that defines how a scalable filter grows, defaults filled in:
 * what a version-2 or version-4 file's header records (docs/FORMAT.md),
 * plus the seed and the concurrency mode. */
typedef struct bg__scalable_params {
    uint64_t capacity;        /* n0: the first layer's */
    double error_rate;        /* p: the whole stack's bound */
    double tightening;        /* in (0, 1) */
    double first_share;       /* in (0, 1): layer 0's share of error_rate */
    uint32_t blocked_from;    /* 0, or the first blocked layer (layer_variant standard) */
    uint64_t max_bytes;       /* > 0: on all layers' arrays together */
    uint64_t seed;
    bg_variant layer_variant; /* standard or blocked */
    uint32_t expansion;       /* 1..BG_MAX_EXPANSION; 0 exactly when nonscaling */
    uint32_t max_layers;      /* 1..BG_MAX_LAYERS */
    bool nonscaling;
    bool single_writer;
} bg__scalable_params;

/* Checks parameters as read from a file: BG_OK, BG_EVARIANT (layer variant
 * neither standard nor blocked) or BG_ECORRUPT (any other field out of
 * range, NaN and infinities included). */
int bg__scalable_params_check(const bg__scalable_params *p);

/* Whether the schedule is the classic p (1 - t) t^i: first_share is
 * exactly 1 - tightening (what a version-2 file implies). */
bool bg__scalable_classic(const bg__scalable_params *p);

/* Layer i's variant: blocked from blocked_from on, else layer_variant. */
bg_variant bg__scalable_layer_variant(const bg__scalable_params *p, uint32_t i);

/* Layer i's capacity, n0 expansion^i (n0 when nonscaling) into *out; false
 * when it does not fit in 64 bits. */
bool bg__scalable_layer_capacity(const bg__scalable_params *p, uint32_t i, uint64_t *out);

/* The parameters of a scalable filter. */
void bg__scalable_params_get(const bg_filter *f, bg__scalable_params *out);

/* The number of layers now (an acquire load: the layers below it are
 * complete), and layer i < that number. A snapshot stays valid while the
 * filter is neither cleared nor freed: layers are only ever appended. */
uint32_t bg__scalable_count(const bg_filter *f);
bg_filter *bg__scalable_layer(const bg_filter *f, uint32_t i);

/* Assembling a filter from a file's layers, after the file code has
 * validated them (params checked; layers in order, shaped as
 * growth would have made them):
 *   bg__scalable_shell     a new scalable filter with no layers yet
 *                          (BG_OK or BG_ENOMEM); free it with
 *                          bg_filter_free at any point;
 *   bg__scalable_push      appends a layer made by bg__filter_alloc, which
 *                          the filter owns from then on: BG_OK, or
 *                          BG_ENOMEM (nothing appended; the caller still
 *                          owns the layer);
 *   bg__scalable_shell_mapped  the same, read-only, and the owner of a
 *                          file mapping (bg_filter_free unmaps it; on
 *                          failure the caller still owns it);
 *   bg__scalable_push_mapped    appends a read-only layer of a checked shape
 *                          whose array is `words` (64-byte aligned) inside
 *                          that mapping: the layer borrows it. BG_OK or
 *                          BG_ENOMEM (nothing appended).
 * The caller never pushes more than params.max_layers layers. */
int bg__scalable_shell(bg_filter **out, const bg__scalable_params *p);
int bg__scalable_push(bg_filter *f, bg_filter *layer);
int bg__scalable_shell_mapped(bg_filter **out, const bg__scalable_params *p, void *mapping,
                              size_t mapping_bytes);
int bg__scalable_push_mapped(bg_filter *f, const bg__filter_shape *s, void *words);

#endif
