/* SPDX-License-Identifier: MIT */
/*
 * The figures the reaction benchmark is judged against, measured on the
 * same machine in the same run (scripts/bench-reaction):
 *
 *   bench-floor wakeup N   the machine's cross-process wake-up floor: a
 *       process stamps the clock and writes an eventfd; another, asleep in
 *       poll(), stamps the clock when poll returns. No design that sleeps
 *       between events can react faster than this.
 *   bench-floor trap N     the write breakpoint's wake-up floor: a process
 *       stamps the clock and stores to a word under a write breakpoint
 *       (write_watch, armed as the daemon arms it); another, asleep in
 *       epoll_wait() on the watch's epoll set as the daemon's preemption
 *       worker is, stamps the clock when epoll_wait returns. No design that
 *       learns of the store from a breakpoint can react faster than this.
 *   bench-floor poll N [US]  the polling detector's floor: a thread waits
 *       US µs (default 20, BusyPollIntervalUs) N times in epoll_pwait2() on
 *       an empty epoll set, its timer slack 1 ns, as the preemption worker
 *       waits between polls: how long each wait took (the period of polls at
 *       that cadence: no design that sleeps between polls looks sooner) and
 *       what the waits cost the process's CPU, as a share of a core. On a VM
 *       each timer wake-up is an exit to the hypervisor and an injected
 *       interrupt, which a bare-metal run does not pay.
 *   bench-floor store N    what a write breakpoint costs the online process:
 *       a child stores to a word N times, timed, without a breakpoint and
 *       with one armed (write_watch, as the daemon arms it), the parent's
 *       loop draining its samples as the daemon would; and what the daemon
 *       pays to arm and disarm that breakpoint (one thread, one queue: a
 *       perf ioctl each), the child waiting between rounds.
 *
 * wakeup and trap run the same events: N of them, 1-2 ms apart, the child
 * (the online process's side) signalling and the parent (the daemon's
 * side) waiting, each event acknowledged before the next.
 *
 * Output: one JSON object. Simulated or not, these are this machine's.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
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
/* How long the waiting side waits for one event: far beyond any wake-up, and no benchmark hangs. */
#define WAKE_TIMEOUT_MS 10000

static int64_t read_clock_ns(clockid_t clock)
{
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t now_ns(void)
{
        return read_clock_ns(CLOCK_MONOTONIC);
}

static void die(const char *format, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *format, ...)
{
        va_list ap;

        fputs("bench-floor: ", stderr);
        va_start(ap, format);
        vfprintf(stderr, format, ap);
        va_end(ap);
        fputc('\n', stderr);
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
                die("fork failed: %s", strerror(errno));
        if (child == 0)
                prctl(PR_SET_PDEATHSIG, SIGKILL);
        return child;
}

/*
 * Whether a wait whose answer is n (poll's or epoll_wait's) was woken:
 * false when a signal interrupted it, so that the caller waits again.
 */
static bool woken(int n, const char *waiter)
{
        if (n < 0 && errno == EINTR)
                return false;
        if (n < 0)
                die("%s failed: %s", waiter, strerror(errno));
        if (n == 0)
                die("no wake-up within %d s: the signalling process died, or the machine stalls",
                    WAKE_TIMEOUT_MS / 1000);
        return true;
}

/* A wake-up mechanism from the online process's side (the child) to the daemon's (the parent). */
struct wake_mechanism {
        const char *name; /* the JSON keys' prefix */
        /* In the parent, once the child exists and before its first event; NULL: nothing to do. */
        void (*attach)(void *ctx, pid_t child);
        /* In the child, right after its stamp: wakes the parent. Returns 0 or -errno. */
        int (*signal)(void *ctx, long event);
        /* In the parent: returns once woken. */
        void (*wait)(void *ctx);
        /* In the parent, after its stamp: takes the wake-up, ready for the next event. */
        void (*take)(void *ctx);
};

/* Shared with the child: both sides' stamps of each event. */
struct event_stamps {
        int64_t signalled[MAX_EVENTS], woken[MAX_EVENTS];
};

/* Prints {"NAME_events":n,"NAME_p50_us":..,"NAME_p99_us":..} of the n latencies in lat (sorted here). */
static void print_percentiles(const char *name, int64_t *lat, long n)
{
        qsort(lat, (size_t)n, sizeof(int64_t), compare_i64);
        printf("{\"%s_events\":%ld,\"%s_p50_us\":%.1f,\"%s_p99_us\":%.1f}\n", name, n, name, lat[n / 2] / 1e3, name,
               lat[n * 99 / 100] / 1e3);
}

/* Lets the child start its next event, or exit after its last. */
static void acknowledge(int ack)
{
        uint64_t one = 1;

        if (write(ack, &one, sizeof(one)) != sizeof(one))
                die("cannot write the acknowledging eventfd: %s", strerror(errno));
}

/* Times n events of m from the child's stamp to the parent's, and prints their percentiles. */
static void measure_wakeups(const struct wake_mechanism *m, void *ctx, long n)
{
        struct event_stamps *stamps = mmap(NULL, sizeof(*stamps), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                                           -1, 0);
        int ack = eventfd(0, EFD_CLOEXEC), status;
        static int64_t lat[MAX_EVENTS];
        uint64_t got;
        pid_t child;

        if (stamps == MAP_FAILED || ack < 0)
                die("cannot set up the %s benchmark: %s", m->name, strerror(errno));
        child = fork_child();
        if (child == 0) {
                /* the ack after the last event lets it exit: not before the parent took that event */
                for (long i = 0;; i++) {
                        if (read(ack, &got, sizeof(got)) != sizeof(got))
                                _exit(1);
                        if (i == n)
                                _exit(0);
                        /* 1-2 ms apart: the other side is properly asleep, as an idle daemon is */
                        nanosleep(&(struct timespec){ 0, 1000000 + rand() % 1000000 }, NULL);
                        stamps->signalled[i] = now_ns();
                        if (m->signal(ctx, i) < 0)
                                _exit(1);
                }
        }
        if (m->attach)
                m->attach(ctx, child);
        for (long i = 0; i < n; i++) {
                acknowledge(ack);
                m->wait(ctx);
                stamps->woken[i] = now_ns();
                m->take(ctx);
        }
        acknowledge(ack);
        if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                die("the %s benchmark's signalling process failed", m->name);
        for (long i = 0; i < n; i++)
                lat[i] = stamps->woken[i] - stamps->signalled[i];
        print_percentiles(m->name, lat, n);
        close(ack);
        munmap(stamps, sizeof(*stamps));
}

/* ---- wakeup: an eventfd ping ---- */

struct eventfd_ping {
        int fd;
};

static int eventfd_ping_signal(void *ctx, long event)
{
        struct eventfd_ping *e = ctx;
        uint64_t one = 1;

        (void)event;
        return write(e->fd, &one, sizeof(one)) == sizeof(one) ? 0 : -errno;
}

static void eventfd_ping_wait(void *ctx)
{
        struct eventfd_ping *e = ctx;
        struct pollfd p = { e->fd, POLLIN, 0 };

        while (!woken(poll(&p, 1, WAKE_TIMEOUT_MS), "poll"))
                ;
}

static void eventfd_ping_take(void *ctx)
{
        struct eventfd_ping *e = ctx;
        uint64_t got;

        if (read(e->fd, &got, sizeof(got)) != sizeof(got))
                die("cannot read the eventfd: %s", strerror(errno));
}

static void wakeup_floor(long n)
{
        static const struct wake_mechanism eventfd_mechanism = {
                .name = "wakeup",
                .signal = eventfd_ping_signal,
                .wait = eventfd_ping_wait,
                .take = eventfd_ping_take,
        };
        struct eventfd_ping e = { eventfd(0, EFD_CLOEXEC) };

        if (e.fd < 0)
                die("cannot create an eventfd: %s", strerror(errno));
        measure_wakeups(&eventfd_mechanism, &e, n);
        close(e.fd);
}

/*
 * ---- trap: a store under a write breakpoint ----
 *
 * What lies between the store and the waiter's wake-up (Linux, checked
 * against 6.18): the store raises #DB, whose handler (arch/x86/kernel/
 * traps.c exc_debug_user()) runs the DIE_DEBUG notifiers with interrupts
 * off; hw_breakpoint_handler() (arch/x86/kernel/hw_breakpoint.c) hands the
 * hit to perf_bp_event() (kernel/events/core.c), which writes the sample
 * into the ring buffer. With wakeup_events = 1 that output asks for a
 * wake-up, but perf_output_wakeup() (kernel/events/ring_buffer.c) cannot
 * wake anyone from the exception: it queues the event's irq_work, on x86 a
 * self-IPI (arch/x86/kernel/irq_work.c arch_irq_work_raise()), taken when
 * interrupts come back on as the exception returns to user mode. Its
 * handler, perf_pending_irq() -> perf_event_wakeup() -> ring_buffer_wakeup(),
 * wakes the breakpoint fd's wait queue, whose epoll callback
 * (fs/eventpoll.c ep_poll_callback()) wakes the sleeper in epoll_wait() as
 * an eventfd write wakes its poller. So this floor is the eventfd floor's
 * wake-up plus a debug exception and an interrupt on the storing CPU. In a
 * KVM guest the #DB is intercepted besides (arch/x86/kvm/svm/svm.c
 * init_vmcb(), since commit cbdb967af3d5 "KVM: svm: unconditionally
 * intercept #DB"; arch/x86/kvm/vmx/vmx.c vmx_update_exception_bitmap()):
 * each trap is also a VM exit and an injected exception.
 */
struct trap_ping {
        volatile uint64_t word; /* the child's copy, at the same address, is the one stored to */
        int epoll_fd;
        struct write_watch *watch;
};

static void trap_ping_attach(void *ctx, pid_t child)
{
        struct trap_ping *t = ctx;
        int r = write_watch_new(t->epoll_fd, 0, child, (uint64_t)(uintptr_t)&t->word, &t->watch);

        if (r < 0)
                die("no write breakpoint: %s", write_watch_strerror(r));
        r = write_watch_set_enabled(t->watch, true);
        if (r < 0)
                die("cannot arm the breakpoint: %s", strerror(-r));
}

static int trap_ping_signal(void *ctx, long event)
{
        struct trap_ping *t = ctx;

        t->word = (uint64_t)event;
        return 0;
}

static void trap_ping_wait(void *ctx)
{
        struct trap_ping *t = ctx;
        struct epoll_event e;

        while (!woken(epoll_wait(t->epoll_fd, &e, 1, WAKE_TIMEOUT_MS), "epoll_wait"))
                ;
}

/*
 * As the daemon takes a trap: the samples marked read, the writer's
 * breakpoint disarmed (preemption-worker.c disarm_writer(); the trap itself
 * leaves it armed), and armed again as the detector does once the GPU is
 * idle (detector.c gpu_set_armed()), so that every event starts from the
 * daemon's state.
 */
static void trap_ping_take(void *ctx)
{
        struct trap_ping *t = ctx;
        bool stored;
        int r;

        if (write_watch_consume(t->watch, &stored))
                die("the storing process exited");
        r = write_watch_set_enabled(t->watch, false);
        if (r >= 0)
                r = write_watch_set_enabled(t->watch, true);
        if (r < 0)
                die("cannot disarm and re-arm the breakpoint: %s", strerror(-r));
}

static void trap_floor(long n)
{
        static const struct wake_mechanism trap_mechanism = {
                .name = "trap",
                .attach = trap_ping_attach,
                .signal = trap_ping_signal,
                .wait = trap_ping_wait,
                .take = trap_ping_take,
        };
        struct trap_ping t = { .epoll_fd = epoll_create1(EPOLL_CLOEXEC) };

        if (t.epoll_fd < 0)
                die("cannot create an epoll set: %s", strerror(errno));
        measure_wakeups(&trap_mechanism, &t, n);
        write_watch_free(t.watch);
        close(t.epoll_fd);
}

/* ---- store: what an armed breakpoint costs a store, and arming it the daemon ---- */

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
        if (r < 0)
                die("no write breakpoint: %s", write_watch_strerror(r));
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

static void poll_floor(long n, long interval_us)
{
        static int64_t period[MAX_EVENTS];
        struct timespec wait = { .tv_sec = interval_us / 1000000, .tv_nsec = interval_us % 1000000 * 1000 };
        struct epoll_event event;
        int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        int64_t start, cpu_start, last;
        double cpu_percent;

        if (epoll_fd < 0 || prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) < 0)
                die("cannot make an epoll set or set the timer slack: %s", strerror(errno));
        cpu_start = read_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
        start = last = now_ns();
        for (long i = 0; i < n; i++) {
                int64_t now;

                if (epoll_pwait2(epoll_fd, &event, 1, &wait, NULL) < 0 && errno != EINTR)
                        die("epoll_pwait2: %s", strerror(errno));
                now = now_ns();
                period[i] = now - last;
                last = now;
        }
        cpu_percent = 100.0 * (double)(read_clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_start) / (double)(last - start);
        close(epoll_fd);
        qsort(period, (size_t)n, sizeof(int64_t), compare_i64);
        printf("{\"poll_events\":%ld,\"poll_interval_us\":%ld,\"poll_p50_us\":%.1f,\"poll_p99_us\":%.1f,"
               "\"poll_cpu_percent\":%.1f}\n",
               n, interval_us, period[n / 2] / 1e3, period[n * 99 / 100] / 1e3, cpu_percent);
}

static const struct {
        const char *name;
        void (*run)(long n);
} benchmarks[] = {
        { "wakeup", wakeup_floor },
        { "trap", trap_floor },
        { "store", store_cost },
};

/* A positive number up to max, all of text; 0 if not. */
static long parse_count(const char *text, long max)
{
        char *end = NULL;
        long n = strtol(text, &end, 10);

        return *end == '\0' && n >= 1 && n <= max ? n : 0;
}

int main(int argc, char **argv)
{
        long n = argc >= 3 ? parse_count(argv[2], MAX_EVENTS) : 0;

        if (argc >= 3 && argc <= 4 && n && strcmp(argv[1], "poll") == 0) {
                long interval_us = argc == 4 ? parse_count(argv[3], 1000000) : 20;

                if (interval_us) {
                        poll_floor(n, interval_us);
                        return 0;
                }
        }
        if (argc == 3 && n)
                for (size_t i = 0; i < sizeof(benchmarks) / sizeof(benchmarks[0]); i++)
                        if (strcmp(argv[1], benchmarks[i].name) == 0) {
                                benchmarks[i].run(n);
                                return 0;
                        }
        fprintf(stderr, "usage: bench-floor wakeup|trap|store N   (N: 1..%d)\n"
                        "       bench-floor poll N [INTERVAL_US]   (INTERVAL_US: 1..1000000, default 20)\n",
                MAX_EVENTS);
        return 2;
}
