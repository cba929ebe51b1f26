/* SPDX-License-Identifier: MIT */
/*
 * The daemon's configuration: <config dir>/gpreemptd.conf ([Daemon], the
 * class defaults [Online] and [Offline]) plus drop-ins
 * <config dir>/workloads.d/NAME.conf read in lexical order, each holding
 * [Workload] sections. A configuration is either loaded whole or rejected
 * with every problem named by file and line.
 */
#pragma once

#include <stdint.h>

#include "detector-mode.h"
#include "diag.h"
#include "log-level.h"
#include "policy-params.h"
#include "workload.h"

#define CONFIG_MAX_WORKLOADS 1024
#define CONFIG_MAX_DROPINS 256
/* Far more than any configuration file needs; a file is read whole, so its size is bounded. */
#define CONFIG_MAX_FILE_BYTES (1024 * 1024)

struct daemon_settings {
        char *runtime_dir;
        enum log_level log_level;
        uint64_t discovery_interval_us;
        uint64_t idle_poll_interval_us;
        unsigned idle_poll_cpu_percent; /* idle looks' CPU budget; 0 = IdlePollIntervalUs alone */
        uint64_t busy_poll_interval_us;
        enum detector_mode detector_mode;
        uint32_t grace_period;
        uint32_t realtime_priority; /* the loop's SCHED_FIFO priority; 0 = SCHED_OTHER */
        unsigned realtime_cpu_percent; /* the most of a core the loop may use at SCHED_FIFO; 100 = no cap */
        uint64_t fault_backoff_us;     /* a GPU's first pause in preemption after a fault */
        uint64_t fault_backoff_max_us; /* the longest, reached by doubling */
        uint32_t max_preemptions_per_second; /* per GPU; 0 = no limit */
};

struct config {
        struct daemon_settings daemon;
        struct policy_params class_defaults[_WORKLOAD_CLASS_MAX];
        struct workload *workloads; /* in match order: files lexically, then sections */
        size_t n_workloads;
};

/*
 * Loads the configuration under config_dir. On any problem returns -EINVAL
 * (other -errno for resources) with the problems in diag, and leaves *ret_config alone.
 * Returns -EACCES when the caller may not read one of its files or directories
 * (diag->unreadable names the first): the configuration may be fine for
 * gpreemptd, which reads it as root, but could not be judged.
 */
int config_load(const char *config_dir, struct config **ret_config, struct diag *diag);
void config_free(struct config *c);
