/* SPDX-License-Identifier: MIT */
/*
 * What the configuration can match a process by, read once from /proc so
 * that every rule is judged against the same snapshot.
 */
#pragma once

#include <sys/types.h>

/* /proc/<pid>/cmdline and /cgroup are bounded by the kernel, but not small. */
#define PROCESS_FACT_MAX 65536

struct process_facts {
        pid_t pid;
        uid_t uid;       /* real uid */
        char *exe;       /* NULL when the link cannot be read (kernel thread, gone) */
        char *cmdline;   /* arguments joined by single spaces; "" for none */
        char *cgroup;    /* the unified-hierarchy path, e.g. /system.slice/x.service */
};

/* Returns 0, -ESRCH if the process is gone, or another -errno. */
int process_facts_read(const char *proc_root, pid_t pid, struct process_facts *ret);
void process_facts_done(struct process_facts *p);
