/* SPDX-License-Identifier: MIT */
/*
 * The /dev/kfd character device (kfd_chardev.c): kfd_open, kfd_release,
 * kfd_mmap and kfd_ioctl with its table, the argument copies around every
 * handler, and the completion of calls that slept in the kernel.
 */
#include <errno.h>
#include <linux/ioctl.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "kfd-priv.h"
#include "usermem.h"

typedef long kfd_ioctl_fn(struct emu_call *call, struct emu_process *p, void *data);

struct kfd_ioctl_desc {
        uint32_t cmd;   /* the kernel's own request number: direction and size */
        kfd_ioctl_fn *func;
};

static long kfd_ioctl_get_version(struct emu_call *call, struct emu_process *p, void *data)
{
        struct kfd_ioctl_get_version_args *args = data;

        args->major_version = p->node->cfg.kfd_major;
        args->minor_version = p->node->cfg.kfd_minor;
        return 0;
}

/* The KFD 1.13 ioctls kfdemu does not emulate (CRIU, SVM, dmabuf, ...):
 * the table keeps their real direction and size, so kfd_ioctl's copies and
 * errors stay those of the kernel, and the handler refuses the request. */
static long kfd_ioctl_not_emulated(struct emu_call *call, struct emu_process *p, void *data)
{
        kfd_log(p->node, "ioctl 0x%x (#0x%x) is outside what kfdemu emulates", call->kcmd,
                _IOC_NR(call->kcmd));
        return -EINVAL;
}

#define KFD_R(nr, size) _IOC(_IOC_READ, 'K', nr, size)
#define KFD_W(nr, size) _IOC(_IOC_WRITE, 'K', nr, size)
#define KFD_WR(nr, size) _IOC(_IOC_READ | _IOC_WRITE, 'K', nr, size)

/* amdkfd_ioctls[] of the KFD 1.13 tree: every request number with the
 * argument size of its uapi struct (include/uapi/linux/kfd_ioctl.h). */
static const struct kfd_ioctl_desc kfd_ioctls[KFD_COMMAND_END] = {
        [0x01] = { KFD_R(0x01, 8), kfd_ioctl_get_version },            /* GET_VERSION */
        [0x02] = { KFD_WR(0x02, 88), kfd_ioctl_create_queue },      /* CREATE_QUEUE */
        [0x03] = { KFD_WR(0x03, 8), kfd_ioctl_destroy_queue },      /* DESTROY_QUEUE */
        [0x04] = { KFD_W(0x04, 32), kfd_ioctl_set_memory_policy },     /* SET_MEMORY_POLICY */
        [0x05] = { KFD_WR(0x05, 40), kfd_ioctl_get_clock_counters },   /* GET_CLOCK_COUNTERS */
        [0x06] = { KFD_R(0x06, 400), kfd_ioctl_not_emulated },         /* GET_PROCESS_APERTURES */
        [0x07] = { KFD_W(0x07, 24), kfd_ioctl_not_emulated },          /* UPDATE_QUEUE */
        [0x08] = { KFD_WR(0x08, 32), kfd_ioctl_create_event }, /* CREATE_EVENT */
        [0x09] = { KFD_W(0x09, 8), kfd_ioctl_destroy_event }, /* DESTROY_EVENT */
        [0x0a] = { KFD_W(0x0a, 8), kfd_ioctl_set_event }, /* SET_EVENT */
        [0x0b] = { KFD_W(0x0b, 8), kfd_ioctl_reset_event }, /* RESET_EVENT */
        [0x0c] = { KFD_WR(0x0c, 24), kfd_ioctl_wait_events }, /* WAIT_EVENTS */
        [0x0d] = { KFD_W(0x0d, 8), kfd_ioctl_not_emulated },           /* DBG_REGISTER_DEPRECATED */
        [0x0e] = { KFD_W(0x0e, 8), kfd_ioctl_not_emulated },           /* DBG_UNREGISTER_DEPRECATED */
        [0x0f] = { KFD_W(0x0f, 16), kfd_ioctl_not_emulated },          /* DBG_ADDRESS_WATCH_DEPRECATED */
        [0x10] = { KFD_W(0x10, 16), kfd_ioctl_not_emulated },          /* DBG_WAVE_CONTROL_DEPRECATED */
        [0x11] = { KFD_WR(0x11, 16), kfd_ioctl_set_scratch_backing_va }, /* SET_SCRATCH_BACKING_VA */
        [0x12] = { KFD_WR(0x12, 40), kfd_ioctl_get_tile_config },      /* GET_TILE_CONFIG */
        [0x13] = { KFD_W(0x13, 24), kfd_ioctl_set_trap_handler },      /* SET_TRAP_HANDLER */
        [0x14] = { KFD_WR(0x14, 16), kfd_ioctl_get_process_apertures_new }, /* GET_PROCESS_APERTURES_NEW */
        [0x15] = { KFD_W(0x15, 8), kfd_ioctl_acquire_vm },             /* ACQUIRE_VM */
        [0x16] = { KFD_WR(0x16, 40), kfd_ioctl_alloc_memory_of_gpu }, /* ALLOC_MEMORY_OF_GPU */
        [0x17] = { KFD_W(0x17, 8), kfd_ioctl_free_memory_of_gpu }, /* FREE_MEMORY_OF_GPU */
        [0x18] = { KFD_WR(0x18, 24), kfd_ioctl_map_memory_to_gpu }, /* MAP_MEMORY_TO_GPU */
        [0x19] = { KFD_WR(0x19, 24), kfd_ioctl_unmap_memory_from_gpu }, /* UNMAP_MEMORY_FROM_GPU */
        [0x1a] = { KFD_W(0x1a, 16), kfd_ioctl_not_emulated },          /* SET_CU_MASK */
        [0x1b] = { KFD_WR(0x1b, 24), kfd_ioctl_not_emulated },         /* GET_QUEUE_WAVE_STATE */
        [0x1c] = { KFD_WR(0x1c, 32), kfd_ioctl_not_emulated },         /* GET_DMABUF_INFO */
        [0x1d] = { KFD_WR(0x1d, 24), kfd_ioctl_not_emulated },         /* IMPORT_DMABUF */
        [0x1e] = { KFD_WR(0x1e, 16), kfd_ioctl_not_emulated },         /* ALLOC_QUEUE_GWS */
        [0x1f] = { KFD_WR(0x1f, 8), kfd_ioctl_smi_events },            /* SMI_EVENTS */
        [0x20] = { KFD_WR(0x20, 24), kfd_ioctl_not_emulated },         /* SVM */
        [0x21] = { KFD_WR(0x21, 4), kfd_ioctl_not_emulated },          /* SET_XNACK_MODE */
        [0x22] = { KFD_WR(0x22, 56), kfd_ioctl_not_emulated },         /* CRIU_OP */
        [0x23] = { KFD_WR(0x23, 16), kfd_ioctl_not_emulated },         /* AVAILABLE_MEMORY */
        [0x24] = { KFD_WR(0x24, 16), kfd_ioctl_not_emulated },         /* EXPORT_DMABUF */
        [0x25] = { KFD_WR(0x25, 16), kfd_ioctl_runtime_enable },    /* RUNTIME_ENABLE */
        [0x26] = { KFD_WR(0x26, 32), kfd_ioctl_set_debug_trap },    /* DBG_TRAP */
};

_Static_assert(KFD_WR(0x02, 88) == AMDKFD_IOC_CREATE_QUEUE, "CREATE_QUEUE table entry");
_Static_assert(KFD_WR(0x1f, 8) == AMDKFD_IOC_SMI_EVENTS, "SMI_EVENTS table entry");
_Static_assert(KFD_WR(0x25, 16) == AMDKFD_IOC_RUNTIME_ENABLE, "RUNTIME_ENABLE table entry");
_Static_assert(KFD_WR(0x26, 32) == AMDKFD_IOC_DBG_TRAP, "DBG_TRAP table entry");
_Static_assert(KFD_R(0x01, 8) == AMDKFD_IOC_GET_VERSION, "GET_VERSION table entry");
_Static_assert(KFD_W(0x04, 32) == AMDKFD_IOC_SET_MEMORY_POLICY, "SET_MEMORY_POLICY table entry");
_Static_assert(KFD_WR(0x14, 16) == AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, "GET_PROCESS_APERTURES_NEW table entry");
_Static_assert(KFD_W(0x15, 8) == AMDKFD_IOC_ACQUIRE_VM, "ACQUIRE_VM table entry");
_Static_assert(KFD_WR(0x11, 16) == AMDKFD_IOC_SET_SCRATCH_BACKING_VA, "SET_SCRATCH_BACKING_VA table entry");
_Static_assert(KFD_W(0x13, 24) == AMDKFD_IOC_SET_TRAP_HANDLER, "SET_TRAP_HANDLER table entry");
_Static_assert(KFD_WR(0x12, 40) == AMDKFD_IOC_GET_TILE_CONFIG, "GET_TILE_CONFIG table entry");
_Static_assert(KFD_WR(0x05, 40) == AMDKFD_IOC_GET_CLOCK_COUNTERS, "GET_CLOCK_COUNTERS table entry");
_Static_assert(KFD_WR(0x08, 32) == AMDKFD_IOC_CREATE_EVENT, "CREATE_EVENT table entry");
_Static_assert(KFD_W(0x09, 8) == AMDKFD_IOC_DESTROY_EVENT, "DESTROY_EVENT table entry");
_Static_assert(KFD_W(0x0a, 8) == AMDKFD_IOC_SET_EVENT, "SET_EVENT table entry");
_Static_assert(KFD_W(0x0b, 8) == AMDKFD_IOC_RESET_EVENT, "RESET_EVENT table entry");
_Static_assert(KFD_WR(0x0c, 24) == AMDKFD_IOC_WAIT_EVENTS, "WAIT_EVENTS table entry");
_Static_assert(KFD_WR(0x16, 40) == AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, "ALLOC_MEMORY_OF_GPU table entry");
_Static_assert(KFD_W(0x17, 8) == AMDKFD_IOC_FREE_MEMORY_OF_GPU, "FREE_MEMORY_OF_GPU table entry");
_Static_assert(KFD_WR(0x18, 24) == AMDKFD_IOC_MAP_MEMORY_TO_GPU, "MAP_MEMORY_TO_GPU table entry");
_Static_assert(KFD_WR(0x19, 24) == AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, "UNMAP_MEMORY_FROM_GPU table entry");
_Static_assert(EMU_KDATA_MAX == _IOC_SIZEMASK, "kdata holds the largest _IOC_SIZE");

long kfd_ioctl_copy_out(struct emu_call *call, long ret)
{
        /* kfd_ioctl copies the user's size back whatever the handler
         * returned, and a fault there replaces the handler's result. */
        if ((_IOC_DIR(call->kcmd) & _IOC_READ) &&
            emu_copy_to_user(call->caller.tgid, call->arg, call->kdata, call->usize) < 0)
                return -EFAULT;
        return ret;
}

/* The locks a handler takes before anything could sleep: p->mutex for
 * most; the event ioctls p->event_mutex (CREATE_EVENT with an event page
 * p->mutex first); none for GET_VERSION, and DBG_TRAP takes its target's
 * (§3 step 6) after its own checks. */
static unsigned kfd_ioctl_locks(unsigned nr)
{
        switch (nr) {
        case _IOC_NR(AMDKFD_IOC_GET_VERSION):
        case _IOC_NR(AMDKFD_IOC_DBG_TRAP):
                return 0;
        case _IOC_NR(AMDKFD_IOC_CREATE_EVENT):
                return KFD_LOCK_MUTEX | KFD_LOCK_EVENT_MUTEX;
        case _IOC_NR(AMDKFD_IOC_DESTROY_EVENT):
        case _IOC_NR(AMDKFD_IOC_SET_EVENT):
        case _IOC_NR(AMDKFD_IOC_RESET_EVENT):
        case _IOC_NR(AMDKFD_IOC_WAIT_EVENTS):
                return KFD_LOCK_EVENT_MUTEX;
        default:
                return KFD_LOCK_MUTEX;
        }
}

/* The GPU whose dqm lock the queue ioctls take (create_queue_cpsch,
 * destroy_queue_cpsch) as a bit of node->gpus; 0 when there is none, for
 * which the handler fails before it would take one. kfdemu waits for the
 * lock before the handler's own checks, the kernel after them: the result
 * is the same, and a call that fails them may wait where it would not. */
static uint32_t kfd_ioctl_dqm_gpus(const struct emu_call *call, struct emu_process *p)
{
        const struct emu_gpu *gpu = NULL;

        if (call->kcmd == AMDKFD_IOC_CREATE_QUEUE) {
                gpu = kfd_device_by_id(p->node, ((const struct kfd_ioctl_create_queue_args *)call->kdata)->gpu_id);
        } else if (call->kcmd == AMDKFD_IOC_DESTROY_QUEUE) {
                const struct emu_queue *q =
                        kfd_queue_by_id(p, ((const struct kfd_ioctl_destroy_queue_args *)call->kdata)->queue_id);
                gpu = q ? q->gpu : NULL;
        }
        return gpu ? 1u << (unsigned)(gpu - p->node->gpus) : 0;
}

/* The handler and what follows it; a call that slept in mutex_lock comes
 * back here (kfd_ioctl_rerun). */
static long kfd_ioctl_run(struct emu_call *call)
{
        struct emu_process *p = call->file->process;
        unsigned nr = _IOC_NR(call->kcmd);
        long ret;

        /* A caller that slept on another process's mutex while its own mm
         * went away is dead: nobody reads the answer. */
        if (p->is_released)
                return -EBADF;
        if (kfd_lock_wait(p, kfd_ioctl_locks(nr), call) ||
            kfd_dqm_lock_wait(p->node, kfd_ioctl_dqm_gpus(call, p), call))
                return EMU_CALL_PARKED;
        kfd_call_note_locks(call, p, kfd_ioctl_locks(nr));
        p->node->dqm_preempted = 0;
        ret = kfd_ioctls[nr].func(call, p, call->kdata);
        /* Sleepers the handler woke run once it is done. */
        kfd_run_destroy_wakeups(p->node);
        if (ret == EMU_CALL_PARKED || kfd_ev_writer_hold(call, ret))
                return EMU_CALL_PARKED;
        return kfd_ioctl_copy_out(call, ret);
}

long emu_kfd_ioctl(struct emu_call *call)
{
        struct emu_process *p = call->file->process;
        unsigned nr = _IOC_NR(call->cmd);
        uint32_t asize;

        call->wait_kind = KFD_WAIT_NONE;

        /* The 1.13 kfd_ioctl answers -EINVAL for a number outside the table
         * (the -ENOTTY of newer trees came with "drm/amdkfd: return -ENOTTY
         * for unsupported IOCTLs", 2025). */
        if (nr < KFD_COMMAND_START || nr >= KFD_COMMAND_END)
                return -EINVAL;

        /* "Do not trust userspace, use our own definition": direction and
         * kernel size come from the table, the user size from the caller. */
        call->kcmd = kfd_ioctls[nr].cmd;
        call->usize = _IOC_SIZE(call->cmd);
        asize = call->usize > _IOC_SIZE(call->kcmd) ? call->usize : _IOC_SIZE(call->kcmd);

        /* "Only the process that opened /dev/kfd can use the file
         * descriptor": lead_thread != current->group_leader. A file whose
         * kfd_process went with its mm (exec) refers to nobody any more. */
        if (p->is_released || p->tgid != call->caller.tgid)
                return -EBADF;

        if (_IOC_DIR(call->kcmd) != _IOC_NONE && asize > call->usize)
                memset(call->kdata + call->usize, 0, asize - call->usize);

        if (_IOC_DIR(call->kcmd) & _IOC_WRITE) {
                if (emu_copy_from_user(call->caller.tgid, call->kdata, call->arg, call->usize) < 0)
                        return -EFAULT;
        } else if (_IOC_DIR(call->kcmd) & _IOC_READ) {
                memset(call->kdata, 0, call->usize);
        }

        return kfd_ioctl_run(call);
}

void kfd_ioctl_rerun(struct emu_call *call)
{
        long ret = kfd_ioctl_run(call);

        if (ret != EMU_CALL_PARKED)
                call->reply(call, ret);
}

/* Park `call` for `delay_ns` of model time in a wait of `kind`, holding
 * the locks its ioctl holds there. */
static long kfd_return_after_wait(struct emu_node *node, struct emu_call *call, long ret, uint64_t delay_ns,
                                  enum kfd_wait_kind kind)
{
        if (delay_ns == 0) {
                kfd_hws_hang_after_wait(call);
                return ret;
        }
        /* If the model completes the call before this returns, the result
         * goes back through the normal return, never as a second reply. */
        call->wait_kind = kind;
        call->completion_deferred = true;
        emu_gpu_complete_after(node, call, ret, delay_ns);
        call->completion_deferred = false;
        if (call->completed_inline) {
                call->completed_inline = false;
                return call->inline_ret;
        }
        kfd_call_hold_locks(node, call);
        return EMU_CALL_PARKED;
}

long kfd_return_after_device(struct emu_node *node, struct emu_call *call, long ret, uint64_t delay_ns)
{
        long r = kfd_return_after_wait(node, call, ret, delay_ns, KFD_WAIT_DEVICE);

        /* amdkfd_fence_wait_timeout loops on schedule() while the task is
         * TASK_RUNNING: the caller keeps its CPU for the whole wait. A
         * raiser blocked in the event write (kernel_private) sleeps there
         * after its fence wait; kfdemu overlaps the two and lets it sleep
         * throughout. */
        if (r == EMU_CALL_PARKED && !node->cfg.fence_wait_sleeps && !call->kernel_private)
                emu_transport_call_spins(call, delay_ns);
        return r;
}

long kfd_return_after_memory_sync(struct emu_node *node, struct emu_call *call, long ret)
{
        return kfd_return_after_wait(node, call, ret, (uint64_t)node->cfg.memory_sync_us * 1000u,
                                     KFD_WAIT_MEMORY_SYNC);
}

void emu_call_complete(struct emu_call *call, long ret)
{
        /* A preemption this call waited for failed: the kernel's hang
         * handling runs at the end of the wait, before the ioctl returns. */
        kfd_hws_hang_after_wait(call);
        /* The timer of a WAIT_EVENTS asleep fired: its timeout passed. */
        if (call->wait_kind == KFD_WAIT_EVENTS) {
                kfd_wait_events_timed_out(call);
                return;
        }
        if (call->completion_deferred) {
                call->wait_kind = KFD_WAIT_NONE;
                call->completed_inline = true;
                call->inline_ret = ret;
                return;
        }
        /* The wait is over: what the ioctl held across it is released, and
         * whoever slept on it runs, before this caller's reply. */
        kfd_call_release_locks(call);
        /* A raiser still blocked in the event write returns after it. */
        if (kfd_ev_writer_hold(call, ret))
                return;
        call->wait_kind = KFD_WAIT_NONE;
        call->next_waiter = NULL;
        call->reply(call, kfd_ioctl_copy_out(call, ret));
}

void emu_call_interrupt(struct emu_call *call)
{
        long held;

        /* The signal ends a blocked event write first: no byte, and the
         * ioctl returns what it would have. */
        if (kfd_ev_writer_cancel(call, &held)) {
                emu_call_complete(call, held);
                return;
        }

        switch ((enum kfd_wait_kind)call->wait_kind) {
        case KFD_WAIT_RUNTIME_ENABLE:
                kfd_runtime_wait_interrupted(call);
                break;
        case KFD_WAIT_DESTROY_QUEUE:
                kfd_destroy_wait_interrupted(call);
                break;
        case KFD_WAIT_EVENTS:
                kfd_wait_events_interrupted(call);
                break;
        case KFD_WAIT_MEMORY_SYNC:
                /* dma_fence_wait(intr = true) ends with -ERESTARTSYS; the
                 * ioctl unlocks p->mutex and returns it (n_success already
                 * counts the devices mapped). */
                emu_gpu_cancel_completion(call->file->process->node, call);
                emu_call_complete(call, -EMU_ERESTARTSYS);
                break;
        case KFD_WAIT_DEVICE:
                /* The unmap fence is waited for uninterruptibly: the signal
                 * is handled once the preemption has finished. So is a
                 * mutex (mutex_lock, not mutex_lock_interruptible). */
        case KFD_WAIT_LOCK:
        case KFD_WAIT_EVENT_WRITE:
        case KFD_WAIT_NONE:
                break;
        }
}

void emu_call_abandon(struct emu_call *call)
{
        long held;

        (void)kfd_ev_writer_cancel(call, &held);
        switch ((enum kfd_wait_kind)call->wait_kind) {
        case KFD_WAIT_RUNTIME_ENABLE:
                kfd_waitlist_remove(&call->file->process->runtime_enable_sema.waiters, call);
                break;
        case KFD_WAIT_DESTROY_QUEUE:
                kfd_waitlist_remove(&call->file->process->destroy_waiters, call);
                break;
        case KFD_WAIT_DEVICE:
        case KFD_WAIT_MEMORY_SYNC:
                /* The kernel's task cannot die before its wait ends; kfdemu
                 * drops the call and its locks at once. */
                emu_gpu_cancel_completion(call->file->process->node, call);
                call->wait_kind = KFD_WAIT_NONE;
                /* The hang handling does not depend on the caller. */
                kfd_hws_hang_after_wait(call);
                kfd_call_release_locks(call);
                break;
        case KFD_WAIT_LOCK:
                kfd_lock_abandon(call);
                break;
        case KFD_WAIT_EVENTS:
                kfd_wait_events_abandon(call);
                break;
        case KFD_WAIT_EVENT_WRITE:
        case KFD_WAIT_NONE:
                break;
        }
}

int emu_kfd_open(struct emu_node *node, const struct emu_caller *caller, struct emu_file **ret_file)
{
        struct emu_process *p;
        struct emu_file *file;
        int r;

        if (kfd_task_is_32bit(caller->tgid)) {
                kfd_log(node, "Process %d (32-bit) failed to open /dev/kfd; "
                        "32-bit processes are not supported by amdkfd", caller->tid);
                return -EPERM;
        }

        file = calloc(1, sizeof(*file));
        if (!file)
                return -ENOMEM;

        /* kfd_create_process(current): one kfd_process per mm, so a second
         * open (or one from another thread) finds the same process. */
        p = kfd_lookup_process_by_tgid(node, caller->tgid);
        if (!p) {
                r = kfd_create_process(node, caller->tgid, &p);
                if (r < 0) {
                        free(file);
                        return r;
                }
        }

        p->n_files++;
        file->process = p;
        *ret_file = file;
        return 0;
}

void emu_kfd_release(struct emu_file *file)
{
        /* kfd_release only drops a reference: the kfd_process, its queues
         * and any debug session live as long as the mm. */
        kfd_process_put_file(file->process);
        free(file);
}

int emu_kfd_mmap(struct emu_file *file, const struct emu_caller *caller, uint64_t offset,
                 uint64_t length, struct emu_mmap_result *ret)
{
        struct emu_node *node = file->process->node;
        struct emu_process *p;
        struct emu_gpu *gpu = NULL;
        uint32_t gpu_id;

        /* kfd_mmap maps for kfd_get_process(current), not for the file. */
        p = kfd_lookup_process_by_tgid(node, caller->tgid);
        if (!p)
                return -EINVAL;

        gpu_id = EMU_KFD_MMAP_GET_GPU_ID(offset);
        if (gpu_id)
                gpu = kfd_device_by_id(node, gpu_id);

        switch (offset & EMU_KFD_MMAP_TYPE_MASK) {
        case EMU_KFD_MMAP_TYPE_DOORBELL:
                if (!gpu)
                        return -ENODEV;
                /* kfd_doorbell_mmap: only the whole per-process slice. */
                if (length != EMU_DOORBELL_FRAME_SIZE || !kfd_process_device_by_id(p, gpu_id))
                        return -EINVAL;
                return emu_gpu_doorbell_segments(gpu, p, ret);
        case KFD_MMAP_TYPE_EVENTS:
                return kfd_event_mmap(p, length, ret);
        case KFD_MMAP_TYPE_RESERVED_MEM:
                if (!gpu)
                        return -ENODEV;
                /* Reserved memory (the CWSR trap handler pages of GPUs
                 * without a per-queue area) is not emulated. */
                return -EINVAL;
        default: /* KFD_MMAP_TYPE_MMIO */
                if (!gpu)
                        return -ENODEV;
                return kfd_mmio_mmap(gpu, length, ret);
        }
}
