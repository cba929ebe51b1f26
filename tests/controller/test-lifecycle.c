/* SPDX-License-Identifier: MIT */
/*
 * gpreemptd and the lives of the processes it manages, on an emulated node
 * (run under kfdemu-run --gpus 2): a process that execs into another
 * program is classified again.
 *
 *   test-lifecycle PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP
 */
#include <json.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon-harness.h"
#include "daemon-status.h"
#include "emulated-app.h"

static const char *gpreemptd_path, *app_path;

struct fixture {
        struct daemon_harness h;
        struct emulated_app offline, online;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        emulated_app_stop(&f->online);
        emulated_app_stop(&f->offline);
        daemon_harness_cleanup(&f->h);
        free(f);
        return 0;
}

static void start_daemon(struct daemon_harness *h, const char *settings, const char *workloads)
{
        char conf[512];

        daemon_harness_init(h);
        snprintf(conf, sizeof(conf), "[Daemon]\nLogLevel=info\nDiscoveryIntervalMs=20\n%s", settings);
        config_fixture_write(&h->config, "gpreemptd.conf", conf);
        config_fixture_write(&h->config, "workloads.d/50-test.conf", workloads);
        daemon_harness_start(h, gpreemptd_path, NULL);
        if (!daemon_harness_wait_notify(h, "READY=1", 10000))
                fail_msg("no READY=1; stderr:\n%s", daemon_harness_log(h));
}

static void call_pid(struct daemon_harness *h, const char *method, pid_t pid)
{
        char text[64];
        struct json_object *params, *reply = NULL;
        char *error = NULL;

        snprintf(text, sizeof(text), "{\"pid\":%d}", (int)pid);
        params = json_tokener_parse(text);
        assert_int_equal(daemon_harness_call(h, method, params, &reply, &error), 0);
        if (error)
                fail_msg("%s(%s): %s", method, text, error);
        json_object_put(reply);
        json_object_put(params);
}

/* How many times the app has printed READY: once per program image it ran. */
static int ready_count(const struct emulated_app *a)
{
        char buf[1 << 16];
        FILE *f = fopen(a->output, "re");
        size_t n;
        int count = 0;

        assert_non_null(f);
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        for (const char *p = buf; (p = strstr(p, "READY pid=")); p++)
                count++;
        return count;
}

static void wait_exec(const struct emulated_app *a)
{
        for (int i = 0; i < 1000; i++) {
                if (ready_count(a) >= 2)
                        return;
                usleep(10000);
        }
        fail_msg("pid %d did not exec and print READY again within 10 s", (int)a->pid);
}

static bool is_unmanaged(struct json_object *p)
{
        return p && !status_bool(p, "managed");
}

static bool is_watched_online(struct json_object *p)
{
        const char *class = status_string(p, "class");

        return p && class && strcmp(class, "online") == 0 && status_int(p, "watched_queues") > 0;
}

static bool is_attached_offline(struct json_object *p)
{
        const char *class = status_string(p, "class");

        return p && class && strcmp(class, "offline") == 0 && status_bool(p, "attached") &&
               status_int(p, "watched_queues") == 0;
}

/* Held (gpreemptctl suspend) with a bound beyond the test: at most the kernel being saved completes. */
static void assert_held_still(struct fixture *f)
{
        int64_t k1, k2;

        call_pid(&f->h, "io.gpreempt.Suspend", f->offline.pid);
        usleep(50000);
        k1 = emulated_app_kernels(&f->offline);
        usleep(300000);
        k2 = emulated_app_kernels(&f->offline);
        if (k2 - k1 > 1)
                fail_msg("a held process kept running: %lld -> %lld kernels; daemon log:\n%s", (long long)k1,
                         (long long)k2, daemon_harness_log(&f->h));
        call_pid(&f->h, "io.gpreempt.Resume", f->offline.pid);
}

/*
 * kfdemu-app --exec-after re-executes itself without that option: the
 * command line changes, and the kernel gives the new image a new KFD
 * process under the same pid. first_seen says what the daemon must make of
 * the first image; the second matches the offline workload.
 */
static void exec_into_offline_job(struct fixture *f, const char *workloads, status_process_test_fn first_seen,
                                  const char *first_class)
{
        static const char *const launcher[] = { "--exec-after", "1.5", "--continuous", "--gpu", "0",
                                                "--kernel-us", "2000", NULL };

        start_daemon(&f->h, "[Offline]\nMaxSuspendMs=10000\n", workloads);
        emulated_app_start(&f->offline, app_path, launcher);
        daemon_status_wait_process(&f->h, f->offline.pid, first_seen, first_class, 5000);
        if (ready_count(&f->offline) != 1)
                fail_msg("the launcher exec'd before the daemon classified it; the test proves nothing");
        wait_exec(&f->offline);
        daemon_status_wait_process(&f->h, f->offline.pid, is_attached_offline,
                                   "reclassified as offline and attached after its exec", 5000);
        assert_held_still(f);
        emulated_app_stop(&f->offline);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

static void test_exec_reclassifies_an_unmanaged_launcher(void **state)
{
        exec_into_offline_job(*state,
                              "[Workload]\nName=train\nClass=offline\nMatchCommandLine=*kfdemu-app --continuous*\n",
                              is_unmanaged, "seen as unmanaged");
}

static void test_exec_ends_the_online_watch(void **state)
{
        exec_into_offline_job(*state,
                              "[Workload]\nName=launch\nClass=online\nMatchCommandLine=*--exec-after*\n"
                              "[Workload]\nName=train\nClass=offline\nMatchCommandLine=*kfdemu-app --continuous*\n",
                              is_watched_online, "watched as online");
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_exec_reclassifies_an_unmanaged_launcher, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_ends_the_online_watch, setup, teardown),
        };

        if (argc != 3) {
                fprintf(stderr, "usage: test-lifecycle PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP\n");
                return 2;
        }
        gpreemptd_path = argv[1];
        app_path = argv[2];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
