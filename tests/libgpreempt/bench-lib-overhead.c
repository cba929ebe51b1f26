/* SPDX-License-Identifier: MIT */
/*
 * The library's cost over the raw ioctls for one suspend+resume round trip.
 * Run inside an emulated node (scripts/bench-lib-overhead does that):
 *   bench-lib-overhead KFDEMU-APP [--runs N] [--queues N]... [--json]
 * For each queue count it starts an app with that many queues, attaches with
 * libgpreempt, and times, interleaved in the same run, gp_target_suspend +
 * gp_target_resume against SUSPEND_QUEUES + RESUME_QUEUES issued directly on
 * this process's own /dev/kfd with the same queue ids.
 *
 * The emulated kernel's time varies by milliseconds from call to call, far
 * more than the library adds, so besides the paired difference of the round
 * trips the program also times every ioctl (it interposes ioctl() for the
 * whole process) and reports the time each path spends outside ioctl(): that
 * difference is the library's own cost, free of the kernel's noise.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cleanup.h"
#include <gpreempt/gpreempt.h>
#include "kfd-abi.h"
#include "test-support.h"

#define MAX_RUNS 1000000
#define MAX_SIZES 8

/* Time spent inside ioctl() since the last reset; the benchmark is one thread. */
static uint64_t ioctl_ns;

/* Exported (the build hides symbols by default) so libgpreempt.so binds to it. */
__attribute__((visibility("default"))) int ioctl(int fd, unsigned long request, ...)
{
        static int (*real_ioctl)(int, unsigned long, void *);
        uint64_t t0, t1;
        va_list ap;
        void *arg;
        int r;

        va_start(ap, request);
        arg = va_arg(ap, void *);
        va_end(ap);
        /* The next ioctl() in lookup order: kfdemu's preload, or libc's. */
        if (!real_ioctl)
                real_ioctl = (int (*)(int, unsigned long, void *))dlsym(RTLD_NEXT, "ioctl");
        t0 = now_nsec();
        r = real_ioctl(fd, request, arg);
        t1 = now_nsec();
        ioctl_ns += t1 - t0;
        return r;
}

struct stats {
        double p10, median, p90;
};

static int compare_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

static struct stats stats_of(double *v, size_t n)
{
        qsort(v, n, sizeof(*v), compare_double);
        return (struct stats){ .p10 = v[n / 10], .median = v[n / 2], .p90 = v[n * 9 / 10] };
}

static int raw_queue_op(int kfd_fd, pid_t pid, uint32_t op, const uint32_t *queue_ids,
                        uint32_t *scratch, uint32_t n)
{
        struct kfd_ioctl_dbg_trap_args args = { .pid = (uint32_t)pid, .op = op };
        int r;

        /* The kernel ORs status bits into the array: hand it fresh ids. */
        memcpy(scratch, queue_ids, n * sizeof(*scratch));
        if (op == KFD_IOC_DBG_TRAP_SUSPEND_QUEUES) {
                args.suspend_queues.queue_array_ptr = (uint64_t)(uintptr_t)scratch;
                args.suspend_queues.num_queues = n;
        } else {
                args.resume_queues.queue_array_ptr = (uint64_t)(uintptr_t)scratch;
                args.resume_queues.num_queues = n;
        }
        do
                r = ioctl(kfd_fd, AMDKFD_IOC_DBG_TRAP, &args);
        while (r < 0 && errno == EINTR);
        return r < 0 ? -errno : r;
}

struct result {
        unsigned queues;
        size_t runs;
        struct stats lib, raw, overhead;
        /* Time outside ioctl() per round trip. */
        struct stats lib_outside, raw_outside;
};

static int measure(const char *app_path, unsigned n_queues, size_t runs, struct result *ret)
{
        char queues_arg[16];
        const char *args[] = { "--queues", queues_arg, "--rate", "1", NULL };
        _cleanup_free_ double *lib = NULL, *raw = NULL, *diff = NULL, *lib_outside = NULL,
                              *raw_outside = NULL;
        _cleanup_free_ uint32_t *ids = NULL, *scratch = NULL;
        _cleanup_close_ int kfd_fd = -1;
        struct gp_context *context = NULL;
        struct gp_target *target = NULL;
        const struct gp_queue *queues;
        struct gp_queue_report report;
        struct child app;
        size_t n;
        int r;

        snprintf(queues_arg, sizeof(queues_arg), "%u", n_queues);
        r = app_spawn(app_path, args, &app);
        if (r < 0) {
                fprintf(stderr, "bench-lib-overhead: cannot start kfdemu-app with %u queues: %s\n",
                        n_queues, strerror(-r));
                return r;
        }
        lib = calloc(runs, sizeof(*lib));
        raw = calloc(runs, sizeof(*raw));
        diff = calloc(runs, sizeof(*diff));
        lib_outside = calloc(runs, sizeof(*lib_outside));
        raw_outside = calloc(runs, sizeof(*raw_outside));
        ids = calloc(n_queues, sizeof(*ids));
        scratch = calloc(n_queues, sizeof(*scratch));
        if (!lib || !raw || !diff || !lib_outside || !raw_outside || !ids || !scratch) {
                r = -ENOMEM;
                goto out;
        }

        r = gp_context_new(NULL, &context);
        if (r >= 0)
                r = gp_target_attach(context, app.pid, NULL, &target);
        if (r >= 0)
                r = gp_target_snapshot(target, &queues, &n);
        if (r < 0) {
                fprintf(stderr, "bench-lib-overhead: cannot attach to the app: %s\n", strerror(-r));
                goto out;
        }
        if (n != n_queues) {
                fprintf(stderr, "bench-lib-overhead: the app has %zu queues, not %u\n", n, n_queues);
                r = -EPROTO;
                goto out;
        }
        for (size_t i = 0; i < n; i++)
                ids[i] = queues[i].queue_id;
        /* Our own file on /dev/kfd: the same kfd_process as the library's. */
        kfd_fd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
        if (kfd_fd < 0) {
                r = -errno;
                goto out;
        }

        for (size_t i = 0; i < runs; i++) {
                /* Alternate the order so drift and warm caches hit both alike. */
                for (int k = 0; k < 2; k++) {
                        bool use_lib = (i + (size_t)k) % 2 == 0;
                        uint64_t t0;

                        ioctl_ns = 0;
                        t0 = now_nsec();

                        if (use_lib) {
                                r = gp_target_suspend(target, NULL, &report);
                                if (r >= 0)
                                        r = gp_target_resume(target, NULL, &report);
                        } else {
                                r = raw_queue_op(kfd_fd, app.pid, KFD_IOC_DBG_TRAP_SUSPEND_QUEUES,
                                                 ids, scratch, n_queues);
                                if (r >= 0)
                                        r = raw_queue_op(kfd_fd, app.pid,
                                                         KFD_IOC_DBG_TRAP_RESUME_QUEUES, ids,
                                                         scratch, n_queues);
                        }
                        uint64_t t1 = now_nsec();
                        if (r != (int)n_queues) {
                                fprintf(stderr, "bench-lib-overhead: %s round trip: %s\n",
                                        use_lib ? "library" : "raw",
                                        r < 0 ? strerror(-r) : "not every queue answered");
                                r = r < 0 ? r : -EPROTO;
                                goto out;
                        }
                        (use_lib ? lib : raw)[i] = (double)(t1 - t0) / 1000.0;
                        (use_lib ? lib_outside : raw_outside)[i] =
                                (double)(t1 - t0 - ioctl_ns) / 1000.0;
                }
                diff[i] = lib[i] - raw[i];
        }

        *ret = (struct result){ .queues = n_queues,
                                .runs = runs,
                                .lib = stats_of(lib, runs),
                                .raw = stats_of(raw, runs),
                                .overhead = stats_of(diff, runs),
                                .lib_outside = stats_of(lib_outside, runs),
                                .raw_outside = stats_of(raw_outside, runs) };
        r = 0;
out:
        if (target)
                gp_target_detach(target);
        gp_context_free(context);
        child_kill(&app);
        return r;
}

static json_object *stats_json(const struct stats *s)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "p10_us", json_object_new_double(s->p10));
        json_object_object_add(o, "median_us", json_object_new_double(s->median));
        json_object_object_add(o, "p90_us", json_object_new_double(s->p90));
        return o;
}

int main(int argc, char **argv)
{
        enum { OPT_RUNS = 0x100, OPT_QUEUES, OPT_JSON };
        static const struct option options[] = {
                { "runs", required_argument, NULL, OPT_RUNS },
                { "queues", required_argument, NULL, OPT_QUEUES },
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        unsigned sizes[MAX_SIZES], n_sizes = 0;
        struct result results[MAX_SIZES];
        size_t runs = 1000;
        bool json = false;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case OPT_RUNS:
                        runs = strtoul(optarg, NULL, 10);
                        if (runs < 10 || runs > MAX_RUNS) {
                                fprintf(stderr, "bench-lib-overhead: --runs must be 10..%d\n",
                                        MAX_RUNS);
                                return 1;
                        }
                        break;
                case OPT_QUEUES:
                        if (n_sizes == MAX_SIZES) {
                                fprintf(stderr, "bench-lib-overhead: at most %d --queues\n",
                                        MAX_SIZES);
                                return 1;
                        }
                        sizes[n_sizes] = (unsigned)strtoul(optarg, NULL, 10);
                        if (sizes[n_sizes] < 1 || sizes[n_sizes] > 256) {
                                fprintf(stderr, "bench-lib-overhead: --queues must be 1..256\n");
                                return 1;
                        }
                        n_sizes++;
                        break;
                case OPT_JSON:
                        json = true;
                        break;
                case 'h':
                        printf("Usage: bench-lib-overhead KFDEMU-APP [--runs N] [--queues N]... "
                               "[--json]\n"
                               "Times suspend+resume through libgpreempt against the raw ioctls,\n"
                               "interleaved; run it inside kfdemu-run "
                               "(scripts/bench-lib-overhead does).\n");
                        return 0;
                default:
                        return 1;
                }
        }
        if (optind != argc - 1) {
                fprintf(stderr, "bench-lib-overhead: expected the path of kfdemu-app\n");
                return 1;
        }
        if (n_sizes == 0) {
                sizes[n_sizes++] = 1;
                sizes[n_sizes++] = 8;
                sizes[n_sizes++] = 64;
        }

        for (unsigned i = 0; i < n_sizes; i++)
                if (measure(argv[optind], sizes[i], runs, &results[i]) < 0)
                        return 1;

        if (json) {
                json_object *root = json_object_new_array();

                for (unsigned i = 0; i < n_sizes; i++) {
                        json_object *o = json_object_new_object();

                        json_object_object_add(o, "queues", json_object_new_int(results[i].queues));
                        json_object_object_add(o, "runs", json_object_new_int64((int64_t)runs));
                        json_object_object_add(o, "library", stats_json(&results[i].lib));
                        json_object_object_add(o, "raw", stats_json(&results[i].raw));
                        json_object_object_add(o, "overhead", stats_json(&results[i].overhead));
                        json_object_object_add(o, "library_outside_ioctl",
                                               stats_json(&results[i].lib_outside));
                        json_object_object_add(o, "raw_outside_ioctl",
                                               stats_json(&results[i].raw_outside));
                        json_object_array_add(root, o);
                }
                puts(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
                json_object_put(root);
                return 0;
        }
        printf("suspend+resume round trip, %zu interleaved runs each, microseconds "
               "(p10 / median / p90)\n\n",
               runs);
        printf("%6s  %-27s  %-27s  %-27s\n", "queues", "library", "raw ioctls",
               "library - raw (paired)");
        for (unsigned i = 0; i < n_sizes; i++) {
                const struct result *r = &results[i];

                printf("%6u  %7.1f / %7.1f / %7.1f  %7.1f / %7.1f / %7.1f  %7.1f / %7.1f / %7.1f\n",
                       r->queues, r->lib.p10, r->lib.median, r->lib.p90, r->raw.p10,
                       r->raw.median, r->raw.p90, r->overhead.p10, r->overhead.median,
                       r->overhead.p90);
        }
        printf("\ntime outside ioctl() per round trip (the library's own cost; target <= 10 us)\n");
        printf("%6s  %-27s  %-27s  %s\n", "queues", "library", "raw ioctls",
               "overhead (median)");
        for (unsigned i = 0; i < n_sizes; i++) {
                const struct result *r = &results[i];

                printf("%6u  %7.2f / %7.2f / %7.2f  %7.2f / %7.2f / %7.2f  %7.2f\n", r->queues,
                       r->lib_outside.p10, r->lib_outside.median, r->lib_outside.p90,
                       r->raw_outside.p10, r->raw_outside.median, r->raw_outside.p90,
                       r->lib_outside.median - r->raw_outside.median);
        }
        return 0;
}
