/* SPDX-License-Identifier: MIT */
/*
 * The one way a process id given by a user is read, in every component: the
 * CLIs' arguments, gpreemptd's configuration and its Varlink API. One bound
 * for all of them, so that what one accepts the others do too.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/*
 * PID_MAX_LIMIT of 64-bit Linux (include/linux/threads.h): no pid is larger,
 * whatever kernel.pid_max says.
 */
#define GP_PID_MAX_LIMIT 4194304

/* Whether v can be a process id: 1 to GP_PID_MAX_LIMIT. */
bool pid_in_range(long long v);
/*
 * Decimal digits only (no sign, no spaces, no suffix). Returns 0, -EINVAL
 * for anything but digits, -ERANGE for 0 or a value above GP_PID_MAX_LIMIT.
 */
int parse_pid(const char *s, pid_t *ret_pid);
