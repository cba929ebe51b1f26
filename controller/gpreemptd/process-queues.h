/* SPDX-License-Identifier: MIT */
/*
 * What sysfs lists of a process's queues (kfd-interface.md §8.1): the GPUs
 * it has queues on, how many, and a signature that changes when the list
 * does. The manager keeps one per tracked process.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* More GPUs than any node has. */
#define PROCESS_QUEUES_MAX_GPUS 64

struct process_queues {
        uint32_t gpu_ids[PROCESS_QUEUES_MAX_GPUS];
        size_t n_gpu_ids;
        size_t n_queues;
        size_t n_compute_queues;
        uint64_t signature; /* of the (queue id, gpu id) list */
};

/* Reads pid's queues under <sysfs_root>/class/kfd/kfd. Returns 0 or -errno, leaving *ret alone. */
int process_queues_read(const char *sysfs_root, pid_t pid, struct process_queues *ret);
bool process_queues_on_gpu(const struct process_queues *q, uint32_t gpu_id);
