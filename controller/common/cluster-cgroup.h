/* SPDX-License-Identifier: MIT */
/*
 * What a cgroup path says about the cluster job a process belongs to: the
 * Kubernetes pod (its UID and QoS class, from the kubelet's pod cgroup) or
 * the Slurm job (its id, from slurmstepd's job cgroup). The layouts, each
 * with its public source, are in docs/reference/cluster-cgroups.md; the
 * tests hold one real path of each.
 *
 * The path comes from /proc/<pid>/cgroup, which the kernel writes but whose
 * directory names the cluster software chose, so it is parsed as untrusted
 * text: every field is bounded and checked, and a path that only looks
 * almost right says nothing. A directory name cannot forge a line: the
 * kernel refuses names with a newline (kernel/cgroup/cgroup.c,
 * cgroup_mkdir(); cgroup-v1.c, cgroup1_rename()). A Slurm job is believed
 * only where slurmstepd makes it, at a fixed depth from the hierarchy's root,
 * not in a subtree delegated to a user.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

enum kubernetes_qos {
        KUBERNETES_QOS_NONE, /* not in a pod cgroup */
        KUBERNETES_QOS_GUARANTEED,
        KUBERNETES_QOS_BURSTABLE,
        KUBERNETES_QOS_BESTEFFORT,
        _KUBERNETES_QOS_MAX,
};

/*
 * A pod UID as the API server shows it: 36 characters, lowercase hex and
 * dashes; a static pod's is a 32-digit hash without dashes.
 */
#define KUBERNETES_POD_UID_MAX 36
/* A container id: 64 hex digits for containerd, CRI-O and Docker. */
#define KUBERNETES_CONTAINER_ID_MAX 64
/* A Slurm step directory's name after step_: a number, batch, extern, interactive, a het-job "0+1". */
#define SLURM_STEP_MAX 32

struct cluster_cgroup {
        enum kubernetes_qos qos;
        char pod_uid[KUBERNETES_POD_UID_MAX + 1];             /* "" when not in a pod */
        char container_id[KUBERNETES_CONTAINER_ID_MAX + 1];   /* "" when the path stops at the pod */
        uint32_t slurm_job_id;                                /* 0 when not in a Slurm job cgroup */
        char slurm_step[SLURM_STEP_MAX + 1];                  /* "" when the path stops at the job */
};

/*
 * Parses one cgroup path (one line of /proc/<pid>/cgroup after its second
 * ':'). Returns true and fills *ret when the path is a pod's or a Slurm job's;
 * otherwise returns false and *ret is all "none".
 */
bool cluster_cgroup_parse(const char *path, struct cluster_cgroup *ret);

/*
 * The same, for a whole /proc/<pid>/cgroup text: the unified hierarchy's line
 * first, then each cgroup v1 line in order (Slurm's cgroup/v1 plugin places
 * jobs in the freezer, memory and cpuset hierarchies only).
 */
bool cluster_cgroup_parse_proc(const char *proc_cgroup, struct cluster_cgroup *ret);

/*
 * A pod UID as an operator writes it (kubectl's dashes or a cgroup's
 * underscores, either case), in the API server's form in ret.
 */
bool kubernetes_pod_uid_parse(const char *s, char ret[static KUBERNETES_POD_UID_MAX + 1]);

const char *kubernetes_qos_to_string(enum kubernetes_qos q);
/* Returns the QoS class, or -EINVAL. */
int kubernetes_qos_from_string(const char *s);
