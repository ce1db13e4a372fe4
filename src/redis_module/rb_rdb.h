/* SPDX-License-Identifier: BSD-3-Clause */
/* RedisBloom's `MBbloom--` RDB value (docs/REDISBLOOM_FORMAT.md section 6),
 * read and written field by field through a small reader and writer
 * interface. Free of Redis, as chunks.c is: the module plugs in
 * RedisModule_LoadUnsigned / LoadDouble / LoadStringBuffer (rb_type.c), and
 * tests/fuzz/fuzz_rb_rdb.c a parser of DUMP payload bytes.
 *
 * HOW IT WORKS
 * The value is a sequence of primitives (unsigned, double, string) whose
 * presence depends on the encoding version, encver 0 to 4:
 *
 *   chain   size U | nfilters U | options U (encver >= 2, else 0) |
 *           growth U (encver 4, else 2)
 *   link    entries U | error D | hashes U | bpe D |
 *   (each)  bits U (encver >= 1, else trunc(entries x bpe)) |
 *           n2 U (encver >= 1, else 0) | array S | size U
 *
 * bgr_rb_rdb_load reads them in that order, narrows hashes, options and
 * growth to 32 bits and n2 to 8 bits (value mod 2^width, as RedisBloom
 * keeps them), and hands each link to bg_rb_push_link, which makes
 * RedisBloom's load checks. Any failure is a status: the caller returns
 * NULL to Redis, which refuses the value (RESTORE: "ERR Bad data format").
 * bgr_rb_rdb_save writes encver 4, RedisBloom's field order, which is what
 * every RedisBloom since 2.2 writes, so a DUMP of an unchanged key is
 * RedisBloom's DUMP byte for byte.
 *
 * LIMITS
 * A link whose stored bit count already passes max_bytes is refused before
 * its array is read (the reader would allocate it first). A chain's
 * nfilters is believed only as far as links actually follow it: room for
 * at most 64 links is made up front, and a short value ends in a reader
 * error. */
#ifndef BG_REDIS_RB_RDB_H
#define BG_REDIS_RB_RDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bloomgate/bloomgate.h>
#include <bloomgate/redisbloom.h>

/* The registered name of RedisBloom's type and the encoding version it
 * writes (and the newest one it reads). */
#define BGR_RB_TYPE_NAME "MBbloom--"
#define BGR_RB_ENCVER 4

/* Where the fields come from. Each call returns 0, or -1 when the source
 * failed (short input, an I/O error): the load then stops. load_string
 * returns a buffer the caller frees with free_string, or NULL on failure.
 * With `adopt`, load_string's buffers come from the library's allocator
 * (<bloomgate/alloc.h>): a link's array is then handed to its chain
 * (bg_rb_push_link_owned) instead of copied, so that a link is in memory
 * once while it loads. */
typedef struct bgr_rdb_reader {
    void *io;
    int (*load_unsigned)(void *io, uint64_t *out);
    int (*load_double)(void *io, double *out);
    void *(*load_string)(void *io, size_t *len);
    void (*free_string)(void *io, void *buf);
    bool adopt;
} bgr_rdb_reader;

/* Where the fields go (RedisModule_Save* in the module). */
typedef struct bgr_rdb_writer {
    void *io;
    void (*save_unsigned)(void *io, uint64_t v);
    void (*save_double)(void *io, double v);
    void (*save_string)(void *io, const void *buf, size_t len);
} bgr_rdb_writer;

/* Statuses of a load beside the library's (BG_ECORRUPT from the link
 * checks, BG_ETOOBIG beyond max_bytes, BG_ENOMEM). */
enum {
    BGR_RDB_EREAD = -110,   /* the reader failed: short value or I/O error */
    BGR_RDB_EENCVER = -111, /* an encoding version above BGR_RB_ENCVER (or negative) */
};

/* Reads one value of encoding version `encver` into a new chain *out (NULL
 * on failure), its links' arrays capped at max_bytes together. BG_OK, or a
 * status (above) with *why (may be NULL) set to a static phrase for the
 * log. Allocates; free with bg_filter_free. Never aborts on any input. */
int bgr_rb_rdb_load(const bgr_rdb_reader *r, int encver, uint64_t max_bytes, bg_filter **out,
                    const char **why);

/* Writes f (a BG_VARIANT_REDISBLOOM filter) as an encver-4 value. BG_OK or
 * BG_EINVAL (not that variant). Allocates nothing. */
int bgr_rb_rdb_save(const bgr_rdb_writer *w, const bg_filter *f);

/* RedisBloom's own accounting of a chain (BF.INFO Size): 32 bytes for the
 * chain and 64 per link, plus the links' arrays. 0 for another variant. */
uint64_t bgr_rb_info_size(const bg_filter *f);

/* Whether a BF.LOADCHUNK header for a missing key is bloomgate's own (a
 * file header: exactly BG_FILE_HEADER_BYTES, starting with the file magic)
 * rather than RedisBloom's. A RedisBloom header is 20 + 53 n bytes, never
 * 128, so no RedisBloom header is ever taken for bloomgate's; everything
 * else goes to RedisBloom's header decoder, which refuses what it is not. */
bool bgr_header_is_bloomgate(const void *data, size_t len);

#endif
