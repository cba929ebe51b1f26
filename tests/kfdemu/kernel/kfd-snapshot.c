/* SPDX-License-Identifier: MIT */
/*
 * GET_QUEUE_SNAPSHOT (kfd_process_queue_manager.c: pqm_get_queue_snapshot,
 * kfd_device_queue_manager.c: set_queue_snapshot_entry) and
 * GET_DEVICE_SNAPSHOT (kfd_debug.c: kfd_dbg_trap_device_snapshot).
 */
#include <errno.h>
#include <string.h>

#include "gpu.h"
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

/* kfd_dbg_trap_device_snapshot: the pdd's apertures, the PCI ids, and the
 * topology node's properties, as sysfs shows them. */
static void kfd_fill_device_info(const struct emu_pdd *pdd, struct kfd_dbg_device_info_entry *info)
{
        const struct emu_gpu_config *cfg = &pdd->gpu->cfg;
        struct emu_gpu_device_info dev;

        emu_gpu_device_info(pdd->gpu, &dev);
        *info = (struct kfd_dbg_device_info_entry){
                .exception_status = pdd->exception_status,
                .lds_base = dev.lds_base,
                .lds_limit = dev.lds_limit,
                .scratch_base = dev.scratch_base,
                .scratch_limit = dev.scratch_limit,
                .gpuvm_base = dev.gpuvm_base,
                .gpuvm_limit = dev.gpuvm_limit,
                .gpu_id = cfg->gpu_id,
                .location_id = cfg->location_id,
                .vendor_id = dev.vendor_id,
                .device_id = cfg->device_id,
                .revision_id = dev.revision_id,
                .subsystem_vendor_id = dev.subsystem_vendor_id,
                .subsystem_device_id = dev.subsystem_device_id,
                .fw_version = dev.fw_version,
                .gfx_target_version = cfg->gfx_target_version,
                .simd_count = cfg->cu_count * cfg->simd_per_cu,
                .max_waves_per_simd = cfg->max_waves_per_simd,
                .array_count = dev.array_count,
                .simd_arrays_per_engine = dev.simd_arrays_per_engine,
                .num_xcc = cfg->num_xcc,
                .capability = dev.capability,
                .debug_prop = dev.debug_prop,
        };
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
