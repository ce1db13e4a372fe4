/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate add URL: the keys go to Redis in round trips of at most
 * CLI_REMOTE_BATCH keys. Each round trip is atomic on the server, the whole
 * run is not: after a failure the message says how many keys went in
 * before it, and whether the failed round trip may have gone in in part. */
#include "cli_remote_impl.h"
#include "cli.h"
#include "cli_output.h"
#include "cli_keys.h"

#include <stdio.h>

typedef struct remote_adder {
    cli_remote *rf;
    uint64_t done;  /* keys sent in batches that succeeded */
    int64_t added;  /* keys that were new */
    int failed_rc;  /* the status of the failed round trip, 0 if none failed */
} remote_adder;

/* Adds one batch of keys (a cli_batch_fn) in round trips. */
static int add_remote_batch(void *ctx, const void *const *keys, const size_t *lens, size_t n,
                            uint64_t before)
{
    remote_adder *a = ctx;
    cli_remote *rf = a->rf;
    (void)before;
    for (size_t at = 0; at < n; at += CLI_REMOTE_BATCH) {
        size_t count = n - at < CLI_REMOTE_BATCH ? n - at : CLI_REMOTE_BATCH;
        int64_t rc = bg_remote_filter_add_many(rf->f, keys + at, lens + at, count, NULL);
        if (rc < 0) {
            cli_remote_error(rf->url.display, "cannot add", (int)rc, rf->r);
            a->failed_rc = (int)rc;
            return -1;
        }
        a->done += count;
        a->added += rc;
    }
    return 0;
}

/* After a failed add: what may have become of the failed round trip's
 * keys, for the message, or NULL if none of them was added (one atomic
 * script that refused) or no round trip failed. */
static const char *failed_batch(const remote_adder *a)
{
    if (a->failed_rc == 0) /* no round trip failed (the keys could not be read) */
        return NULL;
    if (a->failed_rc == BG_ECONN)
        return "the round trip cut off by a broken connection may or may not have been";
    if (bg_remote_filter_shards(a->rf->f) > 1)
        return "the failed round trip may have been in part: a sharded filter's shards take "
               "their parts of it one by one";
    if (bg_remote_filter_backend(a->rf->f) == BG_REMOTE_MODULE)
        return "the failed round trip may have been in part: the module takes the keys before "
               "the one it fails on";
    return NULL;
}

int cli_remote_add(const char *url, char **args, size_t nargs, char sep, bool quiet, bool json)
{
    remote_adder a = {0};
    if (cli_remote_open(url, &a.rf) != 0)
        return CLI_EXIT_ERROR;
    cli_remote *rf = a.rf;
    const char *disp = rf->url.display;
    int64_t read = cli_keys_each(args, nargs, sep, "add", disp, quiet, add_remote_batch, &a);
    if (read < 0) {
        const char *partial = failed_batch(&a);
        if (a.done == 0 && !partial)
            cli_error("%s: nothing was added", disp);
        else if (a.done == 0)
            cli_error("%s: no round trip was added whole (%s)", disp, partial);
        else
            cli_error("%s: the first %llu keys were added, the rest were not%s%s%s", disp,
                      (unsigned long long)a.done, partial ? " (" : "", partial ? partial : "",
                      partial ? ")" : "");
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    /* The summary: items and capacity from the server. */
    bg_remote_filter_stats s;
    int rc = bg_remote_filter_stats_get(rf->f, &s);
    if (rc != BG_OK) {
        cli_remote_error(disp, "cannot read the statistics", rc, rf->r);
        cli_error("%s: all %llu keys were added", disp, (unsigned long long)read);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    uint64_t items = s.items, capacity = s.capacity;
    if (json) {
        printf("{\"url\":");
        cli_json_string(stdout, disp);
        printf(",\"keys\":%llu,\"new\":%lld,\"items\":%llu,\"capacity\":%llu}\n",
               (unsigned long long)read, (long long)a.added, (unsigned long long)items,
               (unsigned long long)capacity);
    } else if (!quiet) {
        fprintf(stderr, "bloomgate: %s: %llu key%s read, %lld new; %llu item%s\n", disp,
                (unsigned long long)read, read == 1 ? "" : "s", (long long)a.added,
                (unsigned long long)items, items == 1 ? "" : "s");
    }
    if (!quiet && capacity > 0 && items > capacity)
        fprintf(stderr, "bloomgate: %s: warning: %llu items exceed the capacity %llu\n", disp,
                (unsigned long long)items, (unsigned long long)capacity);
    cli_remote_close(rf);
    if (json && cli_stdout_close() != 0)
        return CLI_EXIT_ERROR;
    return CLI_EXIT_OK;
}
