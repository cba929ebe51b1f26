/* SPDX-License-Identifier: MIT */
/*
 * The data of a breakpoint's fd in the trap set (write-watch.h): the GPU of
 * the queue it watches in the high half, so that a waiter on another thread
 * (the preemption worker) knows which GPU was written without asking the
 * detector, and in the low half the detector's serial number of the watch,
 * from 1. TRAP_KEY_NONE (GPU 0, serial 0) is no breakpoint's: the waiter may
 * add an fd of its own to the set under it.
 */
#pragma once

#include <stdint.h>

#define TRAP_KEY_NONE UINT64_C(0)

static inline uint64_t trap_key_make(uint32_t gpu_id, uint32_t serial)
{
        return (uint64_t)gpu_id << 32 | serial;
}

static inline uint32_t trap_key_gpu(uint64_t key)
{
        return (uint32_t)(key >> 32);
}

static inline uint32_t trap_key_serial(uint64_t key)
{
        return (uint32_t)key;
}
