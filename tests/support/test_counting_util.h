/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the counting variant's suites (test_counting*.c), in the
 * bg_test_unit library. Counters are read back through bg_filter_encode:
 * the payload of a counting filter holds counter i in the high nibble of
 * byte i / 2 when i is even, the low nibble when odd (filter.h COUNTING),
 * so that a test can compare counters with a model it computes itself. */
#ifndef BG_TEST_COUNTING_UTIL_H
#define BG_TEST_COUNTING_UTIL_H

#include "test_util.h"

/* The concurrency modes most counting tests run in, and their names. */
extern const bg_concurrency tu_counting_modes[2];
const char *tu_mode_name(bg_concurrency m);

/* A counting filter from o, in `mode` (the test fails if it cannot be
 * made). */
bg_filter *tu_counting_make(bg_filter_options o, bg_concurrency mode);

/* A filter's file image, malloc'd by tu_image_encode and freed by
 * tu_image_free (which accepts a freed one). */
typedef struct tu_image {
    uint8_t *buf;
    size_t len;
} tu_image;

tu_image tu_image_encode(const bg_filter *f);
void tu_image_free(tu_image *im);

/* The payload of an image: what follows its BG_FILE_HEADER_BYTES header.
 * Borrowed from the image. */
const uint8_t *tu_payload(const tu_image *im);
size_t tu_payload_len(const tu_image *im);

/* Counter i of a counting payload, as filter.h COUNTING documents it. */
unsigned tu_counter(const uint8_t *p, uint64_t i);

/* Bit i of a standard filter's payload (filter.h BIT LAYOUT). */
unsigned tu_bit(const uint8_t *p, uint64_t i);

/* The two filters' payloads are byte for byte the same (their headers, with
 * the item count, may differ); a failure says how many bytes differ and
 * the first. */
void tu_expect_same_payload(const bg_filter *a, const bg_filter *b);

/* bg_filter_hash of a key, asserting that it succeeds. */
bg_hash tu_hash_of(const bg_filter *f, const void *key, size_t len);

/* Adds keys [first, first + count) of a distinct set, by add_many in
 * batches of b's capacity; returns how many were reported new. */
uint64_t tu_add_range(bg_filter *f, tu_batch *b, uint64_t set, uint64_t first, uint64_t count);

/* How many keys [first, first + count) of a distinct set are reported
 * present (contains_many). */
uint64_t tu_count_present_range(const bg_filter *f, tu_batch *b, uint64_t set, uint64_t first,
                                uint64_t count);

#endif
