/* SPDX-License-Identifier: BSD-3-Clause */
/* URLs that name remote filters (cli.h, "remote filters").
 *
 * The parser is strict on purpose: a URL that is almost right is refused
 * with what is wrong, rather than guessed at, because a guess talks to the
 * wrong server or the wrong filter. Every message names the URL with its
 * password replaced by "***", so a password never reaches a terminal or a
 * log through an error. */
#include "cli_remote.h"
#include "cli.h"
#include "cli_output.h"

#include <bloomgate/remote.h> /* BG_REMOTE_MAX_SHARDS */

#include <stdlib.h>
#include <string.h>

#define SCHEME "redis://"
#define SCHEME_CLUSTER "redis+cluster://"

bool cli_is_url(const char *word)
{
    return strncmp(word, SCHEME, strlen(SCHEME)) == 0 ||
           strncmp(word, SCHEME_CLUSTER, strlen(SCHEME_CLUSTER)) == 0;
}

/* The URL with everything between "://" and the authority's last '@'
 * replaced by "***" (a username is hidden too: it is half a credential).
 * For a URL that did not parse, `anywhere` looks for the last '@' in the
 * whole text instead: its password may hold a raw '/' or '?' that ends the
 * authority early, and hiding too much beats showing part of it. NULL if out
 * of memory. */
static char *hide_password(const char *text, bool anywhere)
{
    const char *auth = strstr(text, "://");
    auth = auth ? auth + 3 : text;
    size_t auth_len = anywhere ? strlen(auth) : strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *p = auth; p < auth + auth_len; p++)
        if (*p == '@')
            at = p;
    if (!at)
        return strdup(text);
    size_t head = (size_t)(auth - text);
    size_t size = head + 3 + strlen(at) + 1;
    char *out = malloc(size);
    if (out)
        snprintf(out, size, "%.*s***%s", (int)head, text, at);
    return out;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0, len) into a new string. NULL with *why set if an
 * escape is malformed or decodes to a NUL byte; NULL with *why NULL if out
 * of memory. */
static char *decode(const char *s, size_t len, const char **why)
{
    *why = NULL;
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        int hi = i + 1 < len ? hex_value(s[i + 1]) : -1;
        int lo = i + 2 < len ? hex_value(s[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
            *why = "a '%' must be followed by two hex digits";
            free(out);
            return NULL;
        }
        char c = (char)(hi * 16 + lo);
        if (c == '\0') {
            *why = "%00 (a NUL byte) is not allowed";
            free(out);
            return NULL;
        }
        out[o++] = c;
        i += 2;
    }
    out[o] = '\0';
    return out;
}

void cli_url_free(cli_url *u)
{
    if (!u)
        return;
    free(u->host);
    free(u->seeds);
    free(u->username);
    if (u->password) {
        /* Not left lying in freed memory. */
        volatile char *p = u->password;
        while (*p)
            *p++ = '\0';
        free(u->password);
    }
    free(u->name);
    free(u->display);
    memset(u, 0, sizeof *u);
}

static bool host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '-' || c == '_';
}

/* Parses the query string q[0, len) into u. NULL, or what is wrong. */
static const char *parse_query(const char *q, size_t len, cli_url *u, char *buf, size_t size)
{
    const char *end = q + len;
    while (q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        const char *stop = amp ? amp : end;
        const char *eq = memchr(q, '=', (size_t)(stop - q));
        if (!eq) {
            snprintf(buf, size, "query parameter '%.*s' has no value (write NAME=VALUE)",
                     (int)(stop - q), q);
            return buf;
        }
        size_t klen = (size_t)(eq - q), vlen = (size_t)(stop - eq - 1);
        const char *v = eq + 1;
        if (klen == 7 && memcmp(q, "backend", 7) == 0) {
            if (vlen == 6 && memcmp(v, "bitmap", 6) == 0)
                u->backend = CLI_URL_BITMAP;
            else if (vlen == 6 && memcmp(v, "module", 6) == 0)
                u->backend = CLI_URL_MODULE;
            else {
                snprintf(buf, size, "backend '%.*s' is unknown (bitmap or module)", (int)vlen, v);
                return buf;
            }
        } else if (klen == 7 && memcmp(q, "timeout", 7) == 0) {
            size_t digits = 0;
            while (digits < vlen && v[digits] >= '0' && v[digits] <= '9')
                digits++;
            unsigned long ms = digits == vlen && vlen > 0 && vlen <= 7 ? strtoul(v, NULL, 10) : 0;
            if (ms < 1 || ms > 3600000) {
                snprintf(buf, size,
                         "timeout '%.*s' is not a number of milliseconds from 1 to 3600000",
                         (int)vlen, v);
                return buf;
            }
            u->timeout_ms = (uint32_t)ms;
        } else if (klen == 6 && memcmp(q, "shards", 6) == 0) {
            size_t digits = 0;
            while (digits < vlen && v[digits] >= '0' && v[digits] <= '9')
                digits++;
            unsigned long n = digits == vlen && vlen > 0 && vlen <= 5 ? strtoul(v, NULL, 10) : 0;
            if (n < 2 || n > BG_REMOTE_MAX_SHARDS) {
                snprintf(buf, size, "shards '%.*s' is not a number of shards from 2 to %d",
                         (int)vlen, v, (int)BG_REMOTE_MAX_SHARDS);
                return buf;
            }
            u->shards = (uint32_t)n;
        } else {
            snprintf(buf, size, "query parameter '%.*s' is unknown (backend, timeout or shards)",
                     (int)klen, q);
            return buf;
        }
        q = amp ? amp + 1 : end;
    }
    return NULL;
}

/* Parses one HOST[:PORT] in p[0, end - p) into *host (allocated, without
 * brackets) and *port (6379 if absent). NULL, or what is wrong. */
static const char *parse_host(const char *p, const char *auth_end, char **out_host, int *out_port,
                              char *buf, size_t size, bool *oom)
{
    const char *host, *host_end, *port_at;
    if (p < auth_end && *p == '[') {
        host = p + 1;
        host_end = memchr(host, ']', (size_t)(auth_end - host));
        if (!host_end)
            return "an IPv6 address opened with '[' has no ']'";
        if (host_end == host)
            return "the IPv6 address between '[' and ']' is empty";
        for (const char *c = host; c < host_end; c++)
            if (hex_value(*c) < 0 && *c != ':' && *c != '.')
                return "the IPv6 address between '[' and ']' has a character that is not a hex "
                       "digit, ':' or '.'";
        port_at = host_end + 1;
        if (port_at < auth_end && *port_at != ':')
            return "after ']' comes ':PORT' or the end of the host";
    } else {
        host = p;
        host_end = p;
        while (host_end < auth_end && *host_end != ':')
            host_end++;
        if (host_end == host)
            return "the host is missing (e.g. redis://127.0.0.1:6379/NAME)";
        for (const char *c = host; c < host_end; c++)
            if (!host_char(*c)) {
                snprintf(buf, size,
                         "the host has a character '%c' that is not a letter, digit, '.', '-' "
                         "or '_' (IPv6 addresses go in brackets)",
                         *c);
                return buf;
            }
        port_at = host_end;
    }
    *out_port = 6379;
    if (port_at < auth_end) { /* *port_at == ':' */
        const char *d = port_at + 1;
        size_t n = (size_t)(auth_end - d);
        if (n == 0)
            return "the port after ':' is missing";
        if (n > 5 || strspn(d, "0123456789") < n) {
            snprintf(buf, size, "the port '%.*s' is not a number from 1 to 65535", (int)n, d);
            return buf;
        }
        long port = strtol(d, NULL, 10);
        if (port < 1 || port > 65535) {
            snprintf(buf, size, "the port '%.*s' is not a number from 1 to 65535", (int)n, d);
            return buf;
        }
        *out_port = (int)port;
    }
    *out_host = strndup(host, (size_t)(host_end - host));
    if (!*out_host) {
        *oom = true;
        return "";
    }
    return NULL;
}

/* The seed nodes after the first, "HOST:PORT,..." in the URL's authority
 * p[0, end - p) (each item as parse_host takes it), into u->seeds as the
 * library wants them: every port written, IPv6 hosts in brackets. NULL, or
 * what is wrong. */
static const char *parse_seeds(const char *p, const char *end, cli_url *u, char *buf,
                               size_t size, bool *oom)
{
    size_t cap = (size_t)(end - p) * 2 + 16, len = 0;
    u->seeds = malloc(cap);
    if (!u->seeds) {
        *oom = true;
        return "";
    }
    u->seeds[0] = '\0';
    while (p <= end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *item_end = comma ? comma : end;
        if (item_end == p)
            return "an empty HOST:PORT between ',' (several seed nodes are 'H1:P1,H2:P2')";
        char *host;
        int port;
        const char *why = parse_host(p, item_end, &host, &port, buf, size, oom);
        if (why)
            return why;
        bool v6 = strchr(host, ':') != NULL;
        int n = snprintf(u->seeds + len, cap - len, "%s%s%s%s:%d", len ? "," : "",
                         v6 ? "[" : "", host, v6 ? "]" : "", port);
        free(host);
        if (n < 0 || (size_t)n >= cap - len)
            return "the seed nodes are too long";
        len += (size_t)n;
        if (!comma)
            break;
        p = comma + 1;
    }
    return NULL;
}

/* The body of cli_url_parse: NULL, or what is wrong (u half-filled). */
static const char *parse(const char *text, cli_url *u, char *buf, size_t size, bool *oom)
{
    const char *why;
    *oom = false;
    const char *p;
    if (strncmp(text, SCHEME_CLUSTER, strlen(SCHEME_CLUSTER)) == 0) {
        u->cluster = true;
        p = text + strlen(SCHEME_CLUSTER);
    } else if (strncmp(text, SCHEME, strlen(SCHEME)) == 0) {
        p = text + strlen(SCHEME);
    } else {
        return "a remote filter's URL starts with redis:// or redis+cluster://";
    }
    if (strchr(p, '#'))
        return "a URL here has no #fragment";

    /* authority: [[USER]:PASSWORD@]HOST[:PORT] */
    size_t auth_len = strcspn(p, "/?");
    const char *auth_end = p + auth_len;
    const char *at = NULL;
    for (const char *c = p; c < auth_end; c++)
        if (*c == '@')
            at = c;
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (!colon)
            return "credentials are written ':PASSWORD@' or 'USER:PASSWORD@' (no ':' before "
                   "the '@')";
        if (colon > p) {
            u->username = decode(p, (size_t)(colon - p), &why);
            if (!u->username) {
                *oom = !why;
                snprintf(buf, size, "in the user name: %s", why ? why : "");
                return buf;
            }
        }
        u->password = decode(colon + 1, (size_t)(at - colon - 1), &why);
        if (!u->password) {
            *oom = !why;
            snprintf(buf, size, "in the password: %s", why ? why : "");
            return buf;
        }
        if (u->password[0] == '\0')
            return "the password is empty (drop the ':@' for no password)";
        p = at + 1;
    }
    /* HOST[:PORT], or for a cluster HOST[:PORT],HOST[:PORT]... (seeds) */
    const char *first_end = memchr(p, ',', (size_t)(auth_end - p));
    if (first_end && !u->cluster)
        return "several hosts (separated by ',') are for redis+cluster:// (seed nodes)";
    if ((why = parse_host(p, first_end ? first_end : auth_end, &u->host, &u->port, buf, size,
                          oom)) != NULL)
        return why;
    if (first_end && (why = parse_seeds(first_end + 1, auth_end, u, buf, size, oom)) != NULL)
        return why;

    /* /NAME[?QUERY] */
    p = auth_end;
    if (*p != '/')
        return "the filter's name is missing (redis://HOST:PORT/NAME)";
    p++;
    size_t name_len = strcspn(p, "?");
    if (name_len == 0)
        return "the filter's name after the '/' is empty";
    if (memchr(p, '/', name_len))
        return "the filter's name has a '/' (write it as %2F if it is part of the name)";
    u->name = decode(p, name_len, &why);
    if (!u->name) {
        *oom = !why;
        snprintf(buf, size, "in the filter's name: %s", why ? why : "");
        return buf;
    }
    if (strpbrk(u->name, "{}"))
        return "the filter's name has a '{' or '}' (they are reserved for Redis hash tags)";
    u->backend = CLI_URL_BITMAP;
    p += name_len;
    if (*p == '?') {
        p++;
        if (*p == '\0')
            return "the '?' is followed by no parameter";
        if ((why = parse_query(p, strlen(p), u, buf, size)) != NULL)
            return why;
    }
    if (u->shards && u->backend == CLI_URL_MODULE)
        return "shards= needs the bitmap backend (the module shards nothing)";
    return NULL;
}

int cli_url_parse(const char *text, cli_url *out)
{
    memset(out, 0, sizeof *out);
    char buf[256];
    bool oom;
    const char *why = parse(text, out, buf, sizeof buf, &oom);
    if (!why && !oom)
        out->display = hide_password(text, false);
    if (oom || (!why && !out->display)) {
        cli_url_free(out);
        cli_error("out of memory");
        return -1;
    }
    if (why) {
        char *shown = hide_password(text, true);
        cli_error("%s: bad URL: %s", shown ? shown : "URL", why);
        free(shown);
        cli_url_free(out);
        return -1;
    }
    return 0;
}

int cli_url_refuse(const char *text, const char *why)
{
    cli_url u;
    if (cli_url_parse(text, &u) == 0) {
        cli_error("%s: %s", u.display, why);
        cli_url_free(&u);
    }
    return CLI_EXIT_ERROR;
}
