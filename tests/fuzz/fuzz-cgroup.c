/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: what workload matching reads from /proc/<pid>/cgroup,
 * paths a process's own container or cluster setup chooses: the systemd
 * unit it names, and the Kubernetes pod or Slurm job it names, from one
 * path and from a whole /proc/<pid>/cgroup text; and the freezer gpreemptd
 * reads for it, with a state file of either kind.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-freezer.h"
#include "cluster-cgroup.h"
#include "workload-match.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_lower_hex_or_dash(const char *s)
{
        return strspn(s, "0123456789abcdef-") == strlen(s);
}

/* What a parsed cluster cgroup always is: a pod has a UID in the API server's form, a job an id from 1. */
static void check_cluster(bool found, const struct cluster_cgroup *cg)
{
        size_t uid_len = strlen(cg->pod_uid);

        if (found != (cg->qos != KUBERNETES_QOS_NONE || cg->slurm_job_id != 0))
                abort();
        if ((cg->qos == KUBERNETES_QOS_NONE) != (uid_len == 0) || cg->qos >= _KUBERNETES_QOS_MAX)
                abort();
        if (uid_len && ((uid_len != 32 && uid_len != 36) || !is_lower_hex_or_dash(cg->pod_uid)))
                abort();
        if (!is_lower_hex_or_dash(cg->container_id) || strchr(cg->container_id, '-'))
                abort();
        if (cg->container_id[0] && !uid_len)
                abort();
}

/* A freezer found names an absolute path that is in the text and does not
 * climb out of the reader's cgroup namespace (that is -EXDEV, no path). */
static void check_freezer(const char *text)
{
        char *path = NULL;
        int kind = cgroup_freezer_parse_membership(text, &path);

        if (kind < 0 ? (kind != -EXDEV && kind != -ENOMEM) || path : (kind == CGROUP_FREEZER_NONE) != !path)
                abort();
        if (path && (path[0] != '/' || !strstr(text, path) || strstr(path, "/../")))
                abort();
        free(path);
        (void)cgroup_freezer_parse_frozen(CGROUP_FREEZER_V1, text);
        (void)cgroup_freezer_parse_frozen(CGROUP_FREEZER_V2, text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *path = malloc(size + 1), *unit;
        struct cluster_cgroup cg;

        if (!path)
                return 0;
        memcpy(path, data, size);
        path[size] = '\0';
        unit = workload_match_cgroup_unit(path);
        /* a unit is one path component of the input */
        if (unit && (!*unit || strchr(unit, '/') || !strstr(path, unit)))
                abort();
        free(unit);
        check_cluster(cluster_cgroup_parse(path, &cg), &cg);
        check_cluster(cluster_cgroup_parse_proc(path, &cg), &cg);
        check_freezer(path);
        free(path);
        return 0;
}
