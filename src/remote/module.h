/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal to bloomgate_remote: the module backend's handle and helpers,
 * shared by its three files (module.c: the handle, adds and queries;
 * module_transfer.c: publish and fetch; module_rebuild.c: the rebuild).
 * Not API. */
#ifndef BG_REMOTE_MODULE_H
#define BG_REMOTE_MODULE_H

#include <string.h>

#include "common/alloc.h"
#include "remote_internal.h"

/* A module filter's handle. The server keeps the shape; base holds the
 * capacity and error rate it was created (or rebuilt) with. */
typedef struct bg__module_filter {
    bg_remote_filter base;
    char *name;             /* the key (a staged filter's staging key) */
    char *final_name;       /* staged: the name commit gives it; else NULL */
    uint64_t stage_touched; /* staged: when its TTL was last renewed (ms) */
    char *rb_marker;        /* {name}:rebuild, which names a pending rebuild */
    char *rb_key;           /* the rebuild this handle began: its key; else NULL */
    uint64_t rb_capacity;   /* ... and its shape */
    double rb_error_rate;
} bg__module_filter;

/* The module handle behind f, which must be one (base is its first member). */
static inline bg__module_filter *bg__module_of(bg_remote_filter *f)
{
    return (bg__module_filter *)(void *)f;
}

/* Runs script idx (src/remote/lua/module_<name>.lua): bg__remote_script. */
static inline int bg__module_script(bg_remote *r, int idx, int argc, const char **argv,
                                    size_t *lens, redisReply **rep)
{
    return bg__remote_script(r, idx, bg__script_src[idx], argc, argv, lens, rep);
}

/* bg__module_script on f's connection, with an error that says the filter
 * is missing as BG_ENOTFOUND. */
int bg__module_key_script(bg__module_filter *f, int idx, int argc, const char **argv,
                          size_t *lens, redisReply **rep);

/* BF.RESERVE's arguments after the key: error rate, capacity, then
 * EXPANSION e and NONSCALING as asked. */
typedef struct bg__reserve_args {
    const char *argv[5];
    size_t lens[5];
    int argc;
    char p[40], n[24], e[16];
} bg__reserve_args;

/* Fills *a from o; BG_EINVAL for a shape the module cannot take. The
 * strings live in *a. */
int bg__module_reserve_args_make(bg__reserve_args *a, const bg_remote_filter_options *o);

/* A key no name can open, in name's cluster slot: {name}:<what>:<16 hex
 * digits>, random. Allocates; NULL if out of memory. */
char *bg__module_hidden_key(const char *name, const char *what);

/* {name}:rebuild, the marker of a pending rebuild. Allocates; NULL if out
 * of memory. */
char *bg__module_marker_key(const char *name);

/* argv/lens with `head` slots first, then the keys. */
typedef struct bg__key_args {
    const char **argv;
    size_t *lens;
    int argc;
} bg__key_args;

/* Allocates a's arrays (release with bg__module_key_args_free) and points
 * the slots after `head` at the keys, which it does not copy. */
int bg__module_key_args_make(bg__key_args *a, size_t head, const void *const *keys,
                             const size_t *lens, size_t count);
void bg__module_key_args_free(bg__key_args *a);

static inline void bg__module_set_arg(bg__key_args *a, int i, const char *s)
{
    a->argv[i] = s;
    a->lens[i] = strlen(s);
}

/* A batch's reply: one integer per key. Returns the hits, or a status. */
int64_t bg__module_batch_results(bg__module_filter *f, const redisReply *rep, size_t count,
                                 uint8_t *results);

/* Forgets the rebuild this handle began (its key only: nothing is sent). */
static inline void bg__module_rb_clear(bg__module_filter *f)
{
    bg__free(f->rb_key);
    f->rb_key = NULL;
}

/* The module backend's operations that live in the other files. */
int bg__module_fetch(bg_remote_filter *f, bg_filter **out);
int bg__module_rebuild_begin(bg_remote_filter *f, const bg_remote_filter_options *o);
int64_t bg__module_rebuild_add(bg_remote_filter *f, const void *const *keys, const size_t *lens,
                               size_t count, uint8_t *results);
int bg__module_rebuild_commit(bg_remote_filter *f);
int bg__module_rebuild_abort(bg_remote_filter *f);

#endif
