/* SPDX-License-Identifier: BSD-3-Clause */
/* Saving a file whole, and the signals that end the tool. */
#include "cli_signals.h"

#include <errno.h>
#include <string.h>

/* ---- saving ----------------------------------------------------------- */

const int cli_ending_signals[CLI_NENDING] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void cli_hold_signals(sigset_t *old)
{
    sigset_t hold;
    sigemptyset(&hold);
    for (size_t i = 0; i < CLI_NENDING; i++)
        sigaddset(&hold, cli_ending_signals[i]);
    sigprocmask(SIG_BLOCK, &hold, old);
}

void cli_handlers_install(cli_handlers *h, void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = 0; /* no SA_RESTART: a blocking read ends */
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < CLI_NENDING; i++) {
        h->installed[i] = false;
        if (sigaction(cli_ending_signals[i], NULL, &h->old[i]) == 0 &&
            h->old[i].sa_handler != SIG_IGN)
            h->installed[i] = sigaction(cli_ending_signals[i], &sa, NULL) == 0;
    }
}

void cli_handlers_restore(const cli_handlers *h)
{
    for (size_t i = 0; i < CLI_NENDING; i++)
        if (h->installed[i])
            sigaction(cli_ending_signals[i], &h->old[i], NULL);
}

void cli_release_signals(const sigset_t *old)
{
    sigprocmask(SIG_SETMASK, old, NULL);
}

volatile sig_atomic_t cli_caught_signal;
volatile sig_atomic_t cli_catching_signals;

static cli_handlers before_catch;

static void catch_signal(int sig)
{
    if (cli_caught_signal) { /* the second: die of it now */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    cli_caught_signal = sig;
}

void cli_catch_signals(void)
{
    cli_caught_signal = 0;
    cli_catching_signals = 1;
    cli_handlers_install(&before_catch, catch_signal);
}

void cli_uncatch_signals(void)
{
    cli_handlers_restore(&before_catch);
    cli_catching_signals = 0;
    int sig = cli_caught_signal;
    if (sig) {
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

int cli_save(const bg_filter *f, const char *path, int *err)
{
    sigset_t old;
    cli_hold_signals(&old);
    errno = 0;
    int rc = bg_filter_save(f, path);
    *err = errno;
    cli_release_signals(&old);
    return rc;
}
