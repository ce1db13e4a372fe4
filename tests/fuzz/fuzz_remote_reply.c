/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the remote client (src/remote) reading what a Redis
 * server sends: every reply of a session, from the server's first byte to
 * its last, is the input. A server can be anything that listens on the
 * port (a wrong service, a proxy that cuts replies, a hostile peer), and
 * the meta hash it serves can hold anything any client wrote.
 *
 * Input: byte 0 picks the session (bit 0: module backend, else bitmap;
 * bit 1: create the filter, else open it); the rest is the server's byte
 * stream. A server thread accepts the client on a Unix socket, writes the
 * whole stream, closes its sending side and reads until the client hangs
 * up; a client that connects again (it does after a broken connection) is
 * turned away at once. hiredis parses the stream into replies; the client
 * takes them in order as answers to its commands: open or create, then
 * add, contains, test-and-add, stats, expire, fetch (bitmap: small filters
 * only; module: then a publish of what came down), rebuild (both backends),
 * drop, and (bitmap) a sharded publish of the name.
 *
 * Properties checked on every input (a violation aborts):
 *   - every call returns a status the library defines (bg_err_name knows
 *     it), or a count no larger than the batch;
 *   - a batch's per-key results are 0 or 1 and add up to its count;
 *   - stats of a (single) bitmap filter agree with the shape that was opened;
 *   - a fetched filter has the opened shape (module: is scalable);
 *   - the connection's message is a terminated string.
 * Nothing may crash, leak or hang (a session never waits on a timeout: the
 * server's stream ends with EOF). */
#define _GNU_SOURCE

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <bloomgate/filter.h>
#include <bloomgate/remote.h>

#include "fuzz_util.h"
#include "remote/remote_internal.h" /* bg__remote_filter_drop: the handle's own delete */

/* Fetch only filters up to this many bits (the shape comes from the input,
 * and a valid meta hash may name 2^32 bits: 512 MiB to download). */
#define FETCH_MAX_BITS (UINT64_C(1) << 16)

static char sock_dir[32], sock_path[108];
static int listen_fd = -1;
static int wake[2] = {-1, -1}; /* the session is over: a byte on wake[1] */
static int verbose;

static int status_ok(int64_t rc)
{
    return rc >= 0 || strcmp(bg_err_name((int)rc), "BG_UNKNOWN") != 0;
}

static void note(const char *what, int64_t rc, const bg_remote *r)
{
    FZ_CHECK(status_ok(rc));
    const char *e = bg_remote_errstr(r);
    FZ_CHECK(e && memchr(e, '\0', 4096));
    if (verbose)
        fprintf(stderr, "  %-16s %-14s %s\n", what, rc < 0 ? bg_err_name((int)rc) : "ok", e);
}

static void cleanup(void)
{
    unlink(sock_path);
    rmdir(sock_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    signal(SIGPIPE, SIG_IGN); /* the server thread writes to a client that may be gone */
    verbose = getenv("FUZZ_REMOTE_VERBOSE") != NULL;
    snprintf(sock_dir, sizeof sock_dir, "/tmp/bg-fuzz-remote-XXXXXX");
    if (!mkdtemp(sock_dir)) {
        perror("mkdtemp");
        abort();
    }
    snprintf(sock_path, sizeof sock_path, "%s/redis.sock", sock_dir);
    atexit(cleanup);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock_path);
    listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(listen_fd, 16) != 0 || pipe2(wake, O_CLOEXEC) != 0) {
        perror("fuzz_remote_reply: listen");
        abort();
    }
    return 0;
}

typedef struct server {
    const uint8_t *data;
    size_t size;
} server;

/* Serves the first connection the whole stream; turns later ones away;
 * returns when the session is over (a byte on the wake pipe). */
static void *serve(void *arg)
{
    server *s = arg;
    int served = 0;
    for (;;) {
        struct pollfd p[2] = {{.fd = listen_fd, .events = POLLIN},
                              {.fd = wake[0], .events = POLLIN}};
        if (poll(p, 2, -1) <= 0)
            continue;
        if (p[1].revents) {
            char b;
            if (read(wake[0], &b, 1) != 1)
                abort();
            return NULL;
        }
        int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        if (!served) {
            served = 1;
            for (size_t off = 0; off < s->size;) {
                ssize_t w = send(c, s->data + off, s->size - off, MSG_NOSIGNAL);
                if (w <= 0)
                    break;
                off += (size_t)w;
            }
            shutdown(c, SHUT_WR);
            char buf[4096];
            while (read(c, buf, sizeof buf) > 0)
                ;
        }
        close(c);
    }
    return NULL;
}

static void batch_checks(const char *what, int64_t rc, const uint8_t *res, size_t n,
                         const bg_remote *r)
{
    note(what, rc, r);
    if (rc < 0)
        return;
    FZ_CHECK((size_t)rc <= n);
    int64_t ones = 0;
    for (size_t i = 0; i < n; i++) {
        FZ_CHECK(res[i] <= 1);
        ones += res[i];
    }
    FZ_CHECK(ones == rc);
}

/* A rebuild of three keys: begin, add, commit. */
static void rebuild(bg_remote *r, bg_remote_filter *f, const bg_remote_filter_options *shape,
                    const void *const *keys, const size_t *lens)
{
    int rc = bg_remote_filter_rebuild_begin(f, shape);
    note("rebuild_begin", rc, r);
    if (rc == BG_OK) {
        uint8_t res[3];
        memset(res, 7, sizeof res);
        batch_checks("rebuild_add", bg_remote_filter_rebuild_add_many(f, keys, lens, 3, res), res,
                     3, r);
        note("rebuild_commit", bg_remote_filter_rebuild_commit(f), r);
    }
}

static void session(bg_remote *r, int module, int create)
{
    static const void *const keys[3] = {"alpha", "", "\xff\x00z"};
    static const size_t lens[3] = {5, 0, 3};
    uint8_t res[3];
    bg_remote_filter *f = NULL;
    int rc;
    if (module && create) {
        /* Staged creation: the stage and commit scripts' replies. */
        bg_remote_filter_options so = {.backend = BG_REMOTE_MODULE, .capacity = 100,
                                       .error_rate = 0.01};
        rc = bg_remote_filter_stage(&f, r, "fz", &so);
        note("stage", rc, r);
        if (rc == BG_OK) {
            memset(res, 7, sizeof res);
            batch_checks("staged add_many", bg_remote_filter_add_many(f, keys, lens, 3, res), res,
                         3, r);
            note("stage_commit", bg_remote_filter_stage_commit(f), r);
        }
        FZ_CHECK(rc == BG_OK || f == NULL);
        bg_remote_filter_close(f);
        f = NULL;
    }
    if (create) {
        bg_remote_filter_options o = {.backend = module ? BG_REMOTE_MODULE : BG_REMOTE_BITMAP,
                                      .capacity = 100, .error_rate = 0.01};
        rc = bg_remote_filter_create(&f, r, "fz", &o);
        note("create", rc, r);
    } else {
        rc = bg_remote_filter_open(&f, r, "fz", module ? BG_REMOTE_MODULE : BG_REMOTE_BITMAP);
        note("open", rc, r);
    }
    if (rc != BG_OK) {
        FZ_CHECK(f == NULL);
        return;
    }
    if (!module)
        FZ_CHECK(bg_remote_filter_bits(f) >= 1 && bg_remote_filter_hashes(f) >= 1);

    memset(res, 7, sizeof res);
    batch_checks("add_many", bg_remote_filter_add_many(f, keys, lens, 3, res), res, 3, r);
    memset(res, 7, sizeof res);
    batch_checks("contains_many", bg_remote_filter_contains_many(f, keys, lens, 3, res), res, 3,
                 r);
    rc = bg_remote_filter_test_and_add(f, "beta", 4);
    note("test_and_add", rc, r);
    FZ_CHECK(rc < 0 || rc == 0 || rc == 1);
    rc = bg_remote_filter_contains(f, "beta", 4);
    note("contains", rc, r);
    FZ_CHECK(rc < 0 || rc == 0 || rc == 1);

    bg_remote_filter_stats st;
    rc = bg_remote_filter_stats_get(f, &st);
    note("stats", rc, r);
    if (rc == BG_OK && !module && bg_remote_filter_generation(f) != 0) {
        FZ_CHECK(st.bits == bg_remote_filter_bits(f));
        FZ_CHECK(st.hashes == bg_remote_filter_hashes(f));
        FZ_CHECK(st.bytes == (st.bits + 7) / 8);
    }
    note("expire", bg_remote_filter_expire(f, 60000), r);

    if (!module) {
        uint64_t m = bg_remote_filter_bits(f);
        uint32_t k = bg_remote_filter_hashes(f);
        if (m <= FETCH_MAX_BITS && bg_remote_filter_generation(f) != 0) {
            bg_filter *local = NULL;
            rc = bg_remote_filter_fetch(f, &local);
            note("fetch", rc, r);
            if (rc == BG_OK) {
                bg_filter_stats ls;
                FZ_CHECK(bg_filter_stats_get(local, &ls) == BG_OK);
                FZ_CHECK(ls.bits == m && ls.hashes == k);
                bg_filter_free(local);
            } else {
                FZ_CHECK(local == NULL);
            }
            rebuild(r, f, NULL, keys, lens);
        }
    }
    if (module) {
        /* Fetch (the copy script, BF.SCANDUMP, UNLINK); what came down goes
         * back up (the chunk and commit scripts). */
        bg_filter *local = NULL;
        rc = bg_remote_filter_fetch(f, &local);
        note("fetch", rc, r);
        if (rc == BG_OK) {
            FZ_CHECK(bg_filter_variant(local) == BG_VARIANT_SCALABLE);
            note("publish", bg_remote_filter_publish(r, "fz", BG_REMOTE_MODULE, local), r);
            bg_filter_free(local);
        } else {
            FZ_CHECK(local == NULL);
        }
        bg_remote_filter_options no = {.capacity = 200, .error_rate = 0.01};
        rebuild(r, f, &no, keys, lens);
    }
    note("drop", bg__remote_filter_drop(f), r);
    bg_remote_filter_close(f);
    if (!module) {
        /* Then a sharded publish of the name: what it holds (EXISTS,
         * GET), each shard's upload and script, the count's SET NX. */
        bg_filter *sh[2] = {NULL, NULL};
        bg_filter_options lo = {.variant = BG_VARIANT_STANDARD, .bits = 64, .hashes = 2,
                                .seed = 3};
        if (bg_filter_new(&sh[0], &lo) == BG_OK && bg_filter_new(&sh[1], &lo) == BG_OK)
            note("publish_shards",
                 bg_remote_filter_publish_shards(r, "fz", (const bg_filter *const *)sh, 2), r);
        bg_filter_free(sh[0]);
        bg_filter_free(sh[1]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    server s = {.data = data + 1, .size = size - 1};
    pthread_t t;
    if (pthread_create(&t, NULL, serve, &s) != 0)
        abort();
    bg_remote_options o = {.unix_socket = sock_path, .connect_timeout_ms = 2000,
                           .command_timeout_ms = 2000};
    bg_remote *r = NULL;
    int rc = bg_remote_connect(&r, &o);
    if (verbose)
        fprintf(stderr, "session: %s, %s\n", data[0] & 1 ? "module" : "bitmap",
                data[0] & 2 ? "create" : "open");
    if (r) {
        note("connect", rc, r);
        if (rc == BG_OK)
            session(r, data[0] & 1, data[0] & 2);
        bg_remote_close(r);
    }
    if (write(wake[1], "x", 1) != 1)
        abort();
    pthread_join(t, NULL);
    return 0;
}
