/* SPDX-License-Identifier: MIT */
#include "queue-memory.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cleanup.h"

struct queue_memory {
        pid_t pid;
        char *mem_path;
        int mem_fd;     /* /proc/PID/mem, opened at the first fallback and kept */
        bool proc_mem;  /* process_vm_readv could not read what /proc/PID/mem could */
};

int queue_memory_new(const char *proc_root, pid_t pid, struct queue_memory **ret)
{
        _cleanup_free_ struct queue_memory *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        if (asprintf(&m->mem_path, "%s/%d/mem", proc_root, (int)pid) < 0)
                return -ENOMEM;
        m->pid = pid;
        m->mem_fd = -1;
        *ret = TAKE_PTR(m);
        return 0;
}

struct queue_memory *queue_memory_free(struct queue_memory *m)
{
        if (!m)
                return NULL;
        closep(&m->mem_fd);
        free(m->mem_path);
        free(m);
        return NULL;
}

bool queue_memory_uses_proc_mem(const struct queue_memory *m)
{
        return m->proc_mem;
}

static int open_mem(struct queue_memory *m)
{
        if (m->mem_fd >= 0)
                return 0;
        m->mem_fd = open(m->mem_path, O_RDONLY | O_CLOEXEC);
        if (m->mem_fd < 0)
                return errno == ENOENT ? -ESRCH : NEG_ERRNO();
        return 0;
}

/* One range from /proc/PID/mem, whole or an error. */
static int pread_range(int fd, void *buf, const struct iovec *range)
{
        size_t done = 0;

        while (done < range->iov_len) {
                ssize_t n = pread(fd, (char *)buf + done, range->iov_len - done,
                                  (off_t)((uintptr_t)range->iov_base + done));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return NEG_ERRNO();
                /* mem_rw() reads nothing once the address space it was opened on has exited (an exec) */
                if (n == 0)
                        return -ESRCH;
                done += (size_t)n;
        }
        return 0;
}

/* Ranges [first, n) from /proc/PID/mem into buf + *bytes, adding what was read to *bytes. */
static int pread_ranges(struct queue_memory *m, void *buf, const struct iovec *remote, size_t first, size_t n,
                        size_t *bytes)
{
        int r = open_mem(m);

        if (r < 0)
                return r;
        for (size_t i = first; i < n; i++) {
                r = pread_range(m->mem_fd, (char *)buf + *bytes, &remote[i]);
                if (r < 0)
                        return r;
                *bytes += remote[i].iov_len;
        }
        return 0;
}

int queue_memory_read(struct queue_memory *m, void *buf, const struct iovec *remote, size_t n_remote,
                      size_t *ret_bytes, bool *ret_switched)
{
        size_t total = 0, bytes = 0, first = 0;
        struct iovec local;
        ssize_t got;
        int r;

        *ret_bytes = 0;
        *ret_switched = false;
        if (m->proc_mem) {
                r = pread_ranges(m, buf, remote, 0, n_remote, &bytes);
                *ret_bytes = bytes;
                return r;
        }

        for (size_t i = 0; i < n_remote; i++)
                total += remote[i].iov_len;
        local = (struct iovec){ buf, total };
        got = process_vm_readv(m->pid, &local, 1, remote, n_remote, 0);
        if (got < 0 && errno != EFAULT)
                return NEG_ERRNO();
        if (got == (ssize_t)total) {
                *ret_bytes = total;
                return 0;
        }
        /* whole ranges before the one it stopped in; that one is read again */
        while (first < n_remote && got >= 0 && bytes + remote[first].iov_len <= (size_t)got)
                bytes += remote[first++].iov_len;

        /* the range process_vm_readv could not read: is it VM_PFNMAP memory /proc/PID/mem reaches? */
        r = pread_ranges(m, buf, remote, first, first + 1, &bytes);
        if (r < 0) {
                *ret_bytes = bytes;
                return r;
        }
        m->proc_mem = true;
        *ret_switched = true;
        r = pread_ranges(m, buf, remote, first + 1, n_remote, &bytes);
        *ret_bytes = bytes;
        return r;
}
