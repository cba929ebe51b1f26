/* SPDX-License-Identifier: MIT */
/*
 * The per-GPU policy: a pure state machine, driven by what the detector saw
 * and by a clock the caller passes in (so tests use a fake one). It does no
 * I/O; it says "suspend the offline queues on this GPU" or "resume them".
 *
 * - Online work seen → suspend at once (online latency is the product).
 * - Online idle for HoldOffMs, and the suspension at least CoalesceMs old →
 *   resume. Bursts closer together than the hold-off stay one suspension:
 *   every transition is a device-wide preemption on HWS GPUs.
 * - Bounds, which win over online work so offline jobs' own watchdogs do not
 *   fire: no suspension lasts longer than MaxSuspendMs (offline then runs for
 *   a slice sized by MinOfflineSharePercent), and in every ShareWindowMs
 *   window offline work is suspended at most (100 - MinOfflineSharePercent)%.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "policy-params.h"

#define POLICY_NEVER UINT64_MAX

enum policy_action {
        POLICY_ACTION_NONE,
        POLICY_ACTION_SUSPEND,
        POLICY_ACTION_RESUME,
};

enum policy_resume_reason {
        POLICY_RESUMED_IDLE,
        POLICY_RESUMED_MAX_SUSPEND,
        POLICY_RESUMED_SHARE,
        POLICY_RESUMED_FAULT, /* the GPU faulted: everything there runs during its back-off (gpu-backoff.h) */
        _POLICY_RESUMED_MAX,
};

struct policy_stats {
        uint64_t suspends;
        uint64_t resumes[_POLICY_RESUMED_MAX];
        uint64_t suspended_us; /* closed suspensions only; see policy_suspended_us() */
        uint64_t online_busy_us; /* ended busy periods only; see policy_online_busy_us() */
};

struct policy_gpu {
        struct policy_params params;
        bool online_busy;
        bool suspended;
        uint64_t idle_since;      /* valid while !online_busy */
        uint64_t busy_since;      /* valid while online_busy */
        uint64_t suspended_since; /* valid while suspended */
        uint64_t offline_run_until; /* a bound forced a resume: no suspension before this */
        uint64_t resume_not_before; /* the rate limit: an idle resume waits until the next suspension may come */
        uint64_t window_start;
        uint64_t window_suspended_us; /* suspended time inside the current window */
        uint64_t accounted_until;     /* window accounting is done up to here */
        struct policy_stats stats;
};

void policy_gpu_init(struct policy_gpu *g, const struct policy_params *params, uint64_t now_us);
/* New parameters (a reload, a workload joining or leaving the GPU) apply from now on. */
void policy_gpu_set_params(struct policy_gpu *g, const struct policy_params *params, uint64_t now_us);

/* The detector saw online work on this GPU. */
enum policy_action policy_online_busy(struct policy_gpu *g, uint64_t now_us);
/* The online side has had nothing to do since since_us (≤ now_us). */
enum policy_action policy_online_idle(struct policy_gpu *g, uint64_t since_us, uint64_t now_us);
/* Time passed: deadlines (hold-off, bounds, windows) are checked. */
enum policy_action policy_tick(struct policy_gpu *g, uint64_t now_us);
/* When policy_tick next has something to do; POLICY_NEVER if nothing is pending. */
uint64_t policy_next_deadline(const struct policy_gpu *g);

/*
 * An idle resume of the suspension in progress waits until now_us at least:
 * resuming while the next suspension would be refused (the rate limit,
 * gpu_backoff_next_suspend_us()) leaves the next online burst unprotected.
 * The bounds (MaxSuspendMs, the offline share) still end it.
 */
void policy_resume_not_before(struct policy_gpu *g, uint64_t not_before_us);
/* The GPU faulted: offline work there resumes now (POLICY_ACTION_RESUME), or NONE when it runs already. */
enum policy_action policy_resume_for_fault(struct policy_gpu *g, uint64_t now_us);

/*
 * The caller could not carry out an action (e.g. no offline queue on the GPU
 * any more): the policy forgets it, so the state matches the hardware.
 */
void policy_action_failed(struct policy_gpu *g, enum policy_action a, uint64_t now_us);

/* Total time suspended, including the suspension in progress. */
uint64_t policy_suspended_us(const struct policy_gpu *g, uint64_t now_us);
/* Total time the online side was busy (each period up to its idle report), including the period in progress. */
uint64_t policy_online_busy_us(const struct policy_gpu *g, uint64_t now_us);
/* How long offline work runs after MaxSuspendMs forced a resume. */
uint64_t policy_offline_slice_us(const struct policy_params *p);

/*
 * A GPU's parameters combine the workloads that have queues on it: the most
 * patient online hold-off and coalescing, the strictest offline bounds.
 * Classes without a workload there keep their defaults.
 */
struct policy_params_mix {
        struct policy_params online, offline;
        bool any_online, any_offline;
};

void policy_params_mix_init(struct policy_params_mix *mix, const struct policy_params *online_defaults,
                            const struct policy_params *offline_defaults);
void policy_params_mix_add(struct policy_params_mix *mix, enum workload_class class, const struct policy_params *p);
struct policy_params policy_params_mix_result(const struct policy_params_mix *mix);
