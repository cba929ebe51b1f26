/* SPDX-License-Identifier: MIT */
/* What the test doubles of test-fakes.c record. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "kernel.h"

/* User addresses below this fault (the fake copies use plain memcpy). */
#define FAKE_FIRST_VALID_ADDRESS 4096u

struct fake_gpu_log {
        unsigned queues_created, queues_destroyed, suspension_changes, preemptions, processes_removed;
        uint32_t last_grace_period;
        uint64_t preempt_ns;             /* what emu_gpu_hws_preempt returns */
        struct emu_call *pending_call;   /* the last emu_gpu_complete_after */
        bool complete_inline;            /* emu_gpu_complete_after completes at once, as gpu/ does
                                          * after stop or without memory */
        long pending_ret;
        uint64_t pending_delay_ns;
        bool queues_have_waves;          /* what emu_gpu_queue_has_waves says of every queue */
        unsigned spin_notices;           /* emu_transport_call_spins */
        unsigned runlist_maps;           /* emu_gpu_hws_map: a runlist sent without an unmap */
};

extern struct fake_gpu_log fake_gpu;

/* The file emu_transport_file_of_fd finds behind any fd (NULL: none). */
extern struct emu_file *fake_fd_file;
