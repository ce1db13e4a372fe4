/* SPDX-License-Identifier: BSD-3-Clause */
/* Connections (remote_fixture.h): connect errors, the caller's own
 * commands (bg_remote_command), and a server frozen or killed in the middle
 * of batches, plain and sharded. */
#include "remote_fixture.h"

#include <bloomgate/remote.h>

#include <time.h>

static void connect_errors(void **state)
{
    (void)state;
    tu_ctx("connect errors");
    bg_remote *r = NULL;
    bg_remote_options o = {.port = ts_free_port(), .connect_timeout_ms = 500};
    TU_EQ_I(bg_remote_connect(&r, &o), BG_ECONN);
    assert_non_null(r);
    TU_TRUE(strlen(bg_remote_errstr(r)) > 0);
    bg_remote_filter *f;
    TU_EQ_I(bg_remote_filter_open(&f, r, "x", BG_REMOTE_BITMAP), BG_ECONN);
    bg_remote_close(r);
    TU_EQ_I(bg_remote_connect(NULL, &o), BG_EINVAL);
    TU_EQ_I(bg_remote_connect(&r, NULL), BG_EINVAL);
    TU_TRUE(r == NULL);
    TU_EQ_I(bg_remote_reconnect(NULL), BG_EINVAL);
    /* AUTH against a server without a password: the server's message. */
    o = (bg_remote_options){.port = srv.port, .password = "secret"};
    TU_EQ_I(bg_remote_connect(&r, &o), BG_EREMOTE);
    TU_TRUE(strstr(bg_remote_errstr(r), "AUTH") != NULL || strstr(bg_remote_errstr(r), "auth"));
    bg_remote_close(r);
    TU_TRUE(strcmp(bg_remote_errstr(NULL), "") == 0);
}

/* The caller's own commands: bytes in and out as given (a NUL inside), an
 * error reply as BG_EREMOTE with the server's message and no reply, bad
 * arguments refused, and a connection the server dropped: that call fails
 * (BG_ECONN, not retried), the next one reconnects first. */
static void own_commands(void **state)
{
    (void)state;
    bg_remote *r = conn(&srv, 2000);
    redisReply *rep = NULL;

    tu_ctx("binary round trip");
    const char value[] = {'a', '\0', 'b', '\n', 'c'};
    const char *set[] = {"SET", "own:bin", value};
    size_t set_lens[] = {3, 7, sizeof value};
    TU_EQ_I(bg_remote_command(r, 3, set, set_lens, &rep), BG_OK);
    TU_TRUE(rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "OK") == 0);
    freeReplyObject(rep);
    const char *get[] = {"GET", "own:bin"};
    size_t get_lens[] = {3, 7};
    TU_EQ_I(bg_remote_command(r, 2, get, get_lens, &rep), BG_OK);
    TU_EQ_I(rep->type, REDIS_REPLY_STRING);
    TU_EQ_U(rep->len, sizeof value);
    TU_TRUE(memcmp(rep->str, value, sizeof value) == 0);
    freeReplyObject(rep);
    TU_TRUE(strcmp(bg_remote_errstr(r), "") == 0);

    tu_ctx("error reply");
    const char *incr[] = {"INCR", "own:bin"};
    size_t incr_lens[] = {4, 7};
    rep = (redisReply *)&rep; /* not NULL: the call must clear it */
    TU_EQ_I(bg_remote_command(r, 2, incr, incr_lens, &rep), BG_EREMOTE);
    TU_TRUE(rep == NULL);
    TU_TRUE(strstr(bg_remote_errstr(r), "not an integer") != NULL);
    /* The connection is still good. */
    TU_EQ_I(bg_remote_command(r, 2, get, get_lens, &rep), BG_OK);
    freeReplyObject(rep);

    tu_ctx("bad arguments");
    const char *holed[] = {"GET", NULL};
    TU_EQ_I(bg_remote_command(NULL, 2, get, get_lens, &rep), BG_EINVAL);
    TU_TRUE(rep == NULL);
    TU_EQ_I(bg_remote_command(r, 0, get, get_lens, &rep), BG_EINVAL);
    TU_EQ_I(bg_remote_command(r, 2, NULL, get_lens, &rep), BG_EINVAL);
    TU_EQ_I(bg_remote_command(r, 2, get, NULL, &rep), BG_EINVAL);
    TU_EQ_I(bg_remote_command(r, 2, holed, get_lens, &rep), BG_EINVAL);
    TU_EQ_I(bg_remote_command(r, 2, get, get_lens, NULL), BG_EINVAL);

    tu_ctx("connection dropped by the server");
    const char *id[] = {"CLIENT", "ID"};
    size_t id_lens[] = {6, 2};
    TU_EQ_I(bg_remote_command(r, 2, id, id_lens, &rep), BG_OK);
    TU_EQ_I(rep->type, REDIS_REPLY_INTEGER);
    long long mine = rep->integer;
    freeReplyObject(rep);
    redisContext *c = ts_raw(&srv);
    TU_EQ_I(ts_int(c, "CLIENT KILL ID %lld", mine), 1);
    redisFree(c);
    TU_EQ_I(bg_remote_command(r, 2, get, get_lens, &rep), BG_ECONN);
    TU_TRUE(rep == NULL);
    TU_TRUE(strlen(bg_remote_errstr(r)) > 0);
    TU_EQ_I(bg_remote_command(r, 2, id, id_lens, &rep), BG_OK);
    TU_TRUE(rep->type == REDIS_REPLY_INTEGER && rep->integer != mine);
    freeReplyObject(rep);
    TU_EQ_I(bg_remote_command(r, 2, get, get_lens, &rep), BG_OK);
    TU_EQ_U(rep->len, sizeof value);
    freeReplyObject(rep);
    bg_remote_close(r);
}

/* Keys [0, n) of b added (or counted present) in calls of 1000, each well
 * within a command timeout on a host loaded several times over (a call of
 * 20000 once took over 1 s there); the number added (present). */
static int64_t in_parts(bg_remote_filter *f, const tu_batch *b, size_t n, int add)
{
    int64_t total = 0;
    for (size_t i = 0; i < n; i += 1000) {
        size_t part = n - i < 1000 ? n - i : 1000;
        int64_t rc = add ? bg_remote_filter_add_many(f, b->keys + i, b->lens + i, part, NULL)
                         : bg_remote_filter_contains_many(f, b->keys + i, b->lens + i, part, NULL);
        if (rc < 0)
            return rc;
        total += rc;
    }
    return total;
}

/* A frozen, then killed server mid-batch: BG_ECONN within the timeout, no
 * crash, and the filter works again once the server is back. With shards,
 * the batch's parts are pipelined on the one connection (the fanout).
 * The timeout leaves a loaded machine time for a whole batch of 20000 adds
 * (300 ms did not, once, on a 2-core machine running the suite); the calls
 * that must succeed go in parts (in_parts). */
static void dies_mid_batch(uint32_t shards)
{
    enum { B = 20000, TIMEOUT_MS = 1000 };
    ts_server s;
    ts_start(&s, NULL);
    bg_remote *r = conn(&s, TIMEOUT_MS);
    bg_remote_filter *f;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 200000,
                                  .error_rate = 0.01, .shards = shards};
    TU_EQ_I(bg_remote_filter_create(&f, r, "dies", &o), BG_OK);
    tu_batch b;
    tu_batch_init(&b, B);
    fill(&b, 5, 0, B);
    TU_EQ_I(in_parts(f, &b, B, 1), B);
    redisContext *c = ts_raw(&s);
    redisReply *rep = redisCommand(c, "SAVE");
    freeReplyObject(rep);
    redisFree(c);

    tu_ctx("frozen server");
    kill(s.pid, SIGSTOP);
    double t0 = tu_now();
    TU_EQ_I(bg_remote_filter_add_many(f, b.keys, b.lens, B, NULL), BG_ECONN);
    TU_TRUE(tu_now() - t0 < 2.0 * TIMEOUT_MS / 1000);
    TU_TRUE(strlen(bg_remote_errstr(r)) > 0);
    kill(s.pid, SIGCONT);

    tu_ctx("killed server");
    pid_t killer = fork();
    assert_true(killer >= 0);
    if (killer == 0) {
        struct timespec ts = {0, 150000000};
        nanosleep(&ts, NULL);
        kill(s.pid, SIGKILL);
        _exit(0);
    }
    int rc = BG_OK;
    t0 = tu_now();
    for (uint64_t i = 1; rc >= 0 && tu_now() - t0 < 10; i++) {
        fill(&b, 6, i * B, B);
        rc = (int)bg_remote_filter_add_many(f, b.keys, b.lens, B, NULL);
    }
    TU_EQ_I(rc, BG_ECONN);
    waitpid(killer, NULL, 0);
    waitpid(s.pid, NULL, 0);
    ts_track(0, s.pid);
    s.pid = 0;
    /* While it is down, calls fail fast. */
    TU_EQ_I(bg_remote_filter_contains(f, "k", 1), BG_ECONN);

    tu_ctx("server back");
    ts_spawn(&s);
    fill(&b, 5, 0, B);
    TU_EQ_I(in_parts(f, &b, B, 0), B);
    TU_EQ_I(bg_remote_reconnect(r), BG_OK);
    TU_EQ_I(bg_remote_filter_contains(f, b.keys[0], b.lens[0]), 1);
    tu_batch_free(&b);
    bg_remote_filter_close(f);
    bg_remote_close(r);
    ts_stop(&s);
}

static void server_dies_mid_batch(void **state)
{
    (void)state;
    dies_mid_batch(0);
}

static void server_dies_mid_sharded_batch(void **state)
{
    (void)state;
    dies_mid_batch(4);
}

int main(void)
{
    signal(SIGPIPE, SIG_DFL); /* the library must cope without SIG_IGN */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(connect_errors),
        cmocka_unit_test(own_commands),
        cmocka_unit_test(server_dies_mid_batch),
        cmocka_unit_test(server_dies_mid_sharded_batch),
    };
    return cmocka_run_group_tests(tests, srv_setup, srv_teardown);
}
