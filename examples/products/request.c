/* SPDX-License-Identifier: BSD-3-Clause */
/* What the products service reads from a request and writes back as JSON:
 * the product id of a path, the POST body's product object, JSON strings
 * and error bodies. No HTTP library here, so that the fuzz target
 * (tests/fuzz/fuzz_product_request.c) runs exactly this code. */
#include "request.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- parsing ------------------------------------------------------------ */

int http_parse_id(const char *s, size_t len, uint64_t *out)
{
    /* 2^63 - 1 has 19 digits. */
    if (len == 0 || len > 19 || s[0] == '0') return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (uint64_t)(s[i] - '0'); /* 19 digits fit in 64 bits */
    }
    if (v > (uint64_t)INT64_MAX) return -1;
    *out = v;
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

size_t http_unescape_path(char *s)
{
    char *w = s;
    for (const char *r = s; *r;) {
        int hi = r[0] == '%' ? hexval(r[1]) : -1;
        int lo = hi >= 0 ? hexval(r[2]) : -1;
        int c = lo >= 0 ? hi << 4 | lo : -1;
        if (c > 0 && c != '/') {
            *w++ = (char)c;
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

int http_content_type_json(const char *ct)
{
    static const char json[] = "application/json";
    if (strncasecmp(ct, json, sizeof(json) - 1) != 0) return 0;
    ct += sizeof(json) - 1;
    while (*ct == ' ' || *ct == '\t') ct++;
    return *ct == '\0' || *ct == ';';
}

const char *http_target_path(const char *target)
{
    const char *rest = NULL;
    if (strncasecmp(target, "http://", 7) == 0)
        rest = target + 7;
    else if (strncasecmp(target, "https://", 8) == 0)
        rest = target + 8;
    if (!rest) return target;
    const char *path = strchr(rest, '/');
    return path ? path : "/";
}

typedef struct jp {
    const char *p, *end;
    char *err;
    size_t errlen;
} jp;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int jfail(jp *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->err, j->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static void jws(jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

/* A JSON number that must be an integer in 0..INT64_MAX. */
static int jint(jp *j, const char *what, uint64_t *out)
{
    if (j->p < j->end && *j->p == '-') return jfail(j, "%s must not be negative", what);
    const char *start = j->p;
    uint64_t v = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        unsigned d = (unsigned)(*j->p - '0');
        if (v > ((uint64_t)INT64_MAX - d) / 10)
            return jfail(j, "%s is out of range (at most 9223372036854775807)", what);
        v = v * 10 + d;
        j->p++;
    }
    if (j->p == start) return jfail(j, "%s must be an integer", what);
    if (j->p - start > 1 && *start == '0') return jfail(j, "%s has a leading zero", what);
    if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
        return jfail(j, "%s must be an integer", what);
    *out = v;
    return 0;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hexval(p[i]);
        if (d < 0) return -1;
        v = v << 4 | (unsigned)d;
    }
    *out = v;
    return 0;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid
 * (overlong, surrogate, above U+10FFFF, truncated). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned cp;
    size_t len;
    if (s[0] < 0x80) return 1;
    if ((s[0] & 0xe0) == 0xc0) { cp = s[0] & 0x1fu; len = 2; }
    else if ((s[0] & 0xf0) == 0xe0) { cp = s[0] & 0x0fu; len = 3; }
    else if ((s[0] & 0xf8) == 0xf0) { cp = s[0] & 0x07u; len = 4; }
    else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

/* A JSON string into dst (cap bytes, NUL-terminated), decoding escapes.
 * *n gets its length; a NUL (\u0000) is refused. dst NULL: the key
 * position, where only ASCII matters (still fully validated). */
static int jstr(jp *j, const char *what, char *dst, size_t cap, size_t *n)
{
    size_t len = 0;
    if (j->p >= j->end || *j->p != '"') return jfail(j, "%s must be a string", what);
    j->p++;
    for (;;) {
        if (j->p >= j->end) return jfail(j, "unterminated string");
        unsigned char c = (unsigned char)*j->p;
        char enc[4];
        size_t elen;
        if (c == '"') {
            j->p++;
            break;
        }
        if (c < 0x20) return jfail(j, "control character in %s (escape it)", what);
        if (c == '\\') {
            if (j->end - j->p < 2) return jfail(j, "unterminated string");
            char e = j->p[1];
            j->p += 2;
            unsigned cp;
            switch (e) {
            case '"': cp = '"'; break;
            case '\\': cp = '\\'; break;
            case '/': cp = '/'; break;
            case 'b': cp = '\b'; break;
            case 'f': cp = '\f'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u':
                if (j->end - j->p < 4 || hex4(j->p, &cp)) return jfail(j, "bad \\u escape");
                j->p += 4;
                if (cp >= 0xdc00 && cp <= 0xdfff) return jfail(j, "lone low surrogate");
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    unsigned lo;
                    if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' ||
                        hex4(j->p + 2, &lo) || lo < 0xdc00 || lo > 0xdfff)
                        return jfail(j, "lone high surrogate");
                    j->p += 6;
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                }
                if (cp == 0) return jfail(j, "NUL character in %s", what);
                break;
            default:
                return jfail(j, "bad escape '\\%c'", e);
            }
            if (cp < 0x80) {
                enc[0] = (char)cp;
                elen = 1;
            } else if (cp < 0x800) {
                enc[0] = (char)(0xc0 | (cp >> 6));
                enc[1] = (char)(0x80 | (cp & 0x3f));
                elen = 2;
            } else if (cp < 0x10000) {
                enc[0] = (char)(0xe0 | (cp >> 12));
                enc[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                enc[2] = (char)(0x80 | (cp & 0x3f));
                elen = 3;
            } else {
                enc[0] = (char)(0xf0 | (cp >> 18));
                enc[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
                enc[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
                enc[3] = (char)(0x80 | (cp & 0x3f));
                elen = 4;
            }
        } else {
            elen = utf8_len((const unsigned char *)j->p, (size_t)(j->end - j->p));
            if (elen == 0) return jfail(j, "invalid UTF-8 in %s", what);
            memcpy(enc, j->p, elen);
            j->p += elen;
        }
        if (dst) {
            if (len + elen > cap - 1) return jfail(j, "%s is too long (at most %zu bytes)", what, cap - 1);
            memcpy(dst + len, enc, elen);
        } else if (len + elen > cap - 1) {
            return jfail(j, "%s is too long", what);
        }
        len += elen;
    }
    if (dst) dst[len] = '\0';
    *n = len;
    return 0;
}

int http_parse_product(const char *body, size_t len, product_in *out, char *err, size_t errlen)
{
    jp j = {body, body + len, err, errlen};
    int have_id = 0, have_name = 0, have_price = 0;
    memset(out, 0, sizeof(*out));
    jws(&j);
    if (j.p >= j.end || *j.p != '{') return jfail(&j, "body must be a JSON object");
    j.p++;
    jws(&j);
    if (j.p < j.end && *j.p == '}') {
        j.p++;
    } else {
        for (;;) {
            char key[32];
            size_t klen;
            jws(&j);
            if (j.p < j.end && *j.p != '"') return jfail(&j, "expected a member name");
            /* Compared decoded, as JSON means it ("\u0069d" is "id"):
             * validated and measured first, then decoded into key when it
             * fits; a longer one is an unknown member, named by its first
             * raw bytes. */
            const char *kstart = j.p;
            if (jstr(&j, "member name", NULL, 1u << 20, &klen)) return -1;
            if (klen < sizeof(key)) {
                const char *after = j.p;
                j.p = kstart;
                if (jstr(&j, "member name", key, sizeof(key), &klen)) return -1;
                j.p = after;
            } else {
                size_t raw = (size_t)(j.p - kstart) - 2;
                if (raw >= sizeof(key)) raw = sizeof(key) - 1;
                memcpy(key, kstart + 1, raw);
                key[raw] = '\0';
            }
            jws(&j);
            if (j.p >= j.end || *j.p != ':') return jfail(&j, "expected ':' after \"%s\"", key);
            j.p++;
            jws(&j);
            if (strcmp(key, "id") == 0 && klen == 2) {
                if (have_id++) return jfail(&j, "duplicate member \"id\"");
                if (jint(&j, "id", &out->id)) return -1;
                if (out->id == 0) return jfail(&j, "id must be at least 1");
            } else if (strcmp(key, "price_cents") == 0 && klen == 11) {
                uint64_t v;
                if (have_price++) return jfail(&j, "duplicate member \"price_cents\"");
                if (jint(&j, "price_cents", &v)) return -1;
                out->price_cents = (int64_t)v;
            } else if (strcmp(key, "name") == 0 && klen == 4) {
                if (have_name++) return jfail(&j, "duplicate member \"name\"");
                if (jstr(&j, "name", out->name, sizeof(out->name), &out->name_len)) return -1;
                if (out->name_len == 0) return jfail(&j, "name must not be empty");
            } else {
                return jfail(&j, "unknown member \"%s\" (want id, name, price_cents)", key);
            }
            jws(&j);
            if (j.p < j.end && *j.p == ',') {
                j.p++;
                continue;
            }
            if (j.p < j.end && *j.p == '}') {
                j.p++;
                break;
            }
            return jfail(&j, "expected ',' or '}'");
        }
    }
    jws(&j);
    if (j.p != j.end) return jfail(&j, "trailing data after the object");
    if (!have_id || !have_name || !have_price)
        return jfail(&j, "missing member%s%s%s", have_id ? "" : " \"id\"",
                     have_name ? "" : " \"name\"", have_price ? "" : " \"price_cents\"");
    return 0;
}

/* ---- JSON out ----------------------------------------------------------- */

/* Appends s as a JSON string (s is valid UTF-8 or arbitrary text: bytes
 * that are not valid UTF-8 become U+FFFD) to buf at *pos; stops quietly at
 * cap - 1. */
void json_string(char *buf, size_t cap, size_t *pos, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = *pos;
#define PUT(str, n)                                                                              \
    do {                                                                                         \
        if (o + (n) >= cap) goto full;                                                           \
        memcpy(buf + o, (str), (n));                                                             \
        o += (n);                                                                                \
    } while (0)
    PUT("\"", 1);
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"') PUT("\\\"", 2);
        else if (c == '\\') PUT("\\\\", 2);
        else if (c == '\n') PUT("\\n", 2);
        else if (c == '\r') PUT("\\r", 2);
        else if (c == '\t') PUT("\\t", 2);
        else if (c == '\b') PUT("\\b", 2);
        else if (c == '\f') PUT("\\f", 2);
        else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            PUT(e, 6);
        } else if (c >= 0x80) {
            size_t n = utf8_len((const unsigned char *)s + i, len - i);
            if (n == 0) {
                PUT("\\ufffd", 6);
                i++;
            } else {
                PUT(s + i, n);
                i += n;
            }
            continue;
        } else {
            PUT(s + i, 1);
        }
        i++;
    }
    PUT("\"", 1);
full:
    buf[o < cap ? o : cap - 1] = '\0';
    *pos = o;
#undef PUT
}

/* {"error":"msg"} or {"error":"msg","detail":"detail"}. */
size_t json_error(char *buf, size_t cap, const char *msg, const char *detail)
{
    size_t o = 0;
    memcpy(buf, "{\"error\":", 9);
    o = 9;
    json_string(buf, cap, &o, msg, strlen(msg));
    if (detail && detail[0]) {
        if (o + 10 < cap) {
            memcpy(buf + o, ",\"detail\":", 10);
            o += 10;
            json_string(buf, cap, &o, detail, strlen(detail));
        }
    }
    if (o + 2 < cap) {
        buf[o++] = '}';
        buf[o++] = '\n';
    }
    buf[o] = '\0';
    return o;
}

