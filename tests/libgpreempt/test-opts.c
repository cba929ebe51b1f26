/* SPDX-License-Identifier: MIT */
/*
 * The options structs grow: a caller built against a newer header passes a
 * larger .sz. Unknown trailing bytes are accepted only while zero, so that a
 * field this library does not know is never ignored silently.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <gpreempt/gpreempt.h>

struct newer_context_opts {
        struct gp_context_opts known;
        uint64_t field_from_the_future;
};

/* No KFD device there: a call that gets past the options fails on opening it. */
#define MISSING_KFD "/nonexistent/kfd"

static int context_new_with(struct newer_context_opts *opts)
{
        struct gp_context *context = NULL;
        int r;

        opts->known.kfd_path = MISSING_KFD;
        r = gp_context_new(&opts->known, &context);
        gp_context_free(context);
        return r;
}

static void test_zero_tail_is_accepted(void **state)
{
        struct newer_context_opts opts = { .known = { .sz = sizeof(opts) } };

        assert_int_equal(context_new_with(&opts), -ENOENT);
}

static void test_set_tail_is_refused(void **state)
{
        struct newer_context_opts opts = { .known = { .sz = sizeof(opts) }, .field_from_the_future = 1 };

        assert_int_equal(context_new_with(&opts), -EINVAL);
}

static void test_smaller_than_its_size_field_is_refused(void **state)
{
        struct newer_context_opts opts = { .known = { .sz = 1 } };

        assert_int_equal(context_new_with(&opts), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_zero_tail_is_accepted),
                cmocka_unit_test(test_set_tail_is_refused),
                cmocka_unit_test(test_smaller_than_its_size_field_is_refused),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
