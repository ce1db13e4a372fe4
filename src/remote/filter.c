/* Filter handles: argument checks, then the backend (bitmap.c, module.c),
 * and sharded filters (SHARDING in remote.h): S bitmap handles behind one. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <bloomgate/hash.h>

#include "core/alloc_internal.h"
#include "remote_internal.h"

/* A name goes inside a hash tag, so braces would change the slot. */
static int name_ok(const char *name)
{
    return name && name[0] && !strchr(name, '{') && !strchr(name, '}') && strlen(name) <= 1024;
}

static int handle_new(bg_remote_filter **out, bg_remote *r, const char *name,
                      bg_remote_backend backend)
{
    bg_remote_filter *f = bg__calloc(1, sizeof *f);
    if (!f)
        return BG_ENOMEM;
    f->r = r;
    f->backend = backend;
    f->rb_lease_ms = BG_REMOTE_REBUILD_LEASE_MS;
    f->name = bg__strdup(name);
    size_t n = strlen(name) + 8;
    f->meta_key = bg__malloc(n);
    f->rb_marker = backend == BG_REMOTE_MODULE ? bg__module_marker_key(name) : NULL;
    if (!f->name || !f->meta_key || (backend == BG_REMOTE_MODULE && !f->rb_marker)) {
        bg_remote_filter_close(f);
        return BG_ENOMEM;
    }
    snprintf(f->meta_key, n, "{%s}:meta", name);
    *out = f;
    return BG_OK;
}

/* SHARDED FILTERS (remote.h, SHARDING) */

/* The shard of a key: see the formula in remote.h. */
static uint32_t shard_of(const bg_hash *h, uint32_t shards)
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

static int sharded_new(bg_remote_filter **out, bg_remote *r, const char *name, uint32_t shards)
{
    bg_remote_filter *f;
    int rc = handle_new(&f, r, name, BG_REMOTE_BITMAP);
    if (rc != BG_OK)
        return rc;
    f->shards_key = shards_key_of(name);
    f->sub = bg__calloc(shards, sizeof *f->sub);
    if (!f->shards_key || !f->sub) {
        bg_remote_filter_close(f);
        return BG_ENOMEM;
    }
    f->shards = shards;
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
static int sharded_shape(bg_remote_filter *f)
{
    f->m = 0;
    f->capacity = 0;
    for (uint32_t j = 0; j < f->shards; j++) {
        const bg_remote_filter *s = f->sub[j];
        if (s->seed != f->sub[0]->seed)
            return bg__remote_fail(f->r, BG_ECORRUPT, "%s: shards with different seeds",
                                   f->shards_key);
        f->m += s->m;
        f->capacity += s->capacity;
    }
    f->k = f->sub[0]->k;
    f->seed = f->sub[0]->seed;
    f->error_rate = f->sub[0]->error_rate;
    f->generation = 0;
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

static int sharded_create(bg_remote_filter **out, bg_remote *r, const char *name,
                          const bg_remote_filter_options *o)
{
    if (o->backend != BG_REMOTE_BITMAP || o->shards > BG_REMOTE_MAX_SHARDS)
        return BG_EINVAL;
    bg_remote_filter *f;
    int rc = sharded_new(&f, r, name, o->shards);
    if (rc != BG_OK)
        return rc;
    redisReply *rep;
    uint32_t have; /* an unsharded one would hide ours (open finds it first) */
    if ((rc = shards_now(r, name, f->shards_key, &have)) != BG_OK)
        goto fail;
    if (have) {
        rc = bg__remote_fail(r, BG_EEXIST, "%s exists", have == 1 ? f->meta_key : f->shards_key);
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
        if ((rc = handle_new(&f->sub[made], r, sn, BG_REMOTE_BITMAP)) == BG_OK &&
            (rc = bg__bitmap_create(f->sub[made], &so, place)) != BG_OK) {
            bg_remote_filter_close(f->sub[made]);
            f->sub[made] = NULL;
        }
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
            *out = f;
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
    bg_remote_filter_close(f);
    return rc;
}

static int sharded_open(bg_remote_filter **out, bg_remote *r, const char *name)
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
    bg_remote_filter *f;
    if ((rc = sharded_new(&f, r, name, shards)) != BG_OK)
        return rc;
    for (uint32_t j = 0; rc == BG_OK && j < f->shards; j++) {
        char *sn = sub_name(name, j);
        if (!sn) {
            rc = BG_ENOMEM;
            break;
        }
        rc = bg_remote_filter_open(&f->sub[j], r, sn, BG_REMOTE_BITMAP);
        bg__free(sn);
        if (rc == BG_OK && f->sub[j]->shards > 1)
            rc = bg__remote_fail(r, BG_ECORRUPT, "%s: a shard is sharded", name);
    }
    if (rc == BG_OK)
        rc = sharded_shape(f);
    if (rc != BG_OK) {
        bg_remote_filter_close(f);
        return rc;
    }
    *out = f;
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

static int plan_make(const bg_remote_filter *f, const void *const *keys, const size_t *lens,
                     size_t count, shard_plan *p)
{
    uint32_t S = f->shards;
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
        bg_hash_key(keys[i] ? keys[i] : "", lens[i], f->seed, &h);
        which[i] = shard_of(&h, S);
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
static int64_t sharded_run(bg_remote_filter *f, int add, const void *const *keys,
                           const size_t *lens, size_t count, uint8_t *results)
{
    shard_plan p;
    int64_t rc = plan_make(f, keys, lens, count, &p);
    if (rc != BG_OK)
        return rc;
    bg__part *parts = bg__malloc((size_t)f->shards * sizeof *parts);
    if (!parts) {
        plan_free(&p);
        return BG_ENOMEM;
    }
    size_t nparts = 0, from = 0;
    for (uint32_t j = 0; j < f->shards; j++) {
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

static int sharded_stats(bg_remote_filter *f, bg_remote_filter_stats *out)
{
    out->layers = f->shards;
    for (uint32_t j = 0; j < f->shards; j++) {
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
    out->hashes = f->k;
    out->seed = f->seed;
    out->error_rate = f->error_rate;
    return BG_OK;
}

/* Deletes each shard, then {name}:shards. A stale handle (the filter was
 * re-created meanwhile) gets BG_ESTALE at its first shard, every shard's
 * drop being generation-checked, before anything is deleted: deleting the
 * count first would have made the new filter unreachable (open
 * BG_ENOTFOUND, create BG_EEXIST). An opener in between finds shards
 * missing (BG_ENOTFOUND), not a partial filter. Otherwise every shard is
 * tried and the first error returned. */
static int sharded_drop(bg_remote_filter *f)
{
    int rc = BG_OK;
    for (uint32_t j = 0; j < f->shards; j++) {
        int sr = bg__bitmap_drop(f->sub[j]);
        if (sr == BG_ESTALE)
            return sr;
        if (sr != BG_OK && rc == BG_OK)
            rc = sr;
    }
    int dr = bg__remote_del(f->r, f->shards_key, NULL);
    return rc != BG_OK ? rc : dr;
}

static int sharded_expire(bg_remote_filter *f, uint64_t ttl_ms)
{
    int rc = BG_OK;
    for (uint32_t j = 0; rc == BG_OK && j < f->shards; j++)
        rc = bg__bitmap_expire(f->sub[j], ttl_ms);
    if (rc != BG_OK)
        return rc;
    char t[24];
    snprintf(t, sizeof t, "%" PRIu64, ttl_ms);
    const char *pa[3] = {"PEXPIRE", f->shards_key, t};
    size_t pl[3] = {7, strlen(f->shards_key), strlen(t)};
    redisReply *rep;
    if ((rc = bg__remote_command(f->r, 3, pa, pl, &rep, 0)) == BG_OK)
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
static void cancel_own_shards(bg_remote_filter *f)
{
    char keep[BG__REMOTE_ERRSTR];
    memcpy(keep, f->r->errstr, sizeof keep);
    for (uint32_t j = 0; j < f->shards; j++)
        if (f->sub[j]->rb.gen)
            (void)bg__bitmap_rebuild_abort(f->sub[j]);
    memcpy(f->r->errstr, keep, sizeof keep);
}

static int gone_for_good(int64_t rc)
{
    return rc == BG_ESTALE || rc == BG_ENOTFOUND;
}

static int sharded_rebuild_begin(bg_remote_filter *f, const bg_remote_filter_options *o)
{
    bg_remote_filter_options so;
    if (o) {
        if (o->seed != f->seed || (o->shards && o->shards != f->shards))
            return bg__remote_fail(f->r, BG_EINVAL,
                                   "%s: a rebuild keeps a sharded filter's seed and shards",
                                   f->shards_key);
        so = *o;
        so.shards = 0;
        so.capacity = o->capacity / f->shards + (o->capacity % f->shards != 0);
        so.bits = o->bits / f->shards + (o->bits % f->shards != 0);
    }
    for (uint32_t j = 0; j < f->shards; j++)
        if (f->sub[j]->rb.gen)
            return bg__remote_fail(f->r, BG_EEXIST, "this handle's rebuild is pending");
    int rc = BG_OK;
    for (uint32_t j = 0; rc == BG_OK && j < f->shards; j++) {
        f->sub[j]->rb_lease_ms = f->rb_lease_ms;
        rc = bg__bitmap_rebuild_begin(f->sub[j], o ? &so : NULL);
    }
    if (rc != BG_OK)
        cancel_own_shards(f);
    return rc;
}

static int64_t sharded_rebuild_add(bg_remote_filter *f, const void *const *keys,
                                   const size_t *lens, size_t count, uint8_t *results)
{
    for (uint32_t j = 0; j < f->shards; j++)
        if (!f->sub[j]->rb.gen)
            return bg__remote_fail(f->r, BG_EINVAL, "no rebuild begun on this handle");
    shard_plan p;
    int64_t rc = plan_make(f, keys, lens, count, &p);
    if (rc != BG_OK)
        return rc;
    int64_t hits = 0;
    size_t from = 0;
    for (uint32_t j = 0; j < f->shards; j++) {
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

static int sharded_rebuild_commit(bg_remote_filter *f)
{
    int any = 0, rc = BG_OK;
    for (uint32_t j = 0; rc == BG_OK && j < f->shards; j++) {
        if (!f->sub[j]->rb.gen)
            continue; /* committed by an earlier try */
        any = 1;
        rc = bg__bitmap_rebuild_commit(f->sub[j]);
    }
    if (gone_for_good(rc))
        cancel_own_shards(f); /* those not swapped yet */
    if (!any)
        return bg__remote_fail(f->r, BG_EINVAL, "no rebuild begun on this handle");
    int sr = sharded_shape(f);
    return rc != BG_OK ? rc : sr;
}

/* This handle's rebuilds, if it has any pending (after a commit that
 * failed part-way, only on some shards: the others may have another
 * client's by now, which are not this handle's to cancel), else whichever
 * are pending: BG_OK if any shard had one, BG_ENOTFOUND if none, else the
 * first other error. */
static int sharded_rebuild_abort(bg_remote_filter *f)
{
    int own = 0;
    for (uint32_t j = 0; j < f->shards; j++)
        own |= f->sub[j]->rb.gen != 0;
    int rc = BG_ENOTFOUND;
    for (uint32_t j = 0; j < f->shards; j++) {
        if (own && !f->sub[j]->rb.gen)
            continue;
        int ar = bg__bitmap_rebuild_abort(f->sub[j]);
        if (ar == BG_OK && rc == BG_ENOTFOUND)
            rc = BG_OK;
        else if (ar != BG_OK && ar != BG_ENOTFOUND && (rc == BG_OK || rc == BG_ENOTFOUND))
            rc = ar;
    }
    if (rc == BG_ENOTFOUND)
        bg__remote_fail(f->r, BG_ENOTFOUND, "no such rebuild is pending");
    return rc;
}

int bg_remote_filter_create(bg_remote_filter **out, bg_remote *r, const char *name,
                            const bg_remote_filter_options *o)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!r || !o || !name_ok(name))
        return BG_EINVAL;
    if (o->backend != BG_REMOTE_BITMAP && o->backend != BG_REMOTE_MODULE)
        return BG_EINVAL;
    if (o->shards > 1)
        return sharded_create(out, r, name, o);
    bg_remote_filter *f;
    int rc = handle_new(&f, r, name, o->backend);
    if (rc != BG_OK)
        return rc;
    rc = o->backend == BG_REMOTE_BITMAP ? bg__bitmap_create(f, o, NULL) : bg__module_create(f, o);
    if (rc != BG_OK) {
        bg_remote_filter_close(f);
        return rc;
    }
    *out = f;
    return BG_OK;
}

int bg_remote_filter_stage(bg_remote_filter **out, bg_remote *r, const char *name,
                           const bg_remote_filter_options *o)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!r || !o || !name_ok(name) || o->backend != BG_REMOTE_MODULE || o->shards > 1)
        return BG_EINVAL;
    bg_remote_filter *f;
    int rc = handle_new(&f, r, name, o->backend);
    if (rc != BG_OK)
        return rc;
    rc = bg__module_stage(f, o);
    if (rc != BG_OK) {
        bg_remote_filter_close(f);
        return rc;
    }
    *out = f;
    return BG_OK;
}

int bg_remote_filter_stage_commit(bg_remote_filter *f)
{
    if (!f || !f->final_name)
        return BG_EINVAL;
    return bg__module_stage_commit(f);
}

int bg_remote_filter_open(bg_remote_filter **out, bg_remote *r, const char *name,
                          bg_remote_backend backend)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!r || !name_ok(name) || (backend != BG_REMOTE_BITMAP && backend != BG_REMOTE_MODULE))
        return BG_EINVAL;
    bg_remote_filter *f;
    int rc = handle_new(&f, r, name, backend);
    if (rc != BG_OK)
        return rc;
    rc = backend == BG_REMOTE_BITMAP ? bg__bitmap_open(f) : bg__module_open(f);
    if (rc == BG_ENOTFOUND && backend == BG_REMOTE_BITMAP) {
        bg_remote_filter_close(f);
        return sharded_open(out, r, name);
    }
    if (rc != BG_OK) {
        bg_remote_filter_close(f);
        return rc;
    }
    *out = f;
    return BG_OK;
}

void bg_remote_filter_close(bg_remote_filter *f)
{
    if (!f)
        return;
    for (uint32_t j = 0; f->sub && j < f->shards; j++)
        bg_remote_filter_close(f->sub[j]);
    bg__free(f->sub);
    bg__free(f->shards_key);
    bg__free(f->name);
    bg__free(f->final_name);
    bg__free(f->meta_key);
    bg__free(f->bits_key);
    bg__free(f->rb_bits_key);
    bg__free(f->rb_marker);
    bg__free(f);
}

static int64_t run(bg_remote_filter *f, int add, const void *const *keys, const size_t *lens,
                   size_t count, uint8_t *results)
{
    if (!f || (count && (!keys || !lens)))
        return BG_EINVAL;
    for (size_t i = 0; i < count; i++)
        if (!keys[i] && lens[i])
            return BG_EINVAL;
    if (count > (size_t)INT32_MAX)
        return BG_EINVAL;
    if (count == 0)
        return 0;
    int64_t rc;
    bg__remote_allow_array(f->r, count);
    if (f->shards > 1)
        rc = sharded_run(f, add, keys, lens, count, results);
    else if (f->backend == BG_REMOTE_BITMAP)
        rc = bg__bitmap_run(f, add, keys, lens, count, results);
    else
        rc = bg__module_run(f, add, keys, lens, count, results);
    bg__remote_allow_array(f->r, 0);
    return rc;
}

int64_t bg_remote_filter_add_many(bg_remote_filter *f, const void *const *keys, const size_t *lens,
                                  size_t count, uint8_t *results)
{
    return run(f, 1, keys, lens, count, results);
}

int64_t bg_remote_filter_contains_many(bg_remote_filter *f, const void *const *keys,
                                       const size_t *lens, size_t count, uint8_t *results)
{
    return run(f, 0, keys, lens, count, results);
}

int bg_remote_filter_test_and_add(bg_remote_filter *f, const void *key, size_t len)
{
    const void *keys[1] = {key ? key : ""};
    if (!key && len)
        return BG_EINVAL;
    return (int)run(f, 1, keys, &len, 1, NULL);
}

int bg_remote_filter_add(bg_remote_filter *f, const void *key, size_t len)
{
    int rc = bg_remote_filter_test_and_add(f, key, len);
    return rc < 0 ? rc : BG_OK;
}

int bg_remote_filter_contains(bg_remote_filter *f, const void *key, size_t len)
{
    const void *keys[1] = {key ? key : ""};
    if (!key && len)
        return BG_EINVAL;
    return (int)run(f, 0, keys, &len, 1, NULL);
}

int bg_remote_filter_stats_get(bg_remote_filter *f, bg_remote_filter_stats *out)
{
    if (!f || !out)
        return BG_EINVAL;
    memset(out, 0, sizeof *out);
    out->backend = f->backend;
    if (f->shards > 1)
        return sharded_stats(f, out);
    return f->backend == BG_REMOTE_BITMAP ? bg__bitmap_stats(f, out) : bg__module_stats(f, out);
}

int bg_remote_filter_drop(bg_remote_filter *f)
{
    if (!f)
        return BG_EINVAL;
    if (f->shards > 1)
        return sharded_drop(f);
    return f->backend == BG_REMOTE_BITMAP ? bg__bitmap_drop(f) : bg__module_drop(f);
}

/* Deletes {name}:shards and every shard name:s<j> there is, for
 * bg_remote_filter_destroy: *found is set if any was. The shards are asked
 * for one by one, all BG_REMOTE_MAX_SHARDS of them, since a gap (a shard
 * evicted, a drop that failed on one node) does not end them: each is in a
 * slot of its own, so one EXISTS cannot ask for several in a cluster. */
static int drop_shards_by_name(bg_remote *r, const char *name, int *found)
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
        rc = sn ? handle_new(&f, r, sn, BG_REMOTE_BITMAP) : BG_ENOMEM;
        bg__free(sn);
        if (rc == BG_OK)
            rc = bg__bitmap_open(f);
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

int bg_remote_filter_destroy(bg_remote *r, const char *name, bg_remote_backend backend)
{
    if (!r || !name_ok(name) || (backend != BG_REMOTE_BITMAP && backend != BG_REMOTE_MODULE))
        return BG_EINVAL;
    int found = 0;
    bg_remote_filter *f;
    int rc = bg_remote_filter_open(&f, r, name, backend);
    if (rc == BG_OK) {
        rc = bg_remote_filter_drop(f);
        bg_remote_filter_close(f);
        found = 1;
    } else if (rc == BG_ENOTFOUND) {
        rc = BG_OK;
    }
    if (rc == BG_OK && backend == BG_REMOTE_BITMAP)
        rc = drop_shards_by_name(r, name, &found);
    if (rc == BG_OK && !found)
        rc = bg__remote_fail(r, BG_ENOTFOUND, "%s: no such filter", name);
    return rc;
}

int bg_remote_filter_expire(bg_remote_filter *f, uint64_t ttl_ms)
{
    /* A staged filter's TTL is the staging's own (commit removes it). */
    if (!f || f->final_name || ttl_ms == 0 || ttl_ms > (uint64_t)INT64_MAX / 2)
        return BG_EINVAL;
    if (f->shards > 1)
        return sharded_expire(f, ttl_ms);
    return f->backend == BG_REMOTE_BITMAP ? bg__bitmap_expire(f, ttl_ms)
                                          : bg__module_expire(f, ttl_ms);
}

int bg_remote_filter_publish(bg_remote *r, const char *name, bg_remote_backend backend,
                             const bg_filter *local)
{
    if (!r || !local || !name_ok(name))
        return BG_EINVAL;
    if (backend == BG_REMOTE_BITMAP)
        return bg__bitmap_publish(r, name, local, NULL);
    if (backend == BG_REMOTE_MODULE)
        return bg__module_publish(r, name, local);
    return BG_EINVAL;
}

uint32_t bg_remote_shard_of(bg_hash h, uint32_t shards)
{
    return shards > 1 ? shard_of(&h, shards) : 0;
}

/* SHARDED PUBLISH in remote.h. The shards first, {name}:shards last (SET
 * NX): a reader that finds it finds every shard complete. */
int bg_remote_filter_publish_shards(bg_remote *r, const char *name,
                                    const bg_filter *const *shards, uint32_t count)
{
    if (!r || !name_ok(name) || !shards || count < 2 || count > BG_REMOTE_MAX_SHARDS)
        return BG_EINVAL;
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

int bg_remote_filter_fetch(bg_remote_filter *f, bg_filter **out)
{
    if (!out)
        return BG_EINVAL;
    *out = NULL;
    if (!f || f->shards > 1)
        return BG_EINVAL;
    return f->backend == BG_REMOTE_BITMAP ? bg__bitmap_fetch(f, out) : bg__module_fetch(f, out);
}

int bg_remote_filter_fetch_shards(bg_remote_filter *f, bg_filter **out, uint32_t count)
{
    if (!out)
        return BG_EINVAL;
    for (uint32_t j = 0; j < count; j++)
        out[j] = NULL;
    if (!f || f->shards < 2 || count != f->shards)
        return BG_EINVAL;
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

/* A staged filter is not rebuilt: it is being filled (commit it first). */
int bg_remote_filter_rebuild_begin(bg_remote_filter *f, const bg_remote_filter_options *opts)
{
    if (!f || f->final_name)
        return BG_EINVAL;
    if (f->shards > 1)
        return sharded_rebuild_begin(f, opts);
    return f->backend == BG_REMOTE_BITMAP ? bg__bitmap_rebuild_begin(f, opts)
                                          : bg__module_rebuild_begin(f, opts);
}

int64_t bg_remote_filter_rebuild_add_many(bg_remote_filter *f, const void *const *keys,
                                          const size_t *lens, size_t count, uint8_t *results)
{
    if (!f || (count && (!keys || !lens)))
        return BG_EINVAL;
    for (size_t i = 0; i < count; i++)
        if (!keys[i] && lens[i])
            return BG_EINVAL;
    if (count > (size_t)INT32_MAX)
        return BG_EINVAL;
    if (count == 0)
        return 0;
    bg__remote_allow_array(f->r, count);
    int64_t rc;
    if (f->shards > 1)
        rc = sharded_rebuild_add(f, keys, lens, count, results);
    else if (f->backend == BG_REMOTE_BITMAP)
        rc = bg__bitmap_rebuild_add(f, keys, lens, count, results);
    else
        rc = bg__module_rebuild_add(f, keys, lens, count, results);
    bg__remote_allow_array(f->r, 0);
    return rc;
}

int bg_remote_filter_rebuild_commit(bg_remote_filter *f)
{
    if (!f)
        return BG_EINVAL;
    if (f->shards > 1)
        return sharded_rebuild_commit(f);
    return f->backend == BG_REMOTE_BITMAP ? bg__bitmap_rebuild_commit(f)
                                          : bg__module_rebuild_commit(f);
}

int bg_remote_filter_set_rebuild_lease(bg_remote_filter *f, uint64_t lease_ms)
{
    if (!f || lease_ms == 0 || lease_ms > BG_REMOTE_MAX_REBUILD_LEASE_MS)
        return BG_EINVAL;
    f->rb_lease_ms = lease_ms;
    return BG_OK;
}

int bg_remote_filter_rebuild_abort(bg_remote_filter *f)
{
    if (!f || f->final_name)
        return BG_EINVAL;
    if (f->shards > 1)
        return sharded_rebuild_abort(f);
    return f->backend == BG_REMOTE_BITMAP ? bg__bitmap_rebuild_abort(f)
                                          : bg__module_rebuild_abort(f);
}

void bg__remote_filter_set_mode(bg_remote_filter *f, bg__bitmap_mode mode)
{
    if (f)
        f->mode = mode;
}

bg_remote_backend bg_remote_filter_backend(const bg_remote_filter *f)
{
    return f ? f->backend : (bg_remote_backend)0;
}
uint64_t bg_remote_filter_bits(const bg_remote_filter *f)
{
    return f ? f->m : 0;
}
uint32_t bg_remote_filter_hashes(const bg_remote_filter *f)
{
    return f ? f->k : 0;
}
uint64_t bg_remote_filter_seed(const bg_remote_filter *f)
{
    return f ? f->seed : 0;
}
uint64_t bg_remote_filter_generation(const bg_remote_filter *f)
{
    return f ? f->generation : 0;
}

uint32_t bg_remote_filter_shards(const bg_remote_filter *f)
{
    return !f ? 0 : f->shards > 1 ? f->shards : 1;
}
