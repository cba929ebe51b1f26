/* SPDX-License-Identifier: MIT */
/* Blocking reads on the helper thread, their results on the loop: ordering, keys, cancellation, shutdown. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "background-read.h"

/* What the jobs did, seen from the test. */
struct record {
        int gate[2];            /* a read waits for a byte here when blocking */
        bool blocking;
        int fail_with;          /* read returns this when negative */
        unsigned reads, delivered, args_freed;
        uint64_t delivered_keys[8];
        int delivered_r[8];
        pthread_t loop_thread, read_thread, done_thread;
        int read_policy;
        bool read_signals_blocked;
};

struct job_arg {
        struct record *rec;
        uint64_t key;
};

static int job_read(void *userdata, void **ret_result)
{
        struct job_arg *a = userdata;
        struct record *rec = a->rec;
        sigset_t mask;
        uint64_t *result;
        char c;

        __atomic_add_fetch(&rec->reads, 1, __ATOMIC_SEQ_CST);
        rec->read_thread = pthread_self();
        rec->read_policy = sched_getscheduler(0);
        pthread_sigmask(SIG_SETMASK, NULL, &mask);
        rec->read_signals_blocked = sigismember(&mask, SIGTERM) && sigismember(&mask, SIGCHLD);
        if (rec->blocking && read(rec->gate[0], &c, 1) != 1)
                return -EIO;
        if (rec->fail_with < 0)
                return rec->fail_with;
        result = malloc(sizeof(*result));
        if (!result)
                return -ENOMEM;
        *result = a->key * 100;
        *ret_result = result;
        return 0;
}

static void job_done(uint64_t key, int r, void *result, void *userdata)
{
        struct record *rec = userdata;

        assert_true(rec->delivered < 8);
        rec->done_thread = pthread_self();
        rec->delivered_keys[rec->delivered] = key;
        rec->delivered_r[rec->delivered] = r;
        rec->delivered++;
        if (r == 0)
                assert_int_equal(*(uint64_t *)result, key * 100);
        else
                assert_null(result);
        free(result);
}

static void job_free_result(void *result)
{
        /* that each undelivered result comes here is what the sanitizer build's leak check shows */
        free(result);
}

static void job_free_arg(void *userdata)
{
        struct job_arg *a = userdata;

        __atomic_add_fetch(&a->rec->args_freed, 1, __ATOMIC_SEQ_CST);
        free(a);
}

static int submit(struct background_read *b, struct record *rec, uint64_t key)
{
        struct job_arg *a = calloc(1, sizeof(*a));
        struct background_read_job job = {
                .key = key,
                .read = job_read,
                .done = job_done,
                .free_result = job_free_result,
                .free_arg = job_free_arg,
                .userdata = rec,
        };
        int r;

        assert_non_null(a);
        a->rec = rec;
        a->key = key;
        job.arg = a;
        r = background_read_submit(b, &job);
        if (r < 0)
                free(a);
        return r;
}

static void record_init(struct record *rec, bool blocking)
{
        *rec = (struct record){ .blocking = blocking, .loop_thread = pthread_self() };
        assert_int_equal(pipe2(rec->gate, O_CLOEXEC), 0);
}

static void record_done(struct record *rec)
{
        close(rec->gate[0]);
        close(rec->gate[1]);
}

static void open_gate(struct record *rec, unsigned reads)
{
        for (unsigned i = 0; i < reads; i++)
                assert_int_equal(write(rec->gate[1], "x", 1), 1);
}

/* Runs the loop until rec has seen `delivered` deliveries, for at most 5 s. */
static void run_until_delivered(sd_event *e, struct record *rec, unsigned delivered)
{
        for (int i = 0; i < 500 && rec->delivered < delivered; i++)
                assert_true(sd_event_run(e, 10000) >= 0);
        assert_int_equal(rec->delivered, delivered);
}

static int on_timer_open_gate(sd_event_source *s, uint64_t usec, void *userdata)
{
        open_gate(userdata, 1);
        return 0;
}

static void test_loop_runs_while_a_read_blocks(void **state)
{
        struct background_read *b = NULL;
        struct record rec;
        sd_event *e = NULL;
        uint64_t now;

        record_init(&rec, true);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(background_read_new(e, 0, &b), 0);
        assert_int_equal(submit(b, &rec, 1), 0);
        /* only the loop, through this timer, lets the read finish */
        assert_true(sd_event_now(e, CLOCK_MONOTONIC, &now) >= 0);
        assert_int_equal(sd_event_add_time(e, NULL, CLOCK_MONOTONIC, now + 20000, 0, on_timer_open_gate, &rec), 0);
        run_until_delivered(e, &rec, 1);
        assert_int_equal(rec.delivered_keys[0], 1);
        assert_int_equal(rec.delivered_r[0], 0);
        assert_true(pthread_equal(rec.done_thread, rec.loop_thread));
        assert_false(pthread_equal(rec.read_thread, rec.loop_thread));
        assert_true(rec.read_signals_blocked);
        background_read_free(b);
        assert_int_equal(rec.args_freed, 1);
        sd_event_unref(e);
        record_done(&rec);
}

static void test_one_job_per_key_in_order(void **state)
{
        struct background_read *b = NULL;
        struct record rec;
        sd_event *e = NULL;

        record_init(&rec, true);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(background_read_new(e, 0, &b), 0);
        assert_int_equal(submit(b, &rec, 7), 0);
        assert_int_equal(submit(b, &rec, 7), -EBUSY);
        assert_int_equal(submit(b, &rec, 3), 0);
        assert_int_equal(submit(b, &rec, 3), -EBUSY);
        open_gate(&rec, 2);
        run_until_delivered(e, &rec, 2);
        assert_int_equal(rec.delivered_keys[0], 7);
        assert_int_equal(rec.delivered_keys[1], 3);
        /* delivered: the key is free again */
        assert_int_equal(submit(b, &rec, 7), 0);
        open_gate(&rec, 1);
        run_until_delivered(e, &rec, 3);
        background_read_free(b);
        assert_int_equal(rec.args_freed, 3);
        sd_event_unref(e);
        record_done(&rec);
}

static void test_a_failed_read_is_delivered_as_an_error(void **state)
{
        struct background_read *b = NULL;
        struct record rec;
        sd_event *e = NULL;

        record_init(&rec, false);
        rec.fail_with = -EIO;
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(background_read_new(e, 0, &b), 0);
        assert_int_equal(submit(b, &rec, 9), 0);
        run_until_delivered(e, &rec, 1);
        assert_int_equal(rec.delivered_r[0], -EIO);
        background_read_free(b);
        sd_event_unref(e);
        record_done(&rec);
}

static void test_cancel_drops_queued_running_and_finished_jobs(void **state)
{
        struct background_read *b = NULL;
        struct record rec;
        sd_event *e = NULL;

        record_init(&rec, true);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(background_read_new(e, 0, &b), 0);
        assert_int_equal(submit(b, &rec, 1), 0);
        assert_int_equal(submit(b, &rec, 2), 0);
        assert_int_equal(submit(b, &rec, 3), 0);
        /* 1 is running (or about to): wait until the helper has it */
        for (int i = 0; i < 500 && __atomic_load_n(&rec.reads, __ATOMIC_SEQ_CST) < 1; i++)
                usleep(1000);
        assert_int_equal(background_read_cancel(b, 1), 0);
        /* 2 is queued: never read */
        assert_int_equal(background_read_cancel(b, 2), 0);
        assert_int_equal(rec.args_freed, 1);
        assert_int_equal(background_read_cancel(b, 42), -ENOENT);
        open_gate(&rec, 2);
        run_until_delivered(e, &rec, 1);
        assert_int_equal(rec.delivered_keys[0], 3);
        assert_int_equal(rec.reads, 2);
        /* a job cancelled after it finished, before delivery */
        rec.blocking = false;
        assert_int_equal(submit(b, &rec, 4), 0);
        for (int i = 0; i < 500 && __atomic_load_n(&rec.reads, __ATOMIC_SEQ_CST) < 3; i++)
                usleep(1000);
        usleep(10000);
        assert_int_equal(background_read_cancel(b, 4), 0);
        for (int i = 0; i < 5; i++)
                assert_true(sd_event_run(e, 10000) >= 0);
        assert_int_equal(rec.delivered, 1);
        assert_int_equal(rec.args_freed, 4);
        background_read_free(b);
        sd_event_unref(e);
        record_done(&rec);
}

static void *open_gate_later(void *userdata)
{
        usleep(50000);
        open_gate(userdata, 1);
        return NULL;
}

static void test_shutdown_waits_for_the_read_and_drops_the_rest(void **state)
{
        struct background_read *b = NULL;
        struct record rec;
        sd_event *e = NULL;
        pthread_t opener;

        record_init(&rec, true);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(background_read_new(e, 0, &b), 0);
        assert_int_equal(submit(b, &rec, 1), 0);
        assert_int_equal(submit(b, &rec, 2), 0);
        for (int i = 0; i < 500 && __atomic_load_n(&rec.reads, __ATOMIC_SEQ_CST) < 1; i++)
                usleep(1000);
        assert_int_equal(pthread_create(&opener, NULL, open_gate_later, &rec), 0);
        background_read_free(b);
        pthread_join(opener, NULL);
        assert_int_equal(rec.reads, 1);
        assert_int_equal(rec.delivered, 0);
        assert_int_equal(rec.args_freed, 2);
        sd_event_unref(e);
        record_done(&rec);
}

static void test_helper_runs_at_normal_priority(void **state)
{
        struct sched_param fifo = { .sched_priority = 1 }, normal = { .sched_priority = 0 };
        struct background_read *b = NULL;
        struct record rec;
        sd_event *e = NULL;

        record_init(&rec, false);
        assert_int_equal(sd_event_new(&e), 0);
        /* the daemon's loop thread at RealtimePriority=1 creates it */
        if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) != 0)
                fail_msg("cannot put the test at SCHED_FIFO 1: run it as root (or with RLIMIT_RTPRIO >= 1)");
        assert_int_equal(background_read_new(e, 0, &b), 0);
        assert_int_equal(pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal), 0);
        assert_int_equal(submit(b, &rec, 5), 0);
        run_until_delivered(e, &rec, 1);
        assert_int_equal(rec.read_policy, SCHED_OTHER);
        background_read_free(b);
        sd_event_unref(e);
        record_done(&rec);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_loop_runs_while_a_read_blocks),
                cmocka_unit_test(test_one_job_per_key_in_order),
                cmocka_unit_test(test_a_failed_read_is_delivered_as_an_error),
                cmocka_unit_test(test_cancel_drops_queued_running_and_finished_jobs),
                cmocka_unit_test(test_shutdown_waits_for_the_read_and_drops_the_rest),
                cmocka_unit_test(test_helper_runs_at_normal_priority),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
