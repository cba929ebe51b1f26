/* SPDX-License-Identifier: MIT */
#include "detector-qptr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

/*
 * ROCr keeps both indices in one amd_queue_t, 0x48 bytes apart: one remote
 * iovec spanning both costs the kernel one page lookup instead of two, which
 * measurably cheapens every poll. Other layouts get two iovecs.
 */
#define SPAN_MAX 256

struct watched_queue {
        struct detector_queue_addr addr;
        size_t first_iov, n_iov;   /* this queue's remote iovecs */
        size_t write_off, read_off; /* where its indices land in the local buffer */
        uint64_t last_write;
        bool seen; /* last_write holds a value read from the process */
};

struct watched_process {
        pid_t pid;
        struct watched_queue *queues;
        size_t n_queues;
        struct iovec *remote;
        size_t n_remote;
        unsigned char *buffer; /* process_vm_readv fills it in remote-iovec order */
        size_t buffer_size;
};

struct gpu_activity {
        uint32_t gpu_id;
        bool busy;
        bool busy_this_poll;
        uint64_t last_busy_us;
};

struct detector {
        struct detector_callbacks cb;
        void *userdata;
        struct watched_process *processes;
        size_t n_processes;
        struct gpu_activity gpus[DETECTOR_MAX_GPUS];
        size_t n_gpus;
};

int detector_new(const struct detector_callbacks *cb, void *userdata, struct detector **ret_detector)
{
        struct detector *d = calloc(1, sizeof(*d));

        if (!d)
                return -ENOMEM;
        d->cb = *cb;
        d->userdata = userdata;
        *ret_detector = d;
        return 0;
}

static void process_done(struct watched_process *p)
{
        free(p->queues);
        free(p->remote);
        free(p->buffer);
}

void detector_free(struct detector *d)
{
        if (!d)
                return;
        for (size_t i = 0; i < d->n_processes; i++)
                process_done(&d->processes[i]);
        free(d->processes);
        free(d);
}

static struct watched_process *find_process(struct detector *d, pid_t pid)
{
        for (size_t i = 0; i < d->n_processes; i++)
                if (d->processes[i].pid == pid)
                        return &d->processes[i];
        return NULL;
}

static struct gpu_activity *gpu_get(struct detector *d, uint32_t gpu_id)
{
        for (size_t i = 0; i < d->n_gpus; i++)
                if (d->gpus[i].gpu_id == gpu_id)
                        return &d->gpus[i];
        if (d->n_gpus >= DETECTOR_MAX_GPUS)
                return NULL;
        d->gpus[d->n_gpus] = (struct gpu_activity){ .gpu_id = gpu_id };
        return &d->gpus[d->n_gpus++];
}

static void add_iov(struct watched_process *p, uint64_t address, size_t len)
{
        p->remote[p->n_remote++] = (struct iovec){ (void *)(uintptr_t)address, len };
        p->buffer_size += len;
}

static void plan_queue(struct watched_process *p, size_t i, const struct detector_queue_addr *a)
{
        struct watched_queue *q = &p->queues[i];
        uint64_t w = a->write_pointer_address, r = a->read_pointer_address;

        q->addr = *a;
        q->first_iov = p->n_remote;
        if (r > w && r + 8 - w <= SPAN_MAX && (w >> 12) == ((r + 7) >> 12)) {
                q->write_off = p->buffer_size;
                q->read_off = p->buffer_size + (size_t)(r - w);
                add_iov(p, w, (size_t)(r + 8 - w));
        } else if (w > r && w + 8 - r <= SPAN_MAX && (r >> 12) == ((w + 7) >> 12)) {
                q->read_off = p->buffer_size;
                q->write_off = p->buffer_size + (size_t)(w - r);
                add_iov(p, r, (size_t)(w + 8 - r));
        } else {
                q->write_off = p->buffer_size;
                add_iov(p, w, 8);
                q->read_off = p->buffer_size;
                add_iov(p, r, 8);
        }
        q->n_iov = p->n_remote - q->first_iov;
}

int detector_watch(struct detector *d, pid_t pid, const struct detector_queue_addr *queues, size_t n_queues)
{
        struct watched_process fresh = { .pid = pid, .n_queues = n_queues };
        struct watched_process *p;

        if (n_queues > DETECTOR_MAX_QUEUES_PER_PROCESS)
                return -E2BIG;
        for (size_t i = 0; i < n_queues; i++)
                if (!gpu_get(d, queues[i].gpu_id))
                        return -E2BIG;
        fresh.queues = calloc(n_queues ? n_queues : 1, sizeof(*fresh.queues));
        fresh.remote = calloc(2 * (n_queues ? n_queues : 1), sizeof(*fresh.remote));
        fresh.buffer = malloc(2 * SPAN_MAX * (n_queues ? n_queues : 1));
        if (!fresh.queues || !fresh.remote || !fresh.buffer) {
                process_done(&fresh);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_queues; i++)
                plan_queue(&fresh, i, &queues[i]);

        p = find_process(d, pid);
        if (p) {
                /* keep what was already seen of queues that stay, so a re-watch is not taken as new work */
                for (size_t i = 0; i < n_queues; i++)
                        for (size_t j = 0; j < p->n_queues; j++)
                                if (p->queues[j].addr.write_pointer_address == queues[i].write_pointer_address) {
                                        fresh.queues[i].last_write = p->queues[j].last_write;
                                        fresh.queues[i].seen = p->queues[j].seen;
                                }
                process_done(p);
                *p = fresh;
                return 0;
        }
        if (d->n_processes >= DETECTOR_MAX_PROCESSES) {
                process_done(&fresh);
                return -E2BIG;
        }
        p = realloc(d->processes, (d->n_processes + 1) * sizeof(*p));
        if (!p) {
                process_done(&fresh);
                return -ENOMEM;
        }
        d->processes = p;
        d->processes[d->n_processes++] = fresh;
        return 0;
}

void detector_unwatch(struct detector *d, pid_t pid)
{
        struct watched_process *p = find_process(d, pid);

        if (!p)
                return;
        process_done(p);
        *p = d->processes[--d->n_processes];
}

size_t detector_n_queues(const struct detector *d)
{
        size_t n = 0;

        for (size_t i = 0; i < d->n_processes; i++)
                n += d->processes[i].n_queues;
        return n;
}

/* A queue's bytes start at whichever index comes first in its iovecs. */
static size_t queue_buffer_start(const struct watched_queue *q)
{
        return q->write_off < q->read_off ? q->write_off : q->read_off;
}

/*
 * Reads a process's pointers. Returns the number of queues read, or -errno
 * when the process is gone. A queue whose memory was unmapped stops the read
 * there (process_vm_readv reports a partial count); those queues count as idle
 * until discovery refreshes the addresses.
 */
static ssize_t read_process(struct watched_process *p)
{
        size_t queue = 0;

        while (queue < p->n_queues) {
                size_t first = queue, n_iov = 0, want = 0, got_bytes;
                struct iovec local;
                ssize_t got;

                /* at most IOV_MAX remote iovecs per call, whole queues only */
                while (queue < p->n_queues && n_iov + p->queues[queue].n_iov <= 2 * DETECTOR_QUEUES_PER_READ) {
                        n_iov += p->queues[queue].n_iov;
                        for (size_t v = 0; v < p->queues[queue].n_iov; v++)
                                want += p->remote[p->queues[queue].first_iov + v].iov_len;
                        queue++;
                }
                local = (struct iovec){ p->buffer + queue_buffer_start(&p->queues[first]), want };
                got = process_vm_readv(p->pid, &local, 1, p->remote + p->queues[first].first_iov, n_iov, 0);
                if (got < 0)
                        return errno == ESRCH ? -ESRCH : (ssize_t)first;
                got_bytes = (size_t)got;
                if (got_bytes < want) {
                        /* a partial read stops at an iovec boundary: count the whole queues it covered */
                        size_t covered = 0;

                        for (size_t q = first; q < queue; q++) {
                                size_t len = 0;

                                for (size_t v = 0; v < p->queues[q].n_iov; v++)
                                        len += p->remote[p->queues[q].first_iov + v].iov_len;
                                if (covered + len > got_bytes)
                                        return (ssize_t)q;
                                covered += len;
                        }
                }
        }
        return (ssize_t)p->n_queues;
}

void detector_poll(struct detector *d, uint64_t now_us)
{
        for (size_t g = 0; g < d->n_gpus; g++)
                d->gpus[g].busy_this_poll = false;

        for (size_t i = 0; i < d->n_processes;) {
                struct watched_process *p = &d->processes[i];
                ssize_t n = read_process(p);

                if (n == -ESRCH) {
                        pid_t pid = p->pid;

                        detector_unwatch(d, pid);
                        if (d->cb.process_gone)
                                d->cb.process_gone(pid, d->userdata);
                        continue; /* the last process moved into slot i */
                }
                for (ssize_t q = 0; q < n; q++) {
                        struct watched_queue *wq = &p->queues[q];
                        uint64_t write, read;
                        bool moved;

                        memcpy(&write, p->buffer + wq->write_off, sizeof(write));
                        memcpy(&read, p->buffer + wq->read_off, sizeof(read));
                        moved = wq->seen && write != wq->last_write;

                        if (moved || write != read)
                                gpu_get(d, wq->addr.gpu_id)->busy_this_poll = true;
                        wq->last_write = write;
                        wq->seen = true;
                }
                i++;
        }

        for (size_t g = 0; g < d->n_gpus; g++) {
                struct gpu_activity *a = &d->gpus[g];

                if (a->busy_this_poll) {
                        a->last_busy_us = now_us;
                        if (!a->busy) {
                                a->busy = true;
                                d->cb.gpu_busy(a->gpu_id, now_us, d->userdata);
                        }
                } else if (a->busy) {
                        a->busy = false;
                        d->cb.gpu_idle(a->gpu_id, a->last_busy_us, now_us, d->userdata);
                }
        }
}

bool detector_gpu_recently_busy(const struct detector *d, uint32_t gpu_id, uint64_t now_us, uint64_t recent_us)
{
        for (size_t i = 0; i < d->n_gpus; i++)
                if (d->gpus[i].gpu_id == gpu_id)
                        return d->gpus[i].busy ||
                               (d->gpus[i].last_busy_us && now_us - d->gpus[i].last_busy_us < recent_us);
        return false;
}
