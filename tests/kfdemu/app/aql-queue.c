/* SPDX-License-Identifier: MIT */
/*
 * AQL queues shaped like ROCr's AqlQueue (rocm-userspace.md §5): the
 * amd_queue_t, ring, EOP buffer and ctx-save area live in the application's
 * own memory and KFD gets their addresses; packets are published and the
 * doorbell rung by the ringing protocol of emu-hw.h. Where ROCr would put
 * the amd_queue_t in a GTT BO (emu_runtime_queue_object_in_gtt), it is
 * one here too, which other processes cannot read with process_vm_readv
 * (kfd-hazards.md §9).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "amd-queue.h"
#include "cleanup.h"
#include "emu-hw.h"
#include "kfd-abi.h"
#include "runtime-internal.h"

#define PAGE_SIZE_BYTES 4096u
/* libhsakmt gives gfx9+ compute queues a one-page EOP buffer. */
#define EOP_BUFFER_SIZE 4096u
/*
 * The ctx-save area has the shape libhsakmt gives it on gfx9: per XCC a
 * control stack (8 bytes per wave slot plus a header) followed by each CU's
 * workgroup context (VGPRs, SGPRs, LDS, hardware registers) and a debugger
 * area of 32 bytes per wave. The per-CU figures below are gfx9-sized; KFD
 * writes the save-area header here when a debugger suspends the queue, so
 * the memory must exist, but it is mapped lazily and costs nothing untouched.
 */
#define CTL_STACK_BYTES_PER_WAVE 8u
#define CTL_STACK_HEADER_BYTES 8u
#define WG_CONTEXT_BYTES_PER_CU (0x40000u + 0x4000u + 0x10000u + 0x1000u)
#define DEBUG_BYTES_PER_WAVE 32u
/* AQL header of HIP's kernel dispatches in the real log: type 2, barrier 1,
 * acquire and release fences at agent scope (0xb02). */
#define AQL_HEADER_BARRIER (1u << 8)
#define AQL_HEADER_ACQUIRE_AGENT (1u << 9)
#define AQL_HEADER_RELEASE_AGENT (1u << 11)
#define AQL_DISPATCH_HEADER                                                           \
        (EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH | AQL_HEADER_BARRIER |                   \
         AQL_HEADER_ACQUIRE_AGENT | AQL_HEADER_RELEASE_AGENT)
/* A barrier-AND that waits on a signal the host sets needs system-scope
 * fences: the host's store must be visible to what follows the barrier. */
#define AQL_HEADER_ACQUIRE_SYSTEM (2u << 9)
#define AQL_HEADER_RELEASE_SYSTEM (2u << 11)
#define AQL_BARRIER_AND_HEADER                                                        \
        (EMU_AQL_PACKET_TYPE_BARRIER_AND | AQL_HEADER_BARRIER | AQL_HEADER_ACQUIRE_SYSTEM | \
         AQL_HEADER_RELEASE_SYSTEM)
#define AQL_DISPATCH_DIMENSIONS 1u
#define KERNARG_BYTES 256u

struct emu_aql_queue {
        struct emu_runtime *rt;
        struct amd_queue *amd_queue;
        bool amd_queue_in_gtt;          /* a GTT BO (amd_queue_handle), else aligned_alloc's */
        uint64_t amd_queue_handle;
        unsigned gpu_index;
        struct emu_aql_dispatch_packet *ring;
        size_t ring_bytes;
        uint32_t ring_packets;
        void *eop;
        void *ctx_save;
        size_t ctx_save_bytes;
        void *kernarg;
        uint32_t gpu_id;
        uint32_t priority;
        uint32_t queue_id;
        uint64_t doorbell_offset;
        uint64_t *doorbell;
        uint32_t *completion_strobe;
        uint32_t *node_strobe;
        uint64_t write_index;      /* producer's copy of write_dispatch_id */
};

static size_t page_align(size_t n)
{
        return (n + PAGE_SIZE_BYTES - 1) & ~(size_t)(PAGE_SIZE_BYTES - 1);
}

static void *map_anonymous(size_t bytes)
{
        /* NORESERVE: the ctx-save area is large and mostly never touched. */
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

        return p == MAP_FAILED ? NULL : p;
}

static void unmap(void *p, size_t bytes)
{
        if (p)
                munmap(p, bytes);
}

static void amd_queue_free(struct emu_aql_queue *q)
{
        if (!q->amd_queue_in_gtt)
                free(q->amd_queue);
        else if (q->amd_queue)
                (void)emu_system_memory_free(q->rt, q->gpu_index, q->amd_queue, PAGE_SIZE_BYTES, q->amd_queue_handle);
}

static void queue_free(struct emu_aql_queue *q)
{
        amd_queue_free(q);
        unmap(q->ring, q->ring_bytes);
        unmap(q->eop, EOP_BUFFER_SIZE);
        unmap(q->ctx_save, q->ctx_save_bytes);
        free(q->kernarg);
        free(q);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct emu_aql_queue *, queue_free);

struct ctx_save_layout {
        uint32_t ctx_save_restore_size; /* per XCC, what CREATE_QUEUE is told */
        uint32_t ctl_stack_size;
        size_t total_bytes;             /* all XCCs, debugger areas included */
};

static int ctx_save_layout(const struct emu_gpu_info *gpu, struct ctx_save_layout *ret)
{
        uint64_t waves = (uint64_t)gpu->cu_count * gpu->waves_per_cu;
        uint64_t ctl = page_align(waves * CTL_STACK_BYTES_PER_WAVE + CTL_STACK_HEADER_BYTES);
        uint64_t ctx = page_align(ctl + (uint64_t)gpu->cu_count * WG_CONTEXT_BYTES_PER_CU);
        uint64_t debug = page_align(waves * DEBUG_BYTES_PER_WAVE);

        if (ctx > UINT32_MAX)
                return -E2BIG;
        *ret = (struct ctx_save_layout){
                .ctx_save_restore_size = (uint32_t)ctx,
                .ctl_stack_size = (uint32_t)ctl,
                .total_bytes = (ctx + debug) * gpu->num_xcc,
        };
        return 0;
}

static bool is_power_of_two(uint32_t v)
{
        return v && !(v & (v - 1));
}

/* The amd_queue_t: a page of GTT where ROCr would make it one, else paged memory. */
static int amd_queue_allocate(struct emu_aql_queue *q)
{
        void *p;
        int r;

        _Static_assert(sizeof(*q->amd_queue) <= PAGE_SIZE_BYTES, "amd_queue_t fits a page");
        if (!emu_runtime_queue_object_in_gtt(q->rt, q->gpu_index)) {
                q->amd_queue = aligned_alloc(AMD_QUEUE_ALIGN, sizeof(*q->amd_queue));
                return q->amd_queue ? 0 : -ENOMEM;
        }
        r = emu_system_memory_alloc(q->rt, q->gpu_index, PAGE_SIZE_BYTES, &p, &q->amd_queue_handle);
        if (r < 0)
                return r;
        q->amd_queue = p;
        q->amd_queue_in_gtt = true;
        return 0;
}

/* Everything in our own memory that CREATE_QUEUE points at. */
static int queue_allocate(struct emu_aql_queue *q, const struct emu_gpu_info *gpu,
                          struct ctx_save_layout *layout)
{
        int r = ctx_save_layout(gpu, layout);

        if (r < 0)
                return r;
        r = amd_queue_allocate(q);
        if (r < 0)
                return r;
        q->ring_bytes = (size_t)q->ring_packets * EMU_AQL_PACKET_SIZE;
        q->ring = map_anonymous(q->ring_bytes);
        q->eop = map_anonymous(EOP_BUFFER_SIZE);
        q->ctx_save_bytes = layout->total_bytes;
        q->ctx_save = map_anonymous(q->ctx_save_bytes);
        q->kernarg = aligned_alloc(64, KERNARG_BYTES);
        if (!q->amd_queue || !q->ring || !q->eop || !q->ctx_save || !q->kernarg)
                return -ENOMEM;
        memset(q->amd_queue, 0, sizeof(*q->amd_queue));
        memset(q->kernarg, 0, KERNARG_BYTES);
        /* As ROCr does: every slot starts INVALID so the packet processor
         * never takes a half-written packet for a real one. */
        for (uint32_t i = 0; i < q->ring_packets; i++)
                q->ring[i].header = EMU_AQL_PACKET_TYPE_INVALID;
        return 0;
}

/* Finds the queue's doorbell and strobes in its GPU's frame. Caller holds rt->lock. */
static int attach_doorbell(struct emu_aql_queue *q, unsigned gpu_index,
                           const struct kfd_ioctl_create_queue_args *created)
{
        uint64_t in_frame = created->doorbell_offset & (EMU_DOORBELL_FRAME_SIZE - 1);
        uint64_t slot = in_frame / EMU_DOORBELL_SIZE;
        void *frame;
        int r;

        if (slot >= EMU_DOORBELL_SLOTS)
                return -EBADMSG;
        r = emu_doorbell_frame(q->rt, gpu_index, created->doorbell_offset, &frame);
        if (r < 0)
                return r;
        q->queue_id = created->queue_id;
        q->doorbell_offset = created->doorbell_offset;
        q->doorbell = (uint64_t *)(void *)((char *)frame + in_frame);
        q->completion_strobe = (uint32_t *)(void *)((char *)frame + EMU_COMPLETION_STROBE_OFFSET +
                                                    4 * slot);
        q->node_strobe = (uint32_t *)(void *)((char *)frame + EMU_NODE_STROBE_OFFSET);
        return 0;
}

int emu_aql_queue_create(struct emu_runtime *rt, const struct emu_queue_options *options,
                         struct emu_aql_queue **ret_queue)
{
        _cleanup_(queue_freep) struct emu_aql_queue *q = NULL;
        struct ctx_save_layout layout;
        struct kfd_ioctl_create_queue_args args;
        int index, r;

        if (!is_power_of_two(options->ring_packets) || options->ring_packets < EMU_QUEUE_MIN_PACKETS ||
            options->ring_packets > EMU_QUEUE_MAX_PACKETS || options->priority > KFD_MAX_QUEUE_PRIORITY)
                return -EINVAL;
        index = emu_runtime_find_gpu(rt, options->gpu_id);
        if (index < 0)
                return index;
        q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        q->rt = rt;
        q->gpu_id = options->gpu_id;
        q->priority = options->priority;
        q->ring_packets = options->ring_packets;
        q->gpu_index = (unsigned)index;
        r = queue_allocate(q, &rt->gpus[index], &layout);
        if (r < 0)
                return r;

        args = (struct kfd_ioctl_create_queue_args){
                .ring_base_address = (uintptr_t)q->ring,
                .write_pointer_address = (uintptr_t)&q->amd_queue->write_dispatch_id,
                .read_pointer_address = (uintptr_t)&q->amd_queue->read_dispatch_id,
                .ring_size = (uint32_t)q->ring_bytes,
                .gpu_id = q->gpu_id,
                .queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
                .queue_percentage = KFD_MAX_QUEUE_PERCENTAGE,
                .queue_priority = q->priority,
                .eop_buffer_address = (uintptr_t)q->eop,
                .eop_buffer_size = EOP_BUFFER_SIZE,
                .ctx_save_restore_address = (uintptr_t)q->ctx_save,
                .ctx_save_restore_size = layout.ctx_save_restore_size,
                .ctl_stack_size = layout.ctl_stack_size,
        };

        pthread_mutex_lock(&rt->lock);
        r = emu_kfd_ioctl(rt->kfd_fd, AMDKFD_IOC_CREATE_QUEUE, &args);
        if (r >= 0) {
                r = attach_doorbell(q, (unsigned)index, &args);
                if (r < 0) {
                        struct kfd_ioctl_destroy_queue_args destroy = {.queue_id = args.queue_id};

                        /* Without a doorbell the queue is useless; give it back. */
                        emu_kfd_ioctl(rt->kfd_fd, AMDKFD_IOC_DESTROY_QUEUE, &destroy);
                } else {
                        q->amd_queue->id = rt->next_hsa_queue_id++;
                }
        }
        pthread_mutex_unlock(&rt->lock);
        if (r < 0)
                return r;

        q->amd_queue->type = AMD_HSA_QUEUE_TYPE_MULTI;
        q->amd_queue->features = AMD_HSA_QUEUE_FEATURE_KERNEL_DISPATCH;
        q->amd_queue->base_address = (uintptr_t)q->ring;
        /* There are no HSA signals here; the doorbell's address stands in
         * for the doorbell signal handle. */
        q->amd_queue->doorbell_signal = (uintptr_t)q->doorbell;
        q->amd_queue->size = q->ring_packets;
        *ret_queue = TAKE_PTR(q);
        return 0;
}

int emu_aql_queue_destroy(struct emu_aql_queue *q)
{
        struct kfd_ioctl_destroy_queue_args args = {.queue_id = q->queue_id};
        int r = emu_kfd_ioctl(q->rt->kfd_fd, AMDKFD_IOC_DESTROY_QUEUE, &args);

        if (r < 0)
                return r;
        queue_free(q);
        return 0;
}

static long futex(uint32_t *addr, int op, uint32_t val, const struct timespec *timeout)
{
        /* Not FUTEX_PRIVATE: the doorbell frame is shared with the GPU model's process. */
        return syscall(SYS_futex, addr, op, val, timeout, NULL, 0);
}

static int64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int emu_signal_timestamps(const struct emu_amd_signal *signal, uint64_t *ret_start_ns, uint64_t *ret_end_ns)
{
        /* The GPU stamps before it decrements: a value of 0 seen with
         * acquire orders the stamps' reads after their writes. */
        if (__atomic_load_n(&signal->value, __ATOMIC_ACQUIRE) > 0)
                return -EBUSY;
        *ret_start_ns = signal->start_ts;
        *ret_end_ns = signal->end_ts;
        return 0;
}

uint64_t emu_aql_queue_read_index(const struct emu_aql_queue *q)
{
        return __atomic_load_n(&q->amd_queue->read_dispatch_id, __ATOMIC_ACQUIRE);
}

uint64_t emu_aql_queue_write_index(const struct emu_aql_queue *q)
{
        /* May be read by another thread than the one dispatching. */
        return __atomic_load_n(&q->amd_queue->write_dispatch_id, __ATOMIC_ACQUIRE);
}

int emu_aql_queue_write(struct emu_aql_queue *q, const struct emu_kernel_launch *launch,
                        struct emu_dispatch_record *ret_record)
{
        uint64_t index = q->write_index;
        uint64_t read_index = emu_aql_queue_read_index(q);
        struct emu_aql_dispatch_packet *p;
        uint16_t header = AQL_DISPATCH_HEADER, setup = AQL_DISPATCH_DIMENSIONS;

        if (launch->workgroups == 0 || launch->workgroup_size == 0 || launch->workgroup_size > 1024)
                return -EINVAL;
        if (index - read_index >= q->ring_packets)
                return -EAGAIN;
        p = &q->ring[index & (q->ring_packets - 1)];
        /* 1. the body, then the header last with release, so the packet
         * processor never sees a valid header on a half-written packet. */
        p->workgroup_size_x = launch->workgroup_size;
        p->workgroup_size_y = 1;
        p->workgroup_size_z = 1;
        p->reserved0 = 0;
        p->grid_size_x = launch->workgroups;
        p->grid_size_y = 1;
        p->grid_size_z = 1;
        p->private_segment_size = 0;
        p->group_segment_size = 0;
        p->kernel_object = launch->duration_ns;
        p->kernarg_address = (uintptr_t)q->kernarg;
        p->reserved2 = 0;
        p->completion_signal = (uintptr_t)launch->completion_signal;
        if (launch->completion_signal) {
                struct emu_amd_signal *sig = launch->completion_signal;

                *sig = (struct emu_amd_signal){.kind = EMU_AMD_SIGNAL_KIND_USER};
                /* Armed before the packet can be seen: the GPU's decrement
                 * must find 1. */
                __atomic_store_n(&sig->value, 1, __ATOMIC_RELEASE);
        }
        __atomic_store_n((uint32_t *)(void *)p, (uint32_t)header | (uint32_t)setup << 16,
                         __ATOMIC_RELEASE);
        q->write_index = index + 1;

        if (ret_record)
                *ret_record = (struct emu_dispatch_record){
                        .index = index,
                        .read_index = read_index,
                        .header = header,
                        .setup = setup,
                        .kernel_object = p->kernel_object,
                        .kernarg_address = p->kernarg_address,
                        .completion_signal = p->completion_signal,
                        .grid = {p->grid_size_x, p->grid_size_y, p->grid_size_z},
                        .workgroup = {p->workgroup_size_x, p->workgroup_size_y, p->workgroup_size_z},
                        .private_segment_size = p->private_segment_size,
                        .group_segment_size = p->group_segment_size,
                };
        return 0;
}

int emu_aql_queue_write_barrier_and(struct emu_aql_queue *q, const struct emu_amd_signal *dependency,
                                    uint64_t *ret_index)
{
        uint64_t index = q->write_index;
        struct emu_aql_barrier_and_packet *p;

        if (!dependency)
                return -EINVAL;
        if (index - emu_aql_queue_read_index(q) >= q->ring_packets)
                return -EAGAIN;
        _Static_assert(sizeof(*p) == sizeof(*q->ring), "one AQL slot");
        p = (struct emu_aql_barrier_and_packet *)(void *)&q->ring[index & (q->ring_packets - 1)];
        /* The body, then the header last with release, as for a dispatch. */
        p->reserved0 = 0;
        p->reserved1 = 0;
        memset(p->dep_signal, 0, sizeof(p->dep_signal));
        p->dep_signal[0] = (uintptr_t)dependency;
        p->reserved2 = 0;
        p->completion_signal = 0;
        __atomic_store_n(&p->header, (uint16_t)AQL_BARRIER_AND_HEADER, __ATOMIC_RELEASE);
        q->write_index = index + 1;
        *ret_index = index;
        return 0;
}

int64_t emu_aql_queue_publish(struct emu_aql_queue *q)
{
        uint64_t index = q->write_index;
        /* 2.-3. the write index, then the doorbell. The time is taken first:
         * a watcher can see the index move the moment it is stored. */
        int64_t publish_ns = now_ns();

        __atomic_store_n(&q->amd_queue->write_dispatch_id, index, __ATOMIC_RELEASE);
        __atomic_store_n(q->doorbell, index, __ATOMIC_RELEASE);
        /* 4. the emulator's node strobe (emu-hw.h): kfdemu cannot trap the
         * doorbell store, so the GPU model sleeps on this word instead. */
        __atomic_fetch_add(q->node_strobe, 1, __ATOMIC_RELEASE);
        futex(q->node_strobe, FUTEX_WAKE, INT_MAX, NULL);
        return publish_ns;
}

int emu_aql_queue_dispatch(struct emu_aql_queue *q, const struct emu_kernel_launch *launch,
                           struct emu_dispatch_record *ret_record)
{
        struct emu_dispatch_record rec;
        int r = emu_aql_queue_write(q, launch, &rec);

        if (r < 0)
                return r;
        rec.publish_ns = emu_aql_queue_publish(q);
        if (ret_record)
                *ret_record = rec;
        return 0;
}

static bool packet_consumed(const struct emu_aql_queue *q, const void *index)
{
        return emu_aql_queue_read_index(q) > *(const uint64_t *)index;
}

static bool signal_completed(const struct emu_aql_queue *q, const void *signal)
{
        return __atomic_load_n(&((const struct emu_amd_signal *)signal)->value, __ATOMIC_ACQUIRE) <= 0;
}

/* Waits on the queue's completion strobe, which the GPU bumps after each
 * read-index report and each completion, until done(q, arg). */
static int wait_completion_strobe(struct emu_aql_queue *q, bool (*done)(const struct emu_aql_queue *, const void *),
                                  const void *arg, int64_t timeout_ns)
{
        int64_t deadline = now_ns() + timeout_ns;

        for (;;) {
                /* Read the strobe before the condition: a completion between
                 * the two changes the strobe, and the futex then returns at once. */
                uint32_t strobe = __atomic_load_n(q->completion_strobe, __ATOMIC_ACQUIRE);
                int64_t left;
                struct timespec ts;

                if (done(q, arg))
                        return 0;
                left = deadline - now_ns();
                if (left <= 0)
                        return -ETIMEDOUT;
                ts = (struct timespec){.tv_sec = left / 1000000000, .tv_nsec = left % 1000000000};
                if (futex(q->completion_strobe, FUTEX_WAIT, strobe, &ts) < 0 && errno == EINTR)
                        return -EINTR;
        }
}

int emu_aql_queue_wait(struct emu_aql_queue *q, uint64_t index, int64_t timeout_ns)
{
        return wait_completion_strobe(q, packet_consumed, &index, timeout_ns);
}

int emu_aql_queue_wait_signal(struct emu_aql_queue *q, const struct emu_amd_signal *signal, int64_t timeout_ns)
{
        return wait_completion_strobe(q, signal_completed, signal, timeout_ns);
}

void emu_aql_queue_identity(const struct emu_aql_queue *q, struct emu_queue_identity *ret)
{
        *ret = (struct emu_queue_identity){
                .queue_id = q->queue_id,
                .gpu_id = q->gpu_id,
                .priority = q->priority,
                .ring_packets = q->ring_packets,
                .hsa_queue_id = q->amd_queue->id,
                .amd_queue = (uintptr_t)q->amd_queue,
                .ring = (uintptr_t)q->ring,
                .write_pointer = (uintptr_t)&q->amd_queue->write_dispatch_id,
                .read_pointer = (uintptr_t)&q->amd_queue->read_dispatch_id,
                .ctx_save = (uintptr_t)q->ctx_save,
                .doorbell_offset = q->doorbell_offset,
                .amd_queue_in_gtt = q->amd_queue_in_gtt,
        };
}
