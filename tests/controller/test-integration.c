/* SPDX-License-Identifier: MIT */
/*
 * gpreemptd on an emulated node (run under kfdemu-run --gpus 2 --trace
 * TRACE): real kfdemu-app processes as online and offline work, the daemon
 * driven through its Varlink API.
 *
 *   test-integration PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP TRACE
 */
#include <json.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon-harness.h"
#include "daemon-status.h"
#include "emulated-app.h"
#include "loop-scheduling.h"
#include "test-support.h"

/*
 * RealtimeCpuPercent= of the cap's test: above the idle daemon's share, far
 * below the busy cadence's, with or without sanitizers
 * (docs/benchmarks/daemon-internals.md).
 */
#define BUSY_TEST_CAP_PERCENT "5"

static const char *gpreemptd_path, *app_path, *trace_path;

static const char workloads[] = "[Workload]\nName=serve\nClass=online\nMatchCommandLine=*--rate*\n"
                                "[Workload]\nName=train\nClass=offline\nMatchCommandLine=*--continuous*\n";

static void start_daemon_with(struct daemon_harness *h, const char *policy)
{
        daemon_harness_start_configured(h, gpreemptd_path, policy, workloads);
}

static void start_daemon(struct daemon_harness *h)
{
        start_daemon_with(h, "");
}

/* Waits until the daemon reports pid attached (1) or gone (0); returns the process's GPU. */
static int64_t wait_attached(struct daemon_harness *h, pid_t pid)
{
        for (int i = 0; i < 500; i++) {
                struct json_object *s = daemon_status(h);
                struct json_object *p = status_process(s, pid);
                int64_t gpu = -1;

                if (p && json_object_get_boolean(json_object_object_get(p, "attached")) &&
                    json_object_array_length(json_object_object_get(p, "gpus")) > 0)
                        gpu = json_object_get_int64(json_object_array_get_idx(json_object_object_get(p, "gpus"), 0));
                json_object_put(s);
                if (gpu >= 0)
                        return gpu;
                usleep(10000);
        }
        fail_msg("process %d never attached; daemon log:\n%s", (int)pid, daemon_harness_log(h));
        return -1;
}

/* What a test started, so that teardown can stop it even after a failure. */
struct fixture {
        struct daemon_harness h, again;
        struct emulated_app a, b, o;
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

        emulated_app_stop(&f->o);
        emulated_app_stop(&f->b);
        emulated_app_stop(&f->a);
        daemon_harness_cleanup(&f->again);
        daemon_harness_cleanup(&f->h);
        free(f);
        return 0;
}

/*
 * An offline process that another debugger (here strace) traces when the
 * daemon first sees it is managed once that debugger has left, without a
 * reload: the daemon tries again.
 */
static void test_offline_process_traced_by_another_is_managed_once_free(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };
        struct fixture *f = *state;
        char pid_arg[16];
        pid_t strace;
        int status;

        emulated_app_start(&f->a, app_path, offline0);
        snprintf(pid_arg, sizeof(pid_arg), "%d", (int)f->a.pid);
        strace = fork();
        assert_true(strace >= 0);
        if (strace == 0) {
                execl("/usr/bin/strace", "strace", "-o", "/dev/null", "-p", pid_arg, (char *)NULL);
                _exit(127);
        }
        for (int i = 0; i < 2500 && tracer_of(f->a.pid) != strace; i++)
                usleep(2000);
        assert_int_equal(tracer_of(f->a.pid), strace);

        start_daemon(&f->h);
        for (int i = 0; i < 500 && !strstr(daemon_harness_log(&f->h), "tries again"); i++)
                usleep(10000);
        if (!strstr(daemon_harness_log(&f->h), "tries again"))
                fail_msg("the daemon did not find the traced process unmanageable; its log:\n%s",
                         daemon_harness_log(&f->h));
        /* strace detaches on SIGTERM */
        kill(strace, SIGTERM);
        assert_int_equal(waitpid(strace, &status, 0), strace);
        wait_attached(&f->h, f->a.pid);
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

static void test_online_work_suspends_offline_on_its_gpu_only(void **state)
{
        static const char *const offline0[] = { "--continuous", "--queues", "2", "--gpu", "0", "--kernel-us", "3000", NULL };
        static const char *const offline1[] = { "--continuous", "--gpu", "1", "--kernel-us", "3000", NULL };
        static const char *const online0[] = { "--rate", "50", "--gpu", "0", "--kernel-us", "1000", "--duration", "1", NULL };
        struct fixture *f = *state;
        struct json_object *s;
        int64_t gpu_a, gpu_b;

        start_daemon(&f->h);
        emulated_app_start(&f->a, app_path, offline0);
        emulated_app_start(&f->b, app_path, offline1);
        gpu_a = wait_attached(&f->h, f->a.pid);
        gpu_b = wait_attached(&f->h, f->b.pid);
        assert_int_not_equal(gpu_a, gpu_b);

        emulated_app_start(&f->o, app_path, online0);
        assert_int_not_equal(emulated_app_wait(&f->o, 10000), -1);
        usleep(100000); /* past the hold-off: everything resumed */

        s = daemon_status(&f->h);
        if (status_int(status_gpu(s, gpu_a), "suspends") < 10 ||
            status_int(status_gpu(s, gpu_b), "suspends") > 0)
                fail_msg("suspensions on the wrong GPU: %s", json_object_to_json_string(s));
        assert_false(json_object_get_boolean(json_object_object_get(status_gpu(s, gpu_a), "offline_suspended")));
        assert_int_equal(status_int(status_process(s, f->b.pid), "suspends"), 0);
        json_object_put(s);

        emulated_app_stop(&f->o);
        emulated_app_stop(&f->a);
        emulated_app_stop(&f->b);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        daemon_harness_cleanup(&f->h);
}

/*
 * An online service whose requests end with a barrier the host releases
 * 200 ms after their kernels (kfdemu-app --host-wait-us, as a HIP stream
 * waiting on a host callback): its queue's read index stays below its write
 * index for the whole wait, but the GPU does nothing for it. Halfway through
 * each wait the service queues one more kernel behind the barrier
 * (--queue-during-wait), which runs after the release: that store is no
 * work, and must not trap. The offline job is resumed during each wait and
 * suspended again for each request's kernel and for the kernel after each
 * release, two suspensions per request: about 8 requests of 3 ms each, so
 * the job spends far less than the 1.6 s of host waits suspended.
 */
static void test_host_wait_lets_offline_work_run(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };
        static const char *const online0[] = { "--rate", "4", "--gpu", "0", "--kernel-us",
                                                "3000", "--host-wait-us", "200000", "--queue-during-wait",
                                                "--duration", "2", NULL };
        struct fixture *f = *state;
        struct json_object *s, *g;
        int64_t gpu, requests;

        start_daemon(&f->h);
        emulated_app_start(&f->a, app_path, offline0);
        gpu = wait_attached(&f->h, f->a.pid);
        emulated_app_start(&f->o, app_path, online0);
        usleep(1900000);
        requests = emulated_app_kernels(&f->o);
        assert_int_not_equal(emulated_app_wait(&f->o, 10000), -1);
        usleep(100000); /* past the hold-off: everything resumed */

        s = daemon_status(&f->h);
        g = status_gpu(s, gpu);
        /* one more request may start after the count: its two suspensions */
        if (requests < 5 || status_int(g, "suspends") < requests || status_int(g, "suspends") > 2 * (requests + 1) ||
            status_int(g, "suspended_usec") > 400000 ||
            status_int(g, "resumes_max_suspend") > 0 ||
            json_object_get_boolean(json_object_object_get(g, "offline_suspended")))
                fail_msg("%lld requests with a 200 ms host wait each, a kernel queued during it: status %s; "
                         "daemon log:\n%s",
                         (long long)requests, json_object_to_json_string(s), daemon_harness_log(&f->h));
        json_object_put(s);
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        daemon_harness_cleanup(&f->h);
}

static void test_hold_register_and_sigkill_failsafe(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "2000", NULL };
        struct fixture *f = *state;
        int64_t k1, k2;

        /* a bound far beyond the test's length: the hold must not give a slice here */
        start_daemon_with(&f->h, "[Offline]\nMaxSuspendMs=10000\n");
        emulated_app_start(&f->a, app_path, offline0);
        wait_attached(&f->h, f->a.pid);

        daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->a.pid, NULL, NULL);
        usleep(50000);
        k1 = emulated_app_kernels(&f->a);
        usleep(200000);
        k2 = emulated_app_kernels(&f->a);
        assert_true(k2 - k1 <= 1); /* held: at most the kernel that was saved completes */

        daemon_call_pid(&f->h, "io.gpreempt.Register", f->a.pid, ",\"class\":\"online\"", NULL);
        daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->a.pid, NULL, "io.gpreempt.NotOffline");
        daemon_call_pid(&f->h, "io.gpreempt.Unregister", f->a.pid, NULL, NULL);
        wait_attached(&f->h, f->a.pid);
        daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->a.pid, NULL, NULL);

        /* the daemon dies while holding it: the kernel resumes its queues */
        daemon_harness_stop(&f->h, SIGKILL);
        usleep(100000);
        k1 = emulated_app_kernels(&f->a);
        usleep(300000);
        k2 = emulated_app_kernels(&f->a);
        if (k2 - k1 < 10)
                fail_msg("offline work did not resume after SIGKILL of the daemon: %lld -> %lld kernels",
                         (long long)k1, (long long)k2);
        daemon_harness_cleanup(&f->h);

        /* and a new daemon takes over, without the dead one's hold */
        start_daemon(&f->again);
        wait_attached(&f->again, f->a.pid);
        daemon_call_pid(&f->again, "io.gpreempt.Resume", f->a.pid, NULL, "io.gpreempt.NotHeld");
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->again, SIGTERM), 0);
        daemon_harness_cleanup(&f->again);
}

static void test_sigterm_resumes_and_detaches(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "2000", NULL };
        struct fixture *f = *state;
        int64_t k1, k2;
        char status_path[64], line[256];
        FILE *status_file;
        bool traced = true;

        start_daemon(&f->h);
        emulated_app_start(&f->a, app_path, offline0);
        wait_attached(&f->h, f->a.pid);
        daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->a.pid, NULL, NULL);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        k1 = emulated_app_kernels(&f->a);
        usleep(300000);
        k2 = emulated_app_kernels(&f->a);
        if (k2 - k1 < 10)
                fail_msg("offline work did not resume after SIGTERM: %lld -> %lld kernels", (long long)k1, (long long)k2);
        /* and it is no longer traced, so a debugger could attach now */
        snprintf(status_path, sizeof(status_path), "/proc/%d/status", (int)f->a.pid);
        status_file = fopen(status_path, "re");
        assert_non_null(status_file);
        while (fgets(line, sizeof(line), status_file))
                if (strncmp(line, "TracerPid:", 10) == 0)
                        traced = strtol(line + 10, NULL, 10) != 0;
        fclose(status_file);
        assert_false(traced);
        emulated_app_stop(&f->a);
        daemon_harness_cleanup(&f->h);
}

static void test_offline_exit_while_suspended(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "2000", NULL };
        struct fixture *f = *state;
        struct json_object *s;
        int status;

        start_daemon(&f->h);
        emulated_app_start(&f->a, app_path, offline0);
        wait_attached(&f->h, f->a.pid);
        daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->a.pid, NULL, NULL);
        kill(f->a.pid, SIGTERM);
        status = emulated_app_wait(&f->a, 5000);
        if (status == -1)
                fail_msg("an offline process held suspended did not exit within 5 s of SIGTERM");
        for (int i = 0; i < 100; i++) {
                struct json_object *p;

                s = daemon_status(&f->h);
                p = status_process(s, f->a.pid);
                json_object_put(s);
                if (!p)
                        break;
                usleep(10000);
        }
        s = daemon_status(&f->h);
        assert_null(status_process(s, f->a.pid));
        json_object_put(s);
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        daemon_harness_cleanup(&f->h);
}

/* The GPUs Status shows pid's queues suspended on. */
static size_t suspended_gpus(struct daemon_harness *h, pid_t pid)
{
        struct json_object *s = daemon_status(h);
        size_t n = json_object_array_length(json_object_object_get(status_process(s, pid), "suspended_gpus"));

        json_object_put(s);
        return n;
}

/*
 * Suspend answers once the queues are suspended, and Resume once they run:
 * Status right after each shows it, every time (a script that holds a
 * process and then relies on it must not race the daemon's worker).
 */
static void test_hold_answers_once_made(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "2000", NULL };
        struct fixture *f = *state;

        /* no slice from the bounds while the test looks */
        start_daemon_with(&f->h, "[Offline]\nMaxSuspendMs=60000\nMinOfflineSharePercent=0\n");
        emulated_app_start(&f->a, app_path, offline0);
        wait_attached(&f->h, f->a.pid);
        for (int i = 0; i < 20; i++) {
                daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->a.pid, NULL, NULL);
                if (suspended_gpus(&f->h, f->a.pid) != 1)
                        fail_msg("round %d: not suspended when Suspend answered; daemon log:\n%s", i,
                                 daemon_harness_log(&f->h));
                daemon_call_pid(&f->h, "io.gpreempt.Resume", f->a.pid, NULL, NULL);
                if (suspended_gpus(&f->h, f->a.pid) != 0)
                        fail_msg("round %d: still suspended when Resume answered; daemon log:\n%s", i,
                                 daemon_harness_log(&f->h));
        }
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        daemon_harness_cleanup(&f->h);
}

/*
 * A Suspend the kernel refuses is answered with the refusal: here the
 * process's runtime never enabled debugging, so SUSPEND_QUEUES fails with
 * EPERM (kfd_chardev.c, kfd_ioctl_set_debug_trap(): rocm-userspace.md §2).
 */
static void test_refused_suspend_is_an_error(void **state)
{
        static const char *const disabled[] = { "--continuous", "--gpu", "0", "--kernel-us", "2000",
                                                "--no-runtime-enable", NULL };
        struct fixture *f = *state;

        start_daemon_with(&f->h, "[Offline]\nMaxSuspendMs=60000\nMinOfflineSharePercent=0\n");
        emulated_app_start(&f->a, app_path, disabled);
        wait_attached(&f->h, f->a.pid);
        daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->a.pid, NULL, "io.gpreempt.OperationFailed");
        assert_int_equal(suspended_gpus(&f->h, f->a.pid), 0);
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        daemon_harness_cleanup(&f->h);
}

static void test_late_queue_is_suspended(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "2000",
                                                "--late-queue-after", "0.5", NULL };
        struct fixture *f = *state;

        /* no slice from the bounds while the late queue appears */
        start_daemon_with(&f->h, "[Offline]\nMaxSuspendMs=10000\n");
        emulated_app_start(&f->a, app_path, offline0);
        wait_attached(&f->h, f->a.pid);
        daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->a.pid, NULL, NULL);
        for (int i = 0; i < 300 && !strstr(daemon_harness_log(&f->h), "new queue"); i++)
                usleep(10000);
        if (!strstr(daemon_harness_log(&f->h), "suspended"))
                fail_msg("the late queue was not suspended; daemon log:\n%s", daemon_harness_log(&f->h));
        assert_non_null(strstr(daemon_harness_log(&f->h), "new queue"));
        /* the line a suspended new queue gets, not a failure's */
        assert_non_null(strstr(daemon_harness_log(&f->h), "on suspended GPU"));
        daemon_call_pid(&f->h, "io.gpreempt.Resume", f->a.pid, NULL, NULL);
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        daemon_harness_cleanup(&f->h);
}

static void test_starvation_bound(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };
        struct fixture *f = *state;
        /* more work than the GPU can do: the online side never goes idle */
        static const char *const online0[] = { "--rate", "2000", "--gpu", "0", "--kernel-us", "2000", "--duration", "2", NULL };
        struct json_object *s, *g;
        int64_t gpu, k1, k2;

        start_daemon_with(&f->h, "[Offline]\nMaxSuspendMs=100\nMinOfflineSharePercent=20\nShareWindowMs=1000\n");
        emulated_app_start(&f->a, app_path, offline0);
        gpu = wait_attached(&f->h, f->a.pid);
        emulated_app_start(&f->o, app_path, online0);
        usleep(300000);
        k1 = emulated_app_kernels(&f->a);
        usleep(1000000);
        k2 = emulated_app_kernels(&f->a);
        s = daemon_status(&f->h);
        g = status_gpu(s, gpu);
        /* 100 ms suspended, then a 25 ms slice: several bound-forced resumes per second, and progress */
        if (status_int(g, "resumes_max_suspend") < 3 || k2 <= k1)
                fail_msg("offline work starved: %lld -> %lld kernels, status %s", (long long)k1, (long long)k2,
                         json_object_to_json_string(s));
        json_object_put(s);
        emulated_app_stop(&f->o);
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        daemon_harness_cleanup(&f->h);
}

static void test_hold_respects_bounds(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };
        struct fixture *f = *state;
        int64_t k1, k2;

        start_daemon_with(&f->h, "[Offline]\nMaxSuspendMs=100\nMinOfflineSharePercent=20\n");
        emulated_app_start(&f->a, app_path, offline0);
        wait_attached(&f->h, f->a.pid);
        daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->a.pid, NULL, NULL);
        k1 = emulated_app_kernels(&f->a);
        usleep(1000000);
        k2 = emulated_app_kernels(&f->a);
        /* ~20% of a second in 25 ms slices: some progress, far from all of it */
        if (k2 <= k1 || strstr(daemon_harness_log(&f->h), "runs for its slice") == NULL)
                fail_msg("a held process got no slice: %lld -> %lld kernels; log:\n%s", (long long)k1, (long long)k2,
                         daemon_harness_log(&f->h));
        daemon_call_pid(&f->h, "io.gpreempt.Resume", f->a.pid, NULL, NULL);
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        daemon_harness_cleanup(&f->h);
}

static void test_reload_reclassifies_and_keeps_sessions(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "2000", NULL };
        struct fixture *f = *state;
        struct json_object *s, *p, *reply = NULL;
        char *error = NULL;

        start_daemon(&f->h);
        emulated_app_start(&f->a, app_path, offline0);
        wait_attached(&f->h, f->a.pid);

        /* the same process becomes online: detached, watched */
        config_fixture_write(&f->h.config, "workloads.d/50-test.conf",
                             "[Workload]\nName=serve\nClass=online\nMatchCommandLine=*--continuous*\n");
        assert_int_equal(daemon_harness_call(&f->h, "io.gpreempt.Reload", NULL, &reply, &error), 0);
        assert_null(error);
        json_object_put(reply);
        s = daemon_status(&f->h);
        p = status_process(s, f->a.pid);
        assert_non_null(p);
        assert_string_equal(json_object_get_string(json_object_object_get(p, "class")), "online");
        assert_false(json_object_get_boolean(json_object_object_get(p, "attached")));
        json_object_put(s);

        /* and back: attached again (the previous session ended cleanly) */
        config_fixture_write(&f->h.config, "workloads.d/50-test.conf", workloads);
        kill(f->h.pid, SIGHUP);
        assert_true(daemon_harness_wait_notify(&f->h, "READY=1", 5000));
        wait_attached(&f->h, f->a.pid);
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        daemon_harness_cleanup(&f->h);
}

/* Processes that start and die at any moment, also mid-attach: the daemon keeps answering and forgets them. */
static void test_churn(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "500", NULL };
        static const char *const online0[] = { "--rate", "500", "--gpu", "0", "--kernel-us", "200", NULL };
        struct fixture *f = *state;
        struct json_object *s;
        size_t left = 1;

        start_daemon(&f->h);
        for (int i = 0; i < 12; i++) {
                emulated_app_start(&f->a, app_path, offline0);
                emulated_app_start(&f->o, app_path, online0);
                usleep((useconds_t)(i % 4) * 15000);
                kill(i % 2 ? f->a.pid : f->o.pid, i % 3 ? SIGKILL : SIGTERM);
                usleep(5000);
                emulated_app_stop(&f->a);
                emulated_app_stop(&f->o);
        }
        for (int i = 0; i < 200 && left; i++) {
                s = daemon_status(&f->h);
                left = json_object_array_length(json_object_object_get(s, "processes"));
                json_object_put(s);
                usleep(10000);
        }
        assert_int_equal(left, 0);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* At normal priority, demoted by the cap more times than before (userdata: that count). */
static bool loop_demoted_again(struct json_object *status, void *userdata)
{
        const int64_t *before = userdata;

        return status_int(status, "realtime_demotions") > *before && status_int(status, "realtime_priority") == 0;
}

/*
 * RealtimeCpuPercent=: online work that never pauses, watched by polling
 * (DetectorMode=poll), keeps the loop looking for its end every hold-off/10,
 * here every BusyPollIntervalUs (HoldOffMs=0), which costs the loop far
 * more than the cap; above the cap the loop runs at normal priority. (The
 * busy cadence between requests is the preemption worker's, at normal
 * priority: preemption-worker.h.)
 * Before the online work, the same daemon watching an offline process alone
 * stays within it.
 */
static void test_busy_detector_is_capped(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "2000", NULL };
        /* more requests than the GPU serves: its online side never idle */
        static const char *const online0[] = { "--rate", "2000", "--gpu", "0", "--kernel-us", "1000", "--duration",
                                               "60", NULL };
        struct fixture *f = *state;
        struct json_object *s;
        int64_t demotions;

        start_daemon_with(&f->h, "RealtimePriority=1\nRealtimeCpuPercent=" BUSY_TEST_CAP_PERCENT
                                 "\nDetectorMode=poll\n[Online]\nHoldOffMs=0\n");
        emulated_app_start(&f->a, app_path, offline0);
        wait_attached(&f->h, f->a.pid);
        /* attaching has a cost of its own, which may take a window over the cap: idle is what follows */
        usleep(3 * LOOP_CPU_CAP_WINDOW_US);
        s = daemon_status(&f->h);
        demotions = status_int(s, "realtime_demotions");
        json_object_put(s);
        /* for some five windows, with Status called as often as while waiting below */
        for (int i = 0; i < 25; i++) {
                usleep(20000);
                s = daemon_status(&f->h);
                if (status_int(s, "realtime_demotions") != demotions || status_int(s, "realtime_priority") != 1)
                        fail_msg("demoted with nothing online to watch: %s; daemon log:\n%s",
                                 json_object_to_json_string(s), daemon_harness_log(&f->h));
                json_object_put(s);
        }

        emulated_app_start(&f->o, app_path, online0);
        daemon_status_wait(&f->h, loop_demoted_again, &demotions, "the busy loop demoted by the cap", 30000, 20);
        emulated_app_stop(&f->o);
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        daemon_harness_cleanup(&f->h);
}

/* Counts the trace's lines holding text; each must carry its three stamps
 * in order: the ioctl's entry, the server's receipt, the call's end. */
static int trace_lines(const char *text)
{
        char line[256];
        int n = 0;
        FILE *f = fopen(trace_path, "re");

        assert_non_null(f);
        while (fgets(line, sizeof(line), f)) {
                const char *entered = strstr(line, " entered "), *ended = strstr(line, " ended ");
                unsigned long long received_ns = strtoull(line, NULL, 10), entered_ns, ended_ns;

                if (!strstr(line, text))
                        continue;
                if (!entered || !ended)
                        fail_msg("a trace line without its ioctl entry or end time: %s", line);
                entered_ns = strtoull(entered + strlen(" entered "), NULL, 10);
                ended_ns = strtoull(ended + strlen(" ended "), NULL, 10);
                if (entered_ns == 0 || entered_ns > received_ns || ended_ns < received_ns)
                        fail_msg("the stamps are out of order: %s", line);
                n++;
        }
        fclose(f);
        return n;
}

/* trace_lines(), once the trace has some: kfdemu writes a call's line after
 * its reply, so a caller can count the call before the line is there. */
static int trace_lines_within(const char *text, int timeout_ms)
{
        int n = trace_lines(text);

        for (int waited = 0; n == 0 && waited < timeout_ms; waited += 10) {
                usleep(10000);
                n = trace_lines(text);
        }
        return n;
}

/*
 * An online process whose queue sat idle: its first request must suspend
 * the offline work, whichever way the queue is watched. With a breakpoint,
 * the GPU is not polled at all while idle, so only the trap can see it.
 */
static void first_request_after_idle_is_caught(struct fixture *f, const char *mode, const char *want_watch)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "2000", NULL };
        static const char *const online0[] = { "--rate", "1", "--gpu", "0", "--kernel-us", "1000", "--duration",
                                               "100000", NULL };
        char policy[128], marker[64];
        const char *watch = NULL;
        int64_t suspends = 0;

        snprintf(policy, sizeof(policy), "DetectorMode=%s\n", mode);
        start_daemon_with(&f->h, policy);
        emulated_app_start(&f->a, app_path, offline0);
        wait_attached(&f->h, f->a.pid);
        emulated_app_start(&f->o, app_path, online0);
        for (int i = 0; i < 3000 && suspends < 1; i++) {
                struct json_object *s = daemon_status(&f->h);
                struct json_object *p = status_process(s, f->o.pid);
                struct json_object *queues = p ? json_object_object_get(p, "online_queues") : NULL;

                if (queues && json_object_array_length(queues) > 0)
                        watch = json_object_get_string(
                                json_object_object_get(json_object_array_get_idx(queues, 0), "watch"));
                if (watch && strcmp(watch, want_watch) != 0)
                        fail_msg("DetectorMode=%s: the queue is watched by %s: %s", mode, watch,
                                 json_object_to_json_string(p));
                if (p && json_object_array_length(json_object_object_get(p, "gpus")) > 0)
                        suspends = status_int(status_gpu(s,
                                                 json_object_get_int64(json_object_array_get_idx(
                                                         json_object_object_get(p, "gpus"), 0))),
                                         "suspends");
                json_object_put(s);
                usleep(10000);
        }
        if (suspends < 1 || !watch)
                fail_msg("DetectorMode=%s: the first request suspended nothing; daemon log:\n%s", mode,
                         daemon_harness_log(&f->h));
        snprintf(marker, sizeof(marker), "SUSPEND_QUEUES caller %d ", (int)f->h.pid);
        assert_true(trace_lines_within(marker, 2000) >= 1); /* the ioctl reached the emulator */
        emulated_app_stop(&f->o);
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* A status figure of the GPU with that id. */
static int64_t gpu_figure(struct fixture *f, int64_t gpu, const char *name)
{
        struct json_object *s = daemon_status(&f->h);
        int64_t value = status_int(status_gpu(s, gpu), name);

        json_object_put(s);
        return value;
}

/*
 * An offline process and an online service of `rate` requests a second on
 * GPU 0, watched by polling alone with idle looks a second apart (and the
 * [Online]/[Offline] `policy`); returns the GPU once the first request,
 * seen by an idle look, suspended offline work.
 */
static int64_t start_polled_service(struct fixture *f, const char *rate, const char *policy)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "2000", NULL };
        const char *const online0[] = { "--rate", rate, "--gpu", "0", "--kernel-us", "1000", "--duration", "100000",
                                        NULL };
        char settings[256];
        int64_t gpu;

        snprintf(settings, sizeof(settings), "DetectorMode=poll\nIdlePollIntervalUs=1000000\nIdlePollCpuPercent=0\n%s",
                 policy);
        start_daemon_with(&f->h, settings);
        emulated_app_start(&f->a, app_path, offline0);
        gpu = wait_attached(&f->h, f->a.pid);
        emulated_app_start(&f->o, app_path, online0);
        for (int i = 0; i < 300 && gpu_figure(f, gpu, "suspends") < 1; i++)
                usleep(10000);
        assert_true(gpu_figure(f, gpu, "suspends") >= 1);
        return gpu;
}

/*
 * Once its online side is idle, a suspended GPU is looked at on the idle
 * cadence only (here a look a second); the look before the hold-off's resume
 * sees the requests that came during the hold-off, by their moved write
 * index, so requests 40 ms apart under a 100 ms hold-off stay one
 * suspension, as with the looks of the busy side's cadence before.
 */
static void test_requests_within_the_hold_off_stay_one_suspension(void **state)
{
        struct fixture *f = *state;
        int64_t gpu = start_polled_service(f, "25", "[Online]\nHoldOffMs=100\n[Offline]\nMaxSuspendMs=100000\n"
                                                    "MinOfflineSharePercent=0\n");

        usleep(1500000); /* some 37 requests, each within the hold-off of the one before */
        if (gpu_figure(f, gpu, "suspends") != 1 || gpu_figure(f, gpu, "resumes_idle") != 0)
                fail_msg("requests within the hold-off were not seen before resuming: %" PRId64 " suspensions, %" PRId64
                         " resumptions; daemon log:\n%s", gpu_figure(f, gpu, "suspends"),
                         gpu_figure(f, gpu, "resumes_idle"), daemon_harness_log(&f->h));
        emulated_app_stop(&f->o);
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/*
 * After a resume the GPU is back on the busy cadence at once: requests 100
 * ms apart, polled only, with idle looks a second apart, are each seen and
 * each suspend offline work (the hold-off, 2 ms, ends between them): as many
 * suspensions as requests the service made (its kernels, one a request),
 * but for one at each end of the count. A look left due at the idle
 * interval from the hold-off saw one a second.
 */
static void test_polled_requests_after_resumes(void **state)
{
        struct fixture *f = *state;
        int64_t gpu = start_polled_service(f, "10", ""), first = gpu_figure(f, gpu, "suspends");
        int64_t kernels = emulated_app_kernels(&f->o), later, requests;

        usleep(2000000); /* some 20 requests */
        later = gpu_figure(f, gpu, "suspends") - first;
        requests = emulated_app_kernels(&f->o) - kernels;
        if (requests < 5 || later < requests - 2)
                fail_msg("%" PRId64 " suspensions for %" PRId64 " requests in 2 s", later, requests);
        emulated_app_stop(&f->o);
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

static void test_first_request_caught_by_breakpoint(void **state)
{
        first_request_after_idle_is_caught(*state, "breakpoint", "breakpoint");
}

static void test_first_request_caught_by_polling(void **state)
{
        first_request_after_idle_is_caught(*state, "poll", "poll");
}

/* The first trace line of a SUSPEND_QUEUES by caller whose ioctl entry is in [from_ns, to_ns); 0 if none. */
static unsigned long long suspend_entered_between(pid_t caller, unsigned long long from_ns, unsigned long long to_ns)
{
        char line[256], marker[64];
        unsigned long long found = 0;
        FILE *f = fopen(trace_path, "re");

        assert_non_null(f);
        snprintf(marker, sizeof(marker), "SUSPEND_QUEUES caller %d ", (int)caller);
        while (!found && fgets(line, sizeof(line), f)) {
                const char *entered = strstr(line, " entered ");
                unsigned long long entered_ns = entered ? strtoull(entered + strlen(" entered "), NULL, 10) : 0;

                if (strstr(line, marker) && entered_ns >= from_ns && entered_ns < to_ns)
                        found = entered_ns;
        }
        fclose(f);
        return found;
}

/*
 * A store seen by the preemption worker is suspended by it alone: kfdemu
 * stamps the SUSPEND_QUEUES ioctl's entry after the worker woke for it and
 * before the loop heard of it (the daemon's debug line "offline work
 * suspended on a <how> at" gives both stamps, CLOCK_MONOTONIC as kfdemu's).
 * The online service sends `rate` requests a second.
 */
static void worker_suspends_before_the_loop_hears(struct fixture *f, const char *settings, const char *rate,
                                                  const char *how)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "2000", NULL };
        const char *const online0[] = { "--rate", rate, "--gpu", "0", "--kernel-us", "1000", "--duration", "100000",
                                        NULL };
        char needle[64];
        unsigned long long seen_ns = 0, loop_ns = 0;
        const char *line = NULL;

        snprintf(needle, sizeof(needle), "offline work suspended on a %s at ", how);
        start_daemon_with(&f->h, settings);
        emulated_app_start(&f->a, app_path, offline0);
        wait_attached(&f->h, f->a.pid);
        emulated_app_start(&f->o, app_path, online0);
        for (long long deadline = daemon_harness_now_ms() + 10000; !line; usleep(20000)) {
                line = strstr(daemon_harness_log(&f->h), needle);
                if (!line && daemon_harness_now_ms() > deadline)
                        fail_msg("no suspension on a %s in 10 s; daemon log:\n%s", how, daemon_harness_log(&f->h));
        }
        if (sscanf(line + strlen(needle), "%llu ns (%*[^)]), seen by the loop at %llu ns", &seen_ns, &loop_ns) != 2)
                fail_msg("cannot read the stamps of: %.200s", line);
        assert_true(trace_lines_within("SUSPEND_QUEUES", 2000) >= 1);
        if (!suspend_entered_between(f->h.pid, seen_ns, loop_ns))
                fail_msg("no SUSPEND_QUEUES entered between the worker seeing the store (%llu ns) and the loop "
                         "hearing of it (%llu ns)", seen_ns, loop_ns);
        emulated_app_stop(&f->o);
        emulated_app_stop(&f->a);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* On a breakpoint's trap. */
static void test_trap_suspends_before_the_loop_hears_of_it(void **state)
{
        worker_suspends_before_the_loop_hears(*state, "DetectorMode=breakpoint\nLogLevel=debug\n", "2", "trap");
}

/*
 * With polling only, on the worker's own poll of the GPU's polled queues:
 * requests 100 ms apart come within the busy cadence's window of the one
 * before, which the worker watches once offline work runs again.
 */
static void test_worker_poll_suspends_before_the_loop_hears_of_it(void **state)
{
        worker_suspends_before_the_loop_hears(*state, "DetectorMode=poll\nLogLevel=debug\n", "10", "poll");
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_online_work_suspends_offline_on_its_gpu_only, setup, teardown),
                cmocka_unit_test_setup_teardown(test_host_wait_lets_offline_work_run, setup, teardown),
                cmocka_unit_test_setup_teardown(test_offline_process_traced_by_another_is_managed_once_free, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_hold_register_and_sigkill_failsafe, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sigterm_resumes_and_detaches, setup, teardown),
                cmocka_unit_test_setup_teardown(test_offline_exit_while_suspended, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hold_answers_once_made, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refused_suspend_is_an_error, setup, teardown),
                cmocka_unit_test_setup_teardown(test_late_queue_is_suspended, setup, teardown),
                cmocka_unit_test_setup_teardown(test_starvation_bound, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hold_respects_bounds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reload_reclassifies_and_keeps_sessions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_churn, setup, teardown),
                cmocka_unit_test_setup_teardown(test_busy_detector_is_capped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_requests_within_the_hold_off_stay_one_suspension, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_polled_requests_after_resumes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_first_request_caught_by_breakpoint, setup, teardown),
                cmocka_unit_test_setup_teardown(test_first_request_caught_by_polling, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trap_suspends_before_the_loop_hears_of_it, setup, teardown),
                cmocka_unit_test_setup_teardown(test_worker_poll_suspends_before_the_loop_hears_of_it, setup,
                                                teardown),
        };

        if (argc != 4) {
                fprintf(stderr, "usage: test-integration PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP TRACE\n");
                return 2;
        }
        gpreemptd_path = argv[1];
        app_path = argv[2];
        trace_path = argv[3];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
