/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
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

int kfd_test_self_debug(struct kfd_test_debuggee *ret)
{
        struct kfd_runtime_info rinfo;
        struct kfd_ioctl_dbg_trap_args args = { .pid = (uint32_t)getpid(), .op = KFD_IOC_DBG_TRAP_ENABLE };
        struct kfd_test_debuggee d = { .kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC) };
        int r;

        if (d.kfd < 0)
                return -errno;
        d.event_fifo = open_event_fifo();
        if (d.event_fifo < 0) {
                close(d.kfd);
                return d.event_fifo;
        }
        args.enable.exception_mask = KFD_EC_MASK(EC_PROCESS_RUNTIME);
        args.enable.rinfo_ptr = (uint64_t)(uintptr_t)&rinfo;
        args.enable.rinfo_size = sizeof(rinfo);
        args.enable.dbg_fd = (uint32_t)d.event_fifo;
        r = kfd_test_ioctl(d.kfd, AMDKFD_IOC_DBG_TRAP, &args);
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
