/* SPDX-License-Identifier: MIT */
#include "kfd.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>

#include "cleanup.h"
#include <gpreempt/gpreempt.h>
#include "kfd-abi.h"

int kfd_ioctl(int fd, unsigned long request, void *arg)
{
        int r;

        /* A signal can interrupt the sleeping handlers (SUSPEND waiting for
         * the preemption, the dqm lock); the kernel then returns EINTR
         * before doing anything, so the call is safe to repeat. */
        do
                r = ioctl(fd, request, arg);
        while (r < 0 && errno == EINTR);

        return r < 0 ? NEG_ERRNO() : r;
}

int kfd_get_version(int fd, uint32_t *ret_major, uint32_t *ret_minor)
{
        struct kfd_ioctl_get_version_args version = { 0 };
        int r;

        r = kfd_ioctl(fd, AMDKFD_IOC_GET_VERSION, &version);
        if (r < 0)
                return r;
        *ret_major = version.major_version;
        *ret_minor = version.minor_version;
        return 0;
}

int kfd_open(const char *path, int *ret_fd, uint32_t *ret_major, uint32_t *ret_minor)
{
        _cleanup_close_ int fd = -1;
        uint32_t major, minor;
        int r;

        /* The library's own file: kfd_ioctl rejects a file opened by another
         * process (its kfd_process lead thread differs) with EBADF, so one
         * inherited over fork or passed in is useless; O_CLOEXEC keeps it
         * from leaking into the caller's children. */
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return NEG_ERRNO();

        r = kfd_get_version(fd, &major, &minor);
        if (r < 0)
                return r;

        /* The debugger API arrived in 1.13 (Linux 6.5); a major other than 1
         * would be a new, unknown ABI (ROCdbgapi's check_version agrees). */
        if (major != GP_KFD_MIN_MAJOR || minor < GP_KFD_MIN_MINOR)
                return -GP_ERR_KFD_TOO_OLD;

        *ret_fd = TAKE_FD(fd);
        *ret_major = major;
        *ret_minor = minor;
        return 0;
}
