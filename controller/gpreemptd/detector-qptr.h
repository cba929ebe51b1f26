/* SPDX-License-Identifier: MIT */
/*
 * Online activity detection by queue pointers: the AQL write_dispatch_id
 * and read_dispatch_id u64s that ROCr keeps in the online process's own
 * memory (amd_queue_t; kfd-interface.md §7-8, rocm-userspace.md §5). A write
 * index that moved since the last look, or a write index ahead of the read
 * index, means the process has work on that queue's GPU.
 *
 * The online process is only read, never attached: debug activation costs
 * the target a runlist refresh and, on GC 11.0.0-11.0.3, half its CUs
 * (kfd-interface.md §9.4, §9.6). Each poll reads all of a process's queues
 * with one process_vm_readv.
 *
 * This object only looks when told to (detector_poll); the caller decides the
 * cadence (manager.c: detector_interval()).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* process_vm_readv takes at most IOV_MAX (1024) remote iovecs: two per queue. */
#define DETECTOR_QUEUES_PER_READ 512
#define DETECTOR_MAX_QUEUES_PER_PROCESS 1024
#define DETECTOR_MAX_PROCESSES 1024
#define DETECTOR_MAX_GPUS 64

struct detector_queue_addr {
        uint32_t gpu_id;
        uint64_t read_pointer_address;
        uint64_t write_pointer_address;
};

struct detector_callbacks {
        void (*gpu_busy)(uint32_t gpu_id, uint64_t now_us, void *userdata);
        void (*gpu_idle)(uint32_t gpu_id, uint64_t since_us, uint64_t now_us, void *userdata);
        /* The process's memory can no longer be read (it exited); it is no longer watched. */
        void (*process_gone)(pid_t pid, void *userdata);
};

struct detector;

int detector_new(const struct detector_callbacks *cb, void *userdata, struct detector **ret_detector);
void detector_free(struct detector *d);

/* Watches pid's queues (replacing what was watched for it). Returns 0, -E2BIG, -ENOMEM. */
int detector_watch(struct detector *d, pid_t pid, const struct detector_queue_addr *queues, size_t n_queues);
void detector_unwatch(struct detector *d, pid_t pid);
size_t detector_n_queues(const struct detector *d);

/* Reads every watched queue once and reports GPU busy/idle transitions. */
void detector_poll(struct detector *d, uint64_t now_us);

/* Whether online work was seen on gpu_id within the last recent_us. */
bool detector_gpu_recently_busy(const struct detector *d, uint32_t gpu_id, uint64_t now_us, uint64_t recent_us);
