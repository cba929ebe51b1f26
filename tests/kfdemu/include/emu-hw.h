/* SPDX-License-Identifier: MIT */
/*
 * The emulated *hardware* contract between kfdemu's GPU model and the
 * emulated GPU applications: what a real GPU's command processor sees
 * (doorbell writes, AQL packets in the ring, the read index it reports) and
 * what kfdemu has to add because it cannot trap MMIO stores.
 *
 * Everything the *kernel* interface defines (ioctls, mmap offsets, queue
 * addresses) is as amdkfd does it; only the two "strobe" words below are an
 * emulator artefact, and only emulated applications use them.
 *
 * Doorbells. CREATE_QUEUE returns doorbell_offset = KFD_MMAP_TYPE_DOORBELL |
 * KFD_MMAP_GPU_ID(gpu_id) | (byte offset of the queue's doorbell inside the
 * process's doorbell frame), exactly as kfd_ioctl_create_queue does on SOC15.
 * The application maps the frame as libhsakmt does:
 *   mmap(NULL, EMU_DOORBELL_FRAME_SIZE, PROT_READ|PROT_WRITE, MAP_SHARED,
 *        kfd_fd, doorbell_offset & ~(EMU_DOORBELL_FRAME_SIZE - 1))
 * and its doorbell is the u64 at frame + (doorbell_offset & (FRAME_SIZE-1)).
 * kfd_mmap rejects any other length with -EINVAL.
 *
 * Ringing a doorbell (what ROCr does after publishing a packet):
 *   1. write the packet into the ring, header last (release);
 *   2. store the new write index to amd_queue_t.write_dispatch_id (release);
 *   3. store the same index to the doorbell (release);
 *   4. emulator only: atomically increment the u32 node strobe at
 *      frame + EMU_NODE_STROBE_OFFSET and FUTEX_WAKE it (not private).
 * The node strobe lives in a page every frame on the node shares, so the GPU
 * model waits on one futex for all doorbells of all processes.
 *
 * Completion: when the GPU finishes a packet it writes the new read index to
 * the queue's read pointer (amd_queue_t.read_dispatch_id, i.e. the
 * read_pointer_address given to CREATE_QUEUE) as the CP's rptr report does,
 * through the GPU's own view of the memory (gpu/gpu-vm.c: the BO mapped
 * there in the GPU's VM, else process_vm_writev), then increments the u32 completion strobe of that
 * doorbell slot and FUTEX_WAKEs it (the stand-in for the HSA completion
 * signal's interrupt). Applications wait on it; nothing else reads it.
 */
#pragma once

#include <stdint.h>

/* kfd_doorbell_process_slice() on SOC15: two pages per process per GPU. */
#define EMU_DOORBELL_FRAME_SIZE 8192u
/* Doorbells are u64s at frame + 8 * slot. kfdemu hands out slots 0..255:
 * the kernel's allocate_doorbell has KFD_MAX_NUM_OF_QUEUES_PER_PROCESS
 * (1024) ids per process and device, but pqm_create_queue refuses a
 * process's 128th (256th on GC 9.4.3/9.4.4/9.5.0) queue on a device with
 * -ENOSPC first, so 256 slots are never exhausted and the frame keeps
 * its completion strobes in the second half of page 0. */
#define EMU_DOORBELL_SLOTS 256u
#define EMU_DOORBELL_SIZE 8u
/* u32 completion strobes at frame + EMU_COMPLETION_STROBE_OFFSET + 4 * slot. */
#define EMU_COMPLETION_STROBE_OFFSET 2048u
/* The node-wide u32 strobe (page 1 of every frame maps the same page). */
#define EMU_NODE_STROBE_OFFSET 4096u

/* KFD mmap offset encoding (kfd_priv.h). */
#define EMU_KFD_MMAP_TYPE_SHIFT 62
#define EMU_KFD_MMAP_TYPE_MASK (0x3ull << EMU_KFD_MMAP_TYPE_SHIFT)
#define EMU_KFD_MMAP_TYPE_DOORBELL (0x3ull << EMU_KFD_MMAP_TYPE_SHIFT)
#define EMU_KFD_MMAP_GPU_ID_SHIFT 46
#define EMU_KFD_MMAP_GPU_ID_MASK (0xffffull << EMU_KFD_MMAP_GPU_ID_SHIFT)
#define EMU_KFD_MMAP_GPU_ID(gpu_id)                                             \
        ((((uint64_t)(gpu_id)) << EMU_KFD_MMAP_GPU_ID_SHIFT) & EMU_KFD_MMAP_GPU_ID_MASK)
#define EMU_KFD_MMAP_GET_GPU_ID(offset)                                         \
        ((uint32_t)(((offset) & EMU_KFD_MMAP_GPU_ID_MASK) >> EMU_KFD_MMAP_GPU_ID_SHIFT))

/* AQL packet types (HSA runtime spec, hsa_packet_type_t), header bits 0..7. */
#define EMU_AQL_PACKET_TYPE_INVALID 1
#define EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH 2
#define EMU_AQL_PACKET_TYPE_BARRIER_AND 3
#define EMU_AQL_PACKET_TYPE_BARRIER_OR 5
#define EMU_AQL_PACKET_SIZE 64u

/*
 * A kernel dispatch packet: the layout of hsa_kernel_dispatch_packet_t.
 * The emulated GPU has no ISA, so the "kernel" is described by the packet:
 *   kernel_object      how long the kernel runs, in ns, alone on the whole GPU;
 *   grid_size_x        number of workgroups (grid_size_y/z must be 1);
 *   workgroup_size_x   work-items per workgroup (1..1024).
 * The GPU model derives how much of the device the kernel occupies from the
 * workgroup count and the device's CU count. A barrier packet (type
 * BARRIER_AND or BARRIER_OR, struct emu_aql_barrier_and_packet: the two
 * share the layout) completes once everything before it on its queue has
 * and each of its dependency signals (amd_signal_t addresses, 0 = none)
 * has the value 0, for BARRIER_OR once any of them has (a zero handle is
 * never met there).
 * Any other type is consumed and completes at once.
 */
struct emu_aql_dispatch_packet {
        uint16_t header;
        uint16_t setup;
        uint16_t workgroup_size_x;
        uint16_t workgroup_size_y;
        uint16_t workgroup_size_z;
        uint16_t reserved0;
        uint32_t grid_size_x;
        uint32_t grid_size_y;
        uint32_t grid_size_z;
        uint32_t private_segment_size;
        uint32_t group_segment_size;
        uint64_t kernel_object;
        uint64_t kernarg_address;
        uint64_t reserved2;
        uint64_t completion_signal;
};

_Static_assert(sizeof(struct emu_aql_dispatch_packet) == EMU_AQL_PACKET_SIZE, "AQL packet size");

/* hsa_barrier_and_packet_t, and hsa_barrier_or_packet_t's layout too. */
#define EMU_AQL_BARRIER_DEPENDENCIES 5
struct emu_aql_barrier_and_packet {
        uint16_t header;
        uint16_t reserved0;
        uint32_t reserved1;
        uint64_t dep_signal[EMU_AQL_BARRIER_DEPENDENCIES];
        uint64_t reserved2;
        uint64_t completion_signal;
};

_Static_assert(sizeof(struct emu_aql_barrier_and_packet) == EMU_AQL_PACKET_SIZE, "AQL barrier packet size");
