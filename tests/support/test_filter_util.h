/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers several unit suites share about whole filters (test_filter_util.c,
 * in the bg_test_unit library): comparing two filters by their file images,
 * little-endian fields of an image, and the status an image decodes to.
 * The checks fail the running test, as the TU_ assertions do. */
#ifndef BG_TEST_FILTER_UTIL_H
#define BG_TEST_FILTER_UTIL_H

#include "test_util.h"

/* Two filters are the same: the same file image, byte for byte (header,
 * item count and checksum included). */
void tu_assert_same_filter(const bg_filter *a, const bg_filter *b);

/* The n-byte little-endian value at p. */
uint64_t tu_le(const uint8_t *p, unsigned n);

/* v as n little-endian bytes into p. */
void tu_put_le(uint8_t *p, uint64_t v, unsigned n);

/* The status bg_filter_decode gives buf[0..len) with `flags`; asserts that
 * a refused decode leaves its OUT filter NULL and that the header-only
 * bg_file_inspect_buffer agrees. A decoded filter is freed at once. */
int tu_decode_status(const uint8_t *buf, size_t len, unsigned flags);

/* The standard variant's probe positions (<bloomgate/layout.h>), asserting
 * that bg_layout_positions accepts (m, k): k positions into out. */
void tu_standard_probes(bg_hash h, uint64_t m, uint32_t k, uint64_t *out);

#endif
