/* SPDX-License-Identifier: MIT */
/*
 * The device queue manager's scheduler actions that cost a preemption
 * (kfd_device_queue_manager.c): execute_queues_cpsch, debug_refresh_runlist
 * and the debug VMID reservation of GPUs without per-VMID debugging.
 */
#include <errno.h>

#include "gpu.h"
#include "kfd-priv.h"

uint64_t kfd_dqm_execute_queues(struct emu_gpu *gpu, uint32_t grace_period)
{
        /* MES schedules per queue: there is no runlist to rebuild. */
        if (gpu->cfg.mes)
                return 0;
        /* unmap_queues_cpsch + map_queues_cpsch: every queue of every
         * process on the device is preempted, then the runlist is re-sent. */
        kfd_dqm_note_preemption(gpu);
        return emu_gpu_hws_preempt(gpu, grace_period);
}

void kfd_debug_refresh_runlist(struct emu_gpu *gpu)
{
        /* debug_lock_and_unmap returns at once unless debugging is per VMID. */
        if (kfd_dbg_is_per_vmid_supported(gpu))
                kfd_dqm_execute_queues(gpu, KFD_USE_DEFAULT_GRACE_PERIOD);
}

int kfd_reserve_debug_trap_vmid(struct emu_gpu *gpu, struct emu_process *p)
{
        if (gpu->debug_vmid_owner) {
                kfd_log(gpu->node, "Trap debug id already reserved");
                return -EBUSY;
        }
        /* The VMID is taken from HWS between an unmap of all queues and the
         * remap (reserve_debug_trap_vmid). */
        gpu->debug_vmid_owner = p;
        kfd_dqm_execute_queues(gpu, KFD_USE_DEFAULT_GRACE_PERIOD);
        return 0;
}

int kfd_release_debug_trap_vmid(struct emu_gpu *gpu)
{
        /* release_debug_trap_vmid checks only that one is reserved, not by whom. */
        if (!gpu->debug_vmid_owner) {
                kfd_log(gpu->node, "Trap debug id is not reserved");
                return -EINVAL;
        }
        gpu->debug_vmid_owner = NULL;
        kfd_dqm_execute_queues(gpu, KFD_USE_DEFAULT_GRACE_PERIOD);
        return 0;
}
