/* SPDX-License-Identifier: MIT */
/* A worker's watch of polled queues against a real second process's memory. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake-online-process.h"
#include "poll-watch.h"

/* Queue q of f: one iovec spanning both indices, as the detector reads them. */
static int add_queue(struct poll_watch *w, struct fake_online_process *f, size_t q, bool active)
{
        uintptr_t write = (uintptr_t)fake_write_index(f, q);
        struct iovec remote = { (void *)write, FAKE_READ_OFFSET - FAKE_WRITE_OFFSET + 8 };
        struct poll_watch_index indices[] = {
                { 0, *fake_write_index(f, q) },
                { FAKE_READ_OFFSET - FAKE_WRITE_OFFSET, *fake_read_index(f, q) },
        };

        return poll_watch_add_process(w, f->pid, active, &remote, 1, indices, 2);
}

static void test_a_store_or_a_read_is_seen(void **state)
{
        struct fake_online_process f;
        struct poll_watch *w;
        pid_t pid = 0;

        fake_online_process_start(&f, 1);
        *fake_write_index(&f, 0) = *fake_read_index(&f, 0) = 7;
        assert_int_equal(poll_watch_new(20000, 1000000, &w), 0);
        assert_int_equal(add_queue(w, &f, 0, true), 0);
        assert_int_equal(poll_watch_next_due(w), 0); /* the first poll at once: a store before the watch */
        assert_false(poll_watch_poll(w, 100, &pid));
        assert_int_equal(poll_watch_next_due(w), 20100);
        *fake_write_index(&f, 0) = 8;
        assert_true(poll_watch_poll(w, 20100, &pid));
        assert_int_equal(pid, f.pid);
        *fake_write_index(&f, 0) = 7;
        *fake_read_index(&f, 0) = 8; /* not a queue's life, but a change all the same */
        assert_true(poll_watch_poll(w, 40100, &pid));
        poll_watch_free(w);
        fake_online_process_stop(&f);
}

static void test_ends_at_until(void **state)
{
        struct fake_online_process f;
        struct poll_watch *w;
        pid_t pid;

        fake_online_process_start(&f, 1);
        assert_int_equal(poll_watch_new(20000, 50000, &w), 0);
        assert_int_equal(poll_watch_until(w), 50000);
        assert_int_equal(add_queue(w, &f, 0, true), 0);
        assert_false(poll_watch_poll(w, 20000, &pid));
        assert_int_equal(poll_watch_next_due(w), 40000);
        assert_false(poll_watch_poll(w, 40000, &pid));
        assert_int_equal(poll_watch_next_due(w), UINT64_MAX);
        poll_watch_free(w);
        fake_online_process_stop(&f);
}

/* Quiet processes are read one a poll, in turn; active ones every poll. */
static void test_quiet_processes_in_turn(void **state)
{
        struct fake_online_process active, quiet[2];
        struct poll_watch *w;
        pid_t pid = 0;

        fake_online_process_start(&active, 1);
        fake_online_process_start(&quiet[0], 1);
        fake_online_process_start(&quiet[1], 1);
        assert_int_equal(poll_watch_new(1, UINT64_MAX, &w), 0);
        assert_int_equal(add_queue(w, &quiet[0], 0, false), 0);
        assert_int_equal(add_queue(w, &active, 0, true), 0);
        assert_int_equal(add_queue(w, &quiet[1], 0, false), 0);
        assert_int_equal(poll_watch_n_processes(w), 3);
        *fake_write_index(&quiet[1], 0) = 1;
        assert_false(poll_watch_poll(w, 1, &pid)); /* quiet[0]'s turn */
        assert_true(poll_watch_poll(w, 2, &pid));  /* quiet[1]'s */
        assert_int_equal(pid, quiet[1].pid);
        *fake_write_index(&quiet[1], 0) = 0;
        *fake_write_index(&active, 0) = 1;
        assert_true(poll_watch_poll(w, 3, &pid));
        assert_int_equal(pid, active.pid);
        poll_watch_free(w);
        fake_online_process_stop(&quiet[1]);
        fake_online_process_stop(&quiet[0]);
        fake_online_process_stop(&active);
}

/* A process that cannot be read any more is never taken for work: the watch ends, incomplete. */
static void test_unreadable_process_is_dropped(void **state)
{
        struct fake_online_process f;
        struct poll_watch *w;
        pid_t pid;

        fake_online_process_start(&f, 1);
        assert_int_equal(poll_watch_new(10, UINT64_MAX, &w), 0);
        assert_int_equal(add_queue(w, &f, 0, true), 0);
        assert_true(poll_watch_complete(w));
        fake_online_process_stop(&f);
        assert_false(poll_watch_poll(w, 10, &pid));
        assert_false(poll_watch_complete(w));
        assert_int_equal(poll_watch_next_due(w), UINT64_MAX);
        poll_watch_free(w);
}

static void test_index_outside_the_read_is_refused(void **state)
{
        uint64_t word = 0;
        struct iovec remote = { &word, sizeof(word) };
        struct poll_watch_index outside = { 1, 0 };
        struct poll_watch *w;

        assert_int_equal(poll_watch_new(10, UINT64_MAX, &w), 0);
        assert_int_equal(poll_watch_add_process(w, getpid(), true, &remote, 1, &outside, 1), -EINVAL);
        assert_int_equal(poll_watch_n_processes(w), 0);
        assert_int_equal(poll_watch_next_due(w), UINT64_MAX);
        poll_watch_free(w);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_store_or_a_read_is_seen),
                cmocka_unit_test(test_ends_at_until),
                cmocka_unit_test(test_quiet_processes_in_turn),
                cmocka_unit_test(test_unreadable_process_is_dropped),
                cmocka_unit_test(test_index_outside_the_read_is_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
