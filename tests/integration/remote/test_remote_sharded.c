/* A sharded bitmap filter on a plain server (remote_fixture.h): rebuilt
 * while another handle adds and another process reads, aborted, cancelled
 * shard by shard, and committed part-way. */
#include "remote_fixture.h"

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

/* A reader process: checks set 6's first n keys again and again until a
 * byte arrives on stop_fd; exits 1 on a false negative, 2 on an error other
 * than a reshape (which it follows by reopening), 3 if it never ran. */
static void sharded_reader(int port, const char *name, size_t n, int stop_fd)
{
    bg_remote *cr = NULL;
    bg_remote_options co = {.port = port};
    bg_remote_filter *cf = NULL;
    if (bg_remote_connect(&cr, &co) != BG_OK ||
        bg_remote_filter_open(&cf, cr, name, BG_REMOTE_BITMAP) != BG_OK)
        _exit(2);
    tu_batch b;
    tu_batch_init(&b, n);
    tu_batch_fill(&b, 1, 6, 0, n);
    long rounds = 0;
    for (;;) {
        struct pollfd p = {.fd = stop_fd, .events = POLLIN};
        if (poll(&p, 1, 0) > 0)
            break;
        int64_t got = bg_remote_filter_contains_many(cf, b.keys, b.lens, n, NULL);
        if (got == BG_ESTALE) {
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
    }
    _exit(rounds > 0 ? 0 : 3);
}

/* A sharded filter rebuilt five times (new shape, same shape) while another
 * handle adds and another process reads: no key is ever missing, though the
 * shards swap one after another; the seed cannot change; abort cancels
 * every shard's rebuild; one shard's cancelled cancels the rest; after a
 * commit lost part-way, abort cancels only this handle's shards. */
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

    int stop[2];
    TU_EQ_I(pipe(stop), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        sharded_reader(srv.port, "srb", SRC, stop[0]);

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
    TU_EQ_I(write(stop[1], "s", 1), 1);
    int status;
    TU_EQ_I(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("reader: exit status %d (1: a false negative)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
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
    sf_arm_after(BG__SCRIPT_REBUILD_COMMIT, BG__FAULT_LOSE_REQUEST, 2, 1);
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

    TU_EQ_I(bg_remote_filter_drop(a), BG_OK);
    TU_EQ_I(ts_count_keys(c, "*srb*"), 0);
    redisFree(c);
    bg_remote_filter_close(a);
    bg_remote_filter_close(w);
    bg_remote_free(r);
    bg_remote_free(rw);
}

int main(void)
{
    signal(SIGPIPE, SIG_DFL); /* the library must cope without SIG_IGN */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sharded_rebuild),
    };
    return cmocka_run_group_tests(tests, srv_setup, srv_teardown);
}
