/* SPDX-License-Identifier: BSD-3-Clause */
/* Crash-safe saving: write a new file beside the target, make it durable,
 * then rename it over the target.
 *
 * HOW IT WORKS
 * 1. open ".<base>.<16 hex>.tmp" in the target's directory with O_EXCL (a
 *    fresh name: never someone else's file; same directory: same file
 *    system, so rename is atomic), relative to the directory's fd, as are
 *    the rename and the fsync below;
 * 2. write the header with a zero checksum, then the payload in 1 MiB chunks,
 *    each copied from the filter with atomic loads, hashed, and written, so
 *    the checksum is of exactly the bytes on disk even while threads add (a
 *    scalable filter: the container header, then each layer's header,
 *    payload and padding, for the layers there were when the save began);
 * 3. write the header again with the checksum; fsync: the data and the size
 *    are on disk before the name points at them;
 * 4. rename over the target: POSIX makes this atomic, so every open of the
 *    target sees the old file or the new one, never a mix;
 * 5. fsync the directory, so the rename itself survives a power cut.
 * On any error the temporary file is removed and the target is untouched.
 * A crash (SIGKILL, power) between 1 and 4 leaves the temporary file; it has
 * a different name, so it is never taken for the target. */
#define _GNU_SOURCE /* O_CLOEXEC, O_DIRECTORY, O_PATH, the *at calls, fchmod, fchown, lstat */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc_internal.h"
#include "core/hash_inline.h"
#include "file/format.h"

#define CHUNK ((size_t)1 << 20)

static int write_all(int fd, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return BG_EIO;
        p += w;
        n -= (size_t)w;
    }
    return BG_OK;
}

/* A fresh temporary name's random part: the clock, the pid and the address
 * of a local, mixed; O_EXCL catches the rare collision, and the caller
 * draws again. */
static uint64_t tmp_token(unsigned attempt)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t parts[4] = {(uint64_t)ts.tv_sec, (uint64_t)ts.tv_nsec, (uint64_t)getpid(),
                         (uint64_t)(uintptr_t)&ts ^ attempt};
    return XXH3_64bits(parts, sizeof parts);
}

/* The temporary name adds 22 bytes to the target's ("." before it,
 * ".<16 hex>.tmp" after), so a target name longer than NAME_MAX - 22 bytes
 * is cut short in it: any target that may exist can be saved. */
#define TMP_BASE_MAX (NAME_MAX - 22)

/* The target's directory and its name there. The temporary file is made,
 * renamed and removed relative to the directory (the *at calls), so its
 * name is bounded by NAME_MAX, not by PATH_MAX: a full path 22 bytes longer
 * than a target's near PATH_MAX would not open. O_PATH needs only search
 * permission, as the path itself does. */
typedef struct {
    int dir; /* AT_FDCWD for a target without a '/' */
    const char *base;
} target_dir;

static int open_target_dir(const char *path, target_dir *t)
{
    const char *slash = strrchr(path, '/');
    t->base = slash ? slash + 1 : path;
    t->dir = AT_FDCWD;
    if (slash == NULL)
        return BG_OK;
    size_t n = slash == path ? 1 : (size_t)(slash - path); /* "/x": the root */
    char *dir = bg__malloc(n + 1);
    if (dir == NULL)
        return BG_ENOMEM;
    memcpy(dir, path, n);
    dir[n] = '\0';
    t->dir = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int saved = errno;
    bg__free(dir);
    errno = saved;
    return t->dir < 0 ? BG_EIO : BG_OK;
}

static void close_target_dir(const target_dir *t)
{
    if (t->dir >= 0)
        close(t->dir);
}

/* Creates the temporary file for the target `t` and writes its name (in
 * t's directory) to tmp; returns its fd, or -1 with errno set. */
static int create_tmp(const target_dir *t, char tmp[NAME_MAX + 1])
{
    for (unsigned attempt = 0; attempt < 100; attempt++) {
        snprintf(tmp, NAME_MAX + 1, ".%.*s.%016llx.tmp", TMP_BASE_MAX, t->base,
                 (unsigned long long)tmp_token(attempt));
        int fd = openat(t->dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

/* fsync of the target's directory, so that a rename in it is durable. */
static int sync_dir(const target_dir *t)
{
    /* A directory we may write but not read (mode 0333) cannot be opened
     * to fsync: the rename is done, only its durability is left to the
     * file system's own flush (file.h). */
    int fd = openat(t->dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno == EACCES ? BG_OK : BG_EIO;
    int rc = fsync(fd) == 0 ? BG_OK : BG_EIO;
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* Writes n bytes of `f`'s payload from its start to fd in CHUNK pieces
 * (copied with atomic loads, then hashed, then written). */
static int write_payload(const bg_filter *f, uint64_t n, int fd, uint8_t *buf, XXH3_state_t *st)
{
    int rc = BG_OK;
    for (uint64_t at = 0; rc == BG_OK && at < n; at += CHUNK) {
        size_t len = (size_t)(n - at < CHUNK ? n - at : CHUNK);
        bg__file_copy_payload(f, at, buf, len);
        XXH3_64bits_update(st, buf, len);
        rc = write_all(fd, buf, len);
    }
    return rc;
}

/* Step 3: the header again, now with the checksum, then fsync. */
static int finish_image(int fd, uint8_t *head, XXH3_state_t *st)
{
    bg__put_le(head + BG__OFF_CHECKSUM, XXH3_64bits_digest(st), 8);
    if (pwrite(fd, head, BG_FILE_HEADER_BYTES, 0) != (ssize_t)BG_FILE_HEADER_BYTES)
        return BG_EIO;
    return fsync(fd) == 0 ? BG_OK : BG_EIO;
}

/* Steps 2 and 3 for a RedisBloom chain (version 3, redisbloom_file.c): its
 * image in CHUNK pieces, checksum field 0, hashed as written. Adds must not
 * run meanwhile (redisbloom.h THREADS). */
static int write_rb_image(const bg_filter *f, int fd, uint8_t *buf)
{
    uint64_t total = bg__rb_image_size(f);
    uint8_t head[BG_FILE_HEADER_BYTES];
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_64bits_reset(&st);
    int rc = BG_OK;
    for (uint64_t at = 0; rc == BG_OK && at < total; at += CHUNK) {
        size_t len = (size_t)(total - at < CHUNK ? total - at : CHUNK);
        bg__rb_image_copy(f, at, buf, len);
        if (at == 0) {
            memset(buf + BG__OFF_CHECKSUM, 0, 8);
            memcpy(head, buf, BG_FILE_HEADER_BYTES);
            XXH3_64bits_update(&st, buf, BG__OFF_CHECKSUM);
            XXH3_64bits_update(&st, buf + BG_FILE_HEADER_BYTES, len - BG_FILE_HEADER_BYTES);
        } else {
            XXH3_64bits_update(&st, buf, len);
        }
        rc = write_all(fd, buf, len);
    }
    if (rc != BG_OK)
        return rc;
    return finish_image(fd, head, &st);
}

/* Steps 2 and 3 on an open temporary file: the image as of one moment
 * (bg__file_image_snapshot: a scalable filter's layer added meanwhile is
 * not written), the header, then each part's header, payload and padding
 * in turn. */
static int write_image(const bg_filter *f, int fd, uint8_t *buf)
{
    if (bg_filter_variant(f) == BG_VARIANT_REDISBLOOM)
        return write_rb_image(f, fd, buf);
    static const uint8_t zeros[BG__V2_ALIGN];
    bg__file_image v;
    bg__file_image_snapshot(f, &v);
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, v.head, BG__OFF_CHECKSUM);
    int rc = write_all(fd, v.head, BG_FILE_HEADER_BYTES);
    for (uint32_t i = 0; rc == BG_OK && i < v.parts; i++) {
        if (v.part_heads) {
            XXH3_64bits_update(&st, v.part_head[i], BG_FILE_HEADER_BYTES);
            rc = write_all(fd, v.part_head[i], BG_FILE_HEADER_BYTES);
        }
        if (rc == BG_OK)
            rc = write_payload(v.part[i], v.payload_bytes[i], fd, buf, &st);
        if (rc == BG_OK && v.pad_bytes[i] != 0) {
            XXH3_64bits_update(&st, zeros, (size_t)v.pad_bytes[i]);
            rc = write_all(fd, zeros, (size_t)v.pad_bytes[i]);
        }
    }
    if (rc != BG_OK)
        return rc;
    return finish_image(fd, v.head, &st);
}

/* A target that exists must be a regular file or a symbolic link (which is
 * replaced, file.h): rename would otherwise replace a device, a FIFO or a
 * socket with a regular file. BG_OK, or BG_EIO with errno EISDIR or ESPIPE,
 * the codes bg_filter_load gives for such paths. */
static int check_target(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
        return BG_OK;
    errno = S_ISDIR(st.st_mode) ? EISDIR : ESPIPE;
    return BG_EIO;
}

/* A replaced file keeps its owner, group and mode (a new one gets the
 * caller's, and 0666 & ~umask from open). The owner first: chown clears
 * set-user-ID bits. A caller that may not give the file away (EPERM: not
 * root) saves it as its own, as editors do. stat follows a symbolic link:
 * the regular file that replaces a link takes its destination's attributes,
 * which are the ones readers of the link saw (GNU sed -i does the same). */
static int keep_attributes(const char *path, int fd)
{
    struct stat old, now;
    if (stat(path, &old) != 0 || !S_ISREG(old.st_mode))
        return BG_OK;
    if (fstat(fd, &now) != 0)
        return BG_EIO;
    if ((old.st_uid != now.st_uid || old.st_gid != now.st_gid) &&
        fchown(fd, old.st_uid, old.st_gid) != 0 && errno != EPERM)
        return BG_EIO;
    return fchmod(fd, old.st_mode & 07777) == 0 ? BG_OK : BG_EIO;
}

int bg_filter_save(const bg_filter *f, const char *path)
{
    if (f == NULL || path == NULL || path[0] == '\0')
        return BG_EINVAL;
    if (check_target(path) != BG_OK)
        return BG_EIO;
    target_dir t;
    int rc = open_target_dir(path, &t);
    if (rc != BG_OK)
        return rc;
    uint8_t *buf = bg__malloc(CHUNK);
    char tmp[NAME_MAX + 1];
    int fd = -1;
    if (buf == NULL)
        rc = BG_ENOMEM;
    else if ((fd = create_tmp(&t, tmp)) < 0)
        rc = BG_EIO;
    if (rc != BG_OK) {
        int saved = errno;
        bg__free(buf);
        close_target_dir(&t);
        errno = saved;
        return rc;
    }
    rc = keep_attributes(path, fd);
    if (rc == BG_OK)
        rc = write_image(f, fd, buf);
    int saved = errno;
    if (close(fd) != 0 && rc == BG_OK) {
        rc = BG_EIO;
        saved = errno;
    }
    if (rc == BG_OK && renameat(t.dir, tmp, t.dir, t.base) != 0) {
        rc = BG_EIO;
        saved = errno;
    }
    if (rc != BG_OK) {
        unlinkat(t.dir, tmp, 0);
    } else {
        rc = sync_dir(&t);
        saved = errno;
    }
    bg__free(buf);
    close_target_dir(&t);
    errno = saved;
    return rc;
}
