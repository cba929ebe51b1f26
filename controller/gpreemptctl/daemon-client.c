/* SPDX-License-Identifier: MIT */
#include "daemon-client.h"

#include <errno.h>
#include <json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api-names.h"
#include "cleanup.h"
#include "paths.h"
#include "printable.h"
#include "varlink-client.h"
#include "varlink-protocol.h"
#include "verbs.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct varlink_client *, varlink_client_free);

void daemon_print_json(struct json_object *o)
{
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
}

void daemon_failure_done(struct daemon_failure *f)
{
        free(f->sentence);
        free(f->varlink_error);
        *f = (struct daemon_failure){ 0 };
}

/* Writes the sentence into *f, made printable; returns exit_code. */
__attribute__((format(printf, 4, 0))) static int vfail(struct daemon_failure *f, int exit_code,
                                                       const char *varlink_error, const char *format, va_list ap)
{
        _cleanup_free_ char *raw = NULL;

        daemon_failure_done(f);
        if (vasprintf(&raw, format, ap) < 0)
                return exit_code;
        /* a reason from the daemon can quote another user's process (a tracer's name) */
        f->sentence = printable_dup(raw);
        if (f->sentence && varlink_error) {
                f->varlink_error = strdup(varlink_error);
                /* out of memory: said as such rather than without the error's name */
                if (!f->varlink_error) {
                        free(f->sentence);
                        f->sentence = NULL;
                }
        }
        return exit_code;
}

__attribute__((format(printf, 4, 5))) static int fail(struct daemon_failure *f, int exit_code,
                                                      const char *varlink_error, const char *format, ...)
{
        va_list ap;
        int r;

        va_start(ap, format);
        r = vfail(f, exit_code, varlink_error, format, ap);
        va_end(ap);
        return r;
}

/* Prints the failure as the daemon verbs say it, releases it, and returns exit_code. */
static int report(bool json, int exit_code, struct daemon_failure *f)
{
        const char *message = f->sentence ? f->sentence : strerror(ENOMEM);

        fprintf(stderr, "gpreemptctl: %s\n", message);
        if (json) {
                struct json_object *o = json_object_new_object();

                json_object_object_add(o, "error", json_object_new_string(message));
                if (f->varlink_error)
                        json_object_object_add(o, "varlink_error", json_object_new_string(f->varlink_error));
                daemon_print_json(o);
                json_object_put(o);
        }
        daemon_failure_done(f);
        return exit_code;
}

int daemon_fail(bool json, int exit_code, const char *varlink_error, const char *format, ...)
{
        struct daemon_failure f = { 0 };
        va_list ap;

        va_start(ap, format);
        vfail(&f, exit_code, varlink_error, format, ap);
        va_end(ap);
        return report(json, exit_code, &f);
}

int daemon_connect_quiet(struct varlink_client **ret_client, struct daemon_failure *f)
{
        _cleanup_free_ char *path = NULL;
        int r;

        r = paths_api_socket(&path);
        if (r < 0)
                return fail(f, CTL_EXIT_FAILURE, NULL, "%s", strerror(-r));
        r = varlink_client_connect(path, DAEMON_CALL_TIMEOUT_MS, ret_client);
        switch (r) {
        case 0:
                return 0;
        case -ETIMEDOUT:
                return fail(f, CTL_EXIT_FAILURE, NULL,
                            "gpreemptd did not accept the connection within %d s, and its queue of "
                            "connections is full: its loop may be stuck; see journalctl -u gpreemptd",
                            DAEMON_CALL_TIMEOUT_MS / 1000);
        case -ENOENT:
        case -ECONNREFUSED:
                fail(f, CTL_EXIT_PRECONDITION, NULL,
                     "cannot connect to %s: is gpreemptd running? start it with "
                     "systemctl start gpreemptd (a daemon with another RuntimeDirectory= "
                     "is found through $GPREEMPT_RUNTIME_DIR)",
                     path);
                /* no socket at all; a stale one (ECONNREFUSED) is left by a daemon that died */
                f->not_running = r == -ENOENT;
                return CTL_EXIT_PRECONDITION;
        case -EACCES:
        case -EPERM:
                return fail(f, CTL_EXIT_PRECONDITION, NULL,
                            "cannot connect to %s: permission denied on the socket or its directory; "
                            "run as root or as a member of the gpreempt group",
                            path);
        default:
                return fail(f, CTL_EXIT_PRECONDITION, NULL, "cannot connect to %s: %s", path, strerror(-r));
        }
}

static const char *param_string(struct json_object *params, const char *key)
{
        struct json_object *v;

        if (params && json_object_object_get_ex(params, key, &v) && json_object_is_type(v, json_type_string))
                return json_object_get_string(v);
        return "";
}

static int64_t param_int64(struct json_object *params, const char *key)
{
        struct json_object *v;

        if (params && json_object_object_get_ex(params, key, &v) && json_object_is_type(v, json_type_int))
                return json_object_get_int64(v);
        return 0;
}

static int param_int(struct json_object *params, const char *key)
{
        int64_t v = param_int64(params, key);

        return v >= INT_MIN && v <= INT_MAX ? (int)v : 0;
}

/*
 * A hold refused while the process's GPU backs off after a fault: until
 * when (the daemon gives the time left; the clock time is this host's), and
 * what to do.
 */
static int explain_backing_off(const char *error, struct json_object *params, pid_t pid, struct daemon_failure *f)
{
        int64_t remaining_s = (param_int64(params, "remaining_usec") + 999999) / 1000000;
        time_t until = time(NULL) + (time_t)remaining_s;
        char at[16] = "?";
        struct tm tm;

        if (localtime_r(&until, &tm))
                strftime(at, sizeof(at), "%H:%M:%S", &tm);
        return fail(f, CTL_EXIT_PRECONDITION, error,
                    "process %d is not held: its GPU %lld backs off after a fault (%s) until %s, %lld s from now, "
                    "and gpreemptd suspends nothing there until then, holds included; run this again after "
                    "that. If it repeats, look for amdgpu errors with journalctl -k (gpreemptd(8), FAULTS)",
                    (int)pid, (long long)param_int64(params, "gpu_id"), param_string(params, "reason"), at,
                    (long long)remaining_s);
}

/*
 * The daemon refuses a connection over a budget, and says which
 * (varlink-server.h): the user's own share (root has none), the one users
 * who are neither root nor in the gpreempt group share, or every
 * connection it serves.
 */
static int explain_too_many_connections(const char *error, struct json_object *params, struct daemon_failure *f)
{
        const char *scope = param_string(params, "scope");
        int limit = param_int(params, "limit");

        if (strcmp(scope, "user") == 0)
                return fail(f, CTL_EXIT_PRECONDITION, error,
                            "gpreemptd refused the connection: this user holds as many connections to it as "
                            "one user may (%d); close the others (idle ones close after a minute) and try "
                            "again",
                            limit);
        if (strcmp(scope, "unprivileged") == 0)
                return fail(f, CTL_EXIT_PRECONDITION, error,
                            "gpreemptd refused the connection: users who are neither root nor in the "
                            "gpreempt group hold as many connections to it as they may together (%d; the "
                            "others are kept for root and the group); close some (idle ones close after a "
                            "minute) and try again",
                            limit);
        if (strcmp(scope, "all") == 0)
                return fail(f, CTL_EXIT_PRECONDITION, error,
                            "gpreemptd refused the connection: other users or processes hold all the "
                            "connections it serves at once (%d); close some (idle ones close after a "
                            "minute) and try again",
                            limit);
        /* a daemon that does not say which */
        return fail(f, CTL_EXIT_PRECONDITION, error,
                    "gpreemptd refused the connection: it holds as many connections as it serves; close "
                    "some (idle ones close after a minute) and try again");
}

/* The first of an InvalidConfiguration's errors. */
static const char *first_error(struct json_object *params)
{
        struct json_object *errors, *first;

        if (!json_object_object_get_ex(params, "errors", &errors) || !json_object_is_type(errors, json_type_array) ||
            !(first = json_object_array_get_idx(errors, 0)) || !json_object_is_type(first, json_type_string))
                return "it did not say why";
        return json_object_get_string(first);
}

/* The daemon's error reply as a sentence and an exit code. */
static int explain_error(const char *error, struct json_object *params, enum daemon_access access, pid_t pid,
                         struct daemon_failure *f)
{
        const char *name = strncmp(error, API_QUALIFIED(""), strlen(API_QUALIFIED(""))) == 0 ? error + strlen(API_QUALIFIED("")) : error;

        if (strcmp(name, "PermissionDenied") == 0)
                return access == DAEMON_WRITE
                        ? fail(f, CTL_EXIT_PRECONDITION, error,
                               "permission denied: only root can change what gpreemptd does; "
                               "run this with sudo")
                        : fail(f, CTL_EXIT_PRECONDITION, error,
                               "permission denied: reading gpreemptd's state needs root or membership "
                               "of the gpreempt group (usermod -aG gpreempt USER, then log in again)");
        if (strcmp(name, "TooManyConnections") == 0)
                return explain_too_many_connections(error, params, f);
        if (strcmp(name, "NoSuchProcess") == 0)
                return fail(f, CTL_EXIT_PRECONDITION, error,
                            "process %d is not known to gpreemptd: it does not exist or has not used the "
                            "GPU yet (it appears once it opens /dev/kfd)",
                            (int)pid);
        if (strcmp(name, "NotOffline") == 0)
                return fail(f, CTL_EXIT_PRECONDITION, error,
                            "process %d is not an offline workload, and gpreemptd suspends only offline "
                            "processes; classify it with 'gpreemptctl register --offline %d' first",
                            (int)pid, (int)pid);
        if (strcmp(name, "NotRegistered") == 0)
                return fail(f, CTL_EXIT_PRECONDITION, error,
                            "process %d has no registration of its own (one of a parent or of its Slurm step "
                            "may cover it: unregister that process), so nothing changed",
                            (int)pid);
        if (strcmp(name, "NotHeld") == 0)
                return fail(f, CTL_EXIT_PRECONDITION, error,
                            "process %d is not held (gpreemptctl suspend holds a process), so nothing changed: "
                            "its GPUs' online work decides when it runs",
                            (int)pid);
        if (strcmp(name, "NotAttached") == 0)
                return fail(f, CTL_EXIT_PRECONDITION, error,
                            "gpreemptd has no debug session on process %d: %s", (int)pid,
                            param_string(params, "reason"));
        if (strcmp(name, "GpuBackingOff") == 0)
                return explain_backing_off(error, params, pid, f);
        if (strcmp(name, "OperationFailed") == 0)
                return fail(f, CTL_EXIT_FAILURE, error, "gpreemptd could not do it for process %d: %s",
                            (int)pid, param_string(params, "reason"));
        if (strcmp(name, "InvalidConfiguration") == 0)
                return fail(f, CTL_EXIT_PRECONDITION, error,
                            "gpreemptd refused the configuration on disk and keeps the one in effect: %s "
                            "(gpreemptctl verify-config lists every problem)",
                            first_error(params));
        if (strcmp(error, "org.varlink.service.InvalidParameter") == 0)
                return fail(f, CTL_EXIT_USAGE, error, "gpreemptd rejected the parameter '%s'",
                            param_string(params, "parameter"));
        if (strcmp(error, "org.varlink.service.MethodNotFound") == 0 ||
            strcmp(error, "org.varlink.service.InterfaceNotFound") == 0)
                return fail(f, CTL_EXIT_FAILURE, error,
                            "gpreemptd does not know this call (%s): it is older than gpreemptctl; "
                            "restart it after upgrading",
                            error);
        return fail(f, CTL_EXIT_FAILURE, error, "gpreemptd answered with the error %s", error);
}

/*
 * The daemon closed the connection before answering. It does that when it
 * exits, and to a connection beyond what it serves: past a budget, a few
 * connections are answered TooManyConnections, and the ones past those
 * (VARLINK_SERVER_CONNECTIONS_REFUSED_MAX) are closed unanswered
 * (varlink-server.h). A second connection tells which, so that a refusal is
 * not reported as an exit.
 */
static int explain_hangup(const char *method, struct daemon_failure *f)
{
        _cleanup_(varlink_client_freep) struct varlink_client *probe = NULL;
        _cleanup_free_ char *path = NULL, *error = NULL;
        struct json_object *reply = NULL;
        int r;

        r = paths_api_socket(&path);
        if (r >= 0)
                r = varlink_client_connect(path, DAEMON_CALL_TIMEOUT_MS, &probe);
        if (r == -ENOENT || r == -ECONNREFUSED)
                return fail(f, CTL_EXIT_FAILURE, NULL,
                            "gpreemptd closed the connection during %s and no longer accepts connections: "
                            "it has exited; see journalctl -u gpreemptd",
                            method);
        if (r == -ETIMEDOUT)
                return fail(f, CTL_EXIT_FAILURE, NULL,
                            "gpreemptd closed the connection during %s, and did not accept another within "
                            "%d s: its loop may be stuck; see journalctl -u gpreemptd",
                            method, DAEMON_CALL_TIMEOUT_MS / 1000);
        if (r < 0)
                return fail(f, CTL_EXIT_FAILURE, NULL,
                            "gpreemptd closed the connection during %s, and connecting again failed: %s; "
                            "see journalctl -u gpreemptd",
                            method, strerror(-r));
        /* GetInfo: answered to any caller, so only a refusal keeps it from an answer */
        r = varlink_client_call(probe, VARLINK_SERVICE_INTERFACE ".GetInfo", NULL, DAEMON_CALL_TIMEOUT_MS, &reply,
                                &error);
        if (r >= 0 && error) {
                r = explain_error(error, reply, DAEMON_READ, 0, f);
                json_object_put(reply);
                return r;
        }
        json_object_put(reply);
        if (r >= 0)
                return fail(f, CTL_EXIT_FAILURE, NULL,
                            "gpreemptd closed the connection during %s unanswered, but answers a new one: "
                            "it had as many connections as it serves, or it restarted meanwhile; try again",
                            method);
        if (r == -ECONNRESET || r == -EPIPE)
                return fail(f, CTL_EXIT_PRECONDITION, NULL,
                            "gpreemptd is running but closes new connections unanswered: %s as many "
                            "connections as it serves; close some (idle ones close after a minute) and "
                            "try again",
                            geteuid() == 0 ? "other users and processes hold"
                                           : "this user, or all users together, hold");
        if (r == -ETIMEDOUT)
                return fail(f, CTL_EXIT_FAILURE, NULL,
                            "gpreemptd closed the connection during %s, and did not answer another within "
                            "%d s: its loop may be stuck; see journalctl -u gpreemptd",
                            method, DAEMON_CALL_TIMEOUT_MS / 1000);
        return fail(f, CTL_EXIT_FAILURE, NULL,
                    "gpreemptd closed the connection during %s, and a second call failed: %s; "
                    "see journalctl -u gpreemptd",
                    method, strerror(-r));
}

/* How long method may take to be answered. */
static int call_timeout_ms(const char *method)
{
        return strcmp(method, "Suspend") == 0 || strcmp(method, "Resume") == 0 ? DAEMON_PREEMPTION_TIMEOUT_MS
                                                                                : DAEMON_CALL_TIMEOUT_MS;
}

/* One call's outcome, explained as daemon_call() promises. */
static int finish_call(int r, const char *method, char *error, struct json_object *reply,
                       enum daemon_access access, pid_t pid, struct json_object **ret_reply,
                       struct daemon_failure *f)
{
        if (r == -ETIMEDOUT)
                return fail(f, CTL_EXIT_FAILURE, NULL,
                            "gpreemptd did not answer %s within %d s: its loop, or a debugger call in the "
                            "kernel, may be stuck; see journalctl -u gpreemptd and the kernel log",
                            method, call_timeout_ms(method) / 1000);
        if (r == -ECONNRESET || r == -EPIPE)
                return explain_hangup(method, f);
        /* the client cannot tell these apart: a reply that is not JSON, not UTF-8 (a string the daemon
         * passed on from another process or a file), or larger than a message may be */
        if (r == -EBADMSG)
                return fail(f, CTL_EXIT_FAILURE, NULL,
                            "the answer to %s is not a Varlink message (JSON text in UTF-8, within the "
                            "size limit): the socket may not be gpreemptd's, or gpreemptd passed on bytes "
                            "that are not UTF-8; see journalctl -u gpreemptd",
                            method);
        if (r < 0)
                return fail(f, CTL_EXIT_FAILURE, NULL, "calling gpreemptd's %s failed: %s", method, strerror(-r));
        if (error) {
                r = explain_error(error, reply, access, pid, f);
                json_object_put(reply);
                return r;
        }
        if (ret_reply)
                *ret_reply = reply;
        else
                json_object_put(reply);
        return 0;
}

static int call(struct varlink_client *c, const char *method, struct json_object *params,
                struct json_object **ret_reply, char **ret_error)
{
        _cleanup_free_ char *full = NULL;

        if (strchr(method, '.'))
                return varlink_client_call(c, method, params, DAEMON_CALL_TIMEOUT_MS, ret_reply, ret_error);
        if (asprintf(&full, API_QUALIFIED("%s"), method) < 0)
                return -ENOMEM;
        return varlink_client_call(c, full, params, call_timeout_ms(method), ret_reply, ret_error);
}

int daemon_call_quiet(struct varlink_client *c, const char *method, struct json_object *params,
                      enum daemon_access access, pid_t pid, struct json_object **ret_reply,
                      struct daemon_failure *f)
{
        _cleanup_free_ char *error = NULL;
        struct json_object *reply = NULL;
        int r = call(c, method, params, &reply, &error);

        return finish_call(r, method, error, reply, access, pid, ret_reply, f);
}

int daemon_connect(bool json, struct varlink_client **ret_client)
{
        struct daemon_failure f = { 0 };
        int r = daemon_connect_quiet(ret_client, &f);

        return r == 0 ? 0 : report(json, r, &f);
}

int daemon_call(struct varlink_client *c, const char *method, struct json_object *params,
                enum daemon_access access, pid_t pid, bool json, struct json_object **ret_reply)
{
        struct daemon_failure f = { 0 };
        int r = daemon_call_quiet(c, method, params, access, pid, ret_reply, &f);

        return r == 0 ? 0 : report(json, r, &f);
}

int daemon_call_read_again(struct varlink_client **c, const char *method, bool json,
                           struct json_object **ret_reply)
{
        _cleanup_free_ char *error = NULL;
        struct daemon_failure f = { 0 };
        struct json_object *reply = NULL;
        int r = call(*c, method, NULL, &reply, &error);

        if (r == -ECONNRESET || r == -EPIPE) {
                varlink_client_free(*c);
                *c = NULL;
                r = daemon_connect_quiet(c, &f);
                if (r != 0)
                        return report(json, r, &f);
                r = call(*c, method, NULL, &reply, &error);
        }
        r = finish_call(r, method, error, reply, DAEMON_READ, 0, ret_reply, &f);
        return r == 0 ? 0 : report(json, r, &f);
}
