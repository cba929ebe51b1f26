/* SPDX-License-Identifier: MIT */
/*
 * Thread ids cross pid namespaces: a client in a container reports its
 * gettid() in its own namespace, while the emulated kernel (like amdkfd,
 * whose `current` and lead_thread->pid are host tasks) works with ids in the
 * server's namespace. SO_PEERCRED already translates the tgid; the tid is
 * found through the NSpid line of each task's status, whose last entry is
 * the id in the task's innermost namespace.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "caller.h"
#include "cleanup.h"

static int same_pid_namespace(pid_t tgid, int *ret_same)
{
        char path[64];
        struct stat ours, theirs;

        snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)tgid);
        if (stat("/proc/self/ns/pid", &ours) < 0 || stat(path, &theirs) < 0)
                return errno == ENOENT ? -ESRCH : NEG_ERRNO();
        *ret_same = ours.st_ino == theirs.st_ino && ours.st_dev == theirs.st_dev;
        return 0;
}

/* The last id on the NSpid line of /proc/<tgid>/task/<host_tid>/status. */
static int innermost_tid(pid_t tgid, const char *host_tid, pid_t *ret)
{
        char path[64 + NAME_MAX];
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t size = 0;

        snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)tgid, host_tid);
        f = fopen(path, "re");
        if (!f)
                return -ESRCH;
        while (getline(&line, &size, f) > 0) {
                if (strncmp(line, "NSpid:", 6) != 0)
                        continue;
                char *last = strrchr(line, '\t');
                if (!last)
                        return -EIO;
                *ret = (pid_t)strtol(last + 1, NULL, 10);
                return 0;
        }
        return -EIO;
}

static int translate_tid(pid_t tgid, pid_t tid, pid_t *ret_host_tid)
{
        char path[64];
        _cleanup_closedir_ DIR *tasks = NULL;
        struct dirent *de;

        snprintf(path, sizeof(path), "/proc/%d/task", (int)tgid);
        tasks = opendir(path);
        if (!tasks)
                return -ESRCH;
        while ((de = readdir(tasks))) {
                pid_t inner;

                if (de->d_name[0] == '.')
                        continue;
                if (innermost_tid(tgid, de->d_name, &inner) == 0 && inner == tid) {
                        *ret_host_tid = (pid_t)strtol(de->d_name, NULL, 10);
                        return 0;
                }
        }
        return -ESRCH;
}

int caller_resolve_tid(pid_t tgid, pid_t tid, pid_t *ret_host_tid)
{
        char path[64];
        int same, r;

        /* SO_PEERCRED reports pid 0 for a peer our namespace cannot see. */
        if (tgid <= 0 || tid <= 0)
                return -EINVAL;
        r = same_pid_namespace(tgid, &same);
        if (r < 0)
                return r;
        if (!same)
                return translate_tid(tgid, tid, ret_host_tid);

        snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)tgid, (int)tid);
        if (access(path, F_OK) < 0)
                return -ESRCH;
        *ret_host_tid = tid;
        return 0;
}
