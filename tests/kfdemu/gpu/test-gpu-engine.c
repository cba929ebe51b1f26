/* SPDX-License-Identifier: MIT */
/*
 * The model thread end to end, with this test program as the GPU
 * application: its doorbell frame is mapped from the aperture as kfd_mmap
 * hands it out, its AQL packets and read index live in its own memory and
 * are read and written with process_vm_readv/writev, as for any client.
 */
#include <limits.h>
#include <linux/futex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "emu-hw.h"
#include "emu-signal.h"
#include "gpu-internal.h"

#define MS 1000000ull
#define RING_SLOTS 64u

struct fixture {
        char root[PATH_MAX];
        struct emu_node node;
        struct emu_process process;
        struct emu_queue queue;
        struct emu_aql_dispatch_packet ring[RING_SLOTS] __attribute__((aligned(4096)));
        uint64_t write_dispatch_id;
        uint64_t read_dispatch_id;
        uint8_t *frame;
        uint64_t written;
};

static uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calls the model thread completes (emu_gpu_complete_after). */
static struct {
        long ret;
        uint64_t at;
        uint32_t done;
} completed;

void emu_call_complete(struct emu_call *call, long ret)
{
        completed.ret = ret;
        completed.at = now_ns();
        __atomic_store_n(&completed.done, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &completed.done, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* The event interrupts the model thread raises (emu_signal_event_interrupt). */
static struct {
        uint32_t event_id;
        unsigned count;
} interrupts;

void emu_signal_event_interrupt(struct emu_process *p, uint32_t event_id)
{
        interrupts.event_id = event_id;
        interrupts.count++;
}

static void futex_wait_until(uint32_t *word, uint32_t seen, uint64_t deadline)
{
        uint64_t now = now_ns();
        struct timespec ts;

        if (now >= deadline)
                return;
        ts = (struct timespec){ .tv_sec = (time_t)((deadline - now) / 1000000000u),
                                .tv_nsec = (long)((deadline - now) % 1000000000u) };
        syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, NULL, 0);
}

/* kfd_mmap of the doorbell offset: the process's frame page, then the
 * node strobe page, in one 8 KiB mapping. */
static uint8_t *map_frame(struct fixture *fx)
{
        struct emu_mmap_result segs;
        uint8_t *frame = mmap(NULL, EMU_DOORBELL_FRAME_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        assert_true(frame != MAP_FAILED);
        pthread_mutex_lock(&fx->node.lock);
        assert_int_equal(emu_gpu_doorbell_segments(&fx->node.gpus[0], &fx->process, &segs), 0);
        assert_int_equal(segs.n_segments, 2);
        for (unsigned i = 0, off = 0; i < segs.n_segments; off += (unsigned)segs.segments[i].length, i++)
                assert_true(mmap(frame + off, segs.segments[i].length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                                 segs.segments[i].memfd, (off_t)segs.segments[i].memfd_offset) != MAP_FAILED);
        pthread_mutex_unlock(&fx->node.lock);
        return frame;
}

/* A node whose GPU has the default configuration, changed by `configure`
 * (may be NULL) before the model starts. */
static int setup_configured(void **state, void (*configure)(struct emu_gpu_config *cfg))
{
        struct fixture *fx = aligned_alloc(4096, (sizeof(struct fixture) + 4095) / 4096 * 4096);

        memset(fx, 0, sizeof(*fx));
        snprintf(fx->root, sizeof(fx->root), "/tmp/kfdemu-gpu-engine-%d", (int)getpid());
        assert_int_equal(mkdir(fx->root, 0700), 0);
        pthread_mutex_init(&fx->node.lock, NULL);
        fx->node.n_gpus = fx->node.cfg.n_gpus = 1;
        snprintf(fx->node.cfg.root, sizeof(fx->node.cfg.root), "%s", fx->root);
        fx->node.gpus[0].node = &fx->node;
        emu_gpu_config_default(0, &fx->node.gpus[0].cfg);
        if (configure)
                configure(&fx->node.gpus[0].cfg);
        assert_int_equal(emu_gpu_start(&fx->node), 0);

        fx->process = (struct emu_process){ .node = &fx->node, .tgid = getpid(), .pasid = 1, .n_pdds = 1 };
        fx->process.pdds[0].gpu = &fx->node.gpus[0];
        fx->node.processes = &fx->process;
        fx->frame = map_frame(fx);
        fx->queue = (struct emu_queue){
                .process = &fx->process,
                .gpu = &fx->node.gpus[0],
                .type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
                .ring_base_address = (uintptr_t)fx->ring,
                .ring_size = sizeof(fx->ring),
                .write_pointer_address = (uintptr_t)&fx->write_dispatch_id,
                .read_pointer_address = (uintptr_t)&fx->read_dispatch_id,
                .doorbell_slot = 3,
        };
        fx->process.queues = &fx->queue;
        pthread_mutex_lock(&fx->node.lock);
        assert_int_equal(emu_gpu_queue_created(&fx->queue), 0);
        pthread_mutex_unlock(&fx->node.lock);
        completed.done = 0;
        *state = fx;
        return 0;
}

static int setup(void **state)
{
        return setup_configured(state, NULL);
}

static void constant_cost(struct emu_gpu_config *cfg)
{
        cfg->preempt_model = EMU_PREEMPT_MODEL_CONSTANT;
}

static int setup_constant_cost(void **state)
{
        return setup_configured(state, constant_cost);
}

static void read_index_at_dispatch(struct emu_gpu_config *cfg)
{
        cfg->read_index_mode = EMU_READ_INDEX_AT_DISPATCH;
}

static int setup_read_index_at_dispatch(void **state)
{
        return setup_configured(state, read_index_at_dispatch);
}

static void read_index_master_xcc(struct emu_gpu_config *cfg)
{
        cfg->read_index_mode = EMU_READ_INDEX_MASTER_XCC;
        cfg->num_xcc = 4;
        cfg->master_xcc_lead_percent = 40;
}

static int setup_read_index_master_xcc(void **state)
{
        return setup_configured(state, read_index_master_xcc);
}

static int teardown(void **state)
{
        struct fixture *fx = *state;
        char cmd[PATH_MAX + 16];

        pthread_mutex_lock(&fx->node.lock);
        emu_gpu_queue_destroyed(&fx->queue);
        pthread_mutex_unlock(&fx->node.lock);
        emu_gpu_stop(&fx->node);
        munmap(fx->frame, EMU_DOORBELL_FRAME_SIZE);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->root);
        assert_int_equal(system(cmd), 0);
        pthread_mutex_destroy(&fx->node.lock);
        free(fx);
        return 0;
}

/* What ROCr does to launch a kernel, plus the emulator's strobe (emu-hw.h);
 * `signal` (may be NULL, else zeroed by the caller) is the packet's
 * completion signal. */
static void submit_signalled(struct fixture *fx, uint16_t type, uint64_t duration_ns, uint32_t workgroups,
                             struct emu_amd_signal *signal)
{
        struct emu_aql_dispatch_packet *p = &fx->ring[fx->written % RING_SLOTS];
        uint32_t *strobe = (uint32_t *)(fx->frame + EMU_NODE_STROBE_OFFSET);

        memset((uint8_t *)p + 2, 0, sizeof(*p) - 2);
        p->workgroup_size_x = 256;
        p->grid_size_x = workgroups;
        p->kernel_object = duration_ns;
        if (signal) {
                /* The caller's event mailbox and id, if any, stay. */
                signal->kind = EMU_AMD_SIGNAL_KIND_USER;
                signal->value = 1;
                p->completion_signal = (uintptr_t)signal;
        }
        __atomic_store_n(&p->header, type, __ATOMIC_RELEASE);
        fx->written++;
        __atomic_store_n(&fx->write_dispatch_id, fx->written, __ATOMIC_RELEASE);
        __atomic_store_n((uint64_t *)(fx->frame + EMU_DOORBELL_SIZE * fx->queue.doorbell_slot), fx->written,
                         __ATOMIC_RELEASE);
        __atomic_add_fetch(strobe, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, strobe, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* A barrier of `type` (BARRIER_AND or BARRIER_OR) on the given dependencies. */
static void submit_barrier_of(struct fixture *fx, uint16_t type, struct emu_amd_signal *const *deps, size_t n_deps)
{
        struct emu_aql_barrier_and_packet *p = (struct emu_aql_barrier_and_packet *)&fx->ring[fx->written % RING_SLOTS];

        memset((uint8_t *)p + 2, 0, sizeof(*p) - 2);
        for (size_t i = 0; i < n_deps; i++)
                p->dep_signal[i] = (uintptr_t)deps[i];
        __atomic_store_n(&p->header, type, __ATOMIC_RELEASE);
        fx->written++;
        __atomic_store_n(&fx->write_dispatch_id, fx->written, __ATOMIC_RELEASE);
        __atomic_store_n((uint64_t *)(fx->frame + EMU_DOORBELL_SIZE * fx->queue.doorbell_slot), fx->written,
                         __ATOMIC_RELEASE);
        __atomic_add_fetch((uint32_t *)(fx->frame + EMU_NODE_STROBE_OFFSET), 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, fx->frame + EMU_NODE_STROBE_OFFSET, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* A barrier-AND that waits for `dependency` to read 0. */
static void submit_barrier(struct fixture *fx, struct emu_amd_signal *dependency)
{
        submit_barrier_of(fx, EMU_AQL_PACKET_TYPE_BARRIER_AND, &dependency, 1);
}

static void submit(struct fixture *fx, uint16_t type, uint64_t duration_ns, uint32_t workgroups)
{
        submit_signalled(fx, type, duration_ns, workgroups, NULL);
}

/* Wait on the slot's completion strobe for the read index to reach `index`. */
static bool wait_read_index(struct fixture *fx, uint64_t index, uint64_t timeout_ns)
{
        uint32_t *strobe = (uint32_t *)(fx->frame + EMU_COMPLETION_STROBE_OFFSET + 4 * fx->queue.doorbell_slot);
        uint64_t deadline = now_ns() + timeout_ns;

        for (;;) {
                uint32_t seen = __atomic_load_n(strobe, __ATOMIC_ACQUIRE);

                if (__atomic_load_n(&fx->read_dispatch_id, __ATOMIC_ACQUIRE) >= index)
                        return true;
                if (now_ns() >= deadline)
                        return false;
                futex_wait_until(strobe, seen, deadline);
        }
}

/* Wait for the model thread to have looked at the doorbell at `index`. */
static bool wait_doorbell_seen(struct fixture *fx, uint64_t index, uint64_t timeout_ns)
{
        uint64_t deadline = now_ns() + timeout_ns;

        for (;;) {
                uint64_t seen;

                pthread_mutex_lock(&fx->node.lock);
                seen = fx->queue.hw->doorbell_seen;
                pthread_mutex_unlock(&fx->node.lock);
                if (seen >= index)
                        return true;
                if (now_ns() >= deadline)
                        return false;
                futex_wait_until(&(uint32_t){ 0 }, 0, now_ns() + 1 * MS);
        }
}

static void test_kernel_runs_for_its_duration(void **state)
{
        struct fixture *fx = *state;
        uint64_t t0 = now_ns();

        submit(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 3 * MS, 64);
        assert_true(wait_read_index(fx, 1, 1000 * MS));
        assert_true(now_ns() - t0 >= 3 * MS);
        assert_int_equal(fx->read_dispatch_id, 1);
}

static void test_barrier_completes_after_the_kernel_before_it(void **state)
{
        struct fixture *fx = *state;
        uint64_t t0 = now_ns();

        submit(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 2 * MS, 64);
        submit(fx, EMU_AQL_PACKET_TYPE_BARRIER_AND, 0, 0);
        assert_true(wait_read_index(fx, 2, 1000 * MS));
        assert_true(now_ns() - t0 >= 2 * MS);
}

/* suspend_single_queue / resume_single_queue: the flag alone. */
static void flip_suspended(struct fixture *fx, bool suspended)
{
        pthread_mutex_lock(&fx->node.lock);
        fx->queue.is_suspended = suspended;
        emu_gpu_queue_suspension_changed(&fx->queue);
        pthread_mutex_unlock(&fx->node.lock);
}

static uint64_t hws_preempt(struct fixture *fx, uint32_t grace_period)
{
        uint64_t cost;

        pthread_mutex_lock(&fx->node.lock);
        cost = emu_gpu_hws_preempt(&fx->node.gpus[0], grace_period);
        pthread_mutex_unlock(&fx->node.lock);
        return cost;
}

/* What SUSPEND_QUEUES / RESUME_QUEUES do on an HWS GPU: the flag, then
 * one execute_queues_cpsch. */
static void set_suspended(struct fixture *fx, bool suspended)
{
        flip_suspended(fx, suspended);
        hws_preempt(fx, 0);
}

static void test_suspended_queue_does_not_run(void **state)
{
        struct fixture *fx = *state;
        uint64_t resumed;

        set_suspended(fx, true);
        submit(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 1 * MS, 64);
        assert_false(wait_read_index(fx, 1, 30 * MS));
        resumed = now_ns();
        set_suspended(fx, false);
        assert_true(wait_read_index(fx, 1, 1000 * MS));
        assert_true(now_ns() - resumed >= 1 * MS);
}

static void test_suspension_mid_kernel_keeps_progress(void **state)
{
        struct fixture *fx = *state;
        uint64_t t0 = now_ns(), suspended_for;

        /* Long enough to be still running however loaded the machine is. */
        submit(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 200 * MS, 64);
        futex_wait_until(&(uint32_t){ 0 }, 0, t0 + 5 * MS);
        set_suspended(fx, true);
        suspended_for = now_ns();
        assert_false(wait_read_index(fx, 1, 40 * MS));
        suspended_for = now_ns() - suspended_for;
        set_suspended(fx, false);
        assert_true(wait_read_index(fx, 1, 1000 * MS));
        /* 200 ms of work plus the time it stood still, plus the restore. */
        assert_true(now_ns() - t0 >= 200 * MS + suspended_for);
}

/* A barrier-AND whose dependency is not satisfied holds the read index
 * below the write index while the GPU has nothing to run; it completes
 * once the signal reads 0 (here stored by the host, as hsa_signal_store
 * would). */
static void test_barrier_waits_for_its_dependency(void **state)
{
        struct fixture *fx = *state;
        struct emu_amd_signal dependency = { .kind = EMU_AMD_SIGNAL_KIND_USER, .value = 1 };

        submit_barrier(fx, &dependency);
        assert_false(wait_read_index(fx, 1, 30 * MS));
        assert_int_equal(fx->write_dispatch_id, 1);
        __atomic_store_n(&dependency.value, 0, __ATOMIC_RELEASE);
        assert_true(wait_read_index(fx, 1, 1000 * MS));
}

/* A barrier-OR holds the read index until one of its dependencies reads 0;
 * a zero handle in it is never met. */
static void test_barrier_or_waits_for_one_dependency(void **state)
{
        struct fixture *fx = *state;
        struct emu_amd_signal first = { .kind = EMU_AMD_SIGNAL_KIND_USER, .value = 1 };
        struct emu_amd_signal second = { .kind = EMU_AMD_SIGNAL_KIND_USER, .value = 1 };
        struct emu_amd_signal *deps[] = { &first, NULL, &second };

        submit_barrier_of(fx, EMU_AQL_PACKET_TYPE_BARRIER_OR, deps, 3);
        assert_false(wait_read_index(fx, 1, 30 * MS));
        __atomic_store_n(&second.value, 0, __ATOMIC_RELEASE);
        assert_true(wait_read_index(fx, 1, 1000 * MS));
        assert_int_equal(__atomic_load_n(&first.value, __ATOMIC_ACQUIRE), 1);
}

/* ReadIndexAdvance=dispatch: the index moves when the CP has launched the
 * dispatch, long before its waves end (its completion signal is still 1). */
static void test_read_index_advances_at_dispatch(void **state)
{
        struct fixture *fx = *state;
        struct emu_amd_signal signal = { 0 };
        uint64_t t0 = now_ns();

        submit_signalled(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 300 * MS, 64, &signal);
        assert_true(wait_read_index(fx, 1, 1000 * MS));
        assert_true(now_ns() - t0 < 300 * MS);
        assert_int_equal(__atomic_load_n(&signal.value, __ATOMIC_ACQUIRE), 1);
        assert_true(wait_read_index(fx, 1, 1000 * MS));
}

/* ReadIndexAdvance=master-xcc: the index moves when XCC 0's share is done
 * (here 40% of the kernel's time before the slowest XCC), not before. */
static void test_read_index_advances_with_the_master_xcc(void **state)
{
        struct fixture *fx = *state;
        struct emu_amd_signal signal = { 0 };
        uint64_t t0 = now_ns();

        submit_signalled(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 500 * MS, 64, &signal);
        assert_true(wait_read_index(fx, 1, 2000 * MS));
        assert_true(now_ns() - t0 >= 300 * MS);
        assert_int_equal(__atomic_load_n(&signal.value, __ATOMIC_ACQUIRE), 1);
        while (__atomic_load_n(&signal.value, __ATOMIC_ACQUIRE) != 0 && now_ns() - t0 < 2000 * MS)
                futex_wait_until(&(uint32_t){ 0 }, 0, now_ns() + 5 * MS);
        assert_int_equal(signal.end_ts - signal.start_ts, 500 * MS);
}

/* SUSPEND_QUEUES flips the flag before the unmap (suspend_single_queue,
 * then execute_queues_cpsch): the unmap still saves the waves the queue
 * had, even with nothing else on the device. */
static void test_suspend_charges_the_save_of_the_leaving_waves(void **state)
{
        struct fixture *fx = *state;
        const struct emu_gpu_config *cfg = &fx->node.gpus[0].cfg;

        submit(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 200 * MS, 64);
        assert_true(wait_doorbell_seen(fx, 1, 1000 * MS));
        flip_suspended(fx, true);
        assert_int_equal(hws_preempt(fx, 0), (uint64_t)(cfg->preempt_us + cfg->cwsr_save_us) * 1000);
}

/* RESUME_QUEUES brings the saved waves back with the remap: no save (none
 * is resident), and the kernel waits for its restore after the remap. */
static void test_resume_charges_a_restore_not_a_save(void **state)
{
        struct fixture *fx = *state;
        const struct emu_gpu_config *cfg = &fx->node.gpus[0].cfg;
        uint64_t resumed, cost;

        /* Long enough to be still running however loaded the machine is. */
        submit(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 200 * MS, 64);
        assert_true(wait_doorbell_seen(fx, 1, 1000 * MS));
        set_suspended(fx, true);
        futex_wait_until(&(uint32_t){ 0 }, 0, now_ns() + 5 * MS);
        flip_suspended(fx, false);
        resumed = now_ns();
        cost = hws_preempt(fx, 0);
        assert_int_equal(cost, (uint64_t)cfg->preempt_us * 1000);
        assert_true(wait_read_index(fx, 1, 1000 * MS));
        assert_true(now_ns() - resumed >= cost + (uint64_t)cfg->cwsr_restore_us * 1000);
}

static void test_hws_preemption_stalls_and_reports_its_cost(void **state)
{
        struct fixture *fx = *state;
        const struct emu_gpu_config *cfg = &fx->node.gpus[0].cfg;
        uint64_t t0 = now_ns(), cost;

        /* Running when the preemption comes: the GPU catches up with the
         * doorbell first, as a CP would have long before. */
        submit(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 100 * MS, 64);
        cost = hws_preempt(fx, 0);
        /* The unmap and the context save of the running waves. */
        assert_int_equal(cost, (uint64_t)(cfg->preempt_us + cfg->cwsr_save_us) * 1000);
        assert_true(wait_read_index(fx, 1, 1000 * MS));
        assert_true(now_ns() - t0 >= 100 * MS + cost + (uint64_t)cfg->cwsr_restore_us * 1000);
}

static void test_parked_call_completes_after_its_delay(void **state)
{
        struct fixture *fx = *state;
        struct emu_call call;
        uint64_t t0 = now_ns();

        pthread_mutex_lock(&fx->node.lock);
        emu_gpu_complete_after(&fx->node, &call, 7, 2 * MS);
        pthread_mutex_unlock(&fx->node.lock);
        while (!__atomic_load_n(&completed.done, __ATOMIC_ACQUIRE) && now_ns() - t0 < 1000 * MS)
                futex_wait_until(&completed.done, 0, t0 + 1000 * MS);
        assert_true(completed.done);
        assert_int_equal(completed.ret, 7);
        assert_true(completed.at - t0 >= 2 * MS);
}

static void test_cancelled_call_never_completes(void **state)
{
        struct fixture *fx = *state;
        struct emu_call call;

        pthread_mutex_lock(&fx->node.lock);
        emu_gpu_complete_after(&fx->node, &call, 7, 2 * MS);
        emu_gpu_cancel_completion(&fx->node, &call);
        pthread_mutex_unlock(&fx->node.lock);
        futex_wait_until(&completed.done, 0, now_ns() + 10 * MS);
        assert_false(completed.done);
}

/* A model thread that runs late (a loaded host) must not stretch the
 * modelled timeline: kernels already on the ring run back to back in model
 * time, and only the report of their completion is late. The durations are
 * long so that the two outcomes stay far apart on a loaded host, whose
 * wake-ups can be late by tens of milliseconds: fixed, all three are done
 * as soon as the thread runs again; stretched, the second and third would
 * end 2 x 250 ms after the release. */
static void test_late_thread_keeps_back_to_back_kernels_exact(void **state)
{
        struct fixture *fx = *state;
        uint64_t released;

        submit(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 250 * MS, 64);
        submit(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 250 * MS, 64);
        submit(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 250 * MS, 64);
        /* Let the thread see the three packets, then keep it from running
         * past the end of the first kernel until all three are due. */
        assert_true(wait_doorbell_seen(fx, 3, 1000 * MS));
        pthread_mutex_lock(&fx->node.lock);
        futex_wait_until(&(uint32_t){ 0 }, 0, now_ns() + 800 * MS);
        pthread_mutex_unlock(&fx->node.lock);
        released = now_ns();
        assert_true(wait_read_index(fx, 3, 2000 * MS));
        assert_true(now_ns() - released < 350 * MS);
}

/* The completion signal carries the modelled start and end (emu-signal.h)
 * and is decremented before the read index moves. */
static void test_completion_signal_has_modelled_timestamps(void **state)
{
        struct fixture *fx = *state;
        struct emu_amd_signal kernel = { 0 }, barrier = { 0 };
        uint64_t t0 = now_ns();

        submit_signalled(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 3 * MS, 64, &kernel);
        submit_signalled(fx, EMU_AQL_PACKET_TYPE_BARRIER_AND, 0, 0, &barrier);
        assert_true(wait_read_index(fx, 2, 1000 * MS));
        assert_int_equal(__atomic_load_n(&kernel.value, __ATOMIC_ACQUIRE), 0);
        assert_int_equal(__atomic_load_n(&barrier.value, __ATOMIC_ACQUIRE), 0);
        assert_true(kernel.start_ts >= t0);
        /* Alone on the device: exactly its duration, in model time. */
        assert_int_equal(kernel.end_ts - kernel.start_ts, 3 * MS);
        assert_true(kernel.end_ts <= now_ns());
        /* The barrier completes when the kernel before it has. */
        assert_int_equal(barrier.start_ts, kernel.end_ts);
        assert_int_equal(barrier.end_ts, kernel.end_ts);
}

/* A completion signal with an event mailbox: after the decrement the CP
 * writes the event id to the mailbox and interrupts, once per packet. */
static void test_completion_signal_with_event_interrupts(void **state)
{
        struct fixture *fx = *state;
        uint64_t mailbox = UINT64_MAX;
        struct emu_amd_signal signal = { .event_mailbox_ptr = (uintptr_t)&mailbox, .event_id = 42 };

        interrupts.count = 0;
        submit_signalled(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 1 * MS, 64, &signal);
        assert_true(wait_read_index(fx, 1, 1000 * MS));
        assert_int_equal(__atomic_load_n(&signal.value, __ATOMIC_ACQUIRE), 0);
        assert_int_equal(mailbox, 42);
        assert_int_equal(interrupts.count, 1);
        assert_int_equal(interrupts.event_id, 42);
}

/* A model thread held up for 80 ms reports three 20 ms kernels late, but
 * their timestamps are the modelled timeline: back to back, 60 ms in all. */
static void test_late_thread_leaves_timestamps_exact(void **state)
{
        struct fixture *fx = *state;
        struct emu_amd_signal first = { 0 }, last = { 0 };

        submit_signalled(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 20 * MS, 64, &first);
        submit(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 20 * MS, 64);
        submit_signalled(fx, EMU_AQL_PACKET_TYPE_KERNEL_DISPATCH, 20 * MS, 64, &last);
        assert_true(wait_doorbell_seen(fx, 3, 1000 * MS));
        pthread_mutex_lock(&fx->node.lock);
        futex_wait_until(&(uint32_t){ 0 }, 0, now_ns() + 80 * MS);
        pthread_mutex_unlock(&fx->node.lock);
        assert_true(wait_read_index(fx, 3, 1000 * MS));
        assert_int_equal(first.end_ts - first.start_ts, 20 * MS);
        assert_int_equal(last.end_ts - first.start_ts, 60 * MS);
}

/* The product's CPU budget is measured beside kfdemu: an idle node must
 * not poll. */
static void test_idle_node_uses_no_cpu(void **state)
{
        struct timespec a, b;
        uint64_t used;

        (void)state;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
        futex_wait_until(&(uint32_t){ 0 }, 0, now_ns() + 200 * MS);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
        used = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)(b.tv_nsec - a.tv_nsec);
        assert_true(used < 5 * MS);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_kernel_runs_for_its_duration, setup, teardown),
                cmocka_unit_test_setup_teardown(test_barrier_completes_after_the_kernel_before_it, setup, teardown),
                cmocka_unit_test_setup_teardown(test_suspended_queue_does_not_run, setup, teardown),
                cmocka_unit_test_setup_teardown(test_suspension_mid_kernel_keeps_progress, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hws_preemption_stalls_and_reports_its_cost, setup_constant_cost,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_suspend_charges_the_save_of_the_leaving_waves,
                                                setup_constant_cost, teardown),
                cmocka_unit_test_setup_teardown(test_resume_charges_a_restore_not_a_save, setup_constant_cost,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_barrier_waits_for_its_dependency, setup, teardown),
                cmocka_unit_test_setup_teardown(test_barrier_or_waits_for_one_dependency, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_index_advances_at_dispatch, setup_read_index_at_dispatch,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_read_index_advances_with_the_master_xcc,
                                                setup_read_index_master_xcc, teardown),
                cmocka_unit_test_setup_teardown(test_parked_call_completes_after_its_delay, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancelled_call_never_completes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_late_thread_keeps_back_to_back_kernels_exact, setup, teardown),
                cmocka_unit_test_setup_teardown(test_completion_signal_has_modelled_timestamps, setup, teardown),
                cmocka_unit_test_setup_teardown(test_late_thread_leaves_timestamps_exact, setup, teardown),
                cmocka_unit_test_setup_teardown(test_completion_signal_with_event_interrupts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_idle_node_uses_no_cpu, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
