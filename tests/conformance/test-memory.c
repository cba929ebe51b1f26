/* SPDX-License-Identifier: MIT */
/*
 * A process's GPU memory (kfd-interface.md §13): ALLOC/FREE_MEMORY_OF_GPU
 * (kfd_ioctl_alloc_memory_of_gpu, kfd_ioctl_free_memory_of_gpu,
 * amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu / _free_memory_of_gpu),
 * MAP/UNMAP_MEMORY_TO/FROM_GPU (kfd_ioctl_map_memory_to_gpu,
 * kfd_ioctl_unmap_memory_from_gpu), and mmap of a BO through the render
 * node whose VM it was made for (drm_gem_mmap, amdgpu_gem_object_mmap),
 * and of the MMIO remap page through /dev/kfd (kfd_mmio_mmap).
 *
 * The program's kfd_process keeps what it acquired: the tests run in this
 * order, and each frees what it allocated.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

#define PAGE 4096ull
#define DOORBELL_SLICE 8192ull /* kfd_doorbell_process_slice on SOC15: 1024 64-bit doorbells */

static uint32_t gpu_ids[16];
static int n_gpus;
static int render_fds[16];       /* kept open: the BOs are mmapped through them */

static long alloc_bo(uint32_t gpu_id, uint64_t va, uint64_t size, uint32_t flags, uint64_t *inout_offset,
                     uint64_t *ret_handle)
{
        struct kfd_ioctl_alloc_memory_of_gpu_args a = {
                .va_addr = va,
                .size = size,
                .gpu_id = gpu_id,
                .flags = flags,
                .mmap_offset = inout_offset ? *inout_offset : 0,
        };
        long r = conf_ioctl(conf_kfd(), AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a);

        if (inout_offset)
                *inout_offset = a.mmap_offset;
        if (ret_handle)
                *ret_handle = a.handle;
        return r;
}

static long free_bo(uint64_t handle)
{
        struct kfd_ioctl_free_memory_of_gpu_args a = { .handle = handle };

        return conf_ioctl(conf_kfd(), AMDKFD_IOC_FREE_MEMORY_OF_GPU, &a);
}

/* MAP (or UNMAP) of `handle` on `n` devices starting at `*inout_success`. */
static long map_bo(unsigned long request, uint64_t handle, const uint32_t *ids, uint32_t n,
                   uint32_t *inout_success)
{
        struct kfd_ioctl_map_memory_to_gpu_args a = {
                .handle = handle,
                .device_ids_array_ptr = (uintptr_t)ids,
                .n_devices = n,
                .n_success = *inout_success,
        };
        long r = conf_ioctl(conf_kfd(), request, &a);

        *inout_success = a.n_success;
        return r;
}

static uint64_t vram_size(uint32_t gpu_id)
{
        long long size = conf_gpu_topology_value(gpu_id, "mem_banks/0/properties", "size_in_bytes");

        assert_true(size > 0);
        return (uint64_t)size;
}

static int setup(void **state)
{
        n_gpus = conf_gpu_ids(gpu_ids, 16);
        return n_gpus >= 2 ? 0 : -1;
}

static int teardown(void **state)
{
        for (int i = 0; i < n_gpus; i++)
                if (render_fds[i] > 0)
                        close(render_fds[i]);
        return 0;
}

/* Allocating binds the process to the device: -ENODEV (the bind's own
 * errno, passed on) before ACQUIRE_VM; a size of 0 and an unknown GPU
 * are -EINVAL first. */
static void alloc_needs_the_vm(void **state)
{
        assert_int_equal(alloc_bo(gpu_ids[0], 1ull << 40, 0, KFD_IOC_ALLOC_MEM_FLAGS_GTT, NULL, NULL), -EINVAL);
        assert_int_equal(alloc_bo(0x7, 1ull << 40, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, NULL, NULL), -EINVAL);
        assert_int_equal(alloc_bo(gpu_ids[0], 1ull << 40, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, NULL, NULL), -ENODEV);

        for (int i = 0; i < n_gpus; i++) {
                long long minor = conf_gpu_property(gpu_ids[i], "drm_render_minor");
                char path[64];

                snprintf(path, sizeof(path), "/dev/dri/renderD%lld", minor);
                render_fds[i] = open(path, O_RDWR | O_CLOEXEC);
                assert_true(render_fds[i] >= 0);
                struct kfd_ioctl_acquire_vm_args a = { .drm_fd = (uint32_t)render_fds[i], .gpu_id = gpu_ids[i] };
                assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_ACQUIRE_VM, &a), 0);
        }
}

/* The domain comes from the flags: none of VRAM, GTT, USERPTR, DOORBELL,
 * MMIO_REMAP is -EINVAL; a userptr needs its address, a doorbell BO the
 * process's whole doorbell slice, an MMIO remap BO one page. The MMIO BO's
 * offset is /dev/kfd's (KFD_MMAP_TYPE_MMIO | gpu_id), the others' the
 * render node's, above 4 GiB. */
static void alloc_kinds(void **state)
{
        static uint8_t user_buffer[2 * PAGE] __attribute__((aligned(4096)));
        const uint32_t gpu = gpu_ids[0];
        uint64_t offset, handles[4];

        assert_int_equal(alloc_bo(gpu, 1ull << 40, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE, NULL, NULL), -EINVAL);
        offset = 0;
        assert_int_equal(alloc_bo(gpu, 1ull << 40, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, &offset, NULL), -EINVAL);
        assert_int_equal(alloc_bo(gpu, 1ull << 40, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL, NULL, NULL), -EINVAL);
        assert_int_equal(alloc_bo(gpu, 1ull << 40, 2 * PAGE, KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP, NULL, NULL),
                         -EINVAL);

        offset = 0;
        assert_int_equal(alloc_bo(gpu, 1ull << 40, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP, &offset, &handles[0]),
                         0);
        assert_int_equal(offset, (uint64_t)gpu << 46);
        offset = 0;
        assert_int_equal(alloc_bo(gpu, (1ull << 40) + PAGE, DOORBELL_SLICE, KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL,
                                  &offset, &handles[1]),
                         0);
        assert_true(offset >= 1ull << 32);
        offset = (uintptr_t)user_buffer;
        assert_int_equal(alloc_bo(gpu, (uintptr_t)user_buffer, sizeof(user_buffer), KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
                                  &offset, &handles[2]),
                         0);
        assert_true(offset >= 1ull << 32 && offset % PAGE == 0);
        assert_int_equal(alloc_bo(gpu, 1ull << 41, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, NULL, &handles[3]), 0);

        /* Handles are the gpu_id and the lowest free idr number. */
        for (int i = 0; i < 4; i++)
                assert_int_equal(handles[i], (uint64_t)gpu << 32 | (uint64_t)i);
        assert_int_equal(free_bo(handles[1]), 0);
        assert_int_equal(free_bo(handles[1]), -EINVAL);
        assert_int_equal(alloc_bo(gpu, 1ull << 42, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, NULL, &handles[1]), 0);
        assert_int_equal(handles[1], (uint64_t)gpu << 32 | 1);
        for (int i = 0; i < 4; i++)
                assert_int_equal(free_bo(handles[i]), 0);
        /* A handle of a GPU the process has no device for. */
        assert_int_equal(free_bo((uint64_t)0x7 << 32), -EINVAL);
}

/* A userptr BO's pages are faulted in at ALLOC (init_user_pages,
 * amdgpu_ttm_tt_get_user_pages: vma_lookup, then hmm_range_fault asking
 * for write access): memory the caller has not mapped, even in part, is
 * -EFAULT, memory it cannot write -EPERM. */
static void userptr_needs_the_memory_mapped(void **state)
{
        const uint32_t gpu = gpu_ids[0];
        uint8_t *area = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uint64_t offset, handle;

        assert_true(area != MAP_FAILED);
        assert_int_equal(munmap(area + PAGE, PAGE), 0);
        offset = (uintptr_t)(area + PAGE);
        assert_int_equal(alloc_bo(gpu, 1ull << 41, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, &offset, NULL), -EFAULT);
        offset = (uintptr_t)area;
        assert_int_equal(alloc_bo(gpu, 1ull << 41, 2 * PAGE, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, &offset, NULL), -EFAULT);

        assert_int_equal(mprotect(area, PAGE, PROT_READ), 0);
        offset = (uintptr_t)area;
        assert_int_equal(alloc_bo(gpu, 1ull << 41, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, &offset, NULL), -EPERM);
        assert_int_equal(mprotect(area, PAGE, PROT_READ | PROT_WRITE), 0);
        offset = (uintptr_t)area;
        assert_int_equal(alloc_bo(gpu, 1ull << 41, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, &offset, &handle), 0);
        assert_int_equal(free_bo(handle), 0);
        munmap(area, PAGE);
}

/* A BO takes the smallest hole of the device's mmap offset space that
 * holds it (drm_vma_offset_add, DRM_MM_INSERT_BEST), so a freed BO's
 * offset is given again; one of no pages (AQL memory of 1 byte, halved
 * to 0; a size PAGE_ALIGN wraps to 0) gets no offset: -ENOSPC. Every
 * other test frees its BOs, so the space here is one hole (on a real
 * node, as long as no other client leaves a hole of exactly 7 pages). */
static void mmap_offsets_are_reused(void **state)
{
        const uint32_t gpu = gpu_ids[0];
        uint64_t first = 0, fence = 0, again = 0, handles[3];

        assert_int_equal(alloc_bo(gpu, 1ull << 41, 1, KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM,
                                  NULL, NULL),
                         -ENOSPC);
        assert_int_equal(alloc_bo(gpu, 1ull << 41, UINT64_MAX - 100, KFD_IOC_ALLOC_MEM_FLAGS_GTT, NULL, NULL), -ENOSPC);

        assert_int_equal(alloc_bo(gpu, 1ull << 41, 7 * PAGE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, &first, &handles[0]), 0);
        assert_int_equal(alloc_bo(gpu, 1ull << 42, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, &fence, &handles[1]), 0);
        assert_int_equal(free_bo(handles[0]), 0);
        assert_int_equal(alloc_bo(gpu, 1ull << 41, 7 * PAGE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, &again, &handles[2]), 0);
        assert_true(again == first && fence > first);
        assert_int_equal(free_bo(handles[1]), 0);
        assert_int_equal(free_bo(handles[2]), 0);
}

/* A GTT BO's pages are shared by every mapping of its offset through the
 * render file it was made for; another render file of the same GPU is
 * refused (-EACCES, drm_vma_node_is_allowed), a userptr BO has no CPU
 * mapping (-EPERM), and an offset no BO covers is -EINVAL. */
static void bo_mmap_through_the_render_node(void **state)
{
        static uint8_t user_buffer[PAGE] __attribute__((aligned(4096)));
        const uint32_t gpu = gpu_ids[0];
        uint64_t offset = 0, user_offset = (uintptr_t)user_buffer, handle, user_handle;
        _cleanup_close_ int other = -1;
        char path[64];
        uint8_t *a, *b;

        assert_int_equal(alloc_bo(gpu, 1ull << 41, 2 * PAGE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, &offset, &handle), 0);
        a = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, render_fds[0], (off_t)offset);
        assert_true(a != MAP_FAILED);
        b = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, render_fds[0], (off_t)(offset + PAGE));
        assert_true(b != MAP_FAILED);
        a[PAGE + 7] = 0x5a;
        assert_int_equal(b[7], 0x5a);
        munmap(b, PAGE);

        assert_true(mmap(NULL, 3 * PAGE, PROT_READ, MAP_SHARED, render_fds[0], (off_t)offset) == MAP_FAILED);
        assert_int_equal(errno, EINVAL);
        snprintf(path, sizeof(path), "/dev/dri/renderD%lld", conf_gpu_property(gpu, "drm_render_minor"));
        other = open(path, O_RDWR | O_CLOEXEC);
        assert_true(other >= 0);
        assert_true(mmap(NULL, PAGE, PROT_READ, MAP_SHARED, other, (off_t)offset) == MAP_FAILED);
        assert_int_equal(errno, EACCES);

        assert_int_equal(alloc_bo(gpu, (uintptr_t)user_buffer, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, &user_offset,
                                  &user_handle),
                         0);
        assert_true(mmap(NULL, PAGE, PROT_READ, MAP_SHARED, render_fds[0], (off_t)user_offset) == MAP_FAILED);
        assert_int_equal(errno, EPERM);

        munmap(a, 2 * PAGE);
        assert_int_equal(free_bo(handle), 0);
        assert_int_equal(free_bo(user_handle), 0);
        assert_true(mmap(NULL, PAGE, PROT_READ, MAP_SHARED, render_fds[0], (off_t)offset) == MAP_FAILED);
        assert_int_equal(errno, EINVAL);
}

/* The MMIO remap offset maps the GPU's register page through /dev/kfd
 * (kfd_mmio_mmap): exactly one page; an unknown GPU in the offset is
 * -ENODEV (kfd_mmap). */
static void mmio_page_through_kfd(void **state)
{
        const uint64_t offset = (uint64_t)gpu_ids[0] << 46;
        uint32_t *page;

        page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, conf_kfd(), (off_t)offset);
        assert_true(page != MAP_FAILED);
        munmap(page, PAGE);
        assert_true(mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, conf_kfd(), (off_t)offset) == MAP_FAILED);
        assert_int_equal(errno, EINVAL);
        assert_true(mmap(NULL, PAGE, PROT_READ, MAP_SHARED, conf_kfd(), (off_t)(0x7ull << 46)) == MAP_FAILED);
        assert_int_equal(errno, ENODEV);
}

/* MAP/UNMAP: the device list's checks come first (-EINVAL for none, or
 * n_success past it; -EFAULT for a list the kernel cannot read); then an
 * unknown handle is -ENOMEM, an unknown device in the list -EINVAL with
 * n_success saying how far it got. A BO still mapped cannot be freed
 * (-EBUSY); unmapping it from a VM it is not mapped in is -EINVAL. */
static void map_and_unmap(void **state)
{
        const uint32_t both[2] = { gpu_ids[0], gpu_ids[1] };
        const uint32_t bad[2] = { gpu_ids[1], 0x7 };
        uint32_t done;
        uint64_t handle;

        assert_int_equal(alloc_bo(gpu_ids[0], 1ull << 41, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, NULL, &handle), 0);

        done = 0;
        assert_int_equal(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle, both, 0, &done), -EINVAL);
        done = 3;
        assert_int_equal(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle, both, 2, &done), -EINVAL);
        done = 0;
        assert_int_equal(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle, (const uint32_t *)8, 2, &done), -EFAULT);
        assert_int_equal(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle + 100, both, 2, &done), -ENOMEM);
        assert_int_equal(map_bo(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle + 100, both, 2, &done), -ENOMEM);
        assert_int_equal(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle, bad, 2, &done), -EINVAL);
        assert_int_equal(done, 1);

        /* Mapped in gpu_ids[1]'s VM only: not in gpu_ids[0]'s. */
        done = 0;
        assert_int_equal(map_bo(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle, both, 2, &done), -EINVAL);
        assert_int_equal(done, 0);
        assert_int_equal(free_bo(handle), -EBUSY);

        /* n_success resumes the list; a VM mapped twice is no error. */
        done = 0;
        assert_int_equal(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle, both, 2, &done), 0);
        assert_int_equal(done, 2);
        done = 1;
        assert_int_equal(map_bo(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle, both, 2, &done), 0);
        assert_int_equal(done, 2);
        assert_int_equal(free_bo(handle), -EBUSY);
        done = 0;
        assert_int_equal(map_bo(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle, both, 1, &done), 0);
        assert_int_equal(free_bo(handle), 0);
}

/* MAP places the BO at its VA in each VM (amdgpu_vm_bo_map): a VA off a
 * page, one whose last page is past the VM's 48 bits, or one that
 * overlaps a BO already mapped in that VM is -EINVAL, n_success saying how
 * far the list got. VMs are per device: the same VA is free in another.
 * AQL queue memory takes twice its allocation, mapped back to back. */
static void map_checks_the_va(void **state)
{
        const uint32_t both[2] = { gpu_ids[0], gpu_ids[1] };
        const uint64_t va = 1ull << 43;
        uint64_t unaligned, too_high, first, overlapping, aql, after_aql;
        uint32_t done;

        assert_int_equal(alloc_bo(gpu_ids[0], va + 100, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, NULL, &unaligned), 0);
        assert_int_equal(alloc_bo(gpu_ids[0], (1ull << 48) - PAGE, 2 * PAGE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, NULL,
                                  &too_high),
                         0);
        assert_int_equal(alloc_bo(gpu_ids[0], va, 2 * PAGE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, NULL, &first), 0);
        assert_int_equal(alloc_bo(gpu_ids[0], va + PAGE, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, NULL, &overlapping), 0);
        assert_int_equal(alloc_bo(gpu_ids[0], va + 4 * PAGE, 2 * PAGE,
                                  KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM, NULL, &aql),
                         0);
        assert_int_equal(alloc_bo(gpu_ids[0], va + 5 * PAGE, PAGE, KFD_IOC_ALLOC_MEM_FLAGS_GTT, NULL, &after_aql), 0);

        done = 0;
        assert_int_equal(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, unaligned, both, 2, &done), -EINVAL);
        assert_int_equal(done, 0);
        assert_int_equal(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, too_high, both, 2, &done), -EINVAL);
        assert_int_equal(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, first, both, 1, &done), 0);
        done = 0;
        assert_int_equal(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, overlapping, both, 2, &done), -EINVAL);
        assert_int_equal(done, 0);
        done = 1;
        assert_int_equal(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, overlapping, both, 2, &done), 0);
        done = 0;
        assert_int_equal(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, aql, both, 1, &done), 0);
        done = 0;
        assert_int_equal(map_bo(AMDKFD_IOC_MAP_MEMORY_TO_GPU, after_aql, both, 1, &done), -EINVAL);

        done = 0;
        assert_int_equal(map_bo(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, first, both, 1, &done), 0);
        done = 0;
        assert_int_equal(map_bo(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, aql, both, 1, &done), 0);
        done = 1;
        assert_int_equal(map_bo(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, overlapping, both, 2, &done), 0);
        for (uint64_t *h = (uint64_t[]){ unaligned, too_high, first, overlapping, aql, after_aql, 0 }; *h; h++)
                assert_int_equal(free_bo(*h), 0);
}

/* VRAM is counted against the device's (the mem bank's size) less the
 * page tables' estimate (ESTIMATE_PT_SIZE, at least 8 MiB): exactly the
 * device's VRAM, or more, is -ENOMEM. AQL queue memory is mapped twice
 * and allocated once, so half of it counts. */
static void vram_is_accounted(void **state)
{
        const uint32_t gpu = gpu_ids[0];
        const uint64_t size = vram_size(gpu);
        uint64_t handle, second;

        assert_int_equal(alloc_bo(gpu, 1ull << 41, size + PAGE, KFD_IOC_ALLOC_MEM_FLAGS_VRAM, NULL, NULL), -ENOMEM);
        assert_int_equal(alloc_bo(gpu, 1ull << 41, size, KFD_IOC_ALLOC_MEM_FLAGS_VRAM, NULL, NULL), -ENOMEM);
        assert_int_equal(alloc_bo(gpu, 1ull << 41, size + 2 * PAGE,
                                  KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM, NULL, &handle),
                         0);
        assert_int_equal(alloc_bo(gpu, 1ull << 42, size / 2 + PAGE, KFD_IOC_ALLOC_MEM_FLAGS_VRAM, NULL, NULL), -ENOMEM);
        /* The other GPU's VRAM is its own. */
        assert_int_equal(alloc_bo(gpu_ids[1], 1ull << 42, size / 2 + PAGE, KFD_IOC_ALLOC_MEM_FLAGS_VRAM, NULL, &second),
                         0);
        assert_int_equal(free_bo(second), 0);
        assert_int_equal(free_bo(handle), 0);
        assert_int_equal(alloc_bo(gpu, 1ull << 42, size / 2 + PAGE, KFD_IOC_ALLOC_MEM_FLAGS_VRAM, NULL, &handle), 0);
        assert_int_equal(free_bo(handle), 0);
}

/* A process's BOs go with it (kfd_process_destroy_pdds): the VRAM a child
 * held and never freed is the device's again once its kfd_process is gone. */
static void exit_frees_the_vram(void **state)
{
        const uint64_t size = vram_size(gpu_ids[0]);
        uint64_t handle;
        int status;
        pid_t child = fork();

        assert_true(child >= 0);
        if (child == 0) {
                int kfd = conf_open_kfd();
                struct kfd_ioctl_alloc_memory_of_gpu_args a = {
                        .va_addr = 1ull << 41,
                        .size = size / 4 * 3,
                        .gpu_id = gpu_ids[0],
                        .flags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
                };
                _exit(kfd >= 0 && conf_acquire_vms(kfd) == 0 &&
                      conf_ioctl(kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a) == 0 ? 0 : 1);
        }
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(conf_wait_kfd_process_gone(child), 0);
        assert_int_equal(alloc_bo(gpu_ids[0], 1ull << 41, size / 4 * 3, KFD_IOC_ALLOC_MEM_FLAGS_VRAM, NULL, &handle),
                         0);
        assert_int_equal(free_bo(handle), 0);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(alloc_needs_the_vm),
                cmocka_unit_test(alloc_kinds),
                cmocka_unit_test(userptr_needs_the_memory_mapped),
                cmocka_unit_test(mmap_offsets_are_reused),
                cmocka_unit_test(bo_mmap_through_the_render_node),
                cmocka_unit_test(mmio_page_through_kfd),
                cmocka_unit_test(map_and_unmap),
                cmocka_unit_test(map_checks_the_va),
                cmocka_unit_test(vram_is_accounted),
                cmocka_unit_test(exit_frees_the_vram),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
