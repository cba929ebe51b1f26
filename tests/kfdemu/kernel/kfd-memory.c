/* SPDX-License-Identifier: MIT */
/*
 * A process's GPU memory: ALLOC/FREE_MEMORY_OF_GPU and MAP/UNMAP_MEMORY_
 * TO/FROM_GPU (kfd_chardev.c's handlers and the amdgpu_amdkfd_gpuvm.c
 * calls under them, 6.x trees; kfd-interface.md §13), and the render
 * node's mmap of the buffer objects they make.
 *
 * The model keeps what a caller can observe: handles, which VMs a BO is
 * mapped in, VRAM accounting against the device's size, and the contents
 * of VRAM and GTT BOs in a memfd the process maps through the render node.
 * Page tables, eviction and the userptr MMU notifiers are not modelled.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "cleanup.h"
#include "kfd-priv.h"
#include "usermem.h"

#define KFD_PAGE_SIZE 4096ull
#define KFD_PAGE_ALIGN(x) (((x) + KFD_PAGE_SIZE - 1) & ~(KFD_PAGE_SIZE - 1))

/* MAKE_HANDLE / GET_GPU_ID / GET_IDR_HANDLE (kfd_priv.h). */
#define KFD_MAKE_HANDLE(gpu_id, idr) (((uint64_t)(gpu_id) << 32) | (idr))
#define KFD_HANDLE_GPU_ID(handle) ((uint32_t)((handle) >> 32))
#define KFD_HANDLE_IDR(handle) ((uint32_t)((handle) & 0xffffffffu))

/* DRM_FILE_PAGE_OFFSET_START / _SIZE (drm_gem.h, 64-bit): the DRM
 * device's mmap offsets, in pages, start above 4 GiB and span 1 TiB. */
#define DRM_FILE_PAGE_OFFSET_START ((0xffffffffull >> 12) + 1)
#define DRM_FILE_PAGE_OFFSET_SIZE ((0xffffffffull >> 12) * 256)

struct emu_bo *kfd_bo_by_handle(struct emu_pdd *pdd, uint32_t idr_handle)
{
        for (struct emu_bo *bo = pdd->bos; bo; bo = bo->next)
                if (bo->idr_handle == idr_handle)
                        return bo;
        return NULL;
}

/* idr_alloc(&pdd->alloc_idr, mem, 0, 0): the lowest free id. */
static uint32_t lowest_free_handle(struct emu_pdd *pdd)
{
        uint32_t id = 0;

        while (kfd_bo_by_handle(pdd, id))
                id++;
        return id;
}

/* AMDGPU_VM_RESERVED_VRAM (amdgpu_vm.h, 6.x). */
#define AMDGPU_VM_RESERVED_VRAM (8ull << 20)

/* The VRAM amdgpu_amdkfd_reserve_mem_limit lets KFD allocate on `gpu`:
 * the device's, less ESTIMATE_PT_SIZE(amdgpu_amdkfd_total_mem_size), the
 * page tables' estimate from the host's RAM (one 16 KiB-th of it, at
 * least AMDGPU_VM_RESERVED_VRAM). The pages RAS retired and VRAM the
 * driver pinned for itself, which it subtracts too, are none here. */
static uint64_t kfd_vram_available(const struct emu_gpu *gpu)
{
        uint64_t vram = (uint64_t)gpu->cfg.vram_mib << 20, host_ram = 0, reserved_for_pt;
        struct sysinfo si;

        /* amdgpu_amdkfd_gpuvm_init_mem_limits: (totalram - totalhigh) * mem_unit. */
        if (sysinfo(&si) == 0)
                host_ram = ((uint64_t)si.totalram - si.totalhigh) * si.mem_unit;
        reserved_for_pt = host_ram >> 14 > AMDGPU_VM_RESERVED_VRAM ? host_ram >> 14 : AMDGPU_VM_RESERVED_VRAM;
        return vram > reserved_for_pt ? vram - reserved_for_pt : 0;
}

/* The BO of `gpu` whose mmap offset is the lowest at or above `page`
 * (any process's: the vma manager is the device's); NULL if none is. */
static const struct emu_bo *first_bo_from(const struct emu_gpu *gpu, uint64_t page)
{
        const struct emu_bo *first = NULL;

        for (const struct emu_process *p = gpu->node->processes; p; p = p->next)
                for (unsigned i = 0; i < p->n_pdds; i++) {
                        if (p->pdds[i].gpu != gpu)
                                continue;
                        for (const struct emu_bo *bo = p->pdds[i].bos; bo; bo = bo->next)
                                if (bo->mmap_offset >> 12 >= page &&
                                    (!first || bo->mmap_offset < first->mmap_offset))
                                        first = bo;
                }
        return first;
}

/* drm_vma_offset_add -> drm_mm_insert_node (DRM_MM_INSERT_BEST): the
 * start of the smallest hole in the device's offset space that holds
 * `pages`; -ENOSPC for 0 pages (drm_mm_insert_node_in_range: "size == 0")
 * or when no hole is large enough. Of holes of one size, the kernel's
 * size-ordered tree returns one its insertion history decides; here the
 * lowest. */
static long vma_offset_add(const struct emu_gpu *gpu, uint64_t pages, uint64_t *ret_page)
{
        const uint64_t end = DRM_FILE_PAGE_OFFSET_START + DRM_FILE_PAGE_OFFSET_SIZE;
        uint64_t hole_start = DRM_FILE_PAGE_OFFSET_START, best_start = 0, best_size = 0;

        if (pages == 0)
                return -ENOSPC;
        while (hole_start < end) {
                const struct emu_bo *next = first_bo_from(gpu, hole_start);
                uint64_t hole_end = next ? next->mmap_offset >> 12 : end;

                if (hole_end - hole_start >= pages && (best_size == 0 || hole_end - hole_start < best_size)) {
                        best_size = hole_end - hole_start;
                        best_start = hole_start;
                }
                if (!next)
                        break;
                hole_start = hole_end + (next->size >> 12);
        }
        if (best_size == 0)
                return -ENOSPC;
        *ret_page = best_start;
        return 0;
}

static unsigned gpu_index(const struct emu_gpu *gpu)
{
        return (unsigned)(gpu - gpu->node->gpus);
}

/* vm_manager.max_pfn of GC 9.x (gmc_v9_0_sw_init: amdgpu_vm_adjust_size
 * with 256 TiB, 48 bits): the GPU VM's pages. */
#define AMDGPU_GFX9_MAX_PFN (1ull << 36)

/* The GPU VA range [start, end) a BO takes in a VM it is mapped in: AQL
 * queue memory is mapped twice, back to back (kfd_mem_attach). Its size
 * is a whole number of pages already. */
static void bo_va_range(const struct emu_bo *bo, uint64_t *start, uint64_t *end)
{
        uint64_t span = bo->flags & KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM ? 2 * bo->size : bo->size;

        *start = bo->va;
        *end = bo->va + span;
}

/* amdgpu_vm_bo_map's checks when map_bo_to_gpuvm maps `bo` at its VA in
 * the VM of `gpu` (amdgpu_vm_verify_parameters): the VA on a GPU page, no
 * wrap past 2^64, the last page below max_pfn, and no overlap with any
 * other BO of the process mapped in that VM (amdgpu_vm_it_iter_first);
 * each is -EINVAL. */
static long vm_bo_map_check(const struct emu_process *p, const struct emu_gpu *gpu, const struct emu_bo *bo)
{
        uint64_t start, end;

        bo_va_range(bo, &start, &end);
        if (start & (KFD_PAGE_SIZE - 1) || end <= start || (end - 1) >> 12 >= AMDGPU_GFX9_MAX_PFN)
                return -EINVAL;
        for (unsigned i = 0; i < p->n_pdds; i++)
                for (const struct emu_bo *other = p->pdds[i].bos; other; other = other->next) {
                        uint64_t other_start, other_end;

                        if (other == bo || !(other->mapped_gpus & (1u << gpu_index(gpu))))
                                continue;
                        bo_va_range(other, &other_start, &other_end);
                        if (start < other_end && other_start < end)
                                return -EINVAL;
                }
        return 0;
}

/* amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu: the domain from the flags, the
 * memory limit, the BO and its mmap offset. `mmap_offset` carries the
 * userptr address (in the memory of `tgid`, the caller) in and the BO's
 * offset out. */
static long gpuvm_alloc(struct emu_pdd *pdd, pid_t tgid, uint64_t va, uint64_t size, uint32_t flags,
                        uint64_t *mmap_offset, struct emu_bo **ret)
{
        struct emu_gpu *gpu = pdd->gpu;
        bool contents = flags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT);
        uint64_t aligned_size, offset_page;
        struct emu_bo *bo;
        long r;

        if (!contents) {
                if (flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
                        if (*mmap_offset == 0)
                                return -EINVAL;
                } else if (flags & (KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)) {
                        if (size > UINT32_MAX)
                                return -EINVAL;
                } else {
                        return -EINVAL;
                }
        }

        /* "Workaround for AQL queue wraparound bug": the memory is mapped
         * twice, so only half of it is allocated. The alignment wraps a
         * size within a page of 2^64 to 0, as PAGE_ALIGN does. */
        if (flags & KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM)
                size >>= 1;
        aligned_size = KFD_PAGE_ALIGN(size);

        if ((flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) && gpu->vram_used + aligned_size > kfd_vram_available(gpu))
                return -ENOMEM;

        /* Every BO of the device gets an offset in its DRM vma manager
         * when it is created (ttm_bo_init_reserved), userptr, doorbell and
         * MMIO ones too; a BO of no pages gets none. */
        r = vma_offset_add(gpu, aligned_size >> 12, &offset_page);
        if (r < 0)
                return r;

        /* init_user_pages, once the BO exists: amdgpu_ttm_tt_get_user_pages
         * faults the whole range in (vma_lookup, then hmm_range_fault
         * asking for write access, since KFD's userptr BOs are not
         * read-only), so memory the caller has not mapped fails the ALLOC
         * itself, not a later MAP. */
        if (flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
                r = emu_user_range_accessible(tgid, *mmap_offset, aligned_size, true);
                if (r < 0)
                        return r;
        }

        bo = calloc(1, sizeof(*bo));
        if (!bo)
                return -ENOMEM;
        bo->memfd = -1;
        if (contents) {
                bo->memfd = memfd_create("kfdemu-bo", MFD_CLOEXEC);
                if (bo->memfd < 0 || ftruncate(bo->memfd, (off_t)aligned_size) < 0) {
                        if (bo->memfd >= 0)
                                close(bo->memfd);
                        free(bo);
                        return -ENOMEM;
                }
        }
        if (flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
                gpu->vram_used += aligned_size;

        bo->flags = flags;
        bo->va = va;
        bo->size = aligned_size;
        bo->mmap_offset = offset_page << 12;
        *mmap_offset = bo->mmap_offset;
        *ret = bo;
        return 0;
}

static void bo_free(struct emu_gpu *gpu, struct emu_bo *bo)
{
        if (bo->flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
                gpu->vram_used -= bo->size;
        if (bo->memfd >= 0)
                close(bo->memfd);
        free(bo);
}

long kfd_ioctl_alloc_memory_of_gpu(struct emu_call *call, struct emu_process *p, void *data)
{
        struct kfd_ioctl_alloc_memory_of_gpu_args *args = data;
        uint64_t offset = args->mmap_offset;
        uint32_t flags = args->flags;
        struct emu_pdd *pdd;
        struct emu_bo *bo;
        long r;

        if (args->size == 0)
                return -EINVAL;
        /* No SVM range exists (SVM is not emulated), so the -EADDRINUSE
         * overlap checks never fire. Every emulated device is large-BAR
         * (all VRAM visible to the CPU), so PUBLIC VRAM is allowed. */
        r = kfd_bind_device(p, args->gpu_id, &pdd);
        if (r < 0)
                return r;

        if (flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL) {
                /* kfd_doorbell_process_slice; kfd_get_process_doorbells
                 * only fails when the doorbell bitmap is exhausted. */
                if (args->size != EMU_DOORBELL_FRAME_SIZE)
                        return -EINVAL;
        } else if (flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP) {
                if (args->size != KFD_PAGE_SIZE)
                        return -EINVAL;
        }

        r = gpuvm_alloc(pdd, call->caller.tgid, args->va_addr, args->size, flags, &offset, &bo);
        if (r < 0)
                return r;
        bo->idr_handle = lowest_free_handle(pdd);
        bo->next = pdd->bos;
        pdd->bos = bo;

        if (flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) {
                uint64_t size = args->size;

                if (flags & KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM)
                        size >>= 1;
                pdd->vram_usage += KFD_PAGE_ALIGN(size);
        }

        args->handle = KFD_MAKE_HANDLE(args->gpu_id, bo->idr_handle);
        args->mmap_offset = offset;
        /* "MMIO is mapped through kfd device". */
        if (flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)
                args->mmap_offset = KFD_MMAP_TYPE_MMIO | EMU_KFD_MMAP_GPU_ID(args->gpu_id);
        return 0;
}

long kfd_ioctl_free_memory_of_gpu(struct emu_call *call, struct emu_process *p, void *data)
{
        const struct kfd_ioctl_free_memory_of_gpu_args *args = data;
        struct emu_pdd *pdd;
        struct emu_bo **link, *bo;

        /* "Safeguard to prevent user space from freeing signal BO. It
         * will be freed at process termination." */
        if (p->signal_handle && p->signal_handle == args->handle)
                return -EPERM;
        pdd = kfd_process_device_by_id(p, KFD_HANDLE_GPU_ID(args->handle));
        if (!pdd)
                return -EINVAL;
        for (link = &pdd->bos; (bo = *link); link = &bo->next)
                if (bo->idr_handle == KFD_HANDLE_IDR(args->handle))
                        break;
        if (!bo)
                return -EINVAL;
        /* amdgpu_amdkfd_gpuvm_free_memory_of_gpu: "is still mapped". */
        if (bo->mapped_gpus)
                return -EBUSY;
        *link = bo->next;
        if (bo->flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
                pdd->vram_usage -= bo->size;
        bo_free(pdd->gpu, bo);
        return 0;
}

/* The device list of a MAP or UNMAP: its checks and the copy-in. */
static long copy_device_list(struct emu_call *call, uint64_t ptr, uint32_t n_devices, uint32_t n_success,
                             uint32_t **ret)
{
        uint32_t *ids;

        if (n_devices == 0 || n_success > n_devices)
                return -EINVAL;
        /* kmalloc_array */
        if ((uint64_t)n_devices * sizeof(*ids) > KFD_KMALLOC_MAX_SIZE)
                return -ENOMEM;
        ids = malloc((size_t)n_devices * sizeof(*ids));
        if (!ids)
                return -ENOMEM;
        if (emu_copy_from_user(call->caller.tgid, ids, ptr, (size_t)n_devices * sizeof(*ids)) < 0) {
                free(ids);
                return -EFAULT;
        }
        *ret = ids;
        return 0;
}

long kfd_ioctl_map_memory_to_gpu(struct emu_call *call, struct emu_process *p, void *data)
{
        struct kfd_ioctl_map_memory_to_gpu_args *args = data;
        _cleanup_free_ uint32_t *ids = NULL;
        struct emu_pdd *pdd, *peer;
        struct emu_bo *bo;
        long r;

        r = copy_device_list(call, args->device_ids_array_ptr, args->n_devices, args->n_success, &ids);
        if (r < 0)
                return r;
        r = kfd_bind_device(p, KFD_HANDLE_GPU_ID(args->handle), &pdd);
        if (r < 0)
                return r;
        bo = kfd_bo_by_handle(pdd, KFD_HANDLE_IDR(args->handle));
        if (!bo)
                return -ENOMEM;
        for (uint32_t i = args->n_success; i < args->n_devices; i++) {
                r = kfd_bind_device(p, ids[i], &peer);
                if (r < 0)
                        return r;
                /* A VM it is mapped in already is skipped, not an error. */
                if (!(bo->mapped_gpus & (1u << gpu_index(peer->gpu)))) {
                        r = vm_bo_map_check(p, peer->gpu, bo);
                        if (r < 0)
                                return r;
                }
                bo->mapped_gpus |= 1u << gpu_index(peer->gpu);
                args->n_success = i + 1;
        }
        /* amdgpu_amdkfd_gpuvm_sync_memory waits for the page-table update
         * before p->mutex is released (kfd-interface.md §13). */
        return kfd_return_after_memory_sync(p->node, call, 0);
}

long kfd_ioctl_unmap_memory_from_gpu(struct emu_call *call, struct emu_process *p, void *data)
{
        struct kfd_ioctl_unmap_memory_from_gpu_args *args = data;
        _cleanup_free_ uint32_t *ids = NULL;
        struct emu_pdd *pdd, *peer;
        struct emu_bo *bo;
        long r;

        r = copy_device_list(call, args->device_ids_array_ptr, args->n_devices, args->n_success, &ids);
        if (r < 0)
                return r;
        /* No bind here: a device without its VM has no BO to unmap. */
        pdd = kfd_process_device_by_id(p, KFD_HANDLE_GPU_ID(args->handle));
        if (!pdd)
                return -EINVAL;
        bo = kfd_bo_by_handle(pdd, KFD_HANDLE_IDR(args->handle));
        if (!bo)
                return -ENOMEM;
        for (uint32_t i = args->n_success; i < args->n_devices; i++) {
                peer = kfd_process_device_by_id(p, ids[i]);
                if (!peer)
                        return -EINVAL;
                /* reserve_bo_and_cond_vms found no VM it is mapped in. */
                if (!(bo->mapped_gpus & (1u << gpu_index(peer->gpu))))
                        return -EINVAL;
                bo->mapped_gpus &= ~(1u << gpu_index(peer->gpu));
                args->n_success = i + 1;
        }
        return 0;
}

void kfd_process_device_free_bos(struct emu_pdd *pdd)
{
        while (pdd->bos) {
                struct emu_bo *bo = pdd->bos;

                pdd->bos = bo->next;
                bo_free(pdd->gpu, bo);
        }
        pdd->vram_usage = 0;
}

int kfd_bo_mmap(struct emu_gpu *gpu, const struct emu_file *drm_file, uint64_t offset, uint64_t length,
                struct emu_mmap_result *ret)
{
        struct emu_node *node = gpu->node;
        uint64_t first = offset >> 12, pages = (length + KFD_PAGE_SIZE - 1) >> 12;

        /* drm_gem_mmap: drm_vma_offset_lookup_locked finds the BO whose
         * range holds the whole mapping, then drm_vma_node_is_allowed
         * (the BO was made for the VM of one render file). */
        for (struct emu_process *p = node->processes; p; p = p->next)
                for (unsigned i = 0; i < p->n_pdds; i++) {
                        struct emu_pdd *pdd = &p->pdds[i];

                        if (pdd->gpu != gpu)
                                continue;
                        for (struct emu_bo *bo = pdd->bos; bo; bo = bo->next) {
                                uint64_t start = bo->mmap_offset >> 12, n = bo->size >> 12;

                                if (first < start || first + pages > start + n)
                                        continue;
                                if (pdd->drm_file != drm_file)
                                        return -EACCES;
                                /* amdgpu_gem_object_mmap: no CPU mapping of
                                 * a userptr BO. Doorbell and MMIO BOs map
                                 * device pages kfdemu does not serve. */
                                if (bo->flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR)
                                        return -EPERM;
                                if (bo->memfd < 0)
                                        return -EINVAL;
                                ret->n_segments = 1;
                                ret->segments[0] = (struct emu_mmap_segment){
                                        .memfd = bo->memfd,
                                        .memfd_offset = (first - start) << 12,
                                        .length = length,
                                };
                                ret->pfnmap = true;
                                return 0;
                        }
                }
        return -EINVAL;
}

int kfd_mmio_mmap(struct emu_gpu *gpu, uint64_t length, struct emu_mmap_result *ret)
{
        /* kfd_mmio_mmap: exactly the one page. The writes the thunk makes
         * there (HDP flushes) land in a page of its own per GPU. */
        if (length != KFD_PAGE_SIZE)
                return -EINVAL;
        if (gpu->mmio_remap_memfd < 0) {
                int fd = memfd_create("kfdemu-mmio-remap", MFD_CLOEXEC);

                if (fd < 0 || ftruncate(fd, (off_t)KFD_PAGE_SIZE) < 0) {
                        if (fd >= 0)
                                close(fd);
                        return -ENOMEM;
                }
                gpu->mmio_remap_memfd = fd;
        }
        ret->n_segments = 1;
        ret->segments[0] = (struct emu_mmap_segment){ .memfd = gpu->mmio_remap_memfd, .length = length };
        return 0;
}
