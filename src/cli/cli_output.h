/* SPDX-License-Identifier: BSD-3-Clause */
/* The bloomgate command-line tool: what it prints. Messages on stderr,
 * a buffered writer for the output of many keys, JSON strings and numbers
 * (output.c). */
#ifndef BG_CLI_OUTPUT_H
#define BG_CLI_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <bloomgate/bloomgate.h>

/* ---- messages --------------------------------------------------------- */

/* "bloomgate: <message>\n" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "bloomgate: PATH: <what>: <problem>\n", where <problem> is bg_strerror(status)
 * or, for BG_EIO, strerror(err) (pass errno as it was right after the
 * failing call). `what` (e.g. "cannot save") may be NULL; it is only printed
 * for BG_EIO, whose cause alone ("No such file or directory") does not say
 * which step failed. */
void cli_file_error(const char *path, const char *what, int status, int err);

/* For a target that exists and that the caller will not replace without
 * --force: if it is a directory, FIFO, socket or device (not a link to one),
 * prints that it is never saved over, even with --force, and returns true;
 * otherwise prints nothing and returns false, and the caller says "use
 * --force". */
bool cli_target_never_replaced(const char *path);
/* ---- output ----------------------------------------------------------- */

/* A write buffer over a file descriptor: one write(2) per CLI_READ_BUFFER
 * bytes instead of a stdio call per key. The first write error is kept in
 * `err` (an errno value) and later writes are dropped; cli_out_close
 * reports it. */
typedef struct cli_out {
    int fd;
    int err;
    char *buf;
    size_t len;
    size_t cap;
} cli_out;

/* Allocates the buffer. -1 (message printed) if out of memory. */
int cli_out_open(cli_out *o, int fd);
/* Writes what is buffered. 0, or -1 with o->err set. */
int cli_out_flush(cli_out *o);
/* Flushes and frees; returns 0, or -1 after printing
 * "bloomgate: standard output: <strerror>". */
int cli_out_close(cli_out *o);
void cli_out_slow(cli_out *o, const void *p, size_t n);
void cli_out_printf(cli_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline void cli_out_write(cli_out *o, const void *p, size_t n)
{
    if (o->cap - o->len >= n) {
        if (n > 0) {
            memcpy(o->buf + o->len, p, n);
            o->len += n;
        }
        return;
    }
    cli_out_slow(o, p, n);
}

static inline void cli_out_byte(cli_out *o, char c)
{
    if (o->len < o->cap)
        o->buf[o->len++] = c;
    else
        cli_out_slow(o, &c, 1);
}

/* A JSON string: quotes, escapes, and U+FFFD for each byte that is not part
 * of valid UTF-8 (JSON text must be UTF-8). */
void cli_out_json_string(cli_out *o, const void *s, size_t len);
/* The same into a stdio stream. */
void cli_json_string(FILE *fp, const char *s);

/* The shortest "%.*g" that reads back as the same double; "null" for NaN
 * and infinities (JSON has no such numbers). buf holds at least 32 bytes. */
const char *cli_fmt_double(char buf[32], double v);

/* Flushes stdout; returns 0, or -1 after printing the write error. Every
 * subcommand that prints through stdio calls it before returning success. */
int cli_stdout_close(void);

/* "1.17 KiB": binary units, three significant digits. */
void cli_fmt_bytes(char *buf, size_t size, uint64_t bytes);

/* ---- scalable filters (create, info) ---------------------------------- */

/* The JSON fields that describe a scalable filter's growth
 * (bg_filter_scaling), without braces or a trailing comma: shared by create
 * and info. */
void cli_print_scaling_json(FILE *fp, const bg_filter_scaling *sc);

#endif
