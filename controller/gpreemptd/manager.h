/* SPDX-License-Identifier: MIT */
/*
 * The daemon's state and its decisions: the configuration, every process
 * that uses the GPU, the per-GPU policies, and the timers that drive them.
 * Its parts report upward only, through callbacks, and the manager decides:
 *
 *   manager ── discovery  pids appearing, replaced by an exec, vanishing, relisted
 *           ├─ held_session (common/)  an offline process's queues, runtime, end
 *           ├─ detector   a GPU's online side busy or idle, a watched process gone
 *           ├─ cadence    when the detector looks (pure: the manager gives it the GPUs' states)
 *           └─ policy     per GPU: suspend or resume (pure)
 *
 * All of it lives on one sd-event loop in one thread. The debugger calls on
 * offline processes are made by the preemption worker, the thread that is
 * their tracer (preemption-worker.h): the manager sends them and goes on,
 * and learns what came of them from the worker's reports, dispatched on the
 * loop. Its decisions therefore allow for calls in flight.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "cadence.h"
#include "cluster-identity.h"
#include "cgroup-freezer.h"
#include "config.h"
#include "gpu-backoff.h"
#include "paths.h"
#include "policy.h"
#include "process-queues.h"
#include "registrations.h"
#include "loop-scheduling.h"
#include "metrics.h"

#define MANAGER_MAX_PROCESSES 1024
#define MANAGER_MAX_GPUS PROCESS_QUEUES_MAX_GPUS
_Static_assert(MANAGER_MAX_GPUS == METRICS_MAX_GPUS, "a process's counters are kept per GPU index");

struct background_read;
struct detector;
struct discovery;
struct preemption_worker;
struct smi_events;
struct varlink_server;
struct worker_session;

/* The calls of a GPU's last policy decision, as the worker reports them done. */
struct gpu_batch {
        uint64_t number; /* of the decision; the calls carry it */
        bool suspend;
        unsigned pending; /* sent, not yet done */
        unsigned done;    /* succeeded */
};

/*
 * A GPU's suspend-on-trap mark (preemption-worker.h), in the worker's slot
 * numbered as the GPU's index in gpus[]: its policy would suspend at a
 * store now, and may. Kept in step by update_trap_mark() in manager.c.
 */
struct gpu_trap_mark {
        bool active;  /* the worker holds a mark of ours that no trap was known to take */
        bool taken;   /* a trap took it: its report decides, no mark until then */
        struct worker_session **sessions; /* the sessions marked, in order */
        size_t n_sessions;
        uint64_t watch_serial;   /* the detector's watch serial of the GPU when the mark was made */
        uint64_t watch_until_us; /* the mark's watch of the polled queues is polled until then; 0: none */
};

struct gpu {
        uint32_t gpu_id;
        struct policy_gpu policy;
        struct gpu_batch batch;
        struct metrics_gpu metrics;
        struct gpu_backoff backoff;     /* faults stop preemption here for a while; the rate limit */
        uint64_t suspend_retry_us;      /* a refused suspension is asked again then (CLOCK_MONOTONIC); 0: none */
        uint64_t faults[_GPU_FAULT_KIND_MAX]; /* by kind, for the metrics */
        struct smi_events *smi;         /* its KFD SMI events (GPU resets), NULL where the kernel has none */
        struct gpu_trap_mark trap;
};

/* A caller of manager_hold() waiting for the outcome of its call (manager_hold_wait()). */
struct hold_waiter {
        void (*done)(struct hold_waiter *w, int result, const char *why);
        /* the manager's while waiting */
        struct tracked_process *process;
        uint64_t call;
        struct hold_waiter *next;
};

struct tracked_process {
        struct manager *manager;
        pid_t pid;
        int pidfd;
        sd_event_source *exit_source;
        bool managed;            /* a workload matched, or gpreemptctl registered it */
        bool registered;         /* the class came from a registration (its own or an ancestor's) */
        char *workload;          /* the matching workload's name, or the registration's; NULL if none */
        struct cluster_identity cluster; /* the Slurm job or Kubernetes pod it is part of, if any */
        enum workload_class class;
        struct policy_params policy;
        struct process_queues queues; /* as sysfs lists them */
        size_t n_watched_queues;  /* online: queues the detector reads */
        bool watch_again;         /* online: its queues changed while their addresses were being read */
        struct worker_session *session; /* offline: the debug session, on the worker (attaching until it reports) */
        char *session_error;      /* offline: why there is no session */
        uint64_t attach_retry_us; /* offline, not attached: the wait before the next try; 0: no more tries */
        uint64_t attach_retry_at; /* when the next try is due (CLOCK_MONOTONIC) */
        bool held;                /* gpreemptctl suspend: kept suspended until resume, within the bounds */
        struct policy_gpu hold_policy; /* a hold's bounds: online work that never ends */
        uint64_t hold_retry_us;   /* held: a suspension MaxPreemptionsPerSecond= refused is asked again then; 0: none */
        struct hold_waiter *hold_waiters; /* callers of manager_hold() waiting for its call's outcome */
        uint64_t process_calls;   /* its own calls sent (CALL_FOR_PROCESS): each carries its number, for hold_waiters */
        bool terminating;         /* got a termination signal: never suspended again */
        int failed_errno;         /* the last suspend/resume failure logged (-errno), 0 after a success */
        int stop_signal;          /* offline: the signal of its group-stop (SIGSTOP...), 0 when not stopped */
        enum cgroup_freezer_kind freezer; /* offline, attached: the freezer over its cgroup, if any */
        char *freezer_state;      /* that freezer's state file */
        bool frozen;              /* offline: its cgroup is frozen */
        struct metrics_process metrics; /* its transitions, per GPU index, since it got its identity */
        bool counted;             /* metrics_id holds the identity its counts are kept under */
        struct metrics_identity metrics_id; /* owned here */
};

struct manager {
        sd_event *event;
        struct paths paths;
        struct config *config;
        struct varlink_server *varlink;
        struct detector *detector;
        struct discovery *discovery;
        struct background_read *reads;    /* debugfs mqds, read off the loop */
        struct preemption_worker *worker; /* the tracer of every offline process */
        struct tracked_process **processes;
        size_t n_processes;
        struct registrations registrations; /* io.gpreempt.Register */
        struct gpu gpus[MANAGER_MAX_GPUS];
        size_t n_gpus;
        struct cadence cadence;
        sd_event_source *detector_timer;
        sd_event_source *policy_timer;
        sd_event_source *sigchld_source;
        uint64_t started_us;
        uint64_t reloads;
        struct loop_scheduling scheduling;
        struct metrics_retired metrics_retired; /* the counts of processes gone or re-identified */
        uint64_t errors[_METRICS_ERROR_MAX];
        int kfd_fd;          /* the daemon's own /dev/kfd, for the GPUs' SMI events; -1 until the first GPU */
        bool smi_unavailable; /* opening it failed, which would fail for every GPU */
};

int manager_new(sd_event *event, struct paths *paths, struct config *config, struct manager **ret_manager);
/* Resumes everything, detaches from every process, frees. */
void manager_free(struct manager *m);

/* Starts discovery and detection. */
int manager_start(struct manager *m);
/* Re-reads the configuration; on errors keeps the old one and returns -EINVAL with them in diag. */
int manager_reload(struct manager *m, struct diag *diag);

uint64_t manager_now(const struct manager *m);
/* The index of a GPU in gpus[] (what per-GPU counters are kept by), or -ENOENT. */
int manager_gpu_index(const struct manager *m, uint32_t gpu_id);
/* Whether the node has a KFD (amdgpu loaded, an AMD GPU): without one there is nothing to manage. */
bool manager_kfd_present(const struct manager *m);
struct tracked_process *manager_find_process(struct manager *m, pid_t pid);
/* Drops the retired series of cluster jobs gone long enough (metrics_retired_expire()); before each Metrics answer. */
void manager_expire_metrics(struct manager *m);

/*
 * Registers pid (which need not use the GPU yet) and the processes it
 * starts as class, named name (may be NULL); every tracked process is
 * classified again. Returns registrations_set()'s -errno or 0.
 */
int manager_register(struct manager *m, pid_t pid, enum workload_class class, const char *name);
/*
 * Drops pid's own registration: it and what it covered go back to the
 * configuration. Returns -ENOENT when pid is tracked but has no
 * registration of its own (it may be covered by another's), -ESRCH when it
 * is neither registered nor tracked.
 */
int manager_unregister(struct manager *m, pid_t pid);
/*
 * Holds p suspended on all its GPUs (gpreemptctl suspend) or releases it
 * (-EALREADY: it was not held, and nothing is done). A hold is refused with -EBUSY while one of p's GPUs backs off
 * (manager_gpu_backing_off()); its suspensions take MaxPreemptionsPerSecond=
 * tokens as the GPUs' own do, so the first may come later than the call.
 */
int manager_hold(struct manager *m, struct tracked_process *p, bool hold, uint64_t *ret_call);
/*
 * Waits for the call manager_hold() made (its *ret_call, never 0): done() is
 * called once the worker reports it (result 0 or its -errno, why its
 * sentence or NULL), or when it can no longer come (-ESRCH: p is gone;
 * -ENOTCONN: p was let go, why says why). w is the caller's again after
 * done(), or after manager_hold_unwait(), which takes it back unanswered.
 */
void manager_hold_wait(struct tracked_process *p, uint64_t call, struct hold_waiter *w);
void manager_hold_unwait(struct hold_waiter *w);
/* Of p's GPUs, the one whose back-off ends last; NULL when none backs off. */
const struct gpu *manager_gpu_backing_off(struct manager *m, const struct tracked_process *p);
