/* SPDX-License-Identifier: MIT */
/*
 * What the configuration can match a process by, read once from /proc so
 * that every rule is judged against the same snapshot.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "cluster-cgroup.h"
#include "cluster-identity.h"
#include "process-environ.h"
#include "slurm-job-record.h"

/* /proc/<pid>/cmdline and /cgroup are bounded by the kernel, but not small. */
#define PROCESS_FACT_MAX 65536

struct process_facts {
        pid_t pid;
        uid_t uid;       /* real uid */
        pid_t tracer;    /* TracerPid: 0 when not traced, -1 when the status does not say */
        char *exe;       /* NULL when the link cannot be read (kernel thread, gone) */
        char *cmdline;   /* arguments joined by single spaces; "" for none */
        char *cgroup;    /* the unified-hierarchy path, e.g. /system.slice/x.service */
        struct cluster_cgroup cluster_cgroup; /* the pod or Slurm job any of its cgroups names */
        struct process_environ environment;   /* may be unreadable: see its error */
        struct cluster_identity cluster;      /* from the two above */
        struct slurm_job_record slurm_job;    /* the Prolog's record of its cgroup's Slurm job */
};

/*
 * slurm_jobs_dir: where the Prolog's job records are (paths.h). Returns 0,
 * -ESRCH if the process is gone, or another -errno.
 */
int process_facts_read(const char *proc_root, const char *slurm_jobs_dir, pid_t pid, struct process_facts *ret);
void process_facts_done(struct process_facts *p);

/*
 * A /proc file whole, NUL-terminated, cut at max bytes, in *ret (and its
 * length in *ret_len, which may be NULL). Returns 0, -ESRCH if the process is
 * gone, -ENOMEM, or another -errno.
 */
int process_facts_read_file(const char *path, size_t max, char **ret, size_t *ret_len);
/* The pod or Slurm job /proc/<pid>/cgroup names. Returns 0, -ESRCH if the process is gone, or another -errno. */
int process_facts_read_cluster_cgroup(const char *proc_root, pid_t pid, struct cluster_cgroup *ret);
/* The PPid: line of /proc/<pid>/status. Returns 0, -ESRCH if the process is gone, -EIO, or another -errno. */
int process_facts_read_parent(const char *proc_root, pid_t pid, pid_t *ret_parent);
/* The /proc/<pid>/exe link, " (deleted)" dropped, in *ret: NULL when it cannot be read. Returns 0 or -ENOMEM. */
int process_facts_read_exe(const char *proc_root, pid_t pid, char **ret);
