/* SPDX-License-Identifier: MIT */
/* gpreemptctl queues PID: attach briefly and print the queue snapshot. */
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "parse-pid.h"
#include "parse.h"
#include "snapshot.h"
#include "ctl-report.h"
#include "verbs.h"

static void print_help(void)
{
        printf("Usage: gpreemptctl queues PID [--json]\n"
               "\n"
               "Attach to PID for a moment and list its GPU queues: queue id, GPU id, type,\n"
               "ring size and base, the read/write pointer addresses with their current\n"
               "indices, and the exception status. The process keeps running.\n"
               "\n"
               "  --json       print JSON instead of a table\n"
               "  -h, --help   show this help\n");
}

static void print_table(const struct qf_snapshot *snapshot)
{
        size_t n = snapshot->n;

        printf("Process %d, ROCm runtime %s, %zu queue%s\n", (int)snapshot->pid,
               gp_runtime_state_to_string(snapshot->runtime_state), n, n == 1 ? "" : "s");
        if (n == 0)
                return;
        printf("%5s %6s %-9s %9s %-14s %-14s %10s %-14s %10s %-18s\n", "QUEUE", "GPU", "TYPE",
               "RING-SIZE", "RING-BASE", "RPTR-ADDR", "READ", "WPTR-ADDR", "WRITE", "EXCEPTIONS");
        for (size_t i = 0; i < n; i++) {
                const struct qf_snapshot_queue *q = &snapshot->queues[i];
                char read_index[24] = "-", write_index[24] = "-";

                if (q->has_indices) {
                        snprintf(read_index, sizeof(read_index), "%" PRIu64, q->read_index);
                        snprintf(write_index, sizeof(write_index), "%" PRIu64, q->write_index);
                }
                printf("%5u %6u %-9s %9" PRIu64 " 0x%012" PRIx64 " 0x%012" PRIx64 " %10s 0x%012" PRIx64
                       " %10s 0x%016" PRIx64 "\n",
                       q->queue_id, q->gpu_id, gp_queue_type_to_string(q->queue_type), q->ring_size,
                       q->ring_base, q->rptr_addr, read_index, q->wptr_addr, write_index, q->exception_status);
        }
}

static json_object *hex_u64(uint64_t value)
{
        char buf[24];

        snprintf(buf, sizeof(buf), "0x%" PRIx64, value);
        return json_object_new_string(buf);
}

static json_object *queue_json(const struct qf_snapshot_queue *q)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "queue_id", json_object_new_int64(q->queue_id));
        json_object_object_add(o, "gpu_id", json_object_new_int64(q->gpu_id));
        json_object_object_add(o, "type", json_object_new_string(gp_queue_type_to_string(q->queue_type)));
        json_object_object_add(o, "ring_size", json_object_new_int64((int64_t)q->ring_size));
        /* Addresses as hex strings: JSON readers lose integers above 2^53. */
        json_object_object_add(o, "ring_base_address", hex_u64(q->ring_base));
        json_object_object_add(o, "read_pointer_address", hex_u64(q->rptr_addr));
        json_object_object_add(o, "write_pointer_address", hex_u64(q->wptr_addr));
        json_object_object_add(o, "read_index", q->has_indices ? json_object_new_uint64(q->read_index) : NULL);
        json_object_object_add(o, "write_index", q->has_indices ? json_object_new_uint64(q->write_index) : NULL);
        json_object_object_add(o, "exception_status", hex_u64(q->exception_status));
        return o;
}

/* The snapshot, or the error alone. */
static void print_json(pid_t pid, const struct qf_snapshot *snapshot, const char *error)
{
        json_object *root = json_object_new_object();

        json_object_object_add(root, "pid", json_object_new_int64(pid));
        if (error) {
                json_object_object_add(root, "error", json_object_new_string(error));
        } else {
                json_object *queues = json_object_new_array();

                json_object_object_add(root, "runtime_state",
                                       json_object_new_string(gp_runtime_state_to_string(snapshot->runtime_state)));
                for (size_t i = 0; i < snapshot->n; i++)
                        json_object_array_add(queues, queue_json(&snapshot->queues[i]));
                json_object_object_add(root, "queues", queues);
        }
        puts(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(root);
}

int verb_queues(const struct ctl_globals *globals, int argc, char **argv)
{
        enum { OPT_JSON = 0x100 };
        static const struct option options[] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct gp_context_opts context_opts = ctl_context_opts(globals);
        struct qf_snapshot_error error = { 0 };
        struct qf_snapshot snapshot = { 0 };
        bool json = false;
        pid_t pid;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case OPT_JSON:
                        json = true;
                        break;
                case 'h':
                        print_help();
                        return CTL_EXIT_OK;
                default:
                        return ctl_report_bad_option("queues", argc, argv, options);
                }
        }
        if (argc - optind != 1)
                return ctl_report_usage("queues", "expected exactly one PID.");
        r = parse_pid(argv[optind], &pid);
        if (r < 0)
                return ctl_report_usage("queues", "'%s' is not a process id.", argv[optind]);

        r = qf_snapshot_read(pid, &context_opts, &snapshot, &error);
        if (r < 0) {
                _cleanup_free_ char *sentence = ctl_report_sentence(error.reason);

                if (json)
                        print_json(pid, NULL, sentence ? sentence : "");
                /* Nothing read: the node, the permissions or the target stood in the way. */
                return error.op == GP_OP_OPEN || error.op == GP_OP_ATTACH ? CTL_EXIT_PRECONDITION : CTL_EXIT_FAILURE;
        }
        if (json)
                print_json(pid, &snapshot, NULL);
        else
                print_table(&snapshot);
        qf_snapshot_clear(&snapshot);
        return CTL_EXIT_OK;
}
