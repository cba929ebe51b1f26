/* SPDX-License-Identifier: MIT */
/*
 * A workload: one [Workload] section of a drop-in, i.e. a named rule that
 * says which processes belong to it (Match*=) and which class they are.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "policy-params.h"

/* Bounds on what one drop-in can ask for. */
#define WORKLOAD_NAME_MAX 64
#define WORKLOAD_MATCH_VALUES_MAX 64

enum match_key {
        MATCH_EXECUTABLE,
        MATCH_COMMAND_LINE,
        MATCH_USER,
        MATCH_CGROUP,
        MATCH_UNIT,
        MATCH_CONTAINER,
        MATCH_PID,
        MATCH_ENVIRONMENT,
        MATCH_KUBERNETES_QOS,
        MATCH_POD,
        MATCH_SLURM_JOB,
        MATCH_SLURM_PARTITION,
        MATCH_SLURM_QOS,
        MATCH_SLURM_ACCOUNT,
        MATCH_SLURM_COMMENT,
        _MATCH_KEY_MAX,
};

struct match_rule {
        unsigned line;       /* 0: key not given */
        char **values;       /* as written (a user as named; MatchCommandLine= keeps its spaces;
                                MatchPod= as the API server shows a UID) */
        long *numbers;       /* MatchUser= as uids, MatchPID= as pids, MatchSlurmJob= as job ids,
                                MatchKubernetesQoS= as enum kubernetes_qos; NULL for the others */
        size_t n_values;
};

struct workload {
        char *name;
        enum workload_class class;
        char *file;
        unsigned line;
        struct match_rule match[_MATCH_KEY_MAX];
        struct policy_params policy;
        unsigned policy_overridden; /* bit i: policy key i of the key table was set here */
};

const char *match_key_to_string(enum match_key k);
bool workload_name_is_valid(const char *name);
void workload_done(struct workload *w);
