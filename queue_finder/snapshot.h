/* SPDX-License-Identifier: MIT */
#pragma once

#include "sources.h"

/* Attaches to pid, takes the queue snapshot with live read/write indices, and
 * detaches. On failure *reason is a malloc'd sentence saying why and what
 * to do (or NULL), and -errno is returned. */
int qf_snapshot_read(pid_t pid, struct qf_snapshot *ret, char **reason);
void qf_snapshot_clear(struct qf_snapshot *s);
