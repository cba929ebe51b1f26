/* SPDX-License-Identifier: MIT */
/*
 * The preload's side of the protocol: the per-thread call channel and the
 * constructor that reports an exec. A channel belongs to one thread because
 * the kernel's `current` is a thread and a thread sleeping in an ioctl must
 * not receive another thread's reply.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"
#include "protocol.h"

/* Channels live above the fds applications usually count on, so a program
 * that closes "all fds from 3" or expects the lowest free number still
 * sees what it would without kfdemu. */
#define CHANNEL_FD_MIN 512

struct channel {
        int fd;
        pid_t tid;                       /* the thread that made it; changes on fork */
        uint64_t inode;                  /* re-checked before use: the app may have closed fd */
        bool busy;                       /* a call is in flight (a signal handler may call again) */
};

static struct sockaddr_un server_address;
static pthread_once_t environment_once = PTHREAD_ONCE_INIT;
static pthread_key_t channel_key;
static pthread_once_t channel_key_once = PTHREAD_ONCE_INIT;
static __thread struct channel thread_channel __attribute__((tls_model("initial-exec"))) = { .fd = -1 };
/* The last interruptible call's interruption allows a restart. */
static __thread bool interrupt_restarts;

bool preload_call_interrupt_restarts(void)
{
        return interrupt_restarts;
}

void *preload_next_symbol(const char *name)
{
        void *fn = dlsym(RTLD_NEXT, name);

        if (!fn) {
                /* The preload cannot work at all: say so once and stop. */
                dprintf(STDERR_FILENO, "libkfdemu-preload: libc has no %s: %s\n", name, dlerror());
                abort();
        }
        return fn;
}

/* Read on first use rather than only in the constructor: the constructors
 * of libraries loaded after the preload run before it and may already
 * open /dev/kfd. */
static void load_environment(void)
{
        const char *socket_path = getenv(KFDEMU_ENV_SOCKET);
        if (!socket_path || !*socket_path)
                return;
        if (strlen(socket_path) >= sizeof(server_address.sun_path)) {
                dprintf(STDERR_FILENO, "libkfdemu-preload: %s=%s is longer than a unix socket path may be; "
                                       "give kfdemu-run a shorter --root\n", KFDEMU_ENV_SOCKET, socket_path);
                abort();
        }
        server_address.sun_family = AF_UNIX;
        memcpy(server_address.sun_path, socket_path, strlen(socket_path) + 1);
}

const char *preload_socket_path(void)
{
        pthread_once(&environment_once, load_environment);
        return server_address.sun_path[0] ? server_address.sun_path : NULL;
}

uint64_t preload_socket_inode(int fd)
{
        struct stat st;

        /* the real fstat: the preload's own describes render nodes (preload-kfd.c) */
        if (fd < 0 || REAL(fstat)(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
                return 0;
        return st.st_ino;
}

static int connect_server(int type_flags)
{
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | type_flags, 0);

        if (fd < 0)
                return -errno;
        while (connect(fd, (struct sockaddr *)&server_address, sizeof(server_address)) < 0) {
                if (errno == EINTR)
                        continue;
                int r = errno == ENOENT || errno == ECONNREFUSED ? -ENODEV : -errno;
                close(fd);
                return r;
        }
        return fd;
}

static int send_all(int fd, const void *msg, size_t size)
{
        while (send(fd, msg, size, MSG_NOSIGNAL) < 0)
                if (errno != EINTR)
                        return -EIO;
        return 0;
}

static void channel_close(struct channel *ch)
{
        if (ch->fd >= 0 && preload_socket_inode(ch->fd) == ch->inode)
                close(ch->fd);
        ch->fd = -1;
}

static void channel_destructor(void *value)
{
        channel_close(value);
}

static void channel_key_create(void)
{
        pthread_key_create(&channel_key, channel_destructor);
}

static int channel_open(struct channel *ch)
{
        struct kfdemu_msg_hello hello = { .type = KFDEMU_MSG_HELLO, .tid = gettid() };
        int fd = connect_server(SOCK_CLOEXEC);

        if (fd < 0)
                return fd;
        int high = fcntl(fd, F_DUPFD_CLOEXEC, CHANNEL_FD_MIN);
        if (high >= 0) {
                close(fd);
                fd = high;
        }
        int r = send_all(fd, &hello, sizeof(hello));
        if (r < 0) {
                close(fd);
                return r;
        }
        *ch = (struct channel){ .fd = fd, .tid = hello.tid, .inode = preload_socket_inode(fd) };
        return 0;
}

/* The calling thread's channel, made on first use and after a fork. */
static int channel_get(struct channel **ret)
{
        struct channel *ch = &thread_channel;

        if (ch->fd >= 0 && ch->tid != gettid())
                channel_close(ch);       /* the parent's, inherited over fork */
        if (ch->fd >= 0 && preload_socket_inode(ch->fd) != ch->inode)
                ch->fd = -1;             /* the application closed it: that fd is not ours */
        if (ch->fd < 0) {
                int r = channel_open(ch);
                if (r < 0)
                        return r;
                pthread_once(&channel_key_once, channel_key_create);
                pthread_setspecific(channel_key, ch);
        }
        *ret = ch;
        return 0;
}

static ssize_t receive_reply(int fd, void *reply, size_t reply_size, int *fds, unsigned max_fds,
                             unsigned *ret_n_fds)
{
        union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int) * KFDEMU_MMAP_MAX_SEGMENTS)];
        } control;
        struct iovec iov = { .iov_base = reply, .iov_len = reply_size };
        struct msghdr mh = {
                .msg_iov = &iov, .msg_iovlen = 1,
                .msg_control = control.buf, .msg_controllen = sizeof(control.buf),
        };
        unsigned n_fds = 0;

        ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0)
                return -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < count; i++) {
                        int got;
                        memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (n_fds < max_fds)
                                fds[n_fds++] = got;
                        else
                                close(got);
                }
        }
        if (ret_n_fds)
                *ret_n_fds = n_fds;
        return n == 0 ? -EIO : n;        /* EOF: the server is gone */
}

/* Every call runs with all signals blocked, so no handler can re-enter
 * the preload while it sets up a channel; they are let through only while
 * the thread waits for the reply (ppoll), as a sleeping task is woken. */
static void block_signals(sigset_t *ret_caller_mask)
{
        sigset_t all;

        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, ret_caller_mask);
}

/* The server's notice that the call entered the unmap fence wait: the
 * CLOCK_MONOTONIC time until which the caller spins, or 0. */
static int64_t spinning_notice_deadline(const void *reply, ssize_t n)
{
        struct kfdemu_reply notice;
        struct timespec now;

        if (n != (ssize_t)sizeof(notice))
                return 0;
        memcpy(&notice, reply, sizeof(notice));
        if (notice.status != KFDEMU_REPLY_SPINNING || notice.result <= 0)
                return 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec + notice.result;
}

static bool still_spinning(int64_t deadline_ns)
{
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec < deadline_ns;
}

static ssize_t call_on(const struct channel *ch, const sigset_t *caller_mask, const void *request,
                       size_t request_size, bool interruptible, void *reply, size_t reply_size, int *fds,
                       unsigned max_fds, unsigned *ret_n_fds)
{
        static const struct kfdemu_msg_interrupted interrupted = { .type = KFDEMU_MSG_INTERRUPTED };
        static const struct timespec no_wait = { 0, 0 };
        struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
        ssize_t n = send_all(ch->fd, request, request_size);
        int64_t spin_until = 0;

        if (interruptible)
                interrupt_restarts = false;
        while (n >= 0) {
                preload_signals_before_wait();
                /* ppoll unblocks the caller's signals atomically, so one
                 * that arrived since the request still interrupts the wait,
                 * as signal_pending() does in the kernel; and unlike recv it
                 * fails with EINTR after every handler whatever its
                 * SA_RESTART: what an interruptible sleep sees. */
                bool spinning = spin_until && still_spinning(spin_until);
                int ready = ppoll(&pfd, 1, spinning ? &no_wait : NULL, caller_mask);
                if (ready < 0) {
                        if (errno != EINTR) {
                                n = -EIO;
                        } else if (interruptible) {
                                interrupt_restarts = preload_signals_handler_restarts();
                                n = send_all(ch->fd, &interrupted, sizeof(interrupted));
                        }
                        continue;
                }
                if (ready == 0) {
                        /* amdkfd_fence_wait_timeout's schedule() with the
                         * task still running: another task of the CPU gets
                         * it only if the scheduler prefers it, which one of
                         * a lower class (SCHED_OTHER under a SCHED_FIFO
                         * caller) never is. Past the modelled unmap the
                         * caller sleeps until the server, which may have
                         * shared its CPU, replies. */
                        sched_yield();
                        continue;
                }
                n = receive_reply(ch->fd, reply, reply_size, fds, max_fds, ret_n_fds);
                int64_t deadline = spinning_notice_deadline(reply, n);
                if (deadline) {
                        spin_until = deadline;
                        n = 0;
                        continue;
                }
                if (n != -EAGAIN && n != -EINTR)
                        break;
                n = 0;
        }
        return n;
}

static ssize_t call_on_thread_channel(const sigset_t *caller_mask, const void *request, size_t request_size,
                                      bool interruptible, void *reply, size_t reply_size, int *fds,
                                      unsigned max_fds, unsigned *ret_n_fds)
{
        struct channel *ch;
        ssize_t n = channel_get(&ch);

        if (n < 0)
                return n;
        if (ch->busy) {
                /* A signal handler calls while this thread's own call is in
                 * flight: a channel of its own keeps the replies apart. */
                struct channel nested;
                n = channel_open(&nested);
                if (n < 0)
                        return n;
                n = call_on(&nested, caller_mask, request, request_size, interruptible, reply, reply_size, fds,
                            max_fds, ret_n_fds);
                channel_close(&nested);
                return n;
        }
        ch->busy = true;
        n = call_on(ch, caller_mask, request, request_size, interruptible, reply, reply_size, fds, max_fds,
                    ret_n_fds);
        ch->busy = false;
        if (n < 0)
                channel_close(ch);       /* broken: the next call makes a new one */
        return n;
}

ssize_t preload_call(const void *request, size_t request_size, bool interruptible, void *reply,
                     size_t reply_size, int *fds, unsigned max_fds, unsigned *ret_n_fds)
{
        sigset_t caller_mask;

        block_signals(&caller_mask);
        ssize_t n = call_on_thread_channel(&caller_mask, request, request_size, interruptible, reply, reply_size,
                                           fds, max_fds, ret_n_fds);
        pthread_sigmask(SIG_SETMASK, &caller_mask, NULL);
        return n;
}

int preload_device_open(uint32_t render_minor, int flags)
{
        struct kfdemu_msg_open msg = { .type = KFDEMU_MSG_OPEN, .tid = gettid(), .render_minor = render_minor };
        struct kfdemu_reply reply;
        struct channel file = { .fd = connect_server(flags & O_CLOEXEC ? SOCK_CLOEXEC : 0) };

        if (file.fd < 0) {
                errno = -file.fd;
                return -1;
        }
        msg.file_inode = preload_socket_inode(file.fd);
        /* Neither kfd_open nor drm_open sleeps: no interruption to report. */
        sigset_t caller_mask;
        block_signals(&caller_mask);
        ssize_t n = call_on(&file, &caller_mask, &msg, sizeof(msg), false, &reply, sizeof(reply), NULL, 0, NULL);
        pthread_sigmask(SIG_SETMASK, &caller_mask, NULL);
        if (n >= 0 && (n != sizeof(reply) || reply.status != KFDEMU_REPLY_RESULT))
                n = -EIO;
        if (n >= 0 && reply.result < 0)
                n = reply.result;
        if (n < 0) {
                close(file.fd);
                errno = (int)-n;
                return -1;
        }
        /* Nothing comes on a file after OPEN's reply. A read that bypasses
         * the preload (stdio, a raw syscall) then ends at once with 0 rather
         * than waiting for ever; amdkfd fails it with EINVAL
         * (kfd-interface.md §10, preload-kfd.c). */
        shutdown(file.fd, SHUT_RD);
        return file.fd;
}

__attribute__((constructor)) static void preload_init(void)
{
        int saved_errno = errno;

        if (!preload_socket_path())
                return;
        /* exec gave this process a new mm: the old one's kfd_process is
         * torn down before main, as kfd_process_notifier_release does. */
        struct kfdemu_msg_exec msg = { .type = KFDEMU_MSG_EXEC };
        struct kfdemu_reply reply;
        preload_call(&msg, sizeof(msg), false, &reply, sizeof(reply), NULL, 0, NULL);
        errno = saved_errno;
}
