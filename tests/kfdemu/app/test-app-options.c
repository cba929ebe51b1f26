/* SPDX-License-Identifier: MIT */
/* kfdemu-app's command line: defaults, limits, conflicts, --exec-after's
 * place in argv (a re-exec drops it), AMD_LOG_* from the environment. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "app-options.h"

#define PARSE(opts, ...)                                                                 \
        ({                                                                               \
                char *argv_[] = {"kfdemu-app", __VA_ARGS__, NULL};                       \
                app_options_parse(opts, (int)(sizeof(argv_) / sizeof(argv_[0])) - 1, argv_, \
                                  error, sizeof(error));                                 \
        })

static char error[512];

static void test_defaults(void **state)
{
        struct app_options o;
        char *argv[] = {"kfdemu-app", NULL};

        app_options_init(&o);
        assert_int_equal(app_options_parse(&o, 1, argv, error, sizeof(error)), 0);
        assert_int_equal(o.queues, 1);
        assert_int_equal(o.arrival, APP_ARRIVAL_CLOSED_LOOP);
        assert_int_equal(o.priority, 7);
        assert_int_equal(o.ring_packets, EMU_QUEUE_DEFAULT_PACKETS);
        assert_true(o.runtime_enable);
        assert_int_equal(o.report, APP_REPORT_TEXT);
        assert_int_equal(o.amd_log_level, 0);
        assert_int_equal(o.amd_log_format, CLR_LOG_FORMAT_6_2);
        assert_true(o.exec_after_s < 0);
}

static void test_open_loop_and_work(void **state)
{
        struct app_options o;

        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--queues", "4", "-g", "0", "--gpu", "0xf7bc", "--kernel-us", "2.5",
                               "--workgroups", "128", "-k", "3", "--rate", "20", "--arrival", "poisson",
                               "--duration", "1.5", "--requests", "100", "-p", "2", "--no-runtime-enable",
                               "--json", "--ring-packets", "64", "--dispatch-times", "/tmp/t",
                               "--latency-log", "/tmp/l", "--doorbell-per-request", "--host-wait-us", "2000.5",
                               "--queue-during-wait"),
                         0);
        assert_int_equal(o.queues, 4);
        assert_int_equal(o.n_gpus, 2);
        assert_int_equal(o.gpus[1].value, 0xf7bc);
        assert_int_equal(o.kernel_ns, 2500);
        assert_int_equal(o.workgroups, 128);
        assert_int_equal(o.kernels_per_request, 3);
        assert_int_equal(o.arrival, APP_ARRIVAL_POISSON);
        assert_float_equal(o.rate, 20.0, 0);
        assert_float_equal(o.duration_s, 1.5, 0);
        assert_int_equal(o.requests, 100);
        assert_int_equal(o.priority, 2);
        assert_false(o.runtime_enable);
        assert_int_equal(o.report, APP_REPORT_JSON);
        assert_int_equal(o.ring_packets, 64);
        assert_string_equal(o.dispatch_times, "/tmp/t");
        assert_string_equal(o.latency_log, "/tmp/l");
        assert_true(o.doorbell_per_request);
        assert_int_equal(o.host_wait_ns, 2000500);
        assert_true(o.queue_during_wait);
}

static void test_rejects_with_sentences(void **state)
{
        struct app_options o;

        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--rate", "10", "--continuous"), -EINVAL);
        assert_non_null(strstr(error, "exclude each other"));
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--arrival", "poisson"), -EINVAL);
        assert_non_null(strstr(error, "needs --rate"));
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--queues", "1025"), -EINVAL);
        assert_non_null(strstr(error, "1 to 1024"));
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--priority", "16"), -EINVAL);
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--ring-packets", "100"), -EINVAL);
        assert_non_null(strstr(error, "power of two"));
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--kernel-us", "-1"), -EINVAL);
        assert_int_equal(PARSE(&o, "--host-wait-us", "-1"), -EINVAL);
        assert_int_equal(PARSE(&o, "--host-wait-us", "60000001"), -EINVAL);
        assert_int_equal(PARSE(&o, "--host-wait-us", "soon"), -EINVAL);
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--queue-during-wait"), -EINVAL);
        assert_non_null(strstr(error, "needs --host-wait-us"));
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--queues", "3x"), -EINVAL);
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--amd-log-format", "7.0"), -EINVAL);
        assert_non_null(strstr(error, "6.2"));
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--destroy-queue-after", "1"), -EINVAL);
        assert_non_null(strstr(error, "two queues"));
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--bogus"), -EINVAL);
        assert_non_null(strstr(error, "--bogus"));
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "stray"), -EINVAL);
        assert_non_null(strstr(error, "stray"));
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--threads", "65"), -EINVAL);
        assert_non_null(strstr(error, "0 to 64"));
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--threads", "3"), 0);
        assert_int_equal(o.idle_threads, 3);
        app_options_init(&o);
        assert_true(o.churn_rate == 0);
        assert_int_equal(PARSE(&o, "--churn", "0"), -EINVAL);
        assert_non_null(strstr(error, "cycles per second"));
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--churn", "fast"), -EINVAL);
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--churn", "50"), 0);
        assert_true(o.churn_rate == 50);
        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--help"), APP_OPTIONS_HELP);
}

static void test_exec_after_position(void **state)
{
        struct app_options o;

        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--queues", "2", "--exec-after", "0.5", "--json"), 0);
        assert_float_equal(o.exec_after_s, 0.5, 0);
        assert_int_equal(o.exec_after_argi, 3);
        assert_int_equal(o.exec_after_argc, 2);

        app_options_init(&o);
        assert_int_equal(PARSE(&o, "--exec-after=2", "--json"), 0);
        assert_float_equal(o.exec_after_s, 2, 0);
        assert_int_equal(o.exec_after_argi, 1);
        assert_int_equal(o.exec_after_argc, 1);
}

static void test_environment(void **state)
{
        struct app_options o;

        app_options_init(&o);
        assert_int_equal(app_options_apply_env(&o, "4", "/tmp/hip.log", error, sizeof(error)), 0);
        assert_int_equal(o.amd_log_level, 4);
        assert_string_equal(o.amd_log_file, "/tmp/hip.log");
        /* The command line wins over the environment. */
        assert_int_equal(PARSE(&o, "--amd-log-level", "3"), 0);
        assert_int_equal(o.amd_log_level, 3);

        app_options_init(&o);
        assert_int_equal(app_options_apply_env(&o, "loud", NULL, error, sizeof(error)), -EINVAL);
        assert_non_null(strstr(error, "AMD_LOG_LEVEL"));
        app_options_init(&o);
        assert_int_equal(app_options_apply_env(&o, "", "", error, sizeof(error)), 0);
        assert_int_equal(o.amd_log_level, 0);
        assert_null(o.amd_log_file);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_open_loop_and_work),
                cmocka_unit_test(test_rejects_with_sentences),
                cmocka_unit_test(test_exec_after_position),
                cmocka_unit_test(test_environment),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
