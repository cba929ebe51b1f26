/* SPDX-License-Identifier: MIT */
/*
 * How the emulated GPU reaches a process's memory: through its own page
 * tables, not the CPU's. A VRAM or GTT buffer object mapped in the GPU's VM
 * (MAP_MEMORY_TO_GPU) is read and written in the BO itself, its memfd, as
 * the CP and shaders reach GTT through the GART and VM page tables whatever
 * the CPU mapping is: a render node's BO is mapped VM_IO|VM_PFNMAP for the
 * CPU, which process_vm_readv cannot read (kfd-hazards.md §9), while the
 * GPU's own access is unaffected. Any other address (the plain memory
 * kfdemu-app and the tests hand KFD without registering it) goes through
 * process_vm_readv/writev, as it always did: the GPU model is no more
 * lenient for it than before, and no less.
 */
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include "gpu-internal.h"

/* The BO of q's process mapped in q's GPU's VM that holds all of [addr, addr + len), or NULL. */
static const struct emu_bo *mapped_bo(const struct emu_queue *q, uint64_t addr, size_t len)
{
        const struct emu_process *p = q->process;
        unsigned slot = emu_gpu_slot(q->gpu);

        for (unsigned i = 0; i < p->n_pdds; i++)
                for (const struct emu_bo *bo = p->pdds[i].bos; bo; bo = bo->next)
                        if (bo->memfd >= 0 && (bo->mapped_gpus & (1u << slot)) && addr >= bo->va &&
                            len <= bo->size && addr - bo->va <= bo->size - len)
                                return bo;
        return NULL;
}

int emu_gpu_vm_read(const struct emu_queue *q, void *dst, uint64_t addr, size_t len)
{
        const struct emu_bo *bo = mapped_bo(q, addr, len);
        struct iovec local = { .iov_base = dst, .iov_len = len };
        struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };

        if (bo)
                return pread(bo->memfd, dst, len, (off_t)(addr - bo->va)) == (ssize_t)len ? 0 : -EFAULT;
        return process_vm_readv(q->process->tgid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

int emu_gpu_vm_write(const struct emu_queue *q, uint64_t addr, const void *src, size_t len)
{
        const struct emu_bo *bo = mapped_bo(q, addr, len);
        struct iovec local = { .iov_base = (void *)src, .iov_len = len };
        struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };

        if (bo)
                return pwrite(bo->memfd, src, len, (off_t)(addr - bo->va)) == (ssize_t)len ? 0 : -EFAULT;
        return process_vm_writev(q->process->tgid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}
