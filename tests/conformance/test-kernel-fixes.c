/* SPDX-License-Identifier: MIT */
/*
 * amdkfd with the 2026 fixes (kernel-fixes.conf): get_queue_ids refuses
 * more ids than a process can have queues and a missing array with ids,
 * instead of copying or oopsing; wait_on_destroy_queue refuses a second
 * destroy of a queue while one sleeps, and a destroy ended by a signal
 * leaves the queue suspendable again — kfd-interface.md §16.5, §16.6.
 * The same binary judges a real kernel that has these fixes.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

#define MAX_IDS 1024u /* KFD_MAX_NUM_OF_QUEUES_PER_PROCESS */

static void suspend_refuses_more_ids_than_queues(void **state)
{
        struct conf_session *s = *state;
        _cleanup_free_ uint32_t *ids = calloc(MAX_IDS + 1, sizeof(uint32_t));
        assert_non_null(ids);
        assert_int_equal(conf_dbg_suspend(conf_kfd(), s->target.pid, ids, MAX_IDS + 1, 0), -EINVAL);
        /* Refused before the copy: the array is untouched. */
        assert_int_equal(ids[0], 0);
        assert_int_equal(conf_dbg_resume(conf_kfd(), s->target.pid, ids, MAX_IDS + 1), -EINVAL);
        /* 1024 is allowed: every slot names no queue. */
        assert_int_equal(conf_dbg_suspend(conf_kfd(), s->target.pid, ids, MAX_IDS, 0), 0);
        assert_int_equal(ids[MAX_IDS - 1], CONF_QUEUE_INVALID);
}

static void suspend_without_array_is_einval(void **state)
{
        struct conf_session *s = *state;
        struct kfd_ioctl_dbg_trap_args a = { 0 };
        a.suspend_queues.num_queues = 1;
        assert_int_equal(conf_dbg_trap(conf_kfd(), s->target.pid, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, &a), -EINVAL);
        /* The target's mutex was not left taken: the next op works. */
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), s->target.pid), 0);
}

/* Some thread of `pid` other than the leader sleeps in a kfd call. */
static bool other_thread_in_kfd_call(pid_t pid)
{
        char dir[64];
        snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
        DIR *d = opendir(dir);
        bool found = false;
        if (!d)
                return false;
        for (struct dirent *e; !found && (e = readdir(d));) {
                char path[384], buf[256];
                if (e->d_name[0] == '.' || atoi(e->d_name) == pid)
                        continue;
                snprintf(path, sizeof(path), "%s/%s/syscall", dir, e->d_name);
                long nr = conf_read_file(path, buf, sizeof(buf)) > 0 ? strtol(buf, NULL, 10) : -1;
                found = nr == SYS_ioctl || nr == SYS_ppoll;
        }
        closedir(d);
        return found;
}

static void second_destroy_is_ebusy(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), s->target.pid), 0);
        uint32_t id = q.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), s->target.pid, &id, 1, 0), 1);

        assert_int_equal(conf_target_send(&s->target, "destroy-in-thread %u", q.id), 0);
        for (int i = 0; !other_thread_in_kfd_call(s->target.pid); i++) {
                if (i * 10 >= CONF_REPLY_TIMEOUT_MS)
                        fail_msg("the destroy thread never slept in the kernel");
                conf_sleep_ms(10);
        }
        conf_sleep_ms(CONF_BLOCKED_MS);
        assert_int_equal(conf_target_call(&s->target, "destroy %u", q.id), -EBUSY);

        /* The first destroy finishes once the queue is resumed. */
        id = q.id;
        assert_int_equal(conf_dbg_resume(conf_kfd(), s->target.pid, &id, 1), 1);
        char line[64];
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(conf_parse_result(line), 0);
}

static void interrupted_destroy_leaves_queue_suspendable(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), s->target.pid), 0);
        uint32_t id = q.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), s->target.pid, &id, 1, 0), 1);
        assert_int_equal(conf_target_send(&s->target, "destroy %u", q.id), 0);
        assert_true(conf_target_still_blocked(&s->target));
        assert_int_equal(kill(s->target.pid, SIGUSR1), 0);
        char line[64];
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(conf_parse_result(line), -EINTR);

        id = q.id;
        assert_int_equal(conf_dbg_resume(conf_kfd(), s->target.pid, &id, 1), 1);
        id = q.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), s->target.pid, &id, 1, 0), 1);
        assert_int_equal(id, q.id);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(suspend_refuses_more_ids_than_queues, conf_fixture_attached,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(suspend_without_array_is_einval, conf_fixture_attached,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(second_destroy_is_ebusy, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(interrupted_destroy_leaves_queue_suspendable, conf_fixture_attached,
                                                conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
