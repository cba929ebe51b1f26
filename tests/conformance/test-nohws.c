/* SPDX-License-Identifier: MIT */
/*
 * amdgpu.sched_policy = KFD_SCHED_POLICY_NO_HWS (2) disables the whole
 * debugger API: kfd_chardev.c: kfd_ioctl_set_debug_trap checks it first, so
 * every op, ENABLE and DISABLE included, fails with -EINVAL before the pid
 * is even looked up — kfd-interface.md §3 step 1 and §9.1. This program runs
 * in a node configured with SchedPolicy=2 (nohws.conf).
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

static void expect_every_op_einval(pid_t pid, int dbg_fd, const char *what)
{
        for (uint32_t op = KFD_IOC_DBG_TRAP_ENABLE; op <= KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT + 1; op++) {
                struct kfd_ioctl_dbg_trap_args a = { 0 };
                if (op == KFD_IOC_DBG_TRAP_ENABLE)
                        a.enable.dbg_fd = (uint32_t)dbg_fd;
                long r = conf_dbg_trap(conf_kfd(), pid, op, &a);
                if (r != -EINVAL)
                        fail_msg("sched_policy=2, op %u on %s: got %ld, want -EINVAL", op, what, r);
        }
}

static void the_module_parameter_says_2(void **state)
{
        char buf[32];
        assert_true(conf_read_file("/sys/module/amdgpu/parameters/sched_policy", buf, sizeof(buf)) > 0);
        assert_int_equal(strtol(buf, NULL, 10), 2);
}

/* The target only opened /dev/kfd: nothing else is needed to reach step 1. */
static void every_op_on_traced_target_is_einval(void **state)
{
        struct conf_target t;
        assert_int_equal(conf_target_spawn(&t), 0);
        long opened = conf_target_call(&t, "open");
        int seized = conf_seize(t.pid);
        t.traced = true;
        _cleanup_close_ int fifo = conf_event_fifo();
        if (opened == 0 && seized == 0)
                expect_every_op_einval(t.pid, fifo, "a traced target");
        conf_target_kill(&t);
        assert_int_equal(opened, 0);
        assert_int_equal(seized, 0);
}

static void every_op_on_unknown_pid_is_einval(void **state)
{
        pid_t gone = conf_unused_pid();
        assert_true(gone > 0);
        expect_every_op_einval(gone, -1, "a pid nobody has");
}

static void every_op_on_self_is_einval(void **state)
{
        _cleanup_close_ int fifo = conf_event_fifo();
        expect_every_op_einval(getpid(), fifo, "the caller itself");
}

/* GET_VERSION has no such check (§1). */
static void get_version_still_works(void **state)
{
        struct kfd_ioctl_get_version_args v = { 0 };
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_VERSION, &v), 0);
        assert_int_equal(v.major_version, 1);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(the_module_parameter_says_2),
                cmocka_unit_test(every_op_on_traced_target_is_einval),
                cmocka_unit_test(every_op_on_unknown_pid_is_einval),
                cmocka_unit_test(every_op_on_self_is_einval),
                cmocka_unit_test(get_version_still_works),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
