/* SPDX-License-Identifier: MIT */
/*
 * The knobs of the per-GPU policy. Each belongs to one workload class: the
 * online side decides how eagerly offline work comes back, the offline side
 * bounds how long it may be kept off the GPU.
 */
#pragma once

#include <stdint.h>

enum workload_class {
        WORKLOAD_CLASS_ONLINE,
        WORKLOAD_CLASS_OFFLINE,
        _WORKLOAD_CLASS_MAX,
};

struct policy_params {
        /* online: resume offline work once the online side has been idle this long */
        uint64_t hold_off_us;
        /* online: a suspension lasts at least this long (each transition is a device-wide preemption) */
        uint64_t coalesce_us;
        /* offline: longest continuous suspension */
        uint64_t max_suspend_us;
        /* offline: the window over which the minimum share is guaranteed */
        uint64_t share_window_us;
        /* offline: least share of every window during which offline work runs */
        unsigned min_offline_share_percent;
};

/*
 * Defaults, and why:
 * - HoldOffMs=2: inference issues kernels ~1 ms apart inside one request, so a
 *   shorter hold-off would resume between kernels of the same request.
 * - CoalesceMs=1: keeps the rate of device-wide preemptions below 1 kHz.
 * - MaxSuspendMs=500, MinOfflineSharePercent=10, ShareWindowMs=1000: collective
 *   communication watchdogs fire after seconds to minutes; a tenth of every
 *   second keeps offline jobs visibly progressing.
 */
#define POLICY_DEFAULT_HOLD_OFF_US 2000u
#define POLICY_DEFAULT_COALESCE_US 1000u
#define POLICY_DEFAULT_MAX_SUSPEND_US 500000u
#define POLICY_DEFAULT_SHARE_WINDOW_US 1000000u
#define POLICY_DEFAULT_MIN_OFFLINE_SHARE_PERCENT 10u
/* A share of 100% would never allow a suspension; above this the policy is pointless. */
#define POLICY_MAX_MIN_OFFLINE_SHARE_PERCENT 90u

static inline struct policy_params policy_params_default(void)
{
        return (struct policy_params){
                .hold_off_us = POLICY_DEFAULT_HOLD_OFF_US,
                .coalesce_us = POLICY_DEFAULT_COALESCE_US,
                .max_suspend_us = POLICY_DEFAULT_MAX_SUSPEND_US,
                .share_window_us = POLICY_DEFAULT_SHARE_WINDOW_US,
                .min_offline_share_percent = POLICY_DEFAULT_MIN_OFFLINE_SHARE_PERCENT,
        };
}

const char *workload_class_to_string(enum workload_class c);
/* Returns the class, or -EINVAL. */
int workload_class_from_string(const char *s);
