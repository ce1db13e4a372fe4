/* SPDX-License-Identifier: BSD-3-Clause */
/* The cluster behind redis_cluster.h. */
#include "redis_cluster.h"

void tc_spawn(ts_server *s)
{
    char conf[600];
    snprintf(conf, sizeof conf, "%s", tu_tmp_file(&s->dir, "nodes.conf"));
    const char *const extra[] = {"--cluster-enabled", "yes", "--cluster-config-file", conf,
                                 "--cluster-node-timeout", "5000", NULL};
    ts_spawn_with(s, extra);
}

int tc_base_port(int n)
{
    uint64_t st = (uint64_t)getpid() * 7919u + (uint64_t)time(NULL);
    for (int tries = 0; tries < 200; tries++) {
        int base = 23000 + (int)(tu_next(&st) % (uint64_t)(1000 - n));
        int ok = 1;
        for (int i = 0; ok && i < n; i++) {
            for (int bus = 0; ok && bus <= 10000; bus += 10000) {
                int fd = socket(AF_INET, SOCK_STREAM, 0);
                struct sockaddr_in a = {.sin_family = AF_INET,
                                        .sin_port = htons((uint16_t)(base + i + bus))};
                a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
                close(fd);
            }
        }
        if (ok)
            return base;
    }
    fail_msg("no free ports in 23000-23999");
    return -1;
}

static int tc_state_ok(int port)
{
    ts_server s = {.port = port};
    redisContext *c = ts_raw(&s);
    redisReply *r = redisCommand(c, "CLUSTER INFO");
    int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return ok;
}

void tc_start(ts_server *cl, int n)
{
    int base = tc_base_port(n);
    const char *mod = getenv("BLOOMGATE_MODULE");
    char cmd[1024];
    int len = snprintf(cmd, sizeof cmd, "redis-cli --cluster create");
    for (int i = 0; i < n; i++) {
        memset(&cl[i], 0, sizeof cl[i]);
        if (mod && *mod)
            snprintf(cl[i].module, sizeof cl[i].module, "%s", mod);
        tu_tmpdir_make(&cl[i].dir, "cluster");
        cl[i].port = base + i;
        tc_spawn(&cl[i]);
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " 127.0.0.1:%d", cl[i].port);
    }
    snprintf(cmd + len, sizeof cmd - (size_t)len,
             " --cluster-replicas 0 --cluster-yes > %s 2>&1", tu_tmp_file(&cl[0].dir, "create"));
    if (system(cmd) != 0)
        fail_msg("redis-cli --cluster create failed");
    for (int t = 0; t < 1000; t++) {
        int ok = 1;
        for (int i = 0; i < n; i++)
            ok = ok && tc_state_ok(cl[i].port);
        if (ok)
            return;
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    fail_msg("the cluster did not reach cluster_state:ok");
}

static long long tc_repl_field(redisContext *c, const char *name)
{
    redisReply *r = redisCommand(c, "INFO replication");
    long long v = -1;
    if (r && r->type == REDIS_REPLY_STRING) {
        char want[64];
        snprintf(want, sizeof want, "\r\n%s:", name);
        const char *at = strstr(r->str, want);
        if (at)
            v = strtoll(at + strlen(want), NULL, 10);
    }
    if (r)
        freeReplyObject(r);
    return v;
}

static int tc_reply_has(redisContext *c, const char *cmd, const char *what)
{
    redisReply *r = redisCommand(c, cmd);
    int has = r && r->type == REDIS_REPLY_STRING && strstr(r->str, what);
    if (r)
        freeReplyObject(r);
    return has;
}

void tc_add_replica(ts_server *rep, ts_server *cl, int n, int master)
{
    memset(rep, 0, sizeof *rep);
    snprintf(rep->module, sizeof rep->module, "%s", cl[master].module);
    tu_tmpdir_make(&rep->dir, "cluster");
    rep->port = tc_base_port(1);
    tc_spawn(rep);
    redisContext *m = ts_raw(&cl[master]), *c = ts_raw(rep);
    char mid[64], rid[64], known[64];
    redisReply *r = redisCommand(m, "CLUSTER MYID");
    assert_true(r && r->type == REDIS_REPLY_STRING);
    snprintf(mid, sizeof mid, "%s", r->str);
    freeReplyObject(r);
    r = redisCommand(c, "CLUSTER MYID");
    assert_true(r && r->type == REDIS_REPLY_STRING);
    snprintf(rid, sizeof rid, "%s", r->str);
    freeReplyObject(r);
    r = redisCommand(c, "CLUSTER MEET 127.0.0.1 %d", cl[master].port);
    assert_true(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    snprintf(known, sizeof known, "cluster_known_nodes:%d\r\n", n + 1);
    TC_WAIT(tc_reply_has(c, "CLUSTER INFO", known) &&
                tc_reply_has(c, "CLUSTER INFO", "cluster_state:ok"),
            "the new node knows the whole cluster");
    r = redisCommand(c, "CLUSTER REPLICATE %s", mid);
    if (!r || r->type != REDIS_REPLY_STATUS)
        fail_msg("CLUSTER REPLICATE: %s", r && r->str ? r->str : "no reply");
    freeReplyObject(r);
    char as_replica[160];
    snprintf(as_replica, sizeof as_replica, "slave %s", mid);
    for (int i = 0; i < n; i++) {
        redisContext *o = ts_raw(&cl[i]);
        TC_WAIT(tc_reply_has(o, "CLUSTER NODES", rid) &&
                    tc_reply_has(o, "CLUSTER NODES", as_replica),
                "every master knows the replica");
        redisFree(o);
    }
    /* The link first: before its first sync, both offsets may read 0. */
    TC_WAIT(tc_reply_has(c, "INFO replication", "master_link_status:up"),
            "the replica's link is up");
    TC_WAIT(tc_repl_field(c, "slave_repl_offset") == tc_repl_field(m, "master_repl_offset"),
            "the replica has caught up");
    redisFree(m);
    redisFree(c);
}

void tc_stop(ts_server *cl, int n)
{
    for (int i = 0; i < n; i++)
        ts_stop(&cl[i]);
}
