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

void bg__file_v2_snapshot(const bg_filter *f, bg__file_v2 *out)
{
    bg__scalable_params p;
    bg__scalable_params_get(f, &p);
    uint32_t n = bg__scalable_count(f);
    uint64_t items = 0, total = BG_FILE_HEADER_BYTES;
    for (uint32_t i = 0; i < n; i++) {
        const bg_filter *l = bg__scalable_layer(f, i);
        out->layer[i] = l;
        /* The layer's item count is read once, here, so that the total
         * below is the sum of what the layer headers say. */
        bg__file_header_build(l, out->layer_head[i]);
        items += bg__get_le(out->layer_head[i] + BG__OFF_ITEMS, 8);
        out->payload_bytes[i] = payload_bytes_of(l);
        uint64_t padded = bg__file_v2_padded(out->payload_bytes[i]);
        out->pad_bytes[i] = padded - BG_FILE_HEADER_BYTES - out->payload_bytes[i];
        total += padded;
    }
    out->layers = n;
    out->total = total;

    uint8_t *h = out->head;
    memset(h, 0, BG_FILE_HEADER_BYTES);
    memcpy(h + BG__OFF_MAGIC, BG__FILE_MAGIC, BG__FILE_MAGIC_LEN);
    bg__put_le(h + BG__OFF_VERSION, BG__FILE_V2, 2);
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
}

/* A scalable filter's size depends only on its layer count and the layers'
 * m, so it is computed without building headers. */
static uint64_t v2_size(const bg_filter *f)
{
    uint64_t total = BG_FILE_HEADER_BYTES;
    for (uint32_t i = 0, n = bg__scalable_count(f); i < n; i++)
        total += bg__file_v2_padded(payload_bytes_of(bg__scalable_layer(f, i)));
    return total;
}

int bg_filter_encoded_size(const bg_filter *f, uint64_t *out)
{
    if (f == NULL || out == NULL)
        return BG_EINVAL;
    *out = f->scalable ? v2_size(f) : BG_FILE_HEADER_BYTES + payload_bytes_of(f);
    return BG_OK;
}

/* The version-2 image of a scalable filter (the layers as of one moment: a
 * layer added meanwhile is not written, and may make the image larger than
 * an earlier bg_filter_encoded_size said: BG_EINVAL then). */
static int encode_v2(const bg_filter *f, uint8_t *image, size_t len, size_t *written)
{
    bg__file_v2 v;
    bg__file_v2_snapshot(f, &v);
    if (len < v.total)
        return BG_EINVAL;
    memcpy(image, v.head, BG_FILE_HEADER_BYTES);
    uint64_t at = BG_FILE_HEADER_BYTES;
    for (uint32_t i = 0; i < v.layers; i++) {
        memcpy(image + at, v.layer_head[i], BG_FILE_HEADER_BYTES);
        at += BG_FILE_HEADER_BYTES;
        bg__file_copy_payload(v.layer[i], 0, image + at, (size_t)v.payload_bytes[i]);
        at += v.payload_bytes[i];
        memset(image + at, 0, (size_t)v.pad_bytes[i]);
        at += v.pad_bytes[i];
    }
    bg__put_le(image + BG__OFF_CHECKSUM, bg__file_checksum(image, v.total), 8);
    if (written)
        *written = (size_t)v.total;
    return BG_OK;
}

int bg_filter_encode(const bg_filter *f, void *buf, size_t len, size_t *written)
{
    if (f == NULL || buf == NULL)
        return BG_EINVAL;
    if (f->scalable)
        return encode_v2(f, buf, len, written);
    uint64_t size = BG_FILE_HEADER_BYTES + payload_bytes_of(f);
    if (len < size)
        return BG_EINVAL;
    uint8_t *image = buf;
    uint64_t payload = size - BG_FILE_HEADER_BYTES;
    bg__file_header_build(f, image);
    bg__file_copy_payload(f, 0, image + BG_FILE_HEADER_BYTES, (size_t)payload);
    bg__put_le(image + BG__OFF_CHECKSUM, bg__file_checksum(image, size), 8);
    if (written)
        *written = (size_t)size;
    return BG_OK;
}
