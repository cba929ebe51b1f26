/* SPDX-License-Identifier: MIT */
#pragma once

#include "sources.h"

#include <gpreempt/gpreempt.h>

/* How a snapshot failed: the sentence for the user and the step that failed. */
struct qf_snapshot_error {
        char *reason;    /* malloc'd: what failed, why, what to do (NULL when out of memory) */
        enum gp_op op;   /* GP_OP_OPEN, _ATTACH, _SNAPSHOT or _DETACH */
};

/* Attaches to pid, takes the queue snapshot with live read/write indices, and
 * detaches. context_opts opens the KFD context (NULL: the defaults, no log).
 * Returns 0, or -errno with *ret_error filled. */
int qf_snapshot_read(pid_t pid, const struct gp_context_opts *context_opts, struct qf_snapshot *ret,
                     struct qf_snapshot_error *ret_error);
void qf_snapshot_clear(struct qf_snapshot *s);
