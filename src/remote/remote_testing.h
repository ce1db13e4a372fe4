/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal to bloomgate_remote: the hooks that tests and the bench use and
 * the library itself never does. Not API.
 *
 * WHY THEY EXIST
 * Some of what the tests must check cannot be provoked or seen from outside
 * with a real server and socket:
 *   - a request or a reply lost at a chosen script (FAULT INJECTION below):
 *     the rebuild, publish and stage protocols must survive both, and a
 *     real network fault cannot be timed to one command;
 *   - how many redirections a cluster client followed and how many connects
 *     it tried (COUNTERS below): the tests' only view of resharding and of
 *     cluster.c's HELD-DOWN MASTERS;
 * and the bench measures the script variant the library uses against the
 * ones it rejected (BITMAP MODES below), one of which skips the generation
 * check: no user of the library may be able to pick it.
 *
 * HOW THEY STAY OUT OF THE LIBRARY
 * Everything here exists only when compiled with BG_TESTING. The archive
 * bloomgate_remote_testing is: the library's own sources plus testing.c (the
 * accessors), built only with the tests or the bench and never installed.
 * The production libraries (libbloomgate_remote.so and .a) are compiled
 * without it: the structs have no hook fields and the macros below are
 * constants or nothing, so no hook is there to reach and no check costs a
 * branch. In the testing build the cost is one relaxed atomic load per
 * script and a counter per connect or redirection. scripts/check_test_hooks.sh
 * (ctest layering.test_hooks) checks that no bg__*_testing_* symbol is in the
 * production libraries and that the testing archives have theirs.
 *
 * BG_TESTING is part of the testing archive's usage requirements: a program
 * that links it is compiled with it too, so that it and the library agree on
 * the structs' layout. A program links either the testing archive or a
 * production library, never both. */
#ifndef BG_REMOTE_TESTING_H
#define BG_REMOTE_TESTING_H

#ifdef BG_TESTING

#include <stdbool.h>
#include <stdint.h>

#include <bloomgate/remote.h>

/* FAULT INJECTION
 * bg__remote_script (connection.c) asks the hook, when one is set, before
 * each script: BG__REMOTE_TESTING_FAULT_NONE runs it;
 * BG__REMOTE_TESTING_LOSE_REQUEST breaks the connection without sending (the
 * script did not run); BG__REMOTE_TESTING_LOSE_REPLY runs it, then breaks
 * the connection and drops the reply (it ran). The caller gets BG_ECONN
 * either way, as after a real network fault, and the next call reconnects.
 * The hook is process-wide (any thread's scripts ask it) and `idx` is the
 * script's BG__SCRIPT_* index. */
enum {
    BG__REMOTE_TESTING_FAULT_NONE,
    BG__REMOTE_TESTING_LOSE_REQUEST,
    BG__REMOTE_TESTING_LOSE_REPLY
};
typedef int (*bg__remote_testing_fault_fn)(int idx);

/* Sets the hook (NULL: none, the start). */
void bg__remote_testing_set_script_fault(bg__remote_testing_fault_fn fn);

/* The hook's verdict for script idx (connection.c): one atomic load. */
int bg__remote_testing_script_fault(int idx);

/* Breaks the connection the last command used, as a network fault would;
 * returns BG_ECONN with errstr set. */
int bg__remote_testing_lose_connection(bg_remote *r);

/* COUNTERS, and the bench's switch, per connection handle. */
typedef struct bg__remote_testing_conn {
    uint64_t redirects; /* cluster: MOVED/ASK/TRYAGAIN followed */
    uint64_t connects;  /* cluster: connects tried */
    bool no_fanout;     /* send a sharded batch's parts one by one */
} bg__remote_testing_conn;

uint64_t bg__remote_testing_redirects(const bg_remote *r);
uint64_t bg__remote_testing_connects(const bg_remote *r);

/* The bench's sequential baseline for PIPELINING ACROSS MASTERS
 * (connection.c): with `on`, a sharded filter's batch on r sends its parts
 * one at a time, each waiting for its reply. */
void bg__remote_testing_set_no_fanout(bg_remote *r, bool on);

/* BITMAP MODES: how a bitmap handle's batches reach the bits (bitmap.c, HOW
 * IT WORKS; the figures: docs/PERFORMANCE.md, Remote filters). The library
 * always uses the first. */
typedef enum bg__remote_testing_bitmap_mode {
    BG__REMOTE_TESTING_LUA_SETBIT = 0,   /* checked script, SETBIT/GETBIT per probe */
    BG__REMOTE_TESTING_LUA_BITFIELD = 1, /* checked script, one BITFIELD per batch */
    BG__REMOTE_TESTING_RAW_BITFIELD = 2, /* BITFIELD without the check (unsafe: a
                                            stale handle writes a dropped filter's bits) */
} bg__remote_testing_bitmap_mode;

/* Sets the mode of handle f, a bitmap filter's (other kinds ignore it). */
void bg__remote_testing_set_bitmap_mode(bg_remote_filter *f, bg__remote_testing_bitmap_mode mode);

/* The hook points in the library's code. */
#define BG__REMOTE_TESTING_COUNT(r, counter) ((void)(r)->testing.counter++)
#define BG__REMOTE_TESTING_NO_FANOUT(r) ((r)->testing.no_fanout)
#define BG__REMOTE_TESTING_BITFIELD(f) ((f)->testing_mode != BG__REMOTE_TESTING_LUA_SETBIT)
#define BG__REMOTE_TESTING_RAW(f) ((f)->testing_mode == BG__REMOTE_TESTING_RAW_BITFIELD)

#else /* production: no hook */

#define BG__REMOTE_TESTING_COUNT(r, counter) ((void)0)
#define BG__REMOTE_TESTING_NO_FANOUT(r) 0
#define BG__REMOTE_TESTING_BITFIELD(f) 0
#define BG__REMOTE_TESTING_RAW(f) 0

#endif

#endif
