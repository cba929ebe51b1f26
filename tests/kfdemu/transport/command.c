/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "command.h"

/* Signals every child of this process: COMMAND is reaped by then, so these
 * are the descendants it left, reparented to us. */
static void signal_children(int sig)
{
        DIR *tasks = opendir("/proc/self/task");
        struct dirent *de;

        if (!tasks)
                return;
        while ((de = readdir(tasks))) {
                char path[300];
                FILE *f;
                int pid;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "/proc/self/task/%s/children", de->d_name);
                f = fopen(path, "re");
                if (!f)
                        continue;
                while (fscanf(f, "%d", &pid) == 1)
                        kill(pid, sig);
                fclose(f);
        }
        closedir(tasks);
}

static int on_grace_over(sd_event_source *source, uint64_t usec, void *userdata)
{
        struct command_run *run = userdata;

        run->killing = true;
        signal_children(SIGKILL);
        return 0;
}

static void command_exited(struct command_run *run, const siginfo_t *si)
{
        /* The shell's convention: 128 + signal for a command a signal killed. */
        run->exit_status = si->si_code == CLD_EXITED ? si->si_status : 128 + si->si_status;
        run->exited = true;
        signal_children(SIGTERM);
        sd_event_add_time_relative(run->event, &run->grace_timer, CLOCK_MONOTONIC, COMMAND_LEFTOVER_GRACE_USEC, 0,
                                   on_grace_over, run);
}

static int on_sigchld(sd_event_source *source, const struct signalfd_siginfo *ssi, void *userdata)
{
        struct command_run *run = userdata;

        for (;;) {
                siginfo_t si = { 0 };

                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG) < 0) {
                        /* No child left at all: the run is over. */
                        if (errno == ECHILD && run->exited)
                                return sd_event_exit(run->event, 0);
                        return 0;
                }
                if (si.si_pid == 0)
                        break;
                if (si.si_pid == run->pid)
                        command_exited(run, &si);
        }
        /* Orphans of the processes just killed are ours now too. */
        if (run->killing)
                signal_children(SIGKILL);
        return 0;
}

static int on_forwarded_signal(sd_event_source *source, const struct signalfd_siginfo *ssi, void *userdata)
{
        struct command_run *run = userdata;

        if (!run->exited)
                kill(run->pid, (int)ssi->ssi_signo);
        else
                signal_children((int)ssi->ssi_signo);
        return 0;
}

int command_start(struct command_run *run, sd_event *event, char **argv, const sigset_t *child_mask,
                  const struct rlimit *child_limit)
{
        static const int forwarded[] = COMMAND_FORWARDED_SIGNALS;
        _Static_assert(ELEMENTSOF(forwarded) == ELEMENTSOF(run->forwarded), "a source for each forwarded signal");
        int r;

        *run = (struct command_run){ .event = event, .exit_status = EXIT_FAILURE };
        /* Daemons COMMAND starts must not escape to init when it exits. */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                return NEG_ERRNO();

        r = sd_event_add_signal(event, &run->sigchld, SIGCHLD, on_sigchld, run);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(forwarded); i++)
                r = sd_event_add_signal(event, &run->forwarded[i], forwarded[i], on_forwarded_signal, run);
        if (r < 0) {
                command_done(run);
                return r;
        }

        pid_t pid = fork();
        if (pid < 0) {
                command_done(run);
                return NEG_ERRNO();
        }
        if (pid == 0) {
                sigprocmask(SIG_SETMASK, child_mask, NULL);
                signal(SIGPIPE, SIG_DFL); /* kfdemu-run ignores it; exec keeps an ignored signal so */
                if (child_limit->rlim_max > 0)
                        setrlimit(RLIMIT_NOFILE, child_limit);
                execvp(argv[0], argv);
                fprintf(stderr, "kfdemu-run: cannot run %s: %m.\n", argv[0]);
                _exit(127);
        }
        run->pid = pid;
        return 0;
}

void command_done(struct command_run *run)
{
        run->sigchld = sd_event_source_disable_unref(run->sigchld);
        for (size_t i = 0; i < ELEMENTSOF(run->forwarded); i++)
                run->forwarded[i] = sd_event_source_disable_unref(run->forwarded[i]);
        run->grace_timer = sd_event_source_disable_unref(run->grace_timer);
}
