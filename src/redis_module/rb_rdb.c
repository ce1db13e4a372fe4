/* SPDX-License-Identifier: BSD-3-Clause */
/* RedisBloom's RDB value, read and written through rb_rdb.h's interface.
 * No Redis here: the module and tests/fuzz/fuzz_rb_rdb.c both link this
 * file. */
#include <math.h>
#include <string.h>

#include "redis_module/rb_rdb.h"

/* The file decoder names a wrong magic BG_EBADMAGIC before it judges any
 * other field, so this asks it rather than keeping a copy of the magic. */
bool bgr_header_is_bloomgate(const void *data, size_t len)
{
    uint64_t total;
    return data != NULL && len == BG_FILE_HEADER_BYTES &&
           bg_file_image_size(data, len, &total) != BG_EBADMAGIC;
}

/* Read helpers: 0 or -1, as the reader's calls. */
static int get_u(const bgr_rdb_reader *r, uint64_t *v)
{
    return r->load_unsigned(r->io, v);
}

static int get_d(const bgr_rdb_reader *r, double *v)
{
    return r->load_double(r->io, v);
}

static int fail(const char **why, const char *what, int rc)
{
    if (why != NULL)
        *why = what;
    return rc;
}

/* 2^64 as a double: products at or above it have no uint64_t value. */
#define TWO_POW_64 18446744073709551616.0

/* One link's fields, in the order of the encoding, for encver `encver`.
 * The array is read last, by the caller. */
static int read_link_fields(const bgr_rdb_reader *r, int encver, bg_rb_link *l, const char **why)
{
    uint64_t entries, hashes, bits = 0, n2 = 0;
    double error, bpe;
    if (get_u(r, &entries) || get_d(r, &error) || get_u(r, &hashes) || get_d(r, &bpe))
        return fail(why, "short value or I/O error in a link", BGR_RDB_EREAD);
    if (encver >= 1) {
        if (get_u(r, &bits) || get_u(r, &n2))
            return fail(why, "short value or I/O error in a link", BGR_RDB_EREAD);
    } else {
        /* encver 0 stores no bit count: RedisBloom derives it, truncating
         * the double product. One that has no 64-bit value (NaN, negative,
         * 2^64 or more) can never equal 8 x an array's length, which the
         * checks require, so it is refused here instead of converted. */
        double b = (double)entries * bpe;
        if (!(b >= 0.0 && b < TWO_POW_64))
            return fail(why, "encver 0 link: entries x bpe out of range", BG_ECORRUPT);
        bits = (uint64_t)b;
    }
    *l = (bg_rb_link){
        .entries = entries,
        .error = error,
        .bpe = bpe,
        .hashes = (uint32_t)hashes, /* RedisBloom's widths: mod 2^32, mod 2^8 */
        .bits = bits,
        .bytes = 0,
        .n2 = (uint8_t)n2,
        .size = 0,
    };
    return BG_OK;
}

int bgr_rb_rdb_load(const bgr_rdb_reader *r, int encver, uint64_t max_bytes, bg_filter **out,
                    const char **why)
{
    *out = NULL;
    if (encver < 0 || encver > BGR_RB_ENCVER)
        return fail(why, "unknown encoding version", BGR_RDB_EENCVER);
    if (max_bytes == 0)
        max_bytes = BG_DEFAULT_MAX_BYTES;

    uint64_t size, nfilters, options = 0, growth = 2;
    if (get_u(r, &size) || get_u(r, &nfilters))
        return fail(why, "short value or I/O error in the chain", BGR_RDB_EREAD);
    if (encver >= 2 && get_u(r, &options))
        return fail(why, "short value or I/O error in the chain", BGR_RDB_EREAD);
    if (encver >= 4 && get_u(r, &growth))
        return fail(why, "short value or I/O error in the chain", BGR_RDB_EREAD);
    if (nfilters == 0)
        return fail(why, "no links", BG_ECORRUPT);
    /* More links than the library's table can count: every one of them
     * would need at least a byte of array, far past any MAX_BYTES. */
    if (nfilters > UINT32_MAX)
        return fail(why, "link count out of range", BG_ETOOBIG);

    bg_rb_chain ch = {
        .size = size,
        .nfilters = (uint32_t)nfilters,
        .options = (uint32_t)options,
        .growth = (uint32_t)growth,
    };
    bg_filter *f;
    int rc = bg_rb_new(&f, &ch, max_bytes);
    if (rc != BG_OK)
        return fail(why, "could not make the chain", rc);

    uint64_t total = 0; /* arrays pushed so far */
    for (uint64_t i = 0; i < nfilters; i++) {
        bg_rb_link l;
        rc = read_link_fields(r, encver, &l, why);
        if (rc != BG_OK)
            goto out;
        /* Before the reader allocates the array: a bit count that alone
         * passes what is left of max_bytes can only be refused. */
        uint64_t need = l.bits / 8 + (l.bits % 8 != 0);
        if (need > max_bytes - total) {
            rc = fail(why, "link beyond MAX_BYTES", BG_ETOOBIG);
            goto out;
        }
        size_t len = 0;
        void *array = r->load_string(r->io, &len);
        if (array == NULL) {
            rc = fail(why, "short value or I/O error in a link's array", BGR_RDB_EREAD);
            goto out;
        }
        uint64_t lsize;
        if (get_u(r, &lsize)) {
            r->free_string(r->io, array);
            rc = fail(why, "short value or I/O error in a link", BGR_RDB_EREAD);
            goto out;
        }
        l.size = lsize;
        l.bytes = len;
        if (r->adopt) {
            rc = bg_rb_push_link_owned(f, &l, array, len); /* array is the chain's */
        } else {
            rc = bg_rb_push_link(f, &l, array, len);
            r->free_string(r->io, array);
        }
        if (rc != BG_OK) {
            fail(why,
                 rc == BG_ECORRUPT  ? "a link fails RedisBloom's checks"
                 : rc == BG_ETOOBIG ? "links beyond MAX_BYTES"
                                    : "could not make a link",
                 rc);
            goto out;
        }
        total += len;
    }
    *out = f;
    return BG_OK;
out:
    bg_filter_free(f);
    return rc;
}

int bgr_rb_rdb_save(const bgr_rdb_writer *w, const bg_filter *f)
{
    bg_rb_chain ch;
    if (bg_rb_chain_get(f, &ch) != BG_OK)
        return BG_EINVAL;
    w->save_unsigned(w->io, ch.size);
    w->save_unsigned(w->io, ch.nfilters);
    w->save_unsigned(w->io, ch.options);
    w->save_unsigned(w->io, ch.growth);
    for (uint32_t i = 0; i < ch.nfilters; i++) {
        bg_rb_link l;
        const uint8_t *data;
        size_t len;
        if (bg_rb_link_get(f, i, &l) != BG_OK || bg_rb_link_array(f, i, &data, &len) != BG_OK)
            return BG_EINVAL;
        w->save_unsigned(w->io, l.entries);
        w->save_double(w->io, l.error);
        w->save_unsigned(w->io, l.hashes);
        w->save_double(w->io, l.bpe);
        w->save_unsigned(w->io, l.bits);
        w->save_unsigned(w->io, l.n2);
        w->save_string(w->io, data, len);
        w->save_unsigned(w->io, l.size);
    }
    return BG_OK;
}

uint64_t bgr_rb_info_size(const bg_filter *f)
{
    bg_rb_chain ch;
    if (bg_rb_chain_get(f, &ch) != BG_OK)
        return 0;
    uint64_t n = 32;
    for (uint32_t i = 0; i < ch.nfilters; i++) {
        bg_rb_link l;
        if (bg_rb_link_get(f, i, &l) == BG_OK)
            n += 64 + l.bytes;
    }
    return n;
}
