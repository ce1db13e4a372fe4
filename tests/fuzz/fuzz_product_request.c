/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for what the products service parses from a request
 * (examples/products/request.c): the id of /products/{id} and the JSON body
 * of POST /products, plus the JSON writer that echoes names back.
 *
 * Properties checked on every input (a violation aborts, which libFuzzer
 * reports with the input):
 *   - an id that parses is in 1..2^63-1 and prints back as exactly the
 *     input (the one canonical spelling);
 *   - a body that parses gives an id in range, a price >= 0 and a
 *     non-empty, NUL-free, NUL-terminated name of at most PRODUCT_NAME_MAX
 *     bytes; writing it back as JSON with json_string and parsing that
 *     again gives the same product (the writer and the parser agree, escapes
 *     included);
 *   - a body that does not parse leaves a NUL-terminated message;
 *   - json_error into a small buffer stays inside it, NUL-terminated;
 *   - http_unescape_path (the input up to its first NUL, as a path) never
 *     grows it, leaves no NUL inside, keeps every '/' and makes none;
 *   - http_content_type_json accepts only "application/json" (any case)
 *     followed by the end, or spaces and tabs and then ';';
 *   - http_target_path returns its input unless it starts with http:// or
 *     https:// (any case), else the first '/' after that prefix, or "/"
 *     when there is none. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_util.h"
#include "request.h"

static void check_id(const char *s, size_t len)
{
    uint64_t id;
    if (http_parse_id(s, len, &id) != 0)
        return;
    FZ_CHECK(id >= 1 && id <= (uint64_t)INT64_MAX);
    char back[24];
    int n = snprintf(back, sizeof back, "%" PRIu64, id);
    FZ_CHECK(n > 0 && (size_t)n == len && memcmp(back, s, len) == 0);
}

static void check_product(const char *s, size_t len)
{
    static product_in p, q;
    char err[256];
    memset(err, 'x', sizeof err);
    if (http_parse_product(s, len, &p, err, sizeof err) != 0) {
        FZ_CHECK(memchr(err, '\0', sizeof err) != NULL);
        return;
    }
    FZ_CHECK(p.id >= 1 && p.id <= (uint64_t)INT64_MAX);
    FZ_CHECK(p.price_cents >= 0);
    FZ_CHECK(p.name_len >= 1 && p.name_len <= PRODUCT_NAME_MAX);
    FZ_CHECK(p.name[p.name_len] == '\0' && strlen(p.name) == p.name_len);
    /* Round trip: at most 6 bytes of JSON per name byte, plus the rest. */
    static char json[6 * PRODUCT_NAME_MAX + 128];
    size_t o = (size_t)snprintf(json, sizeof json, "{\"id\":%" PRIu64 ",\"name\":", p.id);
    json_string(json, sizeof json, &o, p.name, p.name_len);
    o += (size_t)snprintf(json + o, sizeof json - o, ",\"price_cents\":%" PRId64 "}",
                          p.price_cents);
    FZ_CHECK(o < sizeof json);
    FZ_CHECK(http_parse_product(json, o, &q, err, sizeof err) == 0);
    FZ_CHECK(q.id == p.id && q.price_cents == p.price_cents && q.name_len == p.name_len &&
             memcmp(q.name, p.name, p.name_len) == 0);
}

static void check_error_writer(const char *s, size_t len)
{
    char msg[128], buf[48];
    size_t n = len < sizeof msg - 1 ? len : sizeof msg - 1;
    memcpy(msg, s, n);
    msg[n] = '\0';
    size_t w = json_error(buf, sizeof buf, "bad request", msg);
    FZ_CHECK(w < sizeof buf && buf[w] == '\0');
}

static size_t count_slashes(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '/';
    return n;
}

/* The input as a C string, as libmicrohttpd hands paths and headers over
 * (a NUL inside ends it early); NULL if out of memory. Free it. */
static char *c_string(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

static void check_unescape(const char *s, size_t len)
{
    char *p = c_string(s, len);
    if (!p)
        return;
    size_t in = strlen(p), slashes = count_slashes(p);
    size_t out = http_unescape_path(p);
    FZ_CHECK(out <= in && strlen(p) == out);
    FZ_CHECK(count_slashes(p) == slashes);
    free(p);
}

static void check_content_type(const char *s, size_t len)
{
    char *p = c_string(s, len);
    if (!p)
        return;
    if (http_content_type_json(p)) {
        static const char json[] = "application/json";
        size_t i = 0;
        for (; i < sizeof json - 1; i++)
            FZ_CHECK(p[i] != '\0' && (p[i] | 0x20) == json[i]);
        while (p[i] == ' ' || p[i] == '\t')
            i++;
        FZ_CHECK(p[i] == '\0' || p[i] == ';');
    }
    free(p);
}

static void check_target_path(const char *s, size_t len)
{
    char *p = c_string(s, len);
    if (!p)
        return;
    const char *path = http_target_path(p);
    size_t n = strlen(p);
    if (path == p) { /* as it is: not absolute-form */
        FZ_CHECK(strncasecmp(p, "http://", 7) != 0 && strncasecmp(p, "https://", 8) != 0);
    } else if (path >= p && path < p + n) { /* the path of an absolute-form target */
        FZ_CHECK(*path == '/');
        const char *auth = p + (strncasecmp(p, "https://", 8) == 0 ? 8 : 7);
        FZ_CHECK(path >= auth && memchr(auth, '/', (size_t)(path - auth)) == NULL);
    } else { /* one without a path */
        FZ_CHECK(strcmp(path, "/") == 0);
        const char *auth = p + (strncasecmp(p, "https://", 8) == 0 ? 8 : 7);
        FZ_CHECK(strchr(auth, '/') == NULL);
    }
    free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2 * HTTP_MAX_BODY)
        return 0; /* the service refuses larger bodies with 413 before parsing */
    /* A copy of exactly size bytes, so that ASan sees any read past the end. */
    char *s = malloc(size ? size : 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    check_id(s, size);
    check_product(s, size);
    check_error_writer(s, size);
    check_unescape(s, size);
    check_content_type(s, size);
    check_target_path(s, size);
    free(s);
    return 0;
}
