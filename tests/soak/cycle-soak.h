/* SPDX-License-Identifier: MIT */
/* The cycle soak's options and results, shared by the run and its report. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "queue-progress.h"
#include "released-check.h"
#include "usage-trend.h"

#define SOAK_MAX_QUEUES 64

enum soak_process { SOAK_DRIVER, SOAK_SERVER, SOAK_APP, SOAK_N_PROCESSES };

struct soak_options {
        uint64_t cycles;
        uint64_t sample_every;   /* cycles between fd/RSS samples */
        uint64_t check_every;    /* cycles between progress checks */
        uint64_t progress_every; /* cycles between progress lines */
        unsigned queues;
        bool json;
        const char *app;
        const char *queue_finder;
};

struct soak_result {
        uint64_t cycles_done;
        uint64_t progress_checks;
        double duration_s;
        size_t n_queues;
        unsigned n_gpus;
        unsigned lib_warnings, lib_errors;
        /* Requests the app completed after warm-up (what it may keep). */
        uint64_t app_requests_after_warmup;
        int app_exit_status; /* as from waitpid, -1 if unknown */
        bool released_checked;
        struct released_report released;
        struct usage_series usage[SOAK_N_PROCESSES];
        struct usage_verdict verdicts[SOAK_N_PROCESSES];
        /* The first thing that went wrong; empty when the soak held. */
        char error[512];
};

/* Prints the summary, as text or JSON, on stdout. */
void soak_report_print(const struct soak_options *opts, const struct soak_result *res);
