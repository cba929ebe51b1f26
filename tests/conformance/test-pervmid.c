/* SPDX-License-Identifier: MIT */
/*
 * One debug VMID per GPU: on devices where kfd_dbg_is_per_vmid_supported()
 * is false, kfd_dbg_trap_activate reserves the GPU's debug VMID
 * (reserve_debug_trap_vmid); a second debug-active process fails to
 * activate, the error is swallowed and its runtime_state becomes
 * ENABLED_BUSY, so SUSPEND is -EPERM — kfd-interface.md §9.3, §9.10, §3
 * step 8, §6. This program runs in a node whose GPU0 has PerVmidDebug=no
 * (pervmid.conf); every process has a pdd on every GPU, so GPU0 decides.
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

struct two {
        struct conf_session first, second;
};

static int two_alloc(void **state)
{
        struct two *t = malloc(sizeof(*t));
        if (!t)
                return -1;
        conf_session_init(&t->first);
        conf_session_init(&t->second);
        *state = t;
        if (conf_session_spawn(&t->first, true) < 0 || conf_session_spawn(&t->second, true) < 0)
                return -1;
        return 0;
}

static int two_free(void **state)
{
        struct two *t = *state;
        conf_session_end(&t->second);
        conf_session_end(&t->first);
        free(t);
        return 0;
}

static long suspend_fresh_queue(struct conf_session *s)
{
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        long r = conf_dbg_clear_new(conf_kfd(), s->target.pid);
        assert_int_equal(r, 0);
        uint32_t id = q.id;
        return conf_dbg_suspend(conf_kfd(), s->target.pid, &id, 1, 0);
}

/* ENABLE of the second process succeeds, but activation does not:
 * rinfo says ENABLED_BUSY and SUSPEND is -EPERM; the first is unaffected. */
static void second_debugged_process_is_busy(void **state)
{
        struct two *t = *state;
        assert_int_equal(conf_session_attach(&t->first, CONF_SUBSCRIPTION), 0);
        assert_int_equal(t->first.rinfo.runtime_state, DEBUG_RUNTIME_STATE_ENABLED);
        assert_int_equal(conf_session_attach(&t->second, CONF_SUBSCRIPTION), 0);
        assert_int_equal(t->second.rinfo.runtime_state, DEBUG_RUNTIME_STATE_ENABLED_BUSY);
        assert_int_equal(suspend_fresh_queue(&t->second), -EPERM);
        assert_int_equal(suspend_fresh_queue(&t->first), 1);
}

/* kfd_dbg_trap_disable releases the VMID (first session) and resets a
 * BUSY session without deactivating; a new session then activates. */
static void vmid_is_released_on_disable(void **state)
{
        struct two *t = *state;
        assert_int_equal(conf_session_attach(&t->first, CONF_SUBSCRIPTION), 0);
        assert_int_equal(conf_session_attach(&t->second, CONF_SUBSCRIPTION), 0);
        assert_int_equal(t->second.rinfo.runtime_state, DEBUG_RUNTIME_STATE_ENABLED_BUSY);
        assert_int_equal(conf_dbg_disable(conf_kfd(), t->second.target.pid), 0);
        assert_int_equal(conf_dbg_disable(conf_kfd(), t->first.target.pid), 0);
        t->first.enabled = t->second.enabled = false;

        struct kfd_runtime_info rinfo;
        assert_int_equal(conf_dbg_enable(conf_kfd(), t->second.target.pid, CONF_SUBSCRIPTION, t->second.fifo, &rinfo), 0);
        t->second.enabled = true;
        assert_int_equal(rinfo.runtime_state, DEBUG_RUNTIME_STATE_ENABLED);
        assert_int_equal(suspend_fresh_queue(&t->second), 1);
}

/* §5 case (a) on a busy GPU: the deferred activation at RUNTIME_ENABLE
 * fails, the state becomes ENABLED_BUSY (seen through QUERY_EXCEPTION_INFO)
 * and the handshake still completes with the ack. */
static void deferred_activation_becomes_busy(void **state)
{
        struct two *t = *state;
        assert_int_equal(conf_session_attach(&t->first, CONF_SUBSCRIPTION), 0);
        struct conf_session *s = &t->second;
        conf_session_end(s);
        assert_int_equal(conf_session_spawn(s, false), 0);
        assert_int_equal(conf_session_attach(s, CONF_SUBSCRIPTION), 0);
        assert_int_equal(s->rinfo.runtime_state, DEBUG_RUNTIME_STATE_DISABLED);
        assert_int_equal(conf_target_send(&s->target, "runtime-enable"), 0);
        assert_int_equal(conf_event_wait(s->fifo, CONF_REPLY_TIMEOUT_MS), 1);

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
        assert_int_equal(conf_dbg_trap(conf_kfd(), s->target.pid, KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO, &a), 0);
        assert_int_equal(info.runtime_state, DEBUG_RUNTIME_STATE_ENABLED_BUSY);
        assert_int_equal(conf_dbg_send_runtime_event(conf_kfd(), s->target.pid, KFD_EC_MASK(EC_PROCESS_RUNTIME), 0, 0),
                         0);
        char line[64];
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(conf_parse_result(line), 0);
        assert_int_equal(suspend_fresh_queue(s), -EPERM);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(second_debugged_process_is_busy, two_alloc, two_free),
                cmocka_unit_test_setup_teardown(vmid_is_released_on_disable, two_alloc, two_free),
                cmocka_unit_test_setup_teardown(deferred_activation_becomes_busy, two_alloc, two_free),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
