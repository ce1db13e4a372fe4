/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the command-line tool's URL parser (src/cli/url.c):
 * redis:// and redis+cluster:// URLs naming remote filters, taken from the
 * command line as typed.
 *
 * Properties checked on every input (a violation aborts):
 *   - a URL that parses has a non-empty host and name, a port in 1..65535,
 *     a backend, shards 0 or 2..BG_REMOTE_MAX_SHARDS (bitmap only), and
 *     more seed nodes only for a cluster, in a list the library accepts;
 *   - its display form is the URL with the credentials, the authority's
 *     text before its last '@', replaced by "***", and nothing else changed;
 *   - the message about a URL that did not parse (through cli_error,
 *     defined here) shows the URL with everything between "://" and the
 *     last '@' of the whole text replaced by "***" (a password may hold a
 *     raw '/' that ends the authority early), and gives a reason.
 * Credentials are thus never shown: the check compares the exact strings,
 * which holds whatever the credentials repeat elsewhere in the URL. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/remote.h>

#include "cli/cli_output.h" /* cli_error, which the fuzzer defines */
#include "cli/cli_remote.h"  /* cli_url_parse */
#include "fuzz_util.h"

/* What the message and the display form must be for the current input. */
static char want_error_url[4096], want_display[4096];

/* text with [from, at) replaced by "***" into out; text itself when at is NULL. */
static void masked(char *out, size_t cap, const char *text, const char *from, const char *at)
{
    if (!at)
        snprintf(out, cap, "%s", text);
    else
        snprintf(out, cap, "%.*s***%s", (int)(from - text), text, at);
}

static void expectations(const char *text)
{
    const char *auth = strstr(text, "://");
    auth = auth ? auth + 3 : text;
    masked(want_error_url, sizeof want_error_url, text, auth, strrchr(auth, '@'));
    const char *end = auth + strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *p = auth; p < end; p++)
        if (*p == '@')
            at = p;
    masked(want_display, sizeof want_display, text, auth, at);
}

void cli_error(const char *fmt, ...)
{
    if (strcmp(fmt, "%s: bad URL: %s") != 0)
        return; /* "out of memory" */
    va_list ap;
    va_start(ap, fmt);
    const char *shown = va_arg(ap, const char *);
    const char *why = va_arg(ap, const char *);
    va_end(ap);
    FZ_CHECK(why != NULL && why[0] != '\0');
    if (strcmp(shown, want_error_url) != 0) {
        fprintf(stderr, "fuzz_cli_url: message shows '%s', want '%s'\n", shown, want_error_url);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2048)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0'; /* a command-line word: NUL-terminated, no NUL inside */
    expectations(text);
    cli_url u;
    if (cli_url_parse(text, &u) == 0) {
        FZ_CHECK(u.host && u.host[0] && u.name && u.name[0] && u.display);
        FZ_CHECK(u.port >= 1 && u.port <= 65535);
        FZ_CHECK(u.backend == CLI_URL_BITMAP || u.backend == CLI_URL_MODULE);
        FZ_CHECK(u.shards == 0 || (u.shards >= 2 && u.shards <= BG_REMOTE_MAX_SHARDS &&
                                   u.backend == CLI_URL_BITMAP));
        FZ_CHECK(strcmp(u.display, want_display) == 0);
        FZ_CHECK(!u.seeds || (u.cluster && fz_seeds_ok(u.seeds)));
        if (u.username || u.password)
            FZ_CHECK(strstr(u.display, "***") != NULL);
        cli_url_free(&u);
    }
    free(text);
    return 0;
}
