/* SPDX-License-Identifier: MIT */
/*
 * A process's GPU address spaces as the ROCt thunk sets them up in
 * hsaKmtOpenKFD (kfd-interface.md §12): AMDKFD_IOC_ACQUIRE_VM takes the VM
 * of an amdgpu render node for the process on one GPU
 * (kfd_ioctl_acquire_vm, kfd_process_device_init_vm,
 * amdgpu_amdkfd_gpuvm_acquire_process_vm), GET_PROCESS_APERTURES_NEW
 * reports each device's apertures (kfd_ioctl_get_process_apertures_new),
 * SET_MEMORY_POLICY sets its cache policy (kfd_ioctl_set_memory_policy,
 * kfd_bind_process_to_device), SET_TRAP_HANDLER and SET_SCRATCH_BACKING_VA
 * the addresses of its trap handler and scratch (kfd_ioctl_set_trap_handler,
 * kfd_ioctl_set_scratch_backing_va).
 */
#include <errno.h>

#include "cleanup.h"

#include "gpu.h"
#include "kfd-priv.h"
#include "usermem.h"

long kfd_ioctl_acquire_vm(struct emu_call *call, struct emu_process *p, void *data)
{
        const struct kfd_ioctl_acquire_vm_args *args = data;
        _cleanup_close_ int fd = -1;
        struct emu_file *drm_file;
        struct emu_pdd *pdd;

        /* fget(args->drm_fd) in the caller's table: no such fd is -EINVAL. */
        if (kfd_fget(p, args->drm_fd, &fd) < 0)
                return -EINVAL;
        drm_file = emu_transport_file_of_fd(p->node, fd);

        pdd = kfd_process_device_by_id(p, args->gpu_id);
        if (!pdd)
                return -EINVAL;
        /* Acquiring the same file again is a no-op; another is -EBUSY. */
        if (pdd->drm_file)
                return pdd->drm_file == drm_file ? 0 : -EBUSY;
        /* amdgpu_file_to_fpriv: the file must be amdgpu's (a render node;
         * /dev/kfd or any other file is -EINVAL). Which GPU it belongs to
         * is not checked. */
        if (!drm_file || !drm_file->render_gpu)
                return -EINVAL;
        /* amdgpu_amdkfd_gpuvm_acquire_process_vm: "Already a compute VM?" */
        if (drm_file->vm_acquired)
                return -EINVAL;

        /* On success the pdd keeps the file's reference. */
        drm_file->vm_acquired = true;
        drm_file->refs++;
        pdd->drm_file = drm_file;
        return 0;
}

void kfd_process_device_release_vm(struct emu_pdd *pdd)
{
        if (!pdd->drm_file)
                return;
        /* amdgpu_amdkfd_gpuvm_release_process_vm: amdgpu_vm_release_compute
         * drops the PASID but leaves vm->process_info, which only
         * amdgpu_vm_fini clears, so the file's VM is never acquired again
         * ("Already a compute VM?"). The file's last reference may go. */
        kfd_drm_file_put(pdd->drm_file);
        pdd->drm_file = NULL;
}

long kfd_ioctl_get_process_apertures_new(struct emu_call *call, struct emu_process *p, void *data)
{
        struct kfd_ioctl_get_process_apertures_new_args *args = data;
        struct kfd_process_device_apertures pa[EMU_MAX_GPUS] = { 0 };
        unsigned n;

        /* num_of_nodes == 0 asks how many there are. */
        if (args->num_of_nodes == 0) {
                args->num_of_nodes = p->n_pdds;
                return 0;
        }
        /* At most as many as the caller has room for; the kernel's kzalloc
         * of num_of_nodes entries fails for a count it cannot allocate
         * (KMALLOC_MAX_SIZE, as in kfd-interface.md §4). */
        if ((uint64_t)args->num_of_nodes * sizeof(pa[0]) > KFD_KMALLOC_MAX_SIZE)
                return -ENOMEM;
        n = p->n_pdds < args->num_of_nodes ? p->n_pdds : args->num_of_nodes;
        for (unsigned i = 0; i < n; i++) {
                struct emu_gpu_device_info info;

                emu_gpu_device_info(p->pdds[i].gpu, &info);
                pa[i] = (struct kfd_process_device_apertures){
                        .gpu_id = p->pdds[i].gpu->cfg.gpu_id,
                        .lds_base = info.lds_base,
                        .lds_limit = info.lds_limit,
                        .scratch_base = info.scratch_base,
                        .scratch_limit = info.scratch_limit,
                        .gpuvm_base = info.gpuvm_base,
                        .gpuvm_limit = info.gpuvm_limit,
                };
        }
        args->num_of_nodes = n;
        if (emu_copy_to_user(call->caller.tgid, args->kfd_process_device_apertures_ptr, pa, n * sizeof(pa[0])) < 0)
                return -EFAULT;
        return 0;
}

long kfd_bind_device(struct emu_process *p, uint32_t gpu_id, struct emu_pdd **ret_pdd)
{
        struct emu_pdd *pdd = kfd_process_device_by_id(p, gpu_id);

        if (!pdd)
                return -EINVAL;
        if (!pdd->drm_file)
                return -ENODEV;
        if (ret_pdd)
                *ret_pdd = pdd;
        return 0;
}

long kfd_ioctl_set_memory_policy(struct emu_call *call, struct emu_process *p, void *data)
{
        const struct kfd_ioctl_set_memory_policy_args *args = data;
        long r;

        if (args->default_policy != KFD_IOC_CACHE_POLICY_COHERENT &&
            args->default_policy != KFD_IOC_CACHE_POLICY_NONCOHERENT)
                return -EINVAL;
        if (args->alternate_policy != KFD_IOC_CACHE_POLICY_COHERENT &&
            args->alternate_policy != KFD_IOC_CACHE_POLICY_NONCOHERENT)
                return -EINVAL;
        /* A failed bind is -ESRCH here. set_cache_memory_policy_v9 accepts
         * any aperture: the policy only goes into SH_MEM_CONFIG, which
         * nothing here reads. */
        r = kfd_bind_device(p, args->gpu_id, NULL);
        return r == -ENODEV ? -ESRCH : r;
}

long kfd_ioctl_set_trap_handler(struct emu_call *call, struct emu_process *p, void *data)
{
        const struct kfd_ioctl_set_trap_handler_args *args = data;
        long r = kfd_bind_device(p, args->gpu_id, NULL);

        /* The emulated GPU runs no trap handler: the addresses, which the
         * kernel writes into the CWSR area's header, change nothing here. */
        return r == -ENODEV ? -ESRCH : r;
}

long kfd_ioctl_set_scratch_backing_va(struct emu_call *call, struct emu_process *p, void *data)
{
        const struct kfd_ioctl_set_scratch_backing_va_args *args = data;

        /* The bind's own errno; the emulated GPU has no scratch memory, so
         * qpd.sh_hidden_private_base changes nothing here. */
        return kfd_bind_device(p, args->gpu_id, NULL);
}
