/* SPDX-License-Identifier: MIT */
/* gpreemptctl's command-line value parsers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "parse-pid.h"
#include "parse.h"

static void test_durations(void **state)
{
        uint64_t usec;

        assert_int_equal(parse_duration("10", &usec), 0);
        assert_int_equal(usec, 10000000);
        assert_int_equal(parse_duration("1.5s", &usec), 0);
        assert_int_equal(usec, 1500000);
        assert_int_equal(parse_duration("250ms", &usec), 0);
        assert_int_equal(usec, 250000);
        assert_int_equal(parse_duration("2m", &usec), 0);
        assert_int_equal(usec, 120000000);
        assert_int_equal(parse_duration("1h", &usec), 0);
        assert_int_equal(usec, 3600000000ull);
        assert_int_equal(parse_duration("infinity", &usec), 0);
        assert_true(usec == UINT64_MAX);
        assert_int_equal(parse_duration("", &usec), -EINVAL);
        assert_int_equal(parse_duration("-1s", &usec), -EINVAL);
        assert_int_equal(parse_duration("5 s", &usec), -EINVAL);
        assert_int_equal(parse_duration("5days", &usec), -EINVAL);
        assert_int_equal(parse_duration("100000h", &usec), -ERANGE);
        assert_int_equal(parse_duration("1e999", &usec), -ERANGE);
}

static void test_pids(void **state)
{
        pid_t pid;

        assert_int_equal(parse_pid("1", &pid), 0);
        assert_int_equal(pid, 1);
        assert_int_equal(parse_pid("0", &pid), -ERANGE);
        assert_int_equal(parse_pid("-5", &pid), -EINVAL);
        assert_int_equal(parse_pid(" 5", &pid), -EINVAL);
        assert_int_equal(parse_pid("5x", &pid), -EINVAL);
        assert_int_equal(parse_pid("99999999999", &pid), -ERANGE);
        /* one bound everywhere: the kernel's PID_MAX_LIMIT */
        assert_int_equal(parse_pid("4194304", &pid), 0);
        assert_int_equal(parse_pid("4194305", &pid), -ERANGE);
}

static void test_u32(void **state)
{
        uint32_t v;

        assert_int_equal(parse_u32("4294967295", &v), 0);
        assert_true(v == UINT32_MAX);
        assert_int_equal(parse_u32("4294967296", &v), -ERANGE);
        assert_int_equal(parse_u32("", &v), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_durations),
                cmocka_unit_test(test_pids),
                cmocka_unit_test(test_u32),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
