/* SPDX-License-Identifier: MIT */
/*
 * /sys/class/kfd/kfd/proc/<pid>/ (kfd_process.c kfd_procfs_*; kfd-interface.md
 * §8.1). Readable without privileges. Directory names are host pids.
 *   pasid                       "%d\n"
 *   queues/<id>/{size,type,gpuid}  no trailing newline; type is the kernel's
 *                                  internal enum kfd_queue_type
 *   stats_<gpuid>/cu_occupancy  "%d\n", only where the ASIC supports it
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cleanup.h"
#include "fileio.h"
#include "sources.h"

static int read_queue(const char *queues_dir, uint32_t id, struct qf_diags *diags, struct qf_sysfs_queue *ret)
{
        static const char *const files[] = { "size", "type", "gpuid" };
        uint64_t v[ELEMENTSOF(files)];
        char path[PATH_MAX];

        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                int r = qf_pathf(path, sizeof(path), "%s/%u/%s", queues_dir, id, files[i]);
                if (r >= 0)
                        r = qf_read_u64(path, &v[i]);
                if (r == -ENOENT)
                        return r; /* the queue was destroyed while we looked */
                if (r < 0 || (i > 0 && v[i] > UINT32_MAX)) {
                        qf_diag_add(diags, path, 0, "cannot read this queue attribute: %s",
                                    r < 0 ? strerror(-r) : "value out of range");
                        return r < 0 ? r : -ERANGE;
                }
        }
        *ret = (struct qf_sysfs_queue){
                .queue_id = id, .size = v[0], .type = (uint32_t) v[1], .gpu_id = (uint32_t) v[2],
        };
        return 0;
}

static int compare_queue_ids(const void *a, const void *b)
{
        const struct qf_sysfs_queue *x = a, *y = b;
        return (x->queue_id > y->queue_id) - (x->queue_id < y->queue_id);
}

struct queue_walk {
        struct qf_diags *diags;
        struct qf_sysfs_process *p;
};

static int add_queue(const char *queues_dir, uint64_t id, uint64_t ino, void *userdata)
{
        struct queue_walk *w = userdata;
        struct qf_sysfs_process *p = w->p;

        if (p->n_queues >= QF_MAX_QUEUES_PER_PROCESS) {
                qf_diag_add(w->diags, queues_dir, 0, "more than %d queues; ignoring the rest",
                            QF_MAX_QUEUES_PER_PROCESS);
                return 1;
        }
        struct qf_sysfs_queue q;
        if (read_queue(queues_dir, (uint32_t) id, w->diags, &q) < 0)
                return 0;
        struct qf_sysfs_queue *slot = QF_APPEND(p->queues, p->n_queues);
        if (!slot)
                return -ENOMEM;
        *slot = q;
        return 0;
}

static int read_queues(const char *proc_dir, struct qf_diags *diags, struct qf_sysfs_process *p)
{
        char queues_dir[PATH_MAX];
        int r = qf_pathf(queues_dir, sizeof(queues_dir), "%s/queues", proc_dir);
        if (r < 0)
                return r;
        r = qf_for_each_numbered_entry(queues_dir, UINT32_MAX, add_queue, &(struct queue_walk){ diags, p });
        /* add_queue fails only with -ENOMEM: -ENOENT is a process without
         * a queues directory, which has no queues. */
        if (r < 0)
                return r == -ENOENT ? 0 : r;
        if (p->n_queues > 1)
                qsort(p->queues, p->n_queues, sizeof(*p->queues), compare_queue_ids);
        return 0;
}

static int read_occupancy(const char *proc_dir, struct qf_diags *diags, struct qf_sysfs_process *p)
{
        _cleanup_closedir_ DIR *d = opendir(proc_dir);
        if (!d)
                return -errno;
        for (struct dirent *de; (de = readdir(d));) {
                uint64_t gpu_id, cus;
                if (strncmp(de->d_name, "stats_", 6) != 0 || !qf_parse_entry_name(de->d_name + 6, UINT32_MAX, &gpu_id))
                        continue;
                char path[PATH_MAX];
                int r = qf_pathf(path, sizeof(path), "%s/%s/cu_occupancy", proc_dir, de->d_name);
                if (r >= 0)
                        r = qf_read_u64(path, &cus);
                if (r == -ENOENT)
                        continue; /* the ASIC has no get_cu_occupancy */
                if (r < 0) {
                        qf_diag_add(diags, path, 0, "cannot read CU occupancy: %s", strerror(-r));
                        continue;
                }
                if (p->n_occupancy >= QF_MAX_GPUS)
                        break;
                struct qf_cu_occupancy *o = QF_APPEND(p->occupancy, p->n_occupancy);
                if (!o)
                        return -ENOMEM;
                *o = (struct qf_cu_occupancy){ .gpu_id = (uint32_t) gpu_id, .cus = (int64_t) cus };
        }
        return 0;
}

int qf_sysfs_read_process(const char *kfd_root, pid_t pid, struct qf_diags *diags, struct qf_sysfs_process *ret)
{
        char proc_dir[PATH_MAX], path[PATH_MAX];
        int r = qf_pathf(proc_dir, sizeof(proc_dir), "%s/proc/%d", kfd_root, (int) pid);
        if (r < 0)
                return r;

        _cleanup_closedir_ DIR *probe = opendir(proc_dir);
        if (!probe)
                return -errno;

        struct qf_sysfs_process p = { .pid = pid };
        uint64_t pasid;
        if (qf_pathf(path, sizeof(path), "%s/pasid", proc_dir) == 0 && qf_read_u64(path, &pasid) == 0 &&
            pasid <= UINT32_MAX) {
                p.has_pasid = true;
                p.pasid = (uint32_t) pasid;
        }

        r = read_queues(proc_dir, diags, &p);
        if (r >= 0)
                r = read_occupancy(proc_dir, diags, &p);
        if (r < 0) {
                qf_sysfs_process_clear(&p);
                return r;
        }
        *ret = p;
        return 0;
}

static int compare_listed_pids(const void *a, const void *b)
{
        const struct qf_sysfs_listed_process *x = a, *y = b;
        return (x->pid > y->pid) - (x->pid < y->pid);
}

struct process_listing {
        struct qf_sysfs_listed_process *listed;
        size_t n;
};

static int add_listed_process(const char *dir, uint64_t pid, uint64_t ino, void *userdata)
{
        struct process_listing *l = userdata;

        if (pid == 0)
                return 0;
        if (l->n >= QF_MAX_PROCESSES)
                return 1;
        struct qf_sysfs_listed_process *slot = QF_APPEND(l->listed, l->n);
        if (!slot)
                return -ENOMEM;
        *slot = (struct qf_sysfs_listed_process){ .pid = (pid_t) pid, .dir_ino = ino };
        return 0;
}

int qf_sysfs_list_processes(const char *kfd_root, struct qf_sysfs_listed_process **ret_listed, size_t *ret_n)
{
        char dir[PATH_MAX];
        int r = qf_pathf(dir, sizeof(dir), "%s/proc", kfd_root);
        if (r < 0)
                return r;

        struct process_listing l = { 0 };
        r = qf_for_each_numbered_entry(dir, INT32_MAX, add_listed_process, &l);
        if (r < 0) {
                free(l.listed);
                return r;
        }
        if (l.n > 1)
                qsort(l.listed, l.n, sizeof(*l.listed), compare_listed_pids);
        *ret_listed = l.listed;
        *ret_n = l.n;
        return 0;
}

int qf_sysfs_list_pids(const char *kfd_root, pid_t **ret_pids, size_t *ret_n)
{
        _cleanup_free_ struct qf_sysfs_listed_process *listed = NULL;
        size_t n;
        int r = qf_sysfs_list_processes(kfd_root, &listed, &n);
        if (r < 0)
                return r;

        pid_t *pids = malloc((n ? n : 1) * sizeof(*pids));
        if (!pids)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                pids[i] = listed[i].pid;
        *ret_pids = pids;
        *ret_n = n;
        return 0;
}

void qf_sysfs_process_clear(struct qf_sysfs_process *p)
{
        free(p->queues);
        free(p->occupancy);
        *p = (struct qf_sysfs_process){ 0 };
}
