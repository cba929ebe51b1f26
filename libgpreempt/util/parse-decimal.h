/* SPDX-License-Identifier: MIT */
/*
 * Numbers a user wrote (command lines, configuration, API parameters):
 * decimal digits only. strtoull alone takes "-1" (as a huge value), "+1",
 * leading spaces and a trailing suffix, each a typo that would otherwise
 * become a number.
 */
#pragma once

#include <stdint.h>

/* Returns 0, -EINVAL for anything but digits, -ERANGE above max. */
int parse_decimal(const char *s, uint64_t max, uint64_t *ret_value);
