/* SPDX-License-Identifier: MIT */
#include "detector.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#include "aql-barrier.h"
#include "cleanup.h"
#include "log.h"
#include "monotonic-clock.h"
#include "poll-watch.h"
#include "queue-memory.h"
#include "trap-key.h"

/*
 * ROCr keeps both indices in one amd_queue_t, 0x48 bytes apart: one remote
 * iovec spanning both costs the kernel one page lookup instead of two, which
 * measurably cheapens every poll. Other layouts get two iovecs.
 */
#define SPAN_MAX 256

struct gpu_activity;

struct watched_queue {
        struct detector_queue_addr addr;
        size_t first_iov, n_iov;   /* this queue's remote iovecs */
        size_t write_off, read_off; /* where its indices land in the local buffer */
        uint64_t last_write, last_read;
        bool seen;                 /* last_write and last_read hold values read from the process */
        uint64_t last_moved_us;    /* when its write index last moved: breakpoints go to the busiest */
        bool busy;                 /* at its last read: moved, or work outstanding */
        uint64_t last_read_us;     /* when it was last read; 0: not yet */
        uint64_t read_in_look;     /* the GPU's look_number when it was last read */
        bool waiting;              /* at its last read: stopped at a barrier that waits for a signal */
        uint64_t waiting_at;       /* the read index it waits at */
        bool head_known;           /* head_waits is what the packet at read index head_index says */
        uint64_t head_index;
        bool head_waits;
        struct write_watch *watch; /* NULL: polled */
        uint32_t watch_serial;     /* the watch's in its trap key */
        int watch_error;           /* why it is polled: 0, -errno, or NOT_CHOSEN */
};

struct watched_process {
        pid_t pid;
        struct watched_queue *queues; /* sorted by GPU: a GPU's queues are one run of iovecs */
        size_t n_queues;
        struct iovec *remote;
        size_t n_remote;
        unsigned char *buffer; /* queue_memory_read() fills it in remote-iovec order */
        size_t buffer_size;
        struct queue_memory *memory; /* how its memory is read: process_vm_readv, or /proc/PID/mem where not */
        int read_error; /* -EFAULT, -EACCES or -EPERM: its last read could not reach a queue, 0 otherwise */
};

struct gpu_activity {
        struct detector *detector; /* the breakpoint handler's way back */
        uint32_t gpu_id;
        bool busy;
        bool busy_this_poll;
        bool armed;         /* every breakpoint of its queues is enabled */
        bool trapped;       /* a trap made it busy: the next look reads every process, the writer unknown */
        size_t n_queues;    /* watched queues on this GPU */
        size_t n_polled;    /* of which without a breakpoint */
        size_t n_waiting;   /* of which waiting at a barrier at their last read */
        uint64_t last_busy_us;
        uint64_t last_poll_us; /* when its last complete look began */
        bool look_under_way;   /* a look gave way: the next call goes on with it */
        uint64_t look_started_us;
        uint64_t look_number;  /* counts the looks begun: which processes this one has read */
        uint64_t watch_serial; /* changes with anything a poll watch of it rests on (detector_poll_watch()) */
};

struct detector {
        struct detector_callbacks cb;
        void *userdata;
        int trap_fd; /* the epoll set of every breakpoint's fd (trap-key.h), waited on by the owner */
        bool freeing; /* in detector_free(): the owner hears of no breakpoint closed */
        uint32_t next_watch_serial;
        enum detector_mode mode;
        uint64_t active_window_us; /* a process whose queues moved within it is active */
        struct watched_process *processes;
        size_t n_processes;
        struct gpu_activity gpus[DETECTOR_MAX_GPUS];
        size_t n_gpus;
        char *proc_root; /* where /proc/PID/mem is, for queue_memory */
};

_Static_assert(DETECTOR_BREAKPOINTS_PER_PROCESS == 4, "poll_reason() says four");

/* watch_error of a queue left to polling because its process has DETECTOR_BREAKPOINTS_PER_PROCESS already */
#define NOT_CHOSEN 1

int detector_new(const struct detector_callbacks *cb, void *userdata, enum detector_mode mode,
                 struct detector **ret_detector)
{
        struct detector *d;
        int r;

        if (mode >= _DETECTOR_MODE_MAX)
                return -EINVAL;
        d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        d->cb = *cb;
        d->userdata = userdata;
        d->mode = mode;
        d->trap_fd = epoll_create1(EPOLL_CLOEXEC);
        d->proc_root = strdup("/proc");
        r = d->trap_fd < 0 ? -errno : !d->proc_root ? -ENOMEM : 0;
        if (r < 0) {
                detector_free(d);
                return r;
        }
        *ret_detector = d;
        return 0;
}

int detector_trap_fd(const struct detector *d)
{
        return d->trap_fd;
}

int detector_set_proc_root(struct detector *d, const char *proc_root)
{
        char *copy = strdup(proc_root);

        if (!copy)
                return -ENOMEM;
        free(d->proc_root);
        d->proc_root = copy;
        return 0;
}

/* Closes a queue's breakpoint, if any, and tells the owner. */
static void close_watch(struct detector *d, struct watched_queue *q)
{
        if (!q->watch)
                return;
        write_watch_free(TAKE_PTR(q->watch));
        if (!d->freeing && d->cb.breakpoint_closed)
                d->cb.breakpoint_closed(trap_key_make(q->addr.gpu_id, q->watch_serial), d->userdata);
}

static void process_done(struct detector *d, struct watched_process *p)
{
        for (size_t i = 0; i < p->n_queues; i++)
                close_watch(d, &p->queues[i]);
        free(p->queues);
        free(p->remote);
        free(p->buffer);
        queue_memory_free(p->memory);
}

void detector_free(struct detector *d)
{
        if (!d)
                return;
        d->freeing = true;
        for (size_t i = 0; i < d->n_processes; i++)
                process_done(d, &d->processes[i]);
        free(d->processes);
        if (d->trap_fd >= 0)
                close(d->trap_fd);
        free(d->proc_root);
        free(d);
}

static struct watched_process *find_process(struct detector *d, pid_t pid)
{
        for (size_t i = 0; i < d->n_processes; i++)
                if (d->processes[i].pid == pid)
                        return &d->processes[i];
        return NULL;
}

static struct gpu_activity *gpu_find(struct detector *d, uint32_t gpu_id)
{
        for (size_t i = 0; i < d->n_gpus; i++)
                if (d->gpus[i].gpu_id == gpu_id)
                        return &d->gpus[i];
        return NULL;
}

static struct gpu_activity *gpu_get(struct detector *d, uint32_t gpu_id)
{
        struct gpu_activity *a = gpu_find(d, gpu_id);

        if (a)
                return a;
        if (d->n_gpus >= DETECTOR_MAX_GPUS)
                return NULL;
        d->gpus[d->n_gpus] = (struct gpu_activity){ .detector = d, .gpu_id = gpu_id };
        return &d->gpus[d->n_gpus++];
}

/* Recounts each GPU's queues and polled queues after a change of what is watched. */
static void count_queues(struct detector *d)
{
        for (size_t g = 0; g < d->n_gpus; g++) {
                d->gpus[g].n_queues = d->gpus[g].n_polled = d->gpus[g].n_waiting = 0;
                d->gpus[g].watch_serial++;
        }
        for (size_t i = 0; i < d->n_processes; i++)
                for (size_t q = 0; q < d->processes[i].n_queues; q++) {
                        const struct watched_queue *wq = &d->processes[i].queues[q];
                        struct gpu_activity *a = gpu_find(d, wq->addr.gpu_id);

                        a->n_queues++;
                        a->n_polled += !wq->watch;
                        a->n_waiting += wq->waiting;
                }
        for (size_t g = 0; g < d->n_gpus; g++)
                if (d->gpus[g].n_queues == 0)
                        d->gpus[g].look_under_way = false; /* its processes left: the next look is a new one */
}

/* A breakpoint that cannot be armed or disarmed: its queue is polled from now on. */
static void watch_lost(struct detector *d, struct watched_process *p, struct watched_queue *wq, int error, bool armed)
{
        log_warning_errno(error, "Process %d: queue at 0x%" PRIx64 " on GPU %u is polled from now on: "
                                 "its breakpoint cannot be %s",
                          (int)p->pid, wq->addr.write_pointer_address, wq->addr.gpu_id,
                          armed ? "armed" : "disarmed");
        close_watch(d, wq);
        wq->watch_error = error;
}

/* Enables or disables every breakpoint on a GPU; a queue whose breakpoint fails is polled from then on. */
static void gpu_set_armed(struct detector *d, struct gpu_activity *a, bool armed)
{
        bool lost = false;

        for (size_t i = 0; i < d->n_processes; i++)
                for (size_t q = 0; q < d->processes[i].n_queues; q++) {
                        struct watched_queue *wq = &d->processes[i].queues[q];
                        int r;

                        if (!wq->watch || wq->addr.gpu_id != a->gpu_id)
                                continue;
                        r = write_watch_set_enabled(wq->watch, armed);
                        if (r < 0) {
                                watch_lost(d, &d->processes[i], wq, r, armed);
                                lost = true;
                        }
                }
        if (lost)
                count_queues(d);
        a->armed = armed;
        a->watch_serial++;
}

/*
 * A trap: the writer's breakpoints on a's GPU are disarmed (by the waiter
 * already, when elsewhere), the other processes' left armed.
 */
static void disarm_writer(struct detector *d, struct watched_process *p, struct gpu_activity *a, bool elsewhere)
{
        bool lost = false;

        for (size_t q = 0; q < p->n_queues; q++) {
                struct watched_queue *wq = &p->queues[q];
                int r;

                if (!wq->watch || wq->addr.gpu_id != a->gpu_id)
                        continue;
                if (elsewhere) {
                        write_watch_disarmed_elsewhere(wq->watch);
                        continue;
                }
                r = write_watch_set_enabled(wq->watch, false);
                if (r < 0) {
                        watch_lost(d, p, wq, r, false);
                        lost = true;
                }
        }
        if (lost)
                count_queues(d);
        a->armed = false;
        a->watch_serial++;
}

/*
 * Online work on a GPU: polling follows it from here. Breakpoints stay
 * armed but the writer's (disarm_writer()), so that a quiet process on the
 * busy GPU needs no look to be seen starting work.
 */
static void gpu_saw_work(struct detector *d, struct gpu_activity *a, uint64_t now_us)
{
        a->last_busy_us = now_us;
        if (!a->busy) {
                a->busy = true;
                a->watch_serial++;
                d->cb.gpu_busy(a->gpu_id, now_us, d->userdata);
        }
}

/* A breakpoint fired: the online side of an idle GPU stored a write index. */
static void store_seen(struct detector *d, struct gpu_activity *a, uint64_t now_us)
{
        if (a->busy)
                return; /* a sample queued before the disarming */
        a->trapped = true;
        /* the writer may be among the processes a look under way has read already: start afresh */
        a->look_under_way = false;
        gpu_saw_work(d, a, now_us);
}

static struct watched_queue *find_watch(struct detector *d, uint32_t serial, struct watched_process **ret_process)
{
        for (size_t i = 0; i < d->n_processes; i++)
                for (size_t q = 0; q < d->processes[i].n_queues; q++)
                        if (d->processes[i].queues[q].watch && d->processes[i].queues[q].watch_serial == serial) {
                                *ret_process = &d->processes[i];
                                return &d->processes[i].queues[q];
                        }
        return NULL;
}

/*
 * The waiter disarmed a writer whose watch is closed here already (a queue
 * watched anew since): it disabled every breakpoint of that process on the
 * GPU, and which process that was is not known here. Every watch on the GPU
 * counts as disarmed, so that looks read their queues and the next idle look
 * arms them all again (enabling one still armed changes nothing).
 */
static void disarmed_unknown_writer(struct detector *d, struct gpu_activity *a)
{
        for (size_t i = 0; i < d->n_processes; i++)
                for (size_t q = 0; q < d->processes[i].n_queues; q++) {
                        struct watched_queue *wq = &d->processes[i].queues[q];

                        if (wq->watch && wq->addr.gpu_id == a->gpu_id)
                                write_watch_disarmed_elsewhere(wq->watch);
                }
        a->armed = false;
        a->watch_serial++;
}

void detector_trapped(struct detector *d, uint64_t key, uint32_t revents, uint64_t now_us, bool writer_disarmed)
{
        struct gpu_activity *a = gpu_find(d, trap_key_gpu(key));
        struct watched_process *p = NULL;
        struct watched_queue *wq = find_watch(d, trap_key_serial(key), &p);
        bool gone, stored = false;

        if (!a)
                return;
        gone = wq && write_watch_consume(wq->watch, &stored);
        if (gone)
                a->armed = false; /* its process exited: the next poll of this GPU finds it gone */
        /* a hang-up's report whose consuming took a store's wake-up: the store is this report's */
        if (!(revents & EPOLLIN) && !stored)
                return;
        if (wq && !gone)
                disarm_writer(d, p, a, writer_disarmed);
        else if (!wq && writer_disarmed)
                disarmed_unknown_writer(d, a);
        /* a store, also when its watch or its process has gone since (the owner may have acted on it,
         * a suspension on the trap): the GPU is busy until a look finds it idle */
        store_seen(d, a, now_us);
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

static int compare_gpu(const void *a, const void *b)
{
        const struct detector_queue_addr *x = a, *y = b;

        return x->gpu_id < y->gpu_id ? -1 : x->gpu_id > y->gpu_id;
}

/*
 * Puts each GPU's queues with a breakpoint last in its run, and plans the
 * iovecs again: a look passes over the armed ones (read_end()), so that it
 * reads a shorter run, one range less per armed queue. Order only: a queue
 * whose breakpoint is lost later is read wherever it stands.
 */
static void order_reads(struct watched_process *p)
{
        size_t start = 0;

        while (start < p->n_queues) {
                size_t end = start, polled = start;

                while (end < p->n_queues && p->queues[end].addr.gpu_id == p->queues[start].addr.gpu_id)
                        end++;
                /* a stable partition of [start, end): the queues without a breakpoint first */
                for (size_t i = start; i < end; i++)
                        if (!p->queues[i].watch) {
                                struct watched_queue q = p->queues[i];

                                memmove(&p->queues[polled + 1], &p->queues[polled], (i - polled) * sizeof(q));
                                p->queues[polled++] = q;
                        }
                start = end;
        }
        p->n_remote = p->buffer_size = 0;
        for (size_t i = 0; i < p->n_queues; i++)
                plan_queue(p, i, &p->queues[i].addr);
}

static const char *poll_reason(const struct detector *d, const struct watched_queue *q)
{
        if (q->watch)
                return NULL;
        if (q->watch_error == NOT_CHOSEN)
                return "its process has 4 breakpoints already (x86 has 4 debug registers per thread)";
        if (q->watch_error < 0)
                return write_watch_strerror(q->watch_error);
        return "DetectorMode=poll";
}

/* Tells the owner of a breakpoint opened (its fds, for a waiter that disarms it). */
static void watch_opened(struct detector *d, const struct watched_process *p, const struct watched_queue *q)
{
        size_t n;
        int *fds;

        if (!d->cb.breakpoint_opened)
                return;
        n = write_watch_fds(q->watch, NULL, 0);
        fds = malloc((n ? n : 1) * sizeof(*fds));
        if (!fds) {
                /* the waiter cannot disarm it: the detector does, when it hears of the trap */
                log_warning("Process %d: out of memory; its breakpoint is disarmed by the loop", (int)p->pid);
                return;
        }
        write_watch_fds(q->watch, fds, n);
        d->cb.breakpoint_opened(trap_key_make(q->addr.gpu_id, q->watch_serial), p->pid, fds, n, d->userdata);
        free(fds);
}

/* The queue without a breakpoint that moved last, among those not tried yet; NULL when none is left. */
static struct watched_queue *next_candidate(struct watched_process *p)
{
        struct watched_queue *best = NULL;

        for (size_t i = 0; i < p->n_queues; i++) {
                struct watched_queue *q = &p->queues[i];

                if (!q->watch && q->watch_error == NOT_CHOSEN && (!best || q->last_moved_us > best->last_moved_us))
                        best = q;
        }
        return best;
}

/*
 * Gives breakpoints to up to DETECTOR_BREAKPOINTS_PER_PROCESS of p's
 * queues, the most recently active first; the rest are polled. A refusal
 * would be the same for every other queue of the process (the permission,
 * its threads' registers, the file limit), so the first one ends the
 * attempts. Logs when the outcome differs from the previous plan.
 */
static void plan_breakpoints(struct detector *d, struct watched_process *p, size_t was_watched, int was_error)
{
        size_t n_watched = 0;
        int error = 0;
        struct watched_queue *q;

        for (size_t i = 0; i < p->n_queues; i++) {
                q = &p->queues[i];
                if (d->mode == DETECTOR_MODE_POLL)
                        close_watch(d, q);
                n_watched += q->watch != NULL;
                if (!q->watch)
                        q->watch_error = d->mode == DETECTOR_MODE_POLL ? 0 : NOT_CHOSEN;
        }
        while (d->mode != DETECTOR_MODE_POLL && (q = next_candidate(p))) {
                struct gpu_activity *a = gpu_find(d, q->addr.gpu_id);
                int r;

                if (n_watched >= DETECTOR_BREAKPOINTS_PER_PROCESS || error < 0) {
                        q->watch_error = error < 0 ? error : NOT_CHOSEN;
                        if (error == 0)
                                break; /* the rest stay NOT_CHOSEN */
                        continue;
                }
                q->watch_serial = ++d->next_watch_serial;
                r = write_watch_new(d->trap_fd, trap_key_make(q->addr.gpu_id, q->watch_serial), p->pid,
                                    q->addr.write_pointer_address, &q->watch);
                if (r < 0) {
                        q->watch_error = error = r;
                        continue;
                }
                watch_opened(d, p, q);
                q->watch_error = 0;
                n_watched++;
                a->armed = false; /* the next poll arms it, then looks once more */
        }
        if (d->mode == DETECTOR_MODE_POLL || (n_watched == was_watched && error == was_error))
                return;
        if (error < 0)
                log_full_errno(d->mode == DETECTOR_MODE_BREAKPOINT ? LOG_LEVEL_WARNING : LOG_LEVEL_INFO, 0,
                               "Process %d: %zu of its %zu online queues have a write breakpoint, the others are "
                               "polled: %s", (int)p->pid, n_watched, p->n_queues, write_watch_strerror(error));
        else
                log_info("Process %d: %zu of its %zu online queues have a write breakpoint%s", (int)p->pid,
                         n_watched, p->n_queues,
                         n_watched < p->n_queues ? ", the others are polled (debug registers per thread)" : "");
}

static void process_watch_summary(const struct watched_process *p, size_t *ret_watched, int *ret_error)
{
        *ret_watched = 0;
        *ret_error = 0;
        for (size_t i = 0; i < p->n_queues; i++) {
                *ret_watched += p->queues[i].watch != NULL;
                if (p->queues[i].watch_error < 0)
                        *ret_error = p->queues[i].watch_error;
        }
}

int detector_watch(struct detector *d, pid_t pid, const struct detector_queue_addr *queues, size_t n_queues)
{
        struct watched_process fresh = { .pid = pid, .n_queues = n_queues };
        struct detector_queue_addr *sorted;
        struct watched_process *p;
        size_t was_watched = 0;
        int was_error = 0;

        if (n_queues > DETECTOR_MAX_QUEUES_PER_PROCESS)
                return -E2BIG;
        for (size_t i = 0; i < n_queues; i++)
                if (!gpu_get(d, queues[i].gpu_id))
                        return -E2BIG;
        p = find_process(d, pid);
        /* a process read through /proc/PID/mem stays so (queue-memory.h): its reader goes to the new watch */
        if (p) {
                fresh.memory = TAKE_PTR(p->memory);
                fresh.read_error = p->read_error;
        } else if (queue_memory_new(d->proc_root, pid, &fresh.memory) < 0)
                return -ENOMEM;
        sorted = malloc((n_queues ? n_queues : 1) * sizeof(*sorted));
        fresh.queues = calloc(n_queues ? n_queues : 1, sizeof(*fresh.queues));
        fresh.remote = calloc(2 * (n_queues ? n_queues : 1), sizeof(*fresh.remote));
        fresh.buffer = malloc(2 * SPAN_MAX * (n_queues ? n_queues : 1));
        if (!sorted || !fresh.queues || !fresh.remote || !fresh.buffer) {
                free(sorted);
                if (p)
                        p->memory = TAKE_PTR(fresh.memory);
                process_done(d, &fresh);
                return -ENOMEM;
        }
        /* one GPU's queues side by side: a poll of that GPU reads one run of iovecs */
        if (n_queues) /* queues may be NULL when there are none */
                memcpy(sorted, queues, n_queues * sizeof(*sorted));
        qsort(sorted, n_queues, sizeof(*sorted), compare_gpu);
        for (size_t i = 0; i < n_queues; i++)
                plan_queue(&fresh, i, &sorted[i]);
        free(sorted);

        if (p) {
                /* keep what was already seen of queues that stay, so a re-watch is not taken as new work,
                 * and their breakpoints */
                process_watch_summary(p, &was_watched, &was_error);
                for (size_t i = 0; i < n_queues; i++)
                        for (size_t j = 0; j < p->n_queues; j++) {
                                struct watched_queue *old = &p->queues[j], *q = &fresh.queues[i];

                                if (old->addr.write_pointer_address != q->addr.write_pointer_address)
                                        continue;
                                q->last_write = old->last_write;
                                q->last_read = old->last_read;
                                q->seen = old->seen;
                                q->waiting = old->waiting;
                                q->waiting_at = old->waiting_at;
                                q->last_moved_us = old->last_moved_us;
                                q->busy = old->busy;
                                if (old->addr.gpu_id == q->addr.gpu_id) {
                                        q->watch = TAKE_PTR(old->watch);
                                        q->watch_serial = old->watch_serial;
                                }
                        }
                process_done(d, p);
                *p = fresh;
        } else {
                if (d->n_processes >= DETECTOR_MAX_PROCESSES) {
                        process_done(d, &fresh);
                        return -E2BIG;
                }
                p = realloc(d->processes, (d->n_processes + 1) * sizeof(*p));
                if (!p) {
                        process_done(d, &fresh);
                        return -ENOMEM;
                }
                d->processes = p;
                p = &d->processes[d->n_processes++];
                *p = fresh;
        }
        plan_breakpoints(d, p, was_watched, was_error);
        order_reads(p);
        count_queues(d);
        return 0;
}

void detector_set_active_window(struct detector *d, uint64_t active_window_us)
{
        d->active_window_us = active_window_us;
}

int detector_set_mode(struct detector *d, enum detector_mode mode)
{
        if (mode >= _DETECTOR_MODE_MAX)
                return -EINVAL;
        if (mode == d->mode)
                return 0;
        d->mode = mode;
        for (size_t i = 0; i < d->n_processes; i++) {
                struct watched_process *p = &d->processes[i];
                size_t was_watched;
                int was_error;

                process_watch_summary(p, &was_watched, &was_error);
                plan_breakpoints(d, p, was_watched, was_error);
                order_reads(p);
        }
        count_queues(d);
        return 0;
}

void detector_unwatch(struct detector *d, pid_t pid)
{
        struct watched_process *p = find_process(d, pid);

        if (!p)
                return;
        process_done(d, p);
        *p = d->processes[--d->n_processes];
        count_queues(d);
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

/* The queue of p in [first, end) that holds byte `bytes` of a read that began at queue first. */
static size_t queue_at_byte(const struct watched_process *p, size_t first, size_t end, size_t bytes)
{
        size_t covered = 0;

        for (size_t q = first; q < end; q++) {
                size_t len = 0;

                for (size_t v = 0; v < p->queues[q].n_iov; v++)
                        len += p->remote[p->queues[q].first_iov + v].iov_len;
                if (covered + len > bytes)
                        return q;
                covered += len;
        }
        return end;
}

static void log_read_through_proc_mem(const struct watched_process *p)
{
        log_warning("Process %d: its queues' memory cannot be read with process_vm_readv (GTT memory mapped "
                    "VM_PFNMAP); reading it through /proc/%d/mem from now on", (int)p->pid, (int)p->pid);
}

/*
 * Reads a process's pointers of queues [first, end) (queue_memory_read():
 * process_vm_readv, or /proc/PID/mem where that cannot reach the memory).
 * Returns the index after the last queue read, or -ESRCH when the process
 * is gone. A queue whose memory was unmapped (-EIO) stops the read there;
 * those queues count as idle until discovery refreshes the addresses. A
 * queue neither way may read (-EFAULT, -EACCES, -EPERM) also stops it, and
 * p->read_error says so: those queues are not idle, their state is unknown.
 */
static ssize_t read_process(struct watched_process *p, size_t first_queue, size_t end_queue)
{
        size_t queue = first_queue;
        int was_error = p->read_error;

        p->read_error = 0;
        while (queue < end_queue) {
                size_t first = queue, n_iov = 0, got_bytes;
                bool switched;
                int r;

                /* at most IOV_MAX remote iovecs per call, whole queues only */
                while (queue < end_queue && n_iov + p->queues[queue].n_iov <= 2 * DETECTOR_QUEUES_PER_READ)
                        n_iov += p->queues[queue++].n_iov;
                r = queue_memory_read(p->memory, p->buffer + queue_buffer_start(&p->queues[first]),
                                      p->remote + p->queues[first].first_iov, n_iov, &got_bytes, &switched);
                if (switched)
                        log_read_through_proc_mem(p);
                if (r == -ESRCH)
                        return -ESRCH;
                if (r < 0) {
                        if (r == -EFAULT || r == -EACCES || r == -EPERM)
                                p->read_error = r;
                        if (p->read_error && !was_error)
                                log_warning_errno(r, "Process %d: its online queues cannot be read, neither with "
                                                     "process_vm_readv nor through /proc/%d/mem: counted busy, "
                                                     "since their work cannot be seen (gpreemptctl status shows "
                                                     "read_error)",
                                                  (int)p->pid, (int)p->pid);
                        return (ssize_t)queue_at_byte(p, first, queue, got_bytes);
                }
        }
        return (ssize_t)end_queue;
}

/* Marks a queue waiting at read index `read`, or not waiting, and keeps its GPU's count. */
static void set_waiting(struct detector *d, struct watched_queue *wq, bool waiting, uint64_t read)
{
        if (waiting != wq->waiting) {
                struct gpu_activity *a = gpu_find(d, wq->addr.gpu_id);

                if (waiting)
                        a->n_waiting++;
                else
                        a->n_waiting--;
                a->watch_serial++;
        }
        wq->waiting = waiting;
        wq->waiting_at = read;
}

/*
 * Whether the packet at a queue's read index is a barrier that waits for a
 * signal (aql-barrier.h). The answer holds as long as the read index stays:
 * the packet there cannot change, and a released barrier moves the index.
 * So it is read once per index (the packet, and a barrier's signals), not at
 * every look; only a packet still being written is read again. A packet or
 * a signal that cannot be read does not wait: its queue counts busy, as
 * every queue with packets left did before barriers were read.
 */
static bool queue_head_waits(struct watched_process *p, struct watched_queue *wq, uint64_t read)
{
        const struct aql_ring ring = { wq->addr.ring_base_address, wq->addr.ring_size };
        bool was_proc_mem = queue_memory_uses_proc_mem(p->memory);
        enum aql_head head;
        int r;

        if (wq->head_known && wq->head_index == read)
                return wq->head_waits;
        r = aql_head_read(p->memory, &ring, read, &head);
        if (!was_proc_mem && queue_memory_uses_proc_mem(p->memory))
                log_read_through_proc_mem(p);
        if (r == 0 && head == AQL_HEAD_UNPUBLISHED)
                return false;
        if (r < 0 && r != -EINVAL)
                log_full_errno(LOG_LEVEL_DEBUG, r, "Process %d: the packet at read index %" PRIu64 " of its queue at 0x%"
                               PRIx64 " cannot be read: counted busy", (int)p->pid, read, wq->addr.write_pointer_address);
        wq->head_known = true;
        wq->head_index = read;
        wq->head_waits = r == 0 && head == AQL_HEAD_WAITS;
        return wq->head_waits;
}

/*
 * Whether a queue has work, from its indices as just read. Work: its write
 * index moved, or packets are left that it does not wait in front of. A
 * queue whose read index stays at a barrier that waits for a signal is
 * waiting, not working: the GPU does nothing for it, and a store behind the
 * barrier adds packets that run only once it is released. Its packets are
 * looked at only once its read index stopped moving (one look later than it
 * could be): a queue whose index moves is working anyway, and reading its
 * ring at every look would cost a system call each. When a waiting queue's
 * read index moves past the barrier onto packets after it, or past them,
 * those packets are new work that no store announced.
 */
static bool queue_has_work(struct detector *d, struct watched_process *p, struct watched_queue *wq,
                           uint64_t write, uint64_t read, bool moved)
{
        bool released_work = wq->waiting && read - wq->waiting_at > 1;
        bool waits = write != read && wq->seen && read == wq->last_read && queue_head_waits(p, wq, read);

        set_waiting(d, wq, waits, read);
        if (waits)
                return false;
        return moved || write != read || released_work;
}

/*
 * p's queues on gpu_id: [*first, *end), empty when it has none there. They
 * are sorted by GPU, so most processes, outside the GPU's range, are passed
 * over at once: a look at the busy cadence otherwise scans every queue of
 * every process, twice, which at scale was a visible share of the loop's
 * time (docs/benchmarks/daemon-internals.md, "Looks at the online queues").
 */
static void gpu_range(const struct watched_process *p, uint32_t gpu_id, size_t *first, size_t *end)
{
        size_t i = 0;

        if (p->n_queues == 0 || gpu_id < p->queues[0].addr.gpu_id || gpu_id > p->queues[p->n_queues - 1].addr.gpu_id) {
                *first = *end = 0;
                return;
        }
        while (i < p->n_queues && p->queues[i].addr.gpu_id != gpu_id)
                i++;
        *first = i;
        while (i < p->n_queues && p->queues[i].addr.gpu_id == gpu_id)
                i++;
        *end = i;
}

/* Moves processes[i] to the front, keeping the others' order. */
static void move_to_front(struct detector *d, size_t i)
{
        struct watched_process p = d->processes[i];

        memmove(&d->processes[1], &d->processes[0], i * sizeof(p));
        d->processes[0] = p;
}

/*
 * Whether p's queues on a GPU, [first, end), moved within the active window
 * or wait at a barrier (whose release no store announces): a process neither
 * is only looked at in turn by a quick look.
 */
static bool process_quiet(const struct detector *d, const struct watched_process *p, size_t first, size_t end,
                          uint64_t now_us)
{
        for (size_t q = first; q < end; q++)
                if ((p->queues[q].last_moved_us && now_us - p->queues[q].last_moved_us < d->active_window_us) ||
                    p->queues[q].waiting)
                        return false;
        return true;
}

/* Whether p's queues on a GPU, [first, end), had work outstanding at their last read. */
static bool process_had_work(const struct watched_process *p, size_t first, size_t end)
{
        for (size_t q = first; q < end; q++)
                if (p->queues[q].busy)
                        return true;
        return false;
}

/* What a look reads of the processes on a GPU. */
enum look {
        LOOK_QUICK,       /* the busy cadence's: the active processes (read_gpu()) */
        LOOK_FULL,        /* every process */
        LOOK_EVERY_QUEUE, /* every process, the armed queues too */
};

/*
 * The end of what a look reads of p's queues on a GPU, [first, end): past
 * the last queue that is not armed and idle. A store to an armed queue
 * traps, so an idle one stays idle until a trap says otherwise; but work the
 * read right after its arming found (stored before the arming) or a barrier
 * wait it found (whose release no store announces) keeps it read until that
 * is over. order_reads() puts the armed queues last, so this is usually the
 * polled queues' run; first when every queue is armed and idle.
 */
static size_t read_end(const struct watched_process *p, size_t first, size_t end)
{
        while (end > first && p->queues[end - 1].watch && write_watch_enabled(p->queues[end - 1].watch) &&
               !p->queues[end - 1].busy && !p->queues[end - 1].waiting)
                end--;
        return end;
}

/*
 * The quiet process on a GPU whose queues there were read longest ago: a
 * quick look's one read of the quiet ones. 0 if none. A process with nothing
 * to read there (every queue armed and idle) takes no turn. Judged by its queues
 * on this GPU: a process read every look on another GPU keeps its turn here.
 */
static pid_t quiet_turn(const struct detector *d, uint32_t gpu_id, uint64_t now_us)
{
        const struct watched_process *turn = NULL;
        uint64_t turn_read_us = 0;

        for (size_t i = 0; i < d->n_processes; i++) {
                const struct watched_process *p = &d->processes[i];
                size_t first, end;

                gpu_range(p, gpu_id, &first, &end);
                if (first < end && process_quiet(d, p, first, end, now_us) && read_end(p, first, end) > first &&
                    (!turn || p->queues[first].last_read_us < turn_read_us)) {
                        turn = p;
                        turn_read_us = p->queues[first].last_read_us;
                }
        }
        return turn ? turn->pid : 0;
}

/*
 * Reads the processes' queues on a GPU; returns whether any has work (its
 * write index moved, or is ahead of the read index). A quick look reads the
 * processes that were active within the active window or had work at their
 * last read and, of the quiet ones, on an idle GPU only the one read longest
 * ago, on a busy GPU none (poll_gpu() reads them all before the GPU counts as
 * idle); the others count as idle, as at their last read. Reading them all at the busy cadence costs a process_vm_readv per
 * online process on the GPU at every look, a large share of a core at scale
 * (docs/benchmarks/daemon-internals.md, "Looks at the online queues"), and a
 * write landing early in such a look waited for the whole of it.
 *
 * The first process found with work is acted on at once (gpu_saw_work),
 * before the others are read. Processes whose queues moved go to the front,
 * so the next look reads the active ones first. A process found gone is no
 * longer watched, and said so.
 *
 * A look that has found no work stops between two processes once the clock
 * reaches give_way_at_us (*ret_gave_way); while a look is under way, the
 * processes it read already (their queues' read_in_look is its number) are
 * passed over.
 */
static bool read_gpu(struct detector *d, struct gpu_activity *a, uint64_t now_us, enum look look,
                     uint64_t give_way_at_us, bool *ret_gave_way)
{
        pid_t turn = look == LOOK_QUICK && !a->busy ? quiet_turn(d, a->gpu_id, now_us) : 0;
        bool busy = false, read_one = false;

        *ret_gave_way = false;
        for (size_t i = 0; i < d->n_processes;) {
                struct watched_process *p = &d->processes[i];
                bool moved_here = false, busy_here = false;
                size_t first, end, armed_from;
                ssize_t n;

                gpu_range(p, a->gpu_id, &first, &end);
                armed_from = look == LOOK_EVERY_QUEUE ? end : read_end(p, first, end);
                if (first == end || (a->look_under_way && p->queues[first].read_in_look == a->look_number)) {
                        i++; /* not on this GPU, or read by this look's earlier pieces */
                        continue;
                }
                /* no clock read when nothing is due (UINT64_MAX): the idle daemon's looks */
                if (!busy && read_one && give_way_at_us != UINT64_MAX && monotonic_clock_us() >= give_way_at_us) {
                        *ret_gave_way = true;
                        return false;
                }
                if ((look == LOOK_QUICK && p->pid != turn && process_quiet(d, p, first, end, now_us) &&
                     !process_had_work(p, first, end)) ||
                    armed_from == first) {
                        n = -EAGAIN; /* not read: idle at its last read, or every queue armed */
                } else {
                        bool was_proc_mem = queue_memory_uses_proc_mem(p->memory);

                        n = read_process(p, first, armed_from);
                        read_one = true;
                        if (queue_memory_uses_proc_mem(p->memory) != was_proc_mem)
                                a->watch_serial++; /* the worker's process_vm_readv cannot read it */
                        for (size_t q = first; q < end; q++) {
                                p->queues[q].last_read_us = now_us;
                                p->queues[q].read_in_look = a->look_number;
                        }
                }
                if (n == -ESRCH) {
                        pid_t pid = p->pid;

                        detector_unwatch(d, pid);
                        if (d->cb.process_gone)
                                d->cb.process_gone(pid, d->userdata);
                        continue; /* the last process moved into slot i */
                }
                for (size_t q = first; n >= 0 && q < (size_t)n; q++) {
                        struct watched_queue *wq = &p->queues[q];
                        uint64_t write, read;
                        bool moved;

                        memcpy(&write, p->buffer + wq->write_off, sizeof(write));
                        memcpy(&read, p->buffer + wq->read_off, sizeof(read));
                        if (!wq->seen)
                                a->watch_serial++; /* a watch waits for every queue's first read */
                        /* work outstanding at the first read (a process watched as it starts a request)
                         * is as recent as a move: its GPU is recently busy */
                        moved = wq->seen ? write != wq->last_write : write != read;
                        if (moved)
                                wq->last_moved_us = now_us;
                        wq->busy = queue_has_work(d, p, wq, write, read, moved);
                        moved_here = moved_here || moved;
                        busy_here = busy_here || wq->busy;
                        wq->last_write = write;
                        wq->last_read = read;
                        wq->seen = true;
                }
                /*
                 * Queues a partial read did not reach count as idle until discovery
                 * refreshes them, if their memory was unmapped; if it could not be read,
                 * as busy: online work that cannot be seen must not be taken for none.
                 */
                for (size_t q = n >= 0 ? (size_t)n : armed_from; q < armed_from; q++) {
                        p->queues[q].busy = n >= 0 && p->read_error;
                        if (n >= 0)
                                set_waiting(d, &p->queues[q], false, 0); /* not read: not known to wait */
                }
                busy_here = busy_here || (n >= 0 && (size_t)n < armed_from && p->read_error);
                if (moved_here && i > 0)
                        move_to_front(d, i);
                i++;
                if (busy_here && !busy) {
                        busy = true;
                        gpu_saw_work(d, a, now_us);
                }
        }
        return busy;
}

static bool arming_held(const struct detector *d, const struct gpu_activity *a)
{
        return d->cb.arming_held && d->cb.arming_held(a->gpu_id, d->userdata);
}

/*
 * Whether an idle GPU's breakpoints are to be armed: not all armed, no queue
 * waiting at a barrier (a store behind it is no work, yet a trap would
 * suspend on it at once, and the GPU is on the busy cadence anyway, which
 * sees the release), and not held by the owner, unless this is the look
 * before its resume (held_too).
 */
static bool may_arm(const struct detector *d, const struct gpu_activity *a, bool held_too)
{
        return !a->armed && a->n_polled < a->n_queues && a->n_waiting == 0 && (held_too || !arming_held(d, a));
}

/*
 * Arms an idle GPU at once, so that the next store wakes the waiter and a GPU
 * whose queues all have breakpoints needs no looks until then; then looks
 * once more: a store between the last read and the arming would otherwise
 * wait for a poll that may never come. Returns whether that look found work.
 */
static bool arm_and_read_again(struct detector *d, struct gpu_activity *a, uint64_t now_us)
{
        bool gave_way;

        gpu_set_armed(d, a, true);
        return read_gpu(d, a, now_us, LOOK_EVERY_QUEUE, UINT64_MAX, &gave_way);
}

/*
 * A look at gpu_id: quick, or going on with one that gave way, or (fresh) a
 * look of its own whose answer must be current, the one before a resume,
 * which arms an idle GPU's breakpoints also where the owner holds them.
 */
static bool poll_gpu(struct detector *d, uint32_t gpu_id, uint64_t now_us, bool quick, bool fresh,
                     uint64_t give_way_at_us)
{
        struct gpu_activity *a = gpu_find(d, gpu_id);
        bool busy, gave_way;
        enum look look;

        if (!a)
                return true;
        if (fresh)
                a->look_under_way = false;
        if (!a->look_under_way || quick) {
                a->look_started_us = now_us;
                a->look_number++;
        }
        /* after a trap every process is quiet and the writer unknown: a quick look could miss it */
        look = a->trapped ? LOOK_EVERY_QUEUE : quick ? LOOK_QUICK : LOOK_FULL;
        busy = read_gpu(d, a, now_us, look, give_way_at_us, &gave_way);
        a->look_under_way = gave_way;
        if (gave_way)
                return false;
        a->last_poll_us = a->look_started_us;
        a->trapped = false;
        if (!busy && may_arm(d, a, fresh)) {
                busy = arm_and_read_again(d, a, now_us);
        } else if (!busy && a->busy && look == LOOK_QUICK) {
                /* the quick looks of a busy GPU passed over its quiet processes: whether
                 * its work has ended is for all of them to tell */
                busy = read_gpu(d, a, now_us, LOOK_FULL, UINT64_MAX, &gave_way);
        }
        if (!busy && a->busy) {
                a->busy = false;
                a->watch_serial++;
                d->cb.gpu_idle(a->gpu_id, a->last_busy_us, now_us, d->userdata);
                /* the owner resumed on hearing of it (its hold-off was over already) and ended the hold,
                 * which kept the arming above from happening */
                if (!a->busy && may_arm(d, a, fresh))
                        arm_and_read_again(d, a, now_us);
        }
        return true;
}

void detector_poll_gpu(struct detector *d, uint32_t gpu_id, uint64_t now_us)
{
        poll_gpu(d, gpu_id, now_us, false, false, UINT64_MAX);
}

bool detector_poll_gpu_until(struct detector *d, uint32_t gpu_id, uint64_t now_us, uint64_t give_way_at_us)
{
        return poll_gpu(d, gpu_id, now_us, false, false, give_way_at_us);
}

void detector_fresh_look_gpu(struct detector *d, uint32_t gpu_id, uint64_t now_us)
{
        poll_gpu(d, gpu_id, now_us, false, true, UINT64_MAX);
}

void detector_quick_look_gpu(struct detector *d, uint32_t gpu_id, uint64_t now_us)
{
        poll_gpu(d, gpu_id, now_us, true, false, UINT64_MAX);
}

void detector_poll(struct detector *d, uint64_t now_us)
{
        for (size_t g = 0; g < d->n_gpus; g++)
                detector_poll_gpu(d, d->gpus[g].gpu_id, now_us);
}

size_t detector_gpus(const struct detector *d, struct detector_gpu_status *out, size_t max)
{
        size_t n = 0;

        for (size_t g = 0; g < d->n_gpus && n < max; g++) {
                const struct gpu_activity *a = &d->gpus[g];

                if (a->n_queues == 0 && !a->busy)
                        continue; /* a busy one is polled once more to tell its end */
                out[n++] = (struct detector_gpu_status){
                        .gpu_id = a->gpu_id,
                        .needs_poll = a->busy || a->n_polled > 0 || (!a->armed && !arming_held(d, a)) ||
                                      a->n_waiting > 0,
                        .last_poll_us = a->last_poll_us,
                };
        }
        return n;
}

size_t detector_process_queues(const struct detector *d, pid_t pid, struct detector_queue_status *out, size_t max)
{
        const struct watched_process *p = find_process((struct detector *)d, pid);
        size_t n = 0;

        for (size_t i = 0; p && i < p->n_queues && n < max; i++)
                out[n++] = (struct detector_queue_status){
                        .gpu_id = p->queues[i].addr.gpu_id,
                        .write_pointer_address = p->queues[i].addr.write_pointer_address,
                        .breakpoint = p->queues[i].watch != NULL,
                        .poll_reason = poll_reason(d, &p->queues[i]),
                        .read_error = p->read_error,
                        .read_proc_mem = queue_memory_uses_proc_mem(p->memory),
                };
        return n;
}

bool detector_gpu_polled_recently_busy(const struct detector *d, uint32_t gpu_id, uint64_t now_us,
                                       uint64_t recent_us)
{
        const struct gpu_activity *a = gpu_find((struct detector *)d, gpu_id);

        if (!a)
                return false;
        /* a queue waiting at a barrier: its release is work that only a look sees */
        if (a->busy || a->n_waiting > 0)
                return true;
        for (size_t i = 0; i < d->n_processes; i++) {
                const struct watched_process *p = &d->processes[i];
                size_t first, end;

                gpu_range(p, gpu_id, &first, &end);
                for (size_t q = first; q < end; q++)
                        if (!p->queues[q].watch && p->queues[q].last_moved_us &&
                            now_us - p->queues[q].last_moved_us < recent_us)
                                return true;
        }
        return false;
}

uint64_t detector_gpu_watch_serial(const struct detector *d, uint32_t gpu_id)
{
        const struct gpu_activity *a = gpu_find((struct detector *)d, gpu_id);

        return a ? a->watch_serial : 0;
}

void detector_work_seen(struct detector *d, uint32_t gpu_id, uint64_t now_us)
{
        struct gpu_activity *a = gpu_find(d, gpu_id);

        if (a)
                store_seen(d, a, now_us);
}

/* The remote iovecs of p's queues [first, end), which one read_process() call reads. */
static size_t range_iovs(const struct watched_process *p, size_t first, size_t end)
{
        return p->queues[end - 1].first_iov + p->queues[end - 1].n_iov - p->queues[first].first_iov;
}

/*
 * Whether a's processes can be watched by another thread, and when the last
 * of their polled queues moved (0: none). Every queue a look would read must
 * be idle as last read, and its process read with process_vm_readv in one
 * call.
 */
static bool gpu_watchable(const struct detector *d, const struct gpu_activity *a, uint64_t *ret_last_moved_us)
{
        *ret_last_moved_us = 0;
        if (a->busy || a->trapped || a->n_waiting > 0 || a->n_polled == 0)
                return false;
        for (size_t i = 0; i < d->n_processes; i++) {
                const struct watched_process *p = &d->processes[i];
                size_t first, end, read_to;

                gpu_range(p, a->gpu_id, &first, &end);
                read_to = read_end(p, first, end);
                if (first == read_to)
                        continue;
                if (p->read_error || queue_memory_uses_proc_mem(p->memory) ||
                    range_iovs(p, first, read_to) > 2 * DETECTOR_QUEUES_PER_READ)
                        return false;
                for (size_t q = first; q < read_to; q++) {
                        const struct watched_queue *wq = &p->queues[q];

                        if (!wq->seen || wq->busy)
                                return false;
                        if (!wq->watch && wq->last_moved_us > *ret_last_moved_us)
                                *ret_last_moved_us = wq->last_moved_us;
                }
        }
        return true;
}

/* Adds p's queues on a GPU that a look reads, [first, read_to), with their indices as last read. */
static int watch_process(const struct detector *d, const struct watched_process *p, size_t first, size_t end,
                         size_t read_to, uint64_t now_us, struct poll_watch *w)
{
        _cleanup_free_ struct poll_watch_index *indices = malloc(2 * (read_to - first) * sizeof(*indices));
        size_t base = queue_buffer_start(&p->queues[first]), n = 0;

        if (!indices)
                return -ENOMEM;
        for (size_t q = first; q < read_to; q++) {
                indices[n++] = (struct poll_watch_index){ p->queues[q].write_off - base, p->queues[q].last_write };
                indices[n++] = (struct poll_watch_index){ p->queues[q].read_off - base, p->queues[q].last_read };
        }
        return poll_watch_add_process(w, p->pid, !process_quiet(d, p, first, end, now_us),
                                      p->remote + p->queues[first].first_iov, range_iovs(p, first, read_to), indices, n);
}

int detector_poll_watch(const struct detector *d, uint32_t gpu_id, uint64_t now_us, uint64_t recent_us,
                        uint64_t interval_us, struct poll_watch **ret_watch)
{
        const struct gpu_activity *a = gpu_find((struct detector *)d, gpu_id);
        _cleanup_(poll_watch_freep) struct poll_watch *w = NULL;
        uint64_t last_moved_us;
        int r;

        *ret_watch = NULL;
        if (!a || !gpu_watchable(d, a, &last_moved_us) || !last_moved_us || now_us - last_moved_us >= recent_us)
                return 0;
        r = poll_watch_new(interval_us * 1000, (last_moved_us + recent_us) * 1000, &w);
        for (size_t i = 0; r >= 0 && i < d->n_processes; i++) {
                const struct watched_process *p = &d->processes[i];
                size_t first, end, read_to;

                gpu_range(p, gpu_id, &first, &end);
                read_to = read_end(p, first, end);
                if (first < read_to)
                        r = watch_process(d, p, first, end, read_to, now_us, w);
        }
        if (r < 0)
                return r;
        *ret_watch = TAKE_PTR(w);
        return 0;
}
