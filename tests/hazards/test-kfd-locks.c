/* SPDX-License-Identifier: MIT */
/*
 * The locks a real kernel holds across a preemption and a memory sync
 * (kfd-interface.md §9.12; kfd_chardev.c: kfd_ioctl_set_debug_trap holds
 * target->mutex for the whole op, kfd_ioctl_map_memory_to_gpu waits for
 * the page-table fence under p->mutex; kfd_device_queue_manager.c:
 * suspend_queues holds the dqm lock around execute_queues_cpsch, which
 * create_queue_cpsch takes too; kfd_process.c: kfd_debugfs_mqds_by_process
 * takes every process's mutex).
 *
 *   test-kfd-locks memory|preempt held|released KFDEMU_APP
 *
 * memory (locks-memory.conf: a long MemorySyncMicroseconds): a SUSPEND of
 * an offline kfdemu-app --churn waits behind the app's own maps.
 * preempt (locks-preempt.conf: a long PreemptMicroseconds): while a
 * SUSPEND's preemption runs, another process's CREATE_QUEUE on that GPU
 * and a read of debugfs mqds wait for it.
 * "released" runs on the same node with [Node] LocksAcrossWaits=no, where
 * nothing waits.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "emu-runtime.h"
#include "hazard-harness.h"

/* locks-memory.conf's MAP wait. A SUSPEND issued at a random moment of
 * the churn waits for the rest of the map in progress: half of it on
 * average. */
#define MEMORY_SYNC_NS 300000000ull
#define MEMORY_SAMPLES 10
/* locks-preempt.conf's preemption. */
#define PREEMPTION_NS 300000000ull
/* When the waiters start, after the SUSPEND did. */
#define WAITER_DELAY_NS 100000000ull

static bool expect_held;
static const char *app_path;

static void suspend_waits_behind_the_targets_memory_ioctls(void **state)
{
        static const char *const args[] = { "--queues", "1", "--kernel-us", "1000", "--churn", "1000", NULL };
        struct held_app held;
        uint64_t took, total = 0;

        assert_int_equal(held_app_start(app_path, args, &held), 0);
        for (int i = 0; i < MEMORY_SAMPLES; i++) {
                assert_true(held_app_suspend(&held, &took) >= 1);
                assert_true(held_app_resume(&held) >= 1);
                total += took;
                usleep(20000);
        }
        held_app_stop(&held);
        uint64_t mean = total / MEMORY_SAMPLES;
        print_message("# mean SUSPEND time beside the churn: %.1f ms\n", (double)mean / 1e6);
        if (expect_held && mean < MEMORY_SYNC_NS / 5)
                fail_msg("SUSPEND took %.1f ms on average: it did not wait behind the target's maps",
                         (double)mean / 1e6);
        if (!expect_held && mean >= MEMORY_SYNC_NS / 5)
                fail_msg("SUSPEND took %.1f ms on average though maps hold no lock", (double)mean / 1e6);
}

struct waiter {
        uint64_t start_ns;
        uint64_t create_done_ns, mqds_done_ns;
        int create_result, mqds_result;
};

/* Another process's queue on the GPU and a reader of mqds, started while
 * the SUSPEND's preemption runs. This process is that other process: its
 * own kfd_process, not the target. */
static void *waiter_main(void *userdata)
{
        struct waiter *w = userdata;
        struct emu_runtime_options ro = { .runtime_enable = false };
        struct emu_runtime *rt;
        struct emu_aql_queue *queue;
        char buf[4096];

        while (now_nsec() < w->start_ns + WAITER_DELAY_NS)
                usleep(1000);
        FILE *mqds = fopen("/sys/kernel/debug/kfd/mqds", "re");
        w->mqds_done_ns = now_nsec();
        w->mqds_result = mqds ? 0 : -errno;
        if (mqds) {
                while (fread(buf, 1, sizeof(buf), mqds) > 0)
                        ;
                fclose(mqds);
        }
        w->create_result = emu_runtime_open(&ro, &rt);
        if (w->create_result < 0)
                return NULL;
        struct emu_queue_options qo = { .gpu_id = emu_runtime_gpu(rt, 0)->gpu_id,
                                        .priority = EMU_QUEUE_DEFAULT_PRIORITY,
                                        .ring_packets = EMU_QUEUE_MIN_PACKETS };
        w->create_result = emu_aql_queue_create(rt, &qo, &queue);
        w->create_done_ns = now_nsec();
        if (w->create_result == 0)
                w->create_result = emu_aql_queue_destroy(queue);
        (void)emu_runtime_close(rt);
        return NULL;
}

static void preemption_holds_the_gpu_and_the_target(void **state)
{
        static const char *const args[] = { "--queues", "1", "--kernel-us", "1000", NULL };
        struct held_app held;
        struct waiter w = { 0 };
        pthread_t thread;
        uint64_t took;

        assert_int_equal(held_app_start(app_path, args, &held), 0);
        w.start_ns = now_nsec();
        assert_int_equal(pthread_create(&thread, NULL, waiter_main, &w), 0);
        assert_true(held_app_suspend(&held, &took) >= 1);
        assert_int_equal(pthread_join(thread, NULL), 0);
        assert_true(held_app_resume(&held) >= 1);
        held_app_stop(&held);

        assert_int_equal(w.mqds_result, 0);
        assert_int_equal(w.create_result, 0);
        uint64_t mqds_at = w.mqds_done_ns - w.start_ns, create_at = w.create_done_ns - w.start_ns;
        print_message("# suspend %.1f ms; mqds read done at %.1f ms, CREATE_QUEUE at %.1f ms\n", (double)took / 1e6,
                      (double)mqds_at / 1e6, (double)create_at / 1e6);
        /* Held, the mqds read and the CREATE_QUEUE both end only after the
         * suspend's preemption; released, both start when the waiter does.
         * The CREATE_QUEUE's own unmap costs nothing here: with the app's
         * one queue suspended no runlist is active (kfd-interface.md §16.4). */
        if (expect_held) {
                assert_true(mqds_at >= PREEMPTION_NS * 9 / 10);
                assert_true(create_at >= PREEMPTION_NS * 9 / 10);
        } else {
                assert_true(mqds_at < PREEMPTION_NS * 9 / 10);
                assert_true(create_at < PREEMPTION_NS * 9 / 10);
        }
}

int main(int argc, char **argv)
{
        if (argc != 4 || (strcmp(argv[1], "memory") != 0 && strcmp(argv[1], "preempt") != 0) ||
            (strcmp(argv[2], "held") != 0 && strcmp(argv[2], "released") != 0)) {
                fprintf(stderr, "usage: %s memory|preempt held|released KFDEMU_APP (inside kfdemu-run)\n", argv[0]);
                return 2;
        }
        expect_held = strcmp(argv[2], "held") == 0;
        app_path = argv[3];
        const struct CMUnitTest memory[] = {
                cmocka_unit_test(suspend_waits_behind_the_targets_memory_ioctls),
        };
        const struct CMUnitTest preempt[] = {
                cmocka_unit_test(preemption_holds_the_gpu_and_the_target),
        };
        if (strcmp(argv[1], "memory") == 0)
                return cmocka_run_group_tests(memory, NULL, NULL);
        return cmocka_run_group_tests(preempt, NULL, NULL);
}
