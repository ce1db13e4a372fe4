/* The HTTP side of the products service (libmicrohttpd): routes, request
 * parsing, JSON in and out. */
#ifndef PRODUCTS_HTTP_H
#define PRODUCTS_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <bloomgate/guard.h>

#include "config.h"
#include "request.h"
#include "metrics.h"
#include "store.h"

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

#endif
