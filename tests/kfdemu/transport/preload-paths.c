/* SPDX-License-Identifier: MIT */
/*
 * Path interposers: open("/dev/kfd") and open("/dev/dri/renderD<minor>")
 * become connections to the server;
 * the KFD's sysfs and debugfs, and amdgpu's module parameters, are read
 * from the tree the server renders under $KFDEMU_ROOT. Everything else goes
 * to libc untouched.
 *
 * glibc's own internal calls (opendir inside scandir, open inside fopen or
 * nftw) do not pass through here, which is why fopen and opendir are
 * interposed themselves.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload.h"

#define KFD_DEVICE "/dev/kfd"
#define RENDER_NODE_PREFIX "/dev/dri/renderD"

static const char *const redirected_trees[] = {
        "/sys/class/kfd/kfd",
        "/sys/devices/virtual/kfd/kfd",
        "/sys/kernel/debug/kfd",
        "/sys/module/amdgpu/parameters",
};

bool preload_is_kfd_device(const char *path)
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

        if (preload_is_kfd_device(path)) {
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

static bool under(const char *path, const char *tree)
{
        size_t n = strlen(tree);

        return strncmp(path, tree, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The DRM character devices' sysfs entries (226:<minor>): the emulated
 * render nodes' own, in place of the host's. */
#define DRM_CHAR_SYSFS_PREFIX "/sys/dev/char/226:"

const char *preload_redirect_path(const char *path, char *buf)
{
        const char *root = preload_root_path();

        if (!path || !root || path[0] != '/')
                return path;
        if (strncmp(path, DRM_CHAR_SYSFS_PREFIX, strlen(DRM_CHAR_SYSFS_PREFIX)) == 0)
                return (size_t)snprintf(buf, PATH_MAX, "%s%s", root, path) < PATH_MAX ? buf : path;
        /* stat/access of the device node itself: the server's socket stands
         * in for it (exists, readable and writable by the node's users). */
        if (preload_is_kfd_device(path))
                return preload_socket_path();
        for (size_t i = 0; i < sizeof(redirected_trees) / sizeof(redirected_trees[0]); i++)
                if (under(path, redirected_trees[i])) {
                        if ((size_t)snprintf(buf, PATH_MAX, "%s%s", root, path) >= PATH_MAX)
                                return path;
                        preload_refresh_on_read(path);
                        return buf;
                }
        return path;
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
        char buf[PATH_MAX];
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        return REAL(open)(preload_redirect_path(path, buf), flags, mode);
}

PRELOAD_EXPORT int open64(const char *path, int flags, ...)
{
        mode_t mode = OPEN_MODE(flags);
        char buf[PATH_MAX];
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        return REAL(open64)(preload_redirect_path(path, buf), flags, mode);
}

PRELOAD_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
        mode_t mode = OPEN_MODE(flags);
        char buf[PATH_MAX];
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        return REAL(openat)(dirfd, preload_redirect_path(path, buf), flags, mode);
}

PRELOAD_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
        mode_t mode = OPEN_MODE(flags);
        char buf[PATH_MAX];
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        return REAL(openat64)(dirfd, preload_redirect_path(path, buf), flags, mode);
}

/* The _FORTIFY_SOURCE entry points (no mode: they reject O_CREAT). */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

PRELOAD_EXPORT int __open_2(const char *path, int flags)
{
        char buf[PATH_MAX];
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        return REAL(__open_2)(preload_redirect_path(path, buf), flags);
}

PRELOAD_EXPORT int __open64_2(const char *path, int flags)
{
        char buf[PATH_MAX];
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        return REAL(__open64_2)(preload_redirect_path(path, buf), flags);
}

PRELOAD_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
        char buf[PATH_MAX];
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        return REAL(__openat_2)(dirfd, preload_redirect_path(path, buf), flags);
}

PRELOAD_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
        char buf[PATH_MAX];
        int fd;

        if (open_device(path, flags, &fd))
                return fd;
        return REAL(__openat64_2)(dirfd, preload_redirect_path(path, buf), flags);
}

PRELOAD_EXPORT FILE *fopen(const char *path, const char *mode)
{
        char buf[PATH_MAX];

        return REAL(fopen)(preload_redirect_path(path, buf), mode);
}

PRELOAD_EXPORT FILE *fopen64(const char *path, const char *mode)
{
        char buf[PATH_MAX];

        return REAL(fopen64)(preload_redirect_path(path, buf), mode);
}

PRELOAD_EXPORT DIR *opendir(const char *path)
{
        char buf[PATH_MAX];

        return REAL(opendir)(preload_redirect_path(path, buf));
}

PRELOAD_EXPORT int stat(const char *path, struct stat *st)
{
        char buf[PATH_MAX];

        return REAL(stat)(preload_redirect_path(path, buf), st);
}

PRELOAD_EXPORT int stat64(const char *path, struct stat64 *st)
{
        char buf[PATH_MAX];

        return REAL(stat64)(preload_redirect_path(path, buf), st);
}

PRELOAD_EXPORT int lstat(const char *path, struct stat *st)
{
        char buf[PATH_MAX];

        return REAL(lstat)(preload_redirect_path(path, buf), st);
}

PRELOAD_EXPORT int lstat64(const char *path, struct stat64 *st)
{
        char buf[PATH_MAX];

        return REAL(lstat64)(preload_redirect_path(path, buf), st);
}

PRELOAD_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
        char buf[PATH_MAX];

        return REAL(fstatat)(dirfd, preload_redirect_path(path, buf), st, flags);
}

PRELOAD_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
        char buf[PATH_MAX];

        return REAL(fstatat64)(dirfd, preload_redirect_path(path, buf), st, flags);
}

PRELOAD_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *st)
{
        char buf[PATH_MAX];

        return REAL(statx)(dirfd, preload_redirect_path(path, buf), flags, mask, st);
}

PRELOAD_EXPORT int access(const char *path, int amode)
{
        char buf[PATH_MAX];

        return REAL(access)(preload_redirect_path(path, buf), amode);
}

PRELOAD_EXPORT int faccessat(int dirfd, const char *path, int amode, int flags)
{
        char buf[PATH_MAX];

        return REAL(faccessat)(dirfd, preload_redirect_path(path, buf), amode, flags);
}

PRELOAD_EXPORT ssize_t readlink(const char *path, char *target, size_t size)
{
        char buf[PATH_MAX];

        return REAL(readlink)(preload_redirect_path(path, buf), target, size);
}
