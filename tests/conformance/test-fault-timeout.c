/* SPDX-License-Identifier: MIT */
/*
 * kfdemu only (fault-timeout.conf): a SUSPEND_QUEUES whose unmap fence
 * never comes back. unmap_queues_cpsch waits queue_preemption_timeout_ms
 * in amdkfd_fence_wait_timeout, then kfd_hws_hang marks every process with
 * a queue on the GPU and resets the GPU, whose pre-reset step evicts every
 * process's queues on every GPU for good (kfd_suspend_all_processes) and
 * sets the HW exception events of every process with the GPU
 * (kfd_signal_reset_event).
 * suspend_queues ORs ERROR into the device's slots and does not count them;
 * the GPU's SMI event fds get GPU_PRE_RESET and GPU_POST_RESET records
 * (kfd_smi_event_update_gpu_reset) — kfd-interface.md §4.1, §16.1, §16.8.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "conf-helpers.h"

#define TIMEOUT_MS 300 /* QueuePreemptionTimeoutMs of fault-timeout.conf */
/* Work that outlasts the test (the ring holds 64 packets). */
#define KERNEL_NS 20000000ull
#define KERNELS 60u
#define CONF_QUEUE_ERROR (1u << KFD_DBG_QUEUE_ERROR_BIT)

static uint64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#define RESET_EVENTS \
        (KFD_SMI_EVENT_MASK_FROM_INDEX(KFD_SMI_EVENT_GPU_PRE_RESET) | \
         KFD_SMI_EVENT_MASK_FROM_INDEX(KFD_SMI_EVENT_GPU_POST_RESET))

/* AMDKFD_IOC_SMI_EVENTS: a new fd watching `gpu_id`, or -errno. */
static int smi_open(uint32_t gpu_id)
{
        struct kfd_ioctl_smi_events_args a = { .gpuid = gpu_id, .anon_fd = UINT32_MAX };
        long r = conf_ioctl(conf_kfd(), AMDKFD_IOC_SMI_EVENTS, &a);
        return r < 0 ? (int)r : (int)a.anon_fd;
}

static int smi_subscribe(int fd, uint64_t events)
{
        return write(fd, &events, sizeof(events)) == (ssize_t)sizeof(events) ? 0 : -errno;
}

/* kfd_ioctl_smi_events and the fd's read and write (§16.8). */
static void smi_fd_rules(void **state)
{
        struct conf_session *s = *state;
        uint64_t mask = RESET_EVENTS;
        char buf[64];

        assert_int_equal(smi_open(0x1), -EINVAL);
        _cleanup_close_ int fd = smi_open(s->gpu_ids[0]);
        assert_true(fd >= 0);
        /* anon_inode_getfd: no close-on-exec. */
        assert_int_equal(fcntl(fd, F_GETFD), 0);
        /* Nothing queued: EAGAIN even on a blocking fd. */
        assert_int_equal(read(fd, buf, sizeof(buf)), -1);
        assert_int_equal(errno, EAGAIN);
        /* A mask is 8 bytes: fewer is EFAULT, more takes the first 8. */
        assert_int_equal(write(fd, &mask, 4), -1);
        assert_int_equal(errno, EFAULT);
        char longer[12] = { 0 };
        memcpy(longer, &mask, sizeof(mask));
        assert_int_equal(write(fd, longer, sizeof(longer)), (ssize_t)sizeof(mask));
}

/* Reads what an SMI fd has queued within `timeout_ms`; returns the bytes. */
static ssize_t smi_read_within(int fd, char *buf, size_t size, int timeout_ms)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, timeout_ms) != 1)
                return -ETIMEDOUT;
        ssize_t n = read(fd, buf, size - 1);
        if (n >= 0)
                buf[n] = '\0';
        return n < 0 ? -errno : n;
}

/* A queue on `gpu_id` of `t` that has started its work. */
static void busy_queue(struct conf_target *t, uint32_t gpu_id, struct conf_queue *q)
{
        assert_int_equal(conf_target_create_queue(t, gpu_id, q), 0);
        assert_int_equal(conf_target_submit(t, q->id, KERNEL_NS, KERNELS), KERNELS);
        assert_int_equal(conf_wait_u64_at_least(t, q->rptr, 1, CONF_REPLY_TIMEOUT_MS), 0);
}

static void timeout_resets_the_gpu(void **state)
{
        struct conf_session *s = *state, other;
        struct conf_queue q0, q1, oq;

        /* The target has a queue on each GPU; another process, not
         * debugged, has one on GPU 0. Both listen for GPU resets as ROCr
         * does. */
        long ev = conf_target_call(&s->target, "hw-event");
        assert_true(ev > 0);
        busy_queue(&s->target, s->gpu_ids[0], &q0);
        busy_queue(&s->target, s->gpu_ids[1], &q1);
        conf_session_init(&other);
        assert_int_equal(conf_session_spawn(&other, true), 0);
        long oev = conf_target_call(&other.target, "hw-event");
        assert_true(oev > 0);
        busy_queue(&other.target, s->gpu_ids[0], &oq);
        assert_int_equal(conf_dbg_clear_new(conf_kfd(), s->target.pid), 0);
        _cleanup_close_ int smi0 = smi_open(s->gpu_ids[0]);
        _cleanup_close_ int smi1 = smi_open(s->gpu_ids[1]);
        _cleanup_close_ int unsubscribed = smi_open(s->gpu_ids[0]);
        assert_true(smi0 >= 0 && smi1 >= 0 && unsubscribed >= 0);
        assert_int_equal(smi_subscribe(smi0, RESET_EVENTS), 0);
        assert_int_equal(smi_subscribe(smi1, RESET_EVENTS), 0);

        uint32_t id = q0.id;
        uint64_t start = now_ms();
        long r = conf_dbg_suspend(conf_kfd(), s->target.pid, &id, 1, 0);
        uint64_t took = now_ms() - start;
        assert_int_equal(r, 0);
        assert_int_equal(id, q0.id | CONF_QUEUE_ERROR);
        if (took < TIMEOUT_MS)
                fail_msg("SUSPEND returned after %lu ms, before the %d ms fence timeout", (unsigned long)took,
                         TIMEOUT_MS);

        /* Both processes on GPU 0 hear of the reset. Its pre-reset step
         * evicted every process's queues on every GPU and nothing restores
         * them (kfd_suspend_all_processes, kgd2kfd_post_reset): the
         * target's queue on GPU 1 stops too. */
        assert_int_equal(conf_target_call(&s->target, "wait-event %ld %d", ev, CONF_REPLY_TIMEOUT_MS / 2),
                         KFD_IOC_WAIT_RESULT_COMPLETE);
        assert_int_equal(conf_target_call(&other.target, "wait-event %ld %d", oev, CONF_REPLY_TIMEOUT_MS / 2),
                         KFD_IOC_WAIT_RESULT_COMPLETE);
        assert_true(conf_u64_stays(&s->target, q0.rptr, 100));
        assert_true(conf_u64_stays(&other.target, oq.rptr, 100));
        assert_true(conf_u64_stays(&s->target, q1.rptr, 100));

        /* GPU 0's first reset: "<event> <reset number>" before and after. */
        char records[256];
        assert_true(smi_read_within(smi0, records, sizeof(records), CONF_REPLY_TIMEOUT_MS) > 0);
        assert_string_equal(records, "3 1\n4 1\n");
        assert_int_equal(smi_read_within(smi1, records, sizeof(records), 100), -ETIMEDOUT);
        assert_int_equal(smi_read_within(unsubscribed, records, sizeof(records), 100), -ETIMEDOUT);

        /* Only the first preemption failed: GPU 1's queue suspends, and its
         * resume counts it without mapping it again (resume_single_queue:
         * QUEUE_IS_ACTIVE is false for an evicted queue). */
        id = q1.id;
        assert_int_equal(conf_dbg_suspend(conf_kfd(), s->target.pid, &id, 1, 0), 1);
        assert_int_equal(id, q1.id);
        assert_int_equal(conf_dbg_resume(conf_kfd(), s->target.pid, &id, 1), 1);
        assert_int_equal(id, q1.id);
        assert_true(conf_u64_stays(&s->target, q1.rptr, 100));
        conf_session_end(&other);
}

int main(int argc, char **argv)
{
        conf_init(argc, argv);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(smi_fd_rules, conf_fixture_attached, conf_fixture_end),
                cmocka_unit_test_setup_teardown(timeout_resets_the_gpu, conf_fixture_attached, conf_fixture_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
