/* SPDX-License-Identifier: MIT */
/*
 * CLOCK_MONOTONIC now, in µs: for the loop's code that must know the time
 * within an iteration, where sd_event_now()'s time of the wakeup is too old
 * (how long a piece of work has run, whether a look is due yet), and in ns
 * for the reaction's stages, which are microseconds long; the CPU clocks in
 * ns, for what the loop and the daemon spend.
 */
#pragma once

#include <stdint.h>
#include <time.h>

static inline uint64_t monotonic_clock_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Any clock in ns: CLOCK_MONOTONIC, or a thread's or the process's CPU time. */
static inline uint64_t clock_ns(clockid_t clock)
{
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t monotonic_clock_ns(void)
{
        return clock_ns(CLOCK_MONOTONIC);
}
