/* SPDX-License-Identifier: MIT */
#include "nspid.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/nsfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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

static bool same_ns(const struct qf_pid_ns *a, const struct qf_pid_ns *b)
{
        return a->dev == b->dev && a->ino == b->ino;
}

struct level_search {
        const struct qf_pid_ns *ns;
        bool found;
        size_t level;
};

static int match_level(const char *proc_root, uint64_t pid, uint64_t ino, void *userdata)
{
        struct level_search *s = userdata;
        struct qf_pid_ns its;
        pid_t chain[QF_NSPID_MAX_LEVELS];
        size_t n;
        if (qf_pid_ns_of(proc_root, (pid_t) pid, &its) < 0 || !same_ns(&its, s->ns) ||
            qf_nspid_read(proc_root, (pid_t) pid, chain, QF_NSPID_MAX_LEVELS, &n) < 0)
                return 0;
        s->found = true;
        s->level = n - 1;
        return 1;
}

int qf_pid_ns_level(const char *proc_root, const struct qf_pid_ns *ns, size_t *ret_level)
{
        struct level_search s = { .ns = ns };
        int r = qf_for_each_numbered_entry(proc_root, INT32_MAX, match_level, &s);
        if (r < 0)
                return r;
        if (!s.found)
                return -ESRCH;
        *ret_level = s.level;
        return 0;
}

/* 1 when the pid namespace `up` levels above pid's own is ns, 0 when it is
 * another. NS_GET_PARENT (linux/nsfs.h) gives the parent of a namespace as
 * an fd; a namespace is its nsfs inode, st_dev/st_ino as in qf_pid_ns. */
static int ancestor_is(const char *proc_root, pid_t pid, size_t up, const struct qf_pid_ns *ns)
{
        char path[PATH_MAX];
        int r = qf_pathf(path, sizeof(path), "%s/%d/ns/pid", proc_root, (int) pid);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (size_t i = 0; i < up; i++) {
                int parent = ioctl(fd, NS_GET_PARENT);
                if (parent < 0)
                        return -errno;
                close(fd);
                fd = parent;
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        return same_ns(&(struct qf_pid_ns){ .dev = st.st_dev, .ino = st.st_ino }, ns);
}

struct host_pid_search {
        const struct qf_pid_ns *ns;
        size_t level;
        pid_t ns_pid;
        bool found;
        pid_t host_pid;
        int error;      /* why the first candidate could not be checked */
};

static int match_host_pid(const char *proc_root, uint64_t pid, uint64_t ino, void *userdata)
{
        struct host_pid_search *s = userdata;
        pid_t chain[QF_NSPID_MAX_LEVELS];
        size_t n;
        /* A process whose status is gone has exited: not a candidate. */
        if (qf_nspid_read(proc_root, (pid_t) pid, chain, QF_NSPID_MAX_LEVELS, &n) < 0 || n <= s->level ||
            chain[s->level] != s->ns_pid)
                return 0;
        /* The same number at the same level can be a pid in a sibling
         * namespace; only the namespace itself tells. */
        int r = ancestor_is(proc_root, (pid_t) pid, n - 1 - s->level, s->ns);
        if (r < 0 && r != -ENOENT && !s->error)
                s->error = r;
        if (r <= 0)
                return 0;
        s->found = true;
        s->host_pid = chain[0];
        return 1;
}

int qf_nspid_to_host(const char *proc_root, const struct qf_pid_ns *ns, size_t level, pid_t ns_pid, pid_t *ret_host)
{
        struct host_pid_search s = { .ns = ns, .level = level, .ns_pid = ns_pid };
        int r = qf_for_each_numbered_entry(proc_root, INT32_MAX, match_host_pid, &s);
        if (r < 0)
                return r;
        if (!s.found)
                return s.error ? s.error : -ESRCH;
        *ret_host = s.host_pid;
        return 0;
}
