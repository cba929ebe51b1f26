/* SPDX-License-Identifier: MIT */
/*
 * The GPU job kfdemu-app plays: one worker thread per queue submitting
 * requests (K kernel dispatches, then a wait for the last one) either back
 * to back (closed loop) or at scheduled times (open loop, fixed intervals
 * or Poisson), recording each request's latency.
 *
 * Open loop: the total rate R is split evenly over the queues present at
 * start; each runs its own arrival process at R/Q (fixed: phase-shifted so
 * the node sees one request every 1/R s; Poisson: independent processes,
 * whose sum is a Poisson process of rate R). A queue added later runs at
 * R/Q too. Latency is measured from the scheduled time, so a request that
 * waits for an earlier one (or for a suspended queue) is charged for it.
 *
 * Two latencies per request, both from the scheduled time: to the GPU's end
 * timestamp of its last kernel (the completion signal's end_ts: the model's
 * timeline under kfdemu, which a late host thread cannot stretch) and to
 * the moment the worker saw the completion (wall clock: adds the wake-ups
 * of the model thread and of the worker).
 */
#pragma once

#include <stdint.h>
#include <stdio.h>

#include "app-options.h"
#include "clr-log.h"
#include "emu-runtime.h"
#include "latency-stats.h"

struct app_job;

/* The columns of the latency log: the request's scheduled time
 * (CLOCK_MONOTONIC ns), then, in ns after it: the GPU's end timestamp of
 * its last kernel (the model-time latency), the worker's wake-up on its
 * completion (the wall-clock latency), the publication of its first kernel
 * (the emulated host's submission delay) and the GPU's start timestamp of
 * its first kernel. */
#define APP_LATENCY_LOG_HEADER "# scheduled_ns model_latency_ns wall_latency_ns submitted_after_ns first_kernel_start_after_ns\n"

struct app_queue_report {
        struct emu_queue_identity identity;
        uint64_t read_index;
        uint64_t write_index;
        uint64_t requests;
        uint64_t kernels;
        bool destroyed;
};

struct app_job_report {
        double elapsed_s;
        uint64_t requests;          /* completed */
        uint64_t kernels;           /* of completed requests */
        uint64_t abandoned;         /* in flight when the job stopped */
        struct latency_summary latency;       /* to the GPU's end timestamp */
        struct latency_summary wall_latency;  /* to the worker's wake-up */
        unsigned n_queues;
        struct app_queue_report *queues;   /* free() */
        int error;                  /* first worker failure, -errno, or 0 */
};

/* Where the job reports what it does. */
struct app_job_outputs {
        struct clr_log *log;           /* CLR log lines; NULL = none */
        /* One line per dispatch, "<ns> <pid> <gpu_id> <queue_id> <index>",
         * ns = CLOCK_MONOTONIC just before the write index was published
         * (for reaction-time measurements); NULL = none. */
        FILE *dispatch_times;
        /* One line per completed request (APP_LATENCY_LOG_HEADER); NULL = none. */
        FILE *latency_log;
        /* Runs in a worker thread when it stops for good (its requests or
         * the duration are done, or it failed), so the caller can wake its
         * own loop. */
        void (*on_worker_done)(void);
};

int app_job_new(const struct app_options *opts, struct emu_runtime *rt,
                const struct app_job_outputs *outputs, struct app_job **ret_job);
/* Stops the workers and frees; queues not destroyed are left to process exit. */
void app_job_free(struct app_job *job);

/* Creates a queue (and its idle worker) on this GPU. */
int app_job_add_queue(struct app_job *job, uint32_t gpu_id);
/* Starts every worker not yet running; the first call starts the clock. */
int app_job_start(struct app_job *job);
/* Stops the newest running worker and destroys its queue (this blocks while
 * a debugger holds the queue suspended, as on a real node). */
int app_job_destroy_one_queue(struct app_job *job);
/* Asks every worker to stop and waits for them. */
void app_job_stop(struct app_job *job);
/* Destroys every live queue; returns the first error. */
int app_job_destroy_queues(struct app_job *job);

/* The first worker failure (-errno), or 0. */
int app_job_error(struct app_job *job);
unsigned app_job_queue_count(const struct app_job *job);  /* live queues */
bool app_job_workers_done(struct app_job *job);           /* nothing left to run */
int app_job_report(struct app_job *job, struct app_job_report *ret);
