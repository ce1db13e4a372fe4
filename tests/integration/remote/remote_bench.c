/* SPDX-License-Identifier: BSD-3-Clause */
/* The measurement behind the bitmap backend's script choice (docs/DESIGN.md,
 * "Remote client") and docs/PERFORMANCE.md's
 * "Remote filters" table: items/s of batch-of-100 adds and queries, for
 *   lua-setbit    checked script, SETBIT / GETBIT per probe (a query stops
 *                 at a key's first clear bit): used, it measured fastest
 *   lua-bitfield  checked script, one BITFIELD / BITFIELD_RO per batch
 *   raw-bitfield  bare BITFIELD / BITFIELD_RO, no generation check (unsafe:
 *                 the reference for what the check costs)
 *   module        the module backend: BF.INSERT / BF.MEXISTS on bloomgate.so,
 *                 when BLOOMGATE_MODULE names it (the server then loads it)
 *   module-rebuilding  the same while a rebuild is pending: adds go to both
 *                 filters (docs/REMOTE.md, Module backend: rebuild)
 * on one local redis-server, and a filter sharded 8 ways (lua-setbit), its
 * parts pipelined (the default) or sent one by one, on that server and on
 * a 3-master Redis Cluster the program also starts ("cluster" as third
 * argument; needs redis-cli). All in the same run, modes interleaved, best
 * of ROUNDS.
 *   [BLOOMGATE_MODULE=.../bloomgate.so] remote_bench [keys per round, default 200000]
 *       [rounds, default 3] [cluster] */
#include <stdbool.h>

#include "test_util.h"
#include "redis_server.h"
#include "redis_cluster.h"

#include "remote/remote_internal.h" /* remote_testing.h: the script modes, the fanout switch */

#define BATCH 100
#define SHARDS 8
#define CLUSTER_N 3

enum { LUA_SETBIT, LUA_BITFIELD, RAW_BITFIELD, MODULE, MODULE_REBUILDING, SHARDED, SHARDED_SEQ,
       CL_SHARDED, CL_SHARDED_SEQ, MODES };
static const char *const mode_name[MODES] = {
    "lua-setbit", "lua-bitfield", "raw-bitfield", "module", "module-rebuilding", "sharded-8",
    "sharded-8-seq", "cluster-sharded-8", "cluster-sharded-8-seq"};

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 200000;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    bool cluster = argc > 3 && strcmp(argv[3], "cluster") == 0;
    n -= n % BATCH;
    const char *module = getenv("BLOOMGATE_MODULE");
    if (module != NULL && *module == '\0')
        module = NULL;
    ts_server s;
    ts_start(&s, module);
    bg_remote *r, *rc = NULL;
    bg_remote_options ro = {.port = s.port};
    if (bg_remote_connect(&r, &ro) != BG_OK)
        return 1;
    ts_server cl[CLUSTER_N];
    if (cluster) {
        tc_start(cl, CLUSTER_N);
        bg_remote_options co = {.port = cl[0].port, .cluster = 1};
        if (bg_remote_connect(&rc, &co) != BG_OK)
            return 1;
    }
    double best[MODES][2] = {{0}};
    tu_batch b;
    tu_batch_init(&b, BATCH);
    for (int round = 0; round < rounds; round++)
        for (int mode = 0; mode < MODES; mode++) {
            bool on_module = mode == MODULE || mode == MODULE_REBUILDING;
            if ((on_module && !module) || (mode >= CL_SHARDED && !cluster))
                continue;
            bg_remote *on = mode >= CL_SHARDED ? rc : r;
            bg__remote_testing_set_no_fanout(on, mode == SHARDED_SEQ || mode == CL_SHARDED_SEQ);
            char name[32];
            snprintf(name, sizeof name, "bench%d", mode);
            bg_remote_filter *f;
            bg_remote_filter_options o = {
                .backend = on_module ? BG_REMOTE_MODULE : BG_REMOTE_BITMAP,
                .capacity = 1000000,
                .error_rate = 0.01,
                .shards = mode >= SHARDED ? SHARDS : 0,
            };
            if (bg_remote_filter_create(&f, on, name, &o) != BG_OK) {
                fprintf(stderr, "%s: create: %s\n", mode_name[mode], bg_remote_errstr(on));
                return 1;
            }
            if (mode <= RAW_BITFIELD)
                bg__remote_testing_set_bitmap_mode(f, (bg__remote_testing_bitmap_mode)mode);
            if (mode == MODULE_REBUILDING) {
                /* A rebuild pending (begun through another handle): every
                 * add also goes to the rebuild, through a script. */
                bg_remote_filter *rb;
                bg_remote_filter_options no = {.capacity = 1000000, .error_rate = 0.01};
                if (bg_remote_filter_open(&rb, r, name, BG_REMOTE_MODULE) != BG_OK ||
                    bg_remote_filter_rebuild_begin(rb, &no) != BG_OK) {
                    fprintf(stderr, "%s: rebuild: %s\n", mode_name[mode], bg_remote_errstr(r));
                    return 1;
                }
                bg_remote_filter_close(rb); /* the rebuild stays pending: its lease */
            }
            double t0 = tu_now();
            for (size_t i = 0; i < n; i += BATCH) {
                tu_batch_fill(&b, 0, 1, i, BATCH);
                if (bg_remote_filter_add_many(f, b.keys, b.lens, BATCH, NULL) < 0)
                    return 1;
            }
            double t1 = tu_now();
            /* Half present, half absent keys. */
            for (size_t i = 0; i < n; i += BATCH) {
                tu_batch_fill(&b, 0, (i / BATCH) % 2 ? 1 : 2, i, BATCH);
                if (bg_remote_filter_contains_many(f, b.keys, b.lens, BATCH, NULL) < 0)
                    return 1;
            }
            double t2 = tu_now();
            double add = (double)n / (t1 - t0), get = (double)n / (t2 - t1);
            printf("round %d %-21s add %9.0f items/s  contains %9.0f items/s\n", round,
                   mode_name[mode], add, get);
            if (add > best[mode][0])
                best[mode][0] = add;
            if (get > best[mode][1])
                best[mode][1] = get;
            bg__remote_filter_drop(f);
            bg_remote_filter_close(f);
        }
    printf("best of %d rounds, %zu keys, batch %d, capacity 1e6, p = 0.01:\n", rounds, n, BATCH);
    for (int mode = 0; mode < MODES; mode++)
        if (best[mode][0] > 0)
            printf("  %-21s add %9.0f items/s  contains %9.0f items/s\n", mode_name[mode],
                   best[mode][0], best[mode][1]);
    tu_batch_free(&b);
    bg_remote_close(r);
    bg_remote_close(rc);
    if (cluster)
        tc_stop(cl, CLUSTER_N);
    ts_stop(&s);
    return 0;
}
