/* SPDX-License-Identifier: MIT */
/*
 * gpreemptctl bench PID...: what a suspension costs on this node. Suspends
 * and resumes every queue of the processes --cycles times, one
 * SUSPEND_QUEUES or RESUME_QUEUES call per process each time, and reports
 * each operation's wall time and the CPU time the calling thread spent in it
 * (CLOCK_THREAD_CPUTIME_ID: a kernel that spins in its fence wait shows up
 * here, kfd-hazards.md "The wait spins"). scripts/real-node/bench-preemption
 * runs it against targets of several queue counts, busy and idle.
 *
 * --watch-read-index DURATION instead samples the processes' queues' read
 * indices as gpreemptd's detector reads them (process_vm_readv) in a tight
 * loop, and reports each advance with its CLOCK_MONOTONIC time, to be set
 * against the completion signals' timestamps (kfd-hazards.md: the read
 * index is not an exact completion signal).
 *
 * Everything runs on the main thread, which attached the targets: the kernel
 * takes debugger calls only from the tracer thread. Every cycle resumes what
 * it suspended before it looks at a signal; if this program dies even so,
 * the kernel's debugger-exit teardown resumes every queue it suspended.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "ctl-report.h"
#include "parse.h"
#include "verbs.h"

#define BENCH_MAX_TARGETS 64
#define BENCH_MAX_CYCLES 100000
#define BENCH_MAX_GPUS 16
#define BENCH_MAX_ADVANCES 1000000
#define BENCH_MAX_POLLS 1000000 /* the watch's look intervals kept for their p50 */
#define BENCH_SERVICE_NS 10000000 /* how often the watch services ptrace stops */

enum bench_op { BENCH_SUSPEND, BENCH_RESUME, _BENCH_OP_MAX };

/* One operation's calls: wall and thread CPU time of each, in ns. */
struct bench_samples {
        uint64_t *wall_ns;
        uint64_t *cpu_ns;
        size_t n;
        size_t queues_done, queues_invalid, queues_error;
};

/* A queue's read index seen to move. */
struct bench_advance {
        uint64_t ns;
        pid_t pid;
        uint32_t queue_id;
        uint64_t read_index;
};

struct bench {
        struct gp_context *context;
        struct gp_target *targets[BENCH_MAX_TARGETS];
        pid_t pids[BENCH_MAX_TARGETS];
        size_t n_targets;
        size_t queues[BENCH_MAX_TARGETS]; /* each target's queues on the GPUs asked for */
        uint32_t gpu_ids[BENCH_MAX_GPUS];
        size_t n_gpu_ids;
        uint64_t cycles, hold_us, gap_us;
        uint64_t watch_us; /* --watch-read-index; 0: the suspend/resume cycles */
        bool json;
        bool failed; /* bench_fail() said why: the first reason is the --json output, the others only logged */
        struct bench_samples samples[_BENCH_OP_MAX];
        struct bench_advance *advances;
        size_t n_advances;
        uint64_t *poll_ns; /* one look at every queue, per pass of the watch */
        size_t n_polls;
};

static volatile sig_atomic_t bench_interrupted;

static void on_interrupt(int sig)
{
        bench_interrupted = 1;
}

static void print_help(void)
{
        printf("Usage: gpreemptctl bench PID... [--cycles N] [--hold DURATION] [--gap DURATION]\n"
               "                         [--gpu ID]... [--json]\n"
               "       gpreemptctl bench PID... --watch-read-index DURATION [--gpu ID]... [--json]\n"
               "\n"
               "Measure what suspending a process's GPU queues costs on this node: suspend\n"
               "and resume every queue of the processes N times and report the wall time of\n"
               "each SUSPEND_QUEUES and RESUME_QUEUES call (p50, p99, max) and the CPU time\n"
               "the calling thread spent in it. The processes keep running between cycles;\n"
               "nothing stays suspended when the command ends, however it ends.\n"
               "\n"
               "  --cycles N           suspend/resume cycles (default 200)\n"
               "  --hold DURATION      how long each suspension lasts (default 5ms)\n"
               "  --gap DURATION       how long the queues run between cycles (default 5ms)\n"
               "  --gpu ID             only queues on this GPU (KFD gpu_id); repeatable\n"
               "  --watch-read-index DURATION\n"
               "                       suspend nothing: read the queues' read indices in a\n"
               "                       tight loop for DURATION and report each advance with\n"
               "                       its CLOCK_MONOTONIC time in ns (with --json)\n"
               "  --json               print the result as JSON\n"
               "  -h, --help           show this help\n"
               "\n"
               "Exit status: 0 measured, 1 usage, 2 nothing measured (KFD, permissions, a\n"
               "process without queues), 3 some calls left queues unsuspended, 4 a failure\n"
               "while measuring.\n");
}

static uint64_t clock_ns(clockid_t clock)
{
        struct timespec ts;

        (void)clock_gettime(clock, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleeps usec, or less when a signal came. */
static void pause_us(uint64_t usec)
{
        struct timespec ts = { .tv_sec = (time_t)(usec / 1000000), .tv_nsec = (long)(usec % 1000000) * 1000 };

        (void)nanosleep(&ts, NULL);
}

static int compare_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

/* The p-th percentile of n values (sorted in place), in µs. */
static double percentile_us(uint64_t *values, size_t n, unsigned p)
{
        qsort(values, n, sizeof(*values), compare_u64);
        return n ? (double)values[(n - 1) * p / 100] / 1e3 : 0.0;
}

static int bench_samples_init(struct bench_samples *s, size_t capacity)
{
        s->wall_ns = calloc(capacity, sizeof(*s->wall_ns));
        s->cpu_ns = calloc(capacity, sizeof(*s->cpu_ns));
        return s->wall_ns && s->cpu_ns ? 0 : -ENOMEM;
}

static void bench_release(struct bench *b)
{
        for (size_t i = 0; i < b->n_targets; i++) {
                int r = gp_target_detach(b->targets[i]);

                if (r < 0)
                        free(ctl_report_error(r, GP_OP_DETACH, b->pids[i], -1));
        }
        b->n_targets = 0;
        gp_context_free(b->context);
        b->context = NULL;
        for (int op = 0; op < _BENCH_OP_MAX; op++) {
                free(b->samples[op].wall_ns);
                free(b->samples[op].cpu_ns);
        }
        free(b->advances);
        free(b->poll_ns);
}

static bool queue_wanted(const struct bench *b, const struct gp_queue *q)
{
        bool wanted = b->n_gpu_ids == 0;

        for (size_t g = 0; g < b->n_gpu_ids; g++)
                wanted |= q->gpu_id == b->gpu_ids[g];
        return wanted;
}

/* Says why the benchmark cannot start or go on: the sentence is on stderr
 * already; under --json the first is the output too, which a script reads
 * instead (a cycle whose suspension failed fails its resume too). */
static void bench_fail(struct bench *b, char *sentence)
{
        if (b->json && !b->failed)
                ctl_report_json_error(sentence);
        b->failed = true;
        free(sentence);
}

/* Attaches one target and counts its queues; reports why not. */
static int bench_attach(struct bench *b, pid_t pid)
{
        struct gp_attach_opts opts = { .sz = sizeof(opts) };
        const struct gp_queue *queues;
        struct gp_target *target;
        size_t n_queues, n = 0;
        char *sentence;
        int r;

        r = gp_target_attach(b->context, pid, &opts, &target);
        if (r < 0) {
                bench_fail(b, ctl_report_error(r, GP_OP_ATTACH, pid, -1));
                return r;
        }
        b->targets[b->n_targets] = target;
        b->pids[b->n_targets++] = pid;
        if (gp_target_runtime_state(target) != GP_RUNTIME_ENABLED) {
                if (asprintf(&sentence, "pid %d: its ROCm runtime has not enabled debugging (state %s); start the "
                                        "benchmark once the program has created its queues",
                             (int)pid, gp_runtime_state_to_string(gp_target_runtime_state(target))) < 0)
                        sentence = NULL;
                bench_fail(b, ctl_report_sentence(sentence));
                return -GP_ERR_NO_QUEUES;
        }
        r = gp_target_snapshot(target, &queues, &n_queues);
        if (r < 0) {
                bench_fail(b, ctl_report_error(r, GP_OP_SNAPSHOT, pid, GP_RUNTIME_ENABLED));
                return r;
        }
        for (size_t q = 0; q < n_queues; q++)
                n += queue_wanted(b, &queues[q]);
        if (n == 0) {
                if (asprintf(&sentence, "pid %d has no GPU queue%s: give the PID of a program that runs GPU work "
                                        "(gpreemptctl queues PID lists them)",
                             (int)pid, b->n_gpu_ids ? " on the GPUs asked for" : "") < 0)
                        sentence = NULL;
                bench_fail(b, ctl_report_sentence(sentence));
                return -GP_ERR_NO_QUEUES;
        }
        b->queues[b->n_targets - 1] = n;
        return 0;
}

/* One call on every target, timed; returns the first error of a call. */
static int bench_call_all(struct bench *b, enum bench_op op)
{
        struct gp_queue_opts opts = { .sz = sizeof(opts), .gpu_ids = b->gpu_ids, .n_gpu_ids = b->n_gpu_ids };
        struct bench_samples *s = &b->samples[op];
        int first_error = 0;

        for (size_t i = 0; i < b->n_targets; i++) {
                struct gp_queue_report report = { 0 };
                uint64_t wall0, cpu0;
                int r;

                wall0 = clock_ns(CLOCK_MONOTONIC);
                cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
                r = op == BENCH_SUSPEND ? gp_target_suspend(b->targets[i], &opts, &report)
                                        : gp_target_resume(b->targets[i], &opts, &report);
                s->cpu_ns[s->n] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
                s->wall_ns[s->n++] = clock_ns(CLOCK_MONOTONIC) - wall0;
                if (r < 0) {
                        if (first_error == 0)
                                bench_fail(b, ctl_report_error(r, op == BENCH_SUSPEND ? GP_OP_SUSPEND : GP_OP_RESUME,
                                                               b->pids[i], GP_RUNTIME_ENABLED));
                        first_error = first_error ?: r;
                        continue;
                }
                s->queues_done += report.n_done;
                s->queues_invalid += report.n_invalid;
                s->queues_error += report.n_error;
        }
        return first_error;
}

/* Services the targets' ptrace stops and debug events between cycles; a target gone ends the run. */
static int bench_service(struct bench *b)
{
        for (size_t i = 0; i < b->n_targets; i++) {
                struct pollfd p = { .fd = gp_target_event_fd(b->targets[i]), .events = POLLIN };
                int r;

                r = gp_target_service_ptrace(b->targets[i]);
                if (r >= 0 && p.fd >= 0 && poll(&p, 1, 0) > 0)
                        r = gp_target_process_events(b->targets[i]);
                if (r >= 0 && gp_target_is_gone(b->targets[i]) > 0)
                        r = -GP_ERR_TARGET_GONE;
                if (r < 0) {
                        bench_fail(b, ctl_report_error(r, GP_OP_EVENTS, b->pids[i], GP_RUNTIME_ENABLED));
                        return r;
                }
        }
        return 0;
}

/* A time in µs to the nanosecond, not to binary noise. */
static json_object *json_us(double us)
{
        return json_object_new_double(round(us * 1e3) / 1e3);
}

static json_object *op_json(struct bench_samples *s)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "calls", json_object_new_uint64(s->n));
        json_object_object_add(o, "queues_done", json_object_new_uint64(s->queues_done));
        json_object_object_add(o, "queues_invalid", json_object_new_uint64(s->queues_invalid));
        json_object_object_add(o, "queues_error", json_object_new_uint64(s->queues_error));
        json_object_object_add(o, "wall_p50_us", json_us(percentile_us(s->wall_ns, s->n, 50)));
        json_object_object_add(o, "wall_p99_us", json_us(percentile_us(s->wall_ns, s->n, 99)));
        json_object_object_add(o, "wall_max_us", json_us(percentile_us(s->wall_ns, s->n, 100)));
        json_object_object_add(o, "thread_cpu_p50_us", json_us(percentile_us(s->cpu_ns, s->n, 50)));
        json_object_object_add(o, "thread_cpu_p99_us", json_us(percentile_us(s->cpu_ns, s->n, 99)));
        return o;
}

static void print_results(struct bench *b, uint64_t cycles_done)
{
        static const char *const names[_BENCH_OP_MAX] = { "suspend", "resume" };
        size_t total_queues = 0;

        for (size_t i = 0; i < b->n_targets; i++)
                total_queues += b->queues[i];
        if (b->json) {
                json_object *root = json_object_new_object(), *targets = json_object_new_array();

                for (size_t i = 0; i < b->n_targets; i++) {
                        json_object *t = json_object_new_object();

                        json_object_object_add(t, "pid", json_object_new_int64(b->pids[i]));
                        json_object_object_add(t, "queues", json_object_new_uint64(b->queues[i]));
                        json_object_array_add(targets, t);
                }
                json_object_object_add(root, "targets", targets);
                json_object_object_add(root, "cycles", json_object_new_uint64(cycles_done));
                json_object_object_add(root, "hold_us", json_object_new_uint64(b->hold_us));
                json_object_object_add(root, "gap_us", json_object_new_uint64(b->gap_us));
                for (int op = 0; op < _BENCH_OP_MAX; op++)
                        json_object_object_add(root, names[op], op_json(&b->samples[op]));
                puts(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
                json_object_put(root);
                return;
        }
        printf("%zu process%s, %zu queue%s, %" PRIu64 " cycles (held %" PRIu64 " us, %" PRIu64 " us apart)\n",
               b->n_targets, b->n_targets == 1 ? "" : "es", total_queues, total_queues == 1 ? "" : "s", cycles_done,
               b->hold_us, b->gap_us);
        printf("%-8s %6s %12s %12s %12s %16s %16s %9s\n", "op", "calls", "wall p50 us", "wall p99 us", "wall max us",
               "thread CPU p50", "thread CPU p99", "not done");
        for (int op = 0; op < _BENCH_OP_MAX; op++) {
                struct bench_samples *s = &b->samples[op];

                printf("%-8s %6zu %12.1f %12.1f %12.1f %16.1f %16.1f %9zu\n", names[op], s->n,
                       percentile_us(s->wall_ns, s->n, 50), percentile_us(s->wall_ns, s->n, 99),
                       percentile_us(s->wall_ns, s->n, 100), percentile_us(s->cpu_ns, s->n, 50),
                       percentile_us(s->cpu_ns, s->n, 99), s->queues_invalid + s->queues_error);
        }
}

/* A queue the watch reads, copied from its target's snapshot. */
struct bench_watched {
        size_t target;
        struct gp_queue queue;
        uint64_t last_read_index;
};

/* The wanted queues of every target, from one snapshot each, with where their read indices stand. */
static int bench_watched_queues(struct bench *b, struct bench_watched **ret_watched, size_t *ret_n)
{
        _cleanup_free_ struct bench_watched *watched = NULL;
        size_t n = 0, total = 0;

        for (size_t i = 0; i < b->n_targets; i++)
                total += b->queues[i];
        watched = calloc(total, sizeof(*watched));
        if (!watched)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_targets; i++) {
                const struct gp_queue *queues;
                size_t n_queues;
                int r = gp_target_snapshot(b->targets[i], &queues, &n_queues);

                if (r < 0)
                        return r;
                for (size_t q = 0; q < n_queues && n < total; q++) {
                        uint64_t write_index;

                        if (!queue_wanted(b, &queues[q]))
                                continue;
                        watched[n] = (struct bench_watched){ .target = i, .queue = queues[q] };
                        r = gp_target_read_queue_indices(b->targets[i], &queues[q], &watched[n].last_read_index,
                                                         &write_index);
                        if (r < 0)
                                return r;
                        n++;
                }
        }
        *ret_watched = TAKE_PTR(watched);
        *ret_n = n;
        return 0;
}

/* One look at every watched queue: records the read indices that moved since the last. */
static int bench_look(struct bench *b, struct bench_watched *watched, size_t n)
{
        for (size_t w = 0; w < n; w++) {
                uint64_t read_index, write_index;
                int r = gp_target_read_queue_indices(b->targets[watched[w].target], &watched[w].queue, &read_index,
                                                     &write_index);

                if (r < 0)
                        return r;
                if (read_index != watched[w].last_read_index && b->n_advances < BENCH_MAX_ADVANCES)
                        b->advances[b->n_advances++] = (struct bench_advance){
                                .ns = clock_ns(CLOCK_MONOTONIC),
                                .pid = b->pids[watched[w].target],
                                .queue_id = watched[w].queue.queue_id,
                                .read_index = read_index,
                        };
                watched[w].last_read_index = read_index;
        }
        return 0;
}

/*
 * --watch-read-index: the advances of every wanted queue's read index for
 * b->watch_us. The queues are those of the start: the targets must keep them.
 */
static int bench_watch(struct bench *b)
{
        _cleanup_free_ struct bench_watched *watched = NULL;
        uint64_t start = clock_ns(CLOCK_MONOTONIC), serviced = start, before = start, now;
        size_t n_watched;
        int r;

        b->advances = calloc(BENCH_MAX_ADVANCES, sizeof(*b->advances));
        b->poll_ns = calloc(BENCH_MAX_POLLS, sizeof(*b->poll_ns));
        if (!b->advances || !b->poll_ns)
                return -ENOMEM;
        r = bench_watched_queues(b, &watched, &n_watched);
        while (r >= 0 && !bench_interrupted && (now = clock_ns(CLOCK_MONOTONIC)) - start < b->watch_us * 1000) {
                r = bench_look(b, watched, n_watched);
                if (b->n_polls < BENCH_MAX_POLLS)
                        b->poll_ns[b->n_polls++] = now - before;
                before = now;
                if (r >= 0 && now - serviced >= BENCH_SERVICE_NS) {
                        serviced = now;
                        if (bench_service(b) < 0)
                                return -ESRCH; /* bench_service said why */
                }
        }
        if (r < 0 && r != -ENOMEM)
                bench_fail(b, ctl_report_error(r, GP_OP_SNAPSHOT, b->pids[0], GP_RUNTIME_ENABLED));
        return r;
}

static void print_watch(struct bench *b)
{
        double poll_p50 = percentile_us(b->poll_ns, b->n_polls, 50);

        if (b->json) {
                json_object *root = json_object_new_object(), *watch = json_object_new_object();
                json_object *advances = json_object_new_array();

                for (size_t i = 0; i < b->n_advances; i++) {
                        json_object *a = json_object_new_object();

                        json_object_object_add(a, "ns", json_object_new_uint64(b->advances[i].ns));
                        json_object_object_add(a, "pid", json_object_new_int64(b->advances[i].pid));
                        json_object_object_add(a, "queue_id", json_object_new_uint64(b->advances[i].queue_id));
                        json_object_object_add(a, "read_index", json_object_new_uint64(b->advances[i].read_index));
                        json_object_array_add(advances, a);
                }
                json_object_object_add(watch, "seconds", json_object_new_double((double)b->watch_us / 1e6));
                json_object_object_add(watch, "polls", json_object_new_uint64(b->n_polls));
                json_object_object_add(watch, "poll_p50_us", json_us(poll_p50));
                json_object_object_add(watch, "advances", advances);
                json_object_object_add(root, "read_index", watch);
                puts(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
                json_object_put(root);
                return;
        }
        printf("%zu read-index advances in %.1f s, every queue looked at every %.1f us (p50); --json lists them\n",
               b->n_advances, (double)b->watch_us / 1e6, poll_p50);
}

/* CTL_EXIT_OK with *ret_help set when --help was printed: nothing more to do. */
static int parse_options(struct bench *b, int argc, char **argv, bool *ret_help)
{
        enum { OPT_CYCLES = 0x100, OPT_HOLD, OPT_GAP, OPT_GPU, OPT_WATCH, OPT_JSON };
        static const struct option options[] = {
                { "cycles", required_argument, NULL, OPT_CYCLES },
                { "hold", required_argument, NULL, OPT_HOLD },
                { "gap", required_argument, NULL, OPT_GAP },
                { "gpu", required_argument, NULL, OPT_GPU },
                { "watch-read-index", required_argument, NULL, OPT_WATCH },
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        uint32_t value;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case OPT_CYCLES:
                        if (parse_u32(optarg, &value) < 0 || value < 1 || value > BENCH_MAX_CYCLES)
                                return ctl_report_usage("bench", "--cycles '%s': give 1 to %d cycles.", optarg,
                                                        BENCH_MAX_CYCLES);
                        b->cycles = value;
                        break;
                case OPT_HOLD:
                case OPT_GAP:
                        if (parse_duration(optarg, c == OPT_HOLD ? &b->hold_us : &b->gap_us) < 0 ||
                            (c == OPT_HOLD ? b->hold_us : b->gap_us) > 60000000)
                                return ctl_report_usage("bench", "--%s '%s': give a duration up to 60s, such as "
                                                        "5ms.", c == OPT_HOLD ? "hold" : "gap", optarg);
                        break;
                case OPT_GPU:
                        if (b->n_gpu_ids == BENCH_MAX_GPUS)
                                return ctl_report_usage("bench", "--gpu was given more than %d times.",
                                                        BENCH_MAX_GPUS);
                        if (parse_u32(optarg, &b->gpu_ids[b->n_gpu_ids]) < 0)
                                return ctl_report_usage("bench", "--gpu '%s': give a KFD gpu_id, a number as in "
                                                        "/sys/class/kfd/kfd/topology/nodes/*/gpu_id.", optarg);
                        b->n_gpu_ids++;
                        break;
                case OPT_WATCH:
                        if (parse_duration(optarg, &b->watch_us) < 0 || b->watch_us == 0 || b->watch_us > 600000000)
                                return ctl_report_usage("bench", "--watch-read-index '%s': give a duration up to "
                                                        "10m, such as 5s.", optarg);
                        break;
                case OPT_JSON:
                        b->json = true;
                        break;
                case 'h':
                        print_help();
                        *ret_help = true;
                        return CTL_EXIT_OK;
                default:
                        return ctl_report_bad_option("bench", argc, argv, options);
                }
        }
        if (optind == argc)
                return ctl_report_usage("bench", "expected the PIDs of processes with GPU queues.");
        if (argc - optind > BENCH_MAX_TARGETS)
                return ctl_report_usage("bench", "at most %d PIDs.", BENCH_MAX_TARGETS);
        return CTL_EXIT_OK;
}

int verb_bench(const struct ctl_globals *globals, int argc, char **argv)
{
        _cleanup_(bench_release) struct bench b = { .cycles = 200, .hold_us = 5000, .gap_us = 5000 };
        struct sigaction interrupt = { .sa_handler = on_interrupt };
        pid_t pids[BENCH_MAX_TARGETS];
        size_t n_pids, bad;
        bool help = false;
        uint64_t cycle;
        int r;

        r = parse_options(&b, argc, argv, &help);
        if (r != CTL_EXIT_OK || help)
                return r;
        n_pids = (size_t)(argc - optind); /* at most BENCH_MAX_TARGETS: parse_options() */
        r = parse_pids(argv + optind, n_pids, pids, &bad);
        if (r == -EEXIST)
                return ctl_report_usage("bench", "process %d is given twice.", (int)pids[bad]);
        if (r < 0)
                return ctl_report_usage("bench", "'%s' is not a PID.", argv[optind + (int)bad]);
        for (int op = 0; op < _BENCH_OP_MAX; op++)
                if (bench_samples_init(&b.samples[op], (size_t)b.cycles * n_pids) < 0) {
                        fputs("gpreemptctl: out of memory.\n", stderr);
                        return CTL_EXIT_FAILURE;
                }
        r = ctl_open_context(globals, &b.context);
        if (r < 0) {
                bench_fail(&b, ctl_report_error(r, GP_OP_OPEN, 0, -1));
                return CTL_EXIT_PRECONDITION;
        }
        for (size_t i = 0; i < n_pids; i++)
                if (bench_attach(&b, pids[i]) < 0)
                        return CTL_EXIT_PRECONDITION;
        /* SIGINT/SIGTERM end the run after the cycle's resume, not in the middle of it */
        (void)sigaction(SIGINT, &interrupt, NULL);
        (void)sigaction(SIGTERM, &interrupt, NULL);
        if (b.watch_us > 0) {
                r = bench_watch(&b);
                if (r == -ENOMEM)
                        fputs("gpreemptctl: out of memory.\n", stderr);
                if (r < 0)
                        return CTL_EXIT_FAILURE;
                print_watch(&b);
                return CTL_EXIT_OK;
        }
        for (cycle = 0; cycle < b.cycles && !bench_interrupted; cycle++) {
                int suspended = bench_call_all(&b, BENCH_SUSPEND), resumed;

                pause_us(b.hold_us);
                resumed = bench_call_all(&b, BENCH_RESUME);
                if (suspended < 0 || resumed < 0)
                        return CTL_EXIT_FAILURE;
                pause_us(b.gap_us);
                if (bench_service(&b) < 0)
                        return CTL_EXIT_FAILURE;
        }
        print_results(&b, cycle);
        return b.samples[BENCH_SUSPEND].queues_invalid + b.samples[BENCH_SUSPEND].queues_error > 0 ? CTL_EXIT_PARTIAL
                                                                                                    : CTL_EXIT_OK;
}
