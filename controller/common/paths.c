/* SPDX-License-Identifier: MIT */
#include "paths.h"

#include "slurm-job-record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-names.h"

static int fill(char **member, const char *env, const char *fallback)
{
        const char *v;

        if (*member)
                return 0;
        v = getenv(env);
        if (!v || !*v)
                v = fallback;
        if (!v)
                return 0;
        *member = strdup(v);
        return *member ? 0 : -ENOMEM;
}

int paths_fill_defaults(struct paths *p)
{
        int r;

        if ((r = fill(&p->config_dir, "GPREEMPT_CONFIG_DIR", "/etc/gpreempt")) < 0 ||
            (r = fill(&p->runtime_dir, "GPREEMPT_RUNTIME_DIR", NULL)) < 0 ||
            (r = fill(&p->proc_root, "GPREEMPT_PROC_ROOT", "/proc")) < 0 ||
            (r = fill(&p->sysfs_root, "GPREEMPT_SYSFS_ROOT", "/sys")) < 0 ||
            (r = fill(&p->kfd_device, "GPREEMPT_KFD_DEVICE", "/dev/kfd")) < 0 ||
            (r = fill(&p->group, "GPREEMPT_GROUP", "gpreempt")) < 0 ||
            (r = fill(&p->slurm_jobs_dir, "GPREEMPT_SLURM_JOBS_DIR", SLURM_JOB_RECORD_DEFAULT_DIR)) < 0)
                return r;
        return 0;
}

void paths_done(struct paths *p)
{
        free(p->config_dir);
        free(p->runtime_dir);
        free(p->proc_root);
        free(p->sysfs_root);
        free(p->kfd_device);
        free(p->group);
        free(p->slurm_jobs_dir);
        *p = (struct paths){ 0 };
}

int paths_api_socket(char **ret_path)
{
        struct paths p = { 0 };
        int r = paths_fill_defaults(&p);
        const char *dir = p.runtime_dir ? p.runtime_dir : API_DEFAULT_RUNTIME_DIR;

        if (r >= 0 && asprintf(ret_path, "%s/" API_SOCKET_NAME, dir) < 0)
                r = -ENOMEM;
        paths_done(&p);
        return r;
}
