/* SPDX-License-Identifier: MIT */
/* A GPU's fault back-off and preemption rate limit, on a made-up clock. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "gpu-backoff.h"

#define SEC UINT64_C(1000000)
#define START_US (1000 * SEC) /* an arbitrary monotonic time */

static const struct gpu_backoff_settings defaults = {
        .base_us = 10 * SEC,
        .max_us = 600 * SEC,
        .max_preemptions_per_second = 50,
};

/* Faults once at t, then lets the back-off run out; returns its length. */
static uint64_t fault_and_expire(struct gpu_backoff *b, uint64_t t)
{
        uint64_t until;

        assert_true(gpu_backoff_fault(b, GPU_FAULT_TIMEOUT, -ETIME, t));
        until = gpu_backoff_deadline(b);
        assert_false(gpu_backoff_expire(b, until - 1));
        assert_true(gpu_backoff_expire(b, until));
        assert_false(gpu_backoff_expire(b, until + 1));
        return until - t;
}

static void test_fault_stops_preemption_until_the_deadline(void **state)
{
        struct gpu_backoff b;
        uint64_t retry = 0;

        gpu_backoff_init(&b, &defaults, START_US);
        assert_int_equal(gpu_backoff_claim_suspend(&b, START_US, &retry), 0);
        assert_true(gpu_backoff_fault(&b, GPU_FAULT_QUEUE_ERROR, 0, START_US));
        assert_int_equal(gpu_backoff_deadline(&b), START_US + 10 * SEC);
        assert_int_equal(gpu_backoff_claim_suspend(&b, START_US + 9 * SEC, &retry), -EBUSY);
        assert_int_equal(retry, START_US + 10 * SEC);
        /* claiming after the deadline ends the back-off itself */
        assert_int_equal(gpu_backoff_claim_suspend(&b, START_US + 10 * SEC, &retry), 0);
        assert_int_equal(gpu_backoff_deadline(&b), 0);
        assert_false(gpu_backoff_expire(&b, START_US + 11 * SEC));
}

static void test_repeated_faults_double_up_to_the_cap(void **state)
{
        struct gpu_backoff b;
        uint64_t t = START_US, expected = 10 * SEC;

        gpu_backoff_init(&b, &defaults, t);
        for (int i = 0; i < 10; i++) {
                uint64_t len = fault_and_expire(&b, t);

                assert_int_equal(len, expected);
                t += len + SEC; /* the next fault comes a second after the back-off ended */
                expected = expected * 2 > 600 * SEC ? 600 * SEC : expected * 2;
        }
        assert_int_equal(b.faults, 10);
}

static void test_quiet_period_starts_again_from_the_base(void **state)
{
        struct gpu_backoff b;
        uint64_t t = START_US;

        gpu_backoff_init(&b, &defaults, t);
        t += fault_and_expire(&b, t) + SEC;
        t += fault_and_expire(&b, t);
        /* a whole FaultBackoffMaxSec without a fault */
        t += 600 * SEC;
        assert_int_equal(fault_and_expire(&b, t), 10 * SEC);
}

static void test_faults_during_a_backoff_are_one_incident(void **state)
{
        struct gpu_backoff b;
        uint64_t t = START_US;

        gpu_backoff_init(&b, &defaults, t);
        assert_true(gpu_backoff_fault(&b, GPU_FAULT_RESET, 0, t));
        /* a call fails while the GPU resets, and the reset ends: no new message, the pause runs from the latest sign */
        assert_false(gpu_backoff_fault(&b, GPU_FAULT_CALL_ERROR, -EIO, t + SEC));
        assert_false(gpu_backoff_fault(&b, GPU_FAULT_RESET, 0, t + 3 * SEC));
        assert_int_equal(gpu_backoff_deadline(&b), t + 13 * SEC);
        /* a sign older than the deadline's start does not shorten it */
        assert_false(gpu_backoff_fault(&b, GPU_FAULT_QUEUE_ERROR, 0, t + 2 * SEC));
        assert_int_equal(gpu_backoff_deadline(&b), t + 13 * SEC);
        assert_int_equal(b.reason, GPU_FAULT_RESET);
        assert_int_equal(b.faults, 4);
        /* and the next back-off doubles once, not per fault */
        assert_true(gpu_backoff_expire(&b, t + 13 * SEC));
        assert_int_equal(fault_and_expire(&b, t + 14 * SEC), 20 * SEC);
}

static void test_rate_limit_takes_a_token_per_suspension(void **state)
{
        struct gpu_backoff_settings s = defaults;
        struct gpu_backoff b;
        uint64_t retry = 0;

        s.max_preemptions_per_second = 4;
        gpu_backoff_init(&b, &s, START_US);
        /* a full bucket: one second's worth at once */
        for (int i = 0; i < 4; i++)
                assert_int_equal(gpu_backoff_claim_suspend(&b, START_US, &retry), 0);
        assert_int_equal(gpu_backoff_claim_suspend(&b, START_US, &retry), -EAGAIN);
        assert_int_equal(retry, START_US + SEC / 4);
        assert_int_equal(gpu_backoff_claim_suspend(&b, START_US + SEC / 4 - 1, &retry), -EAGAIN);
        assert_int_equal(retry, START_US + SEC / 4);
        assert_int_equal(gpu_backoff_claim_suspend(&b, START_US + SEC / 4, &retry), 0);
        assert_int_equal(b.rate_limited, 2);
        /* a long pause refills it to one second's worth, no more */
        for (int i = 0; i < 4; i++)
                assert_int_equal(gpu_backoff_claim_suspend(&b, START_US + 3600 * SEC, &retry), 0);
        assert_int_equal(gpu_backoff_claim_suspend(&b, START_US + 3600 * SEC, &retry), -EAGAIN);
}

/* A hold's suspension preempts every GPU of its process: each is asked first, and only then are tokens taken. */
static void test_check_takes_nothing_until_every_gpu_agrees(void **state)
{
        struct gpu_backoff_settings s = defaults;
        struct gpu_backoff a, b;
        uint64_t retry = 0;

        s.max_preemptions_per_second = 1;
        gpu_backoff_init(&a, &s, START_US);
        gpu_backoff_init(&b, &s, START_US);
        assert_int_equal(gpu_backoff_claim_suspend(&b, START_US, &retry), 0);
        /* a has its token, b has none: nothing is taken from a */
        assert_int_equal(gpu_backoff_check_suspend(&a, START_US + 1, &retry), 0);
        assert_int_equal(gpu_backoff_check_suspend(&b, START_US + 1, &retry), -EAGAIN);
        assert_int_equal(retry, START_US + SEC);
        assert_int_equal(b.rate_limited, 1);
        assert_int_equal(gpu_backoff_check_suspend(&a, START_US + 2, &retry), 0);
        /* both have one a second later; taking them empties both */
        assert_int_equal(gpu_backoff_check_suspend(&a, START_US + SEC, &retry), 0);
        assert_int_equal(gpu_backoff_check_suspend(&b, START_US + SEC, &retry), 0);
        gpu_backoff_take_token(&a);
        gpu_backoff_take_token(&b);
        assert_int_equal(gpu_backoff_check_suspend(&a, START_US + SEC, &retry), -EAGAIN);
        assert_int_equal(gpu_backoff_check_suspend(&b, START_US + SEC, &retry), -EAGAIN);
        /* a GPU in back-off says until when, whatever its bucket holds */
        assert_true(gpu_backoff_fault(&a, GPU_FAULT_TIMEOUT, -ETIME, START_US + SEC));
        assert_int_equal(gpu_backoff_check_suspend(&a, START_US + 2 * SEC, &retry), -EBUSY);
        assert_int_equal(retry, START_US + 11 * SEC);
}

static void test_next_suspend_says_when_without_taking(void **state)
{
        struct gpu_backoff_settings s = defaults;
        struct gpu_backoff b;
        uint64_t retry = 0;

        s.max_preemptions_per_second = 2;
        gpu_backoff_init(&b, &s, START_US);
        assert_int_equal(gpu_backoff_next_suspend_us(&b, START_US), START_US);
        assert_int_equal(gpu_backoff_next_suspend_us(&b, START_US), START_US);
        assert_int_equal(gpu_backoff_claim_suspend(&b, START_US, &retry), 0);
        assert_int_equal(gpu_backoff_claim_suspend(&b, START_US, &retry), 0);
        /* empty: a resume now would leave the next burst unprotected for half a second */
        assert_int_equal(gpu_backoff_next_suspend_us(&b, START_US + 100), START_US + SEC / 2);
        assert_int_equal(gpu_backoff_next_suspend_us(&b, START_US + SEC / 2), START_US + SEC / 2);
        assert_int_equal(gpu_backoff_claim_suspend(&b, START_US + SEC / 2, &retry), 0);
        assert_int_equal(b.rate_limited, 0);

        s.max_preemptions_per_second = 0;
        gpu_backoff_update_settings(&b, &s, START_US + SEC);
        assert_int_equal(gpu_backoff_next_suspend_us(&b, START_US + SEC), START_US + SEC);
}

static void test_rate_bounds_a_storm(void **state)
{
        struct gpu_backoff b;
        uint64_t retry = 0, granted = 0;

        gpu_backoff_init(&b, &defaults, START_US);
        /* a suspension asked for every 100 µs for ten seconds */
        for (uint64_t t = START_US; t < START_US + 10 * SEC; t += 100)
                granted += gpu_backoff_claim_suspend(&b, t, &retry) == 0;
        /* the first second's bucket, then the rate */
        assert_in_range(granted, 10 * 50, 10 * 50 + 50);
}

/*
 * A token kept for a suspension that may come later (a suspend-on-trap
 * mark's) still counts against the rate: the bucket refills around it, so
 * a full second holds at most MaxPreemptionsPerSecond= suspensions, the
 * kept one's included.
 */
static void test_kept_token_counts_against_the_rate(void **state)
{
        struct gpu_backoff b;
        uint64_t retry = 0, granted = 0;

        gpu_backoff_init(&b, &defaults, START_US);
        assert_int_equal(gpu_backoff_keep_token(&b, START_US, &retry), 0);
        assert_true(gpu_backoff_token_kept(&b));
        /* a second later the bucket is as full as it may be with a token kept */
        for (uint64_t t = START_US + SEC; gpu_backoff_claim_suspend(&b, t, &retry) == 0; )
                granted++;
        assert_int_equal(granted, 50 - 1);
        assert_true(gpu_backoff_spend_kept_token(&b));
        assert_false(gpu_backoff_token_kept(&b));
        assert_false(gpu_backoff_spend_kept_token(&b));
        /* spent, it leaves room for one more after a refill */
        granted = 0;
        for (uint64_t t = START_US + 3 * SEC; gpu_backoff_claim_suspend(&b, t, &retry) == 0; )
                granted++;
        assert_int_equal(granted, 50);
}

static void test_no_rate_limit(void **state)
{
        struct gpu_backoff_settings s = defaults;
        struct gpu_backoff b;
        uint64_t retry = 0;

        s.max_preemptions_per_second = 0;
        gpu_backoff_init(&b, &s, START_US);
        for (int i = 0; i < 100000; i++)
                assert_int_equal(gpu_backoff_claim_suspend(&b, START_US, &retry), 0);
        assert_int_equal(b.rate_limited, 0);
}

static void test_reload_keeps_a_backoff_and_clamps_the_delay(void **state)
{
        struct gpu_backoff_settings s = defaults;
        struct gpu_backoff b;
        uint64_t t = START_US;

        gpu_backoff_init(&b, &s, t);
        t += fault_and_expire(&b, t) + SEC;
        assert_true(gpu_backoff_fault(&b, GPU_FAULT_CALL_ERROR, -EIO, t));
        s.base_us = SEC;
        s.max_us = 5 * SEC;
        gpu_backoff_update_settings(&b, &s, t);
        assert_int_equal(gpu_backoff_deadline(&b), t + 20 * SEC);
        assert_true(gpu_backoff_expire(&b, t + 20 * SEC));
        assert_int_equal(fault_and_expire(&b, t + 21 * SEC), 5 * SEC);
}

static void test_status_and_messages(void **state)
{
        struct gpu_backoff b;
        struct gpu_backoff_status st;
        char line[512];

        gpu_backoff_init(&b, &defaults, START_US);
        gpu_backoff_status(&b, START_US, &st);
        assert_false(st.active);
        assert_null(st.reason);
        assert_int_equal(st.faults, 0);

        assert_true(gpu_backoff_fault(&b, GPU_FAULT_TIMEOUT, -ETIME, START_US));
        gpu_backoff_status(&b, START_US + SEC, &st);
        assert_true(st.active);
        assert_string_equal(st.reason, "timeout");
        assert_int_equal(st.error, -ETIME);
        assert_int_equal(st.until_us, START_US + 10 * SEC);
        assert_int_equal(st.remaining_us, 9 * SEC);
        assert_int_equal(st.faults, 1);
        gpu_backoff_describe(&b, 4242, START_US, line, sizeof(line));
        assert_non_null(strstr(line, "GPU 4242: a suspend or resume timed out"));
        assert_non_null(strstr(line, "(Timer expired)"));
        assert_non_null(strstr(line, "for 10 s"));
        assert_non_null(strstr(line, "kernel log"));

        /* past the deadline the status says it is over even before expire() ran */
        gpu_backoff_status(&b, START_US + 10 * SEC, &st);
        assert_false(st.active);
        assert_int_equal(st.until_us, 0);
        assert_string_equal(st.reason, "timeout");

        assert_true(gpu_backoff_expire(&b, START_US + 10 * SEC));
        gpu_backoff_describe(&b, 4242, START_US + 10 * SEC, line, sizeof(line));
        assert_non_null(strstr(line, "GPU 4242: back-off over (it began with: timeout; faults on it so far: 1); preempting "
                                       "it again"));

        for (int k = 0; k < _GPU_FAULT_KIND_MAX; k++)
                assert_non_null(gpu_fault_kind_to_string(k));
        assert_null(gpu_fault_kind_to_string(_GPU_FAULT_KIND_MAX));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fault_stops_preemption_until_the_deadline),
                cmocka_unit_test(test_repeated_faults_double_up_to_the_cap),
                cmocka_unit_test(test_quiet_period_starts_again_from_the_base),
                cmocka_unit_test(test_faults_during_a_backoff_are_one_incident),
                cmocka_unit_test(test_rate_limit_takes_a_token_per_suspension),
                cmocka_unit_test(test_check_takes_nothing_until_every_gpu_agrees),
                cmocka_unit_test(test_next_suspend_says_when_without_taking),
                cmocka_unit_test(test_rate_bounds_a_storm),
                cmocka_unit_test(test_kept_token_counts_against_the_rate),
                cmocka_unit_test(test_no_rate_limit),
                cmocka_unit_test(test_reload_keeps_a_backoff_and_clamps_the_delay),
                cmocka_unit_test(test_status_and_messages),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
