/* SPDX-License-Identifier: MIT */
/*
 * CREATE_QUEUE's limits (kfd_process_queue_manager.c: pqm_create_queue;
 * kfd_device_queue_manager.c: create_queue_cpsch, allocate_doorbell) and
 * its argument checks (set_queue_properties_from_user).
 *
 *   per process, per device:  qpd.queue_count >= max_queues -> -ENOSPC,
 *       max_queues = 255 on GC 9.4.3/9.4.4/9.5.0 (gfx_target_version
 *       90400-90402, 90500), 127 elsewhere; SDMA queues count too;
 *   per device, all processes: total_queue_count >=
 *       amdgpu.max_num_of_queues_per_device -> -EPERM;
 *   (queue_percentage & 0xff) > 100 -> -EINVAL (bits 8-15: PM4 target XCC).
 *
 * Under kfdemu the node comes from queues.conf, which lowers
 * max_num_of_queues_per_device so two processes reach it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

#define MAX_TARGETS 20
#define MAX_QUEUES_PARAM "/sys/module/amdgpu/parameters/max_num_of_queues_per_device"

static long max_queues_per_process(uint32_t gpu_id)
{
        long long v = conf_gpu_property(gpu_id, "gfx_target_version");
        assert_true(v > 0);
        return v == 90400 || v == 90401 || v == 90402 || v == 90500 ? 255 : 127;
}

/* Creates `n` AQL queues on `gpu_id`; fails the test on any error. */
static void create_n(struct conf_target *t, uint32_t gpu_id, long n)
{
        for (long i = 0; i < n; i++) {
                struct conf_queue q;
                int r = conf_target_create_queue(t, gpu_id, &q);
                if (r < 0)
                        fail_msg("queue %ld of %ld on gpu %u: %s", i + 1, n, gpu_id, strerror(-r));
        }
}

/* pqm_create_queue: the limit is per device and counts SDMA queues; a
 * destroyed queue frees its place. */
static void process_limit_per_device_is_enospc(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_session_spawn(s, false), 0);
        uint32_t gpu = s->gpu_ids[0];
        long max = max_queues_per_process(gpu);
        struct conf_queue q;

        create_n(&s->target, gpu, max - 1);
        assert_int_equal(conf_target_create_queue_type(&s->target, gpu, KFD_IOC_QUEUE_TYPE_SDMA, &q), 0);
        assert_int_equal(conf_target_create_queue(&s->target, gpu, &q), -ENOSPC);
        assert_int_equal(conf_target_create_queue_type(&s->target, gpu, KFD_IOC_QUEUE_TYPE_SDMA, &q), -ENOSPC);
        if (s->n_gpus > 1)
                assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[1], &q), 0);
        assert_int_equal(conf_target_call(&s->target, "destroy 0"), 0);
        assert_int_equal(conf_target_create_queue(&s->target, gpu, &q), 0);
        assert_int_equal(q.id, 0);
        conf_session_end(s);
        assert_int_equal(conf_wait_kfd_process_gone(s->target.pid), 0);
}

/* create_queue_cpsch: total_queue_count counts every process's queues on
 * the device; the one past max_num_of_queues_per_device gets -EPERM
 * (checked before the doorbell), whatever room its process has left. */
static void device_limit_over_processes_is_eperm(void **state)
{
        struct conf_target targets[MAX_TARGETS];
        uint32_t gpus[CONF_MAX_GPUS];
        char buf[64];
        int n_targets = 0;

        assert_true(conf_gpu_ids(gpus, CONF_MAX_GPUS) > 0);
        assert_true(conf_read_file(MAX_QUEUES_PARAM, buf, sizeof(buf)) > 0);
        long limit = strtol(buf, NULL, 10), per_process = max_queues_per_process(gpus[0]);
        if (limit > per_process * MAX_TARGETS)
                fail_msg("max_num_of_queues_per_device %ld needs more than %d processes", limit, MAX_TARGETS);

        for (long left = limit; left > 0; left -= per_process) {
                struct conf_target *t = &targets[n_targets++];
                assert_int_equal(conf_target_spawn(t), 0);
                assert_int_equal(conf_target_call(t, "open"), 0);
                create_n(t, gpus[0], left < per_process ? left : per_process);
        }
        struct conf_queue q;
        struct conf_target *last = &targets[n_targets - 1];
        if (limit % per_process == 0) {
                last = &targets[n_targets++];
                assert_int_equal(conf_target_spawn(last), 0);
                assert_int_equal(conf_target_call(last, "open"), 0);
        }
        assert_int_equal(conf_target_create_queue(last, gpus[0], &q), -EPERM);
        assert_int_equal(conf_target_create_queue_type(last, gpus[0], KFD_IOC_QUEUE_TYPE_SDMA, &q), -EPERM);
        assert_int_equal(conf_target_call(&targets[0], "destroy 0"), 0);
        assert_int_equal(conf_target_create_queue(last, gpus[0], &q), 0);
        for (int i = 0; i < n_targets; i++)
                conf_target_kill(&targets[i]);
        /* The next test needs the device's queues back. */
        for (int i = 0; i < n_targets; i++)
                assert_int_equal(conf_wait_kfd_process_gone(targets[i].pid), 0);
}

/* set_queue_properties_from_user: only bits 0-7 of queue_percentage are the
 * percentage checked against 100; bits 8-15 are the PM4 target XCC. */
static void queue_percentage_checks_its_low_byte(void **state)
{
        static uint64_t pointers[2];
        static uint8_t ring[4096] __attribute__((aligned(4096)));
        uint32_t gpus[CONF_MAX_GPUS];
        static const struct {
                uint32_t percentage;
                int expected;
        } cases[] = {
                { 0x165, -EINVAL },  /* XCC 1, 101 % */
                { 0x1ff, -EINVAL },  /* XCC 1, 255 % */
                { 0x164, 0 },        /* XCC 1, 100 % */
                { 0xff64, 0 },       /* XCC 255, 100 % */
                { 0x100, 0 },        /* XCC 1, 0 %: created, not active */
        };

        assert_true(conf_gpu_ids(gpus, CONF_MAX_GPUS) > 0);
        assert_int_equal(conf_acquire_vms(conf_kfd()), 0);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct kfd_ioctl_create_queue_args a = {
                        .ring_base_address = (uintptr_t)ring,
                        .write_pointer_address = (uintptr_t)&pointers[0],
                        .read_pointer_address = (uintptr_t)&pointers[1],
                        .ring_size = sizeof(ring),
                        .gpu_id = gpus[0],
                        .queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
                        .queue_percentage = cases[i].percentage,
                };
                long r = conf_ioctl(conf_kfd(), AMDKFD_IOC_CREATE_QUEUE, &a);
                if (r != cases[i].expected)
                        fail_msg("queue_percentage %#x: got %ld, want %d", cases[i].percentage, r, cases[i].expected);
                if (r == 0) {
                        struct kfd_ioctl_destroy_queue_args d = { .queue_id = a.queue_id };
                        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_DESTROY_QUEUE, &d), 0);
                }
        }
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(process_limit_per_device_is_enospc, conf_fixture_empty, conf_fixture_end),
                cmocka_unit_test(device_limit_over_processes_is_eperm),
                cmocka_unit_test(queue_percentage_checks_its_low_byte),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
