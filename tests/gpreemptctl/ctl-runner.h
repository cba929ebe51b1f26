/* SPDX-License-Identifier: MIT */
/* Runs the gpreemptctl binary for a test and keeps what it printed and its exit code. */
#pragma once

#include <sys/types.h>

struct ctl_result {
        int exit_code; /* -1: killed by a signal */
        char out[65536];
        char err[8192];
};

/*
 * Runs binary with args (NULL-terminated, after argv[0]) and the extra
 * environment env ("NAME=value", NULL-terminated, or NULL). With as_uid not
 * 0, the child drops to that uid and gid (and no supplementary groups) before
 * exec, as an unprivileged caller would be.
 */
void ctl_run(const char *binary, const char *const *env, uid_t as_uid, const char *const *args,
             struct ctl_result *ret);

/* ctl_run() in two halves, for a gpreemptctl that runs while the test does something else. */
struct ctl_process {
        pid_t pid;
        int out, err;
};

void ctl_start(const char *binary, const char *const *env, uid_t as_uid, const char *const *args,
               struct ctl_process *ret);
/* Waits for it to exit and fills ret as ctl_run() does. */
void ctl_finish(struct ctl_process *p, struct ctl_result *ret);
