/* SPDX-License-Identifier: MIT */
/*
 * The cycle soak: many suspend/resume cycles of an offline kfdemu-app through
 * the public libgpreempt API, inside an emulated node:
 *
 *   kfdemu-run --gpus 2 -- cycle-soak [--cycles N] [--json] KFDEMU-APP QUEUE-FINDER
 *
 * Every cycle checks each queue's result and services the target's ptrace
 * stops and debug events; every --check-every cycles the app's read indices
 * must stand still while it is suspended and move again after the resume;
 * every --sample-every cycles the fds and RSS of this driver, the kfdemu
 * server and the app are sampled. At the end the driver detaches and checks
 * from outside that nothing is left suspended (released-check.h), then stops
 * the app, which must exit cleanly. Exit status: 0 everything held, 1 the
 * soak failed, 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "cycle-soak.h"
#include <gpreempt/gpreempt.h>
#include "test-support.h"

#define DEFAULT_CYCLES 100000u
#define DEFAULT_QUEUES 8u
/* The app: back-to-back 5 ms kernels of 64 workgroups, so the queues of a
 * GPU run side by side and every queue always has a kernel in flight. */
#define APP_KERNEL_US "5000"
#define APP_WORKGROUPS "64"
/* While suspended, no read index may move for this long (a kernel lasts 5). */
#define STOPPED_WATCH_MS 20
/* Bounds, not expectations: a busy shared host can be slow. */
#define PROGRESS_TIMEOUT_MS 10000
#define APP_EXIT_TIMEOUT_MS 30000

/* Set by SIGINT/SIGTERM: the soak stops cycling and cleans up. */
static volatile sig_atomic_t interrupted;

struct soak {
        const struct soak_options *opts;
        struct soak_result *res;
        struct child app;
        struct gp_context *context;
        struct gp_target *target;
        struct soak_queue queues[SOAK_MAX_QUEUES];
        /* Events that the app, which only runs kernels, should never cause. */
        unsigned unexpected_events;
        char first_event[128];
};

static int fail(struct soak *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct soak *s, const char *fmt, ...)
{
        va_list ap;

        if (!s->res->error[0]) {
                va_start(ap, fmt);
                vsnprintf(s->res->error, sizeof(s->res->error), fmt, ap);
                va_end(ap);
        }
        return -1;
}

/* A library call failed: say what, why and what to do (gp_explain). */
static int fail_call(struct soak *s, enum gp_op op, const char *what, int error)
{
        struct gp_explain_opts e = { .sz = sizeof(e), .error = error, .op = op, .pid = s->app.pid,
                                     .runtime_state = s->target ? (int)gp_target_runtime_state(s->target) : -1 };
        _cleanup_free_ char *sentence = NULL;

        if (s->context)
                gp_context_kfd_version(s->context, &e.kfd_major, &e.kfd_minor);
        if (gp_explain(&e, &sentence) < 0)
                return fail(s, "%s: %s", what, strerror(-error));
        return fail(s, "%s: %s", what, sentence);
}

static void on_log(enum gp_log_level level, const char *message, void *userdata)
{
        struct soak *s = userdata;

        if (level <= GP_LOG_ERR)
                s->res->lib_errors++;
        else
                s->res->lib_warnings++;
        fprintf(stderr, "cycle-soak: libgpreempt: %s\n", message);
}

static const char *event_name(enum gp_event_type type)
{
        switch (type) {
        case GP_EVENT_QUEUE_NEW:
                return "a new queue";
        case GP_EVENT_QUEUE_DELETED:
                return "a queue deleted";
        case GP_EVENT_RUNTIME:
                return "a runtime event";
        case GP_EVENT_STOPPED:
                return "a stop";
        case GP_EVENT_EXITED:
                return "the exit";
        case GP_EVENT_EXECED:
                return "an exec";
        case GP_EVENT_CONTINUED:
                return "a continuation";
        }
        return "an unknown event";
}

static void on_event(struct gp_target *target, const struct gp_event *event, void *userdata)
{
        struct soak *s = userdata;

        (void)target;
        if (s->unexpected_events++ > 0)
                return;
        if (event->type == GP_EVENT_QUEUE_NEW || event->type == GP_EVENT_QUEUE_DELETED)
                snprintf(s->first_event, sizeof(s->first_event), "%s (queue %u on gpu_id %u)",
                         event_name(event->type), event->queue_id, event->gpu_id);
        else
                snprintf(s->first_event, sizeof(s->first_event), "%s", event_name(event->type));
}

/* What the library asks of its caller between operations: collect ptrace
 * stops and handle pending debug events. */
static int service_target(struct soak *s)
{
        struct pollfd p = { .fd = gp_target_event_fd(s->target), .events = POLLIN };
        int r;

        if ((r = gp_target_service_ptrace(s->target)) < 0)
                return fail_call(s, GP_OP_PTRACE, "servicing the app's ptrace stops", r);
        if (poll(&p, 1, 0) > 0 && (r = gp_target_process_events(s->target)) < 0)
                return fail_call(s, GP_OP_EVENTS, "processing the app's debug events", r);
        if (s->unexpected_events > 0)
                return fail(s, "the app caused %u debug event(s) during the soak, first %s: it only runs "
                               "kernels, so its queues or its process changed under the soak",
                            s->unexpected_events, s->first_event);
        return 0;
}

/* Every queue, and nothing else, must be reported done. */
static int check_report(struct soak *s, enum gp_op gp_op, int r, const struct gp_queue_report *rep,
                        uint64_t cycle)
{
        const char *op = gp_op == GP_OP_SUSPEND ? "suspend" : "resume";
        size_t n = s->res->n_queues;

        if (r < 0)
                return fail_call(s, gp_op, op, r);
        if ((size_t)r != n || rep->n_done != n || rep->n_invalid || rep->n_error || rep->n_retried ||
            rep->n_queues != n)
                return fail(s, "cycle %" PRIu64 ": %s returned %d for %zu queues: %zu done, %zu invalid, "
                               "%zu failed, %zu retried",
                            cycle, op, r, n, rep->n_done, rep->n_invalid, rep->n_error, rep->n_retried);
        for (size_t i = 0; i < rep->n_queues; i++)
                if (rep->queues[i].result != GP_QUEUE_DONE)
                        return fail(s, "cycle %" PRIu64 ": %s of queue %u on gpu %u: result %d", cycle, op,
                                    rep->queues[i].queue_id, rep->queues[i].gpu_id, (int)rep->queues[i].result);
        return 0;
}

static int check_all_move(struct soak *s, const char *when, int timeout_ms)
{
        size_t n_stalled;
        uint32_t first;
        int r;

        r = queue_progress_all_move(s->app.pid, s->queues, s->res->n_queues, timeout_ms, &n_stalled, &first);
        if (r < 0)
                return fail(s, "cannot read the app's read indices %s: %s", when, strerror(-r));
        if (n_stalled > 0)
                return fail(s, "%zu of the app's queues (first: queue %u) made no progress within %d ms %s",
                            n_stalled, first, timeout_ms, when);
        return 0;
}

static int check_stopped(struct soak *s, uint64_t cycle)
{
        long moved;
        int r;

        r = queue_progress_any_moves(s->app.pid, s->queues, s->res->n_queues, STOPPED_WATCH_MS, &moved);
        if (r < 0)
                return fail(s, "cannot read the app's read indices while suspended: %s", strerror(-r));
        if (moved >= 0)
                return fail(s, "cycle %" PRIu64 ": queue %ld made progress while every queue was suspended",
                            cycle, moved);
        return 0;
}

static int sample_usage(struct soak *s, uint64_t cycle)
{
        for (int p = 0; p < SOAK_N_PROCESSES; p++) {
                int r = usage_series_sample(&s->res->usage[p], cycle);

                if (r < 0)
                        return fail(s, "cannot sample the fds and RSS of %s (pid %d): %s", s->res->usage[p].name,
                                    (int)s->res->usage[p].pid, strerror(-r));
        }
        return 0;
}

static void print_progress(const struct soak *s, uint64_t cycle, uint64_t t0)
{
        double elapsed = (double)(now_usec() - t0) / 1e6;

        fprintf(stderr, "cycle-soak: %" PRIu64 "/%" PRIu64 " cycles, %.0f s, %.0f cycles/s; fds/RSS KiB", cycle,
                s->opts->cycles, elapsed, elapsed > 0 ? (double)cycle / elapsed : 0);
        for (int p = 0; p < SOAK_N_PROCESSES; p++) {
                const struct usage_series *u = &s->res->usage[p];

                if (u->n_samples > 0)
                        fprintf(stderr, " %s %u/%" PRIu64, u->name, u->samples[u->n_samples - 1].fds,
                                u->samples[u->n_samples - 1].rss_kib);
        }
        fputc('\n', stderr);
}

/* The parent of pid from /proc/<pid>/stat (the comm may hold spaces and
 * parentheses: the fields follow the last ')'), with its comm. */
static pid_t parent_of(pid_t pid, char *ret_comm, size_t comm_size)
{
        _cleanup_fclose_ FILE *f = NULL;
        char path[64], line[512], *open_paren, *close_paren;
        int ppid;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = fopen(path, "re");
        if (!f || !fgets(line, sizeof(line), f))
                return -1;
        open_paren = strchr(line, '(');
        close_paren = strrchr(line, ')');
        if (!open_paren || !close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1)
                return -1;
        snprintf(ret_comm, comm_size, "%.*s", (int)(close_paren - open_paren - 1), open_paren + 1);
        return (pid_t)ppid;
}

/* kfdemu-run serves the node itself: the nearest ancestor of that name. */
static int server_pid(struct soak *s, pid_t *ret)
{
        char comm[64];

        for (pid_t pid = getpid(), parent; pid > 1; pid = parent) {
                parent = parent_of(pid, comm, sizeof(comm));
                if (parent > 0 && parent_of(parent, comm, sizeof(comm)) >= 0 && strcmp(comm, "kfdemu-run") == 0) {
                        *ret = parent;
                        return 0;
                }
        }
        return fail(s, "run cycle-soak inside an emulated node (kfdemu-run --gpus 2 -- cycle-soak ...): no "
                       "kfdemu-run among its ancestors");
}

static int start_app(struct soak *s)
{
        char queues_arg[16];
        const char *args[] = { "--queues", queues_arg, "--continuous", "--kernel-us", APP_KERNEL_US,
                               "--workgroups", APP_WORKGROUPS, NULL };
        int r;

        snprintf(queues_arg, sizeof(queues_arg), "%u", s->opts->queues);
        r = app_spawn(s->opts->app, args, &s->app);
        if (r < 0) {
                s->app.pid = 0;
                return fail(s, "%s did not start and print READY within 10 s: %s", s->opts->app, strerror(-r));
        }
        return 0;
}

static int attach(struct soak *s)
{
        struct gp_context_opts copts = { .sz = sizeof(copts), .log_fn = on_log, .log_userdata = s,
                                         .log_level = GP_LOG_WARNING };
        struct gp_attach_opts aopts = { .sz = sizeof(aopts), .event_fn = on_event, .event_userdata = s };
        const struct gp_queue *queues;
        unsigned n_gpus = 0;
        uint32_t gpus[SOAK_MAX_QUEUES];
        size_t n;
        int r;

        if ((r = gp_context_new(&copts, &s->context)) < 0)
                return fail_call(s, GP_OP_OPEN, "opening /dev/kfd", r);
        if ((r = gp_target_attach(s->context, s->app.pid, &aopts, &s->target)) < 0)
                return fail_call(s, GP_OP_ATTACH, "attaching to the app", r);
        if ((r = gp_target_snapshot(s->target, &queues, &n)) < 0)
                return fail_call(s, GP_OP_SNAPSHOT, "taking the app's queue snapshot", r);
        if (n != s->opts->queues)
                return fail(s, "the app has %zu queues, not the %u it was asked for", n, s->opts->queues);
        for (size_t i = 0; i < n; i++) {
                unsigned g = 0;

                s->queues[i] = (struct soak_queue){ .queue_id = queues[i].queue_id, .gpu_id = queues[i].gpu_id,
                                                    .read_pointer_address = queues[i].read_pointer_address };
                while (g < n_gpus && gpus[g] != queues[i].gpu_id)
                        g++;
                if (g == n_gpus)
                        gpus[n_gpus++] = queues[i].gpu_id;
        }
        s->res->n_queues = n;
        s->res->n_gpus = n_gpus;
        if (n_gpus < 2)
                return fail(s, "the app's queues are on %u GPU; run the soak on two (kfdemu-run --gpus 2)", n_gpus);
        return 0;
}

/* One suspend/resume cycle; a checked one also watches the read indices. */
static int cycle_once(struct soak *s, uint64_t cycle, bool checked)
{
        struct gp_queue_report rep;
        int r;

        if (service_target(s) < 0)
                return -1;
        r = gp_target_suspend(s->target, NULL, &rep);
        if (check_report(s, GP_OP_SUSPEND, r, &rep, cycle) < 0)
                return -1;
        if (checked && check_stopped(s, cycle) < 0)
                return -1;
        r = gp_target_resume(s->target, NULL, &rep);
        if (check_report(s, GP_OP_RESUME, r, &rep, cycle) < 0)
                return -1;
        if (checked) {
                if (check_all_move(s, "after a resume", PROGRESS_TIMEOUT_MS) < 0)
                        return -1;
                s->res->progress_checks++;
        }
        return 0;
}

static int run_cycles(struct soak *s)
{
        const struct soak_options *o = s->opts;
        uint64_t warmup_at = o->cycles / 10, t0 = now_usec(), requests_at_warmup = 0, requests_at_end;
        int r;

        for (uint64_t i = 0; i < o->cycles; i++) {
                if (interrupted)
                        return fail(s, "interrupted after %" PRIu64 " cycles", i);
                if (i == warmup_at && (r = queue_progress_total(s->app.pid, s->queues, s->res->n_queues,
                                                                &requests_at_warmup)) < 0)
                        return fail(s, "cannot read the app's read indices: %s", strerror(-r));
                if (i % o->sample_every == 0 && sample_usage(s, i) < 0)
                        return -1;
                if (cycle_once(s, i, i % o->check_every == 0) < 0)
                        return -1;
                s->res->cycles_done = i + 1;
                s->res->duration_s = (double)(now_usec() - t0) / 1e6;
                if ((i + 1) % o->progress_every == 0)
                        print_progress(s, i + 1, t0);
        }
        if (sample_usage(s, o->cycles) < 0 || service_target(s) < 0)
                return -1;
        if ((r = queue_progress_total(s->app.pid, s->queues, s->res->n_queues, &requests_at_end)) < 0)
                return fail(s, "cannot read the app's read indices: %s", strerror(-r));
        s->res->app_requests_after_warmup = requests_at_end - requests_at_warmup;
        return 0;
}

/* Detach, then check from outside and stop the app: with a queue left
 * suspended its exit would block in the queue's destruction. */
static int release(struct soak *s)
{
        int r, status;

        r = gp_target_detach(TAKE_PTR(s->target));
        if (r < 0)
                return fail_call(s, GP_OP_DETACH, "detaching from the app", r);
        r = released_check(s->app.pid, s->queues, s->res->n_queues, s->opts->queue_finder, PROGRESS_TIMEOUT_MS,
                           &s->res->released);
        s->res->released_checked = r >= 0;
        if (r < 0 || s->res->released.problem[0])
                return fail(s, "after the detach: %s", s->res->released.problem[0] ? s->res->released.problem
                                                                                   : strerror(-r));
        kill(s->app.pid, SIGTERM);
        r = child_wait_exit(&s->app, APP_EXIT_TIMEOUT_MS, &status);
        if (r < 0)
                return fail(s, "the app did not exit within %d s of SIGTERM (a queue left suspended blocks "
                               "its destruction): %s",
                            APP_EXIT_TIMEOUT_MS / 1000, strerror(-r));
        s->res->app_exit_status = status;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return fail(s, "the app ended with wait status 0x%x after SIGTERM instead of exiting 0", status);
        return 0;
}

/* Also after a failure, for the figures; a soak that failed before its
 * first sample has none to judge. */
static void judge_usage(struct soak *s)
{
        for (int p = 0; p < SOAK_N_PROCESSES; p++) {
                if (s->res->usage[p].n_samples == 0)
                        continue;
                uint64_t kept = p == SOAK_APP ? s->res->app_requests_after_warmup * USAGE_KEPT_BYTES_PER_REQUEST
                                              : 0;

                usage_series_verdict(&s->res->usage[p], s->opts->cycles / 10, kept, &s->res->verdicts[p]);
        }
}

static int init_usage(struct soak *s, pid_t server)
{
        static const char *const names[SOAK_N_PROCESSES] = {
                [SOAK_DRIVER] = "driver", [SOAK_SERVER] = "kfdemu server", [SOAK_APP] = "app"
        };
        pid_t pids[SOAK_N_PROCESSES] = { [SOAK_DRIVER] = getpid(), [SOAK_SERVER] = server,
                                         [SOAK_APP] = s->app.pid };
        size_t capacity = s->opts->cycles / s->opts->sample_every + 2;

        for (int p = 0; p < SOAK_N_PROCESSES; p++)
                if (usage_series_init(&s->res->usage[p], names[p], pids[p], capacity) < 0)
                        return fail(s, "out of memory for %zu samples", capacity);
        return 0;
}

static int soak_run(struct soak *s)
{
        pid_t server = 0;

        if (server_pid(s, &server) < 0 || start_app(s) < 0 || init_usage(s, server) < 0 || attach(s) < 0)
                return -1;
        /* The app must be running on every queue before the first cycle. */
        if (check_all_move(s, "before the first cycle", PROGRESS_TIMEOUT_MS) < 0 || run_cycles(s) < 0 ||
            release(s) < 0)
                return -1;
        if (s->res->lib_errors > 0)
                return fail(s, "libgpreempt logged %u error(s) (above)", s->res->lib_errors);
        return 0;
}

static void soak_cleanup(struct soak *s)
{
        /* Detaching resumes whatever is still suspended before the app goes. */
        if (s->target)
                gp_target_detach(TAKE_PTR(s->target));
        s->context = gp_context_free(s->context);
        if (s->app.pid > 0 || s->app.stdout_fd >= 0)
                child_kill(&s->app);
}

static void on_interrupt(int sig)
{
        (void)sig;
        interrupted = 1;
}

static int parse_count(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *ret)
{
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(text, &end, 10);
        if (errno || end == text || *end || text[0] == '-' || v < min || v > max) {
                fprintf(stderr, "cycle-soak: --%s must be a whole number from %" PRIu64 " to %" PRIu64
                                ", not \"%s\"\n",
                        name, min, max, text);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

static void usage(FILE *f)
{
        fprintf(f, "Usage: kfdemu-run --gpus 2 -- cycle-soak [OPTIONS] KFDEMU-APP QUEUE-FINDER\n"
                   "Suspends and resumes an offline kfdemu-app through libgpreempt, checking every\n"
                   "result, its progress, and the fds and RSS of the processes involved.\n\n"
                   "  --cycles N          suspend/resume cycles (default %u)\n"
                   "  --queues N          the app's queues, spread over the GPUs (default %u, at most %u)\n"
                   "  --check-every N     cycles between progress checks (default cycles/10, at most 1000)\n"
                   "  --sample-every N    cycles between fd/RSS samples (default cycles/200)\n"
                   "  --progress-every N  cycles between progress lines on stderr (default cycles/20)\n"
                   "  --json              print the summary as JSON\n"
                   "  -h, --help          show this help\n"
                   "scripts/soak runs it; docs/soak.md explains the checks.\n",
                DEFAULT_CYCLES, DEFAULT_QUEUES, SOAK_MAX_QUEUES);
}

/* An interval of cycles/parts, at least 1 and at most max. */
static uint64_t cycles_share(uint64_t cycles, uint64_t parts, uint64_t max)
{
        uint64_t v = cycles / parts;

        return v < 1 ? 1 : v > max ? max : v;
}

/* 0 to run, 1 when done (help), -EINVAL on bad usage. */
static int parse_options(int argc, char **argv, struct soak_options *o)
{
        enum { OPT_CYCLES = 0x100, OPT_QUEUES, OPT_CHECK, OPT_SAMPLE, OPT_PROGRESS, OPT_JSON };
        static const struct option options[] = {
                { "cycles", required_argument, NULL, OPT_CYCLES },
                { "queues", required_argument, NULL, OPT_QUEUES },
                { "check-every", required_argument, NULL, OPT_CHECK },
                { "sample-every", required_argument, NULL, OPT_SAMPLE },
                { "progress-every", required_argument, NULL, OPT_PROGRESS },
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        uint64_t queues = DEFAULT_QUEUES;
        int c, r = 0;

        *o = (struct soak_options){ .cycles = DEFAULT_CYCLES };
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0 && r >= 0) {
                switch (c) {
                case OPT_CYCLES:
                        r = parse_count("cycles", optarg, 1, UINT32_MAX, &o->cycles);
                        break;
                case OPT_QUEUES:
                        r = parse_count("queues", optarg, 2, SOAK_MAX_QUEUES, &queues);
                        break;
                case OPT_CHECK:
                        r = parse_count("check-every", optarg, 1, UINT32_MAX, &o->check_every);
                        break;
                case OPT_SAMPLE:
                        r = parse_count("sample-every", optarg, 1, UINT32_MAX, &o->sample_every);
                        break;
                case OPT_PROGRESS:
                        r = parse_count("progress-every", optarg, 1, UINT32_MAX, &o->progress_every);
                        break;
                case OPT_JSON:
                        o->json = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 1;
                default:
                        fprintf(stderr, "cycle-soak: see --help\n");
                        return -EINVAL;
                }
        }
        if (r < 0)
                return r;
        if (argc - optind != 2) {
                fprintf(stderr, "cycle-soak: expected the paths of kfdemu-app and queue_finder, got %d "
                                "argument(s); see --help\n",
                        argc - optind);
                return -EINVAL;
        }
        o->app = argv[optind];
        o->queue_finder = argv[optind + 1];
        for (int i = 0; i < 2; i++)
                if (access(argv[optind + i], X_OK) < 0) {
                        fprintf(stderr, "cycle-soak: %s is not an executable (%s): build the tree first "
                                        "(meson compile -C build)\n",
                                argv[optind + i], strerror(errno));
                        return -EINVAL;
                }
        o->queues = (unsigned)queues;
        if (!o->check_every)
                o->check_every = cycles_share(o->cycles, 10, 1000);
        if (!o->sample_every)
                o->sample_every = cycles_share(o->cycles, 200, UINT64_MAX);
        if (!o->progress_every)
                o->progress_every = cycles_share(o->cycles, 20, UINT64_MAX);
        return 0;
}

int main(int argc, char **argv)
{
        struct sigaction sa = { .sa_handler = on_interrupt, .sa_flags = SA_RESTART };
        struct soak_options opts;
        struct soak_result *res;
        struct soak s;
        int r;

        r = parse_options(argc, argv, &opts);
        if (r != 0)
                return r > 0 ? 0 : 2;
        res = calloc(1, sizeof(*res));
        if (!res) {
                fprintf(stderr, "cycle-soak: out of memory\n");
                return 1;
        }
        res->app_exit_status = -1;
        s = (struct soak){ .opts = &opts, .res = res, .app = { .stdout_fd = -1, .stdin_fd = -1 } };
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);

        fprintf(stderr, "cycle-soak: %" PRIu64 " cycles, %u queues; checks every %" PRIu64
                        " cycles, samples every %" PRIu64 "\n",
                opts.cycles, opts.queues, opts.check_every, opts.sample_every);
        r = soak_run(&s);
        soak_cleanup(&s);
        judge_usage(&s);
        if (r < 0)
                fprintf(stderr, "cycle-soak: %s\n", res->error);
        soak_report_print(&opts, res);
        for (int p = 0; p < SOAK_N_PROCESSES; p++) {
                if (res->verdicts[p].problem[0]) {
                        fprintf(stderr, "cycle-soak: %s\n", res->verdicts[p].problem);
                        r = -1;
                }
                usage_series_done(&res->usage[p]);
        }
        free(res);
        return r < 0 ? 1 : 0;
}
