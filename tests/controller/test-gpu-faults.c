/* SPDX-License-Identifier: MIT */
/*
 * gpreemptd on a GPU that fails its preemptions (kfdemu-run --config with a
 * [Faults] section, kfdemu-run(1) "FAULT INJECTION"), with a kfdemu-app as
 * online work and one as offline work. One case per run:
 *
 *   queue-error  the first suspension comes back with the ERROR bit: the
 *                daemon says so in one line, shows the back-off in Status,
 *                leaves the offline app running (it makes progress), and
 *                preempts again once the back-off is over.
 *   reset-gpu    the first suspension times out and the GPU is reset, which
 *                kills every ROCm process there: the API answers during the
 *                kernel's wait, the daemon outlives the reset, backs off,
 *                and does not spin.
 *   reset-queue  the first suspension meets a queue that hangs, and Linux
 *                6.12 resets only that queue, whose process aborts: the
 *                survivor is left running, never suspended, and the daemon
 *                goes on.
 *   rate-limit   no fault; an online service asking far more often than
 *                MaxPreemptionsPerSecond= gets at most that many suspensions
 *                a second (and one second's burst).
 *   hold-backoff the first suspension comes back with the ERROR bit: a hold
 *                (gpreemptctl suspend) of the other offline process is
 *                refused while the GPU backs off, saying until when and what
 *                to do (exit 2, --json error), and taken once it is over.
 *   hold-rate-limit  a hold whose slices would suspend about ten times a
 *                second gets at most MaxPreemptionsPerSecond= suspensions.
 *   mqds-off-loop  a 2 s suspension holds the offline process's mutex, which
 *                a read of debugfs mqds waits for: a process registered as
 *                online then has its queues read off the loop, which answers
 *                the Register call and Status meanwhile.
 *
 *   test-gpu-faults CASE PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP PATH-TO-GPREEMPTCTL
 */
#include <errno.h>
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

#include "ctl-runner.h"
#include "daemon-harness.h"
#include "daemon-status.h"
#include "emulated-app.h"

/* What the API may take to answer while a call waits in the kernel. */
#define ANSWER_MS 100

static const char *case_name, *gpreemptd_path, *app_path, *ctl_path;

static const char workloads[] = "[Workload]\nName=serve\nClass=online\nMatchCommandLine=*--rate*\n"
                                "[Workload]\nName=train\nClass=offline\nMatchCommandLine=*--continuous*\n";

struct fixture {
        struct daemon_harness h;
        struct emulated_app offline, online;
        struct emulated_app second_offline; /* hold-backoff's */
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
        emulated_app_stop(&f->offline);
        emulated_app_stop(&f->second_offline);
        daemon_harness_stop(&f->h, SIGTERM);
        daemon_harness_cleanup(&f->h);
        free(f);
        return 0;
}

static bool is_suspending(struct json_object *p)
{
        return p && status_int(p, "suspends_in_flight") > 0;
}

/* The only GPU's entry in a Status reply, NULL before it has one. */
static struct json_object *the_gpu(struct json_object *status)
{
        struct json_object *gpus;

        if (!json_object_object_get_ex(status, "gpus", &gpus) || json_object_array_length(gpus) == 0)
                return NULL;
        return json_object_array_get_idx(gpus, 0);
}

static struct json_object *backoff_of(struct json_object *gpu)
{
        struct json_object *b = NULL;

        return gpu && json_object_object_get_ex(gpu, "backoff", &b) ? b : NULL;
}

static bool backing_off(struct json_object *status, void *userdata)
{
        return status_bool(backoff_of(the_gpu(status)), "active");
}

/* The back-off is over, the offline app attached again and suspended once more by the policy. */
static bool preempting_again(struct json_object *status, void *userdata)
{
        const pid_t *offline = userdata;
        struct json_object *gpu = the_gpu(status);

        return gpu && !status_bool(backoff_of(gpu), "active") && status_int(gpu, "suspends") >= 2 &&
               status_process_attached(status_process(status, *offline));
}

static int64_t gpu_int(struct fixture *f, const char *key)
{
        struct json_object *status = daemon_status(&f->h);
        int64_t v = status_int(the_gpu(status), key);

        json_object_put(status);
        return v;
}

static int64_t backoff_int(struct fixture *f, const char *key)
{
        struct json_object *status = daemon_status(&f->h);
        int64_t v = status_int(backoff_of(the_gpu(status)), key);

        json_object_put(status);
        return v;
}

static void backoff_reason(struct fixture *f, char *buf, size_t size)
{
        struct json_object *status = daemon_status(&f->h);
        const char *reason = status_string(backoff_of(the_gpu(status)), "reason");

        snprintf(buf, size, "%s", reason ? reason : "(none)");
        json_object_put(status);
}

/* The daemon with settings, the offline app attached, then the online app asking at rate requests/s. */
static void start(struct fixture *f, const char *settings, const char *rate)
{
        const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };
        const char *const online0[] = { "--rate", rate, "--gpu", "0", "--kernel-us", "1000", NULL };

        daemon_harness_start_configured(&f->h, gpreemptd_path, settings, workloads);
        emulated_app_start(&f->offline, app_path, offline0);
        daemon_status_wait_process(&f->h, f->offline.pid, status_process_attached, "the offline app attached", 10000);
        emulated_app_start(&f->online, app_path, online0);
}

/* gpreemptctl status, and its --json, show the GPU's back-off and its reason. */
static void check_status_shows_backoff(struct fixture *f, const char *reason)
{
        static struct ctl_result r;
        char env_runtime[192], want[96];
        const char *const env[] = { env_runtime, NULL };
        struct json_object *status, *b;

        snprintf(env_runtime, sizeof(env_runtime), "GPREEMPT_RUNTIME_DIR=%s", f->h.runtime_dir);
        ctl_run(ctl_path, env, 0, (const char *[]){ "status", NULL }, &r);
        snprintf(want, sizeof(want), "backing off after a fault (%s", reason);
        if (r.exit_code != 0 || !strstr(r.out, want))
                fail_msg("gpreemptctl status (exit %d) does not show the back-off:\n%s%s", r.exit_code, r.out, r.err);
        ctl_run(ctl_path, env, 0, (const char *[]){ "status", "--json", NULL }, &r);
        assert_int_equal(r.exit_code, 0);
        status = json_tokener_parse(r.out);
        b = backoff_of(the_gpu(status));
        if (!status_bool(b, "active") || !status_string(b, "reason") || strcmp(status_string(b, "reason"), reason) ||
            status_int(b, "remaining_usec") <= 0)
                fail_msg("gpreemptctl status --json does not show the back-off: %s", r.out);
        json_object_put(status);
}

static void test_queue_error(void **state)
{
        struct fixture *f = *state;
        char reason[32];
        int64_t before;

        start(f, "FaultBackoffSec=2\n", "20");
        daemon_status_wait(&f->h, backing_off, NULL, "GPU backing off after the ERROR bits", 10000, 20);
        assert_int_equal(backoff_int(f, "faults"), 1);
        backoff_reason(f, reason, sizeof(reason));
        assert_string_equal(reason, "queue-error");
        if (daemon_harness_log_count(&f->h, "not preempting it for") != 1)
                fail_msg("expected one line saying the GPU backs off; daemon log:\n%s", daemon_harness_log(&f->h));
        check_status_shows_backoff(f, "queue-error");

        /* nothing stays suspended: the offline app computes while online work runs */
        before = emulated_app_kernels(&f->offline);
        usleep(300000);
        if (emulated_app_kernels(&f->offline) <= before)
                fail_msg("the offline app made no progress during the back-off; daemon log:\n%s",
                         daemon_harness_log(&f->h));
        /*
         * The fault's own resume is counted when the policy still had the GPU
         * suspended as the call's result came back; a loaded host may let the
         * hold-off end first, and the policy's resume then ran already.
         */
        assert_in_range(gpu_int(f, "resumes_fault"), 0, 1);

        /* the fault was once: preemption comes back after FaultBackoffSec= */
        daemon_status_wait(&f->h, preempting_again, &f->offline.pid, "preempting again after the back-off", 10000,
                           50);
        assert_int_equal(daemon_harness_log_count(&f->h, "back-off over"), 1);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* CPU time (utime + stime) of pid, in clock ticks. */
static long long cpu_ticks(pid_t pid)
{
        char path[64], buf[1024], *p;
        unsigned long long utime = 0, stime = 0;
        FILE *file;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        file = fopen(path, "re");
        assert_non_null(file);
        assert_non_null(fgets(buf, sizeof(buf), file));
        fclose(file);
        p = strrchr(buf, ')');
        assert_non_null(p);
        /* after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
        assert_int_equal(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime), 2);
        return (long long)(utime + stime);
}

static void test_reset_gpu(void **state)
{
        struct fixture *f = *state;
        long long ticks, hz = sysconf(_SC_CLK_TCK);

        start(f, "FaultBackoffSec=2\n", "20");
        /* the suspension waits QueuePreemptionTimeoutMs= in the kernel: the API answers meanwhile */
        daemon_status_wait_process(&f->h, f->offline.pid, is_suspending, "a suspension in the kernel", 10000);
        for (int i = 0; i < 5; i++) {
                long long t0 = daemon_harness_now_ms();
                struct json_object *s = daemon_status(&f->h);

                json_object_put(s);
                if (daemon_harness_now_ms() - t0 > ANSWER_MS)
                        fail_msg("Status took %lld ms during the kernel's wait", daemon_harness_now_ms() - t0);
        }
        /* the reset kills every ROCm process on the GPU */
        assert_true(emulated_app_wait(&f->offline, 10000) >= 0);
        assert_true(emulated_app_wait(&f->online, 10000) >= 0);
        f->offline.pid = f->online.pid = 0;

        daemon_status_wait(&f->h, backing_off, NULL, "GPU backing off after the reset", 5000, 20);
        /* and the kernel's SMI events told it of the reset itself */
        for (long long deadline = daemon_harness_now_ms() + 5000;
             !strstr(daemon_harness_log(&f->h), "the kernel reports a GPU reset"); usleep(20000))
                if (daemon_harness_now_ms() > deadline)
                        fail_msg("no GPU reset seen in the SMI events; daemon log:\n%s", daemon_harness_log(&f->h));
        /* after the reset, with nothing left to manage, the daemon idles */
        ticks = cpu_ticks(f->h.pid);
        usleep(1000000);
        if (cpu_ticks(f->h.pid) - ticks > hz / 2)
                fail_msg("the daemon used %lld of %lld ticks in the second after the reset",
                         cpu_ticks(f->h.pid) - ticks, hz);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

static bool is_listed(struct json_object *p)
{
        return p != NULL;
}

static bool is_watched(struct json_object *p)
{
        return p && status_int(p, "watched_queues") > 0;
}

/* Calls method with pid, timed; fails past ANSWER_MS. */
static void timed_call(struct fixture *f, const char *method, pid_t pid, const char *extra)
{
        long long t0 = daemon_harness_now_ms();

        daemon_call_pid(&f->h, method, pid, extra, NULL);
        if (daemon_harness_now_ms() - t0 > ANSWER_MS)
                fail_msg("%s took %lld ms while a suspension held a process's mutex; daemon log:\n%s", method,
                         daemon_harness_now_ms() - t0, daemon_harness_log(&f->h));
}

static void test_mqds_off_loop(void **state)
{
        static const char offline_only[] = "[Workload]\nName=train\nClass=offline\nMatchCommandLine=*--continuous*\n";
        const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };
        const char *const online0[] = { "--rate", "20", "--gpu", "0", "--kernel-us", "1000", NULL };
        struct fixture *f = *state;
        struct json_object *params;
        char *error = NULL;
        int suspend_fd;

        daemon_harness_start_configured(&f->h, gpreemptd_path, "[Offline]\nMaxSuspendMs=60000\nMinOfflineSharePercent=0\n",
                                        offline_only);
        emulated_app_start(&f->offline, app_path, offline0);
        daemon_status_wait_process(&f->h, f->offline.pid, status_process_attached, "the offline app attached", 20000);
        /* matched by no workload: its queues are not read until it is registered */
        emulated_app_start(&f->online, app_path, online0);
        daemon_status_wait_process(&f->h, f->online.pid, is_listed, "the online app listed", 10000);

        /* Suspend answers once its call is done: sent, and its answer read after the checks below */
        params = json_object_new_object();
        json_object_object_add(params, "pid", json_object_new_int(f->offline.pid));
        suspend_fd = daemon_harness_send(&f->h, "io.gpreempt.Suspend", params);
        json_object_put(params);
        assert_true(suspend_fd >= 0);
        daemon_status_wait_process(&f->h, f->offline.pid, is_suspending, "the hold's suspension in the kernel", 1000);
        timed_call(f, "io.gpreempt.Register", f->online.pid, ",\"class\":\"online\"");
        for (int i = 0; i < 5; i++) {
                long long t0 = daemon_harness_now_ms();
                struct json_object *status = daemon_status(&f->h);
                bool in_flight = is_suspending(status_process(status, f->offline.pid));

                json_object_put(status);
                if (daemon_harness_now_ms() - t0 > ANSWER_MS)
                        fail_msg("Status took %lld ms while the queues were read", daemon_harness_now_ms() - t0);
                assert_true(in_flight); /* all of it during the kernel's wait */
                usleep(50000);
        }
        daemon_status_wait_process(&f->h, f->online.pid, is_watched, "the online queues watched", 10000);
        assert_int_equal(daemon_harness_read_reply(suspend_fd, 10000, &error), 0);
        assert_null(error);
        close(suspend_fd);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* Whether app has exited (reaped then), without waiting. */
static bool has_exited(struct emulated_app *app)
{
        return emulated_app_wait(app, 0) >= 0;
}

static void test_reset_queue(void **state)
{
        struct fixture *f = *state;
        struct emulated_app *survivor;
        struct json_object *status;
        int64_t before;

        start(f, "FaultBackoffSec=2\n", "20");
        /* whichever queue was busy when the unmap came is reset: its process aborts */
        for (long long deadline = daemon_harness_now_ms() + 10000;
             !has_exited(&f->offline) && !has_exited(&f->online); usleep(20000))
                if (daemon_harness_now_ms() > deadline)
                        fail_msg("no process ended 10 s into a run whose first suspension resets a queue; "
                                 "daemon log:\n%s", daemon_harness_log(&f->h));
        /* emulated_app_wait() forgot the one that ended */
        survivor = f->offline.pid > 0 ? &f->offline : &f->online;
        if (survivor->pid <= 0 || kill(survivor->pid, 0) < 0)
                fail_msg("both processes ended: the GPU was reset, not one queue; daemon log:\n%s",
                         daemon_harness_log(&f->h));

        /* the survivor runs: the offline one is resumed once the online one is gone, the online one was never held */
        usleep(500000);
        before = emulated_app_kernels(survivor);
        usleep(300000);
        if (emulated_app_kernels(survivor) <= before)
                fail_msg("the %s app that survived the queue reset made no progress; daemon log:\n%s",
                         survivor == &f->offline ? "offline" : "online", daemon_harness_log(&f->h));
        status = daemon_status(&f->h);
        if (survivor == &f->offline &&
            json_object_array_length(json_object_object_get(status_process(status, f->offline.pid),
                                                            "suspended_gpus")) != 0)
                fail_msg("the offline app is still suspended: %s", json_object_to_json_string(status));
        json_object_put(status);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* gpreemptctl, as root, against the fixture's daemon. */
static void run_ctl(struct fixture *f, const char *const *args, struct ctl_result *ret)
{
        char env_runtime[192];
        const char *const env[] = { env_runtime, NULL };

        snprintf(env_runtime, sizeof(env_runtime), "GPREEMPT_RUNTIME_DIR=%s", f->h.runtime_dir);
        ctl_run(ctl_path, env, 0, args, ret);
}

static bool is_held(struct json_object *p)
{
        return p && status_bool(p, "held");
}

static bool is_held_suspended(struct json_object *p)
{
        return is_held(p) && json_object_array_length(json_object_object_get(p, "suspended_gpus")) > 0;
}

static void test_hold_backoff(void **state)
{
        const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };
        const char *const online0[] = { "--rate", "20", "--gpu", "0", "--kernel-us", "1000", NULL };
        static struct ctl_result r;
        struct fixture *f = *state;
        struct emulated_app *second = &f->second_offline;
        struct json_object *status, *reply;
        char pid_text[16];
        pid_t attached;

        /* two offline processes attached before any online work: the first suspension (one of theirs)
         * faults, and the other stays attached through the back-off */
        daemon_harness_start_configured(&f->h, gpreemptd_path, "FaultBackoffSec=5\n", workloads);
        emulated_app_start(&f->offline, app_path, offline0);
        emulated_app_start(second, app_path, offline0);
        daemon_status_wait_process(&f->h, f->offline.pid, status_process_attached, "the offline app attached", 10000);
        daemon_status_wait_process(&f->h, second->pid, status_process_attached, "the second offline app attached",
                                   10000);
        emulated_app_start(&f->online, app_path, online0);
        daemon_status_wait(&f->h, backing_off, NULL, "GPU backing off after the ERROR bits", 10000, 20);
        status = daemon_status(&f->h);
        attached = status_process_attached(status_process(status, second->pid)) ? second->pid : f->offline.pid;
        if (!status_process_attached(status_process(status, attached)))
                fail_msg("no offline process attached during the back-off: %s", json_object_to_json_string(status));
        json_object_put(status);
        snprintf(pid_text, sizeof(pid_text), "%d", (int)attached);

        /* refused while the GPU backs off: until when, and what to do */
        run_ctl(f, (const char *[]){ "suspend", pid_text, NULL }, &r);
        if (r.exit_code != 2 || !strstr(r.err, "backs off after a fault (queue-error) until") ||
            !strstr(r.err, "s from now") || !strstr(r.err, "run this again after that"))
                fail_msg("gpreemptctl suspend during the back-off: exit %d\n%s%s\ndaemon log:\n%s", r.exit_code,
                         r.out, r.err, daemon_harness_log(&f->h));
        run_ctl(f, (const char *[]){ "suspend", "--json", pid_text, NULL }, &r);
        reply = json_tokener_parse(r.out);
        if (r.exit_code != 2 || !status_string(reply, "varlink_error") ||
            strcmp(status_string(reply, "varlink_error"), "io.gpreempt.GpuBackingOff") != 0 ||
            !status_string(reply, "error"))
                fail_msg("gpreemptctl suspend --json during the back-off: exit %d\n%s%s", r.exit_code, r.out, r.err);
        json_object_put(reply);
        status = daemon_status(&f->h);
        if (is_held(status_process(status, attached)) || !backing_off(status, NULL))
                fail_msg("the refused hold took effect, or the back-off ended before the check: %s",
                         json_object_to_json_string(status));
        json_object_put(status);

        /* once the back-off is over the same command holds it */
        daemon_status_wait(&f->h, preempting_again, &attached, "the back-off over", 15000, 50);
        run_ctl(f, (const char *[]){ "suspend", pid_text, NULL }, &r);
        if (r.exit_code != 0)
                fail_msg("gpreemptctl suspend after the back-off: exit %d\n%s%s", r.exit_code, r.out, r.err);
        daemon_status_wait_process(&f->h, attached, is_held_suspended, "the hold in effect", 5000);
        run_ctl(f, (const char *[]){ "resume", pid_text, NULL }, &r);
        assert_int_equal(r.exit_code, 0);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* A held process's suspensions, per its Status entry. */
static int64_t process_suspends(struct fixture *f, pid_t pid)
{
        struct json_object *status = daemon_status(&f->h);
        int64_t v = status_int(status_process(status, pid), "suspends");

        json_object_put(status);
        return v;
}

#define RATE_LIMIT 2
#define RATE_SECONDS 3

static void test_hold_rate_limit(void **state)
{
        const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };
        struct fixture *f = *state;
        int64_t before, made;

        /* slices of 50 ms: unlimited, the hold would suspend about ten times a second */
        daemon_harness_start_configured(&f->h, gpreemptd_path,
                                        "MaxPreemptionsPerSecond=2\n[Offline]\nMaxSuspendMs=50\n"
                                        "MinOfflineSharePercent=50\n",
                                        workloads);
        emulated_app_start(&f->offline, app_path, offline0);
        daemon_status_wait_process(&f->h, f->offline.pid, status_process_attached, "the offline app attached", 10000);
        daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->offline.pid, NULL, NULL);
        usleep(1500000); /* the bucket's first second's worth is spent */
        before = process_suspends(f, f->offline.pid);
        usleep(RATE_SECONDS * 1000000);
        made = process_suspends(f, f->offline.pid) - before;
        if (made < 1 || made > RATE_LIMIT * (RATE_SECONDS + 1))
                fail_msg("%lld suspensions of a hold in %d s with MaxPreemptionsPerSecond=%d; daemon log:\n%s",
                         (long long)made, RATE_SECONDS, RATE_LIMIT, daemon_harness_log(&f->h));
        assert_true(backoff_int(f, "rate_limited") > 0);
        daemon_call_pid(&f->h, "io.gpreempt.Resume", f->offline.pid, NULL, NULL);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

static void test_rate_limit(void **state)
{
        struct fixture *f = *state;
        int64_t before, made;

        /* without the limit, every request (50 ms apart, 1 ms long) would be a suspension and a resume */
        start(f, "MaxPreemptionsPerSecond=2\n[Online]\nHoldOffMs=1\nCoalesceMs=0\n", "20");
        usleep(1500000); /* the bucket's first second's worth is spent */
        before = gpu_int(f, "suspends");
        usleep(RATE_SECONDS * 1000000);
        made = gpu_int(f, "suspends") - before;
        if (made < 1 || made > RATE_LIMIT * (RATE_SECONDS + 1))
                fail_msg("%lld suspensions in %d s with MaxPreemptionsPerSecond=%d; daemon log:\n%s",
                         (long long)made, RATE_SECONDS, RATE_LIMIT, daemon_harness_log(&f->h));
        /*
         * Not rate_limited > 0: the limit may hold without refusing a
         * suspension, since a resume waits for the next token and a GPU's
         * suspend-on-trap mark takes it then (gpreemptd's README, "Suspend on
         * trap"); the 60 requests' handful of suspensions are the limit's.
         */
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

int main(int argc, char **argv)
{
        static const struct {
                const char *name;
                CMUnitTestFunction fn;
        } cases[] = {
                { "queue-error", test_queue_error },
                { "reset-gpu", test_reset_gpu },
                { "reset-queue", test_reset_queue },
                { "rate-limit", test_rate_limit },
                { "hold-backoff", test_hold_backoff },
                { "hold-rate-limit", test_hold_rate_limit },
                { "mqds-off-loop", test_mqds_off_loop },
        };

        if (argc != 5) {
                fprintf(stderr, "usage: %s CASE PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP PATH-TO-GPREEMPTCTL\n", argv[0]);
                return 2;
        }
        case_name = argv[1];
        gpreemptd_path = argv[2];
        app_path = argv[3];
        ctl_path = argv[4];
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                if (strcmp(cases[i].name, case_name) == 0) {
                        const struct CMUnitTest tests[] = {
                                cmocka_unit_test_setup_teardown(cases[i].fn, setup, teardown),
                        };

                        return cmocka_run_group_tests_name(case_name, tests, NULL, NULL);
                }
        fprintf(stderr, "%s: unknown case %s\n", argv[0], case_name);
        return 2;
}
