/* SPDX-License-Identifier: MIT */
/* What the soak's own tests share: running a program to its end, and
 * reading its JSON. Call from cmocka tests only (failures are assertions). */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "test-support.h"

/* Runs argv (NULL-terminated) to its end within timeout_ms; returns its exit
 * code and leaves its output (stderr too when merged) in *c. */
int soak_test_run(struct child *c, bool merge_stderr, const char *const argv[], int timeout_ms);
/* The member key of o, which must exist. */
json_object *soak_test_member(json_object *o, const char *key);
