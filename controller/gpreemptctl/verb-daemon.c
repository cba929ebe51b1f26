/* SPDX-License-Identifier: MIT */
/*
 * The verbs that ask gpreemptd over its Varlink socket: status, suspend,
 * resume, register, unregister, reload. The daemon does the work and keeps the
 * state; these only shape the request and explain the answer.
 */
#include <getopt.h>
#include <json.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "daemon-client.h"
#include "parse-pid.h"
#include "parse.h"
#include "ctl-report.h"
#include "status-view.h"
#include "varlink-client.h"
#include "verbs.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct varlink_client *, varlink_client_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_object *, json_object_put);

struct daemon_verb {
        const char *name;
        const char *method;
        const char *usage;
        const char *help;
        const char *done; /* what is true now, after "Process PID " */
};

static const struct daemon_verb pid_verbs[] = {
        { "suspend", "Suspend", "gpreemptctl suspend PID [--json]",
          "Ask gpreemptd to keep the offline process PID's GPU queues suspended on every\n"
          "GPU until 'gpreemptctl resume PID'. The daemon still gives it the configured\n"
          "offline bounds (MaxSuspendMs=, MinOfflineSharePercent=) so its own watchdogs\n"
          "do not fire. Needs root.\n",
          "is held suspended by gpreemptd until 'gpreemptctl resume'." },
        { "resume", "Resume", "gpreemptctl resume PID [--json]",
          "End a 'gpreemptctl suspend': the process is back under the policy, which\n"
          "resumes it unless online work on its GPU keeps it suspended. Needs root.\n",
          "is back under gpreemptd's policy." },
        { "unregister", "Unregister", "gpreemptctl unregister PID [--json]",
          "Drop a class given with 'gpreemptctl register': the configuration decides\n"
          "again what the process is. Needs root.\n",
          "is classified by the configuration again." },
        { "register", "Register", "gpreemptctl register --online|--offline PID [--json]",
          "Classify PID and the processes it starts by hand, whatever the configuration\n"
          "says, until it exits or 'gpreemptctl unregister PID'; PID need not use the GPU\n"
          "yet. An offline process is attached and suspended while online work runs on\n"
          "its GPUs; an online process is watched. Needs root.\n",
          "is registered as" },
};

static void print_help(const struct daemon_verb *v)
{
        printf("Usage: %s\n\n%s\n", v->usage, v->help);
        if (strcmp(v->name, "register") == 0)
                printf("  --online     PID's GPU work has priority\n"
                       "  --offline    PID's GPU work yields to online work\n");
        printf("  --json       print the result, or the error, as JSON\n"
               "  -h, --help   show this help\n");
}

static const struct daemon_verb *find_pid_verb(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(pid_verbs); i++)
                if (strcmp(pid_verbs[i].name, name) == 0)
                        return &pid_verbs[i];
        return NULL;
}

/* suspend, resume, register, unregister: one PID, one write call. */
int verb_daemon_pid(const struct ctl_globals *globals, int argc, char **argv)
{
        enum { OPT_JSON = 0x100, OPT_ONLINE, OPT_OFFLINE };
        static const struct option options[] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "online", no_argument, NULL, OPT_ONLINE },
                { "offline", no_argument, NULL, OPT_OFFLINE },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const struct daemon_verb *v = find_pid_verb(argv[0]);
        _cleanup_(varlink_client_freep) struct varlink_client *client = NULL;
        _cleanup_(json_object_putp) struct json_object *params = NULL, *result = NULL;
        bool json = false, is_register;
        const char *class = NULL;
        pid_t pid;
        int c, r;

        (void)globals;
        is_register = strcmp(v->name, "register") == 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case OPT_JSON:
                        json = true;
                        break;
                case OPT_ONLINE:
                case OPT_OFFLINE:
                        if (!is_register)
                                return ctl_report_usage(v->name, "--online and --offline belong to 'register'.");
                        if (class)
                                return ctl_report_usage(v->name, "give one of --online and --offline, once.");
                        class = c == OPT_ONLINE ? "online" : "offline";
                        break;
                case 'h':
                        print_help(v);
                        return CTL_EXIT_OK;
                default:
                        return ctl_report_bad_option(v->name, argc, argv, options);
                }
        }
        if (is_register && !class)
                return ctl_report_usage(v->name, "say which class: --online or --offline.");
        if (argc - optind != 1)
                return ctl_report_usage(v->name, "expected exactly one PID.");
        if (parse_pid(argv[optind], &pid) < 0)
                return ctl_report_usage(v->name, "'%s' is not a process id.", argv[optind]);

        r = daemon_connect(json, &client);
        if (r != 0)
                return r;
        params = json_object_new_object();
        json_object_object_add(params, "pid", json_object_new_int(pid));
        if (class)
                json_object_object_add(params, "class", json_object_new_string(class));
        r = daemon_call(client, v->method, params, DAEMON_WRITE, pid, json, NULL);
        if (r != 0)
                return r;
        if (json) {
                result = json_object_new_object();
                json_object_object_add(result, "pid", json_object_new_int(pid));
                json_object_object_add(result, "done", json_object_new_string(v->name));
                if (class)
                        json_object_object_add(result, "class", json_object_new_string(class));
                daemon_print_json(result);
        } else
                printf("Process %d %s%s%s%s\n", (int)pid, v->done, class ? " " : "", class ? class : "",
                       class ? "." : "");
        return CTL_EXIT_OK;
}

int verb_reload(const struct ctl_globals *globals, int argc, char **argv)
{
        enum { OPT_JSON = 0x100 };
        static const struct option options[] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        _cleanup_(varlink_client_freep) struct varlink_client *client = NULL;
        _cleanup_(json_object_putp) struct json_object *result = NULL;
        bool json = false;
        int c, r;

        (void)globals;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case OPT_JSON:
                        json = true;
                        break;
                case 'h':
                        printf("Usage: gpreemptctl reload [--json]\n"
                               "\n"
                               "Have gpreemptd read its configuration again and classify every process\n"
                               "afresh, as systemctl reload gpreemptd does. A configuration with errors is\n"
                               "refused, with them, and the one in effect stays. Needs root.\n"
                               "\n"
                               "  --json       print the result, or the error, as JSON\n"
                               "  -h, --help   show this help\n");
                        return CTL_EXIT_OK;
                default:
                        return ctl_report_bad_option("reload", argc, argv, options);
                }
        }
        if (optind != argc)
                return ctl_report_usage("reload", "'%s': reload takes no arguments.", argv[optind]);
        r = daemon_connect(json, &client);
        if (r != 0)
                return r;
        r = daemon_call(client, "Reload", NULL, DAEMON_WRITE, 0, json, NULL);
        if (r != 0)
                return r;
        if (json) {
                result = json_object_new_object();
                json_object_object_add(result, "done", json_object_new_string("reload"));
                daemon_print_json(result);
        } else
                printf("gpreemptd's configuration reloaded.\n");
        return CTL_EXIT_OK;
}

int verb_status(const struct ctl_globals *globals, int argc, char **argv)
{
        enum { OPT_JSON = 0x100 };
        static const struct option options[] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        _cleanup_(varlink_client_freep) struct varlink_client *client = NULL;
        _cleanup_(json_object_putp) struct json_object *status = NULL;
        bool json = false;
        int c, r;

        (void)globals;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case OPT_JSON:
                        json = true;
                        break;
                case 'h':
                        printf("Usage: gpreemptctl status [--json]\n"
                               "\n"
                               "Show what gpreemptd does: per GPU, whether online work is running, whether\n"
                               "the offline work is suspended, how often and how long it was; per process\n"
                               "using the GPU, its workload and class (* registered by hand), GPUs, queues,\n"
                               "suspend/resume counts and state. Needs root or the gpreempt group.\n"
                               "\n"
                               "  --json       print the daemon's Status reply as JSON\n"
                               "  -h, --help   show this help\n");
                        return CTL_EXIT_OK;
                default:
                        return ctl_report_bad_option("status", argc, argv, options);
                }
        }
        if (optind != argc)
                return ctl_report_usage("status", "'%s': status takes no arguments.", argv[optind]);
        r = daemon_connect(json, &client);
        if (r != 0)
                return r;
        r = daemon_call(client, "Status", NULL, DAEMON_READ, 0, json, &status);
        if (r != 0)
                return r;
        if (json)
                daemon_print_json(status);
        else
                status_view_print(stdout, status, NULL);
        return CTL_EXIT_OK;
}
