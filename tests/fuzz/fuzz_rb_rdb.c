/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: RedisBloom's MBbloom-- RDB value as the module reads it
 * (src/redis_module/rb_rdb.c, compiled in; no Redis involved), driven by a
 * DUMP payload's bytes.
 *
 * THE INPUT
 * A DUMP / RESTORE payload (docs/REDISBLOOM_FORMAT.md sections 6 and 7):
 * 0x07, the module id as an RDB length (its name code must be MBbloom--'s,
 * its low 10 bits are the encver handed to the loader, as Redis does), then
 * the value's primitives, each an opcode (0x02 unsigned, 0x04 double, 0x05
 * string) and its value. What follows the value (the end opcode, RDB
 * version and CRC-64) is not read: Redis checks those before the module
 * sees anything, and a fuzzer cannot make CRCs. Strings are plain, integer
 * encoded (0xC0-0xC2, read as their decimal text, as Redis does) or LZF
 * (0xC3), which needs liblzf (BG_HAVE_LZF); without it an LZF string is a
 * reader failure. The seeds (make_rb_rdb_corpus) are RedisBloom's own DUMP
 * payloads from tests/fixtures/redisbloom (encodings 0 to 4, LZF strings
 * included) and payloads the corpus maker writes uncompressed.
 *
 * WHAT IT CHECKS (a violation is __builtin_trap(), after a line on stderr)
 *   - the load returns BG_OK with a chain, or a documented status with
 *     *out NULL, never anything else, and never allocates past MAX_BYTES;
 *   - a loaded chain saves (encver 4) to bytes that load again to the same
 *     chain, fields and arrays, and save again to the same bytes;
 *   - its SCANDUMP header decodes (bg_rb_header_decode) exactly when the
 *     options have no unknown bit and the chain's size is the links' sum,
 *     and then LOADCHUNK of every SCANDUMP chunk rebuilds the same chain;
 *   - a clone is the same chain; adds of a few keys answer 1 or 0 or a
 *     growth status, and every key added is found afterwards.
 * ASan, UBSan and LeakSanitizer watch it all. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/bloomgate.h>

#include "fuzz_util.h"

#include "redis_module/rb_rdb.h"

#ifdef BG_HAVE_LZF
#include <lzf.h>
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The module's MAX_BYTES here: big enough for the largest fixture link
 * (197760 bytes), small enough that a chain never costs much. */
#define MAX_BYTES (UINT64_C(1) << 20)
/* Largest string the reader makes (Redis's own limit is memory). */
#define STRING_CAP (UINT64_C(2) << 20)
/* MBbloom--'s 54-bit name code (REDISBLOOM_FORMAT.md section 6). */
#define RB_NAME_CODE UINT64_C(0xc05b968a26fbe)

/* ---- a reader of payload bytes --------------------------------------------- */

typedef struct rd {
    const uint8_t *p;
    size_t n, at;
} rd;

static int rd_byte(rd *r, uint8_t *b)
{
    if (r->at >= r->n)
        return -1;
    *b = r->p[r->at++];
    return 0;
}

/* An RDB length; *special gets the low 6 bits of an encoded form (11xxxxxx)
 * or -1. */
static int rd_len(rd *r, uint64_t *v, int *special)
{
    uint8_t b;
    *special = -1;
    if (rd_byte(r, &b))
        return -1;
    switch (b >> 6) {
    case 0:
        *v = b & 0x3f;
        return 0;
    case 1: {
        uint8_t c;
        if (rd_byte(r, &c))
            return -1;
        *v = ((uint64_t)(b & 0x3f) << 8) | c;
        return 0;
    }
    case 2: {
        unsigned w = b == 0x80 ? 4 : b == 0x81 ? 8 : 0;
        if (w == 0 || r->n - r->at < w)
            return -1;
        uint64_t x = 0;
        for (unsigned i = 0; i < w; i++)
            x = x << 8 | r->p[r->at++];
        *v = x;
        return 0;
    }
    default:
        *special = b & 0x3f;
        *v = 0;
        return 0;
    }
}

static int rd_opcode(rd *r, uint64_t want)
{
    uint64_t op;
    int special;
    return rd_len(r, &op, &special) || special >= 0 || op != want ? -1 : 0;
}

static int rd_unsigned(void *io, uint64_t *out)
{
    rd *r = io;
    int special;
    if (rd_opcode(r, 2) || rd_len(r, out, &special) || special >= 0)
        return -1;
    return 0;
}

static int rd_double(void *io, double *out)
{
    rd *r = io;
    if (rd_opcode(r, 4) || r->n - r->at < 8)
        return -1;
    uint64_t bits = fz_get_le(r->p + r->at, 8);
    r->at += 8;
    memcpy(out, &bits, sizeof *out);
    return 0;
}

static void *rd_string(void *io, size_t *len)
{
    rd *r = io;
    uint64_t n;
    int special;
    if (rd_opcode(r, 5) || rd_len(r, &n, &special))
        return NULL;
    if (special >= 0 && special <= 2) { /* an integer, as its decimal text */
        unsigned w = 1u << special;
        if (r->n - r->at < w)
            return NULL;
        int64_t x = (int64_t)(fz_get_le(r->p + r->at, w) << (64 - 8 * w)) >> (64 - 8 * w);
        r->at += w;
        char *s = malloc(24);
        *len = (size_t)snprintf(s, 24, "%lld", (long long)x);
        return s;
    }
    if (special == 3) {
#ifdef BG_HAVE_LZF
        uint64_t clen, olen;
        int sp1, sp2;
        if (rd_len(r, &clen, &sp1) || rd_len(r, &olen, &sp2) || sp1 >= 0 || sp2 >= 0)
            return NULL;
        if (clen > r->n - r->at || olen == 0 || olen > STRING_CAP)
            return NULL;
        uint8_t *out = malloc((size_t)olen);
        unsigned got = lzf_decompress(r->p + r->at, (unsigned)clen, out, (unsigned)olen);
        r->at += (size_t)clen;
        if (got != olen) {
            free(out);
            return NULL;
        }
        *len = (size_t)olen;
        return out;
#else
        return NULL;
#endif
    }
    if (special >= 0 || n > r->n - r->at || n > STRING_CAP)
        return NULL;
    uint8_t *out = malloc(n ? (size_t)n : 1);
    if (n)
        memcpy(out, r->p + r->at, (size_t)n);
    r->at += (size_t)n;
    *len = (size_t)n;
    return out;
}

static void rd_free(void *io, void *buf)
{
    (void)io;
    free(buf);
}

/* ---- a writer of the same opcodes (plain strings) ------------------------------ */

typedef struct wr {
    uint8_t *p;
    size_t n, cap;
} wr;

static void wr_put(wr *w, const void *b, size_t n)
{
    if (w->n + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->n + n)
            cap *= 2;
        w->p = realloc(w->p, cap);
        FZ_CHECK(w->p != NULL);
        w->cap = cap;
    }
    memcpy(w->p + w->n, b, n);
    w->n += n;
}

static void wr_len(wr *w, uint64_t v)
{
    uint8_t b[9];
    if (v < 64) {
        b[0] = (uint8_t)v;
        wr_put(w, b, 1);
    } else if (v < 16384) {
        b[0] = (uint8_t)(0x40 | (v >> 8));
        b[1] = (uint8_t)v;
        wr_put(w, b, 2);
    } else {
        b[0] = 0x81;
        for (int i = 0; i < 8; i++)
            b[1 + i] = (uint8_t)(v >> (56 - 8 * i));
        wr_put(w, b, 9);
    }
}

static void wr_unsigned(void *io, uint64_t v)
{
    wr_len(io, 2);
    wr_len(io, v);
}

static void wr_double(void *io, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(bits >> (8 * i));
    wr_len(io, 4);
    wr_put(io, b, 8);
}

static void wr_string(void *io, const void *buf, size_t len)
{
    wr_len(io, 5);
    wr_len(io, len);
    if (len)
        wr_put(io, buf, len);
}

/* ---- properties ------------------------------------------------------------- */

static int documented(int rc)
{
    return rc == BGR_RDB_EREAD || rc == BGR_RDB_EENCVER || rc == BG_ECORRUPT || rc == BG_ETOOBIG;
}

/* Whether two chains have the same fields and arrays. */
static int same_chain(const bg_filter *a, const bg_filter *b)
{
    bg_rb_chain ca, cb;
    if (bg_rb_chain_get(a, &ca) || bg_rb_chain_get(b, &cb) || ca.size != cb.size ||
        ca.nfilters != cb.nfilters || ca.options != cb.options || ca.growth != cb.growth)
        return 0;
    for (uint32_t i = 0; i < ca.nfilters; i++) {
        bg_rb_link la, lb;
        const uint8_t *da, *db;
        size_t na, nb;
        if (bg_rb_link_get(a, i, &la) || bg_rb_link_get(b, i, &lb) ||
            bg_rb_link_array(a, i, &da, &na) || bg_rb_link_array(b, i, &db, &nb))
            return 0;
        if (la.entries != lb.entries || memcmp(&la.error, &lb.error, 8) ||
            memcmp(&la.bpe, &lb.bpe, 8) || la.hashes != lb.hashes || la.bits != lb.bits ||
            la.bytes != lb.bytes || la.n2 != lb.n2 || la.size != lb.size || na != nb ||
            memcmp(da, db, na))
            return 0;
    }
    return 1;
}

static bg_filter *load_bytes(const uint8_t *p, size_t n, int encver, int *rc)
{
    rd r = {p, n, 0};
    /* rd_string's buffers come from malloc, the library's allocator here:
     * odd-length inputs are loaded by adopting them, the others by copy. */
    bgr_rdb_reader rdr = {&r, rd_unsigned, rd_double, rd_string, rd_free, n % 2 == 1};
    bg_filter *f = (bg_filter *)(uintptr_t)1;
    *rc = bgr_rb_rdb_load(&rdr, encver, MAX_BYTES, &f, NULL);
    return f;
}

static void check_save(const bg_filter *f)
{
    wr w1 = {0}, w2 = {0};
    bgr_rdb_writer wt = {&w1, wr_unsigned, wr_double, wr_string};
    FZ_CHECK(bgr_rb_rdb_save(&wt, f) == BG_OK);
    int rc;
    bg_filter *g = load_bytes(w1.p, w1.n, BGR_RB_ENCVER, &rc);
    FZ_CHECKF(rc == BG_OK && g != NULL, "a saved chain does not load: %d", rc);
    FZ_CHECK(same_chain(f, g));
    wt.io = &w2;
    FZ_CHECK(bgr_rb_rdb_save(&wt, g) == BG_OK);
    FZ_CHECK(w1.n == w2.n && memcmp(w1.p, w2.p, w1.n) == 0);
    bg_filter_free(g);
    free(w1.p);
    free(w2.p);
}

static void check_chunks(const bg_filter *f)
{
    bg_rb_chain ch;
    FZ_CHECK(bg_rb_chain_get(f, &ch) == BG_OK);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < ch.nfilters; i++) {
        bg_rb_link l;
        FZ_CHECK(bg_rb_link_get(f, i, &l) == BG_OK);
        sum += l.size;
    }
    size_t hlen = bg_rb_header_size(f);
    FZ_CHECK(hlen == BG_RB_HEADER_CHAIN + (size_t)BG_RB_HEADER_LINK * ch.nfilters);
    uint8_t *h = malloc(hlen);
    size_t got;
    FZ_CHECK(bg_rb_header_encode(f, h, hlen, &got) == BG_OK && got == hlen);
    bg_filter *g = NULL;
    int rc = bg_rb_header_decode(&g, h, hlen, MAX_BYTES);
    int want_ok = (ch.options & ~BG_RB_OPTIONS_KNOWN) == 0 && sum == ch.size;
    FZ_CHECKF(want_ok ? rc == BG_OK : rc == BG_ECORRUPT, "header decode: %d (want ok: %d)", rc,
              want_ok);
    if (rc == BG_OK) {
        int64_t it = 1, next;
        const uint8_t *d;
        size_t n;
        while (bg_rb_dump_chunk(f, it, &next, &d, &n) == 0 && next != 0) {
            FZ_CHECK(next == it + (int64_t)n && n > 0);
            FZ_CHECK(bg_rb_load_chunk(g, next, d, n) == BG_OK);
            it = next;
        }
        FZ_CHECK(same_chain(f, g));
    }
    bg_filter_free(g);
    free(h);
}

static void check_adds(bg_filter *f, const uint8_t *data, size_t size)
{
    bg_filter *c = NULL;
    if (bg_filter_clone(&c, f) == BG_OK) {
        FZ_CHECK(same_chain(f, c));
        bg_filter_free(c);
    }
    /* Keys: 8-byte windows of the input (any bytes), then fixed ones. */
    for (unsigned k = 0; k < 8; k++) {
        uint8_t key[8] = {(uint8_t)k};
        size_t off = size ? (k * 7919u) % size : 0;
        size_t n = size - off < 8 ? size - off : 8;
        if (n)
            memcpy(key, data + off, n);
        int rc = bg_filter_test_and_add(f, key, sizeof key);
        FZ_CHECKF(rc == 0 || rc == 1 || rc == BG_EFULL || rc == BG_ETOOBIG || rc == BG_ENOMEM,
                  "add: %d", rc);
        if (rc >= 0)
            FZ_CHECK(bg_filter_contains(f, key, sizeof key) == 1);
    }
    (void)bgr_rb_info_size(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rd r = {data, size, 0};
    uint8_t type;
    uint64_t id;
    int special;
    if (rd_byte(&r, &type) || type != 0x07 || rd_len(&r, &id, &special) || special >= 0)
        return 0;
    if (id >> 10 != RB_NAME_CODE)
        return 0;
    int encver = (int)(id & 1023);
    int rc;
    bg_filter *f = load_bytes(data + r.at, size - r.at, encver, &rc);
    /* FUZZ_RB_RDB_TRACE=1: each input's encver and load status on stderr
     * (to see what the seeds reach). */
    if (getenv("FUZZ_RB_RDB_TRACE") != NULL)
        fprintf(stderr, "fuzz_rb_rdb: %zu bytes, encver %d: %d\n", size, encver, rc);
    if (rc != BG_OK) {
        FZ_CHECKF(documented(rc), "load: undocumented status %d", rc);
        FZ_CHECK(f == NULL);
        return 0;
    }
    FZ_CHECK(f != NULL);
    FZ_CHECK(bg_filter_bytes(f) <= MAX_BYTES);
    check_save(f);
    check_chunks(f);
    check_adds(f, data, size);
    bg_filter_free(f);
    return 0;
}
