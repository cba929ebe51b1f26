/* SPDX-License-Identifier: MIT */
#include <errno.h>
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
