/* SPDX-License-Identifier: MIT */
/*
 * Bringing the emulated runtime up and down: the part of ROCr's
 * Runtime::Load/Unload and libhsakmt's hsaKmtOpenKFD / hsaKmtRuntimeEnable /
 * hsaKmtRuntimeDisable that touches KFD, with the HW exception watch of
 * Runtime::BindErrorHandlers (hw-exception.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cleanup.h"
#include "kfd-abi.h"
#include "runtime-internal.h"

#define KFD_PATH "/dev/kfd"
/* Where libhsakmt's topology.c reads it; /sys/class/kfd/kfd links here. */
#define TOPOLOGY_PATH "/sys/devices/virtual/kfd/kfd/topology"
/* r_debug.r_version of ROCr's _amdgpu_r_debug; ROCdbgapi accepts 8..10. */
#define ROCR_R_DEBUG_VERSION 9

/* ROCr's loader calls its r_brk function whenever the code object list
 * changes so that a debugger's breakpoint there fires. The emulated runtime
 * loads nothing, but publishes a consistent (empty) list once at start-up. */
__attribute__((noinline)) static void emu_runtime_code_objects_changed(struct r_debug *r)
{
        __asm__ volatile("" : : "r"(r) : "memory");
}

int emu_kfd_ioctl(int kfd_fd, unsigned long request, void *arg)
{
        int r;

        do
                r = ioctl(kfd_fd, request, arg);
        while (r < 0 && errno == EINTR);
        return r < 0 ? NEG_ERRNO() : r;
}

static int check_kfd_version(struct emu_runtime *rt)
{
        struct kfd_ioctl_get_version_args args = {0};
        int r = emu_kfd_ioctl(rt->kfd_fd, AMDKFD_IOC_GET_VERSION, &args);

        if (r < 0)
                return r;
        rt->kfd_major = args.major_version;
        rt->kfd_minor = args.minor_version;
        /* The upstream RUNTIME_ENABLE ABI exists from 1.13 on (kfd-interface.md §1). */
        if (args.major_version != GP_KFD_MIN_MAJOR || args.minor_version < GP_KFD_MIN_MINOR)
                return -EPROTONOSUPPORT;
        return 0;
}

static int runtime_enable(struct emu_runtime *rt, bool ttmp_save)
{
        struct kfd_ioctl_runtime_enable_args args = {
                .r_debug = (uintptr_t)&rt->r_debug,
                .mode_mask = KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK |
                             (ttmp_save ? KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK : 0),
        };
        int r = emu_kfd_ioctl(rt->kfd_fd, AMDKFD_IOC_RUNTIME_ENABLE, &args);

        /* hsaKmtRuntimeEnable maps EBUSY (already enabled) to
         * HSAKMT_STATUS_UNAVAILABLE; keep the errno, callers explain it. */
        if (r < 0)
                return r;
        rt->debug_enabled = true;
        return 0;
}

static void emu_runtime_free(struct emu_runtime *rt)
{
        emu_hw_exception_watch_stop(rt->hw_exception_watch);
        for (unsigned i = 0; i < EMU_RUNTIME_MAX_GPUS; i++)
                closep(&rt->drm_fds[i]);
        emu_doorbell_unmap_all(rt);
        if (rt->kfd_fd >= 0)
                close(rt->kfd_fd);
        pthread_mutex_destroy(&rt->lock);
        free(rt);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct emu_runtime *, emu_runtime_free);

/* libhsakmt's fmm_init_process_apertures: each GPU's VM comes from its
 * render node, which amdkfd requires before any queue
 * (kfd-interface.md §12). The device keeps the file for the process's
 * lifetime, and so does the runtime, to map BOs through it: -EBUSY says
 * an earlier runtime in this process acquired the VM with its own file,
 * and the device has it all the same. */
static int acquire_vms(struct emu_runtime *rt)
{
        for (unsigned i = 0; i < rt->n_gpus; i++) {
                char path[64];

                snprintf(path, sizeof(path), "/dev/dri/renderD%u", rt->gpus[i].drm_render_minor);
                _cleanup_close_ int drm = open(path, O_RDWR | O_CLOEXEC);
                if (drm < 0)
                        return NEG_ERRNO();
                struct kfd_ioctl_acquire_vm_args args = { .drm_fd = (uint32_t)drm, .gpu_id = rt->gpus[i].gpu_id };
                int r = emu_kfd_ioctl(rt->kfd_fd, AMDKFD_IOC_ACQUIRE_VM, &args);
                if (r < 0 && r != -EBUSY)
                        return r;
                if (r >= 0)
                        rt->drm_fds[i] = TAKE_FD(drm);
        }
        return 0;
}

/* libhsakmt's fmm.c: paged memory is anonymous memory registered as a
 * userptr BO unless HSA_USERPTR_FOR_PAGED_MEM is "0", when it is a GTT BO
 * as non-paged memory is (kfd-hazards.md §9). */
static bool read_userptr_for_paged_mem(void)
{
        const char *v = getenv("HSA_USERPTR_FOR_PAGED_MEM");

        return !v || strcmp(v, "0") != 0;
}

/* ROCr's AqlQueue allocates its amd_queue_t with GTTAccess|NonPaged where
 * the agent isMES() (an ISA major version of 11 or more,
 * amd_gpu_agent.h), in paged memory elsewhere; paged memory is itself a
 * GTT BO without userptr (amd_aql_queue.cpp, kfd-hazards.md §9). */
bool emu_runtime_queue_object_in_gtt(const struct emu_runtime *rt, unsigned index)
{
        return rt->gpus[index].gfx_target_version / 10000 >= 11 || !rt->userptr_for_paged_mem;
}

int emu_runtime_open(const struct emu_runtime_options *options, struct emu_runtime **ret_rt)
{
        _cleanup_(emu_runtime_freep) struct emu_runtime *rt = calloc(1, sizeof(*rt));
        int r;

        if (!rt)
                return -ENOMEM;
        rt->kfd_fd = -1;
        for (unsigned i = 0; i < EMU_RUNTIME_MAX_GPUS; i++)
                rt->drm_fds[i] = -1;
        rt->userptr_for_paged_mem = read_userptr_for_paged_mem();
        pthread_mutex_init(&rt->lock, NULL);
        rt->next_hsa_queue_id = 1;
        rt->r_debug.r_version = ROCR_R_DEBUG_VERSION;
        rt->r_debug.r_brk = (ElfW(Addr))emu_runtime_code_objects_changed;
        rt->r_debug.r_state = RT_CONSISTENT;
        emu_runtime_code_objects_changed(&rt->r_debug);

        rt->kfd_fd = open(KFD_PATH, O_RDWR | O_CLOEXEC);
        if (rt->kfd_fd < 0)
                return NEG_ERRNO();
        r = check_kfd_version(rt);
        if (r < 0)
                return r;
        /* libhsakmt reads the topology only once the device is open. */
        r = emu_topology_read(TOPOLOGY_PATH, rt->gpus, EMU_RUNTIME_MAX_GPUS, &rt->n_gpus);
        if (r < 0)
                return r;
        if (rt->n_gpus == 0)
                return -ENODEV;
        r = acquire_vms(rt);
        if (r < 0)
                return r;
        if (options->runtime_enable) {
                r = runtime_enable(rt, options->ttmp_save);
                if (r < 0)
                        return r;
        }
        /* Runtime::Load binds its error handlers once the agents are up. */
        r = emu_hw_exception_watch_start(rt, &rt->hw_exception_watch);
        if (r < 0)
                return r;
        *ret_rt = TAKE_PTR(rt);
        return 0;
}

int emu_runtime_close(struct emu_runtime *rt)
{
        /* Runtime::Unload: the async threads end before the runtime is
         * disabled. */
        int r = emu_hw_exception_watch_stop(TAKE_PTR(rt->hw_exception_watch));

        if (rt->debug_enabled) {
                struct kfd_ioctl_runtime_enable_args args = {
                        .r_debug = (uintptr_t)&rt->r_debug,
                        .mode_mask = 0,
                };
                int d = emu_kfd_ioctl(rt->kfd_fd, AMDKFD_IOC_RUNTIME_ENABLE, &args);

                if (r == 0)
                        r = d;
        }
        emu_runtime_free(rt);
        return r < 0 ? r : 0;
}

void emu_runtime_kfd_version(const struct emu_runtime *rt, uint32_t *ret_major, uint32_t *ret_minor)
{
        *ret_major = rt->kfd_major;
        *ret_minor = rt->kfd_minor;
}

bool emu_runtime_is_debug_enabled(const struct emu_runtime *rt)
{
        return rt->debug_enabled;
}

unsigned emu_runtime_gpu_count(const struct emu_runtime *rt)
{
        return rt->n_gpus;
}

const struct emu_gpu_info *emu_runtime_gpu(const struct emu_runtime *rt, unsigned index)
{
        return index < rt->n_gpus ? &rt->gpus[index] : NULL;
}

int emu_runtime_find_gpu(const struct emu_runtime *rt, uint32_t gpu_id)
{
        for (unsigned i = 0; i < rt->n_gpus; i++)
                if (rt->gpus[i].gpu_id == gpu_id)
                        return (int)i;
        return -ENODEV;
}
