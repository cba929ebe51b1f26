/* SPDX-License-Identifier: MIT */
/*
 * The unmap fence wait keeps its CPU (kfd-interface.md §4.1;
 * kfd_device_queue_manager.c: amdkfd_fence_wait_timeout loops on
 * schedule() while the task is TASK_RUNNING). A SCHED_FIFO caller is picked
 * again at once, so for the whole emulated unmap it starves a
 * normal-priority thread on its CPU; a SCHED_OTHER caller shares the CPU.
 *
 *   test-fence-spin spins|sleeps KFDEMU_APP CPU_HOG
 *
 * Inside kfdemu-run with a long preemption (spin.conf); "sleeps" is the
 * run with [Node] FenceWaitSpins=no (spin-off.conf), where even a
 * SCHED_FIFO caller leaves the hog its CPU. This is the pattern for
 * showing that a caller does not issue SUSPEND at SCHED_FIFO: cpu-hog
 * pinned to the caller's CPU keeps its rate through the call.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hazard-harness.h"

/* The node's preemption (spin.conf) lasts 1.5 s; the call takes that long. */
#define PREEMPTION_NS 1500000000ull
/* How long the hog's rate before the call is measured. */
#define BASELINE_NS 500000000ull
/* A hog starved by a real-time spinner gets only what real-time
 * throttling leaves the CPU's normal tasks (5 % by default,
 * sched_rt_runtime_us); beside a caller that yields, or one that sleeps
 * (fence-wait-sleeps), it gets its share of the CPU with the machine's
 * other normal tasks. The machine's load sets that share, so the SCHED_FIFO
 * call is judged against the SCHED_OTHER one made just before: starved is
 * less than half of it. */
#define STARVED_FRACTION 0.5

static bool expect_spin;
static const char *app_path, *hog_path;

struct fixture {
        struct held_app held;
        struct hog *hog;
        int cpu;
};

static int setup(void **state)
{
        static const char *const args[] = { "--queues", "1", "--kernel-us", "1000", NULL };
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        f->cpu = measured_cpu();
        assert_true(f->cpu >= 0);
        assert_int_equal(keep_process_off_cpu(getppid(), f->cpu), 0);
        assert_int_equal(held_app_start(app_path, args, &f->held), 0);
        assert_int_equal(hog_start(hog_path, f->cpu, &f->hog), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        hog_stop(f->hog);
        held_app_stop(&f->held);
        free(f);
        return 0;
}

/* The hog's share of its CPU during one SUSPEND made at `policy` on that
 * CPU; its share just before in *ret_before. */
static double hog_share_during_suspend(struct fixture *f, int policy, double *ret_before)
{
        struct sched_param param = { .sched_priority = policy == SCHED_FIFO ? 1 : 0 };
        uint64_t start, took;

        usleep(BASELINE_NS / 1000);
        assert_int_equal(pin_thread(f->cpu), 0);
        if (sched_setscheduler(0, policy, &param) < 0)
                fail_msg("cannot run at %s: %s; the test needs CAP_SYS_NICE (run it as root)",
                         policy == SCHED_FIFO ? "SCHED_FIFO" : "SCHED_OTHER", strerror(errno));
        start = now_nsec();
        assert_true(held_app_suspend(&f->held, &took) >= 1);
        assert_int_equal(sched_setscheduler(0, SCHED_OTHER, &(struct sched_param){ 0 }), 0);
        assert_int_equal(pin_thread(-1), 0);
        assert_true(took >= PREEMPTION_NS * 9 / 10);
        /* The hog reports at its next interval's end. */
        usleep(100000);
        double during = hog_cpu_share(f->hog, start, start + took);
        *ret_before = hog_cpu_share(f->hog, start - BASELINE_NS, start);
        assert_true(*ret_before > 0);
        assert_true(held_app_resume(&f->held) >= 1);
        print_message("# %s caller: the hog had %.2f of its CPU before, %.2f during the suspend\n",
                      policy == SCHED_FIFO ? "SCHED_FIFO" : "SCHED_OTHER", *ret_before, during);
        return during;
}

/* The same SUSPEND from a SCHED_OTHER and from a SCHED_FIFO caller, with
 * the hog on the caller's CPU. The machine's other load on that CPU comes
 * and goes, so the SCHED_FIFO call is judged against the SCHED_OTHER one. */
static void fifo_caller_against_other_caller(void **state)
{
        double other_before, fifo_before;
        double other = hog_share_during_suspend(*state, SCHED_OTHER, &other_before);
        double fifo = hog_share_during_suspend(*state, SCHED_FIFO, &fifo_before);

        if (other <= 0)
                fail_msg("the hog never ran beside a SCHED_OTHER caller: its CPU is taken by something else");
        if (expect_spin && fifo >= STARVED_FRACTION * other)
                fail_msg("the hog had %.2f of its CPU beside a SCHED_FIFO caller spinning in the fence wait "
                         "(%.2f beside a SCHED_OTHER one)", fifo, other);
        if (!expect_spin && fifo < STARVED_FRACTION * other)
                fail_msg("the hog had only %.2f of its CPU beside a SCHED_FIFO caller (%.2f beside a SCHED_OTHER "
                         "one), though the fence wait sleeps", fifo, other);
}

int main(int argc, char **argv)
{
        if (argc != 4 || (strcmp(argv[1], "spins") != 0 && strcmp(argv[1], "sleeps") != 0)) {
                fprintf(stderr, "usage: %s spins|sleeps KFDEMU_APP CPU_HOG (inside kfdemu-run)\n", argv[0]);
                return 2;
        }
        expect_spin = strcmp(argv[1], "spins") == 0;
        app_path = argv[2];
        hog_path = argv[3];
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(fifo_caller_against_other_caller, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
