/* SPDX-License-Identifier: MIT */
#include "soak-test-util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/wait.h>

#include <cmocka.h>

int soak_test_run(struct child *c, bool merge_stderr, const char *const argv[], int timeout_ms)
{
        int status;

        assert_int_equal(child_spawn((char *const *)argv, merge_stderr, c), 0);
        assert_int_equal(child_run_to_end(c, timeout_ms, &status), 0);
        child_kill(c);
        assert_true(WIFEXITED(status));
        return WEXITSTATUS(status);
}

json_object *soak_test_member(json_object *o, const char *key)
{
        json_object *v = NULL;

        assert_true(json_object_object_get_ex(o, key, &v));
        return v;
}
