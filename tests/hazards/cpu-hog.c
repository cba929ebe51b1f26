/* SPDX-License-Identifier: MIT */
/*
 * cpu-hog: a normal-priority busy loop pinned to one CPU that reports how
 * much it got done per interval, to show whether something else on that
 * CPU (a SCHED_FIFO thread spinning in a kernel wait) starves it.
 *
 *   cpu-hog --cpu N [--interval-ms M]
 *
 * Prints "READY\n" once pinned, then one line per interval:
 *   HOG <start_ns> <end_ns> <iterations> <cpu_ns>
 * CLOCK_MONOTONIC times of the interval, the loop iterations it made and
 * the CPU time it got in it (what the machine's clock speed and other load
 * do not change: the share of the CPU a competitor left it).
 * An interval ends at the first clock check after M ms: a starved hog's
 * interval is longer and holds few iterations. Runs until SIGTERM, SIGINT
 * or its standard output closes; exit status 0, 2 for bad usage, 1 if it
 * cannot pin itself.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Iterations between clock reads: a read every few microseconds. */
#define CHECK_EVERY 4096u

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
        (void)sig;
        stop = 1;
}

static int64_t monotonic_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t cpu_time_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *ret)
{
        char *end;

        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (*s == '\0' || *s == '-' || *end != '\0' || errno != 0 || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static void usage(FILE *f)
{
        fputs("Usage: cpu-hog --cpu N [--interval-ms M]\n"
              "Busy-loop at normal priority pinned to CPU N; print READY, then per interval of M ms\n"
              "(default 10) a line \"HOG <start_ns> <end_ns> <iterations> <cpu_ns>\" (CLOCK_MONOTONIC\n"
              "times, loop iterations, CPU time the hog got in the interval).\n"
              "Stops on SIGTERM, SIGINT or when standard output closes.\n",
              f);
}

int main(int argc, char **argv)
{
        static const struct option options[] = {
                { "cpu", required_argument, NULL, 'c' },
                { "interval-ms", required_argument, NULL, 'i' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        unsigned long cpu = ULONG_MAX, interval_ms = 10;
        volatile uint64_t sink = 0;
        cpu_set_t set;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
                switch (c) {
                case 'c':
                        if (parse_uint(optarg, CPU_SETSIZE - 1, &cpu) < 0) {
                                fprintf(stderr, "cpu-hog: --cpu \"%s\": give a CPU number below %d.\n", optarg,
                                        CPU_SETSIZE);
                                return 2;
                        }
                        break;
                case 'i':
                        if (parse_uint(optarg, 60000, &interval_ms) < 0 || interval_ms == 0) {
                                fprintf(stderr, "cpu-hog: --interval-ms \"%s\": give 1 to 60000.\n", optarg);
                                return 2;
                        }
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (cpu == ULONG_MAX || optind != argc) {
                usage(stderr);
                return 2;
        }

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set) < 0) {
                fprintf(stderr, "cpu-hog: cannot pin to CPU %lu: %s; name an online CPU (see nproc).\n", cpu,
                        strerror(errno));
                return 1;
        }
        signal(SIGTERM, on_stop);
        signal(SIGINT, on_stop);
        signal(SIGPIPE, on_stop);
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (printf("READY\n") < 0)
                return 0;

        int64_t start = monotonic_ns(), cpu_start = cpu_time_ns();
        uint64_t iterations = 0;
        while (!stop) {
                for (unsigned i = 0; i < CHECK_EVERY; i++)
                        sink += i;
                iterations += CHECK_EVERY;
                int64_t now = monotonic_ns();
                if (now - start < (int64_t)interval_ms * 1000000)
                        continue;
                int64_t cpu_now = cpu_time_ns();
                if (printf("HOG %" PRId64 " %" PRId64 " %" PRIu64 " %" PRId64 "\n", start, now, iterations,
                           cpu_now - cpu_start) < 0)
                        break;
                start = now;
                cpu_start = cpu_now;
                iterations = 0;
        }
        return 0;
}
