/* SPDX-License-Identifier: MIT */
/*
 * After the soak has detached: checks from outside the library that the
 * process was left as it was found — not traced, every queue mapped on its
 * GPU (debugfs hqds, read through queue_finder: a suspended queue is
 * unmapped and has no active HQD) and every queue making progress.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "queue-progress.h"

struct released_report {
        pid_t tracer;          /* TracerPid of the process */
        size_t n_mapped;       /* queues with an active HQD in debugfs */
        size_t n_stalled;      /* queues whose read index did not move */
        uint32_t first_stalled;
        char problem[256];     /* empty when everything was released */
};

/* Runs every check even after one failed; returns 0 when the checks could
 * be made (the verdict is report->problem) and a negative errno when not. */
int released_check(pid_t pid, const struct soak_queue *queues, size_t n_queues,
                   const char *queue_finder, int progress_timeout_ms,
                   struct released_report *report);
