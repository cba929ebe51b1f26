/* SPDX-License-Identifier: MIT */
#include "workload.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const class_names[_WORKLOAD_CLASS_MAX] = {
        [WORKLOAD_CLASS_ONLINE] = "online",
        [WORKLOAD_CLASS_OFFLINE] = "offline",
};

static const char *const match_key_names[_MATCH_KEY_MAX] = {
        [MATCH_EXECUTABLE] = "MatchExecutable",
        [MATCH_COMMAND_LINE] = "MatchCommandLine",
        [MATCH_USER] = "MatchUser",
        [MATCH_CGROUP] = "MatchCgroup",
        [MATCH_UNIT] = "MatchUnit",
        [MATCH_CONTAINER] = "MatchContainer",
        [MATCH_PID] = "MatchPID",
        [MATCH_ENVIRONMENT] = "MatchEnvironment",
        [MATCH_KUBERNETES_QOS] = "MatchKubernetesQoS",
        [MATCH_POD] = "MatchPod",
        [MATCH_SLURM_JOB] = "MatchSlurmJob",
        [MATCH_SLURM_PARTITION] = "MatchSlurmPartition",
        [MATCH_SLURM_QOS] = "MatchSlurmQOS",
        [MATCH_SLURM_ACCOUNT] = "MatchSlurmAccount",
        [MATCH_SLURM_COMMENT] = "MatchSlurmComment",
};

const char *workload_class_to_string(enum workload_class c)
{
        return c < _WORKLOAD_CLASS_MAX ? class_names[c] : "unknown";
}

int workload_class_from_string(const char *s)
{
        for (int c = 0; c < _WORKLOAD_CLASS_MAX; c++)
                if (strcmp(s, class_names[c]) == 0)
                        return c;
        return -EINVAL;
}

const char *match_key_to_string(enum match_key k)
{
        return k < _MATCH_KEY_MAX ? match_key_names[k] : "Match?";
}

/* Names appear in status output, logs and Varlink replies: keep them plain. */
bool workload_name_is_valid(const char *name)
{
        size_t len = strlen(name);

        if (len == 0 || len > WORKLOAD_NAME_MAX)
                return false;
        for (const char *p = name; *p; p++)
                if (!isalnum((unsigned char)*p) && !strchr("-_.@", *p))
                        return false;
        return true;
}

void workload_done(struct workload *w)
{
        free(w->name);
        free(w->file);
        for (int k = 0; k < _MATCH_KEY_MAX; k++) {
                for (size_t i = 0; i < w->match[k].n_values; i++)
                        free(w->match[k].values[i]);
                free(w->match[k].values);
                free(w->match[k].numbers);
        }
        *w = (struct workload){ 0 };
}
