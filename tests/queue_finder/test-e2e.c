/* SPDX-License-Identifier: MIT */
/*
 * queue_finder on an emulated node (kfdemu-run --gpus 2 -- test-qf-e2e
 * QUEUE_FINDER KFDEMU_APP): emulated HIP applications with several queues on
 * both GPUs, logging in each CLR format generation, are found through every
 * source -- sysfs, the debug-trap snapshot, debugfs mqds and hqds, the log --
 * and the joined result agrees with what each application reports about its
 * own queues when it exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli-run.h"
#include "test-util.h"

extern char **environ;

static const char *queue_finder;
static const char *kfdemu_app;
static char tmpdir[PATH_MAX];

struct app {
        pid_t pid;          /* as spawned (unshare's pid when in a namespace) */
        pid_t host_pid;     /* the app's own pid in our namespace */
        pid_t reported_pid; /* from READY, in the app's own namespace */
        FILE *out;
        char log[PATH_MAX];
        struct json_object *report;
};

/* unshare --fork waits for its one child, the app. */
static pid_t only_child(pid_t parent)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int) parent, (int) parent);
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        int child = 0;
        assert_int_equal(fscanf(f, "%d", &child), 1);
        fclose(f);
        return child;
}

/* Starts kfdemu-app with the given extra arguments and waits for READY. */
static void app_start(struct app *a, const char *name, const char *format, bool own_pid_ns, const char *const *extra)
{
        const char *argv[32];
        size_t n = 0;
        assert_true(snprintf(a->log, sizeof(a->log), "%s/%s.log", tmpdir, name) < (int) sizeof(a->log));
        if (own_pid_ns) {
                /* A user namespace too, so no privilege is needed. */
                argv[n++] = "/usr/bin/unshare";
                argv[n++] = "--user";
                argv[n++] = "--map-root-user";
                argv[n++] = "--pid";
                argv[n++] = "--fork";
        }
        argv[n++] = kfdemu_app;
        argv[n++] = "--continuous";
        argv[n++] = "--kernel-us";
        argv[n++] = "500";
        argv[n++] = "--report";
        argv[n++] = "json";
        argv[n++] = "--amd-log-level";
        argv[n++] = "4";
        argv[n++] = "--amd-log-format";
        argv[n++] = format;
        argv[n++] = "--amd-log-file";
        argv[n++] = a->log;
        while (*extra)
                argv[n++] = *extra++;
        argv[n] = NULL;

        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        assert_int_equal(posix_spawn(&a->pid, argv[0], &fa, NULL, (char *const *) argv, environ), 0);
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
        a->out = fdopen(p[0], "r");
        assert_non_null(a->out);

        char line[256];
        assert_non_null(fgets(line, sizeof(line), a->out));
        int pid;
        assert_int_equal(sscanf(line, "READY pid=%d", &pid), 1);
        a->reported_pid = pid;
        a->host_pid = own_pid_ns ? only_child(a->pid) : a->pid;
        /* Let every queue dispatch a few kernels, so the log has them. */
        usleep(300 * 1000);
}

/* Stops the app; its final report says what its queues really were. */
static void app_stop(struct app *a)
{
        /* unshare ignores SIGTERM while it waits: signal the app itself. */
        assert_int_equal(kill(a->host_pid, SIGTERM), 0);
        char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, a->out) > 0 && !a->report)
                if (line[0] == '{')
                        a->report = json_tokener_parse(line);
        free(line);
        fclose(a->out);
        int status;
        assert_int_equal(waitpid(a->pid, &status, 0), a->pid);
        assert_non_null(a->report);
}

static struct json_object *get(struct json_object *o, const char *key)
{
        struct json_object *v = NULL;
        if (!json_object_object_get_ex(o, key, &v))
                fail_msg("no \"%s\" in %s", key, json_object_to_json_string(o));
        return v;
}

static struct json_object *run_json(const char *const *argv)
{
        struct cli_output o;
        int status = cli_run(argv, NULL, &o);
        if (status != 0)
                fail_msg("queue_finder failed (%d): %s", status, o.err);
        struct json_object *doc = json_tokener_parse(o.out);
        assert_non_null(doc);
        cli_output_free(&o);
        return doc;
}

static struct json_object *find_process(struct json_object *doc, pid_t pid)
{
        struct json_object *procs = get(doc, "processes");
        for (size_t i = 0; i < json_object_array_length(procs); i++) {
                struct json_object *p = json_object_array_get_idx(procs, i);
                if (json_object_get_int(get(p, "pid")) == pid)
                        return p;
        }
        fail_msg("pid %d not in the output", (int) pid);
        return NULL;
}

static size_t count_sources(struct json_object *q)
{
        return json_object_array_length(get(q, "sources"));
}

/* Every queue the app reports is in the output, identical in every field
 * the sources give, seen by all of them when all_sources. */
static void assert_agrees(struct json_object *proc, struct json_object *report, bool all_sources, bool by_queue_id)
{
        struct json_object *mine = get(report, "queues"), *found = get(proc, "queues");
        assert_int_equal(json_object_array_length(get(proc, "conflicts")), 0);
        assert_int_equal(json_object_array_length(found), json_object_array_length(mine));
        for (size_t i = 0; i < json_object_array_length(mine); i++) {
                struct json_object *m = json_object_array_get_idx(mine, i), *q = NULL;
                const char *ring = json_object_get_string(get(m, "ring_base_address"));
                for (size_t k = 0; k < json_object_array_length(found) && !q; k++) {
                        struct json_object *c = json_object_array_get_idx(found, k);
                        struct json_object *rb = get(c, "ring_base");
                        if (rb && strcmp(json_object_get_string(rb), ring) == 0)
                                q = c;
                }
                if (!q)
                        fail_msg("queue with ring %s not found", ring);
                if (by_queue_id)
                        assert_int_equal(json_object_get_int(get(q, "queue_id")),
                                         json_object_get_int(get(m, "queue_id")));
                assert_int_equal(json_object_get_int(get(q, "gpu_id")), json_object_get_int(get(m, "gpu_id")));
                assert_string_equal(json_object_get_string(get(q, "rptr_address")),
                                    json_object_get_string(get(m, "read_pointer_address")));
                assert_string_equal(json_object_get_string(get(q, "wptr_address")),
                                    json_object_get_string(get(m, "write_pointer_address")));
                assert_string_equal(json_object_get_string(get(q, "amd_queue_address")),
                                    json_object_get_string(get(m, "amd_queue")));
                assert_int_equal(json_object_get_int(get(q, "ring_size")),
                                 json_object_get_int(get(m, "ring_packets")) * 64);
                /* One active hardware slot per XCC of the emulated gfx942. */
                struct json_object *hqds = get(q, "hqds");
                assert_int_equal(json_object_array_length(hqds), 4);
                struct json_object *log = get(q, "log");
                assert_non_null(log);
                assert_true(json_object_get_int(get(log, "dispatches")) > 0);
                if (all_sources)
                        assert_int_equal(count_sources(q), 5);
        }
}

/* ROCm >= 6.2 log, two queues on two GPUs, joined through the snapshot. */
static void test_clr_62_all_sources(void **state)
{
        struct app a = { 0 };
        const char *extra[] = { "--queues", "2", NULL };
        app_start(&a, "clr62", "6.2", false, extra);
        char pid[16];
        snprintf(pid, sizeof(pid), "%d", (int) a.pid);
        const char *argv[] = { queue_finder, "--json", "--snapshot", "--log", a.log, pid, NULL };
        struct json_object *doc = run_json(argv);
        /* Without the snapshot, one queue per GPU still pairs sysfs with the
         * MQDs by GPU and ring size. */
        const char *plain[] = { queue_finder, "--json", "--log", a.log, pid, NULL };
        struct json_object *no_snapshot = run_json(plain);
        app_stop(&a);

        assert_agrees(find_process(doc, a.pid), a.report, true, true);
        struct json_object *p = find_process(no_snapshot, a.pid);
        assert_agrees(p, a.report, false, true);
        struct json_object *queues = get(p, "queues");
        for (size_t i = 0; i < json_object_array_length(queues); i++)
                assert_true(json_object_get_boolean(get(json_object_array_get_idx(queues, i), "paired_by_size")));

        /* Both GPUs were used and both are described. The emulated render
         * node answers libdrm_amdgpu, which names a device its amdgpu.ids
         * lacks (the MI308X's 74A2) "AMD Radeon Graphics", as on a real
         * Debian 12 node (rocm-userspace.md §8). */
        struct json_object *gpus = get(doc, "gpus");
        assert_int_equal(json_object_array_length(gpus), 2);
        for (size_t i = 0; i < 2; i++) {
                struct json_object *g = json_object_array_get_idx(gpus, i);
                assert_string_equal(json_object_get_string(get(g, "gfx")), "gfx942");
                assert_string_equal(json_object_get_string(get(g, "marketing_name_source")), "libdrm");
                assert_string_equal(json_object_get_string(get(g, "marketing_name")), "AMD Radeon Graphics");
        }
        assert_int_equal(json_object_array_length(get(doc, "warnings")), 0);
        json_object_put(doc);
        json_object_put(no_snapshot);
        json_object_put(a.report);
}

/* ROCm 5.2 log (addresses are amd_queue_t) and 5.6-6.1 log (dispatch HWq is
 * the ring base), several queues on one GPU. */
static void test_older_log_formats(void **state)
{
        static const char *const formats[] = { "5.2", "6.0" };
        for (size_t f = 0; f < 2; f++) {
                struct app a = { 0 };
                const char *extra[] = { "--queues", "3", "--gpu", "1", "--ring-packets", "256", NULL };
                app_start(&a, formats[f][0] == '5' ? "clr52" : "clr60", formats[f], false, extra);
                char pid[16];
                snprintf(pid, sizeof(pid), "%d", (int) a.pid);
                const char *argv[] = { queue_finder, "--json", "--snapshot", "--log", a.log, pid, NULL };
                struct json_object *doc = run_json(argv);
                app_stop(&a);
                assert_agrees(find_process(doc, a.pid), a.report, true, true);
                json_object_put(doc);
                json_object_put(a.report);
        }
}

/* An app in its own pid namespace, named by the pid it has there. */
static void test_container_pid(void **state)
{
        struct app a = { 0 };
        const char *extra[] = { "--queues", "1", NULL };
        app_start(&a, "container", "6.2", true, extra);
        assert_int_equal(a.reported_pid, 1);

        char ns[64];
        snprintf(ns, sizeof(ns), "/proc/%d/ns/pid_for_children", (int) a.pid);
        const char *argv[] = { queue_finder, "--json", "--pid-ns", ns, "--log", a.log, "1", NULL };
        struct json_object *doc = run_json(argv);
        struct json_object *procs = get(doc, "processes");
        assert_int_equal(json_object_array_length(procs), 1);
        struct json_object *p = json_object_array_get_idx(procs, 0);
        struct json_object *nspid = get(p, "nspid");
        assert_int_equal(json_object_array_length(nspid), 2);
        assert_int_equal(json_object_get_int(json_object_array_get_idx(nspid, 1)), 1);
        /* The host pid is the one KFD and sysfs use. */
        assert_int_equal(json_object_get_int(get(p, "pid")), json_object_get_int(json_object_array_get_idx(nspid, 0)));
        assert_int_equal(json_object_get_int(get(p, "pid")), a.host_pid);
        /* The log says pid 1; it is the same process and queue. */
        struct json_object *queues = get(p, "queues");
        assert_int_equal(json_object_array_length(queues), 1);
        struct json_object *log = get(json_object_array_get_idx(queues, 0), "log");
        assert_non_null(log);
        assert_int_equal(json_object_get_int(get(log, "pid")), a.host_pid);
        json_object_put(doc);

        const char *wrong[] = { queue_finder, "--pid-ns", ns, "4242", NULL };
        struct cli_output o;
        assert_int_equal(cli_run(wrong, NULL, &o), 1);
        assert_non_null(strstr(o.err, "no process has pid 4242 in pid namespace"));
        cli_output_free(&o);
        app_stop(&a);
        json_object_put(a.report);
}

static int setup(void **state)
{
        test_tmpdir_create("qf-e2e", tmpdir, sizeof(tmpdir));
        return 0;
}

static int teardown(void **state)
{
        return test_tmpdir_remove(tmpdir);
}

int main(int argc, char **argv)
{
        if (argc != 3) {
                fprintf(stderr, "usage: %s QUEUE_FINDER KFDEMU_APP (inside kfdemu-run)\n", argv[0]);
                return 2;
        }
        queue_finder = argv[1];
        kfdemu_app = argv[2];
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_clr_62_all_sources),
                cmocka_unit_test(test_older_log_formats),
                cmocka_unit_test(test_container_pid),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
