/* SPDX-License-Identifier: MIT */
/*
 * The preemption cost models (preempt-cost.c) on made-up runlists.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gpu.h"
#include "preempt-cost.h"

#define US 1000ull

static struct emu_gpu_config waves_gpu(void)
{
        struct emu_gpu_config cfg;

        emu_gpu_config_default(0, &cfg);
        cfg.preempt_model = EMU_PREEMPT_MODEL_WAVES;
        return cfg;
}

static struct emu_preempt_cost cost_of(const struct emu_gpu_config *cfg, double saved, double restored,
                                       unsigned mapped, uint32_t grace)
{
        struct emu_runlist_change change = {
                .saved_slots = saved, .restored_slots = restored, .mapped_queues = mapped, .grace_period = grace,
        };
        struct emu_preempt_cost cost;

        emu_preempt_cost(cfg, &change, &cost);
        return cost;
}

/* kfd_queue.c sizes the save area per CU: VGPRs (doubled with the AGPRs
 * on gfx90a and GC 9.4.x) + SGPRs + LDS + hardware registers. */
static void test_save_area_size_per_cu_follows_kfd(void **state)
{
        struct emu_gpu_config cfg = waves_gpu();

        cfg.gfx_target_version = 90402;
        assert_int_equal(emu_cwsr_bytes_per_cu(&cfg), 0x80000 + 0x4000 + 0x10000 + 0x1000);
        cfg.gfx_target_version = 90010;
        assert_int_equal(emu_cwsr_bytes_per_cu(&cfg), 0x80000 + 0x4000 + 0x10000 + 0x1000);
        cfg.gfx_target_version = 90000;
        assert_int_equal(emu_cwsr_bytes_per_cu(&cfg), 0x40000 + 0x4000 + 0x10000 + 0x1000);
        cfg.cwsr_bytes_per_cu = 4096;
        assert_int_equal(emu_cwsr_bytes_per_cu(&cfg), 4096);
}

/* Nothing resident: the unmap is its fixed part alone, no grace, no save. */
static void test_idle_device_costs_the_fixed_part(void **state)
{
        struct emu_gpu_config cfg = waves_gpu();
        struct emu_preempt_cost c = cost_of(&cfg, 0, 0, 0, 0);

        assert_int_equal(c.ioctl_ns, cfg.preempt_us * US);
        assert_int_equal(c.stall_ns, c.ioctl_ns);
}

/* A full device: every CU's wave state crosses at the CWSR rate, after
 * the grace period (0 is written as 1 unit of 1000 clocks). */
static void test_save_grows_with_resident_waves(void **state)
{
        struct emu_gpu_config cfg = waves_gpu();
        double full = (double)cfg.cu_count * cfg.wg_slots_per_cu;
        uint64_t bytes = cfg.cu_count * emu_cwsr_bytes_per_cu(&cfg);
        uint64_t save_ns = (bytes * 1000 + cfg.cwsr_mb_per_s - 1) / cfg.cwsr_mb_per_s;
        uint64_t grace_ns = 1000ull * 1000 / cfg.shader_clock_mhz;
        struct emu_preempt_cost half = cost_of(&cfg, full / 2, 0, 0, 0);
        struct emu_preempt_cost whole = cost_of(&cfg, full, 0, 0, 0);

        assert_int_equal(whole.ioctl_ns, cfg.preempt_us * US + grace_ns + save_ns);
        assert_true(half.ioctl_ns < whole.ioctl_ns);
        assert_true(half.ioctl_ns > cfg.preempt_us * US + grace_ns + save_ns / 2 - 2);
}

/* The default grace period (resume, queue create) is SCH_WAVE's. */
static void test_default_grace_period_is_the_registers(void **state)
{
        struct emu_gpu_config cfg = waves_gpu();
        struct emu_preempt_cost one = cost_of(&cfg, 1, 0, 0, 1);
        struct emu_preempt_cost dflt = cost_of(&cfg, 1, 0, 0, EMU_GRACE_PERIOD_DEFAULT);

        assert_int_equal(dflt.ioctl_ns - one.ioctl_ns,
                         (uint64_t)(cfg.default_grace_period - 1) * 1000 * 1000 / cfg.shader_clock_mhz);
}

/* The remap re-sends each queue of the runlist, one MQD per XCC: it holds
 * the queues up, not the ioctl; the restore follows it. */
static void test_remap_grows_with_queues_and_xccs(void **state)
{
        struct emu_gpu_config cfg = waves_gpu();
        struct emu_preempt_cost few, many;

        cfg.num_xcc = 4;
        few = cost_of(&cfg, 0, 0, 2, 0);
        many = cost_of(&cfg, 0, 0, 20, 0);
        assert_int_equal(few.ioctl_ns, many.ioctl_ns);
        assert_int_equal(many.stall_ns - few.stall_ns, 18ull * 4 * cfg.map_queue_us * US);
        cfg.num_xcc = 1;
        assert_int_equal(cost_of(&cfg, 0, 0, 20, 0).stall_ns, cfg.preempt_us * US + 20ull * cfg.map_queue_us * US);
        assert_int_equal(cost_of(&cfg, 0, 8, 0, 0).stall_ns - cfg.preempt_us * US, emu_cwsr_restore_ns(&cfg, 8));
}

/* The constant model: the first emulator's fixed times, whatever the runlist. */
static void test_constant_model_ignores_volume_and_runlist(void **state)
{
        struct emu_gpu_config cfg = waves_gpu();
        struct emu_preempt_cost c;

        cfg.preempt_model = EMU_PREEMPT_MODEL_CONSTANT;
        c = cost_of(&cfg, 1, 1, 50, 0);
        assert_int_equal(c.ioctl_ns, (cfg.preempt_us + cfg.cwsr_save_us) * US);
        assert_int_equal(c.stall_ns, (cfg.preempt_us + cfg.cwsr_save_us + cfg.cwsr_restore_us) * US);
        assert_int_equal(cost_of(&cfg, 640, 0, 50, 0).ioctl_ns, c.ioctl_ns);
        assert_int_equal(cost_of(&cfg, 0, 0, 50, 0).stall_ns, cfg.preempt_us * US);
}

/* gmc_v9_0 gives KFD VMIDs 3-15 on GC 9.4.1 to 9.5.0, 8-15 elsewhere. */
static void test_kfd_vmids_follow_first_kfd_vmid(void **state)
{
        struct emu_gpu_config cfg = waves_gpu();

        cfg.gfx_target_version = 90402;
        assert_int_equal(emu_kfd_vmids(&cfg), 13);
        cfg.gfx_target_version = 90010;
        assert_int_equal(emu_kfd_vmids(&cfg), 13);
        cfg.gfx_target_version = 90008;
        assert_int_equal(emu_kfd_vmids(&cfg), 13);
        cfg.gfx_target_version = 90006;
        assert_int_equal(emu_kfd_vmids(&cfg), 8);
        cfg.gfx_target_version = 110000;
        assert_int_equal(emu_kfd_vmids(&cfg), 8);
        cfg.kfd_vmids = 2;
        assert_int_equal(emu_kfd_vmids(&cfg), 2);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_save_area_size_per_cu_follows_kfd),
                cmocka_unit_test(test_idle_device_costs_the_fixed_part),
                cmocka_unit_test(test_save_grows_with_resident_waves),
                cmocka_unit_test(test_default_grace_period_is_the_registers),
                cmocka_unit_test(test_remap_grows_with_queues_and_xccs),
                cmocka_unit_test(test_constant_model_ignores_volume_and_runlist),
                cmocka_unit_test(test_kfd_vmids_follow_first_kfd_vmid),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
