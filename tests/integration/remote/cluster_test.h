/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared by the files of test_cluster (test_cluster.c, cluster_publish.c,
 * cluster_reshard.c): bloomgate_remote over a 3-master Redis Cluster that
 * test_cluster.c's group setup starts (tests/support/redis_cluster.h), its
 * connections and counts, and the tests that live in the other files. */
#ifndef BG_TEST_CLUSTER_TEST_H
#define BG_TEST_CLUSTER_TEST_H

#include "test_util.h"
#include "redis_server.h"
#include "redis_cluster.h"

#include <bloomgate/remote.h>

#include "remote/remote_internal.h" /* slots, the slot map, bg__remote_filter_drop; the
                                       testing build's counters (remote_testing.h) */

#define CL_N 3
extern ts_server cl[CL_N]; /* the masters, started by the group's setup */

#define N_KEYS 20000u
#define P 0.01

/* A cluster connection through cl[0] (the test fails if it does not connect). */
bg_remote *cconn(void);

/* How many of the masters hold a shard of the sharded filter `name`, by
 * the client's slot map. */
int masters_holding(const bg_remote *r, const char *name, uint32_t shards);

/* Keys matching `pattern` on every master. */
long long cluster_keys(const char *pattern);

/* How many of set `set` [first, first + count) the filter finds. */
int64_t found(bg_remote_filter *f, uint64_t set, uint64_t first, uint64_t count);

/* The tests of cluster_publish.c. */
void published_shards(void **state);
void shard_places(void **state);

/* The tests of cluster_reshard.c; master_fails_over leaves a master dead,
 * so it runs last. */
void reshard_while_clients_run(void **state);
void master_fails_over(void **state);

#endif
