/* SPDX-License-Identifier: MIT */
/*
 * AMDKFD_IOC_DBG_TRAP (kfd_chardev.c: kfd_ioctl_set_debug_trap): the checks
 * every op goes through, in the kernel's order (kfd-interface.md §3), and
 * the dispatch to the op.
 */
#include <errno.h>

#include "kfd-priv.h"

/* Ops that touch the hardware need the target's runtime to be enabled. */
static bool kfd_dbg_op_needs_runtime(uint32_t op)
{
        switch (op) {
        case KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE:
        case KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE:
        case KFD_IOC_DBG_TRAP_SUSPEND_QUEUES:
        case KFD_IOC_DBG_TRAP_RESUME_QUEUES:
        case KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH:
        case KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH:
        case KFD_IOC_DBG_TRAP_SET_FLAGS:
                return true;
        default:
                return false;
        }
}

/* The ops that take target->event_mutex: the queries and snapshots
 * (kfd_dbg_ev_query_debug_event, kfd_dbg_trap_query_exception_info,
 * pqm_get_queue_snapshot, kfd_dbg_trap_device_snapshot),
 * kfd_dbg_set_enabled_debug_exception_mask and suspend_queues. */
static bool kfd_dbg_op_needs_event_mutex(uint32_t op)
{
        switch (op) {
        case KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT:
        case KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO:
        case KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT:
        case KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT:
        case KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED:
        case KFD_IOC_DBG_TRAP_SUSPEND_QUEUES:
                return true;
        default:
                return false;
        }
}

/* The GPUs (bit = index in node->gpus) whose dqm lock the op takes:
 * suspend_queues and resume_queues per device, and ENABLE/DISABLE through
 * the runlist refresh and the debug VMID (kfd_dbg_trap_activate,
 * kfd_dbg_trap_deactivate). */
static uint32_t kfd_dbg_op_dqm_gpus(const struct emu_process *target, uint32_t op)
{
        uint32_t gpus = 0;

        switch (op) {
        case KFD_IOC_DBG_TRAP_ENABLE:
        case KFD_IOC_DBG_TRAP_DISABLE:
        case KFD_IOC_DBG_TRAP_SUSPEND_QUEUES:
        case KFD_IOC_DBG_TRAP_RESUME_QUEUES:
                for (unsigned i = 0; i < target->n_pdds; i++)
                        gpus |= 1u << (unsigned)(target->pdds[i].gpu - target->node->gpus);
                return gpus;
        default:
                return 0;
        }
}

/* Steps 2-4: find the task in the caller's pid namespace, then its
 * kfd_process. ENABLE by the task's tracer creates one for a target that
 * never opened /dev/kfd. */
static int kfd_dbg_find_target(struct emu_call *call, const struct kfd_ioctl_dbg_trap_args *args,
                               struct kfd_task *ret_task, struct emu_process **ret)
{
        struct emu_node *node = call->file->process->node;
        struct kfd_task task;
        struct emu_process *target;
        int r;

        r = kfd_find_task(&call->caller, args->pid, &task);
        if (r < 0 || !task.has_mm)
                return -ESRCH;

        target = kfd_lookup_process_by_tgid(node, task.tgid);
        if (!target && args->op == KFD_IOC_DBG_TRAP_ENABLE && task.tid != call->caller.tid &&
            task.tracer_tid == call->caller.tid) {
                r = kfd_create_process(node, task.tgid, &target);
                if (r < 0)
                        return r;
        }
        if (!target)
                return -ESRCH;
        *ret_task = task;
        *ret = target;
        return 0;
}

/* ptrace_parent(target->lead_thread) == current. The task just looked up
 * is usually the leader itself: its TracerPid is already known. */
static bool kfd_dbg_traced_by_caller(const struct emu_call *call, const struct kfd_task *task,
                                     const struct emu_process *target)
{
        if (task->tid == target->tgid)
                return task->tracer_tid != 0 && task->tracer_tid == call->caller.tid;
        return kfd_ptrace_parent_is(target->tgid, call->caller.tid);
}

static long kfd_dbg_trap_dispatch(struct emu_call *call, struct emu_process *p, struct emu_process *target,
                                  struct emu_pdd *pdd, struct kfd_ioctl_dbg_trap_args *args)
{
        uint64_t delay = 0;
        int r;

        switch (args->op) {
        case KFD_IOC_DBG_TRAP_ENABLE:
                /* Recorded before the enable, even if it then fails. */
                if (target != p)
                        target->debugger_process = p;
                r = kfd_dbg_trap_enable(call, target, args->enable.dbg_fd, args->enable.rinfo_ptr,
                                        &args->enable.rinfo_size);
                if (r == 0)
                        target->exception_enable_mask = args->enable.exception_mask;
                return r;
        case KFD_IOC_DBG_TRAP_DISABLE:
                return kfd_dbg_trap_disable(target);
        case KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT:
                return kfd_dbg_send_exception_to_runtime(target, args->send_runtime_event.gpu_id,
                                                         args->send_runtime_event.queue_id,
                                                         args->send_runtime_event.exception_mask);
        case KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED:
                kfd_dbg_set_enabled_debug_exception_mask(target, args->set_exceptions_enabled.exception_mask,
                                                         call);
                return 0;
        case KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE:
                return kfd_dbg_trap_set_wave_launch_override(
                        target, args->launch_override.override_mode, args->launch_override.enable_mask,
                        args->launch_override.support_request_mask, &args->launch_override.enable_mask,
                        &args->launch_override.support_request_mask);
        case KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE:
                return kfd_dbg_trap_set_wave_launch_mode(target, args->launch_mode.launch_mode);
        case KFD_IOC_DBG_TRAP_SUSPEND_QUEUES:
                r = kfd_suspend_queues(call, target, args->suspend_queues.num_queues,
                                       args->suspend_queues.grace_period, args->suspend_queues.exception_mask,
                                       args->suspend_queues.queue_array_ptr, &delay);
                return kfd_return_after_device(p->node, call, r, delay);
        case KFD_IOC_DBG_TRAP_RESUME_QUEUES:
                r = kfd_resume_queues(call, target, args->resume_queues.num_queues,
                                      args->resume_queues.queue_array_ptr, &delay);
                return kfd_return_after_device(p->node, call, r, delay);
        case KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH:
                return kfd_dbg_trap_set_dev_address_watch(pdd, &args->set_node_address_watch.id);
        case KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH:
                return kfd_dbg_trap_clear_dev_address_watch(pdd, args->clear_node_address_watch.id);
        case KFD_IOC_DBG_TRAP_SET_FLAGS:
                return kfd_dbg_trap_set_flags(target, &args->set_flags.flags);
        case KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT: {
                uint64_t status;

                r = kfd_dbg_ev_query_debug_event(target, &args->query_debug_event.queue_id,
                                                 &args->query_debug_event.gpu_id,
                                                 args->query_debug_event.exception_mask, &status);
                /* In: the clear mask; out: the source's whole status. */
                args->query_debug_event.exception_mask = status;
                return r;
        }
        case KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO:
                return kfd_dbg_trap_query_exception_info(
                        call, target, args->query_exception_info.source_id,
                        args->query_exception_info.exception_code, args->query_exception_info.clear_exception,
                        args->query_exception_info.info_ptr, &args->query_exception_info.info_size);
        case KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT:
                return kfd_pqm_get_queue_snapshot(call, target, args->queue_snapshot.exception_mask,
                                                  args->queue_snapshot.snapshot_buf_ptr,
                                                  &args->queue_snapshot.num_queues,
                                                  &args->queue_snapshot.entry_size);
        case KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT:
                return kfd_dbg_trap_device_snapshot(call, target, args->device_snapshot.exception_mask,
                                                    args->device_snapshot.snapshot_buf_ptr,
                                                    &args->device_snapshot.num_devices,
                                                    &args->device_snapshot.entry_size);
        default:
                kfd_log(p->node, "Invalid option: %u", args->op);
                return -EINVAL;
        }
}

long kfd_ioctl_set_debug_trap(struct emu_call *call, struct emu_process *p, void *data)
{
        struct kfd_ioctl_dbg_trap_args *args = data;
        struct emu_node *node = p->node;
        struct emu_process *target = NULL;
        struct emu_pdd *pdd = NULL;
        struct kfd_task task;
        int r;

        /* 1. The whole debugger API needs the hardware scheduler. */
        if (node->cfg.sched_policy == KFD_SCHED_POLICY_NO_HWS) {
                kfd_log(node, "Debugging does not support sched_policy %i", node->cfg.sched_policy);
                return -EINVAL;
        }

        /* 2-4. */
        r = kfd_dbg_find_target(call, args, &task, &target);
        if (r < 0)
                return r;

        /* 5. Only the tracer *thread* may debug another process; DISABLE
         * and self-debugging skip the check. */
        if (target != p && args->op != KFD_IOC_DBG_TRAP_DISABLE &&
            !kfd_dbg_traced_by_caller(call, &task, target)) {
                kfd_log(node, "PID %i is not PTRACED and cannot be debugged", (int)args->pid);
                return -EPERM;
        }

        /* 6. mutex_lock(&target->mutex), held for the rest of the op. */
        if (kfd_lock_wait(target, KFD_LOCK_MUTEX, call))
                return EMU_CALL_PARKED;

        /* 7. */
        if (args->op != KFD_IOC_DBG_TRAP_ENABLE && !target->debug_trap_enabled) {
                kfd_log(node, "PID %i not debug enabled for op %u", (int)args->pid, args->op);
                return -EINVAL;
        }

        /* 8. The uapi comment says EACCES; the code returns EPERM. */
        if (target->runtime_info.runtime_state != DEBUG_RUNTIME_STATE_ENABLED && kfd_dbg_op_needs_runtime(args->op))
                return -EPERM;

        /* 9. */
        if (args->op == KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH ||
            args->op == KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH) {
                pdd = kfd_process_device_by_id(target, args->op == KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH
                                                               ? args->set_node_address_watch.gpu_id
                                                               : args->clear_node_address_watch.gpu_id);
                if (!pdd)
                        return -ENODEV;
        }

        /* The ops that read or clear exception state take event_mutex. */
        if (kfd_dbg_op_needs_event_mutex(args->op) && kfd_lock_wait(target, KFD_LOCK_EVENT_MUTEX, call))
                return EMU_CALL_PARKED;

        /* The ops that change the runlist take the dqm lock of each of the
         * target's GPUs in turn; kfdemu waits until all are free. */
        if (kfd_dqm_lock_wait(node, kfd_dbg_op_dqm_gpus(target, args->op), call))
                return EMU_CALL_PARKED;
        /* suspend_queues keeps event_mutex across its preemption. */
        kfd_call_note_locks(call, target,
                            KFD_LOCK_MUTEX | (args->op == KFD_IOC_DBG_TRAP_SUSPEND_QUEUES ? KFD_LOCK_EVENT_MUTEX : 0));

        /* 10. */
        return kfd_dbg_trap_dispatch(call, p, target, pdd, args);
}
