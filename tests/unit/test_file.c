/* SPDX-License-Identifier: BSD-3-Clause */
/* Filter files (<bloomgate/file.h>): golden bytes pin the format; every
 * malformed input gets its own status and allocates nothing; save, load and
 * map round-trip every variant; mapped filters are read-only. Pieces of an
 * image and clones are test_file_image.c. The SIGKILL crash test is
 * tests/crash, the fuzzer tests/fuzz. */
#define _GNU_SOURCE /* mkdtemp, umask */
#include "test_util.h"
#include "test_alloc.h"
#include "test_tmpdir.h"
#include "test_file_golden.h"
#include "test_filter_util.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- golden bytes ---------------------------------------------------- */

/* The golden images and their filters are in tests/support/test_file_golden.c.
 * Any change to these bytes is a format change: bump BG_FILE_VERSION, keep
 * reading the old version, and add new golden bytes beside these. */
static void golden_bytes(void **state)
{
    (void)state;
    for (int blocked = 0; blocked < 2; blocked++) {
        tu_ctx("golden %s", blocked ? "blocked" : "standard");
        const uint8_t *want = blocked ? tu_golden_blocked : tu_golden_standard;
        size_t want_len = blocked ? sizeof tu_golden_blocked : sizeof tu_golden_standard;
        bg_filter *f = tu_golden_filter(blocked);
        uint64_t size;
        TU_EQ_I(bg_filter_encoded_size(f, &size), BG_OK);
        TU_EQ_U(size, want_len);
        uint8_t buf[256];
        size_t n = 0;
        TU_EQ_I(bg_filter_encode(f, buf, sizeof buf, &n), BG_OK);
        TU_EQ_U(n, want_len);
        assert_memory_equal(buf, want, want_len);
        TU_EQ_I(bg_filter_encode(f, buf, want_len - 1, &n), BG_EINVAL);
        bg_filter_free(f);

        /* The fields where docs/FORMAT.md puts them. */
        assert_memory_equal(want, "\x89" "BGF\r\n\x1a\n", 8);
        TU_EQ_U(tu_le(want + 8, 2), 1);                      /* version */
        TU_EQ_U(tu_le(want + 10, 2), 128);                   /* header bytes */
        TU_EQ_U(want[12], blocked ? 2 : 1);               /* variant */
        TU_EQ_U(want[13], BG_FILE_HASH_XXH3_128);         /* hash */
        TU_EQ_U(tu_le(want + 16, 4), blocked ? 8 : 3);       /* k */
        TU_EQ_U(tu_le(want + 24, 8), blocked ? 512 : 100);   /* m */
        TU_EQ_U(tu_le(want + 32, 8), blocked ? 42 : UINT64_C(0x0123456789abcdef));
        TU_EQ_U(tu_le(want + 40, 8), blocked ? 20 : 0);      /* capacity */
        TU_EQ_U(tu_le(want + 48, 8), blocked ? 2 : 3);       /* items */
        TU_EQ_U(tu_le(want + 56, 8), 128);                   /* payload offset */
        TU_EQ_U(tu_le(want + 64, 8), blocked ? 64 : 13);     /* payload bytes */

        bg_file_info info;
        TU_EQ_I(bg_file_inspect_buffer(want, want_len, 0, &info), BG_OK);
        TU_EQ_I(info.checksum_state, BG_CHECKSUM_OK);
        TU_EQ_U(info.checksum, tu_le(want + 120, 8));
        TU_EQ_U(info.bits, blocked ? 512 : 100);
        TU_EQ_U(info.file_bytes, want_len);
    }
}

/* The payload is a Redis bitmap: probe x of a standard filter
 * (<bloomgate/layout.h>) is bit 0x80 >> (x % 8) of payload byte x / 8, and
 * no other bit is set. */
static void payload_is_a_redis_bitmap(void **state)
{
    (void)state;
    bg_filter *f = tu_golden_filter(0);
    const uint64_t m = 100;
    uint8_t expect[13] = {0};
    const char *keys[] = {"alice", "bob", ""};
    for (int i = 0; i < 3; i++) {
        bg_hash h;
        TU_EQ_I(bg_hash_key(keys[i], strlen(keys[i]), UINT64_C(0x0123456789abcdef), &h), BG_OK);
        uint64_t pos[3];
        TU_EQ_I(bg_layout_positions(h, m, 3, pos), BG_OK);
        for (uint32_t j = 0; j < 3; j++)
            expect[pos[j] / 8] |= (uint8_t)(0x80u >> (pos[j] % 8));
    }
    assert_memory_equal(tu_golden_standard + 128, expect, sizeof expect);
    bg_filter_free(f);
}

/* ---- malformed input --------------------------------------------------- */

/* A copy of tu_golden_blocked with one header field changed and, if `fix`, the
 * checksum recomputed (so that only the field is wrong). */
static size_t mutate(uint8_t *out, unsigned off, uint64_t value, unsigned width)
{
    memcpy(out, tu_golden_blocked, sizeof tu_golden_blocked);
    tu_put_le(out + off, value, width);
    return sizeof tu_golden_blocked;
}
static void every_fault_has_its_status(void **state)
{
    (void)state;
    uint8_t buf[512];
    const size_t len = sizeof tu_golden_blocked;

    tu_ctx("every truncation");
    for (size_t n = 0; n < len; n++)
        TU_EQ_I(tu_decode_status(tu_golden_blocked, n, 0), BG_ETRUNC);
    TU_EQ_I(tu_decode_status(NULL, 0, 0), BG_ETRUNC);

    tu_ctx("trailing bytes");
    memcpy(buf, tu_golden_blocked, len);
    buf[len] = 0;
    TU_EQ_I(tu_decode_status(buf, len + 1, 0), BG_ETRAILING);
    TU_EQ_I(tu_decode_status(buf, len + 64, BG_FILE_NO_VERIFY), BG_ETRAILING);

    tu_ctx("bad magic");
    for (unsigned i = 0; i < 8; i++) {
        memcpy(buf, tu_golden_blocked, len);
        buf[i] ^= 0x20; /* e.g. a text-mode transfer: \r\n -> \n shifts, case */
        TU_EQ_I(tu_decode_status(buf, len, 0), BG_EBADMAGIC);
    }
    TU_EQ_I(tu_decode_status((const uint8_t *)"hello", 5, 0), BG_EBADMAGIC);
    TU_EQ_I(tu_decode_status((const uint8_t *)"\x89" "BG", 3, 0), BG_ETRUNC);

    tu_ctx("versions");
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 8, 0, 2), 0), BG_EVERSION);
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 8, 2, 2), 0), BG_EVERSION);
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 8, 0xffff, 2), 0), BG_EVERSION);
    /* A future version is refused as soon as it can be read, even when the
     * rest would not parse. */
    TU_EQ_I(tu_decode_status(buf, 9, 0), BG_ETRUNC);
    TU_EQ_I(tu_decode_status(buf, 10, 0), BG_EVERSION);

    tu_ctx("checksum");
    for (size_t i = 0; i < len; i++) {
        if (i >= 120 && i < 128)
            continue;
        memcpy(buf, tu_golden_blocked, len);
        buf[i] ^= 0x01;
        int rc = tu_decode_status(buf, len, 0);
        /* A flip in the magic, version or a structural field is caught
         * before the checksum; any other flip by the checksum. */
        TU_TRUE(rc == BG_ECHECKSUM || rc == BG_EBADMAGIC || rc == BG_EVERSION ||
                rc == BG_ECORRUPT || rc == BG_EVARIANT || rc == BG_ETRUNC || rc == BG_ETRAILING);
        if (i >= 128 || (i >= 32 && i < 56))  /* payload, seed, capacity, items */
            TU_EQ_I(rc, BG_ECHECKSUM);
        if (i >= 128)
            TU_EQ_I(tu_decode_status(buf, len, BG_FILE_NO_VERIFY), BG_OK);
    }
    memcpy(buf, tu_golden_blocked, len);
    buf[120] ^= 0x80;
    TU_EQ_I(tu_decode_status(buf, len, 0), BG_ECHECKSUM);
    TU_EQ_I(tu_decode_status(buf, len, BG_FILE_NO_VERIFY), BG_OK);

    tu_ctx("fields out of range");
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 10, 64, 2), 0), BG_ECORRUPT);   /* header bytes */
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 12, 0, 1), 0), BG_EVARIANT);    /* variant */
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 12, 9, 1), 0), BG_EVARIANT);
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 13, 2, 1), 0), BG_ECORRUPT);    /* hash */
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 14, 1, 2), 0), BG_ECORRUPT);    /* flags */
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 16, 0, 4), 0), BG_ECORRUPT);    /* k = 0 */
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 16, 9, 4), 0), BG_ECORRUPT);    /* blocked k > 8 */
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 20, 1, 4), 0), BG_ECORRUPT);    /* reserved */
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 100, 1, 1), 0), BG_ECORRUPT);   /* reserved */
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 24, 500, 8), 0), BG_ECORRUPT);  /* m % 512 */
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 24, 1024, 8), 0), BG_ECORRUPT); /* m vs payload */
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 56, 192, 8), 0), BG_ECORRUPT);  /* payload offset */
    TU_EQ_I(tu_decode_status(buf, mutate(buf, 64, 65, 8), 0), BG_ECORRUPT);   /* payload bytes */
    /* Absurd sizes: the header is consistent but the input does not hold
     * the payload it announces. */
    mutate(buf, 24, UINT64_C(1) << 40, 8);
    tu_put_le(buf + 64, UINT64_C(1) << 37, 8);
    TU_EQ_I(tu_decode_status(buf, len, 0), BG_ETRUNC);
    mutate(buf, 24, (UINT64_C(1) << 63) + 512, 8);
    tu_put_le(buf + 64, ((UINT64_C(1) << 63) + 512) / 8, 8);
    TU_EQ_I(tu_decode_status(buf, len, 0), BG_ETOOBIG);

    tu_ctx("bits past m");
    memcpy(buf, tu_golden_standard, sizeof tu_golden_standard);
    buf[sizeof tu_golden_standard - 1] |= 0x01; /* bit 103 of a 100-bit filter */
    TU_EQ_I(tu_decode_status(buf, sizeof tu_golden_standard, BG_FILE_NO_VERIFY), BG_ECORRUPT);
    buf[sizeof tu_golden_standard - 1] = 0x80; /* bit 96: inside m, fine */
    TU_EQ_I(tu_decode_status(buf, sizeof tu_golden_standard, BG_FILE_NO_VERIFY), BG_OK);

    tu_ctx("arguments");
    bg_filter *f;
    TU_EQ_I(bg_filter_decode(NULL, tu_golden_blocked, len, 0), BG_EINVAL);
    TU_EQ_I(bg_filter_decode(&f, NULL, 5, 0), BG_EINVAL);
    TU_EQ_I(bg_filter_decode(&f, tu_golden_blocked, len, 1u << 7), BG_EINVAL);
    bg_file_info info;
    TU_EQ_I(bg_file_inspect_buffer(tu_golden_blocked, len, 0, NULL), BG_EINVAL);
    TU_EQ_I(bg_file_inspect_buffer(tu_golden_blocked, len, 1u << 7, &info), BG_EINVAL);
    TU_EQ_I(bg_filter_encode(NULL, buf, sizeof buf, NULL), BG_EINVAL);
    TU_EQ_I(bg_filter_encoded_size(NULL, NULL), BG_EINVAL);
}

/* Nothing is allocated for a bad input, and a good one allocates no more than
 * its payload (plus the filter object and alignment slack). */
static void allocation_is_bounded_by_the_input(void **state)
{
    (void)state;
    uint8_t buf[512];
    TU_EQ_I(bg_set_allocator(&fa_allocator), BG_OK);
    fa_reset(0);
    mutate(buf, 24, UINT64_C(1) << 40, 8);
    tu_put_le(buf + 64, UINT64_C(1) << 37, 8);
    TU_EQ_I(tu_decode_status(buf, sizeof tu_golden_blocked, 0), BG_ETRUNC);
    memcpy(buf, tu_golden_blocked, sizeof tu_golden_blocked);
    buf[130] ^= 1;
    TU_EQ_I(tu_decode_status(buf, sizeof tu_golden_blocked, 0), BG_ECHECKSUM);
    TU_EQ_I(fa.calls, 0);

    bg_filter *f;
    TU_EQ_I(bg_filter_decode(&f, tu_golden_blocked, sizeof tu_golden_blocked, 0), BG_OK);
    TU_TRUE(fa.largest <= 64 + 64 + 64); /* payload + alignment + header */
    bg_filter_free(f);
    TU_EQ_I(fa.live, 0);

    /* Fail each allocation in turn: a clean BG_ENOMEM, nothing leaked. */
    for (long n = 1;; n++) {
        fa_reset(n);
        int rc = bg_filter_decode(&f, tu_golden_blocked, sizeof tu_golden_blocked, 0);
        if (fa.failed == 0) {
            TU_EQ_I(rc, BG_OK);
            bg_filter_free(f);
            break;
        }
        TU_EQ_I(rc, BG_ENOMEM);
        TU_TRUE(f == NULL);
        TU_EQ_I(fa.live, 0);
    }
    TU_EQ_I(fa.live, 0);
    TU_EQ_I(bg_set_allocator(NULL), BG_OK);
}

/* ---- files --------------------------------------------------------------- */

/* Save, load, map and decode give back the same filter, for every variant
 * and shape (odd m included), with no false negatives. */
static void round_trip(void **state)
{
    (void)state;
    tu_tmpdir d;
    tu_tmpdir_make(&d, "file");
    const bg_filter_options shapes[] = {
        {.variant = BG_VARIANT_STANDARD, .capacity = 20000, .error_rate = 0.01, .seed = 7},
        {.variant = BG_VARIANT_STANDARD, .bits = 1001, .hashes = 5, .seed = 8},
        {.variant = BG_VARIANT_STANDARD, .bits = 4096 * 8 - 128 * 8, .hashes = 2}, /* file = 4 KiB */
        {.variant = BG_VARIANT_BLOCKED, .capacity = 20000, .error_rate = 0.001, .seed = 9},
        {.variant = BG_VARIANT_BLOCKED, .capacity = 300000, .error_rate = 0.01},
    };
    tu_batch b;
    tu_batch_init(&b, 4000);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        tu_ctx("round trip shape %zu", s);
        bg_filter *f;
        TU_EQ_I(bg_filter_new(&f, &shapes[s]), BG_OK);
        tu_batch_fill(&b, 1, s, 0, b.cap);
        TU_TRUE(bg_filter_add_many(f, b.keys, b.lens, b.count, NULL) >= 0);
        const char *path = tu_tmp_file(&d, "f.bgf");
        TU_EQ_I(bg_filter_save(f, path), BG_OK);
        TU_EQ_I(tu_dir_entries(&d), 1); /* no temporary file left */

        bg_filter *loaded, *mapped, *unverified;
        TU_EQ_I(bg_filter_load(&loaded, path, 0), BG_OK);
        TU_EQ_I(bg_filter_map(&mapped, path, 0), BG_OK);
        TU_EQ_I(bg_filter_map(&unverified, path, BG_FILE_NO_VERIFY | BG_FILE_SINGLE_WRITER), BG_OK);
        bg_filter *all[] = {loaded, mapped, unverified};
        for (int i = 0; i < 3; i++) {
            tu_assert_same_filter(f, all[i]);
            TU_EQ_U(bg_filter_items(all[i]), bg_filter_items(f));
            TU_EQ_I(bg_filter_contains_many(all[i], b.keys, b.lens, b.count, NULL), (int64_t)b.count);
            bg_filter_stats s1, s2;
            TU_EQ_I(bg_filter_stats_get(f, &s1), BG_OK);
            TU_EQ_I(bg_filter_stats_get(all[i], &s2), BG_OK);
            TU_EQ_U(s1.bits_set, s2.bits_set);
            TU_EQ_U(s1.capacity, s2.capacity);
        }
        TU_TRUE(!bg_filter_read_only(loaded));
        TU_TRUE(bg_filter_read_only(mapped));

        /* The file and bg_filter_encode agree. */
        bg_file_info info;
        TU_EQ_I(bg_file_inspect(path, 0, &info), BG_OK);
        TU_EQ_I(info.checksum_state, BG_CHECKSUM_OK);
        TU_EQ_I(bg_file_inspect(path, BG_FILE_NO_VERIFY, &info), BG_OK);
        TU_EQ_I(info.checksum_state, BG_CHECKSUM_SKIPPED);
        uint64_t size;
        TU_EQ_I(bg_filter_encoded_size(f, &size), BG_OK);
        TU_EQ_U(info.file_bytes, size);

        /* A loaded filter is writable; a mapped one is not, but merges into
         * writable ones. */
        TU_EQ_I(bg_filter_add(loaded, "new key", 7), BG_OK);
        TU_EQ_I(bg_filter_add(mapped, "new key", 7), BG_EREADONLY);
        TU_EQ_I(bg_filter_test_and_add(mapped, "x", 1), BG_EREADONLY);
        TU_EQ_I(bg_filter_add_many(mapped, b.keys, b.lens, 1, NULL), BG_EREADONLY);
        bg_hash h = {1, 2};
        TU_EQ_I(bg_filter_add_hashes(mapped, &h, 1, NULL), BG_EREADONLY);
        TU_EQ_I(bg_filter_clear(mapped), BG_EREADONLY);
        TU_EQ_I(bg_filter_union(mapped, loaded), BG_EREADONLY);
        TU_EQ_I(bg_filter_intersect(mapped, loaded), BG_EREADONLY);
        TU_EQ_I(bg_filter_union(loaded, mapped), BG_OK);
        TU_EQ_I(bg_filter_contains(mapped, "new key", 7) >= 0, 1);

        /* Saving a mapped filter over its own file is safe: the mapping keeps
         * the old file's pages. */
        TU_EQ_I(bg_filter_save(mapped, path), BG_OK);
        bg_filter *again;
        TU_EQ_I(bg_filter_load(&again, path, 0), BG_OK);
        tu_assert_same_filter(f, again);
        tu_assert_same_filter(mapped, again);

        bg_filter_free(again);
        bg_filter_free(unverified);
        bg_filter_free(mapped);
        bg_filter_free(loaded);
        bg_filter_free(f);
        TU_EQ_I(unlink(path), 0);
    }
    tu_batch_free(&b);
    tu_tmpdir_remove(&d);
}

/* A damaged file is refused by every path-based call, and the damage is
 * named; with BG_FILE_NO_VERIFY a payload flip goes unnoticed by design. */
static void damaged_files(void **state)
{
    (void)state;
    tu_tmpdir d;
    tu_tmpdir_make(&d, "file");
    const char *path = tu_tmp_file(&d, "damaged.bgf");
    uint8_t buf[512];
    struct {
        size_t len;
        int want;
        int want_no_verify;
    } cases[] = {
        {sizeof tu_golden_blocked, BG_ECHECKSUM, BG_OK},     /* payload byte flipped */
        {sizeof tu_golden_blocked - 1, BG_ETRUNC, BG_ETRUNC},
        {sizeof tu_golden_blocked + 1, BG_ETRAILING, BG_ETRAILING},
        {0, BG_ETRUNC, BG_ETRUNC},
        {5, BG_ETRUNC, BG_ETRUNC},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_ctx("damaged case %zu", i);
        memset(buf, 0, sizeof buf);
        memcpy(buf, tu_golden_blocked, sizeof tu_golden_blocked);
        buf[150] ^= 0x10;
        FILE *fp = fopen(path, "wb");
        assert_non_null(fp);
        TU_EQ_U(fwrite(buf, 1, cases[i].len, fp), cases[i].len);
        fclose(fp);
        bg_filter *f = (bg_filter *)&f;
        TU_EQ_I(bg_filter_load(&f, path, 0), cases[i].want);
        TU_TRUE(f == NULL);
        TU_EQ_I(bg_filter_map(&f, path, 0), cases[i].want);
        TU_TRUE(f == NULL);
        bg_file_info info;
        TU_EQ_I(bg_file_inspect(path, 0, &info), cases[i].want);
        if (cases[i].want == BG_ECHECKSUM) {
            TU_EQ_I(info.checksum_state, BG_CHECKSUM_MISMATCH);
            TU_EQ_U(info.bits, 512); /* the header is still reported */
        }
        TU_EQ_I(bg_filter_load(&f, path, BG_FILE_NO_VERIFY), cases[i].want_no_verify);
        bg_filter_free(f == (bg_filter *)&f ? NULL : f);
        TU_EQ_I(bg_filter_map(&f, path, BG_FILE_NO_VERIFY), cases[i].want_no_verify);
        bg_filter_free(f);
    }
    tu_tmpdir_remove(&d);
}

/* A target path near PATH_MAX: the temporary file beside it would have a
 * full path 22 bytes longer, past PATH_MAX; it is made relative to the
 * directory, so the save works (and leaves no temporary file). */
static void path_near_path_max(void **state)
{
    (void)state;
    tu_tmpdir d;
    tu_tmpdir_make(&d, "file");
    char path[PATH_MAX];
    size_t len = (size_t)snprintf(path, sizeof path, "%s", d.path);
    /* Directories of up to 250 bytes, then a 200-byte name: the full path
     * is PATH_MAX - 2 bytes, the temporary one's would be PATH_MAX + 20. */
    const size_t name_len = 200, full = PATH_MAX - 2;
    int depth = 0;
    while (len + 1 + name_len < full) {
        size_t c = full - len - 1 - name_len - 1;
        c = c > 250 ? 250 : c;
        path[len++] = '/';
        memset(path + len, 'd', c);
        len += c;
        path[len] = '\0';
        TU_EQ_I(mkdir(path, 0700), 0);
        depth++;
    }
    char dir[PATH_MAX];
    memcpy(dir, path, len + 1);
    path[len++] = '/';
    memset(path + len, 'f', name_len);
    len += name_len;
    path[len] = '\0';
    TU_EQ_U(strlen(path), full);

    bg_filter *f = tu_golden_filter(1), *g = NULL;
    TU_EQ_I(bg_filter_save(f, path), BG_OK);
    TU_EQ_I(bg_filter_save(f, path), BG_OK); /* over the file it made */
    TU_EQ_I(bg_filter_load(&g, path, 0), BG_OK);
    TU_EQ_I(bg_filter_contains(g, "alice", 5), 1);
    TU_EQ_I(bg_filter_contains(g, "bob", 3), 1);
    bg_filter_free(g);
    DIR *dp = opendir(dir);
    assert_non_null(dp);
    int entries = 0;
    for (struct dirent *e; (e = readdir(dp)) != NULL;)
        entries += e->d_name[0] != '.';
    closedir(dp);
    TU_EQ_I(entries, 1);
    TU_EQ_I(unlink(path), 0);
    for (; depth > 0; depth--) {
        TU_EQ_I(rmdir(dir), 0);
        *strrchr(dir, '/') = '\0';
    }
    bg_filter_free(f);
    tu_tmpdir_remove(&d);
}

static void io_errors(void **state)
{
    (void)state;
    tu_tmpdir d;
    tu_tmpdir_make(&d, "file");
    bg_filter *f = tu_golden_filter(1), *g;

    tu_ctx("missing file");
    errno = 0;
    TU_EQ_I(bg_filter_load(&g, tu_tmp_file(&d, "missing.bgf"), 0), BG_EIO);
    TU_EQ_I(errno, ENOENT);
    errno = 0;
    TU_EQ_I(bg_filter_map(&g, tu_tmp_file(&d, "missing.bgf"), 0), BG_EIO);
    TU_EQ_I(errno, ENOENT);
    bg_file_info info;
    TU_EQ_I(bg_file_inspect(tu_tmp_file(&d, "missing.bgf"), 0, &info), BG_EIO);

    tu_ctx("a directory");
    errno = 0;
    TU_EQ_I(bg_filter_load(&g, d.path, 0), BG_EIO);
    TU_EQ_I(errno, EISDIR);

    tu_ctx("save into a missing directory");
    errno = 0;
    TU_EQ_I(bg_filter_save(f, tu_tmp_file(&d, "no/such/dir.bgf")), BG_EIO);
    TU_EQ_I(errno, ENOENT);
    TU_EQ_I(tu_dir_entries(&d), 0);

    tu_ctx("save over a directory: refused, the directory stays");
    TU_EQ_I(mkdir(tu_tmp_file(&d, "sub"), 0700), 0);
    TU_EQ_I(bg_filter_save(f, tu_tmp_file(&d, "sub")), BG_EIO);
    TU_EQ_I(tu_dir_entries(&d), 1); /* "sub", and no temporary file */

    tu_ctx("save over a FIFO: refused (ESPIPE), the FIFO stays");
    const char *fifo = tu_tmp_file(&d, "fifo");
    TU_EQ_I(mkfifo(fifo, 0600), 0);
    errno = 0;
    TU_EQ_I(bg_filter_save(f, fifo), BG_EIO);
    TU_EQ_I(errno, ESPIPE);
    struct stat fst;
    TU_EQ_I(lstat(fifo, &fst), 0);
    assert_true(S_ISFIFO(fst.st_mode));
    TU_EQ_I(tu_dir_entries(&d), 2); /* "sub", "fifo", no temporary file */
    TU_EQ_I(unlink(fifo), 0);

    tu_ctx("a name of NAME_MAX bytes: the temporary name is cut short");
    char name[NAME_MAX + 1];
    memset(name, 'n', NAME_MAX);
    name[NAME_MAX] = '\0';
    TU_EQ_I(bg_filter_save(f, tu_tmp_file(&d, name)), BG_OK);
    TU_EQ_I(bg_filter_save(f, tu_tmp_file(&d, name)), BG_OK);
    TU_EQ_I(bg_filter_load(&g, tu_tmp_file(&d, name), 0), BG_OK);
    tu_assert_same_filter(f, g);
    bg_filter_free(g);
    TU_EQ_I(unlink(tu_tmp_file(&d, name)), 0);

    if (geteuid() == 0) {
        tu_ctx("a replaced file keeps its owner and group (as root)");
        const char *owned = tu_tmp_file(&d, "owned.bgf");
        TU_EQ_I(bg_filter_save(f, owned), BG_OK);
        TU_EQ_I(chown(owned, 65534, 65534), 0);
        TU_EQ_I(chmod(owned, 0640), 0);
        TU_EQ_I(bg_filter_save(f, owned), BG_OK);
        TU_EQ_I(stat(owned, &fst), 0);
        TU_EQ_U(fst.st_uid, 65534);
        TU_EQ_U(fst.st_gid, 65534);
        TU_EQ_U(fst.st_mode & 07777, 0640);
        TU_EQ_I(unlink(owned), 0);
    }

    if (geteuid() == 0) {
        tu_ctx("a directory its saver may write but not read: the save is complete");
        const char *wo = tu_tmp_file(&d, "write-only");
        TU_EQ_I(mkdir(wo, 0700), 0);
        TU_EQ_I(chown(wo, 65534, 65534), 0);
        TU_EQ_I(chmod(wo, 0333), 0);
        char target[600];
        snprintf(target, sizeof target, "%s/f.bgf", wo);
        TU_EQ_I(chmod(d.path, 0711), 0); /* nobody may pass through */
        pid_t pid = fork();
        TU_TRUE(pid >= 0);
        if (pid == 0) /* as nobody: open(dir) for its fsync gets EACCES */
            _exit(setgid(65534) != 0 || setuid(65534) != 0 ? 2
                  : bg_filter_save(f, target) == BG_OK   ? 0
                                                         : 1);
        int status = 0;
        TU_EQ_I(waitpid(pid, &status, 0), pid);
        TU_TRUE(WIFEXITED(status));
        TU_EQ_I(chmod(d.path, 0700), 0);
        TU_EQ_I(WEXITSTATUS(status), 0);
        TU_EQ_I(bg_filter_load(&g, target, 0), BG_OK);
        tu_assert_same_filter(f, g);
        bg_filter_free(g);
        TU_EQ_I(unlink(target), 0);
        TU_EQ_I(rmdir(wo), 0);
    }

    tu_ctx("modes");
    mode_t old = umask(022);
    const char *path = tu_tmp_file(&d, "mode.bgf");
    TU_EQ_I(bg_filter_save(f, path), BG_OK);
    struct stat st;
    TU_EQ_I(stat(path, &st), 0);
    TU_EQ_U(st.st_mode & 0777, 0644);
    TU_EQ_I(chmod(path, 0600), 0);
    TU_EQ_I(bg_filter_save(f, path), BG_OK);
    TU_EQ_I(stat(path, &st), 0);
    TU_EQ_U(st.st_mode & 0777, 0600); /* a replaced file keeps its mode */

    tu_ctx("a symbolic link");
    /* Replaced by a regular file with its destination's mode; the
     * destination keeps its old bytes (file.h, CRASH SAFETY). */
    const char *link_path = tu_tmp_file(&d, "link.bgf");
    TU_EQ_I(symlink(path, link_path), 0);
    TU_EQ_I(chmod(path, 0640), 0);
    TU_EQ_I(stat(path, &st), 0);
    off_t dest_size = st.st_size;
    struct timespec dest_mtime = st.st_mtim;
    bg_filter *h = tu_golden_filter(1);
    TU_EQ_I(bg_filter_save(h, link_path), BG_OK);
    TU_EQ_I(lstat(link_path, &st), 0);
    TU_TRUE(S_ISREG(st.st_mode));
    TU_EQ_U(st.st_mode & 0777, 0640);
    TU_EQ_I(bg_filter_load(&g, link_path, 0), BG_OK);
    tu_assert_same_filter(h, g);
    bg_filter_free(g);
    TU_EQ_I(stat(path, &st), 0);
    TU_EQ_I(st.st_size, dest_size);
    TU_TRUE(st.st_mtim.tv_sec == dest_mtime.tv_sec && st.st_mtim.tv_nsec == dest_mtime.tv_nsec);
    bg_filter_free(h);
    umask(old);

    tu_ctx("a relative path");
    char cwd[512];
    assert_non_null(getcwd(cwd, sizeof cwd));
    TU_EQ_I(chdir(d.path), 0);
    TU_EQ_I(bg_filter_save(f, "relative.bgf"), BG_OK);
    TU_EQ_I(bg_filter_load(&g, "relative.bgf", 0), BG_OK);
    tu_assert_same_filter(f, g);
    bg_filter_free(g);
    TU_EQ_I(chdir(cwd), 0);

    tu_ctx("arguments");
    TU_EQ_I(bg_filter_save(NULL, path), BG_EINVAL);
    TU_EQ_I(bg_filter_save(f, NULL), BG_EINVAL);
    TU_EQ_I(bg_filter_save(f, ""), BG_EINVAL);
    TU_EQ_I(bg_filter_load(NULL, path, 0), BG_EINVAL);
    TU_EQ_I(bg_filter_load(&g, NULL, 0), BG_EINVAL);
    TU_EQ_I(bg_filter_load(&g, path, 1u << 9), BG_EINVAL);
    TU_EQ_I(bg_filter_map(&g, NULL, 0), BG_EINVAL);
    TU_EQ_I(bg_file_inspect(NULL, 0, &info), BG_EINVAL);
    TU_TRUE(!bg_filter_read_only(NULL));

    bg_filter_free(f);
    tu_tmpdir_remove(&d);
}

/* The payload is read in 4 MiB chunks and written in 1 MiB ones: a filter
 * spanning several chunks, with a partial last one, round-trips. */
static void large_file(void **state)
{
    (void)state;
    tu_tmpdir d;
    tu_tmpdir_make(&d, "file");
    bg_filter *f;
    bg_filter_options o = {.variant = BG_VARIANT_STANDARD, .bits = UINT64_C(9) << 23 | 7, .hashes = 3};
    TU_EQ_I(bg_filter_new(&f, &o), BG_OK);
    tu_batch b;
    tu_batch_init(&b, 10000);
    tu_batch_fill(&b, 0, 99, 0, b.cap);
    TU_TRUE(bg_filter_add_many(f, b.keys, b.lens, b.count, NULL) > 0);
    const char *path = tu_tmp_file(&d, "large.bgf");
    TU_EQ_I(bg_filter_save(f, path), BG_OK);
    bg_filter *g, *h;
    TU_EQ_I(bg_filter_load(&g, path, 0), BG_OK);
    TU_EQ_I(bg_filter_map(&h, path, 0), BG_OK);
    tu_assert_same_filter(f, g);
    tu_assert_same_filter(f, h);
    TU_EQ_I(bg_filter_contains_many(h, b.keys, b.lens, b.count, NULL), (int64_t)b.count);
    bg_filter_free(h);
    bg_filter_free(g);
    bg_filter_free(f);
    tu_batch_free(&b);
    tu_tmpdir_remove(&d);
}
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(golden_bytes),
        cmocka_unit_test(payload_is_a_redis_bitmap),
        cmocka_unit_test(every_fault_has_its_status),
        cmocka_unit_test(allocation_is_bounded_by_the_input),
        cmocka_unit_test(round_trip),
        cmocka_unit_test(damaged_files),
        cmocka_unit_test(io_errors),
        cmocka_unit_test(path_near_path_max),
        cmocka_unit_test(large_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
