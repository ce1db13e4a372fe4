/* Writing the format: the header, the payload copy, the checksum, and
 * bg_filter_encode. */
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
    bg__put_le(out + BG__OFF_VERSION, BG_FILE_VERSION, 2);
    bg__put_le(out + BG__OFF_HEADER_BYTES, BG_FILE_HEADER_BYTES, 2);
    bg__put_le(out + BG__OFF_VARIANT, (uint64_t)f->ops->variant, 1);
    bg__put_le(out + BG__OFF_HASH, BG_FILE_HASH_XXH3_128, 1);
    bg__put_le(out + BG__OFF_K, f->k, 4);
    bg__put_le(out + BG__OFF_M, f->m, 8);
    bg__put_le(out + BG__OFF_SEED, f->seed, 8);
    bg__put_le(out + BG__OFF_CAPACITY, f->capacity, 8);
    bg__put_le(out + BG__OFF_ITEMS, bg__load(&f->items), 8);
    bg__put_le(out + BG__OFF_PAYLOAD_OFFSET, BG_FILE_HEADER_BYTES, 8);
    bg__put_le(out + BG__OFF_PAYLOAD_BYTES, (f->m + 7) / 8, 8);
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

uint64_t bg__file_checksum(const uint8_t *image, uint64_t payload_bytes)
{
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, image, BG__OFF_CHECKSUM);
    XXH3_64bits_update(&st, image + BG_FILE_HEADER_BYTES, (size_t)payload_bytes);
    return XXH3_64bits_digest(&st);
}

int bg_filter_encoded_size(const bg_filter *f, uint64_t *out)
{
    if (f == NULL || out == NULL)
        return BG_EINVAL;
    *out = BG_FILE_HEADER_BYTES + (f->m + 7) / 8;
    return BG_OK;
}

int bg_filter_encode(const bg_filter *f, void *buf, size_t len, size_t *written)
{
    uint64_t size;
    if (bg_filter_encoded_size(f, &size) != BG_OK || buf == NULL || len < size)
        return BG_EINVAL;
    uint8_t *image = buf;
    uint64_t payload = size - BG_FILE_HEADER_BYTES;
    bg__file_header_build(f, image);
    bg__file_copy_payload(f, 0, image + BG_FILE_HEADER_BYTES, (size_t)payload);
    bg__put_le(image + BG__OFF_CHECKSUM, bg__file_checksum(image, payload), 8);
    if (written)
        *written = (size_t)size;
    return BG_OK;
}
