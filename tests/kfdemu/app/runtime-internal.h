/* SPDX-License-Identifier: MIT */
/* What the emu-runtime's files share; not for users of emu-runtime.h. */
#pragma once

#include <link.h>
#include <pthread.h>
#include <stdint.h>

#include "emu-runtime.h"

struct emu_runtime {
        int kfd_fd;
        uint32_t kfd_major, kfd_minor;
        bool debug_enabled;             /* RUNTIME_ENABLE succeeded */
        /* ROCr hands KFD the address of its _amdgpu_r_debug so a debugger can
         * find the loaded code objects; ours describes none. */
        struct r_debug r_debug;
        unsigned n_gpus;
        struct emu_gpu_info gpus[EMU_RUNTIME_MAX_GPUS];
        /* Doorbell frames, mapped on a GPU's first queue and kept until
         * close, as libhsakmt does. Indexed like gpus[]. */
        void *doorbell_frames[EMU_RUNTIME_MAX_GPUS];
        /* Serialises queue creation/destruction and the fields above. */
        pthread_mutex_t lock;
        uint64_t next_hsa_queue_id;
        /* ROCr's HW exception event and the thread waiting on it. */
        struct emu_hw_exception_watch *hw_exception_watch;
};

/* Creates the HW exception event and the thread that aborts the process,
 * as ROCr does, when a GPU reset sets it (hw-exception.c). */
int emu_hw_exception_watch_start(const struct emu_runtime *rt, struct emu_hw_exception_watch **ret_watch);
/* Ends the thread, destroys the events and frees the watch (NULL: nothing
 * to do). Returns the first error, also a wait that had failed. */
int emu_hw_exception_watch_stop(struct emu_hw_exception_watch *watch);

/* ioctl on the kfd fd, retried on EINTR like libhsakmt's hsakmt_ioctl.
 * Returns the ioctl's (non-negative) result or -errno. */
int emu_kfd_ioctl(int kfd_fd, unsigned long request, void *arg);

/* Reads the GPU nodes of the topology at topology_path. */
int emu_topology_read(const char *topology_path, struct emu_gpu_info *gpus, unsigned max_gpus,
                      unsigned *ret_count);

/* The doorbell frame of GPU `index`, mapping it on first use. Caller holds rt->lock. */
int emu_doorbell_frame(struct emu_runtime *rt, unsigned index, uint64_t doorbell_offset,
                       void **ret_frame);
void emu_doorbell_unmap_all(struct emu_runtime *rt);
