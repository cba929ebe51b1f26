/* SPDX-License-Identifier: MIT */
/*
 * kfdemu only — never run this on a real node: it oopses the kernel.
 *
 * SUSPEND_QUEUES with queue_array_ptr = 0 and num_queues > 0: suspend_queues
 * has no NULL check, q_array_invalidate dereferences NULL (kfd-interface.md
 * §4.1) and the task dies in the oops holding target->mutex (§3 step 6).
 * From then on every DBG_TRAP op on the target and the target's own ioctls
 * sleep forever in mutex_lock; the calls checked here are bounded.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf-helpers.h"

/* A process that becomes the target's tracer and runs one DBG_TRAP op. */
static pid_t debugger_running(pid_t target, uint32_t op, struct kfd_ioctl_dbg_trap_args *args)
{
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                int kfd = conf_open_kfd();
                if (kfd < 0 || conf_seize(target) < 0)
                        _exit(8);
                _exit(conf_dbg_trap(kfd, target, op, args) < 0 ? 1 : 0);
        }
        return child;
}

static void null_suspend_array_kills_caller_and_locks_target(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        int status;

        assert_int_equal(conf_detach(pid), 0);
        s->target.traced = false;
        struct kfd_ioctl_dbg_trap_args oops = { .suspend_queues = { .queue_array_ptr = 0, .num_queues = 1 } };
        pid_t first = debugger_running(pid, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, &oops);
        assert_int_equal(waitpid(first, &status, 0), first);
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
                fail_msg("the debugger that oopsed was not killed (status %#x)", status);

        /* The target's mutex stays taken: a second debugger's op sleeps. */
        struct kfd_ioctl_dbg_trap_args query = { 0 };
        pid_t second = debugger_running(pid, KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT, &query);
        conf_sleep_ms(CONF_BLOCKED_MS);
        assert_int_equal(waitpid(second, &status, WNOHANG), 0);
        kill(second, SIGKILL);
        assert_int_equal(waitpid(second, &status, 0), second);

        /* So does the target's own CREATE_QUEUE (p->mutex). */
        assert_int_equal(conf_target_send(&s->target, "create %u", s->gpu_ids[0]), 0);
        assert_true(conf_target_still_blocked(&s->target));
        /* DISABLE would sleep too: the target's exit ends the session. */
        s->enabled = false;
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(null_suspend_array_kills_caller_and_locks_target,
                                                conf_fixture_attached, conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
