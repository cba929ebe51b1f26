/* SPDX-License-Identifier: MIT */
/* Model time is CLOCK_MONOTONIC, the clock applications time their kernels with. */
#include <time.h>

#include "gpu-internal.h"

uint64_t emu_now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t emu_gpu_clock_counter(const struct emu_gpu *gpu)
{
        /* Every GPU counts the same model time, from the same origin. */
        return emu_now_ns() / (1000000000u / (EMU_GPU_REFCLK_KHZ * 1000u));
}
