/* SPDX-License-Identifier: MIT */
/*
 * What the hazard tests share: an offline kfdemu-app held by libgpreempt
 * as gpreemptd holds one, the clock, CPU pinning, and cpu-hog's reports.
 * The tests run inside kfdemu-run (their parent is the node's server).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <gpreempt/gpreempt.h>

#include "test-support.h"

struct held_app {
        struct gp_context *context;
        struct gp_target *target;
        struct child app;
};

/* Spawns kfdemu-app with `args` and attaches to it. */
int held_app_start(const char *app_path, const char *const args[], struct held_app *ret);
/* Suspends every queue of the target; the ioctl's wall time in *ret_ns. */
int held_app_suspend(struct held_app *h, uint64_t *ret_ns);
int held_app_resume(struct held_app *h);
/* Detaches and kills the app (safe on a half-started one). */
void held_app_stop(struct held_app *h);

/* The calling thread runs only on `cpu` (-1: on every online CPU). */
int pin_thread(int cpu);
/* The last CPU this process may run on, where a test measures; -1 if none. */
int measured_cpu(void);
/* Every thread of process `pid` runs on the CPUs other than `cpu` (when
 * there are others): the node's server must not share the measured CPU
 * with a real-time spinner, or the preemption it models never ends. */
int keep_process_off_cpu(pid_t pid, int cpu);

/* cpu-hog pinned to `cpu`, its report lines collected by a thread of this
 * process kept off that CPU. */
struct hog;
int hog_start(const char *hog_path, int cpu, struct hog **ret);
/* The share of its CPU (0..1) the hog got between two CLOCK_MONOTONIC
 * times (in ns), from the intervals it has reported so far. */
double hog_cpu_share(struct hog *h, uint64_t from_ns, uint64_t to_ns);
void hog_stop(struct hog *h);
