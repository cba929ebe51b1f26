/* SPDX-License-Identifier: MIT */
#include "aql-barrier.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

/* hsa.h hsa_packet_type_t */
#define AQL_PACKET_TYPE_INVALID 1u
#define AQL_PACKET_TYPE_BARRIER_AND 3u
#define AQL_PACKET_TYPE_BARRIER_OR 5u
/* hsa_barrier_and_packet_t / hsa_barrier_or_packet_t: dep_signal[5] after header, reserved0, reserved1 */
#define AQL_BARRIER_DEP_SIGNAL_OFFSET 8u
/* amd_signal_t: kind (int64), then value (int64) */
#define AMD_SIGNAL_VALUE_OFFSET 8u

bool aql_ring_packet_address(const struct aql_ring *ring, uint64_t index, uint64_t *ret_address)
{
        uint64_t packets = ring->size_bytes / AQL_PACKET_SIZE;

        /* the CP wraps the ring by masking: a size that is not a power of two is not a ring we know */
        if (packets == 0 || (packets & (packets - 1)) != 0 || ring->size_bytes % AQL_PACKET_SIZE != 0)
                return false;
        *ret_address = ring->base_address + (index & (packets - 1)) * AQL_PACKET_SIZE;
        return true;
}

enum aql_head aql_packet_parse(const unsigned char packet[AQL_PACKET_SIZE], struct aql_barrier *ret_barrier)
{
        unsigned type = packet[0]; /* header bits 0-7, little-endian */
        struct aql_barrier barrier = { .any = type == AQL_PACKET_TYPE_BARRIER_OR };

        if (type == AQL_PACKET_TYPE_INVALID)
                return AQL_HEAD_UNPUBLISHED;
        if (type != AQL_PACKET_TYPE_BARRIER_AND && type != AQL_PACKET_TYPE_BARRIER_OR)
                return AQL_HEAD_RUNS;
        for (size_t i = 0; i < AQL_BARRIER_DEPENDENCIES; i++) {
                uint64_t handle;

                memcpy(&handle, packet + AQL_BARRIER_DEP_SIGNAL_OFFSET + i * sizeof(handle), sizeof(handle));
                if (handle)
                        barrier.value_address[barrier.n_deps++] = handle + AMD_SIGNAL_VALUE_OFFSET;
        }
        *ret_barrier = barrier;
        return AQL_HEAD_WAITS;
}

bool aql_barrier_waits(const struct aql_barrier *barrier, const int64_t *values)
{
        for (size_t i = 0; i < barrier->n_deps; i++) {
                bool met = values[i] == 0;

                if (barrier->any && met)
                        return false;
                if (!barrier->any && !met)
                        return true;
        }
        /* every dependency met (AND, none at all included); none met (OR: a zero handle is never met) */
        return barrier->any;
}

int aql_head_read(struct queue_memory *m, const struct aql_ring *ring, uint64_t read_index, enum aql_head *ret_head)
{
        unsigned char packet[AQL_PACKET_SIZE];
        int64_t values[AQL_BARRIER_DEPENDENCIES] = { 0 };
        struct iovec remote[AQL_BARRIER_DEPENDENCIES];
        struct aql_barrier barrier;
        enum aql_head head;
        uint64_t address;
        size_t bytes;
        bool switched;
        int r;

        if (!aql_ring_packet_address(ring, read_index, &address))
                return -EINVAL;
        remote[0] = (struct iovec){ (void *)(uintptr_t)address, sizeof(packet) };
        r = queue_memory_read(m, packet, remote, 1, &bytes, &switched);
        if (r < 0)
                return r;
        head = aql_packet_parse(packet, &barrier);
        if (head == AQL_HEAD_WAITS && barrier.n_deps > 0) {
                for (size_t i = 0; i < barrier.n_deps; i++)
                        remote[i] = (struct iovec){ (void *)(uintptr_t)barrier.value_address[i], sizeof(values[i]) };
                r = queue_memory_read(m, values, remote, barrier.n_deps, &bytes, &switched);
                if (r < 0)
                        return r;
        }
        if (head == AQL_HEAD_WAITS && !aql_barrier_waits(&barrier, values))
                head = AQL_HEAD_RUNS;
        *ret_head = head;
        return 0;
}
