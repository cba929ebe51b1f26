/* SPDX-License-Identifier: MIT */
/*
 * ioctl and mmap on a kfdemu file. The preload understands no ioctl: it
 * forwards any request of type 'K' made on a socket and lets the server say
 * whether that socket is one of its files ("not mine": the real syscall
 * runs, so an application's own sockets are unaffected).
 */
#include <errno.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "kfd-abi.h"
#include "preload.h"
#include "protocol.h"

/* The kernel's internal restart codes (include/linux/errno.h): the signal
 * code restarts the syscall after a handler with SA_RESTART
 * (preload-signals.c tells) and turns them into EINTR otherwise. */
#define KERNEL_ERESTARTSYS 512
#define KERNEL_ERESTART_RESTARTBLOCK 516

static bool forward_candidate(int fd, uint64_t *ret_inode)
{
        if (!preload_socket_path())
                return false;
        *ret_inode = preload_socket_inode(fd);
        return *ret_inode != 0;
}

/* Forwards the ioctl; false if the server says the fd is not a kfd file. */
static bool kfd_ioctl(uint64_t inode, unsigned long request, void *arg, int *ret)
{
        struct kfdemu_msg_ioctl msg = {
                .type = KFDEMU_MSG_IOCTL,
                .cmd = (uint32_t)request,
                .file_inode = inode,
                .arg = (uint64_t)(uintptr_t)arg,
        };
        struct kfdemu_reply reply;
        ssize_t n;
        long result;

        for (;;) {
                struct timespec entered;

                /* a restarted call enters the kernel again */
                clock_gettime(CLOCK_MONOTONIC, &entered);
                msg.entered_ns = (uint64_t)entered.tv_sec * 1000000000u + (uint64_t)entered.tv_nsec;
                n = preload_call(&msg, sizeof(msg), true, &reply, sizeof(reply), NULL, 0, NULL);
                if (n >= 0 && (size_t)n != sizeof(reply))
                        n = -EIO;
                if (n >= 0 && reply.status == KFDEMU_REPLY_NOT_MINE)
                        return false;
                result = n < 0 ? n : reply.result;
                if (result > -KERNEL_ERESTARTSYS || result < -KERNEL_ERESTART_RESTARTBLOCK)
                        break;
                /* The handler has run; the same ioctl starts over. */
                if (!preload_call_interrupt_restarts()) {
                        result = -EINTR;
                        break;
                }
        }
        if (result < 0) {
                errno = (int)-result;
                *ret = -1;
        } else {
                *ret = (int)result;
        }
        return true;
}

PRELOAD_EXPORT int ioctl(int fd, unsigned long request, ...)
{
        va_list ap;
        void *arg;
        uint64_t inode;
        int ret;

        va_start(ap, request);
        arg = va_arg(ap, void *);
        va_end(ap);

        if (_IOC_TYPE(request) == AMDKFD_IOCTL_BASE && forward_candidate(fd, &inode) &&
            kfd_ioctl(inode, request, arg, &ret))
                return ret;
        return REAL(ioctl)(fd, request, arg);
}

static void close_fds(const int *fds, unsigned n)
{
        for (unsigned i = 0; i < n; i++)
                close(fds[i]);
}

/* Maps the server's segments back to back in one reservation, so the
 * caller gets one contiguous mapping as from kfd_mmap's remap_pfn_range. */
static void *map_segments(void *addr, size_t length, int prot, int flags, const struct kfdemu_reply_mmap *reply,
                          const int *fds)
{
        uint64_t total = 0;

        for (unsigned i = 0; i < reply->n_segments; i++)
                total += reply->segments[i].length;
        if (total != length) {
                errno = EIO;
                return MAP_FAILED;
        }

        void *base = REAL(mmap)(addr, length, PROT_NONE,
                                MAP_PRIVATE | MAP_ANONYMOUS | (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)), -1, 0);
        if (base == MAP_FAILED)
                return MAP_FAILED;
        size_t at = 0;
        for (unsigned i = 0; i < reply->n_segments; i++) {
                void *p = REAL(mmap)((char *)base + at, reply->segments[i].length, prot, MAP_SHARED | MAP_FIXED,
                                     fds[i], (off_t)reply->segments[i].memfd_offset);
                if (p == MAP_FAILED) {
                        int saved = errno;
                        munmap(base, length);
                        errno = saved;
                        return MAP_FAILED;
                }
                at += reply->segments[i].length;
        }
        return base;
}

/* Forwards the mmap; false if the server says the fd is not a kfd file. */
static bool kfd_mmap(uint64_t inode, void *addr, size_t length, int prot, int flags, off_t offset, void **ret)
{
        struct kfdemu_msg_mmap msg = {
                .type = KFDEMU_MSG_MMAP,
                .file_inode = inode,
                .offset = (uint64_t)offset,
                .length = length,
        };
        struct kfdemu_reply_mmap reply;
        int fds[KFDEMU_MMAP_MAX_SEGMENTS];
        unsigned n_fds = 0;
        ssize_t n = preload_call(&msg, sizeof(msg), false, &reply, sizeof(reply), fds, KFDEMU_MMAP_MAX_SEGMENTS,
                                 &n_fds);

        if (n >= 0 && (size_t)n != sizeof(reply))
                n = -EIO;
        if (n >= 0 && reply.status == KFDEMU_REPLY_NOT_MINE) {
                close_fds(fds, n_fds);
                return false;
        }
        if (n >= 0 && reply.result >= 0 && (reply.n_segments != n_fds || n_fds == 0))
                n = -EIO;
        if (n < 0 || reply.result < 0) {
                errno = (int)(n < 0 ? -n : -reply.result);
                *ret = MAP_FAILED;
        } else {
                *ret = map_segments(addr, length, prot, flags, &reply, fds);
        }
        close_fds(fds, n_fds);
        return true;
}

PRELOAD_EXPORT void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
        uint64_t inode;
        void *ret;

        if (!(flags & MAP_ANONYMOUS) && forward_candidate(fd, &inode) &&
            kfd_mmap(inode, addr, length, prot, flags, offset, &ret))
                return ret;
        return REAL(mmap)(addr, length, prot, flags, fd, offset);
}

PRELOAD_EXPORT void *mmap64(void *addr, size_t length, int prot, int flags, int fd, off64_t offset)
{
        uint64_t inode;
        void *ret;

        if (!(flags & MAP_ANONYMOUS) && forward_candidate(fd, &inode) &&
            kfd_mmap(inode, addr, length, prot, flags, offset, &ret))
                return ret;
        return REAL(mmap64)(addr, length, prot, flags, fd, offset);
}
