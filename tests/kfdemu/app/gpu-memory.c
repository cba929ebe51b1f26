/* SPDX-License-Identifier: MIT */
/*
 * Buffer objects as ROCr and libhsakmt make them (kfd-interface.md §13):
 * device memory as hipMalloc and hipFree get it (hsaKmtAllocMemory of
 * VRAM, hsaKmtMapMemoryToGPU, and back), and non-paged system memory, a
 * GTT BO the CPU maps through the render node, as libhsakmt's fmm.c makes
 * it. ALLOC_MEMORY_OF_GPU makes the BO, MAP_MEMORY_TO_GPU maps it into its
 * GPU's VM; UNMAP_MEMORY_FROM_GPU and FREE_MEMORY_OF_GPU undo it. Each of
 * these takes the process's p->mutex, and the map waits under it for the
 * page-table update.
 */
#include <errno.h>
#include <sys/mman.h>

#include "cleanup.h"
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

/* A BO of `flags` at `va`, mapped into GPU gpu_index's VM. */
static int buffer_alloc(struct emu_runtime *rt, unsigned gpu_index, uint64_t va, uint64_t size, uint32_t flags,
                        uint64_t *ret_handle, uint64_t *ret_mmap_offset)
{
        struct kfd_ioctl_alloc_memory_of_gpu_args alloc = {
                .va_addr = va,
                .size = size,
                .gpu_id = rt->gpus[gpu_index].gpu_id,
                .flags = flags,
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
        *ret_mmap_offset = alloc.mmap_offset;
        return 0;
}

int emu_gpu_memory_alloc(struct emu_runtime *rt, unsigned gpu_index, uint64_t va, uint64_t size,
                         uint64_t *ret_handle)
{
        uint64_t mmap_offset;

        return buffer_alloc(rt, gpu_index, va, size, KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
                            ret_handle, &mmap_offset);
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

int emu_system_memory_alloc(struct emu_runtime *rt, unsigned gpu_index, size_t size, void **ret_ptr,
                            uint64_t *ret_handle)
{
        uint64_t handle, mmap_offset;
        void *va, *p;
        int r;

        if (gpu_index >= rt->n_gpus)
                return -ENODEV;
        if (rt->drm_fds[gpu_index] < 0)
                return -EBADF;
        /* fmm.c takes an address both sides can use (the SVM aperture);
         * a CPU reservation stands in for its aperture manager. */
        va = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (va == MAP_FAILED)
                return -ENOMEM;
        r = buffer_alloc(rt, gpu_index, (uintptr_t)va, size,
                         KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE, &handle, &mmap_offset);
        if (r < 0) {
                munmap(va, size);
                return r;
        }
        /* libhsakmt maps it readable and writable; the kernel makes the
         * mapping VM_IO|VM_PFNMAP (ttm_bo_mmap_obj). */
        p = mmap(va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, rt->drm_fds[gpu_index], (off_t)mmap_offset);
        if (p == MAP_FAILED) {
                r = NEG_ERRNO();
                munmap(va, size);
                (void)emu_gpu_memory_free(rt, gpu_index, handle);
                return r;
        }
        *ret_ptr = p;
        *ret_handle = handle;
        return 0;
}

int emu_system_memory_free(struct emu_runtime *rt, unsigned gpu_index, void *ptr, size_t size, uint64_t handle)
{
        munmap(ptr, size);
        return emu_gpu_memory_free(rt, gpu_index, handle);
}
