/* SPDX-License-Identifier: MIT */
/*
 * What one preemption costs: pure arithmetic over the GPU's configuration
 * and what the unmap finds on the device, so the unit tests can check it
 * without a clock. README.md ("The GPU time model") describes both models.
 */
#pragma once

#include <stdint.h>

#include "state.h"

/* SUSPEND_QUEUES' grace period when the caller leaves the register alone
 * (KFD's USE_DEFAULT_GRACE_PERIOD: resume, queue create/destroy). */
#define EMU_GRACE_PERIOD_DEFAULT 0xffffffffu

/* What one execute_queues_cpsch (or one MES queue removal) finds. Wave
 * state is counted in workgroup slots of the model. */
struct emu_runlist_change {
        double saved_slots;      /* resident waves the unmap saves (queues staying or leaving) */
        double restored_slots;   /* saved waves the remap brings back (queues staying or entering) */
        unsigned mapped_queues;  /* queues in the runlist the remap sends */
        uint32_t grace_period;   /* the caller's, or EMU_GRACE_PERIOD_DEFAULT */
};

struct emu_preempt_cost {
        uint64_t ioctl_ns;       /* until the unmap fence signals: what the caller waits */
        uint64_t stall_ns;       /* until the device's queues run again: + remap + restore */
};

void emu_preempt_cost(const struct emu_gpu_config *cfg, const struct emu_runlist_change *change,
                      struct emu_preempt_cost *ret);

/* Saving `slots` of resident waves after the grace period (the unmap's
 * share of the ioctl beyond its fixed part). */
uint64_t emu_cwsr_save_ns(const struct emu_gpu_config *cfg, double slots, uint32_t grace_period);
/* Restoring `slots` of saved waves onto the CUs (a queue re-added on MES). */
uint64_t emu_cwsr_restore_ns(const struct emu_gpu_config *cfg, double slots);

/* Moving one workgroup slot's share of a CU's wave state to or from the
 * save area (the waves model's rate; 0 when unknown). */
double emu_cwsr_ns_per_slot(const struct emu_gpu_config *cfg);

/* The processes the HWS runs at once: cfg->kfd_vmids, or the VMIDs
 * gmc_v9_0 leaves to KFD (first_kfd_vmid 3 on GC 9.4.1-9.5.0, else 8, of
 * 16). */
unsigned emu_kfd_vmids(const struct emu_gpu_config *cfg);

/* The wave state of one full CU: cfg->cwsr_bytes_per_cu, or what
 * kfd_queue_ctx_save_restore_size sizes the save area for. */
uint64_t emu_cwsr_bytes_per_cu(const struct emu_gpu_config *cfg);
