/* SPDX-License-Identifier: BSD-3-Clause */
/* The chunk protocol of BF.SCANDUMP / BF.LOADCHUNK, which AOF rewrite and
 * the RDB payload use too. Free of Redis, so that a fuzzer can drive it
 * (tests/fuzz/fuzz_chunks.c).
 *
 * HOW IT WORKS
 * What travels is the library's file image of the filter (<bloomgate/file.h>,
 * docs/FORMAT.md; version 2, the module's filters being scalable), cut into
 * chunks the way RedisBloom's clients expect to see them:
 *
 *   BF.SCANDUMP k 0        -> [1, image bytes [0, 128)]         the header
 *   BF.SCANDUMP k 1        -> [129 + c, bytes [128, 128 + c)]   c <= chunk_max
 *   BF.SCANDUMP k i        -> [i + c, bytes [i - 1, i - 1 + c)]
 *   ... past the end       -> [0, ""]
 *
 * So a chunk's iterator is the offset just past its end, plus one, as in
 * RedisBloom (whose iterator is 1 + a byte offset), and iterator 1 means
 * "after the header". BF.LOADCHUNK k <iter> <chunk> replays the pairs: the
 * header starts an assembly (bgr_assembly_begin), which validates it with
 * bg_file_image_size and refuses a total above the caller's cap before it
 * allocates anything (and a filter whose own growth cap is above the
 * server's); each following chunk must be the next one in order
 * (bgr_assembly_feed); the chunk that completes the image lets
 * bgr_assembly_finish run bg_filter_decode over it, which validates every
 * field and the checksum. A client's bytes are therefore never used before
 * the library's decoder (the one tests/fuzz/fuzz_file.c fuzzes) accepted
 * all of them.
 *
 * LIMITATIONS
 * Chunks are pieces of one image, not bit ranges of a live filter: they go
 * to a key being assembled only, in order, each once. A filter that changed
 * between two SCANDUMP calls gives pieces of two different images, which
 * the decoder refuses when the last one arrives (the header's checksum is
 * of the old bits). */
#ifndef BG_REDIS_CHUNKS_H
#define BG_REDIS_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

#include <bloomgate/bloomgate.h>

/* Largest data chunk SCANDUMP and AOF rewrite send, and the RDB piece size:
 * RedisBloom's 16 MiB, well under Redis's 512 MiB proto-max-bulk-len. */
#define BGR_CHUNK_MAX (UINT64_C(16) << 20)

/* An image's bytes beyond its filter's arrays at most: the container
 * header, and per layer (BG_MAX_LAYERS) a header and under 64 bytes of
 * padding. A cap on arrays of max_bytes is a cap on images of
 * bgr_image_cap(max_bytes). */
#define BGR_IMAGE_OVERHEAD \
    ((uint64_t)BG_FILE_HEADER_BYTES + (uint64_t)BG_MAX_LAYERS * (BG_FILE_HEADER_BYTES + 64u))
uint64_t bgr_image_cap(uint64_t max_bytes);

/* Statuses of this file: 0 is success, the library's BG_* statuses (all
 * negative) pass through, and these name what only the protocol knows. */
enum {
    BGR_EITER = -100,     /* iterator < 2, or smaller than the chunk: no such chunk */
    BGR_EOFFSET = -101,   /* the chunk starts at or past the image's end */
    BGR_ECHUNKBIG = -102, /* the chunk runs past the image's end */
    BGR_EORDER = -103,    /* not the next chunk (a gap, a repeat, or empty) */
    BGR_ECAP = -104,      /* the header's total, or growth cap, is above the caller's */
};

/* The name of a status of this file or of the library ("BGR_EORDER",
 * "BG_ECHECKSUM"), for logs. */
const char *bgr_status_name(int rc);

/* ---- SCANDUMP --------------------------------------------------------- */

/* One step of a SCANDUMP: the image range to send and the iterator to send
 * with it. len 0 (and next 0) means the end: reply [0, ""]. */
typedef struct bgr_span {
    uint64_t offset;
    uint64_t len;
    long long next;
} bgr_span;

/* The step for iterator `iter` over an image of `total` bytes (128 <=
 * total < 2^62), chunks of at most chunk_max (>= 1) bytes. Any iterator is answered:
 * negative ones and those past the end give the end. */
void bgr_scan_step(uint64_t total, long long iter, uint64_t chunk_max, bgr_span *out);

/* ---- LOADCHUNK ---------------------------------------------------------- */

typedef struct bgr_assembly bgr_assembly;

/* Where assemblies get their memory (Redis's allocator in the module,
 * malloc by default and in the fuzzer). Set it before the first begin. */
void bgr_assembly_set_allocator(void *(*alloc_fn)(size_t), void (*free_fn)(void *));

/* Starts an assembly from a header chunk head[0, len) into *out (NULL on
 * failure): len must be exactly 128 (BG_ETRUNC / BG_ETRAILING otherwise),
 * bg_file_image_size must accept it (its status otherwise), the image must
 * be version 2, a scalable filter (BG_EVARIANT), its total at most
 * max_total, and the growth cap its header records (max bytes, docs/FORMAT.md)
 * at most max_growth (BGR_ECAP: a filter that could later grow past the
 * server's MAX_BYTES is refused, not trusted). Only then is the total
 * allocated (BG_ENOMEM), once. Free with bgr_assembly_free. */
int bgr_assembly_begin(bgr_assembly **out, const void *head, size_t len, uint64_t max_total,
                       uint64_t max_growth);

/* Adds the chunk data[0, len) sent with iterator `iter`, which says that it
 * ends at image offset iter - 1. It must start exactly where the bytes so
 * far end. Returns 0 (more to come), 1 (accepted, and the image is now
 * complete: call bgr_assembly_finish), or, changing nothing, the first of:
 * BG_EINVAL (a NULL argument, or the image is already complete), BGR_EITER
 * (iter < 2 or iter - 1 < len), BGR_EOFFSET (it starts at or past the
 * end), BGR_ECHUNKBIG (it ends past the end), BGR_EORDER (empty, or not
 * where the bytes so far end). */
int bgr_assembly_feed(bgr_assembly *a, long long iter, const void *data, size_t len);

/* The complete image decoded into a new filter *out (NULL on failure;
 * BG_FILE_SINGLE_WRITER, free with bg_filter_free): BG_OK, a TRUST status of
 * bg_filter_decode, BG_ENOMEM, or BG_EINVAL (not complete). The assembly is
 * left as it was either way. */
int bgr_assembly_finish(const bgr_assembly *a, bg_filter **out);

/* The image's length, the bytes received so far (>= 128), and those bytes
 * (borrowed: valid until the next feed or free). */
uint64_t bgr_assembly_total(const bgr_assembly *a);
uint64_t bgr_assembly_have(const bgr_assembly *a);
const uint8_t *bgr_assembly_bytes(const bgr_assembly *a);

/* A copy of `a` (NULL when out of memory). */
bgr_assembly *bgr_assembly_clone(const bgr_assembly *a);

/* Accepts NULL. */
void bgr_assembly_free(bgr_assembly *a);

#endif
