/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate check URL: the keys go to Redis in round trips of at most
 * CLI_REMOTE_BATCH keys, each one script (or one BF.MEXISTS) that holds the
 * server meanwhile; cmd_check.c prints the answers as it does a file's. */
#include "cli_remote_impl.h"

int64_t cli_remote_contains_many(cli_remote *rf, const void *const *keys, const size_t *lens,
                                 size_t n, uint8_t *results)
{
    int64_t total = 0;
    for (size_t at = 0; at < n; at += CLI_REMOTE_BATCH) {
        size_t count = n - at < CLI_REMOTE_BATCH ? n - at : CLI_REMOTE_BATCH;
        int64_t rc = bg_remote_filter_contains_many(rf->f, keys + at, lens + at, count,
                                                    results + at);
        if (rc < 0) {
            cli_remote_error(rf->url.display, "cannot check", (int)rc, rf->r);
            return -1;
        }
        total += rc;
    }
    return total;
}
