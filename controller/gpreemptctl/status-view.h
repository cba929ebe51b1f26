/* SPDX-License-Identifier: MIT */
/* gpreemptd's Status reply as tables, shared by `status` and `top`. */
#pragma once

#include <stdio.h>

struct json_object;

/*
 * Prints the daemon line, the GPU table and the process table. previous is
 * an earlier Status reply (or NULL): with it, the GPU table also shows the
 * transitions since then, which is what `top` watches.
 */
void status_view_print(FILE *out, struct json_object *status, struct json_object *previous);

/*
 * The cluster job a process is part of, by the name people know it by: the
 * pod's namespace/name or the Slurm job's name, with the job id; a pod
 * without a name in its environment by the start of its UID. kind is
 * "slurm" or "kubernetes", name NULL when there is none. Not escaped.
 */
void status_view_format_job(char *buf, size_t size, const char *kind, const char *id, const char *name);
