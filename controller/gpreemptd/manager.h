/* SPDX-License-Identifier: MIT */
/*
 * The daemon's state: the configuration, every process that uses the GPU,
 * the per-GPU policies, the detector, and the timers that drive them. All of
 * it lives on one sd-event loop in one thread, which is also the thread that
 * attaches offline processes: the kernel accepts debugger calls only from
 * the tracer thread, and the suspend ioctl is issued straight from the
 * detector's poll without a hand-over between threads (see README.md,
 * "Detector cadence").
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "detector.h"
#include "discovery.h"
#include "paths.h"
#include "policy.h"
#include "scheduling.h"

#define MANAGER_MAX_PROCESSES 1024
#define MANAGER_MAX_GPUS DETECTOR_MAX_GPUS
/* A GPU counts as "recently busy" this long after the last online work seen there. */
#define MANAGER_RECENT_BUSY_US 200000u
/* While suspended, the end of online work is looked for this many times per hold-off. */
#define MANAGER_HOLD_OFF_POLLS 10u
/* IdlePollCpuPercent may stretch the idle cadence to this many IdlePollIntervalUs at most. */
#define MANAGER_IDLE_STRETCH_MAX 20u

struct session;
struct gp_context;
struct varlink_server;

struct gpu {
        uint32_t gpu_id;
        struct policy_gpu policy;
};

struct tracked_process {
        struct manager *manager;
        pid_t pid;
        int pidfd;
        sd_event_source *exit_source;
        uint64_t kfd_identity;   /* its KFD process (discovery.c): a new one after an exec */
        bool managed;            /* a workload matched, or gpreemptctl registered it */
        bool registered;         /* the class came from gpreemptctl register */
        char *workload;          /* the matching workload's name; NULL when registered or unmanaged */
        enum workload_class class;
        struct policy_params policy;
        uint32_t gpu_ids[MANAGER_MAX_GPUS]; /* GPUs it has queues on (sysfs) */
        size_t n_gpu_ids;
        size_t n_queues;
        size_t n_compute_queues;
        uint64_t queue_signature; /* changes when its sysfs queue list does */
        uint64_t queue_dir_signature; /* of its sysfs queue directories' names and inodes (discovery.c) */
        size_t n_watched_queues;  /* online: queues the detector reads */
        struct session *session;  /* offline: the debug session */
        char *session_error;      /* offline: why there is no session */
        bool held;                /* gpreemptctl suspend: kept suspended until resume, within the bounds */
        struct policy_gpu hold_policy; /* a hold's bounds: online work that never ends */
        bool terminating;         /* got a termination signal: never suspended again */
};

struct manager {
        sd_event *event;
        struct paths paths;
        struct config *config;
        struct varlink_server *varlink;
        struct detector *detector;
        struct gp_context *gp; /* opened when the first offline process needs it */
        struct tracked_process **processes;
        size_t n_processes;
        struct gpu gpus[MANAGER_MAX_GPUS];
        size_t n_gpus;
        struct discovery discovery;
        sd_event_source *detector_timer;
        sd_event_source *policy_timer;
        sd_event_source *sigchld_source;
        uint64_t idle_look_cpu_ns;     /* this thread's CPU per idle look, wakeup and all, smoothed */
        uint64_t last_look_cpu_ns;     /* this thread's CPU time when the last idle look ended */
        bool last_look_idle;           /* it looked at idle GPUs only */
        uint64_t started_us;
        uint64_t reloads;
        struct loop_scheduling scheduling;
        bool stopping;
};

int manager_new(sd_event *event, struct paths *paths, struct config *config, struct manager **ret_manager);
/* Resumes everything, detaches from every process, frees. */
void manager_free(struct manager *m);

/* Starts discovery and detection. */
int manager_start(struct manager *m);
/* Re-reads the configuration; on errors keeps the old one and returns -EINVAL with them in diag. */
int manager_reload(struct manager *m, struct diag *diag);

uint64_t manager_now(const struct manager *m);
/* Whether any GPU is looked at faster than IdlePollIntervalUs (a busy or suspended GPU). */
bool manager_fast_cadence(struct manager *m);
struct tracked_process *manager_find_process(struct manager *m, pid_t pid);
struct gpu *manager_gpu(struct manager *m, uint32_t gpu_id);

/* (Re)classifies p from the configuration, unless gpreemptctl registered it. */
void manager_classify(struct manager *m, struct tracked_process *p);
/* Sets p's class by hand (gpreemptctl register) or back to the configuration's. */
int manager_register(struct manager *m, struct tracked_process *p, bool registered, enum workload_class class);
/* Holds p suspended on all its GPUs (gpreemptctl suspend) or releases it. */
int manager_hold(struct manager *m, struct tracked_process *p, bool hold);

/* Adds a process found by discovery; NULL and a log line if it cannot be tracked. */
struct tracked_process *manager_add_process(struct manager *m, pid_t pid);
void manager_remove_process(struct manager *m, struct tracked_process *p);
/*
 * p exec'd: its KFD process is a new one, its program may be another. The old
 * image's session or watch ends; discovery then adds the pid afresh.
 */
void manager_forget_exec(struct manager *m, struct tracked_process *p);
/* p's queues changed (sysfs): re-read what the detector or session needs. */
void manager_process_queues_changed(struct manager *m, struct tracked_process *p);
/* Whether the policy currently wants offline work on gpu_id suspended. */
bool manager_gpu_suspended(struct manager *m, uint32_t gpu_id);
/* After any policy input: arms the policy timer for the earliest deadline. */
void manager_rearm_policy(struct manager *m);
