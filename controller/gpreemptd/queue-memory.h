/* SPDX-License-Identifier: MIT */
/*
 * Reading another process's queue memory (the AQL write and read indices)
 * even where process_vm_readv cannot.
 *
 * process_vm_readv pins the pages it reads (get_user_pages), which fails
 * with EFAULT on a VM_IO|VM_PFNMAP mapping: an amd_queue_t that ROCr put in
 * GTT memory mapped through the render node (MES GPUs, or
 * HSA_USERPTR_FOR_PAGED_MEM=0; kfd-hazards.md §9). /proc/PID/mem reaches
 * such memory through the mapping's access handler (TTM's
 * ttm_bo_vm_access), so where process_vm_readv stops at an address that
 * /proc/PID/mem can read, the reader switches to pread() on /proc/PID/mem,
 * kept open, for every later read of that process, and says so once. A read
 * neither way can make is an error, never data: a queue that cannot be read
 * is not an idle queue.
 *
 * One struct per watched process; not thread-safe (one caller at a time).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

struct queue_memory;

/* For pid, whose /proc directory is under proc_root. Opens nothing yet. Returns 0 or -ENOMEM. */
int queue_memory_new(const char *proc_root, pid_t pid, struct queue_memory **ret);
struct queue_memory *queue_memory_free(struct queue_memory *m);

/*
 * Reads the remote ranges, in order, into buf (which holds their total
 * length). Returns 0 when all were read, or -errno with *ret_bytes the bytes
 * of the whole ranges read before the one that failed: -ESRCH the process
 * (or the address space the reader opened) is gone; -EIO a range is not
 * mapped (the queue was destroyed); -EFAULT, -EACCES or -EPERM neither way
 * may read it. *ret_switched is true on the one call that switched the
 * process to /proc/PID/mem, whatever its result: the caller logs that once.
 * Both outputs are set in every case.
 */
int queue_memory_read(struct queue_memory *m, void *buf, const struct iovec *remote, size_t n_remote,
                      size_t *ret_bytes, bool *ret_switched);

/* Whether reads go to /proc/PID/mem (Status may show it). */
bool queue_memory_uses_proc_mem(const struct queue_memory *m);
