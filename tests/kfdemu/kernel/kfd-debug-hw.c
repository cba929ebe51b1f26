/* SPDX-License-Identifier: MIT */
/*
 * The debugger's hardware ops (kfd_debug.c and the per-ASIC kfd2kgd
 * callbacks): wave launch trap override, wave launch mode, address watch
 * points and trap flags. kfdemu keeps their state and applies the kernel's
 * checks and runlist refreshes; the emulated GPU has no trap handler, so
 * none of them changes how emulated kernels run (README "Known differences").
 */
#include <errno.h>

#include "kfd-priv.h"

/* enum kfd_dbg_trap_mask (uapi kfd_ioctl.h). */
#define KFD_DBG_TRAP_MASK_FP_ALL 0x7fu          /* FP_INVALID .. INT_DIVIDE_BY_ZERO */
#define KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH 0x80u
#define KFD_DBG_TRAP_MASK_DBG_MEMORY_VIOLATION 0x100u
#define KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START (1u << 30)
#define KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_END (1u << 31)

#define KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP 1u

/* gfx_target_version range of GC 9.4.3 parts (gfx940..gfx942). */
#define KFD_GFX_TARGET_GC_9_4_3_FIRST 90400u
#define KFD_GFX_TARGET_GC_9_4_3_END 90500u

/* kfd2kgd->validate_trap_override_request: parts with per-VMID debugging
 * (amdgpu_amdkfd_aldebaran.c, _gc_9_4_3.c, _gfx_v11.c) accept OR and
 * REPLACE; the others (gfx_v9.c, gfx_v10.c) only OR the address-watch bit,
 * because their trap mask register is global. */
static int kfd_validate_trap_override(const struct emu_gpu *gpu, uint32_t mode, uint32_t *supported)
{
        uint32_t gfx = gpu->cfg.gfx_target_version;

        if (!kfd_dbg_is_per_vmid_supported(gpu)) {
                *supported &= KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH;
                return mode == KFD_DBG_TRAP_OVERRIDE_OR ? 0 : -EINVAL;
        }
        if (gfx >= KFD_GFX_TARGET_GC_9_4_3_FIRST && gfx < KFD_GFX_TARGET_GC_9_4_3_END)
                *supported &= KFD_DBG_TRAP_MASK_FP_ALL | KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH |
                              KFD_DBG_TRAP_MASK_DBG_MEMORY_VIOLATION | KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START |
                              KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_END;
        else
                *supported &= KFD_DBG_TRAP_MASK_FP_ALL | KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH |
                              KFD_DBG_TRAP_MASK_DBG_MEMORY_VIOLATION;
        if (mode != KFD_DBG_TRAP_OVERRIDE_OR && mode != KFD_DBG_TRAP_OVERRIDE_REPLACE)
                return -EPERM;
        return 0;
}

int kfd_dbg_trap_set_wave_launch_override(struct emu_process *target, uint32_t override_mode,
                                          uint32_t enable_mask, uint32_t support_request_mask,
                                          uint32_t *ret_prev_mask, uint32_t *ret_supported_mask)
{
        /* kfd_dbg_validate_trap_override_request writes the supported mask
         * out even when it then refuses the request. */
        *ret_supported_mask = 0xffffffffu;
        for (unsigned i = 0; i < target->n_pdds; i++) {
                int r = kfd_validate_trap_override(target->pdds[i].gpu, override_mode, ret_supported_mask);

                if (r < 0)
                        return r;
        }
        if (support_request_mask & ~*ret_supported_mask)
                return -EACCES;

        for (unsigned i = 0; i < target->n_pdds; i++) {
                struct emu_pdd *pdd = &target->pdds[i];

                /* Bits outside the request keep their previous value. */
                *ret_prev_mask = pdd->spi_dbg_override;
                pdd->spi_dbg_override = (enable_mask & support_request_mask) |
                                        (*ret_prev_mask & ~support_request_mask);
                kfd_debug_refresh_runlist(pdd->gpu);
        }
        return 0;
}

int kfd_dbg_trap_set_wave_launch_mode(struct emu_process *target, uint32_t mode)
{
        if (mode != KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL && mode != KFD_DBG_TRAP_WAVE_LAUNCH_MODE_HALT &&
            mode != KFD_DBG_TRAP_WAVE_LAUNCH_MODE_DEBUG)
                return -EINVAL;

        for (unsigned i = 0; i < target->n_pdds; i++) {
                target->pdds[i].spi_dbg_launch_mode = mode;
                kfd_debug_refresh_runlist(target->pdds[i].gpu);
        }
        return 0;
}

int kfd_dbg_trap_set_dev_address_watch(struct emu_pdd *pdd, uint32_t *watch_id)
{
        struct emu_gpu *gpu = pdd->gpu;

        /* Watch points are a device resource shared by all processes. */
        for (uint32_t i = 0; i < KFD_MAX_WATCH_ADDRESSES; i++) {
                if (gpu->alloc_watch_ids & (1u << i))
                        continue;
                gpu->alloc_watch_ids |= 1u << i;
                pdd->alloc_watch_ids |= 1u << i;
                *watch_id = i;
                kfd_debug_refresh_runlist(gpu);
                return 0;
        }
        return -ENOMEM;
}

int kfd_dbg_trap_clear_dev_address_watch(struct emu_pdd *pdd, uint32_t watch_id)
{
        if (watch_id >= KFD_MAX_WATCH_ADDRESSES || !(pdd->alloc_watch_ids & (1u << watch_id)))
                return -EINVAL;

        kfd_debug_refresh_runlist(pdd->gpu);
        pdd->alloc_watch_ids &= ~(1u << watch_id);
        pdd->gpu->alloc_watch_ids &= ~(1u << watch_id);
        return 0;
}

void kfd_dbg_clear_process_address_watch(struct emu_process *target)
{
        for (unsigned i = 0; i < target->n_pdds; i++)
                for (uint32_t id = 0; id < KFD_MAX_WATCH_ADDRESSES; id++)
                        (void)kfd_dbg_trap_clear_dev_address_watch(&target->pdds[i], id);
}

int kfd_dbg_trap_set_flags(struct emu_process *target, uint32_t *flags)
{
        uint32_t prev = target->dbg_flags;

        /* Precise memory ops need per-VMID debugging on every device. */
        for (unsigned i = 0; i < target->n_pdds; i++) {
                if (!kfd_dbg_is_per_vmid_supported(target->pdds[i].gpu) &&
                    (*flags & KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP)) {
                        *flags = prev;
                        return -EACCES;
                }
        }

        target->dbg_flags = *flags & KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP;
        *flags = prev;
        for (unsigned i = 0; i < target->n_pdds; i++)
                kfd_debug_refresh_runlist(target->pdds[i].gpu);
        return 0;
}
