/* SPDX-License-Identifier: MIT */
/*
 * gpreemptctl: the command-line front end of gpreempt. Verbs are looked up in
 * a table and accept any unambiguous prefix ("q" for "queues").
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ctl-report.h"
#include "standard-fds.h"
#include "verbs.h"

static const struct verb verbs[] = {
        { "hold", "PID... [--for DURATION] [--gpu ID]... [--grace-period N] [--wait-for-gpu] [--json]",
          "suspend processes' GPU queues until a duration ends or a signal comes", verb_hold },
        { "queues", "PID [--json]", "list a process's GPU queues", verb_queues },
        { "bench", "PID... [--cycles N] [--hold DURATION] [--gap DURATION] [--gpu ID]... [--json]",
          "measure what suspending and resuming processes' GPU queues costs here", verb_bench },
        /* Verbs that ask gpreemptd (verb-daemon.c, verb-top.c, verb-config.c). */
        { "status", "[--json]", "show what gpreemptd does: GPUs, processes, suspensions", verb_status },
        { "suspend", "PID [--json]", "have gpreemptd hold an offline process suspended", verb_daemon_pid },
        { "resume", "PID [--json]", "end a 'suspend': the process is back under the policy", verb_daemon_pid },
        { "register", "--online|--offline PID [--json]", "classify a process by hand", verb_daemon_pid },
        { "unregister", "PID [--json]", "let the configuration classify the process again", verb_daemon_pid },
        { "reload", "[--json]", "have gpreemptd read its configuration again", verb_reload },
        { "top", "[--interval DURATION] [--iterations N] [--json]", "gpreemptd's status, live", verb_top },
        { "verify-config", "[--config-dir DIR] [--pid PID] [--json]",
          "check gpreemptd's configuration; explain how a process is matched", verb_verify_config },
        { "doctor", "[--json]", "check everything this node needs for gpreempt, without gpreemptd", verb_doctor },
};

static void print_help(void)
{
        printf("Usage: gpreemptctl [-v] VERB [ARGS...]\n"
               "\n"
               "Suspend and inspect the GPU queues of processes on AMD GPU nodes.\n"
               "\n"
               "Verbs (any unambiguous prefix works):\n");
        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
                printf("  %-8s %s\n           %s\n", verbs[i].name, verbs[i].synopsis,
                       verbs[i].summary);
        printf("\n"
               "Options:\n"
               "  -v, --verbose   say what the library does (twice: every kernel call)\n"
               "  -h, --help      show this help\n"
               "  --version       show the version\n"
               "\n"
               "Run 'gpreemptctl VERB --help' for a verb's options; see gpreemptctl(1).\n");
}

static const struct verb *find_verb(const char *name, int *ret_matches)
{
        const struct verb *found = NULL;
        size_t len = strlen(name);
        int matches = 0;

        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
                if (strcmp(verbs[i].name, name) == 0) {
                        *ret_matches = 1;
                        return &verbs[i];
                }
                if (len > 0 && strncmp(verbs[i].name, name, len) == 0) {
                        found = &verbs[i];
                        matches++;
                }
        }
        *ret_matches = matches;
        return matches == 1 ? found : NULL;
}

/* Whether the verb's arguments include --json (before a "--"), or a prefix
 * of it that getopt_long() takes for it ("--js"): no verb has another option
 * starting with 'j'. */
static bool asks_for_json(int argc, char *const *argv)
{
        for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
                if (strlen(argv[i]) >= strlen("--j") && strncmp("--json", argv[i], strlen(argv[i])) == 0)
                        return true;
        return false;
}

/*
 * The output is the result (a script reads --json from it): one that could
 * not be written all (a full disk, a closed descriptor) fails the command,
 * as a result that was lost. What the verb did stands.
 */
static int finish_output(int exit_code)
{
        int r;

        errno = 0;
        r = fflush(stdout);
        if (r == 0 && !ferror(stdout))
                return exit_code;
        if (r != 0 && errno != 0)
                fprintf(stderr, "gpreemptctl: cannot write the output: %s.\n", strerror(errno));
        else
                fprintf(stderr, "gpreemptctl: cannot write the output: a write to standard output failed.\n");
        return exit_code == CTL_EXIT_OK ? CTL_EXIT_FAILURE : exit_code;
}

int main(int argc, char **argv)
{
        enum { OPT_VERSION = 0x100 };
        static const struct option options[] = {
                { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, OPT_VERSION },
                {},
        };
        struct ctl_globals globals = { 0 };
        const struct verb *verb;
        int c, matches, first;

        /* without /dev/null a closed one stays closed; the verb runs all the same */
        (void)standard_fds_fill();
        /* the messages name the wrong argument themselves (ctl_report_bad_option) */
        opterr = 0;
        /* '+': stop at the verb; its options are its own. */
        while ((c = getopt_long(argc, argv, "+vh", options, NULL)) >= 0) {
                switch (c) {
                case 'v':
                        globals.verbosity++;
                        break;
                case 'h':
                        print_help();
                        return finish_output(CTL_EXIT_OK);
                case OPT_VERSION:
                        printf("gpreemptctl %s\n", GPREEMPT_VERSION);
                        return finish_output(CTL_EXIT_OK);
                default:
                        return ctl_report_bad_option(NULL, argc, argv, options);
                }
        }
        if (optind >= argc)
                return ctl_report_usage(NULL, "no verb given.");

        verb = find_verb(argv[optind], &matches);
        if (!verb) {
                if (matches > 1)
                        return ctl_report_usage(NULL, "'%s' is ambiguous: it starts %d verbs.",
                                            argv[optind], matches);
                return ctl_report_usage(NULL, "'%s' is not a verb; see 'gpreemptctl --help'.",
                                    argv[optind]);
        }
        /* Each verb parses its own options from the start (optind 0 resets
         * getopt completely). */
        first = optind;
        ctl_report_usage_as_json(asks_for_json(argc - first, argv + first));
        argv[first] = (char *)verb->name;
        optind = 0;
        return finish_output(verb->run(&globals, argc - first, argv + first));
}
