/* SPDX-License-Identifier: MIT */
/*
 * The default emulated GPU: an MI308X (gfx942, GC 9.4.3-class, 4 XCCs) like
 * the node the project's real data comes from (tests/data/real).
 */
#include <stdio.h>
#include <string.h>

#include "gpu.h"

/* gpu_ids of the eight GPUs of the real node, in topology order
 * (mi308x-hqds-5queues.txt, "Node 2..9, gpu_id ..."). */
static const uint32_t real_gpu_ids[] = { 0xf7bc, 0xf05b, 0xeb40, 0xc66d, 0xf220, 0xf5c7, 0xeedc, 0xc3f1 };

/* PCI buses of the GPUs: invented, in the spacing an 8-GPU OAM board shows. */
static const uint8_t pci_buses[] = { 0x05, 0x26, 0x46, 0x65, 0x85, 0xa6, 0xc6, 0xe5 };

/* Beyond the real node's eight GPUs: a 16-bit id that looks like the
 * kernel's hash (kfd_generate_gpu_id) and cannot collide with the table. */
static uint32_t invented_gpu_id(unsigned index)
{
        uint32_t id = ((index + 1) * 0x9e37u) & 0xffffu;

        for (unsigned i = 0; i < sizeof(real_gpu_ids) / sizeof(real_gpu_ids[0]); i++)
                if (id == real_gpu_ids[i] || id == 0)
                        return invented_gpu_id(index + 8);
        return id;
}

void emu_gpu_config_default(unsigned index, struct emu_gpu_config *ret)
{
        unsigned n_real = sizeof(real_gpu_ids) / sizeof(real_gpu_ids[0]);

        *ret = (struct emu_gpu_config){
                .gpu_id = index < n_real ? real_gpu_ids[index] : invented_gpu_id(index),
                .gfx_target_version = 90402,
                .device_id = 0x74a2,             /* MI308X's PCI device id */
                .pci_revision = 0,               /* not known for the real node's parts */
                .location_id = (uint32_t)pci_buses[index % sizeof(pci_buses)] << 8 |
                               (index / sizeof(pci_buses)) << 3,
                .domain = 0,
                .drm_render_minor = 128 + index,
                .num_xcc = 4,
                .cu_count = 80,                  /* 20 CUs per XCC on MI308X */
                .simd_per_cu = 4,
                .max_waves_per_simd = 8,
                .per_vmid_debug = true,          /* GC 9.4.3: kfd_dbg_is_per_vmid_supported */
                .mes = false,                    /* gfx9 parts use the HWS */
                .debug_firmware = true,
                .cwsr_workaround = false,        /* GC 11.0.0-11.0.3 only */
                /* Time model (README.md, "The GPU time model"). Nobody has
                 * measured KFD's SUSPEND_QUEUES on MI200 or MI300, so every
                 * time below is assumed, except where a source is named. */
                .preempt_model = EMU_PREEMPT_MODEL_WAVES,
                /* The unmap's fixed part: HIQ packets, fence wait, HDP
                 * flush, context-copy work. Assumed. */
                .preempt_us = 200,
                /* The constant model's save and restore: the first
                 * emulator's figures, kept for comparison. */
                .cwsr_save_us = 300,
                .cwsr_restore_us = 100,
                /* 0: kfd_queue.c's per-CU save-area size for the part. */
                .cwsr_bytes_per_cu = 0,
                /* The save area is host memory on a discrete GPU
                 * (libhsakmt queues.c allocates it without DeviceLocal),
                 * so the save crosses the host link: PCIe 5.0 x16 carries
                 * about 63 GB/s a direction; 50 GB/s assumed in practice. */
                .cwsr_mb_per_s = 50000,
                /* The HWS loading one MQD of the re-sent runlist. Assumed. */
                .map_queue_us = 5,
                /* SCH_WAVE's value at init (kfd-interface.md §4.2). */
                .default_grace_period = 0x40,
                /* MI300X's peak engine clock; MI308X's is not published. */
                .shader_clock_mhz = 2100,
                .read_index_mode = EMU_READ_INDEX_AT_COMPLETION,
                /* How much earlier XCC 0 finishes its share than the
                 * slowest XCC. Assumed: no measurement exists. */
                .master_xcc_lead_percent = 10,
                /* How often the CP re-reads a waiting barrier's signals.
                 * Assumed: the firmware's interval is not public. */
                .barrier_poll_us = 10,
                .hws_time_slicing = true,
                /* 0: the VMIDs gmc_v9_0 leaves to KFD for the part. */
                .kfd_vmids = 0,
                /* MEC1's 4 pipes x 8 queues, less amdgpu's kernel
                 * compute queues (amdgpu.num_kcq, 8 by default). */
                .hqd_slots = 24,
                /* pm_map_process_v9 writes process_quantum = 10; the
                 * unit is not public, milliseconds assumed. */
                .hws_quantum_us = 10000,
                /* 32 wave slots per CU (8 waves x 4 SIMDs) hold eight
                 * 256-work-item (4-wave) workgroups. */
                .wg_slots_per_cu = 8,
                .vram_mib = 192 * 1024,          /* MI308X: 192 GB of HBM3 */
        };
        snprintf(ret->name, sizeof(ret->name), "%s", "gfx942");
}
