/* SPDX-License-Identifier: BSD-3-Clause */
/* The bloomgate command-line tool: saving a file whole, and the signals
 * that end the tool (signals.c; cli_save_new in cmd_create.c). */
#ifndef BG_CLI_SIGNALS_H
#define BG_CLI_SIGNALS_H

#include <signal.h>
#include <stdbool.h>

#include <bloomgate/bloomgate.h>

/* ---- saving ----------------------------------------------------------- */

/* bg_filter_save with SIGINT, SIGTERM, SIGHUP and SIGQUIT held back for its
 * duration, so that an interrupt cannot leave the temporary file behind:
 * the save finishes (or fails) and then the signal takes effect. Returns
 * as bg_filter_save; *err gets errno right after it. */
int cli_save(const bg_filter *f, const char *path, int *err);

/* Hold SIGINT, SIGTERM, SIGHUP and SIGQUIT back (the old mask into *old)
 * and let them through again: around a save, so that an interrupt lands
 * after the file is complete and no temporary file is left. */
void cli_hold_signals(sigset_t *old);
void cli_release_signals(const sigset_t *old);

/* Those signals, the ones that end the CLI. cli_handlers_install gives each
 * that is not ignored (nohup: it stays ignored) `handler`, without
 * SA_RESTART, keeping the old handlers in *h; cli_handlers_restore puts
 * them back. */
#define CLI_NENDING 4
extern const int cli_ending_signals[CLI_NENDING];
typedef struct cli_handlers {
    struct sigaction old[CLI_NENDING];
    bool installed[CLI_NENDING];
} cli_handlers;
void cli_handlers_install(cli_handlers *h, void (*handler)(int));
void cli_handlers_restore(const cli_handlers *h);

/* The same signals caught, for a command that must clean up before it
 * ends (rebuild cancels its rebuild in Redis): after cli_catch_signals the
 * first one only records itself in cli_caught_signal and interrupts a
 * blocking read (EINTR: no SA_RESTART); a second one ends the CLI at once,
 * in case the cleanup hangs. A signal
 * ignored from the start (nohup) stays ignored. cli_uncatch_signals puts the
 * old handlers back and, if one was caught, dies of it as if it had not
 * been (exit status 128 + N in a shell): flush stdout first.
 * cli_catching_signals tells producer.c's handler, which takes their place
 * while a command runs, to do the same. */
extern volatile sig_atomic_t cli_caught_signal;
extern volatile sig_atomic_t cli_catching_signals;
void cli_catch_signals(void);
void cli_uncatch_signals(void);

/* `create` without replacing: saves f to a temporary name beside path and
 * moves it there only if path does not exist (cmd_create.c). With force,
 * a plain crash-safe save. 0, or -1 (message printed). */
int cli_save_new(const bg_filter *f, const char *path, bool force);

#endif
