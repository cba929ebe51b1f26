/* SPDX-License-Identifier: MIT */
/*
 * One typed wrapper per AMDKFD_IOC_DBG_TRAP operation the library uses. Each
 * fills the argument block exactly as kfd_ioctl_set_debug_trap reads it and
 * returns what kfd_ioctl() returns.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "kfd-abi.h"

int dbgtrap_enable(int kfd_fd, pid_t pid, uint64_t exception_mask, int event_fd,
                   struct kfd_runtime_info *ret_runtime_info);
int dbgtrap_disable(int kfd_fd, pid_t pid);
int dbgtrap_send_runtime_event(int kfd_fd, pid_t pid, uint64_t exception_mask);
/* Returns the number of listed queues now suspended; per-queue status bits
 * are ORed into queue_ids by the kernel. */
int dbgtrap_suspend_queues(int kfd_fd, pid_t pid, uint32_t *queue_ids, uint32_t n_queue_ids,
                           uint32_t grace_period, uint64_t clear_mask);
int dbgtrap_resume_queues(int kfd_fd, pid_t pid, uint32_t *queue_ids, uint32_t n_queue_ids);
/* -EAGAIN when no event is pending. */
int dbgtrap_query_debug_event(int kfd_fd, pid_t pid, uint64_t clear_mask, uint64_t *ret_status,
                              uint32_t *ret_gpu_id, uint32_t *ret_queue_id);
/* QUERY_EXCEPTION_INFO for EC_PROCESS_RUNTIME, clearing that bit. */
int dbgtrap_take_runtime_info(int kfd_fd, pid_t pid, struct kfd_runtime_info *ret_runtime_info);
/* *inout_n_entries: capacity in, the target's total queue count out;
 * *inout_entry_size: our entry size in, the kernel's out. */
int dbgtrap_queue_snapshot(int kfd_fd, pid_t pid, uint64_t clear_mask, void *buffer,
                           uint32_t *inout_n_entries, uint32_t *inout_entry_size);
