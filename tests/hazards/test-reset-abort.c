/* SPDX-License-Identifier: MIT */
/*
 * A preemption that fails ends ROCm processes, as on a real node: a held
 * kfdemu-app is suspended the way gpreemptd suspends one, the injected
 * fault makes amdkfd reset, the reset sets the HW exception events
 * (kfd_signal_reset_event), and each process whose event fired dies as
 * ROCr's Runtime::HwExceptionHandler makes it: its message on stderr, then
 * SIGABRT (kfd-interface.md §16.1-16.3).
 *
 *   test-reset-abort gpu APP    (reset-gpu.conf) the unmap fence times out,
 *       the whole GPU is reset: every KFD process has every GPU
 *       (kfd_init_apertures makes a device's data for each), so every app
 *       on the node dies, the one on the other GPU too.
 *   test-reset-abort queue APP  (reset-queue.conf) only the hung queue is
 *       reset (Linux 6.12): only its process dies; the held app and the app
 *       on the other GPU live and exit cleanly.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <gpreempt/gpreempt.h>

#include "cleanup.h"
#include "test-support.h"

#define REPLY_TIMEOUT_MS 10000
/* How long the apps spared by a per-queue reset must outlive it. */
#define SURVIVAL_MS 500
#define ROCR_MESSAGE_PREFIX "HW Exception by GPU node-"
#define ROCR_MESSAGE_REASON " reason :GPU Hang"

static const char *app_path;

/* An app busy on one GPU, its stderr merged into the output it reads;
 * returns once its first kernel is on the GPU. */
static void start_app(const char *gpu_index, struct child *ret)
{
        char dispatch_times[] = "/tmp/reset-abort-dispatch-XXXXXX";
        _cleanup_close_ int fd = mkstemp(dispatch_times);
        /* Requests of 64 kernels of 5 ms: its queue is busy but for a
         * moment every 320 ms. */
        char *argv[] = { (char *)app_path, "--report", "none", "--gpu", (char *)gpu_index, "--kernel-us", "5000",
                         "--kernels-per-request", "64", "--dispatch-times", dispatch_times, NULL };
        uint64_t deadline = now_usec() + REPLY_TIMEOUT_MS * 1000ull;

        int spawned, ready, dispatched = 0;

        assert_true(fd >= 0);
        spawned = child_spawn(argv, true, ret);
        ready = spawned < 0 ? spawned : child_wait_line(ret, "READY ", REPLY_TIMEOUT_MS, NULL, 0);
        while (ready == 0 && (dispatched = count_lines(dispatch_times)) < 1 && now_usec() < deadline)
                sleep_ms(1);
        unlink(dispatch_times);
        assert_int_equal(ready, 0);
        assert_true(dispatched >= 1);
}

static void record_exit(struct gp_target *target, const struct gp_event *event, void *userdata)
{
        int *status = userdata;

        (void)target;
        if (event->type == GP_EVENT_EXITED && event->exit_status >= 0)
                *status = event->exit_status;
}

/* "HW Exception by GPU node-N (Agent handle: 0x...) reason :GPU Hang". */
static bool is_rocr_hw_exception_line(const char *line)
{
        size_t n = strlen(line), reason = strlen(ROCR_MESSAGE_REASON);

        return strstr(line, " (Agent handle: 0x") && n > reason && strcmp(line + n - reason, ROCR_MESSAGE_REASON) == 0;
}

/* ROCr's line from the app, then its death of SIGABRT; a traced app is
 * reaped through its tracer. */
static void expect_rocr_abort(struct child *app, struct gp_target *target, const int *traced_status)
{
        char line[256];
        int status = -1;

        assert_int_equal(child_wait_line(app, ROCR_MESSAGE_PREFIX, REPLY_TIMEOUT_MS, line, sizeof(line)), 0);
        if (!is_rocr_hw_exception_line(line))
                fail_msg("not ROCr's HW exception line: \"%s\"", line);
        if (target) {
                uint64_t deadline = now_usec() + REPLY_TIMEOUT_MS * 1000ull;

                while (*traced_status < 0 && now_usec() < deadline) {
                        assert_true(gp_target_service_ptrace(target) >= 0);
                        sleep_ms(1);
                }
                status = *traced_status;
                app->pid = 0; /* reaped by the tracer */
        } else {
                assert_int_equal(child_wait_exit(app, REPLY_TIMEOUT_MS, &status), 0);
        }
        if (status < 0 || !WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
                fail_msg("the app did not die of SIGABRT (wait status 0x%x)", status);
}

/* Alive after the reset, it stops cleanly on SIGTERM. */
static void expect_clean_stop(struct child *app)
{
        int status;

        assert_int_equal(waitpid(app->pid, &status, WNOHANG), 0);
        assert_int_equal(kill(app->pid, SIGTERM), 0);
        assert_int_equal(child_wait_exit(app, REPLY_TIMEOUT_MS, &status), 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("pid %d ended with wait status 0x%x", (int)app->pid, status);
}

static void test_reset(void **state)
{
        const bool whole_gpu = *(const bool *)*state;
        struct child held = { .pid = 0 }, beside = { .pid = 0 }, elsewhere = { .pid = 0 };
        struct gp_context *context = NULL;
        struct gp_target *target = NULL;
        int held_status = -1;

        /* Held is suspended; beside runs on the same GPU (its busy queue is
         * the one a queue hang blames: the unmap is device-wide, and a
         * suspended queue has no waves left to hang it); elsewhere runs on
         * the other GPU. */
        start_app("0", &held);
        start_app("0", &beside);
        start_app("1", &elsewhere);
        assert_int_equal(gp_context_new(&(struct gp_context_opts){ .sz = sizeof(struct gp_context_opts) }, &context), 0);
        assert_int_equal(gp_target_attach(context, held.pid,
                                          &(struct gp_attach_opts){ .sz = sizeof(struct gp_attach_opts),
                                                                    .event_fn = record_exit,
                                                                    .event_userdata = &held_status },
                                          &target),
                         0);

        /* What the failed preemption returns (ERROR in its slots, or a
         * success once the hung queue was reset) is the daemon's business;
         * here only who survives it counts. */
        (void)gp_target_suspend(target, NULL, NULL);
        expect_rocr_abort(&beside, NULL, NULL);
        if (whole_gpu) {
                expect_rocr_abort(&held, target, &held_status);
                expect_rocr_abort(&elsewhere, NULL, NULL);
                assert_int_equal(gp_target_detach(target), 0);
        } else {
                sleep_ms(SURVIVAL_MS);
                assert_int_equal(gp_target_detach(target), 0);
                expect_clean_stop(&held);
                expect_clean_stop(&elsewhere);
        }
        gp_context_free(context);
        child_kill(&held);
        child_kill(&beside);
        child_kill(&elsewhere);
}

int main(int argc, char **argv)
{
        static const bool whole_gpu = true, one_queue = false;

        if (argc != 3 || (strcmp(argv[1], "gpu") != 0 && strcmp(argv[1], "queue") != 0)) {
                fprintf(stderr, "usage: %s gpu|queue KFDEMU-APP (inside kfdemu-run --config reset-*.conf)\n", argv[0]);
                return 2;
        }
        app_path = argv[2];
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_prestate(test_reset, (void *)(strcmp(argv[1], "gpu") == 0 ? &whole_gpu : &one_queue)),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
