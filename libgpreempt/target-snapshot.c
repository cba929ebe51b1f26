/* SPDX-License-Identifier: MIT */
#include <string.h>
#include <sys/uio.h>

#include "cleanup.h"
#include "dbgtrap.h"
#include "opts.h"
#include "target.h"

static void queue_from_entry(const struct kfd_queue_snapshot_entry *entry, struct gp_queue *queue)
{
        *queue = (struct gp_queue){
                .queue_id = entry->queue_id,
                .gpu_id = entry->gpu_id,
                .type = entry->queue_type,
                .ring_size = entry->ring_size,
                .ring_base_address = entry->ring_base_address,
                .read_pointer_address = entry->read_pointer_address,
                .write_pointer_address = entry->write_pointer_address,
                .ctx_save_restore_address = entry->ctx_save_restore_address,
                .ctx_save_restore_area_size = entry->ctx_save_restore_area_size,
                .exception_status = entry->exception_status,
        };
}

static int grow_packed(struct gp_target *target, size_t n)
{
        size_t capacity = target->packed_capacity;
        int r;

        /* Both arrays share one capacity; grow_array sizes them alike. */
        r = grow_array((void **)&target->queue_ids, &capacity, n, sizeof(uint32_t));
        if (r < 0)
                return r;
        return grow_array((void **)&target->queue_gpu_ids, &target->packed_capacity, n,
                          sizeof(uint32_t));
}

int target_refresh_queues(struct gp_target *target)
{
        const int kfd_fd = target->context->kfd_fd;
        uint32_t n_entries, entry_size;
        int r;

        /* Two-call protocol (pqm_get_queue_snapshot returns the total count
         * whatever the capacity): ask with the capacity we have (0 the first
         * time: count only, nothing cleared), grow and ask again while the
         * target has more queues than fit. EC_QUEUE_NEW is cleared only on
         * queues actually copied, so only a complete copy makes every listed
         * queue suspendable. */
        for (;;) {
                n_entries = (uint32_t)target->snapshot_capacity;
                entry_size = sizeof(struct kfd_queue_snapshot_entry);
                if (target->snapshot_buffer)
                        memset(target->snapshot_buffer, 0,
                               target->snapshot_capacity * sizeof(*target->snapshot_buffer));
                r = dbgtrap_queue_snapshot(kfd_fd, target->pid, KFD_EC_MASK(EC_QUEUE_NEW),
                                           target->snapshot_buffer, &n_entries, &entry_size);
                if (r < 0)
                        return r;
                if (n_entries > GP_MAX_QUEUES)
                        return -EPROTO;
                /* The kernel answers min(ours, its own): a newer kernel's
                 * bigger entry is cut to ours, an older kernel's smaller one
                 * leaves our extra fields zero. Bigger than ours is a bug. */
                if (entry_size > sizeof(struct kfd_queue_snapshot_entry) || entry_size == 0)
                        return -EPROTO;
                if (n_entries <= target->snapshot_capacity)
                        break;
                r = grow_array((void **)&target->snapshot_buffer, &target->snapshot_capacity,
                               n_entries + 16, sizeof(*target->snapshot_buffer));
                if (r < 0)
                        return r;
        }

        r = grow_array((void **)&target->queues, &target->queues_capacity, n_entries,
                       sizeof(*target->queues));
        if (r < 0)
                return r;
        r = grow_packed(target, n_entries);
        if (r < 0)
                return r;
        for (uint32_t i = 0; i < n_entries; i++) {
                queue_from_entry(&target->snapshot_buffer[i], &target->queues[i]);
                target->queue_ids[i] = target->queues[i].queue_id;
                target->queue_gpu_ids[i] = target->queues[i].gpu_id;
        }
        target->n_queues = n_entries;
        target->queues_stale = false;
        return 0;
}

GP_EXPORT int gp_target_snapshot(struct gp_target *target, const struct gp_queue **ret_queues,
                                 size_t *ret_n_queues)
{
        int r;

        if (!target || !ret_queues || !ret_n_queues)
                return -EINVAL;
        r = target_check_usable(target);
        if (r < 0)
                return r;
        r = target_refresh_queues(target);
        if (r < 0)
                return r;
        *ret_queues = target->queues;
        *ret_n_queues = target->n_queues;
        return 0;
}

static int read_u64(pid_t pid, uint64_t address, uint64_t *ret_value)
{
        uint64_t value;
        struct iovec local = { .iov_base = &value, .iov_len = sizeof(value) };
        struct iovec remote = { .iov_base = (void *)(uintptr_t)address, .iov_len = sizeof(value) };
        ssize_t n;

        n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n < 0)
                return NEG_ERRNO();
        if (n != sizeof(value))
                return -EIO;
        *ret_value = value;
        return 0;
}

GP_EXPORT int gp_target_read_queue_indices(struct gp_target *target, const struct gp_queue *queue,
                                           uint64_t *ret_read_index, uint64_t *ret_write_index)
{
        uint64_t read_index, write_index;
        int r;

        if (!target || !queue || !ret_read_index || !ret_write_index)
                return -EINVAL;
        if (target->gone)
                return -GP_ERR_TARGET_GONE;
        /* For ROCr's AQL queues both pointers are 64-bit packet indices in
         * amd_queue_t (read_dispatch_id / write_dispatch_id); process_vm_readv
         * needs ptrace rights, which the attach gave us. */
        r = read_u64(target->pid, queue->read_pointer_address, &read_index);
        if (r < 0)
                return r;
        r = read_u64(target->pid, queue->write_pointer_address, &write_index);
        if (r < 0)
                return r;
        *ret_read_index = read_index;
        *ret_write_index = write_index;
        return 0;
}
