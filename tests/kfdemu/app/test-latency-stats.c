/* SPDX-License-Identifier: MIT */
/* Percentiles (nearest rank), merging of per-queue stores, the sample cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "latency-stats.h"

static void test_percentile_nearest_rank(void **state)
{
        uint64_t v[100];

        for (unsigned i = 0; i < 100; i++)
                v[i] = i + 1;
        assert_int_equal(latency_percentile(v, 100, 50), 50);
        assert_int_equal(latency_percentile(v, 100, 95), 95);
        assert_int_equal(latency_percentile(v, 100, 99), 99);
        assert_int_equal(latency_percentile(v, 100, 100), 100);
        /* 10 samples: p99 is the largest, p50 the 5th. */
        assert_int_equal(latency_percentile(v, 10, 99), 10);
        assert_int_equal(latency_percentile(v, 10, 50), 5);
        assert_int_equal(latency_percentile(v, 1, 50), 1);
        assert_int_equal(latency_percentile(v, 0, 50), 0);
}

static void test_summary_merges_stores(void **state)
{
        struct latency_stats a = {0}, b = {0};
        const struct latency_stats *both[] = {&a, &b};
        struct latency_summary s;

        /* 1..100 ms split unevenly and out of order over two queues. */
        for (unsigned i = 100; i > 30; i--)
                assert_int_equal(latency_stats_add(&a, i * 1000000ull), 0);
        for (unsigned i = 1; i <= 30; i++)
                assert_int_equal(latency_stats_add(&b, i * 1000000ull), 0);
        assert_int_equal(latency_summarize(both, 2, &s), 0);
        assert_int_equal(s.count, 100);
        assert_int_equal(s.dropped, 0);
        assert_float_equal(s.p50_ms, 50.0, 1e-9);
        assert_float_equal(s.p95_ms, 95.0, 1e-9);
        assert_float_equal(s.p99_ms, 99.0, 1e-9);
        assert_float_equal(s.max_ms, 100.0, 1e-9);
        assert_float_equal(s.mean_ms, 50.5, 1e-9);
        latency_stats_clear(&a);
        latency_stats_clear(&b);
}

static void test_empty_summary(void **state)
{
        struct latency_stats a = {0};
        const struct latency_stats *one[] = {&a};
        struct latency_summary s;

        assert_int_equal(latency_summarize(one, 1, &s), 0);
        assert_int_equal(s.count, 0);
        assert_float_equal(s.p99_ms, 0.0, 0);
        assert_float_equal(s.max_ms, 0.0, 0);
}

static void test_cap_counts_dropped(void **state)
{
        struct latency_stats a = {0};
        const struct latency_stats *one[] = {&a};
        struct latency_summary s;

        for (size_t i = 0; i < LATENCY_STATS_MAX_SAMPLES + 3; i++)
                assert_int_equal(latency_stats_add(&a, 7), 0);
        assert_int_equal(latency_summarize(one, 1, &s), 0);
        assert_int_equal(s.count, LATENCY_STATS_MAX_SAMPLES);
        assert_int_equal(s.dropped, 3);
        latency_stats_clear(&a);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_percentile_nearest_rank),
                cmocka_unit_test(test_summary_merges_stores),
                cmocka_unit_test(test_empty_summary),
                cmocka_unit_test(test_cap_counts_dropped),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
