/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: every reader of untrusted filter-file bytes.
 *
 * WHAT IT RUNS
 * Each input goes, as it is, through bg_file_inspect_buffer and
 * bg_filter_decode (with and without BG_FILE_NO_VERIFY), and through
 * bg_file_inspect, bg_filter_load and bg_filter_map on a memfd holding the
 * same bytes (their own read paths: pread, streaming checksum, mmap). The
 * memfd is reached as /proc/self/fd/N, so no disk is involved.
 * A mutated input almost never has a matching checksum, so only the
 * NO_VERIFY calls would get past it; the input is therefore run a second
 * time with its checksum field recomputed (XXH3-64 of header bytes [0, 120)
 * then everything after the 128-byte header, docs/FORMAT.md), which lets the
 * fuzzer explore field values through the verifying paths too.
 *
 * WHAT IT CHECKS (a violation is __builtin_trap(), after a line on stderr)
 *   - every status is one the header documents for that call; a failed
 *     decode, load or map leaves *out NULL;
 *   - the readers agree: both inspects, decode, load and map of the same
 *     bytes with the same flags return the same status (decode, load and
 *     map may additionally run out of memory), and both inspects the same
 *     info;
 *   - inspect's checksum_state says what was done (skipped, ok,
 *     BG_ECHECKSUM), and on BG_ECHECKSUM the info is complete;
 *   - a filter that decodes answers queries with 0 or 1, has stats, its
 *     accessors match the header, and it encodes back to exactly the input
 *     (every format version is canonical, format.h): with a checksum that was not
 *     verified, exactly the input apart from the checksum field, which must
 *     then be the true checksum of the input;
 *   - an added key is then present (no false negative); the mapped copy is
 *     read-only and answers like the decoded one; union and intersect
 *     between them work.
 * ASan and UBSan watch all of it, and LeakSanitizer checks that nothing is
 * left allocated. */
#define _GNU_SOURCE /* memfd_create */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <bloomgate/bloomgate.h>

#include "fuzz_util.h"

/* The version-1 header's checksum field, and what it covers. */
#define CHECKSUM_OFF 120u
#define HEADER_BYTES BG_FILE_HEADER_BYTES

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put_le64(uint8_t *p, uint64_t v)
{
    for (unsigned i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* The checksum a writer would store for buf[0, len) (len >= HEADER_BYTES). */
static uint64_t true_checksum(const uint8_t *buf, size_t len)
{
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, buf, CHECKSUM_OFF);
    XXH3_64bits_update(&st, buf + HEADER_BYTES, len - HEADER_BYTES);
    return XXH3_64bits_digest(&st);
}

/* Every field of two infos equal (no memcmp: the struct has padding). */
static int info_equal(const bg_file_info *a, const bg_file_info *b)
{
    return a->version == b->version && a->header_bytes == b->header_bytes &&
           a->variant == b->variant && a->hash_id == b->hash_id && a->seed == b->seed &&
           a->bits == b->bits && a->hashes == b->hashes && a->capacity == b->capacity &&
           a->items == b->items && a->payload_offset == b->payload_offset &&
           a->payload_bytes == b->payload_bytes && a->file_bytes == b->file_bytes &&
           a->checksum == b->checksum && a->checksum_state == b->checksum_state;
}

/* ---- a file holding the input, for bg_filter_load and bg_filter_map ---- */

static int memfd = -1;
static char memfd_path[64];

/* Puts buf[0, len) into the memfd; 0 on success. */
static int memfd_fill(const uint8_t *buf, size_t len)
{
    if (memfd < 0) {
        memfd = memfd_create("bg-fuzz", MFD_CLOEXEC);
        FZ_CHECKF(memfd >= 0, "memfd_create failed");
        snprintf(memfd_path, sizeof memfd_path, "/proc/self/fd/%d", memfd);
    }
    FZ_CHECKF(ftruncate(memfd, 0) == 0, "ftruncate");
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(memfd, buf + done, len - done, (off_t)done);
        FZ_CHECKF(n > 0, "pwrite");
        done += (size_t)n;
    }
    return 0;
}

/* ---- properties of a filter that decoded ------------------------------ */

static const char *const probe_keys[] = {"", "a", "alice", "bob", "user:1234567890",
                                         "\x00\xff\x00\xff binary"};
#define NPROBES (sizeof probe_keys / sizeof probe_keys[0])

/* Answers to the fixed probe keys plus a key made of the input's first
 * bytes, into ans[NPROBES + 1]. */
static void probe(const bg_filter *f, const uint8_t *data, size_t size, int *ans)
{
    for (size_t i = 0; i < NPROBES; i++) {
        ans[i] = bg_filter_contains(f, probe_keys[i], strlen(probe_keys[i]));
        FZ_CHECKF(ans[i] == 0 || ans[i] == 1, "contains returned %d", ans[i]);
    }
    size_t klen = size < 24 ? size : 24;
    ans[NPROBES] = bg_filter_contains(f, data, klen);
    FZ_CHECKF(ans[NPROBES] == 0 || ans[NPROBES] == 1, "contains returned %d", ans[NPROBES]);
}

/* `f` decoded (or mapped) from buf[0, len), whose header inspect read into
 * *info; `verified` says the checksum was checked. */
static void check_filter(const bg_filter *f, const bg_file_info *info, const uint8_t *buf,
                         size_t len, int verified)
{
    FZ_CHECKF(bg_filter_variant(f) == info->variant, "variant");
    FZ_CHECKF(bg_filter_bits(f) == info->bits, "bits");
    FZ_CHECKF(bg_filter_hashes(f) == info->hashes, "hashes");
    FZ_CHECKF(bg_filter_seed(f) == info->seed, "seed");
    FZ_CHECKF(bg_filter_items(f) == info->items, "items");
    FZ_CHECKF(bg_filter_bytes(f) >= info->payload_bytes, "bytes %llu < payload %llu",
              (unsigned long long)bg_filter_bytes(f), (unsigned long long)info->payload_bytes);

    bg_filter_stats st;
    FZ_CHECKF(bg_filter_stats_get(f, &st) == BG_OK, "stats_get");
    FZ_CHECKF(st.bits == info->bits && st.hashes == info->hashes && st.seed == info->seed &&
                  st.capacity == info->capacity && st.items == info->items,
              "stats disagree with the header");
    FZ_CHECKF(st.bits_set <= st.bits, "bits_set %llu > m %llu", (unsigned long long)st.bits_set,
              (unsigned long long)st.bits);
    FZ_CHECKF(st.fill_ratio >= 0.0 && st.fill_ratio <= 1.0, "fill_ratio %g", st.fill_ratio);
    FZ_CHECKF(st.estimated_fp_rate >= 0.0 && st.estimated_fp_rate <= 1.0, "estimated_fp_rate %g",
              st.estimated_fp_rate);
    FZ_CHECKF(!(st.estimated_items < 0.0), "estimated_items %g", st.estimated_items);

    /* Canonical: the filter encodes back to the very bytes it came from. */
    uint64_t esize = 0;
    FZ_CHECKF(bg_filter_encoded_size(f, &esize) == BG_OK, "encoded_size");
    FZ_CHECKF(esize == len, "encoded size %llu != input %zu", (unsigned long long)esize, len);
    uint8_t *out = malloc(len);
    FZ_CHECKF(out != NULL, "malloc");
    size_t written = 0;
    int rc = bg_filter_encode(f, out, len, &written);
    FZ_CHECKF(rc == BG_OK && written == len, "encode: %s, %zu bytes", bg_err_name(rc), written);
    if (verified) {
        FZ_CHECKF(memcmp(out, buf, len) == 0, "re-encoding differs from the input");
    } else {
        FZ_CHECKF(memcmp(out, buf, CHECKSUM_OFF) == 0 &&
                      memcmp(out + HEADER_BYTES, buf + HEADER_BYTES, len - HEADER_BYTES) == 0,
                  "re-encoding differs from the input outside the checksum");
        FZ_CHECKF(fz_get_le(out + CHECKSUM_OFF, 8) == true_checksum(buf, len),
                  "encode's checksum is not XXH3-64 of header [0, 120) + payload");
    }
    /* Too small a buffer is refused, not overrun. */
    FZ_CHECKF(bg_filter_encode(f, out, len - 1, NULL) == BG_EINVAL, "encode into len - 1");
    free(out);
}

/* Whether the next new key would open a layer (the newest is full). */
static int grows(const bg_filter *f)
{
    bg_filter_stats st, top;
    FZ_CHECKF(bg_filter_stats_get(f, &st) == BG_OK, "stats");
    FZ_CHECKF(bg_filter_layer_stats(f, st.layers - 1, &top) == BG_OK, "layer stats");
    return top.items >= top.capacity;
}

/* ---- one image through every reader ------------------------------------ */

static void run_image(const uint8_t *buf, size_t len, int fixed)
{
    static const unsigned modes[] = {0, BG_FILE_NO_VERIFY};
    memfd_fill(buf, len);

    for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
        unsigned flags = modes[mi];
        int verify = !(flags & BG_FILE_NO_VERIFY);

        bg_file_info info;
        int irc = bg_file_inspect_buffer(buf, len, flags, &info);
        FZ_CHECKF(irc == BG_OK || fz_is_trust_status(irc), "inspect: %s", bg_err_name(irc));
        if (irc == BG_OK)
            FZ_CHECKF(info.checksum_state == (verify ? BG_CHECKSUM_OK : BG_CHECKSUM_SKIPPED),
                      "checksum_state %d", (int)info.checksum_state);
        if (!verify)
            FZ_CHECKF(irc != BG_ECHECKSUM, "ECHECKSUM without verifying");
        if (irc == BG_ECHECKSUM) {
            /* *out is complete: the same as NO_VERIFY sees, except the verdict. */
            bg_file_info nv;
            FZ_CHECKF(bg_file_inspect_buffer(buf, len, BG_FILE_NO_VERIFY, &nv) == BG_OK,
                      "ECHECKSUM but NO_VERIFY fails");
            FZ_CHECKF(info.checksum_state == BG_CHECKSUM_MISMATCH, "checksum_state %d",
                      (int)info.checksum_state);
            nv.checksum_state = BG_CHECKSUM_MISMATCH;
            FZ_CHECKF(info_equal(&nv, &info), "ECHECKSUM info incomplete");
            FZ_CHECKF(info.checksum != true_checksum(buf, len), "ECHECKSUM on a true checksum");
        }
        if (fixed && irc != BG_OK && len >= HEADER_BYTES)
            FZ_CHECKF(irc != BG_ECHECKSUM, "ECHECKSUM on a recomputed checksum");

        /* The same from a file: same verdict, and where the info is
         * defined (BG_OK, BG_ECHECKSUM), the same info. */
        bg_file_info finfo;
        int frc = bg_file_inspect(memfd_path, flags, &finfo);
        FZ_CHECKF(frc == irc, "inspect of the file %s but of the buffer %s (flags %u)",
                  bg_err_name(frc), bg_err_name(irc), flags);
        if (irc == BG_OK || irc == BG_ECHECKSUM)
            FZ_CHECKF(info_equal(&finfo, &info), "inspect of the file and of the buffer differ");

        bg_filter *f = (bg_filter *)1;
        int drc = bg_filter_decode(&f, buf, len, flags);
        FZ_CHECKF(drc == BG_OK || drc == BG_ENOMEM || fz_is_trust_status(drc), "decode: %s",
                  bg_err_name(drc));
        FZ_CHECKF((drc == BG_OK) == (f != NULL), "decode %s with out %p", bg_err_name(drc),
                  (void *)f);
        if (drc != BG_ENOMEM)
            FZ_CHECKF(drc == irc, "decode %s but inspect %s (flags %u)", bg_err_name(drc),
                      bg_err_name(irc), flags);

        /* The file readers, on the same bytes. The loaded copy is
         * single-writer every other mode, to cover that flag. */
        bg_filter *lf = (bg_filter *)1;
        unsigned lflags = flags | (mi & 1 ? BG_FILE_SINGLE_WRITER : 0);
        int lrc = bg_filter_load(&lf, memfd_path, lflags);
        FZ_CHECKF((lrc == BG_OK) == (lf != NULL), "load %s with out %p", bg_err_name(lrc),
                  (void *)lf);
        if (lrc != BG_ENOMEM)
            FZ_CHECKF(lrc == irc, "load %s but inspect %s (flags %u)", bg_err_name(lrc),
                      bg_err_name(irc), flags);

        bg_filter *mf = (bg_filter *)1;
        int mrc = bg_filter_map(&mf, memfd_path, flags);
        FZ_CHECKF((mrc == BG_OK) == (mf != NULL), "map %s with out %p", bg_err_name(mrc),
                  (void *)mf);
        if (mrc != BG_ENOMEM)
            FZ_CHECKF(mrc == irc, "map %s but inspect %s (flags %u)", bg_err_name(mrc),
                      bg_err_name(irc), flags);

        /* Scalable filters and RedisBloom chains: layers (links) of their
         * own shapes, which grow. */
        int scalable = info.variant == BG_VARIANT_SCALABLE || info.variant == BG_VARIANT_REDISBLOOM;
        if (f != NULL) {
            check_filter(f, &info, buf, len, verify);
            int ans[NPROBES + 1];
            probe(f, buf, len, ans);
            if (mf != NULL) {
                check_filter(mf, &info, buf, len, verify);
                int mans[NPROBES + 1];
                probe(mf, buf, len, mans);
                FZ_CHECKF(memcmp(ans, mans, sizeof ans) == 0, "mapped copy answers differently");
                FZ_CHECKF(bg_filter_read_only(mf), "mapped filter not read-only");
                FZ_CHECKF(bg_filter_add(mf, "x", 1) == BG_EREADONLY, "add to a mapped filter");
                /* A scalable filter's layers have no common shape: no
                 * merging (filter.h); any other: merges work. */
                int want = scalable ? BG_EVARIANT : BG_EREADONLY;
                FZ_CHECKF(bg_filter_union(mf, f) == want, "union into a mapped filter");
                /* Union and intersect with an identical filter keep the bits. */
                want = scalable ? BG_EVARIANT : BG_OK;
                int urc = bg_filter_union(f, mf);
                FZ_CHECKF(urc == want, "union: %s", bg_err_name(urc));
                int xrc = bg_filter_intersect(f, mf);
                FZ_CHECKF(xrc == want, "intersect: %s", bg_err_name(xrc));
                probe(f, buf, len, mans);
                FZ_CHECKF(memcmp(ans, mans, sizeof ans) == 0, "union/intersect changed answers");
            }
            FZ_CHECKF(!bg_filter_read_only(f), "decoded filter read-only");
            /* No false negatives in a decoded filter. A scalable one whose
             * newest layer is full would grow, by whatever the file's
             * parameters say: not tried. */
            if (!scalable || !grows(f)) {
                FZ_CHECKF(bg_filter_add(f, "fuzz-added", 10) == BG_OK, "add");
                FZ_CHECKF(bg_filter_contains(f, "fuzz-added", 10) == 1, "false negative");
                FZ_CHECKF(bg_filter_test_and_add(f, "fuzz-added", 10) == 0,
                          "test_and_add after add");
            }
        }
        if (lf != NULL) {
            check_filter(lf, &info, buf, len, verify);
            if (!scalable || !grows(lf)) {
                FZ_CHECKF(bg_filter_add(lf, buf, len < 16 ? len : 16) == BG_OK, "add to loaded");
                FZ_CHECKF(bg_filter_contains(lf, buf, len < 16 ? len : 16) == 1, "false negative");
            }
        }
        bg_filter_free(f);
        bg_filter_free(lf);
        bg_filter_free(mf);
    }

    /* Flags the header does not define are refused. */
    bg_filter *f = (bg_filter *)1;
    FZ_CHECKF(bg_filter_decode(&f, buf, len, 1u << 7) == BG_EINVAL && f == NULL, "unknown flag");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    run_image(data, size, 0);

    /* Again with the checksum the bytes deserve, so that field values, not
     * the checksum, decide. Skipped when it is already right. */
    if (size >= HEADER_BYTES) {
        uint8_t *copy = malloc(size); /* exactly size: ASan sees any overread */
        FZ_CHECKF(copy != NULL, "malloc");
        memcpy(copy, data, size);
        uint64_t sum = true_checksum(copy, size);
        if (fz_get_le(copy + CHECKSUM_OFF, 8) != sum) {
            put_le64(copy + CHECKSUM_OFF, sum);
            run_image(copy, size, 1);
        }
        free(copy);
    }
    return 0;
}
