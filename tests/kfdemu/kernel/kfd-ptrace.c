/* SPDX-License-Identifier: MIT */
/*
 * What amdkfd learns from the task structures, read from /proc by the
 * server: find_get_pid() in the caller's pid namespace, get_task_mm(),
 * ptrace_parent(), fget() on the caller's fd table, in_compat_syscall().
 * All pids here are in the server's (host) namespace unless said otherwise.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "kfd-priv.h"

/* /proc/<pid>/status is a few KiB; NSpid lists at most 32 levels. */
#define KFD_STATUS_MAX 8192
#define KFD_NS_LEVELS_MAX 33

struct kfd_status {
        pid_t tgid;
        pid_t tracer;
        char state;
        bool has_vm;
        unsigned n_nspid;
        pid_t nspid[KFD_NS_LEVELS_MAX];
};

static int kfd_read_status(const char *path, struct kfd_status *ret)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        struct kfd_status st = { .tgid = -1 };
        size_t len = 0;
        ssize_t n;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        buf = malloc(KFD_STATUS_MAX);
        if (!buf)
                return -ENOMEM;
        while (len < KFD_STATUS_MAX - 1 && (n = read(fd, buf + len, KFD_STATUS_MAX - 1 - len)) > 0)
                len += (size_t)n;
        buf[len] = '\0';

        for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                if (strncmp(line, "Tgid:", 5) == 0) {
                        st.tgid = (pid_t)strtol(line + 5, NULL, 10);
                } else if (strncmp(line, "TracerPid:", 10) == 0) {
                        st.tracer = (pid_t)strtol(line + 10, NULL, 10);
                } else if (strncmp(line, "State:", 6) == 0) {
                        const char *s = line + 6;

                        while (*s == ' ' || *s == '\t')
                                s++;
                        st.state = *s;
                } else if (strncmp(line, "VmSize:", 7) == 0) {
                        st.has_vm = true;
                } else if (strncmp(line, "NSpid:", 6) == 0) {
                        char *s = line + 6, *end;

                        while (st.n_nspid < KFD_NS_LEVELS_MAX) {
                                long v = strtol(s, &end, 10);

                                if (end == s)
                                        break;
                                st.nspid[st.n_nspid++] = (pid_t)v;
                                s = end;
                        }
                }
        }
        if (st.tgid <= 0)
                return -ESRCH;
        *ret = st;
        return 0;
}

static int kfd_read_task_status(pid_t tid, struct kfd_status *ret)
{
        char path[64];

        /* /proc/<tid> resolves any thread, listed or not. */
        snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
        return kfd_read_status(path, ret);
}

static int kfd_pidns_of(pid_t pid, struct stat *ret)
{
        char path[64];

        snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
        return stat(path, ret) < 0 ? -errno : 0;
}

static bool kfd_same_pidns(pid_t a, pid_t b)
{
        struct stat sa, sb;

        return kfd_pidns_of(a, &sa) == 0 && kfd_pidns_of(b, &sb) == 0 && sa.st_ino == sb.st_ino &&
               sa.st_dev == sb.st_dev;
}

/* A process in a child pid namespace names tasks by the ids of its level:
 * find the host task whose NSpid has `pid` at the caller's level. */
static int kfd_pid_from_child_ns(pid_t caller_tgid, uint32_t pid, pid_t *ret)
{
        struct kfd_status caller;
        _cleanup_closedir_ DIR *proc = NULL;
        struct dirent *de;
        unsigned level;
        int r;

        r = kfd_read_task_status(caller_tgid, &caller);
        if (r < 0)
                return -ESRCH;
        if (caller.n_nspid == 0)
                return -ESRCH;
        level = caller.n_nspid - 1;

        proc = opendir("/proc");
        if (!proc)
                return -errno;
        while ((de = readdir(proc))) {
                char path[96];
                _cleanup_closedir_ DIR *tasks = NULL;
                struct dirent *te;
                int tgid;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                tgid = atoi(de->d_name);
                snprintf(path, sizeof(path), "/proc/%d/task", tgid);
                tasks = opendir(path);
                if (!tasks)
                        continue;
                while ((te = readdir(tasks))) {
                        struct kfd_status st;

                        if (te->d_name[0] < '1' || te->d_name[0] > '9')
                                continue;
                        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", tgid, atoi(te->d_name));
                        if (kfd_read_status(path, &st) < 0 || st.n_nspid <= level ||
                            st.nspid[level] != (pid_t)pid)
                                continue;
                        /* A task at the caller's own depth must be in the caller's
                         * namespace, not in a sibling one that reuses the id. */
                        if (st.n_nspid == level + 1 && !kfd_same_pidns(caller_tgid, st.nspid[0]))
                                continue;
                        *ret = st.nspid[0];
                        return 0;
                }
        }
        return -ESRCH;
}

int kfd_find_task(const struct emu_caller *caller, uint32_t pid, struct kfd_task *ret)
{
        struct kfd_status st;
        pid_t host = 0;
        int r;

        /* find_get_pid(0) and ids beyond PID_MAX_LIMIT find nothing. */
        if (pid == 0 || pid > 4194304)
                return -ESRCH;

        if (kfd_same_pidns(getpid(), caller->tgid)) {
                host = (pid_t)pid;
        } else {
                r = kfd_pid_from_child_ns(caller->tgid, pid, &host);
                if (r < 0)
                        return r;
        }

        r = kfd_read_task_status(host, &st);
        if (r < 0)
                return -ESRCH;

        ret->tid = host;
        ret->tgid = st.tgid;
        ret->tracer_tid = st.tracer;
        /* get_task_mm() fails for zombies, exiting tasks and kernel threads. */
        ret->has_mm = st.has_vm && st.state != 'Z' && st.state != 'X';
        return 0;
}

bool kfd_task_is_stopped(pid_t tid)
{
        struct kfd_status st;

        /* 'T' group stop (SIGSTOP and friends), 't' a ptrace stop. */
        return kfd_read_task_status(tid, &st) == 0 && (st.state == 'T' || st.state == 't');
}

bool kfd_ptrace_parent_is(pid_t tid, pid_t tracer_tid)
{
        struct kfd_status st;

        if (kfd_read_task_status(tid, &st) < 0)
                return false;
        return st.tracer != 0 && st.tracer == tracer_tid;
}

int kfd_fget(const struct emu_process *p, uint32_t fd, int *ret_fd)
{
        _cleanup_close_ int own_pidfd = -1;
        int pidfd = p->pidfd, r;

        /* The pidfd the transport gave the process names it even if its
         * pid were reused; without one, open one now. */
        if (pidfd < 0) {
                own_pidfd = (int)syscall(SYS_pidfd_open, p->tgid, 0);
                if (own_pidfd < 0)
                        return -errno;
                pidfd = own_pidfd;
        }
        r = (int)syscall(SYS_pidfd_getfd, pidfd, (int)fd, 0);
        if (r < 0)
                return -errno;
        *ret_fd = r;
        return 0;
}

bool kfd_task_is_32bit(pid_t tgid)
{
        char path[64];
        unsigned char ident[EI_NIDENT];
        _cleanup_close_ int fd = -1;

        snprintf(path, sizeof(path), "/proc/%d/exe", (int)tgid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || read(fd, ident, sizeof(ident)) != (ssize_t)sizeof(ident))
                return false;
        return memcmp(ident, ELFMAG, SELFMAG) == 0 && ident[EI_CLASS] == ELFCLASS32;
}
