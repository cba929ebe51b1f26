/* SPDX-License-Identifier: MIT */
#include "workload-match.h"

#include <json.h>

#include <fnmatch.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "parse-decimal.h"

static bool has_suffix(const char *s, size_t len, const char *suffix)
{
        size_t n = strlen(suffix);
        return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

char *workload_match_cgroup_unit(const char *cgroup)
{
        const char *best = NULL;
        size_t best_len = 0;

        for (const char *p = cgroup; *p;) {
                size_t len;

                while (*p == '/')
                        p++;
                len = strcspn(p, "/");
                if (len && (has_suffix(p, len, ".service") || has_suffix(p, len, ".scope"))) {
                        best = p;
                        best_len = len;
                }
                p += len;
        }
        return best ? strndup(best, best_len) : NULL;
}

static const char *basename_of(const char *path)
{
        const char *slash = strrchr(path, '/');
        return slash ? slash + 1 : path;
}

/* What the Prolog's record of the process's job gives for a Slurm key (NULL when nothing). */
static const char *slurm_record_value(enum match_key key, const struct slurm_job_record *r)
{
        switch (key) {
        case MATCH_SLURM_PARTITION:
                return r->partition;
        case MATCH_SLURM_QOS:
                return r->qos;
        case MATCH_SLURM_ACCOUNT:
                return r->account;
        case MATCH_SLURM_COMMENT:
                return r->comment;
        default:
                return NULL;
        }
}

static const char *slurm_record_field(enum match_key key)
{
        switch (key) {
        case MATCH_SLURM_QOS:
                return "QOS";
        case MATCH_SLURM_ACCOUNT:
                return "account";
        case MATCH_SLURM_COMMENT:
                return "comment";
        default:
                return "partition";
        }
}

/*
 * The job id MatchSlurmJob= may match: the cgroup's, which only slurmstepd
 * chooses; else, for a workload that lowers a process's standing, the one
 * its environment's SLURM_JOB_ID names (proctrack/linuxproc without
 * task/cgroup), which its owner could forge only to its own loss.
 */
static bool slurm_job_is(const struct process_facts *p, enum workload_class class, long job)
{
        uint64_t id;

        if (p->cluster.kind != CLUSTER_KIND_SLURM || parse_decimal(p->cluster.id, UINT32_MAX, &id) != 0 ||
            (long)id != job)
                return false;
        return p->cluster_cgroup.slurm_job_id || class == WORKLOAD_CLASS_OFFLINE;
}

static bool value_matches(enum match_key key, const struct workload *w, const struct match_rule *rule, size_t i,
                          const struct process_facts *p, const char *unit)
{
        const char *v = rule->values[i];

        switch (key) {
        case MATCH_EXECUTABLE:
                if (!p->exe)
                        return false;
                /* A bare name matches the file name wherever it is installed. */
                return fnmatch(v, v[0] == '/' ? p->exe : basename_of(p->exe), 0) == 0;
        case MATCH_COMMAND_LINE:
                return fnmatch(v, p->cmdline, 0) == 0;
        case MATCH_USER:
                return (uid_t)rule->numbers[i] == p->uid;
        case MATCH_CGROUP:
                return fnmatch(v, p->cgroup, 0) == 0;
        case MATCH_UNIT:
                return unit && fnmatch(v, unit, 0) == 0;
        case MATCH_CONTAINER:
                return strstr(p->cgroup, v) != NULL;
        case MATCH_PID:
                return (pid_t)rule->numbers[i] == p->pid;
        case MATCH_ENVIRONMENT: {
                const char *value = process_environ_get(&p->environment, v);
                return value && fnmatch(strchr(v, '=') + 1, value, 0) == 0;
        }
        case MATCH_KUBERNETES_QOS:
                return p->cluster_cgroup.qos == (enum kubernetes_qos)rule->numbers[i];
        case MATCH_POD:
                return strcmp(p->cluster_cgroup.pod_uid, v) == 0;
        case MATCH_SLURM_JOB:
                return slurm_job_is(p, w->class, rule->numbers[i]);
        case MATCH_SLURM_PARTITION:
        case MATCH_SLURM_QOS:
        case MATCH_SLURM_ACCOUNT:
        case MATCH_SLURM_COMMENT: {
                const char *value = slurm_record_value(key, &p->slurm_job);
                return value && fnmatch(v, value, 0) == 0;
        }
        case _MATCH_KEY_MAX:
                break;
        }
        return false;
}

/* Why no variable could be looked at, or NULL when the environment was read. */
static char *describe_unread_environment(const struct process_environ *env)
{
        char *s = NULL;

        if (env->error) {
                if (asprintf(&s, "its environment cannot be read (%s): run as root, which gpreemptd is",
                             strerror(-env->error)) < 0)
                        return NULL;
                return s;
        }
        if (env->len == 0)
                return strdup("its environment is empty (a kernel thread, an exited process, or one started "
                              "without any)");
        return NULL;
}

/* "NAME is \"value\"" or "NAME is not set", for each name the rule looks at. */
static char *describe_environment(const struct match_rule *rule, const struct process_facts *p)
{
        char *s = describe_unread_environment(&p->environment);

        if (s || p->environment.error || p->environment.len == 0)
                return s;
        for (size_t i = 0; i < rule->n_values; i++) {
                const char *v = rule->values[i];
                int name_len = (int)strcspn(v, "=");
                const char *value = process_environ_get(&p->environment, v);
                char *grown;
                int r;

                if (value)
                        r = asprintf(&grown, "%s%s%.*s is \"%s\"", s ? s : "", s ? ", " : "", name_len, v, value);
                else
                        r = asprintf(&grown, "%s%s%.*s is not set", s ? s : "", s ? ", " : "", name_len, v);
                free(s);
                if (r < 0)
                        return NULL;
                s = grown;
        }
        return s;
}

static char *describe_slurm_record(enum match_key key, const struct process_facts *p)
{
        const char *value = slurm_record_value(key, &p->slurm_job);
        const char *field = slurm_record_field(key);
        char *s = NULL;
        int r;

        if (!p->cluster_cgroup.slurm_job_id)
                r = asprintf(&s, "is in no Slurm job cgroup, so its job's %s is not known (the environment's is "
                                 "not believed: give slurmd TaskPlugin=task/cgroup or ProctrackType=proctrack/cgroup)",
                             field);
        else if (p->slurm_job.error)
                r = asprintf(&s, "job %u: %s", p->cluster_cgroup.slurm_job_id, slurm_job_record_problem(p->slurm_job.error));
        else if (value)
                r = asprintf(&s, "job %u's %s is \"%s\"", p->cluster_cgroup.slurm_job_id, field, value);
        else
                r = asprintf(&s, "job %u's Prolog record gives no %s%s", p->cluster_cgroup.slurm_job_id, field,
                             key == MATCH_SLURM_QOS || key == MATCH_SLURM_ACCOUNT
                                     ? " (Slurm gives the Prolog one only with accounting)"
                                     : "");
        return r < 0 ? NULL : s;
}

static char *describe_pod(const struct process_facts *p)
{
        char *s = NULL;
        int r;

        if (p->cluster_cgroup.qos == KUBERNETES_QOS_NONE)
                r = asprintf(&s, "is in no Kubernetes pod (cgroup %s)", p->cgroup);
        else
                r = asprintf(&s, "is in %s pod %s%s%s%s", kubernetes_qos_to_string(p->cluster_cgroup.qos),
                             p->cluster_cgroup.pod_uid, p->cluster.name[0] ? " (" : "", p->cluster.name,
                             p->cluster.name[0] ? ")" : "");
        return r < 0 ? NULL : s;
}

/* What the process has for this key, for the sentence that explains a non-match. */
static char *describe_fact(enum match_key key, const struct workload *w, const struct match_rule *rule,
                           const struct process_facts *p, const char *unit)
{
        char *s = NULL;
        int r = -1;

        switch (key) {
        case MATCH_EXECUTABLE:
                r = asprintf(&s, "executable is %s", p->exe ? p->exe : "unknown");
                break;
        case MATCH_COMMAND_LINE:
                r = asprintf(&s, "command line is \"%s\"", p->cmdline);
                break;
        case MATCH_USER: {
                struct passwd *pw = getpwuid(p->uid);
                r = asprintf(&s, "runs as uid %u%s%s%s", (unsigned)p->uid, pw ? " (" : "",
                             pw ? pw->pw_name : "", pw ? ")" : "");
                break;
        }
        case MATCH_CGROUP:
        case MATCH_CONTAINER:
                r = asprintf(&s, "cgroup is %s", p->cgroup);
                break;
        case MATCH_UNIT:
                r = unit ? asprintf(&s, "unit is %s", unit) : asprintf(&s, "is in no systemd unit (cgroup %s)", p->cgroup);
                break;
        case MATCH_PID:
                r = asprintf(&s, "pid is %d", (int)p->pid);
                break;
        case MATCH_ENVIRONMENT:
                return describe_environment(rule, p);
        case MATCH_KUBERNETES_QOS:
        case MATCH_POD:
                return describe_pod(p);
        case MATCH_SLURM_JOB:
                if (p->cluster.kind == CLUSTER_KIND_SLURM && !p->cluster_cgroup.slurm_job_id &&
                    w->class != WORKLOAD_CLASS_OFFLINE)
                        r = asprintf(&s, "names Slurm job %s only in its environment, which is believed for "
                                         "Class=offline alone (no job cgroup: give slurmd TaskPlugin=task/cgroup)",
                                     p->cluster.id);
                else if (p->cluster.kind == CLUSTER_KIND_SLURM)
                        r = asprintf(&s, "is in Slurm job %s%s%s%s", p->cluster.id, p->cluster.name[0] ? " (" : "",
                                     p->cluster.name, p->cluster.name[0] ? ")" : "");
                else
                        r = asprintf(&s, "is in no Slurm job (no job cgroup, no SLURM_JOB_ID; cgroup %s)", p->cgroup);
                break;
        case MATCH_SLURM_PARTITION:
        case MATCH_SLURM_QOS:
        case MATCH_SLURM_ACCOUNT:
        case MATCH_SLURM_COMMENT:
                return describe_slurm_record(key, p);
        case _MATCH_KEY_MAX:
                break;
        }
        return r < 0 ? NULL : s;
}

static char *join_values(const struct match_rule *rule)
{
        size_t len = 1;
        char *s;

        for (size_t i = 0; i < rule->n_values; i++)
                len += strlen(rule->values[i]) + 1;
        s = calloc(1, len);
        if (!s)
                return NULL;
        for (size_t i = 0; i < rule->n_values; i++) {
                if (i)
                        strcat(s, " ");
                strcat(s, rule->values[i]);
        }
        return s;
}

bool workload_match(const struct workload *w, const struct process_facts *p, char **ret_reason)
{
        _cleanup_free_ char *unit = workload_match_cgroup_unit(p->cgroup ? p->cgroup : "");
        _cleanup_free_ char *matched = NULL;

        for (int k = 0; k < _MATCH_KEY_MAX; k++) {
                const struct match_rule *rule = &w->match[k];
                bool any = false;

                if (!rule->line)
                        continue;
                for (size_t i = 0; i < rule->n_values && !any; i++)
                        any = value_matches(k, w, rule, i, p, unit);
                if (!any) {
                        if (ret_reason) {
                                _cleanup_free_ char *fact = describe_fact(k, w, rule, p, unit);
                                _cleanup_free_ char *values = join_values(rule);

                                if (asprintf(ret_reason, "%s=%s (%s:%u) does not match: %s",
                                             match_key_to_string(k), values ? values : "", w->file,
                                             rule->line, fact ? fact : "") < 0)
                                        *ret_reason = NULL;
                        }
                        return false;
                }
                if (ret_reason) {
                        char *grown = NULL;

                        if (asprintf(&grown, "%s%s%s=", matched ? matched : "", matched ? ", " : "",
                                     match_key_to_string(k)) < 0)
                                grown = NULL;
                        free(matched);
                        matched = grown;
                }
        }
        if (ret_reason) {
                if (asprintf(ret_reason, "matches by %s", matched ? matched : "") < 0)
                        *ret_reason = NULL;
        }
        return true;
}

const struct workload *workload_match_first(const struct config *c, const struct process_facts *p)
{
        for (size_t i = 0; i < c->n_workloads; i++)
                if (workload_match(&c->workloads[i], p, NULL))
                        return &c->workloads[i];
        return NULL;
}

bool workload_online_by_environment_alone(const struct workload *w)
{
        if (w->class != WORKLOAD_CLASS_ONLINE || !w->match[MATCH_ENVIRONMENT].line)
                return false;
        for (int k = 0; k < _MATCH_KEY_MAX; k++)
                if (k != MATCH_ENVIRONMENT && w->match[k].line)
                        return false;
        return true;
}

struct json_object *workload_match_to_json(const struct workload *w, bool matched, const char *reason)
{
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "workload", json_object_new_string(w->name));
        json_object_object_add(o, "file", json_object_new_string(w->file));
        json_object_object_add(o, "line", json_object_new_int((int)w->line));
        json_object_object_add(o, "matched", json_object_new_boolean(matched));
        json_object_object_add(o, "reason", json_object_new_string(reason ? reason : ""));
        return o;
}
