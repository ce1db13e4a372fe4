/* Internal to bloomgate_remote: the bitmap backend's handle, shared by the
 * bitmap backend's files and the sharded filters built on it (sharded.c).
 * Not API. */
#ifndef BG_REMOTE_BITMAP_H
#define BG_REMOTE_BITMAP_H

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
    bg__bitmap_mode mode;
} bg__bitmap_filter;

/* The bitmap handle behind f, which must be one (base is its first member). */
static inline bg__bitmap_filter *bg__bitmap_of(bg_remote_filter *f)
{
    return (bg__bitmap_filter *)(void *)f;
}

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
