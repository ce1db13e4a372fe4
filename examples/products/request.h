/* SPDX-License-Identifier: BSD-3-Clause */
/* Request parsing and JSON output of the products service (request.c):
 * untrusted bytes in, so every function checks every byte; fuzzed by
 * tests/fuzz/fuzz_product_request.c. */
#ifndef PRODUCTS_REQUEST_H
#define PRODUCTS_REQUEST_H

#include <stddef.h>
#include <stdint.h>

/* Largest POST body accepted; larger gets 413. */
#define HTTP_MAX_BODY 4096
/* Longest product name, in bytes of UTF-8. */
#define PRODUCT_NAME_MAX 1024

/* A product id: a decimal in 1..2^63-1 without sign or leading zeros, the
 * whole of s[0..len). 0 or -1. */
int http_parse_id(const char *s, size_t len, uint64_t *out);

/* The path of a request target: the target itself in origin form
 * ("/products/42"); the path of one in absolute form, which RFC 9112
 * (3.2.2) has a server accept although clients send it only to proxies
 * ("http://host:8080/products/42" gives "/products/42"; any case of http or
 * https; "/" when it has no path, "http://host"). The authority is not
 * checked (nor is the Host header: one service, one set of routes). Any
 * other target comes back as it is, and matches no route. A pointer into
 * target, or to a constant "/". */
const char *http_target_path(const char *target);

/* Decodes the %HH escapes of the NUL-terminated s in place, as
 * libmicrohttpd's default does, except %00 and %2F (either case), which
 * stay as they are: a decoded NUL would end the path early for every C
 * string function ("/products/42%00abc" read as /products/42) and a decoded
 * slash would turn data into a path separator ("/products%2F42" read as
 * /products/42). A % without two hex digits is kept too. Returns the new
 * length; s stays NUL-terminated and never grows. */
size_t http_unescape_path(char *s);

/* Whether a Content-Type value is application/json (any case), alone or
 * with parameters: optional spaces or tabs, then ';' and anything
 * ("application/json; charset=utf-8"). Not application/jsonx,
 * application/json-seq or application/json+foo. 1 or 0. */
int http_content_type_json(const char *ct);

typedef struct product_in {
    uint64_t id;
    int64_t price_cents;
    char name[PRODUCT_NAME_MAX + 1]; /* UTF-8, NUL-terminated, no NUL inside */
    size_t name_len;
} product_in;

/* Parses exactly one flat JSON object with the members "id" (1..2^63-1),
 * "name" (a non-empty string) and "price_cents" (0..2^63-1), in any order,
 * each once, nothing else. 0, or -1 with a message in err. */
int http_parse_product(const char *body, size_t len, product_in *out, char *err, size_t errlen);

/* Appends s[0..len) as a JSON string (bytes that are not valid UTF-8
 * become U+FFFD) to buf at *pos, NUL-terminated; stops at cap - 1 (the
 * string is then cut short). */
void json_string(char *buf, size_t cap, size_t *pos, const char *s, size_t len);

/* Writes {"error":"msg"} or {"error":"msg","detail":"detail"} and a newline
 * into buf (cap >= 16); returns its length. */
size_t json_error(char *buf, size_t cap, const char *msg, const char *detail);

#endif
