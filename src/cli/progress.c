/* SPDX-License-Identifier: BSD-3-Clause */
/* The progress line (cli.h, "progress"). */
#include "cli_keys.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Redraw interval: at most ten lines a second. */
#define REDRAW_SECONDS 0.1
/* Nothing is drawn during the first REDRAW_SECONDS either, so that short
 * runs leave no trace. */

double cli_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void cli_progress_begin(cli_progress *p, const char *label, const char *unit, bool quiet)
{
    p->on = !quiet && isatty(STDERR_FILENO);
    p->drawn = false;
    p->label = label;
    p->unit = unit;
    p->start = cli_now();
    p->last = p->start;
}

/* "12.3M" style: three significant digits and an SI suffix. */
static void fmt_si(char *buf, size_t size, double v)
{
    static const char suffix[] = " kMGTP";
    int i = 0;
    while (v >= 1000.0 && i < 5) {
        v /= 1000.0;
        i++;
    }
    if (i == 0)
        snprintf(buf, size, "%.0f", v);
    else
        snprintf(buf, size, "%.*f%c", v < 10 ? 2 : v < 100 ? 1 : 0, v, suffix[i]);
}

static void fmt_duration(char *buf, size_t size, double s)
{
    if (s < 0 || s > 359999)
        s = 359999;
    unsigned t = (unsigned)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, size, "%u:%02u:%02u", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, size, "%u:%02u", t / 60, t % 60);
}

void cli_progress_update(cli_progress *p, uint64_t count, uint64_t done, uint64_t total)
{
    if (!p->on)
        return;
    double now = cli_now();
    if (now - p->last < REDRAW_SECONDS)
        return;
    p->last = now;
    double elapsed = now - p->start;
    char n[16], rate[16];
    fmt_si(n, sizeof n, (double)count);
    fmt_si(rate, sizeof rate, elapsed > 0 ? (double)count / elapsed : 0);
    /* \r and "erase to end of line" (ECMA-48 EL), so a shorter line does
     * not leave the tail of a longer one. */
    if (total > 0 && done <= total && done > 0) {
        double frac = (double)done / (double)total;
        char eta[16];
        fmt_duration(eta, sizeof eta, elapsed / frac - elapsed);
        fprintf(stderr, "\r%s: %s %s, %s %s/s, %.0f%%, ETA %s\033[K", p->label, n, p->unit,
                rate, p->unit, frac * 100.0, eta);
    } else {
        fprintf(stderr, "\r%s: %s %s, %s %s/s\033[K", p->label, n, p->unit, rate, p->unit);
    }
    fflush(stderr);
    p->drawn = true;
}

void cli_progress_end(cli_progress *p)
{
    if (p->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    p->drawn = false;
}
