/* SPDX-License-Identifier: BSD-3-Clause */
/* Filter files: portable, versioned, checksummed, never half-written.
 *
 * A filter file is a 128-byte header of fixed-width little-endian fields,
 * then the filter's bit array (the payload) exactly as <bloomgate/filter.h>
 * numbers it: bit i at byte i / 8, mask 0x80 >> (i % 8), Redis's SETBIT
 * order, so a standard filter's payload is byte for byte a Redis bitmap.
 * An XXH3-64 checksum covers the header and the payload. A scalable filter
 * is written as format version 2: a 128-byte header with its growth
 * parameters, then each layer as the version-1 image of that layer (padded
 * to a multiple of 64 bytes), one checksum over all of it; a RedisBloom chain
 * as format version 3, its links' fields and arrays likewise (redisbloom.h).
 * Every call below works on all three. The layout, field by field, is in
 * docs/FORMAT.md; tests/unit/test_file.c, test_scalable_files.c and
 * test_redisbloom.c pin it with golden bytes.
 *
 *   bg_filter_save(f, "users.bgf");                    crash-safe replace
 *   bg_filter_load(&f, "users.bgf", 0);                in memory, writable
 *   bg_filter_map(&f, "users.bgf", BG_FILE_NO_VERIFY); zero-copy, read-only
 *
 * TRUST
 * Nothing read is believed: every field is checked against the input's
 * length and against the others before anything is allocated, so a loader
 * never allocates more than the input really holds (a 100-byte file cannot
 * ask for gigabytes). Each way of being wrong has its own status:
 * BG_EBADMAGIC (not a filter file), BG_EVERSION (a format version this
 * library does not know: never guessed), BG_ETRUNC (shorter than its header
 * says), BG_ETRAILING (longer), BG_ECHECKSUM (damaged bytes), BG_EVARIANT
 * (unknown variant), BG_ETOOBIG (m above the cap), BG_ECORRUPT (fields out of
 * range or contradicting each other), BG_EIO (the operating system said no;
 * errno holds its reason; a path that is not a regular file gets EISDIR for
 * a directory and ESPIPE for a pipe, socket or device).
 *
 * CRASH SAFETY
 * bg_filter_save writes a new file next to the target (same directory, name
 * ".<target>.<random>.tmp"), fsyncs it, renames it over the target and
 * fsyncs the directory. Whenever the process or the machine stops, the
 * target is the complete old file or the complete new one. A crash can leave
 * the temporary file behind; it is never mistaken for the target and may be
 * deleted. A target that is a symbolic link is replaced by a regular file
 * (the link's destination is left as it was, and lends the new file its
 * owner and mode), as with `sed -i`: save to the link's destination to
 * update that instead. The saved file is a new file:
 * other hard links to the old one keep the old content.
 *
 * THREADS AND COST
 * Saving and encoding may run while other threads add to the filter
 * (bg_filter_save). Loads, decodes and maps make new filters, and the
 * inspect calls touch no filter, so any number of them may run at once.
 * bg_filter_save writes the whole image and fsyncs twice; bg_filter_load
 * and bg_filter_decode read it once and allocate the filter;
 * bg_filter_map reads the header (and, unless BG_FILE_NO_VERIFY, the
 * whole file for the checksum) and allocates only the handle. Returned
 * filters are the caller's: free them with bg_filter_free. */
#ifndef BLOOMGATE_FILE_H
#define BLOOMGATE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bloomgate/api.h>
#include <bloomgate/error.h>
#include <bloomgate/filter.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The newest format this library writes; it reads every version up to this
 * one. Version 1 holds a standard, blocked or counting filter and is still
 * what they are written as (their bytes never change); version 2 holds a
 * scalable filter: a container of version-1 layer images; version 3 a
 * RedisBloom chain (BG_VARIANT_REDISBLOOM): its fields and its links'
 * arrays; version 4 a scalable filter with a first share or blocked layers
 * above standard ones (filter.h SCALABLE), which version 2 cannot state
 * (other scalable filters are still written as version 2)
 * (docs/FORMAT.md). */
#define BG_FILE_VERSION 4u

/* Bytes in a header (every version); the payload starts at a multiple of 64
 * at or after it. */
#define BG_FILE_HEADER_BYTES 128u

/* Hash function ids (the header's hash field). */
#define BG_FILE_HASH_XXH3_128 1u /* XXH3-128, seeded; h1 = low 64 bits (hash.h) */
#define BG_FILE_HASH_MURMUR 2u    /* RedisBloom's MurmurHash64A or MurmurHash2 (redisbloom.h) */

/* Flags for bg_filter_load, bg_filter_decode, bg_filter_map and the
 * bg_file_inspect calls. */
enum {
    /* Skip the checksum: the fields are still validated, but damaged
     * payload bytes go unnoticed. Makes opening a mapped file O(1). */
    BG_FILE_NO_VERIFY = 1u << 0,
    /* The loaded filter is BG_SINGLE_WRITER (filter.h THREADS) instead of
     * BG_CONCURRENT_WRITERS. */
    BG_FILE_SINGLE_WRITER = 1u << 1,
};

/* Whether bg_file_inspect verified a file's checksum, and what it found. */
typedef enum bg_checksum_state {
    BG_CHECKSUM_OK = 0,       /* computed, and it matches */
    BG_CHECKSUM_MISMATCH = 1, /* computed, and it does not (the call returns BG_ECHECKSUM) */
    BG_CHECKSUM_SKIPPED = 2,  /* not computed (BG_FILE_NO_VERIFY) */
} bg_checksum_state;

/* What a file's header says, and whether its checksum holds. For a
 * scalable filter (version 2) the fields are the totals that
 * bg_filter_stats_get gives for the filter the file holds: bits, capacity,
 * items and payload_bytes are sums over the layers, hashes is the newest
 * layer's k, and payload_offset is where the first layer's payload starts
 * (each layer's own header and padding lie between the payloads). A
 * RedisBloom chain (version 3) is reported the same way, its links as
 * layers (seed 0, items the chain's size); its fields link by link are
 * those of <bloomgate/redisbloom.h> on the loaded filter. */
typedef struct bg_file_info {
    uint32_t version;          /* format version */
    uint32_t header_bytes;     /* header length */
    bg_variant variant;
    uint32_t hash_id;          /* BG_FILE_HASH_* */
    uint64_t seed;
    uint64_t bits;             /* m */
    uint32_t hashes;           /* k */
    uint64_t capacity;         /* n the filter was sized for, 0 if sized by m, k */
    uint64_t items;            /* the filter's item count when saved */
    uint64_t payload_offset;   /* bytes from the start of the file */
    uint64_t payload_bytes;    /* ceil(m / 8) (counting: ceil(4 m / 8)) */
    uint64_t file_bytes;       /* the whole input */
    uint64_t checksum;         /* stored XXH3-64 */
    bg_checksum_state checksum_state;
    uint32_t layers;           /* 1, or a scalable filter's layers */
    /* A scalable filter's (or RedisBloom chain's) growth parameters, as
     * bg_filter_scaling_get gives them for the filter the file holds; all
     * zero for version 1. */
    bg_filter_scaling scaling;
} bg_file_info;

/* Saves `f` to `path`, replacing any file there crash-safely (CRASH SAFETY
 * above). A new file gets mode 0666 minus the umask; a replaced one keeps its
 * mode, and its owner and group where the caller may set them (root).
 * A target that exists and is neither a regular file nor a symbolic link is
 * refused: BG_EIO with errno EISDIR (a directory) or ESPIPE (a pipe, socket
 * or device), nothing written. Safe while other threads add to `f` (filter.h THREADS): the file is
 * some state between the one before the call and the one after (a scalable
 * filter: with the layers it had when the call began), and its
 * checksum matches the bytes written. Returns BG_OK, BG_EINVAL or BG_EIO
 * (errno set; the target is untouched and the temporary file removed),
 * except for one BG_EIO: the directory's fsync after the rename failed, so
 * the target is already the new file but a power cut may bring back the old
 * one. (A directory the caller may write but not read cannot be fsynced at
 * all; that is not an error.)
 * Allocates a 1 MiB buffer for the duration of the call (BG_ENOMEM). */
BG_API int bg_filter_save(const bg_filter *f, const char *path);

/* The size of `f` as a file, in bytes, into *out. BG_OK or BG_EINVAL. */
BG_API int bg_filter_encoded_size(const bg_filter *f, uint64_t *out);

/* Writes `f` as a file image into buf[0, len); *written (may be NULL) gets
 * its size. Returns BG_OK, BG_EINVAL (NULL argument, or len less than
 * bg_filter_encoded_size). A scalable filter is written with the layers it
 * has when the call starts; one that other threads made grow since
 * bg_filter_encoded_size may need more room (BG_EINVAL: ask again). Nothing
 * is allocated. */
BG_API int bg_filter_encode(const bg_filter *f, void *buf, size_t len, size_t *written);

/* Writes bytes [offset, offset + len) of the image bg_filter_encode would
 * write for `f` now into buf[0, len), so that a large filter can be sent or
 * stored in pieces without a second copy of it in memory. Only a range that
 * touches the checksum field, bytes [120, 128), makes a pass over the whole
 * filter (the checksum covers it all); any other costs its own length plus
 * a little per layer. Each call reads the filter anew: ranges are pieces of
 * one image only while the filter does not change between the calls (a
 * decoder then refuses their concatenation: BG_ECHECKSUM, BG_ECORRUPT, or
 * a length status if a layer was added). Returns BG_OK, or BG_EINVAL (`f` NULL, buf
 * NULL with len > 0, or the range reaching past bg_filter_encoded_size).
 * Nothing is allocated. */
BG_API int bg_filter_encode_range(const bg_filter *f, uint64_t offset, void *buf, size_t len);

/* The total length of the image whose first bytes are head[0, len), into
 * *out, from its 128-byte header alone: what a receiver needs to know, and
 * to refuse, before it allocates room for the rest. Only the first 128
 * bytes are read (more may be passed). Every field that can be judged
 * without the rest is: for version 1 as bg_filter_decode does; for version
 * 2 the container's fields as bg_filter_decode does, and also that the
 * total is a multiple of 64 that can hold the header's layer count and no
 * more than its max bytes allow. Returns BG_OK, BG_EINVAL (out NULL, head
 * NULL with len > 0), or a TRUST status: BG_EBADMAGIC, BG_EVERSION, BG_ETRUNC
 * (len < 128 and the bytes there start like an image), BG_ECORRUPT,
 * BG_EVARIANT, BG_ETOOBIG. An error means no input starting with these 128
 * bytes decodes; BG_OK does not mean that one does (the layers, padding and
 * checksum are judged by bg_filter_decode). Nothing is allocated. */
BG_API int bg_file_image_size(const void *head, size_t len, uint64_t *out);

/* Reads a file image from buf[0, len) into a new writable filter *out (NULL
 * on failure); `len` must be exactly the image's size (else BG_ETRUNC or
 * BG_ETRAILING). Returns BG_OK, a status listed under TRUST, BG_EINVAL or
 * BG_ENOMEM. Allocates only after validation, and at most the payload's
 * size; free with bg_filter_free. */
BG_API int bg_filter_decode(bg_filter **out, const void *buf, size_t len, unsigned flags);

/* Loads the file at `path` into a new writable filter *out, as
 * bg_filter_decode. Reads the file once, verifying the checksum as it goes
 * unless BG_FILE_NO_VERIFY. Free with bg_filter_free. */
BG_API int bg_filter_load(bg_filter **out, const char *path, unsigned flags);

/* Opens the file at `path` read-only by mmap: zero-copy, so the filter's
 * bits are the file's pages, loaded by the kernel as probes touch them and
 * shared by every process that maps the file. Adds, clear, and union or
 * intersect into it return BG_EREADONLY; queries, batches, stats and union
 * from it work as usual. Validates the header; with BG_FILE_NO_VERIFY it
 * reads nothing else (a 1 GB file opens in well under a millisecond),
 * otherwise it reads the whole file once to verify the checksum.
 * bg_filter_free unmaps. Replacing the file with bg_filter_save is safe
 * while it is mapped (the mapping keeps the old file); writing into the
 * file in place is not. A scalable filter is mapped as one read-only
 * mapping that all its layers use. Returns as bg_filter_load. */
BG_API int bg_filter_map(bg_filter **out, const char *path, unsigned flags);

/* Whether `f` is read-only (from bg_filter_map); false for NULL. */
BG_API bool bg_filter_read_only(const bg_filter *f);

/* Reads and validates a file's header into *out without building a filter,
 * and verifies the checksum unless BG_FILE_NO_VERIFY. Returns BG_OK, or the
 * first problem found (a TRUST status). On BG_ECHECKSUM *out is complete
 * (checksum_state says so too); on other errors its contents are
 * unspecified. Nothing is allocated. */
BG_API int bg_file_inspect(const char *path, unsigned flags, bg_file_info *out);
BG_API int bg_file_inspect_buffer(const void *buf, size_t len, unsigned flags, bg_file_info *out);

#ifdef __cplusplus
}
#endif

#endif
