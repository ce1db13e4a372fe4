/* SPDX-License-Identifier: BSD-3-Clause */
/* Sharded filters (SHARDING in remote.h): S bitmap filters behind one
 * handle, each key routed to one of them by its hash. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <bloomgate/hash.h>

#include "bitmap.h"
#include "common/alloc.h"

/* A sharded filter's handle: base.shards bitmap handles, shard j on
 * `name:s<j>`. base's shape is the shards' (sharded_shape). */
typedef struct sharded_filter {
    bg_remote_filter base;
    bg_remote_filter **sub; /* bitmap handles */
    char *shards_key;       /* {name}:shards */
} sharded_filter;

static sharded_filter *sharded_of(bg_remote_filter *f)
{
    return (sharded_filter *)(void *)f;
}

static const bg__remote_filter_ops sharded_ops;

/* The shard of a key: see the formula in remote.h. */
uint32_t bg__shard_of(const bg_hash *h, uint32_t shards)
{
    uint64_t x = (h->h1 ^ (h->h2 << 32 | h->h2 >> 32)) * UINT64_C(0x9e3779b97f4a7c15);
    return (uint32_t)(((unsigned __int128)x * shards) >> 64);
}

/* "{name}:shards", allocated (NULL: out of memory). */
static char *shards_key_of(const char *name)
{
    size_t n = strlen(name) + 10;
    char *key = bg__malloc(n);
    if (key)
        snprintf(key, n, "{%s}:shards", name);
    return key;
}

/* The count {name}:shards holds: *out = 2..BG_REMOTE_MAX_SHARDS, or 0 if
 * there is none; anything else is BG_ECORRUPT. */
static int shard_count(bg_remote *r, const char *shards_key, uint32_t *out)
{
    *out = 0;
    const char *ga[2] = {"GET", shards_key};
    size_t gl[2] = {3, strlen(shards_key)};
    redisReply *rep;
    int rc = bg__remote_command(r, 2, ga, gl, &rep, 0);
    if (rc != BG_OK)
        return rc;
    uint64_t n = 0;
    if (rep->type == REDIS_REPLY_STRING && bg__parse_u64(rep->str, rep->len, &n) == 0 &&
        n >= 2 && n <= BG_REMOTE_MAX_SHARDS)
        *out = (uint32_t)n;
    else if (rep->type != REDIS_REPLY_NIL)
        rc = bg__remote_fail(r, BG_ECORRUPT, "%s: bad shard count", shards_key);
    freeReplyObject(rep);
    return rc;
}

static void sharded_close(bg_remote_filter *handle)
{
    sharded_filter *f = sharded_of(handle);
    for (uint32_t j = 0; f->sub && j < f->base.shards; j++)
        bg_remote_filter_close(f->sub[j]);
    bg__free(f->sub);
    bg__free(f->shards_key);
    bg__free(f);
}

static int sharded_new(sharded_filter **out, bg_remote *r, const char *name, uint32_t shards)
{
    sharded_filter *f = bg__calloc(1, sizeof *f);
    if (!f)
        return BG_ENOMEM;
    f->base.ops = &sharded_ops;
    f->base.r = r;
    f->base.backend = BG_REMOTE_BITMAP;
    f->base.rb_lease_ms = BG_REMOTE_REBUILD_LEASE_MS;
    f->shards_key = shards_key_of(name);
    f->sub = bg__calloc(shards, sizeof *f->sub);
    if (!f->shards_key || !f->sub) {
        sharded_close(&f->base);
        return BG_ENOMEM;
    }
    f->base.shards = shards;
    *out = f;
    return BG_OK;
}

/* Shard j of S's place, "j/S", as its meta hash keeps it (bitmap.c, SHARD
 * PLACES). */
static void place_of(char out[24], uint32_t j, uint32_t shards)
{
    snprintf(out, 24, "%" PRIu32 "/%" PRIu32, j, shards);
}

static char *sub_name(const char *name, uint32_t j)
{
    size_t n = strlen(name) + 16;
    char *s = bg__malloc(n);
    if (s)
        snprintf(s, n, "%s:s%" PRIu32, name, j);
    return s;
}

/* Takes the shape from the shards. Their seed must agree (it routes keys to
 * shards), else BG_ECORRUPT; their hashes may not while a rebuild that
 * changes them is being committed shard by shard (SHARDED REBUILD), and the
 * filter then reports shard 0's. */
static int sharded_shape(sharded_filter *f)
{
    f->base.m = 0;
    f->base.capacity = 0;
    for (uint32_t j = 0; j < f->base.shards; j++) {
        const bg_remote_filter *s = f->sub[j];
        if (s->seed != f->sub[0]->seed)
            return bg__remote_fail(f->base.r, BG_ECORRUPT, "%s: shards with different seeds",
                                   f->shards_key);
        f->base.m += s->m;
        f->base.capacity += s->capacity;
    }
    f->base.k = f->sub[0]->k;
    f->base.seed = f->sub[0]->seed;
    f->base.error_rate = f->sub[0]->error_rate;
    f->base.generation = 0;
    return BG_OK;
}

/* How `name` is held now: *have = its shard count, 1 for an unsharded
 * filter ({name}:meta), 0 for none. */
static int shards_now(bg_remote *r, const char *name, const char *shards_key, uint32_t *have)
{
    *have = 0;
    size_t mlen = strlen(name) + 8;
    char *meta = bg__malloc(mlen);
    if (!meta)
        return BG_ENOMEM;
    snprintf(meta, mlen, "{%s}:meta", name);
    const char *ea[2] = {"EXISTS", meta};
    size_t el[2] = {6, strlen(meta)};
    redisReply *rep;
    int rc = bg__remote_command(r, 2, ea, el, &rep, 0);
    bg__free(meta);
    if (rc != BG_OK)
        return rc;
    int unsharded = rep->type == REDIS_REPLY_INTEGER && rep->integer != 0;
    freeReplyObject(rep);
    if (unsharded) {
        *have = 1;
        return BG_OK;
    }
    return shard_count(r, shards_key, have);
}

int bg__sharded_create(bg_remote_filter **out, bg_remote *r, const char *name,
                       const bg_remote_filter_options *o)
{
    if (o->backend != BG_REMOTE_BITMAP || o->shards > BG_REMOTE_MAX_SHARDS)
        return BG_EINVAL;
    sharded_filter *f;
    int rc = sharded_new(&f, r, name, o->shards);
    if (rc != BG_OK)
        return rc;
    redisReply *rep;
    uint32_t have; /* an unsharded one would hide ours (open finds it first) */
    if ((rc = shards_now(r, name, f->shards_key, &have)) != BG_OK)
        goto fail;
    if (have) {
        if (have == 1)
            rc = bg__remote_fail(r, BG_EEXIST, "{%s}:meta exists", name);
        else
            rc = bg__remote_fail(r, BG_EEXIST, "%s exists", f->shards_key);
        goto fail;
    }
    /* Each shard holds about 1/S of the keys in 1/S of the bits. */
    bg_remote_filter_options so = *o;
    so.shards = 0;
    so.capacity = o->capacity / o->shards + (o->capacity % o->shards != 0);
    so.bits = o->bits / o->shards + (o->bits % o->shards != 0);
    uint32_t made = 0;
    for (; made < o->shards; made++) {
        char *sn = sub_name(name, made);
        if (!sn) {
            rc = BG_ENOMEM;
            break;
        }
        char place[24];
        place_of(place, made, o->shards);
        rc = bg__bitmap_create(&f->sub[made], r, sn, &so, place);
        bg__free(sn);
        if (rc != BG_OK)
            break;
    }
    if (rc == BG_OK)
        rc = sharded_shape(f);
    if (rc == BG_OK) {
        /* Written last: a reader opens the filter only once all shards exist. */
        char sv[12];
        snprintf(sv, sizeof sv, "%" PRIu32, o->shards);
        const char *sa[4] = {"SET", f->shards_key, sv, "NX"};
        size_t sl[4] = {3, strlen(f->shards_key), strlen(sv), 2};
        if ((rc = bg__remote_command(r, 4, sa, sl, &rep, 0)) == BG_OK) {
            if (rep->type == REDIS_REPLY_NIL)
                rc = bg__remote_fail(r, BG_EEXIST, "%s exists", f->shards_key);
            freeReplyObject(rep);
        }
        if (rc == BG_OK) {
            *out = &f->base;
            return BG_OK;
        }
    }
    /* Best effort: drop the shards this call made (not another creator's). */
    if (rc != BG_ECONN) {
        char keep[BG__REMOTE_ERRSTR];
        memcpy(keep, r->errstr, sizeof keep);
        for (uint32_t j = 0; j < made && j < o->shards; j++)
            if (f->sub[j])
                (void)bg__bitmap_drop(f->sub[j]);
        memcpy(r->errstr, keep, sizeof keep);
    }
fail:
    sharded_close(&f->base);
    return rc;
}

/* Opens shard `sn` of `name`: a bitmap filter. */
static int shard_open(bg_remote_filter **out, bg_remote *r, const char *name, const char *sn)
{
    int rc = bg__bitmap_open(out, r, sn);
    if (rc != BG_ENOTFOUND)
        return rc;
    char keep[BG__REMOTE_ERRSTR], *key = shards_key_of(sn);
    if (!key)
        return BG_ENOMEM;
    uint32_t shards;
    memcpy(keep, r->errstr, sizeof keep);
    int sr = shard_count(r, key, &shards);
    bg__free(key);
    if (sr != BG_OK)
        return sr;
    if (shards)
        return bg__remote_fail(r, BG_ECORRUPT, "%s: a shard is sharded", name);
    memcpy(r->errstr, keep, sizeof keep);
    return rc;
}

int bg__sharded_open(bg_remote_filter **out, bg_remote *r, const char *name)
{
    char *key = shards_key_of(name);
    if (!key)
        return BG_ENOMEM;
    uint32_t shards;
    int rc = shard_count(r, key, &shards);
    bg__free(key);
    if (rc == BG_OK && shards == 0)
        rc = bg__remote_fail(r, BG_ENOTFOUND, "{%s}:meta does not exist", name);
    if (rc != BG_OK)
        return rc;
    sharded_filter *f;
    if ((rc = sharded_new(&f, r, name, shards)) != BG_OK)
        return rc;
    for (uint32_t j = 0; rc == BG_OK && j < f->base.shards; j++) {
        char *sn = sub_name(name, j);
        if (!sn) {
            rc = BG_ENOMEM;
            break;
        }
        rc = shard_open(&f->sub[j], r, name, sn);
        bg__free(sn);
    }
    if (rc == BG_OK)
        rc = sharded_shape(f);
    if (rc != BG_OK) {
        sharded_close(&f->base);
        return rc;
    }
    *out = &f->base;
    return BG_OK;
}

/* A batch split by shard (a counting sort): shard j's keys are
 * keys/lens[end[j - 1] .. end[j]) (end[-1] = 0), their answers go to the
 * same range of res, and order[at] is the caller's index of entry at. */
typedef struct shard_plan {
    size_t *end;
    size_t *order;
    const void **keys;
    size_t *lens;
    uint8_t *res;
} shard_plan;

static void plan_free(shard_plan *p)
{
    bg__free(p->end);
    bg__free(p->order);
    bg__free(p->keys);
    bg__free(p->lens);
    bg__free(p->res);
}

static int plan_make(const sharded_filter *f, const void *const *keys, const size_t *lens,
                     size_t count, shard_plan *p)
{
    uint32_t S = f->base.shards;
    uint32_t *which = bg__malloc(count * sizeof *which);
    size_t *start = bg__calloc((size_t)S + 1, sizeof *start);
    p->order = bg__malloc(count * sizeof *p->order);
    p->keys = bg__malloc(count * sizeof *p->keys);
    p->lens = bg__malloc(count * sizeof *p->lens);
    p->res = bg__malloc(count ? count : 1);
    p->end = start;
    if (!which || !start || !p->order || !p->keys || !p->lens || !p->res) {
        bg__free(which);
        plan_free(p);
        return BG_ENOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        bg_hash h;
        bg_hash_key(keys[i] ? keys[i] : "", lens[i], f->base.seed, &h);
        which[i] = bg__shard_of(&h, S);
        start[which[i] + 1]++;
    }
    for (uint32_t j = 0; j < S; j++)
        start[j + 1] += start[j];
    for (size_t i = 0; i < count; i++) {
        size_t at = start[which[i]]++;
        p->order[at] = i;
        p->keys[at] = keys[i];
        p->lens[at] = lens[i];
    }
    /* start[j] is now the end of shard j's run. */
    bg__free(which);
    return BG_OK;
}

static void plan_results(const shard_plan *p, size_t count, uint8_t *results)
{
    for (size_t at = 0; results && at < count; at++)
        results[p->order[at]] = p->res[at];
}

/* One script call per shard with keys, all sent before any reply is read
 * (bg__bitmap_run_parts). */
static int64_t sharded_run(bg_remote_filter *handle, int add, const void *const *keys,
                           const size_t *lens, size_t count, uint8_t *results)
{
    sharded_filter *f = sharded_of(handle);
    shard_plan p;
    int64_t rc = plan_make(f, keys, lens, count, &p);
    if (rc != BG_OK)
        return rc;
    bg__part *parts = bg__malloc((size_t)f->base.shards * sizeof *parts);
    if (!parts) {
        plan_free(&p);
        return BG_ENOMEM;
    }
    size_t nparts = 0, from = 0;
    for (uint32_t j = 0; j < f->base.shards; j++) {
        size_t n = p.end[j] - from;
        if (n)
            parts[nparts++] =
                (bg__part){f->sub[j], p.keys + from, p.lens + from, n, p.res + from};
        from = p.end[j];
    }
    rc = nparts ? bg__bitmap_run_parts(add, parts, nparts) : 0;
    if (rc >= 0)
        plan_results(&p, count, results);
    bg__free(parts);
    plan_free(&p);
    return rc;
}

static int sharded_stats(bg_remote_filter *handle, bg_remote_filter_stats *out)
{
    sharded_filter *f = sharded_of(handle);
    out->layers = f->base.shards;
    for (uint32_t j = 0; j < f->base.shards; j++) {
        bg_remote_filter_stats s;
        memset(&s, 0, sizeof s);
        int rc = bg__bitmap_stats(f->sub[j], &s);
        if (rc != BG_OK)
            return rc;
        out->bits += s.bits;
        out->bytes += s.bytes;
        out->items += s.items;
        out->bits_set += s.bits_set;
        out->capacity += s.capacity;
    }
    out->hashes = f->base.k;
    out->seed = f->base.seed;
    out->error_rate = f->base.error_rate;
    return BG_OK;
}

/* Deletes each shard, then {name}:shards. A stale handle (the filter was
 * re-created meanwhile) gets BG_ESTALE at its first shard, every shard's
 * drop being generation-checked, before anything is deleted: deleting the
 * count first would have made the new filter unreachable (open
 * BG_ENOTFOUND, create BG_EEXIST). An opener in between finds shards
 * missing (BG_ENOTFOUND), not a partial filter. Otherwise every shard is
 * tried and the first error returned. */
static int sharded_drop(bg_remote_filter *handle)
{
    sharded_filter *f = sharded_of(handle);
    int rc = BG_OK;
    for (uint32_t j = 0; j < f->base.shards; j++) {
        int sr = bg__bitmap_drop(f->sub[j]);
        if (sr == BG_ESTALE)
            return sr;
        if (sr != BG_OK && rc == BG_OK)
            rc = sr;
    }
    int dr = bg__remote_del(f->base.r, f->shards_key, NULL);
    return rc != BG_OK ? rc : dr;
}

static int sharded_expire(bg_remote_filter *handle, uint64_t ttl_ms)
{
    sharded_filter *f = sharded_of(handle);
    int rc = BG_OK;
    for (uint32_t j = 0; rc == BG_OK && j < f->base.shards; j++)
        rc = bg__bitmap_expire(f->sub[j], ttl_ms);
    if (rc != BG_OK)
        return rc;
    char t[24];
    snprintf(t, sizeof t, "%" PRIu64, ttl_ms);
    const char *pa[3] = {"PEXPIRE", f->shards_key, t};
    size_t pl[3] = {7, strlen(f->shards_key), strlen(t)};
    redisReply *rep;
    if ((rc = bg__remote_command(f->base.r, 3, pa, pl, &rep, 0)) == BG_OK)
        freeReplyObject(rep);
    return rc;
}

/* SHARDED REBUILD
 * Each shard is an ordinary bitmap filter with its own generations, so a
 * sharded filter is rebuilt shard by shard: begin begins a rebuild on every
 * shard (each with its own lease), rebuild_add_many routes each key to its
 * shard's rebuild as an add routes it to its shard, and commit commits the
 * shards one after another. The swap is atomic per shard, not across
 * shards: during the commit a reader may find some shards new and others
 * old. That is harmless: both generations of a shard hold every key of
 * that shard (adds write both while its rebuild is pending), so no key is
 * ever missing. What must not change is the routing: a key's shard comes
 * from the seed, so a rebuild keeps the seed and the number of shards
 * (another seed: BG_EINVAL); bits, hashes and capacity may change, split
 * over the shards as at creation. rebuild_add_many calls every shard, with
 * no keys if the batch has none for it, so that each shard's lease is
 * renewed while any is. A commit that fails part-way leaves some shards
 * committed and others pending, and the filter correct either way: commit
 * again to go on with the shards still pending, or abort them. */
/* A sharded rebuild is one rebuild: when it fails on one shard for good
 * (begin failed, or that shard's rebuild was cancelled or dropped: BG_ESTALE,
 * BG_ENOTFOUND), this cancels the handle's rebuilds still pending on the
 * others, best effort, keeping the first failure's message. Else they would
 * stay pending, every add writing twice, until their leases ran out, and a
 * later abort on this handle could not tell them from another client's. */
static void cancel_own_shards(sharded_filter *f)
{
    char keep[BG__REMOTE_ERRSTR];
    memcpy(keep, f->base.r->errstr, sizeof keep);
    for (uint32_t j = 0; j < f->base.shards; j++)
        if (bg__bitmap_of(f->sub[j])->rb.gen)
            (void)bg__bitmap_rebuild_abort(f->sub[j]);
    memcpy(f->base.r->errstr, keep, sizeof keep);
}

static int gone_for_good(int64_t rc)
{
    return rc == BG_ESTALE || rc == BG_ENOTFOUND;
}

static int sharded_rebuild_begin(bg_remote_filter *handle, const bg_remote_filter_options *o)
{
    sharded_filter *f = sharded_of(handle);
    bg_remote_filter_options so;
    if (o) {
        if (o->seed != f->base.seed || (o->shards && o->shards != f->base.shards))
            return bg__remote_fail(f->base.r, BG_EINVAL,
                                   "%s: a rebuild keeps a sharded filter's seed and shards",
                                   f->shards_key);
        so = *o;
        so.shards = 0;
        so.capacity = o->capacity / f->base.shards + (o->capacity % f->base.shards != 0);
        so.bits = o->bits / f->base.shards + (o->bits % f->base.shards != 0);
    }
    for (uint32_t j = 0; j < f->base.shards; j++)
        if (bg__bitmap_of(f->sub[j])->rb.gen)
            return bg__remote_fail(f->base.r, BG_EEXIST, "this handle's rebuild is pending");
    int rc = BG_OK;
    for (uint32_t j = 0; rc == BG_OK && j < f->base.shards; j++) {
        f->sub[j]->rb_lease_ms = f->base.rb_lease_ms;
        rc = bg__bitmap_rebuild_begin(f->sub[j], o ? &so : NULL);
    }
    if (rc != BG_OK)
        cancel_own_shards(f);
    return rc;
}

static int64_t sharded_rebuild_add(bg_remote_filter *handle, const void *const *keys,
                                   const size_t *lens, size_t count, uint8_t *results)
{
    sharded_filter *f = sharded_of(handle);
    for (uint32_t j = 0; j < f->base.shards; j++)
        if (!bg__bitmap_of(f->sub[j])->rb.gen)
            return bg__remote_fail(f->base.r, BG_EINVAL, "no rebuild begun on this handle");
    shard_plan p;
    int64_t rc = plan_make(f, keys, lens, count, &p);
    if (rc != BG_OK)
        return rc;
    int64_t hits = 0;
    size_t from = 0;
    for (uint32_t j = 0; j < f->base.shards; j++) {
        int64_t h = bg__bitmap_rebuild_add(f->sub[j], p.keys + from, p.lens + from,
                                           p.end[j] - from, p.res + from);
        if (h < 0) {
            if (gone_for_good(h))
                cancel_own_shards(f);
            hits = h;
            break;
        }
        hits += h;
        from = p.end[j];
    }
    if (hits >= 0)
        plan_results(&p, count, results);
    plan_free(&p);
    return hits;
}

static int sharded_rebuild_commit(bg_remote_filter *handle)
{
    sharded_filter *f = sharded_of(handle);
    int any = 0, rc = BG_OK;
    for (uint32_t j = 0; rc == BG_OK && j < f->base.shards; j++) {
        if (!bg__bitmap_of(f->sub[j])->rb.gen)
            continue; /* committed by an earlier try */
        any = 1;
        rc = bg__bitmap_rebuild_commit(f->sub[j]);
    }
    if (gone_for_good(rc))
        cancel_own_shards(f); /* those not swapped yet */
    if (!any)
        return bg__remote_fail(f->base.r, BG_EINVAL, "no rebuild begun on this handle");
    int sr = sharded_shape(f);
    return rc != BG_OK ? rc : sr;
}

/* This handle's rebuilds, if it has any pending (after a commit that
 * failed part-way, only on some shards: the others may have another
 * client's by now, which are not this handle's to cancel), else whichever
 * are pending: BG_OK if any shard had one, BG_ENOTFOUND if none, else the
 * first other error. */
static int sharded_rebuild_abort(bg_remote_filter *handle)
{
    sharded_filter *f = sharded_of(handle);
    int own = 0;
    for (uint32_t j = 0; j < f->base.shards; j++)
        own |= bg__bitmap_of(f->sub[j])->rb.gen != 0;
    int rc = BG_ENOTFOUND;
    for (uint32_t j = 0; j < f->base.shards; j++) {
        if (own && !bg__bitmap_of(f->sub[j])->rb.gen)
            continue;
        int ar = bg__bitmap_rebuild_abort(f->sub[j]);
        if (ar == BG_OK && rc == BG_ENOTFOUND)
            rc = BG_OK;
        else if (ar != BG_OK && ar != BG_ENOTFOUND && (rc == BG_OK || rc == BG_ENOTFOUND))
            rc = ar;
    }
    if (rc == BG_ENOTFOUND)
        bg__remote_fail(f->base.r, BG_ENOTFOUND, "no such rebuild is pending");
    return rc;
}

/* Deletes {name}:shards and every shard name:s<j> there is, for
 * bg_remote_filter_delete: *found is set if any was. The shards are asked
 * for one by one, all BG_REMOTE_MAX_SHARDS of them, since a gap (a shard
 * evicted, a drop that failed on one node) does not end them: each is in a
 * slot of its own, so one EXISTS cannot ask for several in a cluster. */
int bg__sharded_delete_leftovers(bg_remote *r, const char *name, int *found)
{
    char *key = shards_key_of(name);
    if (!key)
        return BG_ENOMEM;
    int deleted = 0;
    int rc = bg__remote_del(r, key, &deleted);
    bg__free(key);
    *found |= deleted;
    for (uint32_t j = 0; rc == BG_OK && j < BG_REMOTE_MAX_SHARDS; j++) {
        char *sn = sub_name(name, j);
        bg_remote_filter *f = NULL;
        rc = sn ? bg__bitmap_open(&f, r, sn) : BG_ENOMEM;
        bg__free(sn);
        if (rc == BG_OK) {
            rc = bg__bitmap_drop(f);
            *found = 1;
        } else if (rc == BG_ENOTFOUND) {
            rc = BG_OK;
        }
        bg_remote_filter_close(f);
    }
    return rc;
}

/* SHARDED PUBLISH in remote.h. The shards first, {name}:shards last (SET
 * NX): a reader that finds it finds every shard complete. */
int bg__sharded_publish(bg_remote *r, const char *name, const bg_filter *const *shards,
                        uint32_t count)
{
    for (uint32_t j = 0; j < count; j++) {
        if (!shards[j])
            return BG_EINVAL;
        if (bg_filter_seed(shards[j]) != bg_filter_seed(shards[0]))
            return bg__remote_fail(r, BG_EINVAL, "the shards' seeds differ (it routes keys)");
        if (bg_filter_variant(shards[j]) != BG_VARIANT_STANDARD)
            return bg__remote_fail(r, BG_EVARIANT, "only standard filters can be published");
        if (bg_filter_bits(shards[j]) > BG_REMOTE_MAX_BITS)
            return bg__remote_fail(r, BG_ETOOBIG,
                                   "shard %" PRIu32 ": %" PRIu64 " bits, above 2^32", j,
                                   bg_filter_bits(shards[j]));
    }
    char *key = shards_key_of(name);
    if (!key)
        return BG_ENOMEM;
    uint32_t have;
    int rc = shards_now(r, name, key, &have);
    if (rc == BG_OK && have != 0 && have != count)
        rc = have == 1 ? bg__remote_fail(r, BG_EEXIST, "%s is an unsharded filter", name)
                       : bg__remote_fail(r, BG_EEXIST, "%s has %" PRIu32 " shards, not %" PRIu32,
                                         name, have, count);
    for (uint32_t j = 0; rc == BG_OK && j < count; j++) {
        char *sn = sub_name(name, j), place[24];
        place_of(place, j, count);
        rc = sn ? bg__bitmap_publish(r, sn, shards[j], place) : BG_ENOMEM;
        bg__free(sn);
    }
    if (rc == BG_OK && have == 0) {
        char sv[12];
        snprintf(sv, sizeof sv, "%" PRIu32, count);
        const char *sa[4] = {"SET", key, sv, "NX"};
        size_t sl[4] = {3, strlen(key), strlen(sv), 2};
        redisReply *rep;
        if ((rc = bg__remote_command(r, 4, sa, sl, &rep, 0)) == BG_OK) {
            int lost = rep->type == REDIS_REPLY_NIL;
            freeReplyObject(rep);
            /* Another client published it meanwhile: with as many shards,
             * each of ours is as good as its (both complete). */
            if (lost && (rc = shards_now(r, name, key, &have)) == BG_OK && have != count)
                rc = bg__remote_fail(r, BG_EEXIST, "%s was made meanwhile", name);
        }
    }
    bg__free(key);
    return rc;
}

static int sharded_fetch_shards(bg_remote_filter *handle, bg_filter **out, uint32_t count)
{
    sharded_filter *f = sharded_of(handle);
    int rc = BG_OK;
    for (uint32_t j = 0; rc == BG_OK && j < count; j++)
        rc = bg__bitmap_fetch(f->sub[j], &out[j]);
    if (rc != BG_OK)
        for (uint32_t j = 0; j < count; j++) {
            bg_filter_free(out[j]);
            out[j] = NULL;
        }
    return rc;
}

static const bg__remote_filter_ops sharded_ops = {
    .run = sharded_run,
    .stats = sharded_stats,
    .drop = sharded_drop,
    .expire = sharded_expire,
    .fetch_shards = sharded_fetch_shards,
    .rebuild_begin = sharded_rebuild_begin,
    .rebuild_add = sharded_rebuild_add,
    .rebuild_commit = sharded_rebuild_commit,
    .rebuild_abort = sharded_rebuild_abort,
    .close = sharded_close,
};
