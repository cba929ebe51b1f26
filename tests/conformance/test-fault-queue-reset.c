/* SPDX-License-Identifier: MIT */
/*
 * kfdemu only (fault-queue-reset.conf, Linux 6.12): the unmap fence comes
 * back but a busy queue did not answer (check_preemption_failed).
 * reset_queues_on_hws_hang → reset_hung_queues resets just that queue
 * (set_queue_as_reset), and kfd_signal_reset_event tells only the
 * processes with a reset queue; the suspend itself succeeds. The reset
 * queue runs again once a debugger suspends and resumes it
 * (resume_single_queue) — kfd-interface.md §16.2.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "conf-helpers.h"

#define KERNEL_NS 20000000ull
#define KERNELS 60u

static void only_the_hung_queue_is_reset(void **state)
{
        struct conf_session *s = *state, other;
        struct conf_queue busy, idle, survivor;

        long ev = conf_target_call(&s->target, "hw-event");
        assert_true(ev > 0);
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &busy), 0);
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &idle), 0);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), s->target.pid), 0);
        conf_session_init(&other);
        assert_int_equal(conf_session_spawn(&other, true), 0);
        long oev = conf_target_call(&other.target, "hw-event");
        assert_true(oev > 0);
        assert_int_equal(conf_target_create_queue(&other.target, s->gpu_ids[0], &survivor), 0);
        assert_int_equal(conf_target_submit(&s->target, busy.id, KERNEL_NS, KERNELS), KERNELS);
        assert_int_equal(conf_wait_u64_at_least(&s->target, busy.rptr, 1, CONF_REPLY_TIMEOUT_MS), 0);

        /* The idle queue is the one suspended; the busy one hangs the
         * device-wide unmap and is reset. */
        uint32_t id = idle.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), s->target.pid, &id, 1, 0), 1);
        assert_int_equal(id, idle.id);
        assert_int_equal(conf_target_call(&s->target, "wait-event %ld %d", ev, CONF_REPLY_TIMEOUT_MS / 2),
                         KFD_IOC_WAIT_RESULT_COMPLETE);
        assert_true(conf_u64_stays(&s->target, busy.rptr, 100));

        /* The reset queue is off the runlist until a debugger suspends and
         * resumes it; resume_single_queue maps it again and it runs on. */
        uint64_t stopped_at;
        assert_int_equal(conf_read_u64(s->target.pid, busy.rptr, &stopped_at), 0);
        id = busy.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), s->target.pid, &id, 1, 0), 1);
        assert_int_equal(id, busy.id);
        assert_true(conf_u64_stays(&s->target, busy.rptr, 100));
        assert_int_equal(conf_dbg_resume(conf_kfd(), s->target.pid, &id, 1), 1);
        assert_int_equal(id, busy.id);
        assert_int_equal(conf_wait_u64_at_least(&s->target, busy.rptr, stopped_at + 1, CONF_REPLY_TIMEOUT_MS), 0);

        /* The other process had no queue reset: no event, and its queue runs. */
        assert_int_equal(conf_target_call(&other.target, "wait-event %ld %d", oev, 200),
                         KFD_IOC_WAIT_RESULT_TIMEOUT);
        assert_int_equal(conf_target_submit(&other.target, survivor.id, 1000000, 3), 3);
        assert_int_equal(conf_wait_u64_at_least(&other.target, survivor.rptr, 3, CONF_REPLY_TIMEOUT_MS), 0);
        conf_session_end(&other);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(only_the_hung_queue_is_reset, conf_fixture_attached, conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
