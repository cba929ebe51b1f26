/* SPDX-License-Identifier: MIT */
/*
 * doctor: whether gpreemptd runs and answers, through daemon-client.c as
 * the daemon verbs reach it: org.varlink.service.GetInfo (answered to
 * anyone), then io.gpreempt.Status, whose reply the process checks use.
 * Not running is a warning: the node can be ready for a daemon not yet
 * started. Why a connection or call failed is daemon-client.c's sentence,
 * the one every verb prints, taken as the check's finding
 * (daemon_connect_quiet(), daemon_call_quiet()).
 */
#include "doctor.h"

#include <errno.h>
#include <json.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "daemon-client.h"
#include "paths.h"
#include "varlink-client.h"
#include "varlink-protocol.h"
#include "verbs.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct varlink_client *, varlink_client_free);

static const char *string_of(struct json_object *o, const char *key)
{
        struct json_object *v;

        return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
                       ? json_object_get_string(v)
                       : NULL;
}

/* A failure of daemon-client.c: its exit code says how bad it is, its sentence what and why. */
static void add_failure(struct doctor *d, int exit_code, const struct daemon_failure *f, const char *fallback)
{
        struct doctor_check *c = doctor_add_sentence(d, "daemon",
                                                     exit_code == CTL_EXIT_PRECONDITION ? DOCTOR_WARNING : DOCTOR_FAILED,
                                                     f->sentence ? f->sentence : fallback);

        /* "cannot connect to ...: is gpreemptd running? start it with ..." says what to do in itself */
        if (c && !c->advice)
                doctor_advise(c, "see systemctl status gpreemptd and journalctl -u gpreemptd");
}

static void summarise(struct doctor *d, const char *version, struct json_object *status)
{
        struct json_object *processes = NULL, *v;
        size_t n = 0, attached = 0;
        int64_t uptime_s = 0;
        bool kfd = true;
        struct doctor_check *c;

        if (json_object_object_get_ex(status, "processes", &processes) && json_object_is_type(processes, json_type_array))
                n = json_object_array_length(processes);
        for (size_t i = 0, total = n; i < total; i++) {
                struct json_object *p = json_object_array_get_idx(processes, i);

                /* doctor's own KFD process, which the daemon may have seen appear */
                if (json_object_object_get_ex(p, "pid", &v) && json_object_get_int64(v) == getpid()) {
                        n--;
                        continue;
                }
                attached += json_object_object_get_ex(p, "attached", &v) && json_object_get_boolean(v);
        }
        if (json_object_object_get_ex(status, "uptime_usec", &v))
                uptime_s = json_object_get_int64(v) / 1000000;
        if (json_object_object_get_ex(status, "kfd_present", &v))
                kfd = json_object_get_boolean(v);
        if (!kfd) {
                c = doctor_add(d, "daemon", DOCTOR_FAILED,
                               "gpreemptd %s is running (up %lld s) but sees no KFD: it manages no process", version,
                               (long long)uptime_s);
                doctor_advise(c, d->kfd_opened ? "gpreemptctl opens /dev/kfd, the daemon does not: check that its "
                                                 "unit allows the device (DeviceAllow=/dev/kfd rw) and restart it"
                                               : "fix kfd-device first, then restart gpreemptd");
                return;
        }
        doctor_add(d, "daemon", DOCTOR_OK,
                   "gpreemptd %s is running and answers: up %lld s, %zu GPU process%s known, %zu with a debug "
                   "session",
                   version, (long long)uptime_s, n, n == 1 ? "" : "es", attached);
}

void doctor_check_daemon(struct doctor *d)
{
        _cleanup_(varlink_client_freep) struct varlink_client *client = NULL;
        _cleanup_(daemon_failure_done) struct daemon_failure failure = { 0 };
        struct json_object *info = NULL, *status = NULL;
        struct doctor_check *c;
        const char *version;
        int r;

        r = daemon_connect_quiet(&client, &failure);
        if (r != 0 && failure.not_running) {
                _cleanup_free_ char *path = NULL;

                /* the node may be ready for a daemon not started yet: say how to start it at every boot */
                if (paths_api_socket(&path) < 0) {
                        d->out_of_memory = true;
                        return;
                }
                c = doctor_add(d, "daemon", DOCTOR_WARNING, "gpreemptd is not running: %s does not exist", path);
                doctor_advise(c, "start it with systemctl enable --now gpreemptd.socket gpreemptd.service (a daemon "
                                 "with another RuntimeDirectory= is found through $GPREEMPT_RUNTIME_DIR)");
                return;
        }
        if (r != 0) {
                add_failure(d, r, &failure, "cannot connect to gpreemptd");
                return;
        }

        /* GetInfo is answered to anyone: whether the daemon's loop serves at all */
        r = daemon_call_quiet(client, VARLINK_SERVICE_INTERFACE ".GetInfo", NULL, DAEMON_READ, 0, &info, &failure);
        if (r != 0) {
                add_failure(d, r, &failure, "gpreemptd accepted the connection but GetInfo failed");
                return;
        }
        version = string_of(info, "version") ?: "(no version)";

        r = daemon_call_quiet(client, "Status", NULL, DAEMON_READ, 0, &status, &failure);
        if (r != 0) {
                c = doctor_add(d, "daemon", r == CTL_EXIT_PRECONDITION ? DOCTOR_WARNING : DOCTOR_FAILED,
                               "gpreemptd %s is running, but its Status could not be read: %s", version,
                               failure.sentence ? failure.sentence : "the call failed");
                doctor_advise(c, r == CTL_EXIT_PRECONDITION
                                         ? "run gpreemptctl doctor as root, or as a member of the gpreempt group"
                                         : "see journalctl -u gpreemptd");
                json_object_put(info);
                return;
        }
        summarise(d, version, status);
        d->daemon_status = status;
        json_object_put(info);
}
