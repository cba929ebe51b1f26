/* SPDX-License-Identifier: MIT */
/*
 * Path interposers: open("/dev/kfd") and open("/dev/dri/renderD<minor>")
 * become connections to the server, and an open of a file the kernel generates when it is read has the server
 * render it first (preload-refresh.c). Everything else goes to libc
 * untouched: kfdemu-run mounts the node's sysfs, debugfs and /dev/kfd
 * where the kernel's would be, for every reader (node-mounts.c).
 *
 * glibc's own internal calls (open inside fopen) do not pass through
 * here, which is why fopen is interposed itself.
 */
#include <fcntl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload.h"
#include "protocol.h"

#define RENDER_NODE_PREFIX "/dev/dri/renderD"

static bool is_kfd_device(const char *path)
{
        return path && preload_socket_path() && strcmp(path, KFD_DEVICE) == 0;
}

/* /dev/dri/renderD<minor>, the minor in canonical decimal: the server says
 * which minors exist (ENOENT for the others, as for a missing node). */
static bool is_render_node(const char *path, uint32_t *ret_minor)
{
        const char *digits;
        unsigned long minor;
        char *end;

        if (!path || !preload_socket_path() || strncmp(path, RENDER_NODE_PREFIX, strlen(RENDER_NODE_PREFIX)) != 0)
                return false;
        digits = path + strlen(RENDER_NODE_PREFIX);
        if (digits[0] < '1' || digits[0] > '9')
                return false;
        errno = 0;
        minor = strtoul(digits, &end, 10);
        if (*end != '\0' || errno || minor > UINT32_MAX)
                return false;
        *ret_minor = (uint32_t)minor;
        return true;
}

/* open of an emulated device: true, with the fd (or -1 and errno) in *ret_fd. */
static bool open_device(const char *path, int flags, int *ret_fd)
{
        uint32_t minor;
        int saved_errno = errno;

        if (is_kfd_device(path)) {
                *ret_fd = preload_device_open(0, flags);
                return true;
        }
        if (is_render_node(path, &minor)) {
                *ret_fd = preload_device_open(minor, flags);
                return true;
        }
        errno = saved_errno;
        return false;
}

/* What an open of any path does before libc's. */
static void before_open(const char *path)
{
        if (path && preload_socket_path())
                preload_refresh_on_read(path);
}

/* open(2)'s mode argument exists only when the flags ask for one. */
#define OPEN_MODE(flags)                                                         \
        ({                                                                       \
                mode_t mode_ = 0;                                                \
                if (__OPEN_NEEDS_MODE(flags)) {                                  \
                        va_list ap_;                                             \
                        va_start(ap_, flags);                                    \
                        mode_ = (mode_t)va_arg(ap_, int);                        \
                        va_end(ap_);                                             \
                }                                                                \
                mode_;                                                           \
        })

PRELOAD_EXPORT int open(const char *path, int flags, ...)
{
        mode_t mode = OPEN_MODE(flags);
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        before_open(path);
        return REAL(open)(path, flags, mode);
}

PRELOAD_EXPORT int open64(const char *path, int flags, ...)
{
        mode_t mode = OPEN_MODE(flags);
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        before_open(path);
        return REAL(open64)(path, flags, mode);
}

PRELOAD_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
        mode_t mode = OPEN_MODE(flags);
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        before_open(path);
        return REAL(openat)(dirfd, path, flags, mode);
}

PRELOAD_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
        mode_t mode = OPEN_MODE(flags);
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        before_open(path);
        return REAL(openat64)(dirfd, path, flags, mode);
}

/* The _FORTIFY_SOURCE entry points (no mode: they reject O_CREAT). */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

PRELOAD_EXPORT int __open_2(const char *path, int flags)
{
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        before_open(path);
        return REAL(__open_2)(path, flags);
}

PRELOAD_EXPORT int __open64_2(const char *path, int flags)
{
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        before_open(path);
        return REAL(__open64_2)(path, flags);
}

PRELOAD_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        before_open(path);
        return REAL(__openat_2)(dirfd, path, flags);
}

PRELOAD_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        before_open(path);
        return REAL(__openat64_2)(dirfd, path, flags);
}

PRELOAD_EXPORT FILE *fopen(const char *path, const char *mode)
{
        before_open(path);
        return REAL(fopen)(path, mode);
}

PRELOAD_EXPORT FILE *fopen64(const char *path, const char *mode)
{
        before_open(path);
        return REAL(fopen64)(path, mode);
}
