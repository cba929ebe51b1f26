/* SPDX-License-Identifier: MIT */
/* Command-line value parsing shared by the verbs. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/* A positive PID that fits pid_t. */
int parse_pid(const char *s, pid_t *ret_pid);
/* A decimal u32 (gpu ids, grace periods). */
int parse_u32(const char *s, uint32_t *ret_value);
/* "1.5s", "250ms", "2m", "1h", "10" (seconds), "infinity" (UINT64_MAX), in µs. */
int parse_duration(const char *s, uint64_t *ret_usec);
