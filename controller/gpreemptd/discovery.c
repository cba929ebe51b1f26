/* SPDX-License-Identifier: MIT */
#include "discovery.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "manager.h"
#include "monotonic-clock.h"
#include "sources.h"

static void kfd_root(const struct manager *m, char *buf, size_t size)
{
        snprintf(buf, size, "%s/class/kfd/kfd", m->paths.sysfs_root);
}

void discovery_refresh_process(struct manager *m, struct tracked_process *p)
{
        struct qf_sysfs_process sysfs = { 0 };
        struct qf_diags diags = { 0 };
        uint64_t signature = 1469598103934665603ull; /* FNV-1a over (queue id, gpu id) */
        char root[512];

        kfd_root(m, root, sizeof(root));
        if (qf_sysfs_read_process(root, p->pid, &diags, &sysfs) < 0) {
                qf_diags_clear(&diags);
                return;
        }
        p->n_gpu_ids = 0;
        p->n_compute_queues = 0;
        for (size_t i = 0; i < sysfs.n_queues; i++) {
                const struct qf_sysfs_queue *q = &sysfs.queues[i];
                bool known = false;

                p->n_compute_queues += q->type == QF_SYSFS_QUEUE_COMPUTE;
                signature = (signature ^ q->queue_id) * 1099511628211ull;
                signature = (signature ^ q->gpu_id) * 1099511628211ull;
                for (size_t g = 0; g < p->n_gpu_ids; g++)
                        known = known || p->gpu_ids[g] == q->gpu_id;
                if (!known && p->n_gpu_ids < MANAGER_MAX_GPUS) {
                        p->gpu_ids[p->n_gpu_ids++] = q->gpu_id;
                        manager_gpu(m, q->gpu_id);
                }
        }
        p->n_queues = sysfs.n_queues;
        p->queue_signature = signature;
        qf_sysfs_process_clear(&sysfs);
        qf_diags_clear(&diags);
}

/*
 * Which KFD process a pid's sysfs entry stands for. The kernel binds a KFD
 * process to an mm: an exec ends it, and when the new image opens /dev/kfd
 * another one appears under the same pid with a new proc/<pid> directory
 * (kfd-interface.md §6 (c)). The directory's inode number tells the two
 * apart, which neither the pid, the start time nor /proc/<pid>/exe does (a
 * launcher may exec the same binary). kernfs does not hand an inode number
 * out again at once, nor does kfdemu's tmpfs. One stat per process and scan,
 * beside the queue directory read each scan anyway. 0 when the entry is gone.
 */
static uint64_t kfd_process_identity(const char *root, pid_t pid)
{
        char path[600];
        struct stat st;

        snprintf(path, sizeof(path), "%s/proc/%d", root, (int)pid);
        return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/*
 * The names and inode numbers of a process's sysfs queue directories, as one
 * getdents returns them: a queue created or destroyed changes it, and so
 * does a queue id reused for a new queue (a new directory, a new inode).
 * Each entry is hashed alone and the hashes summed, so the order the
 * directory lists them in does not matter. A scan reads this instead of
 * three files per queue and the GPUs' cu_occupancy, which at 64 processes of
 * 8 queues every 100 ms was most of the idle daemon's CPU. 0 when the
 * directory cannot be read.
 */
static uint64_t queue_dir_signature(const char *root, pid_t pid)
{
        char path[600];
        uint64_t sum = 0;
        struct dirent *e;
        DIR *d;

        snprintf(path, sizeof(path), "%s/proc/%d/queues", root, (int)pid);
        d = opendir(path);
        if (!d)
                return 0;
        while ((e = readdir(d))) {
                uint64_t h = 1469598103934665603ull; /* FNV-1a */

                if (e->d_name[0] == '.')
                        continue;
                for (const char *c = e->d_name; *c; c++)
                        h = (h ^ (uint8_t)*c) * 1099511628211ull;
                h = (h ^ (uint64_t)e->d_ino) * 1099511628211ull;
                sum += h;
        }
        closedir(d);
        return sum + 1;
}

/* Re-reads p's queues; true if they differ from what was seen before. */
static bool queues_changed(struct manager *m, struct tracked_process *p)
{
        uint64_t before = p->queue_signature;
        size_t n_before = p->n_queues;

        discovery_refresh_process(m, p);
        return p->queue_signature != before || p->n_queues != n_before;
}

/*
 * The pids listed under proc/, sorted; none when there is no proc/ (no KFD
 * process at all). Another error (EMFILE, ENOMEM) returns -errno: the scan
 * is skipped, since an empty listing would forget, and so detach from,
 * every tracked process. Warns at the first failure and says when the
 * listing works again.
 */
static int list_processes(struct discovery *d, const char *root, pid_t **ret_pids, size_t *ret_n)
{
        int r = qf_sysfs_list_pids(root, ret_pids, ret_n);

        if (r < 0) {
                *ret_pids = NULL;
                *ret_n = 0;
        }
        if (r < 0 && r != -ENOENT) {
                if (!d->listing_failed)
                        log_warning_errno(r, "Cannot list %s/proc: the processes found so far are kept, and new "
                                             "ones are not found until it can be listed again", root);
                d->listing_failed = true;
                return r;
        }
        if (d->listing_failed)
                log_notice("%s/proc can be listed again", root);
        d->listing_failed = false;
        return 0;
}

/* Forgets the tracked processes a listing no longer has: they closed /dev/kfd without exiting. */
static void forget_unlisted(struct manager *m, const pid_t *pids, size_t n)
{
        for (size_t i = 0; i < m->n_processes;) {
                struct tracked_process *p = m->processes[i];
                bool listed = false;

                for (size_t j = 0; j < n && !listed; j++)
                        listed = pids[j] == p->pid;
                if (!listed) {
                        manager_remove_process(m, p);
                        continue;
                }
                i++;
        }
}

/* One listed pid: a new process, an exec, or changed queues. It may be gone by now. */
static void scan_process(struct manager *m, const char *root, pid_t pid)
{
        struct tracked_process *p;
        uint64_t identity, dir_signature;
        bool listed_differently;

        if (pid == getpid())
                return; /* the daemon's own kfd process */
        /* before the process facts are read, so an exec in between is seen at the next scan */
        identity = kfd_process_identity(root, pid);
        if (identity == 0)
                return; /* gone since the listing: the next scan forgets it */
        p = manager_find_process(m, pid);
        if (p && p->kfd_identity != identity) {
                manager_forget_exec(m, p);
                p = NULL;
        }
        if (!p) {
                p = manager_add_process(m, pid);
                if (p)
                        p->kfd_identity = identity;
                return;
        }
        dir_signature = queue_dir_signature(root, p->pid);
        listed_differently = dir_signature != p->queue_dir_signature;
        p->queue_dir_signature = dir_signature;
        /* debugfs can lag sysfs: keep looking until every compute queue is watched */
        if ((listed_differently && queues_changed(m, p)) ||
            (p->managed && p->class == WORKLOAD_CLASS_ONLINE && p->n_watched_queues < p->n_compute_queues))
                manager_process_queues_changed(m, p);
}

void discovery_scan(struct manager *m)
{
        pid_t *pids;
        size_t n;
        char root[512];

        kfd_root(m, root, sizeof(root));
        if (list_processes(&m->discovery, root, &pids, &n) < 0)
                return;
        forget_unlisted(m, pids, n);
        for (size_t j = 0; j < n; j++)
                scan_process(m, root, pids[j]);
        free(pids);
}

/* Ends the pass under way, if any. */
static void pass_end(struct discovery *d)
{
        sd_event_source_set_enabled(d->step, SD_EVENT_OFF);
        free(d->pids);
        d->pids = NULL;
        d->n_pids = d->next = 0;
        d->under_way = false;
}

/*
 * How long one step of a pass goes on looking at listed processes while no
 * GPU is on a fast cadence; while one is, a step is one process, so a look
 * due every 20 µs waits for one process at most. At scale one process a
 * step throughout cost the idle daemon 0.1-0.2 % of a core more than whole
 * scans, in loop iterations, and a 20 µs budget throughout made the gaps
 * between two busy looks that held discovery twice as long at p90 (117
 * against 55 µs). An idle GPU's look, every IdlePollIntervalUs, can wait
 * this long.
 */
#define DISCOVERY_IDLE_STEP_US 100

static int on_discovery_step(sd_event_source *s, void *userdata)
{
        struct manager *m = userdata;
        struct discovery *d = &m->discovery;
        uint64_t start = monotonic_clock_us(), budget = manager_fast_cadence(m) ? 0 : DISCOVERY_IDLE_STEP_US;
        char root[512];

        (void)s;
        kfd_root(m, root, sizeof(root));
        while (d->next < d->n_pids) {
                scan_process(m, root, d->pids[d->next++]);
                if (d->next < d->n_pids && monotonic_clock_us() - start >= budget)
                        return 0;
        }
        pass_end(d);
        discovery_reconfigure(m);
        return 0;
}

/* Lists the processes and starts a pass over them; the next timer is set when it ends. */
static int on_discovery_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct manager *m = userdata;
        struct discovery *d = &m->discovery;
        char root[512];

        (void)s;
        (void)usec;
        kfd_root(m, root, sizeof(root));
        if (list_processes(d, root, &d->pids, &d->n_pids) < 0) {
                discovery_reconfigure(m);
                return 0;
        }
        forget_unlisted(m, d->pids, d->n_pids);
        d->under_way = true;
        sd_event_source_set_enabled(d->step, SD_EVENT_ON);
        return 0;
}

int discovery_start(struct manager *m)
{
        struct discovery *d = &m->discovery;
        int r = sd_event_add_time(m->event, &d->timer, CLOCK_MONOTONIC, manager_now(m), 1000, on_discovery_timer, m);

        if (r < 0)
                return r;
        r = sd_event_add_defer(m->event, &d->step, on_discovery_step, m);
        if (r < 0)
                return r;
        /*
         * Below every other source: sd-event ranks sources of one priority by
         * when they became pending, and a defer source stays pending from its
         * creation on, so at normal priority a pass would hold up Varlink
         * calls, signals and the sessions' debug events until it ended.
         */
        sd_event_source_set_priority(d->step, SD_EVENT_PRIORITY_IDLE);
        sd_event_source_set_enabled(d->step, SD_EVENT_OFF);
        discovery_scan(m);
        discovery_reconfigure(m);
        return 0;
}

void discovery_reconfigure(struct manager *m)
{
        struct discovery *d = &m->discovery;

        if (d->under_way)
                return; /* its end sets the timer */
        sd_event_source_set_time(d->timer, manager_now(m) + m->config->daemon.discovery_interval_us);
        sd_event_source_set_enabled(d->timer, SD_EVENT_ONESHOT);
}

void discovery_stop(struct manager *m)
{
        struct discovery *d = &m->discovery;

        pass_end(d);
        d->timer = sd_event_source_disable_unref(d->timer);
        d->step = sd_event_source_disable_unref(d->step);
}
