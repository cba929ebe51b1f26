/* SPDX-License-Identifier: MIT */
/*
 * A preemption that fails, and what amdkfd does about it
 * (kfd_device_queue_manager.c: unmap_queues_cpsch, amdkfd_fence_wait_timeout,
 * kfd_hws_hang, reset_queues_on_hws_hang, reset_hung_queues,
 * set_queue_as_reset; kfd_events.c: kfd_signal_reset_event; kfd_device.c:
 * kgd2kfd_pre_reset, kgd2kfd_post_reset): the HWS hang that resets the GPU,
 * the per-queue reset of newer kernels, and the execute that fails while
 * the GPU is being reset. kfd-interface.md §16.
 */
#include <errno.h>

#include "gpu.h"
#include "kfd-priv.h"

static uint32_t kfd_gpu_bit(const struct emu_gpu *gpu)
{
        return 1u << (gpu - gpu->node->gpus);
}

/* set_queue_as_reset: the queue leaves the runlist (is_active = false, out
 * of active_queue_count) until a debugger suspends and resumes it
 * (resume_single_queue maps it again); ROCr has usually aborted its process
 * by then (kfd-interface.md §16.3). */
static void kfd_set_queue_as_reset(struct emu_queue *q)
{
        q->is_reset = true;
        emu_gpu_queue_suspension_changed(q);
}

static void kfd_gpu_set_cp_hung(struct emu_gpu *gpu, bool hung)
{
        gpu->cp_hung = hung;
        for (struct emu_process *p = gpu->node->processes; p; p = p->next)
                for (struct emu_queue *q = p->queues; q; q = q->next)
                        if (q->gpu == gpu)
                                emu_gpu_queue_suspension_changed(q);
}

/* kgd2kfd_pre_reset → kgd2kfd_suspend → kfd_suspend_all_processes: every
 * KFD process's queues on every device are evicted (evict_process_queues_cpsch:
 * qpd->evicted++, is_evicted, is_active = false, then an execute on the
 * device), and kgd2kfd_post_reset restarts the device queue managers
 * without restoring them (kfd_device.c: "KFD won't be able to resume
 * existing process for now"), so they stay evicted until they end. On the
 * reset GPU the execute meets the reset domain (-EIO) and the restart
 * (start_cpsch) maps what is active: nothing. */
static void kfd_suspend_all_processes(struct emu_gpu *reset_gpu)
{
        struct emu_node *node = reset_gpu->node;
        /* The reset runs in a kernel worker: the call that met the hang
         * holds none of the dqm locks these executes take. */
        uint32_t preempted_by_caller = node->dqm_preempted;
        bool unmap[EMU_MAX_GPUS] = { false };

        for (struct emu_process *p = node->processes; p; p = p->next) {
                for (unsigned i = 0; i < p->n_pdds; i++)
                        p->pdds[i].evicted++;
                for (struct emu_queue *q = p->queues; q; q = q->next) {
                        bool was_active = kfd_queue_is_active(q);

                        if (q->is_evicted)
                                continue;
                        q->is_evicted = true;
                        emu_gpu_queue_suspension_changed(q);
                        if (was_active && q->gpu->cfg.mes)
                                (void)emu_gpu_mes_remove_queue(q);
                        unmap[q->gpu - node->gpus] |= was_active;
                }
        }
        for (unsigned i = 0; i < node->n_gpus; i++) {
                struct emu_gpu *gpu = &node->gpus[i];

                /* Nobody waits for these preemptions. */
                if (gpu == reset_gpu)
                        kfd_dqm_map_queues(gpu);
                else if (unmap[i] && !gpu->cfg.mes)
                        (void)kfd_dqm_execute_queues(gpu, KFD_USE_DEFAULT_GRACE_PERIOD);
        }
        node->dqm_preempted = preempted_by_caller;
}

/* amdgpu_amdkfd_gpu_reset, once the reset work runs: kgd2kfd_pre_reset
 * sends the GPU_PRE_RESET record, evicts every process and tells every
 * process with the device through its HW exception events
 * (kfd_signal_reset_event), the GPU is reset, kgd2kfd_post_reset sends
 * GPU_POST_RESET. */
static void kfd_gpu_reset(struct emu_gpu *gpu)
{
        kfd_log(gpu->node, "GPU reset begin! (gpu_id %u)", gpu->cfg.gpu_id);
        kfd_smi_event_gpu_reset(gpu, false);
        kfd_suspend_all_processes(gpu);
        kfd_signal_reset_event(gpu, false);
        kfd_gpu_set_cp_hung(gpu, false);
        kfd_log(gpu->node, "GPU reset succeeded (gpu_id %u)", gpu->cfg.gpu_id);
        kfd_smi_event_gpu_reset(gpu, true);
}

/* kfd_hws_hang: every process with a queue on the device gets
 * has_reset_queue, then the GPU is reset. */
static void kfd_hws_hang(struct emu_gpu *gpu)
{
        for (struct emu_process *p = gpu->node->processes; p; p = p->next) {
                struct emu_pdd *pdd = kfd_process_device_by_id(p, gpu->cfg.gpu_id);

                for (struct emu_queue *q = p->queues; q && pdd; q = q->next)
                        if (q->gpu == gpu)
                                pdd->has_reset_queue = true;
        }
        kfd_gpu_reset(gpu);
}

/* check_preemption_failed: the HIQ MQD names the doorbell of a queue that
 * did not answer the unmap (per XCC on parts with several). kfdemu prints
 * the queue's slot in its process's doorbell page. */
static void kfd_log_preemption_failed(struct emu_gpu *gpu, const struct emu_queue *q)
{
        if (gpu->cfg.num_xcc > 1)
                kfd_log(gpu->node, "XCC 0: Queue preemption failed for queue with doorbell_id: %x",
                        q->doorbell_slot);
        else
                kfd_log(gpu->node, "Queue preemption failed for queue with doorbell_id: %x", q->doorbell_slot);
}

/* check_preemption_failed, then reset_hung_queues: each queue still
 * holding its HQD (the busy ones the fault may blame) is logged and, with
 * `reset`, reset and its process marked; then only those processes get the
 * reset event. -ENOTRECOVERABLE when nothing was reset. */
static int kfd_reset_hung_queues(struct emu_gpu *gpu, bool reset_them)
{
        const struct emu_fault_config *f = &gpu->node->cfg.faults;
        unsigned reset = 0;

        for (struct emu_process *p = gpu->node->processes; p; p = p->next) {
                struct emu_pdd *pdd = kfd_process_device_by_id(p, gpu->cfg.gpu_id);

                for (struct emu_queue *q = p->queues; q && pdd; q = q->next) {
                        if (q->gpu != gpu || !kfd_fault_queue_may_hang(f, q))
                                continue;
                        if (reset == 0)
                                kfd_log_preemption_failed(gpu, q);
                        if (!reset_them)
                                return -ENOTRECOVERABLE;
                        /* The kernel prints the process's pid where it says pasid. */
                        kfd_log(gpu->node, "queue id 0x%0x at pasid %d is reset", q->id, (int)p->tgid);
                        pdd->has_reset_queue = true;
                        kfd_set_queue_as_reset(q);
                        reset++;
                }
        }
        if (reset == 0)
                return -ENOTRECOVERABLE;
        kfd_signal_reset_event(gpu, true);
        return 0;
}

int kfd_hws_inject_fault(struct emu_call *call, struct emu_gpu *gpu, enum emu_fault_kind kind,
                         uint32_t grace_period, uint64_t *delay)
{
        struct emu_node *node = gpu->node;

        switch (kind) {
        case EMU_FAULT_ERROR:
                /* execute_queues_cpsch: down_read_trylock of the reset
                 * domain fails while a reset holds it, before any packet. */
                return -EIO;
        case EMU_FAULT_TIMEOUT:
                /* amdkfd_fence_wait_timeout spins for the whole
                 * queue_preemption_timeout_ms; the CP is hung meanwhile. */
                kfd_gpu_set_cp_hung(gpu, true);
                *delay += (uint64_t)node->cfg.queue_preemption_timeout_ms * 1000000u;
                call->fence_timeout_gpus |= kfd_gpu_bit(gpu);
                return -ETIME;
        case EMU_FAULT_QUEUE_HANG:
                /* The fence signals as usual: the HIQ gave up on the queue
                 * that did not answer and logged its doorbell. */
                *delay += emu_gpu_hws_preempt(gpu, grace_period);
                if (kfd_reset_hung_queues(gpu, node->cfg.kernel.per_queue_reset) == 0)
                        return 0;
                /* Before per-queue reset, unmap_queues_cpsch returned -ETIME
                 * here without resetting anything. */
                if (!node->cfg.kernel.per_queue_reset)
                        return -ETIME;
                /* reset_fail: is_hws_hang, kfd_hws_hang, -ETIME. */
                call->hws_hang_gpus |= kfd_gpu_bit(gpu);
                return -ETIME;
        case EMU_FAULT_NONE:
                break;
        }
        return 0;
}

void kfd_hws_hang_after_wait(struct emu_call *call)
{
        struct emu_node *node;

        if (!call->fence_timeout_gpus && !call->hws_hang_gpus)
                return;
        node = call->file->process->node;
        while (call->fence_timeout_gpus) {
                unsigned i = (unsigned)__builtin_ctz(call->fence_timeout_gpus);

                call->fence_timeout_gpus &= ~(1u << i);
                kfd_log(node, "qcm fence wait loop timeout expired");
                kfd_log(node, "The cp might be in an unrecoverable state due to an unsuccessful queues preemption");
                call->hws_hang_gpus |= 1u << i;
        }
        while (call->hws_hang_gpus) {
                unsigned i = (unsigned)__builtin_ctz(call->hws_hang_gpus);

                call->hws_hang_gpus &= ~(1u << i);
                kfd_hws_hang(&node->gpus[i]);
        }
}
