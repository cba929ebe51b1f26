/* SPDX-License-Identifier: MIT */
#include "write-watch.h"

#include <dirent.h>
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"

/* The smallest ring buffer perf_mmap() takes: the control page and one data page. */
#define RING_PAGES 2
/* Listing a process's threads again until no new one shows up, at most this often. */
#define MAX_LISTING_PASSES 16

struct watched_thread {
        pid_t tid;
        int breakpoint_fd;
        int ring_fd; /* the dummy event whose ring buffer the breakpoint writes to */
        void *ring;
        bool in_epoll;
};

struct write_watch {
        int epoll_fd;
        uint64_t key;
        pid_t pid;
        uint64_t address;
        struct watched_thread *threads;
        size_t n_threads;
        bool enabled;
};

const char *write_watch_strerror(int error)
{
        switch (error) {
        case -EACCES:
        case -EPERM:
                return "perf_event_open refused: gpreemptd needs CAP_PERFMON (or CAP_SYS_ADMIN)";
        case -ENOSPC:
                return "no debug register free in one of its threads (a debugger, or 4 breakpoints already)";
        case -ESRCH:
                return "the process is gone";
        case -EMFILE:
        case -ENFILE:
                return "too many open files (raise LimitNOFILE=)";
        case -EDQUOT:
                return "the breakpoints' ring buffers exceed the locked-memory limit (raise LimitMEMLOCK=)";
        case -ENOENT: /* perf_event_open's answer for an unknown event type */
        case -ENODEV:
        case -EOPNOTSUPP:
                return "this kernel or CPU has no hardware breakpoints";
        default:
                return strerror(-error);
        }
}

static int perf_open(struct perf_event_attr *attr, pid_t tid)
{
        int fd = (int)syscall(SYS_perf_event_open, attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);

        return fd < 0 ? -errno : fd;
}

static void thread_close(struct write_watch *w, struct watched_thread *t)
{
        /* out of the set before the close: epoll keys on the open file, which the ring's mapping keeps */
        if (t->in_epoll)
                epoll_ctl(w->epoll_fd, EPOLL_CTL_DEL, t->breakpoint_fd, NULL);
        if (t->ring)
                munmap(t->ring, RING_PAGES * (size_t)sysconf(_SC_PAGESIZE));
        closep(&t->ring_fd);
        closep(&t->breakpoint_fd);
        *t = (struct watched_thread){ .breakpoint_fd = -1, .ring_fd = -1 };
}

/* Marks the samples read: the kernel may reuse the space, and the next store wakes the loop again. */
static void ring_drain(void *ring)
{
        struct perf_event_mmap_page *control = ring;
        uint64_t head = __atomic_load_n(&control->data_head, __ATOMIC_ACQUIRE);

        __atomic_store_n(&control->data_tail, head, __ATOMIC_RELEASE);
}

bool write_watch_consume(struct write_watch *w, bool *ret_stored)
{
        size_t n_gone = 0;
        bool stored = false;

        for (size_t i = 0; i < w->n_threads; i++) {
                struct pollfd p = { .fd = w->threads[i].breakpoint_fd, .events = POLLIN };

                ring_drain(w->threads[i].ring);
                if (poll(&p, 1, 0) != 1)
                        continue;
                n_gone += (p.revents & (POLLHUP | POLLERR)) != 0;
                /* core.c perf_poll() took the sample's wake-up (rb->poll is exchanged with 0): the waiter never sees it */
                stored |= (p.revents & POLLIN) != 0;
        }
        *ret_stored = stored;
        return n_gone == w->n_threads;
}

static int thread_open(struct write_watch *w, pid_t tid, struct watched_thread *t)
{
        long page = sysconf(_SC_PAGESIZE);
        struct perf_event_attr breakpoint = {
                .type = PERF_TYPE_BREAKPOINT,
                .size = sizeof(breakpoint),
                .bp_type = HW_BREAKPOINT_W,
                .bp_addr = w->address,
                .bp_len = HW_BREAKPOINT_LEN_8,
                .sample_period = 1,
                .wakeup_events = 1,
                .disabled = !w->enabled,
                .inherit = 1,
                .inherit_thread = 1,
                .exclude_kernel = 1,
                .exclude_hv = 1,
        };
        struct perf_event_attr dummy = {
                .type = PERF_TYPE_SOFTWARE,
                .config = PERF_COUNT_SW_DUMMY,
                .size = sizeof(dummy),
                .disabled = 1,
                .exclude_kernel = 1,
                .exclude_hv = 1,
        };
        int r;

        *t = (struct watched_thread){ .tid = tid, .breakpoint_fd = -1, .ring_fd = -1 };
        r = perf_open(&dummy, tid);
        if (r < 0)
                return r;
        t->ring_fd = r;
        t->ring = mmap(NULL, RING_PAGES * (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, t->ring_fd, 0);
        if (t->ring == MAP_FAILED) {
                /* core.c perf_mmap(): EPERM once the rings outgrow perf_event_mlock_kb and RLIMIT_MEMLOCK */
                r = errno == EPERM ? -EDQUOT : -errno;
                t->ring = NULL;
                goto fail;
        }
        r = perf_open(&breakpoint, tid);
        if (r < 0)
                goto fail;
        t->breakpoint_fd = r;
        if (ioctl(t->breakpoint_fd, PERF_EVENT_IOC_SET_OUTPUT, t->ring_fd) < 0) {
                r = -errno;
                goto fail;
        }
        if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, t->breakpoint_fd,
                      &(struct epoll_event){ .events = EPOLLIN | EPOLLET, .data.u64 = w->key }) < 0) {
                r = -errno;
                goto fail;
        }
        t->in_epoll = true;
        return 0;
fail:
        thread_close(w, t);
        return r;
}

static bool has_thread(const struct write_watch *w, pid_t tid)
{
        for (size_t i = 0; i < w->n_threads; i++)
                if (w->threads[i].tid == tid)
                        return true;
        return false;
}

/*
 * One pass over /proc/<pid>/task (the real one: perf takes real thread ids):
 * opens the breakpoint in each thread not covered yet. Returns how many were
 * added, or -errno. A thread that exits between the listing and the open is
 * no error; the process being gone is.
 */
static int cover_listed_threads(struct write_watch *w)
{
        char path[64];
        DIR *dir;
        struct dirent *e;
        int added = 0, r = 0;

        snprintf(path, sizeof(path), "/proc/%d/task", (int)w->pid);
        dir = opendir(path);
        if (!dir)
                return errno == ENOENT ? -ESRCH : -errno;
        while ((e = readdir(dir))) {
                struct watched_thread *grown;
                pid_t tid = (pid_t)strtol(e->d_name, NULL, 10);

                if (tid <= 0 || has_thread(w, tid))
                        continue;
                grown = realloc(w->threads, (w->n_threads + 1) * sizeof(*grown));
                if (!grown) {
                        r = -ENOMEM;
                        break;
                }
                w->threads = grown;
                r = thread_open(w, tid, &w->threads[w->n_threads]);
                if (r == -ESRCH) {
                        r = 0;
                        continue;
                }
                if (r < 0)
                        break;
                w->n_threads++;
                added++;
        }
        closedir(dir);
        return r < 0 ? r : added;
}

int write_watch_new(int epoll_fd, uint64_t key, pid_t pid, uint64_t address, struct write_watch **ret_watch)
{
        struct write_watch *w;
        int r = 0;

        if (address % 8)
                return -EINVAL; /* the debug registers take an aligned 8-byte range */
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        *w = (struct write_watch){ .epoll_fd = epoll_fd, .key = key, .pid = pid, .address = address };
        /*
         * A thread created by a covered thread inherits the breakpoint; one
         * created during a pass by a thread not covered yet does not, so the
         * threads are listed again until a pass finds none new. (A thread
         * created in that window by a covered thread gets a second event: a
         * spare debug register used, never a store missed.)
         */
        for (int pass = 0; pass < MAX_LISTING_PASSES; pass++) {
                r = cover_listed_threads(w);
                if (r <= 0)
                        break;
        }
        if (r == 0 && w->n_threads == 0)
                r = -ESRCH;
        if (r > 0)
                r = -EAGAIN; /* threads kept appearing faster than they could be covered */
        if (r < 0) {
                write_watch_free(w);
                return r;
        }
        *ret_watch = w;
        return 0;
}

int write_watch_set_enabled(struct write_watch *w, bool enabled)
{
        unsigned long request = enabled ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE;
        int r = 0;

        if (w->enabled == enabled)
                return 0;
        for (size_t i = 0; i < w->n_threads; i++)
                if (ioctl(w->threads[i].breakpoint_fd, request, 0) < 0 && r == 0)
                        r = -errno;
        if (r == 0)
                w->enabled = enabled;
        return r;
}

bool write_watch_enabled(const struct write_watch *w)
{
        return w->enabled;
}

size_t write_watch_fds(const struct write_watch *w, int *out, size_t max)
{
        for (size_t i = 0; i < w->n_threads && i < max; i++)
                out[i] = w->threads[i].breakpoint_fd;
        return w->n_threads;
}

void write_watch_disarmed_elsewhere(struct write_watch *w)
{
        w->enabled = false;
}

void write_watch_free(struct write_watch *w)
{
        if (!w)
                return;
        for (size_t i = 0; i < w->n_threads; i++)
                thread_close(w, &w->threads[i]);
        free(w->threads);
        free(w);
}
