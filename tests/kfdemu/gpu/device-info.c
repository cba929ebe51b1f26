/* SPDX-License-Identifier: MIT */
/*
 * What one emulated GPU reports about itself beyond its configuration: the
 * topology's capability/debug_prop/fw_version/array counts
 * (kfd_topology.c: kfd_topology_add_device, kfd_topology_set_capabilities,
 * kfd_topology_set_dbg_firmware_support), the PCI ids and the per-process
 * apertures (kfd_flat_memory.c: kfd_init_apertures_v9). The sysfs renderer
 * and the device snapshot (kfd_dbg_trap_device_snapshot) both show them, so
 * they come from here alone.
 */
#include "gpu-internal.h"

/* kfd_topology.h capability bits that a gfx942 node sets and gpreempt or
 * ROCdbgapi look at (kfd-interface.md §8.2). */
#define HSA_CAP_WATCH_POINTS_SUPPORTED 0x00000080u
#define HSA_CAP_WATCH_POINTS_TOTALBITS_SHIFT 8
#define HSA_CAP_DOORBELL_TYPE_TOTALBITS_SHIFT 12
#define HSA_CAP_DOORBELL_TYPE_2_0 0x2u
#define HSA_CAP_TRAP_DEBUG_SUPPORT 0x00008000u
#define HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_TRAP_OVERRIDE_SUPPORTED 0x00010000u
#define HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_MODE_SUPPORTED 0x00020000u
#define HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED 0x00040000u
#define HSA_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED 0x20000000u
/* debug_prop of GC 9.4.3 (kfd_topology_set_dbg_firmware_support and
 * kfd_topology_set_capabilities): address-watch mask bits 7..30 and
 * DISPATCH_INFO_ALWAYS_VALID. */
#define HSA_DBG_WATCH_ADDR_MASK_LO_BIT_GFX9_4_3 7u
#define HSA_DBG_WATCH_ADDR_MASK_HI_BIT_GFX9_4_3 (30u << 4)
#define HSA_DBG_DISPATCH_INFO_ALWAYS_VALID 0x400u

#define GFX942_SE_PER_XCC 4
#define GFX942_MEC_FW_VERSION 177           /* invented */
#define AMD_VENDOR_ID 0x1002

/* kfd_init_apertures_v9: LDS and scratch at fixed 4 GiB windows, GPUVM from
 * AMDGPU_VA_RESERVED_BOTTOM (2 MiB) to the 47-bit user half below the VA
 * hole (shared_resources.gpuvm_size of a 48-bit VM). */
#define APERTURE_LDS_BASE_V9 (1ull << 48)
#define APERTURE_SCRATCH_BASE_V9 (2ull << 48)
#define APERTURE_APP_LIMIT(base) (((base) & 0xffffffff00000000ull) | 0xffffffffull)
#define APERTURE_GPUVM_BASE (1ull << 21)
#define APERTURE_GPUVM_LIMIT ((1ull << 47) - 1)

void emu_gpu_device_info(const struct emu_gpu *gpu, struct emu_gpu_device_info *ret)
{
        const struct emu_gpu_config *c = &gpu->cfg;
        uint32_t cap = HSA_CAP_WATCH_POINTS_SUPPORTED |
                       2u << HSA_CAP_WATCH_POINTS_TOTALBITS_SHIFT |  /* log2 of 4 watch points */
                       HSA_CAP_DOORBELL_TYPE_2_0 << HSA_CAP_DOORBELL_TYPE_TOTALBITS_SHIFT |
                       HSA_CAP_TRAP_DEBUG_SUPPORT |
                       HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_TRAP_OVERRIDE_SUPPORTED |
                       HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_MODE_SUPPORTED |
                       HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED;

        if (c->debug_firmware)
                cap |= HSA_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED;
        *ret = (struct emu_gpu_device_info){
                .lds_base = APERTURE_LDS_BASE_V9,
                .lds_limit = APERTURE_APP_LIMIT(APERTURE_LDS_BASE_V9),
                .scratch_base = APERTURE_SCRATCH_BASE_V9,
                .scratch_limit = APERTURE_APP_LIMIT(APERTURE_SCRATCH_BASE_V9),
                .gpuvm_base = APERTURE_GPUVM_BASE,
                .gpuvm_limit = APERTURE_GPUVM_LIMIT,
                .vendor_id = AMD_VENDOR_ID,
                .revision_id = c->pci_revision,
                /* AMD's own boards carry AMD's subsystem ids. */
                .subsystem_vendor_id = AMD_VENDOR_ID,
                .subsystem_device_id = c->device_id,
                .fw_version = GFX942_MEC_FW_VERSION,
                .array_count = c->num_xcc * GFX942_SE_PER_XCC,
                .simd_arrays_per_engine = 1,
                .capability = cap,
                .debug_prop = HSA_DBG_WATCH_ADDR_MASK_LO_BIT_GFX9_4_3 | HSA_DBG_WATCH_ADDR_MASK_HI_BIT_GFX9_4_3 |
                              HSA_DBG_DISPATCH_INFO_ALWAYS_VALID,
        };
}
