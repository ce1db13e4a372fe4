/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate rebuild URL: bg_remote_filter_rebuild_begin, a rebuild_add_many per batch
 * of keys, then one commit that swaps the new filter in (per shard for a
 * sharded filter). Readers see the old filter until then, and adds from
 * other clients reach both. Any failure before the commit cancels the
 * rebuild, leaving the filter as it was.
 *
 * With --command the CLI starts the source itself once begin has returned
 * (producer.c), reads its output as it reads stdin, and commits only if it
 * exited with status 0.
 *
 * An interrupt (SIGINT, SIGTERM, SIGHUP, SIGQUIT) before the commit is
 * caught (cli_catch_signals): the reading stops, --command's command is
 * ended, the rebuild is cancelled, and then the CLI dies of the signal. A
 * second one ends it at once, in case Redis does not answer the cancel.
 * One that comes during the commit or after it stops nothing: the rebuild
 * is done, the CLI says so and exits 0, so that a job runner does not take
 * a committed rebuild for a failed one (and run it again).
 *
 * LIMITATIONS
 * SIGKILL, or a second interrupt, leaves the rebuild pending, every add
 * writing twice, until its lease runs out or someone runs `rebuild
 * --abort`. */
#include "cli_remote_impl.h"
#include "cli.h"
#include "cli_options.h"
#include "cli_output.h"
#include "cli_keys.h"
#include "cli_signals.h"

#include <stdio.h>
#include <string.h>

/* What in `a` does not apply to backend b; NULL if all of it does. */
static const char *rebuild_args_error(bg_remote_backend b, const cli_remote_rebuild_args *a)
{
    const bg_sizing *g = &a->given;
    bool sized = g->n || g->p != 0 || g->m || g->k;
    if (b == BG_REMOTE_BITMAP && !sized && !a->expansion && !a->nonscaling)
        return NULL; /* the same shape */
    if (b == BG_REMOTE_MODULE && (g->m || g->k))
        return "?backend=module is sized by -n and -p only (the module picks m and k): drop "
               "-m and -k";
    if (b == BG_REMOTE_MODULE && (!g->n || g->p == 0))
        return "?backend=module: give the new filter's -n (capacity) and -p (error rate); "
               "Redis does not report a module filter's error rate, so its shape cannot be kept";
    cli_remote_create_args ca = {
        .given = *g, .expansion = a->expansion, .nonscaling = a->nonscaling};
    return cli_remote_create_args_error(b, &ca);
}

typedef struct rebuilder {
    cli_remote *rf;
    double lease_s;
    bool gone;       /* the rebuild is no longer this handle's: nothing to cancel */
    bool committing; /* a failed commit may have swapped some shards already */
    bool committed;  /* the new filter is current: nothing left to cancel */
} rebuilder;

static void rebuild_error(rebuilder *b, const char *what, int rc)
{
    const char *disp = b->rf->url.display;
    if (rc == BG_ESTALE) {
        b->gone = true;
        cli_error("%s: %s: the rebuild was cancelled meanwhile (by 'rebuild --abort', a push, "
                  "a re-creation of the filter, or its lease of %g s running out between two "
                  "batches)",
                  disp, what, b->lease_s);
    } else if (rc == BG_ENOTFOUND) {
        b->gone = true;
        cli_error("%s: %s: the filter was dropped meanwhile", disp, what);
    } else {
        cli_remote_error(disp, what, rc, b->rf->r);
    }
}

/* After a failure: cancels the rebuild, unless it is gone already (on a
 * handle without a rebuild of its own, abort cancels whichever rebuild is
 * pending: maybe another client's). */
static void rebuild_cancel(rebuilder *b)
{
    const char *disp = b->rf->url.display;
    if (b->gone) {
        if (!b->committing)
            cli_error("%s: nothing of this rebuild was committed", disp);
        return;
    }
    int rc = bg_remote_filter_rebuild_abort(b->rf->f);
    if (rc == BG_OK || rc == BG_ENOTFOUND) {
        cli_error(b->committing ? "%s: the rest of the rebuild was cancelled"
                                : "%s: the rebuild was cancelled: the filter is as it was",
                  disp);
        return;
    }
    cli_remote_error(disp, "cannot cancel the rebuild", rc, b->rf->r);
    cli_error("%s: readers still see the old filter; the rebuild stays pending (adds write "
              "twice) until its lease of %g s runs out, or: bloomgate rebuild --abort URL",
              disp, b->lease_s);
}

static int rebuild_batch(void *ctx, const void *const *keys, const size_t *lens, size_t count,
                         uint64_t before)
{
    rebuilder *b = ctx;
    (void)before;
    if (cli_caught_signal)
        return -1; /* rebuild_run says so */
    for (size_t at = 0; at < count; at += CLI_REMOTE_BATCH) {
        size_t n = count - at < CLI_REMOTE_BATCH ? count - at : CLI_REMOTE_BATCH;
        int64_t rc = bg_remote_filter_rebuild_add_many(b->rf->f, keys + at, lens + at, n, NULL);
        if (rc < 0) {
            rebuild_error(b, "cannot rebuild", (int)rc);
            return -1;
        }
    }
    return 0;
}

/* rebuild --abort: this handle began no rebuild, so the library cancels
 * whichever is pending (a rebuilder that died, say). */
static int rebuild_abort_pending(cli_remote *rf, bool quiet, bool json)
{
    const char *disp = rf->url.display;
    int rc = bg_remote_filter_rebuild_abort(rf->f);
    if (rc != BG_OK && rc != BG_ENOTFOUND) {
        cli_remote_error(disp, "cannot cancel the rebuild", rc, rf->r);
        cli_remote_close(rf);
        return CLI_EXIT_ERROR;
    }
    if (json) {
        printf("{\"url\":");
        cli_json_string(stdout, disp);
        printf(",\"cancelled\":%s}\n", rc == BG_OK ? "true" : "false");
    } else if (!quiet) {
        fprintf(stderr, "bloomgate: %s: %s\n", disp,
                rc == BG_OK ? "the pending rebuild was cancelled" : "no rebuild was pending");
    }
    cli_remote_close(rf);
    if (json && cli_stdout_close() != 0)
        return CLI_EXIT_ERROR;
    return CLI_EXIT_OK;
}

static void print_rebuilt(const cli_remote *rf, const bg_remote_filter_stats *s, int64_t read,
                          const cli_remote_rebuild_args *a)
{
    const char *disp = rf->url.display;
    bool module = s->backend == BG_REMOTE_MODULE;
    /* A sharded filter has a generation per shard, none of its own (0). */
    if (a->json) {
        printf("{\"url\":");
        cli_json_string(stdout, disp);
        printf(",\"keys\":%lld,\"items\":%llu,\"capacity\":%llu", (long long)read,
               (unsigned long long)s->items, (unsigned long long)s->capacity);
        if (module)
            printf(",\"backend\":\"module\",\"layers\":%u,\"bytes\":%llu", s->layers,
                   (unsigned long long)s->bytes);
        else
            printf(",\"bits\":%llu,\"hashes\":%u,\"seed\":%llu", (unsigned long long)s->bits,
                   s->hashes, (unsigned long long)s->seed);
        if (s->generation)
            printf(",\"generation\":%llu", (unsigned long long)s->generation);
        printf("}\n");
    } else if (!a->quiet) {
        fprintf(stderr, "bloomgate: rebuilt %s: %lld key%s read; now %llu item%s", disp,
                (long long)read, read == 1 ? "" : "s", (unsigned long long)s->items,
                s->items == 1 ? "" : "s");
        if (!module)
            fprintf(stderr, ", m = %llu bits, k = %u", (unsigned long long)s->bits, s->hashes);
        if (s->generation)
            fprintf(stderr, " (generation %llu)", (unsigned long long)s->generation);
        fputc('\n', stderr);
    }
    if (!a->quiet && s->capacity > 0 && s->items > s->capacity)
        fprintf(stderr, "bloomgate: %s: warning: %llu items exceed the capacity %llu (rebuild "
                        "with a larger -n)\n",
                disp, (unsigned long long)s->items, (unsigned long long)s->capacity);
}

/* Whether a signal that ends the CLI came meanwhile (cli_catch_signals):
 * says so. The rebuild is then cancelled, and the CLI dies of it after. */
static bool interrupted(const char *disp)
{
    int sig = cli_caught_signal;
    if (!sig)
        return false;
    cli_error("%s: rebuild: interrupted by signal %d (%s)", disp, sig, strsignal(sig));
    return true;
}

/* The rebuild itself, from begin to the report, on b->rf; an exit status.
 * Signals are caught meanwhile: one that comes before the commit cancels
 * the rebuild (a pipeline's producer killed by the same Ctrl-C ends its
 * output early, which must not be committed). */
static int rebuild_run(rebuilder *b, bg_remote_backend backend, const cli_remote_rebuild_args *a)
{
    cli_remote *rf = b->rf;
    const char *disp = rf->url.display;
    const bg_sizing *g = &a->given;
    bool resize = g->n || g->p != 0 || g->m || g->k;
    bg_remote_filter_options o = {
        .backend = backend,
        .capacity = g->n,
        .error_rate = g->p,
        .bits = g->m,
        .hashes = g->k,
        /* A key's probes, and its shard, come from the seed: a rebuild with
         * another one would be another filter (remote.h refuses it for a
         * sharded one). The module has none (0). */
        .seed = bg_remote_filter_seed(rf->f),
        .expansion = a->expansion,
        .nonscaling = a->nonscaling,
    };
    int rc = bg_remote_filter_rebuild_begin(rf->f, resize ? &o : NULL);
    if (rc != BG_OK) {
        if (rc == BG_EEXIST)
            cli_error("%s: cannot rebuild: another rebuild is pending (another client's, or one "
                      "whose rebuilder stopped); it expires with its lease (%g s by default) "
                      "unless committed, or cancel it now: bloomgate rebuild --abort URL",
                      disp, BG_REMOTE_REBUILD_LEASE_MS / 1e3);
        else if (rc == BG_ETOOBIG)
            cli_error("%s: cannot rebuild: the filter (or each shard) would need more than %llu "
                      "bits (512 MiB), the most a bitmap filter has",
                      disp, (unsigned long long)BG_REMOTE_MAX_BITS);
        else if (resize && (rc == BG_EINVAL || rc == BG_EOVERFLOW || rc == BG_EUNDERDET)) {
            char why[200];
            cli_sizing_explain(BG_VARIANT_STANDARD, g, rc, why, sizeof why);
            cli_error("%s: cannot rebuild: %s", disp, why);
        } else
            cli_remote_error(disp, "cannot rebuild", rc, rf->r);
        return CLI_EXIT_ERROR;
    }
    if (interrupted(disp)) {
        rebuild_cancel(b);
        return CLI_EXIT_ERROR;
    }

    /* The keys are read only now that begin has returned: another client's
     * add before it reached the old filter only, so the new one has that key
     * only if the source, read from here on, holds it (remote.h, REBUILD).
     * A pipeline's producer may have read its source already; --command's
     * starts only now, and says whether it listed every key (exit 0). */
    int64_t read;
    if (a->command) {
        cli_producer prod;
        if (cli_producer_start(&prod, a->command, disp) != 0) {
            rebuild_cancel(b);
            return CLI_EXIT_ERROR;
        }
        read = cli_keys_each_fd(prod.fd, "the command's output", a->sep, "rebuild", disp,
                                a->quiet, rebuild_batch, b);
        if (cli_producer_end(&prod, read < 0 || cli_caught_signal, disp) != 0)
            read = -1;
    } else {
        read = cli_keys_each(a->keys, a->nkeys, a->sep, "rebuild", disp, a->quiet,
                             rebuild_batch, b);
    }
    if (interrupted(disp)) {
        rebuild_cancel(b);
        return CLI_EXIT_ERROR;
    }
    if (read == 0)
        /* Most likely the source failed (a pipeline's producer that died
         * prints nothing): swapping in an empty filter would answer "absent"
         * for every key. */
        cli_error("%s: cannot rebuild: no keys were read, and the filter would be left empty "
                  "(to empty it on purpose: bloomgate create --force URL ...)",
                  disp);
    if (read <= 0) {
        rebuild_cancel(b);
        return CLI_EXIT_ERROR;
    }

    rc = bg_remote_filter_rebuild_commit(rf->f);
    /* BG_ECONN: the request or its reply was lost, so the swap may or may
     * not have happened. A retry is safe either way: it commits now, or
     * finds this rebuild committed and answers BG_OK (remote.h,
     * bg_remote_filter_rebuild_commit); the handle reconnects first. */
    if (rc == BG_ECONN)
        rc = bg_remote_filter_rebuild_commit(rf->f);
    if (rc != BG_OK) {
        b->committing = true;
        rebuild_error(b, "cannot commit the rebuild", rc);
        cli_error("%s: not committed, or on a sharded filter only some shards: each shard is "
                  "complete, old or new, so no key is missing",
                  disp);
        rebuild_cancel(b);
        return CLI_EXIT_ERROR;
    }
    b->committed = true;

    bg_remote_filter_stats s;
    rc = bg_remote_filter_stats_get(rf->f, &s);
    if (rc != BG_OK) {
        cli_remote_error(disp, "rebuilt, but cannot read the statistics", rc, rf->r);
        return CLI_EXIT_ERROR;
    }
    print_rebuilt(rf, &s, read, a);
    return CLI_EXIT_OK;
}

int cli_remote_rebuild(const char *url, const cli_remote_rebuild_args *a)
{
    _Static_assert(CLI_MAX_LEASE_MS == BG_REMOTE_MAX_REBUILD_LEASE_MS, "--lease's bound");
    cli_url u;
    if (cli_url_parse(url, &u) != 0)
        return CLI_EXIT_ERROR;
    bg_remote_backend backend = (bg_remote_backend)u.backend;
    const char *bad = a->cancel ? NULL : rebuild_args_error(backend, a);
    cli_url_free(&u);
    if (bad)
        return cli_usage_error(&cli_cmd_rebuild, "%s", bad);

    uint64_t lease_ms = a->lease_ms ? a->lease_ms : BG_REMOTE_REBUILD_LEASE_MS;
    rebuilder b = {.lease_s = (double)lease_ms / 1e3};
    if (cli_remote_open(url, &b.rf) != 0)
        return CLI_EXIT_ERROR;
    cli_remote *rf = b.rf;
    if (a->cancel)
        return rebuild_abort_pending(rf, a->quiet, a->json);
    if (a->lease_ms)
        (void)bg_remote_filter_set_rebuild_lease(rf->f, a->lease_ms); /* range checked */
    cli_catch_signals();
    int code = rebuild_run(&b, backend, a);
    if (code == CLI_EXIT_OK && a->json && cli_stdout_close() != 0)
        code = CLI_EXIT_ERROR;
    fflush(stdout);
    if (b.committed && cli_caught_signal) {
        /* It came during the commit or after: it stopped nothing, and the
         * exit status is the rebuild's, done, not "killed". */
        int sig = cli_caught_signal;
        cli_caught_signal = 0;
        cli_error("%s: rebuild: signal %d (%s) came after the commit: the rebuild is done",
                  rf->url.display, sig, strsignal(sig));
    }
    cli_remote_close(rf);
    cli_uncatch_signals(); /* dies of a signal caught before the commit */
    return code;
}
