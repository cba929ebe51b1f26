/* SPDX-License-Identifier: MIT */
/* Command-line value parsing shared by the verbs. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A decimal u32 (gpu ids, grace periods). */
int parse_u32(const char *s, uint32_t *ret_value);
/* "1.5s", "250ms", "2m", "1h", "10" (seconds), "infinity" (UINT64_MAX), in µs. */
int parse_duration(const char *s, uint64_t *ret_usec);
/*
 * The process ids of a verb that takes several (parse_pid() each), into
 * pids[0..n). A process given twice would be attached twice, which the
 * kernel refuses with a ptrace error that does not name the mistake; so it
 * is -EEXIST here. On an error, *bad_index is the argument at fault and
 * pids[*bad_index] holds its value when it is a process id.
 */
int parse_pids(char *const *args, size_t n, pid_t *pids, size_t *bad_index);
