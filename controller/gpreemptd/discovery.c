/* SPDX-License-Identifier: MIT */
#include "discovery.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "monotonic-clock.h"
#include "sources.h"

/*
 * How long one step of a pass goes on looking at listed processes while no
 * GPU is watched closely; while one is, a step is one process, so a look due
 * every BusyPollIntervalUs waits for one process at most. One process a step
 * throughout cost the idle daemon more in loop iterations than whole scans,
 * and a shorter budget throughout made the gaps between two busy looks that
 * held discovery longer (docs/benchmarks/daemon-internals.md). An idle
 * GPU's look, every IdlePollIntervalUs, can wait this long.
 */
#define DISCOVERY_IDLE_STEP_US 100

/*
 * What a pass compares with the last one, per listed pid (sorted by pid).
 *
 * kfd_identity says which KFD process the pid's proc/<pid> entry stands
 * for. The kernel binds a KFD process to an mm: an exec ends it, and when
 * the new image opens /dev/kfd another one appears under the same pid with
 * a new proc/<pid> directory (kfd-interface.md §6 (c)). The directory's
 * inode number tells the two apart, which neither the pid, the start time
 * nor /proc/<pid>/exe does (a launcher may exec the same binary). kernfs
 * does not hand an inode number out again at once, nor does kfdemu's tmpfs.
 * It is the d_ino the listing of proc/ gives, so it costs no system call:
 * the number stat would give as st_ino. sysfs: kernfs_fop_readdir emits
 * kernfs_ino(kn), which kernfs_get_inode gives the inode (iget_locked) and
 * kernfs_iop_getattr reports through generic_fillattr (fs/kernfs/dir.c,
 * inode.c). tmpfs: dcache_readdir, and offset_dir_emit since shmem lists
 * directories with simple_offset_dir_operations (6.6), emit the inode's
 * i_ino, which shmem_getattr reports (fs/libfs.c, mm/shmem.c).
 */
struct known_pid {
        pid_t pid;
        uint64_t kfd_identity;
        uint64_t queue_dir_signature;
};

struct discovery {
        const struct discovery_callbacks *callbacks;
        void *userdata;
        sd_event *event;
        char *kfd_root;
        char *proc_dir;         /* <kfd_root>/proc */
        uint64_t interval_us;
        sd_event_source *timer; /* the next pass */
        sd_event_source *step;  /* a pass under way: a few listed processes per dispatch */
        pid_t own_pid;          /* the daemon's own KFD process, never reported */
        struct qf_sysfs_listed_process *listed; /* the listing the pass walks */
        size_t n_listed, next;
        int proc_fd;            /* proc/ while a pass is under way: its processes are opened relative to it */
        bool under_way;
        bool listing_failed;    /* warned about it already */
        bool kfd_missing;       /* no KFD sysfs at the last listing; said so already */
        struct known_pid *known;
        size_t n_known;
};

static int compare_known(const void *key, const void *element)
{
        pid_t pid = *(const pid_t *)key;
        const struct known_pid *k = element;

        return pid < k->pid ? -1 : pid > k->pid;
}

static struct known_pid *find_known(struct discovery *d, pid_t pid)
{
        return d->n_known ? bsearch(&pid, d->known, d->n_known, sizeof(*d->known), compare_known) : NULL;
}

static void remove_known(struct discovery *d, struct known_pid *k)
{
        size_t i = (size_t)(k - d->known);

        memmove(k, k + 1, (d->n_known - i - 1) * sizeof(*k));
        d->n_known--;
}

static int add_known(struct discovery *d, pid_t pid, uint64_t identity)
{
        struct known_pid *grown = realloc(d->known, (d->n_known + 1) * sizeof(*grown));
        size_t i = 0;

        if (!grown)
                return -ENOMEM;
        d->known = grown;
        while (i < d->n_known && d->known[i].pid < pid)
                i++;
        memmove(&d->known[i + 1], &d->known[i], (d->n_known - i) * sizeof(*d->known));
        d->known[i] = (struct known_pid){ .pid = pid, .kfd_identity = identity };
        d->n_known++;
        return 0;
}

void discovery_forget(struct discovery *d, pid_t pid)
{
        struct known_pid *k = d ? find_known(d, pid) : NULL;

        if (k)
                remove_known(d, k);
}

/*
 * The names and inode numbers of a process's sysfs queue directories, as
 * getdents returns them: a queue created or destroyed changes it, and so
 * does a queue id reused for a new queue (a new directory, a new inode).
 * Each entry is hashed alone and the hashes summed, so the order the
 * directory lists them in does not matter. A pass reads this instead of
 * three files per queue and the GPUs' cu_occupancy. Read with getdents64
 * itself, not opendir(), which adds an fstat: open, getdents64 until it
 * returns 0, close. The open is relative to proc/, which spares the
 * lookup of the rest of the path (/sys/class/kfd/kfd is a symlink) per
 * process. Never 0 (that is "not read yet"); -errno when the directory
 * cannot be read.
 */
static int queue_dir_signature(int proc_fd, pid_t pid, uint64_t *ret_signature)
{
        /* eight queues' entries fit many times over; more take another call */
        _Alignas(struct dirent64) char buffer[4096];
        _cleanup_close_ int fd = -1;
        char name[32];
        uint64_t sum = 0;
        ssize_t n;

        snprintf(name, sizeof(name), "%d/queues", (int)pid);
        fd = openat(proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        while ((n = getdents64(fd, buffer, sizeof(buffer))) > 0)
                for (ssize_t at = 0; at < n;) {
                        const struct dirent64 *e = (const struct dirent64 *)(buffer + at);
                        uint64_t h = 1469598103934665603ull; /* FNV-1a */

                        at += e->d_reclen;
                        if (e->d_name[0] == '.')
                                continue;
                        for (const char *c = e->d_name; *c; c++)
                                h = (h ^ (uint8_t)*c) * 1099511628211ull;
                        h = (h ^ (uint64_t)e->d_ino) * 1099511628211ull;
                        sum += h;
                }
        if (n < 0)
                return -errno;
        *ret_signature = sum + 1;
        return 0;
}

/*
 * Whether proc/<pid> is there still. Asked only when a process is new to
 * discovery, and when its queues/ is missing: amdkfd makes <pid>/ before
 * queues/ and removes queues/ first (kfd_process.c kfd_create_process,
 * kfd_process_remove_sysfs), so a process met between the two has no
 * queues/ and is not gone.
 */
static bool kfd_entry_exists(int proc_fd, pid_t pid)
{
        char name[16];

        snprintf(name, sizeof(name), "%d", (int)pid);
        return faccessat(proc_fd, name, F_OK, AT_EACCESS) == 0;
}

/*
 * The processes listed under proc/, sorted by pid; none when there is no
 * proc/ (no KFD process at all). Another error (EMFILE, ENOMEM) returns
 * -errno: the pass is skipped, since an empty listing would forget, and so
 * detach from, every tracked process. Warns at the first failure and says
 * when the listing works again.
 */
static int list_processes(struct discovery *d, struct qf_sysfs_listed_process **ret_listed, size_t *ret_n)
{
        int r = qf_sysfs_list_processes(d->kfd_root, ret_listed, ret_n);

        if (r < 0) {
                *ret_listed = NULL;
                *ret_n = 0;
        }
        if (r < 0 && r != -ENOENT) {
                if (!d->listing_failed)
                        log_warning_errno(r, "Cannot list %s/proc: the processes found so far are kept, and new "
                                             "ones are not found until it can be listed again", d->kfd_root);
                d->listing_failed = true;
                return r;
        }
        if (d->listing_failed)
                log_notice("%s/proc can be listed again", d->kfd_root);
        d->listing_failed = false;
        /* A node without KFD (amdgpu not loaded yet, or no AMD GPU) is not an
         * error: there is nothing to manage until it appears, and the next
         * passes look again. */
        if (r == -ENOENT && !d->kfd_missing)
                log_notice("No KFD on this node (%s is missing: amdgpu is not loaded, or there is no AMD GPU); "
                           "nothing to manage until it appears", d->kfd_root);
        else if (r != -ENOENT && d->kfd_missing)
                /* Under the shipped unit, DeviceAllow=/dev/kfd was resolved when the
                 * service started, without the node: opens of it are then refused
                 * until a restart (the unit file's comment). */
                log_notice("KFD appeared (%s): managing the processes that use it. Under gpreemptd.service, "
                           "restart it (systemctl restart gpreemptd) so that its device rules include /dev/kfd",
                           d->kfd_root);
        d->kfd_missing = r == -ENOENT;
        return 0;
}

static int compare_listed(const void *key, const void *element)
{
        pid_t pid = *(const pid_t *)key;
        const struct qf_sysfs_listed_process *l = element;

        return pid < l->pid ? -1 : pid > l->pid;
}

static bool is_listed(const struct qf_sysfs_listed_process *listed, size_t n, pid_t pid)
{
        return n && bsearch(&pid, listed, n, sizeof(*listed), compare_listed);
}

/* The known pids a listing no longer has: they closed /dev/kfd without exiting. */
static void forget_unlisted(struct discovery *d, const struct qf_sysfs_listed_process *listed, size_t n)
{
        for (size_t i = 0; i < d->n_known;) {
                pid_t pid = d->known[i].pid;

                if (is_listed(listed, n, pid)) {
                        i++;
                        continue;
                }
                remove_known(d, &d->known[i]);
                d->callbacks->pid_vanished(pid, d->userdata);
        }
}

/* One listed process: a new one, an exec, or maybe changed queues. It may be gone by now. */
static void look_at_listed(struct discovery *d, const struct qf_sysfs_listed_process *listed)
{
        pid_t pid = listed->pid;
        struct known_pid *k;
        uint64_t signature = 0; /* an unreadable directory: as one not read yet */
        bool relisted;
        int r;

        if (pid == d->own_pid)
                return;
        k = find_known(d, pid);
        if (!k || k->kfd_identity != listed->dir_ino) {
                if (!kfd_entry_exists(d->proc_fd, pid))
                        return; /* gone since the listing: the next pass forgets it */
                if (k) {
                        remove_known(d, k);
                        d->callbacks->pid_replaced(pid, d->userdata);
                }
                if (d->callbacks->pid_appeared(pid, d->userdata) && add_known(d, pid, listed->dir_ino) < 0)
                        log_warning("Process %d: out of memory; it is found again by the next pass", (int)pid);
                return;
        }
        r = queue_dir_signature(d->proc_fd, pid, &signature);
        if (r == -ENOENT && !kfd_entry_exists(d->proc_fd, pid))
                return; /* gone since the listing, as above */
        relisted = signature != k->queue_dir_signature;
        k->queue_dir_signature = signature;
        d->callbacks->pid_seen(pid, relisted, d->userdata);
}

static void schedule_next_pass(struct discovery *d)
{
        uint64_t now = 0;

        if (d->under_way)
                return; /* its end sets the timer */
        sd_event_now(d->event, CLOCK_MONOTONIC, &now);
        sd_event_source_set_time(d->timer, now + d->interval_us);
        sd_event_source_set_enabled(d->timer, SD_EVENT_ONESHOT);
}

/*
 * Lists the processes, forgets those no longer listed, and opens proc/ for
 * looking at the rest. false when there is nothing to look at: no listing,
 * or proc/ gone since (amdgpu unloaded), and with it every process listed,
 * which the next pass forgets.
 */
static bool pass_begin(struct discovery *d)
{
        if (list_processes(d, &d->listed, &d->n_listed) < 0)
                return false;
        forget_unlisted(d, d->listed, d->n_listed);
        if (d->n_listed == 0)
                return false;
        d->proc_fd = open(d->proc_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return d->proc_fd >= 0;
}

/* Ends the pass under way, if any. */
static void pass_end(struct discovery *d)
{
        sd_event_source_set_enabled(d->step, SD_EVENT_OFF);
        free(d->listed);
        d->listed = NULL;
        d->n_listed = d->next = 0;
        closep(&d->proc_fd);
        d->proc_fd = -1;
        d->under_way = false;
}

static int on_step(sd_event_source *s, void *userdata)
{
        struct discovery *d = userdata;
        uint64_t start = monotonic_clock_us();
        uint64_t budget = d->callbacks->busy(d->userdata) ? 0 : DISCOVERY_IDLE_STEP_US;

        while (d->next < d->n_listed) {
                look_at_listed(d, &d->listed[d->next++]);
                if (d->next < d->n_listed && monotonic_clock_us() - start >= budget)
                        return 0;
        }
        pass_end(d);
        schedule_next_pass(d);
        return 0;
}

/* Starts a pass; the next timer is set when it ends. */
static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct discovery *d = userdata;

        if (!pass_begin(d)) {
                pass_end(d);
                schedule_next_pass(d);
                return 0;
        }
        d->under_way = true;
        sd_event_source_set_enabled(d->step, SD_EVENT_ON);
        return 0;
}

bool discovery_kfd_present(const struct discovery *d)
{
        return !d->kfd_missing;
}

int discovery_new(sd_event *event, const char *sysfs_root, uint64_t interval_us,
                  const struct discovery_callbacks *callbacks, void *userdata, struct discovery **ret_discovery)
{
        struct discovery *d = calloc(1, sizeof(*d));
        int r;

        if (!d)
                return -ENOMEM;
        d->callbacks = callbacks;
        d->userdata = userdata;
        d->event = sd_event_ref(event);
        d->interval_us = interval_us;
        d->own_pid = getpid();
        d->proc_fd = -1;
        if (asprintf(&d->kfd_root, "%s/class/kfd/kfd", sysfs_root) < 0)
                d->kfd_root = NULL;
        else if (asprintf(&d->proc_dir, "%s/proc", d->kfd_root) < 0)
                d->proc_dir = NULL;
        if (!d->proc_dir) {
                discovery_free(d);
                return -ENOMEM;
        }
        r = sd_event_add_time(event, &d->timer, CLOCK_MONOTONIC, 0, 1000, on_timer, d);
        if (r >= 0)
                r = sd_event_add_defer(event, &d->step, on_step, d);
        if (r < 0) {
                discovery_free(d);
                return r;
        }
        /*
         * Below every other source: sd-event ranks sources of one priority by
         * when they became pending, and a defer source stays pending from its
         * creation on, so at normal priority a pass would hold up Varlink
         * calls, signals and the sessions' debug events until it ended.
         */
        sd_event_source_set_priority(d->step, SD_EVENT_PRIORITY_IDLE);
        sd_event_source_set_enabled(d->step, SD_EVENT_OFF);
        sd_event_source_set_enabled(d->timer, SD_EVENT_OFF);
        *ret_discovery = d;
        return 0;
}

void discovery_start(struct discovery *d)
{
        if (pass_begin(d))
                while (d->next < d->n_listed)
                        look_at_listed(d, &d->listed[d->next++]);
        pass_end(d);
        schedule_next_pass(d);
}

void discovery_set_interval(struct discovery *d, uint64_t interval_us)
{
        d->interval_us = interval_us;
        schedule_next_pass(d);
}

struct discovery *discovery_free(struct discovery *d)
{
        if (!d)
                return NULL;
        pass_end(d);
        sd_event_source_disable_unref(d->timer);
        sd_event_source_disable_unref(d->step);
        sd_event_unref(d->event);
        free(d->known);
        free(d->kfd_root);
        free(d->proc_dir);
        free(d);
        return NULL;
}
