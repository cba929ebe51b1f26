/* SPDX-License-Identifier: MIT */
/*
 * The device queue manager's scheduler actions that cost a preemption
 * (kfd_device_queue_manager.c): execute_queues_cpsch, debug_refresh_runlist
 * and the debug VMID reservation of GPUs without per-VMID debugging.
 */
#include <errno.h>

#include "gpu.h"
#include "kfd-priv.h"

static bool kfd_gpu_has_active_queue(const struct emu_gpu *gpu)
{
        for (const struct emu_process *p = gpu->node->processes; p; p = p->next)
                for (const struct emu_queue *q = p->queues; q; q = q->next)
                        if (q->gpu == gpu && kfd_queue_is_active(q))
                                return true;
        return false;
}

/* map_queues_cpsch: a runlist is sent only if some queue is active
 * (dqm->active_queue_count > 0); unmap_queues_cpsch clears it. Its callers
 * tell the GPU model. */
void kfd_dqm_map_queues(struct emu_gpu *gpu)
{
        gpu->active_runlist = kfd_gpu_has_active_queue(gpu);
}

uint64_t kfd_dqm_execute_queues(struct emu_gpu *gpu, uint32_t grace_period)
{
        uint64_t delay;

        /* MES schedules per queue: there is no runlist to rebuild. */
        if (gpu->cfg.mes)
                return 0;
        /* unmap_queues_cpsch returns at once without an active runlist:
         * nothing is mapped, so nothing is preempted or waited for
         * (kfd-interface.md §16.4). Otherwise every queue of every process
         * on the device is preempted; then the runlist is sent again, if a
         * queue is left to map. */
        if (gpu->active_runlist) {
                kfd_dqm_note_preemption(gpu);
                delay = emu_gpu_hws_preempt(gpu, grace_period);
                kfd_dqm_map_queues(gpu);
                return delay;
        }
        kfd_dqm_map_queues(gpu);
        if (gpu->active_runlist)
                emu_gpu_hws_map(gpu);
        return 0;
}

int kfd_dqm_execute_queues_for_debugger(struct emu_call *call, struct emu_gpu *gpu, uint32_t grace_period,
                                        enum emu_fault_op op, uint64_t *delay)
{
        enum emu_fault_kind fault;
        int r;

        /* Only an unmap that is sent can fail; its fence is what hangs. */
        if (gpu->cfg.mes || !gpu->active_runlist)
                fault = EMU_FAULT_NONE;
        else
                fault = kfd_fault_pick(gpu, op);
        if (fault == EMU_FAULT_NONE) {
                *delay += kfd_dqm_execute_queues(gpu, grace_period);
                return 0;
        }
        /* The hung call holds the dqm lock for its whole wait, as
         * execute_queues_cpsch's caller does. */
        kfd_dqm_note_preemption(gpu);
        r = kfd_hws_inject_fault(call, gpu, fault, grace_period, delay);
        /* -EIO sent nothing: the old runlist stays. Otherwise the runlist
         * is mapped again, by this call or by the reset's restart
         * (start_cpsch). */
        if (r != -EIO)
                kfd_dqm_map_queues(gpu);
        return r;
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
