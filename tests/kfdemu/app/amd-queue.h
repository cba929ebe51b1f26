/* SPDX-License-Identifier: MIT */
/*
 * ROCr's amd_queue_t as far as KFD, a debugger and the GPU look at it
 * (hsa/amd_hsa_queue.h; offsets from rocm-userspace.md §5, unchanged from
 * ROCm 5.2.3 to HEAD). 256 bytes, 64-byte aligned. KFD is given
 * &write_dispatch_id and &read_dispatch_id, so a debugger finds the object
 * at read_pointer_address - 0x80.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kfd-abi.h"

#define AMD_QUEUE_ALIGN 64
/* hsa_queue_type_t HSA_QUEUE_TYPE_MULTI and hsa_queue_feature_t
 * HSA_QUEUE_FEATURE_KERNEL_DISPATCH, what HIP's queues carry. */
#define AMD_HSA_QUEUE_TYPE_MULTI 0u
#define AMD_HSA_QUEUE_FEATURE_KERNEL_DISPATCH 1u

struct amd_queue {
        /* hsa_queue_t */
        uint32_t type;
        uint32_t features;
        uint64_t base_address;          /* the ring */
        uint64_t doorbell_signal;
        uint32_t size;                  /* in packets */
        uint32_t reserved1;
        uint64_t id;
        /* amd_queue_t */
        uint8_t reserved_40[16];
        uint64_t write_dispatch_id;
        uint8_t reserved_64[16];
        uint64_t max_legacy_doorbell_dispatch_id_plus_1;
        uint8_t reserved_88[40];
        uint64_t read_dispatch_id;
        uint8_t reserved_136[120];
} __attribute__((aligned(AMD_QUEUE_ALIGN)));

_Static_assert(sizeof(struct amd_queue) == GP_AMD_QUEUE_SIZE, "amd_queue_t size");
_Static_assert(offsetof(struct amd_queue, base_address) == 8, "hsa_queue.base_address");
_Static_assert(offsetof(struct amd_queue, size) == 24, "hsa_queue.size");
_Static_assert(offsetof(struct amd_queue, id) == 32, "hsa_queue.id");
_Static_assert(offsetof(struct amd_queue, write_dispatch_id) == GP_AMD_QUEUE_WRITE_DISPATCH_ID_OFFSET,
               "write_dispatch_id");
_Static_assert(offsetof(struct amd_queue, max_legacy_doorbell_dispatch_id_plus_1) == 80,
               "max_legacy_doorbell_dispatch_id_plus_1");
_Static_assert(offsetof(struct amd_queue, read_dispatch_id) == GP_AMD_QUEUE_READ_DISPATCH_ID_OFFSET,
               "read_dispatch_id");
