/* SPDX-License-Identifier: MIT */
/*
 * The thread that is the tracer of every offline process: each held
 * session (../common/held-session.h) lives on its own sd-event loop, and
 * every debugger call on it (attach, SUSPEND_QUEUES, RESUME_QUEUES, the
 * ptrace stops, detach) is made there.
 *
 * Why a thread of its own: amdkfd takes debugger calls only from the
 * target's tracer, and on a hardware-scheduled GPU SUSPEND_QUEUES and
 * RESUME_QUEUES wait in the kernel for a device-wide unmap, hundreds of µs
 * normally and up to queue_preemption_timeout_ms (9 s) when a queue does
 * not answer; the wait calls schedule() in a loop, so a SCHED_FIFO caller
 * spins its CPU for all of it (kfd-hazards.md §1, §5;
 * kfd_device_queue_manager.c: amdkfd_fence_wait_timeout()). The loop that
 * detects, decides, answers the API and pings the watchdog must never be
 * that caller. The worker runs at SCHED_OTHER whatever the loop's priority.
 *
 * The owner (the manager, on the main loop) sends commands and returns at
 * once; they run on the worker in the order sent. Their results and the
 * sessions' own reports come back through a mailbox and are dispatched on
 * the main loop to the callbacks, in the order they happened. Each session
 * has a main-side handle (struct worker_session) holding what the last
 * report said of it: the state the owner reads, never the session itself.
 *
 * Suspend on trap. The worker also waits on the detector's trap set (the
 * breakpoints' epoll fd, trap-key.h), so that a store under an armed
 * breakpoint wakes this thread alone: a GPU the owner marked
 * (worker_mark_suspend_on_trap(): its policy would suspend now, and may) has
 * its offline sessions suspended there at once, one wake-up from the store
 * to SUSPEND_QUEUES, before the owner's loop hears of it. Every trap is then
 * reported (trapped(), followed by the call_done() of each call it made) for
 * the owner to record and to judge; a trap on a GPU not marked is only
 * reported. A mark is taken by one trap at most: an atomic per slot, which
 * the owner clears at once (worker_unmark_suspend_on_trap()) when its policy
 * changes its mind, so a trap never races a decision of the owner's.
 *
 * Suspend on a poll. A mark may carry a watch of its GPU's polled queues
 * (poll-watch.h): while the mark is valid the worker's wait times out at the
 * watch's interval, and a poll that finds the queues moved takes the mark and
 * suspends as a trap does, reported the same way (polled_pid set). Without
 * breakpoints the loop saw such a store and handed the suspension over, a
 * cross-thread wake-up more; so the loop leaves the busy cadence's looks for
 * new work on a watched GPU to the worker. The worker's timer slack is 1 ns:
 * the default 50 µs would be more than the interval.
 *
 * The worker also disarms the writer: the owner hands it a duplicate of
 * each breakpoint's fds (worker_watch_breakpoint()), and a store disarms
 * the writer process's breakpoints on that GPU, after the suspension and
 * before the report, so that the owner's loop makes no perf ioctl for it.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include <gpreempt/gpreempt.h>

#include "held-session.h"
#include "poll-watch.h"

struct preemption_worker;
struct worker_session;

/* Marks of suspend on trap: one per GPU, in a slot the owner numbers. */
#define WORKER_TRAP_SLOTS 64

/* One SUSPEND_QUEUES or RESUME_QUEUES the owner asked for, or a trap made, and what came of it. */
struct worker_call {
        /* asked */
        uint32_t gpu_id; /* 0: every GPU */
        bool suspend;
        bool on_trap;    /* made by the worker for a mark, not sent by the owner */
        uint64_t purpose; /* the owner's: what the call was for, handed back as given */
        uint64_t seen_ns; /* the owner's: when the cause was seen (CLOCK_MONOTONIC), or 0 */
        /* done */
        int result;             /* held_session_set_suspended()'s: 0, -errno, -EIO (ERROR bits on a resume) */
        size_t n_done, n_error; /* queues suspended/resumed, and those the hardware scheduler failed */
        uint64_t entered_ns, returned_ns; /* CLOCK_MONOTONIC on the worker around the call */
        char *why;              /* result < 0: the failure as a sentence (explain_sentence), or NULL */
};

/* A wake-up of the trap set, or a poll of a mark's watch that found work, as the worker took it. */
struct worker_trap {
        uint64_t key;     /* the breakpoint fd's epoll data (trap-key.h); TRAP_KEY_NONE for a poll */
        uint32_t revents; /* its epoll events: EPOLLIN a store, EPOLLHUP a thread gone; 0 for a poll */
        pid_t polled_pid; /* a poll's: the process whose queues moved; 0 for a trap */
        uint64_t seen_ns; /* when the worker woke for it (CLOCK_MONOTONIC) */
        /* The GPU was marked and this trap took the mark: the calls below were made, each reported after this. */
        bool suspended;
        size_t slot;      /* the mark's */
        uint64_t purpose; /* the mark's, as each call carries it */
        size_t n_calls;
        bool writer_disarmed; /* the writer's breakpoints on the GPU were disarmed (a store whose key was known) */
};

/* Called on the owner's loop, from the worker's reports. userdata: the session's, given at attach. */
struct worker_session_callbacks {
        /* The attach finished: error 0, or -errno with why (a sentence, may be NULL). */
        void (*attached)(struct worker_session *ws, int error, const char *why, void *userdata);
        void (*call_done)(struct worker_session *ws, const struct worker_call *call, void *userdata);
        /* As struct held_session_callbacks. */
        void (*queue_created)(struct worker_session *ws, uint32_t gpu_id, uint32_t queue_id, bool suspended,
                              void *userdata);
        void (*queues_changed)(struct worker_session *ws, size_t caught, void *userdata);
        void (*runtime_changed)(struct worker_session *ws, enum gp_runtime_state state, void *userdata);
        void (*ended)(struct worker_session *ws, enum held_session_end how, void *userdata);
        void (*stop_changed)(struct worker_session *ws, int stop_signal, void *userdata);
        /* Seen at a ptrace stop: the target was sent a termination signal (held_session_is_terminating()). */
        void (*terminating)(struct worker_session *ws, void *userdata);
        void (*error)(struct worker_session *ws, int error, enum gp_op op, void *userdata);
        /*
         * A session the owner ended is detached: error is the detach's -errno
         * or 0. The handle is freed after this; its userdata is no longer the
         * owner's (worker_session_end()), so only pid is given.
         */
        void (*detached)(pid_t pid, int error, void *worker_userdata);
        /* A trap, with worker_userdata: the owner handles it as if its own loop had woken for it. */
        void (*trapped)(const struct worker_trap *trap, void *worker_userdata);
        /*
         * The watch of slot's mark, which still stands, could not read a
         * process (poll-watch.h): the worker polls it no more, and the owner's
         * looks are all that see new work on its GPU now.
         */
        void (*watch_lost)(size_t slot, void *worker_userdata);
};

/*
 * Starts the worker thread at SCHED_OTHER, with every signal blocked (the
 * owner's loop takes them). opts: how the worker opens libgpreempt when the
 * first session needs it; its strings are copied, its log_fn is then called
 * on the worker thread. The reports are dispatched from an event source on
 * main_event at priority. trap_fd: the trap set (detector_trap_fd()), the
 * owner's and open until the worker is freed: the worker's thread waits on
 * it alone, its own loop's fd added under TRAP_KEY_NONE. Returns 0 or -errno.
 */
int preemption_worker_new(sd_event *main_event, int64_t priority, int trap_fd, const struct gp_context_opts *opts,
                          const struct worker_session_callbacks *callbacks, void *worker_userdata,
                          struct preemption_worker **ret_worker);
/*
 * Waits for every command sent to run (the sessions ended by then are
 * detached: the kernel resumes their queues), ends any session left, stops
 * the thread and frees. Reports not yet dispatched are dropped, those of
 * ended sessions but for detached() too.
 */
void preemption_worker_free(struct preemption_worker *w);

/*
 * Attaches to pid on the worker (as held_session_attach(): the process uses
 * the GPU already). The handle is usable at once: commands sent before the
 * attach finished run after it, and do nothing if it failed. Returns 0 or
 * -ENOMEM.
 */
int worker_session_attach(struct preemption_worker *w, pid_t pid, uint32_t grace_period, void *userdata,
                          struct worker_session **ret_session);
/*
 * Ends the session: the owner lets go of ws at once (no callback of it is
 * called after this but detached()); the worker detaches it after the
 * commands sent before, and the handle is freed after detached().
 */
void worker_session_end(struct worker_session *ws);
/* held_session_set_suspended() on the worker; call_done() says how it went. Returns 0 or -ENOMEM. */
int worker_session_set_suspended(struct worker_session *ws, uint32_t gpu_id, bool suspend, uint64_t purpose,
                                 uint64_t seen_ns);
int worker_session_set_grace_period(struct worker_session *ws, uint32_t grace_period);
/*
 * Marks gpu_id, in slot (< WORKER_TRAP_SLOTS, the same for a GPU each
 * time): the next store the trap set reports there, or the first poll of
 * watch (taken in every case; may be NULL) that finds its queues moved,
 * suspends sessions on gpu_id, in that order, with purpose, on the worker.
 * The mark replaces the slot's last; it takes effect once the commands sent
 * before it have run. Returns 0, -ENOMEM, or -EBUSY while a trap has taken
 * the slot's last mark and its trapped() is not yet dispatched.
 */
int worker_mark_suspend_on_trap(struct preemption_worker *w, size_t slot, uint32_t gpu_id, uint64_t purpose,
                                struct worker_session *const *sessions, size_t n_sessions, struct poll_watch *watch);
enum worker_unmark {
        WORKER_UNMARKED,         /* the slot had a mark, and no trap can take it from now on */
        WORKER_UNMARK_NONE,      /* the slot had none */
        WORKER_UNMARK_TOO_LATE,  /* a trap took it: its suspension is made or under way, trapped() comes */
};
/* Clears slot's mark at once, on the owner's thread. */
enum worker_unmark worker_unmark_suspend_on_trap(struct preemption_worker *w, size_t slot);
/*
 * A breakpoint of pid's, key its trap key: fds (one per thread) are
 * duplicated for the worker, which disarms them on a store of pid's on the
 * key's GPU. Returns 0, -ENOMEM, or fcntl()'s -errno.
 */
int worker_watch_breakpoint(struct preemption_worker *w, uint64_t key, pid_t pid, const int *fds, size_t n_fds);
/* The breakpoint is closed: the worker closes its duplicates. Returns 0 or -ENOMEM. */
int worker_forget_breakpoint(struct preemption_worker *w, uint64_t key);
/* The owner's loop got SIGCHLD: every session's ptrace stops are serviced. Returns 0 or -ENOMEM. */
int preemption_worker_service_ptrace(struct preemption_worker *w);

/* What the last report said. */
/* The attach has succeeded. */
bool worker_session_attached(const struct worker_session *ws);
const struct held_session_state *worker_session_state(const struct worker_session *ws);
/* Calls sent, or made on a trap, and not yet reported done, suspensions and resumptions. */
unsigned worker_session_in_flight(const struct worker_session *ws, bool suspend);
