/* SPDX-License-Identifier: BSD-3-Clause */
/* The monotonic clock in milliseconds, for deadlines, leases and TTLs
 * (remote client, guard). Internal; inline, so nothing to export.
 * CLOCK_MONOTONIC: wall-clock steps (NTP, an operator's `date`) neither
 * expire nor extend anything. */
#ifndef BG_COMMON_CLOCK_H
#define BG_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t bg__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#endif
