/* The filter file format, version 1. Internal; docs/FORMAT.md is the spec.
 *
 *    0        8       10      12  13  14      16      20      24
 *    +--------+-------+-------+---+---+-------+-------+-------+
 *    | magic  |version|hdr len|var|hsh| flags |   k   |  rsv  |
 *    +--------+-------+-------+---+---+-------+-------+-------+
 *   24       32       40       48       56       64       72
 *    +--------+--------+--------+--------+--------+--------+
 *    |   m    |  seed  |capacity| items  |pay off |pay len |
 *    +--------+--------+--------+--------+--------+--------+
 *   72                                  120      128
 *    +-------------------------------------+--------+
 *    |        reserved (48 zero bytes)     |checksum|
 *    +-------------------------------------+--------+
 *   128                                  128 + ceil(m / 8)
 *    +--------------------------------------+
 *    | payload: bit i at byte i / 8,        |
 *    | mask 0x80 >> (i % 8)                 |
 *    +--------------------------------------+
 *
 * Every field is little-endian and unsigned. magic is 89 'B' 'G' 'F' 0D 0A
 * 1A 0A: the high first byte and the CR LF / ^Z / LF tail (PNG's trick) make
 * a file mangled by a text-mode transfer fail the magic check, not the
 * checksum. checksum is XXH3-64 (seed 0) of header bytes [0, 120) followed by
 * the payload. Version 1 is canonical: hdr len and pay off are 128, flags and
 * reserved bytes 0, the payload's bits past m 0; a reader rejects anything
 * else, so one filter has exactly one image. */
#ifndef BG_FILE_FORMAT_H
#define BG_FILE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bloomgate/file.h>

#include "core/filter_internal.h"

#define BG__FILE_MAGIC "\x89" "BGF\r\n\x1a\n"
#define BG__FILE_MAGIC_LEN 8u

/* Byte offsets of the version-1 header's fields. */
enum {
    BG__OFF_MAGIC = 0,
    BG__OFF_VERSION = 8,         /* u16 */
    BG__OFF_HEADER_BYTES = 10,   /* u16 */
    BG__OFF_VARIANT = 12,        /* u8 */
    BG__OFF_HASH = 13,           /* u8 */
    BG__OFF_FLAGS = 14,          /* u16, 0 */
    BG__OFF_K = 16,              /* u32 */
    BG__OFF_RESERVED0 = 20,      /* u32, 0 */
    BG__OFF_M = 24,              /* u64 */
    BG__OFF_SEED = 32,           /* u64 */
    BG__OFF_CAPACITY = 40,       /* u64 */
    BG__OFF_ITEMS = 48,          /* u64 */
    BG__OFF_PAYLOAD_OFFSET = 56, /* u64 */
    BG__OFF_PAYLOAD_BYTES = 64,  /* u64 */
    BG__OFF_RESERVED1 = 72,      /* 48 bytes, 0 */
    BG__OFF_CHECKSUM = 120,      /* u64 */
};

_Static_assert(BG__OFF_CHECKSUM + 8 == BG_FILE_HEADER_BYTES, "the checksum ends the header");
_Static_assert(BG_FILE_HEADER_BYTES % 64 == 0, "the payload after the header is 64-byte aligned");

/* A version-1 header for `f` (item count read once, now), checksum field 0. */
void bg__file_header_build(const bg_filter *f, uint8_t out[BG_FILE_HEADER_BYTES]);

/* Parses and validates the header at head[0, head_len) of an input of
 * `file_len` bytes (head_len = min(file_len, BG_FILE_HEADER_BYTES)): every
 * field, against the others and against file_len. Fills *info (checksum
 * status 1, "not computed") and *shape. Returns BG_OK or a TRUST status of
 * file.h. Does not look at the payload. */
int bg__file_header_parse(const uint8_t *head, size_t head_len, uint64_t file_len,
                          bg_file_info *info, bg__filter_shape *shape);

/* The payload's last byte may only have bits below m set (the bits past m
 * are never probed, but a popcount would count them). */
bool bg__file_tail_ok(uint64_t m, uint8_t last_byte);

/* Only flags that file.h defines are set. */
bool bg__file_flags_ok(unsigned flags);

/* The checksum of a whole image in memory (header and payload contiguous). */
uint64_t bg__file_checksum(const uint8_t *image, uint64_t payload_bytes);

/* Copies payload bytes [from, from + n) of `f` into dst (`from` a multiple of
 * 8; n may end anywhere up to ceil(m / 8)). Each 64-bit word is read with one
 * atomic load, so concurrent adds are allowed (filter.h THREADS), and stored
 * in memory order, which is payload order (filter_internal.h, bg__bit). */
void bg__file_copy_payload(const bg_filter *f, uint64_t from, uint8_t *dst, size_t n);

/* Little-endian stores and loads, whatever the CPU. */
void bg__put_le(uint8_t *p, uint64_t v, unsigned bytes);
uint64_t bg__get_le(const uint8_t *p, unsigned bytes);

#endif
