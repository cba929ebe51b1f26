/* SPDX-License-Identifier: MIT */
/*
 * Where an online process's queue indices live, without attaching to it:
 * debugfs kfd/mqds (root) gives each compute queue's GPU and read/write
 * pointer addresses (kfd-interface.md §8.3), parsed by queue_finder.
 *
 * Reading mqds takes every KFD process's mutex in turn (kfd-hazards.md §4),
 * so the daemon reads it off its loop: online_queues_job() makes a read a
 * background-read.h job.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "background-read.h"
#include "detector.h"

/* Returns 0 with the compute queues whose addresses are known (maybe none), or -errno. */
int online_queues_read(const char *sysfs_root, pid_t pid, struct detector_queue_addr **ret_queues,
                       size_t *ret_n_queues);

/* What a job delivers: the result of online_queues_read(). */
struct online_queues {
        struct detector_queue_addr *queues;
        size_t n_queues;
};

void online_queues_free(void *result);

/*
 * A background read of pid's online queues (key: pid), delivered to done
 * (result: a struct online_queues, NULL after a failure) with userdata.
 * The job owns a copy of sysfs_root. Returns 0 or -ENOMEM.
 */
int online_queues_job(const char *sysfs_root, pid_t pid,
                      void (*done)(uint64_t key, int r, void *result, void *userdata), void *userdata,
                      struct background_read_job *ret_job);
