/* SPDX-License-Identifier: BSD-3-Clause */
/* The bloomgate command-line tool: where keys come from. The key reader
 * (keys.c), a command whose output is the keys (producer.c), and the
 * progress line of long runs (progress.c). */
#ifndef BG_CLI_KEYS_H
#define BG_CLI_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Keys per call to bg_filter_add_many / bg_filter_contains_many: enough to
 * make the per-call cost vanish, few enough that the pointer arrays stay in
 * L1/L2. */
#define CLI_BATCH 4096u

/* The key reader's buffer starts at this size and grows, for a key that does
 * not fit, up to CLI_MAX_KEY + 1 bytes (the key and its separator). */
#define CLI_READ_BUFFER (1u << 20)

/* The longest key accepted on standard input, in bytes. A longer
 * one is an error: nothing is saved. docs/CLI.md states this value. */
#define CLI_MAX_KEY (16u << 20)

/* ---- keys ------------------------------------------------------------- */

/* Reads keys from a file descriptor in batches, in constant memory.
 *
 * HOW IT WORKS
 * One buffer (CLI_READ_BUFFER bytes) is filled with read(2); memchr finds
 * each separator ('\n', or '\0' with -0) and the key is handed out as a
 * pointer into the buffer, with no copy. cli_keys_next returns up to
 * CLI_BATCH such keys at a time; they stay valid until the next call, which
 * may move the unfinished last key to the front of the buffer before
 * reading more. A key that does not fit in the buffer doubles it, up to
 * CLI_MAX_KEY + 1 bytes; a longer key is an error.
 *
 * KEY RULES
 * A key is the bytes between two separators: every line is a key, the
 * empty line too, and the separator is not part of it (so "\r" before "\n"
 * is). The input's last key needs no separator after it, and a separator
 * at the very end does not start another key: "a\nb\n" and "a\nb" are both
 * the keys "a" and "b", "\n" is one empty key, and empty input is no key. */
typedef struct cli_keys {
    const void *keys[CLI_BATCH];
    size_t lens[CLI_BATCH];
    size_t count;         /* keys in the current batch */
    uint64_t total_keys;  /* keys handed out so far, this batch included */
    uint64_t bytes_read;  /* bytes read from fd so far */
    uint64_t input_bytes; /* bytes the input will have in all, 0 if unknown */

    int fd;
    const char *source; /* for messages: "standard input" unless set after begin */
    char sep;
    bool eof;
    char *buf;
    size_t cap, len, pos;
    int err;         /* after a failure: errno, or 0 for "key too long" */
} cli_keys;

/* Prepares to read fd (not closed by cli_keys_end). input_bytes is set when
 * fd is a regular file. -1 (message printed) if out of memory. */
int cli_keys_begin(cli_keys *r, int fd, char sep);
/* The next batch: returns the number of keys in r->keys/r->lens (> 0), 0 at
 * the end of the input, or -1 on failure (r->err; cli_keys_error prints
 * it). A signal caught by cli_catch_signals ends it: -1, r->err EINTR. */
int cli_keys_next(cli_keys *r);
/* Prints the failure of cli_keys_next: "bloomgate: CMD: SOURCE: ...";
 * nothing for EINTR (the command says it was interrupted). */
void cli_keys_error(const cli_keys *r, const char *cmd);
void cli_keys_end(cli_keys *r);

/* What add, remove and check do with each batch of keys: the keys are
 * valid during the call only, and `before` keys came in earlier batches.
 * Returns 0 to go on, or -1 to stop (after printing why). */
typedef int (*cli_batch_fn)(void *ctx, const void *const *keys, const size_t *lens, size_t n,
                            uint64_t before);

/* Hands every key to fn in batches of up to CLI_BATCH: the nargs arguments
 * when there are any, else the keys on standard input (separator sep), with
 * a progress line "bloomgate CMD PATH" on stderr unless quiet. Returns the
 * number of keys handed out, or -1 (message printed: a read error or a
 * key over the limit, or fn stopped). */
int64_t cli_keys_each(char **args, size_t nargs, char sep, const char *cmd, const char *path,
                      bool quiet, cli_batch_fn fn, void *ctx);
/* The same for the keys read from fd, named `source` in messages. */
int64_t cli_keys_each_fd(int fd, const char *source, char sep, const char *cmd, const char *path,
                         bool quiet, cli_batch_fn fn, void *ctx);

/* ---- producer: a command's output as the keys (producer.c) ------------- */

/* rebuild --command: `/bin/sh -c COMMAND`, its stdin /dev/null, its stdout
 * a pipe read through p->fd, its stderr the CLI's, in a process group of
 * its own; terminal signals that end the CLI meanwhile end it too.
 * cli_producer_start: 0, or -1 after printing "ABOUT: cannot run the
 * command: ...". cli_producer_end closes p->fd and reaps the command; with
 * `stop` it first ends it (SIGTERM, then SIGKILL) and returns -1 without a
 * message; otherwise it waits for it to exit and returns 0 if it exited
 * with status 0, else -1 after printing how it ended. Messages show the
 * command as given. */
typedef struct cli_producer {
    const char *command;
    pid_t pid;
    int fd;
} cli_producer;
int cli_producer_start(cli_producer *p, const char *command, const char *about);
int cli_producer_end(cli_producer *p, bool stop, const char *about);

/* ---- progress --------------------------------------------------------- */

/* A one-line progress report on stderr for long operations: count, rate,
 * and percentage and ETA when the total is known. Only when stderr is a
 * terminal and the caller is not quiet; redrawn at most every 100 ms (the
 * caller calls cli_progress_update once per batch, and the clock is read
 * there, not per key); cli_progress_end clears the line. */
typedef struct cli_progress {
    bool on;
    bool drawn;
    const char *label; /* e.g. "add users.bgf" */
    const char *unit;  /* e.g. "keys" */
    double start;
    double last;
} cli_progress;

void cli_progress_begin(cli_progress *p, const char *label, const char *unit, bool quiet);
/* count: units done; done/total: progress towards a known end (bytes, or
 * files), total 0 if unknown. */
void cli_progress_update(cli_progress *p, uint64_t count, uint64_t done, uint64_t total);
void cli_progress_end(cli_progress *p);

/* Seconds on the monotonic clock. */
double cli_now(void);

#endif
