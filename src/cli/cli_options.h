/* SPDX-License-Identifier: BSD-3-Clause */
/* The bloomgate command-line tool: parsing its arguments. Usage errors,
 * options every command shares, strict number parsers and the sizing
 * options of calc and create (options.c, cmd_calc.c). */
#ifndef BG_CLI_OPTIONS_H
#define BG_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bloomgate/bloomgate.h>

#include "cli.h"

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

/* ---- sizing options (calc, create, rebuild) --------------------------- */

/* Parses the value of -n, -p, -m or -k (c) into *s. -1 (message printed). */
int cli_sizing_option(int c, const char *arg, bg_sizing *s);
/* NULL if the known fields of *s are a combination bg_sizing_solve can
 * solve, else what is wrong with it (for a usage error). */
const char *cli_sizing_given_error(const bg_sizing *s);
/* Why bg_sizing_solve (or bg_filter_new) refused `given` for variant v with
 * status rc, in words that name the option at fault. */
void cli_sizing_explain(bg_variant v, const bg_sizing *given, int rc, char *buf, size_t size);

/* Reads a variant name for --variant; -1 (message printed) if unknown. */
int cli_parse_variant(const char *text, bg_variant *out);

#endif
