/* SPDX-License-Identifier: MIT */
/*
 * gpreemptctl as a user runs it, on an emulated node:
 *   test-gpreemptctl MODE GPREEMPTCTL KFDEMU-APP RUNTIME-CYCLER
 * MODE picks the node the test runs in (see meson.build): "node" (a healthy
 * two-GPU node), "nohws", "old-kfd" or "one-vmid".
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
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

#include "node-modes.h"

#include "test-support.h"

static const char *ctl_path;
static const char *app_path;
static const char *cycler_path;

struct fixture {
        struct child app;
        struct child app2;
        struct child ctl;
        struct child helper;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        f->app.stdout_fd = f->app.stdin_fd = -1;
        f->app2.stdout_fd = f->app2.stdin_fd = -1;
        f->ctl.stdout_fd = f->ctl.stdin_fd = -1;
        f->helper.stdout_fd = f->helper.stdin_fd = -1;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        child_kill(&f->ctl);
        child_kill(&f->helper);
        child_kill(&f->app);
        child_kill(&f->app2);
        free(f);
        return 0;
}

/* Runs gpreemptctl with args to its end; returns its exit code and leaves
 * stdout+stderr in c->output. */
static int run_ctl(struct child *c, const char *const args[])
{
        char *argv[24];
        size_t n = 0;
        int status;

        argv[n++] = (char *)ctl_path;
        for (size_t i = 0; args[i] && n < 23; i++)
                argv[n++] = (char *)args[i];
        argv[n] = NULL;
        assert_int_equal(child_spawn(argv, true, c), 0);
        assert_int_equal(child_run_to_end(c, 20000, &status), 0);
        assert_true(WIFEXITED(status));
        return WEXITSTATUS(status);
}

static void spawn_ctl(struct child *c, const char *const args[])
{
        char *argv[24];
        size_t n = 0;

        argv[n++] = (char *)ctl_path;
        for (size_t i = 0; args[i] && n < 23; i++)
                argv[n++] = (char *)args[i];
        argv[n] = NULL;
        assert_int_equal(child_spawn(argv, true, c), 0);
}

static void assert_output_has(const struct child *c, const char *text)
{
        if (!memmem(c->output, c->output_len, text, strlen(text)))
                fail_msg("gpreemptctl's output lacks \"%s\":\n%.*s", text, (int)c->output_len,
                         c->output);
}

static const char *pid_arg(pid_t pid)
{
        static char bufs[4][16];
        static int next;
        char *b = bufs[next++ % 4];

        snprintf(b, 16, "%d", (int)pid);
        return b;
}

struct queue_addresses {
        uint64_t read_pointer[8];
        uint32_t gpu_id[8];
        size_t n;
};

/* The queues of pid as `gpreemptctl queues --json` lists them. */
static void list_queues(pid_t pid, struct queue_addresses *ret)
{
        struct child c = { .stdout_fd = -1, .stdin_fd = -1 };
        json_object *root, *queues;

        assert_int_equal(run_ctl(&c, (const char *[]){ "queues", pid_arg(pid), "--json", NULL }), 0);
        root = json_tokener_parse(c.output);
        assert_non_null(root);
        assert_true(json_object_object_get_ex(root, "queues", &queues));
        ret->n = json_object_array_length(queues);
        assert_true(ret->n > 0 && ret->n <= 8);
        for (size_t i = 0; i < ret->n; i++) {
                json_object *q = json_object_array_get_idx(queues, i), *v;

                assert_true(json_object_object_get_ex(q, "read_pointer_address", &v));
                ret->read_pointer[i] = strtoull(json_object_get_string(v), NULL, 16);
                assert_true(json_object_object_get_ex(q, "gpu_id", &v));
                ret->gpu_id[i] = (uint32_t)json_object_get_int64(v);
                /* Every field the verb promises. */
                for (const char *const *key = (const char *const[]){ "queue_id", "type",
                                                                     "ring_size",
                                                                     "ring_base_address",
                                                                     "write_pointer_address",
                                                                     "read_index", "write_index",
                                                                     "exception_status", NULL };
                     *key; key++)
                        assert_true(json_object_object_get_ex(q, *key, NULL));
        }
        json_object_put(root);
        child_kill(&c);
}

/* How far the read indices of the listed queues (on gpu_id, 0: all) moved in ms. */
static uint64_t progress_over(pid_t pid, const struct queue_addresses *q, uint32_t gpu_id, int ms)
{
        uint64_t before = 0, after = 0, v;

        for (size_t i = 0; i < q->n; i++)
                if (!gpu_id || q->gpu_id[i] == gpu_id) {
                        assert_int_equal(peek_u64(pid, q->read_pointer[i], &v), 0);
                        before += v;
                }
        sleep_ms(ms);
        for (size_t i = 0; i < q->n; i++)
                if (!gpu_id || q->gpu_id[i] == gpu_id) {
                        assert_int_equal(peek_u64(pid, q->read_pointer[i], &v), 0);
                        after += v;
                }
        return after - before;
}

/* Progress shows up within timeout_ms (a loaded machine may take a while
 * to schedule the emulated GPU; absence of progress is checked with fixed
 * windows instead). */
static bool progresses_within(pid_t pid, const struct queue_addresses *q, uint32_t gpu_id,
                              int timeout_ms)
{
        for (int waited = 0; waited < timeout_ms; waited += 50)
                if (progress_over(pid, q, gpu_id, 50) > 0)
                        return true;
        return false;
}

static void assert_left_running(struct child *app)
{
        char state = process_state(app->pid);

        assert_int_equal(tracer_of(app->pid), 0);
        assert_true(state != 'T' && state != 't' && state != 'Z' && state != 0);
}

static void test_hold_for_a_duration(void **state)
{
        struct fixture *f = *state;
        struct queue_addresses q;
        const char *args[] = { "--queues", "2", "--kernel-us", "200", NULL };

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        list_queues(f->app.pid, &q);
        assert_true(progresses_within(f->app.pid, &q, 0, 3000));

        spawn_ctl(&f->ctl, (const char *[]){ "hold", pid_arg(f->app.pid), "--for", "600ms", NULL });
        assert_int_equal(child_wait_line(&f->ctl, "pid ", 5000, NULL, 0), 0);
        sleep_ms(30);
        assert_int_equal(progress_over(f->app.pid, &q, 0, 200), 0);

        int status;
        assert_int_equal(child_run_to_end(&f->ctl, 10000, &status), 0);
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_output_has(&f->ctl, "2 queues suspended");
        assert_output_has(&f->ctl, "2 resumed");
        assert_true(progresses_within(f->app.pid, &q, 0, 3000));
        assert_left_running(&f->app);
}

static void test_hold_until_sigterm_with_json(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", "--late-queue-after", "1.0", NULL };
        json_object *root, *processes, *p, *v;
        int status;

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        spawn_ctl(&f->ctl, (const char *[]){ "hold", pid_arg(f->app.pid), "--json", NULL });
        /* --json prints nothing before the end: the tracer shows the attach.
         * The late queue comes 1 s after the app started, well after it. */
        for (int i = 0; i < 2500 && tracer_of(f->app.pid) != f->ctl.pid; i++)
                sleep_ms(2);
        assert_int_equal(tracer_of(f->app.pid), f->ctl.pid);
        sleep_ms(1500);
        kill(f->ctl.pid, SIGTERM);
        assert_int_equal(child_run_to_end(&f->ctl, 10000, &status), 0);
        assert_int_equal(WEXITSTATUS(status), 0);

        root = json_tokener_parse(f->ctl.output);
        if (!root)
                fail_msg("not JSON:\n%s", f->ctl.output);
        assert_true(json_object_object_get_ex(root, "processes", &processes));
        p = json_object_array_get_idx(processes, 0);
        assert_true(json_object_object_get_ex(p, "state", &v));
        assert_string_equal(json_object_get_string(v), "held");
        assert_true(json_object_object_get_ex(p, "queues_suspended", &v));
        assert_int_equal(json_object_get_int64(v), 2);
        assert_true(json_object_object_get_ex(p, "new_queues_caught", &v));
        assert_int_equal(json_object_get_int64(v), 1);
        json_object_put(root);
        assert_left_running(&f->app);
}

static void test_hold_only_one_gpu(void **state)
{
        struct fixture *f = *state;
        struct queue_addresses q;
        const char *args[] = { "--queues", "2", "--kernel-us", "200", NULL };
        char gpu[16];
        int status;

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        list_queues(f->app.pid, &q);
        assert_int_equal(q.n, 2);
        assert_int_not_equal(q.gpu_id[0], q.gpu_id[1]);
        snprintf(gpu, sizeof(gpu), "%u", q.gpu_id[0]);

        spawn_ctl(&f->ctl, (const char *[]){ "hold", pid_arg(f->app.pid), "--gpu", gpu, "--for",
                                             "600ms", NULL });
        assert_int_equal(child_wait_line(&f->ctl, "pid ", 5000, NULL, 0), 0);
        sleep_ms(30);
        assert_int_equal(progress_over(f->app.pid, &q, q.gpu_id[0], 200), 0);
        assert_true(progresses_within(f->app.pid, &q, q.gpu_id[1], 3000));
        assert_int_equal(child_run_to_end(&f->ctl, 10000, &status), 0);
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_output_has(&f->ctl, "1 queue suspended");
}

static void test_sigkilled_hold_leaves_nothing_suspended(void **state)
{
        struct fixture *f = *state;
        struct queue_addresses q;
        const char *args[] = { "--queues", "2", "--kernel-us", "200", NULL };

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        list_queues(f->app.pid, &q);
        spawn_ctl(&f->ctl, (const char *[]){ "hold", pid_arg(f->app.pid), NULL });
        assert_int_equal(child_wait_line(&f->ctl, "pid ", 5000, NULL, 0), 0);
        sleep_ms(30);
        assert_int_equal(progress_over(f->app.pid, &q, 0, 200), 0);

        /* The kernel's debugger-exit teardown resumes everything. */
        child_kill(&f->ctl);
        sleep_ms(50);
        assert_true(progresses_within(f->app.pid, &q, 0, 3000));
        assert_left_running(&f->app);
}

static void test_hold_ends_when_the_target_is_gone(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", NULL };
        int status;

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        spawn_ctl(&f->ctl, (const char *[]){ "hold", pid_arg(f->app.pid), NULL });
        assert_int_equal(child_wait_line(&f->ctl, "pid ", 5000, NULL, 0), 0);
        kill(f->app.pid, SIGKILL);
        /* No --for and no signal: it ends because nothing is left to hold. */
        assert_int_equal(child_run_to_end(&f->ctl, 5000, &status), 0);
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_output_has(&f->ctl, "exited while held");
}

static void test_hold_waits_for_the_runtime_and_acknowledges_it(void **state)
{
        struct fixture *f = *state;
        int status;

        assert_int_equal(cycler_spawn(cycler_path, &f->app), 0);
        /* it has not opened /dev/kfd yet: holding it is asked for explicitly */
        spawn_ctl(&f->ctl, (const char *[]){ "hold", pid_arg(f->app.pid), "--wait-for-gpu", NULL });
        assert_int_equal(child_wait_line(&f->ctl, "pid ", 5000, NULL, 0), 0);
        /* Its runtime enables (blocks until acknowledged), then disables
         * (blocks again) and the process exits: hold must ack both and end. */
        assert_int_equal(write(f->app.stdin_fd, "go\n", 3), 3);
        assert_int_equal(child_run_to_end(&f->ctl, 10000, &status), 0);
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_output_has(&f->ctl, "runtime enabled debugging");
        assert_output_has(&f->ctl, "2 runtime events acknowledged");
        assert_int_equal(child_wait_exit(&f->app, 5000, &status), 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_target_exiting_while_held_does_not_hang(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "2", "--duration", "1.5", NULL };
        int status;

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        /* It ends its job while held: destroying a suspended queue waits in
         * the kernel until hold resumes it, then it exits normally. */
        assert_int_equal(run_ctl(&f->ctl, (const char *[]){ "hold", pid_arg(f->app.pid), "--for",
                                                            "2500ms", NULL }),
                         0);
        assert_int_equal(child_wait_exit(&f->app, 5000, &status), 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* How long a signal may take to show on a loaded machine; the waits end as
 * soon as it shows. */
#define SIGNAL_TIMEOUT_USEC 10000000u

static bool is_stopped(pid_t pid)
{
        char s = process_state(pid);

        return s == 't' || s == 'T';
}

/* Waits for the signal log to reach lines lines (a handler ran). */
static void assert_log_reaches(const char *log_path, int lines)
{
        uint64_t deadline = now_usec() + SIGNAL_TIMEOUT_USEC;

        while (count_lines(log_path) < lines && now_usec() < deadline)
                sleep_ms(1);
        assert_int_equal(count_lines(log_path), lines);
}

/* Holds an app with gpreemptctl while it gets a storm of signals, SIGSTOP,
 * SIGCONT and SIGTERM, then ends the hold: both must end normally. */
static void signals_then_release(struct fixture *f, int storm)
{
        char log_path[] = "/tmp/gpreemptctl-test-signals-XXXXXX";
        const char *args[] = { "--queues", "1", "--signal-log", log_path, NULL };
        uint64_t deadline;
        bool stopped;
        int fd, status;

        fd = mkstemp(log_path);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        spawn_ctl(&f->ctl, (const char *[]){ "hold", pid_arg(f->app.pid), NULL });
        assert_int_equal(child_wait_line(&f->ctl, "pid ", 5000, NULL, 0), 0);

        /* Each signal reaches the handler (one at a time: pending standard
         * signals merge even without a tracer). */
        for (int i = 0; i < storm; i++) {
                kill(f->app.pid, i % 2 ? SIGUSR2 : SIGWINCH);
                assert_log_reaches(log_path, i + 1);
        }
        /* Seen stopped once is enough: the signal's delivery-stop comes
         * before the group-stop, and between them it runs for an instant. */
        kill(f->app.pid, SIGSTOP);
        deadline = now_usec() + SIGNAL_TIMEOUT_USEC;
        while (!(stopped = is_stopped(f->app.pid)) && now_usec() < deadline)
                sleep_ms(2);
        assert_true(stopped);
        /* On its way from the stop it passes through ptrace-stops (the
         * SIGCONT notification, the SIGCONT's delivery): its handler having
         * run is what says it runs again. */
        kill(f->app.pid, SIGCONT);
        assert_log_reaches(log_path, storm + 1);

        /* SIGTERM: the handler runs; the app's queue destroy then waits for
         * the release, and its runtime disable for an ack, after which it
         * exits normally. */
        kill(f->app.pid, SIGTERM);
        assert_log_reaches(log_path, storm + 2);
        kill(f->ctl.pid, SIGTERM);
        assert_int_equal(child_run_to_end(&f->ctl, 10000, &status), 0);
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_int_equal(child_wait_exit(&f->app, 5000, &status), 0);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(count_lines(log_path), storm + 2);
        unlink(log_path);
}

static void test_signals_reach_a_target_held_by_gpreemptctl(void **state)
{
        signals_then_release(*state, 50);
}

/* The release races the app's way out (destroy, then runtime disable): many
 * rounds give every order a chance. */
static void test_release_after_stop_continue_terminate_repeatedly(void **state)
{
        struct fixture *f = *state;

        for (int round = 0; round < 10; round++) {
                signals_then_release(f, 2);
                /* Both ended: this only closes their pipes. */
                child_kill(&f->ctl);
                child_kill(&f->app);
        }
}

static void test_strace_traced_target_is_refused(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", NULL };
        char *strace_argv[] = { (char *)"/usr/bin/strace", (char *)"-f", (char *)"-o",
                                (char *)"/dev/null", (char *)"-p", NULL, NULL };

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        strace_argv[5] = (char *)pid_arg(f->app.pid);
        assert_int_equal(child_spawn(strace_argv, true, &f->helper), 0);
        for (int i = 0; i < 2500 && tracer_of(f->app.pid) != f->helper.pid; i++)
                sleep_ms(2);
        assert_int_equal(tracer_of(f->app.pid), f->helper.pid);

        assert_int_equal(run_ctl(&f->ctl, (const char *[]){ "hold", pid_arg(f->app.pid), "--for",
                                                            "1s", NULL }),
                         2);
        assert_output_has(&f->ctl, "traced by strace");
        assert_output_has(&f->ctl, "only one tracer");
        /* strace still has it; the app still runs. */
        assert_int_equal(tracer_of(f->app.pid), f->helper.pid);
        assert_int_equal(kill(f->app.pid, 0), 0);
}

static void test_runtime_never_enabled(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", "--no-runtime-enable", NULL };

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        assert_int_equal(run_ctl(&f->ctl, (const char *[]){ "hold", pid_arg(f->app.pid), "--for",
                                                            "1s", NULL }),
                         2);
        assert_output_has(&f->ctl, "never enabled debugging");
        assert_output_has(&f->ctl, "ROCm 5.7");
        assert_left_running(&f->app);
}

static void test_no_such_process(void **state)
{
        struct fixture *f = *state;

        /* PID_MAX_LIMIT (2^22), the highest pid any parser accepts: pids stay below it. */
        assert_int_equal(run_ctl(&f->ctl, (const char *[]){ "queues", "4194304", NULL }), 2);
        assert_output_has(&f->ctl, "no such process");
}

/*
 * Processes that cannot be held say why: one that does not use the GPU
 * (holding it would leave it GPU state), and gpreemptctl itself.
 */
static void test_hold_refuses_a_process_without_gpu_use_and_itself(void **state)
{
        struct fixture *f = *state;
        char *sleeper[] = { (char *)"/bin/sleep", (char *)"30", NULL };
        char self[512];
        char *shell[] = { (char *)"/bin/sh", (char *)"-c", self, NULL };
        char kfd_process[64];
        int status;

        assert_int_equal(child_spawn(sleeper, false, &f->app), 0);
        assert_int_equal(run_ctl(&f->ctl, (const char *[]){ "hold", pid_arg(f->app.pid), NULL }), 2);
        assert_output_has(&f->ctl, "does not use the GPU");
        snprintf(kfd_process, sizeof(kfd_process), "/sys/class/kfd/kfd/proc/%d", (int)f->app.pid);
        assert_int_equal(access(kfd_process, F_OK), -1);
        assert_left_running(&f->app);

        /* the shell's pid becomes gpreemptctl's by exec */
        snprintf(self, sizeof(self), "exec %s hold $$ --for 1s", ctl_path);
        assert_int_equal(child_spawn(shell, true, &f->helper), 0);
        assert_int_equal(child_run_to_end(&f->helper, 10000, &status), 0);
        assert_int_equal(WEXITSTATUS(status), 2);
        assert_output_has(&f->helper, "this very process");
}

static void assert_output_lacks(const struct child *c, const char *text);

/* gpreemptctl ARGS... fails (2, a precondition) and says `says`, never `never[]`. */
static void expect_refusal(struct fixture *f, const char *const args[], const char *says, const char *const never[])
{
        assert_int_equal(run_ctl(&f->ctl, args), 2);
        assert_output_has(&f->ctl, says);
        for (size_t i = 0; never[i]; i++)
                assert_output_lacks(&f->ctl, never[i]);
        child_kill(&f->ctl);
}

/*
 * Processes that can never be held say what they are, whoever asks: a
 * zombie has exited and waits for its parent (it will not start using the
 * GPU), and a kernel thread cannot be traced (not even by root).
 */
static void test_zombie_and_kernel_thread_are_named(void **state)
{
        static const char *const wrong[] = { "started using the GPU", "run as root", NULL };
        struct fixture *f = *state;
        char comm[32] = "";
        siginfo_t info;
        pid_t zombie;
        FILE *file;

        zombie = fork();
        assert_true(zombie >= 0);
        if (zombie == 0)
                _exit(0);
        /* exited, and left unreaped */
        assert_int_equal(waitid(P_PID, (id_t)zombie, &info, WEXITED | WNOWAIT), 0);
        expect_refusal(f, (const char *[]){ "hold", pid_arg(zombie), NULL }, "has exited", wrong);
        expect_refusal(f, (const char *[]){ "hold", "--wait-for-gpu", pid_arg(zombie), NULL }, "has exited", wrong);
        expect_refusal(f, (const char *[]){ "queues", pid_arg(zombie), NULL }, "has exited", wrong);
        assert_int_equal(waitpid(zombie, NULL, 0), zombie);

        /* kthreadd is pid 2 wherever kernel threads can be seen (not in a PID namespace of its own) */
        file = fopen("/proc/2/comm", "re");
        if (file) {
                if (!fgets(comm, sizeof(comm), file))
                        comm[0] = '\0';
                fclose(file);
        }
        if (strcmp(comm, "kthreadd\n") != 0) {
                print_message("# pid 2 is not kthreadd here: the kernel thread is not checked\n");
                return;
        }
        expect_refusal(f, (const char *[]){ "hold", "--wait-for-gpu", "2", NULL }, "kernel thread", wrong);
        expect_refusal(f, (const char *[]){ "queues", "2", NULL }, "kernel thread", wrong);
}

/* One of two held processes exits: it is reaped at once, so that its parent's wait does not last until the hold ends. */
static void test_exited_target_of_a_longer_hold_is_reaped(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", NULL };
        int status;

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        assert_int_equal(app_spawn(app_path, args, &f->app2), 0);
        spawn_ctl(&f->ctl, (const char *[]){ "hold", pid_arg(f->app.pid), pid_arg(f->app2.pid), NULL });
        assert_int_equal(child_wait_line(&f->ctl, "holding", 5000, NULL, 0), 0);
        kill(f->app.pid, SIGKILL);
        assert_int_equal(child_wait_exit(&f->app, 3000, &status), 0);
        assert_true(WIFSIGNALED(status));
        /* the hold goes on for the other until it is ended */
        assert_int_equal(kill(f->ctl.pid, 0), 0);
        kill(f->ctl.pid, SIGTERM);
        assert_int_equal(child_run_to_end(&f->ctl, 5000, &status), 0);
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_output_has(&f->ctl, "exited while held");
        assert_left_running(&f->app2);
}

static void test_usage_errors(void **state)
{
        struct fixture *f = *state;
        struct child c = { .stdout_fd = -1, .stdin_fd = -1 };

        assert_int_equal(run_ctl(&c, (const char *[]){ "hold", NULL }), 1);
        assert_output_has(&c, "no process id");
        child_kill(&c);
        assert_int_equal(run_ctl(&c, (const char *[]){ "hold", "12", "--for", "soon", NULL }), 1);
        assert_output_has(&c, "not a duration");
        child_kill(&c);
        /* gpu_id 0 is the CPU node's: no GPU has it, and holding with it
         * would suspend nothing while reporting success. */
        assert_int_equal(run_ctl(&c, (const char *[]){ "hold", "12", "--gpu", "0", NULL }), 1);
        assert_output_has(&c, "no GPU on this node has gpu_id 0");
        child_kill(&c);
        /* a process given twice is named, wherever its second time stands (its message once came from freed memory) */
        assert_int_equal(run_ctl(&c, (const char *[]){ "hold", "5", "6", "5", NULL }), 1);
        assert_output_has(&c, "process 5 is given twice");
        child_kill(&c);
        /* above the kernel's PID_MAX_LIMIT: no process can have it, and the daemon's API refuses it too */
        assert_int_equal(run_ctl(&c, (const char *[]){ "queues", "99999999", NULL }), 1);
        assert_output_has(&c, "not a process id");
        child_kill(&c);
        /* a negative pid is not taken for a cluster of options */
        assert_int_equal(run_ctl(&c, (const char *[]){ "suspend", "-42", NULL }), 1);
        assert_output_has(&c, "'-42' is not a process id");
        child_kill(&c);
        /* under --json, a usage error is JSON too, wherever --json stands */
        assert_int_equal(run_ctl(&c, (const char *[]){ "suspend", "abc", "--json", NULL }), 1);
        assert_output_has(&c, "\"error\":\"'abc' is not a process id.\"");
        child_kill(&c);
        assert_int_equal(run_ctl(&c, (const char *[]){ "hold", "12", "--for", NULL }), 1);
        assert_output_has(&c, "'--for' needs a value");
        child_kill(&c);
        assert_int_equal(run_ctl(&c, (const char *[]){ "frobnicate", NULL }), 1);
        assert_output_has(&c, "not a verb");
        child_kill(&c);
        assert_int_equal(run_ctl(&c, (const char *[]){ "qu", "--help", NULL }), 0);
        assert_output_has(&c, "Usage: gpreemptctl queues");
        child_kill(&c);
        assert_int_equal(run_ctl(&f->ctl, (const char *[]){ "--help", NULL }), 0);
        assert_output_has(&f->ctl, "hold");
}

/* Runs `sh -c script` to its end; returns its exit code, its output in c. */
static int run_shell(struct child *c, const char *script)
{
        char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)script, NULL };
        int status;

        assert_int_equal(child_spawn(argv, true, c), 0);
        assert_int_equal(child_run_to_end(c, 20000, &status), 0);
        assert_true(WIFEXITED(status));
        return WEXITSTATUS(status);
}

static void assert_output_lacks(const struct child *c, const char *text)
{
        if (memmem(c->output, c->output_len, text, strlen(text)))
                fail_msg("gpreemptctl's output has \"%s\":\n%.*s", text, (int)c->output_len, c->output);
}

/*
 * A result that cannot be written (a full disk) fails the command rather
 * than being lost with exit status 0. A standard output the caller closed
 * is not taken by the next file opened: `hold >&-` would write its report
 * into /dev/kfd, where a real kernel fails the write but kfdemu discards
 * what stdio writes past its preload, and the command would report
 * success. It says instead that it could not write.
 */
static void test_output_that_cannot_be_written(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", NULL };
        struct queue_addresses q;
        char script[1024];

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        snprintf(script, sizeof(script), "exec %s queues %d --json >/dev/full", ctl_path, (int)f->app.pid);
        assert_int_equal(run_shell(&f->ctl, script), 4);
        assert_output_has(&f->ctl, "cannot write the output: No space left on device");
        child_kill(&f->ctl);

        snprintf(script, sizeof(script), "exec %s hold %d --for 300ms >&-", ctl_path, (int)f->app.pid);
        assert_int_equal(run_shell(&f->ctl, script), 4);
        assert_output_has(&f->ctl, "cannot write the output");
        assert_output_lacks(&f->ctl, "Cannot resume");
        assert_output_lacks(&f->ctl, "Cannot detach");
        assert_left_running(&f->app);
        list_queues(f->app.pid, &q);
        assert_true(progresses_within(f->app.pid, &q, 0, 5000));
}

/* --- other nodes ------------------------------------------------------- */

static void test_nohws(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", NULL };

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        assert_int_equal(run_ctl(&f->ctl, (const char *[]){ "hold", pid_arg(f->app.pid), "--for",
                                                            "1s", NULL }),
                         2);
        assert_output_has(&f->ctl, "sched_policy=2");
        assert_left_running(&f->app);
}

static void test_old_kfd(void **state)
{
        struct fixture *f = *state;

        /* The check comes before any process is touched. */
        assert_int_equal(run_ctl(&f->ctl, (const char *[]){ "queues", pid_arg(getpid()), NULL }),
                         2);
        assert_output_has(&f->ctl, "1.11");
        assert_output_has(&f->ctl, "older than 1.13");
}

static void test_one_debug_vmid(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", "--gpu", "0", NULL };

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        assert_int_equal(app_spawn(app_path, args, &f->app2), 0);
        assert_int_equal(run_ctl(&f->ctl, (const char *[]){ "hold", pid_arg(f->app.pid),
                                                            pid_arg(f->app2.pid), "--for",
                                                            "300ms", NULL }),
                         3);
        assert_output_has(&f->ctl, "debug VMID");
        assert_left_running(&f->app);
        assert_left_running(&f->app2);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(int argc, char **argv)
{
        const struct CMUnitTest node_tests[] = {
                T(test_hold_for_a_duration),
                T(test_hold_until_sigterm_with_json),
                T(test_hold_only_one_gpu),
                T(test_sigkilled_hold_leaves_nothing_suspended),
                T(test_hold_ends_when_the_target_is_gone),
                T(test_hold_waits_for_the_runtime_and_acknowledges_it),
                T(test_target_exiting_while_held_does_not_hang),
                T(test_signals_reach_a_target_held_by_gpreemptctl),
                T(test_release_after_stop_continue_terminate_repeatedly),
                T(test_strace_traced_target_is_refused),
                T(test_runtime_never_enabled),
                T(test_no_such_process),
                T(test_exited_target_of_a_longer_hold_is_reaped),
                T(test_hold_refuses_a_process_without_gpu_use_and_itself),
                T(test_zombie_and_kernel_thread_are_named),
                T(test_usage_errors),
                T(test_output_that_cannot_be_written),
        };
        const struct CMUnitTest nohws_tests[] = { T(test_nohws) };
        const struct CMUnitTest old_kfd_tests[] = { T(test_old_kfd) };
        const struct CMUnitTest one_vmid_tests[] = { T(test_one_debug_vmid) };

        const struct node_mode modes[] = {
                NODE_MODE("node", node_tests),
                NODE_MODE("nohws", nohws_tests),
                NODE_MODE("old-kfd", old_kfd_tests),
                NODE_MODE("one-vmid", one_vmid_tests),
        };

        if (argc != 5) {
                fprintf(stderr,
                        "usage: %s node|nohws|old-kfd|one-vmid GPREEMPTCTL KFDEMU-APP "
                        "RUNTIME-CYCLER\n",
                        argv[0]);
                return 2;
        }
        ctl_path = argv[2];
        app_path = argv[3];
        cycler_path = argv[4];
        return node_mode_run(argv[1], modes, sizeof(modes) / sizeof(modes[0]));
}
