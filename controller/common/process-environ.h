/* SPDX-License-Identifier: MIT */
/*
 * A process's environment as /proc/<pid>/environ shows it: the strings the
 * process was started with, in its own memory (fs/proc/base.c,
 * environ_read(): mm->env_start to env_end). What it changed later with
 * setenv() or clearenv() is not there; what it overwrote in place (a
 * program that rewrites its argv and environment to retitle itself) is.
 * The bytes are the process's to choose: they are bounded, split at NULs
 * only, and never assumed to be text in any encoding.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * More than any real environment (the kernel's own limit on one string is
 * 32 pages, MAX_ARG_STRLEN): a variable after this bound is not seen.
 */
#define PROCESS_ENVIRON_MAX (256 * 1024)

struct process_environ {
        char *data;      /* NUL-separated NAME=VALUE strings; NULL when it could not be read */
        size_t len;
        int error;       /* 0, or the -errno that kept it from being read (-EACCES, -EPERM, ...) */
        bool truncated;  /* longer than PROCESS_ENVIRON_MAX: the cut-off last string is dropped */
};

/*
 * Reads /proc/<pid>/environ. A file that cannot be read is not a failure:
 * ret->error says why, and no variable is found in it. A process without
 * memory (a kernel thread, a zombie) has an empty one. Returns 0, -ESRCH if
 * the process is gone, or -ENOMEM.
 */
int process_environ_read(const char *proc_root, pid_t pid, struct process_environ *ret);
void process_environ_done(struct process_environ *e);

/*
 * The value of the first NAME=... string (as getenv() finds it), or NULL
 * when there is none or the environment could not be read. name ends at a
 * NUL or at '=', so a MatchEnvironment= value NAME=GLOB can be passed whole.
 */
const char *process_environ_get(const struct process_environ *e, const char *name);
