/* SPDX-License-Identifier: MIT */
/*
 * User queues: AMDKFD_IOC_CREATE_QUEUE / DESTROY_QUEUE
 * (kfd_chardev.c: kfd_ioctl_create_queue, kfd_ioctl_destroy_queue), the
 * process queue manager's ids (kfd_process_queue_manager.c) and the device
 * queue manager's create/destroy (create_queue_cpsch, destroy_queue_cpsch,
 * wait_on_destroy_queue, process_termination_cpsch).
 */
#include <errno.h>
#include <stdlib.h>

#include "gc-version.h"
#include "gpu.h"
#include "kfd-priv.h"

/* -ENOTSUPP is a kernel-internal errno (524) that set_queue_properties_from_user
 * returns for an unknown queue type; it reaches user space unchanged. */
#define KFD_ENOTSUPP 524

/* TASK_SIZE_MAX on x86-64 with 4-level page tables: what access_ok() allows. */
#define KFD_TASK_SIZE_MAX 0x00007ffffffff000ull

static bool kfd_access_ok(uint64_t addr, uint64_t size)
{
        return addr <= KFD_TASK_SIZE_MAX && size <= KFD_TASK_SIZE_MAX - addr;
}

static bool kfd_is_power_of_2(uint32_t n)
{
        return n != 0 && (n & (n - 1)) == 0;
}

bool kfd_queue_may_be_active(const struct emu_queue *q)
{
        return q->ring_size > 0 && q->ring_base_address != 0 && q->queue_percentage > 0 &&
               !q->is_evicted && !q->is_suspended;
}

bool kfd_queue_is_active(const struct emu_queue *q)
{
        return kfd_queue_may_be_active(q) && !q->is_reset;
}

/* queue_percentage bits 8-15 are the PM4 target XCC ("drm/amdkfd: Add PM4
 * target XCC", the same release as the debugger API); bits 0-7 the percent. */
#define KFD_QUEUE_PERCENT_MASK 0xffu

/* set_queue_properties_from_user: its checks, in its order. */
static int kfd_check_queue_properties(struct emu_node *node, const struct kfd_ioctl_create_queue_args *args)
{
        if ((args->queue_percentage & KFD_QUEUE_PERCENT_MASK) > KFD_MAX_QUEUE_PERCENTAGE) {
                kfd_log(node, "Queue percentage must be between 0 to KFD_MAX_QUEUE_PERCENTAGE");
                return -EINVAL;
        }
        if (args->queue_priority > KFD_MAX_QUEUE_PRIORITY) {
                kfd_log(node, "Queue priority must be between 0 to KFD_MAX_QUEUE_PRIORITY");
                return -EINVAL;
        }
        if (args->ring_base_address && !kfd_access_ok(args->ring_base_address, sizeof(uint64_t))) {
                kfd_log(node, "Can't access ring base address");
                return -EFAULT;
        }
        if (!kfd_is_power_of_2(args->ring_size) && args->ring_size != 0) {
                kfd_log(node, "Ring size must be a power of 2 or 0");
                return -EINVAL;
        }
        if (!kfd_access_ok(args->read_pointer_address, sizeof(uint32_t))) {
                kfd_log(node, "Can't access read pointer");
                return -EFAULT;
        }
        if (!kfd_access_ok(args->write_pointer_address, sizeof(uint32_t))) {
                kfd_log(node, "Can't access write pointer");
                return -EFAULT;
        }
        if (args->eop_buffer_address && !kfd_access_ok(args->eop_buffer_address, sizeof(uint32_t)))
                return -EFAULT;
        if (args->ctx_save_restore_address &&
            !kfd_access_ok(args->ctx_save_restore_address, sizeof(uint32_t)))
                return -EFAULT;
        switch (args->queue_type) {
        case KFD_IOC_QUEUE_TYPE_COMPUTE:
        case KFD_IOC_QUEUE_TYPE_COMPUTE_AQL:
        case KFD_IOC_QUEUE_TYPE_SDMA:
        case KFD_IOC_QUEUE_TYPE_SDMA_XGMI:
                return 0;
        default:
                return -KFD_ENOTSUPP;
        }
}

static int kfd_bitmap_take_first_zero(uint64_t *bitmap, unsigned nbits, uint32_t *ret)
{
        for (unsigned i = 0; i < nbits; i++) {
                if (!(bitmap[i / 64] & (1ull << (i % 64)))) {
                        bitmap[i / 64] |= 1ull << (i % 64);
                        *ret = i;
                        return 0;
                }
        }
        return -ENOSPC;
}

static void kfd_bitmap_clear(uint64_t *bitmap, uint32_t bit)
{
        bitmap[bit / 64] &= ~(1ull << (bit % 64));
}

struct emu_queue *kfd_queue_by_id(struct emu_process *p, uint32_t queue_id)
{
        for (struct emu_queue *q = p->queues; q; q = q->next)
                if (q->id == queue_id)
                        return q;
        return NULL;
}

static void kfd_queue_unlink(struct emu_process *p, struct emu_queue *q)
{
        for (struct emu_queue **link = &p->queues; *link; link = &(*link)->next) {
                if (*link == q) {
                        *link = q->next;
                        p->n_queues--;
                        return;
                }
        }
}

/* The model lets go of the queue, then its doorbell, id and places in
 * the queue counts are free (destroy_queue_cpsch, pqm_destroy_queue). */
static void kfd_queue_free(struct emu_process *p, struct emu_queue *q)
{
        struct emu_pdd *pdd = kfd_process_device_by_id(p, q->gpu->cfg.gpu_id);

        emu_gpu_queue_destroyed(q);
        kfd_bitmap_clear(pdd->doorbell_slots_used, q->doorbell_slot);
        kfd_bitmap_clear(p->queue_slots_used, q->id);
        pdd->queue_count--;
        q->gpu->total_queue_count--;
        kfd_queue_unlink(p, q);
        free(q);
}

/* pqm_create_queue's per-process limit on one device: the HWS runlist
 * takes 127 queues of a process; GC 9.4.3, 9.4.4 and 9.5.0 have no such
 * HWS limit and allow 255. */
static unsigned kfd_max_queues_per_process(const struct emu_gpu *gpu)
{
        uint32_t gc = emu_gc_version(gpu->cfg.gfx_target_version);

        if (gc == EMU_IP_VERSION(9, 4, 3) || gc == EMU_IP_VERSION(9, 4, 4) || gc == EMU_IP_VERSION(9, 5, 0))
                return 255;
        return 127;
}

/* pqm_create_queue + create_queue_cpsch. */
static int kfd_pqm_create_queue(struct emu_process *p, struct emu_pdd *pdd,
                                const struct kfd_ioctl_create_queue_args *args, struct emu_queue **ret)
{
        struct emu_queue *q;
        uint32_t id, slot;
        int r;

        /* Counted per device, SDMA queues included. */
        if (pdd->queue_count >= kfd_max_queues_per_process(pdd->gpu))
                return -ENOSPC;
        /* find_available_queue_slot: lowest free id, so ids are reused. */
        if (kfd_bitmap_take_first_zero(p->queue_slots_used, GP_KFD_MAX_QUEUES_PER_PROCESS, &id) < 0) {
                kfd_log(p->node, "Cannot open more queues for process with pasid 0x%x", p->pasid);
                return -ENOMEM;
        }
        /* create_queue_cpsch: the device's limit over all processes first. */
        if (pdd->gpu->total_queue_count >= p->node->cfg.max_num_of_queues_per_device) {
                kfd_log(p->node, "Can't create new usermode queue because %u queues were already created",
                        pdd->gpu->total_queue_count);
                kfd_bitmap_clear(p->queue_slots_used, id);
                return -EPERM;
        }
        /* allocate_doorbell: first free doorbell of the process on the
         * device ("No doorbells available": -EBUSY). Unreachable while the
         * per-device limit above is at most 255 (see EMU_DOORBELL_SLOTS). */
        if (kfd_bitmap_take_first_zero(pdd->doorbell_slots_used, EMU_DOORBELL_SLOTS, &slot) < 0) {
                kfd_bitmap_clear(p->queue_slots_used, id);
                return -EBUSY;
        }

        q = calloc(1, sizeof(*q));
        if (!q) {
                kfd_bitmap_clear(pdd->doorbell_slots_used, slot);
                kfd_bitmap_clear(p->queue_slots_used, id);
                return -ENOMEM;
        }
        q->process = p;
        q->gpu = pdd->gpu;
        q->id = id;
        q->type = args->queue_type;
        q->ring_base_address = args->ring_base_address;
        q->write_pointer_address = args->write_pointer_address;
        q->read_pointer_address = args->read_pointer_address;
        q->ctx_save_restore_address = args->ctx_save_restore_address;
        q->eop_buffer_address = args->eop_buffer_address;
        q->eop_buffer_size = args->eop_buffer_size;
        q->ring_size = args->ring_size;
        q->ctx_save_restore_size = args->ctx_save_restore_size;
        q->ctl_stack_size = args->ctl_stack_size;
        q->queue_percentage = args->queue_percentage & KFD_QUEUE_PERCENT_MASK;
        q->queue_priority = args->queue_priority;
        q->doorbell_slot = slot;
        /* init_user_queue: every queue starts NEW, debugger or not. */
        q->exception_status = KFD_EC_MASK(EC_QUEUE_NEW);
        /* create_queue_cpsch: a process evicted on the device (by a GPU
         * reset, kfd-reset.c) gets its new queues evicted too. */
        q->is_evicted = pdd->evicted > 0;

        /* pqm list order: newest first. */
        q->next = p->queues;
        p->queues = q;
        p->n_queues++;
        pdd->queue_count++;
        pdd->gpu->total_queue_count++;

        /* create_queue_cpsch maps the queue at once: queues created while
         * others are suspended are not suspended. */
        r = emu_gpu_queue_created(q);
        if (r < 0) {
                kfd_queue_unlink(p, q);
                pdd->queue_count--;
                pdd->gpu->total_queue_count--;
                kfd_bitmap_clear(pdd->doorbell_slots_used, slot);
                kfd_bitmap_clear(p->queue_slots_used, id);
                free(q);
                return r;
        }
        *ret = q;
        return 0;
}

long kfd_ioctl_create_queue(struct emu_call *call, struct emu_process *p, void *data)
{
        struct kfd_ioctl_create_queue_args *args = data;
        struct emu_pdd *pdd;
        struct emu_queue *q;
        uint64_t delay = 0;
        int r;

        r = kfd_check_queue_properties(p->node, args);
        if (r < 0)
                return r;

        /* A device whose VM was not acquired yet is -ESRCH here
         * (kfd-interface.md §12). */
        r = kfd_bind_device(p, args->gpu_id, &pdd);
        if (r < 0)
                return r == -ENODEV ? -ESRCH : r;

        r = kfd_pqm_create_queue(p, pdd, args, &q);
        if (r < 0)
                return r;

        /* An active queue joins the runlist: on HWS that is an
         * execute_queues_cpsch, a device-wide preemption the ioctl waits for. */
        if (kfd_queue_is_active(q))
                delay = pdd->gpu->cfg.mes ? 0 : kfd_dqm_execute_queues(pdd->gpu, KFD_USE_DEFAULT_GRACE_PERIOD);

        args->queue_id = q->id;
        /* Return gpu_id as doorbell offset for mmap usage, plus (SOC15) the
         * doorbell's byte offset inside the process's doorbell frame. */
        args->doorbell_offset = EMU_KFD_MMAP_TYPE_DOORBELL | EMU_KFD_MMAP_GPU_ID(args->gpu_id) |
                                (uint64_t)q->doorbell_slot * EMU_DOORBELL_SIZE;

        /* kfd_procfs_add_queue; debugfs is generated when it is read. */
        emu_render_queue_created(q);

        kfd_dbg_ev_raise(KFD_EC_MASK(EC_QUEUE_NEW), p, pdd->gpu, q->id, call);
        return kfd_return_after_device(p->node, call, 0, delay);
}

/* The part of destroy_queue_cpsch after the wait, and pqm_destroy_queue's
 * bookkeeping. Returns the modelled time the ioctl still takes. */
static uint64_t kfd_destroy_queue_now(struct emu_process *p, struct emu_queue *q, struct emu_call *call)
{
        struct emu_gpu *gpu = q->gpu;
        bool was_active = kfd_queue_is_active(q);
        uint64_t delay = 0;

        if (was_active && gpu->cfg.mes)
                delay = emu_gpu_mes_remove_queue(q);
        emu_render_queue_destroyed(q);
        kfd_queue_free(p, q);

        if (was_active && !gpu->cfg.mes)
                delay = kfd_dqm_execute_queues(gpu, KFD_USE_DEFAULT_GRACE_PERIOD);

        /* Raised per device with no queue id (destroy_queue_cpsch). */
        kfd_dbg_ev_raise(KFD_EC_MASK(EC_DEVICE_QUEUE_DELETE), p, gpu, UINT32_MAX, call);
        return delay;
}

long kfd_ioctl_destroy_queue(struct emu_call *call, struct emu_process *p, void *data)
{
        struct kfd_ioctl_destroy_queue_args *args = data;
        struct emu_queue *q = kfd_queue_by_id(p, args->queue_id);

        if (!q) {
                kfd_log(p->node, "Queue id does not match any known queue");
                return -EINVAL;
        }

        /* wait_on_destroy_queue: the flag is set on every destroy; only a
         * suspended queue of a debugged process makes the caller sleep
         * (interruptibly) until a resume. Newer kernels refuse a second
         * destroy while one is under way (§16.6). */
        if (p->node->cfg.kernel.destroy_serialized && q->is_being_destroyed)
                return -EBUSY;
        q->is_being_destroyed = true;
        if (p->debug_trap_enabled && q->is_suspended) {
                kfd_waitlist_add_tail(&p->destroy_waiters, call, KFD_WAIT_DESTROY_QUEUE);
                return EMU_CALL_PARKED;
        }

        return kfd_return_after_device(p->node, call, 0, kfd_destroy_queue_now(p, q, call));
}

void kfd_wake_destroy_waiters(struct emu_node *node, struct emu_gpu *gpu)
{
        node->destroy_wake_pending |= 1u << (gpu - node->gpus);
}

static void kfd_run_destroy_wakeup(struct emu_node *node, struct emu_gpu *gpu)
{
        for (struct emu_process *p = node->processes; p; p = p->next) {
                struct emu_call *call = p->destroy_waiters;

                while (call) {
                        struct emu_call *next = call->next_waiter;
                        const struct kfd_ioctl_destroy_queue_args *args = (const void *)call->kdata;
                        struct emu_queue *q = kfd_queue_by_id(p, args->queue_id);
                        long r;

                        /* Each woken sleeper re-checks its own condition. A queue
                         * another thread destroyed meanwhile is looked up again,
                         * as pqm_destroy_queue would on entry. */
                        if (q && (q->gpu != gpu || q->is_suspended)) {
                                call = next;
                                continue;
                        }
                        kfd_waitlist_remove(&p->destroy_waiters, call);
                        if (!q)
                                r = -EINVAL;
                        else
                                r = kfd_return_after_device(node, call, 0,
                                                            kfd_destroy_queue_now(p, q, call));
                        if (r != EMU_CALL_PARKED)
                                emu_call_complete(call, r);
                        call = next;
                }
        }
}

void kfd_run_destroy_wakeups(struct emu_node *node)
{
        while (node->destroy_wake_pending) {
                unsigned i = (unsigned)__builtin_ctz(node->destroy_wake_pending);

                node->destroy_wake_pending &= ~(1u << i);
                kfd_run_destroy_wakeup(node, &node->gpus[i]);
        }
}

void kfd_destroy_wait_interrupted(struct emu_call *call)
{
        struct emu_process *p = call->file->process;
        const struct kfd_ioctl_destroy_queue_args *args = (const void *)call->kdata;
        struct emu_queue *q = kfd_queue_by_id(p, args->queue_id);

        /* wait_event_interruptible returned -ERESTARTSYS, and the ioctl is
         * restarted (SA_RESTART) or fails with EINTR. is_being_destroyed
         * stays set, so the queue stays unsuspendable, except in kernels
         * that clear it again (§16.6). */
        if (q && p->node->cfg.kernel.destroy_serialized)
                q->is_being_destroyed = false;
        kfd_waitlist_remove(&p->destroy_waiters, call);
        emu_call_complete(call, -EMU_ERESTARTSYS);
}

void kfd_process_remove_queues(struct emu_process *p)
{
        bool had_active[EMU_MAX_GPUS] = { false };

        while (p->queues) {
                had_active[p->queues->gpu - p->node->gpus] |= kfd_queue_is_active(p->queues);
                kfd_queue_free(p, p->queues);
        }

        /* process_termination_cpsch: one runlist update per device. */
        for (unsigned i = 0; i < p->node->n_gpus; i++)
                if (had_active[i] && !p->node->gpus[i].cfg.mes)
                        kfd_dqm_execute_queues(&p->node->gpus[i], KFD_USE_DEFAULT_GRACE_PERIOD);
}
