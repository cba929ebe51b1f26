/* SPDX-License-Identifier: MIT */
#include "status-view.h"

#include <inttypes.h>
#include <json.h>
#include <stdbool.h>
#include <string.h>

#include "printable.h"

static int64_t get_int(struct json_object *o, const char *key)
{
        struct json_object *v;

        return o && json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

static bool get_bool(struct json_object *o, const char *key)
{
        struct json_object *v;

        return o && json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

static const char *get_string(struct json_object *o, const char *key, const char *fallback)
{
        struct json_object *v;

        if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
                return json_object_get_string(v);
        return fallback;
}

static struct json_object *get_array(struct json_object *o, const char *key)
{
        struct json_object *v;

        if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_array))
                return v;
        return NULL;
}

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
        struct json_object *gpus = get_array(status, "gpus");

        for (size_t i = 0; gpus && i < json_object_array_length(gpus); i++) {
                struct json_object *g = json_object_array_get_idx(gpus, i);

                if (get_int(g, "gpu_id") == gpu_id)
                        return g;
        }
        return NULL;
}

static void print_gpus(FILE *out, struct json_object *status, struct json_object *previous)
{
        struct json_object *gpus = get_array(status, "gpus");
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

                snprintf(resumes, sizeof(resumes), "%" PRId64 "/%" PRId64 "/%" PRId64, get_int(g, "resumes_idle"),
                         get_int(g, "resumes_max_suspend"), get_int(g, "resumes_share"));
                format_usec(suspended, sizeof(suspended), get_int(g, "suspended_usec"));
                fprintf(out, "%-8" PRId64 " %-7s %-10s %9" PRId64 " %-21s %12s", get_int(g, "gpu_id"),
                        get_bool(g, "online_busy") ? "busy" : "idle",
                        get_bool(g, "offline_suspended") ? "suspended" : "running", get_int(g, "suspends"),
                        resumes, suspended);
                if (previous) {
                        struct json_object *p = find_gpu(previous, get_int(g, "gpu_id"));

                        fprintf(out, "  +%" PRId64 " suspends", get_int(g, "suspends") - get_int(p, "suspends"));
                }
                fputc('\n', out);
        }
}

/* What the daemon is doing with the process, in a few words. */
static void format_state(char *buf, size_t size, struct json_object *p)
{
        const char *class = get_string(p, "class", NULL);
        char ids[128], what[160];

        if (!get_bool(p, "managed")) {
                snprintf(buf, size, "not managed (no workload matches)");
                return;
        }
        if (class && strcmp(class, "online") == 0) {
                snprintf(buf, size, "watching %" PRId64 "/%" PRId64 " queues", get_int(p, "watched_queues"),
                         get_int(p, "queues"));
                return;
        }
        if (!get_bool(p, "attached")) {
                snprintf(buf, size, "not attached: %s", get_string(p, "attach_error", "starting"));
                return;
        }
        /* A process whose runtime has not enabled debugging cannot be
         * suspended; once it has queues it never will (RUNTIME_ENABLE
         * fails with EEXIST then): say so, and what to do. */
        format_ids(ids, sizeof(ids), get_array(p, "suspended_gpus"));
        if (strcmp(get_string(p, "runtime", ""), "disabled") == 0)
                snprintf(what, sizeof(what), "running, not suspendable: %s",
                         get_int(p, "queues") > 0
                                 ? "its ROCm runtime never enabled debugging (run it with ROCm 5.7 or newer)"
                                 : "waiting for its ROCm runtime to enable debugging");
        else
                snprintf(what, sizeof(what), "%s%s", strcmp(ids, "-") ? "suspended on " : "running",
                         strcmp(ids, "-") ? ids : "");
        snprintf(buf, size, "%s%s%s", what,
                 get_bool(p, "held") ? ", held" : "", get_bool(p, "terminating") ? ", terminating" : "");
}

static void print_processes(FILE *out, struct json_object *status)
{
        struct json_object *procs = get_array(status, "processes");
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
        fprintf(out, "%-8s %-8s %-16s %-8s %6s %9s  %s\n", "PID", "CLASS", "WORKLOAD", "GPUS", "QUEUES",
                "SUSP/RES", "STATE");
        for (size_t i = 0; i < n; i++) {
                struct json_object *p = json_object_array_get_idx(procs, i);
                char gpus[64], counts[32], state[256], class[16];

                format_ids(gpus, sizeof(gpus), get_array(p, "gpus"));
                snprintf(counts, sizeof(counts), "%" PRId64 "/%" PRId64, get_int(p, "suspends"),
                         get_int(p, "resumes"));
                snprintf(class, sizeof(class), "%s%s", get_string(p, "class", "-"),
                         get_bool(p, "registered") ? "*" : "");
                format_state(state, sizeof(state), p);
                fprintf(out, "%-8" PRId64 " %-8s %-16s %-8s %6" PRId64 " %9s  %s\n", get_int(p, "pid"), class,
                        get_string(p, "workload", "-"), gpus, get_int(p, "queues"), counts, state);
        }
}

/* The loop's scheduling in effect, and why it is not the configured one. */
static void print_loop_scheduling(FILE *out, struct json_object *status)
{
        int64_t priority = get_int(status, "realtime_priority"), wanted = get_int(status, "realtime_wanted");
        int64_t cap = get_int(status, "realtime_cpu_percent"), demotions = get_int(status, "realtime_demotions");
        const char *error = get_string(status, "realtime_error", "");
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

        format_usec(uptime, sizeof(uptime), get_int(status, "uptime_usec"));
        fprintf(out, "gpreemptd: up %s, %" PRId64 " workloads configured, %" PRId64 " reloads, ", uptime,
                get_int(status, "workloads"), get_int(status, "reloads"));
        print_loop_scheduling(out, status);
        fputs("\n\n", out);
        print_gpus(out, status, previous);
        fputc('\n', out);
        print_processes(out, status);
        json_object_put(shown);
}
