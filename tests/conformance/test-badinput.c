/* SPDX-License-Identifier: MIT */
/*
 * Bad input: what the kernel answers to garbage sizes, NULL and invalid
 * user pointers in every pointer field, absurd counts, unknown ops, load
 * from several threads and clients that die in the middle of a call — and
 * that it keeps serving afterwards. kfd_chardev.c: kfd_ioctl (copy in/out),
 * kfd_ioctl_set_debug_trap, kfd_debug.c: kfd_dbg_trap_enable,
 * kfd_device_queue_manager.c: suspend_queues / resume_queues (memdup_user),
 * pqm_get_queue_snapshot, kfd_dbg_trap_device_snapshot —
 * kfd-interface.md §1, §3, §4.1, §7, §9.11.
 *
 * Never sent: SUSPEND with queue_array_ptr = 0 and num_queues > 0. The
 * kernel dereferences NULL there (§4.1); no conformance suite may do it.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

#define BAD_PTR 0xdead0000ull
#define THREADS 4
#define CALLS_PER_THREAD 2000

static void expect_server_alive(void)
{
        struct kfd_ioctl_get_version_args v = { 0 };
        assert_int_equal(conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_VERSION, &v), 0);
        assert_int_equal(v.major_version, 1);
}

/* kfd_ioctl: _IOC_SIZE 0 copies nothing in, so the handler sees pid 0,
 * which find_get_pid does not know (-ESRCH); the largest size is copied in
 * and out whole; a size that runs into an unmapped page is -EFAULT. */
static void garbage_sizes(void **state)
{
        struct kfd_ioctl_dbg_trap_args a = { .pid = (uint32_t)getpid(), .op = KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT };
        assert_int_equal(conf_ioctl(conf_kfd(), _IOC(_IOC_READ | _IOC_WRITE, AMDKFD_IOCTL_BASE, 0x26, 0), &a), -ESRCH);

        size_t big = _IOC_SIZEMASK;
        _cleanup_free_ uint8_t *buf = malloc(big);
        assert_non_null(buf);
        memset(buf, 0x3c, big);
        pid_t gone = conf_unused_pid();
        memcpy(buf, &(uint32_t){ (uint32_t)gone }, 4);
        memcpy(buf + 4, &(uint32_t){ KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT }, 4);
        assert_int_equal(conf_ioctl(conf_kfd(), _IOC(_IOC_READ | _IOC_WRITE, AMDKFD_IOCTL_BASE, 0x26, big), buf),
                         -ESRCH);
        for (size_t i = 8; i < big; i++)
                if (buf[i] != 0x3c)
                        fail_msg("byte %zu of a %zu-byte DBG_TRAP argument changed", i, big);

        long page = sysconf(_SC_PAGESIZE);
        uint8_t *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(map != MAP_FAILED);
        assert_int_equal(mprotect(map + page, (size_t)page, PROT_NONE), 0);
        uint8_t *tail = map + page - sizeof(a);
        memcpy(tail, &a, sizeof(a));
        assert_int_equal(conf_ioctl(conf_kfd(), _IOC(_IOC_READ | _IOC_WRITE, AMDKFD_IOCTL_BASE, 0x26, sizeof(a) + 1), tail),
                         -EFAULT);
        munmap(map, (size_t)page * 2);
        expect_server_alive();
}

/* kfd_dbg_trap_enable: a rinfo copy that faults is -EFAULT after partial
 * setup that leaves debug_trap_enabled set (§9.11): the next ENABLE is
 * -EALREADY and DISABLE cleans up. */
static void enable_with_bad_rinfo(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_seize(s->target.pid), 0);
        s->target.traced = true;
        s->fifo = conf_event_fifo();
        static const uint64_t ptrs[] = { 0, BAD_PTR };
        for (size_t i = 0; i < ELEMENTSOF(ptrs); i++) {
                struct kfd_ioctl_dbg_trap_args a = {
                        .enable = {
                                .exception_mask = CONF_SUBSCRIPTION,
                                .rinfo_ptr = ptrs[i],
                                .rinfo_size = sizeof(struct kfd_runtime_info),
                                .dbg_fd = (uint32_t)s->fifo,
                        },
                };
                assert_int_equal(conf_dbg_trap(conf_kfd(), s->target.pid, KFD_IOC_DBG_TRAP_ENABLE, &a), -EFAULT);
                assert_int_equal(conf_dbg_enable(conf_kfd(), s->target.pid, CONF_SUBSCRIPTION, s->fifo, NULL), -EALREADY);
                assert_int_equal(conf_dbg_disable(conf_kfd(), s->target.pid), 0);
        }
        assert_int_equal(conf_session_attach(s, CONF_SUBSCRIPTION), 0);
}

/* copy_to_user / memdup_user failures in the per-op pointer fields are
 * -EFAULT; the queue is untouched and valid calls work afterwards. */
static void bad_pointers_in_every_field(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);

        uint32_t num = 4, entry_size = sizeof(struct kfd_queue_snapshot_entry);
        assert_int_equal(conf_dbg_queue_snapshot(conf_kfd(), pid, 0, NULL, &num, &entry_size), -EFAULT);
        num = 4;
        assert_int_equal(conf_dbg_queue_snapshot(conf_kfd(), pid, 0, (void *)(uintptr_t)BAD_PTR, &num, &entry_size),
                         -EFAULT);

        struct kfd_ioctl_dbg_trap_args a = {
                .device_snapshot = { .snapshot_buf_ptr = BAD_PTR, .num_devices = CONF_MAX_GPUS,
                                     .entry_size = sizeof(struct kfd_dbg_device_info_entry) },
        };
        assert_int_equal(conf_dbg_trap(conf_kfd(), pid, KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT, &a), -EFAULT);

        assert_int_equal(conf_dbg_suspend(conf_kfd(), pid, (uint32_t *)(uintptr_t)BAD_PTR, 1, 0), -EFAULT);
        assert_int_equal(conf_dbg_resume(conf_kfd(), pid, (uint32_t *)(uintptr_t)BAD_PTR, 1), -EFAULT);

        memset(&a, 0, sizeof(a));
        a.query_exception_info.info_ptr = 0;
        a.query_exception_info.info_size = sizeof(struct kfd_runtime_info);
        a.query_exception_info.exception_code = EC_PROCESS_RUNTIME;
        assert_int_equal(conf_dbg_trap(conf_kfd(), pid, KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO, &a), -EINVAL);

        assert_int_equal(conf_dbg_clear_new(conf_kfd(), pid), 0);
        uint32_t id = q.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), pid, &id, 1, 0), 1);
        assert_int_equal(conf_dbg_resume(conf_kfd(), pid, &id, 1), 1);
}

/* suspend_queues / resume_queues copy num_queues ids with memdup_user: 2^32-1
 * ids (16 GiB) cannot be allocated (-ENOMEM); 4096 unknown ids are all
 * INVALID. */
static void huge_num_queues(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        uint32_t one = 5;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), pid, &one, UINT32_MAX, 0), -ENOMEM);
        assert_int_equal(conf_dbg_resume(conf_kfd(), pid, &one, UINT32_MAX), -ENOMEM);

        enum { N = 4096 };
        _cleanup_free_ uint32_t *ids = malloc(N * sizeof(uint32_t));
        assert_non_null(ids);
        for (uint32_t i = 0; i < N; i++)
                ids[i] = GP_KFD_MAX_QUEUES_PER_PROCESS + i;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), pid, ids, N, 0), 0);
        for (uint32_t i = 0; i < N; i++)
                assert_int_equal(ids[i], (GP_KFD_MAX_QUEUES_PER_PROCESS + i) | CONF_QUEUE_INVALID);
        expect_server_alive();
}

/* suspend_queues copies the array back, and a failure there is only
 * logged: ids in a read-only page still get the count, not -EFAULT. */
static void suspend_copy_back_fault_is_ignored(void **state)
{
        struct conf_session *s = *state;
        pid_t pid = s->target.pid;
        struct conf_queue q;
        assert_int_equal(conf_target_create_queue(&s->target, s->gpu_ids[0], &q), 0);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), pid), 0);
        long page = sysconf(_SC_PAGESIZE);
        uint32_t *ids = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(ids != MAP_FAILED);
        ids[0] = q.id;
        ids[1] = 999;
        assert_int_equal(mprotect(ids, (size_t)page, PROT_READ), 0);
        long r = conf_dbg_suspend(conf_kfd(), pid, ids, 2, 0);
        uint32_t first = ids[0], second = ids[1];
        munmap(ids, (size_t)page);
        assert_int_equal(r, 1);
        assert_int_equal(first, q.id);
        assert_int_equal(second, 999);
}

/* kfd_ioctl_set_debug_trap: any op past GET_DEVICE_SNAPSHOT is -EINVAL,
 * whatever the union holds. */
static void unknown_ops_with_garbage(void **state)
{
        struct conf_session *s = *state;
        unsigned seed = 1;
        for (int i = 0; i < 500; i++) {
                struct kfd_ioctl_dbg_trap_args a;
                uint8_t *raw = (uint8_t *)&a;
                for (size_t j = 0; j < sizeof(a); j++)
                        raw[j] = (uint8_t)rand_r(&seed);
                uint32_t op = KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT + 1 + (uint32_t)rand_r(&seed);
                long r = conf_dbg_trap(conf_kfd(), s->target.pid, op, &a);
                if (r != -EINVAL)
                        fail_msg("op %u: got %ld, want -EINVAL", op, r);
        }
}

static void *hammer_thread(void *arg)
{
        long *bad = arg;
        for (int i = 0; i < CALLS_PER_THREAD; i++) {
                struct kfd_ioctl_get_version_args v = { 0 };
                if (conf_ioctl(conf_kfd(), AMDKFD_IOC_GET_VERSION, &v) != 0 || v.major_version != 1)
                        (*bad)++;
                /* Self-debug skips ptrace; the session is not enabled. */
                if (conf_dbg_query_event(conf_kfd(), getpid(), 0, NULL, NULL, NULL) != -EINVAL)
                        (*bad)++;
        }
        return NULL;
}

/* Thousands of calls from several threads of one process on one fd: every
 * one gets its own correct answer. */
static void many_threads(void **state)
{
        assert_true(conf_kfd() >= 0);
        pthread_t th[THREADS];
        long bad[THREADS] = { 0 };
        for (int i = 0; i < THREADS; i++)
                assert_int_equal(pthread_create(&th[i], NULL, hammer_thread, &bad[i]), 0);
        for (int i = 0; i < THREADS; i++)
                pthread_join(th[i], NULL);
        for (int i = 0; i < THREADS; i++)
                if (bad[i])
                        fail_msg("thread %d: %ld wrong answers", i, bad[i]);
}

/* A client killed while its ioctl sleeps in the kernel (RUNTIME_ENABLE
 * waiting for the ack): its session ends with the process (§6 c), and
 * everybody else is still served. */
static void client_killed_while_sleeping(void **state)
{
        struct conf_session *s = *state;
        assert_int_equal(conf_session_spawn(s, false), 0);
        assert_int_equal(conf_session_attach(s, CONF_SUBSCRIPTION), 0);
        pid_t pid = s->target.pid;
        assert_int_equal(conf_target_send(&s->target, "runtime-enable"), 0);
        assert_int_equal(conf_event_wait(s->fifo, CONF_REPLY_TIMEOUT_MS), 1);
        assert_true(conf_target_still_blocked(&s->target));
        conf_target_kill(&s->target);
        s->enabled = false;
        assert_int_equal(conf_dbg_query_event(conf_kfd(), pid, 0, NULL, NULL, NULL), -ESRCH);
        expect_server_alive();

        struct conf_session fresh;
        assert_int_equal(conf_session_spawn(&fresh, true), 0);
        struct conf_queue q;
        int created = conf_target_create_queue(&fresh.target, fresh.gpu_ids[0], &q);
        conf_session_end(&fresh);
        assert_int_equal(created, 0);
}

/* Clients killed at random points of a stream of calls. */
static void clients_killed_mid_stream(void **state)
{
        for (int round = 0; round < 10; round++) {
                pid_t child = fork();
                assert_true(child >= 0);
                if (child == 0) {
                        int kfd = conf_open_kfd();
                        for (;;) {
                                struct kfd_ioctl_get_version_args v;
                                conf_ioctl(kfd, AMDKFD_IOC_GET_VERSION, &v);
                                conf_dbg_query_event(kfd, getpid(), 0, NULL, NULL, NULL);
                        }
                }
                conf_sleep_ms(5 + round * 3);
                kill(child, SIGKILL);
                waitpid(child, NULL, 0);
        }
        expect_server_alive();
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(garbage_sizes),
                cmocka_unit_test_setup_teardown(enable_with_bad_rinfo, conf_fixture_spawned, conf_fixture_end),
                cmocka_unit_test_setup_teardown(bad_pointers_in_every_field, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(huge_num_queues, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(suspend_copy_back_fault_is_ignored, conf_fixture_attached,
                                                conf_fixture_end),
                cmocka_unit_test_setup_teardown(unknown_ops_with_garbage, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test(many_threads),
                cmocka_unit_test_setup_teardown(client_killed_while_sleeping, conf_fixture_empty, conf_fixture_end),
                cmocka_unit_test(clients_killed_mid_stream),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
