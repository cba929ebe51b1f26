/* SPDX-License-Identifier: MIT */
/*
 * kfdemu-app --churn: an offline job's own device work beside its kernels.
 * A thread that, at a fixed rate, does what a training step's allocator and
 * stream setup do: hipMalloc (allocate and map VRAM), a new queue, then the
 * queue destroyed and the memory unmapped and freed. Every step is a KFD
 * ioctl under the process's p->mutex, so a debugger's SUSPEND on the
 * process waits behind them, and the queue steps preempt the GPU.
 */
#pragma once

#include "emu-runtime.h"

struct app_churn;

/* Starts the thread: `rate` cycles per second on GPU `gpu_index` (rate 0
 * starts nothing and sets *ret to NULL). Signals are blocked in it: the
 * process's handlers run on its other threads. */
int app_churn_start(struct emu_runtime *rt, unsigned gpu_index, double rate, struct app_churn **ret);

/* Ends and joins the thread (NULL is fine). Returns the first error a
 * cycle met (-errno), with the step in *ret_step, or 0. */
int app_churn_stop(struct app_churn *c, const char **ret_step);
