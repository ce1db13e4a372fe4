/* SPDX-License-Identifier: BSD-3-Clause */
/* The chunk protocol (chunks.h): SCANDUMP's steps and LOADCHUNK's
 * assembly. No Redis here: the module and tests/fuzz/fuzz_chunks.c both
 * link this file. */
#include <stdlib.h>
#include <string.h>

#include "redis_module/chunks.h"

/* The format versions the module's images have (docs/FORMAT.md): scalable
 * filters only, version 4 for those with a first share or blocked layers
 * above standard ones, which version 2 cannot state. */
#define SCALABLE_IMAGE_VERSION 2u
#define SCALABLE_IMAGE_VERSION_SPLIT 4u

struct bgr_assembly {
    uint8_t *buf;   /* total bytes, the first `have` received */
    uint64_t total;
    uint64_t have;
};

static void *(*chunk_alloc)(size_t) = malloc;
static void (*chunk_free)(void *) = free;

void bgr_assembly_set_allocator(void *(*alloc_fn)(size_t), void (*free_fn)(void *))
{
    chunk_alloc = alloc_fn ? alloc_fn : malloc;
    chunk_free = free_fn ? free_fn : free;
}

const char *bgr_status_name(int rc)
{
    switch (rc) {
    case BGR_EITER:
        return "BGR_EITER";
    case BGR_EOFFSET:
        return "BGR_EOFFSET";
    case BGR_ECHUNKBIG:
        return "BGR_ECHUNKBIG";
    case BGR_EORDER:
        return "BGR_EORDER";
    case BGR_ECAP:
        return "BGR_ECAP";
    default:
        return bg_err_name(rc);
    }
}

uint64_t bgr_image_cap(uint64_t max_bytes)
{
    return max_bytes > UINT64_MAX - BGR_IMAGE_OVERHEAD ? UINT64_MAX : max_bytes + BGR_IMAGE_OVERHEAD;
}

void bgr_scan_step(uint64_t total, long long iter, uint64_t chunk_max, bgr_span *out)
{
    *out = (bgr_span){0, 0, 0};
    if (iter < 0)
        return;
    if (iter == 0) {
        *out = (bgr_span){.offset = 0, .len = BG_FILE_HEADER_BYTES, .next = 1};
        return;
    }
    uint64_t offset = iter == 1 ? BG_FILE_HEADER_BYTES : (uint64_t)iter - 1;
    if (offset >= total)
        return;
    uint64_t len = total - offset < chunk_max ? total - offset : chunk_max;
    *out = (bgr_span){.offset = offset, .len = len, .next = (long long)(offset + len + 1)};
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Fields of a version-2 (and version-4) header (docs/FORMAT.md). */
#define OFF_VERSION 8    /* u16 */
#define OFF_MAX_BYTES 72 /* u64: the cap on all layers' arrays */

int bgr_assembly_begin(bgr_assembly **out, const void *head, size_t len, uint64_t max_total,
                       uint64_t max_growth)
{
    if (out == NULL || (head == NULL && len != 0))
        return BG_EINVAL;
    *out = NULL;
    /* The header chunk is the header, exactly. */
    if (len > BG_FILE_HEADER_BYTES)
        return BG_ETRAILING;
    uint64_t total;
    int rc = bg_file_image_size(head, len, &total);
    if (rc != BG_OK)
        return rc;
    /* Fields of a header bg_file_image_size took. */
    const uint8_t *h = head;
    uint64_t version = get_le(h + OFF_VERSION, 2);
    if (version != SCALABLE_IMAGE_VERSION && version != SCALABLE_IMAGE_VERSION_SPLIT)
        return BG_EVARIANT;
    if (total > max_total || total > SIZE_MAX || get_le(h + OFF_MAX_BYTES, 8) > max_growth)
        return BGR_ECAP;
    bgr_assembly *a = chunk_alloc(sizeof *a);
    if (a == NULL)
        return BG_ENOMEM;
    a->buf = chunk_alloc((size_t)total);
    if (a->buf == NULL) {
        chunk_free(a);
        return BG_ENOMEM;
    }
    memcpy(a->buf, head, BG_FILE_HEADER_BYTES);
    a->total = total;
    a->have = BG_FILE_HEADER_BYTES;
    *out = a;
    return BG_OK;
}

int bgr_assembly_feed(bgr_assembly *a, long long iter, const void *data, size_t len)
{
    if (a == NULL || (data == NULL && len != 0) || a->have == a->total)
        return BG_EINVAL;
    if (iter < 2 || (uint64_t)iter - 1 < len)
        return BGR_EITER;
    uint64_t end = (uint64_t)iter - 1, start = end - len;
    if (start >= a->total)
        return BGR_EOFFSET;
    if (end > a->total)
        return BGR_ECHUNKBIG;
    if (len == 0 || start != a->have)
        return BGR_EORDER;
    memcpy(a->buf + start, data, len);
    a->have = end;
    return a->have == a->total;
}

int bgr_assembly_finish(const bgr_assembly *a, bg_filter **out)
{
    if (out == NULL)
        return BG_EINVAL;
    *out = NULL;
    if (a == NULL || a->have != a->total)
        return BG_EINVAL;
    return bg_filter_decode(out, a->buf, (size_t)a->total, BG_FILE_SINGLE_WRITER);
}

uint64_t bgr_assembly_total(const bgr_assembly *a)
{
    return a->total;
}

uint64_t bgr_assembly_have(const bgr_assembly *a)
{
    return a->have;
}

const uint8_t *bgr_assembly_bytes(const bgr_assembly *a)
{
    return a->buf;
}

bgr_assembly *bgr_assembly_clone(const bgr_assembly *a)
{
    bgr_assembly *c = chunk_alloc(sizeof *c);
    if (c == NULL)
        return NULL;
    c->buf = chunk_alloc((size_t)a->total);
    if (c->buf == NULL) {
        chunk_free(c);
        return NULL;
    }
    /* Only the bytes received mean anything; the rest is copied as zeros
     * so that no uninitialised memory is ever read. */
    memcpy(c->buf, a->buf, (size_t)a->have);
    memset(c->buf + a->have, 0, (size_t)(a->total - a->have));
    c->total = a->total;
    c->have = a->have;
    return c;
}

void bgr_assembly_free(bgr_assembly *a)
{
    if (a == NULL)
        return;
    chunk_free(a->buf);
    chunk_free(a);
}
