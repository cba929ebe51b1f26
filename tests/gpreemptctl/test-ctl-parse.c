/* SPDX-License-Identifier: MIT */
/* gpreemptctl's command-line value parsers, and how it prints text from outside. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json.h>

#include "parse-pid.h"
#include "parse.h"
#include "printable.h"
#include "utf8.h"

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

/* A verb's list of process ids: the first argument at fault is named, and one given twice is refused. */
static void test_pid_lists(void **state)
{
        char *good[] = { "5", "6", "7" }, *twice[] = { "5", "6", "05" }, *bad[] = { "5", "x", "5" };
        pid_t pids[3];
        size_t at;

        assert_int_equal(parse_pids(good, 3, pids, &at), 0);
        assert_int_equal(pids[0], 5);
        assert_int_equal(pids[2], 7);
        assert_int_equal(parse_pids(twice, 3, pids, &at), -EEXIST);
        assert_int_equal(at, 2);
        assert_int_equal(pids[at], 5);
        assert_int_equal(parse_pids(bad, 3, pids, &at), -EINVAL);
        assert_int_equal(at, 1);
}

static void test_u32(void **state)
{
        uint32_t v;

        assert_int_equal(parse_u32("4294967295", &v), 0);
        assert_true(v == UINT32_MAX);
        assert_int_equal(parse_u32("4294967296", &v), -ERANGE);
        assert_int_equal(parse_u32("", &v), -EINVAL);
}

static void assert_printable_as(const char *s, const char *want)
{
        char *got = printable_dup(s);

        assert_non_null(got);
        assert_string_equal(got, want);
        assert_true(printable_is(got));
        assert_int_equal(printable_is(s), strcmp(s, want) == 0);
        free(got);
}

static void assert_printable_len_as(const char *s, size_t len, const char *want)
{
        char got[PRINTABLE_SIZE(16)];

        assert_true(len <= 16);
        assert_int_equal(printable_escape(got, s, len), strlen(want));
        assert_string_equal(got, want);
}

/*
 * What another user chooses (a process's command line, a tracer's name)
 * reaches the terminal inert, and JSON as UTF-8: control characters and
 * bytes that are not UTF-8 become \xNN; other text is kept as it is.
 */
static void test_printable(void **state)
{
        struct json_object *o;

        assert_printable_as("train.py --epochs 3", "train.py --epochs 3");
        assert_printable_as("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
        assert_printable_as("\033[2J\033]0;title\007", "\\x1b[2J\\x1b]0;title\\x07");
        assert_printable_as("a\nb\tc\x7f", "a\\x0ab\\x09c\\x7f");
        /* C1 controls (U+009B is a CSI to some terminals), whole */
        assert_printable_as("\xc2\x9b" "2J", "\\xc2\\x9b2J");
        /* not UTF-8: a stray byte, a cut sequence, an overlong '/', a surrogate, beyond U+10FFFF */
        assert_printable_as("\xff", "\\xff");
        assert_printable_as("\xe2\x82", "\\xe2\\x82");
        assert_printable_as("\xc0\xaf", "\\xc0\\xaf");
        assert_printable_as("\xed\xa0\x80", "\\xed\\xa0\\x80");
        assert_printable_as("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
        assert_true(utf8_is_valid("tab\there", 8));
        assert_false(utf8_is_valid("\xff", 1));
        /* by length: a NUL is U+0000, and a sequence cut by the length is not UTF-8 */
        assert_true(utf8_is_valid("a\0b", 3));
        assert_false(utf8_is_valid("\xe2\x82\xac", 2));
        assert_printable_len_as("a\0\xe2\x82\xac", 5, "a\\x00\xe2\x82\xac");

        /* JSON output: only what is not UTF-8 changes (JSON escapes control characters) */
        o = json_object_new_object();
        json_object_object_add(o, "a", json_object_new_string("ok\033"));
        json_object_object_add(o, "b", json_object_new_array());
        json_object_array_add(json_object_object_get(o, "b"), json_object_new_string("x\xff"));
        printable_json(o, false);
        assert_string_equal(json_object_get_string(json_object_object_get(o, "a")), "ok\033");
        assert_string_equal(json_object_get_string(json_object_array_get_idx(json_object_object_get(o, "b"), 0)),
                            "x\\xff");
        /* for text, the control character too */
        printable_json(o, true);
        assert_string_equal(json_object_get_string(json_object_object_get(o, "a")), "ok\\x1b");
        json_object_put(o);
        /* what follows a NUL in a string (JSON's \u0000) is written out too, so it is looked at too */
        o = json_object_new_string_len("a\0\xff", 3);
        printable_json(o, false);
        assert_string_equal(json_object_get_string(o), "a\\x00\\xff");
        json_object_put(o);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_durations),
                cmocka_unit_test(test_pids),
                cmocka_unit_test(test_pid_lists),
                cmocka_unit_test(test_u32),
                cmocka_unit_test(test_printable),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
