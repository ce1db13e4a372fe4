/* SPDX-License-Identifier: BSD-3-Clause */
/* Parsing the tool's arguments: usage errors, --help, the options every
 * command shares, and strict parsers for numbers and variants. */
#include "cli_options.h"
#include "cli.h"
#include "cli_output.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        cli_error("--variant: '%s' is not a variant (standard, blocked, counting, scalable or "
                  "redisbloom)",
                  text);
        return -1;
    }
    return 0;
}
