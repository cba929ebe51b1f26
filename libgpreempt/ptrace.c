/* SPDX-License-Identifier: MIT */
#include "ptrace.h"

#include <errno.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include "cleanup.h"
#include "proc-status.h"

/* Exit and exec both end the target's kfd debug session without a word to
 * the debugger (kfd_process_notifier_release_internal writes no event), so
 * the tracer asks to hear about them. No PTRACE_O_EXITKILL: when the
 * controller dies the target must live on (the kernel then resumes its
 * queues). No clone tracing: kfd only checks the leader's tracer. */
#define GP_PTRACE_OPTIONS (PTRACE_O_TRACEEXIT | PTRACE_O_TRACEEXEC)

/* How long an interrupt waits for its stop: 1000 x 1 ms. A runnable
 * or sleeping tracee stops within microseconds. */
#define GP_INTERRUPT_WAIT_STEPS 1000
#define GP_INTERRUPT_WAIT_STEP_NS 1000000L

int ptrace_seize_leader(pid_t pid)
{
        if (ptrace(PTRACE_SEIZE, pid, NULL, (void *)(long)GP_PTRACE_OPTIONS) < 0)
                return NEG_ERRNO();
        return 0;
}

static bool is_stopping_signal(int sig)
{
        return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

void ptrace_decode_status(int status, struct ptrace_stop *ret_stop)
{
        struct ptrace_stop stop = { .status = status };
        int event = (unsigned)status >> 16;

        if (!WIFSTOPPED(status)) {
                stop.kind = PTRACE_STOP_TERMINATED;
                stop.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        } else if (event == 0) {
                stop.kind = PTRACE_STOP_SIGNAL_DELIVERY;
                stop.signal = WSTOPSIG(status);
        } else if (event == PTRACE_EVENT_STOP) {
                /* With PTRACE_SEIZE a group-stop reports the stopping signal;
                 * SIGTRAP means an interrupt or a SIGCONT notification. */
                stop.signal = WSTOPSIG(status);
                stop.kind = is_stopping_signal(stop.signal) ? PTRACE_STOP_GROUP
                                                            : PTRACE_STOP_INTERRUPT;
        } else if (event == PTRACE_EVENT_EXIT) {
                stop.kind = PTRACE_STOP_EXITING;
        } else if (event == PTRACE_EVENT_EXEC) {
                stop.kind = PTRACE_STOP_EXECED;
        } else {
                stop.kind = PTRACE_STOP_OTHER_EVENT;
        }
        *ret_stop = stop;
}

int ptrace_wait_stop(pid_t pid, bool block, struct ptrace_stop *ret_stop)
{
        int status;
        pid_t r;

        do
                r = waitpid(pid, &status, __WALL | (block ? 0 : WNOHANG));
        while (r < 0 && errno == EINTR);
        if (r < 0)
                return NEG_ERRNO();
        if (r == 0)
                return 0;
        ptrace_decode_status(status, ret_stop);
        return 1;
}

static int ptrace_request(enum __ptrace_request request, pid_t pid, int sig)
{
        if (ptrace(request, pid, NULL, (void *)(long)sig) < 0) {
                /* The tracee was killed (SIGKILL) between the stop and now:
                 * nothing left to restart, the exit is collected next. */
                if (errno == ESRCH)
                        return 0;
                return NEG_ERRNO();
        }
        return 0;
}

int ptrace_restart(pid_t pid, const struct ptrace_stop *stop)
{
        switch (stop->kind) {
        case PTRACE_STOP_SIGNAL_DELIVERY:
                /* Suppressing it would lose the signal (SIGTERM would not end
                 * the process, its handlers would not run). */
                return ptrace_request(PTRACE_CONT, pid, stop->signal);
        case PTRACE_STOP_GROUP:
                /* PTRACE_CONT here would resume a process that was told to
                 * stop; LISTEN keeps it stopped until SIGCONT, as without a
                 * tracer. */
                return ptrace_request(PTRACE_LISTEN, pid, 0);
        case PTRACE_STOP_INTERRUPT:
        case PTRACE_STOP_EXITING:
        case PTRACE_STOP_EXECED:
        case PTRACE_STOP_OTHER_EVENT:
                return ptrace_request(PTRACE_CONT, pid, 0);
        case PTRACE_STOP_TERMINATED:
                return 0;
        }
        return -EINVAL;
}

int ptrace_interrupt_leader(pid_t pid, struct ptrace_stop *ret_stop)
{
        int r;

        if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) < 0)
                return errno == ESRCH ? 0 : NEG_ERRNO();

        /* Bounded: a tracee already in a stop that was collected but not
         * restarted produces no new one, and a blocking wait would hang the
         * caller; such a tracee is stopped as it is. */
        for (int i = 0;; i++) {
                r = ptrace_wait_stop(pid, false, ret_stop);
                if (r == -ECHILD)
                        return 0;
                if (r < 0)
                        return r;
                if (r > 0)
                        return ret_stop->kind == PTRACE_STOP_TERMINATED ? 0 : 1;
                if (i == GP_INTERRUPT_WAIT_STEPS) {
                        *ret_stop = (struct ptrace_stop){ .kind = PTRACE_STOP_INTERRUPT };
                        return 1;
                }
                (void)nanosleep(&(struct timespec){ .tv_nsec = GP_INTERRUPT_WAIT_STEP_NS }, NULL);
        }
}

int ptrace_detach_stopped(pid_t pid, const struct ptrace_stop *stop)
{
        /* A stop that came before the interrupt's is as good a place to
         * detach from; a signal being delivered goes along with the detach so
         * it is not lost, and a group-stop stays a stop after it. */
        struct proc_stat st;

        if (ptrace(PTRACE_DETACH, pid, NULL,
                   (void *)(long)(stop->kind == PTRACE_STOP_SIGNAL_DELIVERY ? stop->signal : 0)) == 0)
                return 0;
        if (errno != ESRCH)
                return NEG_ERRNO();
        /* ESRCH: killed since its stop (it is going, and the detach with it),
         * or in no ptrace-stop at all, as a task the cgroup v1 freezer holds,
         * whom the interrupt could not stop: that one is still traced. */
        if (proc_stat_read(pid, &st) < 0 || st.state == 'Z' || st.state == 'X')
                return 0;
        return -EBUSY;
}
