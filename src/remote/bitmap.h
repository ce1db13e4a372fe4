/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal to bloomgate_remote: the bitmap backend's handle and helpers,
 * shared by its three files (bitmap.c: the handle and its batches,
 * bitmap_transfer.c: publish and fetch, bitmap_rebuild.c: the rebuild) and
 * the sharded filters built on it (sharded.c). Not API. */
#ifndef BG_REMOTE_BITMAP_H
#define BG_REMOTE_BITMAP_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <bloomgate/hash.h>
#include <bloomgate/layout.h>

#include "remote_internal.h"

/* One generation's shape: a pending rebuild's, as last seen. */
typedef struct bg__gen {
    uint64_t gen; /* 0: none */
    uint64_t m, seed, capacity;
    uint32_t k;
    double error_rate;
    char str[24]; /* gen in decimal; "0" when none */
} bg__gen;

/* A bitmap filter's handle. base's shape is the generation it opened. */
typedef struct bg__bitmap_filter {
    bg_remote_filter base;
    char *name;
    char *meta_key; /* {name}:meta */
    char *bits_key; /* {name}:bits:<generation> */
    char gen_str[24];
    char lineage[24];  /* the generation the filter was created with */
    bg__gen next;      /* the pending rebuild as last seen (adds write it too) */
    bg__gen rb;        /* the rebuild this handle began */
    char *rb_bits_key; /* {name}:bits:<rb.gen> */
} bg__bitmap_filter;

/* The bitmap handle behind f, which must be one (base is its first member). */
static inline bg__bitmap_filter *bg__bitmap_of(bg_remote_filter *f)
{
    return (bg__bitmap_filter *)(void *)f;
}

/* ---- helpers of the bitmap backend's files ---------------------------- */

/* EVALSHA script `idx` with argv[0..1] left for "EVALSHA" and the sha,
 * argv[2] = the number of keys, then the keys and the arguments. The
 * scripts are files, src/remote/lua/<name>.lua (BG__SCRIPT_<NAME>), each
 * runnable on its own with redis-cli --eval and specified in
 * docs/PROTOCOL.md; the build embeds them as bg__script_src. */
static inline int bg__bitmap_script(bg_remote *r, int idx, int argc, const char **argv,
                                    size_t *lens, redisReply **reply)
{
    return bg__remote_script(r, idx, bg__script_src[idx], argc, argv, lens, reply);
}

/* Sets g to "no pending rebuild". */
static inline void bg__bitmap_no_next(bg__gen *g)
{
    memset(g, 0, sizeof *g);
    g->str[0] = '0';
}

/* A meta hash field as a whole decimal uint64. 0 on success, -1 if not one. */
static inline int bg__bitmap_field_u64(const redisReply *e, uint64_t *out)
{
    return e->type == REDIS_REPLY_STRING && bg__parse_u64(e->str, e->len, out) == 0 ? 0 : -1;
}

/* Writes a key's k positions in an array of m bits as decimal strings into
 * buf, pointers into argv; returns the end of what it wrote. Called per key
 * by the batches, hence inline. */
static inline char *bg__bitmap_write_positions(uint64_t m, uint32_t k, bg_hash h, char *buf,
                                               const char **argv, size_t *lens)
{
    bg_layout_probe p = bg_layout_probe_first(h, m); /* the standard layout */
    for (;;) {
        char tmp[24];
        int n = 0;
        uint64_t v = p.x;
        do {
            tmp[n++] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        argv[p.j] = buf;
        lens[p.j] = (size_t)n;
        while (n)
            *buf++ = tmp[--n];
        if (p.j + 1 == k)
            break;
        bg_layout_probe_next(&p);
    }
    return buf;
}

/* The handle's shape as script arguments (check_generation's ARGV[1..5]). */
typedef struct bg__shape_args {
    char k[12], m[24], seed[24];
} bg__shape_args;

/* Fills argv[0..4] and lens[0..4] with f's shape; the strings live in *s. */
void bg__bitmap_common_args(const bg__bitmap_filter *f, bg__shape_args *s, const char **argv,
                            size_t *lens);

/* Points f->bits_key at f->base.generation's bits key (and f->gen_str at
 * its decimal). Allocates; BG_ENOMEM leaves bits_key NULL. */
int bg__bitmap_set_bits_key(bg__bitmap_filter *f);

/* After a script followed a swap (same shape): adopt the generation it
 * reported, so that later calls name the current bits key. */
int bg__bitmap_follow(bg__bitmap_filter *f, const redisReply *e);

/* "{name}:bits:<gen>", or "{name}:meta" for gen 0. Allocates: release with
 * bg__free; NULL when out of memory. */
char *bg__bitmap_key_for(const char *name, uint64_t gen);

/* One command whose reply is only checked for not being an error. */
int bg__bitmap_command_ok(bg_remote *r, int argc, const char **argv, const size_t *lens);

/* Makes `key` a string of `bytes` bytes, `first` (n bytes) then zeros,
 * that expires unless a script adopts it (bitmap.c, ORPHANS). */
int bg__bitmap_stage_bits(bg_remote *r, const char *key, const void *first, size_t n,
                          uint64_t bytes);

/* The bitmap backend's operations, for the sharded filters' shards. */
int bg__bitmap_stats(bg_remote_filter *f, bg_remote_filter_stats *out);
int bg__bitmap_drop(bg_remote_filter *f);
int bg__bitmap_expire(bg_remote_filter *f, uint64_t ttl_ms);
int bg__bitmap_fetch(bg_remote_filter *f, bg_filter **out);
int bg__bitmap_rebuild_begin(bg_remote_filter *f, const bg_remote_filter_options *o);
int64_t bg__bitmap_rebuild_add(bg_remote_filter *f, const void *const *keys, const size_t *lens,
                               size_t count, uint8_t *results);
int bg__bitmap_rebuild_commit(bg_remote_filter *f);
int bg__bitmap_rebuild_abort(bg_remote_filter *f);

/* One shard's part of a batch (bg__bitmap_run_parts). */
typedef struct bg__part {
    bg_remote_filter *f; /* a bitmap handle */
    const void *const *keys;
    const size_t *lens;
    size_t count;
    uint8_t *results; /* may be NULL */
} bg__part;

/* Runs each part's script on its shard, all sent before any reply is read
 * (bg__remote_fanout). Returns the hits summed, or the first error. */
int64_t bg__bitmap_run_parts(int add, const bg__part *parts, size_t n);

#endif
