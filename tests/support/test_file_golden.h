/* SPDX-License-Identifier: BSD-3-Clause */
/* The golden file images (test_file_golden.c, in the bg_test_unit library):
 * the bytes a standard and a blocked filter encode to, written out by hand
 * once and compared ever since, and the filters they are of. test_file.c
 * pins the format with them; the other file suites start from them when
 * they need a valid header to change. */
#ifndef BG_TEST_FILE_GOLDEN_H
#define BG_TEST_FILE_GOLDEN_H

#include "test_util.h"

#define TU_GOLDEN_STANDARD_BYTES 141
#define TU_GOLDEN_BLOCKED_BYTES 192

/* Standard, m = 100, k = 3, seed 0x0123456789abcdef, keys "alice", "bob", "". */
extern const uint8_t tu_golden_standard[TU_GOLDEN_STANDARD_BYTES];

/* Blocked, n = 20, p = 0.01 (so m = 512, k = 8), seed 42, keys "alice", "bob". */
extern const uint8_t tu_golden_blocked[TU_GOLDEN_BLOCKED_BYTES];

/* The filter that encodes to tu_golden_blocked (blocked != 0) or
 * tu_golden_standard, built afresh; the caller frees it. */
bg_filter *tu_golden_filter(int blocked);

#endif
