/* SPDX-License-Identifier: MIT */
#include "dbgtrap.h"

#include <errno.h>

#include "kfd.h"

static int dbgtrap(int kfd_fd, pid_t pid, uint32_t op, struct kfd_ioctl_dbg_trap_args *args)
{
        args->pid = (uint32_t)pid;
        args->op = op;
        return kfd_ioctl(kfd_fd, AMDKFD_IOC_DBG_TRAP, args);
}

static uint64_t user_ptr(const void *p)
{
        return (uint64_t)(uintptr_t)p;
}

int dbgtrap_enable(int kfd_fd, pid_t pid, uint64_t exception_mask, int event_fd,
                   struct kfd_runtime_info *ret_runtime_info)
{
        struct kfd_ioctl_dbg_trap_args args = { 0 };
        struct kfd_runtime_info info = { 0 };
        int r;

        /* Always a valid rinfo buffer: when the copy-out fails,
         * kfd_dbg_trap_enable deactivates but leaves debug_trap_enabled set
         * (kfd-interface.md §9.11). */
        args.enable.exception_mask = exception_mask;
        args.enable.rinfo_ptr = user_ptr(&info);
        args.enable.rinfo_size = sizeof(info);
        args.enable.dbg_fd = (uint32_t)event_fd;
        r = dbgtrap(kfd_fd, pid, KFD_IOC_DBG_TRAP_ENABLE, &args);
        if (r < 0)
                return r;
        *ret_runtime_info = info;
        return 0;
}

int dbgtrap_disable(int kfd_fd, pid_t pid)
{
        struct kfd_ioctl_dbg_trap_args args = { 0 };

        return dbgtrap(kfd_fd, pid, KFD_IOC_DBG_TRAP_DISABLE, &args);
}

int dbgtrap_send_runtime_event(int kfd_fd, pid_t pid, uint64_t exception_mask)
{
        struct kfd_ioctl_dbg_trap_args args = { 0 };

        /* gpu_id and queue_id are ignored for EC_PROCESS_RUNTIME
         * (kfd_dbg_send_exception_to_runtime). */
        args.send_runtime_event.exception_mask = exception_mask;
        return dbgtrap(kfd_fd, pid, KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT, &args);
}

int dbgtrap_suspend_queues(int kfd_fd, pid_t pid, uint32_t *queue_ids, uint32_t n_queue_ids,
                           uint32_t grace_period, uint64_t clear_mask)
{
        struct kfd_ioctl_dbg_trap_args args = { 0 };

        /* suspend_queues has no NULL check on the array: never pass one. */
        if (!queue_ids || n_queue_ids == 0)
                return -EINVAL;
        args.suspend_queues.exception_mask = clear_mask;
        args.suspend_queues.queue_array_ptr = user_ptr(queue_ids);
        args.suspend_queues.num_queues = n_queue_ids;
        args.suspend_queues.grace_period = grace_period;
        return dbgtrap(kfd_fd, pid, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, &args);
}

int dbgtrap_resume_queues(int kfd_fd, pid_t pid, uint32_t *queue_ids, uint32_t n_queue_ids)
{
        struct kfd_ioctl_dbg_trap_args args = { 0 };

        /* A NULL array means "every queue of the target" to resume_queues;
         * the library always names the queues it means. */
        if (!queue_ids || n_queue_ids == 0)
                return -EINVAL;
        args.resume_queues.queue_array_ptr = user_ptr(queue_ids);
        args.resume_queues.num_queues = n_queue_ids;
        return dbgtrap(kfd_fd, pid, KFD_IOC_DBG_TRAP_RESUME_QUEUES, &args);
}

int dbgtrap_query_debug_event(int kfd_fd, pid_t pid, uint64_t clear_mask, uint64_t *ret_status,
                              uint32_t *ret_gpu_id, uint32_t *ret_queue_id)
{
        struct kfd_ioctl_dbg_trap_args args = { 0 };
        int r;

        args.query_debug_event.exception_mask = clear_mask;
        r = dbgtrap(kfd_fd, pid, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &args);
        if (r < 0)
                return r;
        *ret_status = args.query_debug_event.exception_mask;
        *ret_gpu_id = args.query_debug_event.gpu_id;
        *ret_queue_id = args.query_debug_event.queue_id;
        return 0;
}

int dbgtrap_take_runtime_info(int kfd_fd, pid_t pid, struct kfd_runtime_info *ret_runtime_info)
{
        struct kfd_ioctl_dbg_trap_args args = { 0 };
        struct kfd_runtime_info info = { 0 };
        int r;

        args.query_exception_info.info_ptr = user_ptr(&info);
        args.query_exception_info.info_size = sizeof(info);
        args.query_exception_info.exception_code = EC_PROCESS_RUNTIME;
        args.query_exception_info.clear_exception = 1;
        r = dbgtrap(kfd_fd, pid, KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO, &args);
        if (r < 0)
                return r;
        *ret_runtime_info = info;
        return 0;
}

int dbgtrap_queue_snapshot(int kfd_fd, pid_t pid, uint64_t clear_mask, void *buffer,
                           uint32_t *inout_n_entries, uint32_t *inout_entry_size)
{
        struct kfd_ioctl_dbg_trap_args args = { 0 };
        int r;

        args.queue_snapshot.exception_mask = clear_mask;
        args.queue_snapshot.snapshot_buf_ptr = user_ptr(buffer);
        args.queue_snapshot.num_queues = *inout_n_entries;
        args.queue_snapshot.entry_size = *inout_entry_size;
        r = dbgtrap(kfd_fd, pid, KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &args);
        if (r < 0)
                return r;
        *inout_n_entries = args.queue_snapshot.num_queues;
        *inout_entry_size = args.queue_snapshot.entry_size;
        return 0;
}
