/* SPDX-License-Identifier: MIT */
/*
 * emu-runtime: a small stand-in for ROCr + libhsakmt that drives /dev/kfd
 * the way a real HIP application does (rocm-userspace.md §4-5):
 *
 *   open /dev/kfd (O_RDWR|O_CLOEXEC) -> GET_VERSION (>= 1.13)
 *   -> GPUs from the topology's nodes/N/gpu_id  (0 = CPU node, skipped)
 *   -> per GPU: ACQUIRE_VM with /dev/dri/renderD<drm_render_minor>
 *   -> RUNTIME_ENABLE {&r_debug, ENABLE}        (hsaKmtRuntimeEnable)
 *   -> CREATE_EVENT of a HW exception event, a thread asleep on it in
 *      WAIT_EVENTS; when a GPU reset sets it: ROCr's message, abort()
 *   -> per queue: an amd_queue_t in our own memory, a ring, an EOP buffer,
 *      a ctx-save area; CREATE_QUEUE; map the GPU's doorbell frame once
 *   -> dispatch packets, ring doorbells, wait for the read index
 *   -> DESTROY_QUEUE, RUNTIME_ENABLE {mode 0} (hsaKmtRuntimeDisable), close.
 *
 * It only uses libc: under kfdemu the preload library routes these calls to
 * the emulated kernel, on a real node they reach amdkfd. Every function
 * returns 0 or a positive count on success and -errno on failure; nothing
 * prints, except what ROCr prints before it aborts the process on a GPU
 * reset (its HW exception event: hw-exception.c). A runtime may be shared by threads: queue creation and
 * destruction are serialised inside; each queue must be driven (dispatch,
 * wait) by one thread at a time.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu-signal.h"

/* Upper bounds on what the runtime accepts; they also bound what a user
 * can ask for on the command line. */
#define EMU_RUNTIME_MAX_GPUS 64u
#define EMU_QUEUE_MIN_PACKETS 16u
#define EMU_QUEUE_MAX_PACKETS (1u << 20) /* 64 MiB of ring */
#define EMU_QUEUE_DEFAULT_PACKETS 1024u
/* The priority the real MI308X node showed on every queue (docs/evaluation.md §1). */
#define EMU_QUEUE_DEFAULT_PRIORITY 7u

struct emu_runtime;
struct emu_aql_queue;

struct emu_runtime_options {
        /* Issue RUNTIME_ENABLE as ROCr >= 5.7 does. false plays a process
         * whose runtime never enabled debugging (Debian's ROCm 5.2.3). */
        bool runtime_enable;
        /* Ask for trap temporaries to be saved (HSA_ENABLE_DEBUG=1). */
        bool ttmp_save;
};

struct emu_gpu_info {
        uint32_t gpu_id;
        uint32_t node;             /* topology node number */
        uint32_t cu_count;         /* simd_count / simd_per_cu */
        uint32_t waves_per_cu;     /* simd_per_cu * max_waves_per_simd */
        uint32_t num_xcc;
        uint32_t drm_render_minor; /* its render node: /dev/dri/renderD<minor> */
        uint32_t gfx_target_version; /* major * 10000 + minor * 100 + stepping */
};

/* Opens the device and brings the runtime up. ret_rt is set only on success. */
int emu_runtime_open(const struct emu_runtime_options *options, struct emu_runtime **ret_rt);

/* RUNTIME_ENABLE with mode 0 (only if it was enabled), unmaps the doorbell
 * frames and closes the device. Blocks, as hsaKmtRuntimeDisable does, until
 * a debugger attached to this process acknowledges the runtime event.
 * Queues must have been destroyed. Returns the disable's result; the
 * runtime is freed in every case. */
int emu_runtime_close(struct emu_runtime *rt);

/* The KFD interface version the device reported. */
void emu_runtime_kfd_version(const struct emu_runtime *rt, uint32_t *ret_major, uint32_t *ret_minor);
bool emu_runtime_is_debug_enabled(const struct emu_runtime *rt);
unsigned emu_runtime_gpu_count(const struct emu_runtime *rt);
const struct emu_gpu_info *emu_runtime_gpu(const struct emu_runtime *rt, unsigned index);
/* Index of the GPU with this gpu_id, or -ENODEV. */
int emu_runtime_find_gpu(const struct emu_runtime *rt, uint32_t gpu_id);

/* hipMalloc: `size` bytes of VRAM on GPU `gpu_index` at GPU virtual
 * address `va` (page-aligned, free in the process's VM), allocated and
 * mapped into that GPU's VM. The handle goes to emu_gpu_memory_free. */
int emu_gpu_memory_alloc(struct emu_runtime *rt, unsigned gpu_index, uint64_t va, uint64_t size,
                         uint64_t *ret_handle);
/* hipFree: unmaps the buffer from its GPU and frees it. */
int emu_gpu_memory_free(struct emu_runtime *rt, unsigned gpu_index, uint64_t handle);

struct emu_queue_options {
        uint32_t gpu_id;
        uint32_t priority;         /* KFD queue priority 0..15 */
        uint32_t ring_packets;     /* power of two, EMU_QUEUE_MIN..MAX_PACKETS */
};

int emu_aql_queue_create(struct emu_runtime *rt, const struct emu_queue_options *options,
                         struct emu_aql_queue **ret_queue);

/* DESTROY_QUEUE, then frees the queue's memory. Like the kernel's
 * wait_on_destroy_queue this blocks while the queue is suspended by a
 * debugger. On failure the queue is left alive (the GPU may still write to
 * its memory) and -errno is returned. */
int emu_aql_queue_destroy(struct emu_aql_queue *queue);

/* One emulated kernel launch (emu-hw.h: the packet describes the work). */
struct emu_kernel_launch {
        uint64_t duration_ns;      /* run time alone on the whole GPU */
        uint32_t workgroups;       /* grid_size_x */
        uint16_t workgroup_size;   /* work-items per workgroup, 1..1024 */
        /* The packet's completion signal, in the caller's memory, or NULL.
         * The dispatch arms it (value 1, no timestamps); the GPU stamps and
         * decrements it when the kernel completes (emu-signal.h). It must
         * stay alive and untouched until then. */
        struct emu_amd_signal *completion_signal;
};

/* What a dispatch put into the ring, for logging. */
struct emu_dispatch_record {
        uint64_t index;            /* packet index (the write index before it) */
        uint64_t read_index;       /* read_dispatch_id seen when it was written */
        int64_t publish_ns;        /* CLOCK_MONOTONIC just before write_dispatch_id moved */
        uint16_t header;
        uint16_t setup;
        uint64_t kernel_object;
        uint64_t kernarg_address;
        uint64_t completion_signal;
        uint32_t grid[3];
        uint16_t workgroup[3];
        uint32_t private_segment_size;
        uint32_t group_segment_size;
};

/* Publishes one kernel dispatch packet and rings the doorbell (emu-hw.h).
 * -EAGAIN when the ring is full (nothing was written). ret_record may be NULL. */
int emu_aql_queue_dispatch(struct emu_aql_queue *queue, const struct emu_kernel_launch *launch,
                           struct emu_dispatch_record *ret_record);

/* The two halves of a dispatch, for a producer that writes several packets
 * and then moves the write index and rings the doorbell once (AQL allows
 * it: the packet processor takes everything below the write index). Write
 * fills the next slot (ret_record->publish_ns stays 0), -EAGAIN when the
 * ring is full: publish, then wait for room. Publish returns the
 * CLOCK_MONOTONIC time taken just before the write index moved. */
int emu_aql_queue_write(struct emu_aql_queue *queue, const struct emu_kernel_launch *launch,
                        struct emu_dispatch_record *ret_record);
int64_t emu_aql_queue_publish(struct emu_aql_queue *queue);

/* Writes (does not publish) a barrier-AND packet whose one dependency is
 * `dependency`, as CLR does for hipStreamWaitEvent on an event the host
 * completes: the packet processor holds it, and the read index below it,
 * until everything before it has completed and the signal reads 0. The
 * caller arms the signal (value > 0) before and keeps it alive until the
 * packet is consumed. ret_index is the packet's index; -EAGAIN when the
 * ring is full. */
int emu_aql_queue_write_barrier_and(struct emu_aql_queue *queue, const struct emu_amd_signal *dependency,
                                    uint64_t *ret_index);

/* Waits until the GPU has consumed the packet with this index
 * (read_dispatch_id > index), at most timeout_ns: callers wait in slices so
 * that a suspended queue never keeps them from their own stop conditions.
 * 0 when done, -ETIMEDOUT, or -EINTR when a signal handler ran. */
int emu_aql_queue_wait(struct emu_aql_queue *queue, uint64_t index, int64_t timeout_ns);

/* The same for the completion of a packet on the queue that carries
 * `signal`: its value at 0. The read index may pass a packet before its
 * waves are done (kfdemu-run(1), ReadIndexAdvance=), as on a real CP; a
 * runtime learns of completion from the signal. */
int emu_aql_queue_wait_signal(struct emu_aql_queue *queue, const struct emu_amd_signal *signal, int64_t timeout_ns);

/* The GPU's timestamps of a completed packet's signal (ns, CLOCK_MONOTONIC,
 * the model's timeline under kfdemu): 0, or -EBUSY while the packet has
 * not completed. */
int emu_signal_timestamps(const struct emu_amd_signal *signal, uint64_t *ret_start_ns, uint64_t *ret_end_ns);

uint64_t emu_aql_queue_read_index(const struct emu_aql_queue *queue);
uint64_t emu_aql_queue_write_index(const struct emu_aql_queue *queue);

/* Addresses and ids as a debugger or a log would see them. */
struct emu_queue_identity {
        uint32_t queue_id;         /* KFD queue id (sysfs queues/<id>) */
        uint32_t gpu_id;
        uint32_t priority;
        uint32_t ring_packets;
        uint64_t hsa_queue_id;     /* ROCr's hsa_queue.id (the log's id=) */
        uintptr_t amd_queue;       /* hsa_queue_t* = amd_queue_t VA */
        uintptr_t ring;            /* hsa_queue.base_address = KFD ring base */
        uintptr_t write_pointer;   /* &amd_queue_t.write_dispatch_id */
        uintptr_t read_pointer;    /* &amd_queue_t.read_dispatch_id */
        uintptr_t ctx_save;
        uint64_t doorbell_offset;
        /* The amd_queue_t is in a GTT buffer object mapped through the
         * render node, as ROCr puts it on MES GPUs or with
         * HSA_USERPTR_FOR_PAGED_MEM=0: process_vm_readv cannot read it. */
        bool amd_queue_in_gtt;
};

void emu_aql_queue_identity(const struct emu_aql_queue *queue, struct emu_queue_identity *ret);
