/* SPDX-License-Identifier: MIT */
/*
 * Container pids. KFD names processes by their pid in the initial pid
 * namespace (sysfs and debugfs), while an operator inside a container sees
 * another number. /proc/<pid>/status "NSpid:" lists a process's pid in every
 * namespace from the reader's down to its own, which maps one to the other;
 * a container may run containers of its own, so the namespace asked about
 * need not be the process's own.
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

/* How many levels ns lies below proc_root's pid namespace: the index of the
 * last NSpid entry of a process whose own namespace ns is. -ESRCH when no
 * process proc_root shows lives in ns (there is none, the reader may not
 * look at their namespaces, or ns is no pid namespace). */
int qf_pid_ns_level(const char *proc_root, const struct qf_pid_ns *ns, size_t *ret_level);

/* The pid, in proc_root's namespace, of the process that has pid ns_pid in
 * namespace ns, which lies level levels down (qf_pid_ns_level). The process
 * can live in ns or in a namespace nested in it: either way ns_pid is its
 * NSpid entry at that level, and the namespace at that level of its chain is
 * confirmed to be ns. -ESRCH when there is none; another -errno when a
 * candidate's namespace could not be read and none was confirmed. */
int qf_nspid_to_host(const char *proc_root, const struct qf_pid_ns *ns, size_t level, pid_t ns_pid,
                     pid_t *ret_host);
