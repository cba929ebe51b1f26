/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kfd-test.h"

int kfd_test_ioctl(int fd, unsigned long request, void *arg)
{
        return ioctl(fd, request, arg) < 0 ? -errno : 0;
}

int kfd_test_get_version(int fd)
{
        struct kfd_ioctl_get_version_args args = { 0 };
        int r = kfd_test_ioctl(fd, AMDKFD_IOC_GET_VERSION, &args);

        if (r < 0)
                return r;
        return args.major_version == 1 && args.minor_version == 13 ? 0 : -EPROTO;
}

uint32_t kfd_test_gpu_id(unsigned node)
{
        char path[128];
        unsigned id = 0;

        snprintf(path, sizeof(path), "/sys/class/kfd/kfd/topology/nodes/%u/gpu_id", node);
        FILE *f = fopen(path, "re");
        if (!f)
                return 0;
        if (fscanf(f, "%u", &id) != 1)
                id = 0;
        fclose(f);
        return id;
}

/* A decimal key of topology node `node`'s properties, or -1. */
static long long node_property(unsigned node, const char *key)
{
        char path[128], name[64];
        unsigned long long value;
        long long found = -1;

        snprintf(path, sizeof(path), "/sys/class/kfd/kfd/topology/nodes/%u/properties", node);
        FILE *f = fopen(path, "re");
        if (!f)
                return -1;
        while (fscanf(f, "%63s %llu", name, &value) == 2)
                if (strcmp(name, key) == 0)
                        found = (long long)value;
        fclose(f);
        return found;
}

int kfd_test_acquire_vms(int kfd)
{
        /* One render fd per minor for the process's lifetime; a forked
         * child is another process and opens its own. */
        static int render_fds[256];
        static pid_t opened_by;

        if (opened_by != getpid()) {
                memset(render_fds, 0, sizeof(render_fds));
                opened_by = getpid();
        }
        for (unsigned node = 1; kfd_test_gpu_id(node) != 0; node++) {
                long long minor = node_property(node, "drm_render_minor");
                char path[64];

                if (minor < 128 || minor > 255)
                        return -EBADMSG;
                if (render_fds[minor] == 0) {
                        snprintf(path, sizeof(path), "/dev/dri/renderD%lld", minor);
                        int fd = open(path, O_RDWR | O_CLOEXEC);
                        if (fd < 0)
                                return -errno;
                        render_fds[minor] = fd;
                }
                struct kfd_ioctl_acquire_vm_args args = { .drm_fd = (uint32_t)render_fds[minor],
                                                          .gpu_id = kfd_test_gpu_id(node) };
                int r = kfd_test_ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &args);
                if (r < 0)
                        return r;
        }
        return 0;
}

bool kfd_test_proc_dir_exists(pid_t pid)
{
        char path[128];
        struct stat st;

        snprintf(path, sizeof(path), "/sys/class/kfd/kfd/proc/%d", (int)pid);
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool kfd_test_wait_proc_dir(pid_t pid, bool present, unsigned timeout_ms)
{
        for (unsigned waited = 0;; waited += 5) {
                if (kfd_test_proc_dir_exists(pid) == present)
                        return true;
                if (waited >= timeout_ms)
                        return false;
                nanosleep(&(struct timespec){ .tv_nsec = 5000000 }, NULL);
        }
}

static int open_event_fifo(void)
{
        char dir[] = "/tmp/kfdemu-test.XXXXXX", path[64];
        int fd = -1;

        if (!mkdtemp(dir))
                return -errno;
        snprintf(path, sizeof(path), "%s/events", dir);
        if (mkfifo(path, 0600) == 0)
                fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        int r = fd < 0 ? -errno : fd;
        unlink(path);
        rmdir(dir);
        return r;
}

int kfd_test_self_debug_fd(int kfd, int event_fd)
{
        struct kfd_runtime_info rinfo;
        struct kfd_ioctl_dbg_trap_args args = {
                .pid = (uint32_t)getpid(),
                .op = KFD_IOC_DBG_TRAP_ENABLE,
                .enable = { .exception_mask = KFD_EC_MASK(EC_PROCESS_RUNTIME), .rinfo_ptr = (uintptr_t)&rinfo,
                            .rinfo_size = sizeof(rinfo), .dbg_fd = (uint32_t)event_fd },
        };

        return kfd_test_ioctl(kfd, AMDKFD_IOC_DBG_TRAP, &args);
}

int kfd_test_self_debug(struct kfd_test_debuggee *ret)
{
        struct kfd_test_debuggee d = { .kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC) };
        int r;

        if (d.kfd < 0)
                return -errno;
        d.event_fifo = open_event_fifo();
        if (d.event_fifo < 0) {
                close(d.kfd);
                return d.event_fifo;
        }
        r = kfd_test_self_debug_fd(d.kfd, d.event_fifo);
        if (r < 0) {
                close(d.event_fifo);
                close(d.kfd);
                return r;
        }
        *ret = d;
        return 0;
}

int kfd_test_wait_event(const struct kfd_test_debuggee *d)
{
        struct pollfd pfd = { .fd = d->event_fifo, .events = POLLIN };
        char byte;

        int n = poll(&pfd, 1, 5000);
        if (n < 0)
                return -errno;
        if (n == 0)
                return -ETIMEDOUT;
        if (read(d->event_fifo, &byte, 1) != 1 || byte != '.')
                return -EIO;
        return 0;
}

int kfd_test_runtime_enable(int kfd, bool enable)
{
        struct kfd_ioctl_runtime_enable_args args = {
                .mode_mask = enable ? KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK : 0,
        };

        return kfd_test_ioctl(kfd, AMDKFD_IOC_RUNTIME_ENABLE, &args);
}

int kfd_test_ack_runtime(int kfd)
{
        struct kfd_ioctl_dbg_trap_args args = {
                .pid = (uint32_t)getpid(),
                .op = KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT,
                .send_runtime_event.exception_mask = KFD_EC_MASK(EC_PROCESS_RUNTIME),
        };

        return kfd_test_ioctl(kfd, AMDKFD_IOC_DBG_TRAP, &args);
}

int kfd_test_end_self_debug(struct kfd_test_debuggee *d)
{
        struct kfd_ioctl_dbg_trap_args disable = { .pid = (uint32_t)getpid(), .op = KFD_IOC_DBG_TRAP_DISABLE };
        int r = kfd_test_ioctl(d->kfd, AMDKFD_IOC_DBG_TRAP, &disable);

        if (r == 0)
                r = kfd_test_runtime_enable(d->kfd, false);
        close(d->event_fifo);
        close(d->kfd);
        return r;
}


static void *runtime_enable_thread(void *arg)
{
        int *kfd_and_result = arg;

        kfd_and_result[1] = kfd_test_runtime_enable(kfd_and_result[0], true);
        return NULL;
}

int kfd_test_self_debug_with_runtime(struct kfd_test_debuggee *ret)
{
        int kfd_and_result[2];
        pthread_t thread;
        int r = kfd_test_self_debug(ret);

        if (r < 0)
                return r;
        kfd_and_result[0] = ret->kfd;
        if (pthread_create(&thread, NULL, runtime_enable_thread, kfd_and_result) != 0)
                return -EAGAIN;
        r = kfd_test_wait_event(ret);
        if (r == 0)
                r = kfd_test_ack_runtime(ret->kfd);
        pthread_join(thread, NULL);
        return r < 0 ? r : kfd_and_result[1];
}

static struct {
        uint64_t rptr, wptr;
        uint8_t ring[256] __attribute__((aligned(256)));
} queue_memory[8];
static unsigned queue_memory_next;

/* DBG_TRAP on ourselves; SUSPEND and RESUME return a count. */
static int dbg_trap_self(int kfd, uint32_t op, struct kfd_ioctl_dbg_trap_args *args)
{
        args->pid = (uint32_t)getpid();
        args->op = op;
        int r = ioctl(kfd, AMDKFD_IOC_DBG_TRAP, args);
        return r < 0 ? -errno : r;
}

int kfd_test_create_suspended_queue(int kfd, uint32_t gpu_id, uint32_t *ret_id)
{
        typeof(queue_memory[0]) *m = &queue_memory[queue_memory_next++ % 8];
        struct kfd_ioctl_create_queue_args q = {
                .ring_base_address = (uintptr_t)m->ring,
                .write_pointer_address = (uintptr_t)&m->wptr,
                .read_pointer_address = (uintptr_t)&m->rptr,
                .ring_size = sizeof(m->ring),
                .gpu_id = gpu_id,
                .queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
                .queue_percentage = 100,
        };
        struct kfd_ioctl_dbg_trap_args snapshot = {
                .queue_snapshot = { .exception_mask = KFD_EC_MASK(EC_QUEUE_NEW), .num_queues = 0,
                                    .entry_size = sizeof(struct kfd_queue_snapshot_entry) },
        };
        struct kfd_queue_snapshot_entry entries[64];
        int r = kfd_test_acquire_vms(kfd);

        if (r < 0)
                return r;
        r = kfd_test_ioctl(kfd, AMDKFD_IOC_CREATE_QUEUE, &q);

        if (r < 0)
                return r;
        snapshot.queue_snapshot.snapshot_buf_ptr = (uintptr_t)entries;
        snapshot.queue_snapshot.num_queues = 64;
        r = dbg_trap_self(kfd, KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT, &snapshot);
        if (r < 0)
                return r;
        uint32_t ids[1] = { q.queue_id };
        struct kfd_ioctl_dbg_trap_args suspend = {
                .suspend_queues = { .queue_array_ptr = (uintptr_t)ids, .num_queues = 1 },
        };
        r = dbg_trap_self(kfd, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES, &suspend);
        if (r != 1)
                return r < 0 ? r : -EBUSY;
        *ret_id = q.queue_id;
        return 0;
}

int kfd_test_resume_all(int kfd)
{
        struct kfd_ioctl_dbg_trap_args resume = { .resume_queues = { .queue_array_ptr = 0 } };

        return dbg_trap_self(kfd, KFD_IOC_DBG_TRAP_RESUME_QUEUES, &resume);
}

bool kfd_test_wait_syscall(pid_t tid, long nr, unsigned timeout_ms)
{
        for (unsigned waited = 0; waited < timeout_ms; waited += 5) {
                char path[64], buf[256] = "";
                FILE *f;

                snprintf(path, sizeof(path), "/proc/%d/syscall", (int)tid);
                f = fopen(path, "re");
                if (f) {
                        bool got = fgets(buf, sizeof(buf), f) != NULL;
                        fclose(f);
                        if (got && strtol(buf, NULL, 10) == nr)
                                return true;
                }
                usleep(5000);
        }
        return false;
}
