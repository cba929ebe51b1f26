/* SPDX-License-Identifier: MIT */
/*
 * Container pids. KFD names processes by their pid in the initial pid
 * namespace (sysfs and debugfs), while an operator inside a container sees
 * another number. /proc/<pid>/status "NSpid:" lists a process's pid in every
 * namespace from the reader's down to its own, which maps one to the other.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Nesting deeper than this is not something a GPU node does. */
#define QF_NSPID_MAX_LEVELS 32

struct qf_pid_ns {
        dev_t dev;
        ino_t ino;      /* what `ls -l /proc/<pid>/ns/pid` shows as pid:[ino] */
};

/* arg is a pid (of any process inside the namespace, e.g. the container's
 * init) or a path such as /proc/<pid>/ns/pid. */
int qf_pid_ns_from_arg(const char *proc_root, const char *arg, struct qf_pid_ns *ret);
int qf_pid_ns_of(const char *proc_root, pid_t pid, struct qf_pid_ns *ret);

/* The NSpid chain of pid as seen from proc_root's namespace: ret_chain[0] is
 * pid itself, the last entry its pid in its own namespace. */
int qf_nspid_read(const char *proc_root, pid_t pid, pid_t *ret_chain, size_t max, size_t *ret_n);

/* The pid, in proc_root's namespace, of the process that has pid ns_pid in
 * namespace ns. Only processes whose own namespace is ns are considered.
 * -ESRCH when there is none. */
int qf_nspid_to_host(const char *proc_root, const struct qf_pid_ns *ns, pid_t ns_pid, pid_t *ret_host);
