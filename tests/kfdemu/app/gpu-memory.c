/* SPDX-License-Identifier: MIT */
/*
 * Device memory as hipMalloc and hipFree get it through ROCr and libhsakmt
 * (hsaKmtAllocMemory, hsaKmtMapMemoryToGPU, and back): a VRAM buffer
 * object made by ALLOC_MEMORY_OF_GPU and mapped into its GPU's VM by
 * MAP_MEMORY_TO_GPU; UNMAP_MEMORY_FROM_GPU and FREE_MEMORY_OF_GPU undo it
 * (kfd-interface.md §13). Each of these takes the process's p->mutex, and
 * the map waits under it for the page-table update.
 */
#include <errno.h>

#include "kfd-abi.h"
#include "runtime-internal.h"

static int map_or_unmap(struct emu_runtime *rt, unsigned long request, uint64_t handle, uint32_t gpu_id)
{
        struct kfd_ioctl_map_memory_to_gpu_args args = {
                .handle = handle,
                .device_ids_array_ptr = (uintptr_t)&gpu_id,
                .n_devices = 1,
        };

        /* The unmap's argument struct has the same layout. */
        _Static_assert(sizeof(struct kfd_ioctl_map_memory_to_gpu_args) ==
                       sizeof(struct kfd_ioctl_unmap_memory_from_gpu_args), "map and unmap arguments");
        return emu_kfd_ioctl(rt->kfd_fd, request, &args);
}

int emu_gpu_memory_alloc(struct emu_runtime *rt, unsigned gpu_index, uint64_t va, uint64_t size,
                         uint64_t *ret_handle)
{
        struct kfd_ioctl_alloc_memory_of_gpu_args alloc = {
                .va_addr = va,
                .size = size,
                .gpu_id = rt->gpus[gpu_index].gpu_id,
                .flags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        };
        int r;

        if (gpu_index >= rt->n_gpus)
                return -ENODEV;
        r = emu_kfd_ioctl(rt->kfd_fd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &alloc);
        if (r < 0)
                return r;
        r = map_or_unmap(rt, AMDKFD_IOC_MAP_MEMORY_TO_GPU, alloc.handle, alloc.gpu_id);
        if (r < 0) {
                struct kfd_ioctl_free_memory_of_gpu_args free_args = { .handle = alloc.handle };

                (void)emu_kfd_ioctl(rt->kfd_fd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &free_args);
                return r;
        }
        *ret_handle = alloc.handle;
        return 0;
}

int emu_gpu_memory_free(struct emu_runtime *rt, unsigned gpu_index, uint64_t handle)
{
        struct kfd_ioctl_free_memory_of_gpu_args free_args = { .handle = handle };
        int r;

        if (gpu_index >= rt->n_gpus)
                return -ENODEV;
        r = map_or_unmap(rt, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle, rt->gpus[gpu_index].gpu_id);
        if (r < 0)
                return r;
        return emu_kfd_ioctl(rt->kfd_fd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &free_args);
}
