/* SPDX-License-Identifier: BSD-3-Clause */
/* The bloomgate command-line tool: the command table and the exit
 * statuses, which every part of the tool shares. The rest is in headers by
 * concern: cli_options.h (arguments, numbers, sizing options),
 * cli_output.h (messages, buffered output, JSON), cli_keys.h (reading keys,
 * a command's output as keys, progress), cli_signals.h (saving, and the
 * signals that end the tool) and cli_remote.h (URLs and the commands'
 * remote halves).
 *
 * Not API: nothing here is installed. The tool uses only the public headers
 * of the library (<bloomgate/...>), like any other program, and is linked
 * against the static library.
 *
 * CONVENTIONS
 * Each subcommand is one file (cmd_<name>.c) that fills one cli_command;
 * its remote half, if it has one, is cmd_<name>_remote.c. A subcommand's
 * run function returns the process's exit status: CLI_EXIT_OK,
 * CLI_EXIT_ABSENT (check, and remove --strict) or CLI_EXIT_ERROR. Helpers
 * that can fail print their own message (cli_error) and return -1, so that
 * a caller only has to pass the failure up. Every message starts with
 * "bloomgate: " and names the file it is about. */
#ifndef BG_CLI_H
#define BG_CLI_H

/* Exit statuses (docs/CLI.md, EXIT STATUS). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_ABSENT = 1, /* check, remove --strict: some key is definitely absent */
    CLI_EXIT_ERROR = 2,  /* any error, including usage errors */
};

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
extern const cli_command cli_cmd_push;
extern const cli_command cli_cmd_pull;
extern const cli_command cli_cmd_rebuild;

#endif
