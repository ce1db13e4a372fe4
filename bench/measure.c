/* SPDX-License-Identifier: BSD-3-Clause */
/* Measuring: passes of library calls, timed, and the figure they make.
 *
 * HOW A FIGURE IS MADE
 * Keys are made a window of --batch keys at a time into a buffer that stays
 * in cache, untimed (bench.h). One "pass" is one loop of library calls over
 * a key set, window by window, and its time is the sum of the
 * CLOCK_MONOTONIC intervals around the calls on each window; a pass is
 * repeated (an insert pass on a freshly cleared
 * filter each time, the clear untimed) until the passes add up to
 * --min-time seconds and there are at least three of them or they add up to
 * LONG_PASS_S (at most MAX_REPS passes), and the figure is the median pass
 * divided by its calls.
 * Every figure is therefore throughput: back-to-back calls on independent
 * keys, which the CPU may overlap, not the latency of one isolated call.
 * Scans of the whole array (statistics, union) are timed call by call
 * instead, beside plain loops over as many bytes (run.c, SCANS). */
#define _POSIX_C_SOURCE 200809L

#include <assert.h>

#include "bloomgate_bench.h"

/* Runs BODY once per window of c's keys, with `ptr`, `len` and `n` naming the
 * window, timing BODY alone; evaluates to the total seconds. */
#define TIMED_WINDOWS(c, BODY)                                                 \
    do {                                                                       \
        double timed_ = 0;                                                     \
        assert((c)->batch >= 1 && (c)->batch <= BENCH_WINDOW);                 \
        for (size_t at_ = 0; at_ < (c)->count; at_ += (c)->batch) {            \
            size_t n = (c)->count - at_ < (c)->batch ? (c)->count - at_ : (c)->batch; \
            bench_keys_window((c)->keys, at_, n);                              \
            const void *const *ptr = (c)->keys->ptr;                           \
            const size_t *len = (c)->keys->len;                                \
            double t0_ = bench_now();                                          \
            BODY;                                                              \
            timed_ += bench_now() - t0_;                                       \
        }                                                                      \
        return timed_;                                                         \
    } while (0)

double pass_insert_single(pass_ctx *c)
{
    bg_filter *f = c->f;
    TIMED_WINDOWS(c, for (size_t i = 0; i < n; i++) bg_filter_add(f, ptr[i], len[i]));
}

double pass_insert_batch(pass_ctx *c)
{
    TIMED_WINDOWS(c, bg_filter_add_many(c->f, ptr, len, n, c->results));
}

double pass_query_single(pass_ctx *c)
{
    const bg_filter *f = c->f;
    uint64_t hits = 0;
    c->hits = 0;
    TIMED_WINDOWS(c, {
        for (size_t i = 0; i < n; i++)
            hits += bg_filter_contains(f, ptr[i], len[i]) == 1;
        c->hits = hits;
    });
}

double pass_query_batch(pass_ctx *c)
{
    c->hits = 0;
    TIMED_WINDOWS(c, {
        int64_t r = bg_filter_contains_many(c->f, ptr, len, n, c->results);
        c->hits += r > 0 ? (uint64_t)r : 0;
    });
}

/* Removes: on a filter that holds the pass's keys (reset_filled), so each
 * call finds its key and decrements its counters. */
double pass_remove_single(pass_ctx *c)
{
    bg_filter *f = c->f;
    uint64_t removed = 0;
    c->hits = 0;
    TIMED_WINDOWS(c, {
        for (size_t i = 0; i < n; i++)
            removed += bg_filter_remove(f, ptr[i], len[i]) == BG_OK;
        c->hits = removed;
    });
}

double pass_remove_batch(pass_ctx *c)
{
    c->hits = 0;
    TIMED_WINDOWS(c, {
        int64_t r = bg_filter_remove_many(c->f, ptr, len, n, c->results);
        c->hits += r > 0 ? (uint64_t)r : 0;
    });
}

double pass_lb_insert(pass_ctx *c)
{
    struct bloom *b = c->lb;
    TIMED_WINDOWS(c, for (size_t i = 0; i < n; i++) bloom_add(b, ptr[i], (int)len[i]));
}

double pass_lb_query(pass_ctx *c)
{
    struct bloom *b = c->lb;
    uint64_t hits = 0;
    c->hits = 0;
    TIMED_WINDOWS(c, {
        for (size_t i = 0; i < n; i++)
            hits += bloom_check(b, ptr[i], (int)len[i]) == 1;
        c->hits = hits;
    });
}

double pass_hash_only(pass_ctx *c)
{
    uint64_t sum = 0;
    TIMED_WINDOWS(c, {
        for (size_t i = 0; i < n; i++) {
            bg_hash h;
            bg_hash_key(ptr[i], len[i], 0, &h);
            sum += h.h1 ^ h.h2;
        }
        c->hits = sum;
    });
}

double mean_len(bench_keys *ks)
{
    double total = 0;
    for (size_t at = 0; at < ks->count; at += BENCH_WINDOW) {
        size_t n = ks->count - at < BENCH_WINDOW ? ks->count - at : BENCH_WINDOW;
        bench_keys_window(ks, at, n);
        for (size_t i = 0; i < n; i++)
            total += (double)ks->len[i];
    }
    return ks->count ? total / (double)ks->count : 0;
}

/* bg_filter_clear and bloom_reset write every byte, so the first timed pass
 * finds every page of the array already faulted in, like the later ones. */
void reset_filter(pass_ctx *c)
{
    bg_filter_clear(c->f);
}

/* Empty the filter, then add the pass's keys (untimed), for a remove pass. */
void reset_filled(pass_ctx *c)
{
    bg_filter_clear(c->f);
    for (size_t at = 0; at < c->count; at += BENCH_WINDOW) {
        size_t n = c->count - at < BENCH_WINDOW ? c->count - at : BENCH_WINDOW;
        bench_keys_window(c->keys, at, n);
        bg_filter_add_many(c->f, c->keys->ptr, c->keys->len, n, NULL);
    }
}

void reset_lb(pass_ctx *c)
{
    bloom_reset(c->lb);
}

double measure(pass_fn pass, reset_fn reset, pass_ctx *c, double min_time)
{
    double t[MAX_REPS], total = 0;
    size_t reps = 0;
    while (reps < MAX_REPS) {
        if (reset)
            reset(c);
        t[reps] = pass(c);
        total += t[reps++];
        if (total >= min_time && (reps >= 3 || total >= LONG_PASS_S))
            break;
    }
    return bench_median(t, reps) * 1e9 / (double)c->count;
}
