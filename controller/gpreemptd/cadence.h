/* SPDX-License-Identifier: MIT */
/*
 * The detector's cadence: when each GPU's online queues are looked at. A
 * GPU's interval is set by what a late look would cost (README.md,
 * "Detector cadence"):
 *
 * - BusyPollIntervalUs only where it buys online latency: a GPU with offline
 *   work running and online work seen within CADENCE_RECENT_BUSY_US where
 *   only a look sees it (a busy GPU, or a queue without a breakpoint). Not
 *   where the preemption worker polls it itself (watched_elsewhere: the
 *   idle cadence, and a wakeup while one is is no idle look for the budget,
 *   which the worker's polls would stretch).
 * - A suspended GPU only waits for the end of online work, which the
 *   hold-off makes a millisecond-scale question: CADENCE_HOLD_OFF_LOOKS
 *   looks per hold-off while its online side is busy. Once that is idle,
 *   the idle cadence: work starting during the hold-off changes nothing
 *   until the resume, and the owner looks once more before resuming.
 * - Everything else IdlePollIntervalUs, stretched so that idle looks cost at
 *   most IdlePollCpuPercent of a core (each reads every polled online
 *   process), up to CADENCE_IDLE_STRETCH_MAX times the interval.
 * - A GPU whose queues are all under armed write breakpoints is not looked
 *   at at all until a trap; nor, while suspended and idle, one whose queues
 *   all have breakpoints, not armed then (detector.h, arming_held()): the
 *   owner's look before the resume is the one that counts.
 *
 * One wakeup serves every GPU that is due: the fast ones first, with a
 * quick look; then the idle ones due within half their interval, so that
 * they fall into step and share wakeups, which is what idle CPU is made of.
 * The idle series gives way once a fast GPU is due again, between two GPUs
 * and, within a GPU's look, between two processes; what is left stays due
 * and the next wakeup goes on with it, longest-waiting first. A write on a
 * busy GPU landing in a series would otherwise wait for all of it. While the
 * worker polls a GPU (watched_elsewhere), the series gives way every
 * BusyPollIntervalUs too, and goes on no sooner than one more later: the
 * loop sleeps meanwhile, and the worker's polls, which a loop at real-time
 * priority keeps off its CPU, get their turn (on a small host the other CPUs
 * may all be busy with the online and offline work).
 *
 * Pure logic: the looks, the GPUs' states and the clocks are the caller's
 * (struct cadence_ops), so tests drive it with fakes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A GPU counts as "recently busy" this long after the last online work seen there. */
#define CADENCE_RECENT_BUSY_US 200000u
/* While suspended, the end of online work is looked for this many times per hold-off. */
#define CADENCE_HOLD_OFF_LOOKS 10u
/* IdlePollCpuPercent may stretch the idle cadence to this many IdlePollIntervalUs at most. */
#define CADENCE_IDLE_STRETCH_MAX 50u
/* More GPUs than any node has (the detector's limit). */
#define CADENCE_MAX_GPUS 64

struct cadence_settings {
        uint64_t idle_poll_interval_us;
        unsigned idle_poll_cpu_percent; /* 0: IdlePollIntervalUs alone */
        uint64_t busy_poll_interval_us;
};

/* What a GPU's interval depends on, as its owner sees it now. */
struct cadence_gpu_state {
        bool offline_running; /* managed offline work attached there, not terminating */
        bool suspended;       /* its policy keeps offline work suspended */
        bool online_busy;     /* its policy's view: online work seen and not yet ended */
        uint64_t hold_off_us; /* its policy's hold-off */
        bool recently_busy;   /* busy, or a polled queue moved within CADENCE_RECENT_BUSY_US */
        /* the preemption worker polls its polled queues at the busy cadence itself (poll-watch.h) */
        bool watched_elsewhere;
};

/* A GPU with watched queues, as the detector reports it. */
struct cadence_gpu {
        uint32_t gpu_id;
        bool needs_poll;       /* false: every queue under an armed breakpoint */
        uint64_t last_poll_us; /* when its last complete look began; 0: never */
};

struct cadence_ops {
        /* The GPUs with watched queues, up to max; returns how many were written. */
        size_t (*gpus)(struct cadence_gpu *out, size_t max, void *userdata);
        void (*gpu_state)(uint32_t gpu_id, uint64_t now_us, struct cadence_gpu_state *ret, void *userdata);
        /* A busy GPU's look: the processes whose queues moved lately, and one quiet one. */
        void (*quick_look)(uint32_t gpu_id, uint64_t now_us, void *userdata);
        /* An idle GPU's look, giving way at give_way_at_us; false if it did (what is left stays due). */
        bool (*look_until)(uint32_t gpu_id, uint64_t now_us, uint64_t give_way_at_us, void *userdata);
        uint64_t (*clock_us)(void *userdata);      /* CLOCK_MONOTONIC, read while looking */
        /* the daemon's CPU time, all its threads (the budget is the daemon's): a system call */
        uint64_t (*daemon_cpu_ns)(void *userdata);
};

struct cadence {
        struct cadence_settings settings;
        uint64_t idle_look_cpu_ns; /* the daemon's CPU per idle look, wakeup and all, smoothed */
        uint64_t last_look_cpu_ns; /* the loop's CPU time when the last idle look ended */
        bool last_look_idle;       /* the last wakeup looked at idle GPUs only */
        uint64_t idle_resume_us;   /* an idle series that gave way to a GPU watched elsewhere goes on then */
};

void cadence_init(struct cadence *c, const struct cadence_settings *settings);
/* A reload: the budget's estimate is kept. */
void cadence_set(struct cadence *c, const struct cadence_settings *settings);

/* IdlePollIntervalUs as the idle CPU budget stretches it. */
uint64_t cadence_idle_interval(const struct cadence *c);
uint64_t cadence_gpu_interval(const struct cadence *c, const struct cadence_gpu_state *g);

/* One wakeup at now_us: the looks that are due. */
void cadence_wakeup(struct cadence *c, const struct cadence_ops *ops, void *userdata, uint64_t now_us);
/* When the next look is due; UINT64_MAX when no GPU needs one. */
uint64_t cadence_next_due(const struct cadence *c, const struct cadence_ops *ops, void *userdata, uint64_t now_us);
