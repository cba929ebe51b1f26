/* SPDX-License-Identifier: MIT */
/*
 * A child process holding ROCr-like amd_queue_t structures in memory it
 * shares with the test, so the test can move the write/read indices and the
 * detector reads them from another process, as on a real node. The child can
 * also store a write index itself (fake_child_store), from one of its
 * threads, which is what a write breakpoint in that process sees.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "detector.h"

#define FAKE_AMD_QUEUE_SIZE 256
#define FAKE_WRITE_OFFSET 0x38
#define FAKE_READ_OFFSET 0x80
/* Each queue's AQL ring, and the amd_signal_t objects its barriers may wait on. */
#define FAKE_RING_PACKETS 4
#define FAKE_SIGNALS 4

/* Which of the child's threads stores. */
enum fake_store_by {
        FAKE_STORE_BY_MAIN,        /* its main thread */
        FAKE_STORE_BY_EARLY_THREAD, /* a thread it started before fake_online_process_start returned */
        FAKE_STORE_BY_NEW_THREAD,  /* a thread it starts for this store (and keeps) */
};

struct fake_online_process {
        pid_t pid;
        int command_fd, done_fd;
        unsigned char *queues; /* n * FAKE_AMD_QUEUE_SIZE bytes, same address in the child */
        unsigned char *rings;  /* n rings of FAKE_RING_PACKETS packets of 64 bytes, same address in the child */
        unsigned char *signals; /* FAKE_SIGNALS amd_signal_t of 64 bytes, same address in the child */
        size_t n;
};

void fake_online_process_start(struct fake_online_process *f, size_t n_queues);
void fake_online_process_stop(struct fake_online_process *f);
/* The child stores value into queue q's write index; returns once it has. */
void fake_child_store(struct fake_online_process *f, size_t q, uint64_t value, enum fake_store_by by);
volatile uint64_t *fake_write_index(struct fake_online_process *f, size_t q);
volatile uint64_t *fake_read_index(struct fake_online_process *f, size_t q);
/* Packet `index` of queue q's ring (index modulo FAKE_RING_PACKETS), 64 bytes. */
unsigned char *fake_ring_packet(struct fake_online_process *f, size_t q, uint64_t index);
/* Signal i's amd_signal_t in the child, and its value. */
uint64_t fake_signal_handle(struct fake_online_process *f, size_t i);
volatile int64_t *fake_signal_value(struct fake_online_process *f, size_t i);
/*
 * Writes a barrier packet (3: BARRIER_AND, 5: BARRIER_OR) at `index` of queue q's ring, waiting on
 * the given signal handles (0: none), n_deps of them.
 */
void fake_write_barrier(struct fake_online_process *f, size_t q, uint64_t index, unsigned type, const uint64_t *deps,
                        size_t n_deps);
/* Writes a kernel dispatch packet at `index` of queue q's ring. */
void fake_write_dispatch(struct fake_online_process *f, size_t q, uint64_t index);
/* The detector's view of queue q, placed on gpu_id, its ring included. */
struct detector_queue_addr fake_queue_addr(struct fake_online_process *f, size_t q, uint32_t gpu_id);
