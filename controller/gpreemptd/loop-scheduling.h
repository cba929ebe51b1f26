/* SPDX-License-Identifier: MIT */
/*
 * The event loop's CPU scheduling (RealtimePriority=, RealtimeCpuPercent=).
 * What an online request waits for is the loop waking up: on a node busy
 * with other work a SCHED_OTHER thread waits behind it for a slice, which
 * shows in the reaction's tail (docs/benchmarks/reaction.md,
 * "RealtimePriority= 0 against 1"). At SCHED_FIFO, though, a loop that
 * cannot keep its busy cadence never sleeps and keeps normal threads off its
 * CPU; the cap puts it back at normal priority while it uses more than its
 * share of a core.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

/*
 * The cap's window of wall time. It bounds the harm: a saturated loop holds
 * a core at SCHED_FIFO for at most two windows before it is demoted (the one
 * it starts saturating in may end under the cap). It also sets the check's
 * cost: one wake-up and one read of the thread's CPU clock (a system call)
 * per window, where checking at every iteration (BusyPollIntervalUs= apart
 * at the busy cadence) would add a system call to each
 * (docs/benchmarks/daemon-internals.md, "The loop's scheduling and bounds").
 * 100 ms makes that cost negligible and is still short next to how long a
 * starved process's own timeouts and watchdogs wait before they fail: of
 * the order of a second, an estimate, not a measurement.
 */
#define LOOP_CPU_CAP_WINDOW_US 100000u
/* The window's end may move this much to share a wake-up with other timers; the share is of the time that passed. */
#define LOOP_CPU_CAP_ACCURACY_US 10000u

/* A window's share of a core against RealtimeCpuPercent=, without clocks of its own (tested alone). */
struct loop_cpu_cap {
        unsigned percent;             /* RealtimeCpuPercent=; 100: no cap */
        uint64_t window_start_us;     /* CLOCK_MONOTONIC */
        uint64_t window_start_cpu_ns; /* the loop thread's CPU time then */
        unsigned last_share_permille; /* of a core, in the last window that ended */
};

enum loop_cpu_cap_verdict {
        LOOP_CPU_CAP_KEEP,    /* mid-window, or the window changes nothing */
        LOOP_CPU_CAP_DEMOTE,  /* at SCHED_FIFO, the window used more than the cap */
        LOOP_CPU_CAP_PROMOTE, /* demoted, the window used at most the cap */
};

/* Starts a window at now_us, when the thread had used cpu_ns. */
void loop_cpu_cap_reset(struct loop_cpu_cap *c, unsigned percent, uint64_t now_us, uint64_t cpu_ns);
/* Whether the window has ended by now_us: before that, loop_cpu_cap_account() decides nothing. */
bool loop_cpu_cap_window_elapsed(const struct loop_cpu_cap *c, uint64_t now_us);
/*
 * Ends the window at now_us (the thread's CPU time then: cpu_ns) if it has
 * elapsed, starts the next one, and says what the window asks for; demoted:
 * the loop runs at normal priority because of the cap.
 */
enum loop_cpu_cap_verdict loop_cpu_cap_account(struct loop_cpu_cap *c, bool demoted, uint64_t now_us,
                                               uint64_t cpu_ns);

struct loop_scheduling {
        unsigned priority;        /* SCHED_FIFO priority in effect now; 0: SCHED_OTHER */
        unsigned wanted;          /* what the configuration asked for */
        int error;                /* why wanted is not in effect, other than the cap: -errno, or 0 */
        unsigned capped_priority; /* while the cap holds the loop at normal priority: the one to go back to */
        struct loop_cpu_cap cap;
        uint64_t demotions;       /* by the cap, since the daemon started */
        bool demotion_explained;  /* the first demotion since start or reload was logged */
        sd_event_source *cap_check;
};

/* The cap's check: a timer at the end of each window, while there is a SCHED_FIFO loop to cap. */
int loop_scheduling_init(struct loop_scheduling *s, sd_event *event);
void loop_scheduling_done(struct loop_scheduling *s);

/*
 * Puts the calling thread (the loop's) at SCHED_FIFO wanted, or back to
 * SCHED_OTHER for 0, capped at cpu_percent of a core, with a fresh window. A
 * refusal leaves the previous scheduling, is logged once per change of the
 * wanted value with what to do, and is kept in s->error; the daemon works
 * either way, only its reaction is slower under load.
 */
void loop_scheduling_apply(struct loop_scheduling *s, unsigned wanted, unsigned cpu_percent);

/* The loop thread's CPU time, ns. */
uint64_t loop_thread_cpu_ns(void);
