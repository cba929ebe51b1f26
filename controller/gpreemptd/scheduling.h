/* SPDX-License-Identifier: MIT */
/*
 * The event loop's CPU scheduling (RealtimePriority=). What an online
 * request waits for is the loop waking up: on a node busy with other work a
 * SCHED_OTHER thread waits behind it for a slice, which made the p99 of the
 * reaction twice the p50 (controller/gpreemptd/README.md, Figures).
 */
#pragma once

struct loop_scheduling {
        unsigned priority; /* SCHED_FIFO priority in effect; 0: SCHED_OTHER */
        unsigned wanted;   /* what the configuration asked for */
        int error;         /* why wanted is not in effect: -errno, or 0 */
};

/*
 * Puts the calling thread (the loop's) at SCHED_FIFO wanted, or back to
 * SCHED_OTHER for 0. A refusal leaves the previous scheduling, is logged once
 * per change of the wanted value with what to do, and is kept in s->error;
 * the daemon works either way, only its reaction is slower under load.
 */
void loop_scheduling_apply(struct loop_scheduling *s, unsigned wanted);
