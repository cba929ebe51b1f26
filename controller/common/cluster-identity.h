/* SPDX-License-Identifier: MIT */
/*
 * Which cluster job a process is part of, as one value that gpreemptd keeps
 * per process and shows (gpreemptctl status, metrics labels): a Slurm job
 * (its id, and its name when the environment gives one) or a Kubernetes pod
 * (its UID, and namespace/name when the pod exposes them through the
 * downward API as POD_NAMESPACE and POD_NAME).
 *
 * The id comes from the cgroup when the cgroup names one (only the cluster's
 * own daemons can place a process there), else from the environment; the
 * name always comes from the environment, which the process's owner writes:
 * it is a label for people, never a basis for a decision, and arbitrary
 * bytes: escape it before printing (printable.h).
 */
#pragma once

#include <stdbool.h>

#include "cluster-cgroup.h"
#include "process-environ.h"

enum cluster_kind {
        CLUSTER_KIND_NONE,
        CLUSTER_KIND_SLURM,
        CLUSTER_KIND_KUBERNETES,
        _CLUSTER_KIND_MAX,
};

/* Long enough for a pod UID and for a Slurm job id in decimal. */
#define CLUSTER_ID_MAX KUBERNETES_POD_UID_MAX
/* A namespace (63) and a pod name (253) with the '/' between; a Slurm job name is cut there. */
#define CLUSTER_NAME_MAX 317

struct cluster_identity {
        enum cluster_kind kind;
        char id[CLUSTER_ID_MAX + 1];     /* "" for CLUSTER_KIND_NONE */
        char name[CLUSTER_NAME_MAX + 1]; /* "" when the environment gives none */
};

enum slurm_environment {
        SLURM_ENVIRONMENT_OF_JOB,   /* SLURM_JOB_ID is set and agrees with the cgroup's job, if any */
        SLURM_ENVIRONMENT_NONE,     /* no SLURM_JOB_ID (or it could not be read) */
        SLURM_ENVIRONMENT_OTHER_JOB, /* SLURM_JOB_ID names another job than the cgroup: not believed */
};

/*
 * Whether the SLURM_* variables of env describe the job of this process: a
 * process can inherit or set them for a job it is not part of, but not move
 * itself into another job's cgroup.
 */
enum slurm_environment cluster_slurm_environment(const struct cluster_cgroup *cg, const struct process_environ *env);

void cluster_identity_derive(const struct cluster_cgroup *cg, const struct process_environ *env,
                             struct cluster_identity *ret);

/* "slurm", "kubernetes", or NULL for none. */
const char *cluster_kind_to_string(enum cluster_kind k);

struct json_object;
/*
 * {"kind", "id", "name"} (name null when there is none), or NULL (JSON null)
 * for a process in no cluster job: what the Varlink API's process entries
 * and `gpreemptctl verify-config --json` carry. The caller owns the object.
 */
struct json_object *cluster_identity_to_json(const struct cluster_identity *id);
