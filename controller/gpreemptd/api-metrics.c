/* SPDX-License-Identifier: MIT */
#include "api-metrics.h"

#include <json.h>
#include <stdio.h>
#include <string.h>

#include "detector.h"
#include "manager.h"
#include "metrics.h"

#ifndef GPREEMPT_VERSION
#error "GPREEMPT_VERSION names the build in gpreempt_build_info"
#endif

static struct json_object *family(struct json_object *families, const char *name, const char *type, const char *help)
{
        struct json_object *f = json_object_new_object(), *samples = json_object_new_array();

        json_object_object_add(f, "name", json_object_new_string(name));
        json_object_object_add(f, "type", json_object_new_string(type));
        json_object_object_add(f, "help", json_object_new_string(help));
        json_object_object_add(f, "samples", samples);
        json_object_array_add(families, f);
        return samples;
}

/* Takes labels. */
static void sample(struct json_object *samples, struct json_object *labels, double value)
{
        struct json_object *s = json_object_new_object();

        json_object_object_add(s, "labels", labels);
        json_object_object_add(s, "value", json_object_new_double(value));
        json_object_array_add(samples, s);
}

static void add_label(struct json_object *labels, const char *name, const char *value)
{
        json_object_object_add(labels, name, json_object_new_string(value));
}

static struct json_object *gpu_labels(const struct gpu *g)
{
        struct json_object *labels = json_object_new_object();
        char id[16];

        snprintf(id, sizeof(id), "%u", g->gpu_id);
        add_label(labels, "gpu_id", id);
        add_label(labels, "gpu_name", g->metrics.name);
        return labels;
}

/* gpu_labels() and one more. */
static struct json_object *gpu_labels_and(const struct gpu *g, const char *name, const char *value)
{
        struct json_object *labels = gpu_labels(g);

        add_label(labels, name, value);
        return labels;
}

/* Takes labels. Buckets in seconds, cumulative, as the exposition format has them. */
static void histogram_sample(struct json_object *samples, struct json_object *labels, const struct metrics_histogram *h)
{
        struct json_object *s = json_object_new_object(), *buckets = json_object_new_array();
        uint64_t cumulative = 0;

        for (size_t i = 0; i < METRICS_HISTOGRAM_BUCKETS; i++) {
                struct json_object *b = json_object_new_object();

                cumulative += h->in_bucket[i];
                json_object_object_add(b, "le", json_object_new_double(metrics_histogram_bounds_ns[i] / 1e9));
                json_object_object_add(b, "count", json_object_new_int64((int64_t)cumulative));
                json_object_array_add(buckets, b);
        }
        json_object_object_add(s, "labels", labels);
        json_object_object_add(s, "buckets", buckets);
        json_object_object_add(s, "count", json_object_new_int64((int64_t)h->count));
        json_object_object_add(s, "sum", json_object_new_double(h->sum_ns / 1e9));
        json_object_array_add(samples, s);
}

static void add_node_families(struct json_object *families, const struct manager *m)
{
        struct json_object *samples, *labels;
        uint64_t processes[_WORKLOAD_CLASS_MAX + 1] = { 0 }, queues[_WORKLOAD_CLASS_MAX + 1] = { 0 };

        labels = json_object_new_object();
        add_label(labels, "version", GPREEMPT_VERSION);
        sample(family(families, "gpreempt_build_info", "gauge", "The gpreemptd build answering: always 1."), labels, 1);
        sample(family(families, "gpreempt_kfd_present", "gauge",
                      "1 when the node has a KFD (amdgpu loaded, an AMD GPU), 0 when there is nothing to manage."),
               json_object_new_object(), manager_kfd_present(m));
        sample(family(families, "gpreempt_reloads_total", "counter", "Configuration reloads since gpreemptd started."),
               json_object_new_object(), (double)m->reloads);

        samples = family(families, "gpreempt_errors_total", "counter",
                         "Failures by kind: attach, suspend, resume, queue_scheduler (queues the hardware scheduler "
                         "flagged), session (debug events, ptrace stops, new queues), watch (online queues).");
        for (int e = 0; e < _METRICS_ERROR_MAX; e++) {
                labels = json_object_new_object();
                add_label(labels, "kind", metrics_error_to_string(e));
                sample(samples, labels, (double)m->errors[e]);
        }

        /* the last slot: processes no workload matched */
        for (size_t i = 0; i < m->n_processes; i++) {
                const struct tracked_process *p = m->processes[i];
                int c = p->managed ? (int)p->class : _WORKLOAD_CLASS_MAX;

                processes[c]++;
                queues[c] += p->queues.n_queues;
        }
        {
                struct json_object *by_process = family(families, "gpreempt_processes", "gauge",
                                                        "Processes using the GPU, by class (unmanaged: no workload "
                                                        "matched)."),
                                   *by_queue = family(families, "gpreempt_queues", "gauge",
                                                      "Their GPU queues as sysfs lists them, by class.");

                for (int c = 0; c <= _WORKLOAD_CLASS_MAX; c++) {
                        const char *name = c < _WORKLOAD_CLASS_MAX ? workload_class_to_string(c) : "unmanaged";
                        struct json_object *l = json_object_new_object();

                        add_label(l, "class", name);
                        sample(by_process, json_object_get(l), (double)processes[c]);
                        sample(by_queue, l, (double)queues[c]);
                }
        }

        sample(family(families, "gpreempt_loop_cpu_seconds_total", "counter",
                      "CPU time of gpreemptd's loop thread, which detects, decides and preempts."),
               json_object_new_object(), loop_thread_cpu_ns() / 1e9);
        sample(family(families, "gpreempt_loop_realtime_priority", "gauge",
                      "The loop's SCHED_FIFO priority in effect (0: normal priority, demoted or not wanted)."),
               json_object_new_object(), m->scheduling.priority);
        sample(family(families, "gpreempt_loop_realtime_demotions_total", "counter",
                      "Times the loop used more than RealtimeCpuPercent= of a core and was put at normal priority."),
               json_object_new_object(), (double)m->scheduling.demotions);
}

static void add_gpu_families(struct json_object *families, const struct manager *m)
{
        static const char *const reasons[_POLICY_RESUMED_MAX] = {
                [POLICY_RESUMED_IDLE] = "idle",
                [POLICY_RESUMED_MAX_SUSPEND] = "max_suspend",
                [POLICY_RESUMED_SHARE] = "share",
                [POLICY_RESUMED_FAULT] = "fault",
        };
        static const char *const stages[_METRICS_REACTION_STAGE_MAX] = {
                [METRICS_REACTION_SEEN_TO_ISSUED] = "seen_to_issued",
                [METRICS_REACTION_ISSUED_TO_RETURNED] = "issued_to_returned",
        };
        static const char *const calls[_METRICS_CALL_MAX] = {
                [METRICS_CALL_SUSPEND] = "suspend",
                [METRICS_CALL_RESUME] = "resume",
        };
        uint64_t now = manager_now(m);
        struct json_object *suspensions, *resumptions, *suspended, *busy, *online_busy, *offline_suspended,
                *reaction, *call, *collateral, *online_queues, *backoff, *faults, *rate_limited;

        suspensions = family(families, "gpreempt_gpu_suspensions_total", "counter",
                             "Times the GPU's policy suspended its offline work.");
        resumptions = family(families, "gpreempt_gpu_resumptions_total", "counter",
                             "Times the GPU's policy resumed its offline work, by reason: idle (online work ended), "
                             "max_suspend (the starvation bound, MaxSuspendMs=), share (MinOfflineSharePercent=), "
                             "fault (the GPU faulted and backs off).");
        suspended = family(families, "gpreempt_gpu_suspended_seconds_total", "counter",
                           "Time the GPU's offline work was suspended.");
        busy = family(families, "gpreempt_online_busy_seconds_total", "counter",
                      "Time the GPU's online side had work, as the detector saw it.");
        online_busy = family(families, "gpreempt_gpu_online_busy", "gauge", "1 while the GPU's online side has work.");
        offline_suspended = family(families, "gpreempt_gpu_offline_suspended", "gauge",
                                   "1 while the GPU's offline work is suspended.");
        reaction = family(families, "gpreempt_reaction_seconds", "histogram",
                          "The reaction to online work, by stage: seen_to_issued (the detector saw the store, "
                          "to the first SUSPEND_QUEUES issued), issued_to_returned (to the last one returned).");
        call = family(families, "gpreempt_preemption_call_seconds", "histogram",
                      "How long one SUSPEND_QUEUES or RESUME_QUEUES call of a process took, by op.");
        collateral = family(families, "gpreempt_collateral_preemptions_total", "counter",
                            "Online queues unmapped and mapped again by a device-wide suspend or resume "
                            "(hardware-scheduled GPUs).");
        online_queues = family(families, "gpreempt_online_queues", "gauge", "Online queues the detector watches.");
        backoff = family(families, "gpreempt_gpu_backoff", "gauge",
                         "1 while the GPU backs off after a fault: no preemption there (FaultBackoffSec=).");
        faults = family(families, "gpreempt_gpu_faults_total", "counter",
                        "Faults seen on the GPU, by kind: call-error, timeout, queue-error, gpu-reset.");
        rate_limited = family(families, "gpreempt_gpu_rate_limited_total", "counter",
                              "Suspensions (the GPU's policy's and holds') that MaxPreemptionsPerSecond= refused.");

        for (size_t i = 0; i < m->n_gpus; i++) {
                const struct gpu *g = &m->gpus[i];
                const struct policy_stats *st = &g->policy.stats;

                sample(suspensions, gpu_labels(g), (double)st->suspends);
                for (int r = 0; r < _POLICY_RESUMED_MAX; r++)
                        sample(resumptions, gpu_labels_and(g, "reason", reasons[r]), (double)st->resumes[r]);
                sample(suspended, gpu_labels(g), policy_suspended_us(&g->policy, now) / 1e6);
                sample(busy, gpu_labels(g), policy_online_busy_us(&g->policy, now) / 1e6);
                sample(online_busy, gpu_labels(g), g->policy.online_busy);
                sample(offline_suspended, gpu_labels(g), g->policy.suspended);
                for (int s = 0; s < _METRICS_REACTION_STAGE_MAX; s++)
                        histogram_sample(reaction, gpu_labels_and(g, "stage", stages[s]), &g->metrics.reaction[s]);
                for (int c = 0; c < _METRICS_CALL_MAX; c++)
                        histogram_sample(call, gpu_labels_and(g, "op", calls[c]), &g->metrics.call[c]);
                sample(collateral, gpu_labels(g), (double)g->metrics.collateral_preemptions);
                sample(online_queues, gpu_labels(g), g->metrics.online_queues);
                sample(backoff, gpu_labels(g), g->backoff.active);
                for (int k = 0; k < _GPU_FAULT_KIND_MAX; k++)
                        sample(faults, gpu_labels_and(g, "kind", gpu_fault_kind_to_string(k)), (double)g->faults[k]);
                sample(rate_limited, gpu_labels(g), (double)g->backoff.rate_limited);
        }
}

/* The three per-workload families, filled one series at a time by add_series(). */
struct workload_families {
        struct json_object *suspensions, *resumptions, *suspended;
};

/*
 * The process's cluster job: slurm_job (its id) and slurm_job_name, or
 * kubernetes_pod_uid and kubernetes_pod (namespace/name). Not "job", which
 * Prometheus gives every target, nor "pod" and "namespace", which
 * Kubernetes service discovery is commonly relabelled into for the
 * exporter's own pod: either would be renamed exported_* on the way in.
 * A label without a value is left out, as Prometheus reads an empty one.
 */
static void add_cluster_labels(struct json_object *labels, const struct metrics_identity *id)
{
        static const char *const label_names[_CLUSTER_KIND_MAX][2] = {
                [CLUSTER_KIND_SLURM] = { "slurm_job", "slurm_job_name" },
                [CLUSTER_KIND_KUBERNETES] = { "kubernetes_pod_uid", "kubernetes_pod" },
        };

        if (id->cluster_kind == CLUSTER_KIND_NONE || id->cluster_kind >= _CLUSTER_KIND_MAX)
                return;
        if (id->cluster_id)
                add_label(labels, label_names[id->cluster_kind][0], id->cluster_id);
        if (id->cluster_name)
                add_label(labels, label_names[id->cluster_kind][1], id->cluster_name);
}

static void add_series(const struct workload_families *f, const struct gpu *g, const struct metrics_identity *id,
                       pid_t pid, const struct metrics_transitions *t, uint64_t suspended_us)
{
        struct json_object *labels = gpu_labels(g);

        add_label(labels, "workload", id->workload ? id->workload : "");
        add_label(labels, "class", workload_class_to_string(id->class));
        add_cluster_labels(labels, id);
        if (pid > 0) {
                char text[16];

                snprintf(text, sizeof(text), "%d", (int)pid);
                add_label(labels, "pid", text);
        }
        sample(f->suspensions, json_object_get(labels), (double)t->suspensions);
        sample(f->resumptions, json_object_get(labels), (double)t->resumptions);
        sample(f->suspended, labels, suspended_us / 1e6);
}

static bool identity_seen_before(const struct manager *m, size_t upto, const struct metrics_identity *id)
{
        for (size_t i = 0; i < upto; i++)
                if (m->processes[i]->counted && metrics_identity_equal(&m->processes[i]->metrics_id, id))
                        return true;
        return false;
}

/* One identity's series: its retired counts plus its live processes' on each GPU one of them was on. */
static void add_identity_series(const struct workload_families *f, const struct manager *m,
                                const struct metrics_identity *id, const struct metrics_retired_entry *retired)
{
        uint64_t now = manager_now(m);

        for (size_t g = 0; g < m->n_gpus; g++) {
                struct metrics_transitions sum = { 0 };
                uint64_t suspended_us = 0;
                bool present = false;

                if (retired) {
                        sum = retired->gpu[g];
                        suspended_us = retired->gpu[g].suspended_us;
                        present = retired->on_gpu[g];
                }
                for (size_t i = 0; i < m->n_processes; i++) {
                        const struct tracked_process *p = m->processes[i];

                        if (!p->counted || !metrics_identity_equal(&p->metrics_id, id))
                                continue;
                        present = present || p->metrics.on_gpu[g];
                        sum.suspensions += p->metrics.gpu[g].suspensions;
                        sum.resumptions += p->metrics.gpu[g].resumptions;
                        suspended_us += metrics_process_suspended_us(&p->metrics, g, now);
                }
                if (present)
                        add_series(f, &m->gpus[g], id, 0, &sum, suspended_us);
        }
}

static void add_workload_families(struct json_object *families, const struct manager *m, bool per_process)
{
        uint64_t now = manager_now(m);
        struct workload_families f = {
                .suspensions = family(families, "gpreempt_suspensions_total", "counter",
                                      "Suspensions of offline processes' queues on a GPU, by workload."),
                .resumptions = family(families, "gpreempt_resumptions_total", "counter",
                                      "Resumptions of offline processes' queues on a GPU, by workload."),
                .suspended = family(families, "gpreempt_suspended_seconds_total", "counter",
                                    "Time processes' queues were suspended on a GPU, by workload (0 for online "
                                    "workloads, which are never suspended)."),
        };

        if (per_process) {
                for (size_t i = 0; i < m->n_processes; i++) {
                        const struct tracked_process *p = m->processes[i];

                        for (size_t g = 0; p->counted && g < m->n_gpus; g++)
                                if (p->metrics.on_gpu[g])
                                        add_series(&f, &m->gpus[g], &p->metrics_id, p->pid, &p->metrics.gpu[g],
                                                   metrics_process_suspended_us(&p->metrics, g, now));
                }
                return;
        }
        for (size_t r = 0; r < m->metrics_retired.n_entries; r++)
                add_identity_series(&f, m, &m->metrics_retired.entries[r].id, &m->metrics_retired.entries[r]);
        for (size_t i = 0; i < m->n_processes; i++) {
                const struct tracked_process *p = m->processes[i];
                bool retired = false;

                if (!p->counted || identity_seen_before(m, i, &p->metrics_id))
                        continue;
                for (size_t r = 0; r < m->metrics_retired.n_entries && !retired; r++)
                        retired = metrics_identity_equal(&m->metrics_retired.entries[r].id, &p->metrics_id);
                if (!retired)
                        add_identity_series(&f, m, &p->metrics_id, NULL);
        }
}

struct json_object *api_metrics_families(const struct manager *m, bool per_process)
{
        struct json_object *families = json_object_new_array();

        add_node_families(families, m);
        add_gpu_families(families, m);
        add_workload_families(families, m, per_process);
        return families;
}
