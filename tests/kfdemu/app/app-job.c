/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app-job.h"
#include "cleanup.h"

#define NS_PER_S 1000000000LL
/* How long a worker waiting for its packets blocks before it looks at its
 * stop flag again: short enough that SIGTERM is honoured promptly even
 * while the queue is suspended, long enough to cost nothing. (Between
 * requests a worker sleeps on `wake` instead, which a stop signals.) */
#define WAIT_SLICE_NS (20 * 1000 * 1000)
#define MAX_WORKERS (APP_MAX_QUEUES + 1)

struct app_worker {
        struct app_job *job;
        struct emu_aql_queue *queue;       /* NULL once destroyed */
        struct emu_queue_identity identity;
        pthread_t thread;
        bool started, joined;
        atomic_bool stop;
        atomic_bool done;
        int64_t first_arrival_ns;
        double interval_ns;                /* open loop: mean gap between arrivals */
        unsigned short rng[3];
        /* The current request's first and last kernels' completion signals
         * (one kernel: only `last`). */
        struct emu_amd_signal first_signal, last_signal;
        /* --host-wait-us: the dependency of the barrier-AND ending each
         * request, which this thread sets once the host wait is over */
        struct emu_amd_signal host_signal;
        /* a stop ends a sleep between requests; a lock of their own, so that a
         * report holding `lock` does not delay a request that falls due */
        pthread_mutex_t wake_lock;
        pthread_cond_t wake;
        pthread_mutex_t lock;              /* everything below */
        struct latency_stats stats;        /* model time: GPU timestamps */
        struct latency_stats wall_stats;
        uint64_t requests, kernels, abandoned;
        uint64_t final_read_index, final_write_index;
        int error;
};

struct app_job {
        const struct app_options *opts;
        struct emu_runtime *rt;
        struct app_job_outputs out;
        pid_t pid;
        int64_t start_ns;
        int64_t end_ns;                    /* 0 = no duration limit */
        int64_t stop_ns;                   /* when app_job_stop ran; 0 = running */
        atomic_uint_fast64_t requests_claimed;
        struct app_worker *workers[MAX_WORKERS];
        unsigned n_workers;
};

static int64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static bool worker_should_stop(struct app_worker *w)
{
        return atomic_load(&w->stop);
}

/*
 * Sleeps until `when` or a stop request, whichever comes first; false if
 * stopped. One wakeup per request: an idle worker (a rate of one request an
 * hour) does not wake while it waits, as a real application's thread
 * blocked on its next request would not. Waking at a fixed period instead
 * (it was 20 ms) loaded the host at scale, in the scheduler and
 * (breakpoints armed on their threads) the debug registers' switching: load
 * a real node does not have (docs/benchmarks/kfdemu.md).
 */
static bool sleep_until(struct app_worker *w, int64_t when)
{
        struct timespec deadline = {.tv_sec = when / NS_PER_S, .tv_nsec = when % NS_PER_S};
        bool stopped;

        pthread_mutex_lock(&w->wake_lock);
        while (!(stopped = worker_should_stop(w)) && now_ns() < when)
                pthread_cond_timedwait(&w->wake, &w->wake_lock, &deadline);
        pthread_mutex_unlock(&w->wake_lock);
        return !stopped;
}

/* Sets w's stop flag and ends its sleep between requests, if it is in one. */
static void worker_request_stop(struct app_worker *w)
{
        pthread_mutex_lock(&w->wake_lock);
        atomic_store(&w->stop, true);
        pthread_cond_broadcast(&w->wake);
        pthread_mutex_unlock(&w->wake_lock);
}

/* Waits for the packet `index` to be consumed and, if `signal` is given,
 * for that signal to complete. 0, or -ECANCELED if stopped. */
static int wait_consumed(struct app_worker *w, uint64_t index, const struct emu_amd_signal *signal)
{
        for (;;) {
                int r;

                if (worker_should_stop(w))
                        return -ECANCELED;
                r = emu_aql_queue_wait(w->queue, index, WAIT_SLICE_NS);
                if (r == 0 && signal)
                        r = emu_aql_queue_wait_signal(w->queue, signal, WAIT_SLICE_NS);
                if (r == 0)
                        return 0;
                if (r != -ETIMEDOUT && r != -EINTR)
                        return r;
        }
}

static double exponential_gap(struct app_worker *w)
{
        /* erand48 is in [0, 1); 1 - u keeps log() away from 0. */
        return -log(1.0 - erand48(w->rng)) * w->interval_ns;
}

/* Moves the write index over the packets from `first` on and rings the
 * doorbell; the dispatch-times file gets their common publication time,
 * and *first_published the first such time of the request. */
static void publish(struct app_worker *w, uint64_t first, uint64_t end, int64_t *first_published)
{
        int64_t published = emu_aql_queue_publish(w->queue);

        if (w->job->out.dispatch_times)
                for (uint64_t i = first; i < end; i++)
                        fprintf(w->job->out.dispatch_times, "%" PRId64 " %d %u %u %" PRIu64 "\n", published,
                                (int)w->job->pid, w->identity.gpu_id, w->identity.queue_id, i);
        if (*first_published == 0)
                *first_published = published;
}

/* The ring is full: the GPU must see what is written to make room, then
 * the oldest packet has to go. `next` is the next packet to write. */
static int wait_for_room(struct app_worker *w, uint64_t *unpublished, uint64_t next, int64_t *first_published)
{
        if (next > *unpublished) {
                publish(w, *unpublished, next, first_published);
                *unpublished = next;
        }
        return wait_consumed(w, next - w->identity.ring_packets, NULL);
}

/* With --host-wait-us: writes the barrier-AND that ends the request as
 * packet `next`, its dependency armed for the host to set, and publishes
 * everything up to it. */
static int submit_host_barrier(struct app_worker *w, uint64_t unpublished, uint64_t next, int64_t *first_published)
{
        uint64_t index;
        int r;

        w->host_signal = (struct emu_amd_signal){.kind = EMU_AMD_SIGNAL_KIND_USER};
        __atomic_store_n(&w->host_signal.value, 1, __ATOMIC_RELEASE);
        while ((r = emu_aql_queue_write_barrier_and(w->queue, &w->host_signal, &index)) == -EAGAIN) {
                r = wait_for_room(w, &unpublished, next, first_published);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        publish(w, unpublished, index + 1, first_published);
        return 0;
}

/* Submits one request's kernels, ringing the doorbell after each or, with
 * --doorbell-per-request, once after all of them, and with --host-wait-us
 * the barrier-AND after them; ret_last is the last kernel's index,
 * ret_published when the first packet was published. */
static int submit_request(struct app_worker *w, uint64_t *ret_last, int64_t *ret_published)
{
        const struct app_options *o = w->job->opts;
        struct emu_kernel_launch launch = {
                .duration_ns = o->kernel_ns,
                .workgroups = o->workgroups,
                .workgroup_size = o->workgroup_size,
        };
        struct emu_dispatch_record rec = {0};
        uint64_t unpublished = emu_aql_queue_write_index(w->queue);   /* first packet not published */
        uint64_t next = unpublished;                                  /* next packet to write */

        *ret_published = 0;
        for (unsigned k = 0; k < o->kernels_per_request; k++) {
                int r;

                launch.completion_signal = k + 1 == o->kernels_per_request ? &w->last_signal
                                           : k == 0                        ? &w->first_signal
                                                                           : NULL;
                while ((r = emu_aql_queue_write(w->queue, &launch, &rec)) == -EAGAIN) {
                        r = wait_for_room(w, &unpublished, next, ret_published);
                        if (r < 0)
                                return r;
                }
                if (r < 0)
                        return r;
                next = rec.index + 1;
                if (w->job->out.log)
                        clr_log_kernel_dispatch(w->job->out.log, &w->identity, &rec, o->kernel_name);
                if (!o->doorbell_per_request || k + 1 == o->kernels_per_request) {
                        publish(w, unpublished, next, ret_published);
                        unpublished = next;
                }
        }
        *ret_last = rec.index;
        return o->host_wait_ns ? submit_host_barrier(w, unpublished, next, ret_published) : 0;
}

/* Records a completed request: its latencies and its latency-log line.
 * Caller holds w->lock. */
static int record_request(struct app_worker *w, int64_t scheduled, int64_t published)
{
        const struct emu_amd_signal *first =
                w->job->opts->kernels_per_request > 1 ? &w->first_signal : &w->last_signal;
        int64_t completed = now_ns();
        uint64_t first_start, first_end, last_start, last_end;
        int r;

        /* The last kernel's signal completed, and the first kernel's before it. */
        r = emu_signal_timestamps(first, &first_start, &first_end);
        if (r == 0)
                r = emu_signal_timestamps(&w->last_signal, &last_start, &last_end);
        if (r < 0)
                return r;
        r = latency_stats_add(&w->stats, last_end - (uint64_t)scheduled);
        if (r == 0)
                r = latency_stats_add(&w->wall_stats, (uint64_t)(completed - scheduled));
        if (r == 0 && w->job->out.latency_log)
                fprintf(w->job->out.latency_log, "%" PRId64 " %" PRIu64 " %" PRId64 " %" PRId64 " %" PRIu64 "\n",
                        scheduled, last_end - (uint64_t)scheduled, completed - scheduled, published - scheduled,
                        first_start - (uint64_t)scheduled);
        return r;
}

/* --queue-during-wait: one more kernel written and published behind the
 * barrier, as an application does that keeps launching on a stream that
 * waits on the host; it runs once the barrier is released, and is no
 * request's (not in the kernels reported). A full ring cannot drain behind
 * the barrier: nothing is queued then. */
static int queue_behind_barrier(struct app_worker *w)
{
        struct emu_kernel_launch launch = {
                .duration_ns = w->job->opts->kernel_ns,
                .workgroups = w->job->opts->workgroups,
                .workgroup_size = w->job->opts->workgroup_size,
        };
        struct emu_dispatch_record rec = {0};
        int64_t published = 0;
        int r = emu_aql_queue_write(w->queue, &launch, &rec);

        if (r == -EAGAIN)
                return 0;
        if (r < 0)
                return r;
        publish(w, rec.index, rec.index + 1, &published);
        return 0;
}

/* --host-wait-us: the host sets the barrier's dependency the given time
 * after the request's kernels are done, as a host callback or an event
 * the host records would, and the queue moves on once the GPU has taken
 * the barrier. The wait is the application's own time, not part of the
 * request's latency; a request due meanwhile starts late, as it would
 * behind a blocked stream. */
static int release_host_barrier(struct app_worker *w, uint64_t barrier_index)
{
        const struct app_options *o = w->job->opts;
        int64_t end = now_ns() + (int64_t)o->host_wait_ns;
        bool waited = true;
        int r = 0;

        if (o->queue_during_wait) {
                waited = sleep_until(w, end - (int64_t)o->host_wait_ns / 2);
                if (waited)
                        r = queue_behind_barrier(w);
        }
        waited = waited && sleep_until(w, end);
        /* Set even when stopped: nothing else would release the barrier. */
        __atomic_store_n(&w->host_signal.value, 0, __ATOMIC_RELEASE);
        if (!waited)
                return -ECANCELED;
        if (r < 0)
                return r;
        return wait_consumed(w, barrier_index, NULL);
}

static bool claim_request(struct app_job *job)
{
        if (job->opts->requests == 0)
                return true;
        return atomic_fetch_add(&job->requests_claimed, 1) < job->opts->requests;
}

static void *worker_main(void *userdata)
{
        struct app_worker *w = userdata;
        struct app_job *job = w->job;
        bool open_loop = job->opts->arrival != APP_ARRIVAL_CLOSED_LOOP;
        int64_t next_arrival = w->first_arrival_ns;
        int error = 0;

        while (!worker_should_stop(w) && claim_request(job)) {
                int64_t scheduled, published = 0;
                uint64_t last;
                int r;

                if (open_loop) {
                        scheduled = next_arrival;
                        next_arrival += job->opts->arrival == APP_ARRIVAL_POISSON ? (int64_t)exponential_gap(w)
                                                                                  : (int64_t)w->interval_ns;
                        if (job->end_ns && scheduled >= job->end_ns)
                                break;
                        if (!sleep_until(w, scheduled))
                                break;
                } else {
                        scheduled = now_ns();
                        if (job->end_ns && scheduled >= job->end_ns)
                                break;
                }
                r = submit_request(w, &last, &published);
                if (r == 0)
                        /* A request is done when its last kernel is:
                         * the read index alone may move earlier. */
                        r = wait_consumed(w, last, &w->last_signal);
                pthread_mutex_lock(&w->lock);
                if (r == 0) {
                        w->requests++;
                        w->kernels += job->opts->kernels_per_request;
                        r = record_request(w, scheduled, published);
                } else if (r == -ECANCELED) {
                        w->abandoned++;
                }
                pthread_mutex_unlock(&w->lock);
                if (r == 0 && job->opts->host_wait_ns)
                        r = release_host_barrier(w, last + 1);
                if (r == -ECANCELED)
                        break;
                if (r < 0) {
                        error = r;
                        break;
                }
        }
        pthread_mutex_lock(&w->lock);
        w->error = error;
        pthread_mutex_unlock(&w->lock);
        atomic_store(&w->done, true);
        job->out.on_worker_done();
        return NULL;
}

/* A condition variable whose deadlines are CLOCK_MONOTONIC, as now_ns()'s. */
static void cond_init_monotonic(pthread_cond_t *cond)
{
        pthread_condattr_t attr;

        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(cond, &attr);
        pthread_condattr_destroy(&attr);
}

static void worker_free(struct app_worker *w)
{
        latency_stats_clear(&w->stats);
        latency_stats_clear(&w->wall_stats);
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->wake_lock);
        pthread_mutex_destroy(&w->lock);
        free(w);
}

int app_job_new(const struct app_options *opts, struct emu_runtime *rt,
                const struct app_job_outputs *outputs, struct app_job **ret_job)
{
        struct app_job *job = calloc(1, sizeof(*job));

        if (!job)
                return -ENOMEM;
        job->opts = opts;
        job->rt = rt;
        job->out = *outputs;
        job->pid = getpid();
        atomic_init(&job->requests_claimed, 0);
        *ret_job = job;
        return 0;
}

static void worker_join(struct app_worker *w)
{
        if (w->started && !w->joined) {
                worker_request_stop(w);
                pthread_join(w->thread, NULL);
                w->joined = true;
        }
}

void app_job_stop(struct app_job *job)
{
        if (job->stop_ns == 0 && job->start_ns != 0)
                job->stop_ns = now_ns();
        /* Flag everyone first so they wind down in parallel. */
        for (unsigned i = 0; i < job->n_workers; i++)
                worker_request_stop(job->workers[i]);
        for (unsigned i = 0; i < job->n_workers; i++)
                worker_join(job->workers[i]);
}

void app_job_free(struct app_job *job)
{
        if (!job)
                return;
        app_job_stop(job);
        for (unsigned i = 0; i < job->n_workers; i++)
                worker_free(job->workers[i]);
        free(job);
}

int app_job_add_queue(struct app_job *job, uint32_t gpu_id)
{
        struct emu_queue_options qo = {
                .gpu_id = gpu_id,
                .priority = job->opts->priority,
                .ring_packets = job->opts->ring_packets,
        };
        struct app_worker *w;
        int r;

        if (job->n_workers == MAX_WORKERS)
                return -E2BIG;
        /* Aligned as the completion signals inside must be (the size of
         * a struct is a multiple of its alignment). */
        w = aligned_alloc(_Alignof(struct app_worker), sizeof(*w));
        if (!w)
                return -ENOMEM;
        memset(w, 0, sizeof(*w));
        r = emu_aql_queue_create(job->rt, &qo, &w->queue);
        if (r < 0) {
                free(w);
                return r;
        }
        w->job = job;
        pthread_mutex_init(&w->lock, NULL);
        pthread_mutex_init(&w->wake_lock, NULL);
        cond_init_monotonic(&w->wake);
        atomic_init(&w->stop, false);
        atomic_init(&w->done, false);
        emu_aql_queue_identity(w->queue, &w->identity);
        /* Distinct, reproducible Poisson streams per queue. */
        w->rng[0] = (unsigned short)(job->opts->seed ^ 0x330e);
        w->rng[1] = (unsigned short)((job->opts->seed >> 16) ^ job->n_workers);
        w->rng[2] = (unsigned short)((job->opts->seed >> 32) ^ (job->n_workers * 0x9e37u));
        job->workers[job->n_workers++] = w;
        if (job->out.log)
                clr_log_queue_created(job->out.log, &w->identity, (uintptr_t)w);
        return 0;
}

int app_job_start(struct app_job *job)
{
        const struct app_options *o = job->opts;
        int64_t now = now_ns();
        double interval = o->rate > 0 ? (double)NS_PER_S * o->queues / o->rate : 0;
        bool first_start = job->start_ns == 0;
        sigset_t all, old;
        int r = 0;

        if (first_start) {
                job->start_ns = now;
                job->end_ns = o->duration_s > 0 ? now + (int64_t)(o->duration_s * NS_PER_S) : 0;
        }
        /* Workers take no signals: the main thread handles them all. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        for (unsigned i = 0; i < job->n_workers && r == 0; i++) {
                struct app_worker *w = job->workers[i];

                if (w->started || !w->queue)
                        continue;
                w->interval_ns = interval;
                if (o->arrival == APP_ARRIVAL_FIXED)
                        /* Phase-shift the initial queues so that arrivals over
                         * the node are evenly spaced at 1/R. */
                        w->first_arrival_ns = first_start
                                                      ? job->start_ns + (int64_t)(i * interval / o->queues)
                                                      : now;
                else if (o->arrival == APP_ARRIVAL_POISSON)
                        w->first_arrival_ns = now + (int64_t)exponential_gap(w);
                r = -pthread_create(&w->thread, NULL, worker_main, w);
                if (r == 0)
                        w->started = true;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return r;
}

static void worker_retire_queue(struct app_worker *w)
{
        pthread_mutex_lock(&w->lock);
        w->final_read_index = emu_aql_queue_read_index(w->queue);
        w->final_write_index = emu_aql_queue_write_index(w->queue);
        pthread_mutex_unlock(&w->lock);
}

static int worker_destroy_queue(struct app_job *job, struct app_worker *w)
{
        int r;

        worker_join(w);
        worker_retire_queue(w);
        r = emu_aql_queue_destroy(w->queue);
        if (r < 0)
                return r;
        w->queue = NULL;
        if (job->out.log)
                clr_log_queue_destroyed(job->out.log, &w->identity, (uintptr_t)w);
        return 0;
}

int app_job_destroy_one_queue(struct app_job *job)
{
        for (unsigned i = job->n_workers; i > 0; i--) {
                struct app_worker *w = job->workers[i - 1];

                if (w->queue)
                        return worker_destroy_queue(job, w);
        }
        return -ENOENT;
}

int app_job_destroy_queues(struct app_job *job)
{
        int first_error = 0;

        for (unsigned i = 0; i < job->n_workers; i++) {
                struct app_worker *w = job->workers[i];
                int r;

                if (!w->queue)
                        continue;
                r = worker_destroy_queue(job, w);
                if (r < 0 && first_error == 0)
                        first_error = r;
        }
        return first_error;
}

int app_job_error(struct app_job *job)
{
        for (unsigned i = 0; i < job->n_workers; i++) {
                struct app_worker *w = job->workers[i];
                int r;

                pthread_mutex_lock(&w->lock);
                r = w->error;
                pthread_mutex_unlock(&w->lock);
                if (r < 0)
                        return r;
        }
        return 0;
}

unsigned app_job_queue_count(const struct app_job *job)
{
        unsigned n = 0;

        for (unsigned i = 0; i < job->n_workers; i++)
                n += job->workers[i]->queue != NULL;
        return n;
}

bool app_job_workers_done(struct app_job *job)
{
        for (unsigned i = 0; i < job->n_workers; i++) {
                struct app_worker *w = job->workers[i];

                if (w->queue && !atomic_load(&w->done))
                        return false;
        }
        return true;
}

int app_job_report(struct app_job *job, struct app_job_report *ret)
{
        const struct latency_stats *stats[MAX_WORKERS], *wall_stats[MAX_WORKERS];
        _cleanup_free_ struct app_queue_report *queues = calloc(job->n_workers ? job->n_workers : 1,
                                                                  sizeof(*queues));
        struct app_job_report rep = {0};
        int r;

        if (!queues)
                return -ENOMEM;
        for (unsigned i = 0; i < job->n_workers; i++) {
                struct app_worker *w = job->workers[i];

                pthread_mutex_lock(&w->lock);
        }
        for (unsigned i = 0; i < job->n_workers; i++) {
                struct app_worker *w = job->workers[i];
                struct app_queue_report *q = &queues[i];

                stats[i] = &w->stats;
                wall_stats[i] = &w->wall_stats;
                q->identity = w->identity;
                q->destroyed = w->queue == NULL;
                q->read_index = w->queue ? emu_aql_queue_read_index(w->queue) : w->final_read_index;
                q->write_index = w->queue ? emu_aql_queue_write_index(w->queue) : w->final_write_index;
                q->requests = w->requests;
                q->kernels = w->kernels;
                rep.requests += w->requests;
                rep.kernels += w->kernels;
                rep.abandoned += w->abandoned;
                if (rep.error == 0)
                        rep.error = w->error;
        }
        r = latency_summarize(stats, job->n_workers, &rep.latency);
        if (r == 0)
                r = latency_summarize(wall_stats, job->n_workers, &rep.wall_latency);
        for (unsigned i = 0; i < job->n_workers; i++)
                pthread_mutex_unlock(&job->workers[i]->lock);
        if (r < 0)
                return r;
        if (job->start_ns)
                rep.elapsed_s = (double)((job->stop_ns ? job->stop_ns : now_ns()) - job->start_ns) / NS_PER_S;
        rep.n_queues = job->n_workers;
        rep.queues = TAKE_PTR(queues);
        *ret = rep;
        return 0;
}
