/* SPDX-License-Identifier: BSD-3-Clause */
/* Writes the seed corpus for fuzz_product_request into a directory:
 *
 *   make_request_corpus DIR
 *
 * Ids (good, zero, leading zero, sign, 2^63 - 1 and 2^63) and POST bodies:
 * valid products in every member order, every JSON escape, \u escapes with
 * surrogate pairs, multi-byte UTF-8, the longest name, and broken ones
 * (missing, repeated and unknown members, bad numbers, unterminated
 * strings, lone surrogates, invalid UTF-8, trailing bytes), and paths
 * with percent-escapes (%00, %2F, a cut-short one), Content-Types and
 * absolute-form request targets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const seeds[] = {
    "1", "42", "9223372036854775807", "9223372036854775808", "0", "007", "-5", "+5", "12a",
    "{\"id\":1,\"name\":\"product 1\",\"price_cents\":7919}",
    "{\"name\":\"x\",\"price_cents\":0,\"id\":9223372036854775807}",
    "{\"price_cents\":5,\"id\":3,\"name\":\"q\"}",
    " { \"id\" : 2 , \"name\" : \"tab\\there\" , \"price_cents\" : 10 } ",
    "{\"id\":4,\"name\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\",\"price_cents\":1}",
    "{\"id\":5,\"name\":\"\\u00e9\\u20ac\\ud83d\\ude00\",\"price_cents\":2}",
    "{\"id\":6,\"name\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\",\"price_cents\":3}",
    "{\"id\":7,\"name\":\"\\ud83d\",\"price_cents\":3}",
    "{\"id\":8,\"name\":\"\\ude00\",\"price_cents\":3}",
    "{\"id\":9,\"name\":\"\xff\xfe\",\"price_cents\":3}",
    "{\"id\":10,\"name\":\"\\u0000\",\"price_cents\":3}",
    "{\"id\":11,\"name\":\"\",\"price_cents\":3}",
    "{\"id\":12,\"name\":\"a\",\"price_cents\":-1}",
    "{\"id\":0,\"name\":\"a\",\"price_cents\":1}",
    "{\"id\":13,\"name\":\"a\",\"price_cents\":1.5}",
    "{\"id\":14,\"name\":\"a\",\"price_cents\":1e3}",
    "{\"id\":15,\"name\":\"a\",\"price_cents\":99999999999999999999}",
    "{\"id\":16,\"name\":\"a\"}",
    "{\"id\":17,\"id\":18,\"name\":\"a\",\"price_cents\":1}",
    "{\"id\":19,\"name\":\"a\",\"price_cents\":1,\"extra\":true}",
    "{\"id\":20,\"name\":\"unterminated,\"price_cents\":1}",
    "{\"id\":21,\"name\":\"a\",\"price_cents\":1} trailing",
    "{\"id\":\"22\",\"name\":\"a\",\"price_cents\":1}",
    "[1,2,3]", "{}", "", "{",
    "/products/42%00abc", "/products%2F42", "/products/%34%32", "/products/4%", "%2f%2F%00%zz",
    "application/json", "Application/JSON ; charset=utf-8", "application/jsonx",
    "application/json-seq", "http://x/products/42", "HTTPS://h:8080/metrics", "http://h",
    "ftp://h/products/1",
};

static void put(const char *dir, int i, const char *s, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%03d", dir, i);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(s, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_request_corpus DIR\n");
        return 2;
    }
    int n = 0;
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++, n++)
        put(argv[1], n, seeds[i], strlen(seeds[i]));
    /* The longest name, and one byte more. */
    static char body[4096];
    for (int extra = 0; extra <= 1; extra++) {
        int o = snprintf(body, sizeof body, "{\"id\":23,\"name\":\"");
        for (int j = 0; j < 1024 + extra; j++)
            body[o++] = (char)('a' + j % 26);
        o += snprintf(body + o, sizeof body - (size_t)o, "\",\"price_cents\":1}");
        put(argv[1], n++, body, (size_t)o);
    }
    return 0;
}
