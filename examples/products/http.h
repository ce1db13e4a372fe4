/* SPDX-License-Identifier: BSD-3-Clause */
/* The HTTP side of the products service (libmicrohttpd): routes, request
 * parsing, JSON in and out. */
#ifndef PRODUCTS_HTTP_H
#define PRODUCTS_HTTP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <bloomgate/guard.h>

#include "config.h"
#include "request.h"
#include "metrics.h"
#include "store.h"

struct MHD_Daemon;

typedef struct app {
    bg_guard *guard;
    store *store;
    const products_config *cfg;
    metrics_info info;
    /* http.c's own (zero-initialise): */
    struct MHD_Daemon *daemon;
    int listen_fd;          /* ours after http_quiesce: closed by http_stop */
    atomic_uint in_flight;  /* requests received and not yet fully answered */
    atomic_bool closing;    /* http_quiesce ran: answers close their connection */
} app;

/* Listens on cfg->bind:cfg->port and serves from cfg->threads threads.
 * *port gets the bound port (useful with --port 0). 0, or -1 with a
 * message in err. */
int http_start(app *a, int *port, char *err, size_t errlen);

/* Stops accepting connections (a new one is refused) while the requests in
 * flight go on; every answer from now on closes its connection, so a
 * keep-alive client gets its answer and no idle wait. 0, or -1 when
 * libmicrohttpd cannot (then only http_stop is left). */
int http_quiesce(app *a);

/* Requests received whose answer is not yet fully sent. */
unsigned http_in_flight(app *a);

/* Stops serving and frees: every connection is closed, and an answer not
 * yet sent is lost (so http_quiesce, then wait for http_in_flight to reach
 * 0, first). A handler still running is waited for. Without a started
 * daemon, does nothing. */
void http_stop(app *a);

#endif
