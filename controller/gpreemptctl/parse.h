/* SPDX-License-Identifier: MIT */
/* Command-line value parsing shared by the verbs. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/* A decimal u32 (gpu ids, grace periods). */
int parse_u32(const char *s, uint32_t *ret_value);
/* "1.5s", "250ms", "2m", "1h", "10" (seconds), "infinity" (UINT64_MAX), in µs. */
int parse_duration(const char *s, uint64_t *ret_usec);
