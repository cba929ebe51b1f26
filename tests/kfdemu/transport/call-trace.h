/* SPDX-License-Identifier: MIT */
/*
 * kfdemu-run --trace FILE: one line per AMDKFD_IOC_DBG_TRAP SUSPEND_QUEUES
 * or RESUME_QUEUES call with three CLOCK_MONOTONIC times: when the caller's
 * ioctl() began (stamped by the preload: where a real ioctl enters the
 * kernel), when the server received it from the caller's socket (after the
 * emulator's own hop, which a real node does not have), and when the call
 * ended (its reply sent; on a hardware-scheduled GPU after the modelled
 * preemption the kernel waits for). A benchmark can so time a debugger's
 * reaction up to the ioctl reaching the kernel rather than up to the caller
 * deciding to make it, and tell which events waited for the caller's
 * previous call. The line is written when the call has ended, after its
 * reply: tracing delays nothing. Lines are in the order calls ended.
 *
 *   <received ns> <SUSPEND_QUEUES|RESUME_QUEUES> caller <tgid> target <pid> queues <n> entered <ns> ended <ns>
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "kernel.h"

struct call_trace_entry {
        uint64_t entered_ns;
        uint64_t received_ns;
        uint64_t ended_ns;
        uint32_t op;
        int caller_tgid;
        uint32_t target_pid;
        uint32_t n_queues;
};

/* Whether call is one to trace; fills entry (but ended_ns) from the arguments kernel/ copied in. */
bool call_trace_capture(const struct emu_call *call, uint64_t entered_ns, uint64_t received_ns,
                        struct call_trace_entry *entry);
/* Appends the entry's line to fd; a line that cannot be written is dropped. */
void call_trace_write(int fd, const struct call_trace_entry *entry);
