/* SPDX-License-Identifier: MIT */
#include "daemon-status.h"

#include <json.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

struct json_object *daemon_status(struct daemon_harness *h)
{
        struct json_object *reply = NULL;
        char *error = NULL;
        int r = daemon_harness_call(h, "io.gpreempt.Status", NULL, &reply, &error);

        if (r < 0 || error)
                fail_msg("Status failed: %s (%d); daemon log:\n%s", error ? error : "no reply", r,
                         daemon_harness_log(h));
        return reply;
}

static struct json_object *entry_by(struct json_object *status, const char *section, const char *key, int64_t value)
{
        struct json_object *array = json_object_object_get(status, section);

        for (size_t i = 0; array && i < json_object_array_length(array); i++) {
                struct json_object *entry = json_object_array_get_idx(array, i);

                if (status_int(entry, key) == value)
                        return entry;
        }
        return NULL;
}

struct json_object *status_process(struct json_object *status, pid_t pid)
{
        return entry_by(status, "processes", "pid", pid);
}

struct json_object *status_gpu(struct json_object *status, int64_t gpu_id)
{
        return entry_by(status, "gpus", "gpu_id", gpu_id);
}

int64_t status_int(struct json_object *entry, const char *key)
{
        struct json_object *v;

        return entry && json_object_object_get_ex(entry, key, &v) ? json_object_get_int64(v) : -1;
}

bool status_bool(struct json_object *entry, const char *key)
{
        struct json_object *v;

        return entry && json_object_object_get_ex(entry, key, &v) && json_object_get_boolean(v);
}

bool status_process_attached(struct json_object *process)
{
        return process && status_bool(process, "attached");
}

const char *status_string(struct json_object *entry, const char *key)
{
        struct json_object *v;

        return entry && json_object_object_get_ex(entry, key, &v) && v ? json_object_get_string(v) : NULL;
}

void daemon_status_wait(struct daemon_harness *h, status_test_fn test, void *userdata, const char *awaited,
                        int timeout_ms, int interval_ms)
{
        struct timespec start, now;

        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
                struct json_object *status = daemon_status(h);
                bool done = test(status, userdata);
                long long waited_ms;

                clock_gettime(CLOCK_MONOTONIC, &now);
                waited_ms = (now.tv_sec - start.tv_sec) * 1000LL + (now.tv_nsec - start.tv_nsec) / 1000000;
                if (!done && waited_ms > timeout_ms)
                        fail_msg("waited %d ms in vain for: %s; last status %s\ndaemon log:\n%s", timeout_ms, awaited,
                                 json_object_to_json_string(status), daemon_harness_log(h));
                json_object_put(status);
                if (done)
                        return;
                if (interval_ms)
                        usleep(interval_ms * 1000);
        }
}

struct process_awaited {
        pid_t pid;
        status_process_test_fn test;
};

static bool process_is_awaited(struct json_object *status, void *userdata)
{
        const struct process_awaited *a = userdata;

        return a->test(status_process(status, a->pid));
}

void daemon_status_wait_process(struct daemon_harness *h, pid_t pid, status_process_test_fn test,
                                const char *awaited, int timeout_ms)
{
        struct process_awaited a = { .pid = pid, .test = test };
        char what[160];

        snprintf(what, sizeof(what), "process %d %s", (int)pid, awaited);
        daemon_status_wait(h, process_is_awaited, &a, what, timeout_ms, 20);
}

void daemon_call_pid(struct daemon_harness *h, const char *method, pid_t pid, const char *extra,
                     const char *want_error)
{
        char text[128];
        struct json_object *params, *reply = NULL;
        char *error = NULL;

        snprintf(text, sizeof(text), "{\"pid\":%d%s}", (int)pid, extra ? extra : "");
        params = json_tokener_parse(text);
        assert_int_equal(daemon_harness_call(h, method, params, &reply, &error), 0);
        if (want_error ? !error || strcmp(error, want_error) != 0 : error != NULL)
                fail_msg("%s(%s): got %s, want %s", method, text, error ? error : "success",
                         want_error ? want_error : "success");
        free(error);
        json_object_put(reply);
        json_object_put(params);
}
