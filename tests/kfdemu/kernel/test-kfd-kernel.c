/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the emulated amdkfd, driven directly through kernel.h with
 * the GPU model and user-memory copies replaced by test-fakes.c. The test
 * process is its own caller (self-debugging needs no ptrace), and a forked
 * child plays a traced target. The full conformance suite goes through the
 * real transport (tests/conformance); this one pins down the rules of
 * kfd-interface.md §3-§7 at the level of single calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdio.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernel.h"
#include "kfd-priv.h"
#include "test-fakes.h"

#define GPU0 0xf7bcu /* per-VMID debugging, HWS */
#define GPU1 0xf05bu /* one debug VMID per device, HWS */

#define NEW_MASK KFD_EC_MASK(EC_QUEUE_NEW)
#define DELETE_MASK KFD_EC_MASK(EC_DEVICE_QUEUE_DELETE)
#define RUNTIME_MASK KFD_EC_MASK(EC_PROCESS_RUNTIME)
#define INVALID ((uint32_t)KFD_DBG_QUEUE_INVALID_MASK)

struct fixture {
        struct emu_node node;
        struct emu_caller self;
        struct emu_file *file;
        struct emu_file *render[2]; /* the GPUs' render nodes, their VMs acquired */
        int ev_read, ev_write;      /* the debug event FIFO stand-in: a pipe */
        uint64_t rptr, wptr;        /* queue read/write indices */
        /* Arguments of a call that may sleep: they live as long as the call. */
        struct kfd_ioctl_destroy_queue_args destroy_args;
        struct kfd_ioctl_runtime_enable_args runtime_args;
        uint8_t ring[4096];
};

static long last_reply = LONG_MIN;
static unsigned n_replies;

static void record_reply(struct emu_call *call, long ret)
{
        last_reply = ret;
        n_replies++;
        free(call);
}

static long kfd_ioctl(struct fixture *f, uint32_t cmd, void *arg);

/* What a runtime does at open: each GPU's VM from its render node, so
 * that queues can be created (kfd_bind_process_to_device). The fake
 * transport finds the file being acquired behind any fd. */
static void acquire_vms(struct fixture *f)
{
        static const uint32_t gpus[2] = { GPU0, GPU1 };

        for (unsigned i = 0; i < 2; i++) {
                struct kfd_ioctl_acquire_vm_args args = { .drm_fd = STDERR_FILENO, .gpu_id = gpus[i] };

                assert_int_equal(emu_drm_open(&f->node, 128 + i, &f->render[i]), 0);
                fake_fd_file = f->render[i];
                assert_int_equal(kfd_ioctl(f, AMDKFD_IOC_ACQUIRE_VM, &args), 0);
        }
        fake_fd_file = NULL;
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct emu_config cfg = { .kfd_major = 1, .kfd_minor = 13, .n_gpus = 2 };
        int fds[2];

        assert_non_null(f);
        memset(&fake_gpu, 0, sizeof(fake_gpu));
        cfg.gpus[0] = (struct emu_gpu_config){
                .gpu_id = GPU0, .gfx_target_version = 90402, .per_vmid_debug = true, .drm_render_minor = 128 };
        cfg.gpus[1] = (struct emu_gpu_config){ .gpu_id = GPU1, .gfx_target_version = 90008, .drm_render_minor = 129 };
        assert_int_equal(emu_node_init(&f->node, &cfg), 0);
        f->self = (struct emu_caller){ .tgid = getpid(), .tid = gettid() };
        assert_int_equal(emu_kfd_open(&f->node, &f->self, &f->file), 0);
        acquire_vms(f);
        assert_int_equal(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
        f->ev_read = fds[0];
        f->ev_write = fds[1];
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        emu_kfd_release(f->file);
        emu_drm_release(f->render[0]);
        emu_drm_release(f->render[1]);
        emu_node_fini(&f->node);
        close(f->ev_read);
        close(f->ev_write);
        free(f);
        return 0;
}

/* One ioctl as the transport would issue it; a parked call is returned in
 * *ret_parked (and replied to through record_reply later). */
static long kfd_ioctl_as(struct fixture *f, const struct emu_caller *caller, uint32_t cmd, void *arg,
                         struct emu_call **ret_parked)
{
        struct emu_call *call = calloc(1, sizeof(*call));
        long r;

        assert_non_null(call);
        call->file = f->file;
        call->caller = *caller;
        call->cmd = cmd;
        call->arg = (uintptr_t)arg;
        call->reply = record_reply;
        r = emu_kfd_ioctl(call);
        if (r == EMU_CALL_PARKED) {
                assert_non_null(ret_parked);
                *ret_parked = call;
        } else {
                free(call);
        }
        return r;
}

static long kfd_ioctl(struct fixture *f, uint32_t cmd, void *arg)
{
        return kfd_ioctl_as(f, &f->self, cmd, arg, NULL);
}

static uint32_t create_queue(struct fixture *f, uint32_t gpu_id)
{
        struct kfd_ioctl_create_queue_args args = {
                .ring_base_address = (uintptr_t)f->ring,
                .ring_size = sizeof(f->ring),
                .write_pointer_address = (uintptr_t)&f->wptr,
                .read_pointer_address = (uintptr_t)&f->rptr,
                .gpu_id = gpu_id,
                .queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
                .queue_percentage = 100,
                .queue_priority = 7,
        };

        assert_int_equal(kfd_ioctl(f, AMDKFD_IOC_CREATE_QUEUE, &args), 0);
        return args.queue_id;
}

static long destroy_queue(struct fixture *f, uint32_t id, struct emu_call **ret_parked)
{
        f->destroy_args = (struct kfd_ioctl_destroy_queue_args){ .queue_id = id };
        return kfd_ioctl_as(f, &f->self, AMDKFD_IOC_DESTROY_QUEUE, &f->destroy_args, ret_parked);
}

static long runtime_enable(struct fixture *f, uint32_t mode_mask, struct emu_call **ret_parked)
{
        f->runtime_args = (struct kfd_ioctl_runtime_enable_args){ .r_debug = 0x1000, .mode_mask = mode_mask };
        return kfd_ioctl_as(f, &f->self, AMDKFD_IOC_RUNTIME_ENABLE, &f->runtime_args, ret_parked);
}

static long dbg_trap(struct fixture *f, pid_t pid, uint32_t op, struct kfd_ioctl_dbg_trap_args *args)
{
        args->pid = (uint32_t)pid;
        args->op = op;
        return kfd_ioctl(f, AMDKFD_IOC_DBG_TRAP, args);
}

static long enable_debug(struct fixture *f, pid_t pid, struct kfd_runtime_info *rinfo)
{
        struct kfd_ioctl_dbg_trap_args args = { .enable = {
                .exception_mask = NEW_MASK | DELETE_MASK | RUNTIME_MASK,
                .rinfo_ptr = (uintptr_t)rinfo,
                .rinfo_size = sizeof(*rinfo),
                .dbg_fd = (uint32_t)f->ev_write,
        } };
        long r = dbg_trap(f, pid, KFD_IOC_DBG_TRAP_ENABLE, &args);

        if (r == 0)
                assert_int_equal(args.enable.rinfo_size, sizeof(struct kfd_runtime_info));
        return r;
}

static long suspend(struct fixture *f, uint32_t *ids, uint32_t n, uint64_t clear)
{
        struct kfd_ioctl_dbg_trap_args args = { .suspend_queues = {
                .exception_mask = clear, .queue_array_ptr = (uintptr_t)ids, .num_queues = n } };

        return dbg_trap(f, getpid(), KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, &args);
}

static long resume(struct fixture *f, uint32_t *ids, uint32_t n)
{
        struct kfd_ioctl_dbg_trap_args args = { .resume_queues = {
                .queue_array_ptr = (uintptr_t)ids, .num_queues = n } };

        return dbg_trap(f, getpid(), KFD_IOC_DBG_TRAP_RESUME_QUEUES, &args);
}

static long query_event(struct fixture *f, uint64_t clear, uint64_t *status, uint32_t *queue_id)
{
        struct kfd_ioctl_dbg_trap_args args = { .query_debug_event = { .exception_mask = clear } };
        long r = dbg_trap(f, getpid(), KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &args);

        *status = args.query_debug_event.exception_mask;
        *queue_id = args.query_debug_event.queue_id;
        return r;
}

static unsigned drain_event_bytes(struct fixture *f)
{
        char buf[64];
        unsigned n = 0;
        ssize_t got;

        while ((got = read(f->ev_read, buf, sizeof(buf))) > 0) {
                for (ssize_t i = 0; i < got; i++)
                        assert_int_equal(buf[i], '.');
                n += (unsigned)got;
        }
        return n;
}

static struct emu_process *self_process(struct fixture *f)
{
        return f->file->process;
}

/* Queues whose NEW bit a snapshot cleared, as a debugger does first. */
static void clear_new_by_snapshot(struct fixture *f)
{
        struct kfd_queue_snapshot_entry entries[8];
        struct kfd_ioctl_dbg_trap_args args = { .queue_snapshot = {
                .exception_mask = NEW_MASK, .snapshot_buf_ptr = (uintptr_t)entries,
                .num_queues = 8, .entry_size = sizeof(entries[0]) } };

        assert_int_equal(dbg_trap(f, getpid(), KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &args), 0);
}

static void test_ioctl_dispatch(void **state)
{
        struct fixture *f = *state;
        struct kfd_ioctl_get_version_args version = { 0 };
        struct kfd_ioctl_dbg_trap_args args = { 0 };
        struct emu_caller stranger = { .tgid = getpid() + 1, .tid = getpid() + 1 };
        uint8_t policy[32] = { 0 };

        assert_int_equal(kfd_ioctl(f, AMDKFD_IOC_GET_VERSION, &version), 0);
        assert_int_equal(version.major_version, 1);
        assert_int_equal(version.minor_version, 13);

        /* Outside the 1.13 table: -EINVAL (newer trees say -ENOTTY). */
        assert_int_equal(kfd_ioctl(f, _IOWR('K', 0x27, uint64_t), &version), -EINVAL);
        assert_int_equal(kfd_ioctl(f, _IOWR('K', 0x00, uint64_t), &version), -EINVAL);
        /* A real ioctl kfdemu does not emulate keeps its copies, then refuses. */
        assert_int_equal(kfd_ioctl(f, _IOW('K', 0x04, policy), policy), -EINVAL);
        assert_int_equal(kfd_ioctl(f, _IOW('K', 0x04, policy), NULL), -EFAULT);
        /* The file belongs to the process that opened it. */
        assert_int_equal(kfd_ioctl_as(f, &stranger, AMDKFD_IOC_GET_VERSION, &version, NULL), -EBADF);
        /* An unknown op fails after the checks, and kdata still goes back. */
        args.suspend_queues.grace_period = 77;
        assert_int_equal(dbg_trap(f, getpid(), 99, &args), -EINVAL);
        assert_int_equal(args.suspend_queues.grace_period, 77);
}

static void test_create_queue_checks_and_ids(void **state)
{
        struct fixture *f = *state;
        struct kfd_ioctl_create_queue_args args = {
                .ring_base_address = (uintptr_t)f->ring, .ring_size = 4096,
                .write_pointer_address = (uintptr_t)&f->wptr, .read_pointer_address = (uintptr_t)&f->rptr,
                .gpu_id = GPU0, .queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, .queue_percentage = 101,
        };
        uint32_t a, b, c;

        assert_int_equal(kfd_ioctl(f, AMDKFD_IOC_CREATE_QUEUE, &args), -EINVAL);
        args.queue_percentage = 100;
        args.queue_priority = 16;
        assert_int_equal(kfd_ioctl(f, AMDKFD_IOC_CREATE_QUEUE, &args), -EINVAL);
        args.queue_priority = 15;
        args.ring_size = 3000;
        assert_int_equal(kfd_ioctl(f, AMDKFD_IOC_CREATE_QUEUE, &args), -EINVAL);
        args.ring_size = 4096;
        args.queue_type = 9;
        assert_int_equal(kfd_ioctl(f, AMDKFD_IOC_CREATE_QUEUE, &args), -524);
        args.queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
        args.gpu_id = 1;
        assert_int_equal(kfd_ioctl(f, AMDKFD_IOC_CREATE_QUEUE, &args), -EINVAL);
        assert_int_equal(fake_gpu.queues_created, 0);

        a = create_queue(f, GPU0);
        b = create_queue(f, GPU1);
        c = create_queue(f, GPU0);
        assert_int_equal(a, 0);
        assert_int_equal(b, 1);
        assert_int_equal(c, 2);
        /* Every queue starts NEW, debugger or not. */
        assert_true(self_process(f)->queues->exception_status & NEW_MASK);

        /* The lowest free id is reused. */
        assert_int_equal(destroy_queue(f, b, NULL), 0);
        assert_int_equal(destroy_queue(f, b, NULL), -EINVAL);
        args.gpu_id = GPU0;
        assert_int_equal(kfd_ioctl(f, AMDKFD_IOC_CREATE_QUEUE, &args), 0);
        assert_int_equal(args.queue_id, 1);
        assert_int_equal(args.doorbell_offset, EMU_KFD_MMAP_TYPE_DOORBELL | EMU_KFD_MMAP_GPU_ID(GPU0) |
                                                       2 * EMU_DOORBELL_SIZE);
}

static void test_runtime_enable_rules(void **state)
{
        struct fixture *f = *state;
        uint32_t q = create_queue(f, GPU0);

        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), -EEXIST);
        assert_int_equal(destroy_queue(f, q, NULL), 0);
        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
        assert_int_equal(self_process(f)->runtime_info.runtime_state, DEBUG_RUNTIME_STATE_ENABLED);
        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), -EBUSY);
        assert_int_equal(runtime_enable(f, 0, NULL), 0);
        assert_int_equal(self_process(f)->runtime_info.runtime_state, DEBUG_RUNTIME_STATE_DISABLED);
}

static void test_suspend_new_gate_and_counts(void **state)
{
        struct fixture *f = *state;
        struct kfd_runtime_info rinfo;
        uint32_t q0, q1, q2, ids[3];
        uint64_t status;
        uint32_t qid;

        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
        q0 = create_queue(f, GPU0);
        q1 = create_queue(f, GPU0);
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        assert_int_equal(rinfo.runtime_state, DEBUG_RUNTIME_STATE_ENABLED);
        assert_int_equal(enable_debug(f, getpid(), &rinfo), -EALREADY);
        /* ENABLE itself announces nothing already pending. */
        assert_int_equal(drain_event_bytes(f), 0);

        /* Both queues still carry NEW: nothing is suspended. */
        ids[0] = q0, ids[1] = q1, ids[2] = q0;
        assert_int_equal(suspend(f, ids, 3, 0), 0);
        assert_int_equal(ids[0], q0 | INVALID);
        assert_int_equal(ids[1], q1 | INVALID);

        /* A queue created while debugged notifies once. */
        q2 = create_queue(f, GPU0);
        assert_int_equal(drain_event_bytes(f), 1);

        /* Newest queue first, whole status, clear with the input mask. */
        assert_int_equal(query_event(f, NEW_MASK, &status, &qid), 0);
        assert_int_equal(qid, q2);
        assert_int_equal(status, NEW_MASK);
        assert_int_equal(query_event(f, NEW_MASK, &status, &qid), 0);
        assert_int_equal(qid, q1);
        assert_int_equal(query_event(f, NEW_MASK, &status, &qid), 0);
        assert_int_equal(qid, q0);
        assert_int_equal(query_event(f, NEW_MASK, &status, &qid), -EAGAIN);

        /* Only the first matching slot counts; the duplicate stays INVALID. */
        ids[0] = q0, ids[1] = q1, ids[2] = q0;
        fake_gpu.preemptions = 0;
        assert_int_equal(suspend(f, ids, 3, 0), 2);
        assert_int_equal(ids[0], q0);
        assert_int_equal(ids[1], q1);
        assert_int_equal(ids[2], q0 | INVALID);
        /* One device-wide preemption for the device, whatever the count. */
        assert_int_equal(fake_gpu.preemptions, 1);
        /* Suspending again is harmless and counted again. */
        assert_int_equal(suspend(f, ids, 2, 0), 2);

        /* No array: every queue resumes, suspended or not. */
        assert_int_equal(resume(f, NULL, 0), 3);
        assert_false(self_process(f)->queues->is_suspended);
}

/* With the GPU's only queue suspended no runlist is mapped: the resume sends
 * no unmap (kfd-interface.md §16.4) but must still map the runlist, or the
 * queue would never run again. */
static void test_resume_without_a_runlist_maps_one(void **state)
{
        struct fixture *f = *state;
        struct kfd_runtime_info rinfo;
        uint64_t status;
        uint32_t q, qid;

        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
        q = create_queue(f, GPU0);
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        assert_int_equal(query_event(f, NEW_MASK, &status, &qid), 0);
        fake_gpu.preemptions = 0;
        fake_gpu.runlist_maps = 0;
        assert_int_equal(suspend(f, &q, 1, 0), 1);
        assert_int_equal(fake_gpu.preemptions, 1);
        assert_int_equal(resume(f, &q, 1), 1);
        assert_int_equal(fake_gpu.preemptions, 1);
        assert_int_equal(fake_gpu.runlist_maps, 1);
        assert_false(self_process(f)->queues->is_suspended);
}

static void test_hws_clear_applies_to_busy_queues(void **state)
{
        struct fixture *f = *state;
        struct kfd_runtime_info rinfo;
        uint32_t a, b, ids[2];

        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        a = create_queue(f, GPU0);
        clear_new_by_snapshot(f);
        b = create_queue(f, GPU0);

        /* a suspends, b is NEW (-EBUSY, INVALID) but still loses NEW because
         * the device's preemption succeeded. */
        ids[0] = a, ids[1] = b;
        assert_int_equal(suspend(f, ids, 2, NEW_MASK), 1);
        assert_int_equal(ids[1], b | INVALID);
        ids[0] = a, ids[1] = b;
        assert_int_equal(suspend(f, ids, 2, NEW_MASK), 2);
        assert_int_equal(ids[1], b);
}

static void test_destroy_waits_for_resume(void **state)
{
        struct fixture *f = *state;
        struct kfd_runtime_info rinfo;
        struct emu_call *parked = NULL;
        uint32_t q, ids[1];

        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        q = create_queue(f, GPU1);
        clear_new_by_snapshot(f);
        ids[0] = q;
        assert_int_equal(suspend(f, ids, 1, 0), 1);

        /* Destroying a suspended queue sleeps until it is resumed. */
        assert_int_equal(destroy_queue(f, q, &parked), EMU_CALL_PARKED);
        n_replies = 0;
        assert_int_equal(resume(f, ids, 1), 1);
        assert_int_equal(n_replies, 1);
        assert_int_equal(last_reply, 0);
        assert_null(self_process(f)->queues);

        /* An interrupted destroy ends with -ERESTARTSYS (restarted or EINTR
         * by the signal code) and leaves the queue marked as being
         * destroyed: it can no longer be suspended. */
        q = create_queue(f, GPU1);
        clear_new_by_snapshot(f);
        ids[0] = q;
        assert_int_equal(suspend(f, ids, 1, 0), 1);
        assert_int_equal(destroy_queue(f, q, &parked), EMU_CALL_PARKED);
        emu_call_interrupt(parked);
        assert_int_equal(last_reply, -EMU_ERESTARTSYS);
        assert_int_equal(resume(f, ids, 1), 1);
        ids[0] = q;
        assert_int_equal(suspend(f, ids, 1, 0), 0);
        assert_int_equal(ids[0], q | INVALID);
}

static void test_runtime_enable_waits_for_ack(void **state)
{
        struct fixture *f = *state;
        struct kfd_runtime_info rinfo;
        struct kfd_ioctl_dbg_trap_args ack = { .send_runtime_event = { .exception_mask = RUNTIME_MASK } };
        struct emu_call *parked = NULL;
        uint64_t status;
        uint32_t qid, ids[1] = { 0 };

        /* Debugger first: activation deferred, SUSPEND refused. */
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        assert_int_equal(rinfo.runtime_state, DEBUG_RUNTIME_STATE_DISABLED);
        assert_int_equal(suspend(f, ids, 1, 0), -EPERM);

        /* The runtime then blocks until the debugger acks EC_PROCESS_RUNTIME. */
        n_replies = 0;
        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, &parked), EMU_CALL_PARKED);
        assert_int_equal(drain_event_bytes(f), 1);
        assert_int_equal(query_event(f, RUNTIME_MASK, &status, &qid), 0);
        assert_int_equal(status, RUNTIME_MASK);
        assert_int_equal(dbg_trap(f, getpid(), KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT, &ack), 0);
        assert_int_equal(n_replies, 1);
        assert_int_equal(last_reply, 0);

        /* Runtime disable blocks too; a signal gives EINTR, and the retry
         * goes straight back to waiting without a second event. */
        assert_int_equal(runtime_enable(f, 0, &parked), EMU_CALL_PARKED);
        assert_int_equal(drain_event_bytes(f), 1);
        emu_call_interrupt(parked);
        assert_int_equal(last_reply, -EINTR);
        assert_true(self_process(f)->is_runtime_retry);
        assert_int_equal(runtime_enable(f, 0, &parked), EMU_CALL_PARKED);
        assert_int_equal(drain_event_bytes(f), 0);
        assert_int_equal(dbg_trap(f, getpid(), KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT, &ack), 0);
        assert_int_equal(last_reply, 0);
        assert_false(self_process(f)->is_runtime_retry);

        /* An ack nobody waits for is banked for the next wait. */
        assert_int_equal(dbg_trap(f, getpid(), KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT, &ack), 0);
        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
}

static void test_snapshots(void **state)
{
        struct fixture *f = *state;
        struct kfd_runtime_info rinfo;
        uint8_t buf[4 * 32];
        uint8_t dev[2 * 128]; /* a newer caller's 128-byte entries */
        struct kfd_dbg_device_info_entry second;
        struct kfd_ioctl_dbg_trap_args args = { 0 };
        uint32_t q0, q1;

        q0 = create_queue(f, GPU0);
        q1 = create_queue(f, GPU1);
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);

        args.queue_snapshot.num_queues = 5;
        assert_int_equal(dbg_trap(f, getpid(), KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &args), -EINVAL);
        assert_int_equal(args.queue_snapshot.num_queues, 0);

        /* Count-only: no buffer needed, nothing cleared. */
        args.queue_snapshot = (struct kfd_ioctl_dbg_trap_queue_snapshot_args){ .exception_mask = NEW_MASK,
                                                                              .entry_size = 64 };
        assert_int_equal(dbg_trap(f, getpid(), KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &args), 0);
        assert_int_equal(args.queue_snapshot.num_queues, 2);

        /* A smaller entry: strided by it, only the copied queue cleared. */
        memset(buf, 0xee, sizeof(buf));
        args.queue_snapshot = (struct kfd_ioctl_dbg_trap_queue_snapshot_args){
                .exception_mask = NEW_MASK, .snapshot_buf_ptr = (uintptr_t)buf, .num_queues = 1, .entry_size = 32 };
        assert_int_equal(dbg_trap(f, getpid(), KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &args), 0);
        assert_int_equal(args.queue_snapshot.num_queues, 2);
        assert_int_equal(args.queue_snapshot.entry_size, 32);
        assert_int_equal(((struct kfd_queue_snapshot_entry *)buf)->exception_status, NEW_MASK);
        assert_int_equal(buf[32], 0xee);
        assert_int_equal(self_process(f)->queues->id, q1);
        assert_false(self_process(f)->queues->exception_status & NEW_MASK);
        assert_true(self_process(f)->queues->next->exception_status & NEW_MASK);
        (void)q0;

        /* The device snapshot wants a buffer even to count. */
        args.device_snapshot = (struct kfd_ioctl_dbg_trap_device_snapshot_args){ .entry_size = 128 };
        assert_int_equal(dbg_trap(f, getpid(), KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &args), -EINVAL);
        args.device_snapshot = (struct kfd_ioctl_dbg_trap_device_snapshot_args){
                .snapshot_buf_ptr = (uintptr_t)dev, .num_devices = 2, .entry_size = 128 };
        assert_int_equal(dbg_trap(f, getpid(), KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &args), 0);
        assert_int_equal(args.device_snapshot.num_devices, 2);
        /* The kernel's 1.13 entry is 120 bytes; the output strides by 128. */
        assert_int_equal(args.device_snapshot.entry_size, sizeof(second));
        memcpy(&second, dev + 128, sizeof(second));
        assert_int_equal(second.gpu_id, GPU1);
}

static void test_suspend_reply_waits_for_preemption(void **state)
{
        struct fixture *f = *state;
        struct kfd_runtime_info rinfo;
        struct kfd_ioctl_dbg_trap_args args;
        struct emu_call *call = calloc(1, sizeof(*call));
        uint32_t ids[1];

        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        ids[0] = create_queue(f, GPU0);
        clear_new_by_snapshot(f);

        fake_gpu.preempt_ns = 150000;
        args = (struct kfd_ioctl_dbg_trap_args){ .pid = (uint32_t)getpid(), .op = KFD_IOC_DBG_TRAP_SUSPEND_QUEUES,
                                                 .suspend_queues = { .queue_array_ptr = (uintptr_t)ids,
                                                                     .num_queues = 1, .grace_period = 0 } };
        call->file = f->file;
        call->caller = f->self;
        call->cmd = AMDKFD_IOC_DBG_TRAP;
        call->arg = (uintptr_t)&args;
        call->reply = record_reply;
        assert_int_equal(emu_kfd_ioctl(call), EMU_CALL_PARKED);
        assert_ptr_equal(fake_gpu.pending_call, call);
        assert_int_equal(fake_gpu.pending_delay_ns, 150000);
        assert_int_equal(fake_gpu.last_grace_period, 0);
        /* The queue is suspended at once; the reply comes with the fence. */
        assert_true(self_process(f)->queues->is_suspended);
        emu_call_complete(fake_gpu.pending_call, fake_gpu.pending_ret);
        assert_int_equal(last_reply, 1);
        fake_gpu.preempt_ns = 0;
}

/* gpu/ may complete a call inside emu_gpu_complete_after (model stopped, no
 * memory): the ioctl then returns its result directly, replied to once. */
static void test_inline_completion_replies_once(void **state)
{
        struct fixture *f = *state;
        struct kfd_runtime_info rinfo;
        uint32_t ids[1];

        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        ids[0] = create_queue(f, GPU0);
        clear_new_by_snapshot(f);

        fake_gpu.preempt_ns = 150000;
        fake_gpu.complete_inline = true;
        n_replies = 0;
        struct kfd_ioctl_dbg_trap_args args = {
                .pid = (uint32_t)getpid(), .op = KFD_IOC_DBG_TRAP_SUSPEND_QUEUES,
                .suspend_queues = { .queue_array_ptr = (uintptr_t)ids, .num_queues = 1 },
        };
        assert_int_equal(kfd_ioctl(f, AMDKFD_IOC_DBG_TRAP, &args), 1);
        assert_int_equal(n_replies, 0);
        assert_int_equal(ids[0], 0);
        fake_gpu.complete_inline = false;
        fake_gpu.preempt_ns = 0;
}

/* Fill a pipe through a non-blocking view of it, then make it blocking again. */
static void fill_blocking_pipe(int wfd)
{
        char chunk[4096] = { 0 };

        assert_int_equal(fcntl(wfd, F_SETFL, O_NONBLOCK), 0);
        while (write(wfd, chunk, sizeof(chunk)) > 0)
                ;
        while (write(wfd, chunk, 1) > 0)
                ;
        assert_int_equal(fcntl(wfd, F_SETFL, 0), 0);
}

static unsigned replies_seen(struct fixture *f)
{
        unsigned n;

        pthread_mutex_lock(&f->node.lock);
        n = n_replies;
        pthread_mutex_unlock(&f->node.lock);
        return n;
}

static void test_full_blocking_pipe_holds_the_raiser(void **state)
{
        struct fixture *f = *state;
        struct kfd_runtime_info rinfo;
        struct kfd_ioctl_create_queue_args args = {
                .ring_base_address = (uintptr_t)f->ring, .ring_size = sizeof(f->ring),
                .write_pointer_address = (uintptr_t)&f->wptr, .read_pointer_address = (uintptr_t)&f->rptr,
                .gpu_id = GPU0, .queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, .queue_percentage = 100,
        };
        struct emu_call *parked = NULL;
        char drain[65536];
        int fds[2];

        /* The debugger's event file is a blocking pipe that nobody reads. */
        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
        close(f->ev_read);
        close(f->ev_write);
        f->ev_read = fds[0];
        f->ev_write = fds[1];
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        fill_blocking_pipe(f->ev_write);

        /* CREATE_QUEUE raises EC_QUEUE_NEW and sleeps in the write. */
        n_replies = 0;
        pthread_mutex_lock(&f->node.lock);
        assert_int_equal(kfd_ioctl_as(f, &f->self, AMDKFD_IOC_CREATE_QUEUE, &args, &parked), EMU_CALL_PARKED);
        pthread_mutex_unlock(&f->node.lock);
        assert_non_null(self_process(f)->queues);
        usleep(20000);
        assert_int_equal(replies_seen(f), 0);

        /* The debugger reads: the byte goes in and the ioctl returns. */
        assert_true(read(f->ev_read, drain, sizeof(drain)) > 0);
        for (int waited = 0; replies_seen(f) == 0 && waited < 5000; waited++)
                usleep(1000);
        assert_int_equal(replies_seen(f), 1);
        assert_int_equal(last_reply, 0);
        assert_int_equal(args.queue_id, 0);

        /* A signal ends the write without a byte; the ioctl still succeeds. */
        while (read(f->ev_read, drain, sizeof(drain)) == (ssize_t)sizeof(drain))
                ;
        fill_blocking_pipe(f->ev_write);
        pthread_mutex_lock(&f->node.lock);
        assert_int_equal(kfd_ioctl_as(f, &f->self, AMDKFD_IOC_CREATE_QUEUE, &args, &parked), EMU_CALL_PARKED);
        emu_call_interrupt(parked);
        assert_int_equal(n_replies, 2);
        assert_int_equal(last_reply, 0);
        assert_int_equal(args.queue_id, 1);
        pthread_mutex_unlock(&f->node.lock);
}

/* A child that waits to be killed, to play a target in another process. */
static pid_t spawn_target(void)
{
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                /* Never outlive a test that failed before reaping it. */
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (;;)
                        pause();
        }
        return pid;
}

/* PTRACE_DETACH needs the tracee in a ptrace-stop. */
static void ptrace_detach_running(pid_t pid)
{
        int status;

        assert_int_equal(ptrace(PTRACE_INTERRUPT, pid, NULL, NULL), 0);
        assert_int_equal(waitpid(pid, &status, __WALL), pid);
        assert_int_equal(ptrace(PTRACE_DETACH, pid, NULL, NULL), 0);
}

static void reap(pid_t pid)
{
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
}

static void test_ptrace_rules(void **state)
{
        struct fixture *f = *state;
        struct kfd_runtime_info rinfo;
        struct kfd_ioctl_dbg_trap_args args = { 0 };
        pid_t child = spawn_target();
        struct emu_process *target;

        /* Not traced and no kfd_process: ESRCH, even for ENABLE. */
        assert_int_equal(enable_debug(f, child, &rinfo), -ESRCH);
        assert_int_equal(dbg_trap(f, child, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &args), -ESRCH);
        assert_int_equal(dbg_trap(f, 0, KFD_IOC_DBG_TRAP_DISABLE, &args), -ESRCH);

        /* Its tracer's ENABLE creates the target's kfd_process. */
        assert_int_equal(ptrace(PTRACE_SEIZE, child, NULL, NULL), 0);
        assert_int_equal(enable_debug(f, child, &rinfo), 0);
        assert_int_equal(rinfo.runtime_state, DEBUG_RUNTIME_STATE_DISABLED);
        assert_int_equal(dbg_trap(f, child, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &args), -EAGAIN);

        /* PTRACE_DETACH has no hook: the session stays, ops get EPERM,
         * DISABLE still works. */
        ptrace_detach_running(child);
        assert_int_equal(dbg_trap(f, child, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &args), -EPERM);
        target = f->node.processes;
        assert_int_equal(target->tgid, child);
        assert_true(target->debug_trap_enabled);
        assert_int_equal(dbg_trap(f, child, KFD_IOC_DBG_TRAP_DISABLE, &args), 0);
        assert_false(target->debug_trap_enabled);
        assert_int_equal(dbg_trap(f, child, KFD_IOC_DBG_TRAP_DISABLE, &args), -EINVAL);

        reap(child);
        /* A zombie or gone task has no mm. */
        assert_int_equal(dbg_trap(f, child, KFD_IOC_DBG_TRAP_DISABLE, &args), -ESRCH);
        emu_process_mm_release(&f->node, child);
        assert_int_equal(fake_gpu.processes_removed, 1);
}

static void test_vmid_reservation_and_debugger_exit(void **state)
{
        struct fixture *f = *state;
        struct kfd_runtime_info rinfo;
        struct kfd_ioctl_dbg_trap_args args = { 0 };
        pid_t child = spawn_target();
        struct emu_process *target, *self = self_process(f);
        uint32_t ids[1];

        /* The child, with its runtime enabled, takes GPU1's only debug VMID. */
        assert_int_equal(ptrace(PTRACE_SEIZE, child, NULL, NULL), 0);
        assert_int_equal(enable_debug(f, child, &rinfo), 0);
        target = f->node.processes;
        assert_int_equal(dbg_trap(f, child, KFD_IOC_DBG_TRAP_DISABLE, &args), 0);
        target->runtime_info.runtime_state = DEBUG_RUNTIME_STATE_ENABLED;
        assert_int_equal(enable_debug(f, child, &rinfo), 0);
        assert_int_equal(rinfo.runtime_state, DEBUG_RUNTIME_STATE_ENABLED);
        assert_ptr_equal(f->node.gpus[1].debug_vmid_owner, target);

        /* A second debugged process on that GPU is ENABLED_BUSY: no suspend. */
        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        assert_int_equal(rinfo.runtime_state, DEBUG_RUNTIME_STATE_ENABLED_BUSY);
        ids[0] = 0;
        assert_int_equal(suspend(f, ids, 1, 0), -EPERM);

        /* The debugger's mm goes: every session it holds ends, the VMID is
         * released, and the old file no longer works. */
        assert_int_equal(self->debugged_process_count, 1);
        emu_process_mm_release(&f->node, getpid());
        assert_false(target->debug_trap_enabled);
        assert_null(f->node.gpus[1].debug_vmid_owner);
        assert_int_equal(kfd_ioctl(f, AMDKFD_IOC_GET_VERSION, &args), -EBADF);

        ptrace_detach_running(child);
        reap(child);
        emu_process_mm_release(&f->node, child);
}

/* Another process on the node: `pid`'s kfd file with GPU0's VM acquired,
 * and a queue argument block pointing at the fixture's ring. */
struct other_process {
        struct emu_caller caller;
        struct emu_file *file, *render;
        struct kfd_ioctl_create_queue_args create_args;
};

static void other_process_open(struct fixture *f, pid_t pid, struct other_process *o)
{
        struct kfd_ioctl_acquire_vm_args vm = { .drm_fd = STDERR_FILENO, .gpu_id = GPU0 };
        struct emu_file *mine = f->file;

        o->caller = (struct emu_caller){ .tgid = pid, .tid = pid };
        assert_int_equal(emu_kfd_open(&f->node, &o->caller, &o->file), 0);
        assert_int_equal(emu_drm_open(&f->node, 128, &o->render), 0);
        fake_fd_file = o->render;
        f->file = o->file;
        assert_int_equal(kfd_ioctl_as(f, &o->caller, AMDKFD_IOC_ACQUIRE_VM, &vm, NULL), 0);
        f->file = mine;
        fake_fd_file = NULL;
        o->create_args = (struct kfd_ioctl_create_queue_args){
                .ring_base_address = (uintptr_t)f->ring, .ring_size = sizeof(f->ring),
                .write_pointer_address = (uintptr_t)&f->wptr, .read_pointer_address = (uintptr_t)&f->rptr,
                .gpu_id = GPU0, .queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
                .queue_percentage = 100, .queue_priority = 7,
        };
}

static long other_process_create_queue(struct fixture *f, struct other_process *o, struct emu_call **ret_parked)
{
        struct emu_file *mine = f->file;
        long r;

        f->file = o->file;
        r = kfd_ioctl_as(f, &o->caller, AMDKFD_IOC_CREATE_QUEUE, &o->create_args, ret_parked);
        f->file = mine;
        return r;
}

static void other_process_close(struct fixture *f, struct other_process *o)
{
        emu_kfd_release(o->file);
        emu_drm_release(o->render);
        emu_process_mm_release(&f->node, o->caller.tgid);
}

/* A SUSPEND parks in the preemption's fence wait and parks its suspend:
 * the target's mutex and event_mutex and the GPU's dqm lock stay taken
 * until it ends, so the target's own ioctls, another process's
 * CREATE_QUEUE on that GPU and an mqds read wait for it; a call that does
 * not need them does not. */
static void suspend_with_waiters(struct fixture *f, bool locks_modelled)
{
        struct kfd_runtime_info rinfo;
        struct emu_call *suspending = NULL, *own = NULL, *other_create = NULL;
        struct emu_call *mqds = calloc(1, sizeof(*mqds));
        struct kfd_ioctl_dbg_trap_args args;
        struct kfd_ioctl_get_version_args version;
        struct kfd_ioctl_create_queue_args own_create;
        struct other_process other;
        pid_t child = spawn_target();
        uint32_t ids[1];
        long suspend_ret;

        f->node.cfg.locks_released_while_waiting = !locks_modelled;
        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        ids[0] = create_queue(f, GPU0);
        clear_new_by_snapshot(f);
        other_process_open(f, child, &other);

        fake_gpu.preempt_ns = 150000;
        args = (struct kfd_ioctl_dbg_trap_args){ .pid = (uint32_t)getpid(), .op = KFD_IOC_DBG_TRAP_SUSPEND_QUEUES,
                                                 .suspend_queues = { .queue_array_ptr = (uintptr_t)ids,
                                                                     .num_queues = 1 } };
        assert_int_equal(kfd_ioctl_as(f, &f->self, AMDKFD_IOC_DBG_TRAP, &args, &suspending), EMU_CALL_PARKED);
        assert_int_equal(fake_gpu.spin_notices, 1);
        suspend_ret = fake_gpu.pending_ret;
        /* What the waiters do once they run costs no modelled time. */
        fake_gpu.preempt_ns = 0;
        n_replies = 0;

        /* GET_VERSION takes no lock. */
        assert_int_equal(kfd_ioctl(f, AMDKFD_IOC_GET_VERSION, &version), 0);

        own_create = other.create_args;
        own_create.gpu_id = GPU1;
        *mqds = (struct emu_call){ .caller = f->self, .reply = record_reply };
        if (!locks_modelled) {
                assert_int_equal(kfd_ioctl(f, AMDKFD_IOC_CREATE_QUEUE, &own_create), 0);
                assert_int_equal(other_process_create_queue(f, &other, NULL), 0);
                assert_int_equal(emu_debugfs_mqds_open(&f->node, mqds), 0);
                free(mqds);
                emu_call_complete(suspending, suspend_ret);
                assert_int_equal(n_replies, 1);
        } else {
                assert_int_equal(kfd_ioctl_as(f, &f->self, AMDKFD_IOC_CREATE_QUEUE, &own_create, &own),
                                 EMU_CALL_PARKED);
                assert_int_equal(other_process_create_queue(f, &other, &other_create), EMU_CALL_PARKED);
                assert_ptr_equal(other_create->lock_gpu, &f->node.gpus[0]);
                assert_int_equal(emu_debugfs_mqds_open(&f->node, mqds), EMU_CALL_PARKED);
                assert_int_equal(n_replies, 0);

                /* The fence signals: every waiter gets through as the locks
                 * are released, then the suspend replies with its count. */
                emu_call_complete(suspending, suspend_ret);
                assert_int_equal(n_replies, 4);
                assert_int_equal(last_reply, 1);
                assert_int_equal(self_process(f)->mutex_holders, 0);
                assert_int_equal(f->node.gpus[0].dqm_holders, 0);
        }
        assert_int_equal(ids[0], 0);
        other_process_close(f, &other);
        reap(child);
}

static void test_locks_held_across_preemption(void **state)
{
        suspend_with_waiters(*state, true);
}

static void test_locks_released_while_waiting_when_configured(void **state)
{
        suspend_with_waiters(*state, false);
}

/* An mqds reader asleep on a process's mutex when that process's mm goes:
 * it is nobody's thread of the process, gets through, and the preemption
 * that held the mutex still ends cleanly. */
static void test_mqds_reader_outlives_the_process_it_waits_on(void **state)
{
        struct fixture *f = *state;
        struct kfd_runtime_info rinfo;
        struct emu_call *suspending = NULL;
        struct emu_call *mqds = calloc(1, sizeof(*mqds));
        struct kfd_ioctl_dbg_trap_args args;
        uint32_t ids[1];

        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        ids[0] = create_queue(f, GPU0);
        clear_new_by_snapshot(f);
        fake_gpu.preempt_ns = 150000;
        args = (struct kfd_ioctl_dbg_trap_args){ .pid = (uint32_t)getpid(), .op = KFD_IOC_DBG_TRAP_SUSPEND_QUEUES,
                                                 .suspend_queues = { .queue_array_ptr = (uintptr_t)ids,
                                                                     .num_queues = 1 } };
        assert_int_equal(kfd_ioctl_as(f, &f->self, AMDKFD_IOC_DBG_TRAP, &args, &suspending), EMU_CALL_PARKED);
        long suspend_ret = fake_gpu.pending_ret;
        fake_gpu.preempt_ns = 0;
        n_replies = 0;
        *mqds = (struct emu_call){ .caller = f->self, .reply = record_reply };
        assert_int_equal(emu_debugfs_mqds_open(&f->node, mqds), EMU_CALL_PARKED);

        emu_process_mm_release(&f->node, getpid());
        assert_int_equal(n_replies, 1);
        assert_int_equal(last_reply, 0);
        emu_call_complete(suspending, suspend_ret);
        assert_int_equal(n_replies, 2);
        assert_int_equal(f->node.gpus[0].dqm_holders, 0);
}

/* [Node] FenceWaitSpins=no: the caller is not told to spin. */
static void test_fence_wait_sleeps_when_configured(void **state)
{
        struct fixture *f = *state;
        struct kfd_runtime_info rinfo;
        struct emu_call *parked = NULL;
        struct kfd_ioctl_dbg_trap_args args;
        uint32_t ids[1];

        f->node.cfg.fence_wait_sleeps = true;
        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        ids[0] = create_queue(f, GPU0);
        clear_new_by_snapshot(f);
        fake_gpu.preempt_ns = 150000;
        args = (struct kfd_ioctl_dbg_trap_args){ .pid = (uint32_t)getpid(), .op = KFD_IOC_DBG_TRAP_SUSPEND_QUEUES,
                                                 .suspend_queues = { .queue_array_ptr = (uintptr_t)ids,
                                                                     .num_queues = 1 } };
        assert_int_equal(kfd_ioctl_as(f, &f->self, AMDKFD_IOC_DBG_TRAP, &args, &parked), EMU_CALL_PARKED);
        assert_int_equal(fake_gpu.spin_notices, 0);
        emu_call_complete(parked, fake_gpu.pending_ret);
        fake_gpu.preempt_ns = 0;
}

/* A pid namespace with an init (ns pid 1) and one more task (ns pid 2),
 * made by a host child. Returns the host pids of init and the task. */
static pid_t spawn_pid_namespace(pid_t *ret_init, pid_t *ret_task)
{
        int report[2];
        pid_t child, init = 0;
        char path[96], line[64] = { 0 };
        FILE *children;

        assert_int_equal(pipe2(report, O_CLOEXEC), 0);
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (unshare(getuid() == 0 ? CLONE_NEWPID : CLONE_NEWUSER | CLONE_NEWPID) < 0)
                        _exit(20);
                init = fork();
                if (init == 0) {
                        if (fork() == 0)
                                for (;;)
                                        pause();
                        for (;;)
                                pause();
                }
                if (init < 0 || write(report[1], &init, sizeof(init)) != sizeof(init))
                        _exit(21);
                for (;;)
                        pause();
        }
        close(report[1]);
        assert_int_equal(read(report[0], &init, sizeof(init)), sizeof(init));
        close(report[0]);

        /* The task is init's only child; "children" lists host pids. */
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)init, (int)init);
        for (int waited = 0; line[0] == '\0' && waited < 2000; waited++) {
                children = fopen(path, "re");
                assert_non_null(children);
                if (!fgets(line, sizeof(line), children))
                        line[0] = '\0';
                fclose(children);
                if (line[0] == '\0')
                        usleep(1000);
        }
        *ret_init = init;
        *ret_task = (pid_t)atoi(line);
        assert_true(*ret_task > 0);
        return child;
}

/* The fault triggers of [Faults]: counted per GPU among the preemptions
 * that pass the conditions, a seeded probability repeats exactly. */
static void test_fault_triggers(void **state)
{
        struct fixture *f = *state;
        struct emu_fault_config *faults = &f->node.cfg.faults;
        struct emu_gpu *gpu0 = &f->node.gpus[0], *gpu1 = &f->node.gpus[1];
        unsigned fired = 0, first_run[64];

        *faults = (struct emu_fault_config){ .kind = EMU_FAULT_ERROR, .ops = EMU_FAULT_OP_SUSPEND, .every = 3 };
        for (unsigned i = 1; i <= 9; i++)
                assert_int_equal(kfd_fault_pick(gpu0, EMU_FAULT_OP_SUSPEND) != EMU_FAULT_NONE, i % 3 == 0);
        /* Resumes are not counted, and GPU 1 counts on its own. */
        assert_int_equal(kfd_fault_pick(gpu0, EMU_FAULT_OP_RESUME), EMU_FAULT_NONE);
        assert_int_equal(kfd_fault_pick(gpu1, EMU_FAULT_OP_SUSPEND), EMU_FAULT_NONE);

        faults->every = 0;
        faults->nth = 2;
        faults->gpu_mask = 1u << 1;
        assert_int_equal(kfd_fault_pick(gpu0, EMU_FAULT_OP_SUSPEND), EMU_FAULT_NONE);
        assert_int_equal(kfd_fault_pick(gpu1, EMU_FAULT_OP_SUSPEND), EMU_FAULT_ERROR);
        assert_int_equal(kfd_fault_pick(gpu1, EMU_FAULT_OP_SUSPEND), EMU_FAULT_NONE);

        /* While busy: nothing fires, nothing is counted, until a queue has waves. */
        *faults = (struct emu_fault_config){ .kind = EMU_FAULT_TIMEOUT, .ops = EMU_FAULT_OP_SUSPEND, .nth = 1,
                                             .while_busy = true };
        gpu0->debugger_preemptions = 0;
        uint32_t q = create_queue(f, GPU0);
        assert_int_equal(kfd_fault_pick(gpu0, EMU_FAULT_OP_SUSPEND), EMU_FAULT_NONE);
        fake_gpu.queues_have_waves = true;
        /* QueueId=: only while that queue is busy. */
        faults->queue_id_set = true;
        faults->queue_id = q + 1;
        assert_int_equal(kfd_fault_pick(gpu0, EMU_FAULT_OP_SUSPEND), EMU_FAULT_NONE);
        faults->queue_id = q;
        assert_int_equal(kfd_fault_pick(gpu0, EMU_FAULT_OP_SUSPEND), EMU_FAULT_TIMEOUT);

        /* 25 %: the same sequence from the same seed. */
        *faults = (struct emu_fault_config){ .kind = EMU_FAULT_ERROR, .ops = EMU_FAULT_OP_SUSPEND,
                                             .probability_ppm = 250000, .seed = 42 };
        for (unsigned run = 0; run < 2; run++) {
                f->node.fault_rng = faults->seed;
                for (unsigned i = 0; i < 64; i++) {
                        unsigned hit = kfd_fault_pick(gpu0, EMU_FAULT_OP_SUSPEND) != EMU_FAULT_NONE;

                        if (run == 0) {
                                first_run[i] = hit;
                                fired += hit;
                        } else {
                                assert_int_equal(hit, first_run[i]);
                        }
                }
        }
        assert_in_range(fired, 4, 30);
}

/* A queue hang with no busy queue to blame on a kernel with per-queue
 * reset: reset_hung_queues finds nothing, so kfd_hws_hang marks the
 * process and resets the GPU, and the suspend's slot gets ERROR (§16.2). */
static void test_queue_hang_without_culprit_resets_the_gpu(void **state)
{
        struct fixture *f = *state;
        struct kfd_runtime_info rinfo;
        uint32_t q, id;

        f->node.cfg.kernel.per_queue_reset = true;
        f->node.cfg.faults = (struct emu_fault_config){ .kind = EMU_FAULT_QUEUE_HANG, .ops = EMU_FAULT_OP_SUSPEND,
                                                        .nth = 1 };
        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
        q = create_queue(f, GPU0);
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        clear_new_by_snapshot(f);

        id = q;
        assert_int_equal(suspend(f, &id, 1, 0), 0);
        assert_int_equal(id, q | (uint32_t)KFD_DBG_QUEUE_ERROR_MASK);
        assert_true(kfd_process_device_by_id(self_process(f), GPU0)->has_reset_queue);
        assert_false(kfd_process_device_by_id(self_process(f), GPU1)->has_reset_queue);
}

/* A GPU reset evicts every process's queues on every device
 * (kfd_suspend_all_processes) and nothing restores them
 * (kgd2kfd_post_reset): they leave the runlist for good, a debugger's
 * suspend and resume count them but map nothing, and a queue created
 * afterwards starts evicted (kfd-interface.md §16.1). */
static void test_gpu_reset_evicts_every_queue_for_good(void **state)
{
        struct fixture *f = *state;
        struct emu_gpu *gpu0 = &f->node.gpus[0], *gpu1 = &f->node.gpus[1];
        struct kfd_runtime_info rinfo;
        uint32_t q, other, later, ids[2];

        f->node.cfg.faults = (struct emu_fault_config){ .kind = EMU_FAULT_TIMEOUT, .ops = EMU_FAULT_OP_SUSPEND,
                                                        .nth = 1, .gpu_mask = 1u << 0 };
        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
        q = create_queue(f, GPU0);
        other = create_queue(f, GPU1);
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        clear_new_by_snapshot(f);
        assert_true(gpu1->active_runlist);

        ids[0] = q;
        assert_int_equal(suspend(f, ids, 1, 0), 0);
        assert_int_equal(ids[0], q | (uint32_t)KFD_DBG_QUEUE_ERROR_MASK);
        assert_false(gpu0->cp_hung);
        assert_true(kfd_queue_by_id(self_process(f), q)->is_evicted);
        assert_true(kfd_queue_by_id(self_process(f), other)->is_evicted);
        assert_false(gpu0->active_runlist);
        assert_false(gpu1->active_runlist);

        fake_gpu.preemptions = 0;
        fake_gpu.runlist_maps = 0;
        ids[0] = q, ids[1] = other;
        assert_int_equal(resume(f, ids, 2), 2);
        assert_int_equal(suspend(f, ids, 2, 0), 2);
        assert_int_equal(resume(f, ids, 2), 2);
        assert_int_equal(fake_gpu.preemptions, 0);
        assert_false(kfd_queue_is_active(kfd_queue_by_id(self_process(f), q)));
        assert_false(gpu0->active_runlist);

        later = create_queue(f, GPU0);
        assert_true(kfd_queue_by_id(self_process(f), later)->is_evicted);
        assert_false(gpu0->active_runlist);
        assert_int_equal(fake_gpu.runlist_maps, 0);
}

/* set_queue_as_reset takes the hung queue out of the runlist count at once:
 * with the only other queue suspended no runlist is left, so the resume
 * sends no unmap (§16.4). The reset queue stays off the GPU until a
 * debugger suspends and resumes it, and resume_single_queue maps it again
 * (kfd-interface.md §16.2). */
static void test_reset_queue_leaves_the_runlist_until_resumed(void **state)
{
        struct fixture *f = *state;
        struct emu_gpu *gpu0 = &f->node.gpus[0];
        struct kfd_runtime_info rinfo;
        struct emu_queue *hung;
        uint32_t a, b, id;

        f->node.cfg.kernel.per_queue_reset = true;
        assert_int_equal(runtime_enable(f, KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, NULL), 0);
        a = create_queue(f, GPU0);
        b = create_queue(f, GPU0);
        f->node.cfg.faults = (struct emu_fault_config){ .kind = EMU_FAULT_QUEUE_HANG, .ops = EMU_FAULT_OP_SUSPEND,
                                                        .nth = 1, .queue_id_set = true, .queue_id = a };
        assert_int_equal(enable_debug(f, getpid(), &rinfo), 0);
        clear_new_by_snapshot(f);
        hung = kfd_queue_by_id(self_process(f), a);

        fake_gpu.queues_have_waves = true;
        id = b;
        assert_int_equal(suspend(f, &id, 1, 0), 1);
        assert_int_equal(id, b);
        assert_true(hung->is_reset);
        assert_false(kfd_queue_is_active(hung));
        assert_false(gpu0->active_runlist);
        /* Its waves went with the HQD reset. */
        fake_gpu.queues_have_waves = false;

        fake_gpu.preemptions = 0;
        fake_gpu.runlist_maps = 0;
        assert_int_equal(resume(f, &id, 1), 1);
        assert_int_equal(fake_gpu.preemptions, 0);
        assert_int_equal(fake_gpu.runlist_maps, 1);
        assert_true(hung->is_reset);

        /* A suspend and a resume of the reset queue report nothing of the
         * reset, and the resume puts it back. */
        id = a;
        fake_gpu.suspension_changes = 0;
        assert_int_equal(suspend(f, &id, 1, 0), 1);
        assert_int_equal(id, a);
        assert_true(hung->is_reset);
        assert_int_equal(resume(f, &id, 1), 1);
        assert_int_equal(id, a);
        assert_false(hung->is_reset);
        assert_true(kfd_queue_is_active(hung));
        assert_true(gpu0->active_runlist);
        assert_int_equal(fake_gpu.suspension_changes, 2);
}

static void test_dbg_trap_pid_is_read_in_the_callers_namespace(void **state)
{
        struct emu_caller in_container;
        struct kfd_task task;
        pid_t init, target, child = spawn_pid_namespace(&init, &target);

        (void)state;
        in_container = (struct emu_caller){ .tgid = init, .tid = init };
        /* Ids of the caller's namespace name its tasks ... */
        assert_int_equal(kfd_find_task(&in_container, 2, &task), 0);
        assert_int_equal(task.tid, target);
        assert_int_equal(task.tgid, target);
        assert_true(task.has_mm);
        assert_int_equal(kfd_find_task(&in_container, 1, &task), 0);
        assert_int_equal(task.tid, init);
        /* ... and nothing outside it, whatever its host pid. */
        assert_int_equal(kfd_find_task(&in_container, 3, &task), -ESRCH);
        assert_int_equal(kfd_find_task(&in_container, (uint32_t)target, &task), -ESRCH);
        /* A host caller uses host pids. */
        assert_int_equal(kfd_find_task(&(struct emu_caller){ .tgid = getpid(), .tid = gettid() }, (uint32_t)target,
                                       &task), 0);
        assert_int_equal(task.tid, target);

        kill(init, SIGKILL);
        reap(child);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_ioctl_dispatch, setup, teardown),
                cmocka_unit_test_setup_teardown(test_create_queue_checks_and_ids, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runtime_enable_rules, setup, teardown),
                cmocka_unit_test_setup_teardown(test_suspend_new_gate_and_counts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_resume_without_a_runlist_maps_one, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hws_clear_applies_to_busy_queues, setup, teardown),
                cmocka_unit_test_setup_teardown(test_destroy_waits_for_resume, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runtime_enable_waits_for_ack, setup, teardown),
                cmocka_unit_test_setup_teardown(test_snapshots, setup, teardown),
                cmocka_unit_test_setup_teardown(test_suspend_reply_waits_for_preemption, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inline_completion_replies_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_full_blocking_pipe_holds_the_raiser, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ptrace_rules, setup, teardown),
                cmocka_unit_test_setup_teardown(test_vmid_reservation_and_debugger_exit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fault_triggers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_queue_hang_without_culprit_resets_the_gpu, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gpu_reset_evicts_every_queue_for_good, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reset_queue_leaves_the_runlist_until_resumed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_locks_held_across_preemption, setup, teardown),
                cmocka_unit_test_setup_teardown(test_locks_released_while_waiting_when_configured, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fence_wait_sleeps_when_configured, setup, teardown),
                cmocka_unit_test_setup_teardown(test_mqds_reader_outlives_the_process_it_waits_on, setup, teardown),
                cmocka_unit_test(test_dbg_trap_pid_is_read_in_the_callers_namespace),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
