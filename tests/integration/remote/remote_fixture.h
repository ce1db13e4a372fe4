/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared by the test_remote_*.c tests (remote_fixture.c): bloomgate_remote
 * against real redis-server processes (redis_server.h). The bitmap tests
 * share one plain server, `srv`, started by srv_setup as their group's
 * setup; the module tests start their own with bloomgate.so loaded. */
#ifndef BG_TEST_REMOTE_FIXTURE_H
#define BG_TEST_REMOTE_FIXTURE_H

#include "test_util.h"
#include "redis_server.h"

#include <bloomgate/remote.h>

extern ts_server srv; /* the shared plain server */

int srv_setup(void **state);
int srv_teardown(void **state);

/* A connection to s (the test fails if it does not connect). */
bg_remote *conn(const ts_server *s, uint32_t timeout_ms);

/* Keys first..first+n-1 of distinct set `set`, into b. */
void fill(tu_batch *b, uint64_t set, uint64_t first, size_t n);

/* f answers as lf does, key for key, for keys 0..n-1 of set 3 (lf's) and
 * 0..absent-1 of set 4 (not added). */
void agrees(bg_remote_filter *f, const bg_filter *lf, size_t n, size_t absent);

/* Keys 0..n-1 of random set `set` are all present in f. */
void expect_all(bg_remote_filter *f, uint64_t set, size_t n);

/* Adds keys first..first+n-1 (n a multiple of 100) of random set `set`
 * through f, to its rebuild when `rebuild`. */
void add_set(bg_remote_filter *f, uint64_t set, size_t first, size_t n, int rebuild);

/* Another process that adds during a rebuild (rebuild_adder), started and
 * waiting for the word. */
typedef struct adder {
    pid_t pid;
    int ready[2], go[2];
} adder;

/* Forks a process that opens `name`, says so, waits for a byte on
 * ad->go[1], then adds keys 0..n-1 of set 9 and exits 0 (1 on an error);
 * returns once it has opened the filter. */
void adder_start(adder *ad, int port, const char *name, bg_remote_backend backend, size_t n);

#endif
