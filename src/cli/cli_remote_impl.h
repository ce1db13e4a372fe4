/* SPDX-License-Identifier: BSD-3-Clause */
/* What the remote halves of the commands share (remote.c and the
 * cmd_*_remote.c files). Included only by the files built with remote
 * support (BG_BUILD_REMOTE): it needs <bloomgate/remote.h>. The entry points
 * the commands call, and the stand-ins without remote support, are in
 * cli_remote.h. */
#ifndef BG_CLI_REMOTE_IMPL_H
#define BG_CLI_REMOTE_IMPL_H

#include "cli_remote.h"

#include <bloomgate/remote.h>

/* A remote filter named by a URL: the URL, its connection, and the filter
 * once opened (or created) on it. */
struct cli_remote {
    cli_url url;
    bg_remote *r;
    bg_remote_filter *f; /* NULL until opened */
};

/* Parses `text`, allocates a cli_remote and connects (no filter opened
 * yet). 0, or -1 after printing why. Free with cli_remote_close. */
int cli_remote_begin(const char *text, cli_remote **out);

/* "bloomgate: URL: WHAT: <why>" for a failed remote call with status rc,
 * with the client's detail from r and, for the replies people meet first
 * (a password wanted, no module loaded), what to do. */
void cli_remote_error(const char *display, const char *what, int rc, const bg_remote *r);

/* "module" or "bitmap". */
const char *cli_remote_backend_word(bg_remote_backend b);

/* What in `a` does not apply to backend b (for a usage error), or NULL if
 * all of it does: create's rules, which rebuild's resizing follows too
 * (cmd_create_remote.c). */
const char *cli_remote_create_args_error(bg_remote_backend b, const cli_remote_create_args *a);

/* What push and pull report of a filter: the shape (bitmap) or the layers
 * (module). */
typedef struct cli_moved {
    uint64_t bits, seed, items, bytes, generation;
    uint32_t hashes, layers;
} cli_moved;

void cli_moved_of(const bg_filter *f, cli_moved *m);
/* The JSON fields after "file" and "url" (push) or "url" and "file" (pull),
 * and the closing brace. */
void cli_moved_json(bool module, const cli_moved *m);
/* "m = ... bits, k = ..., N items" or "scalable, L layers (B), N items". */
void cli_moved_words(bool module, const cli_moved *m, char *buf, size_t size);

#endif
