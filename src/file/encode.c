/* SPDX-License-Identifier: BSD-3-Clause */
/* Writing the format: the headers, the payload copy, the checksum, and
 * bg_filter_encode (version 1 for filters with an array of their own,
 * version 2 for scalable ones). */
#include <string.h>

#include "core/hash_inline.h"
#include "file/format.h"

void bg__put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t bg__get_le(const uint8_t *p, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void bg__put_le_double(uint8_t *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    bg__put_le(p, v, 8);
}

double bg__get_le_double(const uint8_t *p)
{
    uint64_t v = bg__get_le(p, 8);
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}

bool bg__all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

void bg__file_header_build(const bg_filter *f, uint8_t out[BG_FILE_HEADER_BYTES])
{
    memset(out, 0, BG_FILE_HEADER_BYTES);
    memcpy(out + BG__OFF_MAGIC, BG__FILE_MAGIC, BG__FILE_MAGIC_LEN);
    bg__put_le(out + BG__OFF_VERSION, BG__FILE_V1, 2);
    bg__put_le(out + BG__OFF_HEADER_BYTES, BG_FILE_HEADER_BYTES, 2);
    bg__put_le(out + BG__OFF_VARIANT, (uint64_t)f->ops->variant, 1);
    bg__put_le(out + BG__OFF_HASH, BG_FILE_HASH_XXH3_128, 1);
    bg__put_le(out + BG__OFF_K, f->k, 4);
    bg__put_le(out + BG__OFF_M, f->m, 8);
    bg__put_le(out + BG__OFF_SEED, f->seed, 8);
    bg__put_le(out + BG__OFF_CAPACITY, f->capacity, 8);
    bg__put_le(out + BG__OFF_ITEMS, bg__load(&f->items), 8);
    bg__put_le(out + BG__OFF_PAYLOAD_OFFSET, BG_FILE_HEADER_BYTES, 8);
    bg__put_le(out + BG__OFF_PAYLOAD_BYTES, (f->m * f->ops->cell_bits + 7) / 8, 8);
}

uint64_t bg__file_payload_bits(bg_variant variant, uint64_t m)
{
    return m * bg__ops_for(variant)->cell_bits;
}

void bg__file_copy_payload(const bg_filter *f, uint64_t from, uint8_t *dst, size_t n)
{
    const _Atomic uint64_t *w = f->words + from / 8;
    size_t full = n / 8;
    for (size_t i = 0; i < full; i++) {
        uint64_t v = bg__load(&w[i]);
        memcpy(dst + 8 * i, &v, 8);
    }
    if (n % 8) {
        uint64_t v = bg__load(&w[full]);
        memcpy(dst + 8 * full, &v, n % 8);
    }
}

uint64_t bg__file_checksum(const uint8_t *image, uint64_t len)
{
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, image, BG__OFF_CHECKSUM);
    XXH3_64bits_update(&st, image + BG_FILE_HEADER_BYTES, (size_t)(len - BG_FILE_HEADER_BYTES));
    return XXH3_64bits_digest(&st);
}

uint64_t bg__file_v2_padded(uint64_t payload_bytes)
{
    /* payload_bytes <= 2^60 (m <= 2^63 bits): no overflow. */
    return (BG_FILE_HEADER_BYTES + payload_bytes + BG__V2_ALIGN - 1) / BG__V2_ALIGN * BG__V2_ALIGN;
}

static uint64_t payload_bytes_of(const bg_filter *f)
{
    return (f->m * f->ops->cell_bits + 7) / 8;
}

static uint64_t double_bits(double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    return v;
}

/* The version-2 image of a scalable filter (its layers as of one moment);
 * version 4 when version 2 cannot state its schedule or layer variants. */
static void snapshot_v2(const bg_filter *f, bg__file_image *out)
{
    bg__scalable_params p;
    bg__scalable_params_get(f, &p);
    uint32_t n = bg__scalable_count(f);
    uint64_t items = 0, total = BG_FILE_HEADER_BYTES;
    for (uint32_t i = 0; i < n; i++) {
        const bg_filter *l = bg__scalable_layer(f, i);
        out->part[i] = l;
        /* The layer's item count is read once, here, so that the total
         * below is the sum of what the layer headers say. */
        bg__file_header_build(l, out->part_head[i]);
        items += bg__get_le(out->part_head[i] + BG__OFF_ITEMS, 8);
        out->payload_bytes[i] = payload_bytes_of(l);
        uint64_t padded = bg__file_v2_padded(out->payload_bytes[i]);
        out->pad_bytes[i] = padded - BG_FILE_HEADER_BYTES - out->payload_bytes[i];
        total += padded;
    }
    out->parts = n;
    out->part_heads = true;
    out->total = total;

    uint8_t *h = out->head;
    memset(h, 0, BG_FILE_HEADER_BYTES);
    memcpy(h + BG__OFF_MAGIC, BG__FILE_MAGIC, BG__FILE_MAGIC_LEN);
    bool v4 = !bg__scalable_classic(&p) || p.blocked_from != 0;
    bg__put_le(h + BG__OFF_VERSION, v4 ? BG__FILE_V4 : BG__FILE_V2, 2);
    bg__put_le(h + BG__OFF_HEADER_BYTES, BG_FILE_HEADER_BYTES, 2);
    bg__put_le(h + BG__OFF_VARIANT, BG_VARIANT_SCALABLE, 1);
    bg__put_le(h + BG__OFF_HASH, BG_FILE_HASH_XXH3_128, 1);
    bg__put_le(h + BG__OFF_FLAGS, p.nonscaling ? BG__V2_NONSCALING : 0, 2);
    bg__put_le(h + BG__V2_OFF_LAYERS, n, 4);
    bg__put_le(h + BG__V2_OFF_EXPANSION, p.expansion, 4);
    bg__put_le(h + BG__V2_OFF_TIGHTENING, double_bits(p.tightening), 8);
    bg__put_le(h + BG__V2_OFF_ERROR_RATE, double_bits(p.error_rate), 8);
    bg__put_le(h + BG__V2_OFF_SEED, p.seed, 8);
    bg__put_le(h + BG__V2_OFF_CAPACITY, p.capacity, 8);
    bg__put_le(h + BG__V2_OFF_ITEMS, items, 8);
    bg__put_le(h + BG__V2_OFF_MAX_LAYERS, p.max_layers, 4);
    bg__put_le(h + BG__V2_OFF_LAYER_VARIANT, (uint64_t)p.layer_variant, 1);
    bg__put_le(h + BG__V2_OFF_MAX_BYTES, p.max_bytes, 8);
    bg__put_le(h + BG__V2_OFF_FIRST_LAYER, BG_FILE_HEADER_BYTES, 8);
    bg__put_le(h + BG__V2_OFF_TOTAL, total, 8);
    if (v4) {
        bg__put_le(h + BG__V4_OFF_FIRST_SHARE, double_bits(p.first_share), 8);
        bg__put_le(h + BG__V4_OFF_BLOCKED_FROM, p.blocked_from, 4);
    }
}

/* The one place that tells the versions apart: a filter with an array of its
 * own is a version-1 image, a scalable filter (layers, no array) a
 * version-2 container. */
void bg__file_image_snapshot(const bg_filter *f, bg__file_image *out)
{
    if (f->ops->cell_bits == 0) {
        snapshot_v2(f, out);
        return;
    }
    bg__file_header_build(f, out->head);
    out->parts = 1;
    out->part_heads = false;
    out->part[0] = f;
    out->payload_bytes[0] = payload_bytes_of(f);
    out->pad_bytes[0] = 0;
    out->total = BG_FILE_HEADER_BYTES + out->payload_bytes[0];
}

int bg_filter_encoded_size(const bg_filter *f, uint64_t *out)
{
    if (f == NULL || out == NULL)
        return BG_EINVAL;
    if (bg_filter_variant(f) == BG_VARIANT_REDISBLOOM) {
        *out = bg__rb_image_size(f);
        return BG_OK;
    }
    bg__file_image v;
    bg__file_image_snapshot(f, &v);
    *out = v.total;
    return BG_OK;
}

/* The image as of one moment (a scalable filter's layer added meanwhile is
 * not written, and may make the image larger than an earlier
 * bg_filter_encoded_size said: BG_EINVAL then). */
int bg_filter_encode(const bg_filter *f, void *buf, size_t len, size_t *written)
{
    if (f == NULL || buf == NULL)
        return BG_EINVAL;
    if (bg_filter_variant(f) == BG_VARIANT_REDISBLOOM) {
        uint64_t total = bg__rb_image_size(f);
        if (len < total)
            return BG_EINVAL;
        bg__rb_image_copy(f, 0, buf, (size_t)total);
        if (written)
            *written = (size_t)total;
        return BG_OK;
    }
    bg__file_image v;
    bg__file_image_snapshot(f, &v);
    if (len < v.total)
        return BG_EINVAL;
    uint8_t *image = buf;
    memcpy(image, v.head, BG_FILE_HEADER_BYTES);
    uint64_t at = BG_FILE_HEADER_BYTES;
    for (uint32_t i = 0; i < v.parts; i++) {
        if (v.part_heads) {
            memcpy(image + at, v.part_head[i], BG_FILE_HEADER_BYTES);
            at += BG_FILE_HEADER_BYTES;
        }
        bg__file_copy_payload(v.part[i], 0, image + at, (size_t)v.payload_bytes[i]);
        at += v.payload_bytes[i];
        memset(image + at, 0, (size_t)v.pad_bytes[i]);
        at += v.pad_bytes[i];
    }
    bg__put_le(image + BG__OFF_CHECKSUM, bg__file_checksum(image, v.total), 8);
    if (written)
        *written = (size_t)v.total;
    return BG_OK;
}

/* ---- bg_filter_encode_range ---------------------------------------------
 *
 * HOW IT WORKS
 * The image is a list of segments, each literal bytes (a header), a filter's
 * payload, or zeros (a layer's padding): for version 1, the header and the
 * payload; for version 2, the container header, then per layer its header,
 * payload and padding. The headers are built afresh on every call (item
 * counts read now, checksum field 0), so a range costs its own bytes plus
 * O(layers), with one exception: bytes [120, 128) are the checksum of the
 * whole image, and a range touching them makes one hashing pass over every
 * segment (payloads copied through a small stack buffer, as the saver does).
 *
 * LIMITATIONS
 * Each call is a fresh snapshot. Ranges from calls between which the filter
 * changed (keys added, a layer grown) do not make one consistent image: the
 * reassembled bytes then fail the checksum, or the length, when decoded. */

/* Copies payload bytes [from, from + n) of `f` for any `from`: the word
 * holding an unaligned start is read whole and its tail used. */
static void copy_payload_any(const bg_filter *f, uint64_t from, uint8_t *dst, size_t n)
{
    size_t skip = (size_t)(from % 8);
    if (skip != 0 && n != 0) {
        uint8_t word[8];
        size_t take = 8 - skip < n ? 8 - skip : n;
        bg__file_copy_payload(f, from - skip, word, skip + take);
        memcpy(dst, word + skip, take);
        from += take;
        dst += take;
        n -= take;
    }
    if (n != 0)
        bg__file_copy_payload(f, from, dst, n);
}

typedef struct image_seg {
    const uint8_t *bytes;     /* literal bytes, or NULL */
    const bg_filter *payload; /* this filter's payload, or NULL; both NULL: zeros */
    uint64_t len;
} image_seg;

typedef struct image_map {
    bg__file_image v;
    uint32_t nseg;
    image_seg seg[1 + 3 * BG_MAX_LAYERS];
    uint64_t total;
} image_map;

static void image_map_build(const bg_filter *f, image_map *m)
{
    bg__file_image *v = &m->v;
    bg__file_image_snapshot(f, v);
    m->nseg = 0;
    m->seg[m->nseg++] = (image_seg){.bytes = v->head, .len = BG_FILE_HEADER_BYTES};
    for (uint32_t i = 0; i < v->parts; i++) {
        if (v->part_heads)
            m->seg[m->nseg++] = (image_seg){.bytes = v->part_head[i], .len = BG_FILE_HEADER_BYTES};
        m->seg[m->nseg++] = (image_seg){.payload = v->part[i], .len = v->payload_bytes[i]};
        if (v->pad_bytes[i] != 0)
            m->seg[m->nseg++] = (image_seg){.len = v->pad_bytes[i]};
    }
    m->total = v->total;
}

/* Bytes [from, from + n) of segment s into dst. */
static void seg_copy(const image_seg *s, uint64_t from, uint8_t *dst, size_t n)
{
    if (s->bytes != NULL)
        memcpy(dst, s->bytes + from, n);
    else if (s->payload != NULL)
        copy_payload_any(s->payload, from, dst, n);
    else
        memset(dst, 0, n);
}

/* The checksum the image would carry: segment 0 (a header) up to the
 * checksum field, then every other segment. */
static uint64_t image_map_checksum(const image_map *m)
{
    uint8_t buf[4096];
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, m->seg[0].bytes, BG__OFF_CHECKSUM);
    for (uint32_t i = 1; i < m->nseg; i++) {
        const image_seg *s = &m->seg[i];
        for (uint64_t at = 0; at < s->len; at += sizeof buf) {
            size_t n = (size_t)(s->len - at < sizeof buf ? s->len - at : sizeof buf);
            seg_copy(s, at, buf, n);
            XXH3_64bits_update(&st, buf, n);
        }
    }
    return XXH3_64bits_digest(&st);
}

int bg_filter_encode_range(const bg_filter *f, uint64_t offset, void *buf, size_t len)
{
    if (f == NULL || (buf == NULL && len != 0))
        return BG_EINVAL;
    if (bg_filter_variant(f) == BG_VARIANT_REDISBLOOM) {
        uint64_t total = bg__rb_image_size(f);
        if (offset > total || len > total - offset)
            return BG_EINVAL;
        bg__rb_image_copy(f, offset, buf, len);
        return BG_OK;
    }
    image_map m;
    image_map_build(f, &m);
    if (offset > m.total || len > m.total - offset)
        return BG_EINVAL;
    uint8_t *out = buf;
    uint64_t end = offset + len, pos = 0;
    for (uint32_t i = 0; i < m.nseg && pos < end; i++) {
        const image_seg *s = &m.seg[i];
        uint64_t lo = offset > pos ? offset : pos;
        uint64_t hi = end < pos + s->len ? end : pos + s->len;
        if (lo < hi)
            seg_copy(s, lo - pos, out + (lo - offset), (size_t)(hi - lo));
        pos += s->len;
    }
    if (offset < BG_FILE_HEADER_BYTES && end > BG__OFF_CHECKSUM) {
        uint8_t sum[8];
        bg__put_le(sum, image_map_checksum(&m), 8);
        uint64_t lo = offset > BG__OFF_CHECKSUM ? offset : BG__OFF_CHECKSUM;
        uint64_t hi = end < BG_FILE_HEADER_BYTES ? end : BG_FILE_HEADER_BYTES;
        memcpy(out + (lo - offset), sum + (lo - BG__OFF_CHECKSUM), (size_t)(hi - lo));
    }
    return BG_OK;
}
