/* SPDX-License-Identifier: MIT */
/*
 * kfdemu only (fault-queue-hang.conf, Linux 6.10): the same hang as
 * test-fault-queue-reset.c on a kernel without per-queue reset.
 * unmap_queues_cpsch logs the queue that did not answer and returns
 * -ETIME: the suspend marks the device's slots ERROR and counts nothing,
 * no queue is reset and nobody gets a reset event — kfd-interface.md §16.2.
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
#define CONF_QUEUE_ERROR (1u << KFD_DBG_QUEUE_ERROR_BIT)

static void hang_fails_the_suspend_only(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue busy, idle;

        long ev = conf_target_call(&s->target, "hw-event");
        assert_true(ev > 0);
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &busy), 0);
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &idle), 0);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), s->target.pid), 0);
        assert_int_equal(conf_target_submit(&s->target, busy.id, KERNEL_NS, KERNELS), KERNELS);
        assert_int_equal(conf_wait_u64_at_least(&s->target, busy.rptr, 1, CONF_REPLY_TIMEOUT_MS), 0);

        uint32_t id = idle.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), s->target.pid, &id, 1, 0), 0);
        assert_int_equal(id, idle.id | CONF_QUEUE_ERROR);
        assert_int_equal(conf_target_call(&s->target, "wait-event %ld %d", ev, 200), KFD_IOC_WAIT_RESULT_TIMEOUT);
        assert_false(conf_u64_stays(&s->target, busy.rptr, 100));
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(hang_fails_the_suspend_only, conf_fixture_attached, conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
