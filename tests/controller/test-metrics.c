/* SPDX-License-Identifier: MIT */
/* The daemon's counters (gpreemptd/metrics.c): histogram buckets, a process's suspended time, retiring it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "metrics.h"

static void test_histogram_buckets(void **state)
{
        struct metrics_histogram h = { 0 };

        metrics_histogram_observe(&h, 0);
        metrics_histogram_observe(&h, 1000);        /* on the first bound: in it */
        metrics_histogram_observe(&h, 1001);        /* just past it: the next */
        metrics_histogram_observe(&h, 2000000000);  /* past the last bound: +Inf only */
        assert_int_equal(h.in_bucket[0], 2);
        assert_int_equal(h.in_bucket[1], 1);
        assert_int_equal(h.count, 4);
        assert_int_equal(h.sum_ns, 2000002001);
        for (size_t i = 1; i < METRICS_HISTOGRAM_BUCKETS; i++)
                assert_true(metrics_histogram_bounds_ns[i] > metrics_histogram_bounds_ns[i - 1]);
}

static void test_process_suspended_time(void **state)
{
        struct metrics_process mp = { 0 };

        metrics_process_suspended(&mp, 3, 100);
        /* a second suspension of a suspended GPU (a hold over the policy's) continues the first */
        metrics_process_suspended(&mp, 3, 150);
        assert_int_equal(metrics_process_suspended_us(&mp, 3, 200), 100);
        metrics_process_resumed(&mp, 3, 300);
        assert_int_equal(metrics_process_suspended_us(&mp, 3, 1000), 200);
        metrics_process_suspended(&mp, 3, 1000);
        metrics_process_end(&mp, 1050);
        assert_int_equal(metrics_process_suspended_us(&mp, 3, 5000), 250);
        assert_int_equal(mp.gpu[3].suspensions, 3);
        assert_int_equal(mp.gpu[3].resumptions, 1);
        assert_int_equal(metrics_process_suspended_us(&mp, 2, 5000), 0);
}

static void test_retired_counts_add_up_per_identity(void **state)
{
        struct metrics_retired r = { 0 };
        struct metrics_process a = { 0 }, b = { 0 };
        struct metrics_identity train = { "train", WORKLOAD_CLASS_OFFLINE }, serve = { "serve", WORKLOAD_CLASS_ONLINE },
                                registered = { NULL, WORKLOAD_CLASS_OFFLINE };

        a.gpu[0] = (struct metrics_transitions){ .suspensions = 2, .resumptions = 2, .suspended_us = 40 };
        a.on_gpu[0] = true;
        b.gpu[0] = (struct metrics_transitions){ .suspensions = 1, .resumptions = 1, .suspended_us = 5 };
        b.on_gpu[1] = true;
        assert_int_equal(metrics_retire(&r, &train, &a, 2), 0);
        assert_int_equal(metrics_retire(&r, &train, &b, 2), 0);
        assert_int_equal(metrics_retire(&r, &serve, &(struct metrics_process){ .on_gpu = { true } }, 2), 0);
        assert_int_equal(metrics_retire(&r, &registered, &b, 2), 0);
        assert_int_equal(r.n_entries, 3);
        assert_string_equal(r.entries[0].workload, "train");
        assert_int_equal(r.entries[0].gpu[0].suspensions, 3);
        assert_int_equal(r.entries[0].gpu[0].suspended_us, 45);
        assert_true(r.entries[0].on_gpu[0] && r.entries[0].on_gpu[1]);
        assert_int_equal(r.entries[1].gpu[0].suspensions, 0);
        assert_true(r.entries[1].on_gpu[0]);
        assert_null(r.entries[2].workload);
        assert_false(metrics_identity_equal(&train, &registered));
        assert_false(metrics_identity_equal(&train, &(struct metrics_identity){ "train", WORKLOAD_CLASS_ONLINE }));
        metrics_retired_done(&r);
}

static void test_error_names(void **state)
{
        for (int e = 0; e < _METRICS_ERROR_MAX; e++)
                assert_non_null(metrics_error_to_string(e));
        assert_null(metrics_error_to_string(_METRICS_ERROR_MAX));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_histogram_buckets),
                cmocka_unit_test(test_process_suspended_time),
                cmocka_unit_test(test_retired_counts_add_up_per_identity),
                cmocka_unit_test(test_error_names),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
