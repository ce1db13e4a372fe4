/* Reading the format: the header's validation, and the (buf, len) calls.
 * Every check runs before anything is allocated, in the order of the file,
 * so the status names the first thing wrong. */
#include <string.h>

#include "file/format.h"

/* All bytes of p[0, n) zero. */
static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

int bg__file_header_parse(const uint8_t *head, size_t head_len, uint64_t file_len,
                          bg_file_info *info, bg__filter_shape *shape)
{
    /* A short input that starts like a filter file was cut off; anything
     * else is not one. */
    size_t magic_have = head_len < BG__FILE_MAGIC_LEN ? head_len : BG__FILE_MAGIC_LEN;
    if (magic_have != 0 && memcmp(head, BG__FILE_MAGIC, magic_have) != 0)
        return BG_EBADMAGIC;
    if (head_len < BG__OFF_VERSION + 2)
        return BG_ETRUNC;
    /* The version decides how to read the rest, so it is judged before the
     * header's length. */
    uint64_t version = bg__get_le(head + BG__OFF_VERSION, 2);
    if (version == 0 || version > BG_FILE_VERSION)
        return BG_EVERSION;
    if (head_len < BG_FILE_HEADER_BYTES)
        return BG_ETRUNC;

    memset(info, 0, sizeof *info);
    info->version = (uint32_t)version;
    info->header_bytes = (uint32_t)bg__get_le(head + BG__OFF_HEADER_BYTES, 2);
    info->variant = (bg_variant)bg__get_le(head + BG__OFF_VARIANT, 1);
    info->hash_id = (uint32_t)bg__get_le(head + BG__OFF_HASH, 1);
    info->hashes = (uint32_t)bg__get_le(head + BG__OFF_K, 4);
    info->bits = bg__get_le(head + BG__OFF_M, 8);
    info->seed = bg__get_le(head + BG__OFF_SEED, 8);
    info->capacity = bg__get_le(head + BG__OFF_CAPACITY, 8);
    info->items = bg__get_le(head + BG__OFF_ITEMS, 8);
    info->payload_offset = bg__get_le(head + BG__OFF_PAYLOAD_OFFSET, 8);
    info->payload_bytes = bg__get_le(head + BG__OFF_PAYLOAD_BYTES, 8);
    info->file_bytes = file_len;
    info->checksum = bg__get_le(head + BG__OFF_CHECKSUM, 8);
    info->checksum_status = 1;

    if (info->header_bytes != BG_FILE_HEADER_BYTES || info->hash_id != BG_FILE_HASH_XXH3_128 ||
        bg__get_le(head + BG__OFF_FLAGS, 2) != 0 || bg__get_le(head + BG__OFF_RESERVED0, 4) != 0 ||
        !all_zero(head + BG__OFF_RESERVED1, BG__OFF_CHECKSUM - BG__OFF_RESERVED1))
        return BG_ECORRUPT;

    *shape = (bg__filter_shape){
        .variant = info->variant,
        .m = info->bits,
        .k = info->hashes,
        .seed = info->seed,
        .capacity = info->capacity,
        .items = info->items,
    };
    /* The same rules as a filter built in memory; no cap but the format's
     * own (BG_MAX_BITS): the length checks below bound the allocation by
     * what the input really holds. */
    int rc = bg__filter_shape_check(shape, BG_MAX_BITS);
    if (rc != BG_OK)
        return rc;
    if (info->payload_offset != BG_FILE_HEADER_BYTES || info->payload_bytes != (info->bits + 7) / 8)
        return BG_ECORRUPT;
    /* m <= 2^63, so payload_bytes <= 2^60 and the sum cannot wrap. */
    uint64_t total = info->payload_offset + info->payload_bytes;
    if (file_len < total)
        return BG_ETRUNC;
    if (file_len > total)
        return BG_ETRAILING;
    return BG_OK;
}

bool bg__file_tail_ok(uint64_t m, uint8_t last_byte)
{
    unsigned used = (unsigned)(m % 8); /* bits of the last byte below m; 0: all */
    return used == 0 || (last_byte & (0xffu >> used)) == 0;
}

/* Header, tail bits and (unless told not to) checksum of an image in memory. */
static int inspect_image(const uint8_t *buf, size_t len, unsigned flags, bg_file_info *info,
                         bg__filter_shape *shape)
{
    size_t head_len = len < BG_FILE_HEADER_BYTES ? len : BG_FILE_HEADER_BYTES;
    int rc = bg__file_header_parse(buf, head_len, len, info, shape);
    if (rc != BG_OK)
        return rc;
    if (!bg__file_tail_ok(info->bits, buf[len - 1]))
        return BG_ECORRUPT;
    if (flags & BG_FILE_NO_VERIFY)
        return BG_OK;
    bool ok = bg__file_checksum(buf, info->payload_bytes) == info->checksum;
    info->checksum_status = ok ? BG_OK : BG_ECHECKSUM;
    return info->checksum_status;
}

bool bg__file_flags_ok(unsigned flags)
{
    return (flags & ~(unsigned)(BG_FILE_NO_VERIFY | BG_FILE_SINGLE_WRITER)) == 0;
}

int bg_file_inspect_buffer(const void *buf, size_t len, unsigned flags, bg_file_info *out)
{
    if ((buf == NULL && len != 0) || out == NULL || !bg__file_flags_ok(flags))
        return BG_EINVAL;
    bg__filter_shape shape;
    return inspect_image(buf, len, flags, out, &shape);
}

int bg_filter_decode(bg_filter **out, const void *buf, size_t len, unsigned flags)
{
    if (out == NULL)
        return BG_EINVAL;
    *out = NULL;
    if ((buf == NULL && len != 0) || !bg__file_flags_ok(flags))
        return BG_EINVAL;
    bg_file_info info;
    bg__filter_shape shape;
    int rc = inspect_image(buf, len, flags, &info, &shape);
    if (rc != BG_OK)
        return rc;
    shape.single_writer = (flags & BG_FILE_SINGLE_WRITER) != 0;
    bg_filter *f;
    rc = bg__filter_alloc(&f, &shape);
    if (rc != BG_OK)
        return rc;
    memcpy((void *)f->words, (const uint8_t *)buf + info.payload_offset, (size_t)info.payload_bytes);
    *out = f;
    return BG_OK;
}
