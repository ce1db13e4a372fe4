/* The bloomgate command-line tool: what its source files share.
 *
 * Not API: nothing here is installed. The tool uses only the public headers
 * of the library (<bloomgate/...>), like any other program, and is linked
 * against the static library.
 *
 * CONVENTIONS
 * Each subcommand is one file (cmd_<name>.c) that fills one cli_command.
 * A subcommand's run function returns the process's exit status:
 * CLI_EXIT_OK, CLI_EXIT_ABSENT (check, and remove --strict) or CLI_EXIT_ERROR. Helpers that
 * can fail print their own message (cli_error) and return -1, so that a
 * caller only has to pass the failure up. Every message starts with
 * "bloomgate: " and names the file it is about. */
#ifndef BG_CLI_H
#define BG_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include <bloomgate/bloomgate.h>

/* Exit statuses (docs/CLI.md, EXIT STATUS). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_ABSENT = 1, /* check, remove --strict: some key is definitely absent */
    CLI_EXIT_ERROR = 2,  /* any error, including usage errors */
};

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

/* ---- subcommands ------------------------------------------------------ */

typedef struct cli_command {
    const char *name;
    const char *summary; /* one line for `bloomgate --help` */
    const char *usage;   /* the synopsis lines, each starting "bloomgate NAME" */
    const char *help;    /* everything after the synopsis, for NAME --help */
    int (*run)(int argc, char **argv);
} cli_command;

extern const cli_command cli_cmd_calc;
extern const cli_command cli_cmd_create;
extern const cli_command cli_cmd_add;
extern const cli_command cli_cmd_remove;
extern const cli_command cli_cmd_check;
extern const cli_command cli_cmd_info;
extern const cli_command cli_cmd_merge;
extern const cli_command cli_cmd_intersect;
extern const cli_command cli_cmd_bench;
extern const cli_command cli_cmd_demo;

/* Prints the command's full help on stdout (for --help); returns
 * CLI_EXIT_OK, or CLI_EXIT_ERROR if stdout cannot be written. */
int cli_help(const cli_command *cmd);

/* Prints "bloomgate NAME: <message>", the synopsis and a hint at --help on
 * stderr; returns CLI_EXIT_ERROR. For usage errors (bad flag, missing
 * argument). */
int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Turns what getopt_long returned for a bad option ('?': unknown option or
 * ambiguous abbreviation of one of `longs`; ':': missing value, as every
 * option string starts with ':') into a usage error naming the option.
 * Returns CLI_EXIT_ERROR. */
struct option;
int cli_bad_option(const cli_command *cmd, int c, char **argv, const struct option *longs);

/* The options of the commands that take only these: -f/--force (when
 * allow_force), -q/--quiet, --json, -h/--help. Parses argv from optind 0
 * into *out (all false first); returns -1 when the caller goes on with the
 * operands at argv[optind..], or the exit status to return (--help was
 * answered, or a usage error was printed). */
typedef struct cli_simple_flags {
    bool force, quiet, json;
} cli_simple_flags;
int cli_parse_simple_flags(const cli_command *cmd, bool allow_force, int argc, char **argv,
                           cli_simple_flags *out);

/* ---- messages --------------------------------------------------------- */

/* "bloomgate: <message>\n" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "bloomgate: PATH: <what>: <problem>\n", where <problem> is bg_strerror(status)
 * or, for BG_EIO, strerror(err) (pass errno as it was right after the
 * failing call). `what` (e.g. "cannot save") may be NULL; it is only printed
 * for BG_EIO, whose cause alone ("No such file or directory") does not say
 * which step failed. */
void cli_file_error(const char *path, const char *what, int status, int err);

/* ---- numbers ---------------------------------------------------------- */

/* Strict parsers for option values: the whole string must be the number.
 * On failure they print "bloomgate: FLAG: 'TEXT' <problem>" and return -1.
 *
 * cli_parse_count: a whole number in [min, max], written as digits
 *   ("10000000") or in decimal scientific notation that is a whole number
 *   ("1e7", "2.5e6"). No sign, no spaces, no suffixes.
 * cli_parse_rate: a decimal in the open interval (0, 1), e.g. "0.01", "1e-3".
 * cli_parse_seed: any 64-bit value, in decimal or as 0x followed by at most
 *   16 hex digits. */
int cli_parse_count(const char *flag, const char *text, uint64_t min, uint64_t max,
                    uint64_t *out);
int cli_parse_rate(const char *flag, const char *text, double *out);
int cli_parse_seed(const char *flag, const char *text, uint64_t *out);

/* ---- output ----------------------------------------------------------- */

/* A write buffer over a file descriptor: one write(2) per CLI_READ_BUFFER
 * bytes instead of a stdio call per key. The first write error is kept in
 * `err` (an errno value) and later writes are dropped; cli_out_close
 * reports it. */
typedef struct cli_out {
    int fd;
    int err;
    char *buf;
    size_t len;
    size_t cap;
} cli_out;

/* Allocates the buffer. -1 (message printed) if out of memory. */
int cli_out_open(cli_out *o, int fd);
/* Writes what is buffered. 0, or -1 with o->err set. */
int cli_out_flush(cli_out *o);
/* Flushes and frees; returns 0, or -1 after printing
 * "bloomgate: standard output: <strerror>". */
int cli_out_close(cli_out *o);
void cli_out_slow(cli_out *o, const void *p, size_t n);
void cli_out_printf(cli_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline void cli_out_write(cli_out *o, const void *p, size_t n)
{
    if (o->cap - o->len >= n) {
        if (n > 0) {
            memcpy(o->buf + o->len, p, n);
            o->len += n;
        }
        return;
    }
    cli_out_slow(o, p, n);
}

static inline void cli_out_byte(cli_out *o, char c)
{
    if (o->len < o->cap)
        o->buf[o->len++] = c;
    else
        cli_out_slow(o, &c, 1);
}

/* A JSON string: quotes, escapes, and U+FFFD for each byte that is not part
 * of valid UTF-8 (JSON text must be UTF-8). */
void cli_out_json_string(cli_out *o, const void *s, size_t len);
/* The same into a stdio stream. */
void cli_json_string(FILE *fp, const char *s);

/* The shortest "%.*g" that reads back as the same double; "null" for NaN
 * and infinities (JSON has no such numbers). buf holds at least 32 bytes. */
const char *cli_fmt_double(char buf[32], double v);

/* Flushes stdout; returns 0, or -1 after printing the write error. Every
 * subcommand that prints through stdio calls it before returning success. */
int cli_stdout_close(void);

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

/* ---- sizing options (calc, create) ------------------------------------ */

/* Parses the value of -n, -p, -m or -k (c) into *s. -1 (message printed). */
int cli_sizing_option(int c, const char *arg, bg_sizing *s);
/* NULL if the known fields of *s are a combination bg_sizing_solve can
 * solve, else what is wrong with it (for a usage error). */
const char *cli_sizing_given_error(const bg_sizing *s);
/* Why bg_sizing_solve (or bg_filter_new) refused `given` for variant v with
 * status rc, in words that name the option at fault. */
void cli_sizing_explain(bg_variant v, const bg_sizing *given, int rc, char *buf, size_t size);
/* "1.17 KiB": binary units, three significant digits. */
void cli_fmt_bytes(char *buf, size_t size, uint64_t bytes);

/* Reads a variant name for --variant; -1 (message printed) if unknown. */
int cli_parse_variant(const char *text, bg_variant *out);

/* ---- scalable filters (create, info) ---------------------------------- */

/* The JSON fields that describe a scalable filter's growth
 * (bg_filter_scaling), without braces or a trailing comma: shared by create
 * and info. */
void cli_print_scaling_json(FILE *fp, const bg_filter_scaling *sc);

/* ---- remote filters (url.c, remote.c, cmd_*_remote.c) ------------------ */

/* A remote filter named by a URL (docs/CLI.md, "Remote filters"):
 *
 *   redis://[[USER]:PASSWORD@]HOST[:PORT]/NAME[?backend=bitmap|module&timeout=MS]
 *
 * HOST is an IPv4 address, a host name, or an IPv6 address in brackets;
 * PORT defaults to 6379. NAME (the filter's name, not a database number)
 * and the password are percent-decoded. `redis+cluster://HOST:PORT/NAME`
 * names a filter on a Redis Cluster (HOST:PORT a seed node; more seeds may
 * follow, separated by ',', into `seeds`), and `shards=S`
 * (2..BG_REMOTE_MAX_SHARDS, bitmap backend) makes create split the filter
 * into S sub-filters, one per hash slot; other subcommands find the shards
 * by themselves. */
typedef enum cli_url_backend {
    CLI_URL_BITMAP = 1, /* BG_REMOTE_BITMAP */
    CLI_URL_MODULE = 2, /* BG_REMOTE_MODULE */
} cli_url_backend;

typedef struct cli_url {
    char *host;          /* without brackets */
    int port;
    char *username;      /* NULL: none */
    char *password;      /* NULL: none */
    char *name;          /* decoded, non-empty */
    cli_url_backend backend;
    uint32_t timeout_ms; /* 0: the library's defaults */
    bool cluster;        /* redis+cluster://: HOST:PORT is a seed node of a cluster */
    char *seeds;         /* cluster: the seed nodes after the first, "H:P,H:P"; or NULL */
    uint32_t shards;     /* ?shards=S for create (bitmap backend); 0: unsharded */
    char *display;       /* the URL for messages, with the password as "***" */
} cli_url;

/* True if `word` names a remote filter rather than a file: it starts with
 * "redis://" or "redis+cluster://". Everything else is a path. */
bool cli_is_url(const char *word);

/* Parses `text` into *out. 0, or -1 after printing what is wrong with the
 * URL (never the password). Allocates; free with cli_url_free. */
int cli_url_parse(const char *text, cli_url *out);
void cli_url_free(cli_url *u);

/* For a subcommand that takes no remote filter: prints "URL: <why>" (or
 * what is wrong with the URL) and returns CLI_EXIT_ERROR. */
int cli_url_refuse(const char *text, const char *why);

/* The subcommands' remote halves: remote.c, which they share, and
 * cmd_<name>_remote.c beside each cmd_<name>.c. Without remote support
 * compiled in (BG_BUILD_REMOTE=OFF) remote_disabled.c takes their place:
 * each prints "built without remote support" and fails. Functions
 * returning int return an exit status; cli_remote_open and
 * cli_remote_contains_many return -1 after printing why. */
typedef struct cli_remote cli_remote;

/* Connects and opens the existing filter named by `url`. Allocates; free
 * with cli_remote_close (NULL allowed). */
int cli_remote_open(const char *url, cli_remote **out);
void cli_remote_close(cli_remote *rf);
/* The URL for messages (password hidden). Owned by rf: dead after
 * cli_remote_close. */
const char *cli_remote_display(const cli_remote *rf);
/* As bg_filter_contains_many, in round trips of at most CLI_REMOTE_BATCH
 * keys (check). The count of maybe-present keys, or -1 (message printed). */
int64_t cli_remote_contains_many(cli_remote *rf, const void *const *keys, const size_t *lens,
                                 size_t n, uint8_t *results);

/* add URL [KEY...]: the keys (the arguments, else standard input with
 * separator sep) in round trips of at most CLI_REMOTE_BATCH keys, then the
 * summary. */
int cli_remote_add(const char *url, char **args, size_t nargs, char sep, bool quiet, bool json);

/* What `create URL` was given; cli_remote_create checks what applies to
 * the URL's backend (usage errors otherwise). */
typedef struct cli_remote_create_args {
    bg_sizing given;
    bg_variant variant;        /* 0: not given */
    uint64_t seed;
    bool seed_given;
    uint32_t expansion;        /* 0: not given */
    bool nonscaling;
    const char *other_scaling; /* a scalable-only option given that no backend takes */
    bool force, quiet, json;
} cli_remote_create_args;
int cli_remote_create(const char *url, const cli_remote_create_args *a);
int cli_remote_info(const char *url, bool json);
/* push FILE URL, pull URL FILE (cmd_push.c, cmd_pull.c). */
int cli_remote_push(const char *path, const char *url, bool quiet, bool json);
int cli_remote_pull(const char *url, const char *path, bool force, bool quiet, bool json);

/* What `rebuild URL` was given (cmd_rebuild.c). cli_remote_rebuild checks
 * what applies to the URL's backend (usage errors otherwise). */
typedef struct cli_remote_rebuild_args {
    bg_sizing given;     /* all 0: keep the shape (bitmap) */
    uint32_t expansion;  /* module; 0: not given */
    bool nonscaling;     /* module */
    uint64_t lease_ms;   /* 0: the library's, BG_REMOTE_REBUILD_LEASE_MS */
    bool cancel;         /* --abort: cancel the pending rebuild, read no keys */
    char **keys;         /* the KEY arguments; none: standard input or command */
    const char *command; /* --command: the keys are this command's output */
    size_t nkeys;
    char sep;
    bool quiet, json;
} cli_remote_rebuild_args;
int cli_remote_rebuild(const char *url, const cli_remote_rebuild_args *a);

/* --lease's upper bound: remote.h's BG_REMOTE_MAX_REBUILD_LEASE_MS (7 days;
 * cmd_rebuild_remote.c checks they agree), here for a CLI built without remote.h. */
#define CLI_MAX_LEASE_MS (UINT64_C(7) * 24 * 3600 * 1000)

/* Keys per round trip to Redis: each batch is one Lua script (or one
 * BF.INSERT) that runs atomically and holds the server meanwhile, so it is
 * kept to about a millisecond of its time. */
#define CLI_REMOTE_BATCH 1000u

/* `create` without replacing: saves f to a temporary name beside path and
 * moves it there only if path does not exist (cmd_create.c). With force,
 * a plain crash-safe save. 0, or -1 (message printed). */
int cli_save_new(const bg_filter *f, const char *path, bool force);

extern const cli_command cli_cmd_push;
extern const cli_command cli_cmd_pull;
extern const cli_command cli_cmd_rebuild;

#endif
