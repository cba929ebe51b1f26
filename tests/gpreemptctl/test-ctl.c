/* SPDX-License-Identifier: MIT */
/*
 * gpreemptctl's daemon verbs against the real gpreemptd on an emulated node
 * (run under kfdemu-run --gpus 1): what each verb prints and exits with,
 * its errors, and callers the daemon must refuse.
 *
 *   test-ctl PATH-TO-GPREEMPTCTL PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP
 */
#include <json.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "ctl-runner.h"
#include "daemon-harness.h"
#include "emulated-app.h"

static const char *ctl_path, *gpreemptd_path, *app_path;

static const char workloads[] = "[Workload]\nName=serve\nClass=online\nMatchCommandLine=*--rate*\n"
                                "[Workload]\nName=train\nClass=offline\nMatchCommandLine=*--continuous*\n";

struct fixture {
        struct daemon_harness h;
        struct emulated_app offline;
        char runtime_env[192], config_env[128];
        const char *env[3];
        struct ctl_result r;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        daemon_harness_init(&f->h);
        config_fixture_write(&f->h.config, "gpreemptd.conf", "[Daemon]\nLogLevel=info\nDiscoveryIntervalMs=20\n");
        config_fixture_write(&f->h.config, "workloads.d/50-test.conf", workloads);
        snprintf(f->runtime_env, sizeof(f->runtime_env), "GPREEMPT_RUNTIME_DIR=%s", f->h.runtime_dir);
        snprintf(f->config_env, sizeof(f->config_env), "GPREEMPT_CONFIG_DIR=%s", f->h.config.dir);
        f->env[0] = f->runtime_env;
        f->env[1] = f->config_env;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        emulated_app_stop(&f->offline);
        daemon_harness_cleanup(&f->h);
        free(f);
        return 0;
}

/* Runs gpreemptctl ARGS... (NULL-terminated) as uid; fails the test unless it exits with want_exit. */
static struct ctl_result *ctl_as(struct fixture *f, uid_t uid, int want_exit, ...)
{
        const char *args[24];
        size_t n = 0;
        va_list ap;

        va_start(ap, want_exit);
        while ((args[n] = va_arg(ap, const char *)) != NULL)
                assert_true(++n < sizeof(args) / sizeof(args[0]));
        va_end(ap);
        ctl_run(ctl_path, f->env, uid, args, &f->r);
        if (f->r.exit_code != want_exit)
                fail_msg("gpreemptctl %s ...: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args[0], f->r.exit_code,
                         want_exit, f->r.out, f->r.err);
        return &f->r;
}

#define ctl(f, want_exit, ...) ctl_as(f, 0, want_exit, __VA_ARGS__, (const char *)NULL)

static void assert_contains(const char *text, const char *part)
{
        if (!strstr(text, part))
                fail_msg("\"%s\" not in:\n%s", part, text);
}

/* stdout parsed as JSON (the caller puts it). */
static struct json_object *json_out(const struct ctl_result *r)
{
        struct json_object *o = json_tokener_parse(r->out);

        if (!o)
                fail_msg("not JSON:\n%s", r->out);
        return o;
}

static struct json_object *status_process(struct fixture *f, pid_t pid)
{
        struct json_object *s = json_out(ctl(f, 0, "status", "--json")), *procs, *found = NULL;

        procs = json_object_object_get(s, "processes");
        for (size_t i = 0; i < json_object_array_length(procs); i++) {
                struct json_object *p = json_object_array_get_idx(procs, i);

                if (json_object_get_int(json_object_object_get(p, "pid")) == pid)
                        found = json_object_get(p);
        }
        json_object_put(s);
        return found;
}

static bool get_bool(struct json_object *o, const char *key)
{
        return json_object_get_boolean(json_object_object_get(o, key));
}

static void start(struct fixture *f)
{
        static const char *const offline[] = { "--continuous", "--gpu", "0", "--kernel-us", "2000", NULL };
        struct json_object *p = NULL;

        daemon_harness_start(&f->h, gpreemptd_path, NULL);
        if (!daemon_harness_wait_notify(&f->h, "READY=1", 10000))
                fail_msg("no READY=1; stderr:\n%s", daemon_harness_log(&f->h));
        emulated_app_start(&f->offline, app_path, offline);
        for (int i = 0; i < 500 && !(p && get_bool(p, "attached")); i++) {
                json_object_put(p);
                usleep(10000);
                p = status_process(f, f->offline.pid);
        }
        if (!p || !get_bool(p, "attached"))
                fail_msg("the offline app never attached; daemon log:\n%s", daemon_harness_log(&f->h));
        json_object_put(p);
}

static void test_without_daemon(void **state)
{
        struct fixture *f = *state;
        struct json_object *o;

        assert_contains(ctl(f, 2, "status")->err, "is gpreemptd running? start it with systemctl start gpreemptd");
        assert_contains(f->r.err, f->h.runtime_dir);
        o = json_out(ctl(f, 2, "status", "--json"));
        assert_non_null(strstr(json_object_get_string(json_object_object_get(o, "error")), "is gpreemptd running?"));
        json_object_put(o);
        assert_contains(ctl(f, 2, "suspend", "1")->err, "is gpreemptd running?");
        assert_contains(ctl(f, 2, "top", "--iterations", "1")->err, "is gpreemptd running?");
}

static void test_usage_errors_and_help(void **state)
{
        static const char *const verbs[] = { "status", "suspend", "resume", "register", "unregister", "top",
                                             "verify-config" };
        struct fixture *f = *state;

        for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
                assert_contains(ctl(f, 0, verbs[i], "--help")->out, "Usage: gpreemptctl");
        assert_contains(ctl(f, 1, "register", "42")->err, "--online or --offline");
        assert_contains(ctl(f, 1, "register", "--online", "--offline", "42")->err, "once");
        assert_contains(ctl(f, 1, "suspend", "--online", "42")->err, "belong to 'register'");
        assert_contains(ctl(f, 1, "suspend")->err, "exactly one PID");
        assert_contains(ctl(f, 1, "resume", "x1")->err, "not a process id");
        assert_contains(ctl(f, 1, "status", "extra")->err, "no arguments");
        assert_contains(ctl(f, 1, "top", "--interval", "0")->err, "not an interval");
        assert_contains(ctl(f, 1, "verify-config", "--pid", "-3")->err, "not a process id");
}

static void test_verify_config_without_daemon(void **state)
{
        struct fixture *f = *state;
        struct json_object *o;
        char pid[16];

        snprintf(pid, sizeof(pid), "%d", (int)getpid());
        assert_contains(ctl(f, 0, "verify-config")->out, "is valid: 2 workloads");
        assert_contains(f->r.out, "50-test.conf:5");
        /* this test's own command line matches neither rule */
        assert_contains(ctl(f, 0, "verify-config", "--pid", pid)->out, "No workload matches");
        o = json_out(ctl(f, 0, "verify-config", "--pid", pid, "--json"));
        assert_true(get_bool(o, "valid"));
        assert_int_equal(json_object_array_length(json_object_object_get(o, "matches")), 2);
        assert_null(json_object_object_get(o, "workload"));
        json_object_put(o);

        config_fixture_write(&f->h.config, "workloads.d/60-bad.conf", "[Workload]\nName=x\nClass=sometimes\n");
        assert_contains(ctl(f, 2, "verify-config")->err, "60-bad.conf:3");
        o = json_out(ctl(f, 2, "verify-config", "--json"));
        assert_false(get_bool(o, "valid"));
        assert_true(json_object_array_length(json_object_object_get(o, "errors")) > 0);
        json_object_put(o);
        assert_contains(ctl(f, 2, "verify-config", "--pid", "4194304")->err, "cannot read process 4194304");
}

static void test_verbs_against_the_daemon(void **state)
{
        struct fixture *f = *state;
        struct json_object *p, *o;
        char pid[16];

        start(f);
        snprintf(pid, sizeof(pid), "%d", (int)f->offline.pid);

        assert_contains(ctl(f, 0, "status")->out, "train");
        assert_contains(f->r.out, pid);
        assert_contains(f->r.out, "running");

        assert_contains(ctl(f, 0, "suspend", pid)->out, "held suspended");
        p = status_process(f, f->offline.pid);
        assert_true(get_bool(p, "held"));
        assert_true(json_object_array_length(json_object_object_get(p, "suspended_gpus")) > 0);
        json_object_put(p);
        assert_contains(ctl(f, 0, "status")->out, "suspended on");
        assert_contains(f->r.out, "held");

        o = json_out(ctl(f, 0, "resume", pid, "--json"));
        assert_string_equal(json_object_get_string(json_object_object_get(o, "done")), "resume");
        json_object_put(o);
        p = status_process(f, f->offline.pid);
        assert_false(get_bool(p, "held"));
        json_object_put(p);

        assert_contains(ctl(f, 0, "register", "--online", pid)->out, "registered as online");
        assert_contains(ctl(f, 2, "suspend", pid)->err, "not an offline workload");
        o = json_out(ctl(f, 2, "suspend", pid, "--json"));
        assert_string_equal(json_object_get_string(json_object_object_get(o, "varlink_error")),
                            "io.gpreempt.NotOffline");
        json_object_put(o);
        assert_contains(ctl(f, 0, "unregister", pid)->out, "by the configuration again");

        assert_contains(ctl(f, 2, "suspend", "4194304")->err, "not known to gpreemptd");
        assert_contains(ctl(f, 2, "register", "--offline", "4194304")->err, "not known to gpreemptd");

        /* not a terminal: a few snapshots, then done */
        ctl(f, 0, "top", "--interval", "50ms");
        assert_contains(f->r.out, "SINCE-LAST");
        ctl(f, 0, "top", "--interval", "10ms", "--iterations", "2", "--json");
        o = json_tokener_parse(strchr(f->r.out, '\n') + 1);
        assert_non_null(json_object_object_get(o, "processes"));
        json_object_put(o);

        /* verify-config --pid explains the match of a live process */
        assert_contains(ctl(f, 0, "verify-config", "--pid", pid)->out, "would classify it offline (workload train");

        /* the daemon going away mid-session is explained too */
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        assert_contains(ctl(f, 2, "status")->err, "is gpreemptd running?");
}

static void test_unauthorised_callers_refused(void **state)
{
        struct fixture *f = *state;
        struct passwd *nobody = getpwnam("nobody");
        uid_t uid = nobody ? nobody->pw_uid : 65534;
        struct json_object *p;
        char pid[16];

        start(f);
        snprintf(pid, sizeof(pid), "%d", (int)f->offline.pid);
        /* the socket is 0666 behind a private test directory: let the caller reach
         * it, so that the daemon's SO_PEERCRED check is what refuses */
        assert_int_equal(chmod(f->h.config.dir, 0711), 0);
        assert_int_equal(chmod(f->h.runtime_dir, 0711), 0);

        assert_contains(ctl_as(f, uid, 2, "status", (const char *)NULL)->err,
                        "reading gpreemptd's state needs root or membership of the gpreempt group");
        assert_contains(ctl_as(f, uid, 2, "suspend", pid, (const char *)NULL)->err,
                        "only root can change what gpreemptd does");
        assert_contains(ctl_as(f, uid, 2, "register", "--online", pid, (const char *)NULL)->err, "only root");
        assert_contains(ctl_as(f, uid, 2, "top", "--json", (const char *)NULL)->out, "io.gpreempt.PermissionDenied");

        p = status_process(f, f->offline.pid);
        assert_false(get_bool(p, "held"));
        assert_false(get_bool(p, "registered"));
        json_object_put(p);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_without_daemon, setup, teardown),
                cmocka_unit_test_setup_teardown(test_usage_errors_and_help, setup, teardown),
                cmocka_unit_test_setup_teardown(test_verify_config_without_daemon, setup, teardown),
                cmocka_unit_test_setup_teardown(test_verbs_against_the_daemon, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unauthorised_callers_refused, setup, teardown),
        };

        if (argc != 4) {
                fprintf(stderr, "usage: test-ctl PATH-TO-GPREEMPTCTL PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP\n");
                return 2;
        }
        ctl_path = argv[1];
        gpreemptd_path = argv[2];
        app_path = argv[3];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
