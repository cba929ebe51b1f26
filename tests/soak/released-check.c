/* SPDX-License-Identifier: MIT */
#include "released-check.h"

#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "test-support.h"

#define QUEUE_FINDER_TIMEOUT_MS 60000

DEFINE_TRIVIAL_CLEANUP_FUNC(json_object *, json_object_put);
DEFINE_TRIVIAL_CLEANUP_FUNC(json_tokener *, json_tokener_free);

/* queue_finder --json PID, parsed as it streams in (its output grows with
 * the node's queues, so no fixed buffer). */
static int queue_finder_json(const char *queue_finder, pid_t pid, json_object **ret)
{
        _cleanup_(json_tokener_freep) json_tokener *tok = json_tokener_new();
        _cleanup_(json_object_putp) json_object *root = NULL;
        uint64_t deadline = now_usec() + QUEUE_FINDER_TIMEOUT_MS * 1000ull;
        char pid_arg[16], buf[4096];
        struct child c;
        int status, r;

        if (!tok)
                return -ENOMEM;
        snprintf(pid_arg, sizeof(pid_arg), "%d", (int)pid);
        r = child_spawn((char *const[]){ (char *)queue_finder, (char *)"--json", pid_arg, NULL }, false,
                        &c);
        if (r < 0)
                return r;
        while (!root) {
                struct pollfd p = { .fd = c.stdout_fd, .events = POLLIN };
                ssize_t n;

                if (now_usec() >= deadline) {
                        r = -ETIMEDOUT;
                        break;
                }
                if (poll(&p, 1, 100) <= 0)
                        continue;
                n = read(c.stdout_fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = n < 0 ? NEG_ERRNO() : -EPROTO;
                        break;
                }
                root = json_tokener_parse_ex(tok, buf, (int)n);
                if (!root && json_tokener_get_error(tok) != json_tokener_continue) {
                        r = -EPROTO;
                        break;
                }
        }
        if (!root) {
                child_kill(&c);
                return r;
        }
        r = child_wait_exit(&c, QUEUE_FINDER_TIMEOUT_MS, &status);
        child_kill(&c);
        if (r < 0)
                return r;
        if (status != 0)
                return -EPROTO;
        *ret = TAKE_PTR(root);
        return 0;
}

/* Queues of pid that debugfs shows with an MQD, and those of them with an
 * active HQD (mapped on the GPU, so not suspended). */
static int count_mapped(json_object *root, pid_t pid, size_t *ret_mqds, size_t *ret_mapped)
{
        json_object *procs, *queues, *v;
        size_t mqds = 0, mapped = 0;

        if (!json_object_object_get_ex(root, "processes", &procs))
                return -EPROTO;
        for (size_t i = 0; i < json_object_array_length(procs); i++) {
                json_object *p = json_object_array_get_idx(procs, i);

                if (!json_object_object_get_ex(p, "pid", &v) || json_object_get_int(v) != pid ||
                    !json_object_object_get_ex(p, "queues", &queues))
                        continue;
                for (size_t j = 0; j < json_object_array_length(queues); j++) {
                        json_object *q = json_object_array_get_idx(queues, j), *hqds;
                        bool active = false;

                        if (!json_object_object_get_ex(q, "mqd", &v) || !json_object_is_type(v, json_type_object))
                                continue;
                        mqds++;
                        if (json_object_object_get_ex(q, "hqds", &hqds))
                                for (size_t k = 0; k < json_object_array_length(hqds); k++)
                                        if (json_object_object_get_ex(json_object_array_get_idx(hqds, k),
                                                                      "active", &v) &&
                                            json_object_get_boolean(v))
                                                active = true;
                        mapped += active;
                }
        }
        *ret_mqds = mqds;
        *ret_mapped = mapped;
        return 0;
}

int released_check(pid_t pid, const struct soak_queue *queues, size_t n_queues,
                   const char *queue_finder, int progress_timeout_ms,
                   struct released_report *report)
{
        _cleanup_(json_object_putp) json_object *qf = NULL;
        size_t mqds = 0;
        int r;

        *report = (struct released_report){ .tracer = tracer_of(pid) };
        r = queue_finder_json(queue_finder, pid, &qf);
        if (r < 0) {
                snprintf(report->problem, sizeof(report->problem),
                         "%s --json %d did not give a result: %s", queue_finder, (int)pid, strerror(-r));
                return r;
        }
        if ((r = count_mapped(qf, pid, &mqds, &report->n_mapped)) < 0)
                return r;
        if ((r = queue_progress_all_move(pid, queues, n_queues, progress_timeout_ms,
                                         &report->n_stalled, &report->first_stalled)) < 0)
                return r;

        if (report->tracer != 0)
                snprintf(report->problem, sizeof(report->problem),
                         "pid %d is still traced by pid %d after the detach", (int)pid, (int)report->tracer);
        else if (mqds != n_queues || report->n_mapped != n_queues)
                snprintf(report->problem, sizeof(report->problem),
                         "debugfs shows %zu of pid %d's %zu queues mapped (%zu MQDs): a queue is left "
                         "suspended",
                         report->n_mapped, (int)pid, n_queues, mqds);
        else if (report->n_stalled > 0)
                snprintf(report->problem, sizeof(report->problem),
                         "%zu of pid %d's queues (first: queue %u) made no progress within %d ms of the "
                         "detach",
                         report->n_stalled, (int)pid, report->first_stalled, progress_timeout_ms);
        return 0;
}
