/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <string.h>

#include "app-report.h"
#include "cleanup.h"

static const char *arrival_name(enum app_arrival a)
{
        switch (a) {
        case APP_ARRIVAL_CLOSED_LOOP:
                return "closed-loop";
        case APP_ARRIVAL_FIXED:
                return "fixed";
        case APP_ARRIVAL_POISSON:
                return "poisson";
        }
        return "?";
}

static double per_second(uint64_t count, double seconds)
{
        return seconds > 0 ? (double)count / seconds : 0;
}

static char *hex(char *buf, size_t size, uint64_t v)
{
        snprintf(buf, size, "0x%" PRIx64, v);
        return buf;
}

static void add_u64(json_object *o, const char *key, uint64_t v)
{
        json_object_object_add(o, key, json_object_new_uint64(v));
}

static void add_double(json_object *o, const char *key, double v)
{
        json_object_object_add(o, key, json_object_new_double(v));
}

/* Where the queue's amd_queue_t lives: "gtt" (process_vm_readv cannot read it) or "paged". */
static const char *amd_queue_memory(const struct emu_queue_identity *identity)
{
        return identity->amd_queue_in_gtt ? "gtt" : "paged";
}

static void add_hex(json_object *o, const char *key, uint64_t v)
{
        char buf[32];

        json_object_object_add(o, key, json_object_new_string(hex(buf, sizeof(buf), v)));
}

static json_object *queue_json(const struct app_queue_report *q)
{
        json_object *o = json_object_new_object();

        add_u64(o, "queue_id", q->identity.queue_id);
        add_u64(o, "gpu_id", q->identity.gpu_id);
        add_u64(o, "priority", q->identity.priority);
        add_u64(o, "ring_packets", q->identity.ring_packets);
        add_u64(o, "hsa_queue_id", q->identity.hsa_queue_id);
        add_hex(o, "amd_queue", q->identity.amd_queue);
        json_object_object_add(o, "amd_queue_memory", json_object_new_string(amd_queue_memory(&q->identity)));
        add_hex(o, "ring_base_address", q->identity.ring);
        add_hex(o, "write_pointer_address", q->identity.write_pointer);
        add_hex(o, "read_pointer_address", q->identity.read_pointer);
        add_hex(o, "ctx_save_restore_address", q->identity.ctx_save);
        add_hex(o, "doorbell_offset", q->identity.doorbell_offset);
        add_u64(o, "read_dispatch_id", q->read_index);
        add_u64(o, "write_dispatch_id", q->write_index);
        add_u64(o, "requests", q->requests);
        add_u64(o, "kernels", q->kernels);
        json_object_object_add(o, "destroyed", json_object_new_boolean(q->destroyed));
        return o;
}

static json_object *latency_json(const struct latency_summary *l)
{
        json_object *o = json_object_new_object();

        add_u64(o, "samples", l->count);
        add_u64(o, "dropped", l->dropped);
        add_double(o, "mean", l->mean_ms);
        add_double(o, "p50", l->p50_ms);
        add_double(o, "p95", l->p95_ms);
        add_double(o, "p99", l->p99_ms);
        add_double(o, "max", l->max_ms);
        return o;
}

static int print_json(FILE *out, const struct app_run_info *info, const struct app_job_report *r)
{
        json_object *root = json_object_new_object(), *queues = json_object_new_array();
        const char *text;
        int ret = 0;

        if (!root || !queues) {
                json_object_put(root);
                json_object_put(queues);
                return -ENOMEM;
        }
        add_u64(root, "pid", (uint64_t)info->pid);
        json_object_object_add(root, "final", json_object_new_boolean(info->final));
        add_u64(root, "kfd_major", info->kfd_major);
        add_u64(root, "kfd_minor", info->kfd_minor);
        json_object_object_add(root, "runtime_enabled", json_object_new_boolean(info->runtime_enabled));
        json_object_object_add(root, "arrival", json_object_new_string(arrival_name(info->opts->arrival)));
        add_double(root, "rate", info->opts->rate);
        add_u64(root, "kernels_per_request", info->opts->kernels_per_request);
        add_double(root, "kernel_us", (double)info->opts->kernel_ns / 1000.0);
        add_double(root, "elapsed_s", r->elapsed_s);
        add_u64(root, "requests", r->requests);
        add_u64(root, "kernels", r->kernels);
        add_u64(root, "abandoned", r->abandoned);
        add_double(root, "requests_per_s", per_second(r->requests, r->elapsed_s));
        add_double(root, "kernels_per_s", per_second(r->kernels, r->elapsed_s));
        /* Model time (the GPU's timestamps); wall clock beside it. */
        json_object_object_add(root, "latency_ms", latency_json(&r->latency));
        json_object_object_add(root, "wall_latency_ms", latency_json(&r->wall_latency));
        for (unsigned i = 0; i < r->n_queues; i++)
                json_object_array_add(queues, queue_json(&r->queues[i]));
        json_object_object_add(root, "queues", queues);
        if (r->error)
                json_object_object_add(root, "error", json_object_new_string(strerror(-r->error)));

        text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
        if (fprintf(out, "%s\n", text) < 0 || fflush(out) != 0)
                ret = NEG_ERRNO();
        json_object_put(root);
        return ret;
}

static void print_latency_line(FILE *out, const char *label, const struct latency_summary *l)
{
        fprintf(out, "  %s p50 %.3f  p95 %.3f  p99 %.3f  max %.3f  mean %.3f  (%" PRIu64 " samples", label,
                l->p50_ms, l->p95_ms, l->p99_ms, l->max_ms, l->mean_ms, l->count);
        if (l->dropped)
                fprintf(out, ", %" PRIu64 " not kept", l->dropped);
        fprintf(out, ")\n");
}

static int print_text(FILE *out, const struct app_run_info *info, const struct app_job_report *r)
{
        char a[32], b[32];

        fprintf(out, "%s report for pid %d (%s", info->final ? "Final" : "Interim", (int)info->pid,
                arrival_name(info->opts->arrival));
        if (info->opts->arrival != APP_ARRIVAL_CLOSED_LOOP)
                fprintf(out, ", %.6g requests/s", info->opts->rate);
        fprintf(out, ", runtime debugging %s)\n", info->runtime_enabled ? "enabled" : "not enabled");
        fprintf(out, "  elapsed      %.3f s\n", r->elapsed_s);
        fprintf(out, "  requests     %" PRIu64 " done, %" PRIu64 " abandoned, %.3f requests/s\n", r->requests,
                r->abandoned, per_second(r->requests, r->elapsed_s));
        fprintf(out, "  kernels      %" PRIu64 ", %.3f kernels/s\n", r->kernels, per_second(r->kernels, r->elapsed_s));
        print_latency_line(out, "latency ms  ", &r->latency);
        print_latency_line(out, "  wall clock", &r->wall_latency);
        for (unsigned i = 0; i < r->n_queues; i++) {
                const struct app_queue_report *q = &r->queues[i];

                fprintf(out, "  queue %-4u gpu %-6u amd_queue %s (%s) ring %s rptr %" PRIu64 " wptr %" PRIu64
                             " requests %" PRIu64 "%s\n",
                        q->identity.queue_id, q->identity.gpu_id, hex(a, sizeof(a), q->identity.amd_queue),
                        amd_queue_memory(&q->identity), hex(b, sizeof(b), q->identity.ring), q->read_index, q->write_index, q->requests,
                        q->destroyed ? " (destroyed)" : "");
        }
        if (r->error)
                fprintf(out, "  error        %s\n", strerror(-r->error));
        return fflush(out) != 0 || ferror(out) ? NEG_ERRNO() : 0;
}

int app_report_print(FILE *out, enum app_report_format format, const struct app_run_info *info,
                     const struct app_job_report *report)
{
        switch (format) {
        case APP_REPORT_NONE:
                return 0;
        case APP_REPORT_TEXT:
                return print_text(out, info, report);
        case APP_REPORT_JSON:
                return print_json(out, info, report);
        }
        return -EINVAL;
}
