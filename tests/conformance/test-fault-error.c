/* SPDX-License-Identifier: MIT */
/*
 * kfdemu only (fault-error.conf): every RESUME_QUEUES preemption fails at
 * once, as execute_queues_cpsch does with -EIO while a GPU reset holds the
 * device. resume_queues then ORs ERROR into the device's slots and counts
 * nothing. An unmap with no runlist mapped is never sent
 * (unmap_queues_cpsch returns at once), so it cannot fail —
 * kfd-interface.md §4.3, §16.3, §16.4.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "conf-helpers.h"

#define CONF_QUEUE_ERROR (1u << KFD_DBG_QUEUE_ERROR_BIT)

/* Another queue of the GPU stays active, so the runlist is mapped and the
 * resume's unmap is sent: it fails. */
static void failed_resume_sets_error(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q, active;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &active), 0);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), s->target.pid), 0);

        uint32_t id = q.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), s->target.pid, &id, 1, 0), 1);
        assert_int_equal(id, q.id);
        uint32_t ids[2] = { q.id, 99 };
        assert_int_equal(conf_dbg_resume(conf_kfd(), s->target.pid, ids, 2), 0);
        assert_int_equal(ids[0], q.id | CONF_QUEUE_ERROR);
        assert_int_equal(ids[1], 99 | CONF_QUEUE_INVALID);
}

/* The GPU's only queue suspended: map_queues_cpsch sent no runlist, so the
 * resume's unmap returns before the fault could hit it. */
static void resume_without_runlist_sends_no_unmap(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[1], &q), 0);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), s->target.pid), 0);

        uint32_t id = q.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), s->target.pid, &id, 1, 0), 1);
        id = q.id;
        assert_int_equal(conf_dbg_resume(conf_kfd(), s->target.pid, &id, 1), 1);
        assert_int_equal(id, q.id);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(failed_resume_sets_error, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(resume_without_runlist_sends_no_unmap, conf_fixture_attached,
                                                conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
