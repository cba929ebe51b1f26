/* SPDX-License-Identifier: MIT */
/*
 * io.gpreempt.Metrics: the daemon's counters as metric families, named as
 * Prometheus names them (docs/metrics.md describes each). The daemon picks
 * the names, types and labels; gpreempt-exporter only writes them out in
 * the text format (../common/metrics-exposition.c).
 */
#pragma once

#include <stdbool.h>

struct json_object;
struct manager;

/* The reply's families array. per_process: one series per live process, with a pid label, instead of per workload. */
struct json_object *api_metrics_families(const struct manager *m, bool per_process);
