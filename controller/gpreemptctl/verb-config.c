/* SPDX-License-Identifier: MIT */
/*
 * gpreemptctl verify-config: the daemon's own configuration parser and
 * workload matcher, run here without a daemon, so a configuration can be
 * checked before it is installed or reloaded.
 */
#include <errno.h>
#include <getopt.h>
#include <json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "daemon-client.h"
#include "parse-pid.h"
#include "parse.h"
#include "paths.h"
#include "printable.h"
#include "process-facts.h"
#include "ctl-report.h"
#include "verbs.h"
#include "workload-match.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct config *, config_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_object *, json_object_put);

static void print_help(void)
{
        printf("Usage: gpreemptctl verify-config [--config-dir DIR] [--pid PID] [--json]\n"
               "\n"
               "Check gpreemptd's configuration (gpreemptd.conf and workloads.d/*.conf) with\n"
               "the daemon's own parser, without a daemon: print every problem with its file\n"
               "and line, or the workloads in match order. With --pid, say for each workload\n"
               "whether it matches the process and why, and which one gpreemptd would pick.\n"
               "\n"
               "  --config-dir DIR  the configuration to check (default $GPREEMPT_CONFIG_DIR,\n"
               "                    else /etc/gpreempt)\n"
               "  --pid PID         explain how PID would be classified\n"
               "  --json            print the result as JSON\n"
               "  -h, --help        show this help\n");
}

/* Prints s made printable: a file's contents, a file name, a process's command line may hold any bytes. */
static void print_printable(FILE *out, const char *before, const char *s, const char *after)
{
        _cleanup_free_ char *p = printable_dup(s);

        fprintf(out, "%s%s%s", before, p ? p : "", after);
}

static void diag_print(const struct diag *d)
{
        for (size_t i = 0; i < d->n_messages; i++)
                print_printable(stderr, "", d->messages[i], "\n");
        if (d->n_dropped)
                fprintf(stderr, "... and %zu more problems\n", d->n_dropped);
}

static struct json_object *diag_json(const struct diag *d)
{
        struct json_object *a = json_object_new_array();

        for (size_t i = 0; i < d->n_messages; i++)
                json_object_array_add(a, json_object_new_string(d->messages[i]));
        return a;
}

/*
 * Workloads that make a process online on its environment alone, which its
 * owner writes: valid, but any user can claim them (gpreemptd.conf(5),
 * ENVIRONMENT).
 */
static struct json_object *warn_of_environment_alone(const struct config *c, bool json)
{
        struct json_object *warnings = json_object_new_array();

        for (size_t i = 0; i < c->n_workloads; i++) {
                const struct workload *w = &c->workloads[i];
                _cleanup_free_ char *text = NULL;

                if (!workload_online_by_environment_alone(w))
                        continue;
                if (asprintf(&text, "%s:%u: workload %s is Class=online on MatchEnvironment= alone: any user can "
                                    "set those variables and be online; add a key the user cannot choose "
                                    "(MatchUser=, MatchCgroup=, MatchSlurmPartition=, MatchKubernetesQoS=) or make "
                                    "it Class=offline",
                             w->file, w->line, w->name) < 0)
                        continue;
                if (!json)
                        print_printable(stderr, "gpreemptctl: warning: ", text, "\n");
                json_object_array_add(warnings, json_object_new_string(text));
        }
        return warnings;
}

/* The cluster job the process is part of, as gpreemptctl status shows it. */
static void print_cluster(const struct cluster_identity *id)
{
        if (id->kind == CLUSTER_KIND_NONE)
                return;
        printf("  %s %s", id->kind == CLUSTER_KIND_SLURM ? "in Slurm job" : "in Kubernetes pod", id->id);
        print_printable(stdout, id->name[0] ? " (" : "", id->name, id->name[0] ? ")\n" : "\n");
}

/* Judges every workload against the process; returns the one gpreemptd picks (the first match). */
static const struct workload *explain(const struct config *c, const struct process_facts *facts, bool json,
                                      struct json_object *result)
{
        struct json_object *matches = json_object_new_array();
        const struct workload *chosen = NULL;

        if (!json) {
                printf("\nProcess %d ", (int)facts->pid);
                if (facts->exe || facts->cmdline[0])
                        print_printable(stdout, "(", facts->exe ? facts->exe : facts->cmdline, "):\n");
                else
                        printf("(no executable, no command line: a kernel thread, or a process that has "
                               "exited):\n");
                print_cluster(&facts->cluster);
        }
        for (size_t i = 0; i < c->n_workloads; i++) {
                const struct workload *w = &c->workloads[i];
                _cleanup_free_ char *reason = NULL;
                bool matched = workload_match(w, facts, &reason);

                if (matched && !chosen)
                        chosen = w;
                if (!json) {
                        printf("  %-3s %s: ", matched ? "yes" : "no", w->name);
                        print_printable(stdout, "", reason ? reason : "", "\n");
                        continue;
                }
                json_object_array_add(matches, workload_match_to_json(w, matched, reason));
        }
        if (json) {
                json_object_object_add(result, "cluster", cluster_identity_to_json(&facts->cluster));
                json_object_object_add(result, "matches", matches);
                json_object_object_add(result, "workload", chosen ? json_object_new_string(chosen->name) : NULL);
                json_object_object_add(result, "class",
                                       chosen ? json_object_new_string(workload_class_to_string(chosen->class))
                                              : NULL);
        } else {
                json_object_put(matches);
                if (chosen)
                        printf("gpreemptd would classify it %s (workload %s: the first that matches).\n",
                               workload_class_to_string(chosen->class), chosen->name);
                else
                        printf("No workload matches: gpreemptd would leave it alone.\n");
        }
        return chosen;
}

int verb_verify_config(const struct ctl_globals *globals, int argc, char **argv)
{
        enum { OPT_JSON = 0x100, OPT_CONFIG_DIR, OPT_PID };
        static const struct option options[] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "config-dir", required_argument, NULL, OPT_CONFIG_DIR },
                { "pid", required_argument, NULL, OPT_PID },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        _cleanup_(config_freep) struct config *config = NULL;
        _cleanup_(json_object_putp) struct json_object *result = NULL;
        struct paths paths = { 0 };
        struct process_facts facts = { 0 };
        struct diag d = { 0 };
        bool json = false;
        pid_t pid = 0;
        int c, r, exit_code = CTL_EXIT_OK;

        (void)globals;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case OPT_JSON:
                        json = true;
                        break;
                case OPT_CONFIG_DIR:
                        /* "" would make the files /gpreemptd.conf and /workloads.d */
                        if (!*optarg) {
                                paths_done(&paths);
                                return ctl_report_usage("verify-config", "--config-dir needs a directory.");
                        }
                        free(paths.config_dir);
                        paths.config_dir = strdup(optarg);
                        break;
                case OPT_PID:
                        if (parse_pid(optarg, &pid) < 0) {
                                paths_done(&paths);
                                return ctl_report_usage("verify-config", "'%s' is not a process id.", optarg);
                        }
                        break;
                case 'h':
                        paths_done(&paths);
                        print_help();
                        return CTL_EXIT_OK;
                default:
                        paths_done(&paths);
                        return ctl_report_bad_option("verify-config", argc, argv, options);
                }
        }
        if (optind != argc) {
                paths_done(&paths);
                return ctl_report_usage("verify-config", "'%s': give the process with --pid.", argv[optind]);
        }
        r = paths_fill_defaults(&paths);
        if (r < 0) {
                paths_done(&paths);
                return daemon_fail(json, CTL_EXIT_FAILURE, NULL, "%s", strerror(-r));
        }
        if (pid > 0) {
                r = process_facts_read(paths.proc_root, paths.slurm_jobs_dir, pid, &facts);
                if (r < 0) {
                        exit_code = daemon_fail(json, CTL_EXIT_PRECONDITION, NULL, "cannot read process %d: %s",
                                                (int)pid, r == -ESRCH ? "no such process" : strerror(-r));
                        paths_done(&paths);
                        return exit_code;
                }
        }

        r = config_load(paths.config_dir, &config, &d);
        if (r == -EACCES && d.unreadable) {
                exit_code = daemon_fail(json, CTL_EXIT_PRECONDITION, NULL,
                                        "cannot check the configuration in %s: this user may not read %s, which "
                                        "gpreemptd reads as root; run verify-config as root",
                                        paths.config_dir, d.unreadable);
                diag_clear(&d);
                process_facts_done(&facts);
                paths_done(&paths);
                return exit_code;
        }
        result = json_object_new_object();
        json_object_object_add(result, "config_dir", json_object_new_string(paths.config_dir));
        json_object_object_add(result, "valid", json_object_new_boolean(r >= 0));
        json_object_object_add(result, "errors", diag_json(&d));
        if (r < 0) {
                if (!json)
                        diag_print(&d);
                print_printable(stderr, "gpreemptctl: the configuration in ", paths.config_dir, " is not valid");
                fprintf(stderr, " (%zu problem%s)%s\n", diag_count(&d), diag_count(&d) == 1 ? "" : "s",
                        d.n_messages ? "; see above" : "");
                exit_code = CTL_EXIT_PRECONDITION;
        } else {
                struct json_object *names = json_object_new_array();

                if (!json) {
                        print_printable(stdout, "The configuration in ", paths.config_dir, " is valid");
                        printf(": %zu workload%s in match order:\n", config->n_workloads,
                               config->n_workloads == 1 ? "" : "s");
                }
                for (size_t i = 0; i < config->n_workloads; i++) {
                        const struct workload *w = &config->workloads[i];

                        json_object_array_add(names, json_object_new_string(w->name));
                        if (!json) {
                                printf("  %-20s %-8s ", w->name, workload_class_to_string(w->class));
                                print_printable(stdout, "", w->file, "");
                                printf(":%u\n", w->line);
                        }
                }
                json_object_object_add(result, "workloads", names);
                json_object_object_add(result, "warnings", warn_of_environment_alone(config, json));
                if (pid > 0)
                        explain(config, &facts, json, result);
                /* valid as gpreemptd sees it, every setting a default; but a typo more likely than meant */
                if (access(paths.config_dir, F_OK) < 0 && errno == ENOENT)
                        print_printable(stderr, "gpreemptctl: note: ", paths.config_dir,
                                        " does not exist; gpreemptd would run with every default and no "
                                        "workload.\n");
        }
        if (json) {
                /* JSON is UTF-8; a command line or a configuration file need not be */
                printable_json(result, false);
                daemon_print_json(result);
        }
        diag_clear(&d);
        process_facts_done(&facts);
        paths_done(&paths);
        return exit_code;
}
