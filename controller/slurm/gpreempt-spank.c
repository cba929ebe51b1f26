/* SPDX-License-Identifier: MIT */
/*
 * The SPANK plugin: srun, sbatch and salloc get --gpreempt=online|offline,
 * and each task of a job that gave it is registered with gpreemptd
 * (io.gpreempt.Register) from slurmstepd, as root, before it execs the
 * job's program. The registration covers the task and the processes it
 * starts, and ends when the task exits (the daemon holds a pidfd of it), so
 * nothing is left to unregister: an Unregister after slurmstepd reaped the
 * task could only name a recycled pid.
 *
 * gpreemptd being absent or slow never fails a job: the plugin logs why
 * the task runs unclassified and lets it run.
 *
 * plugstack.conf arguments: runtime_dir=DIR (where the control socket is;
 * default /run/gpreempt), timeout_ms=N (per connect and call; default 1000),
 * allow=offline (the classes users may ask for; default online,offline): a
 * site where users must not preempt one another's jobs allows offline only.
 */
#include <errno.h>
#include <json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "api-names.h"
#include "cleanup.h"
#include "varlink-client.h"

/* The plugin name, and its version: the same as Slurm's loader wants, exported by the macro. */
SPANK_PLUGIN(gpreempt, 1)

#define OPTION_NAME "gpreempt"
/* A task's start waits this long at most for the daemon, per step: connect, then the call. */
#define DEFAULT_TIMEOUT_MS 1000
#define MAX_TIMEOUT_MS 30000

static int check_class(int val, const char *optarg, int remote);

static struct spank_option gpreempt_option = {
        .name = OPTION_NAME,
        .arginfo = "online|offline",
        .usage = "Give the job's GPU work to gpreemptd as online (it preempts) or offline (preempted while "
                 "online work runs on its GPU).",
        .has_arg = 1,
        .val = 0,
        .cb = check_class,
};

static bool is_class(const char *s)
{
        return s && (strcmp(s, "online") == 0 || strcmp(s, "offline") == 0);
}

/* Refuses a bad value where it is typed, in srun/sbatch/salloc, with what to type instead. */
static int check_class(int val, const char *optarg, int remote)
{
        if (is_class(optarg))
                return 0;
        slurm_error("gpreempt: --gpreempt=%s: give online or offline", optarg ? optarg : "");
        return -1;
}

struct settings {
        char socket_path[256];
        int timeout_ms;
        bool allow_online, allow_offline;
};

/* allow=CLASS[,CLASS]: the classes users may ask for. */
static int parse_allow(const char *list, struct settings *s)
{
        char copy[64], *save = NULL;

        if (snprintf(copy, sizeof(copy), "%s", list) >= (int)sizeof(copy) || !*copy)
                return -EINVAL;
        s->allow_online = s->allow_offline = false;
        for (char *c = strtok_r(copy, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
                if (strcmp(c, "online") == 0)
                        s->allow_online = true;
                else if (strcmp(c, "offline") == 0)
                        s->allow_offline = true;
                else
                        return -EINVAL;
        }
        return 0;
}

static int parse_settings(int ac, char **av, struct settings *ret)
{
        const char *runtime_dir = API_DEFAULT_RUNTIME_DIR;
        struct settings s = { .timeout_ms = DEFAULT_TIMEOUT_MS, .allow_online = true, .allow_offline = true };

        for (int i = 0; i < ac; i++) {
                if (strncmp(av[i], "runtime_dir=", strlen("runtime_dir=")) == 0 && av[i][strlen("runtime_dir=")] == '/') {
                        runtime_dir = av[i] + strlen("runtime_dir=");
                } else if (strncmp(av[i], "timeout_ms=", strlen("timeout_ms=")) == 0) {
                        char *end;
                        long v = strtol(av[i] + strlen("timeout_ms="), &end, 10);

                        if (*end || end == av[i] + strlen("timeout_ms=") || v < 1 || v > MAX_TIMEOUT_MS) {
                                slurm_error("gpreempt: plugstack.conf: %s: timeout_ms takes 1 to %d", av[i],
                                            MAX_TIMEOUT_MS);
                                return -EINVAL;
                        }
                        s.timeout_ms = (int)v;
                } else if (strncmp(av[i], "allow=", strlen("allow=")) == 0) {
                        if (parse_allow(av[i] + strlen("allow="), &s) < 0) {
                                slurm_error("gpreempt: plugstack.conf: %s: allow takes online, offline or "
                                            "online,offline",
                                            av[i]);
                                return -EINVAL;
                        }
                } else {
                        slurm_error("gpreempt: plugstack.conf: unknown argument \"%s\"; the plugin takes "
                                    "runtime_dir=/ABSOLUTE/DIR, timeout_ms=N and allow=online,offline",
                                    av[i]);
                        return -EINVAL;
                }
        }
        if (snprintf(s.socket_path, sizeof(s.socket_path), "%s/%s", runtime_dir, API_SOCKET_NAME) >=
            (int)sizeof(s.socket_path)) {
                slurm_error("gpreempt: plugstack.conf: runtime_dir is too long");
                return -EINVAL;
        }
        *ret = s;
        return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
        struct settings settings;

        /* every context: sbatch and salloc learn options only here */
        if (spank_option_register(sp, &gpreempt_option) != ESPANK_SUCCESS)
                return -1;
        return parse_settings(ac, av, &settings) < 0 ? -1 : 0;
}

/* "slurm-<job>.<step>", the step as Slurm prints it: batch, extern, interactive or its number. */
static void job_step_name(spank_t sp, char *buf, size_t size)
{
        uint32_t job = 0, step = 0;

        if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
            spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS) {
                snprintf(buf, size, "slurm-job");
                return;
        }
        if (step == SLURM_BATCH_SCRIPT)
                snprintf(buf, size, "slurm-%u.batch", job);
        else if (step == SLURM_EXTERN_CONT)
                snprintf(buf, size, "slurm-%u.extern", job);
        else if (step == SLURM_INTERACTIVE_STEP)
                snprintf(buf, size, "slurm-%u.interactive", job);
        else
                snprintf(buf, size, "slurm-%u.%u", job, step);
}

static void json_putp(struct json_object **o)
{
        json_object_put(*o);
}

/*
 * Registers pid; returns 0, or -errno with *ret_error set to the daemon's
 * error name when it gave one, and *ret_unknown when the call went out but
 * its answer did not come in time (whether it took effect is not known).
 */
static int register_task(const struct settings *s, pid_t pid, const char *class, const char *name, char **ret_error,
                         bool *ret_unknown)
{
        _cleanup_(json_putp) struct json_object *params = json_object_new_object();
        _cleanup_(json_putp) struct json_object *reply = NULL;
        struct varlink_client *client;
        int r;

        if (!params)
                return -ENOMEM;
        json_object_object_add(params, "pid", json_object_new_int(pid));
        json_object_object_add(params, "class", json_object_new_string(class));
        json_object_object_add(params, "name", json_object_new_string(name));
        r = varlink_client_connect(s->socket_path, s->timeout_ms, &client);
        if (r < 0)
                return r;
        r = varlink_client_call(client, API_QUALIFIED("Register"), params, s->timeout_ms, &reply, ret_error);
        varlink_client_free(client);
        /* sent, but no answer in time: the daemon may have registered it all the same */
        if (r == -ETIMEDOUT)
                *ret_unknown = true;
        if (r >= 0 && *ret_error)
                return -EPROTO;
        return r;
}

/*
 * The class the job asked for, "online" or "offline", as slurmstepd's
 * slurm_spank_user_init() read it; NULL when none. Kept for
 * slurm_spank_task_post_fork(), where spank_option_getopt() is not
 * available (spank.h): each slurmstepd runs one step, and calls both.
 */
static const char *step_class;

/* In slurmstepd, before it forks the step's tasks. */
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
        char *class = NULL;

        step_class = NULL;
        if (spank_option_getopt(sp, &gpreempt_option, &class) == ESPANK_SUCCESS && is_class(class))
                step_class = strcmp(class, "online") == 0 ? "online" : "offline";
        return 0;
}

/*
 * In slurmstepd, as root, once it has put the task it forked into the
 * step's process tracking and task cgroups, and before it lets the task
 * exec the job's program (src/slurmd/slurmstepd/mgr.c, _fork_all_tasks():
 * proctrack_g_add() then spank_task_post_fork() for each task, then the
 * signal that lets the tasks exec). The daemon reads the task's step from
 * its cgroup when it registers it; task_init_privileged, in the task right
 * after the fork, came before slurmstepd placed it whenever slurmstepd ran
 * late, and the step's processes outside the task's own tree were then
 * never covered.
 */
int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
        _cleanup_free_ char *error = NULL;
        struct settings settings;
        const char *class = step_class;
        char name[64];
        bool unknown = false;
        pid_t pid;
        int r;

        if (!class)
                return 0;
        if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS) {
                slurm_error("gpreempt: slurmstepd did not give the task's pid (S_TASK_PID); the task runs "
                            "classified by gpreemptd's configuration");
                return 0;
        }
        if (parse_settings(ac, av, &settings) < 0)
                return 0;
        job_step_name(sp, name, sizeof(name));
        if (strcmp(class, "online") == 0 ? !settings.allow_online : !settings.allow_offline) {
                slurm_error("gpreempt: %s: --gpreempt=%s is not allowed on this cluster (plugstack.conf allow=); "
                            "the job runs classified by gpreemptd's configuration",
                            name, class);
                return 0;
        }
        r = register_task(&settings, pid, class, name, &error, &unknown);
        if (r < 0 && unknown) {
                slurm_error("gpreempt: %s task %d: gpreemptd at %s did not answer within %d ms whether it registered "
                            "it as %s; the task runs as the daemon decided (gpreemptctl status shows it)",
                            name, (int)pid, settings.socket_path, settings.timeout_ms, class);
                return 0;
        }
        if (r < 0) {
                /* the job runs either way: its class is what gpreemptd's configuration says */
                slurm_error("gpreempt: %s task %d not registered as %s with gpreemptd at %s: %s; it runs "
                            "classified by the daemon's configuration (is gpreemptd running?)",
                            name, (int)pid, class, settings.socket_path, error ? error : strerror(-r));
                return 0;
        }
        slurm_info("gpreempt: %s task %d registered as %s", name, (int)pid, class);
        return 0;
}
