/* SPDX-License-Identifier: MIT */
/*
 * The cost of a preemption (preempt-cost.h). Two models, chosen per GPU:
 *
 * waves (the default): what the unmap and the remap move. SUSPEND_QUEUES
 * returns once the unmap fence signals (kfd_device_queue_manager.c,
 * unmap_queues_cpsch): a fixed part (the HIQ packets, the fence wait, the
 * HDP flush and the context-copy work), then the grace period the CP gives
 * resident waves, then their CWSR save. The remap that follows
 * (map_queues_cpsch) does not hold up the ioctl but the queues: it re-sends
 * every queue of the runlist, and on GC 9.4.3 each queue has one MQD per
 * XCC to load; then the saved waves are restored.
 *
 * constant: the fixed times of the first emulator (unmap, save if any wave
 * was resident, restore if any comes back), kept to compare against.
 */
#include <math.h>

#include "gc-version.h"
#include "preempt-cost.h"

/* kfd_queue.c (kfd_queue_ctx_save_restore_size, kfd_get_vgpr_size_per_cu):
 * per CU, VGPRs (with the AGPRs on gfx908/gfx90a/GC 9.4.x: twice the
 * register file), SGPRs, LDS and hardware registers. */
#define SGPR_BYTES_PER_CU 0x4000u
#define LDS_BYTES_PER_CU 0x10000u
#define HWREG_BYTES_PER_CU 0x1000u

static uint64_t vgpr_bytes_per_cu(uint32_t gfx_target_version)
{
        if (gfx_target_version / 100 * 100 == 90400 || gfx_target_version == 90010 ||
            gfx_target_version == 90008)
                return 0x80000;
        if (gfx_target_version == 110000 || gfx_target_version == 110001 ||
            gfx_target_version == 120000 || gfx_target_version == 120001)
                return 0x60000;
        return 0x40000;
}

uint64_t emu_cwsr_bytes_per_cu(const struct emu_gpu_config *cfg)
{
        if (cfg->cwsr_bytes_per_cu)
                return cfg->cwsr_bytes_per_cu;
        return vgpr_bytes_per_cu(cfg->gfx_target_version) + SGPR_BYTES_PER_CU + LDS_BYTES_PER_CU +
               HWREG_BYTES_PER_CU;
}

double emu_cwsr_ns_per_slot(const struct emu_gpu_config *cfg)
{
        if (cfg->wg_slots_per_cu == 0 || cfg->cwsr_mb_per_s == 0)
                return 0;
        /* A full CU holds wg_slots_per_cu slots; bytes / (MB/s) is microseconds. */
        return (double)emu_cwsr_bytes_per_cu(cfg) / cfg->wg_slots_per_cu * 1000.0 / cfg->cwsr_mb_per_s;
}

unsigned emu_kfd_vmids(const struct emu_gpu_config *cfg)
{
        uint32_t gc = emu_gc_version(cfg->gfx_target_version);

        if (cfg->kfd_vmids)
                return cfg->kfd_vmids;
        return gc >= EMU_IP_VERSION(9, 4, 1) && gc <= EMU_IP_VERSION(9, 5, 0) ? 16 - 3 : 16 - 8;
}

/* Moving the wave state of `slots` workgroup slots to or from the save area. */
static uint64_t cwsr_transfer_ns(const struct emu_gpu_config *cfg, double slots)
{
        return slots > 0 ? (uint64_t)ceil(slots * emu_cwsr_ns_per_slot(cfg)) : 0;
}

/* The CP lets resident waves run for the grace period before it saves
 * them; 0 would mean "wait forever" to the CP, so KFD writes 1
 * (kfd-interface.md §4.2). Units of 1000 shader clocks. */
static uint64_t grace_ns(const struct emu_gpu_config *cfg, uint32_t grace_period)
{
        uint64_t units = grace_period == EMU_GRACE_PERIOD_DEFAULT ? cfg->default_grace_period : grace_period;

        if (units == 0)
                units = 1;
        if (cfg->shader_clock_mhz == 0)
                return 0;
        return units * 1000u * 1000u / cfg->shader_clock_mhz;
}

uint64_t emu_cwsr_save_ns(const struct emu_gpu_config *cfg, double slots, uint32_t grace_period)
{
        if (slots <= 0)
                return 0;
        if (cfg->preempt_model == EMU_PREEMPT_MODEL_CONSTANT)
                return (uint64_t)cfg->cwsr_save_us * 1000;
        return grace_ns(cfg, grace_period) + cwsr_transfer_ns(cfg, slots);
}

uint64_t emu_cwsr_restore_ns(const struct emu_gpu_config *cfg, double slots)
{
        if (slots <= 0)
                return 0;
        if (cfg->preempt_model == EMU_PREEMPT_MODEL_CONSTANT)
                return (uint64_t)cfg->cwsr_restore_us * 1000;
        return cwsr_transfer_ns(cfg, slots);
}

void emu_preempt_cost(const struct emu_gpu_config *cfg, const struct emu_runlist_change *change,
                      struct emu_preempt_cost *ret)
{
        uint64_t unmap = (uint64_t)cfg->preempt_us * 1000 +
                         emu_cwsr_save_ns(cfg, change->saved_slots, change->grace_period);
        uint64_t remap = 0;

        if (cfg->preempt_model == EMU_PREEMPT_MODEL_WAVES)
                remap = (uint64_t)change->mapped_queues * (cfg->num_xcc ? cfg->num_xcc : 1) * cfg->map_queue_us * 1000;
        *ret = (struct emu_preempt_cost){
                .ioctl_ns = unmap,
                .stall_ns = unmap + remap + emu_cwsr_restore_ns(cfg, change->restored_slots),
        };
}
