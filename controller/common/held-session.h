/* SPDX-License-Identifier: MIT */
/*
 * A held debug session with one process, on an sd-event loop: attached
 * through libgpreempt (ptrace seize + KFD debug enable), its queues
 * suspended and resumed per GPU or all at once, and what the target does
 * meanwhile serviced: its debug events (queues created and destroyed,
 * runtime transitions, exit, exec) and its ptrace stops.
 *
 * One rule is the session's own: a queue created on a GPU the session holds
 * suspended is suspended at once, since the kernel creates every queue
 * runnable (kfd-interface.md §4.4). Everything else is reported to the
 * owner through callbacks, and the owner decides: gpreemptd (one session
 * per offline process, suspended as its policy says) and gpreemptctl hold
 * (the processes named on its command line, held until it ends).
 *
 * Every call must come from the thread that attached: the kernel takes
 * debugger calls only from the tracer. Ending the session, or the owner
 * dying, makes the kernel resume every queue it suspended
 * (kfd-interface.md §6).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include <gpreempt/gpreempt.h>

/* GPUs a session tracks as suspended one by one; more than any node has. */
#define HELD_SESSION_MAX_GPUS 64

struct held_session;

enum held_session_end {
        HELD_SESSION_EXITED,
        HELD_SESSION_EXECED,
};

struct held_session_callbacks {
        /* The target created a queue; suspended: the session suspended it, its GPU being held. */
        void (*queue_created)(struct held_session *s, uint32_t gpu_id, uint32_t queue_id, bool suspended,
                              void *userdata);
        /* After a round of events that created or destroyed queues; caught: how many new ones it suspended. */
        void (*queues_changed)(struct held_session *s, size_t caught, void *userdata);
        /* The target's ROCm runtime changed state. */
        void (*runtime_changed)(struct held_session *s, enum gp_runtime_state state, void *userdata);
        /*
         * The target exited or exec'd: nothing is left to hold. Called once,
         * from the event source or from held_session_service_ptrace(); the
         * owner ends the session, here or later.
         */
        void (*ended)(struct held_session *s, enum held_session_end how, void *userdata);
        /*
         * The target entered a group-stop (stop_signal: SIGSTOP, SIGTSTP,
         * SIGTTIN or SIGTTOU) or SIGCONT ended it (stop_signal 0). Called
         * after the round of ptrace stops, with the state it ended in.
         */
        void (*stop_changed)(struct held_session *s, int stop_signal, void *userdata);
        /* Something the session did on its own failed (reading events, a stop, suspending a new queue). */
        void (*error)(struct held_session *s, int error, enum gp_op op, void *userdata);
};

/* What the session did, for its owner's reports. */
struct held_session_counts {
        uint64_t suspends, resumes;  /* successful held_session_set_suspended() calls */
        size_t queues_suspended;     /* by the last suspension of every held GPU, plus the new queues caught since */
        size_t queues_resumed;       /* by the last resumption */
        size_t queues_not_suspended; /* queues the kernel did not suspend: invalid, or failed in the scheduler */
        size_t retries;              /* queues suspended again after an INVALID answer */
        size_t new_queues_caught;    /* created on a held GPU and suspended */
        size_t runtime_events;       /* runtime transitions acknowledged */
};

/*
 * Attaches to pid and services it on event. grace_period: wave time before
 * the context save, in ~1000 GPU clocks. before_gpu_use: pid may not have
 * opened /dev/kfd yet (gp_attach_opts). Returns 0 or the library's -errno.
 */
int held_session_attach(struct gp_context *gp, sd_event *event, pid_t pid, uint32_t grace_period, bool before_gpu_use,
                        const struct held_session_callbacks *callbacks, void *userdata,
                        struct held_session **ret_session);
/* Detaches (the kernel resumes whatever is still suspended) and frees. Returns the detach's -errno or 0. */
int held_session_end(struct held_session *s);

void held_session_set_grace_period(struct held_session *s, uint32_t grace_period);
/*
 * Suspends or resumes the queues on gpu_ids (n_gpu_ids 0: every GPU) and
 * remembers those GPUs as held or not. A target without queues there is a
 * success with nothing done. Returns 0 or -errno (the library's), and -EIO
 * for a resumption the hardware scheduler failed on some queues, which stay
 * suspended. report (may be NULL) says what happened to each queue.
 */
int held_session_set_suspended(struct held_session *s, const uint32_t *gpu_ids, size_t n_gpu_ids, bool suspend,
                               struct gp_queue_report *report);
bool held_session_is_suspended(const struct held_session *s, uint32_t gpu_id);

/*
 * What a session holds and knows, as one value that can be copied: for an
 * owner that keeps the session on another thread (gpreemptd's preemption
 * worker) and reads it from its own.
 */
struct held_session_state {
        uint32_t suspended_gpus[HELD_SESSION_MAX_GPUS];
        size_t n_suspended_gpus;
        bool all_suspended;
        enum gp_runtime_state runtime_state;
        bool terminating;
        int stop_signal; /* as held_session_stop_signal() */
        struct held_session_counts counts;
};

void held_session_get_state(const struct held_session *s, struct held_session_state *ret);
/* held_session_is_suspended() of the session the state was taken from, at that time. */
bool held_session_state_is_suspended(const struct held_session_state *state, uint32_t gpu_id);
/* How many queues the target has now (a snapshot). Returns 0 or -errno. */
int held_session_count_queues(struct held_session *s, size_t *ret_n_queues);

/*
 * Services pending ptrace stops: call it when the loop gets SIGCHLD (it
 * coalesces, so every session is asked). Returns false once the target is
 * gone; the callback ended came first, so s may be freed by then.
 */
bool held_session_service_ptrace(struct held_session *s);
/*
 * The target was sent a termination signal (seen at its signal-delivery
 * stop). It is about to destroy its queues, and destroying a suspended
 * queue blocks until it is resumed (kfd-interface.md §4.4).
 */
bool held_session_is_terminating(const struct held_session *s);
/* The signal of the target's group-stop, 0 when it is not stopped. */
int held_session_stop_signal(const struct held_session *s);

pid_t held_session_pid(const struct held_session *s);
enum gp_runtime_state held_session_runtime_state(const struct held_session *s);
const struct held_session_counts *held_session_counts(const struct held_session *s);
