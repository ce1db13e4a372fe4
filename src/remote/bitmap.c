/* The bitmap backend: a standard filter as a plain Redis string.
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
 * calls of at most 1024 operations, Lua's unpack limit) measured slower,
 * and a bare BITFIELD cannot check anything: docs/REMOTE.md. Both other
 * ways stay here for the bench (bg__bitmap_mode).
 *
 * Scripts are loaded with SCRIPT LOAD the first time a connection needs
 * them; EVALSHA answering NOSCRIPT (a restarted server, SCRIPT FLUSH) falls
 * back to EVAL with the source, which nothing executed before.
 *
 * CREATION
 * The bit array is grown with SETRANGE in steps of BG__GROW_STEP bytes (each
 * step zero-fills only its own part, so no single command stalls Redis), and
 * only then does one script write the meta hash, refusing if a meta hash
 * appeared meanwhile. A reader either finds no filter or a complete one. */
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

#include "core/alloc_internal.h"
#include "remote_internal.h"

#define BG__GROW_STEP ((uint64_t)4 << 20)
#define BG__BITMAP_FORMAT "1"

/* Checks shared by every script on an open filter: KEYS[1] meta, KEYS[2]
 * bits, ARGV[1] the handle's generation. */
#define CHECK                                                                        \
    "local g = redis.call('HGET', KEYS[1], 'generation')\n"                          \
    "if not g then return redis.error_reply('BGNOTFOUND filter does not exist') end\n" \
    "if g ~= ARGV[1] then return redis.error_reply('BGSTALE filter was re-created: "  \
    "generation ' .. g .. ', this handle has ' .. ARGV[1]) end\n"                     \
    "if redis.call('EXISTS', KEYS[2]) == 0 then "                                    \
    "return redis.error_reply('BGNOTFOUND bit array is missing') end\n"

/* ARGV[2] = k, ARGV[3..] = the positions, k per key. Builds `bit`, one
 * value per position, with BITFIELD `cmd` `op` u1 (1024 per call). */
#define BITFIELD_LOOP(cmd, op, val)                                                  \
    "local k = tonumber(ARGV[2])\n"                                                  \
    "local total = #ARGV - 2\n"                                                      \
    "local bit = {}\n"                                                               \
    "local c = 1\n"                                                                  \
    "while c <= total do\n"                                                          \
    "  local last = math.min(c + 1023, total)\n"                                     \
    "  local a = {}\n"                                                               \
    "  local q = 0\n"                                                                \
    "  for p = c, last do\n"                                                         \
    "    a[q + 1] = '" op "'; a[q + 2] = 'u1'; a[q + 3] = ARGV[p + 2]" val "\n"      \
    "  end\n"                                                                        \
    "  local r = redis.call('" cmd "', KEYS[2], unpack(a))\n"                        \
    "  for p = 1, #r do bit[c + p - 1] = r[p] end\n"                                 \
    "  c = last + 1\n"                                                               \
    "end\n"                                                                          \
    "local out = {}\n"                                                               \
    "local hits = 0\n"

static const char *const script_src[BG__SCRIPTS] = {
    [BG__SCRIPT_ADD_BITFIELD] =
        CHECK BITFIELD_LOOP("BITFIELD", "SET", "; a[q + 4] = 1; q = q + 4")
        "for key = 1, total / k do\n"
        "  local fresh = 0\n"
        "  for j = (key - 1) * k + 1, key * k do if bit[j] == 0 then fresh = 1 end end\n"
        "  out[key] = fresh\n"
        "  hits = hits + fresh\n"
        "end\n"
        "if hits > 0 then redis.call('HINCRBY', KEYS[1], 'items', hits) end\n"
        "return out\n",
    [BG__SCRIPT_GET_BITFIELD] =
        CHECK BITFIELD_LOOP("BITFIELD_RO", "GET", "; q = q + 3")
        "for key = 1, total / k do\n"
        "  local here = 1\n"
        "  for j = (key - 1) * k + 1, key * k do if bit[j] == 0 then here = 0 end end\n"
        "  out[key] = here\n"
        "end\n"
        "return out\n",
    [BG__SCRIPT_ADD_SETBIT] =
        CHECK
        "local k = tonumber(ARGV[2])\n"
        "local out = {}\n"
        "local hits = 0\n"
        "local i = 3\n"
        "for key = 1, (#ARGV - 2) / k do\n"
        "  local fresh = 0\n"
        "  for j = 1, k do\n"
        "    if redis.call('SETBIT', KEYS[2], ARGV[i], 1) == 0 then fresh = 1 end\n"
        "    i = i + 1\n"
        "  end\n"
        "  out[key] = fresh\n"
        "  hits = hits + fresh\n"
        "end\n"
        "if hits > 0 then redis.call('HINCRBY', KEYS[1], 'items', hits) end\n"
        "return out\n",
    [BG__SCRIPT_GET_SETBIT] =
        CHECK
        "local k = tonumber(ARGV[2])\n"
        "local out = {}\n"
        "for key = 1, (#ARGV - 2) / k do\n"
        "  local here = 1\n"
        "  local base = 2 + (key - 1) * k\n"
        "  for j = 1, k do\n"
        "    if redis.call('GETBIT', KEYS[2], ARGV[base + j]) == 0 then here = 0; break end\n"
        "  end\n"
        "  out[key] = here\n"
        "end\n"
        "return out\n",
    /* ARGV: generation, m, k, seed, bytes, capacity, error_rate. */
    [BG__SCRIPT_CREATE] =
        "if redis.call('EXISTS', KEYS[1]) == 1 then\n"
        "  redis.call('DEL', KEYS[2])\n"
        "  return redis.error_reply('BGEXISTS filter exists')\n"
        "end\n"
        "if redis.call('STRLEN', KEYS[2]) ~= tonumber(ARGV[5]) then\n"
        "  redis.call('DEL', KEYS[2])\n"
        "  return redis.error_reply('ERR bloomgate: the bit array has the wrong size')\n"
        "end\n"
        "redis.call('HSET', KEYS[1], 'format', '" BG__BITMAP_FORMAT "', 'variant', 'standard',"
        " 'bits', ARGV[2], 'hashes', ARGV[3], 'seed', ARGV[4], 'generation', ARGV[1],"
        " 'items', '0', 'capacity', ARGV[6], 'error_rate', ARGV[7])\n"
        "return 'OK'\n",
    [BG__SCRIPT_STATS] =
        CHECK
        "local h = redis.call('HGET', KEYS[1], 'items') or '0'\n"
        "return {h, redis.call('BITCOUNT', KEYS[2])}\n",
    [BG__SCRIPT_DROP] = CHECK "return redis.call('DEL', KEYS[1], KEYS[2])\n",
    /* ARGV[2]: the TTL in milliseconds. */
    [BG__SCRIPT_EXPIRE] =
        CHECK
        "redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
        "redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
        "return 1\n",
};

/* EVALSHA script `idx` with argv[0..1] left for "EVALSHA" and the sha,
 * argv[2] = "2", argv[3..4] = the keys, then the arguments. */
static int run_script(bg_remote *r, int idx, int argc, const char **argv, size_t *lens,
                      redisReply **reply)
{
    *reply = NULL;
    int rc;
    redisReply *rep;
    if (!r->sha[idx][0]) {
        const char *la[3] = {"SCRIPT", "LOAD", script_src[idx]};
        size_t ll[3] = {6, 4, strlen(script_src[idx])};
        rc = bg__remote_command(r, 3, la, ll, &rep, 0);
        if (rc != BG_OK)
            return rc;
        if (rep->type != REDIS_REPLY_STRING || rep->len != 40) {
            freeReplyObject(rep);
            return bg__remote_fail(r, BG_EREMOTE, "SCRIPT LOAD: unexpected reply");
        }
        memcpy(r->sha[idx], rep->str, 40);
        r->sha[idx][40] = '\0';
        freeReplyObject(rep);
    }
    argv[0] = "EVALSHA";
    lens[0] = 7;
    argv[1] = r->sha[idx];
    lens[1] = 40;
    rc = bg__remote_command(r, argc, argv, lens, &rep, 1);
    if (rc != BG_OK)
        return rc;
    if (rep->type == REDIS_REPLY_ERROR && rep->str && strncmp(rep->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(rep);
        argv[0] = "EVAL";
        lens[0] = 4;
        argv[1] = script_src[idx];
        lens[1] = strlen(script_src[idx]);
        rc = bg__remote_command(r, argc, argv, lens, &rep, 1);
        if (rc != BG_OK)
            return rc;
    }
    if (rep->type == REDIS_REPLY_ERROR) {
        rc = bg__remote_error_reply(r, rep);
        freeReplyObject(rep);
        return rc;
    }
    *reply = rep;
    return BG_OK;
}

/* A random generation in [1, 2^63): getrandom, or the clock and pid. */
static uint64_t new_generation(void)
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

static int set_bits_key(bg_remote_filter *f)
{
    snprintf(f->gen_str, sizeof f->gen_str, "%" PRIu64, f->generation);
    size_t n = strlen(f->name) + strlen(f->gen_str) + 10;
    bg__free(f->bits_key);
    f->bits_key = bg__malloc(n);
    if (!f->bits_key)
        return BG_ENOMEM;
    snprintf(f->bits_key, n, "{%s}:bits:%s", f->name, f->gen_str);
    return BG_OK;
}

int bg__bitmap_create(bg_remote_filter *f, const bg_remote_filter_options *o)
{
    bg_remote *r = f->r;
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
    f->m = s.m;
    f->k = s.k;
    f->seed = o->seed;
    f->capacity = o->capacity ? s.n : 0;
    f->error_rate = o->capacity ? s.p : 0;
    f->generation = new_generation();
    if ((rc = set_bits_key(f)) != BG_OK)
        return rc;

    redisReply *rep;
    const char *ea[2] = {"EXISTS", f->meta_key};
    size_t el[2] = {6, strlen(f->meta_key)};
    if ((rc = bg__remote_command(r, 2, ea, el, &rep, 0)) != BG_OK)
        return rc;
    int exists = rep->type == REDIS_REPLY_INTEGER && rep->integer != 0;
    freeReplyObject(rep);
    if (exists)
        return bg__remote_fail(r, BG_EEXIST, "%s exists", f->meta_key);

    uint64_t bytes = (f->m + 7) / 8;
    char off[24];
    for (uint64_t done = 0; done < bytes;) {
        uint64_t end = bytes - done > BG__GROW_STEP ? done + BG__GROW_STEP : bytes;
        snprintf(off, sizeof off, "%" PRIu64, end - 1);
        const char *sa[4] = {"SETRANGE", f->bits_key, off, ""};
        size_t sl[4] = {8, strlen(f->bits_key), strlen(off), 1};
        sa[3] = "\0";
        if ((rc = bg__remote_command(r, 4, sa, sl, &rep, 0)) != BG_OK)
            goto orphan;
        freeReplyObject(rep);
        done = end;
    }

    char a[5][32];
    snprintf(a[0], sizeof a[0], "%" PRIu64, f->m);
    snprintf(a[1], sizeof a[1], "%" PRIu32, f->k);
    snprintf(a[2], sizeof a[2], "%" PRIu64, f->seed);
    snprintf(a[3], sizeof a[3], "%" PRIu64, bytes);
    snprintf(a[4], sizeof a[4], "%" PRIu64, f->capacity);
    char p[40];
    snprintf(p, sizeof p, "%.17g", f->error_rate);
    const char *ca[12] = {NULL, NULL, "2", f->meta_key, f->bits_key, f->gen_str,
                          a[0], a[1], a[2], a[3], a[4], p};
    size_t cl[12];
    for (int i = 2; i < 12; i++)
        cl[i] = strlen(ca[i]);
    rc = run_script(r, BG__SCRIPT_CREATE, 12, ca, cl, &rep);
    if (rc != BG_OK)
        goto orphan;
    freeReplyObject(rep);
    return BG_OK;

orphan:
    /* Best effort: the array is not referenced by any meta hash. */
    if (rc != BG_ECONN && rc != BG_EEXIST) {
        const char *da[2] = {"DEL", f->bits_key};
        size_t dl[2] = {3, strlen(f->bits_key)};
        char keep[BG__REMOTE_ERRSTR];
        memcpy(keep, r->errstr, sizeof keep);
        if (bg__remote_command(r, 2, da, dl, &rep, 0) == BG_OK)
            freeReplyObject(rep);
        memcpy(r->errstr, keep, sizeof keep);
    }
    return rc;
}

static int field_u64(const redisReply *e, uint64_t *out)
{
    return e->type == REDIS_REPLY_STRING && bg__parse_u64(e->str, e->len, out) == 0 ? 0 : -1;
}

int bg__bitmap_open(bg_remote_filter *f)
{
    bg_remote *r = f->r;
    const char *argv[10] = {"HMGET", f->meta_key, "format", "variant", "bits", "hashes",
                            "seed", "generation", "capacity", "error_rate"};
    size_t lens[10];
    for (int i = 0; i < 10; i++)
        lens[i] = strlen(argv[i]);
    redisReply *rep;
    int rc = bg__remote_command(r, 10, argv, lens, &rep, 0);
    if (rc != BG_OK)
        return rc;
    rc = BG_OK;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 8) {
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
    if (field_u64(e[0], &format) != 0) {
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
    if (field_u64(e[2], &m) != 0 || field_u64(e[3], &k) != 0 || field_u64(e[4], &f->seed) != 0 ||
        field_u64(e[5], &gen) != 0 || field_u64(e[6], &cap) != 0 ||
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
    if (end == e[7]->str || *end || !(p >= 0 && p < 1)) {
        rc = bg__remote_fail(r, BG_ECORRUPT, "%s: bad error_rate", f->meta_key);
        goto out;
    }
    f->m = m;
    f->k = (uint32_t)k;
    f->generation = gen;
    f->capacity = cap;
    f->error_rate = p;
    rc = set_bits_key(f);
out:
    freeReplyObject(rep);
    return rc;
}

/* The standard variant's probe positions (src/core/standard.c, filter.h). */
static inline uint64_t reduce(uint64_t x, uint64_t range)
{
    return (uint64_t)(((unsigned __int128)x * range) >> 64);
}

static inline uint64_t step_mod(uint64_t x, uint64_t y, uint64_t m)
{
    x += y;
    return x >= m ? x - m : x;
}

/* Writes key's k positions as decimal strings into buf, pointers into argv. */
static char *write_positions(const bg_remote_filter *f, bg_hash h, char *buf, const char **argv,
                             size_t *lens)
{
    uint64_t m = f->m;
    uint64_t x = reduce(h.h1, m);
    uint64_t y = reduce(h.h2, m - 1) + 1;
    for (uint32_t j = 0;;) {
        char tmp[24];
        int n = 0;
        uint64_t v = x;
        do {
            tmp[n++] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        argv[j] = buf;
        lens[j] = (size_t)n;
        while (n)
            *buf++ = tmp[--n];
        if (++j == f->k)
            break;
        x = step_mod(x, y, m);
        y = step_mod(y, j - 1, m);
    }
    return buf;
}

int64_t bg__bitmap_run(bg_remote_filter *f, int add, const void *const *keys, const size_t *lens,
                       size_t count, uint8_t *results)
{
    bg_remote *r = f->r;
    size_t k = f->k;
    int raw = f->mode == BG__BITMAP_RAW_BITFIELD;
    /* Script: EVALSHA sha 2 meta bits gen k pos... ; raw: BITFIELD(_RO) bits
     * (SET u1 pos 1 | GET u1 pos)... */
    size_t per = raw ? (add ? 4 : 3) : 1;
    size_t head = raw ? 2 : 7;
    if (count > (SIZE_MAX / 4 - head) / (k * per) || count * k * per + head > (size_t)INT32_MAX)
        return BG_EOVERFLOW;
    size_t argc = head + count * k * per;
    const char **argv = bg__malloc(argc * sizeof *argv);
    size_t *alen = bg__malloc(argc * sizeof *alen);
    char *digits = bg__malloc(count * k * 11 + 1);
    const char **pos = raw ? bg__malloc(count * k * sizeof *pos) : NULL;
    size_t *plen = raw ? bg__malloc(count * k * sizeof *plen) : NULL;
    int64_t rc;
    redisReply *rep = NULL;
    if (!argv || !alen || !digits || (raw && (!pos || !plen))) {
        rc = BG_ENOMEM;
        goto out;
    }
    char *d = digits;
    const char **pv = raw ? pos : argv + head;
    size_t *pl = raw ? plen : alen + head;
    for (size_t i = 0; i < count; i++) {
        bg_hash h;
        bg_hash_key(keys[i] ? keys[i] : "", lens[i], f->seed, &h);
        d = write_positions(f, h, d, pv + i * k, pl + i * k);
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
            a[2] = pos[i];
            l[2] = plen[i];
            if (add) {
                a[3] = "1";
                l[3] = 1;
            }
        }
        rc = bg__remote_command(r, (int)argc, argv, alen, &rep, 0);
    } else {
        char kbuf[12];
        snprintf(kbuf, sizeof kbuf, "%zu", k);
        argv[2] = "2";
        argv[3] = f->meta_key;
        argv[4] = f->bits_key;
        argv[5] = f->gen_str;
        argv[6] = kbuf;
        for (int i = 2; i < 7; i++)
            alen[i] = strlen(argv[i]);
        int idx = f->mode == BG__BITMAP_LUA_SETBIT
                      ? (add ? BG__SCRIPT_ADD_SETBIT : BG__SCRIPT_GET_SETBIT)
                      : (add ? BG__SCRIPT_ADD_BITFIELD : BG__SCRIPT_GET_BITFIELD);
        rc = run_script(r, idx, (int)argc, argv, alen, &rep);
    }
    if (rc != BG_OK)
        goto out;
    size_t want = raw ? count * k : count;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != want) {
        rc = bg__remote_fail(r, BG_EREMOTE, "unexpected reply to a batch");
        goto out;
    }
    int64_t hits = 0;
    for (size_t i = 0; i < count; i++) {
        int v;
        if (raw) {
            /* add: new if some old bit was 0; query: present if all are 1. */
            int any0 = 0;
            for (size_t j = 0; j < k; j++)
                any0 |= rep->element[i * k + j]->integer == 0;
            v = add ? any0 : !any0;
        } else {
            v = rep->element[i]->type == REDIS_REPLY_INTEGER && rep->element[i]->integer != 0;
        }
        hits += v;
        if (results)
            results[i] = (uint8_t)v;
    }
    rc = hits;
out:
    if (rep)
        freeReplyObject(rep);
    bg__free(argv);
    bg__free(alen);
    bg__free(digits);
    bg__free(pos);
    bg__free(plen);
    return rc;
}

/* EVALSHA of a maintenance script with the handle's keys and generation,
 * plus an optional extra argument. */
static int simple_script(bg_remote_filter *f, int idx, const char *extra, redisReply **rep)
{
    const char *argv[7] = {NULL, NULL, "2", f->meta_key, f->bits_key, f->gen_str, extra};
    size_t lens[7];
    for (int i = 2; i < 7; i++)
        lens[i] = argv[i] ? strlen(argv[i]) : 0;
    return run_script(f->r, idx, extra ? 7 : 6, argv, lens, rep);
}

int bg__bitmap_stats(bg_remote_filter *f, bg_remote_filter_stats *out)
{
    redisReply *rep;
    int rc = simple_script(f, BG__SCRIPT_STATS, NULL, &rep);
    if (rc != BG_OK)
        return rc;
    uint64_t items;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
        field_u64(rep->element[0], &items) != 0 || rep->element[1]->type != REDIS_REPLY_INTEGER ||
        rep->element[1]->integer < 0) {
        freeReplyObject(rep);
        return bg__remote_fail(f->r, BG_EREMOTE, "unexpected reply to stats");
    }
    out->bits = f->m;
    out->hashes = f->k;
    out->seed = f->seed;
    out->generation = f->generation;
    out->capacity = f->capacity;
    out->error_rate = f->error_rate;
    out->bytes = (f->m + 7) / 8;
    out->items = items;
    out->bits_set = (uint64_t)rep->element[1]->integer;
    out->layers = 1;
    freeReplyObject(rep);
    return BG_OK;
}

int bg__bitmap_drop(bg_remote_filter *f)
{
    redisReply *rep;
    int rc = simple_script(f, BG__SCRIPT_DROP, NULL, &rep);
    if (rc == BG_OK)
        freeReplyObject(rep);
    return rc;
}

int bg__bitmap_expire(bg_remote_filter *f, uint64_t ttl_ms)
{
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%" PRIu64, ttl_ms);
    redisReply *rep;
    int rc = simple_script(f, BG__SCRIPT_EXPIRE, ttl, &rep);
    if (rc == BG_OK)
        freeReplyObject(rep);
    return rc;
}
