/* SPDX-License-Identifier: MIT */
/*
 * gpreemptctl top: gpreemptd's status redrawn every interval, to watch it
 * work. On a terminal it runs until q or Ctrl-C; otherwise (a pipe, a log)
 * it prints a few snapshots and ends, so scripts and tests can use it.
 */
#include <errno.h>
#include <getopt.h>
#include <json.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "daemon-client.h"
#include "metrics-view.h"
#include "parse.h"
#include "ctl-report.h"
#include "status-view.h"
#include "varlink-client.h"
#include "verbs.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct varlink_client *, varlink_client_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_object *, json_object_put);

/* Enough to see counters move without flooding a log. */
#define TOP_SNAPSHOTS_NOT_A_TTY 3

static void print_help(void)
{
        printf("Usage: gpreemptctl top [--interval DURATION] [--iterations N] [--json]\n"
               "\n"
               "Show gpreemptd's status (see 'gpreemptctl status --help') and redraw it every\n"
               "interval, with the suspends each GPU made since the last refresh, and the\n"
               "counters Prometheus scrapes (gpreempt-exporter): suspensions and time\n"
               "suspended per workload, the reaction and the preemption calls as percentiles\n"
               "of what happened since the last refresh. On a\n"
               "terminal press q or Ctrl-C to quit; when the output is not a terminal, print\n"
               "%d snapshots and end. Needs root or the gpreempt group.\n"
               "\n"
               "  --interval DURATION  time between refreshes (default 1s; 250ms, 2s, ...)\n"
               "  --iterations N       stop after N snapshots (0: until q or Ctrl-C)\n"
               "  --json               one Status reply per line, as JSON, with the Metrics\n"
               "                       reply's families in its member metrics\n"
               "  -h, --help           show this help\n",
               TOP_SNAPSHOTS_NOT_A_TTY);
}

/* The terminal as it was, restored on every way out. */
struct raw_terminal {
        bool active;
        struct termios saved;
};

/* Keys arrive one at a time without echo; Ctrl-C still raises SIGINT. */
static void raw_terminal_enter(struct raw_terminal *t)
{
        struct termios raw;

        if (tcgetattr(STDIN_FILENO, &t->saved) < 0)
                return;
        raw = t->saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 1;
        raw.c_cc[VTIME] = 0;
        t->active = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
}

static void raw_terminal_leave(struct raw_terminal *t)
{
        if (t->active)
                (void)tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
        t->active = false;
}

/*
 * Waits up to timeout_ms for a reason to quit: q on stdin (when it is a
 * terminal) or SIGINT/SIGTERM on sfd. Returns true to quit.
 */
static bool wait_for_quit(int sfd, bool keys, int timeout_ms)
{
        struct pollfd pfd[2] = {
                { .fd = sfd, .events = POLLIN },
                { .fd = keys ? STDIN_FILENO : -1, .events = POLLIN },
        };
        struct timespec start, now;

        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
                int64_t left;
                char key;

                clock_gettime(CLOCK_MONOTONIC, &now);
                left = timeout_ms - ((int64_t)(now.tv_sec - start.tv_sec) * 1000 +
                                     (now.tv_nsec - start.tv_nsec) / 1000000);
                if (left <= 0)
                        return false;
                if (poll(pfd, 2, (int)left) < 0) {
                        if (errno == EINTR)
                                continue;
                        return true;
                }
                if (pfd[0].revents)
                        return true;
                if (pfd[1].revents & (POLLHUP | POLLERR))
                        pfd[1].fd = -1;
                else if (pfd[1].revents & POLLIN) {
                        if (read(STDIN_FILENO, &key, 1) != 1)
                                pfd[1].fd = -1;
                        else if (key == 'q' || key == 'Q')
                                return true;
                }
        }
}

int verb_top(const struct ctl_globals *globals, int argc, char **argv)
{
        enum { OPT_JSON = 0x100, OPT_INTERVAL, OPT_ITERATIONS };
        static const struct option options[] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "interval", required_argument, NULL, OPT_INTERVAL },
                { "iterations", required_argument, NULL, OPT_ITERATIONS },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        _cleanup_(varlink_client_freep) struct varlink_client *client = NULL;
        _cleanup_(json_object_putp) struct json_object *previous = NULL, *previous_metrics = NULL;
        _cleanup_close_ int sfd = -1;
        struct raw_terminal terminal = { 0 };
        bool json = false, tty = isatty(STDOUT_FILENO), iterations_given = false;
        uint64_t interval_us = 1000000;
        uint32_t iterations = 0;
        sigset_t mask;
        int c, r = CTL_EXIT_OK;

        (void)globals;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case OPT_JSON:
                        json = true;
                        break;
                case OPT_INTERVAL:
                        if (parse_duration(optarg, &interval_us) < 0 || interval_us < 1000 ||
                            interval_us > 3600ULL * 1000000)
                                return ctl_report_usage("top", "'%s' is not an interval between 1ms and 1h.", optarg);
                        break;
                case OPT_ITERATIONS:
                        if (parse_u32(optarg, &iterations) < 0)
                                return ctl_report_usage("top", "'%s' is not a number of snapshots.", optarg);
                        iterations_given = true;
                        break;
                case 'h':
                        print_help();
                        return CTL_EXIT_OK;
                default:
                        return ctl_report_bad_option("top", argc, argv, options);
                }
        }
        if (optind != argc)
                return ctl_report_usage("top", "'%s': top takes no arguments.", argv[optind]);
        if (!iterations_given && (!tty || json))
                iterations = TOP_SNAPSHOTS_NOT_A_TTY;

        /* Signals as a file descriptor, so Ctrl-C ends the wait cleanly and
         * the terminal is restored. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        sfd = signalfd(-1, &mask, SFD_CLOEXEC);
        if (sfd < 0)
                return daemon_fail(json, CTL_EXIT_FAILURE, NULL, "signalfd: %s", strerror(errno));

        r = daemon_connect(json, &client);
        if (r != 0)
                return r;
        if (tty && !json && isatty(STDIN_FILENO))
                raw_terminal_enter(&terminal);
        for (uint32_t i = 0; iterations == 0 || i < iterations; i++) {
                struct json_object *status = NULL, *metrics = NULL, *families = NULL;
                struct daemon_failure metrics_failure = { 0 };

                /* the wait between snapshots may outlast the daemon's idle timeout, or a restart */
                r = daemon_call_read_again(&client, "Status", json, &status);
                if (r != 0)
                        break;
                /* a daemon older than Metrics still gets its status shown */
                if (daemon_call_quiet(client, "Metrics", NULL, DAEMON_READ, 0, &metrics, &metrics_failure) == 0 &&
                    json_object_object_get_ex(metrics, "families", &families))
                        json_object_object_add(status, "metrics", json_object_get(families));
                json_object_put(metrics);
                if (json) {
                        puts(json_object_to_json_string_ext(status, JSON_C_TO_STRING_PLAIN));
                } else {
                        time_t t = time(NULL);
                        char when[32];

                        strftime(when, sizeof(when), "%H:%M:%S", localtime(&t));
                        /* Home and clear, so each refresh replaces the last. */
                        if (tty)
                                fputs("\033[H\033[2J", stdout);
                        printf("%s  every %.3gs%s\n", when, (double)interval_us / 1e6,
                               terminal.active ? ", q to quit" : "");
                        status_view_print(stdout, status, previous);
                        if (families)
                                metrics_view_print(stdout, families, previous_metrics);
                        else
                                printf("\nmetrics: %s\n", metrics_failure.sentence ? metrics_failure.sentence : "-");
                        if (!tty)
                                putchar('\n');
                }
                fflush(stdout);
                daemon_failure_done(&metrics_failure);
                json_object_put(previous_metrics);
                previous_metrics = families ? json_object_get(families) : NULL;
                json_object_put(previous);
                previous = status;
                if ((iterations == 0 || i + 1 < iterations) &&
                    wait_for_quit(sfd, terminal.active, (int)(interval_us / 1000)))
                        break;
        }
        raw_terminal_leave(&terminal);
        return r;
}
