/* SPDX-License-Identifier: MIT */
/*
 * HIP/CLR log lines (AMD_LOG_LEVEL) as the real runtime writes them, in the
 * three generations whose queue addresses mean different things
 * (rocm-userspace.md §6):
 *
 *   5.2  ROCclr 5.2.3: prefix with "%-5d: [tid:0x...]"; "created hardware
 *        queue %p" and dispatch "HWq=" both print the hsa_queue_t*
 *        (amd_queue_t address).
 *   6.0  ROCm 5.6 - 6.1: same prefix and queue text plus the acquireQueue
 *        refCount line; dispatch "HWq=" is the ring base.
 *   6.2  ROCm >= 6.2 (clr): prefix "[pid:%d tid: 0x...]" only at level >= 4;
 *        "Created SWq=%p to map on HWq=%p"; dispatch "SWq=, HWq=, id=" with
 *        correlation_id, rptr and wptr. Layout checked against the real
 *        ROCm 7.0.2 log in tests/data/real/.
 *
 * Line numbers of the 6.2 generation are those of the real log; the older
 * generations' line numbers are placeholders (no real log of them is at
 * hand), so a parser must not depend on them.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "emu-runtime.h"

enum clr_log_format {
        CLR_LOG_FORMAT_5_2,
        CLR_LOG_FORMAT_6_0,
        CLR_LOG_FORMAT_6_2,
};

/* CLR's queue priorities (amd::CommandQueue::Priority) as its log prints them. */
enum clr_queue_priority {
        CLR_PRIORITY_LOW = 0,
        CLR_PRIORITY_NORMAL = 1,
        CLR_PRIORITY_HIGH = 2,
        CLR_PRIORITY_COUNT,
};

#define CLR_LOG_LEVEL_INFO 3
#define CLR_LOG_LEVEL_DEBUG 4
#define CLR_LOG_LEVEL_MAX 4

struct clr_log_clock {
        uint64_t (*now_usec)(void *userdata);  /* CLR's Os::timeNanos() / 1000 */
        uint64_t (*thread_id)(void *userdata); /* std::this_thread::get_id() */
        void *userdata;
};

struct clr_log;

/* level 0 logs nothing. `out` stays the caller's. clock NULL = the real
 * monotonic clock and pthread_self(). */
int clr_log_new(FILE *out, int level, enum clr_log_format format, pid_t pid,
                const struct clr_log_clock *clock, struct clr_log **ret_log);
void clr_log_free(struct clr_log *log);

int clr_log_format_from_string(const char *s, enum clr_log_format *ret);

/* KFD queue priority (0..15, 7 = normal) to the CLR priority a HIP stream of
 * that kind would have. */
enum clr_queue_priority clr_priority_from_kfd(uint32_t kfd_priority);

/* hipStreamCreateWithPriority: the API trace, the allocation count, the
 * queue creation and its refCount line. `stream` is the HIP stream handle
 * the application uses for it. */
void clr_log_queue_created(struct clr_log *log, const struct emu_queue_identity *queue,
                           uintptr_t stream);
/* hipLaunchKernel: "ShaderName" (level 3) and the AQL dispatch (level 4). */
void clr_log_kernel_dispatch(struct clr_log *log, const struct emu_queue_identity *queue,
                             const struct emu_dispatch_record *dispatch, const char *shader_name);
/* hipStreamDestroy and the queue's deletion (lines only the 6.2 generation
 * is known to print). */
void clr_log_queue_destroyed(struct clr_log *log, const struct emu_queue_identity *queue,
                             uintptr_t stream);
