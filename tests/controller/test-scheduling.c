/* SPDX-License-Identifier: MIT */
/* RealtimeCpuPercent='s accounting, with made-up clocks: what each window of the loop's CPU asks for. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "loop-scheduling.h"

#define WINDOW LOOP_CPU_CAP_WINDOW_US
#define START_US 5000000u      /* an arbitrary monotonic time */
#define START_CPU_NS 70000000u /* and the CPU the thread had used by then */

/* CPU time that is percent of a core over wall_us. */
static uint64_t share_ns(unsigned percent, uint64_t wall_us)
{
        return wall_us * 1000 * percent / 100;
}

static void test_over_the_cap_demotes(void **state)
{
        struct loop_cpu_cap c;

        loop_cpu_cap_reset(&c, 50, START_US, START_CPU_NS);
        assert_int_equal(loop_cpu_cap_account(&c, false, START_US + WINDOW, START_CPU_NS + share_ns(51, WINDOW)),
                         LOOP_CPU_CAP_DEMOTE);
        assert_int_equal(c.last_share_permille, 510);
}

static void test_at_the_cap_keeps(void **state)
{
        struct loop_cpu_cap c;

        loop_cpu_cap_reset(&c, 50, START_US, START_CPU_NS);
        assert_int_equal(loop_cpu_cap_account(&c, false, START_US + WINDOW, START_CPU_NS + share_ns(50, WINDOW)),
                         LOOP_CPU_CAP_KEEP);
}

/* Demoted, a window within the cap puts it back; one over the cap keeps it down. */
static void test_demoted_promotes_when_within_the_cap(void **state)
{
        struct loop_cpu_cap c;
        uint64_t now = START_US, cpu = START_CPU_NS;

        loop_cpu_cap_reset(&c, 50, now, cpu);
        now += WINDOW, cpu += share_ns(90, WINDOW);
        assert_int_equal(loop_cpu_cap_account(&c, true, now, cpu), LOOP_CPU_CAP_KEEP);
        now += WINDOW, cpu += share_ns(50, WINDOW);
        assert_int_equal(loop_cpu_cap_account(&c, true, now, cpu), LOOP_CPU_CAP_PROMOTE);
        /* the next window starts where this one ended: only its own CPU counts */
        now += WINDOW, cpu += share_ns(20, WINDOW);
        assert_int_equal(loop_cpu_cap_account(&c, false, now, cpu), LOOP_CPU_CAP_KEEP);
        assert_int_equal(c.last_share_permille, 200);
}

/* Before a window has passed nothing is decided, and the window goes on. */
static void test_mid_window_changes_nothing(void **state)
{
        struct loop_cpu_cap c;

        loop_cpu_cap_reset(&c, 10, START_US, START_CPU_NS);
        assert_false(loop_cpu_cap_window_elapsed(&c, START_US + WINDOW - 1));
        assert_int_equal(loop_cpu_cap_account(&c, false, START_US + WINDOW - 1, START_CPU_NS + share_ns(100, WINDOW)),
                         LOOP_CPU_CAP_KEEP);
        assert_int_equal(c.window_start_us, START_US);
        assert_int_equal(c.window_start_cpu_ns, START_CPU_NS);
        assert_true(loop_cpu_cap_window_elapsed(&c, START_US + WINDOW));
        assert_int_equal(loop_cpu_cap_account(&c, false, START_US + WINDOW, START_CPU_NS + share_ns(100, WINDOW)),
                         LOOP_CPU_CAP_DEMOTE);
}

/* 100 is no cap, even with clocks that make the share look above a core. */
static void test_cap_100_never_demotes(void **state)
{
        struct loop_cpu_cap c;

        loop_cpu_cap_reset(&c, 100, START_US, START_CPU_NS);
        assert_int_equal(loop_cpu_cap_account(&c, false, START_US + WINDOW, START_CPU_NS + share_ns(100, WINDOW)),
                         LOOP_CPU_CAP_KEEP);
        assert_int_equal(loop_cpu_cap_account(&c, false, START_US + 2 * WINDOW,
                                              START_CPU_NS + share_ns(100, WINDOW) + share_ns(101, WINDOW)),
                         LOOP_CPU_CAP_KEEP);
        /* a loop held back before a reload to 100 goes back, however busy */
        loop_cpu_cap_reset(&c, 100, START_US, START_CPU_NS);
        assert_int_equal(loop_cpu_cap_account(&c, true, START_US + WINDOW, START_CPU_NS + share_ns(100, WINDOW)),
                         LOOP_CPU_CAP_PROMOTE);
}

/* A window that spans a long sleep shows a low share: a busy moment at its end does not demote. */
static void test_window_after_a_long_idle(void **state)
{
        struct loop_cpu_cap c;
        uint64_t idle_us = 60 * 1000000u;

        loop_cpu_cap_reset(&c, 1, START_US, START_CPU_NS);
        /* asleep for a minute, then 80 ms busy: 0.13% of the minute */
        assert_int_equal(loop_cpu_cap_account(&c, false, START_US + idle_us, START_CPU_NS + 80000000u),
                         LOOP_CPU_CAP_KEEP);
        assert_int_equal(c.last_share_permille, 1);
        /* and a demoted loop that slept is put back */
        loop_cpu_cap_reset(&c, 1, START_US, START_CPU_NS);
        assert_int_equal(loop_cpu_cap_account(&c, true, START_US + idle_us, START_CPU_NS + 80000000u),
                         LOOP_CPU_CAP_PROMOTE);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_over_the_cap_demotes),
                cmocka_unit_test(test_at_the_cap_keeps),
                cmocka_unit_test(test_demoted_promotes_when_within_the_cap),
                cmocka_unit_test(test_mid_window_changes_nothing),
                cmocka_unit_test(test_cap_100_never_demotes),
                cmocka_unit_test(test_window_after_a_long_idle),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
