/* SPDX-License-Identifier: MIT */
/*
 * The amdgpu DRM render node (/dev/dri/renderD<minor>) as far as the ROCt
 * thunk and libdrm_amdgpu's amdgpu_device_initialize use it: drm_ioctl's
 * dispatch and argument copies (drm_ioctl.c), DRM_IOCTL_VERSION with the
 * driver's identity (amdgpu_drv.c), DRM_IOCTL_GET_CLIENT's refusal on a
 * render node (drm_ioctl_permit), and DRM_IOCTL_AMDGPU_INFO's
 * ACCEL_WORKING, DEV_INFO and READ_MMR_REG queries (amdgpu_kms.c:
 * amdgpu_info_ioctl). kfd-interface.md §11 records each rule.
 */
#include <amdgpu_drm.h>
#include <drm.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "kfd-priv.h"
#include "usermem.h"

/* amdgpu_drv.c: DRIVER_NAME, DRIVER_DESC, DRIVER_DATE and KMS_DRIVER_*,
 * as in Linux 6.10 (3.57.0: "Compute tunneling on GFX10+"). */
#define AMDGPU_DRIVER_NAME "amdgpu"
#define AMDGPU_DRIVER_DATE "20150101"
#define AMDGPU_DRIVER_DESC "AMD GPU"
#define AMDGPU_KMS_MAJOR 3
#define AMDGPU_KMS_MINOR 57
#define AMDGPU_KMS_PATCHLEVEL 0

/* drm_ioctl.c: driver ioctls occupy [DRM_COMMAND_BASE, DRM_COMMAND_END). */
#define DRM_COMMAND_END_NR 0xa0
/* ARRAY_SIZE(amdgpu_ioctls_kms): GEM_CREATE (0x00) to SCHED (0x15). */
#define AMDGPU_NUM_IOCTLS 0x16

/* drm_ioctl_desc.flags (include/drm/drm_ioctl.h). */
#define DRM_AUTH 0x1
#define DRM_RENDER_ALLOW 0x20

/* amdgpu_kms.c: AMDGPU_INFO_READ_MMR_REG reads at most 128 registers, of
 * a shader engine and array below amdgpu_gfx.h's bounds. */
#define AMDGPU_MMR_MAX_COUNT 128
#define AMDGPU_GFX_MAX_SE 4
#define AMDGPU_GFX_MAX_SH_PER_SE 2
/* soc15_allowed_read_registers: GB_ADDR_CONFIG (GC base 0x2000 + 0x63e on
 * every GC 9 part), the one register libdrm reads on GFX9 and later
 * (amdgpu_query_gpu_info_init). */
#define MMR_GB_ADDR_CONFIG 0x263e

/* amdgpu_gmc.h / amdgpu_vm.h of the 6.10 tree: the user VA layout of a
 * 48-bit GPUVM that DEV_INFO reports. */
#define AMDGPU_VA_RESERVED_BOTTOM (1ull << 16)
#define AMDGPU_VA_RESERVED_TOP ((2ull << 20) + (2ull << 20) + (1ull << 12)) /* CSA + SEQ64 + trap */
#define AMDGPU_GMC_HOLE_START 0x0000800000000000ull
#define AMDGPU_GMC_HOLE_END 0xffff800000000000ull
#define AMDGPU_GPUVM_SIZE (1ull << 48)
#define AMDGPU_GPU_PAGE_SIZE 4096u
#define AMDGPU_VM_FRAGMENT_SIZE 9        /* amdgpu_vm_fragment_size default on GC 9 */

typedef long drm_ioctl_fn(struct emu_call *call, void *data);

struct drm_ioctl_desc {
        uint32_t cmd;           /* the kernel's definition: direction and size */
        uint32_t flags;
        drm_ioctl_fn *func;     /* NULL: a hole in the table, or an ioctl kfdemu does not serve */
};

/* drm_copy_field: the value's whole length goes back in *buf_len, at most
 * the user's length of it into the buffer, without a terminating NUL. */
static long drm_copy_field(const struct emu_call *call, uint64_t buf, uint64_t *buf_len, const char *value)
{
        size_t len = strlen(value);
        size_t n = len > *buf_len ? (size_t)*buf_len : len;

        *buf_len = len;
        if (n && buf && emu_copy_to_user(call->caller.tgid, buf, value, n) < 0)
                return -EFAULT;
        return 0;
}

static long drm_version(struct emu_call *call, void *data)
{
        struct drm_version *v = data;
        uint64_t len;
        long r;

        v->version_major = AMDGPU_KMS_MAJOR;
        v->version_minor = AMDGPU_KMS_MINOR;
        v->version_patchlevel = AMDGPU_KMS_PATCHLEVEL;
        len = v->name_len;
        r = drm_copy_field(call, (uint64_t)(uintptr_t)v->name, &len, AMDGPU_DRIVER_NAME);
        v->name_len = (__kernel_size_t)len;
        if (r == 0) {
                len = v->date_len;
                r = drm_copy_field(call, (uint64_t)(uintptr_t)v->date, &len, AMDGPU_DRIVER_DATE);
                v->date_len = (__kernel_size_t)len;
        }
        if (r == 0) {
                len = v->desc_len;
                r = drm_copy_field(call, (uint64_t)(uintptr_t)v->desc, &len, AMDGPU_DRIVER_DESC);
                v->desc_len = (__kernel_size_t)len;
        }
        return r;
}

/* amdgpu_drm.h of Linux 6.1+; libdrm 2.4.114's copy predates it. */
#ifndef AMDGPU_FAMILY_GC_11_0_0
#define AMDGPU_FAMILY_GC_11_0_0 145
#endif

/* amdgpu_family of the GC major version (amdgpu_discovery.c). */
static uint32_t amdgpu_family(const struct emu_gpu_config *c)
{
        switch (c->gfx_target_version / 10000) {
        case 9:
                return AMDGPU_FAMILY_AI;
        case 10:
                return AMDGPU_FAMILY_NV;
        case 11:
                return AMDGPU_FAMILY_GC_11_0_0;
        default:
                return AMDGPU_FAMILY_UNKNOWN;
        }
}

static void amdgpu_dev_info(const struct emu_gpu *gpu, struct drm_amdgpu_info_device *d)
{
        const struct emu_gpu_config *c = &gpu->cfg;
        struct emu_gpu_device_info info;
        uint64_t vm_size = AMDGPU_GPUVM_SIZE - AMDGPU_VA_RESERVED_TOP;

        emu_gpu_device_info(gpu, &info);
        *d = (struct drm_amdgpu_info_device){
                .device_id = c->device_id,
                .pci_rev = info.revision_id,
                /* amdgpu_asic_get_xclk() * 10: the reference clock in kHz */
                .gpu_counter_freq = EMU_GPU_REFCLK_KHZ,
                .family = amdgpu_family(c),
                .num_shader_engines = info.array_count,
                .num_shader_arrays_per_engine = info.simd_arrays_per_engine,
                .virtual_address_offset = AMDGPU_VA_RESERVED_BOTTOM,
                .virtual_address_max = vm_size < AMDGPU_GMC_HOLE_START ? vm_size : AMDGPU_GMC_HOLE_START,
                .virtual_address_alignment = AMDGPU_GPU_PAGE_SIZE,
                .pte_fragment_size = (1u << AMDGPU_VM_FRAGMENT_SIZE) * AMDGPU_GPU_PAGE_SIZE,
                .gart_page_size = AMDGPU_GPU_PAGE_SIZE,
                .cu_active_number = c->cu_count,
                .wave_front_size = 64,
                .num_cu_per_sh = c->cu_count / (info.array_count * info.simd_arrays_per_engine),
        };
        if (vm_size > AMDGPU_GMC_HOLE_START) {
                d->high_va_offset = AMDGPU_GMC_HOLE_END;
                d->high_va_max = AMDGPU_GMC_HOLE_END | vm_size;
        }
}

/* copy_to_user(out, value, min(size, sizeof(value))) ? -EFAULT : 0 */
static long info_copy_out(const struct emu_call *call, const struct drm_amdgpu_info *info, const void *value,
                          size_t size)
{
        size_t n = info->return_size < size ? info->return_size : size;

        return emu_copy_to_user(call->caller.tgid, info->return_pointer, value, n) < 0 ? -EFAULT : 0;
}

static long amdgpu_read_mmr(const struct emu_call *call, const struct drm_amdgpu_info *info)
{
        uint32_t se = (info->read_mmr_reg.instance >> AMDGPU_INFO_MMR_SE_INDEX_SHIFT) & AMDGPU_INFO_MMR_SE_INDEX_MASK;
        uint32_t sh = (info->read_mmr_reg.instance >> AMDGPU_INFO_MMR_SH_INDEX_SHIFT) & AMDGPU_INFO_MMR_SH_INDEX_MASK;
        uint32_t regs[AMDGPU_MMR_MAX_COUNT];
        uint32_t count = info->read_mmr_reg.count;

        /* All bits set in a field means "broadcast"; anything else must
         * name an existing engine or array. */
        if (se != AMDGPU_INFO_MMR_SE_INDEX_MASK && se >= AMDGPU_GFX_MAX_SE)
                return -EINVAL;
        if (sh != AMDGPU_INFO_MMR_SH_INDEX_MASK && sh >= AMDGPU_GFX_MAX_SH_PER_SE)
                return -EINVAL;
        if (count > AMDGPU_MMR_MAX_COUNT)
                return -EINVAL;
        /* amdgpu_asic_read_register fails for a register outside the
         * allowed list, and the whole query with -EFAULT. GB_ADDR_CONFIG's
         * value is not modelled (README "Known differences"). */
        for (uint32_t i = 0; i < count; i++) {
                if (info->read_mmr_reg.dword_offset + i != MMR_GB_ADDR_CONFIG)
                        return -EFAULT;
                regs[i] = 0;
        }
        return info_copy_out(call, info, regs, count * sizeof(regs[0]));
}

static long amdgpu_info_ioctl(struct emu_call *call, void *data)
{
        const struct drm_amdgpu_info *info = data;
        const struct emu_gpu *gpu = call->file->render_gpu;

        if (!info->return_size || !info->return_pointer)
                return -EINVAL;

        switch (info->query) {
        case AMDGPU_INFO_ACCEL_WORKING: {
                uint32_t working = 1;

                return info_copy_out(call, info, &working, sizeof(working));
        }
        case AMDGPU_INFO_DEV_INFO: {
                struct drm_amdgpu_info_device dev_info;

                amdgpu_dev_info(gpu, &dev_info);
                return info_copy_out(call, info, &dev_info, sizeof(dev_info));
        }
        case AMDGPU_INFO_READ_MMR_REG:
                return amdgpu_read_mmr(call, info);
        default:
                /* The other queries exist on a real node; kfdemu answers
                 * them as an unknown one (README "Known differences"). */
                kfd_log(gpu->node, "DRM_IOCTL_AMDGPU_INFO query 0x%x is outside what kfdemu emulates",
                        info->query);
                return -EINVAL;
        }
}

/* An ioctl of the real tables that kfdemu does not serve: its entry keeps
 * the real request and permissions, so the copies and drm_ioctl_permit
 * answer as on a real node, and then the handler refuses it. */
static long drm_not_emulated(struct emu_call *call, void *data)
{
        kfd_log(call->file->render_gpu->node, "DRM ioctl 0x%x is outside what kfdemu emulates", call->kcmd);
        return -EINVAL;
}

#define DRM_CORE(ioctl, fn, fl) [_IOC_NR(ioctl)] = { .cmd = (ioctl), .flags = (fl), .func = (fn) }
#define DRM_AMDGPU(nr, ioctl, fn, fl) [nr] = { .cmd = (ioctl), .flags = (fl), .func = (fn) }

/* drm_ioctls[]: the core ioctls a render node's user meets first
 * (libdrm's drmGetVersion, and amdgpu_get_auth's GET_CLIENT on a node it
 * does not take for a render node). The rest of the core table answers
 * -EINVAL (README "Known differences"). */
static const struct drm_ioctl_desc drm_core_ioctls[] = {
        DRM_CORE(DRM_IOCTL_VERSION, drm_version, DRM_RENDER_ALLOW),
        DRM_CORE(DRM_IOCTL_GET_CLIENT, drm_not_emulated, 0),
};
/* DRM_CORE_IOCTL_COUNT of the 6.10 tree: the last core ioctl is
 * DRM_IOCTL_SYNCOBJ_EVENTFD (0xcf). */
#define DRM_CORE_IOCTL_COUNT 0xd0

/* amdgpu_ioctls_kms[]: INFO is the one kfdemu serves; the others are
 * entries without a function. */
static const struct drm_ioctl_desc amdgpu_ioctls[AMDGPU_NUM_IOCTLS] = {
        DRM_AMDGPU(DRM_AMDGPU_INFO, DRM_IOCTL_AMDGPU_INFO, amdgpu_info_ioctl, DRM_AUTH | DRM_RENDER_ALLOW),
};

/* The entry of `nr`, or NULL outside both tables. An entry without a
 * function is a real ioctl kfdemu does not serve. */
static const struct drm_ioctl_desc *drm_ioctl_lookup(unsigned nr)
{
        static const struct drm_ioctl_desc unserved;

        if (nr >= DRM_COMMAND_BASE && nr < DRM_COMMAND_END_NR) {
                if (nr - DRM_COMMAND_BASE >= AMDGPU_NUM_IOCTLS)
                        return NULL;
                return &amdgpu_ioctls[nr - DRM_COMMAND_BASE];
        }
        if (nr >= DRM_CORE_IOCTL_COUNT)
                return NULL;
        if (nr < sizeof(drm_core_ioctls) / sizeof(drm_core_ioctls[0]))
                return &drm_core_ioctls[nr];
        return &unserved;
}

long emu_drm_ioctl(struct emu_call *call)
{
        unsigned nr = _IOC_NR(call->cmd);
        const struct drm_ioctl_desc *ioctl = drm_ioctl_lookup(nr);
        uint32_t in_size, out_size, drv_size, ksize;
        long ret;

        /* drm_ioctl looks the number up without looking at the type byte;
         * an unknown number or a hole in the table is -EINVAL. */
        if (!ioctl)
                return -EINVAL;
        if (!ioctl->func) {
                kfd_log(call->file->render_gpu->node, "DRM ioctl #0x%x is outside what kfdemu emulates", nr);
                return -EINVAL;
        }

        /* "Do not trust userspace, use our own definition": a copy in
         * either direction only where both the caller's and the kernel's
         * request have it, of the caller's size. */
        call->kcmd = ioctl->cmd;
        drv_size = _IOC_SIZE(ioctl->cmd);
        in_size = out_size = _IOC_SIZE(call->cmd);
        if (!(call->cmd & ioctl->cmd & IOC_IN))
                in_size = 0;
        if (!(call->cmd & ioctl->cmd & IOC_OUT))
                out_size = 0;
        ksize = in_size > out_size ? in_size : out_size;
        if (drv_size > ksize)
                ksize = drv_size;
        call->usize = out_size;

        if (in_size && emu_copy_from_user(call->caller.tgid, call->kdata, call->arg, in_size) < 0)
                return -EFAULT;
        if (ksize > in_size)
                memset(call->kdata + in_size, 0, ksize - in_size);

        /* drm_ioctl_permit: a render client may run only DRM_RENDER_ALLOW
         * ioctls (DRM_AUTH is satisfied by being a render client). */
        if (!(ioctl->flags & DRM_RENDER_ALLOW))
                ret = -EACCES;
        else
                ret = ioctl->func(call, call->kdata);

        if (out_size && emu_copy_to_user(call->caller.tgid, call->arg, call->kdata, out_size) < 0)
                ret = -EFAULT;
        return ret;
}

int emu_drm_open(struct emu_node *node, uint32_t minor, struct emu_file **ret_file)
{
        struct emu_file *file;

        for (unsigned i = 0; i < node->n_gpus; i++) {
                if (node->gpus[i].cfg.drm_render_minor != minor)
                        continue;
                file = calloc(1, sizeof(*file));
                if (!file)
                        return -ENOMEM;
                file->render_gpu = &node->gpus[i];
                file->refs = 1;
                *ret_file = file;
                return 0;
        }
        return -ENOENT;
}

int emu_drm_mmap(struct emu_file *file, uint64_t offset, uint64_t length, struct emu_mmap_result *ret)
{
        /* amdgpu_mmap → drm_gem_mmap: only BO offsets exist on a render node. */
        return kfd_bo_mmap(file->render_gpu, file, offset, length, ret);
}

void kfd_drm_file_put(struct emu_file *file)
{
        if (--file->refs == 0)
                free(file);
}

void emu_drm_release(struct emu_file *file)
{
        /* A device that acquired the file's VM keeps it past the fd. */
        file->transport = NULL;
        kfd_drm_file_put(file);
}
