/* SPDX-License-Identifier: MIT */
/* kfdemu-app's report: what the job did, as text or JSON. */
#pragma once

#include <stdio.h>
#include <sys/types.h>

#include "app-job.h"
#include "app-options.h"

struct app_run_info {
        pid_t pid;
        uint32_t kfd_major, kfd_minor;
        bool runtime_enabled;
        const struct app_options *opts;
        bool final;                 /* at exit, not a SIGUSR1 snapshot */
};

/* Writes the report; -errno if the stream failed. */
int app_report_print(FILE *out, enum app_report_format format, const struct app_run_info *info,
                     const struct app_job_report *report);
