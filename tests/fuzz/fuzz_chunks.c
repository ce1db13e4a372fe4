/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the BF.LOADCHUNK / BF.SCANDUMP chunk protocol
 * (src/redis_module/chunks.c, compiled in; no Redis involved).
 *
 * THE INPUT
 *   byte 0      bits 0-2: the chunk size for the SCANDUMP re-run below
 *               (CHUNK_SIZES); bit 3: the small cap (SMALL_CAP) instead of
 *               the large one on the image a header may announce; bit 4:
 *               a growth cap (GROWTH_CAP) on the header's max bytes field
 *   records     each: iter (8 bytes, little-endian, signed), len (2 bytes,
 *               little-endian; cut to what the input has left), len bytes
 * The records are what LOADCHUNK calls would send to one key, replayed as
 * dump.c does: iter 1 with no assembly begins one from the data; iter 1
 * with one is skipped (dump.c refuses a header to an existing key before
 * chunks.c sees it); any other iter feeds the assembly (iter 0 also clones
 * it and compares the copy). The seeds (make_chunks_corpus) are real
 * SCANDUMP sequences of filters, made with the codec itself, and broken
 * variants of them.
 *
 * WHAT IT CHECKS (a violation is __builtin_trap(), after a line on stderr)
 *   - begin: the status chunks.h documents for those bytes (derived here
 *     from bg_file_image_size, the version field and the cap), *out NULL on
 *     failure; on success the assembly holds the header and its total;
 *   - feed: exactly the status a model of the protocol (below) predicts,
 *     and on failure nothing changed (bytes received, their content);
 *   - finish: bg_filter_decode's status for the assembled bytes, and on
 *     success the filter encodes back to exactly those bytes (the image
 *     round-trips); then the filter is SCANDUMPed with this input's chunk
 *     size (bgr_scan_step + bg_filter_encode_range) into a new assembly,
 *     which completes exactly at the last step and finishes to the same
 *     image;
 *   - after a filter exists, each further record's iter is a SCANDUMP step,
 *     whose range must be the same bytes as that range of the full image.
 * ASan, UBSan and LeakSanitizer watch it all. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/bloomgate.h>

#include "fuzz_util.h"

#include "redis_module/chunks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint64_t CHUNK_SIZES[8] = {1, 7, 50, 64, 333, 1000, 4096, 65536};
#define SMALL_CAP UINT64_C(1024)
#define LARGE_CAP (UINT64_C(1) << 20)
#define GROWTH_CAP UINT64_C(4096)

/* FUZZ_CHUNKS_TRACE=1 in the environment: one line per begin, refused
 * feed and finish on stderr (to see what the seeds reach). */
static int trace = -1;
#define TRACE(...)                                                  \
    do {                                                            \
        if (trace < 0)                                              \
            trace = getenv("FUZZ_CHUNKS_TRACE") != NULL;            \
        if (trace)                                                  \
            fprintf(stderr, "fuzz_chunks: " __VA_ARGS__);           \
    } while (0)

/* What begin must answer for head[0, len) under `cap` (chunks.h). */
static int begin_expected(const uint8_t *head, size_t len, uint64_t cap, uint64_t growth,
                          uint64_t *total)
{
    if (len > BG_FILE_HEADER_BYTES)
        return BG_ETRAILING;
    int rc = bg_file_image_size(head, len, total);
    if (rc != BG_OK)
        return rc;
    uint64_t version = fz_get_le(head + 8, 2);
    if (version != 2 && version != 4) /* scalable images only (chunks.c) */
        return BG_EVARIANT;
    if (*total > cap || fz_get_le(head + 72, 8) > growth)
        return BGR_ECAP;
    return BG_OK;
}

/* What feed must answer, from the model: total, bytes so far. */
static int feed_expected(uint64_t total, uint64_t have, long long iter, size_t len)
{
    if (have == total)
        return BG_EINVAL;
    if (iter < 2 || (uint64_t)iter - 1 < len)
        return BGR_EITER;
    uint64_t end = (uint64_t)iter - 1, start = end - len;
    if (start >= total)
        return BGR_EOFFSET;
    if (end > total)
        return BGR_ECHUNKBIG;
    if (len == 0 || start != have)
        return BGR_EORDER;
    return end == total;
}

/* The whole image of f, malloc'd, into *len. */
static uint8_t *encode_all(const bg_filter *f, size_t *len)
{
    uint64_t total;
    FZ_CHECKF(bg_filter_encoded_size(f, &total) == BG_OK, "encoded_size");
    uint8_t *img = malloc((size_t)total);
    FZ_CHECKF(img != NULL, "malloc");
    int rc = bg_filter_encode(f, img, (size_t)total, len);
    FZ_CHECKF(rc == BG_OK && *len == total, "encode: %s", bg_err_name(rc));
    return img;
}

/* SCANDUMP of f in chunks of chunk_max, LOADCHUNK into a new assembly, the
 * same image back. */
static void rescan(const bg_filter *f, const uint8_t *img, size_t len, uint64_t chunk_max)
{
    bgr_span s;
    bgr_scan_step(len, 0, chunk_max, &s);
    FZ_CHECKF(s.offset == 0 && s.len == BG_FILE_HEADER_BYTES && s.next == 1, "step 0");
    uint8_t head[BG_FILE_HEADER_BYTES];
    FZ_CHECKF(bg_filter_encode_range(f, 0, head, sizeof head) == BG_OK, "range of the header");
    FZ_CHECKF(memcmp(head, img, sizeof head) == 0, "header range differs");
    bgr_assembly *a;
    int rc = bgr_assembly_begin(&a, head, sizeof head, len, UINT64_MAX);
    FZ_CHECKF(rc == BG_OK, "begin of a real header: %s", bgr_status_name(rc));
    uint8_t *buf = malloc(chunk_max);
    FZ_CHECKF(buf != NULL, "malloc");
    int done = 0;
    for (bgr_scan_step(len, 1, chunk_max, &s); s.len != 0; bgr_scan_step(len, s.next, chunk_max, &s)) {
        FZ_CHECKF(!done, "steps after the image was complete");
        FZ_CHECKF(s.len <= chunk_max && s.offset + s.len <= len, "step out of range");
        FZ_CHECKF((uint64_t)s.next == s.offset + s.len + 1, "next iterator");
        FZ_CHECKF(bg_filter_encode_range(f, s.offset, buf, (size_t)s.len) == BG_OK, "range");
        FZ_CHECKF(memcmp(buf, img + s.offset, (size_t)s.len) == 0, "range differs");
        rc = bgr_assembly_feed(a, s.next, buf, (size_t)s.len);
        FZ_CHECKF(rc == 0 || rc == 1, "feed of a real chunk: %s", bgr_status_name(rc));
        done = rc == 1;
    }
    FZ_CHECKF(done, "the SCANDUMP ended before the image");
    FZ_CHECKF(s.next == 0, "end iterator");
    bg_filter *g;
    rc = bgr_assembly_finish(a, &g);
    FZ_CHECKF(rc == BG_OK, "finish of a rescan: %s", bgr_status_name(rc));
    size_t glen;
    uint8_t *gimg = encode_all(g, &glen);
    FZ_CHECKF(glen == len && memcmp(gimg, img, len) == 0, "rescan gives another image");
    free(gimg);
    bg_filter_free(g);
    bgr_assembly_free(a);
    free(buf);
}

/* A filter exists: iter is a SCANDUMP step of it. */
static void scan_probe(const bg_filter *f, const uint8_t *img, size_t len, long long iter,
                       uint64_t chunk_max)
{
    bgr_span s;
    bgr_scan_step(len, iter, chunk_max, &s);
    if (s.len == 0) {
        FZ_CHECKF(s.next == 0, "end with an iterator");
        FZ_CHECKF(iter < 0 || (iter > 1 && (uint64_t)iter - 1 >= len), "end before the end");
        return;
    }
    FZ_CHECKF(s.offset + s.len <= len, "step out of range");
    FZ_CHECKF(iter == 0 ? s.offset == 0 && s.len == BG_FILE_HEADER_BYTES && s.next == 1
                        : s.len <= chunk_max && (uint64_t)s.next == s.offset + s.len + 1,
              "step %lld: [%llu, +%llu) next %lld", iter, (unsigned long long)s.offset,
              (unsigned long long)s.len, s.next);
    uint8_t *buf = malloc((size_t)s.len);
    FZ_CHECKF(buf != NULL, "malloc");
    FZ_CHECKF(bg_filter_encode_range(f, s.offset, buf, (size_t)s.len) == BG_OK, "range");
    FZ_CHECKF(memcmp(buf, img + s.offset, (size_t)s.len) == 0, "range differs from the image");
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint64_t chunk_max = CHUNK_SIZES[data[0] & 7];
    uint64_t cap = data[0] & 8 ? SMALL_CAP : LARGE_CAP;
    uint64_t growth = data[0] & 16 ? GROWTH_CAP : UINT64_MAX;
    size_t at = 1;

    bgr_assembly *a = NULL;
    uint8_t *shadow = NULL; /* the model: what the assembly must hold */
    uint64_t total = 0, have = 0;
    bg_filter *f = NULL;
    uint8_t *img = NULL;
    size_t img_len = 0;

    while (size - at >= 10) {
        long long iter = (long long)fz_get_le(data + at, 8);
        size_t len = (size_t)fz_get_le(data + at + 8, 2);
        at += 10;
        if (len > size - at)
            len = size - at;
        const uint8_t *chunk = data + at;
        at += len;

        if (f != NULL) {
            scan_probe(f, img, img_len, iter, chunk_max);
            continue;
        }
        if (a == NULL) {
            if (iter != 1)
                continue; /* dump.c: "ERR not found" */
            uint64_t want_total = 0;
            int want = begin_expected(chunk, len, cap, growth, &want_total);
            bgr_assembly *na = (bgr_assembly *)&na;
            int rc = bgr_assembly_begin(&na, chunk, len, cap, growth);
            FZ_CHECKF(rc == want, "begin: %s, expected %s", bgr_status_name(rc),
                      bgr_status_name(want));
            FZ_CHECKF((rc == BG_OK) == (na != NULL), "begin %s with out %p", bgr_status_name(rc),
                      (void *)na);
            TRACE("begin(%zu bytes): %s, total %llu\n", len, bgr_status_name(rc),
                  (unsigned long long)want_total);
            if (rc != BG_OK)
                continue;
            a = na;
            total = want_total;
            have = BG_FILE_HEADER_BYTES;
            FZ_CHECKF(bgr_assembly_total(a) == total && bgr_assembly_have(a) == have,
                      "begin's state");
            shadow = malloc((size_t)total);
            FZ_CHECKF(shadow != NULL, "malloc");
            memcpy(shadow, chunk, BG_FILE_HEADER_BYTES);
            FZ_CHECKF(memcmp(bgr_assembly_bytes(a), shadow, (size_t)have) == 0, "begin's bytes");
            continue;
        }
        if (iter == 1)
            continue; /* dump.c: a header to an existing key is refused */
        if (iter == 0) {
            bgr_assembly *c = bgr_assembly_clone(a);
            FZ_CHECKF(c != NULL, "clone");
            FZ_CHECKF(bgr_assembly_total(c) == total && bgr_assembly_have(c) == have &&
                          memcmp(bgr_assembly_bytes(c), shadow, (size_t)have) == 0,
                      "clone differs");
            bgr_assembly_free(c);
        }
        int want = feed_expected(total, have, iter, len);
        int rc = bgr_assembly_feed(a, iter, chunk, len);
        FZ_CHECKF(rc == want, "feed(iter %lld, len %zu) with %llu/%llu: %s, expected %s", iter, len,
                  (unsigned long long)have, (unsigned long long)total, bgr_status_name(rc),
                  bgr_status_name(want));
        if (rc < 0)
            TRACE("feed(iter %lld, len %zu) at %llu/%llu: %s\n", iter, len,
                  (unsigned long long)have, (unsigned long long)total, bgr_status_name(rc));
        if (rc >= 0) {
            memcpy(shadow + have, chunk, len);
            have += len;
        }
        FZ_CHECKF(bgr_assembly_have(a) == have && bgr_assembly_total(a) == total, "feed's state");
        FZ_CHECKF(memcmp(bgr_assembly_bytes(a), shadow, (size_t)have) == 0, "feed's bytes");
        if (rc != 1)
            continue;

        /* Complete: finish says what the decoder says of the bytes. */
        bg_filter *direct = NULL;
        int drc = bg_filter_decode(&direct, shadow, (size_t)total, BG_FILE_SINGLE_WRITER);
        bg_filter_free(direct);
        bg_filter *g = (bg_filter *)&g;
        rc = bgr_assembly_finish(a, &g);
        FZ_CHECKF(rc == BG_OK || rc == BG_ENOMEM || fz_is_trust_status(rc), "finish: %s",
                  bgr_status_name(rc));
        FZ_CHECKF((rc == BG_OK) == (g != NULL), "finish %s with out %p", bgr_status_name(rc),
                  (void *)g);
        if (rc != BG_ENOMEM && drc != BG_ENOMEM)
            FZ_CHECKF(rc == drc, "finish %s but decode %s", bgr_status_name(rc),
                      bgr_status_name(drc));
        TRACE("finish(%llu bytes): %s\n", (unsigned long long)total, bgr_status_name(rc));
        /* The assembly is as it was, complete: no more chunks. */
        FZ_CHECKF(bgr_assembly_have(a) == total, "finish changed the assembly");
        FZ_CHECKF(bgr_assembly_feed(a, (long long)total + 1, shadow + total - 1, 1) == BG_EINVAL,
                  "a chunk after the end");
        bgr_assembly *done = a;
        a = NULL;
        if (rc == BG_OK) {
            FZ_CHECKF(bg_filter_variant(g) == BG_VARIANT_SCALABLE, "not scalable");
            f = g;
            img = encode_all(f, &img_len);
            FZ_CHECKF(img_len == total && memcmp(img, shadow, img_len) == 0,
                      "the filter encodes to other bytes than it was assembled from");
            rescan(f, img, img_len, chunk_max);
        }
        bgr_assembly_free(done);
        free(shadow);
        shadow = NULL;
        if (f == NULL)
            break; /* dump.c deletes the key: the records after go nowhere */
    }
    bgr_assembly_free(a);
    free(shadow);
    bg_filter_free(f);
    free(img);
    return 0;
}
