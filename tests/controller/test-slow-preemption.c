/* SPDX-License-Identifier: MIT */
/*
 * gpreemptd on a node whose preemptions take 2 s each
 * (slow-preemption.conf, under kfdemu-run --config): the debugger calls are
 * made by the preemption worker, so while one waits in the kernel the loop
 * answers the API, pings the watchdog, and no call is made at SCHED_FIFO:
 * the worker runs at SCHED_OTHER while the loop is at SCHED_FIFO, and a
 * normal-priority CPU hog pinned with the daemon to one CPU keeps its pace.
 * Suspend is answered once its call is done, and a client that leaves, a
 * process that exits or a daemon that stops while it waits leaves nothing
 * waiting.
 *
 * The hog's part is meaningful where the wait spins as amdkfd's does
 * (amdkfd_fence_wait_timeout() loops on schedule(); kfd-hazards.md §5): a
 * caller at SCHED_FIFO would then hold the CPU for the whole wait. Where
 * kfdemu parks the caller instead, the hog keeps its pace whatever the
 * caller's priority, and the test checks the rest.
 *
 *   test-slow-preemption PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP
 */
#include <dirent.h>
#include <errno.h>
#include <json.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon-harness.h"
#include "daemon-status.h"
#include "emulated-app.h"
#include "test-support.h"

/* What the API may take to answer while a call waits in the kernel. */
#define ANSWER_MS 100
/*
 * The watchdog interval the daemon is given: it pings at half of it, so at
 * least once in the 2 s a preemption waits. Not shorter: the test reads
 * the pings only between calls, and the notify socket's queue holds 10
 * (net.unix.max_dgram_qlen) before the daemon's sd_notify() blocks.
 */
#define WATCHDOG_USEC "2000000"

static const char *gpreemptd_path, *app_path;

static const char offline_only[] = "[Workload]\nName=train\nClass=offline\nMatchCommandLine=*--continuous*\n";
/* A hold's bound beyond the test: the suspension lasts until Resume. */
static const char long_bounds[] = "[Offline]\nMaxSuspendMs=60000\nMinOfflineSharePercent=0\n";

struct fixture {
        struct daemon_harness h;
        struct emulated_app offline;
        pid_t hog;
        volatile uint64_t *hog_count; /* shared with the hog */
        int suspend_fd;                /* the connection of a Suspend sent, waiting for its reply; -1: none */
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        f->suspend_fd = -1;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        if (f->hog > 0) {
                kill(f->hog, SIGKILL);
                waitpid(f->hog, NULL, 0);
        }
        if (f->hog_count)
                munmap((void *)f->hog_count, sizeof(*f->hog_count));
        if (f->suspend_fd >= 0)
                close(f->suspend_fd);
        if (f->offline.pid > 0)
                emulated_app_stop(&f->offline);
        if (f->h.pid > 0)
                daemon_harness_stop(&f->h, SIGTERM);
        daemon_harness_cleanup(&f->h);
        free(f);
        return 0;
}

static bool is_suspended_and_settled(struct json_object *p)
{
        struct json_object *gpus;

        return p && json_object_object_get_ex(p, "suspended_gpus", &gpus) && json_object_array_length(gpus) > 0 &&
               status_int(p, "suspends_in_flight") == 0;
}

static bool is_gone(struct json_object *p)
{
        return !p;
}

/* Reads the notifications waiting, for up to ms, so that the pings never fill the queue (WATCHDOG_USEC). */
static void drain_notify(struct fixture *f, int ms)
{
        (void)daemon_harness_wait_notify(&f->h, "no such notification", ms);
}

/* Waits for the offline process's Status entry to pass test, reading the pings meanwhile. */
static void wait_offline(struct fixture *f, status_process_test_fn test, const char *awaited)
{
        long long deadline = daemon_harness_now_ms() + 20000;

        for (;;) {
                struct json_object *status = daemon_status(&f->h);
                bool done = test(status_process(status, f->offline.pid));

                json_object_put(status);
                if (done)
                        return;
                if (daemon_harness_now_ms() > deadline)
                        fail_msg("waited 20 s in vain for the offline process: %s; daemon log:\n%s", awaited,
                                 daemon_harness_log(&f->h));
                drain_notify(f, 20);
        }
}

/* The daemon with the offline app attached, its GPU's preemptions 2 s each. */
static void start(struct fixture *f)
{
        const char *const offline0[] = { "--continuous", "--gpu", "0", "--kernel-us", "1000", NULL };

        setenv("WATCHDOG_USEC", WATCHDOG_USEC, 1);
        daemon_harness_start_configured(&f->h, gpreemptd_path, long_bounds, offline_only);
        unsetenv("WATCHDOG_USEC");
        emulated_app_start(&f->offline, app_path, offline0);
        /* the attach refreshes the runlist: a preemption too */
        wait_offline(f, status_process_attached, "attached");
}

/* Status, timed; fails past ANSWER_MS. Returns the offline process's entry's suspends_in_flight. */
static int64_t timed_status(struct fixture *f)
{
        long long start = daemon_harness_now_ms(), took;
        struct json_object *status = daemon_status(&f->h);
        int64_t in_flight;

        took = daemon_harness_now_ms() - start;
        if (took > ANSWER_MS)
                fail_msg("Status took %lld ms while a suspension waited in the kernel", took);
        in_flight = status_int(status_process(status, f->offline.pid), "suspends_in_flight");
        json_object_put(status);
        return in_flight;
}

/*
 * Sends Suspend for the offline app (its connection in f->suspend_fd);
 * returns once the worker's call is seen in flight, and the Suspend not
 * answered before the call is done.
 */
static void suspend_slowly(struct fixture *f)
{
        long long start = daemon_harness_now_ms();
        struct json_object *params = json_object_new_object();
        char *error = NULL;

        json_object_object_add(params, "pid", json_object_new_int(f->offline.pid));
        f->suspend_fd = daemon_harness_send(&f->h, "io.gpreempt.Suspend", params);
        json_object_put(params);
        assert_true(f->suspend_fd >= 0);
        while (timed_status(f) == 0)
                if (daemon_harness_now_ms() - start > 1000)
                        fail_msg("no suspension in flight 1 s after Suspend; daemon log:\n%s",
                                 daemon_harness_log(&f->h));
        assert_int_equal(daemon_harness_read_reply(f->suspend_fd, 0, &error), -ETIMEDOUT);
}

/* The Suspend suspend_slowly() sent: its answer, within 10 s (NULL: success). */
static char *suspend_answer(struct fixture *f)
{
        char *error = NULL;
        int r = daemon_harness_read_reply(f->suspend_fd, 10000, &error);

        if (r < 0)
                fail_msg("Suspend unanswered: %s; daemon log:\n%s", strerror(-r), daemon_harness_log(&f->h));
        close(f->suspend_fd);
        f->suspend_fd = -1;
        return error;
}

static int policy_of(pid_t tid)
{
        int policy = sched_getscheduler(tid);

        if (policy < 0)
                fail_msg("sched_getscheduler(%d): %s", (int)tid, strerror(errno));
        return policy & ~SCHED_RESET_ON_FORK;
}

/*
 * While the suspension waits: Status answers within ANSWER_MS, again and
 * again; the watchdog is pinged; the thread making the call (the offline
 * process's tracer, a thread of the daemon) is at SCHED_OTHER while the
 * loop is at SCHED_FIFO.
 */
static void test_loop_answers_during_a_long_preemption(void **state)
{
        struct fixture *f = *state;
        struct json_object *status;
        pid_t tracer;

        start(f);
        status = daemon_status(&f->h);
        assert_int_equal(status_int(status, "realtime_priority"), 1);
        json_object_put(status);

        suspend_slowly(f);
        tracer = tracer_of(f->offline.pid);
        assert_true(tracer > 0 && tracer != f->h.pid);
        assert_int_equal(policy_of(tracer), SCHED_OTHER);
        assert_int_equal(policy_of(f->h.pid), SCHED_FIFO);
        drain_notify(f, 1); /* the pings before */
        assert_true(daemon_harness_wait_notify(&f->h, "WATCHDOG=1", 1500));
        for (int i = 0; i < 5; i++)
                assert_int_equal(timed_status(f), 1);

        /* answered once the call is done: Status shows it made */
        assert_null(suspend_answer(f));
        status = daemon_status(&f->h);
        assert_true(is_suspended_and_settled(status_process(status, f->offline.pid)));
        json_object_put(status);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/*
 * A client that leaves while its Suspend waits: the call is dropped, the
 * suspension made all the same, and the daemon goes on (and exits cleanly:
 * nothing of the call is left behind).
 */
static void test_client_leaves_while_suspend_waits(void **state)
{
        struct fixture *f = *state;

        start(f);
        suspend_slowly(f);
        close(f->suspend_fd);
        f->suspend_fd = -1;
        assert_int_equal(timed_status(f), 1);
        wait_offline(f, is_suspended_and_settled, "suspended");
        daemon_call_pid(&f->h, "io.gpreempt.Resume", f->offline.pid, NULL, NULL);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/*
 * The process is killed while its Suspend waits: the client is answered,
 * not left waiting. Its threads stop at their exit for the tracer
 * (PTRACE_O_TRACEEXIT), which is busy in the call, so the call is usually
 * made, and answered as made; NoSuchProcess if the exit is seen first.
 * Either way the process is gone after, and a Suspend of it is refused.
 */
static void test_process_exits_while_suspend_waits(void **state)
{
        struct fixture *f = *state;
        char *error;

        start(f);
        suspend_slowly(f);
        kill(f->offline.pid, SIGKILL);
        error = suspend_answer(f);
        if (error && strcmp(error, "io.gpreempt.NoSuchProcess") != 0)
                fail_msg("Suspend of a process killed meanwhile answered %s; daemon log:\n%s", error,
                         daemon_harness_log(&f->h));
        free(error);
        wait_offline(f, is_gone, "gone");
        daemon_call_pid(&f->h, "io.gpreempt.Suspend", f->offline.pid, NULL, "io.gpreempt.NoSuchProcess");
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* The daemon stops while a Suspend waits: the connection closes, unanswered, and the daemon exits cleanly. */
static void test_daemon_stops_while_suspend_waits(void **state)
{
        struct fixture *f = *state;
        char *error = NULL;

        start(f);
        suspend_slowly(f);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        assert_int_equal(daemon_harness_read_reply(f->suspend_fd, 10000, &error), -ECONNRESET);
}

/* A child at normal priority that counts as fast as it can on cpu. */
static void start_hog(struct fixture *f, int cpu)
{
        cpu_set_t set;

        f->hog_count = mmap(NULL, sizeof(*f->hog_count), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        assert_true(f->hog_count != MAP_FAILED);
        f->hog = fork();
        assert_true(f->hog >= 0);
        if (f->hog == 0) {
                struct sched_param normal = { 0 };

                CPU_ZERO(&set);
                CPU_SET(cpu, &set);
                if (sched_setaffinity(0, sizeof(set), &set) < 0 || sched_setscheduler(0, SCHED_OTHER, &normal) < 0)
                        _exit(1);
                for (;;)
                        (*f->hog_count)++;
        }
}

/* Every thread of pid on cpu alone. */
static void pin_process(pid_t pid, int cpu)
{
        char path[64];
        struct dirent *e;
        cpu_set_t set;
        DIR *d;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        d = opendir(path);
        assert_non_null(d);
        while ((e = readdir(d)))
                if (e->d_name[0] != '.' && sched_setaffinity(atoi(e->d_name), sizeof(set), &set) < 0)
                        fail_msg("cannot pin thread %s of the daemon: %s", e->d_name, strerror(errno));
        closedir(d);
}

/* The hog's count over ms milliseconds. */
static uint64_t hog_progress(struct fixture *f, int ms)
{
        uint64_t before = *f->hog_count;

        usleep((useconds_t)ms * 1000);
        return *f->hog_count - before;
}

/*
 * The daemon and a hog on one CPU: during the 2 s suspension the hog keeps
 * at least a quarter of its pace alone (sharing the CPU with a spinning
 * caller at the same priority, it would keep about half; with a caller at
 * SCHED_FIFO, what real-time throttling leaves: 5 %).
 */
static void test_normal_threads_run_beside_a_long_preemption(void **state)
{
        struct fixture *f = *state;
        uint64_t alone, during;

        start(f);
        pin_process(f->h.pid, 0);
        start_hog(f, 0);
        alone = hog_progress(f, 500);
        assert_true(alone > 0);
        suspend_slowly(f);
        during = hog_progress(f, 500);
        assert_int_equal(timed_status(f), 1); /* the measure was all within the wait */
        if (during < alone / 4)
                fail_msg("the hog counted %llu in 500 ms during the suspension, %llu alone before",
                         (unsigned long long)during, (unsigned long long)alone);
        assert_null(suspend_answer(f));
        wait_offline(f, is_suspended_and_settled, "suspended");
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_loop_answers_during_a_long_preemption, setup, teardown),
                cmocka_unit_test_setup_teardown(test_normal_threads_run_beside_a_long_preemption, setup, teardown),
                cmocka_unit_test_setup_teardown(test_client_leaves_while_suspend_waits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_process_exits_while_suspend_waits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_daemon_stops_while_suspend_waits, setup, teardown),
        };

        if (argc != 3) {
                fprintf(stderr, "usage: %s PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP\n", argv[0]);
                return 2;
        }
        gpreemptd_path = argv[1];
        app_path = argv[2];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
