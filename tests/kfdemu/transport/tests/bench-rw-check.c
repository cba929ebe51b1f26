/* SPDX-License-Identifier: MIT */
/*
 * What the preload's read/write check (is it a kfd file?) costs every
 * read and write of an emulated process: read(2) through libc (the
 * preload's wrapper) against the raw syscall, on a non-socket (/dev/null,
 * as a timerfd or eventfd) and on a socket (an empty non-blocking one).
 * Run inside kfdemu-run. Prints, per fd kind, the median and range over
 * RUNS runs of the extra nanoseconds per call (docs/benchmarks/kfdemu.md).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { RUNS = 15, CALLS = 200000 };

static double now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double per_call(int fd, int raw)
{
        char c;
        double start = now_ns();

        for (int i = 0; i < CALLS; i++) {
                if (raw)
                        syscall(SYS_read, fd, &c, 1);
                else
                        (void)!read(fd, &c, 1);
        }
        return (now_ns() - start) / CALLS;
}

static int compare(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

static void measure(const char *what, int fd)
{
        double extra[RUNS];

        per_call(fd, 0); /* warm-up */
        for (int r = 0; r < RUNS; r++) {
                double raw = per_call(fd, 1);
                extra[r] = per_call(fd, 0) - raw;
        }
        qsort(extra, RUNS, sizeof(extra[0]), compare);
        printf("%-10s extra ns per read: median %.0f, range %.0f..%.0f (%d runs of %d calls)\n", what,
               extra[RUNS / 2], extra[0], extra[RUNS - 1], RUNS, CALLS);
}

int main(void)
{
        int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int sv[2];

        if (null_fd < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
                perror("bench-rw-check");
                return 1;
        }
        if (!getenv("KFDEMU_SOCKET"))
                fprintf(stderr, "bench-rw-check: not inside kfdemu-run, measuring nothing but libc\n");
        measure("non-socket", null_fd);
        measure("socket", sv[0]);
        return 0;
}
