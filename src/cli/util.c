/* Messages, strict number parsing, buffered output and JSON for the CLI. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
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

static void print_usage_lines(FILE *fp, const cli_command *cmd)
{
    fprintf(fp, "usage: %s", cmd->usage);
}

int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bloomgate %s: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    print_usage_lines(stderr, cmd);
    fprintf(stderr, "Try 'bloomgate %s --help' for more.\n", cmd->name);
    return CLI_EXIT_ERROR;
}

/* The options of `longs` that "--PREFIX" (up to any '=') abbreviates, when
 * there are two or more and none is PREFIX exactly, into buf as
 * "--a, --b"; false otherwise. getopt_long reports an ambiguous
 * abbreviation as it does an unknown option. */
static bool ambiguous(const char *word, const struct option *longs, char *buf, size_t cap)
{
    if (longs == NULL || strncmp(word, "--", 2) != 0)
        return false;
    const char *name = word + 2;
    size_t len = strcspn(name, "=");
    size_t used = 0;
    int matches = 0;
    buf[0] = '\0';
    for (const struct option *o = longs; o->name; o++) {
        if (strncmp(o->name, name, len) != 0)
            continue;
        if (strlen(o->name) == len)
            return false;
        int n = snprintf(buf + used, cap - used, "%s--%s", matches ? ", " : "", o->name);
        if (n > 0 && (size_t)n < cap - used)
            used += (size_t)n;
        matches++;
    }
    return matches >= 2;
}

int cli_bad_option(const cli_command *cmd, int c, char **argv, const struct option *longs)
{
    /* optind has moved past the offending word (for a missing value, past
     * the option itself), so argv[optind - 1] is the word to name. */
    const char *word = optind > 0 ? argv[optind - 1] : "?";
    if (c == ':')
        return cli_usage_error(cmd, "option '%s' needs a value", word);
    char which[256];
    if (c == '?' && ambiguous(word, longs, which, sizeof which))
        return cli_usage_error(cmd, "option '%.*s' is ambiguous: %s", (int)strcspn(word, "="),
                               word, which);
    const char *eq = strchr(word, '=');
    if (optopt != 0 && strncmp(word, "--", 2) == 0 && eq)
        return cli_usage_error(cmd, "option '%.*s' takes no value", (int)(eq - word), word);
    if (optopt != 0 && strncmp(word, "--", 2) != 0)
        return cli_usage_error(cmd, "unknown option '-%c'", optopt);
    return cli_usage_error(cmd, "unknown option '%s'", word);
}

int cli_parse_simple_flags(const cli_command *cmd, bool allow_force, int argc, char **argv,
                           cli_simple_flags *out)
{
    static const struct option longs[] = {
        {"force", no_argument, NULL, 'f'},
        {"quiet", no_argument, NULL, 'q'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {0, 0, 0, 0},
    };
    *out = (cli_simple_flags){0};
    int c;
    optind = 0;
    opterr = 0;
    /* Without force, -f and --force are unknown options like any other. */
    while ((c = getopt_long(argc, argv, allow_force ? ":fqh" : ":qh",
                            allow_force ? longs : longs + 1, NULL)) != -1) {
        switch (c) {
        case 'f':
            out->force = true;
            break;
        case 'q':
            out->quiet = true;
            break;
        case 'j':
            out->json = true;
            break;
        case 'h':
            return cli_help(cmd);
        default:
            return cli_bad_option(cmd, c, argv, allow_force ? longs : longs + 1);
        }
    }
    return -1;
}

int cli_help(const cli_command *cmd)
{
    print_usage_lines(stdout, cmd);
    fputs("\n", stdout);
    fputs(cmd->help, stdout);
    return cli_stdout_close() == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
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

/* ---- numbers ---------------------------------------------------------- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* True if `s` is a plain decimal: digits, an optional fraction, an optional
 * exponent; at least one digit before the exponent. This is stricter than
 * strtod, which also takes signs, spaces, "inf", "nan" and hex floats. */
static bool is_decimal(const char *s)
{
    size_t digits = 0;
    while (is_digit(*s)) {
        s++;
        digits++;
    }
    if (*s == '.') {
        s++;
        while (is_digit(*s)) {
            s++;
            digits++;
        }
    }
    if (digits == 0)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!is_digit(*s))
            return false;
        while (is_digit(*s))
            s++;
    }
    return *s == '\0';
}

/* The value of a plain decimal (is_decimal) as a whole number, exactly:
 * number the mantissa's digits 0, 1, ... (the point left out), P of them
 * before the point, and E the exponent; digit i then stands for
 * 10^(P - 1 - i + E). The value is whole when its last non-zero digit's
 * power is >= 0, and above UINT64_MAX (< 10^20) when its first one's is
 * >= 20. 0 and *out; 1: not whole; 2: above UINT64_MAX. (strtod would
 * round "1.0000000000000001" to 1, and 9007199254740993 to ...992.) */
static int decimal_whole(const char *s, uint64_t *out)
{
    long long P = 0, first = -1, last = -1, n = 0, E = 0;
    const char *digits = s;
    bool point = false;
    for (; is_digit(*s) || *s == '.'; s++) {
        if (*s == '.') {
            point = true;
            continue;
        }
        if (*s != '0') {
            first = first < 0 ? n : first;
            last = n;
        }
        P += !point;
        n++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        bool neg = *s == '-';
        s += *s == '+' || *s == '-';
        for (; is_digit(*s); s++)
            E = E < 1000000 ? E * 10 + (*s - '0') : E; /* saturates: past it, |E| decides alone */
        E = neg ? -E : E;
    }
    *out = 0;
    if (first < 0)
        return 0; /* all zeros */
    if (P - 1 - last + E < 0)
        return 1;
    if (P - 1 - first + E >= 20)
        return 2;
    /* The digits from the first non-zero one down to the ones' (power 0),
     * then zeros for the powers below the mantissa's last digit. */
    uint64_t v = 0;
    long long i = 0;
    for (; is_digit(*digits) || *digits == '.'; digits++) {
        if (*digits == '.')
            continue;
        if (i >= first && P - 1 - i + E >= 0) {
            unsigned d = (unsigned)(*digits - '0');
            if (v > (UINT64_MAX - d) / 10)
                return 2;
            v = v * 10 + d;
        }
        i++;
    }
    for (long long pw = P - n + E; pw > 0; pw--) {
        if (v > UINT64_MAX / 10)
            return 2;
        v *= 10;
    }
    *out = v;
    return 0;
}

int cli_parse_count(const char *flag, const char *text, uint64_t min, uint64_t max,
                    uint64_t *out)
{
    uint64_t v;
    if (text[0] == '-' && is_decimal(text + 1)) {
        cli_error("%s: '%s' is negative", flag, text);
        return -1;
    }
    if (!is_decimal(text)) {
        cli_error("%s: '%s' is not a number", flag, text);
        return -1;
    }
    int whole = decimal_whole(text, &v);
    if (whole == 1) {
        cli_error("%s: '%s' is not a whole number", flag, text);
        return -1;
    }
    if (whole == 2 || v > max) {
        cli_error("%s: '%s' is too large (at most %llu)", flag, text, (unsigned long long)max);
        return -1;
    }
    if (v < min) {
        cli_error("%s: '%s' is too small (at least %llu)", flag, text, (unsigned long long)min);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_rate(const char *flag, const char *text, double *out)
{
    if (text[0] == '-' && is_decimal(text + 1)) {
        cli_error("%s: '%s' is negative; a rate is between 0 and 1, e.g. 0.01", flag, text);
        return -1;
    }
    if (!is_decimal(text)) {
        cli_error("%s: '%s' is not a number; a rate is between 0 and 1, e.g. 0.01", flag, text);
        return -1;
    }
    double d = strtod(text, NULL);
    size_t mantissa = strcspn(text, "eE");
    if (d == 0.0 && strcspn(text, "123456789") < mantissa) {
        cli_error("%s: '%s' is too small to represent (it rounds to 0)", flag, text);
        return -1;
    }
    if (!(d > 0.0 && d < 1.0)) {
        cli_error("%s: '%s' is not between 0 and 1 (both excluded)", flag, text);
        return -1;
    }
    *out = d;
    return 0;
}

int cli_parse_seed(const char *flag, const char *text, uint64_t *out)
{
    if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        const char *hex = text + 2;
        size_t n = strspn(hex, "0123456789abcdefABCDEF");
        if (n == 0 || hex[n] != '\0') {
            cli_error("%s: '%s' is not a hex number", flag, text);
            return -1;
        }
        if (n > 16) {
            cli_error("%s: '%s' does not fit in 64 bits", flag, text);
            return -1;
        }
        *out = (uint64_t)strtoull(hex, NULL, 16);
        return 0;
    }
    if (text[0] == '-') {
        cli_error("%s: '%s' is negative", flag, text);
        return -1;
    }
    size_t n = strspn(text, "0123456789");
    if (n == 0 || text[n] != '\0') {
        cli_error("%s: '%s' is not a number (decimal, or hex with 0x)", flag, text);
        return -1;
    }
    errno = 0;
    unsigned long long u = strtoull(text, NULL, 10);
    if (errno == ERANGE) {
        cli_error("%s: '%s' does not fit in 64 bits", flag, text);
        return -1;
    }
    *out = (uint64_t)u;
    return 0;
}

int cli_parse_variant(const char *text, bg_variant *out)
{
    if (bg_variant_parse(text, out) != BG_OK) {
        cli_error("--variant: '%s' is not a variant (standard, blocked, counting or scalable)",
                  text);
        return -1;
    }
    return 0;
}

void cli_print_scaling_json(FILE *fp, const bg_filter_scaling *sc)
{
    char d[32];
    fprintf(fp, "\"layer_variant\":\"%s\",\"expansion\":%u,\"tightening\":%s,",
            bg_variant_name(sc->layer_variant), sc->expansion, cli_fmt_double(d, sc->tightening));
    fprintf(fp, "\"max_layers\":%u,\"max_bytes\":%llu,\"nonscaling\":%s", sc->max_layers,
            (unsigned long long)sc->max_bytes, sc->nonscaling ? "true" : "false");
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

/* ---- saving ----------------------------------------------------------- */

const int cli_ending_signals[CLI_NENDING] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void cli_hold_signals(sigset_t *old)
{
    sigset_t hold;
    sigemptyset(&hold);
    for (size_t i = 0; i < CLI_NENDING; i++)
        sigaddset(&hold, cli_ending_signals[i]);
    sigprocmask(SIG_BLOCK, &hold, old);
}

void cli_handlers_install(cli_handlers *h, void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = 0; /* no SA_RESTART: a blocking read ends */
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < CLI_NENDING; i++) {
        h->installed[i] = false;
        if (sigaction(cli_ending_signals[i], NULL, &h->old[i]) == 0 &&
            h->old[i].sa_handler != SIG_IGN)
            h->installed[i] = sigaction(cli_ending_signals[i], &sa, NULL) == 0;
    }
}

void cli_handlers_restore(const cli_handlers *h)
{
    for (size_t i = 0; i < CLI_NENDING; i++)
        if (h->installed[i])
            sigaction(cli_ending_signals[i], &h->old[i], NULL);
}

void cli_release_signals(const sigset_t *old)
{
    sigprocmask(SIG_SETMASK, old, NULL);
}

volatile sig_atomic_t cli_caught_signal;
volatile sig_atomic_t cli_catching_signals;

static cli_handlers before_catch;

static void catch_signal(int sig)
{
    if (cli_caught_signal) { /* the second: die of it now */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    cli_caught_signal = sig;
}

void cli_catch_signals(void)
{
    cli_caught_signal = 0;
    cli_catching_signals = 1;
    cli_handlers_install(&before_catch, catch_signal);
}

void cli_uncatch_signals(void)
{
    cli_handlers_restore(&before_catch);
    cli_catching_signals = 0;
    int sig = cli_caught_signal;
    if (sig) {
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

int cli_save(const bg_filter *f, const char *path, int *err)
{
    sigset_t old;
    cli_hold_signals(&old);
    errno = 0;
    int rc = bg_filter_save(f, path);
    *err = errno;
    cli_release_signals(&old);
    return rc;
}
