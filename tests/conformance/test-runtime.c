/* SPDX-License-Identifier: MIT */
/*
 * The runtime-enable handshake: kfd_chardev.c: kfd_ioctl_runtime_enable
 * (runtime_enable / runtime_disable) against the debugger's
 * SEND_RUNTIME_EVENT (kfd_debug.c: kfd_dbg_send_exception_to_runtime) —
 * kfd-interface.md §5 and §9.9.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

#define RUNTIME_MASK KFD_EC_MASK(EC_PROCESS_RUNTIME)

/* QUERY_EXCEPTION_INFO(EC_PROCESS_RUNTIME, clear) copies kfd_runtime_info (§5). */
static struct kfd_runtime_info runtime_exception_info(pid_t pid)
{
        struct kfd_runtime_info info;
        memset(&info, 0xa5, sizeof(info));
        struct kfd_ioctl_dbg_trap_args a = {
                .query_exception_info = {
                        .info_ptr = (uintptr_t)&info,
                        .info_size = sizeof(info),
                        .exception_code = EC_PROCESS_RUNTIME,
                        .clear_exception = 1,
                },
        };
        assert_int_equal(conf_dbg_trap(conf_kfd(), pid, KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO, &a), 0);
        assert_int_equal(a.query_exception_info.info_size, sizeof(info));
        return info;
}

/* The process-level EC_PROCESS_RUNTIME event: gpu_id and queue_id are 0. */
static void expect_runtime_event(pid_t pid)
{
        uint64_t mask = 0;
        uint32_t gpu_id = 1, queue_id = 1;
        assert_int_equal(conf_dbg_query_event(conf_kfd(), pid, 0, &mask, &gpu_id, &queue_id), 0);
        assert_true(mask & RUNTIME_MASK);
        assert_int_equal(gpu_id, 0);
        assert_int_equal(queue_id, 0);
}

/* The target opened /dev/kfd; this thread traces it and enabled debugging
 * before the runtime did (case (a)). */
static void attach_before_runtime(struct conf_session *s)
{
        assert_int_equal(conf_session_spawn(s, false), 0);
        assert_int_equal(conf_session_attach(s, CONF_SUBSCRIPTION), 0);
        assert_int_equal(s->rinfo.runtime_state, DEBUG_RUNTIME_STATE_DISABLED);
}

/* §5 case (a): the deferred activation raises EC_PROCESS_RUNTIME, writes
 * one event byte, and the target sleeps in RUNTIME_ENABLE until the ack;
 * only then do SUSPEND/RESUME stop returning EPERM (§3 step 8). */
static void attach_before_runtime_blocks_until_ack(void **state)
{
        struct conf_session *s = *state;
        attach_before_runtime(s);
        pid_t pid = s->target.pid;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), pid, NULL, 0, 0), -EPERM);

        assert_int_equal(conf_target_send(&s->target, "runtime-enable"), 0);
        assert_int_equal(conf_event_wait(s->fifo, CONF_REPLY_TIMEOUT_MS), 1);
        assert_true(conf_target_still_blocked(&s->target));
        expect_runtime_event(pid);
        struct kfd_runtime_info info = runtime_exception_info(pid);
        assert_int_equal(info.runtime_state, DEBUG_RUNTIME_STATE_ENABLED);
        assert_int_equal(info.r_debug, CONF_APP_R_DEBUG);
        assert_int_equal(conf_dbg_query_event(conf_kfd(), pid, 0, NULL, NULL, NULL), -EAGAIN);
        assert_true(conf_target_still_blocked(&s->target));

        /* ROCdbgapi acks with gpu_id = queue_id = -1; both are ignored for this bit. */
        assert_int_equal(conf_dbg_send_runtime_event(conf_kfd(), pid, RUNTIME_MASK, UINT32_MAX, UINT32_MAX), 0);
        char line[64];
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(conf_parse_result(line), 0);
        uint32_t none = 0;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), pid, &none, 0, 0), 0);
}

/* §5 "Unblocking": runtime_enable_sema counts; an ack sent before anybody
 * waits is banked and the next wait returns at once. The event is still
 * raised. */
static void early_ack_is_banked(void **state)
{
        struct conf_session *s = *state;
        attach_before_runtime(s);
        pid_t pid = s->target.pid;
        assert_int_equal(conf_dbg_send_runtime_event(conf_kfd(), pid, RUNTIME_MASK, 0, 0), 0);
        assert_int_equal(conf_target_call(&s->target, "runtime-enable"), 0);
        assert_int_equal(conf_event_wait(s->fifo, CONF_REPLY_TIMEOUT_MS), 1);
        expect_runtime_event(pid);
        /* A counting semaphore: the one ack was used up, the disable's wait
         * blocks again until the next one. */
        assert_int_equal(conf_target_send(&s->target, "runtime-disable"), 0);
        assert_true(conf_target_still_blocked(&s->target));
        assert_int_equal(conf_dbg_send_runtime_event(conf_kfd(), pid, RUNTIME_MASK, 0, 0), 0);
        char line[128];
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(conf_parse_result(line), 0);
}

/* runtime_enable: runtime_state != DISABLED -> -EBUSY (§5, §9.9). */
static void second_runtime_enable_is_ebusy(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_target_call(&s->target, "runtime-enable"), -EBUSY);
}

/* runtime_enable: any queue on any device -> -EEXIST (§5, §9.9). */
static void runtime_enable_after_queue_is_eexist(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_session_spawn(s, false), 0);
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[s->n_gpus - 1], &q), 0);
        assert_int_equal(conf_target_call(&s->target, "runtime-enable"), -EEXIST);
}

/* §5 case (b): attaching to an enabled runtime raises nothing and writes no
 * byte; the runtime's later disable raises EC_PROCESS_RUNTIME (info state 0)
 * and sleeps until the ack. Afterwards SUSPEND is EPERM again. */
static void runtime_disable_blocks_until_ack(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        assert_int_equal(s->rinfo.runtime_state, DEBUG_RUNTIME_STATE_ENABLED);
        assert_int_equal(conf_event_wait(s->fifo, 0), 0);
        assert_int_equal(conf_dbg_query_event(conf_kfd(), pid, 0, NULL, NULL, NULL), -EAGAIN);

        assert_int_equal(conf_target_send(&s->target, "runtime-disable"), 0);
        assert_int_equal(conf_event_wait(s->fifo, CONF_REPLY_TIMEOUT_MS), 1);
        assert_true(conf_target_still_blocked(&s->target));
        expect_runtime_event(pid);
        struct kfd_runtime_info info = runtime_exception_info(pid);
        assert_int_equal(info.runtime_state, DEBUG_RUNTIME_STATE_DISABLED);
        assert_int_equal(conf_dbg_send_runtime_event(conf_kfd(), pid, RUNTIME_MASK, 0, 0), 0);
        char line[64];
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(conf_parse_result(line), 0);
        uint32_t none = 0;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), pid, &none, 0, 0), -EPERM);
}

/* runtime_disable without a debugger does not wait; the runtime can then be
 * enabled again (state is DISABLED, no queues). */
static void runtime_disable_without_debugger_returns(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_target_call(&s->target, "runtime-disable"), 0);
        assert_int_equal(conf_target_call(&s->target, "runtime-enable"), 0);
}

/* kfd_dbg_send_exception_to_runtime: EC_DEVICE_MEMORY_VIOLATION for a
 * gpu_id that is not one of the target's devices -> -ENODEV (§3). */
static void send_runtime_event_unknown_gpu_is_enodev(void **state)
{
        struct conf_session *s = *state;
        uint32_t bogus = 0;
        for (bool clash = true; clash;) {
                bogus++;
                clash = false;
                for (int i = 0; i < s->n_gpus; i++)
                        clash |= s->gpu_ids[i] == bogus;
        }
        assert_int_equal(conf_dbg_send_runtime_event(conf_kfd(), s->target.pid,
                                                     KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION), bogus, 0),
                         -ENODEV);
}

/* runtime_enable: a signal ends the wait with -EINTR and sets
 * is_runtime_retry; the next RUNTIME_ENABLE goes straight back into the wait
 * (not -EBUSY, although the state is already ENABLED) and one ack ends it. */
static void interrupted_runtime_enable_retries_the_wait(void **state)
{
        struct conf_session *s = *state;
        attach_before_runtime(s);
        pid_t pid = s->target.pid;
        assert_int_equal(conf_target_send(&s->target, "runtime-enable"), 0);
        assert_int_equal(conf_event_wait(s->fifo, CONF_REPLY_TIMEOUT_MS), 1);
        assert_true(conf_target_still_blocked(&s->target));
        assert_int_equal(kill(pid, SIGUSR1), 0);
        char line[64];
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(conf_parse_result(line), -EINTR);

        assert_int_equal(conf_target_send(&s->target, "runtime-enable"), 0);
        assert_true(conf_target_still_blocked(&s->target));
        assert_int_equal(conf_dbg_send_runtime_event(conf_kfd(), pid, RUNTIME_MASK, 0, 0), 0);
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(conf_parse_result(line), 0);
}

/* kfd_ioctl_runtime_enable never writes capabilities_mask: the caller's
 * value comes back unchanged (§2.4). */
static void runtime_enable_leaves_capabilities_mask(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_session_spawn(s, false), 0);
        assert_int_equal(conf_target_send(&s->target, "runtime-enable"), 0);
        char line[64];
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        long r = -1;
        unsigned caps = 0;
        assert_int_equal(sscanf(line, "ok %ld caps %x", &r, &caps), 2);
        assert_int_equal(r, 0);
        assert_int_equal(caps, CONF_APP_CAPS_MARKER);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(attach_before_runtime_blocks_until_ack, conf_fixture_empty, conf_fixture_end),
                cmocka_unit_test_setup_teardown(early_ack_is_banked, conf_fixture_empty, conf_fixture_end),
                cmocka_unit_test_setup_teardown(second_runtime_enable_is_ebusy, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(runtime_enable_after_queue_is_eexist, conf_fixture_empty, conf_fixture_end),
                cmocka_unit_test_setup_teardown(runtime_disable_blocks_until_ack, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(runtime_disable_without_debugger_returns, conf_fixture_spawned,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(interrupted_runtime_enable_retries_the_wait, conf_fixture_empty,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(runtime_enable_leaves_capabilities_mask, conf_fixture_empty,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(send_runtime_event_unknown_gpu_is_enodev, conf_fixture_attached,
                                                conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
