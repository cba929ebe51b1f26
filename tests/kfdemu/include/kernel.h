/* SPDX-License-Identifier: MIT */
/*
 * kernel/ entry points: what the transport calls when a client opens,
 * ioctls, mmaps or closes /dev/kfd, and when a process's mm goes away.
 * All are called with node->lock held.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "state.h"

/* `current` of a file operation, in the server's (host) pid namespace. */
struct emu_caller {
        pid_t tgid;
        pid_t tid;
};

/* An open /dev/kfd (struct file): kfd_open attaches it to the caller's
 * kfd_process. Or an open amdgpu render node (/dev/dri/renderD<minor>), a
 * drm_file of one GPU that any process holding the fd may use. */
struct emu_file {
        struct emu_process *process;     /* /dev/kfd: filep->private_data; NULL on a render node */
        struct emu_gpu *render_gpu;      /* render node: its device; NULL on /dev/kfd */
        /* Render node: its VM became a process's compute VM (ACQUIRE_VM,
         * amdgpu_amdkfd_gpuvm_acquire_process_vm sets vm->process_info),
         * for as long as the file lives, past that process's end. */
        bool vm_acquired;
        /* Render node: references held by the transport (while the fd is
         * open) and by kfd_process_devices that acquired its VM (the
         * kernel's fget in ACQUIRE_VM). */
        unsigned refs;
        struct emu_file_transport *transport;
};

/* Returned by emu_kfd_ioctl when the caller sleeps in the kernel: the call
 * stays owned by kernel/ until it is completed with emu_call_complete(). */
#define EMU_CALL_PARKED 1000000L

/* The kernel's ERESTARTSYS (include/linux/errno.h): an ioctl that returns
 * -EMU_ERESTARTSYS is restarted if the signal that interrupted it had an
 * SA_RESTART handler and fails with EINTR otherwise. Only the preload sees
 * it (protocol.h). */
#define EMU_ERESTARTSYS 512

/* Largest argument of an ioctl: _IOC_SIZE is 14 bits, and kfd_ioctl
 * copies that many bytes in and out whatever its own struct's size. */
#define EMU_KDATA_MAX 16383

/* An ioctl in flight: built by transport/, run and maybe parked by kernel/. */
struct emu_call {
        struct emu_file *file;
        struct emu_caller caller;
        uint32_t cmd;                    /* as the caller passed it */
        uint64_t arg;                    /* the user pointer */
        uint32_t kcmd;                   /* the kernel's definition (ioctl->cmd) */
        uint32_t usize;
        uint8_t kdata[EMU_KDATA_MAX];
        struct emu_call *next_waiter;    /* on a sema or wait queue */
        int wait_kind;                   /* kernel/ private: what it sleeps on */
        /* Called by emu_call_complete once the result is final (after the
         * copy_to_user of kdata that kfd_ioctl does). transport/ sends the
         * reply and frees the call. */
        void (*reply)(struct emu_call *call, long ret);
        void *transport_data;
        /* kernel/ private: a debug event write this call is blocked in
         * (a full, blocking event pipe). NULL when transport/ builds it. */
        void *kernel_private;
        /* kernel/ private: the waiters of a WAIT_EVENTS call asleep. */
        void *event_wait;
        /* kernel/ private: whose mutex a KFD_WAIT_LOCK call sleeps on, or
         * which GPU's dqm lock (kfd-mutex.c). */
        struct emu_process *lock_process;
        struct emu_gpu *lock_gpu;
        /* kernel/ private: the process locks the running kernel entry has
         * taken, which a call parked in a preemption or a memory sync keeps
         * until it completes, with the dqm locks of the GPUs it preempted
         * (bit = index); `holds_locks` while it does, on node->lock_holders. */
        struct emu_process *entry_process;
        unsigned entry_locks;
        uint32_t held_dqms;
        bool holds_locks;
        struct emu_call *next_holder;
        /* kernel/ private: a debugfs `mqds` read, not an ioctl (file is NULL). */
        struct emu_node *debugfs_node;
        /* kernel/ private: a completion that arrives while kernel/ is still
         * handing the call to the GPU model is kept here and returned
         * directly (gpu/ may complete at once: no model, no memory). */
        bool completion_deferred, completed_inline;
        long inline_ret;
        /* kernel/ private: GPUs (bit = index) whose preemption this call
         * waits for failed: once the wait is over the fence timeout is
         * logged (fence_timeout_gpus) and the GPU reset (both masks). */
        uint32_t fence_timeout_gpus, hws_hang_gpus;
        /* kernel/ → transport/: a new fd for the caller (anon_inode_getfd):
         * when reply_fd_arg_offset is not 0, reply_fd goes with a reply of
         * success (1 + offset of its number in the argument, as
         * kfdemu_reply.fd_arg_offset). transport/ closes its copy. */
        int reply_fd;
        uint32_t reply_fd_arg_offset;
};

/* kfd_open: find or create the caller's kfd_process. -EPERM for 32-bit callers.
 * The file is allocated by kernel/ and freed by emu_kfd_release. */
int emu_kfd_open(struct emu_node *node, const struct emu_caller *caller, struct emu_file **ret_file);
/* kfd_release: the last reference to an open file went away. Debug sessions
 * are not affected (kfd-interface.md §6a). */
void emu_kfd_release(struct emu_file *file);
/* kfd_ioctl: returns the ioctl's return value (>= 0 or -errno) after the
 * copy-out, or EMU_CALL_PARKED. transport/ fills file, caller, cmd, arg and
 * reply; kernel/ fills kcmd, usize and kdata (the copy-in) itself. */
long emu_kfd_ioctl(struct emu_call *call);
/* A signal reached a caller sleeping in a parked call (down_interruptible /
 * wait_event_interruptible returned early): finish it the way the kernel does. */
void emu_call_interrupt(struct emu_call *call);
/* Callers sleeping in down_interruptible (the runtime-enable wait) wake
 * with -EINTR for any pending signal, a stop included, before a handler
 * could run. transport/ asks whether any sleeps (to watch them on a slow
 * timer) and lets kernel/ end the waits of stopped callers. */
bool emu_has_stop_sensitive_sleepers(struct emu_node *node);
void emu_interrupt_stopped_sleepers(struct emu_node *node);
/* The caller died while parked: drop the call without replying. Calls of
 * a process whose mm is released are detached from their waits first, so
 * abandoning them afterwards is harmless. */
void emu_call_abandon(struct emu_call *call);
/* Finish a parked call with `ret`: copy kdata out like kfd_ioctl, then reply. */
void emu_call_complete(struct emu_call *call, long ret);

/* The amdgpu render node (kernel/amdgpu-drm.c). drm_open of
 * /dev/dri/renderD<minor>: -ENOENT when no GPU has that minor (no such
 * device node). The file starts with the transport's reference. */
int emu_drm_open(struct emu_node *node, uint32_t minor, struct emu_file **ret_file);
/* The transport's reference goes (the fd's last close). */
void emu_drm_release(struct emu_file *file);
/* drm_ioctl on a render node: the core and amdgpu tables, the argument
 * copies, drm_ioctl_permit. Never parks. */
long emu_drm_ioctl(struct emu_call *call);

/* Opening debugfs kfd/mqds (kfd_debugfs_mqds_by_process): the dump takes
 * every kfd_process's p->mutex in turn. Returns 0 when every one is free
 * (transport/ renders the file now), or EMU_CALL_PARKED: the reader sleeps
 * uninterruptibly on a taken mutex, and `call->reply(call, 0)` comes once
 * every one was free. transport/ fills only `caller`, `reply` and
 * `transport_data` (file stays NULL). */
long emu_debugfs_mqds_open(struct emu_node *node, struct emu_call *call);

/* kfd_mmap. On success fills the segments the caller must map. */
struct emu_mmap_segment {
        int memfd;                       /* borrowed; valid until the reply is sent */
        uint64_t memfd_offset;
        uint64_t length;
};
struct emu_mmap_result {
        unsigned n_segments;
        struct emu_mmap_segment segments[2];
        /* A TTM buffer object: ttm_bo_mmap_obj maps it VM_IO|VM_PFNMAP, so
         * GUP without FOLL_FORCE (process_vm_readv) cannot read it, while
         * /proc/PID/mem can (ttm_bo_vm_access). */
        bool pfnmap;
};
int emu_kfd_mmap(struct emu_file *file, const struct emu_caller *caller, uint64_t offset,
                 uint64_t length, struct emu_mmap_result *ret);
/* mmap of a render node (drm_gem_mmap): the buffer object at `offset`,
 * made by ALLOC_MEMORY_OF_GPU for the VM of this file. */
int emu_drm_mmap(struct emu_file *file, uint64_t offset, uint64_t length, struct emu_mmap_result *ret);

/* The GPU's end-of-pipe interrupt for a completion signal with an event
 * mailbox (kfd_signal_event_interrupt with a valid event id): the event
 * whose slot the CP wrote is acknowledged and set. Called by gpu/. */
void emu_signal_event_interrupt(struct emu_process *p, uint32_t event_id);

/* kfd_process_notifier_release: the process's mm is gone (exit or exec). */
void emu_process_mm_release(struct emu_node *node, pid_t tgid);

/* Lifecycle of the node. emu_node_fini is called without node->lock, once
 * no client call can arrive any more. */
int emu_node_init(struct emu_node *node, const struct emu_config *cfg);
void emu_node_fini(struct emu_node *node);

/* Provided by transport/: watch `p`'s process and call
 * emu_process_mm_release() (with node->lock held) when it exits. kernel/
 * calls it once when it creates a kfd_process. Returns 0 or -errno (the
 * process is already gone: -ESRCH). */
int emu_transport_watch_process(struct emu_node *node, struct emu_process *p);

/* Provided by transport/: a connected stream socket pair for an anon fd
 * the kernel gives a caller (the SMI events fd): the kernel's end and the
 * caller's, both O_CLOEXEC, the caller's recognisable by the preload
 * (protocol.h, KFDEMU_SMI_SOCKET_PREFIX). 0 or -errno. */
int emu_transport_smi_socket(struct emu_node *node, int *ret_kernel_end, int *ret_user_end);
/* Provided by transport/: `call` has entered the unmap fence wait
 * (amdkfd_fence_wait_timeout), which loops on schedule() rather than
 * sleeping, for `duration_ns` of modelled time: the caller's thread is told
 * to spin that long. Only that long: the emulated GPU that ends the wait
 * needs a CPU, where a real one does not, and a real-time spinner must not
 * keep it from running. Called only when the node models the spin
 * ([Node] FenceWaitSpins=yes). */
void emu_transport_call_spins(struct emu_call *call, uint64_t duration_ns);

/* Provided by transport/: the kfdemu file (/dev/kfd or a render node)
 * that `fd`, the server's own copy of a client's fd, refers to; NULL for
 * any other file. */
struct emu_file *emu_transport_file_of_fd(struct emu_node *node, int fd);
