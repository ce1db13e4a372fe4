/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared by the files of test_guard_remote (test_guard_remote.c,
 * guard_remote_sharded.c, guard_remote_module.c, guard_remote_faults.c):
 * bloomgate_guard with a remote filter against the redis-server that
 * test_guard_remote.c's group setup starts, the in-memory source, and the
 * rebuild checks that several backends' tests run. */
#ifndef BG_TEST_GUARD_REMOTE_TEST_H
#define BG_TEST_GUARD_REMOTE_TEST_H

#include "test_util.h"
#include "redis_server.h"
#include "guard_fixtures.h"

#define NKEYS 2000

extern ts_server srv; /* the plain server, started by the group's setup */
extern ms_source src; /* the source every guard here reads */

/* Options for a connection to s (short timeouts). */
bg_remote_options ropts(const ts_server *s);

/* A guard over the remote filter `name` (created and filled from src if
 * there is none); the test fails if it cannot be made. */
bg_guard *remote_guard(const bg_remote_options *ro, const char *name,
                       bg_remote_backend backend, uint64_t capacity);

/* g may contain each of keys <prefix>from..to-1. */
void all_present(bg_guard *g, const char *prefix, long from, long to);

/* test_guard_remote.c: a reader's stop flag and the errors of readers and
 * rebuild threads (each error also printed). */
extern atomic_int stop;
extern atomic_long bad;

/* Deletes keys p0..p99 from the source, then runs `rounds` rebuilds of a
 * while a reader thread gets the other keys through b: it must find every
 * one, and afterwards b must miss (nearly) all the deleted ones. */
void rebuilds_drop_deleted(bg_guard *a, bg_guard *b, int rounds);

/* bg_guard_rebuild(p) for pthread_create; an error counts in `bad`. */
void *rebuild_thread(void *p);

/* guard_remote_faults.c: the guard's rebuild of `name` cancelled halfway by
 * another client, and a failed rebuild's abort lost (their comments say
 * what must happen). */
void rebuild_taken_over(bg_guard *g, const bg_remote_options *ro, const char *name,
                        bg_remote_backend backend, const bg_remote_filter_options *shape);
void rebuild_abort_lost(bg_guard *g, const bg_remote_options *ro, const char *name,
                        bg_remote_backend backend, const bg_remote_filter_options *shape);

/* guard_remote_sharded.c: how many of keys <prefix>from..to-1 g's filter
 * says are absent. */
long absent_in(bg_guard *g, const char *prefix, long from, long to);

/* The tests of the other files. */
void sharded_rebuild(void **state);
void sharded_create(void **state);
void module_backend(void **state);
void module_creation_is_atomic(void **state);
void bitmap_lost_commit(void **state);
void module_lost_commit(void **state);

#endif
