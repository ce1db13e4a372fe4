/* SPDX-License-Identifier: BSD-3-Clause */
/* The bitmap backend: a standard filter as a plain Redis string.
 *
 * This file holds the handle (create, open, close), the add and query
 * batches, stats, drop, expire and the ops table: everything a filter of
 * a fixed generation needs. Making a new generation is in two files of its
 * own, publish and fetch (upload and download of a local filter) in
 * bitmap_transfer.c and the rebuild in bitmap_rebuild.c, because each is a
 * protocol of several scripts that the add and query path never runs. The
 * helpers they share with this file are bg__bitmap_* (bitmap.h); the ones
 * the batch path calls per key are inline there, so the split costs that
 * path no call.
 *
 * HOW IT WORKS
 * The client hashes each key (bg_hash_key, the filter's seed) and computes
 * the k probe positions exactly as src/core/standard.c does, so the string
 * {name}:bits:<generation> is byte for byte the payload of a local standard
 * filter with the same m, k and seed. A batch is one EVALSHA of a script
 * that (1) reads the generation from {name}:meta and refuses with BGSTALE or
 * BGNOTFOUND if it is not the handle's, then (2) runs the batch as SETBIT
 * (adds, which return the old bits) or GETBIT (queries, stopping at a key's
 * first clear bit), and (3) adds the number of new keys to the meta hash's
 * items. A script runs atomically, so the check and the batch cannot be
 * separated by another client's drop or re-creation: a stale handle writes
 * nothing. The same script with one BITFIELD / BITFIELD_RO per batch (in
 * calls of at most 1024 operations, Lua's unpack limit) is slower for
 * queries, which must then fetch all k bits of every key, and a bare
 * BITFIELD cannot check anything: docs/DESIGN.md, "Remote client". Both other
 * ways stay here for the bench, in the testing build only (remote_testing.h,
 * BITMAP MODES; without BG_TESTING `raw` below is a constant 0).
 *
 * Scripts are loaded with SCRIPT LOAD the first time a connection needs
 * them; EVALSHA answering NOSCRIPT (a restarted server, SCRIPT FLUSH) falls
 * back to EVAL with the source, which nothing executed before.
 *
 * CREATION
 * The bit array is made at its full size with one SETRANGE at its last
 * byte (Redis zero-fills it), and only then does one script write the meta
 * hash, refusing if a meta hash appeared meanwhile. A reader either finds
 * no filter or a complete one. One command, not steps of a few MiB: each
 * step makes Redis reallocate the string, which copies it, so the steps
 * cost more in all, and stall Redis longer at their end, than one
 * allocation does (docs/PERFORMANCE.md). Publish sizes its upload this
 * way too, then writes the chunks in place.
 *
 * SWAPS
 * Publish and rebuild make a new generation: its bits key is filled first
 * (nobody names it yet), then one script flips the meta hash's generation
 * and deletes the old bits. The check (check_generation) accepts a handle whose
 * generation is old if the lineage, bits, hashes and seed still match (its
 * positions are right): the script then uses the current generation's bits
 * key, which it builds from the meta hash, so it is not in KEYS (same slot
 * thanks to {name}; docs/DESIGN.md, "Remote client", weighs this), and returns the generation
 * so the client adopts it. While a rebuild is pending (meta field `next`),
 * add scripts write both generations, and refuse with BGREBUILD, writing
 * nothing, if the handle computed positions for another pending rebuild than
 * the server's: the client reads `next` again and retries.
 *
 * ORPHANS
 * Create, publish and rebuild first make a bits key that no meta hash
 * names, then one script adopts it. A connection lost in between leaves
 * the key behind (the client cannot delete it: it has no connection), up
 * to 512 MiB of server memory that nothing would ever free. So such a key
 * is made with a time to live of BG_REMOTE_STAGE_TTL_MS
 * (bg__bitmap_stage_bits), renewed by every chunk of an upload, and the
 * adopting script removes it (PERSIST) or gives it the filter's. A publish
 * whose upload outlived it gets BGNOTFOUND.
 *
 * SHARD PLACES
 * The shards of a sharded filter (sharded.c, SHARDING in remote.h) are
 * bitmap filters whose meta hash also holds `shard` = "j/S": shard j of S.
 * A key's shard comes from S and the seed, so a shard routed for another
 * S, or hashed with another seed, lacks keys its readers look for there.
 * So the publish script replaces a shard only by the same place and seed
 * (else BGEXISTS, writing nothing), and a filter of its own never replaces
 * a shard. Checked by the script on each shard, atomically, not once by
 * the client before the upload: two clients publishing one name at once
 * with other counts or seeds would both pass that check and then overwrite
 * each other's shards. Each writes s0 first, so the first to get there
 * keeps the name and the other is refused there. A meta hash without
 * `shard` (made before it existed) is taken for the right place. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <bloomgate/hash.h>
#include <bloomgate/sizing.h>

#include "common/alloc.h"
#include "bitmap.h"

/* Generations and staging keys: getrandom, or the clock and pid. */
uint64_t bg__random_u63(void)
{
    uint64_t g = 0;
    if (getrandom(&g, sizeof g, 0) != (ssize_t)sizeof g) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        g = (uint64_t)ts.tv_nsec * UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)ts.tv_sec ^
            ((uint64_t)getpid() << 32);
    }
    g &= INT64_MAX;
    return g ? g : 1;
}

int bg__bitmap_set_bits_key(bg__bitmap_filter *f)
{
    snprintf(f->gen_str, sizeof f->gen_str, "%" PRIu64, f->base.generation);
    size_t n = strlen(f->name) + strlen(f->gen_str) + 10;
    bg__free(f->bits_key);
    f->bits_key = bg__malloc(n);
    if (!f->bits_key)
        return BG_ENOMEM;
    snprintf(f->bits_key, n, "{%s}:bits:%s", f->name, f->gen_str);
    return BG_OK;
}

/* One command whose reply is only checked for not being an error. */
int bg__bitmap_command_ok(bg_remote *r, int argc, const char **argv, const size_t *lens)
{
    redisReply *rep;
    int rc = bg__remote_command(r, argc, argv, lens, &rep, 0);
    if (rc == BG_OK)
        freeReplyObject(rep);
    return rc;
}

/* Makes `key` a string of `bytes` bytes, `first` (n bytes) then zeros,
 * that expires in BG_REMOTE_STAGE_TTL_MS unless a script adopts it (the
 * create, publish and rebuild scripts make it persist, or give it the
 * filter's time to live): so a call whose connection is lost before that
 * leaves no array behind for good (ORPHANS). One SET, then one SETRANGE at
 * the last byte: see CREATION for why not in steps. */
int bg__bitmap_stage_bits(bg_remote *r, const char *key, const void *first, size_t n,
                          uint64_t bytes)
{
    char ttl[16], last[24];
    snprintf(ttl, sizeof ttl, "%u", BG_REMOTE_STAGE_TTL_MS);
    const char *set[5] = {"SET", key, first, "PX", ttl};
    size_t setl[5] = {3, strlen(key), n, 2, strlen(ttl)};
    int rc = bg__bitmap_command_ok(r, 5, set, setl);
    if (rc != BG_OK || n >= bytes)
        return rc;
    snprintf(last, sizeof last, "%" PRIu64, bytes - 1);
    const char *sa[4] = {"SETRANGE", key, last, "\0"};
    size_t sl[4] = {8, strlen(key), strlen(last), 1};
    return bg__bitmap_command_ok(r, 4, sa, sl);
}

static const bg__remote_filter_ops bitmap_ops;

/* A new handle on `name`, its shape not known yet. */
static int bitmap_new(bg__bitmap_filter **out, bg_remote *r, const char *name)
{
    bg__bitmap_filter *f = bg__calloc(1, sizeof *f);
    if (!f)
        return BG_ENOMEM;
    f->base.ops = &bitmap_ops;
    f->base.r = r;
    f->base.backend = BG_REMOTE_BITMAP;
    f->base.shards = 1;
    f->base.rb_lease_ms = BG_REMOTE_REBUILD_LEASE_MS;
    size_t n = strlen(name) + 8;
    f->name = bg__strdup(name);
    f->meta_key = bg__malloc(n);
    if (!f->name || !f->meta_key) {
        bg_remote_filter_close(&f->base);
        return BG_ENOMEM;
    }
    snprintf(f->meta_key, n, "{%s}:meta", name);
    bg__bitmap_no_next(&f->next);
    bg__bitmap_no_next(&f->rb);
    *out = f;
    return BG_OK;
}

static int create(bg__bitmap_filter *f, const bg_remote_filter_options *o, const char *place);

int bg__bitmap_create(bg_remote_filter **out, bg_remote *r, const char *name,
                      const bg_remote_filter_options *o, const char *place)
{
    bg__bitmap_filter *f;
    int rc = bitmap_new(&f, r, name);
    if (rc == BG_OK && (rc = create(f, o, place)) != BG_OK) {
        bg_remote_filter_close(&f->base);
        return rc;
    }
    if (rc == BG_OK)
        *out = &f->base;
    return rc;
}

static int create(bg__bitmap_filter *f, const bg_remote_filter_options *o, const char *place)
{
    bg_remote *r = f->base.r;
    if (o->expansion || o->nonscaling)
        return BG_EINVAL;
    if (o->bits > BG_REMOTE_MAX_BITS)
        return bg__remote_fail(r, BG_ETOOBIG, "%" PRIu64 " bits: a bitmap filter has at most 2^32",
                               o->bits);
    bg_sizing s = {.n = o->capacity, .p = o->error_rate, .m = o->bits, .k = o->hashes};
    int rc = bg_sizing_solve(BG_VARIANT_STANDARD, &s, BG_REMOTE_MAX_BITS);
    if (rc != BG_OK)
        return rc;
    if (s.m > BG_REMOTE_MAX_BITS)
        return BG_ETOOBIG;
    f->base.m = s.m;
    f->base.k = s.k;
    f->base.seed = o->seed;
    f->base.capacity = o->capacity ? s.n : 0;
    f->base.error_rate = o->capacity ? s.p : 0;
    f->base.generation = bg__random_u63();
    if ((rc = bg__bitmap_set_bits_key(f)) != BG_OK)
        return rc;
    memcpy(f->lineage, f->gen_str, sizeof f->lineage);
    bg__bitmap_no_next(&f->next);

    redisReply *rep;
    const char *ea[2] = {"EXISTS", f->meta_key};
    size_t el[2] = {6, strlen(f->meta_key)};
    if ((rc = bg__remote_command(r, 2, ea, el, &rep, 0)) != BG_OK)
        return rc;
    int exists = rep->type == REDIS_REPLY_INTEGER && rep->integer != 0;
    freeReplyObject(rep);
    if (exists)
        return bg__remote_fail(r, BG_EEXIST, "%s exists", f->meta_key);

    uint64_t bytes = (f->base.m + 7) / 8;
    if ((rc = bg__bitmap_stage_bits(r, f->bits_key, "", 0, bytes)) != BG_OK)
        goto orphan;

    char a[5][32];
    snprintf(a[0], sizeof a[0], "%" PRIu64, f->base.m);
    snprintf(a[1], sizeof a[1], "%" PRIu32, f->base.k);
    snprintf(a[2], sizeof a[2], "%" PRIu64, f->base.seed);
    snprintf(a[3], sizeof a[3], "%" PRIu64, bytes);
    snprintf(a[4], sizeof a[4], "%" PRIu64, f->base.capacity);
    char p[40];
    snprintf(p, sizeof p, "%.17g", f->base.error_rate);
    const char *ca[13] = {NULL, NULL, "2", f->meta_key, f->bits_key, f->gen_str,
                          a[0], a[1], a[2], a[3], a[4], p, place ? place : ""};
    size_t cl[13];
    for (int i = 2; i < 13; i++)
        cl[i] = strlen(ca[i]);
    rc = bg__bitmap_script(r, BG__SCRIPT_CREATE, 13, ca, cl, &rep);
    if (rc != BG_OK)
        goto orphan;
    freeReplyObject(rep);
    return BG_OK;

orphan:
    /* Best effort: the array is not referenced by any meta hash. */
    if (rc != BG_ECONN && rc != BG_EEXIST) {
        char keep[BG__REMOTE_ERRSTR];
        memcpy(keep, r->errstr, sizeof keep);
        (void)bg__remote_del(r, f->bits_key, NULL);
        memcpy(r->errstr, keep, sizeof keep);
    }
    return rc;
}

/* The pending rebuild from the meta fields next, next_bits, next_hashes,
 * next_seed (all nil: none). */
static int parse_next(bg__bitmap_filter *f, redisReply **e)
{
    bg__bitmap_no_next(&f->next);
    if (e[0]->type == REDIS_REPLY_NIL)
        return BG_OK;
    uint64_t g, m, k, seed;
    if (bg__bitmap_field_u64(e[0], &g) != 0 || bg__bitmap_field_u64(e[1], &m) != 0 ||
        bg__bitmap_field_u64(e[2], &k) != 0 || bg__bitmap_field_u64(e[3], &seed) != 0 || g == 0 ||
        m < BG_MIN_BITS || m > BG_REMOTE_MAX_BITS || k < 1 || k > BG_MAX_K)
        return bg__remote_fail(f->base.r, BG_ECORRUPT, "%s: the pending rebuild's fields are bad",
                               f->meta_key);
    f->next.gen = g;
    f->next.m = m;
    f->next.k = (uint32_t)k;
    f->next.seed = seed;
    snprintf(f->next.str, sizeof f->next.str, "%" PRIu64, g);
    return BG_OK;
}

/* Reads the pending rebuild again (after a script said it changed). */
static int reload_next(bg__bitmap_filter *f)
{
    const char *argv[6] = {"HMGET", f->meta_key, "next", "next_bits", "next_hashes", "next_seed"};
    size_t lens[6];
    for (int i = 0; i < 6; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep;
    int rc = bg__remote_command(f->base.r, 6, argv, lens, &rep, 0);
    if (rc != BG_OK)
        return rc;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 4)
        rc = bg__remote_fail(f->base.r, BG_EREMOTE, "HMGET: unexpected reply");
    else
        rc = parse_next(f, rep->element);
    freeReplyObject(rep);
    return rc;
}

static int open_meta(bg__bitmap_filter *f);

int bg__bitmap_open(bg_remote_filter **out, bg_remote *r, const char *name)
{
    bg__bitmap_filter *f;
    int rc = bitmap_new(&f, r, name);
    if (rc == BG_OK && (rc = open_meta(f)) != BG_OK) {
        bg_remote_filter_close(&f->base);
        return rc;
    }
    if (rc == BG_OK)
        *out = &f->base;
    return rc;
}

static int open_meta(bg__bitmap_filter *f)
{
    bg_remote *r = f->base.r;
    const char *argv[15] = {"HMGET", f->meta_key, "format", "variant", "bits", "hashes",
                            "seed", "generation", "capacity", "error_rate", "lineage",
                            "next", "next_bits", "next_hashes", "next_seed"};
    size_t lens[15];
    for (int i = 0; i < 15; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep;
    int rc = bg__remote_command(r, 15, argv, lens, &rep, 0);
    if (rc != BG_OK)
        return rc;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 13) {
        rc = bg__remote_fail(r, BG_EREMOTE, "HMGET: unexpected reply");
        goto out;
    }
    redisReply **e = rep->element;
    int all_nil = 1;
    for (int i = 0; i < 8; i++)
        all_nil &= e[i]->type == REDIS_REPLY_NIL;
    if (all_nil) {
        rc = bg__remote_fail(r, BG_ENOTFOUND, "%s does not exist", f->meta_key);
        goto out;
    }
    uint64_t format, m, k, gen, cap;
    if (bg__bitmap_field_u64(e[0], &format) != 0) {
        rc = bg__remote_fail(r, BG_ECORRUPT, "%s: no format field", f->meta_key);
        goto out;
    }
    if (format != 1) {
        rc = bg__remote_fail(r, BG_EVERSION, "%s: format %" PRIu64 " is not known", f->meta_key,
                             format);
        goto out;
    }
    if (e[1]->type != REDIS_REPLY_STRING || strcmp(e[1]->str, "standard") != 0) {
        rc = bg__remote_fail(r, BG_EVARIANT, "%s: only the standard variant is supported",
                             f->meta_key);
        goto out;
    }
    if (bg__bitmap_field_u64(e[2], &m) != 0 || bg__bitmap_field_u64(e[3], &k) != 0 ||
        bg__bitmap_field_u64(e[4], &f->base.seed) != 0 ||
        bg__bitmap_field_u64(e[5], &gen) != 0 || bg__bitmap_field_u64(e[6], &cap) != 0 ||
        e[7]->type != REDIS_REPLY_STRING || m < BG_MIN_BITS || k < 1 || k > BG_MAX_K ||
        gen == 0 || gen > (uint64_t)INT64_MAX) {
        rc = bg__remote_fail(r, BG_ECORRUPT, "%s: fields missing or out of range", f->meta_key);
        goto out;
    }
    if (m > BG_REMOTE_MAX_BITS) {
        rc = bg__remote_fail(r, BG_ETOOBIG, "%s: %" PRIu64 " bits, more than 2^32", f->meta_key,
                             m);
        goto out;
    }
    char *end;
    double p = strtod(e[7]->str, &end);
    /* 1 is a real model rate: bits far too few for the capacity (sizing
     * gives it, and bg__bitmap_create writes it). */
    if (end == e[7]->str || *end || !(p >= 0 && p <= 1)) {
        rc = bg__remote_fail(r, BG_ECORRUPT, "%s: bad error_rate", f->meta_key);
        goto out;
    }
    f->base.m = m;
    f->base.k = (uint32_t)k;
    f->base.generation = gen;
    f->base.capacity = cap;
    f->base.error_rate = p;
    if ((rc = bg__bitmap_set_bits_key(f)) != BG_OK)
        goto out;
    /* A filter created before lineages existed: its generation stands in. */
    if (e[8]->type == REDIS_REPLY_STRING && e[8]->len < sizeof f->lineage)
        memcpy(f->lineage, e[8]->str, e[8]->len + 1);
    else
        memcpy(f->lineage, f->gen_str, sizeof f->lineage);
    rc = parse_next(f, e + 9);
out:
    freeReplyObject(rep);
    return rc;
}

/* The handle's shape as script arguments (bg__shape_args). */
void bg__bitmap_common_args(const bg__bitmap_filter *f, bg__shape_args *s, const char **argv,
                            size_t *lens)
{
    snprintf(s->k, sizeof s->k, "%" PRIu32, f->base.k);
    snprintf(s->m, sizeof s->m, "%" PRIu64, f->base.m);
    snprintf(s->seed, sizeof s->seed, "%" PRIu64, f->base.seed);
    argv[0] = f->gen_str;
    argv[1] = s->k;
    argv[2] = s->m;
    argv[3] = s->seed;
    argv[4] = f->lineage;
    for (int i = 0; i < 5; i++)
        lens[i] = strlen(argv[i]);
}

/* After a script followed a swap (same shape): adopt the generation it
 * reported, so that later calls name the current bits key. */
int bg__bitmap_follow(bg__bitmap_filter *f, const redisReply *e)
{
    uint64_t g;
    if (e->type != REDIS_REPLY_STRING || bg__parse_u64(e->str, e->len, &g) != 0 || g == 0)
        return bg__remote_fail(f->base.r, BG_EREMOTE, "unexpected generation in a reply");
    if (g == f->base.generation)
        return BG_OK;
    f->base.generation = g;
    return bg__bitmap_set_bits_key(f);
}

/* One batch as a command: EVALSHA sha 2 meta bits gen k m seed lineage
 * next nk pos... (argv[0..1] left to bg__bitmap_script or the fanout), or
 * for the bench's raw mode BITFIELD(_RO) bits (SET u1 pos 1 | GET u1 pos)... */
typedef struct batch_cmd {
    int raw, idx;
    size_t count, k, argc;
    const char **argv;
    size_t *alen;
    char *digits;
    const char **pos;
    size_t *plen;
    bg__shape_args sa;
    char nkbuf[12];
} batch_cmd;

static void batch_free(batch_cmd *b)
{
    bg__free(b->argv);
    bg__free(b->alen);
    bg__free(b->digits);
    bg__free(b->pos);
    bg__free(b->plen);
}

static int batch_build(bg__bitmap_filter *f, int add, const void *const *keys, const size_t *lens,
                       size_t count, batch_cmd *b)
{
    memset(b, 0, sizeof *b);
    size_t k = f->base.k;
    int raw = BG__REMOTE_TESTING_RAW(&f->base);
    /* A pending rebuild's positions go with adds (add_next). */
    size_t nk = add && !raw ? f->next.k : 0;
    size_t per = raw ? (add ? 4 : 3) : 1;
    size_t head = raw ? 2 : 12;
    if (count > (SIZE_MAX / 4 - head) / (k * per + nk) ||
        count * (k * per + nk) + head > (size_t)INT32_MAX)
        return BG_EOVERFLOW;
    b->raw = raw;
    b->count = count;
    b->k = k;
    b->argc = head + count * (k * per + nk);
    b->argv = bg__malloc(b->argc * sizeof *b->argv);
    b->alen = bg__malloc(b->argc * sizeof *b->alen);
    b->digits = bg__malloc(count * (k + nk) * 11 + 1);
    b->pos = raw ? bg__malloc(count * k * sizeof *b->pos) : NULL;
    b->plen = raw ? bg__malloc(count * k * sizeof *b->plen) : NULL;
    if (!b->argv || !b->alen || !b->digits || (raw && (!b->pos || !b->plen))) {
        batch_free(b);
        return BG_ENOMEM;
    }
    const char **argv = b->argv;
    size_t *alen = b->alen;
    char *d = b->digits;
    const char **pv = raw ? b->pos : argv + head;
    size_t *pl = raw ? b->plen : alen + head;
    for (size_t i = 0; i < count; i++) {
        bg_hash h;
        bg_hash_key(keys[i] ? keys[i] : "", lens[i], f->base.seed, &h);
        d = bg__bitmap_write_positions(f->base.m, f->base.k, h, d, pv + i * k, pl + i * k);
    }
    for (size_t i = 0; nk && i < count; i++) {
        bg_hash h;
        bg_hash_key(keys[i] ? keys[i] : "", lens[i], f->next.seed, &h);
        d = bg__bitmap_write_positions(f->next.m, f->next.k, h, d,
                                       argv + head + count * k + i * nk,
                                       alen + head + count * k + i * nk);
    }
    if (raw) {
        argv[0] = add ? "BITFIELD" : "BITFIELD_RO";
        alen[0] = strlen(argv[0]);
        argv[1] = f->bits_key;
        alen[1] = strlen(f->bits_key);
        for (size_t i = 0; i < count * k; i++) {
            const char **a = argv + head + i * per;
            size_t *l = alen + head + i * per;
            a[0] = add ? "SET" : "GET";
            l[0] = 3;
            a[1] = "u1";
            l[1] = 2;
            a[2] = b->pos[i];
            l[2] = b->plen[i];
            if (add) {
                a[3] = "1";
                l[3] = 1;
            }
        }
        return BG_OK;
    }
    argv[2] = "2";
    argv[3] = f->meta_key;
    argv[4] = f->bits_key;
    for (int i = 2; i < 5; i++)
        alen[i] = strlen(argv[i]);
    bg__bitmap_common_args(f, &b->sa, argv + 5, alen + 5);
    snprintf(b->nkbuf, sizeof b->nkbuf, "%zu", nk);
    argv[10] = nk ? f->next.str : "0";
    alen[10] = strlen(argv[10]);
    argv[11] = b->nkbuf;
    alen[11] = strlen(b->nkbuf);
    b->idx = BG__REMOTE_TESTING_BITFIELD(&f->base)
                 ? (add ? BG__SCRIPT_ADD_BITFIELD : BG__SCRIPT_GET_BITFIELD)
                 : (add ? BG__SCRIPT_ADD_SETBIT : BG__SCRIPT_GET_SETBIT);
    return BG_OK;
}

/* A batch's reply (not an error reply) into results; the hits, or an error. */
static int64_t batch_parse(bg__bitmap_filter *f, int add, const batch_cmd *b,
                           const redisReply *rep, uint8_t *results)
{
    size_t want = b->raw ? b->count * b->k : b->count;
    if (rep->type != REDIS_REPLY_ARRAY ||
        (rep->elements != want && (b->raw || rep->elements != want + 1)))
        return bg__remote_fail(f->base.r, BG_EREMOTE, "unexpected reply to a batch");
    int rc;
    if (rep->elements == want + 1 && (rc = bg__bitmap_follow(f, rep->element[want])) != BG_OK)
        return rc;
    int64_t hits = 0;
    for (size_t i = 0; i < b->count; i++) {
        int v;
        if (b->raw) {
            /* add: new if some old bit was 0; query: present if all are 1. */
            int any0 = 0;
            for (size_t j = 0; j < b->k; j++)
                any0 |= rep->element[i * b->k + j]->integer == 0;
            v = add ? any0 : !any0;
        } else {
            v = rep->element[i]->type == REDIS_REPLY_INTEGER && rep->element[i]->integer != 0;
        }
        hits += v;
        if (results)
            results[i] = (uint8_t)v;
    }
    return hits;
}

static int64_t run_once(bg__bitmap_filter *f, int add, const void *const *keys, const size_t *lens,
                        size_t count, uint8_t *results)
{
    batch_cmd b;
    int64_t rc = batch_build(f, add, keys, lens, count, &b);
    if (rc != BG_OK)
        return rc;
    redisReply *rep = NULL;
    if (b.raw)
        rc = bg__remote_command(f->base.r, (int)b.argc, b.argv, b.alen, &rep, 0);
    else
        rc = bg__bitmap_script(f->base.r, b.idx, (int)b.argc, b.argv, b.alen, &rep);
    if (rc == BG_OK)
        rc = batch_parse(f, add, &b, rep, results);
    if (rep)
        freeReplyObject(rep);
    batch_free(&b);
    return rc;
}

/* A script refuses an add whose handle does not know the pending rebuild
 * (BGREBUILD, nothing written): read it and try again. A rebuild begun,
 * committed or aborted between each try and the next is the only way to
 * need more than two. */
#define BG__REBUILD_RETRIES 8

static int64_t bitmap_run(bg_remote_filter *handle, int add, const void *const *keys,
                          const size_t *lens, size_t count, uint8_t *results)
{
    bg__bitmap_filter *f = bg__bitmap_of(handle);
    for (int tries = 0;; tries++) {
        int64_t rc = run_once(f, add, keys, lens, count, results);
        if (rc != BG_EREMOTE || strncmp(f->base.r->errstr, "BGREBUILD", 9) != 0 ||
            tries == BG__REBUILD_RETRIES)
            return rc;
        int lr = reload_next(f);
        if (lr != BG_OK)
            return lr;
    }
}

/* The parts' scripts go out together (bg__remote_fanout); a part that
 * was not run (a redirection, NOSCRIPT on a master that lacks the script,
 * BGREBUILD) runs again alone through bitmap_run, which handles those.
 * A part is only ever applied once: a reply lost to a broken connection is
 * BG_ECONN, not a resend. */
int64_t bg__bitmap_run_parts(int add, const bg__part *parts, size_t n)
{
    if (n == 1 || BG__REMOTE_TESTING_RAW(parts[0].f) ||
        BG__REMOTE_TESTING_NO_FANOUT(parts[0].f->r)) {
        int64_t hits = 0;
        for (size_t i = 0; i < n; i++) {
            int64_t h = bitmap_run(parts[i].f, add, parts[i].keys, parts[i].lens,
                                       parts[i].count, parts[i].results);
            if (h < 0)
                return h;
            hits += h;
        }
        return hits;
    }
    bg_remote *r = parts[0].f->r;
    batch_cmd *b = bg__calloc(n, sizeof *b);
    bg__call *calls = bg__calloc(n, sizeof *calls);
    int64_t rc = BG_OK;
    size_t built = 0;
    if (!b || !calls) {
        rc = BG_ENOMEM;
        goto out;
    }
    for (; built < n; built++) {
        const bg__part *p = &parts[built];
        rc = batch_build(bg__bitmap_of(p->f), add, p->keys, p->lens, p->count, &b[built]);
        if (rc != BG_OK)
            goto out;
        if ((rc = bg__remote_load_script(r, b[built].idx, bg__script_src[b[built].idx])) != BG_OK) {
            built++;
            goto out;
        }
        b[built].argv[0] = "EVALSHA";
        b[built].alen[0] = 7;
        b[built].argv[1] = r->sha[b[built].idx];
        b[built].alen[1] = 40;
        calls[built] = (bg__call){(int)b[built].argc, b[built].argv, b[built].alen, NULL};
    }
    if ((rc = bg__remote_fanout(r, calls, n)) != BG_OK)
        goto out;
    int64_t hits = 0;
    for (size_t i = 0; i < n && rc == BG_OK; i++) {
        const bg__part *p = &parts[i];
        redisReply *rep = calls[i].reply;
        int64_t h;
        if (!rep || (rep->type == REDIS_REPLY_ERROR && rep->str &&
                     (strncmp(rep->str, "NOSCRIPT", 8) == 0 ||
                      strncmp(rep->str, "BGREBUILD", 9) == 0)))
            h = bitmap_run(p->f, add, p->keys, p->lens, p->count, p->results);
        else if (rep->type == REDIS_REPLY_ERROR)
            h = bg__remote_error_reply(r, rep);
        else
            h = batch_parse(bg__bitmap_of(p->f), add, &b[i], rep, p->results);
        if (h < 0)
            rc = h;
        else
            hits += h;
    }
    if (rc == BG_OK)
        rc = hits;
out:
    for (size_t i = 0; calls && i < n; i++)
        if (calls[i].reply)
            freeReplyObject(calls[i].reply);
    for (size_t i = 0; b && i < built; i++)
        batch_free(&b[i]);
    bg__free(b);
    bg__free(calls);
    return rc;
}

/* EVALSHA of a maintenance script with the handle's keys and shape, plus
 * an optional extra argument (ARGV[6]). */
static int simple_script(bg__bitmap_filter *f, int idx, const char *extra, redisReply **rep)
{
    const char *argv[11] = {NULL, NULL, "2", f->meta_key, f->bits_key};
    size_t lens[11];
    for (int i = 2; i < 5; i++)
        lens[i] = strlen(argv[i]);
    bg__shape_args sa;
    bg__bitmap_common_args(f, &sa, argv + 5, lens + 5);
    argv[10] = extra;
    lens[10] = extra ? strlen(extra) : 0;
    return bg__bitmap_script(f->base.r, idx, extra ? 11 : 10, argv, lens, rep);
}

int bg__bitmap_stats(bg_remote_filter *handle, bg_remote_filter_stats *out)
{
    bg__bitmap_filter *f = bg__bitmap_of(handle);
    redisReply *rep;
    int rc = simple_script(f, BG__SCRIPT_STATS, NULL, &rep);
    if (rc != BG_OK)
        return rc;
    uint64_t items;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3 ||
        bg__bitmap_field_u64(rep->element[0], &items) != 0 ||
        rep->element[1]->type != REDIS_REPLY_INTEGER || rep->element[1]->integer < 0) {
        freeReplyObject(rep);
        return bg__remote_fail(f->base.r, BG_EREMOTE, "unexpected reply to stats");
    }
    rc = bg__bitmap_follow(f, rep->element[2]);
    out->bits = f->base.m;
    out->hashes = f->base.k;
    out->seed = f->base.seed;
    out->generation = f->base.generation;
    out->capacity = f->base.capacity;
    out->error_rate = f->base.error_rate;
    out->bytes = (f->base.m + 7) / 8;
    out->items = items;
    out->bits_set = (uint64_t)rep->element[1]->integer;
    out->layers = 1;
    freeReplyObject(rep);
    return rc;
}

int bg__bitmap_drop(bg_remote_filter *handle)
{
    bg__bitmap_filter *f = bg__bitmap_of(handle);
    redisReply *rep;
    int rc = simple_script(f, BG__SCRIPT_DROP, NULL, &rep);
    if (rc == BG_OK)
        freeReplyObject(rep);
    return rc;
}

int bg__bitmap_expire(bg_remote_filter *handle, uint64_t ttl_ms)
{
    bg__bitmap_filter *f = bg__bitmap_of(handle);
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%" PRIu64, ttl_ms);
    redisReply *rep;
    int rc = simple_script(f, BG__SCRIPT_EXPIRE, ttl, &rep);
    if (rc == BG_OK)
        freeReplyObject(rep);
    return rc;
}

/* "{name}:bits:<gen>", or "{name}:meta" for gen 0. Allocates. */
char *bg__bitmap_key_for(const char *name, uint64_t gen)
{
    size_t n = strlen(name) + 40;
    char *k = bg__malloc(n);
    if (k && gen)
        snprintf(k, n, "{%s}:bits:%" PRIu64, name, gen);
    else if (k)
        snprintf(k, n, "{%s}:meta", name);
    return k;
}

static void bitmap_close(bg_remote_filter *handle)
{
    bg__bitmap_filter *f = bg__bitmap_of(handle);
    bg__free(f->name);
    bg__free(f->meta_key);
    bg__free(f->bits_key);
    bg__free(f->rb_bits_key);
    bg__free(f);
}

static const bg__remote_filter_ops bitmap_ops = {
    .run = bitmap_run,
    .stats = bg__bitmap_stats,
    .drop = bg__bitmap_drop,
    .expire = bg__bitmap_expire,
    .fetch = bg__bitmap_fetch,
    .rebuild_begin = bg__bitmap_rebuild_begin,
    .rebuild_add = bg__bitmap_rebuild_add,
    .rebuild_commit = bg__bitmap_rebuild_commit,
    .rebuild_abort = bg__bitmap_rebuild_abort,
    .close = bitmap_close,
};
