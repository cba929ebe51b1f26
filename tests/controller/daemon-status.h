/* SPDX-License-Identifier: MIT */
/*
 * Reading the daemon's io.gpreempt.Status in tests: one process's or one
 * GPU's entry, its fields, and waiting until an entry says what a test
 * expects.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon-harness.h"

struct json_object;

/* The Status reply (put it with json_object_put); fails the test on an error. */
struct json_object *daemon_status(struct daemon_harness *h);
/* The entry of status's "processes" for pid, or NULL; owned by status. */
struct json_object *status_process(struct json_object *status, pid_t pid);
/* The entry of status's "gpus" for gpu_id, or NULL; owned by status. */
struct json_object *status_gpu(struct json_object *status, int64_t gpu_id);
/* A field of an entry: -1, false or NULL when the entry or the field is missing. */
int64_t status_int(struct json_object *entry, const char *key);
bool status_bool(struct json_object *entry, const char *key);
const char *status_string(struct json_object *entry, const char *key);

/* Whether a Status reply is what the caller waits for. */
typedef bool (*status_test_fn)(struct json_object *status, void *userdata);
/*
 * Calls Status every interval_ms (0: back to back) until test(reply) holds;
 * fails the test with the last reply and the daemon's log after timeout_ms,
 * naming what was awaited.
 */
void daemon_status_wait(struct daemon_harness *h, status_test_fn test, void *userdata, const char *awaited,
                        int timeout_ms, int interval_ms);

/* Whether a process's entry (NULL when it is not listed) is what the caller waits for. */
typedef bool (*status_process_test_fn)(struct json_object *process);
/* A status_process_test_fn: the process is listed and attached. */
bool status_process_attached(struct json_object *process);

/*
 * Polls Status until test(pid's entry) holds; fails the test with the last
 * reply and the daemon's log after timeout_ms, naming what was awaited.
 */
void daemon_status_wait_process(struct daemon_harness *h, pid_t pid, status_process_test_fn test,
                                const char *awaited, int timeout_ms);

/*
 * Calls method with {"pid": pid<extra>} (extra: more members, e.g.
 * ",\"online\":true", or NULL); fails the test unless it ends in want_error
 * (a Varlink error name), or in success when want_error is NULL.
 */
void daemon_call_pid(struct daemon_harness *h, const char *method, pid_t pid, const char *extra,
                     const char *want_error);
