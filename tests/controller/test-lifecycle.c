/* SPDX-License-Identifier: MIT */
/*
 * gpreemptd and the lives of the processes it manages, on an emulated node
 * (run under kfdemu-run --gpus 2), judged from outside, by the offline
 * jobs' own progress: a process that execs into another program is
 * classified again; online work stops offline work on its own GPU only,
 * and only while it lasts; a hold survives a reload and covers queues
 * created later; and no offline process stays suspended longer than
 * MaxSuspendMs while the online side never goes idle. A group-stop
 * (SIGSTOP, SIGTSTP) of an offline process suspends its GPU work until
 * SIGCONT, whatever the online side does, its signals arrive as sent
 * (sigqueue's value and code intact, real-time ones once each, in order),
 * every thread of a multi-threaded one stops and runs again with it, a
 * signal sent to one thread reaches that thread, and its parent sees the
 * stop and the continue (waitpid); SIGKILL ends it
 * stopped or not; made online while stopped, it is let go and stays
 * stopped, its queues running. A cgroup freezer holds the GPU until the
 * thaw, with no signal at all, and a frozen process is let go only then.
 * A registration covers a process from before it execs and the processes
 * it starts.
 *
 *   test-lifecycle PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP
 */
#include <dirent.h>
#include <json.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cleanup.h"
#include "daemon-harness.h"
#include "daemon-status.h"
#include "emulated-app.h"
#include "test-support.h"

/*
 * What the longest kernel of an offline job may exceed MaxSuspendMs by
 * before the test calls it a broken bound: the kernel itself, a kernel's
 * restore, and the host not running the daemon's loop, its preemption
 * worker or the model for a while. A broken bound shows as the whole online
 * period (several seconds).
 */
#define STALL_MARGIN_MS 700

static const char *gpreemptd_path, *app_path;

/* Offline bounds beyond any test's length: a suspension lasts until its cause ends. */
static const char no_slices[] = "[Offline]\nMaxSuspendMs=10000\nMinOfflineSharePercent=0\n";

/*
 * A freezer cgroup of the test's own: in cgroup v1's freezer hierarchy where
 * it is mounted (as Slurm's proctrack/cgroup uses it), else in cgroup v2.
 */
struct test_freezer {
        char dir[128]; /* "" when not made */
        bool v1;
};

/* The daemon's tracer is its preemption worker: a thread of the daemon, not its main one. */
static bool traced_by_daemon(const struct daemon_harness *h, pid_t pid)
{
        pid_t tracer = tracer_of(pid);
        char path[64];

        snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)h->pid, (int)tracer);
        return tracer > 0 && access(path, F_OK) == 0;
}

/* Status shows a process let go when the daemon decides it; the worker detaches right after. */
static void assert_let_go(pid_t pid)
{
        for (int i = 0; i < 500 && tracer_of(pid) != 0; i++)
                usleep(10000);
        assert_int_equal(tracer_of(pid), 0);
}

struct fixture {
        struct daemon_harness h;
        struct emulated_app offline, online;
        struct test_freezer freezer;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        *state = f;
        return 0;
}

static void write_cgroup_file(const char *dir, const char *name, const char *value)
{
        char path[192];
        FILE *file;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        file = fopen(path, "we");
        if (!file || fputs(value, file) < 0 || fclose(file) != 0)
                fail_msg("cannot write \"%s\" to %s: %s", value, path, strerror(errno));
}

static void freezer_make(struct test_freezer *fz)
{
        fz->v1 = access("/sys/fs/cgroup/freezer/freezer.state", F_OK) == 0 ||
                 access("/sys/fs/cgroup/freezer/cgroup.procs", F_OK) == 0;
        snprintf(fz->dir, sizeof(fz->dir), "/sys/fs/cgroup/%sgpreempt-test-%d", fz->v1 ? "freezer/" : "",
                 (int)getpid());
        if (mkdir(fz->dir, 0755) < 0)
                fail_msg("cannot make the freezer cgroup %s: %s", fz->dir, strerror(errno));
}

static void freezer_set(struct test_freezer *fz, bool frozen)
{
        if (fz->v1)
                write_cgroup_file(fz->dir, "freezer.state", frozen ? "FROZEN" : "THAWED");
        else
                write_cgroup_file(fz->dir, "cgroup.freeze", frozen ? "1" : "0");
}

static void freezer_move(struct test_freezer *fz, pid_t pid)
{
        char value[16];

        snprintf(value, sizeof(value), "%d", (int)pid);
        write_cgroup_file(fz->dir, "cgroup.procs", value);
}

/* Thawed (a frozen process would not even die of SIGKILL), emptied into the root cgroup, removed. */
static void freezer_remove(struct test_freezer *fz, pid_t pid)
{
        char value[16];

        if (!fz->dir[0])
                return;
        freezer_set(fz, false);
        if (pid > 0) {
                snprintf(value, sizeof(value), "%d", (int)pid);
                write_cgroup_file(fz->v1 ? "/sys/fs/cgroup/freezer" : "/sys/fs/cgroup", "cgroup.procs", value);
        }
        rmdir(fz->dir);
        fz->dir[0] = '\0';
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        freezer_remove(&f->freezer, f->offline.pid);
        emulated_app_stop(&f->online);
        emulated_app_stop(&f->offline);
        daemon_harness_cleanup(&f->h);
        free(f);
        return 0;
}

static void start_daemon(struct daemon_harness *h, const char *settings, const char *workloads)
{
        daemon_harness_start_configured(h, gpreemptd_path, settings, workloads);
}

/* How many times the app has printed READY: once per program image it ran. */
static int ready_count(const struct emulated_app *a)
{
        char buf[1 << 16];
        FILE *f = fopen(a->output, "re");
        size_t n;
        int count = 0;

        assert_non_null(f);
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        for (const char *p = buf; (p = strstr(p, "READY pid=")); p++)
                count++;
        return count;
}

static void wait_exec(const struct emulated_app *a)
{
        for (int i = 0; i < 1000; i++) {
                if (ready_count(a) >= 2)
                        return;
                usleep(10000);
        }
        fail_msg("pid %d did not exec and print READY again within 10 s", (int)a->pid);
}

static bool is_unmanaged(struct json_object *p)
{
        return p && !status_bool(p, "managed");
}

static bool is_watched_online(struct json_object *p)
{
        const char *class = status_string(p, "class");

        return p && class && strcmp(class, "online") == 0 && status_int(p, "watched_queues") > 0;
}

static bool is_attached_offline(struct json_object *p)
{
        const char *class = status_string(p, "class");

        return p && class && strcmp(class, "offline") == 0 && status_bool(p, "attached") &&
               status_int(p, "watched_queues") == 0;
}

/* Kernels a completes in about ms milliseconds. */
static int64_t kernels_in(struct emulated_app *a, int ms)
{
        int64_t before = emulated_app_kernels(a);

        usleep((useconds_t)ms * 1000);
        return emulated_app_kernels(a) - before;
}

/* Suspended (held, or by online work, with a bound beyond the test): at most the kernel being saved completes. */
static void assert_still(struct fixture *f, struct emulated_app *a, const char *why)
{
        int64_t done = kernels_in(a, 300);

        if (done > 1)
                fail_msg("pid %d %s, yet completed %lld kernels in 300 ms; daemon log:\n%s", (int)a->pid, why,
                         (long long)done, daemon_harness_log(&f->h));
}

/* Running: 1 ms kernels, so even a host that runs it a tenth of the time completes 10. Returns how many. */
static int64_t assert_running(struct fixture *f, struct emulated_app *a, const char *why)
{
        int64_t done = kernels_in(a, 300);

        if (done < 10)
                fail_msg("pid %d %s, yet completed only %lld kernels in 300 ms; daemon log:\n%s", (int)a->pid, why,
                         (long long)done, daemon_harness_log(&f->h));
        return done;
}

/*
 * Suspended by online work: within 5 s (the daemon's reaction on a loaded
 * host) it stops, then over 300 ms it completes under a quarter of what it
 * did alone in as long. Not "at most one kernel" as when held: on a loaded
 * host the online app's own submissions have gaps, each of which is a
 * (correct) resume after the hold-off.
 */
static void assert_kept_off(struct fixture *f, struct emulated_app *a, int64_t alone, const char *why)
{
        int64_t done;

        for (int i = 0; i < 50 && kernels_in(a, 100) > 1; i++)
                ;
        done = kernels_in(a, 300);
        if (done * 4 > alone)
                fail_msg("pid %d %s, yet completed %lld kernels in 300 ms (%lld alone); daemon log:\n%s", (int)a->pid,
                         why, (long long)done, (long long)alone, daemon_harness_log(&f->h));
}

static void wait_log(struct daemon_harness *h, const char *text)
{
        for (int i = 0; i < 500 && !strstr(daemon_harness_log(h), text); i++)
                usleep(10000);
        if (!strstr(daemon_harness_log(h), text))
                fail_msg("the daemon did not log \"%s\" within 5 s; its log:\n%s", text, daemon_harness_log(h));
}

static void assert_held_still(struct fixture *f)
{
        daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->offline.pid, NULL, NULL);
        usleep(50000);
        assert_still(f, &f->offline, "is held");
        daemon_call_pid(&f->h, "io.gpreempt.Resume", f->offline.pid, NULL, NULL);
}

/*
 * kfdemu-app --exec-after re-executes itself without that option: the
 * command line changes, and the kernel gives the new image a new KFD
 * process under the same pid. first_seen says what the daemon must make of
 * the first image; the second matches the offline workload.
 */
static void exec_into_offline_job(struct fixture *f, const char *workloads, status_process_test_fn first_seen,
                                  const char *first_class)
{
        static const char *const launcher[] = { "--exec-after", "1.5", "--continuous", "--gpu", "0",
                                                "--kernel-us", "1000", NULL };

        start_daemon(&f->h, no_slices, workloads);
        emulated_app_start(&f->offline, app_path, launcher);
        daemon_status_wait_process(&f->h, f->offline.pid, first_seen, first_class, 5000);
        if (ready_count(&f->offline) != 1)
                fail_msg("the launcher exec'd before the daemon classified it; the test proves nothing");
        wait_exec(&f->offline);
        daemon_status_wait_process(&f->h, f->offline.pid, is_attached_offline,
                                   "reclassified as offline and attached after its exec", 5000);
        assert_held_still(f);
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

static void test_exec_reclassifies_an_unmanaged_launcher(void **state)
{
        exec_into_offline_job(*state,
                              "[Workload]\nName=train\nClass=offline\nMatchCommandLine=*kfdemu-app --continuous*\n",
                              is_unmanaged, "seen as unmanaged");
}

static void test_exec_ends_the_online_watch(void **state)
{
        exec_into_offline_job(*state,
                              "[Workload]\nName=launch\nClass=online\nMatchCommandLine=*--exec-after*\n"
                              "[Workload]\nName=train\nClass=offline\nMatchCommandLine=*kfdemu-app --continuous*\n",
                              is_watched_online, "watched as online");
}

static const char two_classes[] = "[Workload]\nName=serve\nClass=online\nMatchCommandLine=*--rate*\n"
                                  "[Workload]\nName=train\nClass=offline\nMatchCommandLine=*--continuous*\n";

/*
 * Online work on GPU 0 that never idles (more than the GPU can do) until
 * end_busy_online(), once the daemon watches it. Not for a duration of its
 * own: on a loaded host a short one ended before the daemon had seen its
 * queues, and a long one before the event the test waited for.
 */
static void start_busy_online(struct fixture *f)
{
        static const char *const online0[] = { "--rate", "2000", "--gpu", "0", "--kernel-us", "2000", NULL };
        char watching[64];

        emulated_app_start(&f->online, app_path, online0);
        /* the log, not Status: the control socket waits while the detector is due at every turn */
        snprintf(watching, sizeof(watching), "Process %d: watching", (int)f->online.pid);
        wait_log(&f->h, watching);
}

/* The online work ends: SIGTERM stops kfdemu-app cleanly, as the end of its --duration would. */
static void end_busy_online(struct fixture *f)
{
        kill(f->online.pid, SIGTERM);
        if (emulated_app_wait(&f->online, 10000) == -1)
                fail_msg("the online job did not end within 10 s of SIGTERM");
}

static void test_only_the_busy_gpu_is_suspended_and_only_while_busy(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };
        static const char *const offline1[] = { "--continuous", "--gpu", "1", "--kernel-us", "1000", NULL };
        struct fixture *f = *state;
        struct emulated_app other_gpu = { 0 };

        start_daemon(&f->h, no_slices, two_classes);
        emulated_app_start(&f->offline, app_path, offline0);
        emulated_app_start(&other_gpu, app_path, offline1);
        daemon_status_wait_process(&f->h, f->offline.pid, is_attached_offline, "attached", 5000);
        daemon_status_wait_process(&f->h, other_gpu.pid, is_attached_offline, "attached", 5000);
        int64_t alone = assert_running(f, &f->offline, "has the GPU to itself");

        start_busy_online(f);
        assert_kept_off(f, &f->offline, alone, "shares GPU 0 with busy online work");
        assert_running(f, &other_gpu, "is on GPU 1, where nothing online runs");

        /* online done: back after the hold-off (2 ms) */
        end_busy_online(f);
        usleep(100000);
        assert_running(f, &f->offline, "has the GPU to itself again");
        emulated_app_stop(&other_gpu);
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/*
 * A queue created on a GPU that online work keeps suspended is suspended
 * too: by the session, where it holds that GPU already, and by the
 * manager, for a process whose first queue there it is.
 */
static void test_late_queue_on_a_suspended_gpu_is_suspended(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000",
                                                "--late-queue-after", "4", NULL };
        /* its first queue on GPU 1, where nothing online runs; the late one on GPU 0 */
        static const char *const offline10[] = { "--continuous", "--gpu", "1", "--gpu", "0", "--kernel-us", "1000",
                                                 "--late-queue-after", "4", NULL };
        struct fixture *f = *state;
        struct emulated_app second = { 0 };
        char held_gpu[64], new_gpu[64];
        const char *line;

        start_daemon(&f->h, no_slices, two_classes);
        emulated_app_start(&f->offline, app_path, offline0);
        emulated_app_start(&second, app_path, offline10);
        daemon_status_wait_process(&f->h, f->offline.pid, is_attached_offline, "attached", 5000);
        daemon_status_wait_process(&f->h, second.pid, is_attached_offline, "attached", 5000);
        int64_t alone = assert_running(f, &f->offline, "has GPU 0 to itself");

        start_busy_online(f);
        assert_kept_off(f, &f->offline, alone, "shares GPU 0 with busy online work");
        snprintf(held_gpu, sizeof(held_gpu), "Process %d: new queue", (int)f->offline.pid);
        snprintf(new_gpu, sizeof(new_gpu), "Process %d: new queue", (int)second.pid);
        wait_log(&f->h, held_gpu);
        wait_log(&f->h, new_gpu);
        line = strstr(daemon_harness_log(&f->h), new_gpu);
        if (!strstr(line, "on suspended GPU"))
                fail_msg("pid %d's first queue on the suspended GPU was not suspended; daemon log:\n%s",
                         (int)second.pid, daemon_harness_log(&f->h));
        assert_kept_off(f, &f->offline, alone, "shares GPU 0 with busy online work, with its late queue too");
        emulated_app_stop(&f->online);
        emulated_app_stop(&second);
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* A queue created while its process is held is held too. */
static void test_late_queue_of_a_held_process_is_held(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000",
                                                "--late-queue-after", "1", NULL };
        struct fixture *f = *state;
        char new_queue[64];

        start_daemon(&f->h, no_slices, two_classes);
        emulated_app_start(&f->offline, app_path, offline0);
        daemon_status_wait_process(&f->h, f->offline.pid, is_attached_offline, "attached", 5000);
        daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->offline.pid, NULL, NULL);
        snprintf(new_queue, sizeof(new_queue), "Process %d: new queue", (int)f->offline.pid);
        wait_log(&f->h, new_queue);
        usleep(50000);
        assert_still(f, &f->offline, "is held with the queue it created since");
        daemon_call_pid(&f->h, "io.gpreempt.Resume", f->offline.pid, NULL, NULL);
        assert_running(f, &f->offline, "was let go");
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* SIGHUP keeps sessions: a held process stays held, and is not attached again. */
static void test_reload_keeps_a_held_session(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };
        struct fixture *f = *state;
        const char *first, *log;
        char attached[64];

        start_daemon(&f->h, no_slices, two_classes);
        emulated_app_start(&f->offline, app_path, offline0);
        daemon_status_wait_process(&f->h, f->offline.pid, is_attached_offline, "attached", 5000);
        daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->offline.pid, NULL, NULL);
        config_fixture_write(&f->h.config, "workloads.d/60-more.conf",
                             "[Workload]\nName=other\nClass=offline\nMatchPID=4000000\n");
        kill(f->h.pid, SIGHUP);
        assert_true(daemon_harness_wait_notify(&f->h, "RELOADING=1", 5000));
        assert_true(daemon_harness_wait_notify(&f->h, "READY=1", 5000));
        assert_still(f, &f->offline, "is held across a reload");
        log = daemon_harness_log(&f->h);
        snprintf(attached, sizeof(attached), "Process %d: attached", (int)f->offline.pid);
        first = strstr(log, attached);
        if (!first || strstr(first + 1, attached))
                fail_msg("the reload ended the session; daemon log:\n%s", log);
        daemon_call_pid(&f->h, "io.gpreempt.Resume", f->offline.pid, NULL, NULL);
        assert_running(f, &f->offline, "was let go after the reload");
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/*
 * Online work that never ends beside an offline job on the same GPU:
 * offline gets a slice after every MaxSuspendMs, seen as its own progress.
 * HoldOffMs=0 and BusyPollIntervalUs=1 make the detector's next look due
 * before each look ends, as it is whenever the loop runs late on a loaded
 * host: the bounds must still be kept. A suspension is judged by the job's
 * own kernels, each from its submission to its end on the GPU; not by the
 * gaps between the test's samples of its progress, which a loaded host
 * stretched past the margin (the test's sleep and a report, each hundreds
 * of ms late) while the job ran.
 */
static void assert_bounded_beside_busy_online(struct fixture *f, bool hold, int share_percent)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };
        const int max_suspend_ms = 300, watch_ms = 4000;
        int64_t first, last;
        double longest_ms;
        char settings[256];

        snprintf(settings, sizeof(settings),
                 "BusyPollIntervalUs=1\n[Online]\nHoldOffMs=0\n"
                 "[Offline]\nMaxSuspendMs=%d\nMinOfflineSharePercent=%d\nShareWindowMs=1000\n",
                 max_suspend_ms, share_percent);
        start_daemon(&f->h, settings, two_classes);
        emulated_app_start(&f->offline, app_path, offline0);
        daemon_status_wait_process(&f->h, f->offline.pid, is_attached_offline, "attached", 5000);
        if (hold)
                daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->offline.pid, NULL, NULL);
        start_busy_online(f);
        usleep(200000);

        first = emulated_app_kernels(&f->offline);
        usleep((useconds_t)watch_ms * 1000);
        last = emulated_app_kernels(&f->offline);
        /* the kernel in flight at the end is timed too: a suspension still under way is in its time */
        for (int i = 0; emulated_app_kernels(&f->offline) <= last; i++) {
                if (i == 1000)
                        fail_msg("offline work completed no kernel in the 10 s after the watch; daemon log:\n%s",
                                 daemon_harness_log(&f->h));
                usleep(10000);
        }
        longest_ms = emulated_app_longest_kernel_ms(&f->offline);
        if (longest_ms > max_suspend_ms + STALL_MARGIN_MS)
                fail_msg("an offline kernel took %.0f ms from its submission to its end beside busy online work, "
                         "MaxSuspendMs=%d (+%d ms margin); daemon log:\n%s", longest_ms, max_suspend_ms,
                         STALL_MARGIN_MS, daemon_harness_log(&f->h));
        /*
         * Its share of the time, in 1 ms kernels at about half speed beside
         * the online kernels (e.g. 25% of 4 s: some 500 kernels). Less than
         * a tenth of that is no share at all.
         */
        if (last - first < (int64_t)watch_ms * share_percent / 100 / 2 / 10)
                fail_msg("offline work got no share: %lld kernels in %d ms; daemon log:\n%s",
                         (long long)(last - first), watch_ms, daemon_harness_log(&f->h));
        emulated_app_stop(&f->online);
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

static void test_suspension_bound_beside_busy_online(void **state)
{
        assert_bounded_beside_busy_online(*state, false, 25);
}

/*
 * A hold and the GPU's policy together: neither may stretch the other's
 * suspension. A large share makes the hold's slices long, so a suspension
 * by the GPU's policy inside one would outlast the bound by far.
 */
static void test_suspension_bound_of_a_hold_beside_busy_online(void **state)
{
        assert_bounded_beside_busy_online(*state, true, 80);
}

/* How far the GPU moved a's queue (its read index) in about ms milliseconds; a need not run to answer. */
static uint64_t gpu_progress_in(struct emulated_app *a, uint64_t read_pointer, int ms)
{
        uint64_t before, after;

        assert_int_equal(peek_u64(a->pid, read_pointer, &before), 0);
        usleep((useconds_t)ms * 1000);
        assert_int_equal(peek_u64(a->pid, read_pointer, &after), 0);
        return after - before;
}

/* The daemon's calls run on its preemption worker: Status says a process
 * stopped as soon as the stop is seen, and its queues are suspended once
 * the calls that follow return. */
static bool no_call_in_flight(struct json_object *p)
{
        return status_int(p, "suspends_in_flight") == 0 && status_int(p, "resumes_in_flight") == 0;
}

static bool is_stopped_by(struct json_object *p, const char *signal_name)
{
        const char *by = status_string(p, "stopped_by");

        return p && by && strcmp(by, signal_name) == 0 && no_call_in_flight(p);
}

static bool is_stopped_by_sigstop(struct json_object *p)
{
        return is_stopped_by(p, "SIGSTOP");
}

static bool is_stopped_by_sigtstp(struct json_object *p)
{
        return is_stopped_by(p, "SIGTSTP");
}

static bool is_not_stopped(struct json_object *p)
{
        return p && status_bool(p, "attached") && !status_string(p, "stopped_by") && no_call_in_flight(p);
}

static void assert_gpu_still(struct fixture *f, uint64_t read_pointer, const char *why)
{
        uint64_t done = gpu_progress_in(&f->offline, read_pointer, 300);

        if (done > 1)
                fail_msg("pid %d %s, yet its queue ran %llu kernels in 300 ms; daemon log:\n%s", (int)f->offline.pid,
                         why, (unsigned long long)done, daemon_harness_log(&f->h));
}

static void assert_gpu_running(struct fixture *f, uint64_t read_pointer, const char *why)
{
        uint64_t done = 0;

        /* the daemon acts on SIGCONT within its loop's turn; a loaded host may take a while */
        for (int i = 0; i < 25 && done < 10; i++)
                done = gpu_progress_in(&f->offline, read_pointer, 200);
        if (done < 10)
                fail_msg("pid %d %s, yet its queue ran only %llu kernels in 200 ms; daemon log:\n%s",
                         (int)f->offline.pid, why, (unsigned long long)done, daemon_harness_log(&f->h));
}

/* Stops the offline app with sig and checks that its GPU work stops with it, also once online work came and went. */
/*
 * What the process's parent (this test, as a shell is Ctrl-Z's) learns from
 * waitpid(WUNTRACED | WCONTINUED): the stop by sig (sig 0: the continue), as
 * without a tracer (kernel/signal.c, do_notify_parent_cldstop() for a
 * tracee whose tracer is not its parent).
 */
static void assert_parent_sees(pid_t pid, int sig)
{
        int status = 0;
        pid_t r = 0;

        for (int i = 0; i < 200 && r == 0; i++) {
                r = waitpid(pid, &status, WUNTRACED | WCONTINUED | WNOHANG);
                if (r == 0)
                        usleep(10000);
        }
        if (r != pid)
                fail_msg("the parent of pid %d heard nothing of its %s within 2 s", (int)pid,
                         sig ? "stop" : "continue");
        if (sig ? !WIFSTOPPED(status) || WSTOPSIG(status) != sig : !WIFCONTINUED(status))
                fail_msg("the parent of pid %d got wait status %#x, not its %s", (int)pid, status,
                         sig ? "stop" : "continue");
}

static void assert_stop_holds_the_gpu(struct fixture *f, int sig, status_process_test_fn stopped, uint64_t read_pointer)
{
        char state;

        kill(f->offline.pid, sig);
        daemon_status_wait_process(&f->h, f->offline.pid, stopped, "stopped, its queues suspended", 5000);
        state = process_state(f->offline.pid);
        if (state != 'T' && state != 't')
                fail_msg("pid %d is in state %c after signal %d, not stopped", (int)f->offline.pid, state, sig);
        assert_parent_sees(f->offline.pid, sig);
        assert_gpu_still(f, read_pointer, "is stopped");
        /* online work starts and ends on its GPU: the policy resumes offline work, but not a stopped process's */
        start_busy_online(f);
        end_busy_online(f);
        usleep(100000);
        assert_gpu_still(f, read_pointer, "is stopped, though online work came and went");
        kill(f->offline.pid, SIGCONT);
        daemon_status_wait_process(&f->h, f->offline.pid, is_not_stopped, "continued", 5000);
        assert_parent_sees(f->offline.pid, 0);
        assert_gpu_running(f, read_pointer, "was continued");
}

/* An empty file for the app's --signal-log, its name made from template. */
static void new_signal_log(char *template)
{
        int fd = mkstemp(template);

        assert_true(fd >= 0);
        close(fd);
}

/* The app's signal log so far, in buf. */
static char *read_signal_log(const char *path, char *buf, size_t size)
{
        FILE *log = fopen(path, "re");
        size_t n;

        assert_non_null(log);
        n = fread(buf, 1, size - 1, log);
        fclose(log);
        buf[n] = '\0';
        return buf;
}

/* Waits up to 5 s for the signal log to reach lines lines, and reads it. */
static char *wait_signal_log(const char *path, int lines, char *buf, size_t size)
{
        for (int i = 0; i < 500 && count_lines(path) < lines; i++)
                usleep(10000);
        if (count_lines(path) != lines)
                fail_msg("the signal log has %d lines, not %d: %s", count_lines(path), lines,
                         read_signal_log(path, buf, size));
        return read_signal_log(path, buf, size);
}

/*
 * kill -STOP and Ctrl-Z's SIGTSTP stop the CPU threads; the GPU goes on
 * with what was queued (2 s of kernels per request here) unless the daemon
 * suspends it, which it does for an offline process until SIGCONT. The
 * process sees every SIGCONT, once each, as without a tracer.
 */
static bool is_gone(struct json_object *p)
{
        return p == NULL;
}

static void test_group_stop_holds_the_gpu_until_sigcont(void **state)
{
        char log_path[] = "/tmp/gpreempt-test-stop-XXXXXX";
        const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", "--kernels-per-request",
                                         "2000", "--doorbell-per-request", "--signal-log", log_path, NULL };
        struct fixture *f = *state;
        uint64_t read_pointer;
        char signals[64];
        int status;

        new_signal_log(log_path);
        start_daemon(&f->h, no_slices, two_classes);
        emulated_app_start(&f->offline, app_path, offline0);
        daemon_status_wait_process(&f->h, f->offline.pid, is_attached_offline, "attached", 5000);
        read_pointer = emulated_app_read_pointer_address(&f->offline);
        assert_gpu_running(f, read_pointer, "has the GPU to itself");

        assert_stop_holds_the_gpu(f, SIGSTOP, is_stopped_by_sigstop, read_pointer);
        assert_stop_holds_the_gpu(f, SIGTSTP, is_stopped_by_sigtstp, read_pointer);

        /* the SIGUSR1 of the report, then each SIGCONT, and nothing else */
        assert_string_equal(read_signal_log(log_path, signals, sizeof(signals)), "10\n18\n18\n");
        unlink(log_path);

        /* SIGKILL while stopped and suspended: the process dies, and the daemon lets it go cleanly */
        kill(f->offline.pid, SIGSTOP);
        daemon_status_wait_process(&f->h, f->offline.pid, is_stopped_by_sigstop, "stopped, its queues suspended",
                                   5000);
        assert_parent_sees(f->offline.pid, SIGSTOP);
        kill(f->offline.pid, SIGKILL);
        assert_int_equal(waitpid(f->offline.pid, &status, 0), f->offline.pid);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        daemon_status_wait_process(&f->h, f->offline.pid, is_gone, "gone from the daemon", 5000);
        f->offline.pid = 0;
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

static bool is_frozen_and_suspended(struct json_object *p)
{
        return p && status_bool(p, "frozen") && json_object_array_length(json_object_object_get(p, "suspended_gpus")) > 0;
}

static bool is_thawed(struct json_object *p)
{
        return p && status_bool(p, "attached") && !status_bool(p, "frozen");
}

/*
 * A cgroup freezer (Slurm's proctrack/cgroup suspends jobs so) stops the
 * threads with no signal: the daemon reads the freezer's state, suspends
 * the GPU work with them until the thaw, and the process sees no signal.
 */
static void test_frozen_cgroup_holds_the_gpu_until_thawed(void **state)
{
        char log_path[] = "/tmp/gpreempt-test-freeze-XXXXXX";
        const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", "--kernels-per-request",
                                         "2000", "--doorbell-per-request", "--signal-log", log_path, NULL };
        struct fixture *f = *state;
        uint64_t read_pointer;
        char signals[64];

        new_signal_log(log_path);
        start_daemon(&f->h, no_slices, two_classes);
        /* in its cgroup before it runs, as a job's task is */
        freezer_make(&f->freezer);
        emulated_app_fork(&f->offline, app_path, offline0);
        freezer_move(&f->freezer, f->offline.pid);
        emulated_app_release(&f->offline);
        daemon_status_wait_process(&f->h, f->offline.pid, is_attached_offline, "attached", 5000);
        read_pointer = emulated_app_read_pointer_address(&f->offline);
        assert_gpu_running(f, read_pointer, "has the GPU to itself");

        freezer_set(&f->freezer, true);
        daemon_status_wait_process(&f->h, f->offline.pid, is_frozen_and_suspended, "frozen, its queues suspended",
                                   5000);
        assert_gpu_still(f, read_pointer, "is frozen");
        freezer_set(&f->freezer, false);
        daemon_status_wait_process(&f->h, f->offline.pid, is_thawed, "thawed", 5000);
        assert_gpu_running(f, read_pointer, "was thawed");

        /* the report's SIGUSR1 alone */
        assert_string_equal(read_signal_log(log_path, signals, sizeof(signals)), "10\n");
        unlink(log_path);
        freezer_remove(&f->freezer, f->offline.pid);
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* A "Key:\tvalue" line of thread tid's /proc/PID/task/TID/status, as a number in base. */
static long long task_status_number(pid_t pid, pid_t tid, const char *key, int base)
{
        char path[64], line[256];
        size_t key_len = strlen(key);
        long long value = -1;
        FILE *file;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
        file = fopen(path, "re");
        assert_non_null(file);
        while (fgets(line, sizeof(line), file))
                if (strncmp(line, key, key_len) == 0 && line[key_len] == ':')
                        value = strtoll(line + key_len + 1, NULL, base);
        fclose(file);
        return value;
}

/* Thread tid's state letter (R, S, T, t, ...), or 0 once it is gone. */
static char thread_state(pid_t pid, pid_t tid)
{
        char path[64], stat[512];
        const char *comm_end;
        FILE *file;
        size_t n;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
        file = fopen(path, "re");
        if (!file)
                return 0;
        n = fread(stat, 1, sizeof(stat) - 1, file);
        fclose(file);
        stat[n] = '\0';
        /* after "pid (comm) ", where comm may hold spaces and parentheses */
        comm_end = strrchr(stat, ')');
        return comm_end && comm_end[1] == ' ' ? comm_end[2] : 0;
}

static bool is_online_and_let_go(struct json_object *p)
{
        return is_watched_online(p) && !status_bool(p, "attached");
}

/*
 * Resume of a process no one holds changes nothing: NotHeld, and no
 * debugger call (a resume there would run offline work beside online work
 * outside the rate limit, and each call's suspension again after it).
 */
static void test_resume_of_a_process_not_held(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };
        struct fixture *f = *state;
        char released[64];

        start_daemon(&f->h, no_slices, two_classes);
        emulated_app_start(&f->offline, app_path, offline0);
        daemon_status_wait_process(&f->h, f->offline.pid, is_attached_offline, "attached", 5000);
        for (int i = 0; i < 3; i++)
                daemon_call_pid(&f->h, "io.gpreempt.Resume", f->offline.pid, NULL, "io.gpreempt.NotHeld");
        snprintf(released, sizeof(released), "Process %d: released", (int)f->offline.pid);
        if (strstr(daemon_harness_log(&f->h), released) || strstr(daemon_harness_log(&f->h), "being resumed"))
                fail_msg("a Resume of a process not held did something; daemon log:\n%s", daemon_harness_log(&f->h));
        assert_running(f, &f->offline, "was never held");
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/*
 * An operator's hold ends with the session it was made in: a held process
 * made online (Register) and then handed back to the configuration
 * (Unregister) is attached again unheld, and runs.
 */
static void test_hold_ends_when_the_process_stops_being_offline(void **state)
{
        static const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };
        struct fixture *f = *state;

        start_daemon(&f->h, no_slices, two_classes);
        emulated_app_start(&f->offline, app_path, offline0);
        daemon_status_wait_process(&f->h, f->offline.pid, is_attached_offline, "attached", 5000);
        daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->offline.pid, NULL, NULL);
        assert_still(f, &f->offline, "is held");
        daemon_call_pid(&f->h, "io.gpreempt.Register", f->offline.pid, ",\"class\":\"online\"", NULL);
        daemon_status_wait_process(&f->h, f->offline.pid, is_online_and_let_go, "online, let go", 5000);
        daemon_call_pid(&f->h, "io.gpreempt.Unregister", f->offline.pid, NULL, NULL);
        daemon_status_wait_process(&f->h, f->offline.pid, is_attached_offline, "offline again, attached", 5000);
        wait_log(&f->h, "its hold ends with its session");
        assert_running(f, &f->offline, "is offline again, no longer held");
        daemon_call_pid(&f->h, "io.gpreempt.Resume", f->offline.pid, NULL, "io.gpreempt.NotHeld");
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/*
 * A task the cgroup v1 freezer holds cannot be brought to a ptrace-stop,
 * and a tracer detaches only from one: a process that stops being offline
 * while frozen (Unregister, a reload, a class change) is let go at the thaw,
 * and then runs untraced.
 */
static void test_frozen_process_let_go_after_the_thaw(void **state)
{
        static const char *const serve[] = { "--rate", "100", "--gpu", "0", NULL };
        struct fixture *f = *state;
        char state_letter;

        start_daemon(&f->h, no_slices, two_classes);
        freezer_make(&f->freezer);
        emulated_app_fork(&f->offline, app_path, serve);
        freezer_move(&f->freezer, f->offline.pid);
        daemon_call_pid(&f->h, "io.gpreempt.Register", f->offline.pid, ",\"class\":\"offline\"", NULL);
        emulated_app_release(&f->offline);
        daemon_status_wait_process(&f->h, f->offline.pid, is_attached_offline, "registered offline, attached", 5000);
        assert_int_not_equal(tracer_of(f->offline.pid), 0);

        freezer_set(&f->freezer, true);
        daemon_status_wait_process(&f->h, f->offline.pid, is_frozen_and_suspended, "frozen, its queues suspended",
                                   5000);
        daemon_call_pid(&f->h, "io.gpreempt.Unregister", f->offline.pid, NULL, NULL);
        freezer_set(&f->freezer, false);
        daemon_status_wait_process(&f->h, f->offline.pid, is_online_and_let_go,
                                   "thawed, let go, and online by the configuration", 5000);
        assert_let_go(f->offline.pid);
        /* running or sleeping between its requests, not left in a tracing stop */
        state_letter = thread_state(f->offline.pid, f->offline.pid);
        if (!state_letter || !strchr("RS", state_letter))
                fail_msg("pid %d is in state %c once let go, not running or sleeping", (int)f->offline.pid,
                         state_letter);
        freezer_remove(&f->freezer, f->offline.pid);
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/*
 * A stopped offline process made online (Register): the daemon lets it go
 * from its stop, which a detach keeps (the group-stop stays), and its
 * queues run again, the kernels it queued before the stop going on.
 */
static void test_stopped_process_made_online_stays_stopped(void **state)
{
        const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", "--kernels-per-request",
                                         "2000", "--doorbell-per-request", NULL };
        struct fixture *f = *state;
        uint64_t read_pointer;
        char state_letter;

        start_daemon(&f->h, no_slices, two_classes);
        emulated_app_start(&f->offline, app_path, offline0);
        daemon_status_wait_process(&f->h, f->offline.pid, is_attached_offline, "attached", 5000);
        read_pointer = emulated_app_read_pointer_address(&f->offline);
        kill(f->offline.pid, SIGSTOP);
        daemon_status_wait_process(&f->h, f->offline.pid, is_stopped_by_sigstop, "stopped, its queues suspended",
                                   5000);
        assert_gpu_still(f, read_pointer, "is stopped");
        daemon_call_pid(&f->h, "io.gpreempt.Register", f->offline.pid, ",\"class\":\"online\"", NULL);
        daemon_status_wait_process(&f->h, f->offline.pid, is_online_and_let_go, "online, let go", 5000);
        assert_let_go(f->offline.pid);
        state_letter = process_state(f->offline.pid);
        if (state_letter != 'T')
                fail_msg("pid %d is in state %c once let go, not stopped", (int)f->offline.pid, state_letter);
        assert_gpu_running(f, read_pointer, "is online, though stopped");
        kill(f->offline.pid, SIGCONT);
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* sigqueue(3): sig with value to pid. */
static void queue_signal(pid_t pid, int sig, int value)
{
        if (sigqueue(pid, sig, (union sigval){ .sival_int = value }) < 0)
                fail_msg("sigqueue(%d, %d, %d): %s", (int)pid, sig, value, strerror(errno));
}

/* The log lines of three sigqueue(SIGRTMIN) sends with values first, first + 1 and first + 2. */
static void format_queued_rt_lines(char *buf, size_t size, int first)
{
        snprintf(buf, size, "%d code=%d value=%d\n%d code=%d value=%d\n%d code=%d value=%d\n", SIGRTMIN, SI_QUEUE,
                 first, SIGRTMIN, SI_QUEUE, first + 1, SIGRTMIN, SI_QUEUE, first + 2);
}

/* Takes the first line of text that is line (newline included) out of it; false if none is. */
static bool take_line(char *text, const char *line)
{
        size_t len = strlen(line);

        for (char *p = text; *p;) {
                char *next = strchr(p, '\n');

                if (strncmp(p, line, len) == 0) {
                        memmove(p, p + len, strlen(p + len) + 1);
                        return true;
                }
                if (!next)
                        break;
                p = next + 1;
        }
        return false;
}

/*
 * Signals a held process gets through its tracer keep what the sender put
 * in them: a tracer that restarts a signal-delivery-stop with the same
 * signal leaves its siginfo alone (kernel/signal.c, ptrace_signal()
 * rewrites it only for another signal number). Real-time signals queue:
 * three sent, three handled, in order, also when they wait out a group
 * stop.
 */
static void test_queued_signals_arrive_as_sent(void **state)
{
        char log_path[] = "/tmp/gpreempt-test-sigqueue-XXXXXX";
        const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", "--signal-log", log_path,
                                         NULL };
        struct fixture *f = *state;
        char signals[512], expected[256];
        pid_t pid;

        new_signal_log(log_path);
        start_daemon(&f->h, no_slices, two_classes);
        emulated_app_start(&f->offline, app_path, offline0);
        pid = f->offline.pid;
        daemon_status_wait_process(&f->h, pid, is_attached_offline, "attached", 5000);
        assert_true(traced_by_daemon(&f->h, pid));

        /* a standard signal with a value; pending ones merge, so one at a time */
        queue_signal(pid, SIGUSR2, 42);
        snprintf(expected, sizeof(expected), "%d code=%d value=42\n", SIGUSR2, SI_QUEUE);
        assert_string_equal(wait_signal_log(log_path, 1, signals, sizeof(signals)), expected);

        for (int value = 1; value <= 3; value++)
                queue_signal(pid, SIGRTMIN, value);
        format_queued_rt_lines(expected + strlen(expected), sizeof(expected) - strlen(expected), 1);
        assert_string_equal(wait_signal_log(log_path, 4, signals, sizeof(signals)), expected);

        /* sent while it is stopped: nothing runs until SIGCONT, then each once */
        kill(pid, SIGSTOP);
        daemon_status_wait_process(&f->h, pid, is_stopped_by_sigstop, "stopped, its queues suspended", 5000);
        assert_parent_sees(pid, SIGSTOP);
        for (int value = 4; value <= 6; value++)
                queue_signal(pid, SIGRTMIN, value);
        usleep(300000);
        assert_string_equal(read_signal_log(log_path, signals, sizeof(signals)), expected);
        kill(pid, SIGCONT);
        daemon_status_wait_process(&f->h, pid, is_not_stopped, "continued", 5000);
        assert_parent_sees(pid, 0);
        /*
         * SIGCONT is logged once too; where among the real-time ones
         * depends on how the kernel stacks the handlers' frames, so it is
         * taken out and the real-time ones are checked in their order.
         */
        wait_signal_log(log_path, 8, signals, sizeof(signals));
        if (!take_line(signals, "18\n"))
                fail_msg("no SIGCONT in the signal log: %s", signals);
        format_queued_rt_lines(expected + strlen(expected), sizeof(expected) - strlen(expected), 4);
        assert_string_equal(signals, expected);
        unlink(log_path);
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* The thread ids of pid, at most max; returns how many. */
static size_t list_threads(pid_t pid, pid_t *tids, size_t max)
{
        char path[64];
        struct dirent *entry;
        size_t n = 0;
        DIR *dir;

        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        dir = opendir(path);
        assert_non_null(dir);
        while ((entry = readdir(dir)) && n < max)
                if (atoi(entry->d_name) > 0)
                        tids[n++] = (pid_t)atoi(entry->d_name);
        closedir(dir);
        return n;
}

/* Room for kfdemu-app's main thread, a worker per queue and the --threads ones the tests ask for. */
#define MAX_TEST_THREADS 16

/* The threads of pid besides its main one that block no signal: kfdemu-app's --threads (its workers block all). */
static size_t idle_threads_of(pid_t pid, pid_t *idle, size_t max)
{
        pid_t tids[MAX_TEST_THREADS];
        size_t n = list_threads(pid, tids, ELEMENTSOF(tids)), n_idle = 0;

        for (size_t i = 0; i < n && n_idle < max; i++)
                if (tids[i] != pid && task_status_number(pid, tids[i], "SigBlk", 16) == 0)
                        idle[n_idle++] = tids[i];
        return n_idle;
}

static bool is_stop_state(char state)
{
        return state == 'T' || state == 't';
}

/*
 * Waits up to 5 s for every thread of pid to be stopped (T, or t for one in
 * a ptrace-stop, as its traced main thread is), or, with stopped false, for
 * none to be.
 */
static void assert_all_threads(pid_t pid, bool stopped, const char *why)
{
        pid_t tids[MAX_TEST_THREADS];
        size_t wrong = 0, n = 0;

        for (int i = 0; i < 500; i++) {
                n = list_threads(pid, tids, ELEMENTSOF(tids));
                wrong = 0;
                for (size_t k = 0; k < n; k++)
                        wrong += is_stop_state(thread_state(pid, tids[k])) != stopped;
                if (wrong == 0)
                        return;
                usleep(10000);
        }
        fail_msg("%zu of the %zu threads of pid %d are %s, though it %s", wrong, n, (int)pid,
                 stopped ? "not stopped" : "still stopped", why);
}

/*
 * A group stop stops every thread of a held process, not only the one
 * the daemon traces (the main one), and its GPU work with them; after
 * SIGCONT all run again, the GPU too. A signal sent to one thread
 * (tgkill) reaches that thread, after the continue if sent during the stop.
 */
static void test_group_stop_of_a_multithreaded_process(void **state)
{
        char log_path[] = "/tmp/gpreempt-test-threads-XXXXXX";
        const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", "--kernels-per-request",
                                         "2000", "--doorbell-per-request", "--threads", "3", "--signal-log", log_path,
                                         NULL };
        static const int stop_signals[] = { SIGSTOP, SIGTSTP };
        static const status_process_test_fn stopped_by[] = { is_stopped_by_sigstop, is_stopped_by_sigtstp };
        struct fixture *f = *state;
        char signals[512], directed[64];
        uint64_t read_pointer;
        pid_t pid, idle[4];
        int lines;

        new_signal_log(log_path);
        start_daemon(&f->h, no_slices, two_classes);
        emulated_app_start(&f->offline, app_path, offline0);
        pid = f->offline.pid;
        daemon_status_wait_process(&f->h, pid, is_attached_offline, "attached", 5000);
        assert_true(traced_by_daemon(&f->h, pid));
        if (idle_threads_of(pid, idle, ELEMENTSOF(idle)) != 3)
                fail_msg("pid %d does not have the 3 signal-taking threads of --threads 3", (int)pid);
        read_pointer = emulated_app_read_pointer_address(&f->offline);
        lines = 1; /* the report's SIGUSR1 */
        assert_gpu_running(f, read_pointer, "has the GPU to itself");

        for (size_t i = 0; i < ELEMENTSOF(stop_signals); i++) {
                kill(pid, stop_signals[i]);
                daemon_status_wait_process(&f->h, pid, stopped_by[i], "stopped, its queues suspended", 5000);
                assert_parent_sees(pid, stop_signals[i]);
                assert_all_threads(pid, true, "was stopped");
                assert_gpu_still(f, read_pointer, "is stopped");
                assert_int_equal(tgkill(pid, idle[i], SIGUSR2), 0);
                usleep(100000);
                assert_int_equal(count_lines(log_path), lines);
                kill(pid, SIGCONT);
                daemon_status_wait_process(&f->h, pid, is_not_stopped, "continued", 5000);
                assert_parent_sees(pid, 0);
                assert_all_threads(pid, false, "was continued");
                assert_gpu_running(f, read_pointer, "was continued");
                /* SIGCONT (any thread of those that take signals may run its handler) and the directed SIGUSR2 */
                lines += 2;
                snprintf(directed, sizeof(directed), "%d code=%d tid=%d\n", SIGUSR2, SI_TKILL, (int)idle[i]);
                if (!strstr(wait_signal_log(log_path, lines, signals, sizeof(signals)), directed))
                        fail_msg("the SIGUSR2 sent to thread %d is not logged as taken by it: %s", (int)idle[i],
                                 signals);
        }
        /* the thread that got nothing yet runs its handler too */
        assert_int_equal(tgkill(pid, idle[2], SIGWINCH), 0);
        snprintf(directed, sizeof(directed), "%d code=%d tid=%d\n", SIGWINCH, SI_TKILL, (int)idle[2]);
        if (!strstr(wait_signal_log(log_path, lines + 1, signals, sizeof(signals)), directed))
                fail_msg("the SIGWINCH sent to thread %d is not logged as taken by it: %s", (int)idle[2], signals);
        unlink(log_path);
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* The Status entry whose workload is name, or NULL; owned by status. */
static struct json_object *process_named(struct json_object *status, const char *name)
{
        struct json_object *procs;

        if (!json_object_object_get_ex(status, "processes", &procs))
                return NULL;
        for (size_t i = 0; i < json_object_array_length(procs); i++) {
                struct json_object *p = json_object_array_get_idx(procs, i);
                const char *workload = status_string(p, "workload");

                if (workload && strcmp(workload, name) == 0)
                        return p;
        }
        return NULL;
}

static bool has_registered_offline_child(struct json_object *status, void *userdata)
{
        struct json_object *p = process_named(status, "job-8");
        const char *class = status_string(p, "class");

        return p && status_int(p, "pid") != *(const pid_t *)userdata && class && strcmp(class, "offline") == 0 &&
               status_bool(p, "registered") && status_bool(p, "attached");
}

static bool is_registered_offline(struct json_object *p)
{
        const char *workload = status_string(p, "workload");

        return is_attached_offline(p) && status_bool(p, "registered") && workload && strcmp(workload, "job-7") == 0;
}

/*
 * What a batch system does: it registers a task before the task execs the
 * job's program, and a batch script's GPU work runs in its children. The
 * registration outranks the configuration (which calls --rate jobs online)
 * and ends with Unregister.
 */
static void test_registration_covers_exec_and_children(void **state)
{
        static const char *const serve[] = { "--rate", "100", "--gpu", "0", NULL };
        struct fixture *f = *state;
        struct emulated_app script = { 0 };
        char command[512];
        const char *script_args[] = { "-c", command, NULL };

        start_daemon(&f->h, no_slices, two_classes);
        daemon_call_pid(&f->h, "io.gpreempt.Register", 4000000, ",\"class\":\"offline\"", "io.gpreempt.NoSuchProcess");

        emulated_app_fork(&f->offline, app_path, serve);
        daemon_call_pid(&f->h, "io.gpreempt.Register", f->offline.pid, ",\"class\":\"offline\",\"name\":\"job 7\"",
                        "org.varlink.service.InvalidParameter");
        daemon_call_pid(&f->h, "io.gpreempt.Register", f->offline.pid, ",\"class\":\"offline\",\"name\":\"job-7\"",
                        NULL);
        emulated_app_release(&f->offline);
        daemon_status_wait_process(&f->h, f->offline.pid, is_registered_offline, "registered offline as job-7", 5000);

        snprintf(command, sizeof(command), "%s --rate 100 --gpu 0 --report json & wait", app_path);
        emulated_app_fork(&script, "/bin/sh", script_args);
        daemon_call_pid(&f->h, "io.gpreempt.Register", script.pid, ",\"class\":\"offline\",\"name\":\"job-8\"", NULL);
        emulated_app_release(&script);
        daemon_status_wait(&f->h, has_registered_offline_child, &script.pid, "the script's child registered offline",
                           5000, 20);

        daemon_call_pid(&f->h, "io.gpreempt.Unregister", f->offline.pid, NULL, NULL);
        daemon_status_wait_process(&f->h, f->offline.pid, is_watched_online, "back to the configuration's online",
                                   5000);
        emulated_app_stop(&script);
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_exec_reclassifies_an_unmanaged_launcher, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_ends_the_online_watch, setup, teardown),
                cmocka_unit_test_setup_teardown(test_only_the_busy_gpu_is_suspended_and_only_while_busy, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_late_queue_on_a_suspended_gpu_is_suspended, setup, teardown),
                cmocka_unit_test_setup_teardown(test_late_queue_of_a_held_process_is_held, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reload_keeps_a_held_session, setup, teardown),
                cmocka_unit_test_setup_teardown(test_resume_of_a_process_not_held, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hold_ends_when_the_process_stops_being_offline, setup, teardown),
                cmocka_unit_test_setup_teardown(test_suspension_bound_beside_busy_online, setup, teardown),
                cmocka_unit_test_setup_teardown(test_suspension_bound_of_a_hold_beside_busy_online, setup, teardown),
                cmocka_unit_test_setup_teardown(test_group_stop_holds_the_gpu_until_sigcont, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stopped_process_made_online_stays_stopped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_queued_signals_arrive_as_sent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_group_stop_of_a_multithreaded_process, setup, teardown),
                cmocka_unit_test_setup_teardown(test_frozen_cgroup_holds_the_gpu_until_thawed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_frozen_process_let_go_after_the_thaw, setup, teardown),
                cmocka_unit_test_setup_teardown(test_registration_covers_exec_and_children, setup, teardown),
        };

        if (argc != 3) {
                fprintf(stderr, "usage: test-lifecycle PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP\n");
                return 2;
        }
        gpreemptd_path = argv[1];
        app_path = argv[2];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
