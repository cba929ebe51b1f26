/* SPDX-License-Identifier: MIT */
/*
 * kfdemu only (fault-timeout.conf): a SUSPEND_QUEUES whose unmap fence
 * never comes back. unmap_queues_cpsch waits queue_preemption_timeout_ms
 * in amdkfd_fence_wait_timeout, then kfd_hws_hang marks every process with
 * a queue on the GPU and resets the GPU, whose pre-reset step sets every
 * such process's HW exception events (kfd_signal_reset_event).
 * suspend_queues ORs ERROR into the device's slots and does not count them
 * — kfd-interface.md §4.1, §16.1.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "conf-helpers.h"

#define TIMEOUT_MS 300 /* QueuePreemptionTimeoutMs of fault-timeout.conf */
/* Work that outlasts the test (the ring holds 64 packets). */
#define KERNEL_NS 20000000ull
#define KERNELS 60u
#define CONF_QUEUE_ERROR (1u << KFD_DBG_QUEUE_ERROR_BIT)

static uint64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A queue on `gpu_id` of `t` that has started its work. */
static void busy_queue(struct conf_target *t, uint32_t gpu_id, struct conf_queue *q)
{
        assert_int_equal(conf_target_create_queue(t, gpu_id, q), 0);
        assert_int_equal(conf_target_submit(t, q->id, KERNEL_NS, KERNELS), KERNELS);
        assert_int_equal(conf_wait_u64_at_least(t, q->rptr, 1, CONF_REPLY_TIMEOUT_MS), 0);
}

static void timeout_resets_the_gpu(void **state)
{
        struct conf_session *s = *state, other;
        struct conf_queue q0, q1, oq;

        /* The target has a queue on each GPU; another process, not
         * debugged, has one on GPU 0. Both listen for GPU resets as ROCr
         * does. */
        long ev = conf_target_call(&s->target, "hw-event");
        assert_true(ev > 0);
        busy_queue(&s->target, s->gpu_ids[0], &q0);
        busy_queue(&s->target, s->gpu_ids[1], &q1);
        conf_session_init(&other);
        assert_int_equal(conf_session_spawn(&other, true), 0);
        long oev = conf_target_call(&other.target, "hw-event");
        assert_true(oev > 0);
        busy_queue(&other.target, s->gpu_ids[0], &oq);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), s->target.pid), 0);

        uint32_t id = q0.id;
        uint64_t start = now_ms();
        long r = conf_dbg_suspend(conf_kfd(), s->target.pid, &id, 1, 0);
        uint64_t took = now_ms() - start;
        assert_int_equal(r, 0);
        assert_int_equal(id, q0.id | CONF_QUEUE_ERROR);
        if (took < TIMEOUT_MS)
                fail_msg("SUSPEND returned after %lu ms, before the %d ms fence timeout", (unsigned long)took,
                         TIMEOUT_MS);

        /* Both processes on GPU 0 hear of the reset; their queues there
         * are gone, the target's queue on GPU 1 runs on. */
        assert_int_equal(conf_target_call(&s->target, "wait-event %ld %d", ev, CONF_REPLY_TIMEOUT_MS / 2),
                         KFD_IOC_WAIT_RESULT_COMPLETE);
        assert_int_equal(conf_target_call(&other.target, "wait-event %ld %d", oev, CONF_REPLY_TIMEOUT_MS / 2),
                         KFD_IOC_WAIT_RESULT_COMPLETE);
        assert_true(conf_u64_stays(&s->target, q0.rptr, 100));
        assert_true(conf_u64_stays(&other.target, oq.rptr, 100));
        assert_false(conf_u64_stays(&s->target, q1.rptr, 100));

        /* Only the first preemption failed: GPU 1's queue suspends. */
        id = q1.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), s->target.pid, &id, 1, 0), 1);
        assert_int_equal(id, q1.id);
        conf_session_end(&other);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(timeout_resets_the_gpu, conf_fixture_attached, conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
