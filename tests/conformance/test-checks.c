/* SPDX-License-Identifier: MIT */
/*
 * The check order of kfd_chardev.c: kfd_ioctl_set_debug_trap and the
 * per-op errors of kfd_debug.c: kfd_dbg_trap_enable — kfd-interface.md §3.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
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

/* Ops whose only requirement past the session is an enabled runtime (§3 step 8). */
static const uint32_t runtime_ops[] = {
        KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE, KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE,
        KFD_IOC_DBG_TRAP_SUSPEND_QUEUES,           KFD_IOC_DBG_TRAP_RESUME_QUEUES,
        KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH,   KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH,
        KFD_IOC_DBG_TRAP_SET_FLAGS,
};

static char proc_dir[64];
static const char *proc_path(pid_t pid)
{
        snprintf(proc_dir, sizeof(proc_dir), CONF_SYSFS_KFD "/proc/%d", (int)pid);
        return proc_dir;
}

/* §3 step 2: find_get_pid fails -> -ESRCH, for every op. */
static void unknown_pid_is_esrch(void **state)
{
        pid_t gone = conf_unused_pid();
        assert_true(gone > 0);
        struct kfd_ioctl_dbg_trap_args a = { 0 };
        for (uint32_t op = KFD_IOC_DBG_TRAP_ENABLE; op <= KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT; op++) {
                memset(&a, 0, sizeof(a));
                long r = conf_dbg_trap(conf_kfd(), gone, op, &a);
                if (r != -ESRCH)
                        fail_msg("op %u on a pid nobody has: got %ld, want -ESRCH", op, r);
        }
}

/* §3 step 3: get_task_mm fails for a zombie -> -ESRCH, even for its tracer. */
static void zombie_is_esrch(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_seize(s->target.pid), 0);
        assert_int_equal(conf_target_send(&s->target, "exit"), 0);
        siginfo_t si = { 0 };
        /* A tracee's stops are reported too: service them until the exit. */
        do {
                conf_service_stops(s->target.pid);
                assert_int_equal(waitid(P_PID, (id_t)s->target.pid, &si, WEXITED | WNOWAIT | __WALL), 0);
        } while (si.si_code == CLD_TRAPPED);
        assert_int_equal(si.si_code, CLD_EXITED);

        _cleanup_close_ int fifo = conf_event_fifo();
        assert_int_equal(conf_dbg_enable(conf_kfd(), s->target.pid, CONF_SUBSCRIPTION, fifo, NULL), -ESRCH);
        assert_int_equal(conf_dbg_disable(conf_kfd(), s->target.pid), -ESRCH);
}

/* §3 step 5: a kfd process not traced by the caller -> -EPERM for every op
 * but DISABLE, which skips the ptrace check and fails at step 7 instead. */
static void untraced_target_is_eperm(void **state)
{
        struct conf_session *s = *state;
        _cleanup_close_ int fifo = conf_event_fifo();
        assert_int_equal(conf_dbg_enable(conf_kfd(), s->target.pid, CONF_SUBSCRIPTION, fifo, NULL), -EPERM);
        struct kfd_ioctl_dbg_trap_args a;
        for (uint32_t op = KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT; op <= KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT; op++) {
                memset(&a, 0, sizeof(a));
                long r = conf_dbg_trap(conf_kfd(), s->target.pid, op, &a);
                if (r != -EPERM)
                        fail_msg("op %u on an untraced target: got %ld, want -EPERM", op, r);
        }
        assert_int_equal(conf_dbg_disable(conf_kfd(), s->target.pid), -EINVAL);
}

/* §3 step 4: without the caller as tracer, ENABLE only looks the process
 * up; one that never opened /dev/kfd is not found -> -ESRCH. */
static void untraced_target_without_kfd_is_esrch(void **state)
{
        struct conf_target t;
        assert_int_equal(conf_target_spawn(&t), 0);
        _cleanup_close_ int fifo = conf_event_fifo();
        long r = conf_dbg_enable(conf_kfd(), t.pid, CONF_SUBSCRIPTION, fifo, NULL);
        bool created = conf_path_exists(proc_path(t.pid));
        conf_target_kill(&t);
        assert_int_equal(r, -ESRCH);
        assert_false(created);
}

struct other_tracer {
        pid_t pid;
        int fifo;
        sem_t seized, go, done;
        long seize_result, enable_result, disable_result;
};

static void *other_tracer_thread(void *arg)
{
        struct other_tracer *o = arg;
        o->seize_result = conf_seize(o->pid);
        sem_post(&o->seized);
        sem_wait(&o->go);
        o->enable_result = conf_dbg_enable(conf_kfd(), o->pid, CONF_SUBSCRIPTION, o->fifo, NULL);
        o->disable_result = conf_dbg_disable(conf_kfd(), o->pid);
        sem_post(&o->done);
        /* Leaving the thread detaches the tracee (ptrace is per thread). */
        return NULL;
}

/* §3 step 5: ptrace_parent(target->lead_thread) != current compares with the
 * calling *thread*: a tracer that is another thread of our process does not
 * count, the tracer thread itself does. */
static void traced_by_other_thread_is_eperm(void **state)
{
        struct conf_session *s = *state;
        _cleanup_close_ int fifo = conf_event_fifo();
        struct other_tracer o = { .pid = s->target.pid, .fifo = fifo };
        sem_init(&o.seized, 0, 0);
        sem_init(&o.go, 0, 0);
        sem_init(&o.done, 0, 0);
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, other_tracer_thread, &o), 0);
        sem_wait(&o.seized);
        long from_main = o.seize_result == 0 ? conf_dbg_enable(conf_kfd(), s->target.pid, CONF_SUBSCRIPTION, fifo, NULL)
                                             : o.seize_result;
        sem_post(&o.go);
        sem_wait(&o.done);
        pthread_join(th, NULL);
        if (from_main == 0)
                conf_dbg_disable(conf_kfd(), s->target.pid);
        assert_int_equal(o.seize_result, 0);
        assert_int_equal(from_main, -EPERM);
        assert_int_equal(o.enable_result, 0);
        assert_int_equal(o.disable_result, 0);
}

/* §3 step 5 and §5 case (b): the tracer thread may enable; the runtime is
 * already enabled, so rinfo reports ENABLED at once. */
static void traced_by_caller_thread_is_ok(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_session_attach(s, CONF_SUBSCRIPTION), 0);
        assert_int_equal(s->rinfo.runtime_state, DEBUG_RUNTIME_STATE_ENABLED);
}

/* §3 step 5: pid = own tgid is the caller's own kfd_process, so no ptrace
 * check applies (kfdtest's KFDDBGTest attaches to getpid()), from any thread. */
static void *self_query_thread(void *arg)
{
        long *r = arg;
        *r = conf_dbg_query_event(conf_kfd(), getpid(), 0, NULL, NULL, NULL);
        return NULL;
}

static void self_debug_skips_ptrace(void **state)
{
        _cleanup_close_ int fifo = conf_event_fifo();
        pid_t self = getpid();
        assert_int_equal(conf_dbg_enable(conf_kfd(), self, CONF_SUBSCRIPTION, fifo, NULL), 0);
        long from_thread = 0;
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, self_query_thread, &from_thread), 0);
        pthread_join(th, NULL);
        long again = conf_dbg_enable(conf_kfd(), self, CONF_SUBSCRIPTION, fifo, NULL);
        assert_int_equal(conf_dbg_disable(conf_kfd(), self), 0);
        assert_int_equal(from_thread, -EAGAIN);
        assert_int_equal(again, -EALREADY);
}

/* §3 step 5 / §6: DISABLE skips the ptrace check; any process with its own
 * kfd fd may disable a session, while its other ops get -EPERM. */
static void disable_needs_no_ptrace(void **state)
{
        struct conf_session *s = *state;
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                int kfd = conf_open_kfd();
                uint32_t id = 0;
                int code = 0;
                if (kfd < 0)
                        _exit(8);
                if (conf_dbg_suspend(kfd, s->target.pid, &id, 1, 0) != -EPERM)
                        code |= 1;
                if (conf_dbg_disable(kfd, s->target.pid) != 0)
                        code |= 2;
                _exit(code);
        }
        int status;
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) & 1)
                fail_msg("SUSPEND from a process that is not the tracer did not fail with EPERM");
        if (WEXITSTATUS(status) & 2)
                fail_msg("DISABLE from a process that is not the tracer did not succeed");
        assert_int_equal(WEXITSTATUS(status), 0);
        s->enabled = false;
        assert_int_equal(conf_dbg_query_event(conf_kfd(), s->target.pid, 0, NULL, NULL, NULL), -EINVAL);
}

/* §3 step 7: op != ENABLE on a session that is not enabled -> -EINVAL, for
 * every op including unknown ones and DISABLE (§6d). */
static void op_before_enable_is_einval(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_seize(s->target.pid), 0);
        s->target.traced = true;
        struct kfd_ioctl_dbg_trap_args a;
        for (uint32_t op = KFD_IOC_DBG_TRAP_DISABLE; op <= KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT + 1; op++) {
                memset(&a, 0, sizeof(a));
                long r = conf_dbg_trap(conf_kfd(), s->target.pid, op, &a);
                if (r != -EINVAL)
                        fail_msg("op %u before ENABLE: got %ld, want -EINVAL", op, r);
        }
}

/* §3 step 10: unknown op on an enabled session -> -EINVAL. */
static void unknown_op_is_einval(void **state)
{
        struct conf_session *s = *state;
        static const uint32_t ops[] = { KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT + 1, 99, 0x7fffffff, 0xffffffff };
        for (size_t i = 0; i < ELEMENTSOF(ops); i++) {
                struct kfd_ioctl_dbg_trap_args a = { 0 };
                long r = conf_dbg_trap(conf_kfd(), s->target.pid, ops[i], &a);
                if (r != -EINVAL)
                        fail_msg("unknown op %u: got %ld, want -EINVAL", ops[i], r);
        }
}

/* §3 step 8: runtime not ENABLED -> the HW ops and SUSPEND/RESUME get -EPERM;
 * SEND_RUNTIME_EVENT, SET_EXCEPTIONS_ENABLED, the queries and the snapshots
 * do not need the runtime. */
static void runtime_disabled_gates_only_hw_ops(void **state)
{
        struct conf_target *t = &((struct conf_session *)*state)->target;
        assert_int_equal(conf_target_spawn(t), 0);
        assert_int_equal(conf_target_call(t, "open"), 0);
        assert_int_equal(conf_seize(t->pid), 0);
        t->traced = true;
        _cleanup_close_ int fifo = conf_event_fifo();
        struct kfd_runtime_info rinfo;
        assert_int_equal(conf_dbg_enable(conf_kfd(), t->pid, CONF_SUBSCRIPTION, fifo, &rinfo), 0);
        assert_int_equal(rinfo.runtime_state, DEBUG_RUNTIME_STATE_DISABLED);

        struct kfd_ioctl_dbg_trap_args a;
        for (size_t i = 0; i < ELEMENTSOF(runtime_ops); i++) {
                memset(&a, 0, sizeof(a));
                long r = conf_dbg_trap(conf_kfd(), t->pid, runtime_ops[i], &a);
                if (r != -EPERM)
                        fail_msg("op %u with the runtime disabled: got %ld, want -EPERM", runtime_ops[i], r);
        }
        assert_int_equal(conf_dbg_query_event(conf_kfd(), t->pid, 0, NULL, NULL, NULL), -EAGAIN);
        uint32_t num = 0, entry_size = sizeof(struct kfd_queue_snapshot_entry);
        assert_int_equal(conf_dbg_queue_snapshot(conf_kfd(), t->pid, 0, NULL, &num, &entry_size), 0);
        struct kfd_dbg_device_info_entry devices[CONF_MAX_GPUS];
        memset(&a, 0, sizeof(a));
        a.device_snapshot.snapshot_buf_ptr = (uintptr_t)devices;
        a.device_snapshot.num_devices = CONF_MAX_GPUS;
        a.device_snapshot.entry_size = sizeof(devices[0]);
        assert_int_equal(conf_dbg_trap(conf_kfd(), t->pid, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &a), 0);
        assert_int_equal(conf_dbg_send_runtime_event(conf_kfd(), t->pid, 0, 0, 0), 0);
        assert_int_equal(conf_dbg_set_exceptions_enabled(conf_kfd(), t->pid, CONF_SUBSCRIPTION), 0);
        struct kfd_runtime_info info;
        memset(&a, 0, sizeof(a));
        a.query_exception_info.info_ptr = (uintptr_t)&info;
        a.query_exception_info.info_size = sizeof(info);
        a.query_exception_info.exception_code = EC_PROCESS_RUNTIME;
        assert_int_equal(conf_dbg_trap(conf_kfd(), t->pid, KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO, &a), -ENODATA);
        assert_int_equal(conf_dbg_disable(conf_kfd(), t->pid), 0);
}

/* kfd_dbg_trap_enable: already enabled -> -EALREADY (not the header's EINVAL). */
static void enable_twice_is_ealready(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_dbg_enable(conf_kfd(), s->target.pid, CONF_SUBSCRIPTION, s->fifo, NULL), -EALREADY);
}

/* kfd_dbg_trap_enable: fget(dbg_fd) in the caller's table fails -> -EBADF,
 * and nothing is left enabled. */
static void bad_dbg_fd_is_ebadf(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_seize(s->target.pid), 0);
        s->target.traced = true;
        assert_int_equal(conf_dbg_enable(conf_kfd(), s->target.pid, CONF_SUBSCRIPTION, 9999, NULL), -EBADF);
        assert_int_equal(conf_dbg_enable(conf_kfd(), s->target.pid, CONF_SUBSCRIPTION, -1, NULL), -EBADF);
        assert_int_equal(conf_session_attach(s, CONF_SUBSCRIPTION), 0);
}

/* kfd_dbg_trap_enable: rinfo_size out = 16 and min(in, 16) bytes copied;
 * r_debug and runtime_state as the runtime set them (§3, §5). */
static void rinfo_is_negotiated(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_seize(s->target.pid), 0);
        s->target.traced = true;
        s->fifo = conf_event_fifo();
        static const uint32_t sizes[] = { 16, 8, 64, 0 };
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                uint8_t buf[64];
                memset(buf, 0xa5, sizeof(buf));
                struct kfd_ioctl_dbg_trap_args a = {
                        .enable = {
                                .exception_mask = CONF_SUBSCRIPTION,
                                .rinfo_ptr = (uintptr_t)buf,
                                .rinfo_size = sizes[i],
                                .dbg_fd = (uint32_t)s->fifo,
                        },
                };
                assert_int_equal(conf_dbg_trap(conf_kfd(), s->target.pid, KFD_IOC_DBG_TRAP_ENABLE, &a), 0);
                assert_int_equal(conf_dbg_disable(conf_kfd(), s->target.pid), 0);
                assert_int_equal(a.enable.rinfo_size, sizeof(struct kfd_runtime_info));
                size_t copied = sizes[i] < 16 ? sizes[i] : 16;
                struct kfd_runtime_info expect = {
                        .r_debug = CONF_APP_R_DEBUG,
                        .runtime_state = DEBUG_RUNTIME_STATE_ENABLED,
                        .ttmp_setup = 0,
                };
                assert_memory_equal(buf, &expect, copied);
                for (size_t j = copied; j < sizeof(buf); j++)
                        if (buf[j] != 0xa5)
                                fail_msg("rinfo_size %u: byte %zu written", sizes[i], j);
        }
}

/* §3 step 4: ENABLE by the tracer thread on a process that never opened
 * /dev/kfd creates its kfd_process (§8.1: its proc directory appears), with
 * the runtime disabled; the target's later open finds the same process. */
static void enable_creates_missing_process(void **state)
{
        struct conf_target *t = &((struct conf_session *)*state)->target;
        assert_int_equal(conf_target_spawn(t), 0);
        assert_false(conf_path_exists(proc_path(t->pid)));
        assert_int_equal(conf_seize(t->pid), 0);
        t->traced = true;
        _cleanup_close_ int fifo = conf_event_fifo();
        struct kfd_runtime_info rinfo;
        assert_int_equal(conf_dbg_enable(conf_kfd(), t->pid, CONF_SUBSCRIPTION, fifo, &rinfo), 0);
        bool created = conf_path_exists(proc_path(t->pid));
        long opened = conf_target_call(t, "open");
        /* The target's open found the debug-enabled process: ENABLE again
         * is refused as a second session, not a new one. */
        long again = conf_dbg_enable(conf_kfd(), t->pid, CONF_SUBSCRIPTION, fifo, NULL);
        assert_int_equal(conf_dbg_disable(conf_kfd(), t->pid), 0);
        assert_true(created);
        assert_int_equal(rinfo.runtime_state, DEBUG_RUNTIME_STATE_DISABLED);
        assert_int_equal(opened, 0);
        assert_int_equal(again, -EALREADY);
}

/* §3 step 4: kfd_lookup_process_by_pid finds the process by mm, so any tid
 * of the target names it; step 5 checks the tracer of the *leader*. */
static void any_tid_names_the_process(void **state)
{
        struct conf_session *s = *state;
        long tid = conf_target_call(&s->target, "thread");
        assert_true(tid > 0 && tid != s->target.pid);
        assert_int_equal(conf_seize(s->target.pid), 0);
        s->target.traced = true;
        _cleanup_close_ int fifo = conf_event_fifo();
        assert_int_equal(conf_dbg_enable(conf_kfd(), (pid_t)tid, CONF_SUBSCRIPTION, fifo, NULL), 0);
        long query = conf_dbg_query_event(conf_kfd(), (pid_t)tid, 0, NULL, NULL, NULL);
        long again = conf_dbg_enable(conf_kfd(), s->target.pid, CONF_SUBSCRIPTION, fifo, NULL);
        assert_int_equal(conf_dbg_disable(conf_kfd(), (pid_t)tid), 0);
        assert_int_equal(query, -EAGAIN);
        assert_int_equal(again, -EALREADY);
}

/* §3 step 5: tracing a non-leader thread is not enough — ptrace_parent of
 * target->lead_thread must be the caller. */
static void tracing_only_a_thread_is_eperm(void **state)
{
        struct conf_session *s = *state;
        long tid = conf_target_call(&s->target, "thread");
        assert_true(tid > 0 && tid != s->target.pid);
        assert_int_equal(conf_seize((pid_t)tid), 0);
        _cleanup_close_ int fifo = conf_event_fifo();
        long by_tid = conf_dbg_enable(conf_kfd(), (pid_t)tid, CONF_SUBSCRIPTION, fifo, NULL);
        long by_pid = conf_dbg_enable(conf_kfd(), s->target.pid, CONF_SUBSCRIPTION, fifo, NULL);
        if (by_tid == 0)
                conf_dbg_disable(conf_kfd(), (pid_t)tid);
        if (by_pid == 0)
                conf_dbg_disable(conf_kfd(), s->target.pid);
        /* A traced non-leader thread must be reaped by its tracer before the
         * leader can be: let it go so the fixture can kill the target. */
        assert_int_equal(conf_detach((pid_t)tid), 0);
        assert_int_equal(by_tid, -EPERM);
        assert_int_equal(by_pid, -EPERM);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(unknown_pid_is_esrch),
                cmocka_unit_test_setup_teardown(zombie_is_esrch, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(untraced_target_is_eperm, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test(untraced_target_without_kfd_is_esrch),
                cmocka_unit_test_setup_teardown(traced_by_other_thread_is_eperm, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(traced_by_caller_thread_is_ok, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test(self_debug_skips_ptrace),
                cmocka_unit_test_setup_teardown(disable_needs_no_ptrace, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(op_before_enable_is_einval, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(unknown_op_is_einval, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(runtime_disabled_gates_only_hw_ops, conf_fixture_empty, conf_fixture_end),
                cmocka_unit_test_setup_teardown(enable_twice_is_ealready, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(bad_dbg_fd_is_ebadf, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(rinfo_is_negotiated, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(any_tid_names_the_process, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(tracing_only_a_thread_is_eperm, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(enable_creates_missing_process, conf_fixture_empty, conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
