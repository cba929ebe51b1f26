/* SPDX-License-Identifier: MIT */
/*
 * The queue_finder program as a user runs it: options, exit codes, error
 * sentences, the JSON document and the config snippet, on the real dumps.
 * argv[1] is the queue_finder executable.
 */
#include <json-c/json.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli-run.h"
#include "test-util.h"

static const char *exe;

static void test_help_and_errors(void **state)
{
        struct cli_output o;
        const char *help[] = { exe, "--help", NULL };
        assert_int_equal(cli_run(help, NULL, &o), 0);
        assert_non_null(strstr(o.out, "Usage: queue_finder"));
        cli_output_free(&o);

        const char *bad[] = { exe, "--no-such-option", NULL };
        assert_int_equal(cli_run(bad, NULL, &o), 1);
        assert_non_null(strstr(o.err, "--help"));
        cli_output_free(&o);

        const char *missing[] = { exe, "--no-live", "--mqds", "/nonexistent/mqds", NULL };
        assert_int_equal(cli_run(missing, NULL, &o), 1);
        assert_non_null(strstr(o.err, "cannot open /nonexistent/mqds: No such file or directory"));
        cli_output_free(&o);

        /* With --json the error is also a document on stdout. */
        const char *json_missing[] = { exe, "--json", "--no-live", "--log", "/nonexistent/log", NULL };
        assert_int_equal(cli_run(json_missing, NULL, &o), 1);
        struct json_object *doc = json_tokener_parse(o.out), *error;
        assert_non_null(doc);
        assert_true(json_object_object_get_ex(doc, "error", &error));
        assert_string_equal(json_object_get_string(error), "cannot open /nonexistent/log: No such file or directory.");
        json_object_put(doc);
        cli_output_free(&o);

        const char *notpid[] = { exe, "--no-live", "12ab", NULL };
        assert_int_equal(cli_run(notpid, NULL, &o), 1);
        assert_non_null(strstr(o.err, "\"12ab\" is not a process id"));
        cli_output_free(&o);

        const char *cls[] = { exe, "--emit-config", "sometimes", NULL };
        assert_int_equal(cli_run(cls, NULL, &o), 1);
        assert_non_null(strstr(o.err, "\"online\" or \"offline\""));
        cli_output_free(&o);
}

static void test_json_real_dumps(void **state)
{
        char mqds[4096], hqds[4096], log[4096];
        snprintf(mqds, sizeof(mqds), "%s", test_shared_path("mi308x-mqds-5queues.txt"));
        snprintf(hqds, sizeof(hqds), "%s", test_shared_path("mi308x-hqds-5queues.txt"));
        snprintf(log, sizeof(log), "%s", test_shared_path("hip-rocm7-amd-log-level4.log"));
        const char *argv[] = { exe, "--no-live", "--json", "--mqds", mqds, "--hqds", hqds, "--log", log, NULL };
        struct cli_output o;
        assert_int_equal(cli_run(argv, NULL, &o), 0);

        struct json_object *doc = json_tokener_parse(o.out);
        assert_non_null(doc);
        struct json_object *v, *procs, *p, *queues, *q;
        assert_true(json_object_object_get_ex(doc, "schema_version", &v));
        assert_int_equal(json_object_get_int(v), 1);
        assert_true(json_object_object_get_ex(doc, "processes", &procs));
        assert_int_equal(json_object_array_length(procs), 2);
        p = json_object_array_get_idx(procs, 0);
        assert_true(json_object_object_get_ex(p, "pid", &v));
        assert_int_equal(json_object_get_int(v), 94314);
        assert_true(json_object_object_get_ex(p, "queues", &queues));
        assert_int_equal(json_object_array_length(queues), 5);
        q = json_object_array_get_idx(queues, 0);
        assert_true(json_object_object_get_ex(q, "ring_base", &v));
        assert_string_equal(json_object_get_string(v), "0x7f41b5200000");
        assert_true(json_object_object_get_ex(q, "gpu_id", &v));
        assert_int_equal(json_object_get_int(v), 0xf7bc);
        assert_true(json_object_object_get_ex(q, "hqds", &v));
        assert_int_equal(json_object_array_length(v), 4);
        assert_true(json_object_object_get_ex(q, "queue_id", &v));
        assert_null(v);

        p = json_object_array_get_idx(procs, 1);
        assert_true(json_object_object_get_ex(p, "pid", &v));
        assert_int_equal(json_object_get_int(v), 459769);

        /* The enabled SDMA rings of f7bc, decoded; the first is engine 1, RLC 0. */
        struct json_object *sdma, *s;
        assert_true(json_object_object_get_ex(doc, "enabled_sdma_hqds", &sdma));
        assert_int_equal(json_object_array_length(sdma), 7);
        s = json_object_array_get_idx(sdma, 0);
        static const struct {
                const char *key, *value;
        } fields[] = {
                { "kind", "sdma" },         { "ring_base", "0x7f558c200000" }, { "rptr_address", "0x7f5731304010" },
                { "wptr_address", "0x0" },
        };
        for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++) {
                assert_true(json_object_object_get_ex(s, fields[i].key, &v));
                assert_string_equal(json_object_get_string(v), fields[i].value);
        }
        assert_true(json_object_object_get_ex(s, "engine", &v));
        assert_int_equal(json_object_get_int(v), 1);
        assert_true(json_object_object_get_ex(s, "rlc", &v));
        assert_int_equal(json_object_get_int(v), 0);
        assert_true(json_object_object_get_ex(s, "decoded", &v));
        assert_true(json_object_get_boolean(v));
        assert_true(json_object_object_get_ex(s, "doorbell_enabled", &v));
        assert_false(json_object_get_boolean(v));
        assert_true(json_object_object_get_ex(s, "xcc", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(s, "registers", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(doc, "warnings", &v));
        assert_int_equal(json_object_array_length(v), 0);
        json_object_put(doc);
        cli_output_free(&o);
}

/* A snapshot that cannot be taken (no /dev/kfd here, no such process) is a
 * warning with libgpreempt's explanation, not a failure. */
static void test_snapshot_failure_is_a_warning(void **state)
{
        const char *argv[] = { exe, "--json", "--snapshot", "--sysfs-root", "/nonexistent", "--debugfs-root",
                               "/nonexistent", "4194304", NULL };
        struct cli_output o;
        assert_int_equal(cli_run(argv, NULL, &o), 0);
        struct json_object *doc = json_tokener_parse(o.out), *warnings, *w, *v;
        assert_non_null(doc);
        assert_true(json_object_object_get_ex(doc, "warnings", &warnings));
        assert_int_equal(json_object_array_length(warnings), 1);
        w = json_object_array_get_idx(warnings, 0);
        assert_true(json_object_object_get_ex(w, "file", &v));
        assert_string_equal(json_object_get_string(v), "snapshot");
        assert_true(json_object_object_get_ex(w, "message", &v));
        assert_non_null(strstr(json_object_get_string(v), "pid 4194304: "));
        assert_true(strlen(json_object_get_string(v)) > strlen("pid 4194304: ") + 10);
        json_object_put(doc);
        cli_output_free(&o);
}

static void test_log_from_stdin_and_config(void **state)
{
        const char *log = ":3:rocdevice.cpp :3048: 1 us: [pid:31337 tid: 0x1] Created SWq=0x7f0000004000 to map on "
                          "HWq=0x7f3000000000 with size 64 with priority 1, cooperative: 0\n";
        const char *argv[] = { exe, "--no-live", "--log", "-", "--emit-config", "online", NULL };
        struct cli_output o;
        assert_int_equal(cli_run(argv, log, &o), 0);
        assert_non_null(strstr(o.out, "[Workload]\n"));
        assert_non_null(strstr(o.out, "Class=online\n"));
        assert_non_null(strstr(o.out, "MatchPID=31337\n"));
        cli_output_free(&o);

        const char *table[] = { exe, "--no-live", "--log", "-", NULL };
        assert_int_equal(cli_run(table, "junk\n: 3:x\n", &o), 0);
        assert_non_null(strstr(o.out, "No GPU processes found."));
        assert_non_null(strstr(o.out, "-: no AMD log lines found"));
        cli_output_free(&o);
}

/*
 * A log queue whose ring base the log does not give (the forms before ROCm
 * 6.2) shows the address the log has for it in the table, which would
 * otherwise show no address at all.
 */
static void test_table_shows_the_log_address(void **state)
{
        const char *log = ":3:rocdevice.cpp :2896: 1 us: 5: [tid:0x1] created hardware queue 0x7fcc3566a000 with size "
                          "16384 with priority 1, cooperative: 0\n"
                          ":4:rocvirtual.cpp :1083: 2 us: 5: [tid:0x1] HWq=0x7fcc33b08000, Dispatch Header = 0xb02\n";
        const char *table[] = { exe, "--no-live", "--log", "-", NULL };
        struct cli_output o;
        assert_int_equal(cli_run(table, log, &o), 0);
        assert_non_null(strstr(o.out, " log (hsa_queue_t 0x7fcc3566a000)\n"));
        assert_non_null(strstr(o.out, " log (address 0x7fcc33b08000)\n"));
        cli_output_free(&o);
}

/* A process of a fake node under root: one queue in sysfs on GPU 63420, exe linked to exe. */
static void fake_gpu_process(const char *root, int pid, const char *exe_path)
{
        char path[512];

        snprintf(path, sizeof(path), "mkdir -p %s/kfd/topology/nodes/1 %s/kfd/proc/%d/queues/0 %s/proc/%d", root, root,
                 pid, root, pid);
        assert_int_equal(system(path), 0);
        static const char *const files[][2] = { { "size", "4096" }, { "type", "0" }, { "gpuid", "63420" } };
        for (size_t i = 0; i < 3; i++) {
                snprintf(path, sizeof(path), "%s/kfd/proc/%d/queues/0/%s", root, pid, files[i][0]);
                FILE *f = fopen(path, "w");
                assert_non_null(f);
                fprintf(f, "%s\n", files[i][1]);
                fclose(f);
        }
        snprintf(path, sizeof(path), "%s/kfd/topology/nodes/1/gpu_id", root);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs("63420\n", f);
        fclose(f);
        snprintf(path, sizeof(path), "%s/proc/%d/exe", root, pid);
        assert_int_equal(symlink(exe_path, path), 0);
}

/*
 * --emit-config on executables whose paths gpreemptd's configuration does
 * not take as they are: each section must parse back (Name= is 1 to 64 of
 * "[A-Za-z0-9-_.@]") and match its own process alone (glob characters
 * escaped, " (deleted)" dropped as gpreemptd drops it; a path with white
 * space, which no Match value can hold, is matched by pid).
 */
static void test_config_for_odd_executables(void **state)
{
        char root[256], sysfs[300], proc[300], debugfs[300], long_exe[100] = "/opt/";
        struct cli_output o;

        memset(long_exe + 5, 'L', 70);
        test_tmpdir_create("qf-config", root, sizeof(root));
        fake_gpu_process(root, 1012, "/usr/bin/python3 (deleted)");
        fake_gpu_process(root, 1016, "/usr/bin/p+q");
        fake_gpu_process(root, 1010, long_exe);
        fake_gpu_process(root, 1001, "/opt/my app/bin/train");
        fake_gpu_process(root, 2001, "/srv/run[1]/tr*in");
        snprintf(sysfs, sizeof(sysfs), "%s/kfd", root);
        snprintf(proc, sizeof(proc), "%s/proc", root);
        snprintf(debugfs, sizeof(debugfs), "%s/debugfs", root);
        const char *argv[] = { exe, "--sysfs-root", sysfs, "--proc-root", proc, "--debugfs-root", debugfs,
                               "--emit-config", "offline", NULL };
        assert_int_equal(cli_run(argv, NULL, &o), 0);
        assert_non_null(strstr(o.out, "Name=python3-1012\nClass=offline\nMatchExecutable=/usr/bin/python3\n"));
        assert_non_null(strstr(o.out, "Name=p_q-1016\nClass=offline\nMatchExecutable=/usr/bin/p+q\n"));
        assert_non_null(strstr(o.out, "Name=tr_in-2001\nClass=offline\nMatchExecutable=/srv/run\\[1\\]/tr\\*in\n"));
        assert_non_null(strstr(o.out, "Name=pid-1001\nClass=offline\nMatchPID=1001\n"));
        for (const char *n = strstr(o.out, "\nName="); n; n = strstr(n + 1, "\nName=")) {
                size_t len = strcspn(n + 6, "\n");
                if (len == 0 || len > 64 || strspn(n + 6, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                        "0123456789-_.@") != len)
                        fail_msg("a Name= gpreemptd refuses: %.*s", (int) len, n + 6);
        }
        cli_output_free(&o);

        /* a pid given twice is one process, its queue listed once */
        const char *twice[] = { exe, "--sysfs-root", sysfs, "--proc-root", proc, "--debugfs-root", debugfs,
                                "--emit-config", "offline", "1016", "1016", NULL };
        assert_int_equal(cli_run(twice, NULL, &o), 0);
        assert_non_null(strstr(o.out, "1 GPU queue(s)"));
        assert_null(strstr(strstr(o.out, "[Workload]") + 1, "[Workload]"));
        cli_output_free(&o);
        assert_int_equal(test_tmpdir_remove(root), 0);
}

/* The pid of the only process in a --json document, NULL for a JSON null;
 * the document is kept in *doc for the caller to free. */
static struct json_object *only_process(const char *out, struct json_object **doc)
{
        struct json_object *procs, *p;
        *doc = json_tokener_parse(out);
        assert_non_null(*doc);
        assert_true(json_object_object_get_ex(*doc, "processes", &procs));
        assert_int_equal(json_object_array_length(procs), 1);
        p = json_object_array_get_idx(procs, 0);
        assert_non_null(p);
        return p;
}

/* A log whose lines name no process (clr at AMD_LOG_LEVEL=3, ollama/ollama#9516):
 * its queue is shown with a null pid and "PID unknown", never as process 0,
 * and --emit-config leaves it out rather than write a MatchPID for nobody;
 * --log-pid names the process. */
static void test_log_without_pid(void **state)
{
        const char *log = ":3:rocdevice.cpp            :3138: 2794703230d us:  Created SWq=0x7ad5f8056000 to map on "
                          "HWq=0x7ad456a00000 with size 16384 with priority 1, cooperative: 0\n";
        struct cli_output o;
        struct json_object *doc, *p, *v, *queues, *lq;

        const char *json[] = { exe, "--no-live", "--json", "--log", "-", NULL };
        assert_int_equal(cli_run(json, log, &o), 0);
        p = only_process(o.out, &doc);
        assert_true(json_object_object_get_ex(p, "pid", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(p, "queues", &queues));
        assert_true(json_object_object_get_ex(json_object_array_get_idx(queues, 0), "log", &lq));
        assert_true(json_object_object_get_ex(lq, "pid", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(lq, "hwq", &v));
        assert_string_equal(json_object_get_string(v), "0x7ad456a00000");
        json_object_put(doc);
        cli_output_free(&o);

        const char *table[] = { exe, "--no-live", "--log", "-", NULL };
        assert_int_equal(cli_run(table, log, &o), 0);
        assert_non_null(strstr(o.out, "PID unknown"));
        assert_null(strstr(o.out, "PID 0"));
        assert_non_null(strstr(o.out, "1 queue(s) of the log belong to no known process: its lines carry no pid"));
        cli_output_free(&o);

        const char *config[] = { exe, "--no-live", "--log", "-", "--emit-config", "offline", NULL };
        assert_int_equal(cli_run(config, log, &o), 0);
        assert_null(strstr(o.out, "[Workload]"));
        assert_null(strstr(o.out, "MatchPID"));
        assert_non_null(strstr(o.out, "--log-pid PID"));
        cli_output_free(&o);

        const char *named[] = { exe, "--no-live", "--json", "--log", "-", "--log-pid", "4242", NULL };
        assert_int_equal(cli_run(named, log, &o), 0);
        p = only_process(o.out, &doc);
        assert_true(json_object_object_get_ex(p, "pid", &v));
        assert_int_equal(json_object_get_int(v), 4242);
        json_object_put(doc);
        cli_output_free(&o);

        const char *named_config[] = { exe, "--no-live", "--log", "-", "--log-pid", "4242", "--emit-config", "offline",
                                       NULL };
        assert_int_equal(cli_run(named_config, log, &o), 0);
        assert_non_null(strstr(o.out, "MatchPID=4242\n"));
        cli_output_free(&o);

        /* ROCm 4.5 queue lines name only the thread; the hint says so. */
        const char *rocm45 = ":4:rocvirtual.cpp           :843 : 266505887439 us: [7fb360ad23c0] HWq=0x7fb360aa6000, "
                             "Dispatch Header = 0x302 (type=2, barrier=1, acquire=1, release=0), setup=3\n";
        assert_int_equal(cli_run(table, rocm45, &o), 0);
        assert_non_null(strstr(o.out, "belong to no known process: ROCm 4.5 names the pid on HIP API lines only"));
        cli_output_free(&o);

        /* Asking about another process keeps the one --log-pid names. */
        const char *asked[] = { exe, "--no-live", "--log", "-", "--log-pid", "4242", "31337", NULL };
        assert_int_equal(cli_run(asked, log, &o), 0);
        assert_non_null(strstr(o.out, "PID 4242\n  QUEUE"));
        assert_non_null(strstr(o.out, "0x7ad456a00000"));
        cli_output_free(&o);
}

/* --log-pid for a log whose queue lines all name their process does
 * nothing, and says so. */
static void test_log_pid_unused(void **state)
{
        const char *log = ":3:rocdevice.cpp :3048: 1 us: [pid:31337 tid: 0x1] Created SWq=0x7f0000004000 to map on "
                          "HWq=0x7f3000000000 with size 64 with priority 1, cooperative: 0\n";
        const char *argv[] = { exe, "--no-live", "--log", "-", "--log-pid", "4242", NULL };
        struct cli_output o;
        assert_int_equal(cli_run(argv, log, &o), 0);
        assert_non_null(strstr(o.out, "PID 31337"));
        assert_non_null(strstr(o.out, "--log-pid 4242 was not used: every queue line of the log names its process"));
        cli_output_free(&o);
}

static void test_log_pid_errors(void **state)
{
        struct cli_output o;
        const char *no_log[] = { exe, "--no-live", "--log-pid", "4242", NULL };
        assert_int_equal(cli_run(no_log, NULL, &o), 1);
        assert_non_null(strstr(o.err, "give the log with --log FILE"));
        cli_output_free(&o);

        static const char *const bad[] = { "0", "-5", "12ab", "99999999999" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
                const char *argv[] = { exe, "--no-live", "--log", "-", "--log-pid", bad[i], NULL };
                assert_int_equal(cli_run(argv, "", &o), 1);
                assert_non_null(strstr(o.err, "--log-pid takes a process id (a decimal number from 1 to 4194304)"));
                cli_output_free(&o);
        }

        const char *two_pids[] = { exe, "--no-live", "--log", "-", "--log-pid", "1", "--log-pid", "2", NULL };
        assert_int_equal(cli_run(two_pids, "", &o), 1);
        assert_non_null(strstr(o.err, "--log-pid was given twice"));
        cli_output_free(&o);

        const char *two_logs[] = { exe, "--no-live", "--log", "-", "--log", "/dev/null", NULL };
        assert_int_equal(cli_run(two_logs, "", &o), 1);
        assert_non_null(strstr(o.err, "--log was given twice; one log is read per run"));
        cli_output_free(&o);
}

int main(int argc, char **argv)
{
        if (argc != 2) {
                fprintf(stderr, "usage: %s QUEUE_FINDER\n", argv[0]);
                return 2;
        }
        exe = argv[1];
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_help_and_errors),
                cmocka_unit_test(test_json_real_dumps),
                cmocka_unit_test(test_snapshot_failure_is_a_warning),
                cmocka_unit_test(test_log_from_stdin_and_config),
                cmocka_unit_test(test_config_for_odd_executables),
                cmocka_unit_test(test_table_shows_the_log_address),
                cmocka_unit_test(test_log_without_pid),
                cmocka_unit_test(test_log_pid_errors),
                cmocka_unit_test(test_log_pid_unused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
