/* The HTTP side of the products service (libmicrohttpd): routes, request
 * parsing, JSON in and out. */
#ifndef PRODUCTS_HTTP_H
#define PRODUCTS_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <bloomgate/guard.h>

#include "config.h"
#include "metrics.h"
#include "store.h"

/* Largest POST body accepted; larger gets 413. */
#define HTTP_MAX_BODY 4096
/* Longest product name, in bytes of UTF-8. */
#define PRODUCT_NAME_MAX 1024

typedef struct app {
    bg_guard *guard;
    store *store;
    const products_config *cfg;
    metrics_info info;
} app;

struct MHD_Daemon;

/* Listens on cfg->bind:cfg->port and serves from cfg->threads threads.
 * *port gets the bound port (useful with --port 0). NULL on failure with a
 * message in err. */
struct MHD_Daemon *http_start(app *a, int *port, char *err, size_t errlen);

/* Stops accepting, finishes the requests in flight, frees. NULL is allowed. */
void http_stop(struct MHD_Daemon *d);

/* A product id: a decimal in 1..2^63-1 without sign or leading zeros, the
 * whole of s[0..len). 0 or -1. */
int http_parse_id(const char *s, size_t len, uint64_t *out);

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

#endif
