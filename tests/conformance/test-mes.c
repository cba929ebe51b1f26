/* SPDX-License-Identifier: MIT */
/*
 * The MES path of kfd_device_queue_manager.c: suspend_queues /
 * resume_queues on a GPU that schedules with MES (gfx11+): per-queue
 * remove_queue_mes / add_queue_mes instead of a device-wide HWS unmap, and
 * the exception_mask clear applied only to queues that succeeded —
 * kfd-interface.md §4.1 "MES path", §9.5. This program runs in a node whose
 * GPU0 uses MES and GPU1 HWS (mes.conf).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

#define NEW_MASK KFD_EC_MASK(EC_QUEUE_NEW)

/* Same call as the HWS side-effect test, different answer: on MES the NEW
 * bit of the queue that got -EBUSY stays, so the retry is INVALID again;
 * the GPU1 (HWS) half of the same call does clear it. */
static void mes_clears_only_succeeded_queues(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        assert_true(s->n_gpus > 1);
        uint32_t mes = s->gpu_ids[0], hws = s->gpu_ids[1];
        struct conf_queue mes_ready, hws_ready, mes_fresh, hws_fresh;
        assert_int_equal(conf_target_create_queue(&s->target, mes, &mes_ready), 0);
        assert_int_equal(conf_target_create_queue(&s->target, hws, &hws_ready), 0);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), pid), 0);
        assert_int_equal(conf_target_create_queue(&s->target, mes, &mes_fresh), 0);
        assert_int_equal(conf_target_create_queue(&s->target, hws, &hws_fresh), 0);

        uint32_t ids[4] = { mes_ready.id, mes_fresh.id, hws_ready.id, hws_fresh.id };
        assert_int_equal(conf_dbg_suspend(conf_kfd(), pid, ids, 4, NEW_MASK), 2);
        assert_int_equal(ids[0], mes_ready.id);
        assert_int_equal(ids[1], mes_fresh.id | CONF_QUEUE_INVALID);
        assert_int_equal(ids[2], hws_ready.id);
        assert_int_equal(ids[3], hws_fresh.id | CONF_QUEUE_INVALID);

        uint32_t retry[2] = { mes_fresh.id, hws_fresh.id };
        assert_int_equal(conf_dbg_suspend(conf_kfd(), pid, retry, 2, 0), 1);
        assert_int_equal(retry[0], mes_fresh.id | CONF_QUEUE_INVALID);
        assert_int_equal(retry[1], hws_fresh.id);
}

/* remove_queue_mes / add_queue_mes: a suspended queue makes no progress and
 * runs again after RESUME, with the same counts as on HWS. */
static void mes_suspend_and_resume(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), pid), 0);
        assert_int_equal(conf_target_submit(&s->target, q.id, 2000000, 30), 30);
        assert_int_equal(conf_wait_u64_at_least(&s->target, q.rptr, 1, CONF_REPLY_TIMEOUT_MS), 0);
        uint32_t id = q.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), pid, &id, 1, 0), 1);
        assert_true(conf_u64_stays(&s->target, q.rptr, 50));
        assert_int_equal(conf_dbg_suspend(conf_kfd(), pid, &id, 1, 0), 1);
        assert_int_equal(conf_dbg_resume(conf_kfd(), pid, &id, 1), 1);
        assert_int_equal(conf_wait_u64_at_least(&s->target, q.rptr, 30, CONF_REPLY_TIMEOUT_MS), 0);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(mes_clears_only_succeeded_queues, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(mes_suspend_and_resume, conf_fixture_attached, conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
