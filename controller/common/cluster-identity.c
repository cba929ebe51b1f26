/* SPDX-License-Identifier: MIT */
#include "cluster-identity.h"

#include <json.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "parse-decimal.h"

static const char *const kind_names[_CLUSTER_KIND_MAX] = {
        [CLUSTER_KIND_SLURM] = "slurm",
        [CLUSTER_KIND_KUBERNETES] = "kubernetes",
};

const char *cluster_kind_to_string(enum cluster_kind k)
{
        return k < _CLUSTER_KIND_MAX ? kind_names[k] : NULL;
}

/* SLURM_JOB_ID as a job id, or 0 when unset or not one. */
static uint32_t environment_job_id(const struct process_environ *env)
{
        const char *v = process_environ_get(env, "SLURM_JOB_ID");
        uint64_t id;

        return v && parse_decimal(v, UINT32_MAX, &id) == 0 ? (uint32_t)id : 0;
}

enum slurm_environment cluster_slurm_environment(const struct cluster_cgroup *cg, const struct process_environ *env)
{
        uint32_t id = environment_job_id(env);

        if (!id)
                return SLURM_ENVIRONMENT_NONE;
        if (cg->slurm_job_id && cg->slurm_job_id != id)
                return SLURM_ENVIRONMENT_OTHER_JOB;
        return SLURM_ENVIRONMENT_OF_JOB;
}

void cluster_identity_derive(const struct cluster_cgroup *cg, const struct process_environ *env,
                             struct cluster_identity *ret)
{
        struct cluster_identity id = { 0 };

        if (cg->qos != KUBERNETES_QOS_NONE) {
                const char *namespace = process_environ_get(env, "POD_NAMESPACE");
                const char *name = process_environ_get(env, "POD_NAME");

                id.kind = CLUSTER_KIND_KUBERNETES;
                snprintf(id.id, sizeof(id.id), "%s", cg->pod_uid);
                if (name && *name)
                        snprintf(id.name, sizeof(id.name), "%s%s%s", namespace && *namespace ? namespace : "",
                                 namespace && *namespace ? "/" : "", name);
        } else if (cg->slurm_job_id || cluster_slurm_environment(cg, env) == SLURM_ENVIRONMENT_OF_JOB) {
                enum slurm_environment trusted = cluster_slurm_environment(cg, env);
                const char *name = process_environ_get(env, "SLURM_JOB_NAME");

                id.kind = CLUSTER_KIND_SLURM;
                snprintf(id.id, sizeof(id.id), "%u", cg->slurm_job_id ? cg->slurm_job_id : environment_job_id(env));
                if (trusted == SLURM_ENVIRONMENT_OF_JOB && name)
                        snprintf(id.name, sizeof(id.name), "%s", name);
        }
        *ret = id;
}

struct json_object *cluster_identity_to_json(const struct cluster_identity *id)
{
        struct json_object *o;

        if (id->kind == CLUSTER_KIND_NONE)
                return NULL;
        o = json_object_new_object();
        json_object_object_add(o, "kind", json_object_new_string(cluster_kind_to_string(id->kind)));
        json_object_object_add(o, "id", json_object_new_string(id->id));
        json_object_object_add(o, "name", id->name[0] ? json_object_new_string(id->name) : NULL);
        return o;
}
