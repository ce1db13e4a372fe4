/* SPDX-License-Identifier: BSD-3-Clause */
/* A real Redis Cluster of n masters for the remote tests and the remote
 * benchmark (redis_cluster.c): redis-server processes on consecutive free
 * loopback ports in 23000-23999 (cluster bus: port + 10000), each in its
 * own temporary directory, joined with `redis-cli --cluster create`, stopped by tc_stop
 * (or, like every ts_server, when the test process dies). tc_add_replica
 * gives one master a replica, for failover. */
#ifndef BG_TEST_REDIS_CLUSTER_H
#define BG_TEST_REDIS_CLUSTER_H

#include "redis_server.h"

/* Restarts s (a cluster member) on its port and directory. */
void tc_spawn(ts_server *s);

/* n consecutive ports in 23000-23999 free, with their bus ports. */
int tc_base_port(int n);

/* Starts cl[0..n-1] as one cluster and waits until every master says ok.
 * Each loads bloomgate.so when $BLOOMGATE_MODULE names it (the CMake tests
 * set it when the module is built), for the module backend's tests. */
void tc_start(ts_server *cl, int n);

/* Polls `ok` every 20 ms for up to 20 s; fails the test with `what`. */
#define TC_WAIT(ok, what)                                                                       \
    do {                                                                                        \
        int tc_ok_ = 0;                                                                         \
        for (int tc_t_ = 0; tc_t_ < 1000 && !(tc_ok_ = (ok)); tc_t_++) {                         \
            struct timespec tc_ts_ = {0, 20000000};                                             \
            nanosleep(&tc_ts_, NULL);                                                           \
        }                                                                                       \
        if (!tc_ok_)                                                                            \
            fail_msg("timed out waiting until %s", what);                                       \
    } while (0)

/* Starts rep as a new node of the cluster cl[0..n-1], a replica of
 * cl[master], and waits until every node knows it as such and it has
 * caught up with everything the master has written. */
void tc_add_replica(ts_server *rep, ts_server *cl, int n, int master);

/* Stops every member (ts_stop). */
void tc_stop(ts_server *cl, int n);

#endif
