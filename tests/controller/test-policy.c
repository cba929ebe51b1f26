/* SPDX-License-Identifier: MIT */
/* The per-GPU policy against a fake clock: each rule alone, then random traffic checked for the bounds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "policy.h"

#define MS 1000u

static struct policy_params params(void)
{
        return (struct policy_params){
                .hold_off_us = 2 * MS,
                .coalesce_us = 1 * MS,
                .max_suspend_us = 500 * MS,
                .share_window_us = 1000 * MS,
                .min_offline_share_percent = 10,
        };
}

static void test_suspend_at_once_resume_after_hold_off(void **state)
{
        struct policy_params p = params();
        struct policy_gpu g;

        policy_gpu_init(&g, &p, 0);
        assert_int_equal(policy_next_deadline(&g), POLICY_NEVER);
        assert_int_equal(policy_online_busy(&g, 10 * MS), POLICY_ACTION_SUSPEND);
        assert_int_equal(policy_online_busy(&g, 11 * MS), POLICY_ACTION_NONE);
        assert_int_equal(policy_online_idle(&g, 12 * MS, 12 * MS), POLICY_ACTION_NONE);
        assert_int_equal(policy_next_deadline(&g), 14 * MS);
        assert_int_equal(policy_tick(&g, 14 * MS - 1), POLICY_ACTION_NONE);
        assert_int_equal(policy_tick(&g, 14 * MS), POLICY_ACTION_RESUME);
        assert_int_equal(policy_next_deadline(&g), POLICY_NEVER);
        assert_int_equal(g.stats.suspends, 1);
        assert_int_equal(g.stats.resumes[POLICY_RESUMED_IDLE], 1);
        assert_int_equal(policy_suspended_us(&g, 20 * MS), 4 * MS);
}

/*
 * Busy time counts from the first busy report to the idle report, the
 * period in progress too; never less than an earlier reading (a counter).
 */
static void test_online_busy_time(void **state)
{
        struct policy_params p = params();
        struct policy_gpu g;

        policy_gpu_init(&g, &p, 0);
        assert_int_equal(policy_online_busy_us(&g, 5 * MS), 0);
        policy_online_busy(&g, 10 * MS);
        policy_online_busy(&g, 11 * MS);
        assert_int_equal(policy_online_busy_us(&g, 12 * MS), 2 * MS);
        /* read at 14 ms; idle since 13 ms, reported at 15 ms: the count does not go back to 3 ms */
        assert_int_equal(policy_online_busy_us(&g, 14 * MS), 4 * MS);
        policy_online_idle(&g, 13 * MS, 15 * MS);
        assert_int_equal(policy_online_busy_us(&g, 20 * MS), 5 * MS);
        policy_online_idle(&g, 21 * MS, 21 * MS);
        assert_int_equal(policy_online_busy_us(&g, 30 * MS), 5 * MS);
        policy_online_busy(&g, 30 * MS);
        assert_int_equal(policy_online_busy_us(&g, 31 * MS), 6 * MS);
}

static void test_bursts_inside_hold_off_are_one_suspension(void **state)
{
        struct policy_params p = params();
        struct policy_gpu g;

        policy_gpu_init(&g, &p, 0);
        assert_int_equal(policy_online_busy(&g, 0), POLICY_ACTION_SUSPEND);
        for (uint64_t t = 1 * MS; t < 50 * MS; t += 2 * MS) {
                assert_int_equal(policy_online_idle(&g, t, t), POLICY_ACTION_NONE);
                assert_int_equal(policy_tick(&g, t + 1 * MS), POLICY_ACTION_NONE);
                assert_int_equal(policy_online_busy(&g, t + 1900), POLICY_ACTION_NONE);
        }
        assert_int_equal(g.stats.suspends, 1);
        assert_int_equal(g.stats.resumes[POLICY_RESUMED_IDLE], 0);
}

static void test_coalesce_keeps_a_short_suspension(void **state)
{
        struct policy_params p = params();
        struct policy_gpu g;

        p.hold_off_us = 0;
        policy_gpu_init(&g, &p, 0);
        assert_int_equal(policy_online_busy(&g, 100), POLICY_ACTION_SUSPEND);
        assert_int_equal(policy_online_idle(&g, 200, 200), POLICY_ACTION_NONE);
        assert_int_equal(policy_next_deadline(&g), 1100);
        assert_int_equal(policy_tick(&g, 1099), POLICY_ACTION_NONE);
        assert_int_equal(policy_tick(&g, 1100), POLICY_ACTION_RESUME);
}

static void test_idle_reported_late_counts_from_its_start(void **state)
{
        struct policy_params p = params();
        struct policy_gpu g;

        policy_gpu_init(&g, &p, 0);
        assert_int_equal(policy_online_busy(&g, 0), POLICY_ACTION_SUSPEND);
        /* idle since 1 ms, noticed at 5 ms: the hold-off is already over */
        assert_int_equal(policy_online_idle(&g, 1 * MS, 5 * MS), POLICY_ACTION_RESUME);
}

/* The rate limit keeps an idle resume until the next suspension could come; the bounds still win. */
static void test_resume_not_before(void **state)
{
        struct policy_params p = params();
        struct policy_gpu g;

        policy_gpu_init(&g, &p, 0);
        assert_int_equal(policy_online_busy(&g, 10 * MS), POLICY_ACTION_SUSPEND);
        policy_resume_not_before(&g, 30 * MS);
        assert_int_equal(policy_online_idle(&g, 12 * MS, 12 * MS), POLICY_ACTION_NONE);
        assert_int_equal(policy_next_deadline(&g), 30 * MS);
        assert_int_equal(policy_tick(&g, 14 * MS), POLICY_ACTION_NONE);
        assert_int_equal(policy_tick(&g, 30 * MS), POLICY_ACTION_RESUME);

        /* MaxSuspendMs= ends it whatever the rate limit says */
        assert_int_equal(policy_online_busy(&g, 40 * MS), POLICY_ACTION_SUSPEND);
        policy_resume_not_before(&g, 10000 * MS);
        assert_int_equal(policy_online_idle(&g, 41 * MS, 41 * MS), POLICY_ACTION_NONE);
        assert_int_equal(policy_next_deadline(&g), 540 * MS);
        assert_int_equal(policy_tick(&g, 540 * MS), POLICY_ACTION_RESUME);
        assert_int_equal(g.stats.resumes[POLICY_RESUMED_MAX_SUSPEND], 1);
}

/* A fault resumes a suspension at once, counted as such; with nothing suspended it does nothing. */
static void test_resume_for_fault(void **state)
{
        struct policy_params p = params();
        struct policy_gpu g;

        policy_gpu_init(&g, &p, 0);
        assert_int_equal(policy_resume_for_fault(&g, 1 * MS), POLICY_ACTION_NONE);
        assert_int_equal(policy_online_busy(&g, 10 * MS), POLICY_ACTION_SUSPEND);
        assert_int_equal(policy_resume_for_fault(&g, 15 * MS), POLICY_ACTION_RESUME);
        assert_false(g.suspended);
        assert_int_equal(g.stats.resumes[POLICY_RESUMED_FAULT], 1);
        assert_int_equal(policy_suspended_us(&g, 20 * MS), 5 * MS);
}

static void test_max_suspend_then_offline_slice(void **state)
{
        struct policy_params p = params();
        struct policy_gpu g;
        uint64_t slice = policy_offline_slice_us(&p);

        p.share_window_us = 3600000 * MS; /* only the continuous bound matters here */
        slice = policy_offline_slice_us(&p);
        assert_int_equal(slice, 500 * MS * 10 / 90);
        policy_gpu_init(&g, &p, 0);
        assert_int_equal(policy_online_busy(&g, 0), POLICY_ACTION_SUSPEND);
        assert_int_equal(policy_next_deadline(&g), 500 * MS);
        assert_int_equal(policy_tick(&g, 500 * MS), POLICY_ACTION_RESUME);
        assert_int_equal(g.stats.resumes[POLICY_RESUMED_MAX_SUSPEND], 1);
        /* online is still busy, but offline has its slice */
        assert_int_equal(policy_online_busy(&g, 500 * MS + 1), POLICY_ACTION_NONE);
        assert_int_equal(policy_next_deadline(&g), 500 * MS + slice);
        assert_int_equal(policy_tick(&g, 500 * MS + slice), POLICY_ACTION_SUSPEND);
}

static void test_slice_never_zero(void **state)
{
        struct policy_params p = params();

        p.min_offline_share_percent = 0;
        p.coalesce_us = 0;
        assert_int_equal(policy_offline_slice_us(&p), 1 * MS);
        p.coalesce_us = 3 * MS;
        assert_int_equal(policy_offline_slice_us(&p), 3 * MS);
}

static void test_share_window_budget(void **state)
{
        struct policy_params p = params();
        struct policy_gpu g;

        p.max_suspend_us = 3600000 * MS; /* only the window bound matters here */
        policy_gpu_init(&g, &p, 0);
        assert_int_equal(policy_online_busy(&g, 0), POLICY_ACTION_SUSPEND);
        assert_int_equal(policy_next_deadline(&g), 900 * MS);
        assert_int_equal(policy_tick(&g, 900 * MS), POLICY_ACTION_RESUME);
        assert_int_equal(g.stats.resumes[POLICY_RESUMED_SHARE], 1);
        assert_int_equal(policy_next_deadline(&g), 1000 * MS);
        assert_int_equal(policy_tick(&g, 999 * MS), POLICY_ACTION_NONE);
        assert_int_equal(policy_tick(&g, 1000 * MS), POLICY_ACTION_SUSPEND);
}

static void test_failed_suspend_is_forgotten(void **state)
{
        struct policy_params p = params();
        struct policy_gpu g;

        policy_gpu_init(&g, &p, 0);
        assert_int_equal(policy_online_busy(&g, 0), POLICY_ACTION_SUSPEND);
        policy_action_failed(&g, POLICY_ACTION_SUSPEND, 0);
        assert_false(g.suspended);
        assert_int_equal(g.stats.suspends, 0);
        /* the next sign of online work tries again */
        assert_int_equal(policy_online_busy(&g, 1), POLICY_ACTION_SUSPEND);
}

static void test_new_params_apply(void **state)
{
        struct policy_params p = params();
        struct policy_gpu g;

        policy_gpu_init(&g, &p, 0);
        assert_int_equal(policy_online_busy(&g, 0), POLICY_ACTION_SUSPEND);
        p.max_suspend_us = 10 * MS;
        policy_gpu_set_params(&g, &p, 5 * MS);
        assert_int_equal(policy_tick(&g, 10 * MS), POLICY_ACTION_RESUME);
}

/*
 * Random traffic, driven only through the public inputs and next_deadline:
 * every suspension must respect MaxSuspendMs, every window the share, and
 * offline must never stay suspended longer than the hold-off (plus
 * coalescing) once online is idle.
 */
static void test_random_traffic_keeps_every_bound(void **state)
{
        for (unsigned seed = 1; seed <= 40; seed++) {
                struct policy_params p = params();
                struct policy_gpu g;
                uint64_t t = 0, next_event = 0, end = 20000 * MS;
                uint64_t since = 0, window_susp = 0, window_start = 0;
                bool busy = false;

                srand(seed);
                p.max_suspend_us = (uint64_t)(50 + rand() % 400) * MS;
                p.share_window_us = (uint64_t)(200 + rand() % 1000) * MS;
                p.min_offline_share_percent = (unsigned)(rand() % 60);
                p.hold_off_us = (uint64_t)(rand() % 5) * MS;
                policy_gpu_init(&g, &p, 0);

                while (t < end) {
                        uint64_t deadline = policy_next_deadline(&g);
                        uint64_t step = next_event < deadline ? next_event : deadline;
                        bool was_suspended = g.suspended;
                        enum policy_action a;

                        assert_true(step >= t);
                        /* accounting of the reference windows */
                        while (step >= window_start + p.share_window_us) {
                                uint64_t wend = window_start + p.share_window_us;
                                if (was_suspended)
                                        window_susp += wend - (t > window_start ? t : window_start);
                                assert_true(window_susp <= p.share_window_us * (100 - p.min_offline_share_percent) / 100);
                                window_start = wend;
                                window_susp = 0;
                                t = t > wend ? t : wend;
                        }
                        if (was_suspended)
                                window_susp += step - (t > window_start ? t : window_start);
                        t = step;
                        if (t == next_event) {
                                busy = rand() % 3 != 0;
                                a = busy ? policy_online_busy(&g, t) : policy_online_idle(&g, t, t);
                                next_event = t + (uint64_t)(rand() % 30000);
                        } else {
                                a = policy_tick(&g, t);
                        }
                        if (a == POLICY_ACTION_SUSPEND)
                                since = t;
                        if (g.suspended)
                                assert_true(t - since <= p.max_suspend_us);
                        if (!busy && g.suspended)
                                assert_true(t - g.idle_since < p.hold_off_us + p.coalesce_us ||
                                            t - since < p.coalesce_us);
                        assert_true(g.stats.suspends >= g.stats.resumes[0] + g.stats.resumes[1] + g.stats.resumes[2]);
                }
                assert_true(g.stats.suspends > 0);
        }
}

/* A GPU's parameters: the most patient online side, the strictest offline bounds, defaults for a class absent. */
static void test_params_mix(void **state)
{
        struct policy_params online_default = params(), offline_default = params(), a = params(), b = params();
        struct policy_params_mix mix;
        struct policy_params r;

        online_default.hold_off_us = 7 * MS;
        offline_default.max_suspend_us = 900 * MS;
        policy_params_mix_init(&mix, &online_default, &offline_default);
        r = policy_params_mix_result(&mix);
        assert_int_equal(r.hold_off_us, 7 * MS);
        assert_int_equal(r.max_suspend_us, 900 * MS);

        a.hold_off_us = 1 * MS;
        a.coalesce_us = 3 * MS;
        b.hold_off_us = 4 * MS;
        b.coalesce_us = 2 * MS;
        policy_params_mix_add(&mix, WORKLOAD_CLASS_ONLINE, &a);
        policy_params_mix_add(&mix, WORKLOAD_CLASS_ONLINE, &b);
        a.max_suspend_us = 300 * MS;
        a.share_window_us = 2000 * MS;
        a.min_offline_share_percent = 5;
        b.max_suspend_us = 600 * MS;
        b.share_window_us = 500 * MS;
        b.min_offline_share_percent = 20;
        policy_params_mix_add(&mix, WORKLOAD_CLASS_OFFLINE, &a);
        policy_params_mix_add(&mix, WORKLOAD_CLASS_OFFLINE, &b);
        r = policy_params_mix_result(&mix);
        /* online workloads there replace the defaults, even a more patient default */
        assert_int_equal(r.hold_off_us, 4 * MS);
        assert_int_equal(r.coalesce_us, 3 * MS);
        assert_int_equal(r.max_suspend_us, 300 * MS);
        assert_int_equal(r.share_window_us, 500 * MS);
        assert_int_equal(r.min_offline_share_percent, 20);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_suspend_at_once_resume_after_hold_off),
                cmocka_unit_test(test_bursts_inside_hold_off_are_one_suspension),
                cmocka_unit_test(test_coalesce_keeps_a_short_suspension),
                cmocka_unit_test(test_idle_reported_late_counts_from_its_start),
                cmocka_unit_test(test_max_suspend_then_offline_slice),
                cmocka_unit_test(test_slice_never_zero),
                cmocka_unit_test(test_share_window_budget),
                cmocka_unit_test(test_failed_suspend_is_forgotten),
                cmocka_unit_test(test_new_params_apply),
                cmocka_unit_test(test_random_traffic_keeps_every_bound),
                cmocka_unit_test(test_params_mix),
                cmocka_unit_test(test_online_busy_time),
                cmocka_unit_test(test_resume_not_before),
                cmocka_unit_test(test_resume_for_fault),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
