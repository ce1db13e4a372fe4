/* SPDX-License-Identifier: BSD-3-Clause */
/* What the file code (src/file) needs of the RedisBloom variant beyond
 * <bloomgate/redisbloom.h>: its link checks before anything is allocated,
 * and read-only chains whose arrays lie in a file mapping. Internal. */
#ifndef BG_REDISBLOOM_INTERNAL_H
#define BG_REDISBLOOM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bloomgate/redisbloom.h>

/* bg_rb_new for a chain in the given concurrency mode (redisbloom.h
 * THREADS): a loaded file's is the caller's to choose. */
int bg__rb_new_as(bg_filter **out, const bg_rb_chain *chain, uint64_t max_bytes,
                  bool single_writer);

/* RedisBloom's checks of a stored link whose array is `length` bytes: the
 * ones bg_rb_push_link makes after the array-length check. */
bool bg__rb_link_ok(const bg_rb_link *l, uint64_t length);

/* A read-only chain with no links yet that owns the file mapping
 * [mapping, + mapping_bytes) from now on, also when this fails
 * (bg_filter_free unmaps it). BG_OK, BG_ECORRUPT (nfilters 0) or
 * BG_ENOMEM. */
int bg__rb_new_mapped(bg_filter **out, const bg_rb_chain *chain, uint64_t max_bytes, void *mapping,
                      size_t mapping_bytes);

/* Appends a link of checked fields whose array is fields->bytes bytes at
 * `array`, inside the chain's mapping (borrowed). BG_OK, BG_ETOOBIG or
 * BG_ENOMEM. */
int bg__rb_push_mapped(bg_filter *f, const bg_rb_link *fields, const uint8_t *array);

/* x mod d as the probes compute it (redisbloom.c, FAST MODULO), for the
 * tests; 0 for d < 2. */
uint64_t bg__rb_mod(uint64_t x, uint64_t d);

/* Position j of the key hashed to (a, b) in a link of n2 = 0 and d bits,
 * as the probes compute it (redisbloom.c, NEXT POSITION), for the tests;
 * d >= 2. */
uint64_t bg__rb_position(uint64_t a, uint64_t b, uint32_t j, uint64_t d);

/* The cap on the chain's arrays together. */
uint64_t bg__rb_max_bytes(const bg_filter *f);

#endif
