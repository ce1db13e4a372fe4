/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared by the test_remote_*.c tests of bloomgate_remote against real
 * redis-server processes (redis_server.h): the shared plain server, a
 * connection, key sets added and checked, and another process that adds. */
#include "remote_fixture.h"

ts_server srv;

int srv_setup(void **state)
{
    (void)state;
    ts_start(&srv, NULL);
    return 0;
}

int srv_teardown(void **state)
{
    (void)state;
    ts_stop(&srv);
    return 0;
}

bg_remote *conn(const ts_server *s, uint32_t timeout_ms)
{
    bg_remote *r = NULL;
    bg_remote_options o = {.port = s->port, .command_timeout_ms = timeout_ms};
    int rc = bg_remote_connect(&r, &o);
    if (rc != BG_OK)
        fail_msg("connect: %s: %s", bg_err_name(rc), bg_remote_errstr(r));
    return r;
}

void fill(tu_batch *b, uint64_t set, uint64_t first, size_t n)
{
    tu_batch_fill(b, 0, set, first, n);
}

void agrees(bg_remote_filter *f, const bg_filter *lf, size_t n, size_t absent)
{
    enum { B = 500 };
    tu_batch b;
    tu_batch_init(&b, B);
    uint8_t res[B];
    for (uint64_t set = 3; set <= 4; set++)
        for (size_t i = 0; i < (set == 3 ? n : absent); i += B) {
            tu_batch_fill(&b, 1, set, i, B);
            TU_TRUE(bg_remote_filter_contains_many(f, b.keys, b.lens, B, res) >= 0);
            for (size_t j = 0; j < B; j++)
                TU_EQ_I(res[j], bg_filter_contains(lf, b.keys[j], b.lens[j]));
        }
    tu_batch_free(&b);
}

void expect_all(bg_remote_filter *f, uint64_t set, size_t n)
{
    tu_batch b;
    tu_batch_init(&b, 100);
    uint8_t res[100];
    for (size_t i = 0; i < n; i += 100) {
        size_t c = n - i < 100 ? n - i : 100;
        tu_batch_fill(&b, 1, set, i, c);
        int64_t got = bg_remote_filter_contains_many(f, b.keys, b.lens, c, res);
        if (got != (int64_t)c)
            fail_msg("set %llu keys %zu..: %lld of %zu present (%s)", (unsigned long long)set, i,
                     (long long)got, c, got < 0 ? bg_err_name((int)got) : "");
    }
    tu_batch_free(&b);
}

void add_set(bg_remote_filter *f, uint64_t set, size_t first, size_t n, int rebuild)
{
    tu_batch b;
    tu_batch_init(&b, 100);
    for (size_t i = first; i < first + n; i += 100) {
        tu_batch_fill(&b, 1, set, i, 100);
        int64_t rc = rebuild ? bg_remote_filter_rebuild_add_many(f, b.keys, b.lens, 100, NULL)
                             : bg_remote_filter_add_many(f, b.keys, b.lens, 100, NULL);
        if (rc < 0)
            fail_msg("add: %s", bg_err_name((int)rc));
    }
    tu_batch_free(&b);
}

/* Another process: opens `name`, says so on ready_fd, waits for go_fd,
 * then adds keys 0..n-1 of set 9 (during a rebuild, or a fetch). */
static void rebuild_adder(int port, const char *name, bg_remote_backend backend, int ready_fd,
                          int go_fd, size_t n)
{
    bg_remote *cr = NULL;
    bg_remote_options co = {.port = port};
    bg_remote_filter *cf = NULL;
    char x;
    if (bg_remote_connect(&cr, &co) != BG_OK ||
        bg_remote_filter_open(&cf, cr, name, backend) != BG_OK ||
        write(ready_fd, "r", 1) != 1 || read(go_fd, &x, 1) != 1)
        _exit(2);
    tu_batch b;
    tu_batch_init(&b, 50);
    int ok = 1;
    for (size_t i = 0; ok && i < n; i += 50) {
        tu_batch_fill(&b, 1, 9, i, 50);
        ok = bg_remote_filter_add_many(cf, b.keys, b.lens, 50, NULL) >= 0;
    }
    tu_batch_free(&b);
    bg_remote_filter_close(cf);
    bg_remote_close(cr);
    _exit(ok ? 0 : 1);
}

void adder_start(adder *ad, int port, const char *name, bg_remote_backend backend,
                 size_t n)
{
    TU_EQ_I(pipe(ad->ready), 0);
    TU_EQ_I(pipe(ad->go), 0);
    ad->pid = fork();
    assert_true(ad->pid >= 0);
    if (ad->pid == 0)
        rebuild_adder(port, name, backend, ad->ready[1], ad->go[0], n);
    char x;
    TU_EQ_I(read(ad->ready[0], &x, 1), 1);
}
