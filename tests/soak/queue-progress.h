/* SPDX-License-Identifier: MIT */
/*
 * A process's queues seen from outside: their read indices, read from its
 * memory (process_vm_readv, as root) rather than through libgpreempt, so
 * the soak checks the library's effect independently of the library.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What the soak remembers of a queue for checks without the library. */
struct soak_queue {
        uint32_t queue_id;
        uint32_t gpu_id;
        uint64_t read_pointer_address;
};

/* Sum of the queues' read indices: with one kernel per request, the
 * requests the process completed. */
int queue_progress_total(pid_t pid, const struct soak_queue *queues, size_t n, uint64_t *ret_total);
/* The first queue whose read index moves within ms milliseconds, or -1 in
 * *ret_moved when none does (the queues are stopped). */
int queue_progress_any_moves(pid_t pid, const struct soak_queue *queues, size_t n, int ms,
                             long *ret_moved);
/* Waits up to timeout_ms for every queue's read index to move; returns the
 * number of queues that did not and the id of the first of them. */
int queue_progress_all_move(pid_t pid, const struct soak_queue *queues, size_t n, int timeout_ms,
                            size_t *ret_n_stalled, uint32_t *ret_first_stalled);
