/* SPDX-License-Identifier: MIT */
/*
 * Debug events (kfd_debug.c): raising an exception on a queue, device or
 * process, the one-byte notification written to the debugger's file, and
 * the ops that read, subscribe to and forward exceptions.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>

#include "kfd-priv.h"
#include "usermem.h"

/* KFD_DBG_EC_IS_VALID / KFD_DBG_EC_TYPE_IS_* of the uapi header. */
static bool kfd_ec_is_valid(uint32_t code)
{
        return code > EC_NONE && code < EC_MAX;
}

static bool kfd_ec_in(uint32_t code, uint64_t group)
{
        return kfd_ec_is_valid(code) && (KFD_EC_MASK(code) & group);
}

/* kernel_write(p->dbg_ev_file, ".", 1, &pos): the bytes carry no
 * information and the result is ignored (an eventfd refuses 1-byte writes,
 * a full O_NONBLOCK pipe drops the byte). Only a full *blocking* pipe makes
 * the raiser wait. */
static void kfd_dbg_ev_write(struct emu_process *p, struct emu_call *raiser)
{
        int flags;

        if (p->dbg_ev_fd < 0 || kfd_ev_write_byte(p->dbg_ev_fd, raiser ? &raiser->caller : NULL) != -EAGAIN)
                return;
        flags = fcntl(p->dbg_ev_fd, F_GETFL);
        if (flags < 0 || (flags & O_NONBLOCK))
                return;
        /* The write runs under p->event_mutex; every raiser but
         * CREATE_QUEUE's (kfd_ioctl_create_queue raises after dropping
         * p->mutex) also holds p->mutex: pqm_destroy_queue, runtime
         * enable/disable, and SET_EXCEPTIONS_ENABLED as a DBG_TRAP op. */
        unsigned locks = KFD_LOCK_EVENT_MUTEX;
        if (raiser && raiser->kcmd != AMDKFD_IOC_CREATE_QUEUE)
                locks |= KFD_LOCK_MUTEX;
        if (!raiser || !kfd_ev_writer_start(p, raiser, p->dbg_ev_fd, locks))
                kfd_log(p->node, "debug event byte for PID %d dropped: its blocking file is full",
                        (int)p->tgid);
}

bool kfd_dbg_ev_raise(uint64_t event_mask, struct emu_process *p, struct emu_gpu *gpu,
                      uint32_t queue_id, struct emu_call *raiser)
{
        if (!p || !p->debug_trap_enabled)
                return false;

        if (event_mask & KFD_EC_MASK_DEVICE) {
                for (unsigned i = 0; i < p->n_pdds; i++) {
                        if (p->pdds[i].gpu == gpu) {
                                p->pdds[i].exception_status |= event_mask & KFD_EC_MASK_DEVICE;
                                break;
                        }
                }
        } else if (event_mask & KFD_EC_MASK_PROCESS) {
                p->exception_status |= event_mask & KFD_EC_MASK_PROCESS;
        } else {
                /* EC_QUEUE_NEW names the queue by id; the GPU's own queue
                 * exceptions name it by doorbell id. */
                for (struct emu_queue *q = p->queues; q; q = q->next) {
                        uint32_t id = (event_mask & KFD_EC_MASK(EC_QUEUE_NEW)) ? q->id : q->doorbell_slot;

                        if (q->gpu != gpu || id != queue_id)
                                continue;
                        q->exception_status |= event_mask;
                        break;
                }
        }

        if (!(p->exception_enable_mask & event_mask))
                return false;
        kfd_dbg_ev_write(p, raiser);
        return true;
}

int kfd_dbg_ev_query_debug_event(struct emu_process *p, uint32_t *ret_queue_id, uint32_t *ret_gpu_id,
                                 uint64_t clear_mask, uint64_t *ret_status)
{
        *ret_status = 0;
        *ret_queue_id = 0;
        *ret_gpu_id = 0;

        /* Queues first (pqm order, newest first), then devices, then the
         * process; the first source with a subscribed bit is reported with
         * its whole status and cleared with the caller's mask. */
        for (struct emu_queue *q = p->queues; q; q = q->next) {
                if (!(q->exception_status & p->exception_enable_mask))
                        continue;
                *ret_status = q->exception_status;
                *ret_queue_id = q->id;
                *ret_gpu_id = q->gpu->cfg.gpu_id;
                q->exception_status &= ~clear_mask;
                return 0;
        }
        for (unsigned i = 0; i < p->n_pdds; i++) {
                struct emu_pdd *pdd = &p->pdds[i];

                if (!(pdd->exception_status & p->exception_enable_mask))
                        continue;
                *ret_status = pdd->exception_status;
                *ret_gpu_id = pdd->gpu->cfg.gpu_id;
                pdd->exception_status &= ~clear_mask;
                return 0;
        }
        if (p->exception_status & p->exception_enable_mask) {
                *ret_status = p->exception_status;
                p->exception_status &= ~clear_mask;
                return 0;
        }
        return -EAGAIN;
}

int kfd_dbg_trap_query_exception_info(struct emu_call *call, struct emu_process *target,
                                      uint32_t source_id, uint32_t exception_code, bool clear,
                                      uint64_t info_ptr, uint32_t *info_size)
{
        uint64_t *status;
        uint32_t actual_size = 0;

        if (!info_ptr)
                return -EINVAL;

        if (kfd_ec_in(exception_code, KFD_EC_MASK_QUEUE)) {
                struct emu_queue *q = kfd_queue_by_id(target, source_id);

                if (!q)
                        return -EINVAL;
                if (!(q->exception_status & KFD_EC_MASK(exception_code)))
                        return -ENODATA;
                status = &q->exception_status;
        } else if (kfd_ec_in(exception_code, KFD_EC_MASK_DEVICE)) {
                struct emu_pdd *pdd = kfd_process_device_by_id(target, source_id);

                if (!pdd)
                        return -EINVAL;
                if (!(pdd->exception_status & KFD_EC_MASK(exception_code)))
                        return -ENODATA;
                /* EC_DEVICE_MEMORY_VIOLATION's fault data is never recorded
                 * (kfdemu raises no VM faults), so it copies 0 bytes. */
                status = &pdd->exception_status;
        } else if (kfd_ec_in(exception_code, KFD_EC_MASK_PROCESS)) {
                if (!(target->exception_status & KFD_EC_MASK(exception_code)))
                        return -ENODATA;
                if (exception_code == EC_PROCESS_RUNTIME) {
                        uint32_t copy = kfd_min_u32(*info_size, sizeof(target->runtime_info));

                        if (emu_copy_to_user(call->caller.tgid, info_ptr, &target->runtime_info, copy) < 0)
                                return -EFAULT;
                        actual_size = sizeof(target->runtime_info);
                }
                status = &target->exception_status;
        } else {
                return -EINVAL;
        }

        *info_size = actual_size;
        if (clear)
                *status &= ~KFD_EC_MASK(exception_code);
        return 0;
}

void kfd_dbg_set_enabled_debug_exception_mask(struct emu_process *target, uint64_t mask,
                                              struct emu_call *raiser)
{
        uint64_t pending = target->exception_status;

        for (struct emu_queue *q = target->queues; q; q = q->next)
                pending |= q->exception_status;
        for (unsigned i = 0; i < target->n_pdds; i++)
                pending |= target->pdds[i].exception_status;

        /* The new subscription replaces the old one, and what it already
         * covers is announced at once. */
        if (mask & pending)
                kfd_dbg_ev_write(target, raiser);
        target->exception_enable_mask = mask;
}

/* kfd_send_exception_to_runtime: the queue's context-save header names a
 * user word the runtime polls; the reason bits are ORed into it. */
static void kfd_send_exception_to_queue_runtime(struct emu_process *p, uint32_t queue_id, uint64_t reason)
{
        struct emu_queue *q = kfd_queue_by_id(p, queue_id);
        uint64_t payload_addr, payload;

        if (!q)
                return;
        if (emu_copy_from_user(p->tgid, &payload_addr,
                               q->ctx_save_restore_address +
                                       offsetof(struct kfd_context_save_area_header, err_payload_addr),
                               sizeof(payload_addr)) < 0 ||
            emu_copy_from_user(p->tgid, &payload, payload_addr, sizeof(payload)) < 0)
                return;
        payload |= reason;
        (void)emu_copy_to_user(p->tgid, payload_addr, &payload, sizeof(payload));
}

int kfd_dbg_send_exception_to_runtime(struct emu_process *p, uint32_t gpu_id, uint32_t queue_id,
                                      uint64_t error_reason)
{
        if (error_reason & KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION)) {
                if (!kfd_process_device_by_id(p, gpu_id))
                        return -ENODEV;
                /* The eviction and VM-fault event that follow are outside
                 * what kfdemu emulates (README "Known differences"). */
                error_reason &= ~KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION);
        }
        if (error_reason & KFD_EC_MASK(EC_PROCESS_RUNTIME)) {
                kfd_runtime_sema_up(p);
                error_reason &= ~KFD_EC_MASK(EC_PROCESS_RUNTIME);
        }
        if (error_reason)
                kfd_send_exception_to_queue_runtime(p, queue_id, error_reason);
        return 0;
}
