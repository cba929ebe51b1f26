/* SPDX-License-Identifier: MIT */
/*
 * Runs the real gpreemptd binary for a test: its own configuration and
 * runtime directories, a fake NOTIFY_SOCKET to see READY=1, STATUS= and
 * WATCHDOG=1 as systemd would, and a Varlink client to talk to it.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "config-fixture.h"

struct json_object;

/* The daemon's standard descriptors. */
enum daemon_stdio {
        DAEMON_STDIO_LOGGED,      /* stderr into stderr_path, read back by daemon_harness_log() */
        DAEMON_STDIO_CLOSED,      /* 0, 1 and 2 closed, as `gpreemptd <&- >&- 2>&-` leaves them */
        DAEMON_STDIO_BROKEN_PIPE, /* stderr a pipe nobody reads, as `gpreemptd 2>&1 | head -c 100` once head is done */
};

struct daemon_harness {
        struct config_fixture config;
        char runtime_dir[128];
        char socket_path[160];
        char notify_path[160];
        int notify_fd;
        pid_t pid;
        int stderr_fd; /* the daemon's stderr, read back by daemon_harness_log() */
        int listen_fd; /* >= 0: handed to the daemon as systemd's socket activation does */
        bool no_realtime; /* started without CAP_SYS_NICE and with RLIMIT_RTPRIO 0 */
        enum daemon_stdio stdio;
        char stderr_path[160];
};

/* Prepares directories and the notify socket; write the configuration before starting. */
void daemon_harness_init(struct daemon_harness *h);
/* Starts binary; extra_env is NULL or "NAME=value" strings ending in NULL. */
void daemon_harness_start(struct daemon_harness *h, const char *binary, const char *const *extra_env);
/*
 * daemon_harness_init, then a gpreemptd.conf of "[Daemon]" with info logging
 * and 20 ms discovery followed by `settings`, workloads.d/50-test.conf of
 * `workloads`, then starts binary and waits for READY=1 (the test fails
 * with the daemon's stderr otherwise).
 */
void daemon_harness_start_configured(struct daemon_harness *h, const char *binary, const char *settings,
                                     const char *workloads);
/* Waits for a notify datagram containing text; returns false after timeout_ms. */
bool daemon_harness_wait_notify(struct daemon_harness *h, const char *text, int timeout_ms);
/* Calls a method as root; returns 0 and the reply, *ret_error set for an error reply. */
int daemon_harness_call(struct daemon_harness *h, const char *method, struct json_object *params,
                        struct json_object **ret_reply, char **ret_error);
/*
 * Sends a call as root on a connection of its own, without waiting for the
 * reply: returns the connection's fd (the caller's to close), or -errno.
 */
int daemon_harness_send(struct daemon_harness *h, const char *method, struct json_object *params);
/*
 * The reply to the call sent on fd, within timeout_ms: 0 with *ret_error
 * the error's name (NULL for a reply); -ETIMEDOUT, or -ECONNRESET if the
 * connection closed unanswered.
 */
int daemon_harness_read_reply(int fd, int timeout_ms, char **ret_error);
/* Signals the daemon and waits for it to exit; returns its wait status (0: exit 0, so no sanitizer report). */
int daemon_harness_stop(struct daemon_harness *h, int signal);
/* CLOCK_MONOTONIC in ms, for the tests' deadlines. */
long long daemon_harness_now_ms(void);
/* The daemon's stderr so far (static buffer). */
const char *daemon_harness_log(struct daemon_harness *h);
/* How many times text occurs in the daemon's stderr so far. */
size_t daemon_harness_log_count(struct daemon_harness *h, const char *text);
void daemon_harness_cleanup(struct daemon_harness *h);
