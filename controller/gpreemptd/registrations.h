/* SPDX-License-Identifier: MIT */
/*
 * Classes given by hand (io.gpreempt.Register): each names a live process
 * and covers it and the processes it starts, whenever they come to use the
 * GPU, through every exec. That is what a batch system needs: a Slurm task
 * is registered before it execs the job's program and once slurmstepd has
 * put it in its step's cgroup (the SPANK plugin's task_post_fork), and a
 * batch script's GPU work runs in its children.
 * A task in a Slurm step's cgroup covers every process of that step's
 * cgroup too: slurmstepd keeps them all there, also those whose parent
 * chain no longer reaches the task (a double fork, a daemon, orphans of a
 * task that exited), and only slurmstepd can move a process out. Such a
 * registration outlives its task for as long as a tracked process is in
 * its step.
 *
 * A registration lasts as long as its process: each holds a pidfd, and one
 * whose process exited is dropped (or, for a step's, loses its pid) before
 * the next lookup, so a pid the kernel hands out again is never mistaken
 * for it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cluster-cgroup.h"
#include "workload.h"

/* Registrations held at once; a node runs far fewer job tasks. */
#define REGISTRATIONS_MAX 4096
/* A registration's name (e.g. "slurm-job-42.0"): printable ASCII, at most this many bytes. */
#define REGISTRATION_NAME_MAX 64

struct registration {
        pid_t pid;   /* 0 once its task exited (a step's registration) */
        int pidfd;   /* -1 then */
        enum workload_class class;
        char *name; /* NULL: none given */
        uint32_t slurm_job;                  /* the Slurm step whose cgroup the process was in; 0: none */
        char slurm_step[SLURM_STEP_MAX + 1];
        bool covers;                         /* found for a process since registrations_mark_unused() */
};

struct registrations {
        struct registration *items;
        size_t n;
};

/* Whether name may be a registration's name. */
bool registration_name_is_valid(const char *name);

/*
 * Registers pid (replacing its earlier registration) with class and name
 * (may be NULL), reading its Slurm step from <proc_root>/<pid>/cgroup.
 * Returns 0, -ESRCH when pid does not exist, -ENOSPC past
 * REGISTRATIONS_MAX, -EINVAL for a name that is not valid, or -ENOMEM.
 */
int registrations_set(struct registrations *r, const char *proc_root, pid_t pid, enum workload_class class,
                      const char *name);
/* Drops pid's own registration. Returns whether it had one. */
bool registrations_remove(struct registrations *r, pid_t pid);
/*
 * The registration that covers pid: its own, else its nearest registered
 * ancestor's, read from <proc_root>/<pid>/status, else that of a task of the
 * Slurm step whose cgroup it is in (cg, as process_facts read it). NULL when
 * none does.
 */
const struct registration *registrations_find(struct registrations *r, const char *proc_root, pid_t pid,
                                              const struct cluster_cgroup *cg);
/*
 * Around a lookup of every tracked process: the registrations whose process
 * exited are ended first (once, rather than at each lookup), and a step's
 * registration whose task exited and that none of them was found under is
 * dropped after.
 */
void registrations_mark_unused(struct registrations *r);
void registrations_drop_unused_steps(struct registrations *r);
void registrations_done(struct registrations *r);
