/* SPDX-License-Identifier: MIT */
/*
 * gpreemptctl doctor on an emulated node:
 *   test-doctor MODE GPREEMPTCTL GPREEMPTD KFDEMU-APP
 * MODE is the node the test runs in (meson.build): "node" (a healthy
 * two-GPU node), "nohws", "old-kfd", "one-vmid" or "firmware" (GPU0 without
 * debugger firmware, a long preemption timeout). In "node" the checks also
 * meet processes traced by strace, gpreemptd running, a runtime that never
 * enables debugging, and, for what kfdemu cannot set (Yama, lockdown,
 * perf_event_paranoid, old GPUs, ROCm libraries), prepared /proc and /sys
 * trees given through GPREEMPT_PROC_ROOT and GPREEMPT_SYSFS_ROOT.
 */
#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "ctl-runner.h"
#include "node-modes.h"
#include "daemon-harness.h"
#include "emulated-app.h"

static const char *ctl_path, *gpreemptd_path, *app_path;

static const char workloads[] = "[Workload]\nName=serve\nClass=online\nMatchCommandLine=*--rate*\n"
                                "[Workload]\nName=train\nClass=offline\nMatchCommandLine=*--continuous*\n"
                                "[Workload]\nName=legacy\nClass=offline\nMatchCommandLine=*train.py*\n";

struct fixture {
        struct daemon_harness h; /* its directories also when no daemon runs */
        struct emulated_app apps[3];
        pid_t strace;
        char tree[64]; /* a prepared /proc and /sys, "" when none */
        char env_strings[4][256];
        const char *env[5];
        struct ctl_result r;
        uid_t as_uid; /* doctor runs as this user: root unless a test says otherwise */
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        daemon_harness_init(&f->h);
        config_fixture_write(&f->h.config, "gpreemptd.conf", "[Daemon]\nLogLevel=info\nDiscoveryIntervalMs=20\n");
        config_fixture_write(&f->h.config, "workloads.d/50-test.conf", workloads);
        snprintf(f->env_strings[0], sizeof(f->env_strings[0]), "GPREEMPT_RUNTIME_DIR=%s", f->h.runtime_dir);
        snprintf(f->env_strings[1], sizeof(f->env_strings[1]), "GPREEMPT_CONFIG_DIR=%s", f->h.config.dir);
        f->env[0] = f->env_strings[0];
        f->env[1] = f->env_strings[1];
        *state = f;
        return 0;
}

static void remove_tree(const char *path)
{
        char command[128];

        snprintf(command, sizeof(command), "rm -rf '%s'", path);
        assert_int_equal(system(command), 0);
}

static int teardown(void **state)
{
        struct fixture *f = *state;

        if (f->strace > 0) {
                kill(f->strace, SIGKILL);
                waitpid(f->strace, NULL, 0);
        }
        for (size_t i = 0; i < 3; i++)
                emulated_app_stop(&f->apps[i]);
        daemon_harness_cleanup(&f->h);
        if (f->tree[0])
                remove_tree(f->tree);
        free(f);
        return 0;
}

/* Runs gpreemptctl doctor ARGS... and fails the test unless it exits with want_exit (-1: any). */
static struct ctl_result *doctor(struct fixture *f, int want_exit, ...)
{
        const char *args[8] = { "doctor" };
        size_t n = 1;
        va_list ap;

        va_start(ap, want_exit);
        while ((args[n] = va_arg(ap, const char *)) != NULL)
                assert_true(++n < sizeof(args) / sizeof(args[0]));
        va_end(ap);
        ctl_run(ctl_path, f->env, f->as_uid, args, &f->r);
        if (want_exit >= 0 && f->r.exit_code != want_exit)
                fail_msg("gpreemptctl doctor: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", f->r.exit_code, want_exit,
                         f->r.out, f->r.err);
        return &f->r;
}

static void assert_contains(const char *text, const char *part)
{
        if (!strstr(text, part))
                fail_msg("\"%s\" not in:\n%s", part, text);
}

/* doctor --json's array (the caller puts it); every entry has the four keys. */
static struct json_object *doctor_json(struct fixture *f, int want_exit)
{
        struct json_object *a = json_tokener_parse(doctor(f, want_exit, "--json", (const char *)NULL)->out);

        if (!a || !json_object_is_type(a, json_type_array))
                fail_msg("not a JSON array:\n%s", f->r.out);
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                struct json_object *c = json_object_array_get_idx(a, i);

                for (const char *const *key = (const char *const[]){ "check", "status", "found", "advice", NULL }; *key;
                     key++)
                        if (!json_object_object_get_ex(c, *key, NULL))
                                fail_msg("entry %zu lacks \"%s\":\n%s", i, *key, f->r.out);
        }
        return a;
}

/* The check named name (about pid, or gpu_id, when not 0); fails the test when there is none. */
static struct json_object *check_of(struct json_object *a, const char *name, long long about)
{
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                struct json_object *c = json_object_array_get_idx(a, i), *v;
                long long id = 0;

                if (strcmp(json_object_get_string(json_object_object_get(c, "check")), name) != 0)
                        continue;
                if (json_object_object_get_ex(c, "pid", &v) || json_object_object_get_ex(c, "gpu_id", &v))
                        id = json_object_get_int64(v);
                if (!about || id == about)
                        return c;
        }
        fail_msg("no check \"%s\" (%lld) in:\n%s", name, about,
                 json_object_to_json_string_ext(a, JSON_C_TO_STRING_PRETTY));
        return NULL;
}

/* Asserts the check's status and that its finding (and advice, when given) say what they must. */
static void assert_check(struct json_object *a, const char *name, long long about, const char *status,
                         const char *found, const char *advice)
{
        struct json_object *c = check_of(a, name, about);
        const char *s = json_object_get_string(json_object_object_get(c, "status"));
        const char *fo = json_object_get_string(json_object_object_get(c, "found"));
        const char *ad = json_object_get_string(json_object_object_get(c, "advice"));

        if (strcmp(s, status) != 0)
                fail_msg("check %s (%lld): status %s, want %s: %s", name, about, s, status, fo);
        if (found)
                assert_contains(fo, found);
        if (advice) {
                if (!ad)
                        fail_msg("check %s (%lld) has no advice: %s", name, about, fo);
                assert_contains(ad, advice);
        }
}

/* Exit 2 exactly when a check failed (the machine's own checks may: see below). */
static void assert_exit_matches(const struct fixture *f, struct json_object *a)
{
        bool failed = false;

        for (size_t i = 0; i < json_object_array_length(a); i++)
                failed |= strcmp(json_object_get_string(json_object_object_get(json_object_array_get_idx(a, i),
                                                                                "status")),
                                 "failed") == 0;
        assert_int_equal(f->r.exit_code, failed ? 2 : 0);
}

/* The checks whose result depends on the machine the test runs on: there, with a status. */
static void assert_host_checks_present(struct json_object *a)
{
        static const char *const names[] = { "ptrace-scope", "capabilities", "lockdown", "perf-paranoid",
                                             "breakpoint" };

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                const char *s = json_object_get_string(json_object_object_get(check_of(a, names[i], 0), "status"));

                assert_true(strcmp(s, "ok") == 0 || strcmp(s, "warning") == 0 || strcmp(s, "failed") == 0);
        }
}

static const char *pid_string(pid_t pid)
{
        static char buf[4][16];
        static int next;
        char *b = buf[next++ % 4];

        snprintf(b, 16, "%d", (int)pid);
        return b;
}

static void test_healthy_node_without_daemon(void **state)
{
        struct fixture *f = *state;
        /* the machine's Yama, lockdown or perf settings may fail this node */
        struct json_object *a = doctor_json(f, -1);
        bool host_failed;

        assert_exit_matches(f, a);
        host_failed = f->r.exit_code != 0;
        assert_check(a, "kfd-device", 0, "ok", "/dev/kfd opens", NULL);
        assert_check(a, "kfd-version", 0, "ok", "KFD interface 1.13", NULL);
        assert_check(a, "sched-policy", 0, "ok", "sched_policy=0", NULL);
        assert_check(a, "cwsr", 0, "ok", "cwsr_enable=1", NULL);
        assert_check(a, "preemption-timeout", 0, "ok", "queue_preemption_timeout_ms=9000", NULL);
        assert_check(a, "debugfs", 0, "ok", "kfd/mqds can be read", NULL);
        assert_check(a, "configuration", 0, "ok", "1 online and 2 offline workloads", NULL);
        assert_check(a, "daemon", 0, "warning", "gpreemptd is not running", "systemctl enable --now gpreemptd");
        assert_check(a, "processes", 0, "ok", "no other process uses the GPU", NULL);
        assert_host_checks_present(a);
        /* one check per GPU, each about its gpu_id */
        {
                size_t gpus = 0;

                for (size_t i = 0; i < json_object_array_length(a); i++) {
                        struct json_object *c = json_object_array_get_idx(a, i);

                        if (strcmp(json_object_get_string(json_object_object_get(c, "check")), "gpu") != 0)
                                continue;
                        gpus++;
                        assert_true(json_object_get_int64(json_object_object_get(c, "gpu_id")) > 0);
                        assert_string_equal(json_object_get_string(json_object_object_get(c, "status")), "ok");
                        assert_contains(json_object_get_string(json_object_object_get(c, "found")), "per VMID");
                }
                assert_int_equal(gpus, 2);
        }
        json_object_put(a);

        /* the same as text, with a count at the end */
        doctor(f, host_failed ? 2 : 0, (const char *)NULL);
        assert_contains(f->r.out, "ok       kfd-version");
        assert_contains(f->r.out, "warning  daemon");
        assert_contains(f->r.out, "-> start it with systemctl enable --now gpreemptd.socket");
        if (!host_failed)
                assert_contains(f->r.out, " 0 failed.");
}

/* A user who may not read the root-only configuration cannot judge it: a warning that says so, not "not valid". */
static void test_configuration_unreadable_by_user(void **state)
{
        struct fixture *f = *state;
        struct passwd *nobody = getpwnam("nobody");
        struct json_object *a;
        char path[256];

        snprintf(path, sizeof(path), "%s/gpreemptd.conf", f->h.config.dir);
        assert_int_equal(chmod(f->h.config.dir, 0711), 0);
        assert_int_equal(chmod(path, 0600), 0);
        f->as_uid = nobody ? nobody->pw_uid : 65534;
        a = doctor_json(f, -1);
        assert_check(a, "configuration", 0, "warning", "this user may not read", "as root");
        assert_contains(json_object_get_string(json_object_object_get(check_of(a, "configuration", 0), "found")),
                        "gpreemptd.conf, which gpreemptd reads as root");
        json_object_put(a);
        doctor(f, -1, (const char *)NULL);
        assert_contains(f->r.out, "warning  configuration");
        f->as_uid = 0;
        assert_int_equal(chmod(path, 0644), 0);
}

static void test_process_traced_by_strace(void **state)
{
        static const char *const offline[] = { "--continuous", "--queues", "1", NULL };
        static const char *const online[] = { "--rate", "50", NULL };
        struct fixture *f = *state;
        struct json_object *a;
        char *argv[] = { (char *)"/usr/bin/strace", (char *)"-f", (char *)"-o", (char *)"/dev/null", (char *)"-p",
                         (char *)pid_string(0), NULL };

        emulated_app_start(&f->apps[0], app_path, offline);
        emulated_app_start(&f->apps[1], app_path, online);
        argv[5] = (char *)pid_string(f->apps[0].pid);
        f->strace = fork();
        assert_true(f->strace >= 0);
        if (f->strace == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                execv(argv[0], argv);
                _exit(127);
        }
        for (int i = 0; i < 500; i++) {
                char path[64], status[4096];
                int fd;
                ssize_t n;

                snprintf(path, sizeof(path), "/proc/%d/status", (int)f->apps[0].pid);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                n = fd >= 0 ? read(fd, status, sizeof(status) - 1) : -1;
                if (fd >= 0)
                        close(fd);
                if (n > 0 && (status[n] = '\0', !strstr(status, "TracerPid:\t0\n")))
                        break;
                usleep(10000);
        }

        a = doctor_json(f, 2);
        assert_check(a, "process", f->apps[0].pid, "failed", "traced by strace", "stop strace");
        assert_check(a, "process", f->apps[0].pid, "failed", "(offline, workload train, by the configuration)", NULL);
        assert_check(a, "process", f->apps[1].pid, "ok", "(online, workload serve", NULL);
        /* kfdemu-app's runtime is linked in: no ROCm library says which it is */
        assert_check(a, "process", f->apps[1].pid, "ok", "never suspends it", NULL);
        json_object_put(a);

        doctor(f, 2, (const char *)NULL);
        assert_contains(f->r.out, "failed   process ");
        assert_contains(f->r.out, "not gpreemptd: a process has one tracer");
        assert_contains(f->r.out, "failed.\n");
}

/* gpreemptd's Status entry of pid has "attached": true, and the queues it read (doctor tells a process still
 * starting, without queues, from one whose runtime never enables debugging). */
static bool daemon_attached(struct fixture *f, pid_t pid)
{
        struct json_object *reply = NULL, *processes, *v;
        char *error = NULL;
        bool attached = false;

        if (daemon_harness_call(&f->h, "io.gpreempt.Status", NULL, &reply, &error) < 0 || error) {
                free(error);
                json_object_put(reply);
                return false;
        }
        if (json_object_object_get_ex(reply, "processes", &processes))
                for (size_t i = 0; i < json_object_array_length(processes); i++) {
                        struct json_object *p = json_object_array_get_idx(processes, i);

                        if (json_object_object_get_ex(p, "pid", &v) && json_object_get_int(v) == pid)
                                attached = json_object_get_boolean(json_object_object_get(p, "attached")) &&
                                           json_object_get_int(json_object_object_get(p, "queues")) > 0;
                }
        json_object_put(reply);
        return attached;
}

static void test_daemon_running_and_a_runtime_without_debugging(void **state)
{
        static const char *const enabled[] = { "--continuous", "--queues", "1", NULL };
        static const char *const disabled[] = { "--continuous", "--queues", "1", "--no-runtime-enable", NULL };
        struct fixture *f = *state;
        struct json_object *a;

        daemon_harness_start(&f->h, gpreemptd_path, NULL);
        if (!daemon_harness_wait_notify(&f->h, "READY=1", 10000))
                fail_msg("no READY=1; stderr:\n%s", daemon_harness_log(&f->h));
        emulated_app_start(&f->apps[0], app_path, enabled);
        emulated_app_start(&f->apps[1], app_path, disabled);
        for (int i = 0; i < 500 && !(daemon_attached(f, f->apps[0].pid) && daemon_attached(f, f->apps[1].pid)); i++)
                usleep(10000);

        a = doctor_json(f, 2);
        assert_check(a, "daemon", 0, "ok", "is running and answers", NULL);
        assert_check(a, "daemon", 0, "ok", " 2 with a debug session", NULL);
        assert_check(a, "process", f->h.pid, "ok", "gpreemptd itself", NULL);
        assert_check(a, "process", f->apps[0].pid, "ok", "traced by gpreemptd", NULL);
        assert_check(a, "process", f->apps[0].pid, "ok", "its ROCm runtime enabled debugging", NULL);
        assert_check(a, "process", f->apps[1].pid, "failed", "has not enabled debugging (gpreemptd's session says disabled)",
                     "ROCm 5.7 or newer");
        json_object_put(a);

        /* gone again: a warning, and the processes are judged without it */
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        a = doctor_json(f, -1);
        assert_exit_matches(f, a);
        assert_check(a, "daemon", 0, "warning", "not running", NULL);
        assert_check(a, "process", f->apps[1].pid, "warning", "its ROCm runtime is unknown", "gpreemptctl status");
        json_object_put(a);
}

/* A socket file nobody listens on, as a daemon killed by SIGKILL leaves: daemon-client.c's sentence, as a
 * warning, and nothing of it on stderr. */
static void test_stale_daemon_socket(void **state)
{
        struct fixture *f = *state;
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        struct json_object *a;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        assert_true(mkdir(f->h.runtime_dir, 0755) == 0 || errno == EEXIST);
        assert_true(strlen(f->h.socket_path) < sizeof(addr.sun_path));
        memcpy(addr.sun_path, f->h.socket_path, strlen(f->h.socket_path) + 1);
        assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
        close(fd);

        a = doctor_json(f, -1);
        assert_check(a, "daemon", 0, "warning", "is gpreemptd running?", NULL);
        assert_int_equal(f->r.err[0], '\0');
        json_object_put(a);
}

/*
 * daemon-client.c's sentence whole, however long: a runtime directory named by a path longer than PATH_MAX
 * (stat() and connect() both refuse it, ENAMETOOLONG) is quoted in full, the reason after it included.
 */
static void test_long_daemon_sentence(void **state)
{
        static const char reason[] = ": File name too long";
        struct fixture *f = *state;
        const size_t slashes = 4200;
        char *env = NULL;
        struct json_object *a;
        const char *found;

        assert_true(asprintf(&env, "GPREEMPT_RUNTIME_DIR=%*s%s", (int)slashes, "", f->h.runtime_dir) > 0);
        memset(env + strlen("GPREEMPT_RUNTIME_DIR="), '/', slashes);
        f->env[0] = env;

        a = doctor_json(f, -1);
        assert_check(a, "daemon", 0, "warning", "cannot connect to //", NULL);
        found = json_object_get_string(json_object_object_get(check_of(a, "daemon", 0), "found"));
        if (strlen(found) < strlen(reason) || strcmp(found + strlen(found) - strlen(reason), reason) != 0)
                fail_msg("the finding (%zu bytes) does not end in \"%s\": ...%s", strlen(found), reason,
                         found + (strlen(found) > 80 ? strlen(found) - 80 : 0));
        assert_true(strlen(found) > slashes);
        assert_non_null(strstr(found, "/io.gpreempt: "));
        assert_int_equal(f->r.err[0], '\0');
        json_object_put(a);
        f->env[0] = f->env_strings[0];
        free(env);
}

static void write_file(const char *root, const char *relpath, const char *text, size_t len)
{
        char path[512], command[600];
        int fd;

        snprintf(path, sizeof(path), "%s/%s", root, relpath);
        snprintf(command, sizeof(command), "mkdir -p \"$(dirname '%s')\"", path);
        assert_int_equal(system(command), 0);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, len), (ssize_t)len);
        close(fd);
}

#define WRITE(root, relpath, text) write_file(root, relpath, text, sizeof(text) - 1)

static void make_dir(const char *root, const char *relpath)
{
        char command[512];

        snprintf(command, sizeof(command), "mkdir -p '%s/%s'", root, relpath);
        assert_int_equal(system(command), 0);
}

static void link_exe(const char *root, int pid, const char *target)
{
        char path[256];

        snprintf(path, sizeof(path), "%s/proc/%d/exe", root, pid);
        assert_int_equal(symlink(target, path), 0);
}

/* A GPU process of the prepared tree: its KFD directory and its /proc files. */
static void fake_process(const char *root, int pid, const char *cmdline, size_t cmdline_len, int tracer,
                         const char *maps)
{
        char rel[128], status[256];
        int n;

        snprintf(rel, sizeof(rel), "sys/class/kfd/kfd/proc/%d", pid);
        make_dir(root, rel);
        n = snprintf(status, sizeof(status), "Name:\tpython3\nState:\tS (sleeping)\nTracerPid:\t%d\nUid:\t0\t0\t0\t0\n",
                     tracer);
        snprintf(rel, sizeof(rel), "proc/%d/status", pid);
        write_file(root, rel, status, (size_t)n);
        snprintf(rel, sizeof(rel), "proc/%d/cmdline", pid);
        write_file(root, rel, cmdline, cmdline_len);
        snprintf(rel, sizeof(rel), "proc/%d/cgroup", pid);
        write_file(root, rel, "0::/\n", 5);
        /* every live process has one, if empty (a process can clear it) */
        snprintf(rel, sizeof(rel), "proc/%d/environ", pid);
        write_file(root, rel, "", 0);
        snprintf(rel, sizeof(rel), "proc/%d/maps", pid);
        write_file(root, rel, maps, strlen(maps));
        link_exe(root, pid, "/usr/bin/python3");
}

#define CMDLINE(s) s, sizeof(s) - 1

/*
 * What kfdemu cannot set: a node whose Yama forbids attaching, under
 * lockdown without debugfs, with paranoid perf, cwsr off, a long
 * preemption timeout, GPUs of every debugging kind, and processes whose
 * ROCm libraries say their version. /dev/kfd is still kfdemu's.
 */
static void test_prepared_trees(void **state)
{
        struct fixture *f = *state;
        struct json_object *a;
        const char *t;

        snprintf(f->tree, sizeof(f->tree), "/tmp/test-doctor-%d", (int)getpid());
        t = f->tree;
        WRITE(t, "proc/sys/kernel/yama/ptrace_scope", "3\n");
        WRITE(t, "proc/sys/kernel/perf_event_paranoid", "4\n");
        WRITE(t, "sys/kernel/security/lockdown", "none integrity [confidentiality]\n");
        make_dir(t, "sys/kernel/debug");
        WRITE(t, "sys/module/amdgpu/parameters/sched_policy", "1\n");
        WRITE(t, "sys/module/amdgpu/parameters/cwsr_enable", "0\n");
        WRITE(t, "sys/module/amdgpu/parameters/queue_preemption_timeout_ms", "20000\n");
        /* a CPU node, then gfx803, gfx90a, gfx1030, gfx1100, and a gfx942 without debugger firmware */
        WRITE(t, "sys/class/kfd/kfd/topology/nodes/0/gpu_id", "0\n");
        WRITE(t, "sys/class/kfd/kfd/topology/nodes/1/gpu_id", "1001\n");
        WRITE(t, "sys/class/kfd/kfd/topology/nodes/1/properties", "gfx_target_version 80003\ncapability 0\n");
        WRITE(t, "sys/class/kfd/kfd/topology/nodes/2/gpu_id", "1002\n");
        WRITE(t, "sys/class/kfd/kfd/topology/nodes/2/properties", "gfx_target_version 90010\ncapability 536903680\n");
        WRITE(t, "sys/class/kfd/kfd/topology/nodes/3/gpu_id", "1003\n");
        WRITE(t, "sys/class/kfd/kfd/topology/nodes/3/properties", "gfx_target_version 100300\ncapability 536903680\n");
        WRITE(t, "sys/class/kfd/kfd/topology/nodes/4/gpu_id", "1004\n");
        WRITE(t, "sys/class/kfd/kfd/topology/nodes/4/properties", "gfx_target_version 110000\ncapability 536903680\n");
        WRITE(t, "sys/class/kfd/kfd/topology/nodes/5/gpu_id", "1005\n");
        WRITE(t, "sys/class/kfd/kfd/topology/nodes/5/name", "MI300X\n");
        WRITE(t, "sys/class/kfd/kfd/topology/nodes/5/properties", "gfx_target_version 90402\ncapability 32768\n");
        /* offline by the configuration: ROCm 5.2 traced by rocgdb; ROCm 6.2 (AMD's ROCr name); ROCm 5.6 (HIP) */
        fake_process(t, 4000, CMDLINE("python3\0train.py\0"), 4001,
                     "7f0000000000-7f0000100000 r-xp 00000000 08:01 42    /usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.50203\n");
        WRITE(t, "proc/4001/comm", "rocgdb\n");
        make_dir(t, "proc/4001");
        link_exe(t, 4001, "/usr/bin/rocgdb");
        fake_process(t, 4002, CMDLINE("python3\0train.py\0--epochs\0""2\0"), 0,
                     "55d0c0000000-55d0c0001000 r--p 00000000 08:01 7     /usr/bin/python3.11\n"
                     "7f0000000000-7f0000100000 r-xp 00000000 08:01 43    /opt/rocm-6.2.0/lib/libhsa-runtime64.so.1.14.60200\n");
        fake_process(t, 4003, CMDLINE("python3\0train.py\0"), 0,
                     "7f0000000000-7f0000100000 r-xp 00000000 08:01 44    /opt/rocm/lib/libamdhip64.so.5.6.31061 (deleted)\n");
        snprintf(f->env_strings[2], sizeof(f->env_strings[2]), "GPREEMPT_SYSFS_ROOT=%s/sys", t);
        snprintf(f->env_strings[3], sizeof(f->env_strings[3]), "GPREEMPT_PROC_ROOT=%s/proc", t);
        f->env[2] = f->env_strings[2];
        f->env[3] = f->env_strings[3];

        a = doctor_json(f, 2);
        assert_check(a, "kfd-device", 0, "ok", NULL, NULL);
        assert_check(a, "sched-policy", 0, "ok", "sched_policy=1", NULL);
        assert_check(a, "cwsr", 0, "failed", "cwsr_enable=0", "cwsr_enable=1");
        assert_check(a, "preemption-timeout", 0, "warning", "=20000", "below 10000 ms");
        assert_check(a, "gpu", 1001, "failed", "older than GC 9", NULL);
        assert_check(a, "gpu", 1002, "ok", "gfx90a (topology node 2) debugs per VMID", NULL);
        assert_check(a, "gpu", 1003, "warning", "gfx1030 (topology node 3) has one debug VMID", "at most one offline");
        assert_check(a, "gpu", 1004, "warning", "about half the CUs", NULL);
        assert_check(a, "gpu", 1005, "failed", "MI300X (gfx942, topology node 5): its firmware lacks debugger support",
                     "firmware");
        assert_check(a, "ptrace-scope", 0, "failed", "ptrace_scope=3", "reboot");
        assert_check(a, "perf-paranoid", 0, "ok", "perf_event_paranoid=4: breakpoints need CAP_PERFMON", NULL);
        assert_check(a, "lockdown", 0, "warning", "[confidentiality]", "boot without it");
        assert_check(a, "debugfs", 0, "failed", "debugfs is not mounted", "mount -t debugfs");
        assert_check(a, "process", 4000, "failed", "traced by rocgdb (pid 4001), not gpreemptd", "stop rocgdb");
        assert_check(a, "process", 4000, "failed", "it runs ROCm 5.2 (/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.50203)",
                     NULL);
        assert_check(a, "process", 4002, "ok", "it runs ROCm 6.2 (/opt/rocm-6.2.0/lib/libhsa-runtime64.so.1.14.60200)",
                     NULL);
        assert_check(a, "process", 4003, "failed", "ROCm 5.6", "ROCm 5.7 or newer");
        json_object_put(a);

        /* a broken value is said, not taken for a number */
        WRITE(t, "sys/module/amdgpu/parameters/sched_policy", "HWS\n");
        WRITE(t, "proc/sys/kernel/yama/ptrace_scope", "1\n");
        a = doctor_json(f, 2);
        assert_check(a, "sched-policy", 0, "warning", "cannot read amdgpu.sched_policy", NULL);
        assert_check(a, "ptrace-scope", 0, "ok", "ptrace_scope=1", NULL);
        json_object_put(a);
}

static void test_usage(void **state)
{
        struct fixture *f = *state;
        struct json_object *o;

        assert_contains(doctor(f, 0, "--help", (const char *)NULL)->out, "Usage: gpreemptctl doctor [--json]");
        assert_contains(doctor(f, 1, "extra", (const char *)NULL)->err, "doctor takes no arguments");
        o = json_tokener_parse(doctor(f, 1, "--bogus", "--json", (const char *)NULL)->out);
        assert_non_null(o);
        assert_contains(json_object_get_string(json_object_object_get(o, "error")), "unknown option '--bogus'");
        json_object_put(o);
        ctl_run(ctl_path, f->env, 0, (const char *const[]){ "--help", NULL }, &f->r);
        assert_int_equal(f->r.exit_code, 0);
        assert_contains(f->r.out, "doctor   [--json]");
        /* a prefix is the verb */
        ctl_run(ctl_path, f->env, 0, (const char *const[]){ "doc", "--help", NULL }, &f->r);
        assert_contains(f->r.out, "Usage: gpreemptctl doctor");
}

static void test_nohws(void **state)
{
        struct json_object *a = doctor_json(*state, 2);

        assert_check(a, "sched-policy", 0, "failed", "sched_policy=2", "sched_policy=0");
        assert_check(a, "kfd-version", 0, "ok", NULL, NULL);
        json_object_put(a);
}

static void test_old_kfd(void **state)
{
        struct json_object *a = doctor_json(*state, 2);

        assert_check(a, "kfd-device", 0, "ok", "/dev/kfd opens", NULL);
        assert_check(a, "kfd-version", 0, "failed", "version 1.11, older than 1.13", "Linux 6.5 or newer");
        json_object_put(a);
}

/* GPU0 is the first GPU node of the topology. */
static long long first_gpu_id(struct json_object *a)
{
        return json_object_get_int64(json_object_object_get(check_of(a, "gpu", 0), "gpu_id"));
}

static void test_one_vmid(void **state)
{
        struct json_object *a = doctor_json(*state, -1);
        long long gpu0 = first_gpu_id(a);

        assert_exit_matches(*state, a);
        assert_check(a, "gpu", 0, "warning", NULL, NULL);

        assert_check(a, "gpu", gpu0, "warning", "(gfx908, topology node 1) has one debug VMID", "at most one offline");
        json_object_put(a);
}

static void test_firmware(void **state)
{
        struct json_object *a = doctor_json(*state, 2);
        long long gpu0 = first_gpu_id(a);

        assert_check(a, "gpu", gpu0, "failed", "firmware lacks debugger support", NULL);
        assert_check(a, "preemption-timeout", 0, "warning", "queue_preemption_timeout_ms=15000", "WatchdogSec=");
        json_object_put(a);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(int argc, char **argv)
{
        const struct CMUnitTest node_tests[] = {
                T(test_healthy_node_without_daemon),
                T(test_configuration_unreadable_by_user),
                T(test_process_traced_by_strace),
                T(test_daemon_running_and_a_runtime_without_debugging),
                T(test_stale_daemon_socket),
                T(test_long_daemon_sentence),
                T(test_prepared_trees),
                T(test_usage),
        };
        const struct CMUnitTest nohws_tests[] = { T(test_nohws) };
        const struct CMUnitTest old_kfd_tests[] = { T(test_old_kfd) };
        const struct CMUnitTest one_vmid_tests[] = { T(test_one_vmid) };
        const struct CMUnitTest firmware_tests[] = { T(test_firmware) };

        const struct node_mode modes[] = {
                NODE_MODE("node", node_tests),
                NODE_MODE("nohws", nohws_tests),
                NODE_MODE("old-kfd", old_kfd_tests),
                NODE_MODE("one-vmid", one_vmid_tests),
                NODE_MODE("firmware", firmware_tests),
        };

        if (argc != 5) {
                fprintf(stderr, "usage: %s node|nohws|old-kfd|one-vmid|firmware GPREEMPTCTL GPREEMPTD KFDEMU-APP\n",
                        argv[0]);
                return 2;
        }
        ctl_path = argv[2];
        gpreemptd_path = argv[3];
        app_path = argv[4];
        return node_mode_run(argv[1], modes, sizeof(modes) / sizeof(modes[0]));
}
