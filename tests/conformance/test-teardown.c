/* SPDX-License-Identifier: MIT */
/*
 * How debug sessions end: kfd_debug.c: kfd_dbg_trap_disable /
 * kfd_dbg_trap_deactivate, kfd_process.c:
 * kfd_process_notifier_release_internal, kfd_release, and the runtime
 * disable of kfd_chardev.c: runtime_disable — kfd-interface.md §6 (a)-(d)
 * and §5 "Disable".
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

#define KERNEL_NS 2000000ull
#define KERNELS 30u

/* A queue with work queued, NEW cleared, and running. */
static void busy_queue(struct conf_session *s, struct conf_queue *q)
{
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], q), 0);
        assert_int_equal(conf_target_submit(&s->target, q->id, KERNEL_NS, KERNELS), KERNELS);
        assert_int_equal(conf_wait_u64_at_least(&s->target, q->rptr, 1, CONF_REPLY_TIMEOUT_MS), 0);
}

static void suspend_one(int kfd, pid_t pid, const struct conf_queue *q)
{
        assert_int_equal(conf_dbg_clear_new(kfd, pid), 0);
        uint32_t id = q->id;
        assert_int_equal(conf_dbg_suspend(kfd, pid, &id, 1, 0), 1);
}

static void expect_stopped(struct conf_session *s, const struct conf_queue *q)
{
        if (!conf_u64_stays(&s->target, q->rptr, 50))
                fail_msg("queue %u of pid %d makes progress although it should be suspended", q->id, (int)s->target.pid);
}

static void expect_runs_to_completion(struct conf_session *s, const struct conf_queue *q)
{
        if (conf_wait_u64_at_least(&s->target, q->rptr, KERNELS, CONF_REPLY_TIMEOUT_MS) < 0)
                fail_msg("queue %u of pid %d stays suspended after the session ended", q->id, (int)s->target.pid);
}

/* A process other than the tracer: its own /dev/kfd, then DISABLE. */
static long disable_from_other_process(pid_t pid)
{
        pid_t child = fork();
        if (child < 0)
                return -errno;
        if (child == 0) {
                int kfd = conf_open_kfd();
                _exit(kfd < 0 ? 100 : (int)-conf_dbg_disable(kfd, pid));
        }
        int status;
        if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
                return -ECHILD;
        return -(long)WEXITSTATUS(status);
}

/* What a debugger does to stop one queue: seize, ENABLE, clear NEW,
 * suspend. Returns SUSPEND's result (1) or the first error. */
static long debugger_suspend(int kfd, pid_t target, uint32_t qid)
{
        int fifo = conf_event_fifo();
        uint32_t id = qid;
        long r = kfd < 0 ? kfd : conf_seize(target);
        if (r >= 0)
                r = conf_dbg_enable(kfd, target, CONF_SUBSCRIPTION, fifo, NULL);
        if (r >= 0)
                r = conf_dbg_clear_new(kfd, target);
        if (r >= 0)
                r = conf_dbg_suspend(kfd, target, &id, 1, 0);
        return r;
}

/* The forked debugger: suspend, report, then keep servicing the tracee
 * until it is killed. */
static void __attribute__((noreturn)) run_debugger(pid_t target, uint32_t qid, int report_fd)
{
        dprintf(report_fd, "%ld\n", debugger_suspend(conf_open_kfd(), target, qid));
        for (;;) {
                conf_service_stops(target);
                conf_sleep_ms(5);
        }
}

/* The forked debugger that suspends, reports, and then execs the helper
 * application (which prints READY on stdout once the new image runs). */
static void __attribute__((noreturn)) run_execing_debugger(pid_t target, uint32_t qid, int report_fd, int in, int out)
{
        dprintf(report_fd, "%ld\n", debugger_suspend(conf_open_kfd(), target, qid));
        dup2(in, STDIN_FILENO);
        dup2(out, STDOUT_FILENO);
        execl(conf_app_path(), conf_app_path(), (char *)NULL);
        _exit(127);
}

static long read_report(int fd)
{
        char buf[32] = "";
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        return n > 0 ? strtol(buf, NULL, 10) : -EPIPE;
}

/* §6 (a): the debugger's mm goes away (SIGKILL) -> the notifier disables
 * every session it held, which resumes the target's queues; the target is
 * then free to be debugged again. */
static void debugger_killed_resumes_target(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        busy_queue(s, &q);
        int report[2];
        assert_int_equal(pipe2(report, O_CLOEXEC), 0);
        pid_t debugger = fork();
        assert_true(debugger >= 0);
        if (debugger == 0)
                run_debugger(s->target.pid, q.id, report[1]);
        close(report[1]);
        long suspended = read_report(report[0]);
        close(report[0]);
        bool stopped = suspended == 1 && conf_u64_stays(&s->target, q.rptr, 50);
        kill(debugger, SIGKILL);
        waitpid(debugger, NULL, 0);
        if (!stopped)
                fail_msg("the forked debugger could not stop the queue (SUSPEND returned %ld)", suspended);
        expect_runs_to_completion(s, &q);
        assert_int_equal(conf_session_attach(s, CONF_SUBSCRIPTION), 0);
}

/* §6 (a): an exec of the debugger releases its mm just like an exit: the
 * sessions it held end and the target's queues run again. */
static void debugger_exec_resumes_target(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        busy_queue(s, &q);
        int report[2], in[2], out[2];
        assert_int_equal(pipe2(report, O_CLOEXEC), 0);
        assert_int_equal(pipe2(in, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        pid_t debugger = fork();
        assert_true(debugger >= 0);
        if (debugger == 0)
                run_execing_debugger(s->target.pid, q.id, report[1], in[0], out[1]);
        close(report[1]);
        close(in[0]);
        close(out[1]);
        long suspended = read_report(report[0]);
        close(report[0]);
        struct conf_target execed = { .pid = debugger, .cmd_fd = in[1], .out_fd = out[0] };
        char line[64];
        int ready = conf_target_reply(&execed, line, sizeof(line), CONF_REPLY_TIMEOUT_MS);
        bool resumed = conf_wait_u64_at_least(&s->target, q.rptr, KERNELS, CONF_REPLY_TIMEOUT_MS) == 0;
        conf_target_kill(&execed);
        assert_int_equal(suspended, 1);
        assert_int_equal(ready, 0);
        if (!resumed)
                fail_msg("queue %u stays suspended after its debugger exec'd", q.id);
}

/* §6 (b): the tracer *thread* exiting detaches the tracee and, like
 * PTRACE_DETACH, leaves the queues suspended; other threads get -EPERM,
 * DISABLE (no ptrace check) resumes. */
struct thread_debugger {
        pid_t target;
        uint32_t qid;
        long result;
};

static void *thread_debugger(void *arg)
{
        struct thread_debugger *d = arg;
        d->result = debugger_suspend(conf_kfd(), d->target, d->qid);
        return NULL;
}

static void tracer_thread_exit_keeps_queues_suspended(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct conf_queue q;
        busy_queue(s, &q);
        struct thread_debugger d = { .target = pid, .qid = q.id };
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, thread_debugger, &d), 0);
        pthread_join(th, NULL);
        assert_int_equal(d.result, 1);
        s->enabled = true;
        expect_stopped(s, &q);
        uint32_t id = q.id;
        assert_int_equal(conf_dbg_resume(conf_kfd(), pid, &id, 1), -EPERM);
        assert_int_equal(conf_dbg_disable(conf_kfd(), pid), 0);
        s->enabled = false;
        expect_runs_to_completion(s, &q);
}

/* A busy queue suspended by the tracer, which then PTRACE_DETACHes: the
 * session stays, held by nobody (§6 (b)). */
static void suspend_then_detach(struct conf_session *s, struct conf_queue *q)
{
        busy_queue(s, q);
        suspend_one(conf_kfd(), s->target.pid, q);
        assert_int_equal(conf_detach(s->target.pid), 0);
        s->target.traced = false;
}

/* The exit code of a child that must exit normally. */
static int exit_code_of(pid_t child)
{
        int status;

        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status));
        return WEXITSTATUS(status);
}

/* §3 step 5 / §6 (b): the session belongs to nobody in particular — after a
 * PTRACE_DETACH, whoever traces the leader next may operate it (RESUME
 * works) but cannot ENABLE a second one (-EALREADY). */
static void new_tracer_can_operate_the_session(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct conf_queue q;
        suspend_then_detach(s, &q);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                int kfd = conf_open_kfd();
                int fifo = conf_event_fifo();
                uint32_t id = q.id;
                int code = 0;
                if (kfd < 0 || conf_seize(pid) < 0)
                        _exit(8);
                if (conf_dbg_enable(kfd, pid, CONF_SUBSCRIPTION, fifo, NULL) != -EALREADY)
                        code |= 1;
                if (conf_dbg_resume(kfd, pid, &id, 1) != 1)
                        code |= 2;
                _exit(code);
        }
        int code = exit_code_of(child);
        if (code & 1)
                fail_msg("ENABLE by the new tracer of a debug-enabled target was not -EALREADY");
        if (code & 2)
                fail_msg("RESUME by the new tracer did not resume the queue");
        assert_int_equal(code, 0);
        expect_runs_to_completion(s, &q);
}

/* §6 (a): kfd_process_notifier_release_internal walks the exiting process's
 * targets only while its debugged_process_count is > 0. A second debugger
 * whose ENABLE failed with -EALREADY was recorded as the target's
 * debugger_process (kfd_ioctl_set_debug_trap sets it before
 * kfd_dbg_trap_enable fails) but debugs nothing, so its exit leaves the
 * first session alone: the queue stays suspended and the session answers. */
static void failed_second_debugger_exit_keeps_session(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct conf_queue q;
        suspend_then_detach(s, &q);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                int kfd = conf_open_kfd();
                int fifo = conf_event_fifo();
                if (kfd < 0 || conf_seize(pid) < 0)
                        _exit(8);
                _exit(conf_dbg_enable(kfd, pid, CONF_SUBSCRIPTION, fifo, NULL) == -EALREADY ? 0 : 1);
        }
        int code = exit_code_of(child);
        assert_int_equal(code, 0);
        /* Its mm is released and its kfd_process gone. */
        assert_int_equal(conf_wait_kfd_process_gone(child), 0);
        expect_stopped(s, &q);
        assert_int_equal(conf_seize(pid), 0);
        s->target.traced = true;
        uint32_t id = q.id;
        assert_int_equal(conf_dbg_resume(conf_kfd(), pid, &id, 1), 1);
        expect_runs_to_completion(s, &q);
}

/* §6 (b): PTRACE_DETACH has no KFD hook: the queues stay suspended, every op
 * but DISABLE is -EPERM, and DISABLE from any process resumes them. */
static void ptrace_detach_keeps_queues_suspended(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct conf_queue q;
        suspend_then_detach(s, &q);
        expect_stopped(s, &q);

        uint32_t id = q.id;
        assert_int_equal(conf_dbg_resume(conf_kfd(), pid, &id, 1), -EPERM);
        assert_int_equal(conf_dbg_query_event(conf_kfd(), pid, 0, NULL, NULL, NULL), -EPERM);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), pid), -EPERM);
        expect_stopped(s, &q);

        assert_int_equal(disable_from_other_process(pid), 0);
        s->enabled = false;
        expect_runs_to_completion(s, &q);
}

/* §6 (b): re-attaching ptrace restores access to the same session. */
static void reattach_restores_access(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct conf_queue q;
        busy_queue(s, &q);
        suspend_one(conf_kfd(), pid, &q);
        assert_int_equal(conf_detach(pid), 0);
        assert_int_equal(conf_seize(pid), 0);
        uint32_t id = q.id;
        assert_int_equal(conf_dbg_resume(conf_kfd(), pid, &id, 1), 1);
        expect_runs_to_completion(s, &q);
}

/* §6 (c): the target exits while suspended: its session ends with no event
 * byte, later ops find no such process (-ESRCH), its proc directory goes. */
static void target_exit_while_suspended(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct conf_queue q;
        busy_queue(s, &q);
        suspend_one(conf_kfd(), pid, &q);
        conf_event_wait(s->fifo, 0);
        conf_target_kill(&s->target);
        s->enabled = false;
        assert_int_equal(conf_event_wait(s->fifo, 50), 0);
        assert_int_equal(conf_dbg_query_event(conf_kfd(), pid, 0, NULL, NULL, NULL), -ESRCH);
        char dir[64];
        snprintf(dir, sizeof(dir), CONF_SYSFS_KFD "/proc/%d", (int)pid);
        for (int waited = 0; conf_path_exists(dir) && waited < CONF_REPLY_TIMEOUT_MS; waited += 5)
                conf_sleep_ms(5);
        assert_false(conf_path_exists(dir));
}

/* §6 (d): the DISABLE op resumes everything and ends the session. */
static void disable_op_resumes(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        busy_queue(s, &q);
        suspend_one(conf_kfd(), s->target.pid, &q);
        expect_stopped(s, &q);
        assert_int_equal(conf_dbg_disable(conf_kfd(), s->target.pid), 0);
        s->enabled = false;
        expect_runs_to_completion(s, &q);
        assert_int_equal(conf_dbg_query_event(conf_kfd(), s->target.pid, 0, NULL, NULL, NULL), -EINVAL);
}

/* §5 "Disable": the runtime's disable deactivates (resuming all queues)
 * before it sleeps for the debugger's ack. */
static void runtime_disable_resumes_before_blocking(void **state)
{
        struct conf_session *s = *state;
        struct conf_queue q;
        busy_queue(s, &q);
        suspend_one(conf_kfd(), s->target.pid, &q);
        assert_int_equal(conf_target_send(&s->target, "runtime-disable"), 0);
        expect_runs_to_completion(s, &q);
        assert_true(conf_target_still_blocked(&s->target));
        assert_int_equal(conf_dbg_send_runtime_event(conf_kfd(), s->target.pid, KFD_EC_MASK(EC_PROCESS_RUNTIME), 0, 0),
                         0);
        char line[64];
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(conf_parse_result(line), 0);
}

/* §6 (a): closing a kfd fd does nothing to debug sessions — kfd_release
 * only drops a reference, and a second open is the same kfd_process. */
static void closing_kfd_fd_keeps_session(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct conf_queue q;
        busy_queue(s, &q);
        int second = conf_open_kfd();
        assert_true(second >= 0);
        assert_int_equal(conf_seize(pid), 0);
        s->target.traced = true;
        s->fifo = conf_event_fifo();
        assert_int_equal(conf_dbg_enable(second, pid, CONF_SUBSCRIPTION, s->fifo, NULL), 0);
        s->enabled = true;
        suspend_one(second, pid, &q);
        close(second);
        expect_stopped(s, &q);
        uint32_t id = q.id;
        assert_int_equal(conf_dbg_resume(conf_kfd(), pid, &id, 1), 1);
        expect_runs_to_completion(s, &q);
}

/* §6 (c): an exec is a new mm: the notifier ends the session and removes
 * the queues; the new image has no kfd process until something creates one,
 * so ops other than ENABLE find nothing (-ESRCH). No event byte is written. */
static void target_exec_ends_session(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct conf_queue q;
        busy_queue(s, &q);
        suspend_one(conf_kfd(), pid, &q);
        conf_event_wait(s->fifo, 0);
        assert_int_equal(conf_target_send(&s->target, "exec"), 0);
        char line[64];
        assert_int_equal(conf_target_reply(&s->target, line, sizeof(line), CONF_REPLY_TIMEOUT_MS), 0);
        assert_int_equal(strncmp(line, "READY", 5), 0);
        s->enabled = false;
        assert_int_equal(conf_event_wait(s->fifo, 50), 0);
        assert_int_equal(conf_dbg_query_event(conf_kfd(), pid, 0, NULL, NULL, NULL), -ESRCH);

        /* Still the tracer: ENABLE creates the new image's process, empty. */
        struct kfd_runtime_info rinfo;
        assert_int_equal(conf_dbg_enable(conf_kfd(), pid, CONF_SUBSCRIPTION, s->fifo, &rinfo), 0);
        s->enabled = true;
        assert_int_equal(rinfo.runtime_state, DEBUG_RUNTIME_STATE_DISABLED);
        uint32_t num = 0, entry_size = sizeof(struct kfd_queue_snapshot_entry);
        assert_int_equal(conf_dbg_queue_snapshot(conf_kfd(), pid, 0, NULL, &num, &entry_size), 0);
        assert_int_equal(num, 0);
}

/* §6: kfd_dbg_trap_disable zeroes every exception status, EC_QUEUE_NEW
 * included, so after DISABLE + ENABLE an old queue is suspendable at once. */
static void disable_zeroes_exception_status(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        assert_int_equal(conf_session_attach(s, CONF_SUBSCRIPTION), 0);
        uint32_t id = q.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), pid, &id, 1, 0), 0);
        assert_int_equal(id, q.id | CONF_QUEUE_INVALID);
        assert_int_equal(conf_dbg_disable(conf_kfd(), pid), 0);
        s->enabled = false;
        assert_int_equal(conf_session_attach(s, CONF_SUBSCRIPTION), 0);
        assert_int_equal(conf_dbg_query_event(conf_kfd(), pid, 0, NULL, NULL, NULL), -EAGAIN);
        id = q.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), pid, &id, 1, 0), 1);
        assert_int_equal(id, q.id);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(debugger_killed_resumes_target, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(debugger_exec_resumes_target, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(tracer_thread_exit_keeps_queues_suspended, conf_fixture_spawned,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(new_tracer_can_operate_the_session, conf_fixture_attached,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(failed_second_debugger_exit_keeps_session, conf_fixture_attached,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(ptrace_detach_keeps_queues_suspended, conf_fixture_attached,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(reattach_restores_access, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(target_exit_while_suspended, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(disable_op_resumes, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(runtime_disable_resumes_before_blocking, conf_fixture_attached,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(target_exec_ends_session, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(disable_zeroes_exception_status, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(closing_kfd_fd_keeps_session, conf_fixture_spawned, conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
