/* SPDX-License-Identifier: BSD-3-Clause */
/* Writes the seed corpus for fuzz_remote_reply into a directory:
 *
 *   make_remote_corpus DIR
 *
 * Each seed is a session byte (fuzz_remote_reply.c: bit 0 module, bit 1
 * create) and then what a well-behaved server would answer, command by
 * command, in RESP: the replies of a whole session that succeeds, and
 * sessions that meet the errors and detours the client handles (NOSCRIPT,
 * BGSTALE, BGREBUILD, a swap followed, a sharded filter, a filter that is
 * missing or refuses). Run the target with FUZZ_REMOTE_VERBOSE=1 on a seed
 * to see each call's status. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/file.h>
#include <bloomgate/filter.h>

typedef struct out {
    char buf[16384];
    size_t len;
} out;

static void put(out *o, const void *p, size_t n)
{
    if (o->len + n > sizeof o->buf) {
        fprintf(stderr, "make_remote_corpus: seed too long\n");
        exit(1);
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}

static void putf(out *o, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    put(o, tmp, (size_t)n);
}

static void bulk_n(out *o, const void *s, size_t n)
{
    putf(o, "$%zu\r\n", n);
    put(o, s, n);
    put(o, "\r\n", 2);
}

static void bulk(out *o, const char *s) { bulk_n(o, s, strlen(s)); }
static void integer(out *o, long long v) { putf(o, ":%lld\r\n", v); }
static void array(out *o, long n) { putf(o, "*%ld\r\n", n); }
static void nil(out *o) { put(o, "$-1\r\n", 5); }
static void status(out *o, const char *s) { putf(o, "+%s\r\n", s); }
static void error(out *o, const char *s) { putf(o, "-%s\r\n", s); }

/* SCRIPT LOAD's answer: a SHA1, as 40 hex digits. */
static void sha(out *o, int i)
{
    char s[41];
    snprintf(s, sizeof s, "%040x", i + 1);
    bulk(o, s);
}

/* The meta hash (HMGET of 13 fields): m bits, k hashes, generation g; a
 * pending rebuild `next` (0: none). */
static void meta(out *o, const char *m, const char *k, const char *g, const char *next)
{
    array(o, 13);
    bulk(o, "1");
    bulk(o, "standard");
    bulk(o, m);
    bulk(o, k);
    bulk(o, "7");
    bulk(o, g);
    bulk(o, "100");
    bulk(o, "0.01");
    bulk(o, g);
    if (next) {
        bulk(o, next);
        bulk(o, m);
        bulk(o, k);
        bulk(o, "7");
    } else {
        for (int i = 0; i < 4; i++)
            nil(o);
    }
}

static void ints(out *o, int n, long long v)
{
    array(o, n);
    for (int i = 0; i < n; i++)
        integer(o, v);
}

/* A bitmap session after open: every command answered as Redis would. */
static void bitmap_rest(out *o, int fetch_bytes)
{
    sha(o, 1); /* add_many: SCRIPT LOAD, EVALSHA */
    ints(o, 3, 1);
    sha(o, 2); /* contains_many */
    array(o, 3);
    integer(o, 1);
    integer(o, 0);
    integer(o, 1);
    ints(o, 1, 1); /* test_and_add */
    ints(o, 1, 1); /* contains */
    sha(o, 3);     /* stats */
    array(o, 3);
    bulk(o, "4");
    integer(o, 20);
    bulk(o, "42");
    sha(o, 4); /* expire */
    integer(o, 1);
    sha(o, 5); /* fetch */
    array(o, 3);
    bulk(o, "42");
    bulk(o, "4");
    char bytes[128];
    for (int i = 0; i < fetch_bytes; i++)
        bytes[i] = (char)(i * 37);
    bulk_n(o, bytes, (size_t)fetch_bytes);
    status(o, "OK"); /* rebuild_begin: SET PX, SETRANGE, then the script */
    integer(o, 128);
    sha(o, 6);
    bulk(o, "42");
    sha(o, 7); /* rebuild_add_many */
    ints(o, 3, 1);
    sha(o, 8); /* rebuild_commit */
    bulk(o, "42");
    sha(o, 9); /* drop */
    integer(o, 2);
    integer(o, 0);   /* publish_shards: EXISTS {fz}:meta */
    nil(o);          /* GET {fz}:shards */
    status(o, "OK"); /* shard 0: the SET (PX) of its 8 bytes */
    sha(o, 10);      /* its script: SCRIPT LOAD, EVALSHA */
    status(o, "OK");
    status(o, "OK"); /* shard 1 */
    status(o, "OK");
    status(o, "OK"); /* SET {fz}:shards 2 NX */
}

/* BF.INFO's answer (RedisBloom's fields) for a filter of `items` items. */
static void bf_info(out *o, long long items)
{
    array(o, 10);
    bulk(o, "Capacity");
    integer(o, 100);
    bulk(o, "Size");
    integer(o, 240);
    bulk(o, "Number of filters");
    integer(o, 1);
    bulk(o, "Number of items inserted");
    integer(o, items);
    bulk(o, "Expansion rate");
    integer(o, 2);
}

/* A module fetch and the publish of what came down: the copy script, then
 * BF.SCANDUMP's header, rest and end of the image of a real scalable filter
 * (two layers), UNLINK; then the chunk script for the header and the rest,
 * and the commit script. */
static void module_fetch_publish(out *o)
{
    bg_filter *f;
    bg_filter_options fo = {.variant = BG_VARIANT_SCALABLE, .capacity = 20, .error_rate = 0.01,
                            .max_bytes = 1u << 20};
    uint8_t img[4096];
    size_t len = 0;
    if (bg_filter_new(&f, &fo) != BG_OK) {
        fprintf(stderr, "make_remote_corpus: cannot make a filter\n");
        exit(1);
    }
    for (int i = 0; i < 30; i++)
        (void)bg_filter_add(f, &i, sizeof i);
    if (bg_filter_encode(f, img, sizeof img, &len) != BG_OK) {
        fprintf(stderr, "make_remote_corpus: cannot encode a filter\n");
        exit(1);
    }
    bg_filter_free(f);
    sha(o, 22); /* the copy script */
    integer(o, 1);
    array(o, 2); /* BF.SCANDUMP 0: the header */
    integer(o, 1);
    bulk_n(o, img, BG_FILE_HEADER_BYTES);
    array(o, 2); /* BF.SCANDUMP 1: the rest */
    integer(o, (long long)len + 1);
    bulk_n(o, img + BG_FILE_HEADER_BYTES, len - BG_FILE_HEADER_BYTES);
    array(o, 2); /* the end */
    integer(o, 0);
    bulk(o, "");
    integer(o, 1); /* UNLINK the copy */
    sha(o, 20);    /* the chunk script: header, rest */
    integer(o, 1);
    integer(o, 1);
    sha(o, 21); /* the commit script */
    integer(o, 1);
}

/* A module session (fuzz_remote_reply.c, session()): created (staged
 * first) or opened; with `pending`, the first batch finds a rebuild pending
 * and runs the script that adds to both. Script SHA1s are learnt once. */
static void module_session(out *o, int create, int pending)
{
    if (create) {
        integer(o, 1);    /* the stage script (EVAL) */
        ints(o, 3, 1);    /* BF.INSERT into the staging key */
        integer(o, 1);    /* the stage commit script (EVAL) */
        status(o, "OK"); /* BF.RESERVE */
    } else {
        bf_info(o, 0);
    }
    if (pending) {
        bulk(o, "{fz}:rebuild:00000000000000ab"); /* HGET {fz}:rebuild key */
        ints(o, 3, 1);                            /* BF.INSERT */
        sha(o, 14);                               /* SCRIPT LOAD: add to both */
        ints(o, 3, 1);
    } else {
        nil(o);
        ints(o, 3, 1);
    }
    ints(o, 3, 1); /* BF.MEXISTS */
    nil(o);        /* test-and-add: HGET, then BF.INSERT of one key */
    ints(o, 1, 1);
    ints(o, 1, 1); /* contains: BF.MEXISTS of one key */
    bf_info(o, 4);
    integer(o, 1); /* PEXPIRE */
    module_fetch_publish(o);
    sha(o, 15); /* rebuild begin */
    integer(o, 1);
    sha(o, 16); /* rebuild add */
    ints(o, 3, 1);
    sha(o, 17); /* rebuild commit */
    integer(o, 1);
    sha(o, 19); /* drop */
    integer(o, 1);
}

static int write_seed(const char *dir, int n, unsigned char session, const out *o)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%03d", dir, n);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(&session, 1, 1, f) != 1 || fwrite(o->buf, 1, o->len, f) != o->len ||
        fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_remote_corpus DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    int n = 0, bad = 0;
    out o;

    /* 0: open a bitmap filter of 1024 bits, the whole session. */
    o.len = 0;
    meta(&o, "1024", "3", "42", NULL);
    bitmap_rest(&o, 128);
    bad |= write_seed(dir, n++, 0, &o);

    /* 1: create one: EXISTS, SET PX, SETRANGE, SCRIPT LOAD, the script's
     * OK. */
    o.len = 0;
    integer(&o, 0);
    status(&o, "OK");
    integer(&o, 120);
    sha(&o, 0);
    status(&o, "OK");
    bitmap_rest(&o, 120);
    bad |= write_seed(dir, n++, 2, &o);

    /* 2: NOSCRIPT (a restarted server), then EVAL; a swap followed (the
     * generation after the results); BGREBUILD, the rebuild read again. */
    o.len = 0;
    meta(&o, "1024", "3", "42", NULL);
    sha(&o, 1);
    error(&o, "NOSCRIPT No matching script. Please use EVAL.");
    array(&o, 4);
    integer(&o, 1);
    integer(&o, 0);
    integer(&o, 1);
    bulk(&o, "43");
    sha(&o, 2);
    error(&o, "BGREBUILD the pending rebuild changed");
    array(&o, 4);
    bulk(&o, "44");
    bulk(&o, "1024");
    bulk(&o, "3");
    bulk(&o, "7");
    ints(&o, 3, 0);
    bad |= write_seed(dir, n++, 0, &o);

    /* 3: a pending rebuild at open; a stale handle. */
    o.len = 0;
    meta(&o, "1024", "3", "42", "44");
    sha(&o, 1);
    error(&o, "BGSTALE filter was re-created or reshaped: generation 9, this handle has 42");
    bad |= write_seed(dir, n++, 0, &o);

    /* 4: no such filter (all nil), then the shard count: 2 shards. */
    o.len = 0;
    array(&o, 13);
    for (int i = 0; i < 13; i++)
        nil(&o);
    bulk(&o, "2");
    meta(&o, "512", "3", "42", NULL);
    meta(&o, "512", "3", "43", NULL);
    sha(&o, 1);
    ints(&o, 2, 1);
    ints(&o, 1, 1);
    bad |= write_seed(dir, n++, 0, &o);

    /* 5: a meta hash of an unknown format, a wrong variant, bad numbers. */
    o.len = 0;
    array(&o, 13);
    bulk(&o, "2");
    for (int i = 0; i < 12; i++)
        nil(&o);
    bad |= write_seed(dir, n++, 0, &o);
    o.len = 0;
    meta(&o, "18446744073709551616", "0", "0", NULL);
    bad |= write_seed(dir, n++, 0, &o);

    /* 7: replies of the wrong type or size everywhere. */
    o.len = 0;
    meta(&o, "64", "1", "1", NULL);
    bulk(&o, "not a sha");
    sha(&o, 1);
    integer(&o, 5);
    sha(&o, 2);
    ints(&o, 7, 2);
    status(&o, "QUEUED");
    array(&o, -1);
    bad |= write_seed(dir, n++, 0, &o);

    /* 8: the module backend, opened; 9: created; 10: missing; 13: opened,
     * with a rebuild pending. */
    o.len = 0;
    module_session(&o, 0, 0);
    bad |= write_seed(dir, n++, 1, &o);
    o.len = 0;
    module_session(&o, 1, 0);
    bad |= write_seed(dir, n++, 3, &o);
    o.len = 0;
    error(&o, "ERR not found");
    bad |= write_seed(dir, n++, 1, &o);

    /* 11: an AUTH-style refusal and a protocol error at once. */
    o.len = 0;
    error(&o, "NOAUTH Authentication required.");
    put(&o, "!bad\r\n", 6);
    bad |= write_seed(dir, n++, 0, &o);

    /* 12: an array header of 1.3e9 elements (hiredis would allocate 10 GiB
     * for it before any element arrives; the client caps it). */
    o.len = 0;
    meta(&o, "1024", "3", "42", NULL);
    sha(&o, 1);
    put(&o, "*1333333333\r\n", 13);
    bad |= write_seed(dir, n++, 0, &o);

    o.len = 0;
    module_session(&o, 0, 1);
    bad |= write_seed(dir, n++, 1, &o);

    return bad ? 1 : 0;
}
