/* SPDX-License-Identifier: BSD-3-Clause */
/* The bitmap backend's transfers: publish uploads a local standard filter
 * as a new generation of a bitmap filter, and fetch downloads one into a
 * local filter. Apart from the handle's code (bitmap.c) because both move
 * a whole array in chunks, with their own scripts and the image layout of
 * docs/FORMAT.md, and nothing on the add and query path needs them. The
 * generation swap, the staging of the upload and the shard places they
 * rely on are explained at the top of bitmap.c (SWAPS, ORPHANS, SHARD
 * PLACES). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <bloomgate/file.h>

#include "common/alloc.h"
#include "bitmap.h"

/* Bytes per SETRANGE or GETRANGE of publish and fetch: a few ms of Redis. */
#define BG__TRANSFER_CHUNK ((uint64_t)4 << 20)

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Offsets in a version-1 image (docs/FORMAT.md). */
#define BG__IMG_CAPACITY 40
#define BG__IMG_ITEMS 48
#define BG__IMG_PAYLOAD_OFFSET 56
#define BG__IMG_CHECKSUM 120

int bg__bitmap_publish(bg_remote *r, const char *name, const bg_filter *local, const char *place)
{
    bg_filter_stats st;
    int rc = bg_filter_stats_get(local, &st);
    if (rc != BG_OK)
        return rc;
    if (st.variant != BG_VARIANT_STANDARD)
        return bg__remote_fail(r, BG_EVARIANT, "only a standard filter can be published");
    if (st.bits > BG_REMOTE_MAX_BITS)
        return bg__remote_fail(r, BG_ETOOBIG, "%" PRIu64 " bits: a bitmap filter has at most 2^32",
                               st.bits);
    uint64_t bytes = (st.bits + 7) / 8, size;
    uint8_t off8[8];
    if ((rc = bg_filter_encoded_size(local, &size)) != BG_OK ||
        (rc = bg_filter_encode_range(local, BG__IMG_PAYLOAD_OFFSET, off8, 8)) != BG_OK)
        return rc;
    uint64_t poff = get_le64(off8);
    if (poff > size || size - poff != bytes)
        return bg__remote_fail(r, BG_ECORRUPT, "unexpected image layout");

    uint64_t gen = bg__random_u63();
    char *meta = bg__bitmap_key_for(name, 0), *bits = bg__bitmap_key_for(name, gen);
    size_t chunk = bytes < BG__TRANSFER_CHUNK ? (size_t)bytes : (size_t)BG__TRANSFER_CHUNK;
    uint8_t *buf = bg__malloc(chunk);
    if (!meta || !bits || !buf) {
        rc = BG_ENOMEM;
        goto out;
    }

    /* Upload under a key no meta hash names yet: invisible to readers. The
     * first piece makes the whole string (bg__bitmap_stage_bits), so the SETRANGEs
     * below write in place (CREATION in bitmap.c); each renews its time to live. */
    char o[24], ttl[16];
    snprintf(ttl, sizeof ttl, "%u", BG_REMOTE_STAGE_TTL_MS);
    for (uint64_t done = 0; done < bytes;) {
        size_t n = bytes - done > chunk ? chunk : (size_t)(bytes - done);
        if ((rc = bg_filter_encode_range(local, poff + done, buf, n)) != BG_OK)
            goto orphan;
        snprintf(o, sizeof o, "%" PRIu64, done);
        const char *sa[4] = {"SETRANGE", bits, o, (const char *)buf};
        size_t sl[4] = {8, strlen(bits), strlen(o), n};
        const char *pa[3] = {"PEXPIRE", bits, ttl};
        size_t pl[3] = {7, strlen(bits), strlen(ttl)};
        if (done == 0)
            rc = bg__bitmap_stage_bits(r, bits, buf, n, bytes);
        else if ((rc = bg__bitmap_command_ok(r, 4, sa, sl)) == BG_OK)
            rc = bg__bitmap_command_ok(r, 3, pa, pl);
        if (rc != BG_OK)
            goto orphan;
        done += n;
    }

    char a[7][32];
    snprintf(a[0], sizeof a[0], "%" PRIu64, gen);
    snprintf(a[1], sizeof a[1], "%" PRIu64, st.bits);
    snprintf(a[2], sizeof a[2], "%" PRIu32, st.hashes);
    snprintf(a[3], sizeof a[3], "%" PRIu64, st.seed);
    snprintf(a[4], sizeof a[4], "%" PRIu64, bytes);
    snprintf(a[5], sizeof a[5], "%" PRIu64, st.capacity);
    snprintf(a[6], sizeof a[6], "%" PRIu64, st.items);
    char p[40];
    snprintf(p, sizeof p, "%.17g", st.error_rate);
    const char *ca[14] = {NULL, NULL, "2", meta, bits, a[0], a[1], a[2], a[3], a[4], a[5], p, a[6],
                          place ? place : ""};
    size_t cl[14];
    for (int i = 2; i < 14; i++)
        cl[i] = strlen(ca[i]);
    redisReply *rep;
    if ((rc = bg__bitmap_script(r, BG__SCRIPT_PUBLISH, 14, ca, cl, &rep)) != BG_OK)
        goto orphan;
    freeReplyObject(rep);
    goto out;
orphan:
    bg__remote_discard(r, bits, rc);
out:
    bg__free(meta);
    bg__free(bits);
    bg__free(buf);
    return rc;
}

int bg__bitmap_fetch(bg_remote_filter *handle, bg_filter **out)
{
    bg__bitmap_filter *f = bg__bitmap_of(handle);
    bg_remote *r = f->base.r;
    uint64_t bytes = (f->base.m + 7) / 8, size = 0;
    /* An empty filter of this shape gives the image's header (not the
     * checksum field: that would be a pass over it); calloc'd pages that
     * are never written cost no memory. */
    bg_filter *tmp;
    bg_filter_options fo = {.variant = BG_VARIANT_STANDARD, .bits = f->base.m, .hashes = f->base.k,
                            .seed = f->base.seed, .max_bytes = bytes + 64,
                            .concurrency = BG_CONCURRENT_WRITERS};
    int rc = bg_filter_new(&tmp, &fo);
    if (rc != BG_OK)
        return rc;
    uint8_t head[BG__IMG_CHECKSUM];
    if ((rc = bg_filter_encoded_size(tmp, &size)) == BG_OK)
        rc = bg_filter_encode_range(tmp, 0, head, sizeof head);
    bg_filter_free(tmp);
    if (rc != BG_OK)
        return rc;
    uint64_t poff = get_le64(head + BG__IMG_PAYLOAD_OFFSET);
    if (poff < BG__IMG_CHECKSUM + 8 || poff > size || size - poff != bytes || size > SIZE_MAX)
        return bg__remote_fail(r, BG_ECORRUPT, "unexpected image layout");
    uint8_t *img = bg__malloc((size_t)size);
    if (!img)
        return BG_ENOMEM;
    memset(img, 0, (size_t)poff);
    memcpy(img, head, sizeof head);

    uint64_t first = 0, items = 0;
    char lo[24], hi[24];
    for (uint64_t done = 0; done < bytes;) {
        uint64_t n = bytes - done > BG__TRANSFER_CHUNK ? BG__TRANSFER_CHUNK : bytes - done;
        snprintf(lo, sizeof lo, "%" PRIu64, done);
        snprintf(hi, sizeof hi, "%" PRIu64, done + n - 1);
        const char *argv[12] = {NULL, NULL, "2", f->meta_key, f->bits_key};
        size_t lens[12];
        for (int i = 2; i < 5; i++)
            lens[i] = strlen(argv[i]);
        bg__shape_args sa;
        bg__bitmap_common_args(f, &sa, argv + 5, lens + 5);
        argv[10] = lo;
        lens[10] = strlen(lo);
        argv[11] = hi;
        lens[11] = strlen(hi);
        redisReply *rep;
        if ((rc = bg__bitmap_script(r, BG__SCRIPT_FETCH, 12, argv, lens, &rep)) != BG_OK)
            goto out;
        uint64_t g;
        redisReply **e = rep->element;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3 ||
            bg__bitmap_field_u64(e[0], &g) != 0 || bg__bitmap_field_u64(e[1], &items) != 0 ||
            e[2]->type != REDIS_REPLY_STRING || e[2]->len != n) {
            freeReplyObject(rep);
            rc = bg__remote_fail(r, BG_EREMOTE, "unexpected reply to a download");
            goto out;
        }
        if (done == 0)
            first = g;
        if (g != first) {
            freeReplyObject(rep);
            rc = bg__remote_fail(r, BG_ESTALE,
                                 "BGSTALE the filter was swapped during the download: "
                                 "generation %" PRIu64 ", then %" PRIu64,
                                 first, g);
            goto out;
        }
        memcpy(img + poff + done, e[2]->str, (size_t)n);
        rc = bg__bitmap_follow(f, e[0]);
        freeReplyObject(rep);
        if (rc != BG_OK)
            goto out;
        done += n;
    }
    put_le64(img + BG__IMG_CAPACITY, f->base.capacity);
    put_le64(img + BG__IMG_ITEMS, items);
    /* No checksum to verify: the bytes came from Redis, not from a file. */
    rc = bg_filter_decode(out, img, (size_t)size, BG_FILE_NO_VERIFY);
    if (rc != BG_OK)
        bg__remote_fail(r, rc, "the downloaded bits do not decode (%s)", bg_err_name(rc));
out:
    bg__free(img);
    return rc;
}
