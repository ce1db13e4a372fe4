/* SPDX-License-Identifier: BSD-3-Clause */
/* bloomgate: the command-line tool. Builds, fills, queries, inspects and
 * combines filter files (<bloomgate/file.h>). The reference is docs/CLI.md
 * and `bloomgate help CMD`; this file only dispatches. */
#include "cli.h"
#include "cli_options.h"
#include "cli_output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

/* The tool's own version: the headers' it was compiled with. */
#define CLI_STR2(x) #x
#define CLI_STR(x) CLI_STR2(x)
#define CLI_VERSION \
    CLI_STR(BG_VERSION_MAJOR) "." CLI_STR(BG_VERSION_MINOR) "." CLI_STR(BG_VERSION_PATCH)

static const cli_command *const commands[] = {
    &cli_cmd_calc,  &cli_cmd_create, &cli_cmd_add,   &cli_cmd_remove,
    &cli_cmd_check, &cli_cmd_info,   &cli_cmd_merge, &cli_cmd_intersect,
    &cli_cmd_push,  &cli_cmd_pull,   &cli_cmd_rebuild, &cli_cmd_bench,
    &cli_cmd_demo,
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const cli_command *find(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

static void overview(FILE *fp)
{
    fputs("usage: bloomgate COMMAND [OPTIONS] [ARGS]\n"
          "       bloomgate help COMMAND | --help | --version\n"
          "\n"
          "Bloom filter files: build them from key lists, ask them whether keys may\n"
          "exist, and combine them. A filter never forgets a key that was added\n"
          "(unless a counting filter is told to remove it).\n"
          "\n"
          "Wherever a FILE is expected, create, add, check and info also take a\n"
          "remote filter held in Redis: redis://[:PASSWORD@]HOST[:PORT]/NAME\n"
          "(see 'Remote filters' in docs/CLI.md).\n"
          "\n"
          "Commands:\n",
          fp);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(fp, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fputs("\n"
          "Exit status: 0 success; 1 check (or remove --strict) found a key that is\n"
          "definitely absent; 2 any error.\n"
          "Run 'bloomgate help COMMAND' (or 'bloomgate COMMAND --help') for a\n"
          "command's options; docs/CLI.md is the full reference.\n",
          fp);
}

static int version(void)
{
    printf("bloomgate %s (library %s, file format %u)\n", CLI_VERSION,
           bg_version_string(), (unsigned)BG_FILE_VERSION);
    return cli_stdout_close() == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}

static int main_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int main_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bloomgate: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nusage: bloomgate COMMAND [OPTIONS] [ARGS]\n"
          "Try 'bloomgate --help' for the list of commands.\n",
          stderr);
    return CLI_EXIT_ERROR;
}

/* A descriptor 0, 1 or 2 that the tool was started without would be the
 * next one it opens: a Redis connection would then get its answers written
 * into it as commands (`check ... >&-` ran each key as a command) and its
 * keys read from it. Each closed one is taken by /dev/null opened the other
 * way round, so that reading stdin or writing stdout or stderr fails with
 * EBADF, as it would have (a write error on stdout is still status 2).
 * -1 if /dev/null cannot be opened. */
static int hold_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        int got = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
        if (got < 0)
            return -1;
        if (got != fd) { /* cannot happen: the lowest free descriptor is fd */
            int rc = dup2(got, fd);
            close(got);
            if (rc < 0)
                return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (hold_std_fds() != 0)
        return CLI_EXIT_ERROR;
    if (argc < 2)
        return main_usage_error("no command given");
    const char *word = argv[1];
    if (strcmp(word, "--help") == 0 || strcmp(word, "-h") == 0) {
        overview(stdout);
        return cli_stdout_close() == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
    }
    if (strcmp(word, "--version") == 0 || strcmp(word, "-V") == 0)
        return version();
    if (strcmp(word, "help") == 0) {
        if (argc == 2) {
            overview(stdout);
            return cli_stdout_close() == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
        }
        const cli_command *cmd = find(argv[2]);
        if (!cmd)
            return main_usage_error("help: unknown command '%s'", argv[2]);
        return cli_help(cmd);
    }
    if (word[0] == '-')
        return main_usage_error("unknown option '%s'", word);
    const cli_command *cmd = find(word);
    if (!cmd)
        return main_usage_error("unknown command '%s'", word);
    /* The command sees argv from its own name on, as if it were a program
     * of its own (argv[0] = "check"). */
    return cmd->run(argc - 1, argv + 1);
}
