/* SPDX-License-Identifier: MIT */
/*
 * Whether a process is frozen by a cgroup freezer. A frozen process gets no
 * signal and its tracer sees no stop, yet its CPU threads are stopped as
 * surely as by SIGSTOP: Slurm's proctrack/cgroup suspends jobs so (cgroup
 * v1's freezer controller), and so does cgroup v2's cgroup.freeze. Both
 * report the state the cgroup is in, an ancestor's freeze included
 * (Documentation/admin-guide/cgroup-v1/freezer-subsystem.rst: "the
 * effective state"; cgroup-v2.rst: cgroup.events "frozen").
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

enum cgroup_freezer_kind {
        CGROUP_FREEZER_NONE,
        CGROUP_FREEZER_V1, /* <root>/freezer<path>/freezer.state: THAWED, FREEZING or FROZEN */
        CGROUP_FREEZER_V2, /* <root><path>/cgroup.events: a line "frozen 0" or "frozen 1" */
};

/*
 * From the text of /proc/<pid>/cgroup: the freezer that applies and the
 * process's path in its hierarchy (*ret_path, to free; NULL with
 * CGROUP_FREEZER_NONE). A v1 freezer line wins over the unified one: on a
 * hybrid host that is where Slurm freezes. Returns the kind, -EXDEV for a
 * path outside the reader's cgroup namespace ("/../..": no file under
 * /sys/fs/cgroup names it), or -ENOMEM.
 */
int cgroup_freezer_parse_membership(const char *text, char **ret_path);
/* Whether the text of a state file of that kind says frozen (FREEZING counts: the threads are stopping). */
bool cgroup_freezer_parse_frozen(enum cgroup_freezer_kind kind, const char *text);

/*
 * The file that tells whether pid's cgroup is frozen, under cgroup_root
 * (/sys/fs/cgroup), in *ret (to free; NULL when no freezer applies: also in
 * a root cgroup, which cannot be frozen). Returns its kind,
 * CGROUP_FREEZER_NONE, -ESRCH when the process is gone, -EXDEV when its cgroup
 * is outside the reader's cgroup namespace, or another -errno.
 */
int cgroup_freezer_state_file(const char *proc_root, const char *cgroup_root, pid_t pid, char **ret);
/* 1 frozen, 0 not, or -errno when the file cannot be read (the cgroup is gone). */
int cgroup_freezer_is_frozen(enum cgroup_freezer_kind kind, const char *state_file);
