/* SPDX-License-Identifier: MIT */
/*
 * COMMAND and everything it starts, as kfdemu-run runs them: COMMAND's
 * exit ends the run; descendants left behind (kfdemu-run is their
 * subreaper) get SIGTERM, then SIGKILL after a grace period, while the node
 * still serves their last calls. The loop exits once no child is left.
 */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

/* How long leftovers have between SIGTERM and SIGKILL. */
#define COMMAND_LEFTOVER_GRACE_USEC (1000 * 1000)

struct command_run {
        sd_event *event;
        pid_t pid;
        int exit_status;                 /* COMMAND's, or 128 + signal */
        bool exited;
        bool killing;                    /* the grace period is over */
        sd_event_source *sigchld, *forwarded[4], *grace_timer;
};

/* The signals passed on to COMMAND (to the leftovers once it has exited):
 * those a terminal, a service manager or a user ends a program with. */
#define COMMAND_FORWARDED_SIGNALS { SIGINT, SIGTERM, SIGHUP, SIGQUIT }

/* Forks and execs `argv` with `child_mask` and `child_limit` restored, and
 * SIGPIPE's default action, and watches it from `event`. SIGCHLD and the
 * forwarded signals must be blocked in every thread of the process
 * already. */
int command_start(struct command_run *run, sd_event *event, char **argv, const sigset_t *child_mask,
                  const struct rlimit *child_limit);
void command_done(struct command_run *run);
