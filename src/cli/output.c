/* SPDX-License-Identifier: BSD-3-Clause */
/* What the tool prints: messages, buffered output, JSON and numbers. */
#include "cli_output.h"
#include "cli_keys.h" /* CLI_READ_BUFFER: the output buffer is the key reader's size */

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- messages --------------------------------------------------------- */

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bloomgate: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_file_error(const char *path, const char *what, int status, int err)
{
    if (status == BG_EIO) {
        /* the library's errno for a pipe, socket or device (file.h) */
        const char *why = err == ESPIPE ? "not a regular file" : strerror(err);
        if (what)
            cli_error("%s: %s: %s", path, what, why);
        else
            cli_error("%s: %s", path, why);
    } else {
        cli_error("%s: %s", path, bg_strerror(status));
    }
}

bool cli_target_never_replaced(const char *path)
{
    /* lstat: a symbolic link, whatever it leads to, is replaced by the
     * saved file (--force), so only the thing itself is never replaced. */
    struct stat st;
    if (lstat(path, &st) != 0 || S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
        return false;
    cli_error("%s: %s: it is never replaced, not even with --force", path,
              S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
    return true;
}

int cli_stdout_close(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int err = errno;
        cli_error("standard output: %s", strerror(err ? err : EIO));
        return -1;
    }
    return 0;
}

void cli_fmt_bytes(char *buf, size_t size, uint64_t bytes)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int i = 0;
    while (v >= 1024.0 && i < 6) {
        v /= 1024.0;
        i++;
    }
    if (i == 0)
        snprintf(buf, size, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, size, "%.*f %s", v < 10 ? 2 : v < 100 ? 1 : 0, v, unit[i]);
}

void cli_print_scaling_json(FILE *fp, const bg_filter_scaling *sc)
{
    char d[32];
    fprintf(fp, "\"layer_variant\":\"%s\",\"expansion\":%u,\"tightening\":%s,",
            bg_variant_name(sc->layer_variant), sc->expansion, cli_fmt_double(d, sc->tightening));
    fprintf(fp, "\"max_layers\":%u,\"max_bytes\":%llu,\"nonscaling\":%s,", sc->max_layers,
            (unsigned long long)sc->max_bytes, sc->nonscaling ? "true" : "false");
    fprintf(fp, "\"first_share\":%s,\"blocked_from\":%u", cli_fmt_double(d, sc->first_share),
            sc->blocked_from);
}

/* ---- output ----------------------------------------------------------- */

int cli_out_open(cli_out *o, int fd)
{
    o->fd = fd;
    o->err = 0;
    o->len = 0;
    o->cap = CLI_READ_BUFFER;
    o->buf = malloc(o->cap);
    if (!o->buf) {
        cli_error("out of memory");
        return -1;
    }
    return 0;
}

int cli_out_flush(cli_out *o)
{
    size_t at = 0;
    while (at < o->len && o->err == 0) {
        ssize_t n = write(o->fd, o->buf + at, o->len - at);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            o->err = errno;
            break;
        }
        at += (size_t)n;
    }
    o->len = 0;
    return o->err ? -1 : 0;
}

void cli_out_slow(cli_out *o, const void *p, size_t n)
{
    const char *s = p;
    while (n > 0) {
        if (o->len == o->cap)
            cli_out_flush(o);
        size_t room = o->cap - o->len;
        size_t take = n < room ? n : room;
        memcpy(o->buf + o->len, s, take);
        o->len += take;
        s += take;
        n -= take;
    }
}

void cli_out_printf(cli_out *o, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        cli_out_write(o, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        o->err = o->err ? o->err : ENOMEM;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    cli_out_write(o, big, (size_t)n);
    free(big);
}

int cli_out_close(cli_out *o)
{
    int rc = cli_out_flush(o);
    free(o->buf);
    o->buf = NULL;
    if (rc != 0) {
        cli_error("standard output: %s", strerror(o->err));
        return -1;
    }
    return 0;
}

/* Length of the valid UTF-8 sequence at s[0, n), or 0 if it is not one
 * (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (n < len)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

void cli_out_json_string(cli_out *o, const void *key, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = key;
    cli_out_byte(o, '"');
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            /* the common case: a run of plain ASCII */
            size_t j = i + 1;
            while (j < len && s[j] >= 0x20 && s[j] < 0x80 && s[j] != '"' && s[j] != '\\')
                j++;
            cli_out_write(o, s + i, j - i);
            i = j;
            continue;
        }
        if (c < 0x80) {
            char esc[6] = {'\\', 0, 0, 0, 0, 0};
            size_t n = 2;
            switch (c) {
            case '"': esc[1] = '"'; break;
            case '\\': esc[1] = '\\'; break;
            case '\n': esc[1] = 'n'; break;
            case '\t': esc[1] = 't'; break;
            case '\r': esc[1] = 'r'; break;
            case '\b': esc[1] = 'b'; break;
            case '\f': esc[1] = 'f'; break;
            default:
                esc[1] = 'u';
                esc[2] = '0';
                esc[3] = '0';
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
                n = 6;
            }
            cli_out_write(o, esc, n);
            i++;
            continue;
        }
        size_t n = utf8_seq(s + i, len - i);
        if (n == 0) {
            cli_out_write(o, "\xEF\xBF\xBD", 3); /* U+FFFD */
            i++;
        } else {
            cli_out_write(o, s + i, n);
            i += n;
        }
    }
    cli_out_byte(o, '"');
}

void cli_json_string(FILE *fp, const char *s)
{
    /* Escaping at most sextuples a byte ("\u00XX"); a name too long for
     * the stack buffer gets a heap one. */
    char small[4096];
    size_t len = strlen(s);
    size_t need = len * 6 + 2;
    char *buf = need <= sizeof small ? small : malloc(need);
    if (!buf) {
        fputs("\"\"", fp);
        return;
    }
    cli_out o = {.fd = -1, .buf = buf, .cap = need};
    cli_out_json_string(&o, s, len);
    fwrite(buf, 1, o.len, fp);
    if (buf != small)
        free(buf);
}

const char *cli_fmt_double(char buf[32], double v)
{
    if (!isfinite(v)) {
        strcpy(buf, "null");
        return buf;
    }
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}
