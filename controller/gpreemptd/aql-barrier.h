/* SPDX-License-Identifier: MIT */
/*
 * The AQL packet at a queue's read index, read as the command processor
 * reads it: does the queue run work, or wait for a signal?
 *
 * A queue's read index stays below its write index while the CP waits at a
 * barrier-AND or barrier-OR packet whose dependency signals are not met: a
 * HIP stream waiting on the host (hipLaunchHostFunc, hipStreamWaitEvent on
 * an event the host or another process sets) looks like outstanding work
 * while the GPU does nothing for it (kfd-hazards.md §3). The facts this
 * rests on (rocm-userspace.md §13):
 *
 * - The packet at index i is at ring base + (i % (ring size / 64)) * 64, the
 *   ring base and size being the MQD's CP_HQD_PQ_BASE and CP_HQD_PQ_CONTROL
 *   (kfd_mqd_manager_v9.c update_mqd, from CREATE_QUEUE's ring_base_address,
 *   a user virtual address, which for ROCr's AQL queues is
 *   hsa_queue.base_address: rocm-userspace.md §5).
 * - Header bits 0-7 are the packet type (hsa.h hsa_packet_header_t,
 *   hsa_packet_type_t: INVALID 1, KERNEL_DISPATCH 2, BARRIER_AND 3,
 *   BARRIER_OR 5). The producer writes the header last; an INVALID header at
 *   the read index is a packet still being written.
 * - hsa_barrier_and_packet_t and hsa_barrier_or_packet_t: dep_signal[5] at
 *   byte 8. A zero handle is a met dependency for AND and an unmet one for
 *   OR. AND completes once every dependency's value is 0, OR once any is.
 * - An hsa_signal_t handle is the address of its amd_signal_t (ROCr
 *   core/inc/signal.h Signal::Convert), whose int64 value is at byte 8
 *   (amd_hsa_signal.h). A signal shared with another process (IPC) is mapped
 *   in this one too, at the handle's address.
 *
 * The packet at the read index cannot change while the index stays there:
 * the producer may not reuse a slot before the CP has consumed it, and it
 * publishes a packet by its header, which a read in address order sees first.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "queue-memory.h"

#define AQL_PACKET_SIZE 64u
#define AQL_BARRIER_DEPENDENCIES 5u

/* What the packet at a queue's read index means for its GPU. */
enum aql_head {
        AQL_HEAD_RUNS,        /* the CP runs it, or takes it at once: work */
        AQL_HEAD_UNPUBLISHED, /* its header is still INVALID: the producer is writing it, work is coming */
        AQL_HEAD_WAITS,       /* a barrier whose dependencies are not met: the CP waits for a signal */
};

/* A queue's ring as its MQD gives it. */
struct aql_ring {
        uint64_t base_address;
        uint64_t size_bytes; /* 0: unknown */
};

/* A barrier packet's dependencies. */
struct aql_barrier {
        bool any; /* barrier-OR: one met dependency releases it */
        size_t n_deps;
        uint64_t value_address[AQL_BARRIER_DEPENDENCIES]; /* each non-zero handle's amd_signal_t.value */
};

/* Where packet `index` of ring is; false if the ring is unknown (not a power-of-two number of packets). */
bool aql_ring_packet_address(const struct aql_ring *ring, uint64_t index, uint64_t *ret_address);

/*
 * What a packet is: AQL_HEAD_RUNS, AQL_HEAD_UNPUBLISHED, or, for a barrier,
 * AQL_HEAD_WAITS with *ret_barrier its dependencies, whose values
 * aql_barrier_waits() judges.
 */
enum aql_head aql_packet_parse(const unsigned char packet[AQL_PACKET_SIZE], struct aql_barrier *ret_barrier);

/* Whether a barrier still waits, given its dependencies' values in ret_barrier's order. */
bool aql_barrier_waits(const struct aql_barrier *barrier, const int64_t *values);

/*
 * Reads the packet at read_index of ring and, for a barrier, its
 * dependencies' values, through m (queue-memory.h). Returns 0 and *ret_head,
 * -EINVAL for an unknown ring, or the -errno of queue_memory_read(): what
 * cannot be read is not known to wait.
 */
int aql_head_read(struct queue_memory *m, const struct aql_ring *ring, uint64_t read_index, enum aql_head *ret_head);
