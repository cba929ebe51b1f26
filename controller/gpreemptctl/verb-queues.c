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
#include "parse.h"
#include "report.h"
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

struct queue_row {
        struct gp_queue queue;
        uint64_t read_index, write_index;
        int index_error; /* 0, or why the indices could not be read */
};

static void print_table(pid_t pid, enum gp_runtime_state state, const struct queue_row *rows,
                        size_t n)
{
        printf("Process %d, ROCm runtime %s, %zu queue%s\n", (int)pid, gp_runtime_state_to_string(state),
               n, n == 1 ? "" : "s");
        if (n == 0)
                return;
        printf("%5s %6s %-9s %9s %-14s %-14s %10s %-14s %10s %-18s\n", "QUEUE", "GPU", "TYPE",
               "RING-SIZE", "RING-BASE", "RPTR-ADDR", "READ", "WPTR-ADDR", "WRITE", "EXCEPTIONS");
        for (size_t i = 0; i < n; i++) {
                const struct gp_queue *q = &rows[i].queue;
                char read_index[24] = "-", write_index[24] = "-";

                if (rows[i].index_error == 0) {
                        snprintf(read_index, sizeof(read_index), "%" PRIu64, rows[i].read_index);
                        snprintf(write_index, sizeof(write_index), "%" PRIu64,
                                 rows[i].write_index);
                }
                printf("%5u %6u %-9s %9u 0x%012" PRIx64 " 0x%012" PRIx64 " %10s 0x%012" PRIx64
                       " %10s 0x%016" PRIx64 "\n",
                       q->queue_id, q->gpu_id, gp_queue_type_to_string(q->type), q->ring_size,
                       q->ring_base_address, q->read_pointer_address, read_index,
                       q->write_pointer_address, write_index, q->exception_status);
        }
}

static json_object *hex_u64(uint64_t value)
{
        char buf[24];

        snprintf(buf, sizeof(buf), "0x%" PRIx64, value);
        return json_object_new_string(buf);
}

static json_object *queue_json(const struct queue_row *row)
{
        const struct gp_queue *q = &row->queue;
        json_object *o = json_object_new_object();

        json_object_object_add(o, "queue_id", json_object_new_int64(q->queue_id));
        json_object_object_add(o, "gpu_id", json_object_new_int64(q->gpu_id));
        json_object_object_add(o, "type", json_object_new_string(gp_queue_type_to_string(q->type)));
        json_object_object_add(o, "ring_size", json_object_new_int64(q->ring_size));
        /* Addresses as hex strings: JSON readers lose integers above 2^53. */
        json_object_object_add(o, "ring_base_address", hex_u64(q->ring_base_address));
        json_object_object_add(o, "read_pointer_address", hex_u64(q->read_pointer_address));
        json_object_object_add(o, "write_pointer_address", hex_u64(q->write_pointer_address));
        json_object_object_add(o, "read_index",
                               row->index_error ? NULL : json_object_new_uint64(row->read_index));
        json_object_object_add(o, "write_index",
                               row->index_error ? NULL : json_object_new_uint64(row->write_index));
        json_object_object_add(o, "exception_status", hex_u64(q->exception_status));
        return o;
}

static void print_json(pid_t pid, enum gp_runtime_state state, const struct queue_row *rows,
                       size_t n, const char *error)
{
        json_object *root = json_object_new_object();
        json_object *queues = json_object_new_array();

        json_object_object_add(root, "pid", json_object_new_int64(pid));
        if (error) {
                json_object_object_add(root, "error", json_object_new_string(error));
                json_object_put(queues);
        } else {
                json_object_object_add(root, "runtime_state",
                                       json_object_new_string(gp_runtime_state_to_string(state)));
                for (size_t i = 0; i < n; i++)
                        json_object_array_add(queues, queue_json(&rows[i]));
                json_object_object_add(root, "queues", queues);
        }
        puts(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(root);
}

/* Prints the error (text, and JSON if asked) and returns the exit code. */
static int fail(bool json, int error, enum gp_op op, pid_t pid, int runtime_state, int exit_code)
{
        _cleanup_free_ char *sentence = report_error(error, op, pid, runtime_state);

        if (json)
                print_json(pid, GP_RUNTIME_DISABLED, NULL, 0, sentence ? sentence : "");
        return exit_code;
}

int verb_queues(const struct ctl_globals *globals, int argc, char **argv)
{
        enum { OPT_JSON = 0x100 };
        static const struct option options[] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        _cleanup_free_ struct queue_row *rows = NULL;
        struct gp_context *context = NULL;
        struct gp_target *target = NULL;
        const struct gp_queue *queues;
        enum gp_runtime_state state;
        size_t n_queues;
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
                        return report_usage("queues", "unknown option.");
                }
        }
        if (argc - optind != 1)
                return report_usage("queues", "expected exactly one PID.");
        r = parse_pid(argv[optind], &pid);
        if (r < 0)
                return report_usage("queues", "'%s' is not a process id.", argv[optind]);

        r = open_context(globals, &context);
        if (r < 0)
                return fail(json, r, GP_OP_OPEN, 0, -1, CTL_EXIT_PRECONDITION);

        r = gp_target_attach(context, pid, NULL, &target);
        if (r < 0) {
                gp_context_free(context);
                return fail(json, r, GP_OP_ATTACH, pid, -1, CTL_EXIT_PRECONDITION);
        }
        state = gp_target_runtime_state(target);

        r = gp_target_snapshot(target, &queues, &n_queues);
        if (r >= 0) {
                rows = calloc(n_queues ?: 1, sizeof(*rows));
                if (!rows)
                        r = -ENOMEM;
        }
        if (r < 0) {
                (void)gp_target_detach(target);
                gp_context_free(context);
                return fail(json, r, GP_OP_SNAPSHOT, pid, (int)state, CTL_EXIT_FAILURE);
        }
        for (size_t i = 0; i < n_queues; i++) {
                rows[i].queue = queues[i];
                rows[i].index_error = gp_target_read_queue_indices(
                        target, &queues[i], &rows[i].read_index, &rows[i].write_index);
        }

        r = gp_target_detach(target);
        gp_context_free(context);
        if (json)
                print_json(pid, state, rows, n_queues, NULL);
        else
                print_table(pid, state, rows, n_queues);
        if (r < 0) {
                free(report_error(r, GP_OP_DETACH, pid, (int)state));
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}
