/* SPDX-License-Identifier: MIT */
/*
 * libgpreempt against real child processes on an emulated node (run under
 * kfdemu-run --gpus 2): argv[1] is kfdemu-app, argv[2] runtime-cycler.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <gpreempt/gpreempt.h>
#include "kfd-abi.h"
#include "test-support.h"

static const char *app_path;
static const char *cycler_path;

/* What a target's events said, for the assertions. */
struct seen {
        int queue_new;
        uint32_t new_queue_ids[64];
        int runtime_enabled;
        int runtime_disabled;
        int stopped;
        int continued;
        int exiting;
        int terminated;
        int exit_status;
        int execed;
};

static void on_event(struct gp_target *target, const struct gp_event *event, void *userdata)
{
        struct seen *seen = userdata;

        switch (event->type) {
        case GP_EVENT_QUEUE_NEW:
                if (seen->queue_new < 64)
                        seen->new_queue_ids[seen->queue_new] = event->queue_id;
                seen->queue_new++;
                break;
        case GP_EVENT_RUNTIME:
                if (event->runtime_state == GP_RUNTIME_ENABLED)
                        seen->runtime_enabled++;
                else
                        seen->runtime_disabled++;
                break;
        case GP_EVENT_STOPPED:
                seen->stopped++;
                break;
        case GP_EVENT_CONTINUED:
                seen->continued++;
                break;
        case GP_EVENT_EXITED:
                if (event->exit_status == -1) {
                        seen->exiting++;
                } else {
                        seen->terminated++;
                        seen->exit_status = event->exit_status;
                }
                break;
        case GP_EVENT_EXECED:
                seen->execed++;
                break;
        case GP_EVENT_QUEUE_DELETED:
                break;
        }
}

struct fixture {
        struct gp_context *context;
        struct child app;
        struct child other;
        struct gp_target *target;
        struct seen seen;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        f->app.stdout_fd = f->app.stdin_fd = -1;
        f->other.stdout_fd = f->other.stdin_fd = -1;
        assert_int_equal(gp_context_new(&(struct gp_context_opts){ .sz = sizeof(struct gp_context_opts) },
                                        &f->context),
                         0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        if (f->target)
                gp_target_detach(f->target);
        child_kill(&f->app);
        child_kill(&f->other);
        gp_context_free(f->context);
        free(f);
        return 0;
}

static int attach_with(struct fixture *f, pid_t pid, bool before_gpu_use)
{
        return gp_target_attach(f->context, pid,
                                &(struct gp_attach_opts){ .sz = sizeof(struct gp_attach_opts),
                                                          .event_fn = on_event,
                                                          .event_userdata = &f->seen,
                                                          .before_gpu_use = before_gpu_use },
                                &f->target);
}

static void attach(struct fixture *f, pid_t pid)
{
        assert_int_equal(attach_with(f, pid, false), 0);
}

/* Services the target (ptrace stops and debug events) for ms milliseconds,
 * or until *until becomes non-zero. */
static void pump(struct gp_target *target, int ms, const int *until)
{
        uint64_t deadline = now_usec() + (uint64_t)ms * 1000u;

        while (now_usec() < deadline && !(until && *until)) {
                struct pollfd p = { .fd = gp_target_event_fd(target), .events = POLLIN };

                /* A gone target still has stops (its exit) to collect. */
                assert_true(gp_target_service_ptrace(target) >= 0);
                if (poll(&p, 1, 1) > 0 && !gp_target_is_gone(target))
                        assert_true(gp_target_process_events(target) >= 0);
        }
}

/* Sum of the read indices of the target's queues on gpu_id (0: all). */
static uint64_t progress(struct gp_target *target, uint32_t gpu_id)
{
        const struct gp_queue *queues;
        uint64_t sum = 0, read_index, write_index;
        size_t n;

        assert_int_equal(gp_target_snapshot(target, &queues, &n), 0);
        for (size_t i = 0; i < n; i++) {
                if (gpu_id && queues[i].gpu_id != gpu_id)
                        continue;
                assert_int_equal(gp_target_read_queue_indices(target, &queues[i], &read_index,
                                                              &write_index),
                                 0);
                sum += read_index;
        }
        return sum;
}

/* The progress made while pumping for ms. */
static uint64_t progress_over(struct gp_target *target, uint32_t gpu_id, int ms)
{
        uint64_t before = progress(target, gpu_id);

        pump(target, ms, NULL);
        return progress(target, gpu_id) - before;
}

/* Whether progress shows up within timeout_ms, pumping meanwhile (a loaded
 * machine may take a while to schedule the emulated GPU; absence of progress
 * is checked over fixed windows instead). */
static bool progresses_within(struct gp_target *target, uint32_t gpu_id, int timeout_ms)
{
        for (int waited = 0; waited < timeout_ms; waited += 50)
                if (progress_over(target, gpu_id, 50) > 0)
                        return true;
        return false;
}

static void test_held_app_stops_and_continues(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "2", "--kernel-us", "200", NULL };
        struct gp_queue_report report;

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        attach(f, f->app.pid);
        assert_int_equal(gp_target_runtime_state(f->target), GP_RUNTIME_ENABLED);
        assert_true(progresses_within(f->target, 0, 3000));

        assert_int_equal(gp_target_suspend(f->target, NULL, &report), 2);
        assert_int_equal(report.n_done, 2);
        assert_int_equal(report.n_invalid + report.n_error, 0);
        pump(f->target, 20, NULL); /* a kernel in flight may finish */
        assert_int_equal(progress_over(f->target, 0, 200), 0);

        assert_int_equal(gp_target_resume(f->target, NULL, &report), 2);
        assert_true(progresses_within(f->target, 0, 3000));
}

static void test_queue_created_while_held_is_suspended(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", "--kernel-us", "200", "--late-queue-after", "0.3",
                               NULL };
        struct gp_queue_report report;
        uint64_t seen_at, suspended_at;

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        attach(f, f->app.pid);
        assert_int_equal(gp_target_suspend(f->target, NULL, &report), 1);

        pump(f->target, 3000, &f->seen.queue_new);
        assert_int_equal(f->seen.queue_new, 1);
        seen_at = now_usec();
        assert_int_equal(gp_target_suspend(f->target,
                                           &(struct gp_queue_opts){ .sz = sizeof(struct gp_queue_opts),
                                                                    .queue_ids = f->seen.new_queue_ids,
                                                                    .n_queue_ids = 1 },
                                           &report),
                         1);
        suspended_at = now_usec();
        /* From the event to the suspend returning: one snapshot and one
         * suspend, well under a scheduling quantum on an idle machine. */
        assert_true(suspended_at - seen_at < 200000);
        pump(f->target, 20, NULL);
        assert_int_equal(progress_over(f->target, 0, 200), 0);
}

static void test_online_app_keeps_running(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", "--kernel-us", "200", NULL };
        struct gp_target *online;
        struct seen online_seen = { 0 };
        uint64_t before;

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        assert_int_equal(app_spawn(app_path, args, &f->other), 0);
        attach(f, f->app.pid);
        assert_int_equal(gp_target_attach(f->context, f->other.pid,
                                          &(struct gp_attach_opts){ .sz = sizeof(struct gp_attach_opts),
                                                                    .event_fn = on_event,
                                                                    .event_userdata = &online_seen },
                                          &online),
                         0);

        assert_int_equal(gp_target_suspend(f->target, NULL, NULL), 1);
        pump(f->target, 20, NULL);
        before = progress(online, 0);
        assert_int_equal(progress_over(f->target, 0, 200), 0);
        assert_int_equal(gp_target_service_ptrace(online) >= 0, 1);
        assert_true(progress(online, 0) > before || progresses_within(online, 0, 3000));
        assert_int_equal(gp_target_detach(online), 0);
}

static void test_only_the_given_gpu_is_suspended(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "2", "--kernel-us", "200", NULL };
        const struct gp_queue *queues;
        struct gp_queue_report report;
        uint32_t held_gpu, other_gpu;
        size_t n;

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        attach(f, f->app.pid);
        assert_int_equal(gp_target_snapshot(f->target, &queues, &n), 0);
        assert_int_equal(n, 2);
        /* kfdemu-app spreads its queues over the GPUs. */
        held_gpu = queues[0].gpu_id;
        other_gpu = queues[1].gpu_id;
        assert_int_not_equal(held_gpu, other_gpu);

        assert_int_equal(gp_target_suspend(f->target,
                                           &(struct gp_queue_opts){ .sz = sizeof(struct gp_queue_opts),
                                                                    .gpu_ids = &held_gpu,
                                                                    .n_gpu_ids = 1 },
                                           &report),
                         1);
        assert_int_equal(report.n_queues, 1);
        assert_int_equal(report.queues[0].gpu_id, held_gpu);
        pump(f->target, 20, NULL);
        assert_int_equal(progress_over(f->target, held_gpu, 200), 0);
        assert_true(progresses_within(f->target, other_gpu, 3000));
}

/* Starts the app with args, attaches and suspends its n_queues queues. */
static void hold_new_app(struct fixture *f, const char *const *args, int n_queues)
{
        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        attach(f, f->app.pid);
        assert_int_equal(gp_target_suspend(f->target, NULL, NULL), n_queues);
}

static void test_signals_reach_a_held_target(void **state)
{
        struct fixture *f = *state;
        char log_path[] = "/tmp/gpreempt-test-signals-XXXXXX";
        const char *args[] = { "--queues", "1", "--signal-log", log_path, NULL };
        int fd, status, storm = 200;

        fd = mkstemp(log_path);
        assert_true(fd >= 0);
        close(fd);
        hold_new_app(f, args, 1);

        /* SIGSTOP stops it, as without a tracer, and SIGCONT continues it. */
        kill(f->app.pid, SIGSTOP);
        pump(f->target, 2000, &f->seen.stopped);
        assert_int_equal(f->seen.stopped, 1);
        pump(f->target, 50, NULL);
        assert_true(process_state(f->app.pid) == 'T' || process_state(f->app.pid) == 't');
        assert_int_equal(f->seen.continued, 0);
        kill(f->app.pid, SIGCONT);
        pump(f->target, 2000, &f->seen.continued);
        assert_int_equal(f->seen.continued, 1);
        pump(f->target, 100, NULL);
        assert_true(process_state(f->app.pid) != 'T' && process_state(f->app.pid) != 't');

        /* A storm: each signal must reach the handler (wait for each line,
         * since pending standard signals merge even without a tracer). */
        for (int i = 0; i < storm; i++) {
                int lines = count_lines(log_path);
                uint64_t deadline = now_usec() + 2000000;

                kill(f->app.pid, i % 2 ? SIGUSR2 : SIGWINCH);
                while (count_lines(log_path) == lines && now_usec() < deadline)
                        pump(f->target, 1, NULL);
                assert_int_equal(count_lines(log_path), lines + 1);
        }

        /* SIGTERM runs the handler; the app then destroys its queues, which
         * the kernel holds back while they are suspended (wait_on_destroy_queue)
         * until the detach resumes them. */
        kill(f->app.pid, SIGTERM);
        pump(f->target, 200, NULL);
        assert_true(count_lines(log_path) >= storm + 2);
        assert_int_equal(gp_target_detach(f->target), 0);
        f->target = NULL;
        assert_int_equal(child_wait_exit(&f->app, 5000, &status), 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("the app ended with wait status 0x%x", status);
        unlink(log_path);
}

/* Services the target's ptrace stops only, leaving its debug events
 * unprocessed, for ms milliseconds. */
static void service_stops(struct gp_target *target, int ms)
{
        uint64_t deadline = now_usec() + (uint64_t)ms * 1000u;

        while (now_usec() < deadline) {
                assert_true(gp_target_service_ptrace(target) >= 0);
                sleep_ms(1);
        }
}

static void test_detach_acknowledges_a_runtime_disable_in_progress(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", NULL };
        int status;

        hold_new_app(f, args, 1);
        /* SIGTERM: its destroy waits for the resume, then its runtime disable
         * raises EC_PROCESS_RUNTIME and sleeps until acknowledged. Nobody
         * processes that event before the detach, whose DISABLE alone would
         * leave it asleep. */
        kill(f->app.pid, SIGTERM);
        service_stops(f->target, 200);
        assert_int_equal(gp_target_resume(f->target, NULL, NULL), 1);
        service_stops(f->target, 300);
        assert_int_equal(f->seen.runtime_disabled, 0);
        assert_int_equal(gp_target_detach(f->target), 0);
        f->target = NULL;
        assert_int_equal(child_wait_exit(&f->app, 5000, &status), 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("the app ended with wait status 0x%x", status);
}

static void test_detach_leaves_a_stopped_target_stopped(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", NULL };
        char s;

        hold_new_app(f, args, 1);
        kill(f->app.pid, SIGSTOP);
        pump(f->target, 2000, &f->seen.stopped);
        assert_int_equal(f->seen.stopped, 1);

        /* Released and untraced, but still stopped: the SIGSTOP was the
         * user's, not ours to undo. */
        assert_int_equal(gp_target_detach(f->target), 0);
        f->target = NULL;
        assert_int_equal(tracer_of(f->app.pid), 0);
        s = process_state(f->app.pid);
        assert_true(s == 'T' || s == 't');
        kill(f->app.pid, SIGCONT);
        for (int i = 0; i < 1000 && (process_state(f->app.pid) == 'T' ||
                                     process_state(f->app.pid) == 't');
             i++)
                sleep_ms(2);
        s = process_state(f->app.pid);
        assert_true(s != 'T' && s != 't');
}

static void test_runtime_enable_and_disable_are_acknowledged(void **state)
{
        struct fixture *f = *state;
        int status;

        assert_int_equal(cycler_spawn(cycler_path, &f->app), 0);
        /* Attached before its runtime starts (it has not opened /dev/kfd
         * yet): ENABLE reports DISABLED and the runtime's enable will block
         * until acknowledged. */
        assert_int_equal(attach_with(f, f->app.pid, true), 0);
        assert_int_equal(gp_target_runtime_state(f->target), GP_RUNTIME_DISABLED);
        assert_int_equal(gp_target_suspend(f->target, NULL, NULL), -GP_ERR_NO_QUEUES);

        assert_int_equal(write(f->app.stdin_fd, "go\n", 3), 3);
        /* The enable is acknowledged, and the disable that follows at once
         * may be handled in the same round of events. */
        pump(f->target, 5000, &f->seen.runtime_enabled);
        assert_int_equal(f->seen.runtime_enabled, 1);
        pump(f->target, 5000, &f->seen.runtime_disabled);
        assert_int_equal(f->seen.runtime_disabled, 1);
        /* The tracer is also the parent here, so the library reaps it and
         * reports the status (the exiting stop first, then the exit). */
        pump(f->target, 5000, &f->seen.terminated);
        assert_int_equal(f->seen.exiting, 1);
        assert_int_equal(f->seen.terminated, 1);
        status = f->seen.exit_status;
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(gp_target_detach(f->target), 0);
        f->target = NULL;
        f->app.pid = 0;
}

static void test_target_killed_while_held(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "2", NULL };
        int status;

        hold_new_app(f, args, 2);
        kill(f->app.pid, SIGKILL);
        pump(f->target, 5000, &f->seen.terminated);
        assert_int_equal(f->seen.terminated, 1);
        assert_true(gp_target_is_gone(f->target));
        assert_int_equal(gp_target_suspend(f->target, NULL, NULL), -GP_ERR_TARGET_GONE);
        assert_int_equal(gp_target_detach(f->target), 0);
        f->target = NULL;
        /* Our own child: the library reaped it and reported the status. */
        f->app.pid = 0;
        status = f->seen.exit_status;
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void test_target_execs_while_held(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", "--kernel-us", "200", "--exec-after", "0.3", NULL };

        hold_new_app(f, args, 1);
        pump(f->target, 5000, &f->seen.execed);
        assert_int_equal(f->seen.execed, 1);
        assert_int_equal(gp_target_suspend(f->target, NULL, NULL), -GP_ERR_TARGET_GONE);
        assert_int_equal(gp_target_detach(f->target), 0);
        f->target = NULL;
        /* Released and untraced: the new image runs on. */
        assert_int_equal(tracer_of(f->app.pid), 0);
        assert_int_equal(child_wait_line(&f->app, "READY ", 5000, NULL, 0), 0);
}

/* A tracer of our own making that stays attached until killed. */
static pid_t spawn_tracer(pid_t target)
{
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                if (ptrace(PTRACE_SEIZE, target, NULL, NULL) < 0)
                        _exit(1);
                for (;;) {
                        int status;
                        pid_t r = waitpid(target, &status, __WALL);

                        if (r < 0)
                                _exit(0);
                        if (WIFSTOPPED(status))
                                ptrace(PTRACE_CONT, target, NULL,
                                       (void *)(long)((status >> 16) ? 0 : WSTOPSIG(status)));
                }
        }
        for (int i = 0; i < 1000 && tracer_of(target) != pid; i++)
                sleep_ms(2);
        assert_int_equal(tracer_of(target), pid);
        return pid;
}

static char *explain(int error, enum gp_op op, pid_t pid, int runtime_state)
{
        struct gp_explain_opts opts = { .sz = sizeof(opts),
                                        .error = error,
                                        .op = op,
                                        .pid = pid,
                                        .runtime_state = runtime_state };
        char *sentence = NULL;

        assert_int_equal(gp_explain(&opts, &sentence), 0);
        return sentence;
}

/* Left as found: alive, not stopped, not a zombie. */
static void assert_running(struct child *app)
{
        char state = process_state(app->pid);

        assert_int_equal(kill(app->pid, 0), 0);
        assert_true(state != 'T' && state != 't' && state != 'Z' && state != 0);
}

static void test_already_traced_target_is_refused(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", NULL };
        struct gp_target *target = NULL;
        char *sentence;
        pid_t tracer;
        int r;

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        tracer = spawn_tracer(f->app.pid);
        r = gp_target_attach(f->context, f->app.pid, NULL, &target);
        assert_int_equal(r, -EPERM);
        assert_null(target);
        sentence = explain(r, GP_OP_ATTACH, f->app.pid, -1);
        assert_non_null(strstr(sentence, "it is traced by"));
        assert_non_null(strstr(sentence, "only one tracer"));
        free(sentence);
        assert_running(&f->app);
        kill(tracer, SIGKILL);
        waitpid(tracer, NULL, 0);
}

/* Another debugger: seize, ENABLE, then PTRACE_DETACH — the kernel keeps the
 * debug session (no hook on detach) while this process lives. */
static pid_t spawn_other_debugger(pid_t target, int *ret_ready_fd)
{
        int ready[2];
        pid_t pid;

        assert_int_equal(pipe(ready), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct gp_context *context;
                struct gp_target *t;

                close(ready[0]);
                if (gp_context_new(NULL, &context) < 0 || gp_target_attach(context, target, NULL, &t) < 0)
                        _exit(1);
                /* Leave the session behind on purpose: drop only ptrace. */
                if (ptrace(PTRACE_INTERRUPT, target, NULL, NULL) < 0 ||
                    waitpid(target, NULL, __WALL) < 0 ||
                    ptrace(PTRACE_DETACH, target, NULL, NULL) < 0)
                        _exit(1);
                if (write(ready[1], "x", 1) != 1)
                        _exit(1);
                pause();
                _exit(0);
        }
        close(ready[1]);
        *ret_ready_fd = ready[0];
        return pid;
}

static void test_already_debugged_target_is_refused(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", NULL };
        struct gp_target *target = NULL;
        char *sentence, byte;
        pid_t debugger;
        int ready_fd, r;

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        debugger = spawn_other_debugger(f->app.pid, &ready_fd);
        assert_int_equal(read(ready_fd, &byte, 1), 1);
        close(ready_fd);

        r = gp_target_attach(f->context, f->app.pid, NULL, &target);
        assert_int_equal(r, -EALREADY);
        sentence = explain(r, GP_OP_ATTACH, f->app.pid, -1);
        assert_non_null(strstr(sentence, "another debugger"));
        free(sentence);
        assert_int_equal(tracer_of(f->app.pid), 0);
        assert_running(&f->app);
        kill(debugger, SIGKILL);
        waitpid(debugger, NULL, 0);
}

/*
 * The calling process is refused, and so is a process that does not use
 * the GPU: ENABLE would leave it a KFD process (kfd-interface.md §3, step 4).
 */
static void test_self_and_a_process_without_gpu_use_are_refused(void **state)
{
        struct fixture *f = *state;
        char *argv[] = { (char *)"/bin/sleep", (char *)"30", NULL };
        char kfd_process[64], *sentence;

        assert_int_equal(attach_with(f, getpid(), false), -GP_ERR_SELF);
        sentence = explain(-GP_ERR_SELF, GP_OP_ATTACH, getpid(), -1);
        assert_non_null(strstr(sentence, "this very process"));
        free(sentence);

        assert_int_equal(child_spawn(argv, false, &f->app), 0);
        assert_true(process_state(f->app.pid) != 'Z');
        assert_int_equal(attach_with(f, f->app.pid, false), -GP_ERR_NOT_GPU_PROCESS);
        assert_null(f->target);
        snprintf(kfd_process, sizeof(kfd_process), "/sys/class/kfd/kfd/proc/%d", (int)f->app.pid);
        assert_int_equal(access(kfd_process, F_OK), -1);
        assert_int_equal(tracer_of(f->app.pid), 0);
        sentence = explain(-GP_ERR_NOT_GPU_PROCESS, GP_OP_ATTACH, f->app.pid, -1);
        assert_non_null(strstr(sentence, "does not use the GPU"));
        free(sentence);
}

static void test_runtime_never_enabled_is_explained(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", "--no-runtime-enable", NULL };
        char *sentence;
        int r;

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        attach(f, f->app.pid);
        assert_int_equal(gp_target_runtime_state(f->target), GP_RUNTIME_DISABLED);
        r = gp_target_suspend(f->target, NULL, NULL);
        assert_int_equal(r, -EPERM);
        sentence = explain(r, GP_OP_SUSPEND, f->app.pid, gp_target_runtime_state(f->target));
        assert_non_null(strstr(sentence, "never enabled debugging"));
        assert_non_null(strstr(sentence, "ROCm 5.7"));
        free(sentence);
        assert_int_equal(gp_target_detach(f->target), 0);
        f->target = NULL;
        assert_int_equal(tracer_of(f->app.pid), 0);
        assert_running(&f->app);
}

static void test_no_such_process(void **state)
{
        struct fixture *f = *state;
        struct gp_target *target = NULL;
        char *argv[] = { (char *)"/bin/true", NULL };
        char *sentence;
        pid_t gone;
        int r;

        /* A PID that surely is free: a child that exited and was reaped. */
        assert_int_equal(child_spawn(argv, false, &f->other), 0);
        gone = f->other.pid;
        assert_int_equal(child_wait_exit(&f->other, 5000, NULL), 0);
        r = gp_target_attach(f->context, gone, NULL, &target);
        assert_int_equal(r, -ESRCH);
        sentence = explain(r, GP_OP_ATTACH, gone, -1);
        assert_non_null(strstr(sentence, "no such process"));
        free(sentence);
}

struct thread_call {
        struct gp_target *target;
        int result;
};

static void *suspend_from_thread(void *userdata)
{
        struct thread_call *call = userdata;

        call->result = gp_target_suspend(call->target, NULL, NULL);
        return NULL;
}

static void test_other_thread_gets_its_own_error(void **state)
{
        struct fixture *f = *state;
        const char *args[] = { "--queues", "1", NULL };
        struct thread_call call = { 0 };
        pthread_t thread;
        char *sentence;

        assert_int_equal(app_spawn(app_path, args, &f->app), 0);
        attach(f, f->app.pid);
        call.target = f->target;
        assert_int_equal(pthread_create(&thread, NULL, suspend_from_thread, &call), 0);
        assert_int_equal(pthread_join(thread, NULL), 0);
        assert_int_equal(call.result, -GP_ERR_WRONG_THREAD);
        sentence = explain(call.result, GP_OP_SUSPEND, f->app.pid, 1);
        assert_non_null(strstr(sentence, "another thread"));
        free(sentence);
        /* From the right thread it works. */
        assert_int_equal(gp_target_suspend(f->target, NULL, NULL), 1);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_held_app_stops_and_continues, setup, teardown),
                cmocka_unit_test_setup_teardown(test_self_and_a_process_without_gpu_use_are_refused, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_queue_created_while_held_is_suspended, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_online_app_keeps_running, setup, teardown),
                cmocka_unit_test_setup_teardown(test_only_the_given_gpu_is_suspended, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_signals_reach_a_held_target, setup, teardown),
                cmocka_unit_test_setup_teardown(test_detach_leaves_a_stopped_target_stopped, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(
                        test_detach_acknowledges_a_runtime_disable_in_progress, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runtime_enable_and_disable_are_acknowledged,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(test_target_killed_while_held, setup, teardown),
                cmocka_unit_test_setup_teardown(test_target_execs_while_held, setup, teardown),
                cmocka_unit_test_setup_teardown(test_already_traced_target_is_refused, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_already_debugged_target_is_refused, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_runtime_never_enabled_is_explained, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_no_such_process, setup, teardown),
                cmocka_unit_test_setup_teardown(test_other_thread_gets_its_own_error, setup,
                                                teardown),
        };

        if (argc != 3) {
                fprintf(stderr, "usage: %s KFDEMU-APP RUNTIME-CYCLER\n", argv[0]);
                return 2;
        }
        app_path = argv[1];
        cycler_path = argv[2];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
