/* SPDX-License-Identifier: MIT */
#include "status-view.h"

#include <inttypes.h>
#include <json.h>
#include <stdbool.h>
#include <string.h>

#include "cluster-identity.h"
#include "json-get.h"
#include "printable.h"

/* "850ms", "12.3s", "4m05s", "2h07m": precise when short, readable when long. */
static void format_usec(char *buf, size_t size, int64_t usec)
{
        int64_t s = usec / 1000000;

        if (usec < 1000000)
                snprintf(buf, size, "%" PRId64 "ms", usec / 1000);
        else if (s < 60)
                snprintf(buf, size, "%.1fs", (double)usec / 1e6);
        else if (s < 3600)
                snprintf(buf, size, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
        else
                snprintf(buf, size, "%" PRId64 "h%02" PRId64 "m", s / 3600, s / 60 % 60);
}

/* "1,2" from an int array; "-" when empty. */
static void format_ids(char *buf, size_t size, struct json_object *array)
{
        size_t len = 0, n = array ? json_object_array_length(array) : 0;

        buf[0] = '\0';
        for (size_t i = 0; i < n && len < size; i++)
                len += (size_t)snprintf(buf + len, size - len, "%s%" PRId64, i ? "," : "",
                                        json_object_get_int64(json_object_array_get_idx(array, i)));
        if (n == 0)
                snprintf(buf, size, "-");
}

static struct json_object *find_gpu(struct json_object *status, int64_t gpu_id)
{
        struct json_object *gpus = json_get_array(status, "gpus");

        for (size_t i = 0; gpus && i < json_object_array_length(gpus); i++) {
                struct json_object *g = json_object_array_get_idx(gpus, i);

                if (json_get_int(g, "gpu_id") == gpu_id)
                        return g;
        }
        return NULL;
}

/* A GPU in back-off: a line under its row, since no preemption happens there until it ends. */
static void print_backoff(FILE *out, struct json_object *g)
{
        struct json_object *b = NULL;
        const char *error;
        char remaining[24];

        if (!json_object_object_get_ex(g, "backoff", &b) || !b || !json_get_bool(b, "active"))
                return;
        error = json_get_string(b, "error", NULL);
        format_usec(remaining, sizeof(remaining), json_get_int(b, "remaining_usec"));
        fprintf(out, "  backing off after a fault (%s%s%s): no preemption for %s more (faults so far: %" PRId64 ")\n",
                json_get_string(b, "reason", "unknown"), error ? ", " : "", error ? error : "", remaining,
                json_get_int(b, "faults"));
}

/* A GPU whose reset events the daemon could not have (a daemon that does not say is taken to have them). */
static void print_reset_events(FILE *out, struct json_object *g)
{
        struct json_object *v = NULL;

        if (json_object_object_get_ex(g, "reset_events", &v) && v && !json_object_get_boolean(v))
                fprintf(out, "  no GPU reset events (see gpreemptd's log): a reset is seen only by the calls it "
                             "fails\n");
}

static void print_gpus(FILE *out, struct json_object *status, struct json_object *previous)
{
        struct json_object *gpus = json_get_array(status, "gpus");
        size_t n = gpus ? json_object_array_length(gpus) : 0;

        if (n == 0) {
                fprintf(out, "No GPU has both online and offline work yet.\n");
                return;
        }
        fprintf(out, "%-8s %-7s %-10s %9s %-21s %12s%s\n", "GPU", "ONLINE", "OFFLINE", "SUSPENDS",
                "RESUMES(idle/max/share)", "SUSPENDED", previous ? "  SINCE-LAST" : "");
        for (size_t i = 0; i < n; i++) {
                struct json_object *g = json_object_array_get_idx(gpus, i);
                char resumes[48], suspended[24];

                snprintf(resumes, sizeof(resumes), "%" PRId64 "/%" PRId64 "/%" PRId64, json_get_int(g, "resumes_idle"),
                         json_get_int(g, "resumes_max_suspend"), json_get_int(g, "resumes_share"));
                format_usec(suspended, sizeof(suspended), json_get_int(g, "suspended_usec"));
                fprintf(out, "%-8" PRId64 " %-7s %-10s %9" PRId64 " %-21s %12s", json_get_int(g, "gpu_id"),
                        json_get_bool(g, "online_busy") ? "busy" : "idle",
                        json_get_bool(g, "offline_suspended") ? "suspended" : "running", json_get_int(g, "suspends"),
                        resumes, suspended);
                if (previous) {
                        struct json_object *p = find_gpu(previous, json_get_int(g, "gpu_id"));

                        fprintf(out, "  +%" PRId64 " suspends",
                                json_get_int(g, "suspends") - json_get_int(p, "suspends"));
                }
                fputc('\n', out);
                print_backoff(out, g);
                print_reset_events(out, g);
        }
}

/* What the daemon is doing with the process, in a few words. */
static void format_state(char *buf, size_t size, struct json_object *p)
{
        const char *class = json_get_string(p, "class", NULL);
        char ids[128], what[160];

        if (!json_get_bool(p, "managed")) {
                snprintf(buf, size, "not managed (no workload matches)");
                return;
        }
        if (class && strcmp(class, "online") == 0) {
                snprintf(buf, size, "watching %" PRId64 "/%" PRId64 " queues", json_get_int(p, "watched_queues"),
                         json_get_int(p, "queues"));
                return;
        }
        if (!json_get_bool(p, "attached")) {
                snprintf(buf, size, "not attached: %s", json_get_string(p, "attach_error", "starting"));
                return;
        }
        /* A process whose runtime has not enabled debugging cannot be
         * suspended; once it has queues it never will (RUNTIME_ENABLE
         * fails with EEXIST then): say so, and what to do. */
        format_ids(ids, sizeof(ids), json_get_array(p, "suspended_gpus"));
        if (strcmp(json_get_string(p, "runtime", ""), "disabled") == 0)
                snprintf(what, sizeof(what), "running, not suspendable: %s",
                         json_get_int(p, "queues") > 0
                                 ? "its ROCm runtime never enabled debugging (run it with ROCm 5.7 or newer)"
                                 : "waiting for its ROCm runtime to enable debugging");
        else
                snprintf(what, sizeof(what), "%s%s", strcmp(ids, "-") ? "suspended on " : "running",
                         strcmp(ids, "-") ? ids : "");
        snprintf(buf, size, "%s%s%s%s%s%s", what, json_get_bool(p, "held") ? ", held" : "",
                 json_get_bool(p, "terminating") ? ", terminating" : "",
                 json_get_string(p, "stopped_by", NULL) ? ", stopped by " : "", json_get_string(p, "stopped_by", ""),
                 json_get_bool(p, "frozen") ? ", frozen" : "");
}

void status_view_format_job(char *buf, size_t size, const char *kind, const char *id, const char *name)
{
        if (strcmp(kind, "slurm") == 0)
                snprintf(buf, size, "%s%sjob %s%s", name ? name : "", name ? " (" : "", id, name ? ")" : "");
        else if (name)
                snprintf(buf, size, "%s", name);
        else
                snprintf(buf, size, "pod %.8s", id);
}

static void format_job(char *buf, size_t size, struct json_object *p)
{
        struct json_object *cluster = NULL;

        if (!json_object_object_get_ex(p, "cluster", &cluster) || !cluster) {
                snprintf(buf, size, "-");
                return;
        }
        status_view_format_job(buf, size, json_get_string(cluster, "kind", ""), json_get_string(cluster, "id", "?"),
                               json_get_string(cluster, "name", NULL));
}

static void print_processes(FILE *out, struct json_object *status)
{
        struct json_object *procs = json_get_array(status, "processes");
        size_t n = procs ? json_object_array_length(procs) : 0;
        struct json_object *kfd_present;

        if (n == 0 && json_object_object_get_ex(status, "kfd_present", &kfd_present) &&
            !json_object_get_boolean(kfd_present)) {
                fprintf(out, "No KFD on this node (amdgpu is not loaded, or there is no AMD GPU): "
                             "nothing to manage until it appears.\n");
                return;
        }
        if (n == 0) {
                fprintf(out, "No process is using the GPU.\n");
                return;
        }
        fprintf(out, "%-8s %-8s %-16s %-24s %-8s %6s %9s  %s\n", "PID", "CLASS", "WORKLOAD", "JOB", "GPUS",
                "QUEUES", "SUSP/RES", "STATE");
        for (size_t i = 0; i < n; i++) {
                struct json_object *p = json_object_array_get_idx(procs, i);
                char gpus[64], counts[32], state[256], class[16], job[PRINTABLE_SIZE(CLUSTER_NAME_MAX) + 32]; /* the name, escaped */

                format_ids(gpus, sizeof(gpus), json_get_array(p, "gpus"));
                snprintf(counts, sizeof(counts), "%" PRId64 "/%" PRId64, json_get_int(p, "suspends"),
                         json_get_int(p, "resumes"));
                snprintf(class, sizeof(class), "%s%s", json_get_string(p, "class", "-"),
                         json_get_bool(p, "registered") ? "*" : "");
                format_state(state, sizeof(state), p);
                format_job(job, sizeof(job), p);
                fprintf(out, "%-8" PRId64 " %-8s %-16s %-24s %-8s %6" PRId64 " %9s  %s\n", json_get_int(p, "pid"), class,
                        json_get_string(p, "workload", "-"), job, gpus, json_get_int(p, "queues"), counts, state);
        }
}

/* The loop's scheduling in effect, and why it is not the configured one. */
static void print_loop_scheduling(FILE *out, struct json_object *status)
{
        int64_t priority = json_get_int(status, "realtime_priority"), wanted = json_get_int(status, "realtime_wanted");
        int64_t cap = json_get_int(status, "realtime_cpu_percent");
        int64_t demotions = json_get_int(status, "realtime_demotions");
        const char *error = json_get_string(status, "realtime_error", "");
        const char *times = demotions == 1 ? "time" : "times";

        if (priority > 0)
                fprintf(out, "loop at SCHED_FIFO priority %" PRId64, priority);
        else
                fprintf(out, "loop at normal priority");
        if (*error)
                fprintf(out, " (RealtimePriority= refused: %s)", error);
        else if (priority == 0 && wanted > 0)
                fprintf(out, " (SCHED_FIFO %" PRId64 " capped: over %" PRId64 "%% of a core; %" PRId64 " %s)", wanted,
                        cap, demotions, times);
        else if (demotions > 0)
                fprintf(out, " (capped %" PRId64 " %s so far: over %" PRId64 "%% of a core)", demotions, times, cap);
}

void status_view_print(FILE *out, struct json_object *status, struct json_object *previous)
{
        struct json_object *shown = NULL;
        char uptime[24];

        /* The reply's strings can quote other users' processes (attach_error
         * names a tracer by its comm, which its owner chooses): print them inert. */
        if (json_object_deep_copy(status, &shown, NULL) == 0) {
                printable_json(shown, true);
                status = shown;
        } else
                status = NULL; /* out of memory: the tables say nothing rather than print raw text */

        format_usec(uptime, sizeof(uptime), json_get_int(status, "uptime_usec"));
        fprintf(out, "gpreemptd: up %s, %" PRId64 " workloads configured, %" PRId64 " reloads, ", uptime,
                json_get_int(status, "workloads"), json_get_int(status, "reloads"));
        print_loop_scheduling(out, status);
        fputs("\n\n", out);
        print_gpus(out, status, previous);
        fputc('\n', out);
        print_processes(out, status);
        json_object_put(shown);
}
