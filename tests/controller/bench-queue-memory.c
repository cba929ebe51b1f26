/* SPDX-License-Identifier: MIT */
/*
 * What queue-memory.c's /proc/PID/mem fallback costs a read against
 * process_vm_readv (scripts/bench-queue-memory; docs/benchmarks/daemon-internals.md).
 *
 * A second process holds QUEUES queues' indices (one range of 0x50 bytes
 * each, as the detector reads an amd_queue_t) twice: in readable pages,
 * which the reader keeps reading with process_vm_readv, and in PROT_NONE
 * pages, which switch it to pread() on /proc/PID/mem (the same split as a
 * VM_PFNMAP mapping; see tests/controller/test-queue-memory.c). The two
 * paths are timed alternately, read by read, in one run.
 *
 * usage: bench-queue-memory [--runs N] [--reads N] [--queues N]
 * Prints, per run, the median time of one read of all queues on each path,
 * and then the median (min-max) of the runs' medians and of their ratio.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "monotonic-clock.h"
#include "queue-memory.h"

#define RANGE_BYTES 0x50
#define MAX_QUEUES 64

static int compare_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, size_t n)
{
        qsort(v, n, sizeof(*v), compare_u64);
        return v[n / 2];
}

/* The child: two regions of `queues` pages, the second PROT_NONE; it sends their addresses and waits. */
static pid_t start_child(unsigned queues, char **ret_readable, char **ret_protected)
{
        long page = sysconf(_SC_PAGESIZE);
        int fds[2];
        char *addrs[2];
        pid_t pid;

        if (pipe(fds) < 0)
                return -1;
        pid = fork();
        if (pid == 0) {
                char *a = mmap(NULL, 2 * queues * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

                if (a == MAP_FAILED)
                        _exit(2);
                memset(a, 0x5a, 2 * queues * page);
                mprotect(a + queues * page, queues * page, PROT_NONE);
                addrs[0] = a;
                addrs[1] = a + queues * page;
                if (write(fds[1], addrs, sizeof(addrs)) != sizeof(addrs))
                        _exit(2);
                pause();
                _exit(0);
        }
        close(fds[1]);
        if (pid < 0 || read(fds[0], addrs, sizeof(addrs)) != sizeof(addrs)) {
                close(fds[0]);
                return -1;
        }
        close(fds[0]);
        *ret_readable = addrs[0];
        *ret_protected = addrs[1];
        return pid;
}

static uint64_t time_read(struct queue_memory *m, void *buf, const struct iovec *remote, unsigned n)
{
        uint64_t start = monotonic_clock_ns();
        size_t bytes;
        bool switched;

        if (queue_memory_read(m, buf, remote, n, &bytes, &switched) < 0) {
                fprintf(stderr, "bench-queue-memory: a read failed\n");
                exit(1);
        }
        return monotonic_clock_ns() - start;
}

int main(int argc, char **argv)
{
        static const struct option options[] = {
                { "runs", required_argument, NULL, 'r' },
                { "reads", required_argument, NULL, 'n' },
                { "queues", required_argument, NULL, 'q' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        unsigned runs = 5, reads = 20000, queues = 8;
        long page = sysconf(_SC_PAGESIZE);
        uint64_t *readv_ns, *mem_ns, readv_medians[64], mem_medians[64], ratios[64];
        int opt;

        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (opt) {
                case 'r':
                        runs = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'n':
                        reads = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'q':
                        queues = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'h':
                        printf("usage: %s [--runs N (1-64)] [--reads N] [--queues N (1-%d)]\n", argv[0], MAX_QUEUES);
                        return 0;
                default:
                        return 2;
                }
        }
        if (runs < 1 || runs > 64 || reads < 1 || queues < 1 || queues > MAX_QUEUES) {
                fprintf(stderr, "bench-queue-memory: --runs 1-64, --reads at least 1, --queues 1-%d\n", MAX_QUEUES);
                return 2;
        }
        readv_ns = calloc(reads, sizeof(*readv_ns));
        mem_ns = calloc(reads, sizeof(*mem_ns));
        if (!readv_ns || !mem_ns)
                return 1;

        printf("%u queues, %u reads of each path per run\n", queues, reads);
        for (unsigned run = 0; run < runs; run++) {
                struct iovec readable[MAX_QUEUES], protected[MAX_QUEUES];
                unsigned char buf[MAX_QUEUES * RANGE_BYTES];
                struct queue_memory *on_readv = NULL, *on_mem = NULL;
                char *readable_base, *protected_base;
                pid_t child = start_child(queues, &readable_base, &protected_base);

                if (child < 0) {
                        fprintf(stderr, "bench-queue-memory: cannot start the second process: %m\n");
                        return 1;
                }
                for (unsigned q = 0; q < queues; q++) {
                        readable[q] = (struct iovec){ readable_base + q * page + 0x38, RANGE_BYTES };
                        protected[q] = (struct iovec){ protected_base + q * page + 0x38, RANGE_BYTES };
                }
                if (queue_memory_new("/proc", child, &on_readv) < 0 || queue_memory_new("/proc", child, &on_mem) < 0)
                        return 1;
                /* the first read of the protected copy makes the switch */
                time_read(on_mem, buf, protected, queues);
                if (!queue_memory_uses_proc_mem(on_mem) || queue_memory_uses_proc_mem(on_readv)) {
                        fprintf(stderr, "bench-queue-memory: the reader did not take the paths measured\n");
                        return 1;
                }
                for (unsigned i = 0; i < reads; i++) {
                        readv_ns[i] = time_read(on_readv, buf, readable, queues);
                        mem_ns[i] = time_read(on_mem, buf, protected, queues);
                }
                readv_medians[run] = median(readv_ns, reads);
                mem_medians[run] = median(mem_ns, reads);
                ratios[run] = mem_medians[run] * 100 / readv_medians[run];
                printf("run %u: process_vm_readv %" PRIu64 " ns, /proc/PID/mem %" PRIu64 " ns per read of all queues\n",
                       run + 1, readv_medians[run], mem_medians[run]);
                queue_memory_free(on_readv);
                queue_memory_free(on_mem);
                kill(child, SIGKILL);
                waitpid(child, NULL, 0);
        }
        qsort(readv_medians, runs, sizeof(uint64_t), compare_u64);
        qsort(mem_medians, runs, sizeof(uint64_t), compare_u64);
        qsort(ratios, runs, sizeof(uint64_t), compare_u64);
        printf("process_vm_readv: median %" PRIu64 " ns (%" PRIu64 "-%" PRIu64 ")\n", readv_medians[runs / 2],
               readv_medians[0], readv_medians[runs - 1]);
        printf("/proc/PID/mem:    median %" PRIu64 " ns (%" PRIu64 "-%" PRIu64 ")\n", mem_medians[runs / 2],
               mem_medians[0], mem_medians[runs - 1]);
        printf("ratio:            median %" PRIu64 " %% (%" PRIu64 "-%" PRIu64 ")\n", ratios[runs / 2], ratios[0],
               ratios[runs - 1]);
        free(readv_ns);
        free(mem_ns);
        return 0;
}
