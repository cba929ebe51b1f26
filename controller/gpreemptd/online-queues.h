/* SPDX-License-Identifier: MIT */
/*
 * Where an online process's queue indices live, without attaching to it:
 * debugfs kfd/mqds (root) gives each compute queue's GPU and read/write
 * pointer addresses (kfd-interface.md §8.3), parsed by queue_finder.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "detector.h"

/* Returns 0 with the compute queues whose addresses are known (maybe none), or -errno. */
int online_queues_read(const char *sysfs_root, pid_t pid, struct detector_queue_addr **ret_queues,
                       size_t *ret_n_queues);
