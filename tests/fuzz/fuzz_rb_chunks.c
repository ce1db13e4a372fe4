/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the RedisBloom variant's BF.SCANDUMP header decoder and
 * BF.LOADCHUNK chunk placement (<bloomgate/redisbloom.h>), over untrusted
 * bytes, as a Redis module replays them.
 *
 * WHAT IT RUNS
 * The input is a header and a sequence of chunks:
 *   u16 header length h (little-endian), h header bytes, then records of
 *   i32 iterator (little-endian, signed), u16 length n, n data bytes,
 * each field cut short where the input ends. The header goes through
 * bg_rb_header_decode (arrays capped at 64 KiB); when it decodes, every
 * record goes through bg_rb_load_chunk.
 *
 * WHAT IT CHECKS (a violation is __builtin_trap(), after a line on stderr)
 *   - statuses: the decoder returns BG_OK, BG_ECORRUPT, BG_ETOOBIG or
 *     BG_ENOMEM, leaving *out NULL on failure; a chunk BG_OK, BG_ECORRUPT,
 *     BG_EOFFSET or BG_ECHUNK, by BF.LOADCHUNK's rules recomputed here from
 *     the iterator, the length and the links' sizes;
 *   - a chunk that is accepted lands where its iterator says (the link's
 *     bytes there are the chunk's), one that is refused changes nothing
 *     (checked for the first records);
 *     chunks never change the counters;
 *   - the header is canonical: encoding the decoded chain gives back the
 *     input's header bytes;
 *   - BF.SCANDUMP of the result walks every link's bytes in order, in
 *     chunks that never span links, and replaying it with BF.LOADCHUNK on a
 *     chain decoded from its header gives the same arrays;
 *   - queries answer 0 or 1; an add to a chain that need not grow is then
 *     found (no false negative).
 * ASan and UBSan watch all of it, and LeakSanitizer checks that nothing is
 * left allocated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/bloomgate.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Arrays above this are refused (BG_ETOOBIG): the fuzzer's inputs are small,
 * and a header may claim any size. */
#define MAX_BYTES ((uint64_t)1 << 16)

/* Records whose refusal is checked to change nothing (a pass over the
 * arrays each). */
#define CHECKED_REFUSALS 32

typedef struct reader {
    const uint8_t *p;
    size_t left;
} reader;

static uint64_t take(reader *r, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n && r->left; i++, r->left--)
        v |= (uint64_t)*r->p++ << (8 * i);
    return v;
}

/* The total of the links' arrays, and the link holding stream position
 * pos with its offset there (false past the end). */
static int locate(const bg_filter *f, uint64_t pos, uint32_t *link, uint64_t *off)
{
    bg_rb_chain ch;
    FZ_CHECK(bg_rb_chain_get(f, &ch) == BG_OK);
    for (uint32_t i = 0; i < ch.nfilters; i++) {
        bg_rb_link l;
        FZ_CHECK(bg_rb_link_get(f, i, &l) == BG_OK);
        if (pos < l.bytes) {
            *link = i;
            *off = pos;
            return 1;
        }
        pos -= l.bytes;
    }
    return 0;
}

/* BF.LOADCHUNK's verdict on (it, n) for f (REDISBLOOM_FORMAT.md section 8). */
static int expected(const bg_filter *f, int64_t it, size_t n, uint32_t *link, uint64_t *off)
{
    if (it <= 0 || (uint64_t)it < n)
        return BG_ECORRUPT;
    uint64_t start = (uint64_t)it - n;
    if (start < 1 || !locate(f, start - 1, link, off))
        return BG_EOFFSET;
    bg_rb_link l;
    FZ_CHECK(bg_rb_link_get(f, *link, &l) == BG_OK);
    return n > l.bytes - *off ? BG_ECHUNK : BG_OK;
}

/* The sum of every link's bytes, as a cheap fingerprint of the arrays. */
static uint64_t arrays_sum(const bg_filter *f)
{
    bg_rb_chain ch;
    FZ_CHECK(bg_rb_chain_get(f, &ch) == BG_OK);
    uint64_t s = 0;
    for (uint32_t i = 0; i < ch.nfilters; i++) {
        const uint8_t *d;
        size_t n;
        FZ_CHECK(bg_rb_link_array(f, i, &d, &n) == BG_OK);
        for (size_t j = 0; j < n; j++)
            s = s * 31 + d[j];
    }
    return s;
}

static void check_chain(bg_filter *f, const uint8_t *head, size_t hlen)
{
    /* Canonical header. */
    FZ_CHECK(bg_rb_header_size(f) == hlen);
    uint8_t *enc = malloc(hlen);
    FZ_CHECK(enc != NULL);
    size_t n = 0;
    FZ_CHECK(bg_rb_header_encode(f, enc, hlen, &n) == BG_OK && n == hlen);
    FZ_CHECKF(memcmp(enc, head, hlen) == 0, "the header does not encode back to itself");

    /* SCANDUMP, replayed into a chain decoded from the same header. */
    bg_filter *g;
    int rc = bg_rb_header_decode(&g, enc, hlen, MAX_BYTES);
    free(enc);
    FZ_CHECKF(rc == BG_OK || rc == BG_ENOMEM, "re-decode: %s", bg_err_name(rc));
    int64_t it = 0, next;
    const uint8_t *d;
    size_t len;
    FZ_CHECK(bg_rb_dump_chunk(f, it, &next, &d, &len) == 1 && next == 1);
    uint64_t total = 0;
    for (it = next; it != 0; it = next) {
        FZ_CHECK(bg_rb_dump_chunk(f, it, &next, &d, &len) == 0);
        if (next == 0) {
            FZ_CHECK(len == 0 && d == NULL);
            break;
        }
        FZ_CHECK(len > 0 && len <= BG_RB_CHUNK_MAX && next == it + (int64_t)len);
        uint32_t link;
        uint64_t off;
        FZ_CHECK(locate(f, (uint64_t)it - 1, &link, &off));
        bg_rb_link l;
        FZ_CHECK(bg_rb_link_get(f, link, &l) == BG_OK);
        FZ_CHECKF(len <= l.bytes - off, "a chunk spans links");
        total += len;
        if (g != NULL)
            FZ_CHECK(bg_rb_load_chunk(g, next, d, len) == BG_OK);
    }
    FZ_CHECK(total == bg_filter_bytes(f));
    if (g != NULL) {
        FZ_CHECKF(arrays_sum(g) == arrays_sum(f), "SCANDUMP replayed differs");
        bg_filter_free(g);
    }

    /* Queries, and an add where no link is needed. */
    static const char *const keys[] = {"", "a", "item1", "fx:scale2:0"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        rc = bg_filter_contains(f, keys[i], strlen(keys[i]));
        FZ_CHECKF(rc == 0 || rc == 1, "contains: %d", rc);
    }
    bg_filter_stats st;
    FZ_CHECK(bg_filter_stats_get(f, &st) == BG_OK);
    bg_filter_stats top;
    FZ_CHECK(bg_filter_layer_stats(f, st.layers - 1, &top) == BG_OK);
    if (top.items < top.capacity) {
        FZ_CHECK(bg_filter_add(f, "fuzz-added", 10) == BG_OK);
        FZ_CHECKF(bg_filter_contains(f, "fuzz-added", 10) == 1, "false negative");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    size_t hlen = (size_t)take(&r, 2);
    if (hlen > r.left)
        hlen = r.left;
    const uint8_t *head = r.p;
    r.p += hlen;
    r.left -= hlen;

    bg_filter *f = (bg_filter *)1;
    int rc = bg_rb_header_decode(&f, head, hlen, MAX_BYTES);
    FZ_CHECKF(rc == BG_OK || rc == BG_ECORRUPT || rc == BG_ETOOBIG || rc == BG_ENOMEM,
              "header_decode: %s", bg_err_name(rc));
    FZ_CHECKF((rc == BG_OK) == (f != NULL), "header_decode %s with out %p", bg_err_name(rc),
              (void *)f);
    if (f == NULL)
        return 0;

    bg_rb_chain before;
    FZ_CHECK(bg_rb_chain_get(f, &before) == BG_OK);
    for (unsigned rec = 0; r.left > 0; rec++) {
        int64_t it = (int32_t)(uint32_t)take(&r, 4);
        size_t n = (size_t)take(&r, 2);
        if (n > r.left)
            n = r.left;
        const uint8_t *chunk = r.p;
        r.p += n;
        r.left -= n;
        uint32_t link = 0;
        uint64_t off = 0;
        int want = expected(f, it, n, &link, &off);
        int watch = want != BG_OK && rec < CHECKED_REFUSALS;
        uint64_t sum = watch ? arrays_sum(f) : 0;
        rc = bg_rb_load_chunk(f, it, chunk, n);
        FZ_CHECKF(rc == want, "load_chunk(%lld, %zu): %s, want %s", (long long)it, n,
                  bg_err_name(rc), bg_err_name(want));
        if (rc == BG_OK && n > 0) {
            const uint8_t *d;
            size_t len;
            FZ_CHECK(bg_rb_link_array(f, link, &d, &len) == BG_OK);
            FZ_CHECKF(memcmp(d + off, chunk, n) == 0, "the chunk is not where it was sent");
        } else if (watch) {
            FZ_CHECKF(arrays_sum(f) == sum, "a refused chunk changed the arrays");
        }
    }
    bg_rb_chain after;
    FZ_CHECK(bg_rb_chain_get(f, &after) == BG_OK);
    FZ_CHECKF(after.size == before.size && after.nfilters == before.nfilters,
              "chunks changed the counters");
    check_chain(f, head, hlen);
    bg_filter_free(f);
    return 0;
}
