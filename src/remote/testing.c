/* SPDX-License-Identifier: BSD-3-Clause */
/* The hooks of remote_testing.h. Compiled only into the testing archive
 * (bloomgate_remote_testing, with BG_TESTING), never into the libraries
 * that are installed: remote_testing.h says why. */
#include <stdatomic.h>

#include "remote_internal.h"

#ifndef BG_TESTING
#error "testing.c belongs to the testing archive only (compiled with BG_TESTING)"
#endif

/* NULL: zero-initialized. Atomic because a test arms it on one thread
 * while the guard's workers run scripts on others. */
static _Atomic(bg__remote_testing_fault_fn) script_fault;

void bg__remote_testing_set_script_fault(bg__remote_testing_fault_fn fn)
{
    atomic_store(&script_fault, fn);
}

int bg__remote_testing_script_fault(int idx)
{
    bg__remote_testing_fault_fn fn = atomic_load_explicit(&script_fault, memory_order_relaxed);
    return fn ? fn(idx) : BG__REMOTE_TESTING_FAULT_NONE;
}

int bg__remote_testing_lose_connection(bg_remote *r)
{
    if (r->cluster) {
        for (size_t i = 0; i < r->nnodes; i++)
            if (r->c && r->nodes[i].c == r->c)
                bg__cluster_node_close(r, i);
    } else if (r->c) {
        redisFree(r->c);
        r->c = NULL;
        r->broken = 1;
    }
    return bg__remote_fail(r, BG_ECONN, "connection lost (injected fault)");
}

uint64_t bg__remote_testing_redirects(const bg_remote *r)
{
    return r->testing.redirects;
}

uint64_t bg__remote_testing_connects(const bg_remote *r)
{
    return r->testing.connects;
}

void bg__remote_testing_set_no_fanout(bg_remote *r, bool on)
{
    r->testing.no_fanout = on;
}

void bg__remote_testing_set_bitmap_mode(bg_remote_filter *f, bg__remote_testing_bitmap_mode mode)
{
    if (f)
        f->testing_mode = mode;
}
