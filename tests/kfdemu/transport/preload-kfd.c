/* SPDX-License-Identifier: MIT */
/*
 * ioctl, mmap, fstat, read and write on a kfdemu file (/dev/kfd or an
 * amdgpu render node). The preload understands no ioctl: it forwards any
 * request of type 'K' (amdkfd's) or 'd' (DRM's) made on a socket and lets
 * the server say whether that socket is one of its files ("not mine": the
 * real syscall runs, so an application's own sockets are unaffected). read
 * and write it answers itself, as amdkfd has neither.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
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

/* include/uapi/drm/drm.h: DRM_IOCTL_BASE, and the character major of every
 * DRM node (DRM_MAJOR). */
#define DRM_IOCTL_TYPE 'd'
#define DRM_CHAR_MAJOR 226

static bool forward_candidate(int fd, uint64_t *ret_inode)
{
        if (!preload_socket_path())
                return false;
        *ret_inode = preload_socket_inode(fd);
        return *ret_inode != 0;
}

/* An fd the kernel made for the caller (anon_inode_getfd: the lowest free
 * number, without O_CLOEXEC), and its number where the kernel put it in the
 * ioctl's argument (protocol.h: kfdemu_reply.fd_arg_offset, 0 = drop it). */
static void install_new_fd(int fd, uint32_t fd_arg_offset, void *arg)
{
        uint32_t number = (uint32_t)fd;

        if (!fd_arg_offset) {
                close(fd);
                return;
        }
        (void)fcntl(fd, F_SETFD, 0);
        memcpy((char *)arg + fd_arg_offset - 1, &number, sizeof(number));
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
        int new_fd = -1;
        unsigned n_fds = 0;

        for (;;) {
                struct timespec entered;

                /* a restarted call enters the kernel again */
                clock_gettime(CLOCK_MONOTONIC, &entered);
                msg.entered_ns = (uint64_t)entered.tv_sec * 1000000000u + (uint64_t)entered.tv_nsec;
                n = preload_call(&msg, sizeof(msg), true, &reply, sizeof(reply), &new_fd, 1, &n_fds);
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
        if (n_fds)
                install_new_fd(new_fd, result >= 0 ? reply.fd_arg_offset : 0, arg);
        /* The fd the kernel made did not arrive: recvmsg found no number
         * free under RLIMIT_NOFILE and dropped it (MSG_CTRUNC). The
         * kernel's anon_inode_getfd fails so inside the ioctl: -EMFILE,
         * and nothing is written to the argument (kfd_smi_event_open). */
        if (result >= 0 && reply.fd_arg_offset && !n_fds)
                result = -EMFILE;
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

        if ((_IOC_TYPE(request) == AMDKFD_IOCTL_BASE || _IOC_TYPE(request) == DRM_IOCTL_TYPE) &&
            forward_candidate(fd, &inode) &&
            kfd_ioctl(inode, request, arg, &ret))
                return ret;
        return REAL(ioctl)(fd, request, arg);
}

static bool is_kfd_file(int fd);

/* The render minor of the socket `fd` (inode `inode`) if it is a render
 * node's file; 0 for /dev/kfd's and for any other socket. */
static uint32_t render_minor_of(int fd, uint64_t inode)
{
        struct kfdemu_msg_stat msg = { .type = KFDEMU_MSG_STAT, .file_inode = inode };
        struct kfdemu_reply reply;
        int saved_errno = errno;
        ssize_t n;

        /* Only the server's own sockets cost a round trip. */
        if (!is_kfd_file(fd))
                return 0;
        n = preload_call(&msg, sizeof(msg), false, &reply, sizeof(reply), NULL, 0, NULL);
        errno = saved_errno;
        if (n != sizeof(reply) || reply.status != KFDEMU_REPLY_RESULT || reply.result <= 0 ||
            reply.result > UINT32_MAX)
                return 0;
        return (uint32_t)reply.result;
}

/* A render node's fd is the character device 226:<minor> to fstat, as
 * libdrm's drmGetNodeTypeFromFd requires of a render node; a /dev/kfd fd
 * stays a socket (README "Known differences"). Returns the new st_rdev,
 * or 0 when `fd` is no render node. */
static dev_t render_node_rdev(int fd, mode_t mode, uint64_t inode)
{
        uint32_t minor = S_ISSOCK(mode) ? render_minor_of(fd, inode) : 0;

        return minor ? makedev(DRM_CHAR_MAJOR, minor) : 0;
}

/* What a character device node of the render group shows. */
#define RENDER_NODE_MODE (S_IFCHR | 0660)

PRELOAD_EXPORT int fstat(int fd, struct stat *st)
{
        int r = REAL(fstat)(fd, st);
        dev_t rdev = r == 0 ? render_node_rdev(fd, st->st_mode, st->st_ino) : 0;

        if (rdev) {
                st->st_mode = RENDER_NODE_MODE;
                st->st_rdev = rdev;
                st->st_size = 0;
        }
        return r;
}

PRELOAD_EXPORT int fstat64(int fd, struct stat64 *st)
{
        int r = REAL(fstat64)(fd, st);
        dev_t rdev = r == 0 ? render_node_rdev(fd, st->st_mode, st->st_ino) : 0;

        if (rdev) {
                st->st_mode = RENDER_NODE_MODE;
                st->st_rdev = rdev;
                st->st_size = 0;
        }
        return r;
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

#if defined(__x86_64__)
        /* A VM_PFNMAP mapping: GUP (process_vm_readv) refuses a read of a
         * VMA without VM_READ unless FOLL_FORCE (/proc/PID/mem) asks, as it
         * refuses VM_PFNMAP. On x86-64 the CPU reads a PROT_WRITE page
         * (mmap(2)), so the application itself sees no difference. */
        if ((reply->flags & KFDEMU_MMAP_PFNMAP) && (prot & PROT_WRITE))
                prot &= ~PROT_READ;
#endif

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

/*
 * Whether fd is a kfdemu file: a socket connected to the server (the
 * preload's call channels are too, but nobody else uses them). Told
 * without asking the server: reads and writes are far more frequent than
 * kfd calls, and those on an application's own sockets must not each cost
 * a round trip.
 */
enum peer_kind {
        PEER_OTHER,
        PEER_KFD_FILE,                   /* /dev/kfd or a render node */
        PEER_SMI,                        /* an SMI events fd (kfd-smi.c) */
};

static enum peer_kind peer_kind_of(int fd)
{
        static const char smi_prefix[] = KFDEMU_SMI_SOCKET_PREFIX;
        const char *server = preload_socket_path();
        struct sockaddr_un peer;
        socklen_t size = sizeof(peer);
        size_t path_size, length;
        int saved_errno = errno;
        enum peer_kind kind = PEER_OTHER;

        /* getpeername alone: it fails with ENOTSOCK on anything but a
         * socket, cheaper than an fstat first (docs/benchmarks/kfdemu.md) */
        if (!server || getpeername(fd, (struct sockaddr *)&peer, &size) < 0 ||
            size <= offsetof(struct sockaddr_un, sun_path) || peer.sun_family != AF_UNIX) {
                /* a read or write that then succeeds leaves errno alone */
                errno = saved_errno;
                return PEER_OTHER;
        }
        path_size = size - offsetof(struct sockaddr_un, sun_path);
        if (peer.sun_path[0] == '\0') {
                /* abstract: the server's SMI sockets */
                if (path_size > sizeof(smi_prefix) &&
                    memcmp(peer.sun_path + 1, smi_prefix, sizeof(smi_prefix) - 1) == 0)
                        kind = PEER_SMI;
        } else {
                length = strnlen(peer.sun_path, path_size);
                if (length == strlen(server) && memcmp(peer.sun_path, server, length) == 0)
                        kind = PEER_KFD_FILE;
        }
        errno = saved_errno;
        return kind;
}

static bool is_kfd_file(int fd)
{
        return peer_kind_of(fd) == PEER_KFD_FILE;
}

/*
 * kfd_fops has no read, write, read_iter or write_iter (kfd_chardev.c), so
 * fs/read_write.c fails every read and write on /dev/kfd with EINVAL, and
 * nothing else happens (kfd-interface.md §10). On the socket they would
 * reach the server instead; every libc entry point to them is answered
 * here, the fortified reads included. Each wrapper's first parameter is
 * the fd.
 */
#define NO_READ_WRITE(name, params, args)                                \
        PRELOAD_EXPORT ssize_t name params                               \
        {                                                                \
                if (is_kfd_file(fd)) {                                   \
                        errno = EINVAL;                                  \
                        return -1;                                       \
                }                                                        \
                return REAL(name) args;                                  \
        }

/* Declared by <unistd.h> only under _FORTIFY_SOURCE. */
ssize_t __pread_chk(int fd, void *buf, size_t count, off_t offset, size_t buf_size);
ssize_t __pread64_chk(int fd, void *buf, size_t count, off64_t offset, size_t buf_size);

/*
 * The SMI events fd has read and write (kfd_smi_events.c): a read takes
 * what is queued, up to `count`, and fails with EAGAIN when nothing is,
 * blocking or not (kfd_smi_ev_read); a write takes the first 8 bytes as
 * the event mask and fails with EFAULT when fewer are given
 * (kfd_smi_ev_write). read and write are what ROCm's SMI library uses; the
 * other forms reach the socket as they are.
 */
static ssize_t smi_read(int fd, void *buf, size_t count)
{
        ssize_t n;

        if (count == 0) {
                errno = EAGAIN;
                return -1;
        }
        n = recv(fd, buf, count, MSG_DONTWAIT);
        if (n == 0) {
                /* the node is gone: nothing will ever be queued */
                errno = EAGAIN;
                return -1;
        }
        return n;
}

static ssize_t smi_write(int fd, const void *buf, size_t count)
{
        if (count < sizeof(uint64_t)) {
                errno = EFAULT;
                return -1;
        }
        if (send(fd, buf, sizeof(uint64_t), MSG_NOSIGNAL) < 0)
                return -1;
        return sizeof(uint64_t);
}

/* A read of a KFD file or an SMI fd, answered as the kernel answers it;
 * *forward when fd is neither and the real read must run. */
static ssize_t peer_read(int fd, void *buf, size_t count, bool *forward)
{
        *forward = false;
        switch (peer_kind_of(fd)) {
        case PEER_KFD_FILE:
                errno = EINVAL;
                return -1;
        case PEER_SMI:
                return smi_read(fd, buf, count);
        case PEER_OTHER:
                break;
        }
        *forward = true;
        return 0;
}

PRELOAD_EXPORT ssize_t read(int fd, void *buf, size_t count)
{
        bool forward;
        ssize_t r = peer_read(fd, buf, count, &forward);

        return forward ? REAL(read)(fd, buf, count) : r;
}

/* Declared by <unistd.h> only under _FORTIFY_SOURCE. */
ssize_t __read_chk(int fd, void *buf, size_t count, size_t buf_size);

PRELOAD_EXPORT ssize_t __read_chk(int fd, void *buf, size_t count, size_t buf_size)
{
        bool forward;
        ssize_t r = peer_read(fd, buf, count, &forward);

        return forward ? REAL(__read_chk)(fd, buf, count, buf_size) : r;
}

PRELOAD_EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
        switch (peer_kind_of(fd)) {
        case PEER_KFD_FILE:
                errno = EINVAL;
                return -1;
        case PEER_SMI:
                return smi_write(fd, buf, count);
        case PEER_OTHER:
                break;
        }
        return REAL(write)(fd, buf, count);
}
NO_READ_WRITE(readv, (int fd, const struct iovec *iov, int n), (fd, iov, n))
NO_READ_WRITE(writev, (int fd, const struct iovec *iov, int n), (fd, iov, n))
NO_READ_WRITE(pread, (int fd, void *buf, size_t count, off_t offset), (fd, buf, count, offset))
NO_READ_WRITE(pread64, (int fd, void *buf, size_t count, off64_t offset), (fd, buf, count, offset))
NO_READ_WRITE(__pread_chk, (int fd, void *buf, size_t count, off_t offset, size_t buf_size),
              (fd, buf, count, offset, buf_size))
NO_READ_WRITE(__pread64_chk, (int fd, void *buf, size_t count, off64_t offset, size_t buf_size),
              (fd, buf, count, offset, buf_size))
NO_READ_WRITE(pwrite, (int fd, const void *buf, size_t count, off_t offset), (fd, buf, count, offset))
NO_READ_WRITE(pwrite64, (int fd, const void *buf, size_t count, off64_t offset), (fd, buf, count, offset))
NO_READ_WRITE(preadv, (int fd, const struct iovec *iov, int n, off_t offset), (fd, iov, n, offset))
NO_READ_WRITE(preadv64, (int fd, const struct iovec *iov, int n, off64_t offset), (fd, iov, n, offset))
NO_READ_WRITE(pwritev, (int fd, const struct iovec *iov, int n, off_t offset), (fd, iov, n, offset))
NO_READ_WRITE(pwritev64, (int fd, const struct iovec *iov, int n, off64_t offset), (fd, iov, n, offset))
NO_READ_WRITE(preadv2, (int fd, const struct iovec *iov, int n, off_t offset, int flags),
              (fd, iov, n, offset, flags))
NO_READ_WRITE(preadv64v2, (int fd, const struct iovec *iov, int n, off64_t offset, int flags),
              (fd, iov, n, offset, flags))
NO_READ_WRITE(pwritev2, (int fd, const struct iovec *iov, int n, off_t offset, int flags),
              (fd, iov, n, offset, flags))
NO_READ_WRITE(pwritev64v2, (int fd, const struct iovec *iov, int n, off64_t offset, int flags),
              (fd, iov, n, offset, flags))

/*
 * kfd_fops has no poll either: fs/eventpoll.c: do_epoll_ctl refuses a
 * target without one (!file_can_poll) with EPERM, whatever the op, once
 * both fds resolve and after the event was copied in (kfd-interface.md
 * §10). The socket would be accepted, and report itself readable at once.
 */
PRELOAD_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
        if (is_kfd_file(fd)) {
                if (op != EPOLL_CTL_DEL && !event) {
                        errno = EFAULT;
                        return -1;
                }
                if (fcntl(epfd, F_GETFD) < 0)
                        return -1; /* EBADF, as fdget(epfd) */
                errno = EPERM;
                return -1;
        }
        return REAL(epoll_ctl)(epfd, op, fd, event);
}

/*
 * Nor splice_read or splice_write: splice and sendfile to or from
 * /dev/kfd fail with EINVAL once both fds resolve (kfd-interface.md §10).
 * The socket would be spliced (or read at its end).
 */
static bool splice_refused(int kfd_side, int other)
{
        if (!is_kfd_file(kfd_side))
                return false;
        if (fcntl(other, F_GETFD) >= 0)
                errno = EINVAL; /* else EBADF, as fdget */
        return true;
}

PRELOAD_EXPORT ssize_t splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len, unsigned int flags)
{
        if (splice_refused(fd_in, fd_out) || splice_refused(fd_out, fd_in))
                return -1;
        return REAL(splice)(fd_in, off_in, fd_out, off_out, len, flags);
}

PRELOAD_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
        if (splice_refused(in_fd, out_fd) || splice_refused(out_fd, in_fd))
                return -1;
        return REAL(sendfile)(out_fd, in_fd, offset, count);
}

PRELOAD_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *offset, size_t count)
{
        if (splice_refused(in_fd, out_fd) || splice_refused(out_fd, in_fd))
                return -1;
        return REAL(sendfile64)(out_fd, in_fd, offset, count);
}
