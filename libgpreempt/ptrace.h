/* SPDX-License-Identifier: MIT */
/*
 * The tracer's duties towards a seized thread-group leader. kfd requires the
 * debugger to be the target's ptrace parent (kfd_ioctl_set_debug_trap), and a
 * tracer that does not service its tracee's stops freezes it or eats its
 * signals: every stop collected here is restarted the way the process would
 * have gone on without a tracer.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

enum ptrace_stop_kind {
        PTRACE_STOP_SIGNAL_DELIVERY, /* signal: to re-inject */
        PTRACE_STOP_GROUP,           /* signal: the stopping signal */
        PTRACE_STOP_INTERRUPT,       /* PTRACE_INTERRUPT or a SIGCONT notification */
        PTRACE_STOP_EXITING,         /* PTRACE_EVENT_EXIT */
        PTRACE_STOP_EXECED,          /* PTRACE_EVENT_EXEC */
        PTRACE_STOP_OTHER_EVENT,
        PTRACE_STOP_TERMINATED,      /* not a stop: exited or killed (status) */
};

struct ptrace_stop {
        enum ptrace_stop_kind kind;
        int signal;
        int status; /* as from waitpid */
};

int ptrace_seize_leader(pid_t pid);
/* Collects one stop of the tracee: 1 with *ret_stop filled, 0 when nothing is
 * pending (only when !block), or -errno. */
int ptrace_wait_stop(pid_t pid, bool block, struct ptrace_stop *ret_stop);
void ptrace_decode_status(int status, struct ptrace_stop *ret_stop);
/* Lets the tracee go on from a collected stop as it would without a tracer. */
int ptrace_restart(pid_t pid, const struct ptrace_stop *stop);
/* Stops the tracee (PTRACE_INTERRUPT) and collects whatever stop comes
 * first into *ret_stop: 1 when it is stopped (then detach with
 * ptrace_detach_stopped()), 0 when it is gone, or -errno. */
int ptrace_interrupt_leader(pid_t pid, struct ptrace_stop *ret_stop);
/* Detaches from a stop ptrace_interrupt_leader() collected, re-injecting a
 * signal the tracee was delivering. Returns 0 (also when the tracee died
 * meanwhile), -EBUSY when it lives on in no ptrace-stop (one the cgroup v1
 * freezer holds), so is still traced, or another -errno. */
int ptrace_detach_stopped(pid_t pid, const struct ptrace_stop *stop);
