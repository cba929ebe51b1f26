/* SPDX-License-Identifier: MIT */
/*
 * kfdemu-run --trace FILE: one line per AMDKFD_IOC_DBG_TRAP SUSPEND_QUEUES
 * or RESUME_QUEUES call with two CLOCK_MONOTONIC times: when the caller's
 * ioctl() began (stamped by the preload: where a real ioctl enters the
 * kernel) and when the server received it from the caller's socket (after
 * the emulator's own hop, which a real node does not have). A benchmark can
 * so time a debugger's reaction up to the ioctl reaching the kernel rather
 * than up to the caller deciding to make it. The line is written after the
 * emulated kernel has taken the call: tracing does not delay it.
 *
 *   <received ns> <SUSPEND_QUEUES|RESUME_QUEUES> caller <tgid> target <pid> queues <n> entered <ns>
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "kernel.h"

struct call_trace_entry {
        uint64_t entered_ns;
        uint64_t received_ns;
        uint32_t op;
        int caller_tgid;
        uint32_t target_pid;
        uint32_t n_queues;
};

/* Whether call is one to trace; fills entry from the arguments kernel/ copied in. */
bool call_trace_capture(const struct emu_call *call, uint64_t entered_ns, uint64_t received_ns,
                        struct call_trace_entry *entry);
/* Appends the entry's line to fd; a line that cannot be written is dropped. */
void call_trace_write(int fd, const struct call_trace_entry *entry);
