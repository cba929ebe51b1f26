/* SPDX-License-Identifier: MIT */
/* Reading facts about a process from /proc to explain why an operation failed. */
#pragma once

#include <sys/types.h>

/* The value of one "Key:\tvalue" line of /proc/<pid>/status (pid 0: self),
 * without the key and leading whitespace. -ENOENT when the process or the
 * key does not exist. */
int proc_status_field(pid_t pid, const char *key, char **ret_value);
/* /proc/<pid>/comm without the newline. */
int proc_comm(pid_t pid, char **ret_comm);
/* What /proc/<pid>/stat says of a task (fs/proc/array.c: do_task_stat). */
struct proc_stat {
        char state;        /* 'R', 'S', 'D', 'Z' (a zombie), 'T'... */
        pid_t parent;
        unsigned flags;    /* PF_* of include/linux/sched.h */
        long threads;      /* of its thread group, the exited leader of a zombie included */
};
int proc_stat_read(pid_t pid, struct proc_stat *ret_stat);
/* The first line of a small file, without the newline. */
int read_first_line(const char *path, char **ret_line);
