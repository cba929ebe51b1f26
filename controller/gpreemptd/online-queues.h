/* SPDX-License-Identifier: MIT */
/*
 * Where an online process's queue indices live, without attaching to it:
 * debugfs kfd/mqds (root) gives each queue's read/write pointer addresses,
 * sysfs proc/<pid>/queues gives the queue ids and GPUs; queue_finder parses
 * and joins both (kfd-interface.md §8).
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "detector-qptr.h"

/* Returns 0 with the compute queues whose addresses are known (maybe none), or -errno. */
int online_queues_read(const char *sysfs_root, pid_t pid, struct detector_queue_addr **ret_queues,
                       size_t *ret_n_queues);
