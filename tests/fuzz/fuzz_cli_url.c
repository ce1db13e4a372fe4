/* libFuzzer target for the command-line tool's URL parser (src/cli/url.c):
 * redis:// and redis+cluster:// URLs naming remote filters, taken from the
 * command line as typed.
 *
 * Properties checked on every input (a violation aborts):
 *   - a URL that parses has a non-empty host and name, a port in 1..65535,
 *     a backend, shards 0 or 2..BG_REMOTE_MAX_SHARDS (bitmap only), and a
 *     display form;
 *   - a URL with a username or password shows "***" in its display form and
 *     never its authority's raw text before the '@';
 *   - the message about a URL that did not parse does not show the raw text
 *     between "://" and the URL's last '@' (messages go through cli_error,
 *     defined here to check that), and gives a reason.
 * (Only such text of 4 bytes or more that appears nowhere else in the URL
 * is checked: shorter text, or text the host repeats, may show legitimately.) */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bloomgate/remote.h>

#include "cli/cli.h"

#define CHECK(c)                                                                                 \
    do {                                                                                         \
        if (!(c)) {                                                                              \
            fprintf(stderr, "fuzz_cli_url: property failed: %s\n", #c);                          \
            abort();                                                                             \
        }                                                                                        \
    } while (0)

/* Raw credential text of the input being parsed ("" when none or not
 * checked): secret_any for error messages (a URL that did not parse may
 * hide a password holding a raw '/': everything up to the last '@' counts),
 * secret_auth for a parsed URL (its authority, up to the first '/', '?' or
 * '#', and its last '@'). */
static char secret_any[4096], secret_auth[4096];

/* url.c reports a URL that did not parse as "%s: bad URL: %s", the URL as
 * shown, then why; the shown URL must not hold the credential text. (The
 * reason is checked for crashes only: its fixed English words would match
 * a fuzzed "credential" such as "redi".) */
void cli_error(const char *fmt, ...)
{
    if (strcmp(fmt, "%s: bad URL: %s") != 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    const char *shown = va_arg(ap, const char *);
    const char *why = va_arg(ap, const char *);
    va_end(ap);
    CHECK(shown != NULL && why != NULL && why[0] != '\0');
    if (secret_any[0] != '\0' && strstr(shown, secret_any) != NULL) {
        fprintf(stderr, "fuzz_cli_url: a message shows \"%s\": %s\n", secret_any, shown);
        abort();
    }
}

/* Copies text[from, at) into out when it is worth checking: 4 bytes or more
 * (one character can hide in plain sight, "a" in "localhost") and found
 * nowhere else in the URL (text the host or name repeats, from the '@' on, may show there). */
static void keep(char *out, const char *text, const char *from, const char *at)
{
    out[0] = '\0';
    size_t n = (size_t)(at - from);
    if (n < 4 || n >= 4096)
        return;
    memcpy(out, from, n);
    out[n] = '\0';
    if (strstr(at, out) != NULL || strstr(text, out) < from)
        out[0] = '\0';
}

static void find_secrets(const char *text)
{
    secret_any[0] = secret_auth[0] = '\0';
    const char *auth = strstr(text, "://");
    if (!auth)
        return;
    auth += 3;
    const char *at = strrchr(auth, '@');
    if (at)
        keep(secret_any, text, auth, at);
    const char *end = auth + strcspn(auth, "/?#");
    const char *at_auth = NULL;
    for (const char *p = auth; p < end; p++)
        if (*p == '@')
            at_auth = p;
    if (at_auth)
        keep(secret_auth, text, auth, at_auth);
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
    find_secrets(text);
    cli_url u;
    if (cli_url_parse(text, &u) == 0) {
        CHECK(u.host && u.host[0] && u.name && u.name[0] && u.display);
        CHECK(u.port >= 1 && u.port <= 65535);
        CHECK(u.backend == CLI_URL_BITMAP || u.backend == CLI_URL_MODULE);
        CHECK(u.shards == 0 || (u.shards >= 2 && u.shards <= BG_REMOTE_MAX_SHARDS &&
                                u.backend == CLI_URL_BITMAP));
        if (u.username || u.password)
            CHECK(strstr(u.display, "***") != NULL);
        CHECK(secret_auth[0] == '\0' || strstr(u.display, secret_auth) == NULL);
        cli_url_free(&u);
    }
    free(text);
    return 0;
}
