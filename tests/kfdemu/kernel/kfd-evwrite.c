/* SPDX-License-Identifier: MIT */
/*
 * The one-byte debug event write (kfd_dbg_ev_raise: kernel_write of '.' at
 * position 0 into the debugger's file) and the raiser that blocks in it.
 *
 * With a blocking, full pipe the kernel's raiser sleeps in pipe_write until
 * the debugger reads, while every other caller is served. kfdemu cannot
 * sleep in the server, so the raising call gets a writer thread that waits
 * for the pipe to drain, writes the byte, and only then lets the call
 * return (kfd_ev_writer_hold). A signal ends pipe_write's sleep without a
 * byte, and kfd ignores the write's result: the ioctl then returns as usual.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "kfd-priv.h"

struct kfd_ev_writer {
        struct kfd_ev_writer *next;       /* node->ev_writers */
        struct emu_node *node;
        struct emu_process *target;       /* whose locks the raiser holds; NULL once it is gone */
        unsigned locks;                   /* enum kfd_lock: held until the write ends */
        struct emu_call *call;            /* the raiser's ioctl */
        struct emu_caller raiser;
        int fd;                           /* the server's own reference to the file */
        int cancel_fd;                    /* eventfd: stop waiting */
        pthread_t thread;
        bool cancelled, done;
        bool completion_pending;          /* the call's result waits for the byte */
        long ret;
};

int kfd_ev_write_byte(int fd, const struct emu_caller *raiser)
{
        static const char dot = '.';
        struct iovec iov = { .iov_base = (void *)&dot, .iov_len = 1 };
        sigset_t sigpipe, saved;
        struct stat st;
        ssize_t n;
        int r = 0;

        /* A pipe without readers makes pipe_write send SIGPIPE to `current`:
         * the raiser gets it, not the server. */
        sigemptyset(&sigpipe);
        sigaddset(&sigpipe, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &sigpipe, &saved);
        /* kernel_write(file, ".", 1, &pos) with pos 0: a seekable file gets
         * the byte at offset 0 (its own position stays), whether or not it
         * supports RWF_NOWAIT; a regular file never waits for a reader. */
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
                n = pwrite(fd, &dot, 1, 0);
        else
                n = pwritev2(fd, &iov, 1, 0, RWF_NOWAIT);
        if (n < 0 && errno == ESPIPE)
                n = pwritev2(fd, &iov, 1, -1, RWF_NOWAIT);
        if (n < 0 && errno == EOPNOTSUPP)
                n = pwrite(fd, &dot, 1, 0);
        if (n < 0 && errno == ESPIPE)
                n = write(fd, &dot, 1);
        if (n < 0) {
                r = -errno;
                if (r == -EPIPE) {
                        const struct timespec no_wait = { 0, 0 };

                        while (sigtimedwait(&sigpipe, NULL, &no_wait) == SIGPIPE)
                                ;
                        if (raiser)
                                (void)syscall(SYS_tgkill, raiser->tgid, raiser->tid, SIGPIPE);
                }
        }
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        return r;
}

/* The write is over (byte written, signal, death): the raiser lets go of
 * the target's mutexes, and whoever slept on them runs. */
static void kfd_ev_writer_unlock(struct kfd_ev_writer *w)
{
        unsigned locks = w->locks;

        w->locks = 0;
        if (w->target && locks)
                kfd_lock_release(w->target, locks);
}

static void kfd_ev_writer_finish_locked(struct kfd_ev_writer *w)
{
        struct emu_call *call = w->call;

        w->done = true;
        if (w->cancelled)
                return;
        call->kernel_private = NULL;
        /* The raise returns (and its locks go) before the ioctl does. */
        kfd_ev_writer_unlock(w);
        if (w->completion_pending)
                emu_call_complete(call, w->ret);
}

static void *kfd_ev_writer_main(void *data)
{
        struct kfd_ev_writer *w = data;
        struct emu_node *node = w->node;

        for (;;) {
                struct pollfd fds[2] = { { .fd = w->fd, .events = POLLOUT }, { .fd = w->cancel_fd, .events = POLLIN } };
                int n = poll(fds, 2, -1);

                if (n < 0 && errno == EINTR)
                        continue;
                pthread_mutex_lock(&node->lock);
                /* A write that still finds the pipe full waits again. */
                if (n < 0 || w->cancelled || kfd_ev_write_byte(w->fd, &w->raiser) != -EAGAIN)
                        break;
                pthread_mutex_unlock(&node->lock);
        }
        kfd_ev_writer_finish_locked(w);
        pthread_mutex_unlock(&node->lock);
        return NULL;
}

static void kfd_ev_writer_free(struct kfd_ev_writer *w)
{
        close(w->fd);
        close(w->cancel_fd);
        free(w);
}

/* Join the writers whose thread is over. */
static void kfd_ev_writers_reap(struct emu_node *node)
{
        struct kfd_ev_writer **link = &node->ev_writers;

        while (*link) {
                struct kfd_ev_writer *w = *link;

                if (!w->done) {
                        link = &w->next;
                        continue;
                }
                *link = w->next;
                pthread_join(w->thread, NULL);
                kfd_ev_writer_free(w);
        }
}

bool kfd_ev_writer_start(struct emu_process *target, struct emu_call *call, int fd, unsigned locks)
{
        struct emu_node *node = target->node;
        struct kfd_ev_writer *w;

        kfd_ev_writers_reap(node);
        if (call->kernel_private)
                return false;

        w = calloc(1, sizeof(*w));
        if (!w)
                return false;
        w->node = node;
        w->target = target;
        w->call = call;
        w->raiser = call->caller;
        /* The session may end while the raiser sleeps; like the kernel's
         * file reference, this copy keeps the pipe. */
        w->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        w->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->fd < 0 || w->cancel_fd < 0 || pthread_create(&w->thread, NULL, kfd_ev_writer_main, w) != 0) {
                if (w->fd >= 0)
                        close(w->fd);
                if (w->cancel_fd >= 0)
                        close(w->cancel_fd);
                free(w);
                return false;
        }
        w->next = node->ev_writers;
        node->ev_writers = w;
        call->kernel_private = w;
        w->locks = locks;
        kfd_lock_take(target, locks);
        return true;
}

void kfd_ev_writers_forget_process(struct emu_node *node, struct emu_process *p)
{
        for (struct kfd_ev_writer *w = node->ev_writers; w; w = w->next)
                if (w->target == p) {
                        w->target = NULL;
                        w->locks = 0;
                }
}

bool kfd_ev_writer_hold(struct emu_call *call, long ret)
{
        struct kfd_ev_writer *w = call->kernel_private;

        if (!w)
                return false;
        w->ret = ret;
        w->completion_pending = true;
        call->wait_kind = KFD_WAIT_EVENT_WRITE;
        return true;
}

static void kfd_ev_writer_cancel_locked(struct kfd_ev_writer *w)
{
        const uint64_t one = 1;

        w->cancelled = true;
        (void)write(w->cancel_fd, &one, sizeof(one));
}

bool kfd_ev_writer_cancel(struct emu_call *call, long *ret_held)
{
        struct kfd_ev_writer *w = call->kernel_private;

        if (!w)
                return false;
        call->kernel_private = NULL;
        kfd_ev_writer_cancel_locked(w);
        /* pipe_write's sleep ended: kernel_write and the raise return. */
        kfd_ev_writer_unlock(w);
        if (!w->completion_pending)
                return false;
        call->wait_kind = KFD_WAIT_NONE;
        *ret_held = w->ret;
        return true;
}

void kfd_ev_writers_stop(struct emu_node *node)
{
        pthread_mutex_lock(&node->lock);
        for (struct kfd_ev_writer *w = node->ev_writers; w; w = w->next)
                if (!w->done)
                        kfd_ev_writer_cancel_locked(w);
        pthread_mutex_unlock(&node->lock);

        while (node->ev_writers) {
                struct kfd_ev_writer *w = node->ev_writers;

                node->ev_writers = w->next;
                pthread_join(w->thread, NULL);
                kfd_ev_writer_free(w);
        }
}
