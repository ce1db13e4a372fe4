/* Reading filter files from a path: into memory (bg_filter_load), by mmap
 * (bg_filter_map), or only their header (bg_file_inspect). */
#define _GNU_SOURCE /* O_CLOEXEC, pread, madvise */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hash_inline.h"
#include "file/format.h"

/* Reads exactly n bytes at `off`, retrying short reads and EINTR. BG_OK,
 * BG_ETRUNC (end of file first: it shrank since fstat) or BG_EIO. */
static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return BG_EIO;
        if (r == 0)
            return BG_ETRUNC;
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return BG_OK;
}

/* An open file, its length, and its validated header. */
typedef struct opened {
    int fd;
    uint64_t len;
    bg_file_info info;
    bg__filter_shape shape;
} opened;

/* Opens `path` and validates its header and the payload's last byte. On
 * error the fd is closed (errno kept for BG_EIO). */
static int open_and_parse(const char *path, opened *o)
{
    /* O_NONBLOCK: opening a FIFO would otherwise wait for a writer; the
     * fstat below refuses it at once. No effect on a regular file. */
    o->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (o->fd < 0)
        return BG_EIO;
    struct stat st;
    int rc = BG_EIO;
    if (fstat(o->fd, &st) != 0)
        goto fail;
    if (!S_ISREG(st.st_mode)) {
        /* A pipe, socket or device: the loader needs a length and pread. */
        errno = S_ISDIR(st.st_mode) ? EISDIR : ESPIPE;
        goto fail;
    }
    o->len = (uint64_t)st.st_size;
    uint8_t head[BG_FILE_HEADER_BYTES];
    size_t head_len = o->len < sizeof head ? (size_t)o->len : sizeof head;
    if ((rc = read_at(o->fd, head, head_len, 0)) != BG_OK)
        goto fail;
    if ((rc = bg__file_header_parse(head, head_len, o->len, &o->info, &o->shape)) != BG_OK)
        goto fail;
    uint8_t last;
    if ((rc = read_at(o->fd, &last, 1, o->len - 1)) != BG_OK)
        goto fail;
    if (!bg__file_tail_ok(o->info.bits, last)) {
        rc = BG_ECORRUPT;
        goto fail;
    }
    return BG_OK;
fail:;
    int saved = errno;
    close(o->fd);
    o->fd = -1;
    errno = saved;
    return rc;
}

static void close_keep_errno(int fd)
{
    int saved = errno;
    close(fd);
    errno = saved;
}

int bg_filter_load(bg_filter **out, const char *path, unsigned flags)
{
    if (out == NULL)
        return BG_EINVAL;
    *out = NULL;
    if (path == NULL || !bg__file_flags_ok(flags))
        return BG_EINVAL;
    opened o;
    int rc = open_and_parse(path, &o);
    if (rc != BG_OK)
        return rc;
    o.shape.single_writer = (flags & BG_FILE_SINGLE_WRITER) != 0;
    bg_filter *f;
    if ((rc = bg__filter_alloc(&f, &o.shape)) != BG_OK) {
        close_keep_errno(o.fd);
        return rc;
    }
    /* Read straight into the bit array, and hash each chunk while it is
     * still in cache. */
    uint8_t head[BG_FILE_HEADER_BYTES];
    bool verify = !(flags & BG_FILE_NO_VERIFY);
    XXH3_state_t st;
    if (verify) {
        if ((rc = read_at(o.fd, head, sizeof head, 0)) != BG_OK)
            goto fail;
        XXH3_INITSTATE(&st);
        XXH3_64bits_reset(&st);
        XXH3_64bits_update(&st, head, BG__OFF_CHECKSUM);
    }
    uint8_t *dst = (uint8_t *)f->words;
    const uint64_t chunk = UINT64_C(4) << 20;
    for (uint64_t at = 0; at < o.info.payload_bytes; at += chunk) {
        size_t n = (size_t)(o.info.payload_bytes - at < chunk ? o.info.payload_bytes - at : chunk);
        if ((rc = read_at(o.fd, dst + at, n, o.info.payload_offset + at)) != BG_OK)
            goto fail;
        if (verify)
            XXH3_64bits_update(&st, dst + at, n);
    }
    /* The header was checked before the payload was read; both come from
     * the same file, but it could have been rewritten in place meanwhile:
     * the checksum catches that, and without it the tail is checked again. */
    if (!bg__file_tail_ok(o.info.bits, dst[o.info.payload_bytes - 1])) {
        rc = BG_ECORRUPT;
        goto fail;
    }
    if (verify && XXH3_64bits_digest(&st) != o.info.checksum) {
        rc = BG_ECHECKSUM;
        goto fail;
    }
    close(o.fd);
    *out = f;
    return BG_OK;
fail:
    close_keep_errno(o.fd);
    bg_filter_free(f);
    return rc;
}

/* Maps the whole file read-only. The bit array is read as 64-bit words, and
 * when ceil(m / 8) is not a multiple of 8 its last word runs up to 7 bytes
 * past the end of the file. Those bytes are in the file's last page (the
 * file's length is then not a multiple of 8, so not of the page size), which
 * the kernel maps and fills with zeros past the end: no SIGBUS. */
static int map_file(opened *o, void **map, size_t *map_len)
{
    uint64_t len = o->info.payload_offset + bg__filter_array_bytes(&o->shape);
    if (len > SIZE_MAX) {
        errno = EFBIG;
        return BG_EIO;
    }
    void *p = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, o->fd, 0);
    if (p == MAP_FAILED)
        return BG_EIO;
    *map = p;
    *map_len = (size_t)len;
    return BG_OK;
}

/* Checks a mapped image's checksum, reading it front to back. */
static int verify_mapped(uint8_t *map, size_t map_len, bg_file_info *info)
{
    (void)madvise(map, map_len, MADV_SEQUENTIAL);
    bool ok = bg__file_checksum(map, info->payload_bytes) == info->checksum;
    info->checksum_status = ok ? BG_OK : BG_ECHECKSUM;
    return info->checksum_status;
}

int bg_filter_map(bg_filter **out, const char *path, unsigned flags)
{
    if (out == NULL)
        return BG_EINVAL;
    *out = NULL;
    if (path == NULL || !bg__file_flags_ok(flags))
        return BG_EINVAL;
    opened o;
    int rc = open_and_parse(path, &o);
    if (rc != BG_OK)
        return rc;
    void *map;
    size_t map_len;
    rc = map_file(&o, &map, &map_len);
    close_keep_errno(o.fd); /* the mapping keeps the file */
    if (rc != BG_OK)
        return rc;
    if (!(flags & BG_FILE_NO_VERIFY) && (rc = verify_mapped(map, map_len, &o.info)) != BG_OK) {
        munmap(map, map_len);
        return rc;
    }
    /* Probes land anywhere: read-ahead would only fetch pages no probe
     * wants. */
    (void)madvise(map, map_len, MADV_RANDOM);
    o.shape.single_writer = (flags & BG_FILE_SINGLE_WRITER) != 0;
    return bg__filter_wrap_mapping(out, &o.shape, (uint8_t *)map + o.info.payload_offset, map,
                                   map_len);
}

int bg_filter_read_only(const bg_filter *f)
{
    return f == NULL ? BG_EINVAL : f->read_only ? 1 : 0;
}

int bg_file_inspect(const char *path, unsigned flags, bg_file_info *out)
{
    if (path == NULL || out == NULL || !bg__file_flags_ok(flags))
        return BG_EINVAL;
    opened o;
    int rc = open_and_parse(path, &o);
    if (rc != BG_OK)
        return rc;
    *out = o.info;
    if (flags & BG_FILE_NO_VERIFY) {
        close(o.fd);
        return BG_OK;
    }
    void *map;
    size_t map_len;
    rc = map_file(&o, &map, &map_len);
    close_keep_errno(o.fd);
    if (rc != BG_OK)
        return rc;
    rc = verify_mapped(map, map_len, out);
    munmap(map, map_len);
    return rc;
}
