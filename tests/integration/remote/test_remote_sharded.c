/* SPDX-License-Identifier: BSD-3-Clause */
/* A sharded bitmap filter on a plain server (remote_fixture.h): rebuilt
 * while another handle adds and another process reads, aborted, cancelled
 * shard by shard, and committed part-way. */
#include "remote_fixture.h"
#include "remote/remote_internal.h" /* bg__remote_filter_drop: deletes the filter a handle is on */

#include <bloomgate/remote.h>

#include "script_fault.h" /* a commit lost part-way */

#include <poll.h>

/* Adds keys [first, first + n) of `set` through *f (name `name` on r),
 * reopening the handle once if a rebuild reshaped the filter. */
static void add_reopen(bg_remote_filter **f, bg_remote *r, const char *name, uint64_t set,
                       size_t first, size_t n)
{
    tu_batch b;
    tu_batch_init(&b, n);
    tu_batch_fill(&b, 1, set, first, n);
    int64_t rc = bg_remote_filter_add_many(*f, b.keys, b.lens, n, NULL);
    if (rc == BG_ESTALE) {
        bg_remote_filter_close(*f);
        *f = NULL;
        TU_EQ_I(bg_remote_filter_open(f, r, name, BG_REMOTE_BITMAP), BG_OK);
        rc = bg_remote_filter_add_many(*f, b.keys, b.lens, n, NULL);
    }
    if (rc < 0)
        fail_msg("add to %s: %s", name, bg_err_name((int)rc));
    tu_batch_free(&b);
}

/* The generations of the `shards` shards of `name` (their meta hashes'
 * field), into gens; 0 if a reply is not one. */
static int shard_generations(redisContext *c, const char *name, unsigned shards, char gens[][32])
{
    for (unsigned i = 0; i < shards; i++)
        redisAppendCommand(c, "HGET {%s:s%u}:meta generation", name, i);
    int ok = 1;
    for (unsigned i = 0; i < shards; i++) {
        redisReply *rep = NULL;
        if (redisGetReply(c, (void **)&rep) != REDIS_OK || rep == NULL)
            return 0;
        if (rep->type == REDIS_REPLY_STRING)
            snprintf(gens[i], 32, "%s", rep->str);
        else
            ok = 0;
        freeReplyObject(rep);
    }
    return ok;
}

/* A reader process: checks set 6's first n keys again and again until a
 * byte arrives on stop_fd; exits 1 on a false negative, 2 on an error other
 * than a reshape (which it follows by reopening), 3 if it never ran.
 *
 * THE RACE WINDOW
 * The reads that matter are those during a commit, while the shards swap
 * one after another. Around each read the reader takes every shard's
 * generation (its own connection, pipelined); when they differ, a shard
 * swapped while the read was on its way, and the read found every key
 * anyway: the window was hit. The first such read writes "h" on report_fd
 * (the parent goes on rebuilding until it comes); at the end a line
 * "ROUNDS RACED STALE" follows. */
static void sharded_reader(int port, const char *name, unsigned shards, size_t n, int stop_fd,
                           int report_fd)
{
    bg_remote *cr = NULL;
    bg_remote_options co = {.port = port};
    bg_remote_filter *cf = NULL;
    struct timeval tv = {10, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c == NULL || c->err || bg_remote_connect(&cr, &co) != BG_OK ||
        bg_remote_filter_open(&cf, cr, name, BG_REMOTE_BITMAP) != BG_OK)
        _exit(2);
    tu_batch b;
    tu_batch_init(&b, n);
    tu_batch_fill(&b, 1, 6, 0, n);
    long rounds = 0, raced = 0, stale = 0;
    char before[8][32], after[8][32];
    if (shards > 8)
        _exit(2);
    for (;;) {
        struct pollfd p = {.fd = stop_fd, .events = POLLIN};
        if (poll(&p, 1, 0) > 0)
            break;
        int known = shard_generations(c, name, shards, before);
        int64_t got = bg_remote_filter_contains_many(cf, b.keys, b.lens, n, NULL);
        known = known && shard_generations(c, name, shards, after);
        if (got == BG_ESTALE) {
            stale++;
            bg_remote_filter_close(cf);
            if (bg_remote_filter_open(&cf, cr, name, BG_REMOTE_BITMAP) != BG_OK)
                _exit(2);
            continue;
        }
        if (got < 0)
            _exit(2);
        if (got != (int64_t)n)
            _exit(1);
        rounds++;
        int swapped = 0;
        for (unsigned i = 0; known && i < shards; i++)
            swapped |= strcmp(before[i], after[i]) != 0;
        if (swapped && raced++ == 0 && write(report_fd, "h", 1) != 1)
            _exit(2);
    }
    char line[64];
    int len = snprintf(line, sizeof line, "%ld %ld %ld\n", rounds, raced, stale);
    if (write(report_fd, line, (size_t)len) != len)
        _exit(2);
    _exit(rounds > 0 ? 0 : 3);
}

/* 1 once the reader has written its "h" on fd (read without waiting). */
static int reader_raced(int fd, int *raced)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char x;
    if (!*raced && poll(&p, 1, 0) > 0 && read(fd, &x, 1) == 1 && x == 'h')
        *raced = 1;
    return *raced;
}

/* A sharded filter rebuilt five times (new shape, same shape) while another
 * handle adds and another process reads: no key is ever missing, though the
 * shards swap one after another, and the reader did read during a swap
 * (same-shape rebuilds follow, for up to 60 s, until it has); the seed
 * cannot change; abort cancels every shard's rebuild; one shard's cancelled
 * cancels the rest; after a commit lost part-way, abort cancels only this
 * handle's shards. */
static void sharded_rebuild(void **state)
{
    (void)state;
    tu_ctx("sharded rebuild");
    enum { SRC = 1000, PER_ROUND = 200, ROUNDS = 5 };
    bg_remote *r = conn(&srv, 0), *rw = conn(&srv, 0);
    bg_remote_filter *a, *w;
    bg_remote_filter_options o = {.backend = BG_REMOTE_BITMAP, .capacity = 4000,
                                  .error_rate = 0.01, .seed = 5, .shards = 4};
    TU_EQ_I(bg_remote_filter_create(&a, r, "srb", &o), BG_OK);
    add_set(a, 6, 0, SRC, 0);
    TU_EQ_I(bg_remote_filter_open(&w, rw, "srb", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_set_rebuild_lease(w, 30000), BG_OK);
    bg_remote_filter_options other_seed = {.capacity = 8000, .error_rate = 0.001, .seed = 6};
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, &other_seed), BG_EINVAL);
    uint64_t bits0 = bg_remote_filter_bits(w);

    int stop[2], report[2];
    TU_EQ_I(pipe(stop), 0);
    TU_EQ_I(pipe(report), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        sharded_reader(srv.port, "srb", 4, SRC, stop[0], report[1]);
    close(report[1]);
    int raced = 0;

    bg_remote_filter_options bigger = {.capacity = 8000, .error_rate = 0.001, .seed = 5};
    for (size_t round = 0; round < ROUNDS; round++) {
        TU_EQ_I(bg_remote_filter_rebuild_begin(w, round % 2 ? NULL : &bigger), BG_OK);
        if (round == 0) {
            TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_EEXIST);
            TU_EQ_I(bg_remote_filter_rebuild_begin(a, NULL), BG_EEXIST);
        }
        /* The source: set 6 and the set 8 keys of earlier rounds, read after
         * begin; meanwhile this round's set 8 keys are added through a. */
        for (size_t i = 0; i < SRC; i += 100) {
            add_set(w, 6, i, 100, 1);
            add_reopen(&a, r, "srb", 8, round * PER_ROUND + i / 5, PER_ROUND / 10);
        }
        if (round)
            add_set(w, 8, 0, round * PER_ROUND, 1);
        TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_OK);
        TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_EINVAL);
        expect_all(w, 6, SRC);
        expect_all(w, 8, (round + 1) * PER_ROUND);
    }
    /* Same-shape rebuilds until the reader has read during a swap. */
    int extra = 0;
    for (double end = tu_now() + 60; !reader_raced(report[0], &raced) && tu_now() < end; extra++) {
        TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
        add_set(w, 6, 0, SRC, 1);
        add_set(w, 8, 0, ROUNDS * PER_ROUND, 1);
        TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_OK);
    }
    expect_all(w, 6, SRC);
    expect_all(w, 8, ROUNDS * PER_ROUND);
    TU_EQ_I(write(stop[1], "s", 1), 1);
    int status;
    TU_EQ_I(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("reader: exit status %d (1: a false negative)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    char line[64] = "";
    ssize_t got = 0, k;
    while (got < (ssize_t)sizeof line - 1 &&
           (k = read(report[0], line + got, sizeof line - 1 - (size_t)got)) > 0)
        got += k;
    long rounds = 0, races = 0, stale = 0;
    const char *at = line[0] == 'h' ? line + 1 : line;
    TU_EQ_I(sscanf(at, "%ld %ld %ld", &rounds, &races, &stale), 3);
    print_message("reader: %ld reads, %ld during a swap, %ld stale; %d more rebuilds\n", rounds,
                  races, stale, extra);
    if (races == 0)
        fail_msg("the reader never read while a shard swapped (%ld reads, %d more rebuilds)",
                 rounds, extra);
    close(report[0]);
    close(stop[0]);
    close(stop[1]);
    TU_TRUE(bg_remote_filter_bits(w) > bits0); /* sized for 8000 at p = 0.001 */
    redisContext *c = ts_raw(&srv);
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 8); /* 4 shards: meta and one bit array each */

    /* Abort from a handle that began none: every shard's rebuild goes. */
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 12);
    bg_remote_filter_close(a);
    TU_EQ_I(bg_remote_filter_open(&a, r, "srb", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_abort(a), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_abort(a), BG_ENOTFOUND);
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 8);
    tu_batch b;
    tu_batch_init(&b, 10);
    tu_batch_fill(&b, 1, 6, 0, 10);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), BG_ESTALE);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), BG_EINVAL);
    expect_all(a, 6, SRC);

    /* One shard's rebuild cancelled (by a handle on that shard alone) ends
     * the whole rebuild, in add and in commit: no other shard's stays
     * pending, writing twice until its lease runs out. */
    bg_remote_filter *s1, *s2;
    TU_EQ_I(bg_remote_filter_open(&s1, r, "srb:s1", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_open(&s2, r, "srb:s2", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_abort(s1), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_add_many(w, b.keys, b.lens, 10, NULL), BG_ESTALE);
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 8);
    TU_EQ_I(bg_remote_filter_rebuild_abort(a), BG_ENOTFOUND);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    add_set(w, 6, 0, SRC, 1);
    TU_EQ_I(bg_remote_filter_rebuild_abort(s2), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_ESTALE); /* s0 and s1 swapped, s3 not */
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 8);
    TU_EQ_I(bg_remote_filter_rebuild_abort(a), BG_ENOTFOUND);
    expect_all(a, 6, SRC);

    /* A commit lost at shard 2: shards 0 and 1 are swapped, and another
     * client begins a rebuild of shard 0. This handle's abort cancels its
     * own shards 2 and 3 only. */
    bg_remote_filter *s0;
    TU_EQ_I(bg_remote_filter_open(&s0, r, "srb:s0", BG_REMOTE_BITMAP), BG_OK);
    TU_EQ_I(bg_remote_filter_rebuild_begin(w, NULL), BG_OK);
    add_set(w, 6, 0, SRC, 1);
    sf_arm_after(BG__SCRIPT_REBUILD_COMMIT, BG__REMOTE_TESTING_LOSE_REQUEST, 2, 1);
    TU_EQ_I(bg_remote_filter_rebuild_commit(w), BG_ECONN);
    TU_EQ_I(sf_disarm(), 1);
    TU_EQ_I(bg_remote_filter_rebuild_begin(s0, NULL), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 11); /* s0's new rebuild, s2's and s3's */
    TU_EQ_I(bg_remote_filter_rebuild_abort(w), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 9);
    TU_TRUE(bg_remote_filter_rebuild_add_many(s0, b.keys, b.lens, 10, NULL) >= 0);
    TU_EQ_I(bg_remote_filter_rebuild_abort(s0), BG_OK);
    TU_EQ_I(ts_count_keys(c, "{srb:s*"), 8);
    expect_all(a, 6, SRC);
    tu_batch_free(&b);
    bg_remote_filter_close(s0);
    bg_remote_filter_close(s1);
    bg_remote_filter_close(s2);

    TU_EQ_I(bg__remote_filter_drop(a), BG_OK);
    TU_EQ_I(ts_count_keys(c, "*srb*"), 0);
    redisFree(c);
    bg_remote_filter_close(a);
    bg_remote_filter_close(w);
    bg_remote_close(r);
    bg_remote_close(rw);
}

int main(void)
{
    signal(SIGPIPE, SIG_DFL); /* the library must cope without SIG_IGN */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sharded_rebuild),
    };
    return cmocka_run_group_tests(tests, srv_setup, srv_teardown);
}
