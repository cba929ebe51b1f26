/* SPDX-License-Identifier: MIT */
/*
 * gpreemptd beside an online kfdemu-app whose amd_queue_t process_vm_readv
 * cannot read (HSA_USERPTR_FOR_PAGED_MEM=0: a GTT BO mapped VM_PFNMAP,
 * kfd-hazards.md §9) and an offline one in plain memory: the daemon reads
 * the online queues through /proc/PID/mem and says so once, sees the online
 * work (the offline app is suspended while the online one runs, resumed
 * after), and Status shows the queues read through /proc/PID/mem without
 * error. A second online app, with paged queues, is still read with
 * process_vm_readv.
 *
 *   test-unreadable-queues PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP
 */
#include <json.h>
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

#include "daemon-harness.h"
#include "daemon-status.h"
#include "emulated-app.h"

#define FALLBACK_LINE "cannot be read with process_vm_readv"

static const char *gpreemptd_path, *app_path;

static const char workloads[] = "[Workload]\nName=serve\nClass=online\nMatchCommandLine=*--rate*\n"
                                "[Workload]\nName=train\nClass=offline\nMatchCommandLine=*--continuous*\n";

struct fixture {
        struct daemon_harness h;
        struct emulated_app offline, online, online_paged;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        emulated_app_stop(&f->online);
        emulated_app_stop(&f->online_paged);
        emulated_app_stop(&f->offline);
        daemon_harness_stop(&f->h, SIGTERM);
        daemon_harness_cleanup(&f->h);
        free(f);
        return 0;
}

static bool has_suspended_gpus(struct json_object *p)
{
        struct json_object *gpus;

        return p && json_object_object_get_ex(p, "suspended_gpus", &gpus) && json_object_array_length(gpus) > 0;
}

static bool runs_unsuspended(struct json_object *p)
{
        return status_process_attached(p) && !has_suspended_gpus(p);
}

/* The online process's queues are watched, and every one of them was read without error via `want_via`. */
static bool online_queues_read_via(struct json_object *p, const char *want_via)
{
        struct json_object *queues;
        size_t n;

        if (!p || !json_object_object_get_ex(p, "online_queues", &queues) || !queues)
                return false;
        n = json_object_array_length(queues);
        for (size_t i = 0; i < n; i++) {
                struct json_object *q = json_object_array_get_idx(queues, i);
                const char *via = status_string(q, "read_via");

                if (status_string(q, "read_error") || !via || strcmp(via, want_via) != 0)
                        return false;
        }
        return n > 0;
}

static bool online_queues_read_via_proc_mem(struct json_object *p)
{
        return online_queues_read_via(p, "proc_pid_mem");
}

static bool online_queues_read_via_process_vm_readv(struct json_object *p)
{
        return online_queues_read_via(p, "process_vm_readv");
}

static void test_online_queues_in_gtt(void **state)
{
        const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };
        const char *const online0[] = { "--rate", "20", "--gpu", "0", "--kernel-us", "1000", "--duration", "2", NULL };
        struct fixture *f = *state;
        int64_t before;
        int status;

        daemon_harness_start_configured(&f->h, gpreemptd_path, "", workloads);
        emulated_app_start(&f->offline, app_path, offline0);
        daemon_status_wait_process(&f->h, f->offline.pid, status_process_attached, "the offline app attached", 10000);

        /* ROCr reads it at start-up; the offline app, started before, keeps paged queues */
        assert_int_equal(setenv("HSA_USERPTR_FOR_PAGED_MEM", "0", 1), 0);
        emulated_app_start(&f->online, app_path, online0);
        assert_int_equal(unsetenv("HSA_USERPTR_FOR_PAGED_MEM"), 0);
        emulated_app_start(&f->online_paged, app_path, online0);

        /* its work is seen through /proc/PID/mem: the offline app is held while it runs */
        daemon_status_wait_process(&f->h, f->offline.pid, has_suspended_gpus, "the offline app suspended", 10000);
        daemon_status_wait_process(&f->h, f->online.pid, online_queues_read_via_proc_mem,
                                   "the online queues read through /proc/PID/mem", 10000);
        daemon_status_wait_process(&f->h, f->online_paged.pid, online_queues_read_via_process_vm_readv,
                                   "the paged online queues read with process_vm_readv", 10000);
        if (daemon_harness_log_count(&f->h, FALLBACK_LINE) != 1)
                fail_msg("expected one line on the /proc/PID/mem fallback; daemon log:\n%s",
                         daemon_harness_log(&f->h));

        /* and its end too: the offline app runs again */
        status = emulated_app_wait(&f->online, 10000);
        assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        f->online.pid = 0;
        status = emulated_app_wait(&f->online_paged, 10000);
        assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        f->online_paged.pid = 0;
        daemon_status_wait_process(&f->h, f->offline.pid, runs_unsuspended, "the offline app resumed", 10000);
        before = emulated_app_kernels(&f->offline);
        usleep(200000);
        if (emulated_app_kernels(&f->offline) <= before)
                fail_msg("the offline app made no progress once the online app was gone; daemon log:\n%s",
                         daemon_harness_log(&f->h));
        assert_int_equal(daemon_harness_log_count(&f->h, FALLBACK_LINE), 1);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_online_queues_in_gtt, setup, teardown),
        };

        if (argc != 3) {
                fprintf(stderr, "usage: %s PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP\n", argv[0]);
                return 2;
        }
        gpreemptd_path = argv[1];
        app_path = argv[2];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
