/* SPDX-License-Identifier: MIT */
/*
 * What a process asks about one of its devices without binding to it:
 * AMDKFD_IOC_GET_TILE_CONFIG (kfd_ioctl_get_tile_config,
 * amdgpu_amdkfd_get_tile_config) and AMDKFD_IOC_GET_CLOCK_COUNTERS
 * (kfd_ioctl_get_clock_counters); kfd-interface.md §12.
 */
#include <errno.h>
#include <time.h>

#include "gpu.h"

#include "kfd-priv.h"
#include "usermem.h"

/* amdgpu_gfx_config: tile_mode_array[32], macrotile_mode_array[16]. GC 9
 * and later leave them, num_banks and num_ranks 0 (only the GFX6-8 code
 * fills them); GB_ADDR_CONFIG is not modelled and reads 0, as through the
 * render node (README "Known differences"). */
#define GFX_TILE_MODES 32
#define GFX_MACROTILE_MODES 16

/* copy_to_user of `count` zero entries; on a fault the count goes back as 0. */
static long copy_zero_modes(const struct emu_call *call, uint64_t uptr, uint32_t *count)
{
        static const uint32_t zeros[GFX_TILE_MODES];

        if (emu_copy_to_user(call->caller.tgid, uptr, zeros, *count * sizeof(zeros[0])) < 0) {
                *count = 0;
                return -EFAULT;
        }
        return 0;
}

long kfd_ioctl_get_tile_config(struct emu_call *call, struct emu_process *p, void *data)
{
        struct kfd_ioctl_get_tile_config_args *args = data;
        long r;

        if (!kfd_process_device_by_id(p, args->gpu_id))
                return -EINVAL;
        args->gb_addr_config = 0;
        args->num_banks = 0;
        args->num_ranks = 0;
        /* At most the device's number of entries, the count says how many. */
        if (args->num_tile_configs > GFX_TILE_MODES)
                args->num_tile_configs = GFX_TILE_MODES;
        r = copy_zero_modes(call, args->tile_config_ptr, &args->num_tile_configs);
        if (r < 0)
                return r;
        if (args->num_macro_tile_configs > GFX_MACROTILE_MODES)
                args->num_macro_tile_configs = GFX_MACROTILE_MODES;
        return copy_zero_modes(call, args->macro_tile_config_ptr, &args->num_macro_tile_configs);
}

static uint64_t clock_ns(clockid_t id)
{
        struct timespec ts;

        clock_gettime(id, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

long kfd_ioctl_get_clock_counters(struct emu_call *call, struct emu_process *p, void *data)
{
        struct kfd_ioctl_get_clock_counters_args *args = data;
        struct emu_pdd *pdd = kfd_process_device_by_id(p, args->gpu_id);

        /* A GPU the process has no device for ("node without GPU
         * resource") reads 0; the ioctl never fails. */
        args->gpu_clock_counter = pdd ? emu_gpu_clock_counter(pdd->gpu) : 0;
        /* ktime_get_raw_ns and ktime_get_boottime_ns, in nanoseconds. */
        args->cpu_clock_counter = clock_ns(CLOCK_MONOTONIC_RAW);
        args->system_clock_counter = clock_ns(CLOCK_BOOTTIME);
        args->system_clock_freq = 1000000000u;
        return 0;
}
