/* SPDX-License-Identifier: MIT */
#include "metrics-view.h"

#include <json.h>
#include <stdbool.h>
#include <string.h>

#include "cleanup.h"
#include "json-get.h"
#include "printable.h"
#include "status-view.h"

static struct json_object *find_family(struct json_object *families, const char *name)
{
        for (size_t i = 0; families && i < json_object_array_length(families); i++) {
                struct json_object *f = json_object_array_get_idx(families, i);

                if (strcmp(json_get_string(f, "name", ""), name) == 0)
                        return f;
        }
        return NULL;
}

static const char *label(struct json_object *sample, const char *name)
{
        struct json_object *labels;

        if (!json_object_object_get_ex(sample, "labels", &labels))
                return "";
        return json_get_string(labels, name, "");
}

static bool same_labels(struct json_object *a, struct json_object *b)
{
        struct json_object *la = NULL, *lb = NULL;

        json_object_object_get_ex(a, "labels", &la);
        json_object_object_get_ex(b, "labels", &lb);
        return la && lb && json_object_equal(la, lb);
}

/* The sample of family `name` in families with the same labels as sample; NULL if none. */
static struct json_object *matching_sample(struct json_object *families, const char *name, struct json_object *sample)
{
        struct json_object *samples = json_get_array(find_family(families, name), "samples");

        for (size_t i = 0; samples && i < json_object_array_length(samples); i++)
                if (same_labels(json_object_array_get_idx(samples, i), sample))
                        return json_object_array_get_idx(samples, i);
        return NULL;
}

/* The value of the sample of `name` labelled as sample (the same series, another family); 0 if none. */
static double value_beside(struct json_object *families, const char *name, struct json_object *sample)
{
        return json_get_double(matching_sample(families, name, sample), "value");
}

/* The series' cluster job as `status` shows a process's (malloc'd, printable); "-" for none. */
static char *job_of(struct json_object *sample)
{
        const char *slurm_job = label(sample, "slurm_job"), *pod_uid = label(sample, "kubernetes_pod_uid");
        const char *slurm_name = label(sample, "slurm_job_name"), *pod = label(sample, "kubernetes_pod");
        char text[256] = "-";

        if (*slurm_job)
                status_view_format_job(text, sizeof(text), "slurm", slurm_job, *slurm_name ? slurm_name : NULL);
        else if (*pod_uid)
                status_view_format_job(text, sizeof(text), "kubernetes", pod_uid, *pod ? pod : NULL);
        /* the job's name is its user's text: no control character reaches the terminal */
        return printable_dup(text);
}

static void print_workloads(FILE *out, struct json_object *families, struct json_object *previous)
{
        struct json_object *samples = json_get_array(find_family(families, "gpreempt_suspensions_total"), "samples");
        size_t n = samples ? json_object_array_length(samples) : 0;

        fprintf(out, "\n%-24s %-8s %-24s %10s %12s %6s %11s %9s\n", "WORKLOAD", "CLASS", "JOB", "GPU", "SUSPENSIONS",
                "NEW", "SUSPENDED", "NEW");
        if (n == 0)
                fprintf(out, "(no workload has had queues on a GPU yet)\n");
        for (size_t i = 0; i < n; i++) {
                struct json_object *s = json_object_array_get_idx(samples, i);
                _cleanup_free_ char *workload = printable_dup(label(s, "workload")), *job = job_of(s);
                double suspensions = json_get_double(s, "value");
                double suspended = value_beside(families, "gpreempt_suspended_seconds_total", s);
                double was_suspensions = previous ? value_beside(previous, "gpreempt_suspensions_total", s) : 0;
                double was_suspended = previous ? value_beside(previous, "gpreempt_suspended_seconds_total", s) : 0;

                fprintf(out, "%-24.24s %-8s %-24s %10s %12.0f %6.0f %10.1fs %8.2fs\n",
                        workload && *workload ? workload : "(registered)", label(s, "class"), job ? job : "-",
                        label(s, "gpu_id"), suspensions, suspensions - was_suspensions, suspended,
                        suspended - was_suspended);
        }
}

/*
 * The smallest bucket bound that holds a share q of the observations (the
 * difference from the previous sample when there is one), as text; "-"
 * without observations, "> last" past the last bound.
 */
static void format_quantile(char *buf, size_t size, struct json_object *s, struct json_object *was, double q)
{
        struct json_object *buckets = json_get_array(s, "buckets"), *was_buckets = json_get_array(was, "buckets");
        double total = json_get_double(s, "count") - json_get_double(was, "count");
        size_t n = buckets ? json_object_array_length(buckets) : 0;

        if (total <= 0) {
                snprintf(buf, size, "-");
                return;
        }
        for (size_t i = 0; i < n; i++) {
                struct json_object *b = json_object_array_get_idx(buckets, i);
                struct json_object *wb = was_buckets && i < json_object_array_length(was_buckets)
                                                 ? json_object_array_get_idx(was_buckets, i)
                                                 : NULL;
                double le = json_get_double(b, "le");

                if (json_get_double(b, "count") - json_get_double(wb, "count") >= q * total) {
                        if (le < 1e-3)
                                snprintf(buf, size, "<=%.3gus", le * 1e6);
                        else
                                snprintf(buf, size, "<=%.3gms", le * 1e3);
                        return;
                }
        }
        snprintf(buf, size, ">%.3gs", n ? json_get_double(json_object_array_get_idx(buckets, n - 1), "le") : 0);
}

static void print_histogram(FILE *out, struct json_object *families, struct json_object *previous, const char *name,
                            const char *label_name)
{
        struct json_object *samples = json_get_array(find_family(families, name), "samples");

        for (size_t i = 0; samples && i < json_object_array_length(samples); i++) {
                struct json_object *s = json_object_array_get_idx(samples, i);
                struct json_object *was = previous ? matching_sample(previous, name, s) : NULL;
                char p50[32], p99[32];

                format_quantile(p50, sizeof(p50), s, was, 0.5);
                format_quantile(p99, sizeof(p99), s, was, 0.99);
                fprintf(out, "%10s %-20s %8.0f %12s %12s\n", label(s, "gpu_id"), label(s, label_name),
                        json_get_double(s, "count") - json_get_double(was, "count"), p50, p99);
        }
}

void metrics_view_print(FILE *out, struct json_object *families, struct json_object *previous)
{
        print_workloads(out, families, previous);
        fprintf(out, "\n%10s %-20s %8s %12s %12s\n", "GPU", "REACTION STAGE", "NEW", "P50", "P99");
        print_histogram(out, families, previous, "gpreempt_reaction_seconds", "stage");
        fprintf(out, "\n%10s %-20s %8s %12s %12s\n", "GPU", "PREEMPTION CALL", "NEW", "P50", "P99");
        print_histogram(out, families, previous, "gpreempt_preemption_call_seconds", "op");
}
