/* SPDX-License-Identifier: MIT */
#include "nspid.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "fileio.h"
#include "scan.h"

/* /proc/<pid>/status is a few KiB. */
#define STATUS_MAX 16384

static int stat_ns(const char *path, struct qf_pid_ns *ret)
{
        struct stat st;
        if (stat(path, &st) < 0)
                return -errno;
        *ret = (struct qf_pid_ns){ .dev = st.st_dev, .ino = st.st_ino };
        return 0;
}

int qf_pid_ns_of(const char *proc_root, pid_t pid, struct qf_pid_ns *ret)
{
        char path[PATH_MAX];
        int r = qf_pathf(path, sizeof(path), "%s/%d/ns/pid", proc_root, (int) pid);
        return r < 0 ? r : stat_ns(path, ret);
}

int qf_pid_ns_from_arg(const char *proc_root, const char *arg, struct qf_pid_ns *ret)
{
        uint64_t pid;
        if (qf_parse_decimal_name(arg, INT32_MAX, &pid) && pid > 0)
                return qf_pid_ns_of(proc_root, (pid_t) pid, ret);
        return stat_ns(arg, ret);
}

int qf_nspid_read(const char *proc_root, pid_t pid, pid_t *ret_chain, size_t max, size_t *ret_n)
{
        char path[PATH_MAX];
        int r = qf_pathf(path, sizeof(path), "%s/%d/status", proc_root, (int) pid);
        if (r < 0)
                return r;
        _cleanup_free_ char *buf = malloc(STATUS_MAX);
        if (!buf)
                return -ENOMEM;
        size_t len;
        r = qf_read_file(path, buf, STATUS_MAX, &len);
        if (r < 0)
                return r;

        const char *line = strstr(buf, "\nNSpid:");
        if (!line)
                return -ENODATA; /* kernels before 4.1 */
        struct qf_scan s = { .p = line + 7, .end = buf + len };
        size_t n = 0;
        for (;;) {
                while (s.p < s.end && (*s.p == '\t' || *s.p == ' '))
                        s.p++;
                uint64_t v;
                if (!qf_scan_dec(&s, INT32_MAX, &v))
                        break;
                if (n == max)
                        return -E2BIG;
                ret_chain[n++] = (pid_t) v;
        }
        if (n == 0)
                return -EBADMSG;
        *ret_n = n;
        return 0;
}

struct host_pid_search {
        const struct qf_pid_ns *ns;
        pid_t ns_pid;
        bool found;
        pid_t host_pid;
};

static int match_host_pid(const char *proc_root, uint64_t pid, void *userdata)
{
        struct host_pid_search *s = userdata;
        struct qf_pid_ns its;
        if (qf_pid_ns_of(proc_root, (pid_t) pid, &its) < 0 || its.dev != s->ns->dev || its.ino != s->ns->ino)
                return 0;
        pid_t chain[QF_NSPID_MAX_LEVELS];
        size_t n;
        if (qf_nspid_read(proc_root, (pid_t) pid, chain, QF_NSPID_MAX_LEVELS, &n) < 0 || chain[n - 1] != s->ns_pid)
                return 0;
        s->found = true;
        s->host_pid = chain[0];
        return 1;
}

int qf_nspid_to_host(const char *proc_root, const struct qf_pid_ns *ns, pid_t ns_pid, pid_t *ret_host)
{
        struct host_pid_search s = { .ns = ns, .ns_pid = ns_pid };
        int r = qf_for_each_numbered_entry(proc_root, INT32_MAX, match_host_pid, &s);
        if (r < 0)
                return r;
        if (!s.found)
                return -ESRCH;
        *ret_host = s.host_pid;
        return 0;
}
