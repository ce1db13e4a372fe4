/* SPDX-License-Identifier: BSD-3-Clause */
/* The module backend's transfers: publish uploads a local scalable filter
 * over a module filter, fetch downloads one into a local filter. A file of
 * its own because both move a whole image in chunks (BF.LOADCHUNK,
 * BF.SCANDUMP) through hidden keys, which nothing on the add and query path
 * needs (module.c).
 *
 * PUBLISH AND FETCH (remote.h UPLOAD AND DOWNLOAD)
 * The module's value is its own type, moved in and out as bloomgate's file
 * image (docs/FORMAT.md) by BF.LOADCHUNK and BF.SCANDUMP (docs/REDIS.md):
 * the bytes bg_filter_encode writes and bg_filter_decode reads.
 *
 * Publish loads the image under a hidden key, one chunk per script that also
 * renews the key's lease (the module sets the value anew when the last
 * chunk completes it, so the lease is set after every chunk: no moment
 * leaves a hidden key without one), then renames it over name in one
 * script. The module decodes the whole image, checksum included, before the
 * key holds a filter, so a damaged upload never replaces anything.
 *
 * Fetch first copies name to a hidden key in one script (COPY: an instant's
 * filter), then dumps the copy: dumping name itself would mix chunks from
 * before and after concurrent adds, which the image's checksum (computed at
 * BF.SCANDUMP's first call) refuses; a filter that is written to while it is
 * downloaded would then never download. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <bloomgate/file.h>

#include "common/alloc.h"
#include "module.h"

#define BG__CHUNK ((size_t)4 << 20)

int bg__module_publish(bg_remote *r, const char *name, const bg_filter *local)
{
    if (bg_filter_variant(local) != BG_VARIANT_SCALABLE)
        return bg__remote_fail(r, BG_EVARIANT,
                               "only a scalable filter can be published to the module backend "
                               "(the module's filters are scalable)");
    uint64_t size;
    int rc = bg_filter_encoded_size(local, &size);
    if (rc != BG_OK)
        return rc;
    if (size <= BG_FILE_HEADER_BYTES || size > (uint64_t)INT64_MAX - 1)
        return bg__remote_fail(r, BG_ECORRUPT, "unexpected image size %" PRIu64, size);
    size_t bufsize = size - BG_FILE_HEADER_BYTES > BG__CHUNK ? BG__CHUNK
                                                            : (size_t)(size - BG_FILE_HEADER_BYTES);
    if (bufsize < BG_FILE_HEADER_BYTES)
        bufsize = BG_FILE_HEADER_BYTES;
    char *upload = bg__module_hidden_key(name, "publish"), *marker = bg__module_marker_key(name);
    uint8_t *buf = bg__malloc(bufsize);
    if (!upload || !marker || !buf) {
        rc = BG_ENOMEM;
        goto out;
    }

    char lease[24], it[24];
    snprintf(lease, sizeof lease, "%u", BG_REMOTE_STAGE_TTL_MS);
    /* The header first (iterator 1), then the rest in order: each chunk's
     * iterator is the image offset of its end, plus one. */
    for (uint64_t done = 0; done < size;) {
        size_t n = done == 0 ? BG_FILE_HEADER_BYTES
                             : (size - done > bufsize ? bufsize : (size_t)(size - done));
        if ((rc = bg_filter_encode_range(local, done, buf, n)) != BG_OK)
            goto out;
        snprintf(it, sizeof it, "%" PRIu64, done == 0 ? 1 : done + n + 1);
        const char *argv[7] = {NULL, NULL, "1", upload, lease, it, (const char *)buf};
        size_t lens[7] = {0, 0, 1, strlen(upload), strlen(lease), strlen(it), n};
        redisReply *rep;
        rc = bg__module_script(r, BG__SCRIPT_MODULE_PUBLISH_CHUNK, 7, argv, lens, &rep);
        if (rc == BG_EREMOTE && done == 0 && strstr(r->errstr, "bad data")) {
            bg_filter_scaling sc = {0};
            (void)bg_filter_scaling_get(local, &sc);
            bg__remote_fail(r, rc, "the server refused the filter's header: bloomgate.so refuses "
                                   "a filter that may grow past its MAX_BYTES (512 MiB unless "
                                   "configured; this one's max_bytes is %" PRIu64 "), and "
                                   "RedisBloom cannot load bloomgate's image", sc.max_bytes);
        }
        if (rc != BG_OK)
            goto out;
        freeReplyObject(rep);
        done += n;
    }
    const char *argv[6] = {NULL, NULL, "3", upload, name, marker};
    size_t lens[6];
    for (int i = 2; i < 6; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep;
    rc = bg__module_script(r, BG__SCRIPT_MODULE_PUBLISH_COMMIT, 6, argv, lens, &rep);
    if (rc == BG_OK)
        freeReplyObject(rep);
out:
    if (rc != BG_OK && upload)
        bg__remote_discard(r, upload, rc);
    bg__free(upload);
    bg__free(marker);
    bg__free(buf);
    return rc;
}

/* BF.SCANDUMP key it: [next iterator, bytes]. BG_OK and the reply (the
 * caller's), or a status. */
static int scandump(bg_remote *r, const char *key, uint64_t it, uint64_t *next,
                    redisReply **rep)
{
    char its[24];
    snprintf(its, sizeof its, "%" PRIu64, it);
    const char *argv[3] = {"BF.SCANDUMP", key, its};
    size_t lens[3] = {11, strlen(key), strlen(its)};
    int rc = bg__remote_command(r, 3, argv, lens, rep, 0);
    if (rc != BG_OK)
        return rc;
    const redisReply *a = *rep;
    if (a->type != REDIS_REPLY_ARRAY || a->elements != 2 ||
        a->element[0]->type != REDIS_REPLY_INTEGER || a->element[0]->integer < 0 ||
        a->element[1]->type != REDIS_REPLY_STRING) {
        freeReplyObject(*rep);
        *rep = NULL;
        return bg__remote_fail(r, BG_EREMOTE, "unexpected reply to BF.SCANDUMP");
    }
    *next = (uint64_t)a->element[0]->integer;
    return BG_OK;
}

/* Reads the dump of `key` into a new buffer *img of *size bytes. The buffer
 * grows with what the server sends (up to the size its header announces),
 * so a server that announces more than it sends costs nothing. */
static int dump_image(bg_remote *r, const char *key, uint8_t **img, uint64_t *size)
{
    *img = NULL;
    redisReply *rep;
    uint64_t next, total;
    int rc = scandump(r, key, 0, &next, &rep);
    if (rc != BG_OK)
        return rc;
    const redisReply *data = rep->element[1];
    if (next != 1 || data->len != BG_FILE_HEADER_BYTES) {
        size_t len = data->len;
        freeReplyObject(rep);
        return bg__remote_fail(r, BG_EREMOTE, "BF.SCANDUMP: unexpected first chunk (%zu bytes)",
                               len);
    }
    rc = bg_file_image_size(data->str, data->len, &total);
    if (rc == BG_OK && total > SIZE_MAX)
        rc = BG_ETOOBIG;
    if (rc != BG_OK) {
        freeReplyObject(rep);
        return bg__remote_fail(r, rc, "%s: the dump is not a bloomgate filter image: %s (a "
                                      "RedisBloom filter cannot be fetched)",
                               key, bg_strerror(rc));
    }
    size_t cap = BG__CHUNK + BG_FILE_HEADER_BYTES < total ? BG__CHUNK + BG_FILE_HEADER_BYTES
                                                         : (size_t)total;
    uint8_t *buf = bg__malloc(cap);
    if (!buf) {
        freeReplyObject(rep);
        return BG_ENOMEM;
    }
    memcpy(buf, data->str, BG_FILE_HEADER_BYTES);
    freeReplyObject(rep);
    uint64_t have = BG_FILE_HEADER_BYTES;
    for (;;) {
        if ((rc = scandump(r, key, next, &next, &rep)) != BG_OK)
            break;
        data = rep->element[1];
        if (next == 0) {
            rc = data->len == 0 && have == total
                     ? BG_OK
                     : bg__remote_fail(r, BG_EREMOTE, "BF.SCANDUMP ended at byte %" PRIu64
                                                      " of %" PRIu64, have, total);
            freeReplyObject(rep);
            break;
        }
        /* A chunk's iterator is the image offset of its end, plus one. */
        if (data->len == 0 || data->len > total - have || next != have + data->len + 1) {
            freeReplyObject(rep);
            rc = bg__remote_fail(r, BG_EREMOTE, "BF.SCANDUMP: unexpected chunk at byte %" PRIu64,
                                 have);
            break;
        }
        if (have + data->len > cap) {
            size_t grown = cap > total / 2 ? (size_t)total : cap * 2;
            if (grown < have + data->len)
                grown = (size_t)(have + data->len);
            uint8_t *more = bg__malloc(grown);
            if (!more) {
                freeReplyObject(rep);
                rc = BG_ENOMEM;
                break;
            }
            memcpy(more, buf, (size_t)have);
            bg__free(buf);
            buf = more;
            cap = grown;
        }
        memcpy(buf + have, data->str, data->len);
        have += data->len;
        freeReplyObject(rep);
    }
    if (rc != BG_OK) {
        bg__free(buf);
        return rc;
    }
    *img = buf;
    *size = total;
    return BG_OK;
}

int bg__module_fetch(bg_remote_filter *handle, bg_filter **out)
{
    bg__module_filter *f = bg__module_of(handle);
    bg_remote *r = f->base.r;
    /* In the name's cluster slot (a staged handle's key is hidden itself). */
    char *copy = bg__module_hidden_key(f->final_name ? f->final_name : f->name, "fetch");
    if (!copy)
        return BG_ENOMEM;
    char lease[24];
    snprintf(lease, sizeof lease, "%u", BG_REMOTE_STAGE_TTL_MS);
    const char *argv[6] = {NULL, NULL, "2", f->name, copy, lease};
    size_t lens[6];
    for (int i = 2; i < 6; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep;
    int rc = bg__module_key_script(f, BG__SCRIPT_MODULE_FETCH_COPY, 6, argv, lens, &rep);
    if (rc != BG_OK) {
        bg__free(copy);
        return rc;
    }
    freeReplyObject(rep);
    uint8_t *img;
    uint64_t size = 0;
    rc = dump_image(r, copy, &img, &size);
    bg__remote_discard(r, copy, rc);
    bg__free(copy);
    if (rc != BG_OK)
        return rc;
    rc = bg_filter_decode(out, img, (size_t)size, 0);
    bg__free(img);
    if (rc != BG_OK)
        return bg__remote_fail(r, rc, "%s: the downloaded image does not decode: %s", f->name,
                               bg_strerror(rc));
    if (bg_filter_variant(*out) != BG_VARIANT_SCALABLE) { /* not what a module holds */
        bg_filter_free(*out);
        *out = NULL;
        return bg__remote_fail(r, BG_EVARIANT, "%s: the server sent a filter that is not "
                                               "scalable", f->name);
    }
    return BG_OK;
}
