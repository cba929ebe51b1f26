/* SPDX-License-Identifier: MIT */
/* The soak's growth rule (usage-trend.h) on made-up samples, and sampling
 * this very process. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "usage-trend.h"

#define WARMUP_AT 100

struct fixture {
        struct usage_series series;
};

static int setup(void **state)
{
        static struct fixture f;

        memset(&f, 0, sizeof(f));
        assert_int_equal(usage_series_init(&f.series, "proc", 4242, 64), 0);
        *state = &f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        usage_series_done(&f->series);
        return 0;
}

/* The verdict on samples at 0, 50, 100, ... with the given fds and RSS. */
static struct usage_verdict judge(struct usage_series *s, const unsigned *fds, const uint64_t *rss, size_t n,
                                  uint64_t kept_bytes)
{
        struct usage_verdict v;

        for (size_t i = 0; i < n; i++)
                s->samples[i] = (struct usage_sample){ .at = i * 50, .fds = fds[i], .rss_kib = rss[i] };
        s->n_samples = n;
        usage_series_verdict(s, WARMUP_AT, kept_bytes, &v);
        return v;
}

static void test_flat_usage_holds(void **state)
{
        struct fixture *f = *state;
        const unsigned fds[] = { 12, 9, 9, 9, 9, 9, 9 };
        const uint64_t rss[] = { 1000, 3000, 3000, 3100, 3000, 3050, 3000 };
        struct usage_verdict v = judge(&f->series, fds, rss, 7, 0);

        assert_string_equal(v.problem, "");
        /* Warm-up growth is not judged; the baseline is the sample at 100. */
        assert_int_equal(v.fds_baseline, 9);
        assert_int_equal(v.rss_baseline, 3000);
        assert_int_equal(v.fds_first, 12);
        assert_int_equal(v.fds_max, 12);
        assert_int_equal(v.rss_last, 3000);
        assert_int_equal(v.rss_max, 3100);
}

static void test_an_fd_open_for_an_instant_is_not_a_leak(void **state)
{
        struct fixture *f = *state;
        const unsigned fds[] = { 9, 9, 9, 10, 9, 10, 9, 10 };
        const uint64_t rss[] = { 3000, 3000, 3000, 3000, 3000, 3000, 3000, 3000 };
        struct usage_verdict v = judge(&f->series, fds, rss, 8, 0);

        assert_string_equal(v.problem, "");
        assert_int_equal(v.fds_max, 10);
}

static void test_a_leaked_fd_fails(void **state)
{
        struct fixture *f = *state;
        const unsigned fds[] = { 9, 9, 9, 9, 10, 10, 10 };
        const uint64_t rss[] = { 3000, 3000, 3000, 3000, 3000, 3000, 3000 };
        struct usage_verdict v = judge(&f->series, fds, rss, 7, 0);

        assert_string_equal(v.problem,
                            "proc (pid 4242) holds 1 more file descriptors than after warm-up (9 -> 10)");
}

static void test_rss_growth_beyond_the_tolerance_fails(void **state)
{
        struct fixture *f = *state;
        const unsigned fds[] = { 9, 9, 9, 9, 9, 9, 9 };
        const uint64_t rss[] = { 3000, 3000, 3000, 3500, 3900, 4025, 4025 };
        struct usage_verdict v = judge(&f->series, fds, rss, 7, 0);

        if (!USAGE_JUDGE_RSS) {
                assert_string_equal(v.problem, "");
                return;
        }
        assert_string_equal(v.problem, "proc (pid 4242) grew by 1025 KiB after warm-up (3000 -> 4025 KiB; "
                                       "1024 KiB allowed)");
        /* What the process keeps on purpose is allowed on top. */
        v = judge(&f->series, fds, rss, 7, 1024);
        assert_string_equal(v.problem, "");
        assert_int_equal(v.rss_allowed_growth, 1025);
}

static void test_too_few_samples_after_warm_up_fail(void **state)
{
        struct fixture *f = *state;
        const unsigned fds[] = { 9, 9, 9, 9, 9 };
        const uint64_t rss[] = { 3000, 3000, 3000, 3000, 3000 };
        struct usage_verdict v = judge(&f->series, fds, rss, 5, 0);

        assert_string_equal(v.problem, "proc (pid 4242): only 3 samples after warm-up: run longer or sample "
                                       "more often");
        f->series.n_samples = 0;
        usage_series_verdict(&f->series, WARMUP_AT, 0, &v);
        assert_string_equal(v.problem, "proc (pid 4242) was never sampled");
}

static void test_sampling_reads_proc_and_stops_when_full(void **state)
{
        struct usage_series s;

        (void)state;
        assert_int_equal(usage_series_init(&s, "self", getpid(), 2), 0);
        assert_int_equal(usage_series_sample(&s, 0), 0);
        assert_int_equal(usage_series_sample(&s, 1), 0);
        assert_int_equal(usage_series_sample(&s, 2), -ENOSPC);
        /* stdin, stdout, stderr and the directory being read, at least. */
        assert_true(s.samples[0].fds >= 4);
        assert_true(s.samples[0].rss_kib > 0);
        usage_series_done(&s);

        /* A process that does not exist. */
        assert_int_equal(usage_series_init(&s, "nobody", 0x3fffffff, 1), 0);
        assert_int_equal(usage_series_sample(&s, 0), -ENOENT);
        assert_int_equal(s.n_samples, 0);
        usage_series_done(&s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_flat_usage_holds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_an_fd_open_for_an_instant_is_not_a_leak, setup, teardown),
                cmocka_unit_test_setup_teardown(test_a_leaked_fd_fails, setup, teardown),
                cmocka_unit_test_setup_teardown(test_rss_growth_beyond_the_tolerance_fails, setup, teardown),
                cmocka_unit_test_setup_teardown(test_too_few_samples_after_warm_up_fail, setup, teardown),
                cmocka_unit_test(test_sampling_reads_proc_and_stops_when_full),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
