/* SPDX-License-Identifier: BSD-3-Clause */
/* Format version 3: a RedisBloom chain (format.h, docs/FORMAT.md). The
 * image is the container header, then each link's 64-byte header and array,
 * padded to 64 bytes, so that every array starts 64-byte aligned and a
 * mapped file is used in place. Writers walk the image as segments (a
 * header built on the spot, an array, zeros), so any byte range of it is
 * produced without a copy of the filter; readers validate every link's
 * header and padding before anything is allocated, and the arrays they
 * allocate are bounded by the input's length. */
#include <string.h>

#include "core/hash_inline.h"
#include "core/redisbloom_internal.h"
#include "file/format.h"

static uint64_t pad64(uint64_t n)
{
    return (BG__V2_ALIGN - n % BG__V2_ALIGN) % BG__V2_ALIGN;
}

/* ---- writing ------------------------------------------------------------- */

static uint32_t links_of(const bg_filter *f)
{
    bg_rb_chain ch;
    (void)bg_rb_chain_get(f, &ch);
    return ch.nfilters;
}

uint64_t bg__rb_image_size(const bg_filter *f)
{
    uint64_t total = BG_FILE_HEADER_BYTES;
    uint32_t n = links_of(f);
    for (uint32_t i = 0; i < n; i++) {
        bg_rb_link l;
        (void)bg_rb_link_get(f, i, &l);
        total += BG__V3_LINK_HEAD + l.bytes + pad64(l.bytes);
    }
    return total;
}

static void header_build(const bg_filter *f, uint8_t h[BG_FILE_HEADER_BYTES])
{
    bg_rb_chain ch;
    (void)bg_rb_chain_get(f, &ch);
    memset(h, 0, BG_FILE_HEADER_BYTES);
    memcpy(h + BG__OFF_MAGIC, BG__FILE_MAGIC, BG__FILE_MAGIC_LEN);
    bg__put_le(h + BG__OFF_VERSION, BG__FILE_V3, 2);
    bg__put_le(h + BG__OFF_HEADER_BYTES, BG_FILE_HEADER_BYTES, 2);
    bg__put_le(h + BG__OFF_VARIANT, BG_VARIANT_REDISBLOOM, 1);
    bg__put_le(h + BG__OFF_HASH, BG_FILE_HASH_MURMUR, 1);
    bg__put_le(h + BG__V3_OFF_LINKS, ch.nfilters, 4);
    bg__put_le(h + BG__V3_OFF_OPTIONS, ch.options, 4);
    bg__put_le(h + BG__V3_OFF_GROWTH, ch.growth, 4);
    bg__put_le(h + BG__V3_OFF_SIZE, ch.size, 8);
    bg__put_le(h + BG__V3_OFF_MAX_BYTES, bg__rb_max_bytes(f), 8);
    bg__put_le(h + BG__V3_OFF_FIRST_LINK, BG_FILE_HEADER_BYTES, 8);
    bg__put_le(h + BG__V3_OFF_TOTAL, bg__rb_image_size(f), 8);
}

static void link_head_build(const bg_rb_link *l, uint8_t h[BG__V3_LINK_HEAD])
{
    memset(h, 0, BG__V3_LINK_HEAD);
    bg__put_le(h + BG__V3_LINK_ENTRIES, l->entries, 8);
    bg__put_le_double(h + BG__V3_LINK_ERROR, l->error);
    bg__put_le_double(h + BG__V3_LINK_BPE, l->bpe);
    bg__put_le(h + BG__V3_LINK_BITS, l->bits, 8);
    bg__put_le(h + BG__V3_LINK_BYTES, l->bytes, 8);
    bg__put_le(h + BG__V3_LINK_SIZE, l->size, 8);
    bg__put_le(h + BG__V3_LINK_HASHES, l->hashes, 4);
    h[BG__V3_LINK_N2] = l->n2;
}

/* Calls visit(ctx, bytes, len) for each segment of the image in order
 * (bytes NULL: len zeros), the header with its checksum field 0. */
static void walk(const bg_filter *f, void (*visit)(void *ctx, const uint8_t *p, uint64_t len),
                 void *ctx)
{
    static const uint8_t zeros[BG__V2_ALIGN];
    uint8_t h[BG_FILE_HEADER_BYTES];
    header_build(f, h);
    visit(ctx, h, BG_FILE_HEADER_BYTES);
    uint32_t n = links_of(f);
    for (uint32_t i = 0; i < n; i++) {
        bg_rb_link l;
        uint8_t lh[BG__V3_LINK_HEAD];
        const uint8_t *data;
        size_t len;
        (void)bg_rb_link_get(f, i, &l);
        (void)bg_rb_link_array(f, i, &data, &len);
        link_head_build(&l, lh);
        visit(ctx, lh, BG__V3_LINK_HEAD);
        visit(ctx, data, len);
        if (pad64(len))
            visit(ctx, zeros, pad64(len));
    }
}

typedef struct hashing {
    XXH3_state_t st;
    bool first; /* the header: hashed up to its checksum field */
} hashing;

static void hash_visit(void *ctx, const uint8_t *p, uint64_t len)
{
    hashing *h = ctx;
    if (h->first) {
        h->first = false;
        len = BG__OFF_CHECKSUM;
    }
    XXH3_64bits_update(&h->st, p, (size_t)len);
}

uint64_t bg__rb_image_checksum(const bg_filter *f)
{
    hashing h = {.first = true};
    XXH3_INITSTATE(&h.st);
    XXH3_64bits_reset(&h.st);
    walk(f, hash_visit, &h);
    return XXH3_64bits_digest(&h.st);
}

typedef struct copying {
    uint64_t at, from, to; /* the segment's start; the range wanted */
    uint8_t *dst;
} copying;

static void copy_visit(void *ctx, const uint8_t *p, uint64_t len)
{
    copying *c = ctx;
    uint64_t lo = c->from > c->at ? c->from : c->at;
    uint64_t hi = c->to < c->at + len ? c->to : c->at + len;
    if (lo < hi)
        memcpy(c->dst + (lo - c->from), p + (lo - c->at), (size_t)(hi - lo));
    c->at += len;
}

void bg__rb_image_copy(const bg_filter *f, uint64_t off, uint8_t *dst, size_t n)
{
    copying c = {.from = off, .to = off + n, .dst = dst};
    walk(f, copy_visit, &c);
    if (off < BG_FILE_HEADER_BYTES && off + n > BG__OFF_CHECKSUM) {
        uint8_t ck[8];
        bg__put_le(ck, bg__rb_image_checksum(f), 8);
        for (uint64_t i = BG__OFF_CHECKSUM; i < BG_FILE_HEADER_BYTES; i++)
            if (i >= off && i < off + n)
                dst[i - off] = ck[i - BG__OFF_CHECKSUM];
    }
}

/* ---- reading ------------------------------------------------------------- */

int bg__rb_header_fields(const uint8_t *head, bg_file_info *info, uint64_t *total,
                         uint64_t *max_bytes)
{
    memset(info, 0, sizeof *info);
    info->version = (uint32_t)bg__get_le(head + BG__OFF_VERSION, 2);
    info->header_bytes = (uint32_t)bg__get_le(head + BG__OFF_HEADER_BYTES, 2);
    info->variant = BG_VARIANT_REDISBLOOM;
    info->hash_id = (uint32_t)bg__get_le(head + BG__OFF_HASH, 1);
    info->items = bg__get_le(head + BG__V3_OFF_SIZE, 8);
    info->checksum = bg__get_le(head + BG__OFF_CHECKSUM, 8);
    info->checksum_state = BG_CHECKSUM_SKIPPED;
    info->layers = (uint32_t)bg__get_le(head + BG__V3_OFF_LINKS, 4);
    uint32_t options = (uint32_t)bg__get_le(head + BG__V3_OFF_OPTIONS, 4);
    uint32_t growth = (uint32_t)bg__get_le(head + BG__V3_OFF_GROWTH, 4);
    *max_bytes = bg__get_le(head + BG__V3_OFF_MAX_BYTES, 8);
    *total = bg__get_le(head + BG__V3_OFF_TOTAL, 8);
    bool nonscaling = (options & BG_RB_NO_SCALING) != 0;
    info->scaling = (bg_filter_scaling){
        .layer_variant = BG_VARIANT_REDISBLOOM,
        .expansion = nonscaling ? 0 : growth,
        .tightening = 0.5,
        .first_share = 0.5,
        .max_layers = UINT32_MAX,
        .max_bytes = *max_bytes,
        .nonscaling = nonscaling,
        .layers = info->layers,
    };
    if (info->header_bytes != BG_FILE_HEADER_BYTES || info->hash_id != BG_FILE_HASH_MURMUR ||
        bg__get_le(head + BG__OFF_FLAGS, 2) != 0 ||
        bg__get_le(head + BG__V3_OFF_RESERVED0, 4) != 0 ||
        !bg__all_zero(head + BG__V3_OFF_RESERVED1, BG__OFF_CHECKSUM - BG__V3_OFF_RESERVED1) ||
        bg__get_le(head + BG__V3_OFF_FIRST_LINK, 8) != BG_FILE_HEADER_BYTES)
        return BG_ECORRUPT;
    if (info->layers == 0 || *max_bytes == 0 || *total < BG_FILE_HEADER_BYTES)
        return BG_ECORRUPT;
    /* Each link takes at least 128 bytes (its header and a padded array). */
    if ((*total - BG_FILE_HEADER_BYTES) / (2 * BG__V3_LINK_HEAD) < info->layers ||
        *total % BG__V2_ALIGN != 0)
        return BG_ECORRUPT;
    return BG_OK;
}

static void link_read(const uint8_t *h, bg_rb_link *l)
{
    *l = (bg_rb_link){
        .entries = bg__get_le(h + BG__V3_LINK_ENTRIES, 8),
        .error = bg__get_le_double(h + BG__V3_LINK_ERROR),
        .bpe = bg__get_le_double(h + BG__V3_LINK_BPE),
        .bits = bg__get_le(h + BG__V3_LINK_BITS, 8),
        .bytes = bg__get_le(h + BG__V3_LINK_BYTES, 8),
        .size = bg__get_le(h + BG__V3_LINK_SIZE, 8),
        .hashes = (uint32_t)bg__get_le(h + BG__V3_LINK_HASHES, 4),
        .n2 = h[BG__V3_LINK_N2],
    };
}

/* A link header's own checks: RedisBloom's, and zero reserved bytes. */
static bool link_head_ok(const uint8_t *h, bg_rb_link *l)
{
    link_read(h, l);
    return bg__all_zero(h + BG__V3_LINK_RESERVED, BG__V3_LINK_HEAD - BG__V3_LINK_RESERVED) &&
           bg__rb_link_ok(l, l->bytes);
}

int bg__rb_plan_read(const bg__file_src *src, bg__file_plan *plan)
{
    bg_file_info *info = &plan->info;
    uint64_t total, max_bytes;
    int rc = bg__rb_header_fields(plan->head, info, &total, &max_bytes);
    if (rc != BG_OK)
        return rc;
    if (src->len < total)
        return BG_ETRUNC;
    if (src->len > total)
        return BG_ETRAILING;
    info->file_bytes = src->len;
    info->payload_offset = BG_FILE_HEADER_BYTES + BG__V3_LINK_HEAD;
    uint64_t off = BG_FILE_HEADER_BYTES, arrays = 0;
    for (uint32_t i = 0; i < info->layers; i++) {
        uint8_t h[BG__V3_LINK_HEAD];
        if (total - off < BG__V3_LINK_HEAD)
            return BG_ECORRUPT;
        if ((rc = bg__file_src_read(src, off, h, sizeof h)) != BG_OK)
            return rc;
        bg_rb_link l;
        if (!link_head_ok(h, &l))
            return BG_ECORRUPT;
        off += BG__V3_LINK_HEAD;
        uint64_t pad = pad64(l.bytes);
        if (l.bytes > total - off || pad > total - off - l.bytes)
            return BG_ECORRUPT;
        if (pad) {
            uint8_t z[BG__V2_ALIGN];
            if ((rc = bg__file_src_read(src, off + l.bytes, z, (size_t)pad)) != BG_OK)
                return rc;
            if (!bg__all_zero(z, (size_t)pad))
                return BG_ECORRUPT;
        }
        off += l.bytes + pad;
        arrays += l.bytes; /* < total: no wrap */
        if (arrays > max_bytes)
            return BG_ECORRUPT;
        info->bits += l.bits;
        info->capacity = info->capacity > UINT64_MAX - l.entries ? UINT64_MAX
                                                                 : info->capacity + l.entries;
        info->hashes = l.hashes;
        if (i == 0) {
            info->scaling.capacity = l.entries;
            info->scaling.error_rate = l.error;
        }
    }
    if (off != total)
        return BG_ECORRUPT;
    info->payload_bytes = arrays;
    return BG_OK;
}

static bg_rb_chain chain_of_head(const uint8_t *head)
{
    return (bg_rb_chain){
        .size = bg__get_le(head + BG__V3_OFF_SIZE, 8),
        .nfilters = (uint32_t)bg__get_le(head + BG__V3_OFF_LINKS, 4),
        .options = (uint32_t)bg__get_le(head + BG__V3_OFF_OPTIONS, 4),
        .growth = (uint32_t)bg__get_le(head + BG__V3_OFF_GROWTH, 4),
    };
}

int bg__rb_load(const bg__file_src *src, const bg__file_plan *plan, bool verify,
                bool single_writer, bg_filter **out)
{
    static const uint8_t zeros[BG__V2_ALIGN];
    bg_rb_chain ch = chain_of_head(plan->head);
    bg_filter *f;
    int rc = bg__rb_new_as(&f, &ch, bg__get_le(plan->head + BG__V3_OFF_MAX_BYTES, 8),
                           single_writer);
    if (rc != BG_OK)
        return rc;
    XXH3_state_t st;
    if (verify) {
        XXH3_INITSTATE(&st);
        XXH3_64bits_reset(&st);
        XXH3_64bits_update(&st, plan->head, BG__OFF_CHECKSUM);
    }
    uint64_t off = BG_FILE_HEADER_BYTES;
    for (uint32_t i = 0; i < ch.nfilters; i++) {
        uint8_t h[BG__V3_LINK_HEAD];
        bg_rb_link l;
        uint8_t *data;
        size_t len;
        /* Read again: the file may have changed since it was planned. */
        if ((rc = bg__file_src_read(src, off, h, sizeof h)) != BG_OK)
            goto fail;
        link_read(h, &l);
        if (l.bytes > src->len || off + BG__V3_LINK_HEAD + l.bytes + pad64(l.bytes) > src->len) {
            rc = BG_ECORRUPT;
            goto fail;
        }
        if ((rc = bg_rb_push_link(f, &l, NULL, 0)) != BG_OK)
            goto fail;
        (void)bg_rb_link_array_mut(f, i, &data, &len);
        if ((rc = bg__file_src_read(src, off + BG__V3_LINK_HEAD, data, len)) != BG_OK)
            goto fail;
        if (verify) {
            XXH3_64bits_update(&st, h, sizeof h);
            XXH3_64bits_update(&st, data, len);
            XXH3_64bits_update(&st, zeros, (size_t)pad64(len));
        }
        off += BG__V3_LINK_HEAD + len + pad64(len);
    }
    if (verify && XXH3_64bits_digest(&st) != plan->info.checksum) {
        rc = BG_ECHECKSUM;
        goto fail;
    }
    *out = f;
    return BG_OK;
fail:
    bg_filter_free(f);
    return rc == BG_ETOOBIG ? BG_ECORRUPT : rc;
}

int bg__rb_wrap(const bg__file_plan *plan, uint8_t *map, size_t map_len, bg_filter **out)
{
    bg_rb_chain ch = chain_of_head(plan->head);
    bg_filter *f;
    int rc = bg__rb_new_mapped(&f, &ch, bg__get_le(plan->head + BG__V3_OFF_MAX_BYTES, 8), map,
                               map_len);
    if (rc != BG_OK)
        return rc;
    uint64_t off = BG_FILE_HEADER_BYTES;
    for (uint32_t i = 0; i < ch.nfilters; i++) {
        bg_rb_link l;
        /* The mapping is what was planned, unless the file was written in
         * place meanwhile (file.h: not supported), so check again. */
        if (off + BG__V3_LINK_HEAD > map_len || !link_head_ok(map + off, &l) ||
            l.bytes + pad64(l.bytes) > map_len - off - BG__V3_LINK_HEAD) {
            bg_filter_free(f);
            return BG_ECORRUPT;
        }
        if ((rc = bg__rb_push_mapped(f, &l, map + off + BG__V3_LINK_HEAD)) != BG_OK) {
            bg_filter_free(f);
            return rc == BG_ETOOBIG ? BG_ECORRUPT : rc;
        }
        off += BG__V3_LINK_HEAD + l.bytes + pad64(l.bytes);
    }
    *out = f;
    return BG_OK;
}
