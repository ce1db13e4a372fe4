/* SPDX-License-Identifier: BSD-3-Clause */
/* The filter file format, versions 1 to 4. Internal; docs/FORMAT.md is the
 * spec.
 *
 * VERSION 1: one standard, blocked or counting filter.
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
 * else, so one filter has exactly one image.
 *
 * VERSION 2: a scalable filter, a container of version-1 layer images.
 *
 *    0        8       10      12  13  14      16      20      24
 *    +--------+-------+-------+---+---+-------+-------+-------+
 *    | magic  |version|hdr len|var|hsh| flags | layers| expan |
 *    +--------+-------+-------+---+---+-------+-------+-------+
 *   24       32       40       48       56       64    68  69  72
 *    +--------+--------+--------+--------+--------+-----+---+---+
 *    | tight  |  p     |  seed  |  n0    | items  |max L|lv |rsv|
 *    +--------+--------+--------+--------+--------+-----+---+---+
 *   72       80       88       96                      120      128
 *    +--------+--------+--------+-------------------------+--------+
 *    |max byte|1st lay | total  | reserved (24 zero bytes)|checksum|
 *    +--------+--------+--------+-------------------------+--------+
 *   128: layer 0 (a version-1 image: header, payload) zero-padded to a
 *        multiple of 64 bytes, then layer 1, ... up to `total`
 *
 * var 4 (scalable); flags bit 0 = non-scaling, the others 0; tight and p are
 * IEEE-754 binary64 bit patterns; lv is the layer variant; 1st lay is 128.
 * Each layer image is what version 1 writes for that layer, except that its
 * checksum field is 0: the container's checksum, XXH3-64 of header bytes
 * [0, 120) followed by bytes [128, total), covers every layer. The checks
 * (bg__file_plan_read, docs/FORMAT.md) make version 2 canonical too. */
#ifndef BG_FILE_FORMAT_H
#define BG_FILE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bloomgate/file.h>

#include "core/filter_internal.h"
#include "core/scalable_internal.h"

#define BG__FILE_MAGIC "\x89" "BGF\r\n\x1a\n"
#define BG__FILE_MAGIC_LEN 8u

/* The versions, and the variant each one holds. */
#define BG__FILE_V1 1u /* standard, blocked, counting */
#define BG__FILE_V2 2u /* scalable */

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

/* Byte offsets of the version-2 header's fields; magic, version, header
 * length, variant, hash, flags and checksum are where version 1 has them. */
enum {
    BG__V2_OFF_LAYERS = 16,        /* u32, 1..max layers */
    BG__V2_OFF_EXPANSION = 20,     /* u32; 0 iff non-scaling */
    BG__V2_OFF_TIGHTENING = 24,    /* binary64 */
    BG__V2_OFF_ERROR_RATE = 32,    /* binary64 */
    BG__V2_OFF_SEED = 40,          /* u64 */
    BG__V2_OFF_CAPACITY = 48,      /* u64, n0 */
    BG__V2_OFF_ITEMS = 56,         /* u64, the layers' sum */
    BG__V2_OFF_MAX_LAYERS = 64,    /* u32 */
    BG__V2_OFF_LAYER_VARIANT = 68, /* u8 */
    BG__V2_OFF_RESERVED0 = 69,     /* 3 bytes, 0 */
    BG__V2_OFF_MAX_BYTES = 72,     /* u64 */
    BG__V2_OFF_FIRST_LAYER = 80,   /* u64, 128 */
    BG__V2_OFF_TOTAL = 88,         /* u64, the file's length */
    BG__V2_OFF_RESERVED1 = 96,     /* 24 bytes, 0 */
};

/* Flag bits of a version-2 header. */
#define BG__V2_NONSCALING 1u

/* VERSION 4: a scalable filter whose schedule or layer variants version 2
 * cannot state: version 2's layout, with two of its reserved fields used.
 *
 *   96       104      108                       120      128
 *    +--------+--------+-------------------------+--------+
 *    | share  |blk from| reserved (12 zero bytes)|checksum|
 *    +--------+--------+-------------------------+--------+
 *
 * share is the first layer's share of p (binary64, in (0, 1)); blk from the
 * first blocked layer of a mixed stack (u32, 0: none; layer variant then
 * standard). A filter version 2 can state (share exactly 1 - tightening, no
 * blocked layer) is written as version 2, and a version-4 image of one is
 * refused, so that every filter has one image. */
#define BG__FILE_V4 4u /* scalable, with a first share or mixed layers */

enum {
    BG__V4_OFF_FIRST_SHARE = 96,   /* binary64 */
    BG__V4_OFF_BLOCKED_FROM = 104, /* u32 */
    BG__V4_OFF_RESERVED1 = 108,    /* 12 bytes, 0 */
};

_Static_assert((int)BG__V4_OFF_FIRST_SHARE == (int)BG__V2_OFF_RESERVED1, "v4: its fields are v2's reserved bytes");
_Static_assert(BG__V4_OFF_RESERVED1 + 12 == BG__OFF_CHECKSUM, "v4: reserved bytes up to the checksum");

/* Layer images are padded to this, so every payload is 64-byte aligned. */
#define BG__V2_ALIGN 64u

/* VERSION 3: a RedisBloom chain (BG_VARIANT_REDISBLOOM), its links' fields
 * and arrays as RedisBloom keeps them (docs/FORMAT.md).
 *
 *    0        8       10      12  13  14      16      20      24      28  32
 *    +--------+-------+-------+---+---+-------+-------+-------+-------+---+
 *    | magic  |version|hdr len|var|hsh| flags | links |options|growth |rsv|
 *    +--------+-------+-------+---+---+-------+-------+-------+-------+---+
 *   32       40       48       56       64                     120      128
 *    +--------+--------+--------+--------+----------------------+--------+
 *    |  size  |max byte|1st link| total  | reserved (56 zeros)  |checksum|
 *    +--------+--------+--------+--------+----------------------+--------+
 *   128: link 0: a 64-byte link header, then its array, zeros up to a
 *        multiple of 64; then link 1, ... up to `total`
 *
 *   link header:
 *    0        8        16       24       32       40       48    52  53  64
 *    +--------+--------+--------+--------+--------+--------+-----+---+---+
 *    |entries | error  |  bpe   |  bits  | bytes  |  size  |hash |n2 |rsv|
 *    +--------+--------+--------+--------+--------+--------+-----+---+---+
 *
 * var 5; hsh 2 (RedisBloom's MurmurHash, by the chain's options); flags 0;
 * error and bpe are binary64 bit patterns. The checksum is XXH3-64 of
 * header bytes [0, 120) then [128, total), as in version 2. */
#define BG__FILE_V3 3u /* RedisBloom chains */

enum {
    BG__V3_OFF_LINKS = 16,      /* u32, >= 1 */
    BG__V3_OFF_OPTIONS = 20,    /* u32 */
    BG__V3_OFF_GROWTH = 24,     /* u32 */
    BG__V3_OFF_RESERVED0 = 28,  /* u32, 0 */
    BG__V3_OFF_SIZE = 32,       /* u64, the chain's item count */
    BG__V3_OFF_MAX_BYTES = 40,  /* u64, >= the arrays' total */
    BG__V3_OFF_FIRST_LINK = 48, /* u64, 128 */
    BG__V3_OFF_TOTAL = 56,      /* u64, the file's length */
    BG__V3_OFF_RESERVED1 = 64,  /* 56 bytes, 0 */
};

enum {
    BG__V3_LINK_ENTRIES = 0,  /* u64 */
    BG__V3_LINK_ERROR = 8,    /* binary64 */
    BG__V3_LINK_BPE = 16,     /* binary64 */
    BG__V3_LINK_BITS = 24,    /* u64, 8 x bytes */
    BG__V3_LINK_BYTES = 32,   /* u64, the array's length */
    BG__V3_LINK_SIZE = 40,    /* u64 */
    BG__V3_LINK_HASHES = 48,  /* u32 */
    BG__V3_LINK_N2 = 52,      /* u8 */
    BG__V3_LINK_RESERVED = 53, /* 11 bytes, 0 */
    BG__V3_LINK_HEAD = 64,    /* the link header's length */
};

_Static_assert(BG__V3_OFF_RESERVED1 + 56 == BG__OFF_CHECKSUM, "v3: reserved bytes up to the checksum");
_Static_assert(BG__V3_LINK_RESERVED + 11 == BG__V3_LINK_HEAD, "v3: a link header is 64 bytes");

_Static_assert(BG__OFF_CHECKSUM + 8 == BG_FILE_HEADER_BYTES, "the checksum ends the header");
_Static_assert(BG_FILE_HEADER_BYTES % 64 == 0, "the payload after the header is 64-byte aligned");
_Static_assert(BG__V2_OFF_RESERVED1 + 24 == BG__OFF_CHECKSUM, "v2: reserved bytes up to the checksum");
_Static_assert(BG_FILE_HEADER_BYTES % BG__V2_ALIGN == 0, "v2: the first layer is aligned");

/* A version-1 header for `f` (item count read once, now), checksum field 0. */
void bg__file_header_build(const bg_filter *f, uint8_t out[BG_FILE_HEADER_BYTES]);

/* Bits of a payload: m cells of the variant's cell_bits (1, counting 4).
 * The variant must be one bg__ops_for knows, and m checked by
 * bg__filter_shape_check (so the product fits). */
uint64_t bg__file_payload_bits(bg_variant variant, uint64_t m);

/* The payload's last byte may only have bits below payload_bits set (the
 * bits past the last cell are never probed, but a popcount would count
 * them). */
bool bg__file_tail_ok(uint64_t payload_bits, uint8_t last_byte);

/* Only flags that file.h defines are set. */
bool bg__file_flags_ok(unsigned flags);

/* The checksum of a whole image of `len` bytes in memory: XXH3-64 of bytes
 * [0, 120) then [128, len) (both versions). */
uint64_t bg__file_checksum(const uint8_t *image, uint64_t len);

/* Copies payload bytes [from, from + n) of `f` into dst (`from` a multiple of
 * 8; n may end anywhere up to ceil(m / 8)). Each 64-bit word is read with one
 * atomic load, so concurrent adds are allowed (filter.h THREADS), and stored
 * in memory order, which is payload order (filter_internal.h, bg__bit). */
void bg__file_copy_payload(const bg_filter *f, uint64_t from, uint8_t *dst, size_t n);

/* Little-endian stores and loads, whatever the CPU. */
void bg__put_le(uint8_t *p, uint64_t v, unsigned bytes);
uint64_t bg__get_le(const uint8_t *p, unsigned bytes);
/* The same for an IEEE-754 double, as its 8 bytes' bit pattern. */
void bg__put_le_double(uint8_t *p, double d);
double bg__get_le_double(const uint8_t *p);
/* All bytes of p[0, n) zero (reserved fields and padding). */
bool bg__all_zero(const uint8_t *p, size_t n);

/* ---- reading: the plan ------------------------------------------------- */

/* Where an input's bytes come from: memory, or a file read with pread. */
typedef struct bg__file_src {
    const uint8_t *buf; /* the input in memory, or NULL: read fd */
    int fd;
    uint64_t len;       /* the input's length */
} bg__file_src;

/* Reads n bytes at `off` (off + n <= len). BG_OK, BG_ETRUNC (the file
 * shrank) or BG_EIO (errno set). */
int bg__file_src_read(const bg__file_src *src, uint64_t off, void *dst, size_t n);

/* One filter array in the input: the whole filter (version 1) or a layer. */
typedef struct bg__file_part {
    bg__filter_shape shape;
    uint64_t head_offset;    /* its version-1 header */
    uint64_t payload_offset;
    uint64_t payload_bytes;
    uint64_t pad_bytes;      /* zeros after the payload (version 2) */
} bg__file_part;

/* Everything a reader needs, validated, before it allocates. */
typedef struct bg__file_plan {
    bg_file_info info;               /* checksum_state: SKIPPED until verified */
    uint8_t head[BG_FILE_HEADER_BYTES];
    bg__scalable_params params;      /* versions 2 and 4 */
    uint32_t parts;                  /* 1 (version 1) or the layers */
    bg__file_part part[BG_MAX_LAYERS];
    uint8_t part_head[BG_MAX_LAYERS][BG_FILE_HEADER_BYTES]; /* version 2 */
} bg__file_plan;

/* Reads and validates an input's structure: the header, and for version 2
 * every layer's header, padding and placement (docs/FORMAT.md, "Rules for
 * readers"), and each payload's last byte. Does not read payloads or
 * compute the checksum. BG_OK, a TRUST status of file.h, or BG_EIO. */
int bg__file_plan_read(const bg__file_src *src, bg__file_plan *plan);

/* ---- writing -------------------------------------------------------------- */

/* A filter's image as it will be written, at one moment: the header (checksum
 * 0), then each part's own header (version 2 only), payload and padding
 * (version 2 only: zeros to BG__V2_ALIGN). Version 1 has one part, the
 * filter; version 2 (a scalable filter) one per layer, the layer count
 * loaded once and each layer's item count read once, into its header. Every
 * writer (encode, encode_range, save) walks this, so only
 * bg__file_image_snapshot tells the versions apart. */
typedef struct bg__file_image {
    uint8_t head[BG_FILE_HEADER_BYTES];
    uint32_t parts;
    bool part_heads; /* version 2: each part has a header of its own */
    const bg_filter *part[BG_MAX_LAYERS];
    uint8_t part_head[BG_MAX_LAYERS][BG_FILE_HEADER_BYTES];
    uint64_t payload_bytes[BG_MAX_LAYERS];
    uint64_t pad_bytes[BG_MAX_LAYERS];
    uint64_t total;
} bg__file_image;

void bg__file_image_snapshot(const bg_filter *f, bg__file_image *out);

/* Bytes of a layer image (header and payload) padded to BG__V2_ALIGN. */
uint64_t bg__file_v2_padded(uint64_t payload_bytes);

/* ---- version 3 (redisbloom_file.c) -------------------------------------- */

/* The image of a RedisBloom chain: its length, bytes [off, off + n) of it
 * (checksum field included, computed only when the range touches it), and
 * its checksum. */
uint64_t bg__rb_image_size(const bg_filter *f);
void bg__rb_image_copy(const bg_filter *f, uint64_t off, uint8_t *dst, size_t n);
uint64_t bg__rb_image_checksum(const bg_filter *f);

/* The header's fields alone (magic and version already read): info, the
 * total length, max bytes. BG_OK or BG_ECORRUPT. */
int bg__rb_header_fields(const uint8_t *head, bg_file_info *info, uint64_t *total,
                         uint64_t *max_bytes);

/* plan->head read; validates the rest of a version-3 input (every link's
 * header and padding; not the arrays) and fills plan->info. */
int bg__rb_plan_read(const bg__file_src *src, bg__file_plan *plan);

/* The chain of a planned version-3 input, read from src (verifying the
 * checksum while reading when `verify`) in the given concurrency mode; or
 * (bg__rb_wrap) read-only over the mapping [map, + map_len), which it owns
 * from then on (also on failure). */
int bg__rb_load(const bg__file_src *src, const bg__file_plan *plan, bool verify,
                bool single_writer, bg_filter **out);
int bg__rb_wrap(const bg__file_plan *plan, uint8_t *map, size_t map_len, bg_filter **out);

#endif
