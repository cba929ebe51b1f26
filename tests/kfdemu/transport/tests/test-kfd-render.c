/* SPDX-License-Identifier: MIT */
/*
 * sysfs and debugfs as the preload and server keep them: a queue's
 * queues/<id> directory appears and goes with the ioctl, at a cost that
 * does not grow with the number of queues (kfd_procfs_add_queue is O(1));
 * the files the kernel generates on read (debugfs mqds/hqds/rls,
 * cu_occupancy) are rendered when they are opened, not on every change.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kfd-test.h"

/* The per-process limit of gfx942 (GC 9.4.3): 255 queues per device. */
#define QUEUES_PER_GPU 255
/* Far above what rendering the queues one by one takes, even under
 * sanitizers on a loaded host, and far below what re-rendering everything
 * at each queue took (docs/benchmarks/kfdemu.md). */
#define CREATE_DESTROY_BUDGET_S 20

struct queue_memory {
        uint64_t rptr, wptr;
        uint8_t ring[256] __attribute__((aligned(256)));
};

static struct queue_memory memory[2 * QUEUES_PER_GPU];

static int create_queue(int kfd, uint32_t gpu_id, struct queue_memory *m, uint32_t *ret_id)
{
        struct kfd_ioctl_create_queue_args a = {
                .ring_base_address = (uintptr_t)m->ring,
                .write_pointer_address = (uintptr_t)&m->wptr,
                .read_pointer_address = (uintptr_t)&m->rptr,
                .ring_size = sizeof(m->ring),
                .gpu_id = gpu_id,
                .queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
                .queue_percentage = 100,
        };
        int r = kfd_test_acquire_vms(kfd);

        if (r == 0)
                r = kfd_test_ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &a);
        if (r == 0)
                *ret_id = a.queue_id;
        return r;
}

static int destroy_queue(int kfd, uint32_t id)
{
        struct kfd_ioctl_destroy_queue_args a = { .queue_id = id };
        return kfd_test_ioctl(kfd, AMDKFD_IOC_DESTROY_QUEUE, &a);
}

static bool queue_dir_exists(uint32_t id)
{
        char path[128];
        snprintf(path, sizeof(path), "/sys/class/kfd/kfd/proc/%d/queues/%u", (int)getpid(), id);
        return access(path, F_OK) == 0;
}

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void many_queues_come_and_go_in_linear_time(void **state)
{
        int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
        uint32_t gpus[2] = { kfd_test_gpu_id(1), kfd_test_gpu_id(2) }, ids[2 * QUEUES_PER_GPU];
        double start = now_s();

        assert_true(kfd >= 0);
        for (unsigned i = 0; i < 2 * QUEUES_PER_GPU; i++) {
                assert_int_equal(create_queue(kfd, gpus[i % 2], &memory[i], &ids[i]), 0);
                assert_true(queue_dir_exists(ids[i]));
        }
        for (unsigned i = 0; i < 2 * QUEUES_PER_GPU; i++) {
                assert_int_equal(destroy_queue(kfd, ids[i]), 0);
                assert_false(queue_dir_exists(ids[i]));
        }
        double elapsed = now_s() - start;
        if (elapsed > CREATE_DESTROY_BUDGET_S)
                fail_msg("%u queues took %.1f s to create and destroy", 2 * QUEUES_PER_GPU, elapsed);
        close(kfd);
}

/* Reads a file through libc (refreshed by the preload) or, `raw`, with
 * the system call, which sees the file as the server last left it. */
static ssize_t read_text(const char *path, bool raw, char *buf, size_t size)
{
        int fd = raw ? (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC)
                     : open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, size - 1);
        close(fd);
        if (n >= 0)
                buf[n] = '\0';
        return n;
}

/* mqds shows a queue under "Process <pid> ...:" before the next process. */
static bool process_has_queue(const char *text, const char *process)
{
        const char *p = strstr(text, process);
        if (!p)
                return false;
        const char *queue = strstr(p, "queue on device"), *next = strstr(p + 1, "Process ");
        return queue && (!next || queue < next);
}

static void debugfs_is_rendered_when_read(void **state)
{
        static char text[1 << 20];
        char process[64];
        int kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
        uint32_t id = 0;

        assert_true(kfd >= 0);
        snprintf(process, sizeof(process), "Process %d ", (int)getpid());
        assert_int_equal(create_queue(kfd, kfd_test_gpu_id(1), &memory[0], &id), 0);
        /* Nothing has read mqds since the queue came: the server has not
         * spent time on it. */
        assert_true(read_text("/sys/kernel/debug/kfd/mqds", true, text, sizeof(text)) >= 0);
        assert_null(strstr(text, process));
        /* An open renders it first. */
        assert_true(read_text("/sys/kernel/debug/kfd/mqds", false, text, sizeof(text)) > 0);
        assert_true(process_has_queue(text, process));
        assert_int_equal(destroy_queue(kfd, id), 0);
        assert_true(read_text("/sys/kernel/debug/kfd/mqds", false, text, sizeof(text)) >= 0);
        assert_false(process_has_queue(text, process));
        close(kfd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(many_queues_come_and_go_in_linear_time),
                cmocka_unit_test(debugfs_is_rendered_when_read),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
