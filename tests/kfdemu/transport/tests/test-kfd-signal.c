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
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
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

/* down_interruptible returns -EINTR for any pending signal, a stop
 * included: SIGSTOP ends the runtime-enable wait before any handler could
 * run, and the call returns -EINTR once the process continues. */
static void test_stop_interrupts_runtime_wait(void **state)
{
        int result[2], events[2], status;
        struct pollfd pfd;
        long r = 0;
        char byte;

        assert_int_equal(pipe2(result, O_CLOEXEC), 0);
        /* The child's event file: its EC_PROCESS_RUNTIME byte says the
         * runtime enable has raised and sleeps. */
        assert_int_equal(pipe2(events, O_NONBLOCK), 0);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);

                if (kfd < 0 || kfd_test_self_debug_fd(kfd, events[1]) < 0)
                        _exit(4);
                r = kfd_test_runtime_enable(kfd, true);
                _exit(write(result[1], &r, sizeof(r)) == sizeof(r) ? 0 : 5);
        }
        close(result[1]);
        close(events[1]);
        pfd = (struct pollfd){ .fd = events[0], .events = POLLIN };
        assert_int_equal(poll(&pfd, 1, 5000), 1);
        assert_int_equal(read(events[0], &byte, 1), 1);
        close(events[0]);
        assert_int_equal(kill(child, SIGSTOP), 0);
        assert_int_equal(waitpid(child, &status, WUNTRACED), child);
        assert_true(WIFSTOPPED(status));
        usleep(200 * 1000);
        assert_int_equal(kill(child, SIGCONT), 0);
        pfd = (struct pollfd){ .fd = result[0], .events = POLLIN };
        assert_int_equal(poll(&pfd, 1, 5000), 1);
        assert_int_equal(read(result[0], &r, sizeof(r)), sizeof(r));
        assert_int_equal(r, -EINTR);
        close(result[0]);
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* DESTROY_QUEUE of a suspended queue sleeps in wait_event_interruptible,
 * which ends with -ERESTARTSYS: after a handler with SA_RESTART the call is
 * restarted and sleeps again (until the resume); without it, -EINTR. */
struct destroyer {
        int kfd;
        pid_t tid;
        uint32_t queue_id;
        int result;
        sem_t done;
};

static void *destroy_thread(void *arg)
{
        struct destroyer *t = arg;
        struct kfd_ioctl_destroy_queue_args a = { .queue_id = t->queue_id };

        __atomic_store_n(&t->tid, gettid(), __ATOMIC_RELEASE);
        t->result = kfd_test_ioctl(t->kfd, AMDKFD_IOC_DESTROY_QUEUE, &a);
        sem_post(&t->done);
        return NULL;
}

static void destroy_interrupted(struct kfd_test_debuggee *d, int sa_flags, int *ret_while_suspended,
                                int *ret_after_resume)
{
        struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = sa_flags };
        struct destroyer t = { .kfd = d->kfd };
        pthread_t thread;
        struct timespec deadline;
        uint32_t id;

        assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
        assert_int_equal(kfd_test_create_suspended_queue(d->kfd, kfd_test_gpu_id(1), &id), 0);
        t.queue_id = id;
        sem_init(&t.done, 0, 0);
        handled = 0;
        assert_int_equal(pthread_create(&thread, NULL, destroy_thread, &t), 0);
        while (!__atomic_load_n(&t.tid, __ATOMIC_ACQUIRE))
                usleep(1000);
        assert_true(kfd_test_wait_syscall(t.tid, SYS_ppoll, 5000));
        assert_int_equal(pthread_kill(thread, SIGUSR1), 0);
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += 300 * 1000 * 1000;
        if (deadline.tv_nsec >= 1000000000) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000;
        }
        *ret_while_suspended = sem_timedwait(&t.done, &deadline) == 0 ? t.result : 1;
        assert_int_equal(handled, 1);
        assert_int_equal(kfd_test_resume_all(d->kfd), 1);
        if (*ret_while_suspended == 1)
                sem_wait(&t.done);
        *ret_after_resume = t.result;
        assert_int_equal(pthread_join(thread, NULL), 0);
}

static void test_sa_restart_restarts_destroy_wait(void **state)
{
        struct kfd_test_debuggee d;
        int while_suspended, after_resume;

        assert_int_equal(kfd_test_self_debug_with_runtime(&d), 0);
        /* SA_RESTART: the destroy goes on sleeping and completes with the resume. */
        destroy_interrupted(&d, SA_RESTART, &while_suspended, &after_resume);
        assert_int_equal(while_suspended, 1);
        assert_int_equal(after_resume, 0);
        /* Without it: EINTR at once. */
        destroy_interrupted(&d, 0, &while_suspended, &after_resume);
        assert_int_equal(while_suspended, -EINTR);
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
                cmocka_unit_test(test_stop_interrupts_runtime_wait),
                cmocka_unit_test(test_sa_restart_restarts_destroy_wait),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
