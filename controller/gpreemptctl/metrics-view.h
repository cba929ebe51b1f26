/* SPDX-License-Identifier: MIT */
/* gpreemptd's Metrics reply as tables for `top`: the counters Prometheus scrapes, watched live. */
#pragma once

#include <stdio.h>

struct json_object;

/*
 * Prints, per workload and GPU, the suspensions and the time suspended,
 * and per GPU the reaction's stages and the preemption calls as
 * percentiles. previous is an earlier reply's families (or NULL): with it,
 * the new suspensions and the percentiles are of what happened since then.
 */
void metrics_view_print(FILE *out, struct json_object *families, struct json_object *previous);
