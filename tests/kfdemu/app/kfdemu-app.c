/* SPDX-License-Identifier: MIT */
/*
 * kfdemu-app: an online or offline GPU job. It brings up the emulated
 * runtime as a HIP program's ROCr would, creates its queues, announces
 * READY, submits requests until told to stop, and tears down the way
 * hipStreamDestroy / hsa_shut_down do. See kfdemu-app.1.scd.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app-job.h"
#include "app-options.h"
#include "app-report.h"
#include "app-signals.h"
#include "app-churn.h"
#include "idle-threads.h"
#include "cleanup.h"
#include "clr-log.h"
#include "emu-runtime.h"

#define PROGRAM "kfdemu-app"
/* How often the main loop looks around when nothing is scheduled. */
#define IDLE_POLL_MS 200

struct app {
        struct app_options opts;
        struct emu_runtime *rt;
        struct clr_log *log;
        FILE *log_file;
        FILE *dispatch_times;
        FILE *latency_log;
        struct app_job *job;
        struct idle_threads *idle_threads;
        struct app_churn *churn;
        int wake_fd;
        uint32_t gpu_ids[EMU_RUNTIME_MAX_GPUS];
        unsigned n_gpu_ids;
        unsigned next_gpu;                  /* round-robin over gpu_ids */
        char **argv;
};

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Explains a failure to bring the runtime up. */
static void explain_runtime_open(int r)
{
        switch (r) {
        case -ENOENT:
                fprintf(stderr, PROGRAM ": cannot open /dev/kfd or the KFD topology: they do not exist. "
                                "Run under kfdemu-run, or on a node with the amdgpu driver loaded.\n");
                break;
        case -EACCES:
        case -EPERM:
                fprintf(stderr, PROGRAM ": permission denied opening /dev/kfd or reading the topology. "
                                "Join the render group or run as root.\n");
                break;
        case -EPROTONOSUPPORT:
                fprintf(stderr, PROGRAM ": the KFD interface is older than 1.13, so RUNTIME_ENABLE does not exist. "
                                "Use Linux 6.5 or later (or a recent amdgpu-dkms).\n");
                break;
        case -EBUSY:
                fprintf(stderr, PROGRAM ": RUNTIME_ENABLE failed: the runtime is unavailable (already enabled "
                                "for this process). Start a fresh process.\n");
                break;
        case -EEXIST:
                fprintf(stderr, PROGRAM ": RUNTIME_ENABLE failed: this process already has queues. "
                                "The runtime must be enabled before the first queue.\n");
                break;
        case -ENODEV:
                fprintf(stderr, PROGRAM ": the KFD topology lists no GPU. Give kfdemu-run --gpus N, "
                                "or check that amdgpu found the devices.\n");
                break;
        default:
                fprintf(stderr, PROGRAM ": cannot bring the GPU runtime up: %s.\n", strerror(-r));
        }
}

/* --gpu values: an index if below the GPU count, else a gpu_id. */
static int resolve_gpus(struct app *app)
{
        unsigned count = emu_runtime_gpu_count(app->rt);

        if (app->opts.n_gpus == 0) {
                for (unsigned i = 0; i < count; i++)
                        app->gpu_ids[app->n_gpu_ids++] = emu_runtime_gpu(app->rt, i)->gpu_id;
                return 0;
        }
        for (unsigned i = 0; i < app->opts.n_gpus; i++) {
                uint32_t v = app->opts.gpus[i].value;

                if (v < count)
                        app->gpu_ids[app->n_gpu_ids++] = emu_runtime_gpu(app->rt, v)->gpu_id;
                else if (emu_runtime_find_gpu(app->rt, v) >= 0)
                        app->gpu_ids[app->n_gpu_ids++] = v;
                else {
                        fprintf(stderr, PROGRAM ": --gpu %u is neither a GPU index (this node has %u GPUs) nor a gpu_id "
                                        "of /sys/class/kfd/kfd/topology/nodes/*/gpu_id.\n",
                                v, count);
                        return -ENODEV;
                }
        }
        return 0;
}

static int add_queue(struct app *app)
{
        uint32_t gpu_id = app->gpu_ids[app->next_gpu++ % app->n_gpu_ids];
        int r = app_job_add_queue(app->job, gpu_id);

        if (r < 0)
                fprintf(stderr, PROGRAM ": cannot create an AQL queue on GPU %u: %s.%s\n", gpu_id, strerror(-r),
                        r == -ENOMEM || r == -ENOSPC ? " Use fewer queues or smaller --ring-packets." : "");
        return r;
}

static int open_log(struct app *app)
{
        int r;

        if (app->opts.amd_log_level == 0)
                return 0;
        if (app->opts.amd_log_file) {
                app->log_file = fopen(app->opts.amd_log_file, "ae");
                if (!app->log_file) {
                        r = NEG_ERRNO();
                        fprintf(stderr, PROGRAM ": cannot open the AMD log file %s: %s. Check the path.\n",
                                app->opts.amd_log_file, strerror(-r));
                        return r;
                }
        }
        r = clr_log_new(app->log_file ? app->log_file : stderr, app->opts.amd_log_level, app->opts.amd_log_format,
                        getpid(), NULL, &app->log);
        if (r < 0)
                fprintf(stderr, PROGRAM ": cannot set up the AMD log: %s.\n", strerror(-r));
        return r;
}

static int announce_ready(struct app *app)
{
        char line[64];
        int n = snprintf(line, sizeof(line), "READY pid=%d queues=%u\n", (int)getpid(),
                         app_job_queue_count(app->job));

        fputs(line, stdout);
        fflush(stdout);
        if (app->opts.ready_file) {
                _cleanup_free_ char *tmp = NULL;
                _cleanup_close_ int fd = -1;

                /* Written aside and renamed, so a watcher never reads half a line. */
                if (asprintf(&tmp, "%s.%d.tmp", app->opts.ready_file, (int)getpid()) < 0)
                        return -ENOMEM;
                fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0 || write(fd, line, (size_t)n) != n || rename(tmp, app->opts.ready_file) < 0) {
                        int r = NEG_ERRNO();

                        fprintf(stderr, PROGRAM ": cannot write the ready file %s: %s.\n", app->opts.ready_file,
                                strerror(-r));
                        unlink(tmp);
                        return r;
                }
        }
        return 0;
}

static int print_report(struct app *app, bool final)
{
        struct app_job_report rep;
        struct app_run_info info = {
                .pid = getpid(),
                .runtime_enabled = emu_runtime_is_debug_enabled(app->rt),
                .opts = &app->opts,
                .final = final,
        };
        int r;

        emu_runtime_kfd_version(app->rt, &info.kfd_major, &info.kfd_minor);
        r = app_job_report(app->job, &rep);
        if (r < 0)
                return r;
        r = app_report_print(stdout, app->opts.report, &info, &rep);
        free(rep.queues);
        return r;
}

static void report_or_complain(struct app *app, bool final)
{
        int r = print_report(app, final);

        if (r < 0)
                fprintf(stderr, PROGRAM ": cannot write the report to standard output: %s.\n", strerror(-r));
}

/* Replaces the process image with a fresh run of the same command line,
 * minus --exec-after, while the queues are still live. */
static int reexec(struct app *app)
{
        int argc = 0, n = 0;
        char **argv;

        while (app->argv[argc])
                argc++;
        argv = calloc((size_t)argc + 1, sizeof(*argv));
        if (!argv)
                return -ENOMEM;
        for (int i = 0; i < argc; i++)
                if (i < app->opts.exec_after_argi || i >= app->opts.exec_after_argi + app->opts.exec_after_argc)
                        argv[n++] = app->argv[i];
        fflush(stdout);
        if (app->log_file)
                fflush(app->log_file);
        if (app->dispatch_times)
                fflush(app->dispatch_times);
        if (app->latency_log)
                fflush(app->latency_log);
        execv("/proc/self/exe", argv);
        free(argv);
        return NEG_ERRNO();
}

/* Milliseconds until `at` (seconds after start), or -1 if it is not scheduled. */
static int ms_until(double start, double at, bool done)
{
        double left;

        if (at < 0 || done)
                return -1;
        left = start + at - now_s();
        return left <= 0 ? 0 : (int)(left * 1000.0) + 1;
}

static int min_timeout(int a, int b)
{
        if (a < 0)
                return b;
        if (b < 0)
                return a;
        return a < b ? a : b;
}

/* Runs until the job is done or a stop is requested; handles the timed
 * lifecycle events on the way. */
static int run(struct app *app)
{
        const struct app_options *o = &app->opts;
        double start = now_s();
        bool late_done = false, destroy_done = false;

        for (;;) {
                struct app_signal_events ev = app_signals_take();
                struct pollfd pfd = {.fd = app->wake_fd, .events = POLLIN};
                int timeout = IDLE_POLL_MS, r;

                if (ev.stop)
                        return 0;
                if (ev.report)
                        report_or_complain(app, false);
                if (ms_until(start, o->late_queue_after_s, late_done) == 0) {
                        late_done = true;
                        r = add_queue(app);
                        if (r == 0)
                                r = app_job_start(app->job);
                        if (r < 0)
                                return r;
                }
                if (ms_until(start, o->destroy_queue_after_s, destroy_done) == 0) {
                        destroy_done = true;
                        r = app_job_destroy_one_queue(app->job);
                        if (r < 0) {
                                fprintf(stderr, PROGRAM ": cannot destroy a queue: %s.\n", strerror(-r));
                                return r;
                        }
                }
                if (ms_until(start, o->exec_after_s, false) == 0) {
                        r = reexec(app);
                        fprintf(stderr, PROGRAM ": cannot re-execute /proc/self/exe: %s.\n", strerror(-r));
                        return r;
                }
                if (app_job_workers_done(app->job))
                        return 0;
                if (o->duration_s > 0 && now_s() >= start + o->duration_s)
                        return 0;

                timeout = min_timeout(timeout, ms_until(start, o->late_queue_after_s, late_done));
                timeout = min_timeout(timeout, ms_until(start, o->destroy_queue_after_s, destroy_done));
                timeout = min_timeout(timeout, ms_until(start, o->exec_after_s, false));
                if (o->duration_s > 0)
                        timeout = min_timeout(timeout, ms_until(start, o->duration_s, false));
                if (poll(&pfd, 1, timeout) > 0)
                        app_signals_drain();
        }
}

/* Opens the file an option names (NULL: nothing to open). */
static int open_record(const char *path, const char *mode, const char *option, FILE **ret)
{
        int r;

        if (!path)
                return 0;
        *ret = fopen(path, mode);
        if (*ret)
                return 0;
        r = NEG_ERRNO();
        fprintf(stderr, PROGRAM ": cannot open the %s file %s: %s. Check the path.\n", option, path, strerror(-r));
        return r;
}

static int close_record(FILE *f, const char *option)
{
        if (!f || fclose(f) == 0)
                return 0;
        fprintf(stderr, PROGRAM ": cannot write the %s file: %s.\n", option, strerror(errno));
        return -EIO;
}

static int setup(struct app *app)
{
        struct emu_runtime_options ro = {
                .runtime_enable = app->opts.runtime_enable,
                .ttmp_save = app->opts.ttmp_save,
        };
        int r;

        r = app_signals_install(app->opts.signal_log, &app->wake_fd);
        if (r < 0) {
                fprintf(stderr, PROGRAM ": cannot set up signal handling%s%s: %s.\n",
                        app->opts.signal_log ? " or open the signal log " : "",
                        app->opts.signal_log ? app->opts.signal_log : "", strerror(-r));
                return r;
        }
        /* Started while no signal is blocked: they inherit the main thread's mask. */
        r = idle_threads_start(app->opts.idle_threads, &app->idle_threads);
        if (r < 0) {
                fprintf(stderr, PROGRAM ": cannot start the --threads threads: %s.\n", strerror(-r));
                return r;
        }
        r = open_log(app);
        if (r < 0)
                return r;
        r = open_record(app->opts.dispatch_times, "ae", "dispatch-times", &app->dispatch_times);
        if (r < 0)
                return r;
        /* Truncated: one run's requests, after a header naming the columns. */
        r = open_record(app->opts.latency_log, "we", "latency-log", &app->latency_log);
        if (r < 0)
                return r;
        if (app->latency_log && fputs(APP_LATENCY_LOG_HEADER, app->latency_log) < 0) {
                fprintf(stderr, PROGRAM ": cannot write the latency-log file %s.\n", app->opts.latency_log);
                return -EIO;
        }
        r = emu_runtime_open(&ro, &app->rt);
        if (r < 0) {
                explain_runtime_open(r);
                return r;
        }
        r = resolve_gpus(app);
        if (r < 0)
                return r;
        r = app_job_new(&app->opts, app->rt,
                        &(struct app_job_outputs){app->log, app->dispatch_times, app->latency_log, app_signals_wake}, &app->job);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < app->opts.queues; i++) {
                /* Setting many queues up can take a while; a stop request
                 * must not wait for all of them. */
                if (app_signals_stop_requested())
                        return -ECANCELED;
                r = add_queue(app);
                if (r < 0)
                        return r;
        }
        r = app_job_start(app->job);
        if (r < 0) {
                fprintf(stderr, PROGRAM ": cannot start the worker threads: %s.\n", strerror(-r));
                return r;
        }
        /* The churn works on the first GPU the job uses. */
        r = app_churn_start(app->rt, (unsigned)emu_runtime_find_gpu(app->rt, app->gpu_ids[0]), app->opts.churn_rate,
                            &app->churn);
        if (r < 0) {
                fprintf(stderr, PROGRAM ": cannot start the --churn thread: %s.\n", strerror(-r));
                return r;
        }
        return announce_ready(app);
}

/* Stops the workers and undoes setup in the order a HIP program's exit
 * does: streams (queues), then hsa_shut_down (runtime disable). */
static int teardown(struct app *app)
{
        bool queues_gone = true;
        const char *churn_step = NULL;
        int r, ret = 0;

        r = app_churn_stop(app->churn, &churn_step);
        if (r < 0) {
                fprintf(stderr, PROGRAM ": --churn failed %s: %s.\n", churn_step, strerror(-r));
                ret = r;
        }
        if (app->job) {
                app_job_stop(app->job);
                r = app_job_error(app->job);
                if (r < 0) {
                        fprintf(stderr, PROGRAM ": submitting work failed: %s.\n", strerror(-r));
                        ret = r;
                }
                r = app_job_destroy_queues(app->job);
                if (r < 0) {
                        fprintf(stderr, PROGRAM ": cannot destroy a queue: %s.\n", strerror(-r));
                        queues_gone = false;
                        ret = r;
                }
                report_or_complain(app, true);
                app_job_free(app->job);
        }
        /* A queue that could not be destroyed keeps the runtime in use;
         * leave both to process exit, the kernel cleans up after us. */
        if (app->rt && queues_gone) {
                r = emu_runtime_close(app->rt);
                if (r < 0) {
                        fprintf(stderr, PROGRAM ": runtime disable (RUNTIME_ENABLE with mode 0) failed: %s.\n",
                                strerror(-r));
                        ret = r;
                }
        }
        idle_threads_stop(app->idle_threads);
        clr_log_free(app->log);
        if (app->log_file)
                fclose(app->log_file);
        if (close_record(app->dispatch_times, "dispatch-times") < 0)
                ret = -EIO;
        if (close_record(app->latency_log, "latency-log") < 0)
                ret = -EIO;
        return ret;
}

int main(int argc, char **argv)
{
        struct app app = {.wake_fd = -1, .argv = argv};
        char error[512];
        int r;

        app_options_init(&app.opts);
        r = app_options_apply_env(&app.opts, getenv("AMD_LOG_LEVEL"), getenv("AMD_LOG_LEVEL_FILE"), error,
                                  sizeof(error));
        if (r == 0)
                r = app_options_parse(&app.opts, argc, argv, error, sizeof(error));
        if (r == APP_OPTIONS_HELP) {
                app_options_print_help(PROGRAM);
                return APP_EXIT_OK;
        }
        if (r < 0) {
                fprintf(stderr, PROGRAM ": %s\n", error);
                return APP_EXIT_USAGE;
        }

        r = setup(&app);
        if (r == 0) {
                r = run(&app);
                if (r < 0)
                        fprintf(stderr, PROGRAM ": the job failed: %s.\n", strerror(-r));
        } else if (r == -ECANCELED) {
                /* Stopped by SIGTERM/SIGINT before it was ready: a clean stop. */
                r = 0;
        }
        if (teardown(&app) < 0 && r == 0)
                r = -EIO;
        return r < 0 ? APP_EXIT_FAILURE : APP_EXIT_OK;
}
