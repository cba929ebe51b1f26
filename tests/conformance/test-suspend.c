/* SPDX-License-Identifier: MIT */
/*
 * SUSPEND_QUEUES / RESUME_QUEUES: kfd_device_queue_manager.c:
 * suspend_queues / suspend_single_queue / resume_queues /
 * resume_single_queue, the EC_QUEUE_NEW gate of
 * kfd_process_queue_manager.c: init_user_queue, and destroy_queue_cpsch's
 * wait_on_destroy_queue — kfd-interface.md §4.
 *
 * This suite never passes queue_array_ptr = 0 with num_queues > 0 to
 * SUSPEND: the kernel has no NULL check there and dereferences it (§4.1).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

#define NEW_MASK KFD_EC_MASK(EC_QUEUE_NEW)
/* Kernels long enough to watch progress, short enough to finish quickly. */
#define KERNEL_NS 2000000ull
#define KERNELS 40u

static long suspend(struct conf_session *s, uint32_t *ids, uint32_t n, uint64_t clear)
{
        return conf_dbg_suspend(conf_kfd(), s->target.pid, ids, n, clear);
}

static long resume(struct conf_session *s, uint32_t *ids, uint32_t n)
{
        return conf_dbg_resume(conf_kfd(), s->target.pid, ids, n);
}

/* Queues on the given GPU indices, then NEW cleared by a snapshot. */
static void create_cleared(struct conf_session *s, struct conf_queue *q, int n, const int *gpu_index)
{
        for (int i = 0; i < n; i++)
                assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[gpu_index[i] % s->n_gpus], &q[i]), 0);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), s->target.pid), 0);
}

/* init_user_queue starts every queue with NEW, also those created before
 * ENABLE; suspend_single_queue answers -EBUSY (slot INVALID) until a
 * snapshot clears NEW. A snapshot without NEW in its clear mask changes
 * nothing. A queue created later is gated again. */
static void new_queues_are_invalid_until_cleared(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue before, after, later;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &before), 0);
        assert_int_equal(conf_session_attach(s, CONF_SUBSCRIPTION), 0);
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &after), 0);

        uint32_t ids[2] = { before.id, after.id };
        assert_int_equal(suspend(s, ids, 2, 0), 0);
        assert_int_equal(ids[0], before.id | CONF_QUEUE_INVALID);
        assert_int_equal(ids[1], after.id | CONF_QUEUE_INVALID);

        struct kfd_queue_snapshot_entry e[4];
        uint32_t num = 4, entry_size = sizeof(e[0]);
        assert_int_equal(conf_dbg_queue_snapshot(conf_kfd(), s->target.pid, 0, e, &num, &entry_size), 0);
        ids[0] = before.id, ids[1] = after.id;
        assert_int_equal(suspend(s, ids, 2, 0), 0);
        assert_int_equal(ids[0], before.id | CONF_QUEUE_INVALID);
        assert_int_equal(ids[1], after.id | CONF_QUEUE_INVALID);

        assert_int_equal(conf_dbg_clear_new(conf_kfd(), s->target.pid), 0);
        ids[0] = before.id, ids[1] = after.id;
        assert_int_equal(suspend(s, ids, 2, 0), 2);
        assert_int_equal(ids[0], before.id);
        assert_int_equal(ids[1], after.id);

        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &later), 0);
        uint32_t id = later.id;
        assert_int_equal(suspend(s, &id, 1, 0), 0);
        assert_int_equal(id, later.id | CONF_QUEUE_INVALID);
}

/* The return value counts array-matched queues now suspended, including
 * ones already suspended; RESUME counts queues that were not suspended too. */
static void counts_include_already_suspended(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q[2];
        create_cleared(s, q, 2, (const int[]){ 0, 0 });
        uint32_t one = q[0].id;
        assert_int_equal(suspend(s, &one, 1, 0), 1);
        assert_int_equal(one, q[0].id);
        uint32_t both[2] = { q[0].id, q[1].id };
        assert_int_equal(suspend(s, both, 2, 0), 2);
        assert_int_equal(both[0], q[0].id);
        assert_int_equal(both[1], q[1].id);
        assert_int_equal(resume(s, both, 2), 2);
        assert_int_equal(both[0], q[0].id);
        assert_int_equal(both[1], q[1].id);
        assert_int_equal(resume(s, both, 2), 2);
        assert_int_equal(both[0], q[0].id);
        assert_int_equal(both[1], q[1].id);
}

/* Only the first matching array slot counts; a duplicate stays INVALID. */
static void duplicate_ids_stay_invalid(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        create_cleared(s, &q, 1, (const int[]){ 0 });
        uint32_t ids[2] = { q.id, q.id };
        assert_int_equal(suspend(s, ids, 2, 0), 1);
        assert_int_equal(ids[0], q.id);
        assert_int_equal(ids[1], q.id | CONF_QUEUE_INVALID);
        ids[0] = ids[1] = q.id;
        assert_int_equal(resume(s, ids, 2), 1);
        assert_int_equal(ids[0], q.id);
        assert_int_equal(ids[1], q.id | CONF_QUEUE_INVALID);
}

/* An id the process does not have is INVALID for both ops. */
static void unknown_id_is_invalid(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        create_cleared(s, &q, 1, (const int[]){ 0 });
        uint32_t ids[2] = { q.id, 999 };
        assert_int_equal(suspend(s, ids, 2, 0), 1);
        assert_int_equal(ids[0], q.id);
        assert_int_equal(ids[1], 999 | CONF_QUEUE_INVALID);
        uint32_t unknown = 999;
        assert_int_equal(resume(s, &unknown, 1), 0);
        assert_int_equal(unknown, 999 | CONF_QUEUE_INVALID);
}

/* resume_queues: queue_array_ptr == 0 means every queue of the target;
 * num_queues is ignored (what kfd_dbg_trap_deactivate uses). */
static void resume_null_array_is_all(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q[2];
        create_cleared(s, q, 2, (const int[]){ 0, 1 });
        uint32_t ids[2] = { q[0].id, q[1].id };
        assert_int_equal(suspend(s, ids, 2, 0), 2);
        assert_int_equal(resume(s, NULL, 7), 2);
        uint32_t again[2] = { q[0].id, q[1].id };
        /* Resumed means suspendable again, and NEW is still clear. */
        assert_int_equal(suspend(s, again, 2, 0), 2);
}

/* HWS path: when one queue on a device succeeds, exception_mask is cleared
 * on every array-matched queue of that device, including the one that got
 * -EBUSY for NEW, so a retry succeeds. A device where nothing succeeded
 * keeps NEW. */
static void hws_clears_new_on_same_device(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue ready, fresh, elsewhere;
        create_cleared(s, &ready, 1, (const int[]){ 0 });
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &fresh), 0);
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[s->n_gpus - 1], &elsewhere), 0);
        assert_true(s->n_gpus > 1);

        uint32_t ids[3] = { ready.id, fresh.id, elsewhere.id };
        assert_int_equal(suspend(s, ids, 3, NEW_MASK), 1);
        assert_int_equal(ids[0], ready.id);
        assert_int_equal(ids[1], fresh.id | CONF_QUEUE_INVALID);
        assert_int_equal(ids[2], elsewhere.id | CONF_QUEUE_INVALID);

        uint32_t retry[2] = { fresh.id, elsewhere.id };
        assert_int_equal(suspend(s, retry, 2, 0), 1);
        assert_int_equal(retry[0], fresh.id);
        assert_int_equal(retry[1], elsewhere.id | CONF_QUEUE_INVALID);
}

static uint64_t read_index(struct conf_session *s, const struct conf_queue *q)
{
        uint64_t v = UINT64_MAX;
        assert_int_equal(conf_read_u64(s->target.pid, q->rptr, &v), 0);
        return v;
}

/* A suspended queue makes no progress: read_dispatch_id (the queue's
 * read_pointer_address) stays put until RESUME, then the work completes. */
static void read_index_stops_while_suspended(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        create_cleared(s, &q, 1, (const int[]){ 0 });
        assert_int_equal(conf_target_submit(&s->target, q.id, KERNEL_NS, KERNELS), KERNELS);
        assert_int_equal(conf_wait_u64_at_least(&s->target, q.rptr, 1, CONF_REPLY_TIMEOUT_MS), 0);
        uint32_t id = q.id;
        assert_int_equal(suspend(s, &id, 1, 0), 1);
        uint64_t stopped = read_index(s, &q);
        assert_true(stopped < KERNELS);
        assert_true(conf_u64_stays(&s->target, q.rptr, 50));

        id = q.id;
        assert_int_equal(resume(s, &id, 1), 1);
        if (conf_wait_u64_at_least(&s->target, q.rptr, KERNELS, CONF_REPLY_TIMEOUT_MS) < 0)
                fail_msg("after RESUME the read index stayed at %lu (want %u)", (unsigned long)read_index(s, &q),
                         KERNELS);
}

/* Only the named queues stop: the process's queue on another GPU and
 * another process's queue on the same GPU keep running (the HWS unmap is
 * device-wide, but the runlist is re-sent without only the suspended ones). */
static void only_named_queues_stop(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue named, other_gpu, other_process;
        create_cleared(s, &named, 1, (const int[]){ 0 });
        assert_true(s->n_gpus > 1);
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[1], &other_gpu), 0);
        struct conf_session other;
        assert_int_equal(conf_session_spawn(&other, true), 0);
        int created = conf_target_create_queue(&other.target, s->gpu_ids[0], &other_process);

        uint32_t id = named.id;
        long r = suspend(s, &id, 1, 0);
        conf_target_submit(&s->target, named.id, KERNEL_NS, 2);
        conf_target_submit(&s->target, other_gpu.id, KERNEL_NS, 2);
        conf_target_submit(&other.target, other_process.id, KERNEL_NS, 2);
        int other_gpu_ran = conf_wait_u64_at_least(&s->target, other_gpu.rptr, 2, CONF_REPLY_TIMEOUT_MS);
        int other_process_ran = conf_wait_u64_at_least(&other.target, other_process.rptr, 2, CONF_REPLY_TIMEOUT_MS);
        conf_session_end(&other);
        assert_int_equal(created, 0);
        assert_int_equal(r, 1);
        assert_int_equal(other_gpu_ran, 0);
        assert_int_equal(other_process_ran, 0);
        assert_int_equal(read_index(s, &named), 0);
}

/* §4.4: create_queue_cpsch maps a new queue at once, even while the
 * process's other queues are suspended. */
static void queue_created_after_suspend_runs(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue old, fresh;
        create_cleared(s, &old, 1, (const int[]){ 0 });
        uint32_t id = old.id;
        assert_int_equal(suspend(s, &id, 1, 0), 1);
        assert_int_equal(conf_target_submit(&s->target, old.id, KERNEL_NS, 2), 2);
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &fresh), 0);
        assert_int_equal(conf_target_submit(&s->target, fresh.id, KERNEL_NS, 2), 2);
        assert_int_equal(conf_wait_u64_at_least(&s->target, fresh.rptr, 2, CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(read_index(s, &old), 0);
}

/* destroy_queue_cpsch: destroying a suspended queue of a debug-enabled
 * process sleeps until the queue is resumed. While it sleeps the queue is
 * still suspended (re-suspend is a counted no-op, §4.1 order); after RESUME
 * the destroy completes and the id is gone. */
static void destroy_of_suspended_queue_waits_for_resume(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        create_cleared(s, &q, 1, (const int[]){ 0 });
        uint32_t id = q.id;
        assert_int_equal(suspend(s, &id, 1, 0), 1);
        assert_int_equal(conf_target_send(&s->target, "destroy %u", q.id), 0);
        assert_true(conf_target_still_blocked(&s->target));
        id = q.id;
        assert_int_equal(suspend(s, &id, 1, 0), 1);
        assert_true(conf_target_still_blocked(&s->target));

        id = q.id;
        assert_int_equal(resume(s, &id, 1), 1);
        char line[64];
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(conf_parse_result(line), 0);
        id = q.id;
        assert_int_equal(suspend(s, &id, 1, 0), 0);
        assert_int_equal(id, q.id | CONF_QUEUE_INVALID);
}

/* wait_on_destroy_queue is interruptible, and an interrupted destroy does
 * not reset is_being_destroyed: the destroy fails with -EINTR, the queue
 * stays, and once resumed it can never be suspended again (INVALID). */
static void interrupted_destroy_leaves_queue_unsuspendable(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        create_cleared(s, &q, 1, (const int[]){ 0 });
        uint32_t id = q.id;
        assert_int_equal(suspend(s, &id, 1, 0), 1);
        assert_int_equal(conf_target_send(&s->target, "destroy %u", q.id), 0);
        assert_true(conf_target_still_blocked(&s->target));
        assert_int_equal(kill(s->target.pid, SIGUSR1), 0);
        char line[64];
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(conf_parse_result(line), -EINTR);

        id = q.id;
        assert_int_equal(resume(s, &id, 1), 1);
        assert_int_equal(id, q.id);
        id = q.id;
        assert_int_equal(suspend(s, &id, 1, KFD_EC_MASK(EC_QUEUE_NEW)), 0);
        assert_int_equal(id, q.id | CONF_QUEUE_INVALID);
}

/* find_available_queue_slot: ids are the lowest free slot, so a destroyed
 * id names the next new queue, which carries NEW again (§4.1, §9.13). */
static void destroyed_id_is_reused_by_a_new_queue(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q[2], fresh;
        create_cleared(s, q, 2, (const int[]){ 0, 0 });
        uint32_t low = q[0].id < q[1].id ? q[0].id : q[1].id;
        assert_int_equal(conf_target_call(&s->target, "destroy %u", low), 0);
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &fresh), 0);
        assert_int_equal(fresh.id, low);
        uint32_t id = fresh.id;
        assert_int_equal(suspend(s, &id, 1, 0), 0);
        assert_int_equal(id, fresh.id | CONF_QUEUE_INVALID);
}

/* suspend_single_queue has no queue-type check: SDMA queues in the list are
 * suspended and resumed like compute queues (§4.4). */
static void sdma_queues_are_suspended_too(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue_type(&s->target, s->gpu_ids[0], KFD_IOC_QUEUE_TYPE_SDMA, &q), 0);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), s->target.pid), 0);
        uint32_t id = q.id;
        assert_int_equal(suspend(s, &id, 1, 0), 1);
        assert_int_equal(id, q.id);
        assert_int_equal(resume(s, &id, 1), 1);
        assert_int_equal(id, q.id);
}

/* On GPUs with per-VMID debug (the default node: gfx942), two processes
 * can be debug-active at once and both suspended (§9.3). */
static void two_debugged_processes_on_per_vmid_gpu(void **state)
{
        struct conf_session *s = *state;
        struct conf_session other;
        assert_int_equal(conf_session_spawn(&other, true), 0);
        assert_int_equal(conf_session_attach(&other, CONF_SUBSCRIPTION), 0);
        struct conf_queue a, b;
        create_cleared(s, &a, 1, (const int[]){ 0 });
        create_cleared(&other, &b, 1, (const int[]){ 0 });
        uint32_t ida = a.id, idb = b.id;
        long ra = suspend(s, &ida, 1, 0);
        long rb = suspend(&other, &idb, 1, 0);
        uint32_t other_state = other.rinfo.runtime_state;
        conf_session_end(&other);
        assert_int_equal(s->rinfo.runtime_state, DEBUG_RUNTIME_STATE_ENABLED);
        assert_int_equal(other_state, DEBUG_RUNTIME_STATE_ENABLED);
        assert_int_equal(ra, 1);
        assert_int_equal(rb, 1);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(new_queues_are_invalid_until_cleared, conf_fixture_spawned,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(counts_include_already_suspended, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(duplicate_ids_stay_invalid, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(unknown_id_is_invalid, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(resume_null_array_is_all, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(hws_clears_new_on_same_device, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(read_index_stops_while_suspended, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(only_named_queues_stop, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(queue_created_after_suspend_runs, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(destroy_of_suspended_queue_waits_for_resume, conf_fixture_attached,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(interrupted_destroy_leaves_queue_unsuspendable, conf_fixture_attached,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(destroyed_id_is_reused_by_a_new_queue, conf_fixture_attached,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(sdma_queues_are_suspended_too, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(two_debugged_processes_on_per_vmid_gpu, conf_fixture_attached,
                                                conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
