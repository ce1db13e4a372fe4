/* SPDX-License-Identifier: BSD-3-Clause */
/* The users of bloomgate-seen: the random numbers, every user's history
 * (the ground truth, in-process) and the in-process filters. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "seen.h"

/* ---- random numbers ----------------------------------------------------------- */

uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in [0, n) (Lemire's multiply-shift; bias below 2^-32 n). */
uint32_t below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(((splitmix(s) >> 32) * (uint64_t)n) >> 32);
}

double unit(uint64_t *s)
{
    return (double)(splitmix(s) >> 11) * 0x1.0p-53;
}

/* ---- the users -------------------------------------------------------------- */

static size_t key_format(char *buf, uint32_t id)
{
    char tmp[KEY_MAX];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + id % 10u);
        id /= 10u;
    } while (id);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    return n;
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The formatted keys of ids[0..n) into buf (n x KEY_MAX bytes). */
void keys_format(const uint32_t *ids, size_t n, char *buf, const void **keys, size_t *lens)
{
    for (size_t i = 0; i < n; i++) {
        keys[i] = buf + i * KEY_MAX;
        lens[i] = key_format(buf + i * KEY_MAX, ids[i]);
    }
}

/* Every user's history: `history` distinct ids, a function of (seed, u)
 * only, into w->hist and the ground truth. */
void world_build(world *w, const config *c)
{
    *w = (world){.cfg = c};
    size_t pairs = (size_t)c->users * c->history;
    w->hist = malloc(pairs * sizeof *w->hist);
    if (!w->hist || pairset_init(&w->truth, pairs) != 0)
        die("out of memory for %zu (user, article) pairs", pairs);
    for (uint32_t u = 0; u < c->users; u++) {
        uint64_t rng = c->seed ^ ((uint64_t)u * UINT64_C(0xd1b54a32d192ed03));
        uint32_t *h = w->hist + (size_t)u * c->history;
        for (uint32_t j = 0; j < c->history;) {
            uint32_t a = below(&rng, c->articles);
            if (pairset_insert(&w->truth, u, a) == 1)
                h[j++] = a;
        }
    }
}

/* One in-process filter per user, holding the user's history. */
void world_filters(world *w)
{
    const config *c = w->cfg;
    if (w->filters)
        return;
    w->filters = calloc(c->users, sizeof *w->filters);
    char *buf = malloc((size_t)c->history * KEY_MAX);
    const void **keys = malloc(c->history * sizeof *keys);
    size_t *lens = malloc(c->history * sizeof *lens);
    if (!w->filters || !buf || !keys || !lens)
        die("out of memory for %" PRIu32 " filters", c->users);
    bg_filter_options o = {.variant = c->variant,
                           .capacity = c->capacity,
                           .error_rate = c->error_rate,
                           .concurrency = BG_SINGLE_WRITER};
    for (uint32_t u = 0; u < c->users; u++) {
        int rc = bg_filter_new(&w->filters[u], &o);
        if (rc != BG_OK)
            die("bg_filter_new: %s", bg_strerror(rc));
        keys_format(w->hist + (size_t)u * c->history, c->history, buf, keys, lens);
        int64_t n = bg_filter_add_many(w->filters[u], keys, lens, c->history, NULL);
        if (n < 0)
            die("bg_filter_add_many: %s", bg_strerror((int)n));
    }
    free(buf);
    free(keys);
    free(lens);
}

void world_free(world *w)
{
    if (w->filters)
        for (uint32_t u = 0; u < w->cfg->users; u++)
            bg_filter_free(w->filters[u]);
    free(w->filters);
    free(w->hist);
    pairset_free(&w->truth);
}
