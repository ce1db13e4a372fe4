/* SPDX-License-Identifier: BSD-3-Clause */
/* Routes of the products service on libmicrohttpd.
 *
 *   GET    /products/{id}   200 the product (JSON), 404, 400 bad id, 503/500
 *   POST   /products        201 the product, 400 bad JSON, 413, 415, 503/500
 *   DELETE /products/{id}   204, 404, 400 bad id, 503/500
 *   GET    /metrics         200 Prometheus text
 *   GET    /healthz         200 "ok", 503 when the database (or a remote filter)
 *                           does not answer
 * HEAD is accepted wherever GET is. Other paths: 404; other methods on a
 * known path: 405 with Allow. Every error body is {"error":"..."}. Paths
 * are matched after percent-decoding, with %00 and %2F left encoded
 * (unescape below).
 *
 * HOW A REQUEST FLOWS THROUGH LIBMICROHTTPD
 * The access handler is called once with the headers, then once per chunk
 * of body, then once more with no data. Every request is answered on a
 * later call, not the first (an answer on the first makes MHD close the
 * connection, which would cost keep-alive clients a reconnect per
 * request); any body sent to a route that takes none is read and dropped.
 * POST /products keeps a small struct per request, the body (at most
 * HTTP_MAX_BODY bytes, else 413 at the end) and the arrival time;
 * NOTIFY_COMPLETED frees it. A bad Content-Type (415) or a declared
 * Content-Length above the limit (413) is refused on the first call, and
 * the connection closed, without reading the body. */
#define _POSIX_C_SOURCE 200809L

#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

/* ---- responses ---------------------------------------------------------- */

#define CT_JSON "application/json"
#define CT_TEXT "text/plain; charset=utf-8"
#define CT_PROM "text/plain; version=0.0.4; charset=utf-8"

static enum MHD_Result respond(app *a, struct MHD_Connection *conn, metrics_route route,
                               uint64_t t0, unsigned status, const char *ctype, const void *body,
                               size_t len, const char *allow, const char *location)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)(uintptr_t)body, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    /* Stopping (http_quiesce): the client gets this answer, then its
     * connection closes, rather than staying open for a next request that
     * would keep the service from stopping. */
    if (atomic_load_explicit(&a->closing, memory_order_relaxed))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    if (ctype) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (allow) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    if (location) MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, location);
    metrics_observe_request(route, status, metrics_now_ns() - t0);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result respond_error(app *a, struct MHD_Connection *conn, metrics_route route,
                                     uint64_t t0, unsigned status, const char *msg,
                                     const char *detail, const char *allow)
{
    char buf[1024];
    size_t n = json_error(buf, sizeof(buf), msg, detail);
    return respond(a, conn, route, t0, status, CT_JSON, buf, n, allow, NULL);
}

/* A status from the store, the guard or the remote filter: a server that
 * did not answer or answered an error is 503 (try again later); anything
 * else (out of memory, a bug) is 500. */
static unsigned status_http(int rc)
{
    switch (rc) {
    case BG_ECONN:
    case BG_EIO:
    case BG_EREMOTE:
    case BG_ESTALE:
    case BG_ENOTFOUND:
    case BG_EBUSY:
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    default:
        return MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
}

static enum MHD_Result respond_status(app *a, struct MHD_Connection *conn, metrics_route route,
                                      uint64_t t0, int rc, const char *what, int from_store)
{
    char detail[512];
    const char *es = from_store ? store_errstr() : "";
    snprintf(detail, sizeof(detail), "%s%s%s", bg_strerror(rc), es[0] ? ": " : "", es);
    unsigned st = status_http(rc);
    return respond_error(a, conn, route, t0, st, what, detail, NULL);
}

/* ---- handlers ----------------------------------------------------------- */

static _Thread_local unsigned check_tick;

static enum MHD_Result get_product(app *a, struct MHD_Connection *conn, uint64_t t0,
                                   const char *key, size_t klen)
{
    unsigned sample = a->cfg->check_sample;
    if (sample && ++check_tick >= sample) {
        /* The guard's own cost, measured as the same filter check that
         * bg_guard_get makes first. */
        check_tick = 0;
        uint64_t c0 = metrics_now_ns();
        int m = bg_guard_may_contain(a->guard, key, klen);
        uint64_t c1 = metrics_now_ns();
        if (m >= 0) metrics_observe_check(c1 - c0);
    }
    bg_guard_buf v = {0};
    int rc = bg_guard_get(a->guard, key, klen, &v);
    enum MHD_Result ret;
    if (rc == BG_GUARD_FOUND) {
        ret = respond(a, conn, ROUTE_GET_PRODUCT, t0, MHD_HTTP_OK, CT_JSON, v.data, v.len, NULL,
                      NULL);
    } else if (rc == BG_GUARD_ABSENT) {
        ret = respond_error(a, conn, ROUTE_GET_PRODUCT, t0, MHD_HTTP_NOT_FOUND, "not found", NULL,
                            NULL);
    } else {
        const char *what = a->cfg->filter_kind == BG_GUARD_FILTER_REMOTE
                               ? "database or remote filter unavailable"
                               : "database unavailable";
        if (status_http(rc) != MHD_HTTP_SERVICE_UNAVAILABLE) what = "internal error";
        ret = respond_status(a, conn, ROUTE_GET_PRODUCT, t0, rc, what, 1);
    }
    bg_guard_buf_free(&v);
    return ret;
}

static enum MHD_Result delete_product(app *a, struct MHD_Connection *conn, uint64_t t0,
                                      uint64_t id, const char *key, size_t klen)
{
    int rc = store_delete(a->store, id);
    if (rc < 0)
        return respond_status(a, conn, ROUTE_DELETE_PRODUCT, t0, rc, "database unavailable", 1);
    if (rc == 0)
        return respond_error(a, conn, ROUTE_DELETE_PRODUCT, t0, MHD_HTTP_NOT_FOUND, "not found",
                             NULL, NULL);
    rc = bg_guard_remove(a->guard, key, klen);
    if (rc < 0)
        return respond_status(a, conn, ROUTE_DELETE_PRODUCT, t0, rc,
                              "deleted, but the cache or filter was not updated", 0);
    return respond(a, conn, ROUTE_DELETE_PRODUCT, t0, MHD_HTTP_NO_CONTENT, NULL, "", 0, NULL,
                   NULL);
}

static enum MHD_Result post_product(app *a, struct MHD_Connection *conn, uint64_t t0,
                                    const char *body, size_t len)
{
    product_in p;
    char msg[256];
    if (http_parse_product(body, len, &p, msg, sizeof(msg)) != 0)
        return respond_error(a, conn, ROUTE_POST_PRODUCT, t0, MHD_HTTP_BAD_REQUEST, "bad product",
                             msg, NULL);
    int rc = store_put(a->store, p.id, p.name, p.price_cents);
    if (rc < 0)
        return respond_status(a, conn, ROUTE_POST_PRODUCT, t0, rc, "database unavailable", 1);
    char key[24];
    int klen = snprintf(key, sizeof(key), "%llu", (unsigned long long)p.id);
    rc = bg_guard_put(a->guard, key, (size_t)klen);
    if (rc < 0)
        return respond_status(a, conn, ROUTE_POST_PRODUCT, t0, rc,
                              "stored, but the filter was not updated", 0);
    /* The same JSON as GET returns. */
    char out[PRODUCT_NAME_MAX * 6 + 128];
    size_t o = (size_t)snprintf(out, sizeof(out), "{\"id\":%llu,\"name\":",
                                (unsigned long long)p.id);
    json_string(out, sizeof(out), &o, p.name, p.name_len);
    o += (size_t)snprintf(out + o, sizeof(out) - o, ",\"price_cents\":%lld}",
                          (long long)p.price_cents);
    char loc[40];
    snprintf(loc, sizeof(loc), "/products/%s", key);
    return respond(a, conn, ROUTE_POST_PRODUCT, t0, MHD_HTTP_CREATED, CT_JSON, out, o, NULL, loc);
}

static enum MHD_Result healthz(app *a, struct MHD_Connection *conn, uint64_t t0)
{
    /* One cheap indexed lookup: the database answers, found or not. */
    bg_guard_buf v = {0};
    int rc = store_get(a->store, 1, &v);
    bg_guard_buf_free(&v);
    char msg[600];
    int n;
    if (rc < 0) {
        n = snprintf(msg, sizeof(msg), "database unavailable: %s%s%s\n", bg_strerror(rc),
                     store_errstr()[0] ? ": " : "", store_errstr());
    } else if (a->cfg->filter_kind == BG_GUARD_FILTER_REMOTE &&
               (rc = bg_guard_may_contain(a->guard, "1", 1)) < 0) {
        /* Without its remote filter every GET of an id is a 503 (after a
         * Redis restarted without its data: until a rebuild re-creates
         * it), so the service is not healthy either. A local filter is in
         * memory and cannot fail. */
        n = snprintf(msg, sizeof(msg), "remote filter unavailable: %s\n", bg_strerror(rc));
    } else {
        return respond(a, conn, ROUTE_HEALTHZ, t0, MHD_HTTP_OK, CT_TEXT, "ok\n", 3, NULL, NULL);
    }
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof(msg)) n = (int)sizeof(msg) - 1;
    return respond(a, conn, ROUTE_HEALTHZ, t0, MHD_HTTP_SERVICE_UNAVAILABLE, CT_TEXT, msg,
                   (size_t)n, NULL, NULL);
}

static enum MHD_Result metrics_page(app *a, struct MHD_Connection *conn, uint64_t t0)
{
    char *page;
    size_t len;
    if (metrics_render(&page, &len, a->guard, a->store, &a->info) != 0)
        return respond_error(a, conn, ROUTE_METRICS, t0, MHD_HTTP_INTERNAL_SERVER_ERROR,
                             "out of memory", NULL, NULL);
    enum MHD_Result ret = respond(a, conn, ROUTE_METRICS, t0, MHD_HTTP_OK, CT_PROM, page, len, NULL,
                                  NULL);
    free(page);
    return ret;
}

/* State of a POST between the handler's calls. */
typedef struct upload {
    uint64_t t0;
    size_t len;
    int too_big;
    char body[HTTP_MAX_BODY];
} upload;

static int is_get(const char *m)
{
    return strcmp(m, MHD_HTTP_METHOD_GET) == 0 || strcmp(m, MHD_HTTP_METHOD_HEAD) == 0;
}

/* *con_cls of a request without a body to keep (the first call's mark),
 * and of one answered on its first call. */
static char no_body;
static char answered;

/* Every route but POST /products, on the second call (answering on the
 * first makes libmicrohttpd close the connection: it cannot know whether a
 * body follows). */
static enum MHD_Result dispatch(app *a, struct MHD_Connection *conn, const char *url,
                                const char *method)
{
    uint64_t t0 = metrics_now_ns();
    static const char prefix[] = "/products/";
    if (strncmp(url, prefix, sizeof(prefix) - 1) == 0 && !strchr(url + sizeof(prefix) - 1, '/')) {
        const char *key = url + sizeof(prefix) - 1;
        size_t klen = strlen(key);
        int get = is_get(method), del = strcmp(method, MHD_HTTP_METHOD_DELETE) == 0;
        if (!get && !del)
            return respond_error(a, conn, ROUTE_OTHER, t0, MHD_HTTP_METHOD_NOT_ALLOWED,
                                 "method not allowed", NULL, "GET, HEAD, DELETE");
        metrics_route route = get ? ROUTE_GET_PRODUCT : ROUTE_DELETE_PRODUCT;
        uint64_t id;
        if (http_parse_id(key, klen, &id) != 0)
            return respond_error(a, conn, route, t0, MHD_HTTP_BAD_REQUEST, "bad id",
                                 "an id is a decimal in 1..9223372036854775807 without sign or "
                                 "leading zeros", NULL);
        return get ? get_product(a, conn, t0, key, klen)
                   : delete_product(a, conn, t0, id, key, klen);
    }
    if (strcmp(url, "/products") == 0) /* not POST: that one has its own path */
        return respond_error(a, conn, ROUTE_OTHER, t0, MHD_HTTP_METHOD_NOT_ALLOWED,
                             "method not allowed", NULL, "POST");
    if (strcmp(url, "/metrics") == 0 || strcmp(url, "/healthz") == 0) {
        if (!is_get(method))
            return respond_error(a, conn, ROUTE_OTHER, t0, MHD_HTTP_METHOD_NOT_ALLOWED,
                                 "method not allowed", NULL, "GET, HEAD");
        return url[1] == 'm' ? metrics_page(a, conn, t0) : healthz(a, conn, t0);
    }
    return respond_error(a, conn, ROUTE_OTHER, t0, MHD_HTTP_NOT_FOUND, "no such route",
                         "routes: /products/{id}, /products, /metrics, /healthz", NULL);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
    (void)version;
    app *a = cls;
    url = http_target_path(url); /* "http://host/products/42" is /products/42 */

    if (*con_cls == NULL) { /* the first call: headers only */
        /* In flight from here until completed() (which libmicrohttpd calls
         * for every request the handler saw, answered or not). */
        atomic_fetch_add_explicit(&a->in_flight, 1, memory_order_relaxed);
        if (strcmp(url, "/products") != 0 || strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
            *con_cls = &no_body;
            return MHD_YES;
        }
        *con_cls = &answered; /* until the upload below */
        uint64_t t0 = metrics_now_ns();
        /* Refused before the body is read (the connection is closed). */
        const char *ct =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (ct && !http_content_type_json(ct))
            return respond_error(a, conn, ROUTE_POST_PRODUCT, t0, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                                 "unsupported media type", "send Content-Type: application/json",
                                 NULL);
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > HTTP_MAX_BODY)
            return respond_error(a, conn, ROUTE_POST_PRODUCT, t0, MHD_HTTP_CONTENT_TOO_LARGE,
                                 "body too large", "at most 4096 bytes", NULL);
        upload *up = malloc(sizeof(*up));
        if (!up)
            return respond_error(a, conn, ROUTE_POST_PRODUCT, t0, MHD_HTTP_INTERNAL_SERVER_ERROR,
                                 "out of memory", NULL, NULL);
        up->t0 = t0;
        up->len = 0;
        up->too_big = 0;
        *con_cls = up;
        return MHD_YES;
    }

    if (*con_cls == &answered) return MHD_NO; /* not called again after an answer */
    if (*con_cls == &no_body) {
        if (*upload_data_size > 0) { /* a body nobody asked for: read and drop it */
            *upload_data_size = 0;
            return MHD_YES;
        }
        return dispatch(a, conn, url, method);
    }

    upload *up = *con_cls; /* POST /products */
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        if (!up->too_big && n <= sizeof(up->body) - up->len) {
            memcpy(up->body + up->len, upload_data, n);
            up->len += n;
        } else {
            up->too_big = 1;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (up->too_big)
        return respond_error(a, conn, ROUTE_POST_PRODUCT, up->t0, MHD_HTTP_CONTENT_TOO_LARGE,
                             "body too large", "at most 4096 bytes", NULL);
    return post_product(a, conn, up->t0, up->body, up->len);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    app *a = cls;
    (void)conn;
    (void)toe;
    if (*con_cls == NULL) return; /* not seen by the handler: not counted */
    if (*con_cls != &no_body && *con_cls != &answered) free(*con_cls);
    *con_cls = NULL;
    atomic_fetch_sub_explicit(&a->in_flight, 1, memory_order_release);
}

/* libmicrohttpd's unescaper for the path (and query arguments, which no
 * route reads): http_unescape_path keeps %00 and %2F encoded, so an id
 * with an encoded NUL is a 400, not a shorter id, and an encoded slash is
 * not a separator. */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls;
    (void)conn;
    return http_unescape_path(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof(line), fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && line[n - 1] == '\n') line[--n] = '\0';
    fprintf(stderr, "bloomgate-products: libmicrohttpd: %s\n", line);
}

/* Our own listening socket: exact errors ("Address already in use"), and
 * the port chosen for --port 0. */
static int listen_on(const char *addr, int port, int *v6, int *bound, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        sl = sizeof(*s4);
        *v6 = 0;
    } else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        sl = sizeof(*s6);
        *v6 = 1;
    } else {
        snprintf(err, errlen, "--bind '%s' is not an IPv4 or IPv6 address", addr);
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (*v6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 1024) != 0) {
        snprintf(err, errlen, "cannot listen on %s%s%s:%d: %s", *v6 ? "[" : "", addr,
                 *v6 ? "]" : "", port, strerror(errno));
        close(fd);
        return -1;
    }
    sl = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *bound = ntohs(ss.ss_family == AF_INET6 ? s6->sin6_port : s4->sin_port);
    return fd;
}

int http_start(app *a, int *port, char *err, size_t errlen)
{
    const products_config *c = a->cfg;
    int v6 = 0;
    int fd = listen_on(c->bind, c->port, &v6, port, err, errlen);
    if (fd < 0) return -1;
    /* MHD_USE_ITC: MHD_quiesce_daemon needs it with internal threads. */
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (v6) flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, handler, a,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)c->threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)c->max_connections,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)c->timeout_s,
        MHD_OPTION_NOTIFY_COMPLETED, completed, a,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
        MHD_OPTION_END);
    if (!d) {
        snprintf(err, errlen, "libmicrohttpd could not start (%d threads): %s", (int)c->threads,
                 strerror(errno));
        close(fd);
        return -1;
    }
    a->daemon = d;
    a->listen_fd = -1;
    return 0;
}

int http_quiesce(app *a)
{
    if (!a->daemon) return -1;
    if (a->listen_fd >= 0) return 0; /* already */
    atomic_store(&a->closing, 1);
    MHD_socket fd = MHD_quiesce_daemon(a->daemon);
    if (fd == MHD_INVALID_SOCKET) return -1;
    a->listen_fd = fd; /* open until the pool's threads are gone (http_stop) */
    /* A client in the listen queue was never accepted: it gets a reset
     * now rather than at the stop. */
    shutdown(fd, SHUT_RDWR);
    return 0;
}

unsigned http_in_flight(app *a)
{
    return atomic_load_explicit(&a->in_flight, memory_order_acquire);
}

void http_stop(app *a)
{
    if (!a->daemon) return;
    MHD_stop_daemon(a->daemon);
    a->daemon = NULL;
    if (a->listen_fd >= 0) close(a->listen_fd);
    a->listen_fd = -1;
}
