/* SPDX-License-Identifier: MIT */
/*
 * The GC (graphics core) IP version of a configured GPU. The kernel decides
 * by KFD_GC_VERSION() — queue limits, per-VMID debugging, MES — while the
 * configuration (and the topology) gives the ISA's gfx_target_version.
 * kgd2kfd_probe (kfd_device.c) derives the latter from the former:
 *
 *   GC 9.0.1 -> 90000   9.1.0/9.2.2 -> 90002   9.2.1 -> 90004   9.3.0 -> 90012
 *   GC 9.4.0 -> 90006   9.4.1 -> 90008         9.4.2 -> 90010
 *   GC 9.4.3 -> 90400 (APU, rev 0) / 90401 (rev 0) / 90402 (rev >= 1)
 *   GC 9.4.4 -> 90402   9.5.0 -> 90500
 *   GC 10.1.10 -> 100100  10.1.2 -> 100101  10.1.1 -> 100102  10.1.3/10.1.4 -> 100103
 *   GC 10.3.0 -> 100300  10.3.2 -> 100301  10.3.4 -> 100302  10.3.1 -> 100303
 *   GC 10.3.5 -> 100304  10.3.3 -> 100305  10.3.6/10.3.7 -> 100306
 *   GC 11.0.0 -> 110000  11.0.3 -> 110001  11.0.2 -> 110002  11.0.1/11.0.4 -> 110003
 *   GC 11.5.0 -> 110500  11.5.1 -> 110501  11.5.2 -> 110502
 *   GC 12.0.0 -> 120000  12.0.1 -> 120001
 *
 * so gfx942 (90402) is GC 9.4.3 (MI300A/MI300X/MI308X, rev >= 1) or GC
 * 9.4.4; kfdemu takes 9.4.3, and every rule kfdemu models treats the two
 * alike. Where one target version has several GC versions the lowest is
 * taken (they share every rule modelled here).
 */
#pragma once

#include <stdint.h>

/* IP_VERSION(major, minor, rev) of amdgpu: 0xMMmmrr. */
#define EMU_IP_VERSION(major, minor, rev) (((uint32_t)(major) << 16) | ((uint32_t)(minor) << 8) | (uint32_t)(rev))

/* The GC version of `gfx_target_version`, or 0 for one no kernel probes. */
static inline uint32_t emu_gc_version(uint32_t gfx_target_version)
{
        static const struct {
                uint32_t gfx_target_version, gc;
        } table[] = {
                { 90000, EMU_IP_VERSION(9, 0, 1) },   { 90002, EMU_IP_VERSION(9, 1, 0) },
                { 90004, EMU_IP_VERSION(9, 2, 1) },   { 90006, EMU_IP_VERSION(9, 4, 0) },
                { 90008, EMU_IP_VERSION(9, 4, 1) },   { 90010, EMU_IP_VERSION(9, 4, 2) },
                { 90012, EMU_IP_VERSION(9, 3, 0) },   { 90400, EMU_IP_VERSION(9, 4, 3) },
                { 90401, EMU_IP_VERSION(9, 4, 3) },   { 90402, EMU_IP_VERSION(9, 4, 3) },
                { 90500, EMU_IP_VERSION(9, 5, 0) },   { 100100, EMU_IP_VERSION(10, 1, 10) },
                { 100101, EMU_IP_VERSION(10, 1, 2) }, { 100102, EMU_IP_VERSION(10, 1, 1) },
                { 100103, EMU_IP_VERSION(10, 1, 3) }, { 100300, EMU_IP_VERSION(10, 3, 0) },
                { 100301, EMU_IP_VERSION(10, 3, 2) }, { 100302, EMU_IP_VERSION(10, 3, 4) },
                { 100303, EMU_IP_VERSION(10, 3, 1) }, { 100304, EMU_IP_VERSION(10, 3, 5) },
                { 100305, EMU_IP_VERSION(10, 3, 3) }, { 100306, EMU_IP_VERSION(10, 3, 6) },
                { 110000, EMU_IP_VERSION(11, 0, 0) }, { 110001, EMU_IP_VERSION(11, 0, 3) },
                { 110002, EMU_IP_VERSION(11, 0, 2) }, { 110003, EMU_IP_VERSION(11, 0, 1) },
                { 110500, EMU_IP_VERSION(11, 5, 0) }, { 110501, EMU_IP_VERSION(11, 5, 1) },
                { 110502, EMU_IP_VERSION(11, 5, 2) }, { 120000, EMU_IP_VERSION(12, 0, 0) },
                { 120001, EMU_IP_VERSION(12, 0, 1) },
        };

        for (unsigned i = 0; i < sizeof(table) / sizeof(table[0]); i++)
                if (table[i].gfx_target_version == gfx_target_version)
                        return table[i].gc;
        return 0;
}
