/* SPDX-License-Identifier: MIT */
/* kfdemu-app's command line (and CLR's AMD_LOG_* environment). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clr-log.h"
#include "emu-runtime.h"

/* Limits on what the command line may ask for. */
#define APP_MAX_QUEUES 1024u             /* KFD_MAX_NUM_OF_QUEUES_PER_PROCESS */
#define APP_MAX_KERNEL_US 60000000.0     /* one minute per kernel */
#define APP_MAX_HOST_WAIT_US 60000000.0  /* one minute per request */
#define APP_MAX_KERNELS_PER_REQUEST 65536u
#define APP_MAX_RATE 1000000.0           /* requests per second */
#define APP_MAX_SECONDS 31536000.0       /* a year */
#define APP_MAX_REQUESTS 1000000000ull
#define APP_MAX_WORKGROUPS 0x7fffffffu
#define APP_MAX_NAME 256u
#define APP_MAX_IDLE_THREADS 64u
#define APP_MAX_CHURN_RATE 10000.0       /* allocate/map/queue cycles per second */

/* Exit codes (documented in kfdemu-app.1.scd). */
#define APP_EXIT_OK 0
#define APP_EXIT_FAILURE 1   /* the device or a queue operation failed */
#define APP_EXIT_USAGE 2     /* invalid command line or environment */

enum app_arrival {
        APP_ARRIVAL_CLOSED_LOOP,  /* --continuous: back to back */
        APP_ARRIVAL_FIXED,        /* --rate R: one request every 1/R s */
        APP_ARRIVAL_POISSON,      /* --rate R --arrival poisson */
};

enum app_report_format {
        APP_REPORT_NONE,
        APP_REPORT_TEXT,
        APP_REPORT_JSON,
};

struct app_gpu_selector {
        uint32_t value;          /* a gpu_id, or an index below the GPU count */
};

struct app_options {
        unsigned queues;
        struct app_gpu_selector gpus[EMU_RUNTIME_MAX_GPUS];
        unsigned n_gpus;
        uint64_t kernel_ns;
        uint32_t workgroups;
        uint16_t workgroup_size;
        unsigned kernels_per_request;
        bool doorbell_per_request;    /* write a request's packets, then ring once */
        uint64_t host_wait_ns;        /* --host-wait-us: 0 = requests end without a barrier */
        bool queue_during_wait;       /* --queue-during-wait: a kernel queued behind the barrier mid-wait */
        enum app_arrival arrival;
        double rate;
        double duration_s;       /* 0 = until stopped */
        uint64_t requests;       /* 0 = unlimited */
        uint32_t priority;
        uint32_t ring_packets;
        double late_queue_after_s;    /* < 0 = never */
        double destroy_queue_after_s; /* < 0 = never */
        double exec_after_s;          /* < 0 = never */
        bool runtime_enable;
        bool ttmp_save;
        uint64_t seed;
        const char *ready_file;
        const char *signal_log;
        unsigned idle_threads;        /* threads that only take signals */
        double churn_rate;            /* --churn: memory and queue cycles per second; 0 = none */
        enum app_report_format report;
        int amd_log_level;
        enum clr_log_format amd_log_format;
        const char *amd_log_file;     /* NULL = stderr */
        const char *kernel_name;
        const char *dispatch_times;   /* NULL = not recorded */
        const char *latency_log;      /* NULL = not recorded */
        /* Where --exec-after sits in argv (index, number of arguments) so a
         * re-exec can drop it. */
        int exec_after_argi, exec_after_argc;
};

#define APP_OPTIONS_HELP 1

void app_options_init(struct app_options *opts);

/* CLR reads AMD_LOG_LEVEL and AMD_LOG_LEVEL_FILE; the command line wins.
 * Either may be NULL. On error writes a sentence to `error`. */
int app_options_apply_env(struct app_options *opts, const char *amd_log_level,
                          const char *amd_log_level_file, char *error, size_t error_size);

/* 0, APP_OPTIONS_HELP, or -EINVAL with a sentence in `error`. */
int app_options_parse(struct app_options *opts, int argc, char **argv, char *error, size_t error_size);

void app_options_print_help(const char *program);
