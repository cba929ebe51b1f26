/* SPDX-License-Identifier: MIT */
/*
 * SUSPEND_QUEUES / RESUME_QUEUES (kfd_device_queue_manager.c:
 * suspend_queues, resume_queues, suspend_single_queue, resume_single_queue).
 * kfd-interface.md §4 has every rule this file follows.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "gpu.h"
#include "kfd-priv.h"
#include "usermem.h"

#define KFD_QUEUE_NOT_FOUND (-1)

/* The uapi masks are signed ints (INVALID is negative): the array is u32. */
#define KFD_QUEUE_INVALID ((uint32_t)KFD_DBG_QUEUE_INVALID_MASK)
#define KFD_QUEUE_ERROR ((uint32_t)KFD_DBG_QUEUE_ERROR_MASK)


/* get_queue_ids: memdup of the user's array. A NULL array yields no
 * array (the caller decides what that means). Newer kernels refuse more
 * ids than a process can have queues (§16.5). */
static int kfd_get_queue_ids(const struct emu_call *call, uint32_t num_queues, uint64_t array_ptr,
                             uint32_t **ret_ids)
{
        size_t size = (size_t)num_queues * sizeof(uint32_t);
        _cleanup_free_ uint32_t *ids = NULL;

        *ret_ids = NULL;
        if (!array_ptr)
                return 0;
        if (call->file->process->node->cfg.kernel.queue_ids_limit && num_queues > GP_KFD_MAX_QUEUES_PER_PROCESS)
                return -EINVAL;
        if (size > KFD_KMALLOC_MAX_SIZE)
                return -ENOMEM;
        ids = calloc(num_queues ? num_queues : 1, sizeof(uint32_t));
        if (!ids)
                return -ENOMEM;
        if (emu_copy_from_user(call->caller.tgid, ids, array_ptr, size) < 0)
                return -EFAULT;
        *ret_ids = TAKE_PTR(ids);
        return 0;
}

/* q_array_invalidate: every slot starts INVALID and is cleared on success. */
static void kfd_q_array_invalidate(uint32_t num_queues, uint32_t *ids)
{
        for (uint32_t i = 0; i < num_queues; i++)
                ids[i] |= KFD_QUEUE_INVALID;
}

/* q_array_get_index: the first slot naming the queue (duplicates stay
 * INVALID); a slot with the ERROR bit set names no queue. */
static int kfd_q_array_get_index(uint32_t queue_id, uint32_t num_queues, const uint32_t *ids)
{
        for (uint32_t i = 0; i < num_queues; i++)
                if (queue_id == (ids[i] & ~KFD_QUEUE_INVALID))
                        return (int)i;
        return KFD_QUEUE_NOT_FOUND;
}

/* An oops in the ioctl: the task dies (make_task_dead) holding
 * target->mutex, which nobody releases. Every later caller that needs it
 * sleeps in mutex_lock for good; the call itself never returns. kfdemu can
 * only kill the calling thread with SIGKILL, which ends its whole thread
 * group where the kernel ends the one task. */
static void kfd_oops(struct emu_call *call, struct emu_process *target)
{
        kfd_log(target->node,
                "BUG: kernel NULL pointer dereference, address: 0000000000000000 in q_array_invalidate "
                "(SUSPEND_QUEUES with queue_array_ptr 0 by PID %d TID %d); kernel oops: the task is killed "
                "holding the mutex of PID %d, which stays locked",
                (int)call->caller.tgid, (int)call->caller.tid, (int)target->tgid);
        kfd_lock_poison(target);
        (void)syscall(SYS_tgkill, call->caller.tgid, call->caller.tid, SIGKILL);
}

static void kfd_copy_queue_ids_back(const struct emu_call *call, uint64_t array_ptr, uint32_t num_queues,
                                    const uint32_t *ids)
{
        /* A failed copy-back is only logged: the count is still returned. */
        if (emu_copy_to_user(call->caller.tgid, array_ptr, ids, (size_t)num_queues * sizeof(uint32_t)) < 0)
                kfd_log(call->file->process->node, "copy_to_user failed on queue suspend/resume");
}

static int kfd_suspend_single_queue(struct emu_queue *q, uint64_t *delay)
{
        bool was_active = kfd_queue_is_active(q);

        if (q->is_suspended)
                return 0;
        /* A queue nobody has seen yet (EC_QUEUE_NEW) or one on its way out
         * cannot be suspended. */
        if ((q->exception_status & KFD_EC_MASK(EC_QUEUE_NEW)) || q->is_being_destroyed)
                return -EBUSY;

        q->is_suspended = true;
        emu_gpu_queue_suspension_changed(q);
        if (was_active && q->gpu->cfg.mes)
                *delay += emu_gpu_mes_remove_queue(q);
        return 0;
}

static void kfd_resume_single_queue(struct emu_queue *q)
{
        if (!q->is_suspended)
                return;
        q->is_suspended = false;
        /* is_active = true when QUEUE_IS_ACTIVE: a queue set_queue_as_reset
         * took off the runlist is mapped again (an evicted one is not). */
        if (kfd_queue_may_be_active(q))
                q->is_reset = false;
        emu_gpu_queue_suspension_changed(q);
}

int kfd_suspend_queues(struct emu_call *call, struct emu_process *target, uint32_t num_queues,
                       uint32_t grace_period, uint64_t exception_clear_mask, uint64_t queue_array_ptr,
                       uint64_t *ret_delay_ns)
{
        _cleanup_free_ uint32_t *ids = NULL;
        uint64_t delay = 0;
        int total = 0, r;

        r = kfd_get_queue_ids(call, num_queues, queue_array_ptr, &ids);
        if (r < 0)
                return r;
        if (!ids && num_queues > 0) {
                /* Kernels without "fix NULL dereference in get_queue_ids()"
                 * have no NULL check here: q_array_invalidate dereferences
                 * NULL and the ioctl oopses (§16.5). */
                if (target->node->cfg.kernel.queue_ids_null_check)
                        return -EINVAL;
                kfd_oops(call, target);
                return EMU_CALL_PARKED;
        }
        if (ids)
                kfd_q_array_invalidate(num_queues, ids);

        for (unsigned i = 0; i < target->n_pdds; i++) {
                struct emu_gpu *gpu = target->pdds[i].gpu;
                bool is_mes = gpu->cfg.mes;
                int per_device_suspended = 0;

                for (struct emu_queue *q = target->queues; q; q = q->next) {
                        int idx, err;

                        if (q->gpu != gpu || !ids)
                                continue;
                        idx = kfd_q_array_get_index(q->id, num_queues, ids);
                        if (idx == KFD_QUEUE_NOT_FOUND)
                                continue;
                        err = kfd_suspend_single_queue(q, &delay);
                        if (!err) {
                                ids[idx] &= ~KFD_QUEUE_INVALID;
                                /* MES clears only the queues it suspended. */
                                if (is_mes) {
                                        q->exception_status &= ~exception_clear_mask;
                                        total++;
                                } else {
                                        per_device_suspended++;
                                }
                        } else if (err != -EBUSY) {
                                ids[idx] |= KFD_QUEUE_ERROR;
                                break;
                        }
                }

                if (!per_device_suspended)
                        continue;

                /* HWS: one device-wide preemption with the caller's grace
                 * period, then the clear mask applies to every queue of this
                 * device that the array names, -EBUSY ones included. If it
                 * fails, those slots get ERROR instead, nothing is counted
                 * and the queues stay suspended in software (§4.1, §16). */
                r = kfd_dqm_execute_queues_for_debugger(call, gpu, grace_period, EMU_FAULT_OP_SUSPEND, &delay);
                if (r < 0)
                        kfd_log(target->node, "Failed to suspend process queues.");
                else
                        total += per_device_suspended;
                for (struct emu_queue *q = target->queues; q; q = q->next) {
                        int idx = kfd_q_array_get_index(q->id, num_queues, ids);

                        if (q->gpu != gpu || idx == KFD_QUEUE_NOT_FOUND)
                                continue;
                        if (r < 0)
                                ids[idx] |= KFD_QUEUE_ERROR;
                        else
                                q->exception_status &= ~exception_clear_mask;
                }
        }

        if (ids)
                kfd_copy_queue_ids_back(call, queue_array_ptr, num_queues, ids);
        *ret_delay_ns = delay;
        return total;
}

int kfd_resume_queues(struct emu_call *call, struct emu_process *target, uint32_t num_queues,
                      uint64_t queue_array_ptr, uint64_t *ret_delay_ns)
{
        _cleanup_free_ uint32_t *ids = NULL;
        uint64_t delay = 0;
        int total = 0, r;

        /* No array means every queue of the target (kfd_dbg_trap_deactivate). */
        r = kfd_get_queue_ids(call, num_queues, queue_array_ptr, &ids);
        if (r < 0)
                return r;
        if (ids)
                kfd_q_array_invalidate(num_queues, ids);

        for (unsigned i = 0; i < target->n_pdds; i++) {
                struct emu_gpu *gpu = target->pdds[i].gpu;
                int per_device_resumed = 0, mes_resumed = 0;

                for (struct emu_queue *q = target->queues; q; q = q->next) {
                        int idx = KFD_QUEUE_NOT_FOUND;

                        if (q->gpu != gpu)
                                continue;
                        if (ids)
                                idx = kfd_q_array_get_index(q->id, num_queues, ids);
                        if (ids && idx == KFD_QUEUE_NOT_FOUND)
                                continue;

                        /* Queues that were not suspended count as resumed. */
                        kfd_resume_single_queue(q);
                        if (ids)
                                ids[idx] &= ~KFD_QUEUE_INVALID;
                        if (gpu->cfg.mes)
                                mes_resumed++;
                        else
                                per_device_resumed++;
                }

                /* MES wakes the device's destroy waiters per resumed queue;
                 * they run once this walk is over, as they would once the
                 * dqm lock is dropped. */
                if (mes_resumed) {
                        kfd_wake_destroy_waiters(target->node, gpu);
                        total += mes_resumed;
                }
                if (!per_device_resumed)
                        continue;

                /* HWS: a device-wide preemption with the default grace
                 * period, then the destroy waiters of the device wake. If it
                 * fails, the device's slots get ERROR and nothing is
                 * counted or woken. */
                r = kfd_dqm_execute_queues_for_debugger(call, gpu, KFD_USE_DEFAULT_GRACE_PERIOD,
                                                        EMU_FAULT_OP_RESUME, &delay);
                if (r < 0) {
                        kfd_log(target->node, "Failed to resume process queues");
                        for (struct emu_queue *q = target->queues; q && ids; q = q->next) {
                                int idx = kfd_q_array_get_index(q->id, num_queues, ids);

                                if (q->gpu == gpu && idx != KFD_QUEUE_NOT_FOUND)
                                        ids[idx] |= KFD_QUEUE_ERROR;
                        }
                        continue;
                }
                kfd_wake_destroy_waiters(target->node, gpu);
                total += per_device_resumed;
        }

        if (ids)
                kfd_copy_queue_ids_back(call, queue_array_ptr, num_queues, ids);
        *ret_delay_ns = delay;
        return total;
}
