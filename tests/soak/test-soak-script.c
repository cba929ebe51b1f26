/* SPDX-License-Identifier: MIT */
/*
 * scripts/soak, the front end, outside any emulated node (it starts its
 * own): a 20-second daemon soak, a short cycle soak through it, and its
 * answers to bad input. argv: scripts/soak, the build directory, cycle-soak,
 * kfdemu-app, queue_finder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "soak-test-util.h"

/* 20 s of soak, plus the node's start and the checks after it. */
#define RUN_TIMEOUT_MS 150000
#define MAX_ARGS 16

static const char *script_path, *build_dir, *soak_path, *app_path, *queue_finder_path;

static int run(struct child *c, bool merge_stderr, const char *const argv[])
{
        return soak_test_run(c, merge_stderr, argv, RUN_TIMEOUT_MS);
}

static void test_daemon_soak_short(void **state)
{
        char out_dir[] = "/tmp/gpreempt-soak-test-XXXXXX";
        const char *processes[] = { "gpreemptd", "kfdemu server", "offline app", "online app" };
        json_object *root, *daemon, *status, *released, *usage;
        struct child c;

        (void)state;
        assert_non_null(mkdtemp(out_dir));
        const char *argv[] = { script_path, "--daemon", "--duration", "20s", "--json", "--build", build_dir,
                               "--out", out_dir, NULL };
        assert_int_equal(run(&c, false, argv), 0);
        root = json_tokener_parse(c.output);
        assert_non_null(root);
        assert_true(json_object_get_boolean(soak_test_member(root, "ok")));
        daemon = soak_test_member(root, "daemon");
        assert_int_equal(json_object_array_length(soak_test_member(daemon, "problems")), 0);
        status = soak_test_member(daemon, "status");
        /* A suspend and a resume per request at 20 requests/s. */
        assert_true(json_object_get_int(soak_test_member(status, "transitions")) > 100);
        assert_int_equal(json_object_get_int(soak_test_member(status, "suspends")),
                         json_object_get_int(soak_test_member(status, "logged_suspends")));
        released = soak_test_member(daemon, "after_daemon");
        assert_int_equal(json_object_get_int(soak_test_member(released, "tracer_pid")), 0);
        assert_int_equal(json_object_array_length(soak_test_member(released, "stalled_queues")), 0);
        assert_true(json_object_is_type(soak_test_member(released, "hqd_problem"), json_type_null));
        usage = soak_test_member(daemon, "usage");
        for (size_t i = 0; i < 4; i++)
                assert_true(json_object_is_type(soak_test_member(soak_test_member(usage, processes[i]), "problem"), json_type_null));
        /* The daemon's full log is kept where --out said. */
        assert_int_equal(strncmp(json_object_get_string(soak_test_member(daemon, "daemon_log_file")), out_dir,
                                 strlen(out_dir)),
                         0);
        assert_int_equal(unlink(json_object_get_string(soak_test_member(daemon, "daemon_log_file"))), 0);
        assert_int_equal(rmdir(out_dir), 0);
        json_object_put(root);
}

static void test_cycle_soak_through_the_script(void **state)
{
        const char *argv[] = { script_path, "--cycles", "200", "--build", build_dir, NULL };
        struct child c;

        (void)state;
        assert_int_equal(run(&c, false, argv), 0);
        assert_non_null(strstr(c.output, "cycle soak: PASSED"));
        assert_non_null(strstr(c.output, "200 of 200 cycles"));
        assert_non_null(strstr(c.output, "soak: everything held"));
}

static void test_bad_input_is_explained(void **state)
{
        static const struct {
                const char *args[6];
                const char *says;
        } cases[] = {
                { { "--daemon", "--duration", "soon" }, "'soon' is not a duration" },
                { { "--daemon", "--duration", "0s" }, "'0s' is not a duration" },
                { { "--duration", "5s" }, "--duration is the length of the daemon soak: add --daemon" },
                { { "--cycles", "0" }, "'0' is not a number of cycles" },
                { { "--cycles", "many" }, "'many' is not a number of cycles" },
                { { "--cycles", "10", "--build", "/nonexistent" }, "build the tree first" },
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *argv[8] = { script_path };
                struct child c;

                for (size_t j = 0; cases[i].args[j]; j++)
                        argv[j + 1] = cases[i].args[j];
                assert_int_equal(run(&c, true, argv), 2);
                if (!strstr(c.output, cases[i].says))
                        fail_msg("case %zu: expected \"%s\" in: %s", i, cases[i].says, c.output);
        }
}

static void test_cycle_soak_outside_a_node_says_how_to_run_it(void **state)
{
        const char *argv[] = { soak_path, "--cycles", "10", app_path, queue_finder_path, NULL };
        struct child c;

        (void)state;
        assert_int_equal(run(&c, true, argv), 1);
        assert_non_null(strstr(c.output, "run cycle-soak inside an emulated node (kfdemu-run --gpus 2"));
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bad_input_is_explained),
                cmocka_unit_test(test_cycle_soak_outside_a_node_says_how_to_run_it),
                cmocka_unit_test(test_cycle_soak_through_the_script),
                cmocka_unit_test(test_daemon_soak_short),
        };

        if (argc != 6) {
                fprintf(stderr, "usage: %s SCRIPTS/SOAK BUILD-DIR CYCLE-SOAK KFDEMU-APP QUEUE-FINDER\n", argv[0]);
                return 2;
        }
        script_path = argv[1];
        build_dir = argv[2];
        soak_path = argv[3];
        app_path = argv[4];
        queue_finder_path = argv[5];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
