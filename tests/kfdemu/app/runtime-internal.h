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
        /* The render node file each GPU's VM was acquired with, kept open
         * as libhsakmt keeps its drm_render_fds: a BO is mapped for the CPU
         * through that very file. -1 where an earlier runtime of the
         * process had acquired the VM. Indexed like gpus[]. */
        int drm_fds[EMU_RUNTIME_MAX_GPUS];
        /* libhsakmt's svm.userptr_for_paged_mem: false when the process
         * runs with HSA_USERPTR_FOR_PAGED_MEM=0. */
        bool userptr_for_paged_mem;
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

/* Whether ROCr would put a queue's amd_queue_t on GPU `index` in a GTT
 * buffer object rather than in paged memory (runtime.c). */
bool emu_runtime_queue_object_in_gtt(const struct emu_runtime *rt, unsigned index);

/* hsaKmtAllocMemory of non-paged system memory on GPU `index`
 * (gpu-memory.c): a GTT BO at a free CPU address, mapped in the GPU's VM
 * at that same address and for the CPU through the render node; `size` a
 * multiple of the page. Freed by emu_system_memory_free. */
int emu_system_memory_alloc(struct emu_runtime *rt, unsigned index, size_t size, void **ret_ptr,
                            uint64_t *ret_handle);
int emu_system_memory_free(struct emu_runtime *rt, unsigned index, void *ptr, size_t size, uint64_t handle);

/* The doorbell frame of GPU `index`, mapping it on first use. Caller holds rt->lock. */
int emu_doorbell_frame(struct emu_runtime *rt, unsigned index, uint64_t doorbell_offset,
                       void **ret_frame);
void emu_doorbell_unmap_all(struct emu_runtime *rt);
