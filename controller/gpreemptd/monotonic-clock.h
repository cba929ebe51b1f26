/* SPDX-License-Identifier: MIT */
/*
 * CLOCK_MONOTONIC now, in µs: for the loop's code that must know the time
 * within an iteration, where sd_event_now()'s time of the wakeup is too old
 * (how long a piece of work has run, whether a look is due yet), and in ns
 * for the reaction's stages, which are microseconds long.
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

static inline uint64_t monotonic_clock_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
