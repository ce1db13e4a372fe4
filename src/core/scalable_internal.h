/* The scalable variant, behind bg_filter's API: filter.c hands every call on
 * a filter whose `scalable` is set to these functions, which keep the layers
 * (scalable.c). Internal. Their contracts are those of the public calls of
 * the same name in <bloomgate/filter.h>; arguments are already checked
 * (non-NULL filter and arrays, valid keys) unless said otherwise. */
#ifndef BG_SCALABLE_INTERNAL_H
#define BG_SCALABLE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "filter_internal.h"

extern const bg__filter_ops bg__scalable_ops;

/* bg_filter_new for BG_VARIANT_SCALABLE: validates the scalable options
 * (*out is NULL on failure). */
int bg__scalable_new(bg_filter **out, const bg_filter_options *opts);
void bg__scalable_free(bg_filter *f);

/* 1 new, 0 present in some layer, or a negative status (BG_EFULL,
 * BG_ELAYERS, BG_ETOOBIG, BG_ENOMEM: nothing added). */
int bg__scalable_test_and_add(bg_filter *f, bg_hash h);
int bg__scalable_contains(const bg_filter *f, bg_hash h);

/* The batch calls. On a negative status while adding, keys before the
 * failing one were added (their results are set), the rest were not. */
int64_t bg__scalable_run_hashes(bg_filter *f, const bg_hash *h, size_t count, uint8_t *results,
                                bool adding);
int64_t bg__scalable_run_keys(bg_filter *f, const void *const *keys, const size_t *lens,
                              size_t count, uint8_t *results, bool adding);

int bg__scalable_clear(bg_filter *f);
int bg__scalable_stats(const bg_filter *f, bg_filter_stats *out);
int bg__scalable_layer_stats(const bg_filter *f, uint32_t layer, bg_filter_stats *out);
int bg__scalable_scaling(const bg_filter *f, bg_filter_scaling *out);

/* Totals for the accessors: bits, bytes and items over all layers, and the
 * newest layer's k. */
uint64_t bg__scalable_bits(const bg_filter *f);
uint64_t bg__scalable_bytes(const bg_filter *f);
uint64_t bg__scalable_items(const bg_filter *f);
uint64_t bg__scalable_capacity(const bg_filter *f);
uint32_t bg__scalable_hashes(const bg_filter *f);

/* ---- for the file code (src/file) ------------------------------------- */

/* Everything that defines how a scalable filter grows, defaults filled in:
 * what a version-2 file's header records (docs/FORMAT.md), plus the seed
 * and the concurrency mode. */
typedef struct bg__scalable_params {
    bg_variant layer_variant; /* standard or blocked */
    uint64_t capacity;        /* n0: the first layer's */
    double error_rate;        /* p: the whole stack's bound */
    uint32_t expansion;       /* 1..BG_MAX_EXPANSION; 0 exactly when nonscaling */
    double tightening;        /* in (0, 1) */
    uint32_t max_layers;      /* 1..BG_MAX_LAYERS */
    uint64_t max_bytes;       /* > 0: on all layers' arrays together */
    bool nonscaling;
    uint64_t seed;
    bool single_writer;
} bg__scalable_params;

/* Checks parameters as read from a file: BG_OK, BG_EVARIANT (layer variant
 * neither standard nor blocked) or BG_ECORRUPT (any other field out of
 * range, NaN and infinities included). */
int bg__scalable_params_check(const bg__scalable_params *p);

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
 *                          the filter owns from then on;
 *   bg__scalable_adopt_mapping  makes the filter read-only and the owner of
 *                          a file mapping (bg_filter_free unmaps it); call it
 *                          on an empty shell, before any layer is pushed;
 *   bg__scalable_push_mapped    appends a read-only layer of a checked shape
 *                          whose array is `words` (64-byte aligned) inside
 *                          that mapping: the layer borrows it. BG_OK or
 *                          BG_ENOMEM (nothing appended).
 * The caller never pushes more than params.max_layers layers. */
int bg__scalable_shell(bg_filter **out, const bg__scalable_params *p);
void bg__scalable_push(bg_filter *f, bg_filter *layer);
void bg__scalable_adopt_mapping(bg_filter *f, void *mapping, size_t mapping_bytes);
int bg__scalable_push_mapped(bg_filter *f, const bg__filter_shape *s, void *words);

#endif
