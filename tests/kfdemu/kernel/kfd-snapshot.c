/* SPDX-License-Identifier: MIT */
/*
 * GET_QUEUE_SNAPSHOT (kfd_process_queue_manager.c: pqm_get_queue_snapshot,
 * kfd_device_queue_manager.c: set_queue_snapshot_entry) and
 * GET_DEVICE_SNAPSHOT (kfd_debug.c: kfd_dbg_trap_device_snapshot).
 */
#include <errno.h>
#include <string.h>

#include "kfd-priv.h"
#include "usermem.h"

static void kfd_set_queue_snapshot_entry(struct emu_queue *q, uint64_t clear_mask,
                                         struct kfd_queue_snapshot_entry *entry)
{
        entry->ring_base_address = q->ring_base_address;
        entry->write_pointer_address = q->write_pointer_address;
        entry->read_pointer_address = q->read_pointer_address;
        entry->ctx_save_restore_address = q->ctx_save_restore_address;
        entry->ctx_save_restore_area_size = q->ctx_save_restore_size;
        entry->exception_status = q->exception_status;
        entry->queue_id = q->id;
        entry->gpu_id = q->gpu->cfg.gpu_id;
        entry->ring_size = q->ring_size;
        entry->queue_type = q->type;
        /* The clear happens as the entry is filled, before its copy. */
        q->exception_status &= ~clear_mask;
}

int kfd_pqm_get_queue_snapshot(struct emu_call *call, struct emu_process *target, uint64_t clear_mask,
                               uint64_t buf, uint32_t *num_queues, uint32_t *entry_size)
{
        uint32_t stride = *entry_size, capacity = *num_queues;
        struct kfd_queue_snapshot_entry entry;

        *num_queues = 0;
        if (*entry_size == 0)
                return -EINVAL;
        *entry_size = kfd_min_u32(*entry_size, sizeof(entry));

        memset(&entry, 0, sizeof(entry));
        /* Newest first; only the first `capacity` queues are copied (and
         * cleared), but all are counted. The buffer advances by the
         * caller's entry size. */
        for (struct emu_queue *q = target->queues; q; q = q->next) {
                if (*num_queues < capacity) {
                        kfd_set_queue_snapshot_entry(q, clear_mask, &entry);
                        if (emu_copy_to_user(call->caller.tgid, buf, &entry, *entry_size) < 0)
                                return -EFAULT;
                        buf += stride;
                }
                *num_queues += 1;
        }
        return 0;
}

static void kfd_fill_device_info(const struct emu_pdd *pdd, struct kfd_dbg_device_info_entry *info)
{
        const struct emu_gpu_config *cfg = &pdd->gpu->cfg;

        memset(info, 0, sizeof(*info));
        info->exception_status = pdd->exception_status;
        info->gpu_id = cfg->gpu_id;
        info->location_id = cfg->location_id;
        info->vendor_id = 0x1002;
        info->device_id = cfg->device_id;
        info->gfx_target_version = cfg->gfx_target_version;
        info->simd_count = cfg->cu_count * cfg->simd_per_cu;
        info->max_waves_per_simd = cfg->max_waves_per_simd;
        info->num_xcc = cfg->num_xcc;
        info->capability = GP_KFD_CAP_TRAP_DEBUG_SUPPORT |
                           (cfg->debug_firmware ? GP_KFD_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED : 0);
}

int kfd_dbg_trap_device_snapshot(struct emu_call *call, struct emu_process *target, uint64_t clear_mask,
                                 uint64_t buf, uint32_t *num_devices, uint32_t *entry_size)
{
        uint32_t stride = *entry_size, n;
        struct kfd_dbg_device_info_entry info;

        /* Unlike the queue snapshot, even a count-only call needs a buffer. */
        if (!buf)
                return -EINVAL;

        n = kfd_min_u32(*num_devices, target->n_pdds);
        *num_devices = target->n_pdds;
        *entry_size = kfd_min_u32(*entry_size, sizeof(info));

        for (uint32_t i = 0; i < n; i++) {
                struct emu_pdd *pdd = &target->pdds[i];

                kfd_fill_device_info(pdd, &info);
                if (clear_mask)
                        pdd->exception_status &= ~clear_mask;
                if (emu_copy_to_user(call->caller.tgid, buf, &info, *entry_size) < 0)
                        return -EFAULT;
                buf += stride;
        }
        return 0;
}
