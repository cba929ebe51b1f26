/* SPDX-License-Identifier: MIT */
/* Every precondition's sentence, from facts alone (no GPU, no processes). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "explain.h"
#include "proc-status.h"

static struct explain_facts facts(int error, enum gp_op op)
{
        return (struct explain_facts){
                .error = error,
                .op = op,
                .pid = 4242,
                .runtime_state = -1,
                .process_exists = true,
                .tracer_pid = 0,
                .sched_policy = 0,
        };
}

/* The sentence for f contains every one of the words. */
static void expect(const struct explain_facts *f, const char *words[])
{
        char *s = NULL;

        assert_int_equal(explain_format(f, &s), 0);
        assert_non_null(s);
        for (size_t i = 0; words[i]; i++)
                if (!strstr(s, words[i]))
                        fail_msg("\"%s\" lacks \"%s\"", s, words[i]);
        /* One sentence: no newline, no final full stop (the caller adds it). */
        assert_null(strchr(s, '\n'));
        assert_true(s[strlen(s) - 1] != '.');
        free(s);
}

static void test_kfd_missing(void **state)
{
        struct explain_facts f = facts(-ENOENT, GP_OP_OPEN);

        expect(&f, (const char *[]){ "/dev/kfd", "does not exist", "amdgpu", NULL });
}

static void test_kfd_too_old(void **state)
{
        struct explain_facts f = facts(-GP_ERR_KFD_TOO_OLD, GP_OP_OPEN);

        f.kfd_major = 1;
        f.kfd_minor = 11;
        expect(&f, (const char *[]){ "1.11", "older than 1.13", "Linux 6.5", "amdgpu-dkms", NULL });
}

static void test_no_hws(void **state)
{
        struct explain_facts f = facts(-EINVAL, GP_OP_ATTACH);

        f.sched_policy = 2;
        expect(&f, (const char *[]){ "sched_policy=2", "4242", "sched_policy=0", NULL });
}

static void test_traced_by_someone_else(void **state)
{
        struct explain_facts f = facts(-EPERM, GP_OP_ATTACH);

        f.tracer_pid = 77;
        f.tracer_comm = "strace";
        expect(&f, (const char *[]){ "traced by strace (pid 77)", "only one tracer", NULL });
}

/*
 * A suspension refused although this program traces the process (a thread
 * of its own is the tracer): not "stop that debugger", which would name
 * this program's own thread.
 */
static void test_refused_although_traced_by_self(void **state)
{
        struct explain_facts f = facts(-EPERM, GP_OP_SUSPEND);

        f.tracer_pid = 77;
        f.tracer_comm = "gpreemptd-trace";
        f.tracer_is_self = true;
        f.runtime_state = GP_RUNTIME_ENABLED;
        expect(&f, (const char *[]){ "this program traces it", "exiting", NULL });
}

struct tracer_thread {
        pid_t target;
        long seized;
        pthread_barrier_t done;
};

static void *seize_from_a_thread(void *userdata)
{
        struct tracer_thread *t = userdata;

        t->seized = ptrace(PTRACE_SEIZE, t->target, NULL, NULL);
        pthread_barrier_wait(&t->done);
        pthread_barrier_wait(&t->done); /* the tracer stays until the test has asked */
        return NULL;
}

/* The facts gathered for a process that another thread of this one traces: that is this program. */
static void test_tracer_thread_of_this_process_is_self(void **state)
{
        struct tracer_thread t = { 0 };
        struct gp_explain_opts opts = { .sz = sizeof(opts), .error = -EPERM, .op = GP_OP_SUSPEND, .runtime_state = 1 };
        pthread_t thread;
        char *s = NULL;

        t.target = fork();
        assert_true(t.target >= 0);
        if (t.target == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test must not leave it behind */
                pause();
                _exit(0);
        }
        pthread_barrier_init(&t.done, NULL, 2);
        assert_int_equal(pthread_create(&thread, NULL, seize_from_a_thread, &t), 0);
        pthread_barrier_wait(&t.done);
        opts.pid = t.target;
        int explained = t.seized == 0 ? gp_explain(&opts, &s) : -1;
        pthread_barrier_wait(&t.done); /* the tracer and the child end before any assertion */
        pthread_join(thread, NULL);
        kill(t.target, SIGKILL);
        waitpid(t.target, NULL, 0);
        pthread_barrier_destroy(&t.done);
        assert_int_equal(t.seized, 0);
        assert_int_equal(explained, 0);
        if (strstr(s, "stop that debugger") || !strstr(s, "this program traces it"))
                fail_msg("\"%s\" blames this program's own tracer thread", s);
        free(s);

        /* and an attach to it says it is traced already, by this program */
        struct explain_facts f = facts(-EPERM, GP_OP_ATTACH);
        f.tracer_pid = 77;
        f.tracer_is_self = true;
        f.caller_has_cap_sys_ptrace = true;
        expect(&f, (const char *[]){ "this program traces it already", NULL });
}

static void test_not_allowed_to_trace(void **state)
{
        struct explain_facts f = facts(-EPERM, GP_OP_ATTACH);

        expect(&f, (const char *[]){ "not allowed to trace", "CAP_SYS_PTRACE", "ptrace_scope",
                                     NULL });
}

/* A caller that may trace anyone (root) is not told to run as root. */
static void test_not_allowed_although_privileged(void **state)
{
        struct explain_facts f = facts(-EPERM, GP_OP_ATTACH);
        char *s = NULL;

        f.caller_has_cap_sys_ptrace = true;
        expect(&f, (const char *[]){ "although it has CAP_SYS_PTRACE", "ptrace_scope", "security modules", NULL });
        assert_int_equal(explain_format(&f, &s), 0);
        assert_null(strstr(s, "run as root"));
        free(s);
}

/* A kernel thread: whatever ptrace or the GPU check said, the cause is what it is. */
static void test_kernel_thread(void **state)
{
        static const int errors[] = { -EPERM, -GP_ERR_NOT_GPU_PROCESS };

        for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
                struct explain_facts f = facts(errors[i], GP_OP_ATTACH);
                char *s = NULL;

                f.target_kernel_thread = true;
                f.caller_has_cap_sys_ptrace = true;
                expect(&f, (const char *[]){ "4242", "kernel thread", "cannot be traced", "no GPU queues", NULL });
                assert_int_equal(explain_format(&f, &s), 0);
                assert_null(strstr(s, "run as root"));
                assert_null(strstr(s, "started using the GPU"));
                free(s);
        }
}

/* A zombie has exited: it waits for its parent, and nothing will make it use the GPU. */
static void test_zombie(void **state)
{
        static const int errors[] = { -EPERM, -GP_ERR_NOT_GPU_PROCESS };

        for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
                struct explain_facts f = facts(errors[i], GP_OP_ATTACH);
                char *s = NULL;

                f.target_state = 'Z';
                f.target_threads = 1;
                f.target_parent = 77;
                expect(&f, (const char *[]){ "4242", "has exited", "zombie", "parent (pid 77)", NULL });
                assert_int_equal(explain_format(&f, &s), 0);
                assert_null(strstr(s, "run as root"));
                assert_null(strstr(s, "started using the GPU"));
                free(s);
        }
}

/* Only the main thread has exited: the others run on, but the kernel debugs through the main thread. */
static void test_main_thread_exited(void **state)
{
        struct explain_facts f = facts(-EPERM, GP_OP_ATTACH);

        f.target_state = 'Z';
        f.target_threads = 3;
        f.target_parent = 77;
        expect(&f, (const char *[]){ "main thread has exited", "other threads", "through its main thread", NULL });
}

static void test_no_longer_tracer(void **state)
{
        struct explain_facts f = facts(-EPERM, GP_OP_SUSPEND);

        f.runtime_state = GP_RUNTIME_ENABLED;
        expect(&f, (const char *[]){ "no longer its ptrace tracer", "attach again", NULL });
}

static void test_debugger_present(void **state)
{
        struct explain_facts f = facts(-EALREADY, GP_OP_ATTACH);

        expect(&f, (const char *[]){ "another debugger", "rocgdb", "detach", NULL });
}

static void test_runtime_never_enabled(void **state)
{
        struct explain_facts f = facts(-EPERM, GP_OP_SUSPEND);

        f.runtime_state = GP_RUNTIME_DISABLED;
        expect(&f, (const char *[]){ "never enabled debugging", "ROCm 5.7", "5.2.3", NULL });
}

static void test_vmid_busy(void **state)
{
        struct explain_facts f = facts(-GP_ERR_VMID_BUSY, GP_OP_ATTACH);

        expect(&f, (const char *[]){ "debug VMID", "release the other", NULL });
        f = facts(-EPERM, GP_OP_SUSPEND);
        f.runtime_state = GP_RUNTIME_ENABLED_BUSY;
        expect(&f, (const char *[]){ "debug VMID", NULL });
}

static void test_target_gone(void **state)
{
        struct explain_facts f = facts(-ESRCH, GP_OP_ATTACH);

        f.process_exists = false;
        expect(&f, (const char *[]){ "no such process", NULL });
        f = facts(-ESRCH, GP_OP_SUSPEND);
        expect(&f, (const char *[]){ "exited or exec'd", "resumed", NULL });
}

static void test_pid_namespace(void **state)
{
        struct explain_facts f = facts(-ESRCH, GP_OP_ATTACH);

        f.process_exists = false;
        f.caller_in_child_pid_namespace = true;
        expect(&f, (const char *[]){ "PID namespace", "as seen from here", NULL });
        f = facts(-EPERM, GP_OP_ATTACH);
        f.target_nspid = "5000\t12";
        expect(&f, (const char *[]){ "5000\t12", NULL });
}

static void test_wrong_thread(void **state)
{
        struct explain_facts f = facts(-GP_ERR_WRONG_THREAD, GP_OP_RESUME);

        expect(&f, (const char *[]){ "another thread", "tracer thread", NULL });
}

static void test_no_queues(void **state)
{
        struct explain_facts f = facts(-GP_ERR_NO_QUEUES, GP_OP_SUSPEND);

        expect(&f, (const char *[]){ "no GPU queues", NULL });
}

static void test_unknown_error_still_says_something(void **state)
{
        struct explain_facts f = facts(-ENOSPC, GP_OP_SNAPSHOT);

        expect(&f, (const char *[]){ "4242", "No space left", NULL });
}

/*
 * A process names itself what it likes (PR_SET_NAME): a newline in the name
 * does not end /proc/<pid>/stat early, nor does a ')' end the name.
 */
static void test_stat_of_a_name_with_newline(void **state)
{
        char name[16] = { 0 };
        struct proc_stat st;
        int r;

        assert_int_equal(prctl(PR_GET_NAME, name), 0);
        assert_int_equal(prctl(PR_SET_NAME, "a)\n) Z 1 2 3"), 0);
        r = proc_stat_read(0, &st);
        assert_int_equal(prctl(PR_SET_NAME, name), 0);
        assert_int_equal(r, 0);
        assert_int_equal(st.state, 'R');
        assert_int_equal(st.parent, getppid());
        assert_int_equal(st.threads, 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kfd_missing),
                cmocka_unit_test(test_kfd_too_old),
                cmocka_unit_test(test_no_hws),
                cmocka_unit_test(test_traced_by_someone_else),
                cmocka_unit_test(test_refused_although_traced_by_self),
                cmocka_unit_test(test_tracer_thread_of_this_process_is_self),
                cmocka_unit_test(test_not_allowed_to_trace),
                cmocka_unit_test(test_not_allowed_although_privileged),
                cmocka_unit_test(test_kernel_thread),
                cmocka_unit_test(test_zombie),
                cmocka_unit_test(test_main_thread_exited),
                cmocka_unit_test(test_no_longer_tracer),
                cmocka_unit_test(test_debugger_present),
                cmocka_unit_test(test_runtime_never_enabled),
                cmocka_unit_test(test_vmid_busy),
                cmocka_unit_test(test_target_gone),
                cmocka_unit_test(test_pid_namespace),
                cmocka_unit_test(test_wrong_thread),
                cmocka_unit_test(test_no_queues),
                cmocka_unit_test(test_unknown_error_still_says_something),
                cmocka_unit_test(test_stat_of_a_name_with_newline),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
