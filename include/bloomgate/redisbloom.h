/* SPDX-License-Identifier: BSD-3-Clause */
/* RedisBloom's Bloom filter, bit for bit (BG_VARIANT_REDISBLOOM).
 *
 * A filter of this variant is the "chain of links" that RedisBloom 2.6
 * keeps in its `MBbloom--` keys: the same fields, the same hashing
 * (MurmurHash64A, or 32-bit MurmurHash2 for chains of old options), the
 * same sizing and growth, the same least-significant-first bit order. Two
 * filters with the same fields and bytes answer every query alike, and
 * replaying the same adds in the same order gives the same bytes, counters
 * and links as RedisBloom does, false positives included. All the calls of
 * <bloomgate/filter.h> work on it, except bg_filter_union,
 * bg_filter_intersect and bg_filter_remove (BG_EVARIANT).
 *
 *   bg_filter_options o = {.variant = BG_VARIANT_REDISBLOOM,
 *                          .capacity = 1000, .error_rate = 0.01};
 *   bg_filter_new(&f, &o);         what BF.RESERVE f 0.01 1000 makes
 *   bg_filter_test_and_add(f, "item1", 5);     BF.ADD's reply (1 or 0)
 *
 * MAKING ONE
 * bg_filter_new with variant BG_VARIANT_REDISBLOOM builds what RedisBloom's
 * BF.RESERVE builds: options BG_RB_NOROUND | BG_RB_FORCE64 (| BG_RB_NO_SCALING
 * with opts.nonscaling), growth opts.expansion (0: 2; 1..BG_MAX_EXPANSION;
 * none with nonscaling: BG_EINVAL), and link 0 of capacity opts.capacity
 * (>= 1) at opts.error_rate x 0.5 (x 1 when non-scaling). opts.max_bytes caps
 * the links' arrays together (0: BG_DEFAULT_MAX_BYTES); opts.concurrency is
 * as for any filter (THREADS). opts.bits, hashes, seed, layer_variant,
 * tightening and max_layers must be 0 (BG_EINVAL).
 * Data RedisBloom stored (RDB, DUMP, SCANDUMP) is rebuilt with bg_rb_new and
 * bg_rb_push_link, or bg_rb_header_decode and bg_rb_load_chunk: LOADING.
 *
 * HASHING
 * A key is hashed once into a bg_hash whose h1 and h2 are RedisBloom's a
 * and b: MurmurHash64A(key, 0xc6a4a7935bd1e995) and MurmurHash64A(key, a)
 * when the chain's options have BG_RB_FORCE64, else 32-bit MurmurHash2
 * with seed 0x9747b28c and then a (values below 2^32). bg_filter_hash gives
 * it; the *_hash calls of <bloomgate/filter.h> take it. Each link tests
 * and sets positions (a + j b) mod 2^64 reduced mod 2^n2 (n2 > 0) or mod
 * bits, j < hashes; position p is mask 1 << (p % 8) of byte p / 8 of the
 * link's array.
 *
 * ADDING
 * An add tests every link; a key some link has answers 0 and changes
 * nothing. Otherwise, when the last link's size has reached its entries,
 * a link of capacity entries x growth and error x 0.5 is appended first,
 * sized by the chain's options (power-of-two links for options without
 * BG_RB_NOROUND, as old RedisBloom versions wrote them); then the key's
 * positions are set in the last link, whose size and the chain's grow by
 * one, and the add answers 1. A non-scaling chain that is full answers
 * BG_EFULL (RedisBloom: "ERR non scaling filter is full"); a link that
 * cannot be made answers BG_ETOOBIG (beyond max_bytes; sizes beyond 64
 * bits; with BG_RB_ENTS_IS_BITS, an exponent beyond 63) or BG_ENOMEM
 * (RedisBloom: "ERR problem inserting into filter"), and nothing is
 * added. Batch calls stop at the refused key, the keys before it
 * added. bg_filter_clear zeroes every link's bits and sizes and the chain's
 * size; the links stay.
 *
 * WHAT THE ACCESSORS SAY
 * bg_filter_capacity: the sum of the links' entries (BF.INFO Capacity);
 * bg_filter_items: the chain's size (BF.CARD); bg_filter_bits and
 * bg_filter_bytes: sums over the links; bg_filter_hashes: the last link's;
 * bg_filter_seed: 0. bg_filter_stats_get: those, with error_rate the sum of
 * the links' errors; bg_filter_layer_stats: link by link.
 * bg_filter_scaling_get: capacity and error of link 0, expansion = growth
 * (0 when non-scaling), tightening 0.5, layers = links. bg_filter_memory:
 * the chain's block, its link table and every link (its fields and array).
 *
 * THREADS
 * As <bloomgate/filter.h> THREADS says for every filter: with
 * BG_CONCURRENT_WRITERS (bg_filter_new's default, and a loaded file's
 * unless BG_FILE_SINGLE_WRITER) adds may run in any number of threads at
 * once; with BG_SINGLE_WRITER one thread adds at a time. Either way any
 * number of threads may query (contains, the batch calls, stats, clone, the
 * getters of this header) meanwhile, and never wait. Concurrent adds of new
 * keys take the chain's mutex, so they behave as the same adds one after
 * the other (two threads adding one new key: exactly one gets 1); an add of
 * a key some link has answers 0 without it. Chains from bg_rb_new and
 * bg_rb_header_decode are single-writer (a Redis module's loaders: Redis
 * runs commands one at a time); ask bg_filter_new for BG_SINGLE_WRITER too
 * where one thread adds (no mutex, and 40 bytes less). bg_filter_clear,
 * bg_rb_push_link, bg_rb_load_chunk and writes through bg_rb_link_array_mut
 * must not run alongside any other call on the filter; the arrays that
 * bg_rb_link_array and bg_rb_dump_chunk lend are read as plain bytes, so
 * not while adds run either.
 *
 * LOADING
 * Nothing stored is believed: every field is checked before anything is
 * allocated, and a failed check is a status (never an abort); the filter is
 * then unchanged. Checks follow what RedisBloom 2.6.28 accepts, so data it
 * loads loads here and data it refuses is refused here (bg_rb_push_link:
 * its RDB load checks; bg_rb_header_decode and bg_rb_load_chunk: its
 * BF.LOADCHUNK rules). Statuses a Redis module maps to RedisBloom's replies:
 *   BG_ECORRUPT  "ERR Bad data format" (RDB) / "ERR received bad data"
 *                (LOADCHUNK: header or iterator);
 *   BG_EOFFSET   "ERR invalid offset - no link found";
 *   BG_ECHUNK    "ERR invalid chunk - Too big for current filter";
 *   BG_ETOOBIG   beyond the caller's max_bytes (no RedisBloom counterpart).
 *
 * FILES
 * <bloomgate/file.h> saves, loads and maps such a chain (format version 3,
 * docs/FORMAT.md): every field and array, old options included. A mapped
 * chain is read-only (its arrays are the file's pages).
 *
 * MEMORY
 * Every link is one allocation (its fields, then its array), or two when
 * its array takes 2 MiB or more (placed for huge pages) or was adopted
 * (bg_rb_push_link_owned); the chain is one more, holding the table of its
 * links' pointers (inline for one link). bg_filter_new, bg_rb_new,
 * bg_rb_header_decode, bg_filter_clone and an add that appends a link
 * allocate; bg_rb_push_link and bg_rb_push_link_owned allocate the link
 * (and a larger table when it grows). Everything else here allocates
 * nothing.
 * Pointers from bg_rb_link_array, bg_rb_link_array_mut and
 * bg_rb_dump_chunk are borrowed: a link's array never moves, so they stay
 * valid until bg_filter_free (their bytes change with adds, clears and
 * chunks). */
#ifndef BLOOMGATE_REDISBLOOM_H
#define BLOOMGATE_REDISBLOOM_H

#include <stddef.h>
#include <stdint.h>

#include <bloomgate/api.h>
#include <bloomgate/error.h>
#include <bloomgate/filter.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The chain's option bits (one value governs every link). */
#define BG_RB_NOROUND      1u /* exact bit count: no power-of-two rounding */
#define BG_RB_ENTS_IS_BITS 2u /* a new link's capacity is a bit-count exponent */
#define BG_RB_FORCE64      4u /* MurmurHash64A; without it 32-bit MurmurHash2 */
#define BG_RB_NO_SCALING   8u /* never appends a link: full means BG_EFULL */
/* Every option bit RedisBloom knows; SCANDUMP headers with others are
 * refused (RDB data keeps them, unused). */
#define BG_RB_OPTIONS_KNOWN 0xFu
/* What BF.RESERVE, BF.INSERT and auto-creation make (| BG_RB_NO_SCALING). */
#define BG_RB_OPTIONS_DEFAULT (BG_RB_NOROUND | BG_RB_FORCE64)

/* One link: a plain Bloom filter of `bytes` bytes. The widths are
 * RedisBloom's: stored values wider than hashes (32 bits) or n2 (8 bits)
 * are cut to them (value mod 2^width) before the checks, as RedisBloom
 * does. */
typedef struct bg_rb_link {
    uint64_t entries; /* capacity (may exceed the one asked for: power-of-two links) */
    double error;     /* target false-positive rate, in (0, 1) */
    double bpe;       /* bits per entry: -ln(error) / ln(2)^2 */
    uint32_t hashes;  /* positions per key: ceil(0.693147180559945 bpe) */
    uint64_t bits;    /* 8 x bytes */
    uint64_t bytes;   /* the array's length, a multiple of 8 when RedisBloom made it */
    uint8_t n2;       /* 0: positions mod bits; else mod 2^n2 (bits >= 2^n2) */
    uint64_t size;    /* keys counted into this link */
} bg_rb_link;

/* The chain: what precedes the links in RedisBloom's encodings. */
typedef struct bg_rb_chain {
    uint64_t size;     /* keys counted (BF.CARD); the links' sizes add up to it */
    uint32_t nfilters; /* links */
    uint32_t options;  /* BG_RB_* bits */
    uint32_t growth;   /* capacity factor of the next link (BF.INFO Expansion rate) */
} bg_rb_chain;

/* Sizes one link as RedisBloom creates it (REDISBLOOM_FORMAT.md section 2)
 * from capacity `entries` (>= 1; with BG_RB_ENTS_IS_BITS a bit-count
 * exponent <= 64) and `error` in (0, 1), under chain `options`: every field
 * of *out, size 0. BG_OK, BG_EINVAL (out NULL, error out of range, entries
 * 0 without BG_RB_ENTS_IS_BITS) or BG_ETOOBIG (ENTS_IS_BITS beyond 64, or
 * a bit count beyond 2^64: RedisBloom cannot make such a link either).
 * Allocates nothing. */
BG_API int bg_rb_link_plan(bg_rb_link *out, uint64_t entries, double error, uint32_t options);

/* A chain with no links yet, for a loader that reads RedisBloom's fields
 * one link at a time (an RDB value), into *out (NULL on failure): its size,
 * options and growth are chain's, kept as given (RDB data is not checked
 * for them; a chain's size is never recomputed from its links), and
 * chain->nfilters is how many links the caller means to push (room is made
 * for up to 64 now; more grow the table). max_bytes caps all links' arrays
 * together (0: BG_DEFAULT_MAX_BYTES). A chain needs at least one link
 * before any other call of <bloomgate/filter.h> than bg_filter_free:
 * nfilters 0 is BG_ECORRUPT here, and the others answer BG_EINVAL while the
 * chain is empty. The chain is single-writer (THREADS). BG_OK, BG_EINVAL
 * (NULL), BG_ECORRUPT or BG_ENOMEM. Allocates; free with bg_filter_free. */
BG_API int bg_rb_new(bg_filter **out, const bg_rb_chain *chain, uint64_t max_bytes);

/* Appends a link with the fields of *fields (bytes ignored: the array's
 * length is `len`) and the `len` bytes at `array`, or a zeroed array of
 * fields->bytes bytes when `array` is NULL (as BF.LOADCHUNK's header makes
 * it). The checks of RedisBloom's RDB load come first, in its order:
 * len >= ceil(bits / 8) (with an array), then 0 < error < 1, n2 <= 63,
 * bits >= 2^n2 when n2 != 0, bits != 0, bits = 8 x length, hashes =
 * ceil(0.693147180559945 x bpe) in double: any failure is BG_ECORRUPT.
 * Then BG_ETOOBIG if the arrays would pass max_bytes, and only then the
 * allocation (BG_ENOMEM). entries and size are taken as they are. BG_OK,
 * BG_EINVAL (NULL f or fields, not this variant, NULL array with len > 0),
 * BG_EREADONLY (a chain of bg_filter_map), BG_ECORRUPT, BG_ETOOBIG or
 * BG_ENOMEM; on failure nothing changes.
 * Copies the array. */
BG_API int bg_rb_push_link(bg_filter *f, const bg_rb_link *fields, const void *array,
                           size_t len);

/* bg_rb_push_link without the copy: the link's array is `array` itself
 * (len bytes, not NULL), which must come from the library's allocator (the
 * malloc_fn of the hooks installed with bg_set_allocator, else the C
 * library's malloc). The chain owns it from the call on, also when the call
 * fails (it is freed then, with nothing else changed): `array` is dead to
 * the caller after the call. So a loader that reads a link into a buffer of
 * its own needs the link's bytes once, not twice. An array of 2 MiB or more
 * is asked into huge pages, where the system can (memory already written in
 * small pages cannot be placed as a new array is). The same checks and
 * statuses as bg_rb_push_link; BG_EINVAL for a NULL array. */
BG_API int bg_rb_push_link_owned(bg_filter *f, const bg_rb_link *fields, void *array, size_t len);

/* The chain's fields (nfilters: the links it has now). BG_OK or BG_EINVAL
 * (NULL, not this variant). */
BG_API int bg_rb_chain_get(const bg_filter *f, bg_rb_chain *out);

/* Link i's fields, 0 being the oldest. BG_OK or BG_EINVAL (NULL, not this
 * variant, no link i). */
BG_API int bg_rb_link_get(const bg_filter *f, uint32_t i, bg_rb_link *out);

/* Link i's array (*data) and its length (*len, = the link's bytes), for a
 * saver: borrowed (MEMORY). BG_OK or BG_EINVAL. */
BG_API int bg_rb_link_array(const bg_filter *f, uint32_t i, const uint8_t **data, size_t *len);

/* The same, writable, for a loader that fills a link in place: counters
 * are not changed by writing there. BG_EREADONLY for a chain of
 * bg_filter_map. */
BG_API int bg_rb_link_array_mut(bg_filter *f, uint32_t i, uint8_t **data, size_t *len);

/* ---- BF.SCANDUMP and BF.LOADCHUNK ----------------------------------------
 * The header is SCANDUMP's first reply (iterator 0 asks for it, and 1 is
 * the next): 20 bytes of chain fields, then 53 per link, packed,
 * little-endian:
 *   chain:  size u64 | nfilters u32 | options u32 | growth u32
 *   link:   bytes u64 | bits u64 | size u64 | error f64 | bpe f64 |
 *           hashes u32 | entries u64 | n2 u8
 * After it, the links' arrays in order form one stream of bytes, and data
 * iterator it >= 1 names stream position it - 1. Each chunk runs from its
 * position to the end of the link holding it, at most BG_RB_CHUNK_MAX
 * bytes, and the next iterator is it + its length; past the end the
 * answer is the empty chunk with next iterator 0. BF.LOADCHUNK takes the
 * pairs (SCANDUMP's reply iterator, data): the header with iterator 1 on a
 * missing key, then each chunk at it - length, in any order. */
#define BG_RB_HEADER_CHAIN 20u
#define BG_RB_HEADER_LINK  53u
#define BG_RB_CHUNK_MAX    (UINT64_C(16) << 20)

/* The header's length: 20 + 53 nfilters (0 for NULL or another variant). */
BG_API size_t bg_rb_header_size(const bg_filter *f);

/* Writes the header into buf (cap bytes); *len (may be NULL) gets its
 * length. BG_OK, BG_EINVAL (NULL f or buf, not this variant) or BG_ETRUNC
 * (cap < bg_rb_header_size(f); nothing written). Allocates nothing. */
BG_API int bg_rb_header_encode(const bg_filter *f, void *buf, size_t cap, size_t *len);

/* BF.LOADCHUNK of a header on a missing key: checks the `len` bytes at buf
 * (untrusted) and makes the chain they describe, every array zeroed, into
 * *out (NULL on failure). The checks, all before any allocation: len >= 20,
 * nfilters > 0, len = 20 + 53 nfilters, every link passes bg_rb_push_link's
 * checks (the array's length being its bytes field, with no length check of
 * its own), no option bit outside BG_RB_OPTIONS_KNOWN, and the chain's size
 * = the sum of the links' sizes (mod 2^64): else BG_ECORRUPT. Then
 * BG_ETOOBIG if the arrays together pass max_bytes (0:
 * BG_DEFAULT_MAX_BYTES). The chain is single-writer (THREADS). BG_OK,
 * BG_EINVAL (NULL out, or NULL buf with len > 0), BG_ECORRUPT, BG_ETOOBIG
 * or BG_ENOMEM. Allocates; free with bg_filter_free. */
BG_API int bg_rb_header_decode(bg_filter **out, const void *buf, size_t len, uint64_t max_bytes);

/* BF.SCANDUMP f it. For it = 0 returns 1: the header is due (encode it with
 * bg_rb_header_encode), *next = 1, *data = NULL, *len = 0. Otherwise returns
 * 0 with the chunk at iterator it: *data (borrowed: MEMORY) and *len, and
 * *next = it + *len; or, for it < 0 or a position past the last link, the
 * empty chunk (*data NULL, *len 0) and *next = 0, which ends the sequence.
 * BG_EINVAL for NULL arguments or another variant. Allocates nothing. */
BG_API int bg_rb_dump_chunk(const bg_filter *f, int64_t it, int64_t *next, const uint8_t **data,
                            size_t *len);

/* BF.LOADCHUNK f it data on an existing key: copies the `len` bytes at data
 * to the stream position SCANDUMP's reply iterator `it` names for a chunk
 * of that length. In RedisBloom's order: it <= 0 or it < len: BG_ECORRUPT;
 * start = it - len; start < 1, or stream position start - 1 past the last
 * link: BG_EOFFSET; more bytes than are left in that link: BG_ECHUNK; else
 * BG_OK (an empty chunk at a valid position changes nothing). Counters
 * never change. BG_EINVAL for NULL f, another variant, or NULL data with
 * len > 0; BG_EREADONLY for a chain of bg_filter_map. On failure nothing
 * changes. Allocates nothing. */
BG_API int bg_rb_load_chunk(bg_filter *f, int64_t it, const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif
