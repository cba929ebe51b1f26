/* SPDX-License-Identifier: MIT */
/* kfdemu-run's node configuration file: values land in emu_config, every
 * mistake is refused with file:line and what is wrong. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "node-config.h"

struct parsed {
        struct emu_config cfg;
        struct node_config_file file;
        char error[1024];
        char path[64];
        int r;
};

static void parse(const char *text, struct parsed *out)
{
        memset(out, 0, sizeof(*out));
        snprintf(out->path, sizeof(out->path), "/tmp/kfdemu-node-config.XXXXXX");
        int fd = mkstemp(out->path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);

        out->cfg.kfd_major = 1;
        out->cfg.kfd_minor = 13;
        out->cfg.queue_preemption_timeout_ms = 9000;
        out->cfg.kernel.version = EMU_KERNEL_VERSION(6, 10);
        /* kfdemu-run's defaults: gfx942, which debugs per VMID. */
        for (unsigned i = 0; i < EMU_MAX_GPUS; i++) {
                snprintf(out->cfg.gpus[i].name, sizeof(out->cfg.gpus[i].name), "gfx942");
                out->cfg.gpus[i].gfx_target_version = 90402;
                out->cfg.gpus[i].per_vmid_debug = true;
        }
        out->r = node_config_parse_file(out->path, &out->cfg, &out->file, out->error, sizeof(out->error));
        unlink(out->path);
}

static void assert_error(const char *text, int line, const char *needle)
{
        struct parsed p;
        char where[96];

        parse(text, &p);
        assert_int_equal(p.r, -EINVAL);
        snprintf(where, sizeof(where), "%s:%d: ", p.path, line);
        if (strncmp(p.error, where, strlen(where)) != 0 || !strstr(p.error, needle))
                fail_msg("error \"%s\" should start with \"%s\" and mention \"%s\"", p.error, where, needle);
}

static void test_values(void **state)
{
        struct parsed p;

        parse("# a node\n"
              "[Node]\n"
              "KfdVersion=1.16\n"
              "SchedPolicy=2\n"
              "QueuePreemptionTimeoutMs=500\n"
              "Gpus=3\n"
              "\n"
              "[GPU2]\n"
              "GpuId=0xf7bc\n"
              "GfxTargetVersion=110000\n"
              "Name=gfx1100\n"
              "NumXcc=1\n"
              "ComputeUnits=96\n"
              "PerVmidDebug=yes\n"
              "MES=true\n"
              "DebugFirmware=no\n"
              "CwsrWorkaround=1\n"
              "PreemptMicroseconds=250\n"
              "PreemptCostModel=constant\n"
              "CwsrMegabytesPerSecond=25000\n"
              "ReadIndexAdvance=master-xcc\n"
              "MasterXccLeadPercent=20\n"
              "HwsTimeSlicing=no\n"
              "HqdSlots=8\n"
              "WorkgroupSlotsPerCU=8\n",
              &p);
        assert_int_equal(p.r, 0);
        assert_int_equal(p.cfg.kfd_major, 1);
        assert_int_equal(p.cfg.kfd_minor, 16);
        assert_int_equal(p.cfg.sched_policy, 2);
        assert_int_equal(p.cfg.queue_preemption_timeout_ms, 500);
        assert_int_equal(p.file.n_gpus, 3);
        assert_int_equal(p.file.highest_gpu_section, 3);
        assert_int_equal(p.cfg.gpus[2].gpu_id, 0xf7bc);
        assert_int_equal(p.cfg.gpus[2].gfx_target_version, 110000);
        assert_string_equal(p.cfg.gpus[2].name, "gfx1100");
        assert_int_equal(p.cfg.gpus[2].num_xcc, 1);
        assert_int_equal(p.cfg.gpus[2].cu_count, 96);
        assert_true(p.cfg.gpus[2].per_vmid_debug);
        assert_true(p.cfg.gpus[2].mes);
        assert_false(p.cfg.gpus[2].debug_firmware);
        assert_true(p.cfg.gpus[2].cwsr_workaround);
        assert_int_equal(p.cfg.gpus[2].preempt_us, 250);
        assert_int_equal(p.cfg.gpus[2].wg_slots_per_cu, 8);
        assert_int_equal(p.cfg.gpus[2].preempt_model, EMU_PREEMPT_MODEL_CONSTANT);
        assert_int_equal(p.cfg.gpus[2].cwsr_mb_per_s, 25000);
        assert_int_equal(p.cfg.gpus[2].read_index_mode, EMU_READ_INDEX_MASTER_XCC);
        assert_int_equal(p.cfg.gpus[2].master_xcc_lead_percent, 20);
        assert_false(p.cfg.gpus[2].hws_time_slicing);
        assert_int_equal(p.cfg.gpus[2].hqd_slots, 8);
        /* Untouched GPUs keep the defaults the caller put in. */
        assert_string_equal(p.cfg.gpus[0].name, "gfx942");
        /* The kernel's locking and fence wait are modelled unless switched off. */
        assert_false(p.cfg.locks_released_while_waiting);
        assert_false(p.cfg.fence_wait_sleeps);
        assert_int_equal(p.cfg.memory_sync_us, 0);
}

static void test_hazard_models(void **state)
{
        struct parsed p;

        parse("[Node]\nLocksAcrossWaits=no\nFenceWaitSpins=off\nMemorySyncMicroseconds=2500\n", &p);
        assert_int_equal(p.r, 0);
        assert_true(p.cfg.locks_released_while_waiting);
        assert_true(p.cfg.fence_wait_sleeps);
        assert_int_equal(p.cfg.memory_sync_us, 2500);
        parse("[Node]\nLocksAcrossWaits=yes\nFenceWaitSpins=1\n", &p);
        assert_int_equal(p.r, 0);
        assert_false(p.cfg.locks_released_while_waiting);
        assert_false(p.cfg.fence_wait_sleeps);
        assert_error("[Node]\nLocksAcrossWaits=sometimes\n", 2, "yes or no");
        assert_error("[Node]\nFenceWaitSpins=\n", 2, "yes or no");
        assert_error("[Node]\nMemorySyncMicroseconds=60000001\n", 2, "0..60000000 microseconds");
}

static void test_errors_name_the_line(void **state)
{
        assert_error("[Node]\nGpus=2\nColour=blue\n", 3, "no key 'Colour'");
        assert_error("[Node]\nGpus=17\n", 2, "out of range");
        assert_error("[Node]\nGpus=two\n", 2, "not valid");
        assert_error("[Node]\nKfdVersion=2.0\n", 2, "KfdVersion");
        assert_error("[Node]\nKfdVersion=1.13x\n", 2, "KfdVersion");
        assert_error("[Node]\nSchedPolicy=3\n", 2, "0, 1 or 2");
        assert_error("\n[GPU0]\nMES=maybe\n", 3, "yes or no");
        assert_error("[GPU0]\nNumXcc=9\n", 2, "out of range");
        assert_error("[GPU0]\nGpuId=0x10000\n", 2, "out of range");
        assert_error("[GPU0]\nComputeUnits=-4\n", 2, "not valid");
        assert_error("[GPU0]\nName=has space\n", 2, "characters");
        assert_error("[GPU0]\nName=a-name-that-is-longer-than-31-chars\n", 2, "characters");
        assert_error("[GPU0]\nPreemptCostModel=linear\n", 2, "expected one of waves, constant");
        assert_error("[GPU0]\nReadIndexAdvance=early\n", 2, "expected one of completion, dispatch, master-xcc");
        assert_error("[GPU0]\nCwsrMegabytesPerSecond=0\n", 2, "out of range");
        assert_error("[GPU0]\nMasterXccLeadPercent=101\n", 2, "out of range");
        assert_error("[GPU0]\nDefaultGracePeriod=0x100\n", 2, "out of range");
        assert_error("[GPU0]\nKfdVmids=17\n", 2, "out of range");
        assert_error("[GPU0]\nHqdSlots=0\n", 2, "out of range");
        assert_error("[GPU16]\nMES=yes\n", 2, "unknown section [GPU16]");
        assert_error("[GPU01]\nMES=yes\n", 2, "unknown section");
        assert_error("[Nodes]\nGpus=1\n", 2, "unknown section");
        assert_error("Gpus=1\n", 1, "outside any section");
        assert_error("[Node]\nthis line has no equals sign\n", 2, "not INI syntax");
}

/* Keys that are valid alone but describe no real GPU together. */
static void test_impossible_combinations(void **state)
{
        assert_error("[GPU0]\nMES=yes\n", 2, "MES=yes on GfxTargetVersion=90402 (GC 9.4.3)");
        assert_error("[GPU1]\nMES=yes\n\n[GPU1]\nGfxTargetVersion=100300\n", 2, "GC 10.3.0");
        assert_error("# one VMID\n[GPU0]\nPerVmidDebug=no\n", 3, "PerVmidDebug=no on GfxTargetVersion=90402");
        assert_error("[GPU0]\nGfxTargetVersion=90010\nPerVmidDebug=no\n", 3, "GC 9.4.2");
        assert_error("[GPU0]\nPerVmidDebug = no\nGfxTargetVersion=110000\n", 2, "GC 11.0.0");

        struct parsed p;
        parse("[GPU0]\nGfxTargetVersion=90008\nPerVmidDebug=no\n[GPU1]\nGfxTargetVersion=110000\nMES=yes\n", &p);
        assert_int_equal(p.r, 0);
}

static void test_faults(void **state)
{
        struct parsed p;

        parse("[Faults]\nPreemption=timeout\nOnPreemption=3\nGpus=0,2\nOperations=suspend,resume\n", &p);
        assert_int_equal(p.r, 0);
        assert_int_equal(p.cfg.faults.kind, EMU_FAULT_TIMEOUT);
        assert_int_equal(p.cfg.faults.nth, 3);
        assert_int_equal(p.cfg.faults.gpu_mask, 0x5);
        assert_int_equal(p.cfg.faults.ops, EMU_FAULT_OP_SUSPEND | EMU_FAULT_OP_RESUME);
        assert_false(p.cfg.faults.while_busy);

        /* Suspend only by default; QueueId= needs its queue busy. */
        parse("[Faults]\nPreemption=queue-hang\nProbability=0.05\nSeed=0x1234\n", &p);
        assert_int_equal(p.r, 0);
        assert_int_equal(p.cfg.faults.kind, EMU_FAULT_QUEUE_HANG);
        assert_int_equal(p.cfg.faults.probability_ppm, 50000);
        assert_int_equal(p.cfg.faults.seed, 0x1234);
        assert_int_equal(p.cfg.faults.ops, EMU_FAULT_OP_SUSPEND);
        assert_false(p.cfg.faults.while_busy);
        parse("[Faults]\nPreemption=error\nEveryPreemption=2\nQueueId=5\n", &p);
        assert_int_equal(p.r, 0);
        assert_int_equal(p.cfg.faults.every, 2);
        assert_true(p.cfg.faults.queue_id_set);
        assert_int_equal(p.cfg.faults.queue_id, 5);
        assert_true(p.cfg.faults.while_busy);
        parse("[Faults]\nPreemption=error\nProbability=1\n", &p);
        assert_int_equal(p.cfg.faults.probability_ppm, 1000000);

        /* No [Faults]: nothing fails. */
        parse("[Node]\nGpus=1\n", &p);
        assert_int_equal(p.r, 0);
        assert_int_equal(p.cfg.faults.kind, EMU_FAULT_NONE);

        assert_error("[Faults]\nPreemption=slow\nOnPreemption=1\n", 2, "timeout, queue-hang or error");
        assert_error("[Faults]\nPreemption=timeout,error\nOnPreemption=1\n", 2, "timeout, queue-hang or error");
        assert_error("[Faults]\nOperations=destroy\n", 2, "suspend, resume");
        assert_error("[Faults]\nOnPreemption=0\n", 2, "out of range");
        assert_error("[Faults]\nProbability=1.5\n", 2, "out of range");
        assert_error("[Faults]\nProbability=0.0000001\n", 2, "not valid");
        assert_error("[Faults]\nProbability=half\n", 2, "not valid");
        assert_error("[Faults]\nGpus=0,16\n", 2, "GPU indices");
        assert_error("[Faults]\nSeed=-1\n", 2, "unsigned 64-bit");
        assert_error("[Faults]\nQueueId=1024\n", 2, "out of range");
        assert_error("[Faults]\nWhen=later\n", 2, "[Faults] has no key 'When'");
        assert_error("# faults\n[Faults]\nOnPreemption=1\n", 2, "Preemption=timeout, queue-hang or error");
        assert_error("[Node]\nGpus=1\n[Faults]\nPreemption=timeout\n", 3, "exactly one of");
        assert_error("[Faults]\nPreemption=timeout\nOnPreemption=1\nEveryPreemption=2\n", 1, "(it has 2)");
}

static void test_kernel_versions(void **state)
{
        struct parsed p;

        /* The default is the 6.10 tree: none of the later behaviours. */
        parse("[Node]\nGpus=1\n", &p);
        assert_int_equal(p.r, 0);
        assert_false(p.cfg.kernel.per_queue_reset);
        assert_false(p.cfg.kernel.queue_ids_limit);
        assert_false(p.cfg.kernel.destroy_serialized);

        parse("[Kernel]\nVersion=6.12\n", &p);
        assert_int_equal(p.r, 0);
        assert_true(p.cfg.kernel.per_queue_reset);
        assert_false(p.cfg.kernel.queue_ids_limit);

        parse("[Kernel]\nVersion=7.2\n", &p);
        assert_true(p.cfg.kernel.per_queue_reset);
        assert_true(p.cfg.kernel.queue_ids_limit);
        assert_true(p.cfg.kernel.queue_ids_null_check);
        assert_true(p.cfg.kernel.destroy_serialized);

        /* A stable tree with a backport: the key wins over the version,
         * whichever comes first. */
        parse("[Kernel]\nQueueIdsLimit=yes\nVersion=6.12\nPerQueueReset=no\n", &p);
        assert_int_equal(p.r, 0);
        assert_true(p.cfg.kernel.queue_ids_limit);
        assert_false(p.cfg.kernel.per_queue_reset);
        assert_false(p.cfg.kernel.destroy_serialized);

        assert_error("[Kernel]\nVersion=6.4\n", 2, "from 6.5");
        assert_error("[Kernel]\nVersion=6\n", 2, "not valid");
        assert_error("[Kernel]\nVersion=6.12.3\n", 2, "not valid");
        assert_error("[Kernel]\nPerQueueReset=sometimes\n", 2, "yes or no");
        assert_error("[Kernel]\nRelease=6.12\n", 2, "[Kernel] has no key 'Release'");
}

static void test_first_error_wins(void **state)
{
        assert_error("[Node]\nGpus=1\nBad=1\nWorse=2\n", 3, "'Bad'");
}

static void test_gpu_section_beyond_count(void **state)
{
        struct parsed p;
        char error[512];

        parse("[Node]\nGpus=2\n[GPU3]\nDebugFirmware=yes\n", &p);
        assert_int_equal(p.r, 0);
        assert_int_equal(node_config_check_gpu_count("node.conf", &p.file, 2, error, sizeof(error)), -EINVAL);
        assert_non_null(strstr(error, "[GPU3]"));
        assert_int_equal(node_config_check_gpu_count("node.conf", &p.file, 4, error, sizeof(error)), 0);
}

static void test_unreadable_file(void **state)
{
        struct emu_config cfg = { 0 };
        struct node_config_file file;
        char error[512];

        assert_int_equal(node_config_parse_file("/nonexistent/node.conf", &cfg, &file, error, sizeof(error)), -ENOENT);
        assert_non_null(strstr(error, "/nonexistent/node.conf"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_values),
                cmocka_unit_test(test_hazard_models),
                cmocka_unit_test(test_errors_name_the_line),
                cmocka_unit_test(test_impossible_combinations),
                cmocka_unit_test(test_faults),
                cmocka_unit_test(test_kernel_versions),
                cmocka_unit_test(test_first_error_wins),
                cmocka_unit_test(test_gpu_section_beyond_count),
                cmocka_unit_test(test_unreadable_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
