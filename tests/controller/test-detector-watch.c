/* SPDX-License-Identifier: MIT */
/*
 * The detector's write breakpoints against a real second process: a store by
 * any of its threads (one there before arming, one created after) wakes a
 * wait on the trap set with no poll; the writer is disarmed on that trap (by
 * the detector, or by the waiter with the fds it was given), another
 * process on the GPU keeps its breakpoint, and all are armed again when
 * polling sees the GPU idle, but not while the owner holds its arming (its
 * offline work suspended); a refused breakpoint (the fifth queue of a process,
 * or no debug register left because another watcher holds them) leaves the
 * queue to polling, which still sees its work; a process that exits while
 * armed neither hangs nor spins the loop; a store whose wake-up the owner's
 * reading of a hang-up took is seen all the same. Needs perf_event_open on another
 * process (root, or CAP_PERFMON), as the daemon does.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <cmocka.h>

#include "detector-gpu-status.h"
#include "detector.h"
#include "fake-online-process.h"
#include "monotonic-clock.h"

/* Waits for the loop to deliver something are bounded by this many 100 ms turns. */
#define MAX_TURNS 100

struct seen {
        int busy, idle;
        bool arming_held;     /* the owner's answer to arming_held() */
        bool resume_on_idle;  /* on_idle() ends the hold, as the owner's resume does */
        pid_t gone;
        uint64_t key;  /* the last breakpoint opened */
        int fds[16];
        size_t n_fds;
};

static void on_busy(uint32_t gpu_id, uint64_t now, void *userdata)
{
        ((struct seen *)userdata)->busy++;
}

static void on_idle(uint32_t gpu_id, uint64_t since, uint64_t now, void *userdata)
{
        struct seen *seen = userdata;

        seen->idle++;
        if (seen->resume_on_idle)
                seen->arming_held = false;
}

static bool on_arming_held(uint32_t gpu_id, void *userdata)
{
        return ((struct seen *)userdata)->arming_held;
}

static void on_gone(pid_t pid, void *userdata)
{
        ((struct seen *)userdata)->gone = pid;
}

static void on_opened(uint64_t key, pid_t pid, const int *fds, size_t n_fds, void *userdata)
{
        struct seen *seen = userdata;

        assert_true(n_fds <= 16);
        seen->key = key;
        seen->n_fds = n_fds;
        memcpy(seen->fds, fds, n_fds * sizeof(*fds));
}

static const struct detector_callbacks callbacks = {
        .gpu_busy = on_busy,
        .gpu_idle = on_idle,
        .process_gone = on_gone,
        .breakpoint_opened = on_opened,
        .arming_held = on_arming_held,
};

struct fixture {
        struct detector *detector;
        struct fake_online_process online;
        struct seen seen;
        uint64_t trap_us; /* when the last trap was taken */
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        assert_int_equal(detector_new(&callbacks, &f->seen, DETECTOR_MODE_BREAKPOINT, &f->detector), 0);
        fake_online_process_start(&f->online, 5);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        detector_free(f->detector);
        fake_online_process_stop(&f->online);
        free(f);
        return 0;
}

static bool gpu_needs_poll(struct detector *d, uint32_t gpu_id)
{
        return detector_gpu_status_of(d, gpu_id).needs_poll;
}

/* Waits on the trap set as the daemon's worker does, up to timeout_ms, and hands what it got back; returns how many. */
static int take_traps(struct fixture *f, int timeout_ms)
{
        struct epoll_event e[8];
        int n = epoll_wait(detector_trap_fd(f->detector), e, 8, timeout_ms);

        assert_true(n >= 0);
        f->trap_us = monotonic_clock_us();
        for (int i = 0; i < n; i++)
                detector_trapped(f->detector, e[i].data.u64, e[i].events, f->trap_us, false);
        return n;
}

/* Takes traps until the detector has reported busy `want` times. */
static void run_until_busy(struct fixture *f, int want)
{
        for (int i = 0; i < MAX_TURNS && f->seen.busy < want; i++)
                take_traps(f, 100);
        assert_int_equal(f->seen.busy, want);
}

/* Which of f->online's queues a status is of: the detector lists each GPU's polled queues first. */
static size_t online_queue_of(struct fixture *f, const struct detector_queue_status *q)
{
        for (size_t k = 0; k < 5; k++)
                if (fake_queue_addr(&f->online, k, 1).write_pointer_address == q->write_pointer_address)
                        return k;
        fail_msg("no queue of the online process at 0x%" PRIx64, q->write_pointer_address);
        return 0;
}

static void watch_queues(struct fixture *f, size_t n)
{
        struct detector_queue_addr addr[5];

        for (size_t q = 0; q < n; q++)
                addr[q] = fake_queue_addr(&f->online, q, 1);
        assert_int_equal(detector_watch(f->detector, f->online.pid, addr, n), 0);
}

/* Watches one queue and arms it with its first poll. */
static void watch_and_arm_one(struct fixture *f)
{
        watch_queues(f, 1);
        assert_true(gpu_needs_poll(f->detector, 1)); /* not armed until a poll has looked */
        detector_poll(f->detector, 1);
        assert_false(gpu_needs_poll(f->detector, 1));
        assert_int_equal(f->seen.busy, 0);
}

static void store_caught_then_disarmed_then_rearmed(struct fixture *f, enum fake_store_by by)
{
        struct detector_queue_status q;

        watch_and_arm_one(f);
        assert_int_equal(detector_process_queues(f->detector, f->online.pid, &q, 1), 1);
        assert_true(q.breakpoint);
        assert_null(q.poll_reason);

        fake_child_store(&f->online, 0, 1, by);
        run_until_busy(f, 1); /* no poll: the breakpoint woke the wait */
        assert_true(gpu_needs_poll(f->detector, 1)); /* disarmed: polling follows the work */

        /* a second store while busy does not trap */
        fake_child_store(&f->online, 0, 2, by);
        assert_int_equal(take_traps(f, 50), 0);

        detector_poll(f->detector, 10); /* sees the move: still busy */
        assert_int_equal(f->seen.idle, 0);
        *fake_read_index(&f->online, 0) = 2; /* the GPU caught up */
        detector_poll(f->detector, 20);
        assert_int_equal(f->seen.idle, 1);
        assert_false(gpu_needs_poll(f->detector, 1)); /* armed again */

        fake_child_store(&f->online, 0, 3, by);
        run_until_busy(f, 2);
}

static void test_store_by_main_thread(void **state)
{
        store_caught_then_disarmed_then_rearmed(*state, FAKE_STORE_BY_MAIN);
}

static void test_store_by_thread_older_than_arming(void **state)
{
        store_caught_then_disarmed_then_rearmed(*state, FAKE_STORE_BY_EARLY_THREAD);
}

static void test_store_by_thread_created_after_arming(void **state)
{
        store_caught_then_disarmed_then_rearmed(*state, FAKE_STORE_BY_NEW_THREAD);
}

/*
 * A second online process (the writer, one queue) beside one of the
 * fixture's on GPU 1, watched first or second (looks read processes in that
 * order), and the GPU armed.
 */
static void watch_writer_and_arm(struct fixture *f, struct fake_online_process *writer, bool writer_first)
{
        struct detector_queue_addr addr;

        fake_online_process_start(writer, 1);
        addr = fake_queue_addr(writer, 0, 1);
        if (!writer_first)
                watch_queues(f, 1);
        assert_int_equal(detector_watch(f->detector, writer->pid, &addr, 1), 0);
        if (writer_first)
                watch_queues(f, 1);
        detector_poll(f->detector, 5000);
        assert_false(gpu_needs_poll(f->detector, 1));
}

/*
 * A trap says that a queue of the GPU was written, not which: the look after
 * it reads every process, even a quick one, so the writer's outstanding work
 * keeps the GPU busy. (A quick look reads one quiet process per look; here
 * the other process has that turn.)
 */
static void test_look_after_trap_reads_every_process(void **state)
{
        struct fixture *f = *state;
        struct fake_online_process writer;
        uint64_t trap;

        watch_writer_and_arm(f, &writer, false);
        fake_child_store(&writer, 0, 1, FAKE_STORE_BY_MAIN);
        run_until_busy(f, 1);
        trap = f->trap_us;
        detector_quick_look_gpu(f->detector, 1, trap + 10);
        assert_int_equal(f->seen.idle, 0);
        *fake_read_index(&writer, 0) = 1;
        detector_quick_look_gpu(f->detector, 1, trap + 20); /* the writer moved: read at every look now */
        assert_int_equal(f->seen.idle, 1);
        fake_online_process_stop(&writer);
}

/*
 * A trap during an idle look that gave way (detector_poll_gpu_until) starts
 * the look afresh: the writer may be a process the look had read already,
 * and going on with the others only would find the GPU idle.
 */
static void test_trap_during_a_look_starts_it_afresh(void **state)
{
        struct fixture *f = *state;
        struct fake_online_process writer;
        struct detector_queue_addr addr[5];
        uint64_t trap;

        /* five queues each: the fifth is polled, so that an idle look reads both processes */
        fake_online_process_start(&writer, 5);
        for (size_t q = 0; q < 5; q++)
                addr[q] = fake_queue_addr(&writer, q, 1);
        assert_int_equal(detector_watch(f->detector, writer.pid, addr, 5), 0); /* read first */
        watch_queues(f, 5);
        detector_poll(f->detector, 5000); /* armed, the first queue of each among the four */
        assert_false(detector_poll_gpu_until(f->detector, 1, 6000, 0)); /* read the writer, gave way */
        fake_child_store(&writer, 0, 1, FAKE_STORE_BY_MAIN); /* work the GPU has not done yet */
        run_until_busy(f, 1);
        trap = f->trap_us;
        assert_true(detector_poll_gpu_until(f->detector, 1, trap + 10, 0));
        assert_int_equal(f->seen.idle, 0);
        *fake_read_index(&writer, 0) = 1;
        detector_poll(f->detector, trap + 20);
        assert_int_equal(f->seen.idle, 1);
        fake_online_process_stop(&writer);
}

/* A trap disarms the writer's breakpoint alone: another process on the GPU keeps its own, and traps in turn. */
static void test_trap_disarms_the_writer_only(void **state)
{
        struct fixture *f = *state;
        struct fake_online_process writer;

        watch_writer_and_arm(f, &writer, false);
        fake_child_store(&writer, 0, 1, FAKE_STORE_BY_MAIN);
        run_until_busy(f, 1);
        fake_child_store(&writer, 0, 2, FAKE_STORE_BY_MAIN);
        assert_int_equal(take_traps(f, 50), 0); /* the writer's is disarmed */
        fake_child_store(&f->online, 0, 1, FAKE_STORE_BY_MAIN);
        assert_int_equal(take_traps(f, 5000), 1); /* the other's is not */
        fake_child_store(&f->online, 0, 2, FAKE_STORE_BY_MAIN);
        assert_int_equal(take_traps(f, 50), 0); /* and now is */
        assert_int_equal(f->seen.busy, 1);
        fake_online_process_stop(&writer);
}

/*
 * A waiter that disarms the writer itself, with the fds breakpoint_opened()
 * gave (the daemon's worker): the detector records it, and the next idle
 * look arms the breakpoint again.
 */
static void test_writer_disarmed_by_the_waiter(void **state)
{
        struct fixture *f = *state;
        struct epoll_event e;

        watch_and_arm_one(f);
        assert_true(f->seen.n_fds > 0);
        fake_child_store(&f->online, 0, 1, FAKE_STORE_BY_MAIN);
        assert_int_equal(epoll_wait(detector_trap_fd(f->detector), &e, 1, 5000), 1);
        assert_int_equal(e.data.u64, f->seen.key);
        for (size_t i = 0; i < f->seen.n_fds; i++)
                assert_int_equal(ioctl(f->seen.fds[i], PERF_EVENT_IOC_DISABLE, 0), 0);
        detector_trapped(f->detector, e.data.u64, e.events, monotonic_clock_us(), true);
        assert_int_equal(f->seen.busy, 1);
        fake_child_store(&f->online, 0, 2, FAKE_STORE_BY_MAIN);
        assert_int_equal(take_traps(f, 50), 0);
        detector_poll(f->detector, 10); /* sees the move: still busy */
        *fake_read_index(&f->online, 0) = 2;
        detector_poll(f->detector, 20);
        assert_int_equal(f->seen.idle, 1);
        assert_false(gpu_needs_poll(f->detector, 1)); /* armed again, though the detector never disarmed it */
        fake_child_store(&f->online, 0, 3, FAKE_STORE_BY_MAIN);
        run_until_busy(f, 2);
}

static void test_work_outstanding_at_arming_is_busy(void **state)
{
        struct fixture *f = *state;

        *fake_write_index(&f->online, 0) = 7; /* written before anyone watched */
        watch_queues(f, 1);
        detector_poll(f->detector, 1);
        assert_int_equal(f->seen.busy, 1);
        assert_true(gpu_needs_poll(f->detector, 1));
}

static void test_fifth_queue_is_polled(void **state)
{
        struct fixture *f = *state;
        struct detector_queue_status q[5];
        size_t n_breakpoint = 0;

        watch_queues(f, 5);
        assert_int_equal(detector_process_queues(f->detector, f->online.pid, q, 5), 5);
        for (size_t i = 0; i < 5; i++)
                n_breakpoint += q[i].breakpoint;
        assert_int_equal(n_breakpoint, DETECTOR_BREAKPOINTS_PER_PROCESS);
        detector_poll(f->detector, 1);
        assert_true(gpu_needs_poll(f->detector, 1)); /* the polled queue keeps the GPU polled */
        for (size_t i = 0; i < 5; i++)
                if (!q[i].breakpoint) {
                        assert_non_null(strstr(q[i].poll_reason, "4 breakpoints already"));
                        /* its work is still seen, by polling */
                        *fake_write_index(&f->online, online_queue_of(f, &q[i])) = 1;
                        detector_poll(f->detector, 2);
                        assert_int_equal(f->seen.busy, 1);
                }
}

/*
 * A waiter that disarms a writer whose watch the detector has closed since
 * (the process watched anew, another queue now under a breakpoint): it
 * disabled every breakpoint of that process on the GPU, the new one too.
 * The detector, not knowing the writer, counts every watch there disarmed
 * and arms them again at the next idle look, so the new queue's store traps.
 */
static void test_waiter_disarmed_a_writer_watched_anew(void **state)
{
        struct fixture *f = *state;
        struct detector_queue_addr addr;
        struct epoll_event e;

        watch_and_arm_one(f);
        fake_child_store(&f->online, 0, 1, FAKE_STORE_BY_MAIN);
        assert_int_equal(epoll_wait(detector_trap_fd(f->detector), &e, 1, 5000), 1);
        addr = fake_queue_addr(&f->online, 1, 1);
        assert_int_equal(detector_watch(f->detector, f->online.pid, &addr, 1), 0);
        detector_poll(f->detector, 10); /* armed: the new breakpoint */
        for (size_t i = 0; i < f->seen.n_fds; i++)
                assert_int_equal(ioctl(f->seen.fds[i], PERF_EVENT_IOC_DISABLE, 0), 0);
        detector_trapped(f->detector, e.data.u64, e.events, monotonic_clock_us(), true);
        assert_int_equal(f->seen.busy, 1);
        detector_poll(f->detector, 20);
        assert_int_equal(f->seen.idle, 1);
        fake_child_store(&f->online, 1, 1, FAKE_STORE_BY_MAIN);
        run_until_busy(f, 2);
}

/*
 * A look passes over the queues under an armed breakpoint, since a store
 * there traps: a write the process's threads did not make (the test's own,
 * through the shared page), which no trap announces, goes unseen on an armed
 * queue and is seen on the polled one.
 */
static void test_looks_pass_over_armed_queues(void **state)
{
        struct fixture *f = *state;
        struct detector_queue_status q[5];
        size_t armed = 5, polled = 5;

        watch_queues(f, 5);
        detector_poll(f->detector, 1000); /* armed, then every queue read once more */
        assert_int_equal(detector_process_queues(f->detector, f->online.pid, q, 5), 5);
        for (size_t i = 0; i < 5; i++)
                *(q[i].breakpoint ? &armed : &polled) = online_queue_of(f, &q[i]);
        *fake_write_index(&f->online, armed) = 1;
        detector_poll(f->detector, 1100);
        assert_int_equal(f->seen.busy, 0);
        *fake_write_index(&f->online, polled) = 1;
        detector_poll(f->detector, 1200);
        assert_int_equal(f->seen.busy, 1);
}

/*
 * Work on a queue under a breakpoint does not keep the GPU "recently busy"
 * (the next store traps); work on a polled queue does, for its window.
 */
static void test_only_polled_queues_keep_a_gpu_recently_busy(void **state)
{
        struct fixture *f = *state;
        struct detector_queue_status q[5];
        size_t armed = 5, polled = 5;

        watch_queues(f, 5);
        assert_int_equal(detector_process_queues(f->detector, f->online.pid, q, 5), 5);
        for (size_t i = 0; i < 5; i++)
                *(q[i].breakpoint ? &armed : &polled) = online_queue_of(f, &q[i]);
        detector_poll(f->detector, 1000);
        fake_child_store(&f->online, armed, 1, FAKE_STORE_BY_MAIN);
        run_until_busy(f, 1);
        assert_true(detector_gpu_polled_recently_busy(f->detector, 1, 1000, 500)); /* busy */
        *fake_read_index(&f->online, armed) = 1;
        detector_poll(f->detector, 1100);
        detector_poll(f->detector, 1200);
        assert_int_equal(f->seen.idle, 1);
        assert_false(detector_gpu_polled_recently_busy(f->detector, 1, 1200, 500));

        *fake_write_index(&f->online, polled) = 1;
        *fake_read_index(&f->online, polled) = 1;
        detector_poll(f->detector, 1300); /* moved: busy, then idle */
        detector_poll(f->detector, 1400);
        assert_int_equal(f->seen.idle, 2);
        assert_true(detector_gpu_polled_recently_busy(f->detector, 1, 1400, 500));
        assert_false(detector_gpu_polled_recently_busy(f->detector, 1, 1900, 500));
}

/* A second watcher of the same process finds its threads' debug registers taken: ENOSPC from the kernel. */
static void test_refused_breakpoint_falls_back_to_polling(void **state)
{
        struct fixture *f = *state;
        struct detector_queue_addr addr[4];
        struct detector_queue_status q[4];
        struct detector *second;
        struct seen second_seen = { 0 };

        watch_queues(f, 4);
        assert_int_equal(detector_new(&callbacks, &second_seen, DETECTOR_MODE_AUTO, &second), 0);
        for (size_t i = 0; i < 4; i++)
                addr[i] = fake_queue_addr(&f->online, i, 2);
        assert_int_equal(detector_watch(second, f->online.pid, addr, 4), 0);
        assert_int_equal(detector_process_queues(second, f->online.pid, q, 4), 4);
        for (size_t i = 0; i < 4; i++) {
                assert_false(q[i].breakpoint);
                assert_non_null(strstr(q[i].poll_reason, "no debug register free"));
        }
        detector_poll(second, 1);
        *fake_write_index(&f->online, 3) = 1;
        detector_poll(second, 2);
        assert_int_equal(second_seen.busy, 1);
        detector_free(second);
}

static void test_process_exits_while_armed(void **state)
{
        struct fixture *f = *state;
        pid_t pid = f->online.pid;

        watch_and_arm_one(f);
        fake_online_process_stop(&f->online);
        /* the hang-up is taken once, then the wait sleeps: no spinning on a dead fd */
        for (int i = 0; i < MAX_TURNS && !gpu_needs_poll(f->detector, 1); i++)
                take_traps(f, 100);
        assert_true(gpu_needs_poll(f->detector, 1));
        assert_int_equal(take_traps(f, 50), 0);
        assert_int_equal(f->seen.busy, 0);
        detector_poll(f->detector, 5);
        assert_int_equal(f->seen.gone, pid);
        assert_int_equal(detector_n_queues(f->detector), 0);
}

/*
 * The owner consumes a hang-up's report (a thread of the process exited)
 * while a store of another thread is pending: the poll that reads the
 * hang-up takes the store's wake-up from the waiter, so the report is the
 * store's too.
 */
static void test_store_whose_wake_up_a_hang_up_took(void **state)
{
        struct fixture *f = *state;

        watch_and_arm_one(f);
        fake_child_store(&f->online, 0, 1, FAKE_STORE_BY_EARLY_THREAD);
        detector_trapped(f->detector, f->seen.key, EPOLLHUP, monotonic_clock_us(), false);
        assert_int_equal(f->seen.busy, 1);
        assert_true(gpu_needs_poll(f->detector, 1)); /* the writer disarmed: polling follows the work */
        assert_int_equal(take_traps(f, 50), 0); /* the waiter was not woken for it */
        assert_int_equal(f->seen.busy, 1);
}

static void test_mode_poll_and_back(void **state)
{
        struct fixture *f = *state;
        struct detector_queue_status q;

        watch_queues(f, 1);
        assert_int_equal(detector_set_mode(f->detector, DETECTOR_MODE_POLL), 0);
        assert_int_equal(detector_process_queues(f->detector, f->online.pid, &q, 1), 1);
        assert_false(q.breakpoint);
        assert_string_equal(q.poll_reason, "DetectorMode=poll");
        detector_poll(f->detector, 1);
        assert_true(gpu_needs_poll(f->detector, 1));
        assert_int_equal(detector_set_mode(f->detector, DETECTOR_MODE_AUTO), 0);
        assert_int_equal(detector_process_queues(f->detector, f->online.pid, &q, 1), 1);
        assert_true(q.breakpoint);
}

/*
 * A queue waiting at a barrier on an armed GPU: the signal releases the
 * packets after it with no store, so no breakpoint fires. The GPU keeps
 * being looked at while the queue waits, and the look sees the release.
 */
static void test_waiting_queue_keeps_its_gpu_looked_at(void **state)
{
        struct fixture *f = *state;
        uint64_t dep = fake_signal_handle(&f->online, 0);

        *fake_signal_value(&f->online, 0) = 1;
        fake_write_barrier(&f->online, 0, 0, 3, &dep, 1);
        fake_write_dispatch(&f->online, 0, 1);
        *fake_write_index(&f->online, 0) = 2; /* stored before the watch: no trap */
        watch_queues(f, 1);
        detector_poll(f->detector, 1);
        assert_int_equal(f->seen.busy, 1);
        detector_poll(f->detector, 2); /* it waits: idle, and not armed */
        assert_int_equal(f->seen.idle, 1);
        assert_true(gpu_needs_poll(f->detector, 1));
        assert_true(detector_gpu_polled_recently_busy(f->detector, 1, 100000000, 1000));

        /* work queued behind the barrier during the wait neither traps nor makes the GPU busy */
        fake_write_dispatch(&f->online, 0, 2);
        fake_child_store(&f->online, 0, 3, FAKE_STORE_BY_MAIN);
        assert_int_equal(take_traps(f, 50), 0);
        detector_poll(f->detector, 3);
        assert_int_equal(f->seen.busy, 1);

        *fake_signal_value(&f->online, 0) = 0;
        *fake_read_index(&f->online, 0) = 1; /* the CP took the barrier: the kernel runs */
        assert_int_equal(take_traps(f, 50), 0); /* nothing stored, nothing trapped */
        detector_poll(f->detector, 4);
        assert_int_equal(f->seen.busy, 2);
}

/*
 * A write between a look's first read of a process and the arming of its
 * breakpoint, which no trap announces: made by the process_gone callback of
 * a dead process the look reads in between.
 */
static struct fake_online_process *inject_into;
static bool inject_barrier;

static void on_gone_inject(pid_t pid, void *userdata)
{
        ((struct seen *)userdata)->gone = pid;
        if (inject_into && inject_barrier) {
                uint64_t dep = fake_signal_handle(inject_into, 0);

                *fake_signal_value(inject_into, 0) = 1;
                fake_write_barrier(inject_into, 0, 0, 3, &dep, 1);
                fake_write_dispatch(inject_into, 0, 1);
                *fake_write_index(inject_into, 0) = 2;
        } else if (inject_into) {
                *fake_write_index(inject_into, 0) = 1; /* a store made just before the arming: no trap */
        }
}

static struct detector *detector_with_injection(struct fixture *f, bool barrier)
{
        static const struct detector_callbacks cb = { .gpu_busy = on_busy, .gpu_idle = on_idle,
                                                      .process_gone = on_gone_inject,
                                                      .breakpoint_opened = on_opened };
        struct fake_online_process z;
        struct detector_queue_addr a;
        struct detector *d;

        assert_int_equal(detector_new(&cb, &f->seen, DETECTOR_MODE_BREAKPOINT, &d), 0);
        a = fake_queue_addr(&f->online, 0, 1);
        assert_int_equal(detector_watch(d, f->online.pid, &a, 1), 0);
        fake_online_process_start(&z, 1);
        a = fake_queue_addr(&z, 0, 1);
        assert_int_equal(detector_watch(d, z.pid, &a, 1), 0);
        fake_online_process_stop(&z);
        inject_into = &f->online;
        inject_barrier = barrier;
        detector_poll(d, 1); /* reads online (idle), finds z gone (the write lands), arms, reads again */
        inject_into = NULL;
        return d;
}

/*
 * Work the read right after the arming found (stored before the arming: no
 * trap) keeps its queue read, though armed, until it is done.
 */
static void test_work_stored_before_arming_is_read_until_done(void **state)
{
        struct fixture *f = *state;
        struct detector *d = detector_with_injection(f, false);

        assert_int_equal(f->seen.busy, 1);
        detector_poll(d, 2);
        detector_poll(d, 3);
        assert_int_equal(f->seen.idle, 0); /* write 1, read 0: the kernel has not run */
        detector_free(d);
}

/* The same for a barrier wait found then: its release, which no store announces, is seen. */
static void test_barrier_found_at_arming_is_read_until_released(void **state)
{
        struct fixture *f = *state;
        struct detector *d = detector_with_injection(f, true);

        detector_poll(d, 2);
        assert_int_equal(f->seen.busy, 0);
        *fake_signal_value(&f->online, 0) = 0;
        *fake_read_index(&f->online, 0) = 1; /* released: the kernel runs, nothing stored */
        detector_poll(d, 4);
        assert_int_equal(f->seen.busy, 1);
        detector_free(d);
}

/*
 * A quiet process whose queues are all armed is not read, so it takes no
 * turn of the quick looks: the quiet process with a polled queue gets them.
 */
static void test_quiet_turn_passes_over_armed_processes(void **state)
{
        struct fixture *f = *state;
        struct fake_online_process z;
        struct detector_queue_addr a;
        struct detector_queue_status q[5];
        size_t polled = 5;

        fake_online_process_start(&z, 1);
        a = fake_queue_addr(&z, 0, 1);
        assert_int_equal(detector_watch(f->detector, z.pid, &a, 1), 0); /* every queue armed, first */
        watch_queues(f, 5); /* 4 armed, 1 polled */
        detector_poll(f->detector, 1000);
        assert_int_equal(detector_process_queues(f->detector, f->online.pid, q, 5), 5);
        for (size_t i = 0; i < 5; i++)
                if (!q[i].breakpoint)
                        polled = online_queue_of(f, &q[i]);
        *fake_write_index(&f->online, polled) = 1; /* a request on the polled queue */
        for (uint64_t t = 2000; t < 2100; t += 10)
                detector_quick_look_gpu(f->detector, 1, t);
        assert_int_equal(f->seen.busy, 1);
        fake_online_process_stop(&z);
}

/*
 * The look before a resume reads every process, also those a look that gave
 * way had read already: work started since then is seen.
 */
static void test_look_before_resume_starts_afresh(void **state)
{
        struct fixture *f = *state;
        struct fake_online_process w;
        struct detector_queue_addr a;

        assert_int_equal(detector_set_mode(f->detector, DETECTOR_MODE_POLL), 0);
        fake_online_process_start(&w, 1);
        a = fake_queue_addr(&w, 0, 1);
        assert_int_equal(detector_watch(f->detector, w.pid, &a, 1), 0);
        watch_queues(f, 1);
        detector_poll(f->detector, 1000);
        assert_false(detector_poll_gpu_until(f->detector, 1, 2000, 0)); /* read w, gave way */
        *fake_write_index(&w, 0) = 1; /* a request after w was read */
        detector_fresh_look_gpu(f->detector, 1, 30000); /* as look_before_resume() */
        assert_int_equal(f->seen.busy, 1);
        fake_online_process_stop(&w);
}

/*
 * While the owner holds a GPU's arming (its offline work suspended), an idle
 * look arms nothing and the GPU needs no looks; a store then does not trap,
 * and the look before the resume sees it. Once that work drains, still held,
 * the GPU is left disarmed; the next look before the resume arms it, held or
 * not, and a store after the resume traps.
 */
static void test_arming_held_while_suspended(void **state)
{
        struct fixture *f = *state;

        watch_queues(f, 1);
        f->seen.arming_held = true;
        detector_poll(f->detector, 1);
        assert_false(gpu_needs_poll(f->detector, 1)); /* idle, held: no looks until the owner's */
        fake_child_store(&f->online, 0, 1, FAKE_STORE_BY_MAIN);
        assert_int_equal(take_traps(f, 50), 0); /* not armed */
        assert_int_equal(f->seen.busy, 0);

        detector_fresh_look_gpu(f->detector, 1, 10); /* as look_before_resume(): no resume, the work seen */
        assert_int_equal(f->seen.busy, 1);
        *fake_read_index(&f->online, 0) = 1;
        detector_poll(f->detector, 20);
        assert_int_equal(f->seen.idle, 1);
        assert_false(gpu_needs_poll(f->detector, 1)); /* drained, held: disarmed, no looks */
        detector_fresh_look_gpu(f->detector, 1, 30); /* the look before the resume: idle, arms, held or not */
        assert_int_equal(f->seen.busy, 1);
        assert_false(gpu_needs_poll(f->detector, 1)); /* armed */
        f->seen.arming_held = false; /* resumed */
        fake_child_store(&f->online, 0, 2, FAKE_STORE_BY_MAIN);
        run_until_busy(f, 2);
}

/*
 * The owner may resume on hearing that the GPU went idle (its hold-off over
 * already, the drain seen late), ending the hold within that report: the
 * same look arms the breakpoints and reads once more, or offline work would
 * run with them disarmed until an idle look.
 */
static void test_hold_ended_by_the_idle_report_arms(void **state)
{
        struct fixture *f = *state;

        watch_queues(f, 1);
        f->seen.arming_held = true;
        detector_poll(f->detector, 1);
        *fake_write_index(&f->online, 0) = 1; /* a request, seen by a look: nothing is armed */
        detector_poll(f->detector, 10);
        assert_int_equal(f->seen.busy, 1);
        f->seen.resume_on_idle = true;
        *fake_read_index(&f->online, 0) = 1;
        detector_poll(f->detector, 20);
        assert_int_equal(f->seen.idle, 1);
        assert_false(gpu_needs_poll(f->detector, 1)); /* armed by the look that reported the drain */
        fake_child_store(&f->online, 0, 2, FAKE_STORE_BY_MAIN);
        run_until_busy(f, 2);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_store_by_main_thread, setup, teardown),
                cmocka_unit_test_setup_teardown(test_store_by_thread_older_than_arming, setup, teardown),
                cmocka_unit_test_setup_teardown(test_store_by_thread_created_after_arming, setup, teardown),
                cmocka_unit_test_setup_teardown(test_look_after_trap_reads_every_process, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trap_during_a_look_starts_it_afresh, setup, teardown),
                cmocka_unit_test_setup_teardown(test_trap_disarms_the_writer_only, setup, teardown),
                cmocka_unit_test_setup_teardown(test_writer_disarmed_by_the_waiter, setup, teardown),
                cmocka_unit_test_setup_teardown(test_waiter_disarmed_a_writer_watched_anew, setup, teardown),
                cmocka_unit_test_setup_teardown(test_work_outstanding_at_arming_is_busy, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fifth_queue_is_polled, setup, teardown),
                cmocka_unit_test_setup_teardown(test_looks_pass_over_armed_queues, setup, teardown),
                cmocka_unit_test_setup_teardown(test_only_polled_queues_keep_a_gpu_recently_busy, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refused_breakpoint_falls_back_to_polling, setup, teardown),
                cmocka_unit_test_setup_teardown(test_process_exits_while_armed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_store_whose_wake_up_a_hang_up_took, setup, teardown),
                cmocka_unit_test_setup_teardown(test_mode_poll_and_back, setup, teardown),
                cmocka_unit_test_setup_teardown(test_waiting_queue_keeps_its_gpu_looked_at, setup, teardown),
                cmocka_unit_test_setup_teardown(test_work_stored_before_arming_is_read_until_done, setup, teardown),
                cmocka_unit_test_setup_teardown(test_barrier_found_at_arming_is_read_until_released, setup, teardown),
                cmocka_unit_test_setup_teardown(test_quiet_turn_passes_over_armed_processes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_look_before_resume_starts_afresh, setup, teardown),
                cmocka_unit_test_setup_teardown(test_arming_held_while_suspended, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hold_ended_by_the_idle_report_arms, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
