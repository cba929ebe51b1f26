/* SPDX-License-Identifier: MIT */
/*
 * Debian's ROCt thunk (libhsakmt 5.2.3) opens the emulated node: it reads
 * the topology, opens each GPU's render node, names the GPU through
 * libdrm_amdgpu, acquires the render node's VM for KFD and sets the
 * apertures up (hsaKmtOpenKFD: topology_sysfs_get_system_props,
 * fmm_init_process_apertures). Runs on the MI210 node of
 * tests/kfdemu/configs/mi210.conf.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <hsakmt.h>

/* The MI210 of mi210.conf: gfx90a, 104 CUs of 4 SIMDs. */
#define MI210_DEVICE_ID 0x740f
#define MI210_SIMDS (104 * 4)

static void ascii_of(const HSAuint16 *wide, char *out, size_t size)
{
        size_t i;

        for (i = 0; i + 1 < size && wide[i]; i++)
                out[i] = (char)wide[i];
        out[i] = '\0';
}

/* The GPU node as the thunk describes it: the gfx target from its device
 * table, the marketing name libdrm_amdgpu found for device and revision. */
static void open_describes_the_gpu(void **state)
{
        HsaSystemProperties system;
        HsaNodeProperties gpu;
        char marketing[HSA_PUBLIC_NAME_SIZE];

        assert_int_equal(hsaKmtOpenKFD(), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtAcquireSystemProperties(&system), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(system.NumNodes, 2);
        assert_int_equal(hsaKmtGetNodeProperties(1, &gpu), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(gpu.DeviceId, MI210_DEVICE_ID);
        assert_int_equal(gpu.NumFComputeCores, MI210_SIMDS);
        assert_int_equal(gpu.EngineId.ui32.Major, 9);
        assert_int_equal(gpu.EngineId.ui32.Minor, 0);
        assert_int_equal(gpu.EngineId.ui32.Stepping, 10);
        assert_string_equal((const char *)gpu.AMDName, "Aldebaran");
        ascii_of(gpu.MarketingName, marketing, sizeof(marketing));
        assert_string_equal(marketing, "AMD Instinct MI210");
        assert_int_equal(hsaKmtReleaseSystemProperties(), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtCloseKFD(), HSAKMT_STATUS_SUCCESS);
}

/* What ROCr asks of each GPU once the node is open: its tiling (none on
 * GFX9: the thunk passes the kernel's counts on), its clock counters and
 * where its trap handler lives. */
static void device_queries_after_open(void **state)
{
        HSAuint32 tiles[64], macro[64];
        HsaGpuTileConfig config = {
                .TileConfig = tiles,
                .MacroTileConfig = macro,
                .NumTileConfigs = 64,
                .NumMacroTileConfigs = 64,
        };
        static uint8_t trap_handler[4096], trap_buffer[4096];
        HsaSystemProperties system;

        /* Node ids mean something once the topology has been taken. */
        assert_int_equal(hsaKmtOpenKFD(), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtAcquireSystemProperties(&system), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtGetTileConfig(1, &config), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(config.NumTileConfigs, 32);
        assert_int_equal(config.NumMacroTileConfigs, 16);
        assert_int_equal(config.NumBanks, 0);
        HsaClockCounters clocks;
        assert_int_equal(hsaKmtGetClockCounters(1, &clocks), HSAKMT_STATUS_SUCCESS);
        assert_true(clocks.GPUClockCounter > 0);
        assert_int_equal(clocks.SystemClockFrequencyHz, 1000000000);
        assert_int_equal(hsaKmtSetTrapHandler(1, trap_handler, sizeof(trap_handler), trap_buffer, sizeof(trap_buffer)),
                         HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtReleaseSystemProperties(), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtCloseKFD(), HSAKMT_STATUS_SUCCESS);
}

/* Closing and opening again reuses the render node the thunk keeps for
 * the process's lifetime: ACQUIRE_VM of the same file is 0 again. */
static void open_again_after_close(void **state)
{
        assert_int_equal(hsaKmtOpenKFD(), HSAKMT_STATUS_SUCCESS);
        assert_int_equal(hsaKmtCloseKFD(), HSAKMT_STATUS_SUCCESS);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(open_describes_the_gpu),
                cmocka_unit_test(open_again_after_close),
                cmocka_unit_test(device_queries_after_open),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
