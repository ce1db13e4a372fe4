/* SPDX-License-Identifier: BSD-3-Clause */
/* Lost requests and replies on demand, through the remote client's fault
 * hook (src/remote/remote_testing.h, FAULT INJECTION; script_fault.c): the
 * next `times` runs of one script, in this process, lose their request (the
 * script does not run) or their reply (it does); sf_arm_after lets some
 * runs pass first. A test disarms it when done. The hook exists only in the
 * testing build: a test that includes this links bg_test_script_fault,
 * which brings bloomgate_remote_testing and BG_TESTING. */
#ifndef BG_TEST_SCRIPT_FAULT_H
#define BG_TEST_SCRIPT_FAULT_H

#include "remote/remote_internal.h" /* BG__SCRIPT_*; remote_testing.h: BG__REMOTE_TESTING_* */

/* From now on, after `skip` runs of script `idx` that pass, the next
 * `times` get fault `kind` (BG__REMOTE_TESTING_LOSE_REQUEST or _REPLY). */
void sf_arm_after(int idx, int kind, int skip, int times);

/* The next `times` runs of script `idx` get fault `kind`. */
void sf_arm(int idx, int kind, int times);

/* Disarms it; returns how many faults were injected since sf_arm. */
int sf_disarm(void);

#endif
