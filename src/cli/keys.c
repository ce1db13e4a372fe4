/* SPDX-License-Identifier: BSD-3-Clause */
/* The key reader (cli.h, "keys"): keys from a stream, in batches, in
 * constant memory. */
#include "cli_keys.h"
#include "cli_output.h"
#include "cli_signals.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_keys_begin(cli_keys *r, int fd, char sep)
{
    memset(r, 0, sizeof *r);
    r->fd = fd;
    r->source = "standard input";
    r->sep = sep;
    r->cap = CLI_READ_BUFFER;
    r->buf = malloc(r->cap);
    if (!r->buf) {
        cli_error("out of memory");
        return -1;
    }
    /* The total is known for a regular file (`add f < keys.txt`): what is
     * left of it from the current offset. */
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        off_t at = lseek(fd, 0, SEEK_CUR);
        if (at >= 0 && at <= st.st_size)
            r->input_bytes = (uint64_t)(st.st_size - at);
    }
    return 0;
}

void cli_keys_end(cli_keys *r)
{
    free(r->buf);
    r->buf = NULL;
}

/* Makes room for more input: moves the unfinished key to the front, and
 * grows the buffer when that key fills it. 0, or -1 (r->err). */
static int make_room(cli_keys *r)
{
    size_t rest = r->len - r->pos;
    if (r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, rest);
        r->len = rest;
        r->pos = 0;
    }
    if (r->len < r->cap)
        return 0;
    /* One key fills the whole buffer and has no separator yet. */
    if (r->cap >= (size_t)CLI_MAX_KEY + 1) {
        r->err = 0;
        return -1;
    }
    size_t cap = r->cap * 2;
    if (cap > (size_t)CLI_MAX_KEY + 1)
        cap = (size_t)CLI_MAX_KEY + 1;
    char *buf = realloc(r->buf, cap);
    if (!buf) {
        r->err = ENOMEM;
        return -1;
    }
    r->buf = buf;
    r->cap = cap;
    return 0;
}

int cli_keys_next(cli_keys *r)
{
    r->count = 0;
    for (;;) {
        /* Hand out every complete key already in the buffer. */
        while (r->count < CLI_BATCH) {
            char *start = r->buf + r->pos;
            char *end = memchr(start, r->sep, r->len - r->pos);
            if (!end)
                break;
            r->keys[r->count] = start;
            r->lens[r->count] = (size_t)(end - start);
            r->count++;
            r->pos += (size_t)(end - start) + 1;
        }
        if (r->count == CLI_BATCH)
            break;
        if (r->eof) {
            /* The last key needs no separator. */
            if (r->pos < r->len) {
                r->keys[r->count] = r->buf + r->pos;
                r->lens[r->count] = r->len - r->pos;
                r->count++;
                r->pos = r->len;
            }
            break;
        }
        /* The keys handed out point into the buffer: return them before
         * make_room moves its contents. */
        if (r->count > 0)
            break;
        if (make_room(r) != 0)
            return -1;
        /* A caught signal (cli_catch_signals) ends the reading: EINTR. */
        ssize_t n = -1;
        errno = EINTR;
        while (!cli_caught_signal &&
               (n = read(r->fd, r->buf + r->len, r->cap - r->len)) < 0 && errno == EINTR)
            ;
        if (n < 0) {
            r->err = errno;
            return -1;
        }
        if (n == 0)
            r->eof = true;
        r->len += (size_t)n;
        r->bytes_read += (uint64_t)n;
    }
    r->total_keys += r->count;
    return (int)r->count;
}

void cli_keys_error(const cli_keys *r, const char *cmd)
{
    if (r->err == EINTR)
        return; /* a caught signal: the command says so */
    if (r->err == 0)
        cli_error("%s: %s: key %llu is longer than %u bytes (the limit)", cmd, r->source,
                  (unsigned long long)r->total_keys + 1, (unsigned)CLI_MAX_KEY);
    else
        cli_error("%s: %s: %s", cmd, r->source, strerror(r->err));
}

/* The arguments, in batches of pointers and lengths. */
static int64_t each_arg(char **args, size_t nargs, cli_batch_fn fn, void *ctx)
{
    const void *ptrs[CLI_BATCH];
    size_t lens[CLI_BATCH];
    for (size_t at = 0; at < nargs; at += CLI_BATCH) {
        size_t count = nargs - at < CLI_BATCH ? nargs - at : CLI_BATCH;
        for (size_t i = 0; i < count; i++) {
            ptrs[i] = args[at + i];
            lens[i] = strlen(args[at + i]);
        }
        if (fn(ctx, ptrs, lens, count, at) != 0)
            return -1;
    }
    return (int64_t)nargs;
}

int64_t cli_keys_each(char **args, size_t nargs, char sep, const char *cmd, const char *path,
                      bool quiet, cli_batch_fn fn, void *ctx)
{
    if (nargs > 0)
        return each_arg(args, nargs, fn, ctx);
    return cli_keys_each_fd(STDIN_FILENO, "standard input", sep, cmd, path, quiet, fn, ctx);
}

int64_t cli_keys_each_fd(int fd, const char *source, char sep, const char *cmd, const char *path,
                         bool quiet, cli_batch_fn fn, void *ctx)
{
    cli_keys r;
    if (cli_keys_begin(&r, fd, sep) != 0)
        return -1;
    r.source = source;
    char label[256];
    snprintf(label, sizeof label, "bloomgate %s %s", cmd, path);
    cli_progress prog;
    cli_progress_begin(&prog, label, "keys", quiet);
    int n;
    int64_t rc = 0;
    while ((n = cli_keys_next(&r)) > 0) {
        if (fn(ctx, r.keys, r.lens, (size_t)n, r.total_keys - (uint64_t)n) != 0) {
            rc = -1;
            break;
        }
        cli_progress_update(&prog, r.total_keys, r.bytes_read, r.input_bytes);
    }
    cli_progress_end(&prog);
    if (n < 0) {
        cli_keys_error(&r, cmd);
        rc = -1;
    }
    if (rc == 0)
        rc = (int64_t)r.total_keys;
    cli_keys_end(&r);
    return rc;
}
