/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the transport's end-to-end tests, which run
 * inside kfdemu-run and talk to /dev/kfd through plain libc calls. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kfd-abi.h"

/* ioctl() as a -errno return. */
int kfd_test_ioctl(int fd, unsigned long request, void *arg);
/* GET_VERSION on `fd`: 0 and 1.13 on success, else -errno. */
int kfd_test_get_version(int fd);
/* The gpu_id of topology node `node`, from sysfs; 0 if unreadable. */
uint32_t kfd_test_gpu_id(unsigned node);
/* ACQUIRE_VM of every GPU with its render node, once per process (as the
 * thunk keeps one render fd per GPU): amdkfd creates queues only on
 * devices whose VM the process has. */
int kfd_test_acquire_vms(int kfd);
/* /sys/class/kfd/kfd/proc/<pid> exists. */
bool kfd_test_proc_dir_exists(pid_t pid);
/* Waits up to `timeout_ms` for kfd_test_proc_dir_exists(pid) == present. */
bool kfd_test_wait_proc_dir(pid_t pid, bool present, unsigned timeout_ms);

/* A process debugging itself (pid = own tgid skips the ptrace check,
 * kfd-interface.md §3 step 5), subscribed to EC_PROCESS_RUNTIME, with
 * kfdtest's event channel: a FIFO opened O_RDWR|O_NONBLOCK. Its
 * RUNTIME_ENABLE then sleeps until the EC_PROCESS_RUNTIME ack (§5). */
struct kfd_test_debuggee {
        int kfd;
        int event_fifo;
};
int kfd_test_self_debug(struct kfd_test_debuggee *ret);
/* Waits up to 5 s for one event byte; 0 or -errno (-ETIMEDOUT). */
int kfd_test_wait_event(const struct kfd_test_debuggee *d);
int kfd_test_runtime_enable(int kfd, bool enable);
/* SEND_RUNTIME_EVENT(EC_PROCESS_RUNTIME) to ourselves. */
int kfd_test_ack_runtime(int kfd);
/* ENABLE on ourselves through `kfd`, subscribed to EC_PROCESS_RUNTIME,
 * with `event_fd` as the debugger's event file. */
int kfd_test_self_debug_fd(int kfd, int event_fd);
/* kfd_test_self_debug, then RUNTIME_ENABLE acked from another thread:
 * SUSPEND/RESUME work on ourselves afterwards. */
int kfd_test_self_debug_with_runtime(struct kfd_test_debuggee *ret);
/* A new AQL queue on `gpu_id`, its EC_QUEUE_NEW cleared (queue snapshot)
 * and suspended by ourselves. At most 8 such queues at once. */
int kfd_test_create_suspended_queue(int kfd, uint32_t gpu_id, uint32_t *ret_id);
/* RESUME_QUEUES with a NULL array: every queue of ours; returns the count. */
int kfd_test_resume_all(int kfd);
/* Waits up to `timeout_ms` until thread `tid` sleeps in syscall `nr`. */
bool kfd_test_wait_syscall(pid_t tid, long nr, unsigned timeout_ms);
/* Debug sessions outlive the kfd fd (§6a): DISABLE, runtime off, close. */
int kfd_test_end_self_debug(struct kfd_test_debuggee *d);
