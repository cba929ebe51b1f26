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
