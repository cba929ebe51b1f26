/* SPDX-License-Identifier: MIT */
/*
 * kernel/'s internal contracts: what one file of the amdkfd stand-in calls
 * in another. Every function here runs with node->lock held, like all of
 * kernel.h.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kernel.h"
#include "state.h"

/* _IOC_NR range of the KFD 1.13 table (AMDKFD_COMMAND_START/END). */
#define KFD_COMMAND_START 0x01
#define KFD_COMMAND_END 0x27

/* USE_DEFAULT_GRACE_PERIOD in kfd_device_queue_manager.h. */
#define KFD_USE_DEFAULT_GRACE_PERIOD 0xffffffffu

/* KFD_SCHED_POLICY_NO_HWS (amdgpu.sched_policy=2). */
#define KFD_SCHED_POLICY_NO_HWS 2

/* amdgpu_drv.c: max_num_of_queues_per_device's default. */
#define KFD_DEFAULT_MAX_QUEUES_PER_DEVICE 4096u

/* kfd_debug.c: MAX_WATCH_ADDRESSES. */
#define KFD_MAX_WATCH_ADDRESSES 4

static inline uint32_t kfd_min_u32(uint32_t a, uint32_t b)
{
        return a < b ? a : b;
}

/* What a parked call sleeps on (emu_call.wait_kind). */
enum kfd_wait_kind {
        KFD_WAIT_NONE = 0,
        KFD_WAIT_RUNTIME_ENABLE, /* down_interruptible(&p->runtime_enable_sema) */
        KFD_WAIT_DESTROY_QUEUE,  /* wait_event_interruptible(dqm->destroy_wait) */
        KFD_WAIT_DEVICE,         /* the preemption fence: emu_gpu_complete_after */
        KFD_WAIT_EVENT_WRITE,    /* only the debug event byte is left to write */
        KFD_WAIT_LOCK,           /* mutex_lock of a process's mutex or event_mutex, or dqm_lock (kfd-mutex.c) */
        KFD_WAIT_MEMORY_SYNC,    /* amdgpu_amdkfd_gpuvm_sync_memory: dma_fence_wait, interruptible */
        KFD_WAIT_EVENTS,         /* schedule_timeout in kfd_wait_on_events (kfd-hsa-events.c) */
};

/* kzalloc() of more than KMALLOC_MAX_SIZE (4 MiB with 4 KiB pages) fails. */
#define KFD_KMALLOC_MAX_SIZE (4u << 20)

/* kfd-log.c: what the kernel would print to dmesg. */
void kfd_log(struct emu_node *node, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* kfd-chardev.c: finish a call (copy-out of kdata as kfd_ioctl does). */
long kfd_ioctl_copy_out(struct emu_call *call, long ret);
/* The call returns after `delay_ns` of modelled device time: parks it on
 * the GPU model and returns EMU_CALL_PARKED, or `ret` if there is no delay. */
long kfd_return_after_device(struct emu_node *node, struct emu_call *call, long ret, uint64_t delay_ns);

/* The call waits `delay_ns` for the page-table update fence after a map
 * ([Node] MemorySyncMicroseconds), interruptibly and holding p->mutex;
 * returns `ret` at once when that is not modelled. */
long kfd_return_after_memory_sync(struct emu_node *node, struct emu_call *call, long ret);

/* kfd-node.c: kfd_device_by_id (topology). */
struct emu_gpu *kfd_device_by_id(struct emu_node *node, uint32_t gpu_id);

/* kfd-chardev.c: run the ioctl of a call that slept in mutex_lock again
 * from its start (its arguments are already copied in), then reply unless
 * it sleeps again. */
void kfd_ioctl_rerun(struct emu_call *call);

/* kfd-mutex.c: p->mutex, p->event_mutex and the GPUs' dqm locks, taken
 * for longer than one kernel entry by a call parked in a preemption or a
 * memory sync, by a raiser blocked in the event write, or forever by an
 * oops. */
enum kfd_lock {
        KFD_LOCK_MUTEX = 1u << 0,
        KFD_LOCK_EVENT_MUTEX = 1u << 1,
};
/* If one of `locks` is taken, park `call` until it is free (then it runs
 * again from the start, kfd_ioctl_rerun) and return true. */
bool kfd_lock_wait(struct emu_process *p, unsigned locks, struct emu_call *call);
void kfd_lock_take(struct emu_process *p, unsigned locks);
void kfd_lock_release(struct emu_process *p, unsigned locks);
/* The holder of p->mutex died in an oops: it is never released. */
void kfd_lock_poison(struct emu_process *p);
/* p's mm is gone: its locks are free, other processes' sleepers run. */
void kfd_lock_process_gone(struct emu_process *p);
/* The caller of a KFD_WAIT_LOCK call died. */
void kfd_lock_abandon(struct emu_call *call);
/* If the dqm lock of one of `gpus` (bit = index in node->gpus) is taken,
 * park `call` until it is free (then it runs again from the start) and
 * return true. */
bool kfd_dqm_lock_wait(struct emu_node *node, uint32_t gpus, struct emu_call *call);
/* The running kernel entry preempts `gpu` (execute_queues_cpsch under
 * its dqm lock): a call that then parks in the fence wait holds that lock. */
void kfd_dqm_note_preemption(struct emu_gpu *gpu);
/* The running entry holds `locks` of `p` (p->mutex, event_mutex). */
void kfd_call_note_locks(struct emu_call *call, struct emu_process *p, unsigned locks);
/* `call` parks in a wait its ioctl makes holding its locks: they stay
 * taken until kfd_call_release_locks (unless [Node] LocksAcrossWaits=no). */
void kfd_call_hold_locks(struct emu_node *node, struct emu_call *call);
void kfd_call_release_locks(struct emu_call *call);

/* kfd-debugfs.c: a debugfs mqds read that slept on a process's mutex
 * runs again, and replies once it got through every one. */
void kfd_debugfs_mqds_rerun(struct emu_call *call);

/* kfd-waitqueue.c */
void kfd_waitlist_add_tail(struct emu_call **head, struct emu_call *call, enum kfd_wait_kind kind);
bool kfd_waitlist_remove(struct emu_call **head, struct emu_call *call);
struct emu_call *kfd_waitlist_pop(struct emu_call **head);

/* kfd-process.c */
int kfd_create_process(struct emu_node *node, pid_t tgid, struct emu_process **ret);
struct emu_process *kfd_lookup_process_by_tgid(struct emu_node *node, pid_t tgid);
struct emu_pdd *kfd_process_device_by_id(struct emu_process *p, uint32_t gpu_id);
void kfd_process_put_file(struct emu_process *p);

/* kfd-vm.c: the VM of a render node, apertures, cache policy, trap
 * handler and scratch addresses (§12). */
long kfd_ioctl_acquire_vm(struct emu_call *call, struct emu_process *p, void *data);
long kfd_ioctl_get_process_apertures_new(struct emu_call *call, struct emu_process *p, void *data);
long kfd_ioctl_set_memory_policy(struct emu_call *call, struct emu_process *p, void *data);
long kfd_ioctl_set_trap_handler(struct emu_call *call, struct emu_process *p, void *data);
long kfd_ioctl_set_scratch_backing_va(struct emu_call *call, struct emu_process *p, void *data);
/* The process's device `gpu_id` for a call that binds to it
 * (kfd_process_device_data_by_id, then kfd_bind_process_to_device):
 * -EINVAL for a GPU the process has no device for, -ENODEV before
 * ACQUIRE_VM gave the device its VM (callers may turn it into their own
 * errno), else 0 and the device in *ret_pdd (if not NULL). */
long kfd_bind_device(struct emu_process *p, uint32_t gpu_id, struct emu_pdd **ret_pdd);
/* The process's mm is gone: the device's VM goes back to its render node. */
void kfd_process_device_release_vm(struct emu_pdd *pdd);

/* kfd_priv.h's mmap offset types besides the doorbells' (emu-hw.h). */
#define KFD_MMAP_TYPE_EVENTS (0x2ull << EMU_KFD_MMAP_TYPE_SHIFT)
#define KFD_MMAP_TYPE_RESERVED_MEM (0x1ull << EMU_KFD_MMAP_TYPE_SHIFT)
#define KFD_MMAP_TYPE_MMIO (0x0ull << EMU_KFD_MMAP_TYPE_SHIFT)

/* kfd-memory.c: buffer objects of a process's devices (§13). */
long kfd_ioctl_alloc_memory_of_gpu(struct emu_call *call, struct emu_process *p, void *data);
long kfd_ioctl_free_memory_of_gpu(struct emu_call *call, struct emu_process *p, void *data);
long kfd_ioctl_map_memory_to_gpu(struct emu_call *call, struct emu_process *p, void *data);
long kfd_ioctl_unmap_memory_from_gpu(struct emu_call *call, struct emu_process *p, void *data);
/* The BO of `pdd` with that idr number, or NULL. */
struct emu_bo *kfd_bo_by_handle(struct emu_pdd *pdd, uint32_t idr_handle);
/* kfd_process_destroy_pdds: the device's BOs go with the process. */
void kfd_process_device_free_bos(struct emu_pdd *pdd);
/* mmap of `gpu`'s render file `drm_file` at a BO's offset (drm_gem_mmap). */
int kfd_bo_mmap(struct emu_gpu *gpu, const struct emu_file *drm_file, uint64_t offset, uint64_t length,
                struct emu_mmap_result *ret);
/* mmap of /dev/kfd at KFD_MMAP_TYPE_MMIO: the GPU's remapped register page. */
int kfd_mmio_mmap(struct emu_gpu *gpu, uint64_t length, struct emu_mmap_result *ret);

/* kfd-hsa-events.c: HSA events (§14). */
long kfd_ioctl_create_event(struct emu_call *call, struct emu_process *p, void *data);
long kfd_ioctl_destroy_event(struct emu_call *call, struct emu_process *p, void *data);
long kfd_ioctl_set_event(struct emu_call *call, struct emu_process *p, void *data);
long kfd_ioctl_reset_event(struct emu_call *call, struct emu_process *p, void *data);
long kfd_ioctl_wait_events(struct emu_call *call, struct emu_process *p, void *data);
/* A parked WAIT_EVENTS call: its timeout passed, a signal interrupted
 * it, or its caller is gone (no reply). */
void kfd_wait_events_timed_out(struct emu_call *call);
void kfd_wait_events_interrupted(struct emu_call *call);
void kfd_wait_events_abandon(struct emu_call *call);
/* mmap of /dev/kfd at KFD_MMAP_TYPE_EVENTS (kfd_event_mmap). */
int kfd_event_mmap(struct emu_process *p, uint64_t length, struct emu_mmap_result *ret);
/* kfd_event_init_process: no signal page yet, event id 0 reserved. */
void kfd_event_init_process(struct emu_process *p);
/* The process's threads are gone: their WAIT_EVENTS calls asleep with them. */
void kfd_event_abandon_waits(struct emu_process *p);
/* kfd_event_free_process: the process's events and signal page go. Its
 * waits must have been abandoned first. */
void kfd_event_free_process(struct emu_process *p);

/* kfd-device-queries.c: what a process asks about one of its devices. */
long kfd_ioctl_get_tile_config(struct emu_call *call, struct emu_process *p, void *data);
long kfd_ioctl_get_clock_counters(struct emu_call *call, struct emu_process *p, void *data);

/* amdgpu-drm.c: drop a reference to a render node's file. */
void kfd_drm_file_put(struct emu_file *file);

/* kfd-queue.c */
long kfd_ioctl_create_queue(struct emu_call *call, struct emu_process *p, void *data);
long kfd_ioctl_destroy_queue(struct emu_call *call, struct emu_process *p, void *data);
struct emu_queue *kfd_queue_by_id(struct emu_process *p, uint32_t queue_id);
/* QUEUE_IS_ACTIVE() of kfd_priv.h: nothing keeps the queue off the
 * runlist (what a resume or a restore checks before mapping it again). */
bool kfd_queue_may_be_active(const struct emu_queue *q);
/* q->properties.is_active: in the runlist, counted in active_queue_count.
 * QUEUE_IS_ACTIVE, unless set_queue_as_reset took it out since it was last
 * mapped. */
bool kfd_queue_is_active(const struct emu_queue *q);
/* wake_up_all(&dqm->destroy_wait) for `gpu`: destroys whose queue is no
 * longer suspended proceed, once the current kernel entry is over (the
 * woken threads run after the waker drops its locks). */
void kfd_wake_destroy_waiters(struct emu_node *node, struct emu_gpu *gpu);
void kfd_run_destroy_wakeups(struct emu_node *node);
void kfd_destroy_wait_interrupted(struct emu_call *call);
/* process_termination_cpsch: every queue goes, nobody waits. */
void kfd_process_remove_queues(struct emu_process *p);

/* kfd-runtime.c */
long kfd_ioctl_runtime_enable(struct emu_call *call, struct emu_process *p, void *data);
/* up(&p->runtime_enable_sema). */
void kfd_runtime_sema_up(struct emu_process *p);
void kfd_runtime_wait_interrupted(struct emu_call *call);

/* Detach `p`'s parked calls from every wait list without replying: their
 * threads are gone with the mm (the transport abandons them). */
void kfd_process_detach_waiters(struct emu_process *p);

/* kfd-dbgtrap.c */
long kfd_ioctl_set_debug_trap(struct emu_call *call, struct emu_process *p, void *data);

/* kfd-debug.c: the debug session (kfd_debug.c). */
int kfd_dbg_trap_enable(struct emu_call *call, struct emu_process *target, uint32_t dbg_fd,
                        uint64_t rinfo_ptr, uint32_t *rinfo_size);
int kfd_dbg_trap_disable(struct emu_process *target);
int kfd_dbg_trap_activate(struct emu_process *target);
void kfd_dbg_trap_deactivate(struct emu_process *target, bool unwind, unsigned unwind_count);

/* kfd-debug-hw.c: the debugger's hardware ops (ops 4, 5, 8, 9, 10). */
int kfd_dbg_trap_set_wave_launch_override(struct emu_process *target, uint32_t override_mode,
                                          uint32_t enable_mask, uint32_t support_request_mask,
                                          uint32_t *ret_prev_mask, uint32_t *ret_supported_mask);
int kfd_dbg_trap_set_wave_launch_mode(struct emu_process *target, uint32_t mode);
int kfd_dbg_trap_set_dev_address_watch(struct emu_pdd *pdd, uint32_t *watch_id);
int kfd_dbg_trap_clear_dev_address_watch(struct emu_pdd *pdd, uint32_t watch_id);
void kfd_dbg_clear_process_address_watch(struct emu_process *target);
int kfd_dbg_trap_set_flags(struct emu_process *target, uint32_t *flags);
bool kfd_dbg_is_per_vmid_supported(const struct emu_gpu *gpu);

/* kfd-runlist.c: the device queue manager's scheduler actions. */
/* execute_queues_cpsch / debug_refresh_runlist on an HWS device: one
 * device-wide preemption; returns its modelled duration (0 on MES). */
uint64_t kfd_dqm_execute_queues(struct emu_gpu *gpu, uint32_t grace_period);
/* map_queues_cpsch's bookkeeping after a runlist change kernel/ has made
 * itself: dqm->active_runlist is whether some queue of the device is active. */
void kfd_dqm_map_queues(struct emu_gpu *gpu);
/* debug_refresh_runlist: unmap and remap every queue of a per-VMID device. */
void kfd_debug_refresh_runlist(struct emu_gpu *gpu);
int kfd_reserve_debug_trap_vmid(struct emu_gpu *gpu, struct emu_process *p);
int kfd_release_debug_trap_vmid(struct emu_gpu *gpu);

/* execute_queues_cpsch for SUSPEND_QUEUES / RESUME_QUEUES (`op`): as
 * kfd_dqm_execute_queues, unless an injected fault fails it as a real
 * node's can. Adds the caller's wait to *delay; 0 or -ETIME / -EIO. */
int kfd_dqm_execute_queues_for_debugger(struct emu_call *call, struct emu_gpu *gpu, uint32_t grace_period,
                                        enum emu_fault_op op, uint64_t *delay);

/* kfd-faults.c: the fault a preemption of `op` on `gpu` meets, if any
 * (counts it for the triggers). */
enum emu_fault_kind kfd_fault_pick(struct emu_gpu *gpu, enum emu_fault_op op);
/* `q` is one the fault may blame for not answering an unmap. */
bool kfd_fault_queue_may_hang(const struct emu_fault_config *f, const struct emu_queue *q);

/* kfd-reset.c: what the kernel does when the preemption meets `kind`:
 * returns execute_queues_cpsch's result, adds to *delay, and leaves in
 * `call` what must happen once the wait is over. */
int kfd_hws_inject_fault(struct emu_call *call, struct emu_gpu *gpu, enum emu_fault_kind kind,
                         uint32_t grace_period, uint64_t *delay);
/* The call's wait for the device is over (or abandoned): the fence
 * timeouts it met are logged and their GPUs reset (kfd_hws_hang). */
void kfd_hws_hang_after_wait(struct emu_call *call);

/* kfd-hsa-events.c: kfd_signal_reset_event: the HW exception events of
 * the processes with `gpu` (only those with has_reset_queue there). */
void kfd_signal_reset_event(struct emu_gpu *gpu, bool only_reset_queues);

/* kfd-smi.c: AMDKFD_IOC_SMI_EVENTS, the GPU_PRE_RESET / GPU_POST_RESET
 * records, and the clients' end with the node. */
long kfd_ioctl_smi_events(struct emu_call *call, struct emu_process *p, void *data);
void kfd_smi_event_gpu_reset(struct emu_gpu *gpu, bool post_reset);
void kfd_smi_clients_free(struct emu_gpu *gpu);

/* kfd-suspend.c */
int kfd_suspend_queues(struct emu_call *call, struct emu_process *target, uint32_t num_queues,
                       uint32_t grace_period, uint64_t exception_clear_mask, uint64_t queue_array_ptr,
                       uint64_t *ret_delay_ns);
int kfd_resume_queues(struct emu_call *call, struct emu_process *target, uint32_t num_queues,
                      uint64_t queue_array_ptr, uint64_t *ret_delay_ns);

/* kfd-evwrite.c: the debug event byte, and raisers blocked writing it. */
/* Write '.' without blocking: 0, -EAGAIN (full) or another -errno. */
int kfd_ev_write_byte(int fd, const struct emu_caller *raiser);
/* The pipe is full and blocking: `call` sleeps until the byte is written,
 * holding `locks` (enum kfd_lock) of `target` meanwhile. */
bool kfd_ev_writer_start(struct emu_process *target, struct emu_call *call, int fd, unsigned locks);
/* `p` is going away: writers stop pointing at it (its locks are gone). */
void kfd_ev_writers_forget_process(struct emu_node *node, struct emu_process *p);
/* `call` is finishing with `ret`: if it is still blocked in the write, hold
 * the result until the byte is written (and return true). */
bool kfd_ev_writer_hold(struct emu_call *call, long ret);
/* A signal or the caller's death ends the write. Returns true, with the
 * held result, if the call was only waiting for it. */
bool kfd_ev_writer_cancel(struct emu_call *call, long *ret_held);
/* For emu_node_fini (called without node->lock). */
void kfd_ev_writers_stop(struct emu_node *node);

/* kfd-events.c */
/* kfd_dbg_ev_raise: record `event_mask` on the queue/device/process and
 * write the event byte if subscribed. `raiser` is the ioctl of `current`
 * (NULL for the GPU's own events). Returns whether the debugger is subscribed. */
bool kfd_dbg_ev_raise(uint64_t event_mask, struct emu_process *p, struct emu_gpu *gpu,
                      uint32_t queue_id, struct emu_call *raiser);
int kfd_dbg_ev_query_debug_event(struct emu_process *p, uint32_t *ret_queue_id, uint32_t *ret_gpu_id,
                                 uint64_t clear_mask, uint64_t *ret_status);
int kfd_dbg_trap_query_exception_info(struct emu_call *call, struct emu_process *target,
                                      uint32_t source_id, uint32_t exception_code, bool clear,
                                      uint64_t info_ptr, uint32_t *info_size);
void kfd_dbg_set_enabled_debug_exception_mask(struct emu_process *target, uint64_t mask,
                                              struct emu_call *raiser);
int kfd_dbg_send_exception_to_runtime(struct emu_process *p, uint32_t gpu_id, uint32_t queue_id,
                                      uint64_t error_reason);

/* kfd-snapshot.c */
int kfd_pqm_get_queue_snapshot(struct emu_call *call, struct emu_process *target, uint64_t clear_mask,
                               uint64_t buf, uint32_t *num_queues, uint32_t *entry_size);
int kfd_dbg_trap_device_snapshot(struct emu_call *call, struct emu_process *target, uint64_t clear_mask,
                                 uint64_t buf, uint32_t *num_devices, uint32_t *entry_size);

/* kfd-ptrace.c: what the kernel knows about tasks, read from /proc. */
struct kfd_task {
        pid_t tid;        /* host namespace */
        pid_t tgid;
        pid_t tracer_tid; /* TracerPid; 0 = not traced */
        bool has_mm;      /* get_task_mm() would succeed */
};
/* find_get_pid(pid) in the caller's pid namespace + get_pid_task(). */
int kfd_find_task(const struct emu_caller *caller, uint32_t pid, struct kfd_task *ret);
/* ptrace_parent(task) == current (the calling thread). */
bool kfd_ptrace_parent_is(pid_t tid, pid_t tracer_tid);
/* The file open as `fd` in `p`'s table, as the server's own descriptor (fget). */
int kfd_fget(const struct emu_process *p, uint32_t fd, int *ret_fd);
/* The task sits in a group or ptrace stop: a signal that stops it is
 * pending for it, as far as signal_pending() in a sleep goes. */
bool kfd_task_is_stopped(pid_t tid);
/* in_compat_syscall() for kfd_open: the caller runs a 32-bit image. */
bool kfd_task_is_32bit(pid_t tgid);
