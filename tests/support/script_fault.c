/* SPDX-License-Identifier: BSD-3-Clause */
/* The fault hook behind script_fault.h. */
#include "script_fault.h"

#include <stdatomic.h>

static atomic_int sf_script, sf_kind, sf_skip, sf_left, sf_fired;

static int sf_inject(int idx)
{
    if (idx != atomic_load(&sf_script) || atomic_load(&sf_left) <= 0)
        return BG__REMOTE_TESTING_FAULT_NONE;
    if (atomic_load(&sf_skip) > 0) {
        atomic_fetch_sub(&sf_skip, 1);
        return BG__REMOTE_TESTING_FAULT_NONE;
    }
    atomic_fetch_sub(&sf_left, 1);
    atomic_fetch_add(&sf_fired, 1);
    return atomic_load(&sf_kind);
}

void sf_arm_after(int idx, int kind, int skip, int times)
{
    atomic_store(&sf_script, idx);
    atomic_store(&sf_skip, skip);
    atomic_store(&sf_kind, kind);
    atomic_store(&sf_fired, 0);
    atomic_store(&sf_left, times);
    bg__remote_testing_set_script_fault(sf_inject);
}

void sf_arm(int idx, int kind, int times)
{
    sf_arm_after(idx, kind, 0, times);
}

int sf_disarm(void)
{
    bg__remote_testing_set_script_fault(NULL);
    atomic_store(&sf_left, 0);
    return atomic_load(&sf_fired);
}
