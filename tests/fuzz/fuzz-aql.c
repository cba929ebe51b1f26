/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the AQL packet at an online queue's read index
 * (controller/gpreemptd/aql-barrier.c), 64 bytes of another process's memory
 * that the daemon takes for a packet, judged with its dependency signals'
 * values and found in a ring of any size. Input: the packet, then up to
 * five int64 values, then the ring's size in bytes and the read index (both
 * u64); what is missing is 0. A barrier must name at most five
 * dependencies, each at its handle's amd_signal_t value, and a packet's
 * address must lie within its ring.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aql-barrier.h"

#define RING_BASE 0x100000u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next `len` bytes of the input into out, zeros past its end. */
static void take(const uint8_t **data, size_t *size, void *out, size_t len)
{
        size_t n = *size < len ? *size : len;

        memset(out, 0, len);
        memcpy(out, *data, n);
        *data += n;
        *size -= n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        unsigned char packet[AQL_PACKET_SIZE];
        int64_t values[AQL_BARRIER_DEPENDENCIES];
        struct aql_ring ring = { .base_address = RING_BASE };
        struct aql_barrier barrier;
        uint64_t index, address;

        take(&data, &size, packet, sizeof(packet));
        take(&data, &size, values, sizeof(values));
        take(&data, &size, &ring.size_bytes, sizeof(ring.size_bytes));
        take(&data, &size, &index, sizeof(index));

        if (aql_packet_parse(packet, &barrier) == AQL_HEAD_WAITS) {
                size_t named = 0;

                if (barrier.n_deps > AQL_BARRIER_DEPENDENCIES)
                        abort();
                for (size_t i = 0; i < AQL_BARRIER_DEPENDENCIES; i++) {
                        uint64_t handle;

                        memcpy(&handle, packet + 8 + i * sizeof(handle), sizeof(handle));
                        if (handle && barrier.value_address[named++] != handle + 8)
                                abort();
                }
                if (named != barrier.n_deps)
                        abort();
                (void)aql_barrier_waits(&barrier, values);
        }
        if (aql_ring_packet_address(&ring, index, &address) &&
            (address < RING_BASE || address - RING_BASE + AQL_PACKET_SIZE > ring.size_bytes ||
             (address - RING_BASE) % AQL_PACKET_SIZE != 0))
                abort();
        return 0;
}
