/* SPDX-License-Identifier: MIT */
/* The queue-pointer detector against a real second process's memory. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "detector-gpu-status.h"
#include "detector.h"
#include "fake-online-process.h"

struct seen {
        int busy[3], idle[3];
        uint64_t idle_since;
        pid_t gone;
};

static void on_busy(uint32_t gpu_id, uint64_t now, void *userdata)
{
        ((struct seen *)userdata)->busy[gpu_id]++;
}

static void on_idle(uint32_t gpu_id, uint64_t since, uint64_t now, void *userdata)
{
        struct seen *s = userdata;

        s->idle[gpu_id]++;
        s->idle_since = since;
}

static void on_gone(pid_t pid, void *userdata)
{
        ((struct seen *)userdata)->gone = pid;
}

static const struct detector_callbacks callbacks = {
        .gpu_busy = on_busy,
        .gpu_idle = on_idle,
        .process_gone = on_gone,
};

static void test_write_index_and_outstanding_work(void **state)
{
        struct fake_online_process f;
        struct detector_queue_addr addr[3];
        struct detector *d;
        struct seen s = { 0 };

        fake_online_process_start(&f, 3);
        *fake_write_index(&f, 0) = 5; /* work already outstanding at watch time */
        addr[0] = fake_queue_addr(&f, 0, 1);
        addr[1] = fake_queue_addr(&f, 1, 1);
        addr[2] = fake_queue_addr(&f, 2, 2);
        assert_int_equal(detector_new(&callbacks, &s, DETECTOR_MODE_POLL, &d), 0);
        assert_int_equal(detector_watch(d, f.pid, addr, 3), 0);
        assert_int_equal(detector_n_queues(d), 3);

        detector_poll(d, 100);
        assert_int_equal(s.busy[1], 1);
        assert_int_equal(s.busy[2], 0);
        *fake_read_index(&f, 0) = 5; /* the GPU caught up */
        detector_poll(d, 200);
        assert_int_equal(s.idle[1], 1);
        assert_int_equal(s.idle_since, 100);
        /* work found at a queue's first read is as recent as a move: the busy cadence follows it */
        assert_true(detector_gpu_polled_recently_busy(d, 1, 300, 1000));
        assert_false(detector_gpu_polled_recently_busy(d, 1, 1100, 1000));

        /* a write that completed between two polls still counts: the index moved */
        *fake_write_index(&f, 2) = 1;
        *fake_read_index(&f, 2) = 1;
        detector_poll(d, 300);
        assert_int_equal(s.busy[2], 1);
        assert_int_equal(s.busy[1], 1); /* GPU 1 untouched */
        detector_poll(d, 400);
        assert_int_equal(s.idle[2], 1);

        assert_true(detector_gpu_polled_recently_busy(d, 2, 400, 1000));
        assert_false(detector_gpu_polled_recently_busy(d, 2, 5000, 1000));
        assert_false(detector_gpu_polled_recently_busy(d, 7, 400, 1000));

        /* re-watching the same queues is not new work */
        assert_int_equal(detector_watch(d, f.pid, addr, 3), 0);
        detector_poll(d, 500);
        assert_int_equal(s.busy[1] + s.busy[2], 2);

        pid_t pid = f.pid;
        fake_online_process_stop(&f);
        detector_poll(d, 600);
        assert_int_equal(s.gone, pid);
        assert_int_equal(detector_n_queues(d), 0);
        detector_free(d);
}

/*
 * Queue memory process_vm_readv cannot read is read through /proc/PID/mem
 * (queue-memory.h): a queue in a PROT_NONE page of this process, written
 * through a second, writable mapping of the same memory, is seen to work
 * and to go idle as any other. (A PROT_NONE page meets the EFAULT of
 * get_user_pages as a VM_PFNMAP GTT mapping does; test-queue-memory.c.)
 */
static void test_queue_process_vm_readv_cannot_read_is_seen(void **state)
{
        long page = sysconf(_SC_PAGESIZE);
        int fd = memfd_create("queue", MFD_CLOEXEC);
        volatile uint64_t *writable;
        const unsigned char *hidden;
        struct detector_queue_addr addr;
        struct detector *d;
        struct seen s = { 0 };

        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, page), 0);
        writable = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        hidden = mmap(NULL, page, PROT_NONE, MAP_SHARED, fd, 0);
        assert_true(writable != MAP_FAILED && hidden != MAP_FAILED);
        addr = (struct detector_queue_addr){
                .gpu_id = 1,
                .write_pointer_address = (uint64_t)(uintptr_t)(hidden + FAKE_WRITE_OFFSET),
                .read_pointer_address = (uint64_t)(uintptr_t)(hidden + FAKE_READ_OFFSET),
        };
        assert_int_equal(detector_new(&callbacks, &s, DETECTOR_MODE_POLL, &d), 0);
        assert_int_equal(detector_watch(d, getpid(), &addr, 1), 0);
        detector_poll(d, 100);
        assert_int_equal(s.busy[1], 0);
        writable[FAKE_WRITE_OFFSET / sizeof(uint64_t)] = 2;
        detector_poll(d, 200);
        assert_int_equal(s.busy[1], 1);
        writable[FAKE_READ_OFFSET / sizeof(uint64_t)] = 2;
        detector_poll(d, 300);
        assert_int_equal(s.idle[1], 1);
        assert_int_equal(s.gone, 0);
        detector_free(d);
        munmap((void *)writable, page);
        munmap((void *)hidden, page);
        close(fd);
}

/*
 * A process whose queues cannot be read either way counts busy, never
 * idle, and its queues say why. The reader is a child that gave up root,
 * so that reading a root process is refused (EPERM).
 */
static void test_unreadable_queue_counts_busy(void **state)
{
        struct fake_online_process f;
        struct detector_queue_addr addr;
        int status;
        pid_t reader;

        fake_online_process_start(&f, 1);
        addr = fake_queue_addr(&f, 0, 1);
        reader = fork();
        assert_true(reader >= 0);
        if (reader == 0) {
                struct detector_queue_status q = { 0 };
                struct seen s = { 0 };
                struct detector *d;

                if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                        _exit(10);
                if (detector_new(&callbacks, &s, DETECTOR_MODE_POLL, &d) < 0 ||
                    detector_watch(d, f.pid, &addr, 1) < 0)
                        _exit(11);
                detector_poll(d, 100);
                if (detector_process_queues(d, f.pid, &q, 1) != 1 || q.read_error != -EPERM)
                        _exit(12);
                if (s.busy[1] != 1 || s.idle[1] != 0 || s.gone != 0)
                        _exit(13);
                detector_free(d);
                _exit(0);
        }
        assert_int_equal(waitpid(reader, &status, 0), reader);
        fake_online_process_stop(&f);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("the reader as nobody ended with status %#x (10: cannot drop root, 12: no EPERM read "
                         "error, 13: not counted busy)",
                         status);
}

static void test_unmapped_queue_counts_idle(void **state)
{
        struct fake_online_process f;
        struct detector_queue_addr addr[2];
        struct detector *d;
        struct seen s = { 0 };

        fake_online_process_start(&f, 1);
        addr[0] = (struct detector_queue_addr){ .gpu_id = 1, .read_pointer_address = 8,
                                                .write_pointer_address = 16 };
        addr[1] = fake_queue_addr(&f, 0, 2);
        *fake_write_index(&f, 0) = 3;
        assert_int_equal(detector_new(&callbacks, &s, DETECTOR_MODE_POLL, &d), 0);
        assert_int_equal(detector_watch(d, f.pid, addr, 2), 0);
        detector_poll(d, 1);
        assert_int_equal(s.busy[1], 0);
        assert_int_equal(s.gone, 0);
        detector_free(d);
        fake_online_process_stop(&f);
}

/*
 * A quick look (the busy cadence) reads the processes active within the
 * active window every time, and those with work outstanding at their last
 * read. On an idle GPU it reads the quiet ones one per look, the one read
 * longest ago first: a quiet process's work is seen within as many looks as
 * there are quiet processes. On a busy GPU it passes them over, and the look
 * that finds the active ones done reads them all before the GPU counts as
 * idle.
 */
static void test_quick_look_reads_quiet_processes_in_turn(void **state)
{
        struct fake_online_process f[3]; /* A serves, B and C are quiet */
        struct detector *d;
        struct seen s = { 0 };
        int idle;

        assert_int_equal(detector_new(&callbacks, &s, DETECTOR_MODE_POLL, &d), 0);
        detector_set_active_window(d, 1000);
        for (int i = 0; i < 3; i++) {
                struct detector_queue_addr addr;

                fake_online_process_start(&f[i], 1);
                addr = fake_queue_addr(&f[i], 0, 1);
                assert_int_equal(detector_watch(d, f[i].pid, &addr, 1), 0);
        }
        detector_poll(d, 10);
        *fake_write_index(&f[0], 0) = 1;
        detector_quick_look_gpu(d, 1, 20); /* A quiet so far: seen only in its turn */
        detector_quick_look_gpu(d, 1, 30);
        detector_quick_look_gpu(d, 1, 40);
        assert_int_equal(s.busy[1], 1);
        *fake_read_index(&f[0], 0) = 1;
        detector_quick_look_gpu(d, 1, 50); /* A is active now: read every look */
        assert_int_equal(s.idle[1], 1);
        *fake_write_index(&f[0], 0) = 2;
        detector_quick_look_gpu(d, 1, 60);
        assert_int_equal(s.busy[1], 2);
        *fake_read_index(&f[0], 0) = 2;

        /* C starts work while A's ends: the look that finds A done reads B and C
         * too, so the GPU stays busy, one burst, with no idle between */
        *fake_write_index(&f[2], 0) = 1;
        idle = s.idle[1];
        detector_quick_look_gpu(d, 1, 70);
        assert_int_equal(s.busy[1], 2);
        assert_int_equal(s.idle[1], idle);
        /* C is active now: its outstanding work is read at every look */
        detector_quick_look_gpu(d, 1, 90);
        detector_quick_look_gpu(d, 1, 100);
        assert_int_equal(s.idle[1], idle);
        *fake_read_index(&f[2], 0) = 1;
        detector_quick_look_gpu(d, 1, 110);
        assert_int_equal(s.idle[1], idle + 1);

        /* B starts work on the idle GPU: seen in its turn */
        *fake_write_index(&f[1], 0) = 1;
        for (uint64_t t = 120; s.busy[1] == 2 && t < 200; t += 10)
                detector_quick_look_gpu(d, 1, t);
        assert_int_equal(s.busy[1], 3);
        /* every process quiet now: B, with work outstanding at its last read, is
         * still read at every look, which tells its end at once */
        detector_set_active_window(d, 0);
        for (uint64_t t = 200; t < 260; t += 10)
                detector_quick_look_gpu(d, 1, t);
        assert_int_equal(s.idle[1], idle + 1);
        *fake_read_index(&f[1], 0) = 1;
        detector_quick_look_gpu(d, 1, 260);
        assert_int_equal(s.idle[1], idle + 2);

        for (int i = 0; i < 3; i++)
                fake_online_process_stop(&f[i]);
        detector_free(d);
}

/*
 * A process busy on one GPU keeps its turn among the quiet processes of
 * another: its work there is seen within as many quick looks as that GPU has
 * quiet processes, though the looks of its other GPU read it every time.
 */
static void test_quick_look_turn_is_per_gpu(void **state)
{
        struct fake_online_process x, y, z;
        struct detector_queue_addr addr[2];
        struct detector *d;
        struct seen s = { 0 };
        uint64_t t = 10;

        assert_int_equal(detector_new(&callbacks, &s, DETECTOR_MODE_POLL, &d), 0);
        detector_set_active_window(d, 1000);
        fake_online_process_start(&y, 1);
        fake_online_process_start(&z, 1);
        fake_online_process_start(&x, 2);
        addr[0] = fake_queue_addr(&y, 0, 1);
        assert_int_equal(detector_watch(d, y.pid, addr, 1), 0);
        addr[0] = fake_queue_addr(&z, 0, 1);
        assert_int_equal(detector_watch(d, z.pid, addr, 1), 0);
        addr[0] = fake_queue_addr(&x, 0, 1);
        addr[1] = fake_queue_addr(&x, 1, 2);
        assert_int_equal(detector_watch(d, x.pid, addr, 2), 0);
        detector_poll(d, t);

        /* x serves on GPU 2: every look there reads it */
        for (int i = 0; i < 5; i++) {
                t += 10;
                *fake_write_index(&x, 1) = (uint64_t)i + 1;
                detector_quick_look_gpu(d, 2, t);
                detector_quick_look_gpu(d, 1, t);
        }
        /* and starts work on GPU 1, where it is quiet like y and z */
        *fake_write_index(&x, 0) = 1;
        for (int i = 0; i < 3 && s.busy[1] == 0; i++) {
                t += 10;
                *fake_write_index(&x, 1) = (uint64_t)i + 10;
                detector_quick_look_gpu(d, 2, t);
                detector_quick_look_gpu(d, 1, t);
        }
        assert_int_equal(s.busy[1], 1);

        fake_online_process_stop(&x);
        fake_online_process_stop(&y);
        fake_online_process_stop(&z);
        detector_free(d);
}

/*
 * An idle look in pieces (detector_poll_gpu_until): past the give-way time
 * it reads one process a call and goes on with the others at the next call;
 * the GPU stays due (last_poll_us unchanged) until the look is complete, its
 * transitions are reported at the end, and work found ends it at once.
 */
static void test_look_gives_way_between_processes(void **state)
{
        struct fake_online_process f[3];
        struct detector *d;
        struct seen s = { 0 };

        assert_int_equal(detector_new(&callbacks, &s, DETECTOR_MODE_POLL, &d), 0);
        for (int i = 0; i < 3; i++) {
                struct detector_queue_addr addr;

                fake_online_process_start(&f[i], 1);
                addr = fake_queue_addr(&f[i], 0, 1);
                assert_int_equal(detector_watch(d, f[i].pid, &addr, 1), 0);
        }
        /* no time to spare: one process a call, the GPU due until the third */
        assert_true(detector_poll_gpu_until(d, 1, 10, UINT64_MAX));
        assert_int_equal(detector_gpu_status_of(d, 1).last_poll_us, 10);
        assert_false(detector_poll_gpu_until(d, 1, 20, 0));
        assert_int_equal(detector_gpu_status_of(d, 1).last_poll_us, 10);
        assert_false(detector_poll_gpu_until(d, 1, 30, 0));
        assert_true(detector_poll_gpu_until(d, 1, 40, 0));
        assert_int_equal(detector_gpu_status_of(d, 1).last_poll_us, 20); /* when the look began */

        /* the end of work is reported when the look is complete, not before */
        *fake_write_index(&f[1], 0) = 1;
        detector_poll(d, 50);
        assert_int_equal(s.busy[1], 1);
        *fake_read_index(&f[1], 0) = 1;
        assert_false(detector_poll_gpu_until(d, 1, 60, 0));
        assert_false(detector_poll_gpu_until(d, 1, 70, 0));
        assert_int_equal(s.idle[1], 0);
        assert_true(detector_poll_gpu_until(d, 1, 80, 0));
        assert_int_equal(s.idle[1], 1);

        /* work in every process: the first piece finds it and the look ends there */
        for (int i = 0; i < 3; i++)
                *fake_write_index(&f[i], 0) = 2;
        assert_true(detector_poll_gpu_until(d, 1, 90, 0));
        assert_int_equal(s.busy[1], 2);
        assert_int_equal(detector_gpu_status_of(d, 1).last_poll_us, 90);

        /* a look under way is finished by a full poll, and a quick look starts afresh */
        for (int i = 0; i < 3; i++)
                *fake_read_index(&f[i], 0) = 2;
        detector_poll(d, 100);
        assert_int_equal(s.idle[1], 2);
        assert_false(detector_poll_gpu_until(d, 1, 110, 0));
        detector_poll_gpu(d, 1, 120);
        assert_int_equal(detector_gpu_status_of(d, 1).last_poll_us, 110);
        detector_quick_look_gpu(d, 1, 130);
        assert_int_equal(detector_gpu_status_of(d, 1).last_poll_us, 130);
        assert_false(detector_poll_gpu_until(d, 1, 140, 0));
        assert_int_equal(detector_gpu_status_of(d, 1).last_poll_us, 130);

        for (int i = 0; i < 3; i++)
                fake_online_process_stop(&f[i]);
        detector_free(d);
}

/*
 * A queue whose read index stays at a barrier-AND on a signal nobody has set
 * (a host callback, or another process's work) is waiting, not busy: its
 * GPU goes idle. It stays on the busy cadence (recently busy) however long
 * it waits, a store behind the barrier is not work (those packets run only
 * after it), and the barrier's release onto the packets after it is.
 */
static void test_queue_waiting_at_a_barrier_is_idle(void **state)
{
        struct fake_online_process f;
        struct detector_queue_addr addr;
        struct poll_watch *w;
        struct detector *d;
        struct seen s = { 0 };
        uint64_t dep;

        fake_online_process_start(&f, 1);
        dep = fake_signal_handle(&f, 0);
        *fake_signal_value(&f, 0) = 1;
        fake_write_dispatch(&f, 0, 0);
        fake_write_barrier(&f, 0, 1, 3, &dep, 1);
        addr = fake_queue_addr(&f, 0, 1);
        assert_int_equal(detector_new(&callbacks, &s, DETECTOR_MODE_POLL, &d), 0);
        assert_int_equal(detector_watch(d, f.pid, &addr, 1), 0);
        detector_poll(d, 100);
        *fake_write_index(&f, 0) = 2; /* the kernel and the barrier */
        detector_poll(d, 200);
        assert_int_equal(s.busy[1], 1);
        *fake_read_index(&f, 0) = 1; /* the kernel is done: the CP stops at the barrier */
        detector_poll(d, 300);
        assert_int_equal(s.idle[1], 0); /* the index moved: its packets are read at the next look */
        detector_poll(d, 400);
        assert_int_equal(s.idle[1], 1);
        assert_int_equal(s.idle_since, 300);
        assert_true(detector_gpu_polled_recently_busy(d, 1, 100000000, 1000));
        assert_true(detector_gpu_status_of(d, 1).needs_poll);
        /* no watch for the preemption worker: the release moves no write index, only a look sees it */
        assert_int_equal(detector_poll_watch(d, 1, 400, 1000, 20, &w), 0);
        assert_null(w);

        /* more work behind the barrier waits with it */
        fake_write_dispatch(&f, 0, 2);
        *fake_write_index(&f, 0) = 3;
        detector_poll(d, 500);
        detector_poll(d, 600);
        assert_int_equal(s.busy[1], 1);

        /* the host sets the signal, the CP takes the barrier and runs the kernel after it: no store */
        *fake_signal_value(&f, 0) = 0;
        *fake_read_index(&f, 0) = 2;
        detector_poll(d, 700);
        assert_int_equal(s.busy[1], 2);
        *fake_read_index(&f, 0) = 3;
        detector_poll(d, 800);
        assert_int_equal(s.idle[1], 2);
        assert_false(detector_gpu_polled_recently_busy(d, 1, 100000000, 1000));
        detector_free(d);
        fake_online_process_stop(&f);
}

/*
 * A barrier released between two looks: if the packets after it already ran
 * (the read index went past the barrier and more), that was online work no
 * store announced; if only the barrier went, nothing ran. Packets stored
 * behind a barrier already waiting at the read index are no work either:
 * the GPU does nothing until the signal comes.
 */
static void test_barrier_released_between_looks(void **state)
{
        struct fake_online_process f;
        struct detector_queue_addr addr;
        struct detector *d;
        struct seen s = { 0 };
        uint64_t dep;

        fake_online_process_start(&f, 1);
        dep = fake_signal_handle(&f, 1);
        *fake_signal_value(&f, 1) = 1;
        fake_write_barrier(&f, 0, 0, 3, &dep, 1);
        fake_write_dispatch(&f, 0, 1);
        addr = fake_queue_addr(&f, 0, 1);
        assert_int_equal(detector_new(&callbacks, &s, DETECTOR_MODE_POLL, &d), 0);
        assert_int_equal(detector_watch(d, f.pid, &addr, 1), 0);
        detector_poll(d, 100);
        *fake_write_index(&f, 0) = 2; /* a wait, then a kernel */
        detector_poll(d, 200);
        detector_poll(d, 300);
        assert_int_equal(s.busy[1], 0);

        *fake_signal_value(&f, 1) = 0;
        *fake_read_index(&f, 0) = 2; /* the barrier and the kernel after it, all between two looks */
        detector_poll(d, 400);
        assert_int_equal(s.busy[1], 1);
        detector_poll(d, 500);
        assert_int_equal(s.idle[1], 1);

        /* a request ending with a barrier, as kfdemu-app --host-wait-us writes it: only the barrier is left */
        *fake_signal_value(&f, 1) = 1;
        fake_write_dispatch(&f, 0, 2);
        fake_write_barrier(&f, 0, 3, 3, &dep, 1);
        *fake_write_index(&f, 0) = 4;
        detector_poll(d, 600);
        assert_int_equal(s.busy[1], 2);
        *fake_read_index(&f, 0) = 3;
        detector_poll(d, 700);
        detector_poll(d, 800);
        assert_int_equal(s.idle[1], 2);
        *fake_signal_value(&f, 1) = 0;
        *fake_read_index(&f, 0) = 4;
        detector_poll(d, 900);
        detector_poll(d, 1000);
        assert_int_equal(s.busy[1], 2);
        detector_free(d);
        fake_online_process_stop(&f);
}

/*
 * Barrier-OR waits until one dependency is 0, a zero handle never counting
 * as met; a barrier-AND without dependencies does not wait (the CP takes
 * it once what is before it is done), a barrier-OR without any waits
 * forever (hsa.h hsa_barrier_or_packet_t).
 */
static void test_barrier_or_and_barriers_without_dependencies(void **state)
{
        struct fake_online_process f;
        struct detector_queue_addr addr;
        struct detector *d;
        struct seen s = { 0 };
        uint64_t deps[2];

        fake_online_process_start(&f, 1);
        fake_write_barrier(&f, 0, 0, 3, NULL, 0);
        deps[0] = fake_signal_handle(&f, 0);
        deps[1] = fake_signal_handle(&f, 1);
        *fake_signal_value(&f, 0) = 1;
        *fake_signal_value(&f, 1) = 1;
        fake_write_barrier(&f, 0, 1, 5, deps, 2);
        deps[0] = fake_signal_handle(&f, 2);
        deps[1] = fake_signal_handle(&f, 3);
        *fake_signal_value(&f, 2) = 1;
        *fake_signal_value(&f, 3) = 0;
        fake_write_barrier(&f, 0, 2, 5, deps, 2);
        fake_write_barrier(&f, 0, 3, 5, NULL, 0);
        addr = fake_queue_addr(&f, 0, 1);
        assert_int_equal(detector_new(&callbacks, &s, DETECTOR_MODE_POLL, &d), 0);
        assert_int_equal(detector_watch(d, f.pid, &addr, 1), 0);
        detector_poll(d, 100);
        *fake_write_index(&f, 0) = 4;
        detector_poll(d, 200);
        detector_poll(d, 300);
        assert_int_equal(s.busy[1], 1);
        assert_int_equal(s.idle[1], 0); /* AND without dependencies: taken at once */

        *fake_read_index(&f, 0) = 1;
        detector_poll(d, 400);
        detector_poll(d, 500);
        assert_int_equal(s.idle[1], 1); /* OR, neither signal 0 */

        *fake_read_index(&f, 0) = 2;
        detector_poll(d, 600);
        detector_poll(d, 700);
        assert_int_equal(s.busy[1], 2);
        assert_int_equal(s.idle[1], 1); /* OR, one signal 0: taken at once */

        *fake_read_index(&f, 0) = 3;
        detector_poll(d, 800);
        detector_poll(d, 900);
        assert_int_equal(s.idle[1], 2); /* OR without dependencies */
        detector_free(d);
        fake_online_process_stop(&f);
}

/*
 * A ring that cannot be read, or that the MQD did not give, leaves a queue
 * with packets left busy, as before barriers were read: what cannot be
 * seen is not taken for a wait.
 */
static void test_unknown_ring_counts_busy(void **state)
{
        long page = sysconf(_SC_PAGESIZE);
        struct fake_online_process f;
        struct detector_queue_addr addr[2];
        struct detector *d;
        struct seen s = { 0 };
        void *gone = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uint64_t dep;

        assert_true(gone != MAP_FAILED);
        munmap(gone, (size_t)page); /* an address mapped in neither process */
        fake_online_process_start(&f, 2);
        dep = fake_signal_handle(&f, 0);
        *fake_signal_value(&f, 0) = 1;
        fake_write_barrier(&f, 0, 0, 3, &dep, 1);
        fake_write_barrier(&f, 1, 0, 3, &dep, 1);
        addr[0] = fake_queue_addr(&f, 0, 1);
        addr[0].ring_base_address = (uint64_t)(uintptr_t)gone;
        addr[1] = fake_queue_addr(&f, 1, 2);
        addr[1].ring_size = 0;
        assert_int_equal(detector_new(&callbacks, &s, DETECTOR_MODE_POLL, &d), 0);
        assert_int_equal(detector_watch(d, f.pid, addr, 2), 0);
        detector_poll(d, 100);
        *fake_write_index(&f, 0) = 1;
        *fake_write_index(&f, 1) = 1;
        for (uint64_t t = 200; t <= 500; t += 100)
                detector_poll(d, t);
        assert_int_equal(s.busy[1], 1);
        assert_int_equal(s.busy[2], 1);
        assert_int_equal(s.idle[1] + s.idle[2], 0);
        detector_free(d);
        fake_online_process_stop(&f);
}

/*
 * A waiting process is read at every quick look, however long it has been
 * quiet: no store announces its barrier's release. (As a quiet process it
 * would be read only in its turn: here, the look after the release would
 * have been the other process's.)
 */
static void test_quick_look_reads_waiting_processes_every_time(void **state)
{
        struct fake_online_process f[2]; /* f[0] waits at a barrier, f[1] is quiet */
        struct detector *d;
        struct seen s = { 0 };
        uint64_t dep;

        assert_int_equal(detector_new(&callbacks, &s, DETECTOR_MODE_POLL, &d), 0);
        detector_set_active_window(d, 1000);
        for (int i = 0; i < 2; i++) {
                struct detector_queue_addr addr;

                fake_online_process_start(&f[i], 1);
                addr = fake_queue_addr(&f[i], 0, 1);
                assert_int_equal(detector_watch(d, f[i].pid, &addr, 1), 0);
        }
        dep = fake_signal_handle(&f[0], 0);
        *fake_signal_value(&f[0], 0) = 1;
        fake_write_barrier(&f[0], 0, 0, 3, &dep, 1);
        fake_write_dispatch(&f[0], 0, 1);
        *fake_write_index(&f[0], 0) = 2; /* before the first look: not a move */
        detector_poll(d, 10);
        detector_poll(d, 20);
        assert_int_equal(s.busy[1], 1);
        assert_int_equal(s.idle[1], 1);

        detector_poll(d, 5000); /* long quiet, both read now */
        detector_quick_look_gpu(d, 1, 5001);
        *fake_signal_value(&f[0], 0) = 0;
        *fake_read_index(&f[0], 0) = 1; /* released: the kernel runs */
        detector_quick_look_gpu(d, 1, 5002);
        assert_int_equal(s.busy[1], 2);
        detector_free(d);
        for (int i = 0; i < 2; i++)
                fake_online_process_stop(&f[i]);
}

/*
 * A watch for the worker (detector_poll_watch()): only of an idle GPU whose
 * polled queues moved within the window, with their indices as last read,
 * so that the worker's poll sees the next store; the serial changes with
 * what it rests on, and work the worker saw makes the GPU busy.
 */
static void test_poll_watch_of_an_idle_gpu(void **state)
{
        struct fake_online_process f;
        struct detector_queue_addr addr[2];
        struct poll_watch *w;
        struct detector *d;
        struct seen s = { 0 };
        uint64_t serial;
        pid_t pid = 0;

        fake_online_process_start(&f, 2);
        addr[0] = fake_queue_addr(&f, 0, 1);
        addr[1] = fake_queue_addr(&f, 1, 1);
        assert_int_equal(detector_new(&callbacks, &s, DETECTOR_MODE_POLL, &d), 0);
        assert_int_equal(detector_watch(d, f.pid, addr, 2), 0);
        detector_poll(d, 100);
        assert_int_equal(detector_poll_watch(d, 1, 200, 1000, 20, &w), 0);
        assert_null(w); /* nothing moved yet: the idle cadence's */
        *fake_write_index(&f, 0) = *fake_read_index(&f, 0) = 1; /* a request, done by the next look */
        serial = detector_gpu_watch_serial(d, 1);
        detector_poll(d, 300);
        assert_int_equal(s.busy[1], 1);
        assert_int_not_equal(detector_gpu_watch_serial(d, 1), serial);
        assert_int_equal(detector_poll_watch(d, 1, 300, 1000, 20, &w), 0);
        assert_null(w); /* busy: the loop follows it */
        detector_poll(d, 400);
        assert_int_equal(s.idle[1], 1);
        serial = detector_gpu_watch_serial(d, 1);
        assert_int_equal(detector_poll_watch(d, 1, 400, 1000, 20, &w), 0);
        assert_non_null(w);
        assert_int_equal(poll_watch_until(w), (300 + 1000) * 1000);
        assert_int_equal(poll_watch_n_processes(w), 1);
        assert_false(poll_watch_poll(w, 400000, &pid));
        detector_poll(d, 500); /* a look that finds nothing new changes nothing */
        assert_int_equal(detector_gpu_watch_serial(d, 1), serial);
        *fake_write_index(&f, 1) = 1;
        assert_true(poll_watch_poll(w, 420000, &pid));
        assert_int_equal(pid, f.pid);
        poll_watch_free(w);

        /* the worker saw it: busy as after a trap, until a look finds it idle */
        detector_work_seen(d, 1, 600);
        assert_int_equal(s.busy[1], 2);
        *fake_read_index(&f, 1) = 1;
        detector_poll(d, 700); /* the look sees the store too: moved */
        detector_poll(d, 800);
        assert_int_equal(s.idle[1], 2);
        assert_int_equal(detector_poll_watch(d, 1, 2000, 1000, 20, &w), 0);
        assert_null(w); /* the window is over */
        assert_int_equal(detector_poll_watch(d, 2, 700, 1000, 20, &w), 0);
        assert_null(w); /* no queue there */
        detector_free(d);
        fake_online_process_stop(&f);
}

static void test_limits(void **state)
{
        static struct detector_queue_addr many[DETECTOR_MAX_QUEUES_PER_PROCESS + 1];
        struct detector *d;
        struct seen s = { 0 };

        assert_int_equal(detector_new(&callbacks, &s, DETECTOR_MODE_POLL, &d), 0);
        assert_int_equal(detector_watch(d, 1, many, DETECTOR_MAX_QUEUES_PER_PROCESS + 1), -E2BIG);
        for (size_t i = 0; i <= DETECTOR_MAX_GPUS; i++)
                many[i].gpu_id = (uint32_t)i + 1;
        assert_int_equal(detector_watch(d, 1, many, DETECTOR_MAX_GPUS + 1), -E2BIG);
        detector_free(d);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_write_index_and_outstanding_work),
                cmocka_unit_test(test_unmapped_queue_counts_idle),
                cmocka_unit_test(test_queue_process_vm_readv_cannot_read_is_seen),
                cmocka_unit_test(test_unreadable_queue_counts_busy),
                cmocka_unit_test(test_quick_look_reads_quiet_processes_in_turn),
                cmocka_unit_test(test_quick_look_turn_is_per_gpu),
                cmocka_unit_test(test_look_gives_way_between_processes),
                cmocka_unit_test(test_queue_waiting_at_a_barrier_is_idle),
                cmocka_unit_test(test_barrier_released_between_looks),
                cmocka_unit_test(test_barrier_or_and_barriers_without_dependencies),
                cmocka_unit_test(test_unknown_ring_counts_busy),
                cmocka_unit_test(test_quick_look_reads_waiting_processes_every_time),
                cmocka_unit_test(test_poll_watch_of_an_idle_gpu),
                cmocka_unit_test(test_limits),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
