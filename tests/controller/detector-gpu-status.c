/* SPDX-License-Identifier: MIT */
#include "detector-gpu-status.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

struct detector_gpu_status detector_gpu_status_of(const struct detector *d, uint32_t gpu_id)
{
        struct detector_gpu_status gpus[DETECTOR_MAX_GPUS];
        size_t n = detector_gpus(d, gpus, DETECTOR_MAX_GPUS);

        for (size_t i = 0; i < n; i++)
                if (gpus[i].gpu_id == gpu_id)
                        return gpus[i];
        fail_msg("GPU %u is not listed by the detector", gpu_id);
        return (struct detector_gpu_status){ 0 };
}
