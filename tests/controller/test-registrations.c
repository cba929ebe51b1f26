/* SPDX-License-Identifier: MIT */
/*
 * Registrations (io.gpreempt.Register): what a registered Slurm task covers
 * besides its descendants, the processes of its step's cgroup, including
 * those its parent chain no longer reaches and those it left when it exited.
 * /proc is a fake one in a temporary directory; the registered task is a
 * real child, since a registration holds its pidfd.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "config-fixture.h"
#include "process-facts.h"
#include "registrations.h"

/* A fake /proc/<pid> with the status and cgroup the lookup reads. */
static void fake_process(struct config_fixture *f, pid_t pid, pid_t parent, const char *cgroup)
{
        char path[128], text[256];

        snprintf(path, sizeof(path), "%s/proc", f->dir);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "proc/%d", (int)pid);
        snprintf(text, sizeof(text), "%s/%s", f->dir, path);
        assert_int_equal(mkdir(text, 0755), 0);
        snprintf(path, sizeof(path), "proc/%d/status", (int)pid);
        snprintf(text, sizeof(text), "Name:\tx\nPPid:\t%d\n", (int)parent);
        config_fixture_write(f, path, text);
        snprintf(path, sizeof(path), "proc/%d/cgroup", (int)pid);
        snprintf(text, sizeof(text), "4:memory:%s\n0::/user.slice\n", cgroup);
        config_fixture_write(f, path, text);
}

/* A registered task's stand-in: it waits to be killed, and dies with the test. */
static _Noreturn void idle_child(void)
{
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;)
                pause();
}

static const struct registration *find(struct registrations *r, const char *proc, pid_t pid)
{
        struct cluster_cgroup cg;

        assert_int_equal(process_facts_read_cluster_cgroup(proc, pid, &cg), 0);
        return registrations_find(r, proc, pid, &cg);
}

static void test_step_cgroup_covers_orphans(void **state)
{
        struct config_fixture f;
        struct registrations r = { 0 };
        char proc[96];
        pid_t task = fork();

        assert_true(task >= 0);
        if (task == 0)
                idle_child();
        config_fixture_init(&f);
        snprintf(proc, sizeof(proc), "%s/proc", f.dir);
        /* the task, Debian 12's slurmd's v1 layout (test-components.md) */
        fake_process(&f, task, 1, "/slurm_localhost/uid_0/job_7/step_0/task_0");
        fake_process(&f, 4000001, 1, "/slurm_localhost/uid_0/job_7/step_0/task_0");   /* double-forked: init's */
        fake_process(&f, 4000002, 1, "/slurm_localhost/uid_0/job_7/step_1/task_0");   /* another step */
        fake_process(&f, 4000003, 1, "/slurm_localhost/uid_0/job_8/step_0/task_0");   /* another job */
        fake_process(&f, 4000004, task, "/user.slice"); /* moved out of the step: by its parent, the task */
        assert_int_equal(registrations_set(&r, proc, task, WORKLOAD_CLASS_OFFLINE, "slurm-7.0"), 0);
        assert_int_equal(r.items[0].slurm_job, 7);
        assert_string_equal(r.items[0].slurm_step, "0");

        assert_ptr_equal(find(&r, proc, task), &r.items[0]);
        assert_ptr_equal(find(&r, proc, 4000001), &r.items[0]);
        assert_null(find(&r, proc, 4000002));
        assert_null(find(&r, proc, 4000003));
        assert_ptr_equal(find(&r, proc, 4000004), &r.items[0]);

        /* the task exits: what it left in its step stays covered while tracked */
        kill(task, SIGKILL);
        assert_int_equal(waitpid(task, NULL, 0), task);
        registrations_mark_unused(&r);
        assert_ptr_equal(find(&r, proc, 4000001), &r.items[0]);
        assert_int_equal(r.items[0].pid, 0);
        registrations_drop_unused_steps(&r);
        assert_int_equal(r.n, 1);
        assert_false(registrations_remove(&r, task)); /* its pid names no registration any more */
        /* ... and goes when no tracked process is in the step */
        registrations_mark_unused(&r);
        registrations_drop_unused_steps(&r);
        assert_int_equal(r.n, 0);
        assert_null(find(&r, proc, 4000001));

        registrations_done(&r);
        config_fixture_cleanup(&f);
}

/* Outside a step's cgroup, a registration covers its descendants alone, and ends with its process. */
static void test_without_a_step(void **state)
{
        struct config_fixture f;
        struct registrations r = { 0 };
        char proc[96];
        pid_t task = fork();

        assert_true(task >= 0);
        if (task == 0)
                idle_child();
        config_fixture_init(&f);
        snprintf(proc, sizeof(proc), "%s/proc", f.dir);
        fake_process(&f, task, 1, "/user.slice");
        fake_process(&f, 4000001, task, "/user.slice");
        fake_process(&f, 4000002, 1, "/user.slice");
        assert_int_equal(registrations_set(&r, proc, task, WORKLOAD_CLASS_ONLINE, NULL), 0);
        assert_int_equal(r.items[0].slurm_job, 0);
        assert_ptr_equal(find(&r, proc, 4000001), &r.items[0]);
        assert_null(find(&r, proc, 4000002));
        kill(task, SIGKILL);
        assert_int_equal(waitpid(task, NULL, 0), task);
        assert_null(find(&r, proc, 4000001));
        assert_int_equal(r.n, 0);
        registrations_done(&r);
        config_fixture_cleanup(&f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_step_cgroup_covers_orphans),
                cmocka_unit_test(test_without_a_step),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
