/* SPDX-License-Identifier: MIT */
/* The detector's status of one GPU, for the detector's tests. */
#pragma once

#include <stdint.h>

#include "detector.h"

/* gpu_id's entry of detector_gpus(); fails the test when the GPU is not listed. */
struct detector_gpu_status detector_gpu_status_of(const struct detector *d, uint32_t gpu_id);
