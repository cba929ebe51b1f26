/* SPDX-License-Identifier: MIT */
/*
 * Everything one run found, and its three renderings: the readable table,
 * the JSON document (schema in queue_finder.1.scd, "JSON OUTPUT"), and an INI
 * snippet registering the processes as gpreemptd workloads.
 */
#pragma once

#include <stdio.h>

#include "qf-diag.h"
#include "join.h"
#include "sources.h"

struct json_object;

/* The JSON schema version; bumped only on incompatible changes. */
#define QF_JSON_SCHEMA_VERSION 1

struct qf_source_status {
        const char *name;            /* "sysfs", "topology", "mqds", "hqds", "log", "snapshot" */
        const char *path;
        int error;                   /* 0, or -errno why the source could not be read */
        bool skipped;                /* not asked for */
};

struct qf_report {
        const struct qf_result *result;
        const struct qf_gpu *gpus;
        size_t n_gpus;
        const struct qf_log *log;
        const struct qf_source_status *sources;
        size_t n_sources;
        const struct qf_diags *warnings;
};

/* The process's own identity for output: NSpid chain, pid namespace and
 * executable, read from proc_root. Missing pieces are left unset. */
void qf_process_identify(const char *proc_root, struct qf_process *p);

int qf_report_json(const struct qf_report *r, struct json_object **ret);
int qf_report_table(FILE *f, const struct qf_report *r);

enum qf_workload_class {
        QF_WORKLOAD_ONLINE,
        QF_WORKLOAD_OFFLINE,
};
int qf_report_config(FILE *f, const struct qf_report *r, enum qf_workload_class cls);
