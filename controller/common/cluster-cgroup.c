/* SPDX-License-Identifier: MIT */
#include "cluster-cgroup.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "parse-decimal.h"

/* A cgroup is a directory: no component of a real path is longer than a file name. */
#define COMPONENT_MAX NAME_MAX

static const char *const qos_names[_KUBERNETES_QOS_MAX] = {
        [KUBERNETES_QOS_NONE] = "none",
        [KUBERNETES_QOS_GUARANTEED] = "guaranteed",
        [KUBERNETES_QOS_BURSTABLE] = "burstable",
        [KUBERNETES_QOS_BESTEFFORT] = "besteffort",
};

const char *kubernetes_qos_to_string(enum kubernetes_qos q)
{
        return q < _KUBERNETES_QOS_MAX ? qos_names[q] : "unknown";
}

int kubernetes_qos_from_string(const char *s)
{
        for (int q = KUBERNETES_QOS_GUARANTEED; q < _KUBERNETES_QOS_MAX; q++)
                if (strcmp(s, qos_names[q]) == 0)
                        return q;
        return -EINVAL;
}

static bool starts_with(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* s without suffix, when s ends with it: the length left, or -1. */
static int length_before_suffix(const char *s, const char *suffix)
{
        size_t len = strlen(s), n = strlen(suffix);

        if (len < n || strcmp(s + len - n, suffix) != 0)
                return -1;
        return (int)(len - n);
}

static bool is_lower_hex(char c)
{
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/*
 * A pod UID of len characters at s, in the form the kubelet wrote it: dashes
 * (cgroupfs) or, because '-' separates a systemd slice's parents, underscores
 * (systemd driver; kubelet's cgroup_manager_linux.go escapes them). Copied
 * into ret with dashes, as the API server shows it.
 */
static bool parse_pod_uid(const char *s, size_t len, char separator, char ret[static KUBERNETES_POD_UID_MAX + 1])
{
        if (len == 32) { /* a static pod's: the hash of its manifest */
                for (size_t i = 0; i < len; i++)
                        if (!is_lower_hex(s[i]))
                                return false;
        } else if (len == 36) {
                for (size_t i = 0; i < len; i++) {
                        bool dash_here = i == 8 || i == 13 || i == 18 || i == 23;

                        if (dash_here ? s[i] != separator : !is_lower_hex(s[i]))
                                return false;
                }
        } else
                return false;
        for (size_t i = 0; i < len; i++)
                ret[i] = s[i] == separator ? '-' : s[i];
        ret[len] = '\0';
        return true;
}

bool kubernetes_pod_uid_parse(const char *s, char ret[static KUBERNETES_POD_UID_MAX + 1])
{
        char lower[KUBERNETES_POD_UID_MAX];
        size_t len = strlen(s);

        if (len > sizeof(lower))
                return false;
        for (size_t i = 0; i < len; i++)
                lower[i] = s[i] == '_' ? '-' : (char)tolower((unsigned char)s[i]);
        return parse_pod_uid(lower, len, '-', ret);
}

/*
 * The systemd driver's pod slice names its whole path, so it says everything
 * alone, even seen from a cgroup namespace that hides its parents:
 * [<root>-]kubepods-pod<UID_>.slice (Guaranteed, directly under
 * kubepods.slice), [<root>-]kubepods-burstable-pod<UID_>.slice,
 * [<root>-]kubepods-besteffort-pod<UID_>.slice. <root> is the kubelet's
 * --cgroup-root, e.g. "kubelet" in kind clusters.
 */
static bool parse_systemd_pod_slice(const char *c, struct cluster_cgroup *ret)
{
        static const struct {
                const char *infix;
                enum kubernetes_qos qos;
        } kinds[] = {
                { "kubepods-pod", KUBERNETES_QOS_GUARANTEED },
                { "kubepods-burstable-pod", KUBERNETES_QOS_BURSTABLE },
                { "kubepods-besteffort-pod", KUBERNETES_QOS_BESTEFFORT },
        };
        int name_len = length_before_suffix(c, ".slice");

        if (name_len < 0)
                return false;
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
                const char *found = NULL;

                for (const char *p = strstr(c, kinds[k].infix); p && p < c + name_len; p = strstr(p + 1, kinds[k].infix))
                        if (p == c || p[-1] == '-')
                                found = p;
                if (!found)
                        continue;
                found += strlen(kinds[k].infix);
                if (parse_pod_uid(found, (size_t)(c + name_len - found), '_', ret->pod_uid)) {
                        ret->qos = kinds[k].qos;
                        return true;
                }
        }
        return false;
}

/*
 * The cgroupfs driver's: kubepods/pod<UID> (Guaranteed) and
 * kubepods/{burstable,besteffort}/pod<UID>. Seen from a cgroup namespace the
 * top may be ".." instead of kubepods.
 */
static bool parse_cgroupfs_pod_dir(const char *c, const char *parent, const char *grandparent,
                                   struct cluster_cgroup *ret)
{
        enum kubernetes_qos qos;

        if (!starts_with(c, "pod"))
                return false;
        if (strcmp(parent, "kubepods") == 0)
                qos = KUBERNETES_QOS_GUARANTEED;
        else if ((strcmp(parent, "burstable") == 0 || strcmp(parent, "besteffort") == 0) &&
                 (strcmp(grandparent, "kubepods") == 0 || strcmp(grandparent, "..") == 0))
                qos = parent[1] == 'u' ? KUBERNETES_QOS_BURSTABLE : KUBERNETES_QOS_BESTEFFORT;
        else
                return false;
        if (!parse_pod_uid(c + 3, strlen(c + 3), '-', ret->pod_uid))
                return false;
        ret->qos = qos;
        return true;
}

/*
 * The component under a pod's: its container. The systemd driver names it
 * <runtime>-<id>.scope (cri-containerd-, crio-, docker-), cgroupfs <id> or
 * crio-<id>. crio-conmon-<id> is CRI-O's monitor, not the container.
 */
static void parse_container(const char *c, struct cluster_cgroup *ret)
{
        static const char *const prefixes[] = { "cri-containerd-", "crio-", "docker-" };
        int len = length_before_suffix(c, ".scope");
        const char *id = c;

        if (len < 0)
                len = (int)strlen(c);
        if (starts_with(c, "crio-conmon-"))
                return;
        for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
                if (starts_with(c, prefixes[i])) {
                        id = c + strlen(prefixes[i]);
                        len -= (int)strlen(prefixes[i]);
                        break;
                }
        if (len <= 0 || len > KUBERNETES_CONTAINER_ID_MAX)
                return;
        for (int i = 0; i < len; i++)
                if (!is_lower_hex(id[i]))
                        return;
        memcpy(ret->container_id, id, (size_t)len);
        ret->container_id[len] = '\0';
}

/* "<prefix><decimal>" with the number in 1..UINT32_MAX: Slurm's job_, uid_ directories. */
static bool parse_numbered(const char *c, const char *prefix, uint32_t *ret)
{
        uint64_t n;

        if (!starts_with(c, prefix) || parse_decimal(c + strlen(prefix), UINT32_MAX, &n) < 0 || n == 0)
                return false;
        *ret = (uint32_t)n;
        return true;
}

/*
 * slurmstepd's job cgroup: cgroup/v2 puts it at
 * system.slice/[<node>_]slurmstepd.scope/job_<id>/step_<n>/user/task_<n>;
 * cgroup/v1 at slurm/uid_<uid>/job_<id>/step_<n>/task_<n>, whose top is
 * slurm_<node> in builds for several slurmd per host (Debian's). Either way
 * the job is the third directory from the hierarchy's root (depth 2), which
 * only root can make: a user given a cgroup subtree of its own (systemd's
 * Delegate=, user@.service) can make directories of those names deeper
 * down, and must not pass for a job so.
 */
static bool parse_slurm_job_dir(const char *c, const char *parent, const char *grandparent, unsigned depth,
                                uint32_t *ret)
{
        uint32_t uid;

        if (depth != 2)
                return false;
        if (strcmp(grandparent, "system.slice") == 0 &&
            (strcmp(parent, "slurmstepd.scope") == 0 || length_before_suffix(parent, "_slurmstepd.scope") > 0))
                return parse_numbered(c, "job_", ret);
        /* uid 0 is a real uid here: root's jobs */
        if ((strcmp(parent, "uid_0") == 0 || parse_numbered(parent, "uid_", &uid)) &&
            (strcmp(grandparent, "slurm") == 0 || (starts_with(grandparent, "slurm_") && grandparent[6])))
                return parse_numbered(c, "job_", ret);
        return false;
}

/* The component under a job's: step_<id>, where <id> is a step number or a name Slurm gives. */
static void parse_slurm_step(const char *c, struct cluster_cgroup *ret)
{
        size_t len;

        if (!starts_with(c, "step_"))
                return;
        c += strlen("step_");
        len = strlen(c);
        if (len == 0 || len > SLURM_STEP_MAX || strspn(c, "abcdefghijklmnopqrstuvwxyz0123456789.+") != len)
                return;
        memcpy(ret->slurm_step, c, len + 1);
}

bool cluster_cgroup_parse(const char *path, struct cluster_cgroup *ret)
{
        char component[3][COMPONENT_MAX + 1] = { "", "", "" }; /* the current one, its parent, its parent's parent */
        struct cluster_cgroup found = { 0 };
        bool in_pod = false, in_job = false;
        unsigned depth = 0; /* of c: 0 for the first directory under the root */
        char *c = component[0], *parent = component[1], *grandparent = component[2];

        for (const char *p = path; *p;) {
                size_t len;
                char *oldest;

                while (*p == '/')
                        p++;
                len = strcspn(p, "/");
                if (!len)
                        break;
                oldest = grandparent;
                grandparent = parent;
                parent = c;
                c = oldest;
                if (len > COMPONENT_MAX)
                        c[0] = '\0'; /* no directory has such a name: it matches nothing */
                else {
                        memcpy(c, p, len);
                        c[len] = '\0';
                }
                p += len;

                if (in_pod) {
                        parse_container(c, &found);
                        in_pod = false;
                }
                /* The innermost pod wins: a kubelet in a pod (kind) nests its pods inside one. */
                if (parse_systemd_pod_slice(c, &found) || parse_cgroupfs_pod_dir(c, parent, grandparent, &found)) {
                        found.container_id[0] = '\0';
                        in_pod = true;
                }
                if (in_job) {
                        parse_slurm_step(c, &found);
                        in_job = false;
                }
                if (parse_slurm_job_dir(c, parent, grandparent, depth, &found.slurm_job_id)) {
                        found.slurm_step[0] = '\0';
                        in_job = true;
                }
                depth++;
        }
        *ret = found;
        return found.qos != KUBERNETES_QOS_NONE || found.slurm_job_id;
}

bool cluster_cgroup_parse_proc(const char *proc_cgroup, struct cluster_cgroup *ret)
{
        /* pass 0: the unified line ("0::<path>"); pass 1: the v1 lines ("N:controllers:<path>") */
        for (int pass = 0; pass < 2; pass++)
                for (const char *line = proc_cgroup; *line;) {
                        size_t len = strcspn(line, "\n");
                        const char *path = memchr(line, ':', len);
                        bool unified = len >= 3 && memcmp(line, "0::", 3) == 0;

                        if (path)
                                path = memchr(path + 1, ':', len - (size_t)(path + 1 - line));
                        if (path && unified == (pass == 0)) {
                                char copy[PATH_MAX];
                                size_t path_len = len - (size_t)(path + 1 - line);

                                if (path_len < sizeof(copy)) {
                                        memcpy(copy, path + 1, path_len);
                                        copy[path_len] = '\0';
                                        if (cluster_cgroup_parse(copy, ret))
                                                return true;
                                }
                        }
                        line += len;
                        if (*line == '\n')
                                line++;
                }
        *ret = (struct cluster_cgroup){ 0 };
        return false;
}
