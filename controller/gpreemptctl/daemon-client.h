/* SPDX-License-Identifier: MIT */
/*
 * How the daemon verbs reach gpreemptd: its Varlink socket, and every way a
 * call can fail turned into one sentence that says what to do about it.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

struct json_object;
struct varlink_client;

/* How long a call may take: the daemon answers from its loop, which an
 * in-flight suspend ioctl can hold for milliseconds, never seconds. */
#define DAEMON_CALL_TIMEOUT_MS 5000
/*
 * Suspend and Resume answer once the daemon's preemption worker has made
 * the debugger call, which amdkfd may hold up to queue_preemption_timeout_ms
 * (9 s by default: kfd-hazards.md §1), after the calls sent before it.
 */
#define DAEMON_PREEMPTION_TIMEOUT_MS 30000

/* Whether a method reads the daemon's state (root or the gpreempt group) or
 * changes it (root only): it picks the advice a PermissionDenied gets. */
enum daemon_access {
        DAEMON_READ,
        DAEMON_WRITE,
};

/*
 * Why a connection or a call failed: the sentence daemon_connect() and
 * daemon_call() print, for a caller that reports it in its own way
 * (doctor's finding). Filled by daemon_connect_quiet() and
 * daemon_call_quiet() when they fail; start it zeroed, release it with
 * daemon_failure_done().
 */
struct daemon_failure {
        char *sentence;      /* printable (printable.h); NULL when out of memory */
        char *varlink_error; /* the error the daemon answered; NULL when none */
        bool not_running;    /* the socket does not exist: no daemon was started (or another RuntimeDirectory=) */
};

void daemon_failure_done(struct daemon_failure *f);

/*
 * Connects to gpreemptd. On failure prints why (on stderr; with json also
 * {"error": ...} on stdout) and returns the ctl_exit code; 0 on success.
 */
int daemon_connect(bool json, struct varlink_client **ret_client);
/* daemon_connect() that prints nothing: on failure, why is in *failure. */
int daemon_connect_quiet(struct varlink_client **ret_client, struct daemon_failure *failure);

/*
 * Calls io.gpreempt.<method>, or method itself when it is fully named
 * (org.varlink.service.GetInfo). On success returns 0 and the reply's parameters
 * in *ret_reply (NULL allowed: dropped). On a transport or daemon error prints
 * the explained error as daemon_connect() does and returns the ctl_exit code.
 * A connection closed unanswered is told apart by a second one: the daemon
 * gone, or refusing connections beyond what it serves.
 * pid is the process the call is about (0: none), for the sentence.
 */
int daemon_call(struct varlink_client *c, const char *method, struct json_object *params,
                enum daemon_access access, pid_t pid, bool json, struct json_object **ret_reply);
/* daemon_call() that prints nothing: on failure, why is in *failure. */
int daemon_call_quiet(struct varlink_client *c, const char *method, struct json_object *params,
                      enum daemon_access access, pid_t pid, struct json_object **ret_reply,
                      struct daemon_failure *failure);

/*
 * daemon_call() of a method that only reads (Status), without parameters, on
 * a connection kept between calls (top's): if the daemon closed it before
 * answering (it closes a connection idle for a minute, a restart closes them
 * all), *c is connected again and the call made once more.
 */
int daemon_call_read_again(struct varlink_client **c, const char *method, bool json,
                           struct json_object **ret_reply);

/* Prints "gpreemptctl: <message>" on stderr and, with json, {"error": message}
 * on stdout; returns exit_code. */
int daemon_fail(bool json, int exit_code, const char *varlink_error, const char *format, ...)
        __attribute__((format(printf, 4, 5)));

/* Prints o as pretty JSON on stdout. */
void daemon_print_json(struct json_object *o);
