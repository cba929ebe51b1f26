/* SPDX-License-Identifier: MIT */
/*
 * A packet's completion signal as the emulated GPU sees it: the layout of
 * ROCr's amd_signal_t (hsa/amd_hsa_signal.h), 64 bytes, 64-byte aligned,
 * whose address an AQL packet carries in completion_signal (0 = none).
 *
 * When a packet with a completion signal completes, the emulated CP does
 * what a real CP does on a queue with profiling enabled: it writes the
 * packet's start_ts (when the CP began it) and end_ts (when it completed),
 * then decrements value by one, then reports the read index. The emulated
 * GPU's timestamp counter runs in the system domain: CLOCK_MONOTONIC
 * nanoseconds of the model's timeline (a real GPU counts at 100 MHz and
 * ROCr converts), so the stamps are the modelled times, exact however late
 * the host ran the model thread. Only the GPU decrements value while the
 * packet is in flight. If event_mailbox_ptr is set (ROCr points it at
 * the slot of an HSA event in the process's signal page, HsaEvent's
 * HWData2, and puts the event's id, HWData1, in event_id), the CP then
 * writes event_id there as a u64 and raises the interrupt that makes kfd
 * set that event (kfd_signal_event_interrupt); the completion strobe of
 * emu-hw.h is bumped either way.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define EMU_AMD_SIGNAL_ALIGN 64
/* amd_signal_kind_t AMD_SIGNAL_KIND_USER: a signal the application owns. */
#define EMU_AMD_SIGNAL_KIND_USER 1

struct emu_amd_signal {
        int64_t kind;
        int64_t value;
        uint64_t event_mailbox_ptr;
        uint32_t event_id;
        uint32_t reserved1;
        uint64_t start_ts;
        uint64_t end_ts;
        uint64_t queue_ptr;
        uint32_t reserved3[2];
} __attribute__((aligned(EMU_AMD_SIGNAL_ALIGN)));

_Static_assert(sizeof(struct emu_amd_signal) == 64, "amd_signal_t size");
_Static_assert(offsetof(struct emu_amd_signal, value) == 8, "amd_signal_t.value");
_Static_assert(offsetof(struct emu_amd_signal, start_ts) == 32, "amd_signal_t.start_ts");
_Static_assert(offsetof(struct emu_amd_signal, end_ts) == 40, "amd_signal_t.end_ts");
