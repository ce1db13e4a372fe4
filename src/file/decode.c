/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading the format: the validation of both versions into a plan (what a
 * reader needs before it allocates), and the (buf, len) calls. Every check
 * runs before anything is allocated, in the order of the file, so the status
 * names the first thing wrong. */
#define _GNU_SOURCE /* pread */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "file/format.h"

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int bg__file_src_read(const bg__file_src *src, uint64_t off, void *dst, size_t n)
{
    if (src->fd < 0) {
        if (n)
            memcpy(dst, src->buf + off, n);
        return BG_OK;
    }
    /* Retries short reads and EINTR; the end of the file first means it
     * shrank since it was measured. */
    uint8_t *p = dst;
    while (n > 0) {
        ssize_t r = pread(src->fd, p, n, (off_t)off);
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

/* Magic and version, common to every version. A short input that starts
 * like a filter file was cut off; anything else is not one. The version
 * decides how to read the rest, so it is judged before the header's length.
 * Versions 2 and 4 exist only for the scalable variant, version 3 only for
 * RedisBloom chains (the variant byte is where version 1 has it): any other
 * is a file of that version this library does not know. */
static int parse_prefix(const uint8_t *head, size_t head_len, unsigned *version)
{
    size_t magic_have = head_len < BG__FILE_MAGIC_LEN ? head_len : BG__FILE_MAGIC_LEN;
    if (magic_have != 0 && memcmp(head, BG__FILE_MAGIC, magic_have) != 0)
        return BG_EBADMAGIC;
    if (head_len < BG__OFF_VERSION + 2)
        return BG_ETRUNC;
    uint64_t v = bg__get_le(head + BG__OFF_VERSION, 2);
    if (v == 0 || v > BG_FILE_VERSION)
        return BG_EVERSION;
    if (v != BG__FILE_V1) {
        if (head_len < BG__OFF_VARIANT + 1)
            return BG_ETRUNC;
        if (head[BG__OFF_VARIANT] !=
            (v == BG__FILE_V3 ? BG_VARIANT_REDISBLOOM : BG_VARIANT_SCALABLE))
            return BG_EVERSION;
    }
    if (head_len < BG_FILE_HEADER_BYTES)
        return BG_ETRUNC;
    *version = (unsigned)v;
    return BG_OK;
}

/* The fields of a complete version-1 header, against each other (not
 * against any length). */
static int v1_fields(const uint8_t *head, bg_file_info *info, bg__filter_shape *shape)
{
    memset(info, 0, sizeof *info);
    info->version = (uint32_t)bg__get_le(head + BG__OFF_VERSION, 2);
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
    info->checksum = bg__get_le(head + BG__OFF_CHECKSUM, 8);
    info->checksum_state = BG_CHECKSUM_SKIPPED;
    info->layers = 1;

    if (info->header_bytes != BG_FILE_HEADER_BYTES || info->hash_id != BG_FILE_HASH_XXH3_128 ||
        bg__get_le(head + BG__OFF_FLAGS, 2) != 0 || bg__get_le(head + BG__OFF_RESERVED0, 4) != 0 ||
        !bg__all_zero(head + BG__OFF_RESERVED1, BG__OFF_CHECKSUM - BG__OFF_RESERVED1))
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
     * own (BG_MAX_BITS): the length checks bound the allocation by what the
     * input really holds. */
    int rc = bg__filter_shape_check(shape, BG_MAX_BITS);
    if (rc != BG_OK)
        return rc;
    if (info->payload_offset != BG_FILE_HEADER_BYTES ||
        info->payload_bytes != (bg__file_payload_bits(info->variant, info->bits) + 7) / 8)
        return BG_ECORRUPT;
    return BG_OK;
}

static int plan_v1(const bg__file_src *src, bg__file_plan *plan)
{
    bg_file_info *info = &plan->info;
    bg__filter_shape shape;
    int rc = v1_fields(plan->head, info, &shape);
    if (rc != BG_OK)
        return rc;
    info->file_bytes = src->len;
    /* m <= 2^63, so payload_bytes <= 2^60 and the sum cannot wrap. */
    uint64_t total = info->payload_offset + info->payload_bytes;
    if (src->len < total)
        return BG_ETRUNC;
    if (src->len > total)
        return BG_ETRAILING;
    uint8_t last;
    if ((rc = bg__file_src_read(src, src->len - 1, &last, 1)) != BG_OK)
        return rc;
    if (!bg__file_tail_ok(bg__file_payload_bits(info->variant, info->bits), last))
        return BG_ECORRUPT;
    plan->parts = 1;
    plan->part[0] = (bg__file_part){
        .shape = shape,
        .head_offset = 0,
        .payload_offset = info->payload_offset,
        .payload_bytes = info->payload_bytes,
    };
    return BG_OK;
}

/* The fields of a complete version-2 or version-4 container header, against
 * each other (not against any length): into *info (file_bytes as given), *p
 * and *total (the length the header claims, >= 128). */
static int v2_fields(const uint8_t *h, uint64_t file_bytes, bg_file_info *info,
                     bg__scalable_params *p, uint64_t *total)
{
    memset(info, 0, sizeof *info);
    bool v4 = bg__get_le(h + BG__OFF_VERSION, 2) == BG__FILE_V4;
    info->version = v4 ? BG__FILE_V4 : BG__FILE_V2;
    info->header_bytes = (uint32_t)bg__get_le(h + BG__OFF_HEADER_BYTES, 2);
    info->variant = BG_VARIANT_SCALABLE;
    info->hash_id = (uint32_t)bg__get_le(h + BG__OFF_HASH, 1);
    info->seed = bg__get_le(h + BG__V2_OFF_SEED, 8);
    info->items = bg__get_le(h + BG__V2_OFF_ITEMS, 8);
    info->file_bytes = file_bytes;
    info->checksum = bg__get_le(h + BG__OFF_CHECKSUM, 8);
    info->checksum_state = BG_CHECKSUM_SKIPPED;
    info->layers = (uint32_t)bg__get_le(h + BG__V2_OFF_LAYERS, 4);

    uint64_t flags = bg__get_le(h + BG__OFF_FLAGS, 2);
    if (info->header_bytes != BG_FILE_HEADER_BYTES || info->hash_id != BG_FILE_HASH_XXH3_128 ||
        (flags & ~(uint64_t)BG__V2_NONSCALING) != 0 ||
        !bg__all_zero(h + BG__V2_OFF_RESERVED0, 3) ||
        !bg__all_zero(h + (v4 ? BG__V4_OFF_RESERVED1 : BG__V2_OFF_RESERVED1),
                  BG__OFF_CHECKSUM - (v4 ? BG__V4_OFF_RESERVED1 : BG__V2_OFF_RESERVED1)) ||
        bg__get_le(h + BG__V2_OFF_FIRST_LAYER, 8) != BG_FILE_HEADER_BYTES)
        return BG_ECORRUPT;
    double tightening = bg__get_le_double(h + BG__V2_OFF_TIGHTENING);

    *p = (bg__scalable_params){
        .layer_variant = (bg_variant)h[BG__V2_OFF_LAYER_VARIANT],
        .capacity = bg__get_le(h + BG__V2_OFF_CAPACITY, 8),
        .error_rate = bg__get_le_double(h + BG__V2_OFF_ERROR_RATE),
        .expansion = (uint32_t)bg__get_le(h + BG__V2_OFF_EXPANSION, 4),
        .tightening = tightening,
        .first_share = v4 ? bg__get_le_double(h + BG__V4_OFF_FIRST_SHARE) : 1.0 - tightening,
        .blocked_from = v4 ? (uint32_t)bg__get_le(h + BG__V4_OFF_BLOCKED_FROM, 4) : 0,
        .max_layers = (uint32_t)bg__get_le(h + BG__V2_OFF_MAX_LAYERS, 4),
        .max_bytes = bg__get_le(h + BG__V2_OFF_MAX_BYTES, 8),
        .nonscaling = (flags & BG__V2_NONSCALING) != 0,
        .seed = info->seed,
    };
    int rc = bg__scalable_params_check(p);
    if (rc != BG_OK)
        return rc;
    /* One image per filter: what version 2 can state is version 2. */
    if (v4 && bg__scalable_classic(p) && p->blocked_from == 0)
        return BG_ECORRUPT;
    info->scaling = (bg_filter_scaling){
        .layer_variant = p->layer_variant,
        .capacity = p->capacity,
        .error_rate = p->error_rate,
        .expansion = p->expansion,
        .tightening = p->tightening,
        .max_layers = p->max_layers,
        .max_bytes = p->max_bytes,
        .nonscaling = p->nonscaling,
        .layers = info->layers,
        .first_share = p->first_share,
        .blocked_from = p->blocked_from,
    };
    if (info->layers < 1 || info->layers > p->max_layers || (p->nonscaling && info->layers != 1))
        return BG_ECORRUPT;
    *total = bg__get_le(h + BG__V2_OFF_TOTAL, 8);
    if (*total < BG_FILE_HEADER_BYTES)
        return BG_ECORRUPT;
    return BG_OK;
}

/* The container header of version 2: its own fields, the growth parameters,
 * and its length against the input's. */
static int v2_header(const bg__file_src *src, bg__file_plan *plan)
{
    uint64_t total;
    int rc = v2_fields(plan->head, src->len, &plan->info, &plan->params, &total);
    if (rc != BG_OK)
        return rc;
    if (src->len < total)
        return BG_ETRUNC;
    if (src->len > total)
        return BG_ETRAILING;
    return BG_OK;
}

/* The layers of version 2, one after the other from byte 128: each a
 * version-1 header that passes the version-1 checks, with checksum field 0,
 * the container's seed and layer variant, the capacity growth gives layer i,
 * full if a layer follows it; then its payload (bits past m 0) and zeros up
 * to a multiple of 64 bytes. Together they end exactly at the container's
 * length, fit in max_bytes, and their item counts add up to the header's. */
static int v2_layers(const bg__file_src *src, bg__file_plan *plan)
{
    const bg__scalable_params *p = &plan->params;
    bg_file_info *info = &plan->info;
    uint32_t n = info->layers;
    uint64_t total = src->len, off = BG_FILE_HEADER_BYTES;
    uint64_t items = 0, bits = 0, capacity = 0, payload = 0, bytes = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (total - off < BG_FILE_HEADER_BYTES)
            return BG_ECORRUPT;
        uint8_t *lh = plan->part_head[i];
        int rc = bg__file_src_read(src, off, lh, BG_FILE_HEADER_BYTES);
        if (rc != BG_OK)
            return rc;
        if (memcmp(lh, BG__FILE_MAGIC, BG__FILE_MAGIC_LEN) != 0 ||
            bg__get_le(lh + BG__OFF_VERSION, 2) != BG__FILE_V1)
            return BG_ECORRUPT;
        bg_file_info li;
        bg__filter_shape ls;
        if ((rc = v1_fields(lh, &li, &ls)) != BG_OK)
            return rc;
        uint64_t cap;
        if (li.checksum != 0 || ls.variant != bg__scalable_layer_variant(p, i) ||
            ls.seed != p->seed ||
            !bg__scalable_layer_capacity(p, i, &cap) || ls.capacity != cap ||
            (i + 1 < n && ls.items < cap))
            return BG_ECORRUPT;
        uint64_t padded = bg__file_v2_padded(li.payload_bytes);
        if (padded > total - off)
            return BG_ECORRUPT;
        /* The payload's last byte and the padding after it: <= 64 bytes. */
        uint64_t image = BG_FILE_HEADER_BYTES + li.payload_bytes;
        uint8_t tail[BG__V2_ALIGN];
        size_t tail_n = (size_t)(padded - image + 1);
        if ((rc = bg__file_src_read(src, off + image - 1, tail, tail_n)) != BG_OK)
            return rc;
        if (!bg__file_tail_ok(bg__file_payload_bits(ls.variant, ls.m), tail[0]) ||
            !bg__all_zero(tail + 1, tail_n - 1))
            return BG_ECORRUPT;
        if (items > UINT64_MAX - ls.items)
            return BG_ECORRUPT;
        items += ls.items;
        uint64_t array = bg__filter_array_bytes(&ls);
        if (array > p->max_bytes - bytes)
            return BG_ECORRUPT;
        bytes += array;
        bits = add_sat(bits, ls.m);
        capacity = add_sat(capacity, ls.capacity);
        payload += li.payload_bytes; /* bounded by the input's length */
        plan->part[i] = (bg__file_part){
            .shape = ls,
            .head_offset = off,
            .payload_offset = off + BG_FILE_HEADER_BYTES,
            .payload_bytes = li.payload_bytes,
            .pad_bytes = padded - image,
        };
        info->hashes = ls.k;
        off += padded;
    }
    if (off != total || items != info->items)
        return BG_ECORRUPT;
    plan->parts = n;
    info->bits = bits;
    info->capacity = capacity;
    info->payload_offset = plan->part[0].payload_offset;
    info->payload_bytes = payload;
    return BG_OK;
}

int bg__file_plan_read(const bg__file_src *src, bg__file_plan *plan)
{
    memset(&plan->info, 0, sizeof plan->info);
    plan->parts = 0;
    size_t head_len = src->len < BG_FILE_HEADER_BYTES ? (size_t)src->len : BG_FILE_HEADER_BYTES;
    int rc = bg__file_src_read(src, 0, plan->head, head_len);
    if (rc != BG_OK)
        return rc;
    unsigned version;
    if ((rc = parse_prefix(plan->head, head_len, &version)) != BG_OK)
        return rc;
    if (version == BG__FILE_V1)
        return plan_v1(src, plan);
    if (version == BG__FILE_V3)
        return bg__rb_plan_read(src, plan);
    if ((rc = v2_header(src, plan)) != BG_OK)
        return rc;
    return v2_layers(src, plan);
}

/* The smallest and largest version-2 image with `layers` layers whose
 * arrays take at most max_bytes: each layer is a 128-byte header, a payload
 * of 8 bytes (m >= 64) to its array's size, padded to 64. */
static bool v2_total_plausible(uint64_t total, uint32_t layers, uint64_t max_bytes)
{
    uint64_t min_layer = bg__file_v2_padded(8);
    uint64_t body = total - BG_FILE_HEADER_BYTES;
    uint64_t overhead = (uint64_t)layers * (BG_FILE_HEADER_BYTES + BG__V2_ALIGN - 1);
    return total % BG__V2_ALIGN == 0 && body / min_layer >= layers &&
           (body <= overhead || body - overhead <= max_bytes);
}

int bg_file_image_size(const void *head, size_t len, uint64_t *out)
{
    if (out == NULL || (head == NULL && len != 0))
        return BG_EINVAL;
    const uint8_t *h = head;
    size_t head_len = len < BG_FILE_HEADER_BYTES ? len : BG_FILE_HEADER_BYTES;
    unsigned version;
    int rc = parse_prefix(h, head_len, &version);
    if (rc != BG_OK)
        return rc;
    bg_file_info info;
    if (version == BG__FILE_V1) {
        bg__filter_shape shape;
        if ((rc = v1_fields(h, &info, &shape)) != BG_OK)
            return rc;
        /* m <= 2^63, so payload_bytes <= 2^60: no wrap. */
        *out = info.payload_offset + info.payload_bytes;
        return BG_OK;
    }
    if (version == BG__FILE_V3) {
        uint64_t total, max_bytes;
        if ((rc = bg__rb_header_fields(h, &info, &total, &max_bytes)) != BG_OK)
            return rc;
        /* At most 64 + 63 bytes per link besides the arrays. */
        uint64_t overhead = (uint64_t)info.layers * (BG__V3_LINK_HEAD + BG__V2_ALIGN - 1);
        uint64_t body = total - BG_FILE_HEADER_BYTES;
        if (body > overhead && body - overhead > max_bytes)
            return BG_ECORRUPT;
        *out = total;
        return BG_OK;
    }
    bg__scalable_params p;
    uint64_t total;
    if ((rc = v2_fields(h, 0, &info, &p, &total)) != BG_OK)
        return rc;
    if (!v2_total_plausible(total, info.layers, p.max_bytes))
        return BG_ECORRUPT;
    *out = total;
    return BG_OK;
}

bool bg__file_tail_ok(uint64_t payload_bits, uint8_t last_byte)
{
    unsigned used = (unsigned)(payload_bits % 8); /* bits of the last byte in use; 0: all */
    return used == 0 || (last_byte & (0xffu >> used)) == 0;
}

/* Structure and (unless told not to) checksum of an image in memory. */
static int inspect_image(const uint8_t *buf, size_t len, unsigned flags, bg__file_plan *plan)
{
    bg__file_src src = {.buf = buf, .fd = -1, .len = len};
    int rc = bg__file_plan_read(&src, plan);
    if (rc != BG_OK)
        return rc;
    if (flags & BG_FILE_NO_VERIFY)
        return BG_OK;
    bool ok = bg__file_checksum(buf, len) == plan->info.checksum;
    plan->info.checksum_state = ok ? BG_CHECKSUM_OK : BG_CHECKSUM_MISMATCH;
    return ok ? BG_OK : BG_ECHECKSUM;
}

bool bg__file_flags_ok(unsigned flags)
{
    return (flags & ~(unsigned)(BG_FILE_NO_VERIFY | BG_FILE_SINGLE_WRITER)) == 0;
}

int bg_file_inspect_buffer(const void *buf, size_t len, unsigned flags, bg_file_info *out)
{
    if ((buf == NULL && len != 0) || out == NULL || !bg__file_flags_ok(flags))
        return BG_EINVAL;
    bg__file_plan plan;
    int rc = inspect_image(buf, len, flags, &plan);
    *out = plan.info;
    return rc;
}

/* A scalable filter from a validated version-2 image in memory. */
static int decode_v2(bg_filter **out, const uint8_t *buf, bg__file_plan *plan, bool single_writer)
{
    plan->params.single_writer = single_writer;
    bg_filter *f;
    int rc = bg__scalable_shell(&f, &plan->params);
    if (rc != BG_OK)
        return rc;
    for (uint32_t i = 0; i < plan->parts; i++) {
        bg__file_part *pt = &plan->part[i];
        pt->shape.single_writer = single_writer;
        bg_filter *layer;
        if ((rc = bg__filter_alloc(&layer, &pt->shape)) != BG_OK) {
            bg_filter_free(f);
            return rc;
        }
        memcpy((void *)layer->words, buf + pt->payload_offset, (size_t)pt->payload_bytes);
        if ((rc = bg__scalable_push(f, layer)) != BG_OK) {
            bg_filter_free(layer);
            bg_filter_free(f);
            return rc;
        }
    }
    *out = f;
    return BG_OK;
}

int bg_filter_decode(bg_filter **out, const void *buf, size_t len, unsigned flags)
{
    if (out == NULL)
        return BG_EINVAL;
    *out = NULL;
    if ((buf == NULL && len != 0) || !bg__file_flags_ok(flags))
        return BG_EINVAL;
    bg__file_plan plan;
    int rc = inspect_image(buf, len, flags, &plan);
    if (rc != BG_OK)
        return rc;
    bool single_writer = (flags & BG_FILE_SINGLE_WRITER) != 0;
    if (plan.info.version == BG__FILE_V2 || plan.info.version == BG__FILE_V4)
        return decode_v2(out, buf, &plan, single_writer);
    if (plan.info.version == BG__FILE_V3) {
        bg__file_src src = {.buf = buf, .fd = -1, .len = len};
        return bg__rb_load(&src, &plan, false, single_writer, out); /* verified above */
    }
    bg__filter_shape shape = plan.part[0].shape;
    shape.single_writer = single_writer;
    bg_filter *f;
    rc = bg__filter_alloc(&f, &shape);
    if (rc != BG_OK)
        return rc;
    memcpy((void *)f->words, (const uint8_t *)buf + plan.part[0].payload_offset,
           (size_t)plan.part[0].payload_bytes);
    *out = f;
    return BG_OK;
}
