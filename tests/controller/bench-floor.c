/* SPDX-License-Identifier: MIT */
/*
 * Two figures the reaction benchmark is judged against, measured on the
 * same machine in the same run (scripts/bench-reaction):
 *
 *   bench-floor wakeup N   the machine's cross-process wake-up floor: a
 *       process stamps the clock and writes an eventfd; another, asleep in
 *       poll(), stamps the clock when poll returns. No design that sleeps
 *       between events can react faster than this. N events, 1-2 ms apart.
 *   bench-floor store N    what a write breakpoint costs the online process:
 *       a child stores to a word N times, timed, without a breakpoint and
 *       with one armed (write_watch, as the daemon arms it), the parent's
 *       loop draining its samples as the daemon would; and what the daemon
 *       pays to arm and disarm that breakpoint (one thread, one queue: a
 *       perf ioctl each), the child waiting between rounds.
 *
 * Output: one JSON object. Simulated or not, these are this machine's.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "write-watch.h"

#define MAX_EVENTS 200000
/* Arm/disarm pairs timed per store benchmark. */
#define ARM_TOGGLES 1000

static int64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what)
{
        fprintf(stderr, "bench-floor: %s\n", what);
        exit(1);
}

static int compare_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

/* A child that dies with the benchmark; 0 in the child. */
static pid_t fork_child(void)
{
        pid_t child = fork();

        if (child < 0)
                die("fork failed");
        if (child == 0)
                prctl(PR_SET_PDEATHSIG, SIGKILL);
        return child;
}

/* Shared with the child: the writer's and the waker's stamps of each event. */
struct wakeup_shared {
        int64_t written[MAX_EVENTS], woken[MAX_EVENTS];
};

static void wakeup_floor(long n)
{
        struct wakeup_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        int efd = eventfd(0, EFD_CLOEXEC), ack = eventfd(0, EFD_CLOEXEC);
        static int64_t lat[MAX_EVENTS];
        uint64_t v = 1;
        pid_t child;

        if (sh == MAP_FAILED || efd < 0 || ack < 0)
                die("cannot set up the eventfd ping");
        child = fork_child();
        if (child == 0) {
                for (long i = 0; i < n; i++) {
                        struct pollfd p = { efd, POLLIN, 0 };
                        uint64_t got;

                        while (poll(&p, 1, -1) < 0 && errno == EINTR)
                                ;
                        sh->woken[i] = now_ns();
                        if (read(efd, &got, sizeof(got)) < 0 || write(ack, &v, sizeof(v)) < 0)
                                _exit(1);
                }
                _exit(0);
        }
        for (long i = 0; i < n; i++) {
                uint64_t got;

                /* 1-2 ms apart: the other side is properly asleep, as an idle daemon is */
                nanosleep(&(struct timespec){ 0, 1000000 + rand() % 1000000 }, NULL);
                sh->written[i] = now_ns();
                if (write(efd, &v, sizeof(v)) < 0 || read(ack, &got, sizeof(got)) < 0)
                        die("the eventfd ping failed");
        }
        waitpid(child, NULL, 0);
        for (long i = 0; i < n; i++)
                lat[i] = sh->woken[i] - sh->written[i];
        qsort(lat, (size_t)n, sizeof(int64_t), compare_i64);
        printf("{\"wakeup_events\":%ld,\"wakeup_p50_us\":%.1f,\"wakeup_p99_us\":%.1f}\n", n, lat[n / 2] / 1e3,
               lat[n * 99 / 100] / 1e3);
        munmap(sh, sizeof(*sh));
}

struct store_shared {
        volatile uint64_t word __attribute__((aligned(64)));
        volatile int go;        /* 1: time a round, 2: exit */
        volatile int64_t round_ns;
        volatile int done;
};

/* Takes the trap set's wake-ups as the daemon would: each one's samples marked read. */
static void take_stores(int epoll_fd, struct write_watch *w, int timeout_ms, long *samples)
{
        struct epoll_event e[8];
        int n = epoll_wait(epoll_fd, e, 8, timeout_ms);

        for (int i = 0; i < n; i++) {
                bool stored; /* its poll and this wait are the same thread's: nothing is lost between them */

                write_watch_consume(w, &stored);
                ++*samples;
        }
}

/* The mean time of arming and of disarming a breakpoint, in ns. */
static void arm_cost(struct write_watch *w, double *ret_arm_ns, double *ret_disarm_ns)
{
        int64_t arm = 0, disarm = 0;

        for (int i = 0; i < ARM_TOGGLES; i++) {
                int64_t t0 = now_ns(), t1, t2;

                if (write_watch_set_enabled(w, true) < 0)
                        die("cannot arm the breakpoint");
                t1 = now_ns();
                if (write_watch_set_enabled(w, false) < 0)
                        die("cannot disarm the breakpoint");
                t2 = now_ns();
                arm += t1 - t0;
                disarm += t2 - t1;
        }
        *ret_arm_ns = (double)arm / ARM_TOGGLES;
        *ret_disarm_ns = (double)disarm / ARM_TOGGLES;
}

/* Runs one timed round of n stores in the child; returns ns per store. */
static double store_round(struct store_shared *sh, int epoll_fd, struct write_watch *w, long n, long *samples)
{
        sh->done = 0;
        __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
        while (!__atomic_load_n(&sh->done, __ATOMIC_ACQUIRE))
                if (w)
                        take_stores(epoll_fd, w, 1, samples);
                else
                        usleep(1000);
        return (double)sh->round_ns / (double)n;
}

static void store_cost(long n)
{
        struct store_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        struct write_watch *w = NULL;
        int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        long samples = 0;
        double plain, armed, disarmed, arm_ns, disarm_ns;
        pid_t child;
        int r;

        if (sh == MAP_FAILED || epoll_fd < 0)
                die("cannot set up the store benchmark");
        child = fork_child();
        if (child == 0) {
                for (;;) {
                        int go;
                        int64_t t0;

                        while (!(go = __atomic_load_n(&sh->go, __ATOMIC_ACQUIRE)))
                                usleep(100);
                        if (go == 2)
                                _exit(0);
                        sh->go = 0;
                        t0 = now_ns();
                        for (long i = 0; i < n; i++)
                                sh->word = (uint64_t)i; /* the child's own store: the one a breakpoint traps */
                        sh->round_ns = now_ns() - t0;
                        __atomic_store_n(&sh->done, 1, __ATOMIC_RELEASE);
                }
        }
        plain = store_round(sh, epoll_fd, NULL, n, &samples);
        r = write_watch_new(epoll_fd, 0, child, (uint64_t)(uintptr_t)&sh->word, &w);
        if (r < 0) {
                fprintf(stderr, "bench-floor: no write breakpoint: %s\n", write_watch_strerror(r));
                exit(1);
        }
        write_watch_set_enabled(w, true);
        armed = store_round(sh, epoll_fd, w, n, &samples);
        write_watch_set_enabled(w, false);
        disarmed = store_round(sh, epoll_fd, w, n, &samples);
        arm_cost(w, &arm_ns, &disarm_ns);
        sh->go = 2;
        waitpid(child, NULL, 0);
        write_watch_free(w);
        close(epoll_fd);
        printf("{\"stores\":%ld,\"store_plain_ns\":%.1f,\"store_armed_ns\":%.1f,\"store_disarmed_ns\":%.1f,"
               "\"armed_wakeups_seen\":%ld,\"arm_ns\":%.1f,\"disarm_ns\":%.1f}\n",
               n, plain, armed, disarmed, samples, arm_ns, disarm_ns);
        munmap(sh, sizeof(*sh));
}

int main(int argc, char **argv)
{
        long n = argc == 3 ? strtol(argv[2], NULL, 10) : 0;

        if (argc != 3 || n < 1 || n > MAX_EVENTS || (strcmp(argv[1], "wakeup") != 0 && strcmp(argv[1], "store") != 0)) {
                fprintf(stderr, "usage: bench-floor wakeup|store N   (N: 1..%d)\n", MAX_EVENTS);
                return 2;
        }
        if (strcmp(argv[1], "wakeup") == 0)
                wakeup_floor(n);
        else
                store_cost(n);
        return 0;
}
