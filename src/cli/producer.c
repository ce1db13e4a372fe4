/* SPDX-License-Identifier: BSD-3-Clause */
/* A command whose output is the keys (cli.h, "producer"): rebuild
 * --command starts it itself, after the rebuild has begun, where a producer
 * in the same shell pipeline would start at the same moment as the CLI, and
 * sees how it ended, which a pipeline hides.
 *
 * HOW IT WORKS
 * The command runs as `/bin/sh -c COMMAND` with stdin /dev/null, stdout a
 * pipe that the key reader reads, and our stderr (its error messages reach
 * the user). At the end of its output the CLI waits for it: only exit
 * status 0 says that the output was the complete list.
 *
 * It runs in a process group of its own, so that stopping it reaches every
 * process of it: sh runs a command as its child (dash does not exec the
 * last one), and a SIGTERM to sh alone would leave psql behind. The group
 * gets SIGTERM, and SIGKILL if it is still there STOP_GRACE_MS later. Not
 * being the terminal's foreground group has two consequences:
 *  - Ctrl-C and the other signals that end the CLI reach only the CLI,
 *    which passes them on to the group (forward()) and then dies of them
 *    (rebuild, which catches them, after cancelling its rebuild).
 *  - The command cannot read the terminal, e.g. to ask for a password.
 *    SIGTTIN and SIGTTOU are ignored in it, so such a read fails (EIO)
 *    rather than stopping it for ever, and its messages are written even
 *    under `stty tostop`.
 *
 * SIGPIPE: the CLI only reads the pipe, so nothing here can raise it in
 * the CLI (its Redis connections are guarded by the library). The command
 * gets it if it writes after the CLI has closed the pipe, as a pipeline's
 * producer would.
 *
 * LIMITATIONS
 * SIGKILL to the CLI cannot be passed on: the command then dies of SIGPIPE
 * at its next write. (The CLI's Redis connections are close-on-exec: the
 * remote client sets it, so the command does not inherit them.) */
#include "cli_keys.h"
#include "cli_output.h"
#include "cli_signals.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long a stopped command has to go after SIGTERM before SIGKILL. */
#define STOP_GRACE_MS 2000

/* The handlers forward() replaces while the command runs (of the signals
 * that end the CLI, cli_ending_signals). */
static cli_handlers before_forward;
/* The running command's process group (its pid), or 0: read by forward(). */
static volatile sig_atomic_t running_group;

/* The CLI is ending of sig: end the command the same way, then die of sig
 * as if it had not been caught (raised while blocked in this handler, it
 * is delivered, now with the default action, once the handler returns);
 * or, the first time under cli_catch_signals, record it and return, for
 * the CLI to clean up and then die of it. */
static void forward(int sig)
{
    if (running_group > 0)
        kill(-(pid_t)running_group, sig);
    if (cli_catching_signals && !cli_caught_signal) {
        cli_caught_signal = sig;
        return;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void forward_begin(pid_t group)
{
    running_group = group;
    /* A signal ignored from the start (nohup) stays ignored, by the CLI
     * and by the command, which inherited that. */
    cli_handlers_install(&before_forward, forward);
}

static void forward_end(void)
{
    running_group = 0;
    cli_handlers_restore(&before_forward);
}

/* In the child: fd becomes target. The CLI may have started with 0 or 1
 * closed, so fd may be target already, and then only loses close-on-exec. */
static int move_fd(int fd, int target)
{
    return fd == target ? fcntl(fd, F_SETFD, 0) : dup2(fd, target);
}

int cli_producer_start(cli_producer *p, const char *command, const char *about)
{
    p->command = command;
    p->pid = -1;
    p->fd = -1;
    /* /dev/null first: the pipe then gets higher descriptors, so that
     * moving one into place cannot overwrite the other (move_fd). */
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int fds[2] = {-1, -1};
    if (null_fd < 0 || pipe2(fds, O_CLOEXEC) != 0) {
        cli_error("%s: cannot run the command: %s: %s", about, strerror(errno), command);
        if (null_fd >= 0)
            close(null_fd);
        return -1;
    }
    /* An inherited SIG_IGN would have the kernel reap the child itself, and
     * its exit status would be lost. */
    signal(SIGCHLD, SIG_DFL);
    /* Held from before fork until forward() is in place, so that no signal
     * can end the CLI and leave the command running. */
    sigset_t old;
    cli_hold_signals(&old);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        signal(SIGTTIN, SIG_IGN);
        signal(SIGTTOU, SIG_IGN);
        if (move_fd(null_fd, STDIN_FILENO) < 0 || move_fd(fds[1], STDOUT_FILENO) < 0)
            _exit(127);
        sigprocmask(SIG_SETMASK, &old, NULL);
        execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        _exit(127); /* as sh's own status for a command it cannot run */
    }
    int err = errno;
    close(null_fd);
    close(fds[1]); /* else the pipe never reaches its end */
    if (pid < 0) {
        cli_release_signals(&old);
        close(fds[0]);
        cli_error("%s: cannot run the command: %s: %s", about, strerror(err), command);
        return -1;
    }
    /* Also here, so that the group exists before the parent signals it;
     * EACCES once the child has run exec is fine: it did it itself. */
    setpgid(pid, pid);
    forward_begin(pid);
    cli_release_signals(&old);
    p->pid = pid;
    p->fd = fds[0];
    return 0;
}

int cli_producer_end(cli_producer *p, bool stop, const char *about)
{
    if (p->pid < 0)
        return -1;
    pid_t pid = p->pid;
    p->pid = -1;
    close(p->fd); /* a command still writing now gets SIGPIPE */
    p->fd = -1;
    int status = 0;
    if (stop) {
        kill(-pid, SIGTERM);
        forward_end();
        /* A command that ignores SIGTERM must neither keep the CLI waiting
         * nor stay behind. */
        const struct timespec tick = {0, 10 * 1000 * 1000};
        for (int ms = 0; waitpid(pid, &status, WNOHANG) == 0; ms += 10) {
            if (ms == STOP_GRACE_MS)
                kill(-pid, SIGKILL);
            nanosleep(&tick, NULL);
        }
        return -1;
    }
    /* Wait without reaping first: until it is reaped, its pid (the
     * group's id) cannot be reused, so forward() cannot signal a stranger. */
    siginfo_t si;
    int rc;
    while ((rc = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT)) != 0 && errno == EINTR)
        ;
    int err = errno;
    forward_end();
    if (rc != 0) {
        cli_error("%s: cannot wait for the command: %s: %s", about, strerror(err), p->command);
        return -1;
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status)) {
        int code = WEXITSTATUS(status);
        cli_error("%s: the command exited with status %d%s: %s", about, code,
                  code == 127   ? " (command not found)"
                  : code == 126 ? " (command not executable)"
                                : "",
                  p->command);
    } else {
        int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        cli_error("%s: the command was killed by signal %d (%s): %s", about, sig, strsignal(sig),
                  p->command);
    }
    return -1;
}
