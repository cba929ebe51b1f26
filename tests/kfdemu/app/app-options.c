/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app-options.h"
#include "kfd-abi.h"

#define DEFAULT_KERNEL_US 1000.0
#define DEFAULT_WORKGROUPS 64u
#define DEFAULT_WORKGROUP_SIZE 256u
#define DEFAULT_KERNEL_NAME "kfdemu_kernel(float*, int)"

enum {
        OPT_KERNEL_US = 0x100,
        OPT_WORKGROUPS,
        OPT_WORKGROUP_SIZE,
        OPT_ARRIVAL,
        OPT_RING_PACKETS,
        OPT_LATE_QUEUE_AFTER,
        OPT_DESTROY_QUEUE_AFTER,
        OPT_NO_RUNTIME_ENABLE,
        OPT_TTMP_SAVE,
        OPT_EXEC_AFTER,
        OPT_READY_FILE,
        OPT_SIGNAL_LOG,
        OPT_THREADS,
        OPT_CHURN,
        OPT_REPORT,
        OPT_JSON,
        OPT_AMD_LOG_LEVEL,
        OPT_AMD_LOG_FORMAT,
        OPT_AMD_LOG_FILE,
        OPT_KERNEL_NAME,
        OPT_SEED,
        OPT_DISPATCH_TIMES,
        OPT_LATENCY_LOG,
        OPT_DOORBELL_PER_REQUEST,
        OPT_HOST_WAIT_US,
        OPT_QUEUE_DURING_WAIT,
};

static const struct option long_options[] = {
        {"help", no_argument, NULL, 'h'},
        {"queues", required_argument, NULL, 'q'},
        {"gpu", required_argument, NULL, 'g'},
        {"kernel-us", required_argument, NULL, OPT_KERNEL_US},
        {"workgroups", required_argument, NULL, OPT_WORKGROUPS},
        {"workgroup-size", required_argument, NULL, OPT_WORKGROUP_SIZE},
        {"kernels-per-request", required_argument, NULL, 'k'},
        {"rate", required_argument, NULL, 'r'},
        {"arrival", required_argument, NULL, OPT_ARRIVAL},
        {"continuous", no_argument, NULL, 'c'},
        {"duration", required_argument, NULL, 'd'},
        {"requests", required_argument, NULL, 'n'},
        {"priority", required_argument, NULL, 'p'},
        {"ring-packets", required_argument, NULL, OPT_RING_PACKETS},
        {"late-queue-after", required_argument, NULL, OPT_LATE_QUEUE_AFTER},
        {"destroy-queue-after", required_argument, NULL, OPT_DESTROY_QUEUE_AFTER},
        {"no-runtime-enable", no_argument, NULL, OPT_NO_RUNTIME_ENABLE},
        {"ttmp-save", no_argument, NULL, OPT_TTMP_SAVE},
        {"exec-after", required_argument, NULL, OPT_EXEC_AFTER},
        {"ready-file", required_argument, NULL, OPT_READY_FILE},
        {"signal-log", required_argument, NULL, OPT_SIGNAL_LOG},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"churn", required_argument, NULL, OPT_CHURN},
        {"report", required_argument, NULL, OPT_REPORT},
        {"json", no_argument, NULL, OPT_JSON},
        {"amd-log-level", required_argument, NULL, OPT_AMD_LOG_LEVEL},
        {"amd-log-format", required_argument, NULL, OPT_AMD_LOG_FORMAT},
        {"amd-log-file", required_argument, NULL, OPT_AMD_LOG_FILE},
        {"kernel-name", required_argument, NULL, OPT_KERNEL_NAME},
        {"seed", required_argument, NULL, OPT_SEED},
        {"dispatch-times", required_argument, NULL, OPT_DISPATCH_TIMES},
        {"latency-log", required_argument, NULL, OPT_LATENCY_LOG},
        {"doorbell-per-request", no_argument, NULL, OPT_DOORBELL_PER_REQUEST},
        {"host-wait-us", required_argument, NULL, OPT_HOST_WAIT_US},
        {"queue-during-wait", no_argument, NULL, OPT_QUEUE_DURING_WAIT},
        {NULL, 0, NULL, 0},
};

void app_options_init(struct app_options *o)
{
        *o = (struct app_options){
                .queues = 1,
                .kernel_ns = (uint64_t)(DEFAULT_KERNEL_US * 1000.0),
                .workgroups = DEFAULT_WORKGROUPS,
                .workgroup_size = DEFAULT_WORKGROUP_SIZE,
                .kernels_per_request = 1,
                .arrival = APP_ARRIVAL_CLOSED_LOOP,
                .priority = EMU_QUEUE_DEFAULT_PRIORITY,
                .ring_packets = EMU_QUEUE_DEFAULT_PACKETS,
                .late_queue_after_s = -1,
                .destroy_queue_after_s = -1,
                .exec_after_s = -1,
                .runtime_enable = true,
                .seed = 1,
                .report = APP_REPORT_TEXT,
                .amd_log_format = CLR_LOG_FORMAT_6_2,
                .kernel_name = DEFAULT_KERNEL_NAME,
                .exec_after_argi = -1,
        };
}

__attribute__((format(printf, 3, 4))) static int fail(char *error, size_t size, const char *format, ...)
{
        va_list ap;

        va_start(ap, format);
        vsnprintf(error, size, format, ap);
        va_end(ap);
        return -EINVAL;
}

static int parse_double(const char *s, double min, double max, double *ret)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || *end || !isfinite(v) || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
        char *end;
        unsigned long long v;

        if (*s == '-')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 0);
        if (errno || end == s || *end || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

int app_options_apply_env(struct app_options *o, const char *level, const char *file, char *error,
                          size_t error_size)
{
        uint64_t v;

        /* CLR treats an unparsable or empty AMD_LOG_LEVEL as 0; be stricter,
         * since a test that sets it wants the log. */
        if (level && *level) {
                if (parse_u64(level, 0, CLR_LOG_LEVEL_MAX, &v) < 0)
                        return fail(error, error_size,
                                    "AMD_LOG_LEVEL=\"%s\" is not a log level: use 0 to %d.", level,
                                    CLR_LOG_LEVEL_MAX);
                o->amd_log_level = (int)v;
        }
        if (file && *file)
                o->amd_log_file = file;
        return 0;
}

static const char *option_name(int c)
{
        for (const struct option *o = long_options; o->name; o++)
                if (o->val == c)
                        return o->name;
        return "?";
}

/* The argv slots an option and its argument took, for --exec-after. */
static void note_option_position(char **argv, int *ret_argi, int *ret_argc)
{
        if (optind >= 2 && argv[optind - 1] == optarg && strchr(argv[optind - 2], '=') == NULL &&
            argv[optind - 2][0] == '-') {
                *ret_argi = optind - 2;
                *ret_argc = 2;
        } else {
                *ret_argi = optind - 1;
                *ret_argc = 1;
        }
}

int app_options_parse(struct app_options *o, int argc, char **argv, char *error, size_t error_size)
{
        bool have_rate = false, continuous = false, poisson = false;
        double d;
        uint64_t v;
        int c;

        /* glibc: 0 reinitialises getopt completely, so parsing twice works. */
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+hq:g:k:r:cd:n:p:", long_options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        return APP_OPTIONS_HELP;
                case 'q':
                        if (parse_u64(optarg, 1, APP_MAX_QUEUES, &v) < 0)
                                return fail(error, error_size, "--queues \"%s\": give a number of queues from 1 to %u.",
                                            optarg, APP_MAX_QUEUES);
                        o->queues = (unsigned)v;
                        break;
                case 'g':
                        if (o->n_gpus == EMU_RUNTIME_MAX_GPUS)
                                return fail(error, error_size, "--gpu was given more than %u times.",
                                            EMU_RUNTIME_MAX_GPUS);
                        if (parse_u64(optarg, 0, UINT32_MAX, &v) < 0)
                                return fail(error, error_size,
                                            "--gpu \"%s\": give a gpu_id (as in /sys/class/kfd/kfd/topology/nodes/*/gpu_id) or a GPU index.",
                                            optarg);
                        o->gpus[o->n_gpus++].value = (uint32_t)v;
                        break;
                case OPT_KERNEL_US:
                        if (parse_double(optarg, 0, APP_MAX_KERNEL_US, &d) < 0)
                                return fail(error, error_size, "--kernel-us \"%s\": give a duration in microseconds from 0 to %.0f.",
                                            optarg, APP_MAX_KERNEL_US);
                        o->kernel_ns = (uint64_t)llround(d * 1000.0);
                        break;
                case OPT_WORKGROUPS:
                        if (parse_u64(optarg, 1, APP_MAX_WORKGROUPS, &v) < 0)
                                return fail(error, error_size, "--workgroups \"%s\": give a number from 1 to %u.", optarg,
                                            APP_MAX_WORKGROUPS);
                        o->workgroups = (uint32_t)v;
                        break;
                case OPT_WORKGROUP_SIZE:
                        if (parse_u64(optarg, 1, 1024, &v) < 0)
                                return fail(error, error_size, "--workgroup-size \"%s\": give 1 to 1024 work-items.", optarg);
                        o->workgroup_size = (uint16_t)v;
                        break;
                case 'k':
                        if (parse_u64(optarg, 1, APP_MAX_KERNELS_PER_REQUEST, &v) < 0)
                                return fail(error, error_size, "--kernels-per-request \"%s\": give a number from 1 to %u.",
                                            optarg, APP_MAX_KERNELS_PER_REQUEST);
                        o->kernels_per_request = (unsigned)v;
                        break;
                case 'r':
                        if (parse_double(optarg, 1e-6, APP_MAX_RATE, &d) < 0)
                                return fail(error, error_size, "--rate \"%s\": give requests per second, above 0 and at most %.0f.",
                                            optarg, APP_MAX_RATE);
                        o->rate = d;
                        have_rate = true;
                        break;
                case OPT_ARRIVAL:
                        if (strcmp(optarg, "poisson") == 0)
                                poisson = true;
                        else if (strcmp(optarg, "fixed") == 0)
                                poisson = false;
                        else
                                return fail(error, error_size, "--arrival \"%s\": use \"fixed\" or \"poisson\".", optarg);
                        break;
                case 'c':
                        continuous = true;
                        break;
                case 'd':
                        if (parse_double(optarg, 1e-3, APP_MAX_SECONDS, &d) < 0)
                                return fail(error, error_size, "--duration \"%s\": give seconds, from 0.001 to %.0f.", optarg,
                                            APP_MAX_SECONDS);
                        o->duration_s = d;
                        break;
                case 'n':
                        if (parse_u64(optarg, 1, APP_MAX_REQUESTS, &v) < 0)
                                return fail(error, error_size, "--requests \"%s\": give a number from 1 to %llu.", optarg,
                                            APP_MAX_REQUESTS);
                        o->requests = v;
                        break;
                case 'p':
                        if (parse_u64(optarg, 0, KFD_MAX_QUEUE_PRIORITY, &v) < 0)
                                return fail(error, error_size, "--priority \"%s\": KFD queue priorities go from 0 to %d.",
                                            optarg, KFD_MAX_QUEUE_PRIORITY);
                        o->priority = (uint32_t)v;
                        break;
                case OPT_RING_PACKETS:
                        if (parse_u64(optarg, EMU_QUEUE_MIN_PACKETS, EMU_QUEUE_MAX_PACKETS, &v) < 0 || (v & (v - 1)))
                                return fail(error, error_size, "--ring-packets \"%s\": give a power of two from %u to %u.",
                                            optarg, EMU_QUEUE_MIN_PACKETS, EMU_QUEUE_MAX_PACKETS);
                        o->ring_packets = (uint32_t)v;
                        break;
                case OPT_LATE_QUEUE_AFTER:
                case OPT_DESTROY_QUEUE_AFTER:
                case OPT_EXEC_AFTER:
                        if (parse_double(optarg, 0, APP_MAX_SECONDS, &d) < 0)
                                return fail(error, error_size, "--%s \"%s\": give seconds from 0 to %.0f.",
                                            option_name(c), optarg, APP_MAX_SECONDS);
                        if (c == OPT_LATE_QUEUE_AFTER)
                                o->late_queue_after_s = d;
                        else if (c == OPT_DESTROY_QUEUE_AFTER)
                                o->destroy_queue_after_s = d;
                        else {
                                o->exec_after_s = d;
                                note_option_position(argv, &o->exec_after_argi, &o->exec_after_argc);
                        }
                        break;
                case OPT_NO_RUNTIME_ENABLE:
                        o->runtime_enable = false;
                        break;
                case OPT_TTMP_SAVE:
                        o->ttmp_save = true;
                        break;
                case OPT_READY_FILE:
                        o->ready_file = optarg;
                        break;
                case OPT_SIGNAL_LOG:
                        o->signal_log = optarg;
                        break;
                case OPT_THREADS:
                        if (parse_u64(optarg, 0, APP_MAX_IDLE_THREADS, &v) < 0)
                                return fail(error, error_size, "--threads \"%s\": give a number of threads from 0 to %u.",
                                            optarg, APP_MAX_IDLE_THREADS);
                        o->idle_threads = (unsigned)v;
                        break;
                case OPT_CHURN:
                        if (parse_double(optarg, 1e-3, APP_MAX_CHURN_RATE, &d) < 0)
                                return fail(error, error_size,
                                            "--churn \"%s\": give cycles per second, from 0.001 to %.0f.", optarg,
                                            APP_MAX_CHURN_RATE);
                        o->churn_rate = d;
                        break;
                case OPT_REPORT:
                        if (strcmp(optarg, "json") == 0)
                                o->report = APP_REPORT_JSON;
                        else if (strcmp(optarg, "text") == 0)
                                o->report = APP_REPORT_TEXT;
                        else if (strcmp(optarg, "none") == 0)
                                o->report = APP_REPORT_NONE;
                        else
                                return fail(error, error_size, "--report \"%s\": use \"json\", \"text\" or \"none\".", optarg);
                        break;
                case OPT_JSON:
                        o->report = APP_REPORT_JSON;
                        break;
                case OPT_AMD_LOG_LEVEL:
                        if (parse_u64(optarg, 0, CLR_LOG_LEVEL_MAX, &v) < 0)
                                return fail(error, error_size, "--amd-log-level \"%s\": use 0 (off) to %d.", optarg,
                                            CLR_LOG_LEVEL_MAX);
                        o->amd_log_level = (int)v;
                        break;
                case OPT_AMD_LOG_FORMAT:
                        if (clr_log_format_from_string(optarg, &o->amd_log_format) < 0)
                                return fail(error, error_size,
                                            "--amd-log-format \"%s\": use 5.2 (ROCm 5.2-5.5), 6.0 (5.6-6.1) or 6.2 (6.2 and later).",
                                            optarg);
                        break;
                case OPT_AMD_LOG_FILE:
                        o->amd_log_file = optarg;
                        break;
                case OPT_DISPATCH_TIMES:
                        o->dispatch_times = optarg;
                        break;
                case OPT_LATENCY_LOG:
                        o->latency_log = optarg;
                        break;
                case OPT_DOORBELL_PER_REQUEST:
                        o->doorbell_per_request = true;
                        break;
                case OPT_HOST_WAIT_US:
                        if (parse_double(optarg, 0, APP_MAX_HOST_WAIT_US, &d) < 0)
                                return fail(error, error_size,
                                            "--host-wait-us \"%s\": give a time in microseconds from 0 to %.0f (0: no barrier).",
                                            optarg, APP_MAX_HOST_WAIT_US);
                        o->host_wait_ns = (uint64_t)llround(d * 1000.0);
                        break;
                case OPT_QUEUE_DURING_WAIT:
                        o->queue_during_wait = true;
                        break;
                case OPT_KERNEL_NAME:
                        if (strlen(optarg) == 0 || strlen(optarg) > APP_MAX_NAME)
                                return fail(error, error_size, "--kernel-name: give 1 to %u characters.", APP_MAX_NAME);
                        o->kernel_name = optarg;
                        break;
                case OPT_SEED:
                        if (parse_u64(optarg, 0, UINT64_MAX, &v) < 0)
                                return fail(error, error_size, "--seed \"%s\": give a non-negative integer.", optarg);
                        o->seed = v;
                        break;
                default:
                        if (optopt && optopt < 0x100)
                                return fail(error, error_size, "Option -%c needs an argument or does not exist; see --help.",
                                            optopt);
                        return fail(error, error_size, "Option \"%s\" is unknown or lacks its argument; see --help.",
                                    argv[optind - 1]);
                }
        }
        if (optind < argc)
                return fail(error, error_size, "Unexpected argument \"%s\"; kfdemu-app takes options only (see --help).",
                            argv[optind]);
        if (have_rate && continuous)
                return fail(error, error_size, "--rate and --continuous exclude each other: pick open loop or closed loop.");
        if (poisson && !have_rate)
                return fail(error, error_size, "--arrival poisson needs --rate.");
        if (o->queue_during_wait && !o->host_wait_ns)
                return fail(error, error_size, "--queue-during-wait needs --host-wait-us: it queues during the host wait.");
        o->arrival = !have_rate ? APP_ARRIVAL_CLOSED_LOOP : poisson ? APP_ARRIVAL_POISSON : APP_ARRIVAL_FIXED;
        if (o->destroy_queue_after_s >= 0 && o->queues + (o->late_queue_after_s >= 0) < 2)
                return fail(error, error_size, "--destroy-queue-after needs at least two queues, so that one keeps running.");
        return 0;
}

void app_options_print_help(const char *program)
{
        printf("Usage: %s [OPTION]...\n"
               "Play an online or offline GPU job on an emulated (kfdemu) or real KFD node:\n"
               "open /dev/kfd, enable the runtime as ROCr does, create AQL queues and submit timed kernels.\n"
               "\n"
               "Work:\n"
               "  -q, --queues N              queues to create (default 1), spread over the GPUs\n"
               "  -g, --gpu ID|INDEX          use this GPU (gpu_id, or index if below the GPU count); repeatable\n"
               "      --kernel-us D           run time of each kernel alone on the GPU, in us (default 1000)\n"
               "      --workgroups W          workgroups per kernel (default 64)\n"
               "      --workgroup-size S      work-items per workgroup (default 256)\n"
               "  -k, --kernels-per-request K kernels per request (default 1)\n"
               "      --doorbell-per-request  write a request's packets, then move the write index and\n"
               "                              ring the doorbell once (default: after each packet)\n"
               "      --host-wait-us D        end each request with a barrier-AND on a signal the host\n"
               "                              sets D us after the request's kernels are done (default 0: none)\n"
               "      --queue-during-wait     halfway through each host wait, queue one more kernel behind\n"
               "                              the barrier; it runs once the barrier is released\n"
               "  -r, --rate R                open loop: R requests/s over all queues, latency from the scheduled time\n"
               "      --arrival fixed|poisson fixed intervals (default) or Poisson arrivals for --rate\n"
               "  -c, --continuous            closed loop: each queue runs requests back to back (default)\n"
               "  -d, --duration S            stop after S seconds\n"
               "  -n, --requests N            stop after N requests\n"
               "  -p, --priority P            KFD queue priority 0-15 (default 7)\n"
               "      --ring-packets N        ring size in 64-byte packets, a power of two (default 1024)\n"
               "      --seed N                seed of the Poisson arrivals (default 1)\n"
               "\n"
               "Lifecycle events:\n"
               "      --late-queue-after S    create one more queue S seconds after start\n"
               "      --destroy-queue-after S destroy one queue S seconds after start\n"
               "      --exec-after S          re-execute itself S seconds after start, queues still live\n"
               "      --no-runtime-enable     never call RUNTIME_ENABLE (like ROCm 5.2.3)\n"
               "      --ttmp-save             ask RUNTIME_ENABLE to save trap temporaries\n"
               "      --threads N             start N more threads that only wait and take signals (default 0)\n"
               "      --churn RATE            RATE times a second: allocate and map 2 MiB of VRAM, create and destroy\n"
               "                              a queue, unmap and free (default: never)\n"
               "\n"
               "Output:\n"
               "      --ready-file PATH       also write the READY line to PATH\n"
               "      --signal-log PATH       append the number of every signal received to PATH, then\n"
               "                              \" code=<si_code>\" unless SI_USER, \" value=<sival_int>\" if\n"
               "                              sigqueue(3) sent it, \" tid=<tid>\" if not the main thread took it\n"
               "      --report json|text|none report at exit and on SIGUSR1 (default text)\n"
               "      --json                  same as --report json\n"
               "      --amd-log-level N       HIP/CLR log level 0-4 (or AMD_LOG_LEVEL)\n"
               "      --amd-log-format F      5.2, 6.0 or 6.2: the ROCm generation whose log format to write\n"
               "      --amd-log-file PATH     where the log goes (or AMD_LOG_LEVEL_FILE; default stderr)\n"
               "      --kernel-name NAME      kernel name in \"ShaderName\" lines\n"
               "      --dispatch-times PATH   append \"<ns> <pid> <gpu_id> <queue_id> <index>\" per dispatch,\n"
               "                              ns = CLOCK_MONOTONIC just before the write index moved\n"
               "      --latency-log PATH      write one line per completed request: scheduled time and\n"
               "                              latencies in model time (GPU timestamps) and wall-clock time\n"
               "  -h, --help                  show this help\n"
               "\n"
               "After setup it prints \"READY pid=<pid> queues=<n>\". SIGTERM/SIGINT stop it cleanly,\n"
               "SIGUSR1 prints the report so far. Exit status: 0 success, 1 device or queue failure,\n"
               "2 invalid command line. See kfdemu-app(1).\n",
               program);
}
