/* SPDX-License-Identifier: MIT */
/*
 * Calls that sleep in the emulated kernel: a signal handler wakes the
 * sleeper (the kernel's down_interruptible returns -EINTR), and a caller
 * killed while asleep is dropped without harming the server. The sleep is
 * RUNTIME_ENABLE of a self-debugged process (kfd-interface.md §5: with the
 * trap enabled, the runtime waits for the debugger's EC_PROCESS_RUNTIME ack;
 * self-debug skips the ptrace check, §3 step 5). Runs inside kfdemu-run.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "kfd-test.h"

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
        handled++;
}

struct sleeper {
        int kfd;
        int first, second;
        sem_t interrupted;
        sem_t acked;
};

static void *sleeper_thread(void *arg)
{
        struct sleeper *s = arg;

        s->first = kfd_test_runtime_enable(s->kfd, true);
        sem_post(&s->interrupted);
        sem_wait(&s->acked);
        /* is_runtime_retry: back into the wait, where the banked ack is. */
        s->second = kfd_test_runtime_enable(s->kfd, true);
        return NULL;
}

static void test_signal_interrupts_a_sleeping_call(void **state)
{
        struct kfd_test_debuggee d;
        struct sleeper s = { 0 };
        pthread_t thread;
        /* SA_RESTART does not restart a down_interruptible: -EINTR anyway. */
        struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };

        assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
        assert_int_equal(kfd_test_self_debug(&d), 0);
        s.kfd = d.kfd;
        sem_init(&s.interrupted, 0, 0);
        sem_init(&s.acked, 0, 0);

        assert_int_equal(pthread_create(&thread, NULL, sleeper_thread, &s), 0);
        assert_int_equal(kfd_test_wait_event(&d), 0);
        /* The server answers everybody else while the thread sleeps. */
        assert_int_equal(kfd_test_get_version(d.kfd), 0);
        assert_int_equal(pthread_kill(thread, SIGUSR1), 0);
        sem_wait(&s.interrupted);
        assert_int_equal(s.first, -EINTR);
        assert_int_equal(handled, 1);

        assert_int_equal(kfd_test_ack_runtime(d.kfd), 0);
        sem_post(&s.acked);
        assert_int_equal(pthread_join(thread, NULL), 0);
        assert_int_equal(s.second, 0);
        assert_int_equal(kfd_test_end_self_debug(&d), 0);
}

static int handler_kfd = -1;
static volatile int handler_result = 1;

static void on_usr2_call_kfd(int sig)
{
        handler_result = kfd_test_get_version(handler_kfd);
}

static void test_handler_calls_while_its_thread_sleeps(void **state)
{
        struct kfd_test_debuggee d;
        struct sleeper s = { 0 };
        pthread_t thread;
        struct sigaction sa = { .sa_handler = on_usr2_call_kfd };

        assert_int_equal(sigaction(SIGUSR2, &sa, NULL), 0);
        assert_int_equal(kfd_test_self_debug(&d), 0);
        s.kfd = handler_kfd = d.kfd;
        sem_init(&s.interrupted, 0, 0);
        sem_init(&s.acked, 0, 0);

        assert_int_equal(pthread_create(&thread, NULL, sleeper_thread, &s), 0);
        assert_int_equal(kfd_test_wait_event(&d), 0);
        /* The handler's ioctl runs on the sleeping thread: its reply must
         * not be mistaken for the sleeping call's, nor the reverse. */
        assert_int_equal(pthread_kill(thread, SIGUSR2), 0);
        sem_wait(&s.interrupted);
        assert_int_equal(handler_result, 0);
        assert_int_equal(s.first, -EINTR);

        assert_int_equal(kfd_test_ack_runtime(d.kfd), 0);
        sem_post(&s.acked);
        assert_int_equal(pthread_join(thread, NULL), 0);
        assert_int_equal(s.second, 0);
        assert_int_equal(kfd_test_end_self_debug(&d), 0);
}

static void test_caller_killed_while_asleep(void **state)
{
        int ready[2], status;
        char byte;

        assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                struct kfd_test_debuggee d;
                struct sleeper s = { 0 };
                pthread_t thread;

                if (kfd_test_self_debug(&d) < 0)
                        _exit(4);
                s.kfd = d.kfd;
                sem_init(&s.interrupted, 0, 0);
                sem_init(&s.acked, 0, 0);
                pthread_create(&thread, NULL, sleeper_thread, &s);
                if (kfd_test_wait_event(&d) < 0 || write(ready[1], "r", 1) != 1)
                        _exit(2);
                pause();
                _exit(3);
        }
        close(ready[1]);
        assert_int_equal(read(ready[0], &byte, 1), 1);
        close(ready[0]);
        assert_true(kfd_test_proc_dir_exists(child));

        assert_int_equal(kill(child, SIGKILL), 0);
        assert_int_equal(waitpid(child, &status, 0), child);
        /* The exit released its mm: the kfd_process and its sysfs go. */
        assert_true(kfd_test_wait_proc_dir(child, false, 2000));

        int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
        assert_true(kfd >= 0);
        assert_int_equal(kfd_test_get_version(kfd), 0);
        close(kfd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_signal_interrupts_a_sleeping_call),
                cmocka_unit_test(test_handler_calls_while_its_thread_sleeps),
                cmocka_unit_test(test_caller_killed_while_asleep),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
