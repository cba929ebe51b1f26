/* SPDX-License-Identifier: MIT */
/*
 * The cycle soak's short variant and its failure paths, inside an emulated
 * node (kfdemu-run --gpus 2): argv[1] cycle-soak, argv[2] kfdemu-app,
 * argv[3] queue_finder.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "soak-test-util.h"

#define RUN_TIMEOUT_MS 120000
#define MAX_ARGS 16

static const char *soak_path, *app_path, *queue_finder_path;

/* Runs cycle-soak with args (NULL-terminated) to its end. */
static int run_soak(struct child *c, bool merge_stderr, const char *const args[])
{
        const char *argv[MAX_ARGS] = { soak_path };

        for (size_t i = 0; args[i]; i++) {
                assert_true(i + 2 < MAX_ARGS);
                argv[i + 1] = args[i];
        }
        return soak_test_run(c, merge_stderr, argv, RUN_TIMEOUT_MS);
}

static void test_short_soak_holds(void **state)
{
        const char *args[] = { "--cycles", "2000", "--json", app_path, queue_finder_path, NULL };
        const char *processes[] = { "driver", "kfdemu server", "app" };
        json_object *root, *released, *usage;
        struct child c;

        (void)state;
        assert_int_equal(run_soak(&c, false, args), 0);
        root = json_tokener_parse(c.output);
        assert_non_null(root);
        assert_true(json_object_get_boolean(soak_test_member(root, "ok")));
        assert_int_equal(json_object_get_int(soak_test_member(root, "cycles_done")), 2000);
        assert_int_equal(json_object_get_int(soak_test_member(root, "queues")), 8);
        assert_int_equal(json_object_get_int(soak_test_member(root, "gpus")), 2);
        assert_int_equal(json_object_get_int(soak_test_member(root, "progress_checks")), 10);
        assert_int_equal(json_object_get_int(soak_test_member(root, "library_errors")), 0);
        released = soak_test_member(root, "released");
        assert_int_equal(json_object_get_int(soak_test_member(released, "tracer_pid")), 0);
        assert_int_equal(json_object_get_int(soak_test_member(released, "mapped_queues")), 8);
        assert_int_equal(json_object_get_int(soak_test_member(released, "stalled_queues")), 0);
        usage = soak_test_member(root, "usage");
        for (size_t i = 0; i < 3; i++) {
                json_object *p = soak_test_member(usage, processes[i]);

                assert_int_equal(json_object_get_int(soak_test_member(p, "samples")), 201);
                assert_true(json_object_is_type(soak_test_member(p, "problem"), json_type_null));
        }
        json_object_put(root);
}

static void test_bad_usage_is_explained(void **state)
{
        static const struct {
                const char *args[6];
                const char *says;
        } cases[] = {
                { { "--cycles", "0", "A", "Q" }, "--cycles must be a whole number from 1" },
                { { "--cycles", "12x", "A", "Q" }, "--cycles must be a whole number from 1" },
                { { "--cycles", "-5", "A", "Q" }, "--cycles must be a whole number from 1" },
                { { "--queues", "1", "A", "Q" }, "--queues must be a whole number from 2 to 64" },
                { { "--sample-every", "", "A", "Q" }, "--sample-every must be a whole number" },
                { { "A" }, "expected the paths of kfdemu-app and queue_finder, got 1" },
                { { "/nonexistent/kfdemu-app", "Q" }, "/nonexistent/kfdemu-app is not an executable" },
                { { "--frobnicate" }, "see --help" },
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *args[7] = { 0 };
                struct child c;

                /* "A" and "Q" stand for the real app and queue_finder. */
                for (size_t j = 0; cases[i].args[j]; j++)
                        args[j] = strcmp(cases[i].args[j], "A") == 0   ? app_path
                                  : strcmp(cases[i].args[j], "Q") == 0 ? queue_finder_path
                                                                        : cases[i].args[j];
                assert_int_equal(run_soak(&c, true, args), 2);
                if (!strstr(c.output, cases[i].says))
                        fail_msg("case %zu: expected \"%s\" in: %s", i, cases[i].says, c.output);
        }
}

static void test_help(void **state)
{
        const char *args[] = { "--help", NULL };
        struct child c;

        (void)state;
        assert_int_equal(run_soak(&c, true, args), 0);
        assert_non_null(strstr(c.output, "Usage: kfdemu-run --gpus 2 -- cycle-soak"));
}

static void test_an_app_that_never_gets_ready_fails_cleanly(void **state)
{
        const char *args[] = { "--cycles", "10", "/bin/true", queue_finder_path, NULL };
        struct child c;

        (void)state;
        assert_int_equal(run_soak(&c, true, args), 1);
        assert_non_null(strstr(c.output, "/bin/true did not start and print READY"));
        assert_non_null(strstr(c.output, "cycle soak: FAILED"));
}

/* The first child of pid (kfdemu-app, the only one cycle-soak starts
 * before its cycles). */
static pid_t first_child(pid_t pid)
{
        char path[64];
        FILE *f;
        int child = 0;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
        f = fopen(path, "re");
        assert_non_null(f);
        assert_int_equal(fscanf(f, "%d", &child), 1);
        fclose(f);
        return (pid_t)child;
}

/* Runs a long soak, does `act` once it cycles, and expects a failure that
 * says `says` within the bound. */
static const char *soak_disturbed(bool kill_app, const char *says)
{
        static struct child c;
        char *argv[] = { (char *)soak_path, (char *)"--cycles", (char *)"1000000", (char *)"--progress-every",
                         (char *)"100", (char *)app_path, (char *)queue_finder_path, NULL };
        int status;

        assert_int_equal(child_spawn(argv, true, &c), 0);
        assert_int_equal(child_wait_line(&c, "cycle-soak: 100/", RUN_TIMEOUT_MS, NULL, 0), 0);
        if (kill_app)
                assert_int_equal(kill(first_child(c.pid), SIGKILL), 0);
        else
                assert_int_equal(kill(c.pid, SIGTERM), 0);
        assert_int_equal(child_run_to_end(&c, RUN_TIMEOUT_MS, &status), 0);
        child_kill(&c);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 1);
        if (!strstr(c.output, says) || !strstr(c.output, "cycle soak: FAILED"))
                fail_msg("expected \"%s\" and a failed summary in: %s", says, c.output);
        return c.output;
}

static void test_an_app_killed_mid_soak_fails_it(void **state)
{
        (void)state;
        /* Whichever the soak meets first: the exit event, or a suspend or
         * resume of a target that is gone. */
        const char *out = soak_disturbed(true, "cycle-soak: ");

        assert_true(strstr(out, "first the exit") || strstr(out, "suspend: ") || strstr(out, "resume: "));
}

static void test_sigterm_stops_the_soak_and_cleans_up(void **state)
{
        (void)state;
        soak_disturbed(false, "interrupted after");
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_short_soak_holds),
                cmocka_unit_test(test_bad_usage_is_explained),
                cmocka_unit_test(test_help),
                cmocka_unit_test(test_an_app_that_never_gets_ready_fails_cleanly),
                cmocka_unit_test(test_an_app_killed_mid_soak_fails_it),
                cmocka_unit_test(test_sigterm_stops_the_soak_and_cleans_up),
        };

        if (argc != 4) {
                fprintf(stderr, "usage: kfdemu-run --gpus 2 -- %s CYCLE-SOAK KFDEMU-APP QUEUE-FINDER\n", argv[0]);
                return 2;
        }
        soak_path = argv[1];
        app_path = argv[2];
        queue_finder_path = argv[3];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
