/* SPDX-License-Identifier: MIT */
/*
 * A client in another pid namespace (a container): its threads report ids
 * of their own namespace, and the server must act on the host task, as
 * amdkfd's `current` is. The client's kfd_process is named by its host pid
 * in sysfs (kfd-interface.md §8) and its calls reach the kernel from the
 * right thread. Runs inside kfdemu-run.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "kfd-test.h"

struct container {
        int to_host[2];                  /* results and pids, container -> host */
        int to_container[2];             /* "you may exit" */
};

static void *call_from_thread(void *arg)
{
        int *kfd = arg;

        return (void *)(intptr_t)kfd_test_get_version(*kfd);
}

/* pid 1 of the new namespace. */
static int container_init(struct container *c)
{
        pthread_t thread;
        void *thread_result;
        char go;

        if (getpid() != 1)
                return 10;
        int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
        if (kfd < 0)
                return 11;
        if (kfd_test_get_version(kfd) < 0)
                return 12;
        /* A second thread: its tid exists only inside the namespace. */
        if (pthread_create(&thread, NULL, call_from_thread, &kfd) != 0 || pthread_join(thread, &thread_result) != 0)
                return 13;
        if ((intptr_t)thread_result != 0)
                return 14;
        if (write(c->to_host[1], "k", 1) != 1 || read(c->to_container[0], &go, 1) != 1)
                return 15;
        return 0;
}

static void test_client_in_a_pid_namespace(void **state)
{
        struct container c;
        pid_t init_pid;
        int status;
        char byte;

        assert_int_equal(pipe2(c.to_host, O_CLOEXEC), 0);
        assert_int_equal(pipe2(c.to_container, O_CLOEXEC), 0);

        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                /* A user namespace makes this work without privileges; as
                 * root the pid namespace alone is enough. */
                if (unshare(getuid() == 0 ? CLONE_NEWPID : CLONE_NEWUSER | CLONE_NEWPID) < 0)
                        _exit(20);
                pid_t init = fork();
                if (init < 0)
                        _exit(21);
                if (init == 0)
                        _exit(container_init(&c));
                if (write(c.to_host[1], &init, sizeof(init)) != sizeof(init))
                        _exit(22);
                if (waitpid(init, &status, 0) != init || !WIFEXITED(status))
                        _exit(23);
                _exit(WEXITSTATUS(status));
        }
        close(c.to_host[1]);
        close(c.to_container[0]);
        assert_int_equal(read(c.to_host[0], &init_pid, sizeof(init_pid)), sizeof(init_pid));
        if (read(c.to_host[0], &byte, 1) != 1) {
                waitpid(child, &status, 0);
                fail_msg("the container failed with status %d", WEXITSTATUS(status));
        }
        /* The kfd_process is the host task's. */
        assert_true(kfd_test_proc_dir_exists(init_pid));
        assert_int_equal(write(c.to_container[1], "g", 1), 1);
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_true(kfd_test_wait_proc_dir(init_pid, false, 2000));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_client_in_a_pid_namespace),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
