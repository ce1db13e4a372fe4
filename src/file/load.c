/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading filter files from a path: into memory (bg_filter_load), by mmap
 * (bg_filter_map), or only their header (bg_file_inspect). Both versions go
 * through one plan (decode.c): validated before anything is allocated. */
#define _GNU_SOURCE /* O_CLOEXEC, madvise */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc_internal.h"
#include "core/hash_inline.h"
#include "file/format.h"

/* An open file, validated: its plan, and the source that reads it. */
typedef struct opened {
    bg__file_src src;
    bg__file_plan plan;
} opened;

static void close_keep_errno(int fd)
{
    int saved = errno;
    close(fd);
    errno = saved;
}

/* Opens `path` and validates its structure (bg__file_plan_read). On error
 * the fd is closed (errno kept for BG_EIO). */
static int open_and_plan(const char *path, opened *o)
{
    /* O_NONBLOCK: opening a FIFO would otherwise wait for a writer; the
     * fstat below refuses it at once. No effect on a regular file. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return BG_EIO;
    o->src = (bg__file_src){.fd = fd};
    struct stat st;
    int rc = BG_EIO;
    if (fstat(fd, &st) != 0)
        goto fail;
    if (!S_ISREG(st.st_mode)) {
        /* A pipe, socket or device: the loader needs a length and pread. */
        errno = S_ISDIR(st.st_mode) ? EISDIR : ESPIPE;
        goto fail;
    }
    o->src.len = (uint64_t)st.st_size;
    if ((rc = bg__file_plan_read(&o->src, &o->plan)) != BG_OK)
        goto fail;
    return BG_OK;
fail:
    close_keep_errno(fd);
    o->src.fd = -1;
    return rc;
}

/* Reads a part's payload straight into its array in 4 MiB chunks, hashing
 * each chunk while it is still in cache, then checks its last byte again:
 * the header was checked before the payload was read, and the file could
 * have been rewritten in place meanwhile (the checksum catches that too,
 * when verifying). */
static int read_payload(const opened *o, const bg__file_part *pt, bg_filter *f, XXH3_state_t *st)
{
    uint8_t *dst = (uint8_t *)f->words;
    const uint64_t chunk = UINT64_C(4) << 20;
    for (uint64_t at = 0; at < pt->payload_bytes; at += chunk) {
        size_t n = (size_t)(pt->payload_bytes - at < chunk ? pt->payload_bytes - at : chunk);
        int rc = bg__file_src_read(&o->src, pt->payload_offset + at, dst + at, n);
        if (rc != BG_OK)
            return rc;
        if (st)
            XXH3_64bits_update(st, dst + at, n);
    }
    if (!bg__file_tail_ok(bg__file_payload_bits(pt->shape.variant, pt->shape.m),
                          dst[pt->payload_bytes - 1]))
        return BG_ECORRUPT;
    return BG_OK;
}

/* Version 2: every layer allocated first (the plan bounds their sizes by
 * the file's), then read in file order, hashing the layer headers as
 * validated and the padding as the zeros it was checked to be. */
static int load_v2(opened *o, bool verify, bool single_writer, bg_filter **out)
{
    bg__file_plan *plan = &o->plan;
    plan->params.single_writer = single_writer;
    bg_filter *f;
    int rc = bg__scalable_shell(&f, &plan->params);
    if (rc != BG_OK)
        return rc;
    for (uint32_t i = 0; i < plan->parts; i++) {
        plan->part[i].shape.single_writer = single_writer;
        bg_filter *layer;
        if ((rc = bg__filter_alloc(&layer, &plan->part[i].shape)) != BG_OK)
            goto fail;
        if ((rc = bg__scalable_push(f, layer)) != BG_OK) {
            bg_filter_free(layer);
            goto fail;
        }
    }
    XXH3_state_t st;
    if (verify) {
        XXH3_INITSTATE(&st);
        XXH3_64bits_reset(&st);
        XXH3_64bits_update(&st, plan->head, BG__OFF_CHECKSUM);
    }
    static const uint8_t zeros[BG__V2_ALIGN];
    for (uint32_t i = 0; i < plan->parts; i++) {
        if (verify)
            XXH3_64bits_update(&st, plan->part_head[i], BG_FILE_HEADER_BYTES);
        if ((rc = read_payload(o, &plan->part[i], bg__scalable_layer(f, i), verify ? &st : NULL)) !=
            BG_OK)
            goto fail;
        if (verify)
            XXH3_64bits_update(&st, zeros, (size_t)plan->part[i].pad_bytes);
    }
    if (verify && XXH3_64bits_digest(&st) != plan->info.checksum) {
        rc = BG_ECHECKSUM;
        goto fail;
    }
    *out = f;
    return BG_OK;
fail:
    bg_filter_free(f);
    return rc;
}

static int load_v1(opened *o, bool verify, bool single_writer, bg_filter **out)
{
    const bg__file_part *pt = &o->plan.part[0];
    bg__filter_shape shape = pt->shape;
    shape.single_writer = single_writer;
    bg_filter *f;
    int rc = bg__filter_alloc(&f, &shape);
    if (rc != BG_OK)
        return rc;
    XXH3_state_t st;
    if (verify) {
        XXH3_INITSTATE(&st);
        XXH3_64bits_reset(&st);
        XXH3_64bits_update(&st, o->plan.head, BG__OFF_CHECKSUM);
    }
    if ((rc = read_payload(o, pt, f, verify ? &st : NULL)) == BG_OK && verify &&
        XXH3_64bits_digest(&st) != o->plan.info.checksum)
        rc = BG_ECHECKSUM;
    if (rc != BG_OK) {
        bg_filter_free(f);
        return rc;
    }
    *out = f;
    return BG_OK;
}

int bg_filter_load(bg_filter **out, const char *path, unsigned flags)
{
    if (out == NULL)
        return BG_EINVAL;
    *out = NULL;
    if (path == NULL || !bg__file_flags_ok(flags))
        return BG_EINVAL;
    opened o;
    int rc = open_and_plan(path, &o);
    if (rc != BG_OK)
        return rc;
    bool verify = !(flags & BG_FILE_NO_VERIFY);
    bool single_writer = (flags & BG_FILE_SINGLE_WRITER) != 0;
    if (o.plan.info.version == BG__FILE_V2 || o.plan.info.version == BG__FILE_V4)
        rc = load_v2(&o, verify, single_writer, out);
    else if (o.plan.info.version == BG__FILE_V3)
        rc = bg__rb_load(&o.src, &o.plan, verify, single_writer, out);
    else
        rc = load_v1(&o, verify, single_writer, out);
    close_keep_errno(o.src.fd);
    return rc;
}

/* Maps the whole file read-only. Version 1: the array is read as 64-bit
 * words, and when the payload's length is not a multiple of 8 its last word
 * runs up to 7 bytes past the end of the file. Those bytes are in the file's
 * last page (the file's length is then not a multiple of 8, so not of the
 * page size), which the kernel maps and fills with zeros past the end: no
 * SIGBUS. Versions 2 and 3: every layer's (link's) array ends inside its padding, so the
 * file's own length is mapped. */
static int map_file(opened *o, void **map, size_t *map_len)
{
    const bg__file_plan *plan = &o->plan;
    uint64_t len = plan->info.version != BG__FILE_V1
                       ? o->src.len
                       : plan->part[0].payload_offset + bg__filter_array_bytes(&plan->part[0].shape);
    if (len > SIZE_MAX) {
        errno = EFBIG;
        return BG_EIO;
    }
    void *p = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, o->src.fd, 0);
    if (p == MAP_FAILED)
        return BG_EIO;
    *map = p;
    *map_len = (size_t)len;
    return BG_OK;
}

/* Checks a mapped image's checksum, reading it front to back. */
static int verify_mapped(uint8_t *map, size_t map_len, uint64_t file_len, bg_file_info *info)
{
    (void)madvise(map, map_len, MADV_SEQUENTIAL);
    bool ok = bg__file_checksum(map, file_len) == info->checksum;
    info->checksum_state = ok ? BG_CHECKSUM_OK : BG_CHECKSUM_MISMATCH;
    return ok ? BG_OK : BG_ECHECKSUM;
}

/* A read-only scalable filter whose layers lie in the mapping, which it owns
 * from now on (also on failure). */
static int wrap_v2(bg__file_plan *plan, bool single_writer, uint8_t *map, size_t map_len,
                   bg_filter **out)
{
    plan->params.single_writer = single_writer;
    bg_filter *f;
    int rc = bg__scalable_shell_mapped(&f, &plan->params, map, map_len);
    if (rc != BG_OK) {
        bg__unmap(map, map_len);
        return rc;
    }
    for (uint32_t i = 0; i < plan->parts; i++) {
        bg__file_part *pt = &plan->part[i];
        pt->shape.single_writer = single_writer;
        if ((rc = bg__scalable_push_mapped(f, &pt->shape, map + pt->payload_offset)) != BG_OK) {
            bg_filter_free(f);
            return rc;
        }
    }
    *out = f;
    return BG_OK;
}

int bg_filter_map(bg_filter **out, const char *path, unsigned flags)
{
    if (out == NULL)
        return BG_EINVAL;
    *out = NULL;
    if (path == NULL || !bg__file_flags_ok(flags))
        return BG_EINVAL;
    opened o;
    int rc = open_and_plan(path, &o);
    if (rc != BG_OK)
        return rc;
    void *map;
    size_t map_len;
    rc = map_file(&o, &map, &map_len);
    close_keep_errno(o.src.fd); /* the mapping keeps the file */
    if (rc != BG_OK)
        return rc;
    if (!(flags & BG_FILE_NO_VERIFY) &&
        (rc = verify_mapped(map, map_len, o.src.len, &o.plan.info)) != BG_OK) {
        munmap(map, map_len);
        return rc;
    }
    /* Probes land anywhere: read-ahead would only fetch pages no probe
     * wants. */
    (void)madvise(map, map_len, MADV_RANDOM);
    bool single_writer = (flags & BG_FILE_SINGLE_WRITER) != 0;
    if (o.plan.info.version == BG__FILE_V2 || o.plan.info.version == BG__FILE_V4)
        return wrap_v2(&o.plan, single_writer, map, map_len, out);
    if (o.plan.info.version == BG__FILE_V3)
        return bg__rb_wrap(&o.plan, map, map_len, out);
    bg__filter_shape shape = o.plan.part[0].shape;
    shape.single_writer = single_writer;
    return bg__filter_wrap_mapping(out, &shape, (uint8_t *)map + o.plan.part[0].payload_offset,
                                   map, map_len);
}

bool bg_filter_read_only(const bg_filter *f)
{
    return f != NULL && f->read_only;
}

int bg_file_inspect(const char *path, unsigned flags, bg_file_info *out)
{
    if (path == NULL || out == NULL || !bg__file_flags_ok(flags))
        return BG_EINVAL;
    opened o;
    int rc = open_and_plan(path, &o);
    if (rc != BG_OK)
        return rc;
    *out = o.plan.info;
    if (flags & BG_FILE_NO_VERIFY) {
        close(o.src.fd);
        return BG_OK;
    }
    void *map;
    size_t map_len;
    rc = map_file(&o, &map, &map_len);
    close_keep_errno(o.src.fd);
    if (rc != BG_OK)
        return rc;
    rc = verify_mapped(map, map_len, o.src.len, out);
    munmap(map, map_len);
    return rc;
}
