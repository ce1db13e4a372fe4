/* The measurement behind docs/REMOTE.md's choice of script: items/s of
 * batch-of-100 adds and queries on a local redis-server, for
 *   lua-setbit    checked script, SETBIT / GETBIT per probe (a query stops
 *                 at a key's first clear bit): used, it measured fastest
 *   lua-bitfield  checked script, one BITFIELD / BITFIELD_RO per batch
 *   raw-bitfield  bare BITFIELD / BITFIELD_RO, no generation check (unsafe:
 *                 the reference for what the check costs)
 *   module        the module backend: BF.MADD / BF.MEXISTS on bloomgate.so,
 *                 when BLOOMGATE_MODULE names it (the server then loads it)
 * all in the same run, against the same server, modes interleaved, best of
 * ROUNDS.
 *   [BLOOMGATE_MODULE=.../bloomgate.so] remote_bench [keys per round, default 200000] [rounds, default 3] */
#include <stdbool.h>

#include "test_util.h"
#include "redis_server.h"

#include "remote/remote_internal.h"

#define BATCH 100

#define MODES 4 /* the three bitmap modes, then the module backend */
static const char *const mode_name[MODES] = {"lua-setbit", "lua-bitfield", "raw-bitfield",
                                             "module"};

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 200000;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    n -= n % BATCH;
    const char *module = getenv("BLOOMGATE_MODULE");
    if (module != NULL && *module == '\0')
        module = NULL;
    int modes = module ? MODES : MODES - 1;
    ts_server s;
    ts_start(&s, module);
    bg_remote *r;
    bg_remote_options ro = {.port = s.port};
    if (bg_remote_connect(&r, &ro) != BG_OK)
        return 1;
    double best[MODES][2] = {{0}};
    tu_batch b;
    tu_batch_init(&b, BATCH);
    for (int round = 0; round < rounds; round++)
        for (int mode = 0; mode < modes; mode++) {
            char name[32];
            snprintf(name, sizeof name, "bench%d", mode);
            bg_remote_filter *f;
            bool on_module = mode == MODES - 1;
            bg_remote_filter_options o = {
                .backend = on_module ? BG_REMOTE_MODULE : BG_REMOTE_BITMAP,
                .capacity = 1000000,
                .error_rate = 0.01,
            };
            if (bg_remote_filter_create(&f, r, name, &o) != BG_OK)
                return 1;
            if (!on_module)
                bg__remote_filter_set_mode(f, (bg__bitmap_mode)mode);
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
            printf("round %d %-13s add %9.0f items/s  contains %9.0f items/s\n", round,
                   mode_name[mode], add, get);
            if (add > best[mode][0])
                best[mode][0] = add;
            if (get > best[mode][1])
                best[mode][1] = get;
            bg_remote_filter_drop(f);
            bg_remote_filter_close(f);
        }
    printf("best of %d rounds, %zu keys, batch %d, capacity 1e6, p = 0.01:\n", rounds, n, BATCH);
    for (int mode = 0; mode < modes; mode++)
        printf("  %-13s add %9.0f items/s  contains %9.0f items/s\n", mode_name[mode],
               best[mode][0], best[mode][1]);
    tu_batch_free(&b);
    bg_remote_free(r);
    ts_stop(&s);
    return 0;
}
