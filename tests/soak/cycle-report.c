/* SPDX-License-Identifier: MIT */
/* The cycle soak's summary: text for people, --json for scripts/soak. */
#include <json-c/json.h>
#include <stdio.h>

#include "cycle-soak.h"

static bool soak_held(const struct soak_result *res)
{
        if (res->error[0])
                return false;
        for (int p = 0; p < SOAK_N_PROCESSES; p++)
                if (res->verdicts[p].problem[0])
                        return false;
        return true;
}

static json_object *trio(uint64_t first, uint64_t last, uint64_t max, uint64_t baseline)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "first", json_object_new_int64((int64_t)first));
        json_object_object_add(o, "last", json_object_new_int64((int64_t)last));
        json_object_object_add(o, "max", json_object_new_int64((int64_t)max));
        json_object_object_add(o, "baseline", json_object_new_int64((int64_t)baseline));
        return o;
}

static json_object *usage_json(const struct usage_series *s, const struct usage_verdict *v)
{
        json_object *o = json_object_new_object(), *rss;

        json_object_object_add(o, "pid", json_object_new_int(s->pid));
        json_object_object_add(o, "samples", json_object_new_int64((int64_t)v->n_samples));
        json_object_object_add(o, "fds", trio(v->fds_first, v->fds_last, v->fds_max, v->fds_baseline));
        rss = trio(v->rss_first, v->rss_last, v->rss_max, v->rss_baseline);
        json_object_object_add(rss, "allowed_growth", json_object_new_int64((int64_t)v->rss_allowed_growth));
        json_object_object_add(rss, "judged", json_object_new_boolean(v->rss_judged));
        json_object_object_add(o, "rss_kib", rss);
        json_object_object_add(o, "problem", v->problem[0] ? json_object_new_string(v->problem) : NULL);
        return o;
}

static void print_json(const struct soak_options *opts, const struct soak_result *res)
{
        json_object *root = json_object_new_object(), *usage = json_object_new_object(), *rel;

        json_object_object_add(root, "ok", json_object_new_boolean(soak_held(res)));
        if (res->error[0])
                json_object_object_add(root, "error", json_object_new_string(res->error));
        json_object_object_add(root, "cycles", json_object_new_int64((int64_t)opts->cycles));
        json_object_object_add(root, "cycles_done", json_object_new_int64((int64_t)res->cycles_done));
        json_object_object_add(root, "duration_s", json_object_new_double(res->duration_s));
        json_object_object_add(root, "cycles_per_s",
                               json_object_new_double(res->duration_s > 0 ? (double)res->cycles_done / res->duration_s
                                                                          : 0));
        json_object_object_add(root, "queues", json_object_new_int64((int64_t)res->n_queues));
        json_object_object_add(root, "gpus", json_object_new_int((int)res->n_gpus));
        json_object_object_add(root, "progress_checks", json_object_new_int64((int64_t)res->progress_checks));
        json_object_object_add(root, "library_warnings", json_object_new_int((int)res->lib_warnings));
        json_object_object_add(root, "library_errors", json_object_new_int((int)res->lib_errors));
        json_object_object_add(root, "app_exit_status", json_object_new_int(res->app_exit_status));
        for (int p = 0; p < SOAK_N_PROCESSES; p++)
                if (res->usage[p].pid > 0)
                        json_object_object_add(usage, res->usage[p].name,
                                               usage_json(&res->usage[p], &res->verdicts[p]));
        json_object_object_add(root, "usage", usage);
        if (res->released_checked) {
                rel = json_object_new_object();
                json_object_object_add(rel, "tracer_pid", json_object_new_int(res->released.tracer));
                json_object_object_add(rel, "mapped_queues",
                                       json_object_new_int64((int64_t)res->released.n_mapped));
                json_object_object_add(rel, "stalled_queues",
                                       json_object_new_int64((int64_t)res->released.n_stalled));
                json_object_object_add(root, "released", rel);
        }
        puts(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
        json_object_put(root);
}

static void print_text(const struct soak_options *opts, const struct soak_result *res)
{
        printf("cycle soak: %s\n", soak_held(res) ? "PASSED" : "FAILED");
        if (res->error[0])
                printf("  error: %s\n", res->error);
        printf("  %llu of %llu cycles in %.1f s (%.0f cycles/s), %zu queues on %u GPUs, %llu progress "
               "checks\n",
               (unsigned long long)res->cycles_done, (unsigned long long)opts->cycles, res->duration_s,
               res->duration_s > 0 ? (double)res->cycles_done / res->duration_s : 0, res->n_queues,
               res->n_gpus, (unsigned long long)res->progress_checks);
        if (res->released_checked)
                printf("  after the detach: tracer pid %d, %zu queues mapped, %zu stalled\n",
                       (int)res->released.tracer, res->released.n_mapped, res->released.n_stalled);
        printf("  %-14s %7s %-18s %s\n", "process", "samples", "fds first/last/max",
               "RSS KiB first/last/max (baseline, allowed growth)");
        for (int p = 0; p < SOAK_N_PROCESSES; p++) {
                const struct usage_verdict *v = &res->verdicts[p];
                char fds[48];

                if (v->n_samples == 0)
                        continue;
                snprintf(fds, sizeof(fds), "%u/%u/%u", v->fds_first, v->fds_last, v->fds_max);
                printf("  %-14s %7zu %-18s %llu/%llu/%llu (%llu, %llu)\n", res->usage[p].name, v->n_samples,
                       fds, (unsigned long long)v->rss_first, (unsigned long long)v->rss_last,
                       (unsigned long long)v->rss_max, (unsigned long long)v->rss_baseline,
                       (unsigned long long)v->rss_allowed_growth);
                if (v->problem[0])
                        printf("    problem: %s\n", v->problem);
        }
        if (!USAGE_JUDGE_RSS)
                printf("  RSS not judged: an AddressSanitizer build keeps freed memory in quarantine "
                       "(LeakSanitizer checks for leaks at exit)\n");
}

void soak_report_print(const struct soak_options *opts, const struct soak_result *res)
{
        if (opts->json)
                print_json(opts, res);
        else
                print_text(opts, res);
}
