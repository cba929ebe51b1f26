/* SPDX-License-Identifier: MIT */
/*
 * gpreemptd's log lines: text from outside (a process's name) is quoted
 * inert, and an escape in a line is always one: a literal backslash is
 * escaped too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "log.h"

/* What log_error("%s", text) writes to stderr. */
static void expect_line(const char *text, const char *want)
{
        char line[256] = { 0 };
        FILE *f = tmpfile();
        int saved = dup(STDERR_FILENO);

        assert_non_null(f);
        assert_true(saved >= 0);
        fflush(stderr);
        assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
        log_error("comm %s", text);
        fflush(stderr);
        assert_true(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
        rewind(f);
        assert_true(fread(line, 1, sizeof(line) - 1, f) > 0);
        fclose(f);
        assert_string_equal(line, want);
}

static void test_text_from_outside_is_inert(void **state)
{
        expect_line("train", "<3>comm train\n");
        expect_line("a\nb\033[2J", "<3>comm a\\x0ab\\x1b[2J\n");
        /* a name holding a literal \x0a does not read as one holding a newline */
        expect_line("a\\x0a", "<3>comm a\\x5cx0a\n");
        expect_line("\\\xff\\", "<3>comm \\x5c\\xff\\x5c\n");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_text_from_outside_is_inert),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
