/* SPDX-License-Identifier: MIT */
#include "process-facts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"

int process_facts_read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, size = 0;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : NEG_ERRNO();
        for (;;) {
                ssize_t n;

                /* grown as it fills: most files are small, /proc/<pid>/maps can run to megabytes */
                if (len == size) {
                        size_t grown_size = size ? size * 2 : 4096;
                        char *grown;

                        if (size >= max)
                                break;
                        if (grown_size > max)
                                grown_size = max;
                        grown = realloc(buf, grown_size + 1);
                        if (!grown)
                                return -ENOMEM;
                        buf = grown;
                        size = grown_size;
                }
                n = read(fd, buf + len, size - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == ESRCH ? -ESRCH : NEG_ERRNO();
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        if (!buf && !(buf = malloc(1)))
                return -ENOMEM;
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = len;
        return 0;
}

/* The text of /proc/<pid>/status, to free. */
static int read_status_text(const char *proc_root, pid_t pid, char **ret)
{
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/%d/status", proc_root, (int)pid) < 0)
                return -ENOMEM;
        return process_facts_read_file(path, PROCESS_FACT_MAX, ret, NULL);
}

/* The real uid, and the tracer (-1 when the line is not there or not a number: unknown). */
static int read_status(const char *proc_root, pid_t pid, uid_t *ret_uid, pid_t *ret_tracer)
{
        _cleanup_free_ char *status = NULL;
        unsigned long uid;
        int tracer;
        char *line;
        int r;

        r = read_status_text(proc_root, pid, &status);
        if (r < 0)
                return r;
        line = strstr(status, "\nUid:");
        if (!line || sscanf(line + 5, "%lu", &uid) != 1)
                return -EIO;
        line = strstr(status, "\nTracerPid:");
        if (!line || sscanf(line + strlen("\nTracerPid:"), "%d", &tracer) != 1 || tracer < 0)
                tracer = -1;
        *ret_uid = (uid_t)uid;
        *ret_tracer = tracer;
        return 0;
}

static int read_cmdline(const char *proc_root, pid_t pid, char **ret)
{
        _cleanup_free_ char *path = NULL;
        char *buf;
        size_t len;
        int r;

        if (asprintf(&path, "%s/%d/cmdline", proc_root, (int)pid) < 0)
                return -ENOMEM;
        r = process_facts_read_file(path, PROCESS_FACT_MAX, &buf, &len);
        if (r < 0)
                return r;
        while (len > 0 && buf[len - 1] == '\0')
                len--;
        for (size_t i = 0; i < len; i++)
                if (buf[i] == '\0')
                        buf[i] = ' ';
        buf[len] = '\0';
        *ret = buf;
        return 0;
}

/*
 * The unified hierarchy's line is "0::<path>"; on hybrid setups fall back to
 * name=systemd. The cluster job is looked for in every line.
 */
static int read_cgroup(const char *proc_root, pid_t pid, char **ret, struct cluster_cgroup *ret_cluster)
{
        _cleanup_free_ char *path = NULL, *buf = NULL;
        const char *found = NULL;
        char *save = NULL, *copy;
        size_t len;
        int r;

        if (asprintf(&path, "%s/%d/cgroup", proc_root, (int)pid) < 0)
                return -ENOMEM;
        r = process_facts_read_file(path, PROCESS_FACT_MAX, &buf, &len);
        if (r < 0)
                return r;
        (void)cluster_cgroup_parse_proc(buf, ret_cluster);
        for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (strncmp(line, "0::", 3) == 0) {
                        found = line + 3;
                        break;
                }
                if (!found && strstr(line, ":name=systemd:"))
                        found = strstr(line, ":name=systemd:") + strlen(":name=systemd:");
        }
        copy = strdup(found ? found : "");
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        return 0;
}

int process_facts_read_cluster_cgroup(const char *proc_root, pid_t pid, struct cluster_cgroup *ret)
{
        _cleanup_free_ char *cgroup = NULL;

        return read_cgroup(proc_root, pid, &cgroup, ret);
}

int process_facts_read_exe(const char *proc_root, pid_t pid, char **ret)
{
        _cleanup_free_ char *path = NULL;
        char target[PATH_MAX];
        ssize_t n;
        char *deleted;

        if (asprintf(&path, "%s/%d/exe", proc_root, (int)pid) < 0)
                return -ENOMEM;
        n = readlink(path, target, sizeof(target) - 1);
        if (n < 0) {
                *ret = NULL; /* kernel threads and zombies have none: match on the rest */
                return 0;
        }
        target[n] = '\0';
        /* A binary replaced by a package upgrade still is the same program. */
        deleted = strstr(target, " (deleted)");
        if (deleted && deleted[strlen(" (deleted)")] == '\0')
                *deleted = '\0';
        *ret = strdup(target);
        return *ret ? 0 : -ENOMEM;
}

int process_facts_read_parent(const char *proc_root, pid_t pid, pid_t *ret_parent)
{
        _cleanup_free_ char *status = NULL;
        const char *line;
        int parent;
        int r;

        r = read_status_text(proc_root, pid, &status);
        if (r < 0)
                return r;
        line = strstr(status, "\nPPid:");
        if (!line || sscanf(line + strlen("\nPPid:"), "%d", &parent) != 1 || parent < 0)
                return -EIO;
        *ret_parent = parent;
        return 0;
}

int process_facts_read(const char *proc_root, const char *slurm_jobs_dir, pid_t pid, struct process_facts *ret)
{
        struct process_facts p = { .pid = pid, .slurm_job = { .error = -ENOENT } };
        int r;

        if ((r = read_status(proc_root, pid, &p.uid, &p.tracer)) < 0 || (r = read_cmdline(proc_root, pid, &p.cmdline)) < 0 ||
            (r = read_cgroup(proc_root, pid, &p.cgroup, &p.cluster_cgroup)) < 0 ||
            (r = process_environ_read(proc_root, pid, &p.environment)) < 0 ||
            (r = process_facts_read_exe(proc_root, pid, &p.exe)) < 0 ||
            /* by the cgroup's job alone: SLURM_JOB_ID is the process owner's to write */
            (r = slurm_job_record_read(slurm_jobs_dir, p.cluster_cgroup.slurm_job_id, &p.slurm_job)) < 0) {
                process_facts_done(&p);
                return r;
        }
        cluster_identity_derive(&p.cluster_cgroup, &p.environment, &p.cluster);
        *ret = p;
        return 0;
}

void process_facts_done(struct process_facts *p)
{
        free(p->exe);
        free(p->cmdline);
        free(p->cgroup);
        process_environ_done(&p->environment);
        slurm_job_record_done(&p->slurm_job);
        *p = (struct process_facts){ 0 };
}
