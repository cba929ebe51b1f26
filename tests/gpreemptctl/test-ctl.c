/* SPDX-License-Identifier: MIT */
/*
 * gpreemptctl's daemon verbs against the real gpreemptd on an emulated node
 * (run under kfdemu-run --gpus 1): what each verb prints and exits with,
 * its errors, and callers the daemon must refuse. Where a daemon that
 * misbehaves is wanted (stuck, answering garbage), a socket of the test's
 * own stands in its place.
 *
 *   test-ctl PATH-TO-GPREEMPTCTL PATH-TO-GPREEMPTD PATH-TO-KFDEMU-APP
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <grp.h>
#include <json.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "ctl-runner.h"
#include "daemon-harness.h"
#include "emulated-app.h"
#include "varlink-server.h"

#define ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))

static const char *ctl_path, *gpreemptd_path, *app_path;

static const char workloads[] = "[Workload]\nName=serve\nClass=online\nMatchCommandLine=*--rate*\n"
                                "[Workload]\nName=train\nClass=offline\nMatchCommandLine=*--continuous*\n";

struct fixture {
        struct daemon_harness h;
        struct emulated_app offline;
        pid_t others[4]; /* other processes a test started, killed at teardown */
        char runtime_env[192], config_env[128];
        const char *env[3];
        struct ctl_result r;
        char pod_cgroup_top[PATH_MAX]; /* a pod cgroup made by test_pods_by_name: removed at teardown */
};

/* Removes a tree of empty cgroups, innermost first (rmdir is how a cgroup is removed). */
static void remove_cgroup_tree(const char *top)
{
        char path[PATH_MAX];
        DIR *d;
        struct dirent *de;

        d = opendir(top);
        if (!d)
                return;
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && de->d_name[0] != '.') {
                        snprintf(path, sizeof(path), "%s/%s", top, de->d_name);
                        remove_cgroup_tree(path);
                }
        closedir(d);
        rmdir(top);
}

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
        for (size_t i = 0; i < ELEMENTS(f->others); i++)
                if (f->others[i] > 0) {
                        kill(f->others[i], SIGKILL);
                        waitpid(f->others[i], NULL, 0);
                }
        if (f->pod_cgroup_top[0])
                remove_cgroup_tree(f->pod_cgroup_top);
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

static void assert_lacks(const char *text, const char *part)
{
        if (strstr(text, part))
                fail_msg("\"%s\" in:\n%s", part, text);
}

/* stdout parsed as JSON (the caller puts it). */
static struct json_object *json_out(const struct ctl_result *r)
{
        struct json_object *o = json_tokener_parse(r->out);

        if (!o)
                fail_msg("not JSON:\n%s", r->out);
        return o;
}

static uid_t nobody_uid(void)
{
        struct passwd *nobody = getpwnam("nobody");

        return nobody ? nobody->pw_uid : 65534;
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

/*
 * The labels of the offline app's gpreempt_suspensions_total series, as
 * `top --json` gives the Metrics reply (the caller owns them); NULL if the
 * series is not there yet (its queues not seen on a GPU).
 */
static struct json_object *offline_series_labels(struct fixture *f)
{
        struct json_object *o = json_out(ctl(f, 0, "top", "--json", "--iterations", "1")), *found = NULL;
        struct json_object *families = json_object_object_get(o, "metrics");

        for (size_t i = 0; i < json_object_array_length(families); i++) {
                struct json_object *family = json_object_array_get_idx(families, i);
                struct json_object *samples = json_object_object_get(family, "samples");

                if (strcmp(json_object_get_string(json_object_object_get(family, "name")), "gpreempt_suspensions_total"))
                        continue;
                for (size_t j = 0; j < json_object_array_length(samples); j++) {
                        struct json_object *labels = json_object_object_get(json_object_array_get_idx(samples, j),
                                                                            "labels");

                        if (strcmp(json_object_get_string(json_object_object_get(labels, "class")), "offline") == 0)
                                found = json_object_get(labels);
                }
        }
        json_object_put(o);
        return found;
}

static struct json_object *wait_offline_series_labels(struct fixture *f)
{
        struct json_object *labels = NULL;

        for (int i = 0; i < 500 && !(labels = offline_series_labels(f)); i++)
                usleep(10000);
        if (!labels)
                fail_msg("the offline app's series never appeared; daemon log:\n%s", daemon_harness_log(&f->h));
        return labels;
}

static const char *label_value(struct json_object *labels, const char *name)
{
        struct json_object *v;

        return json_object_object_get_ex(labels, name, &v) ? json_object_get_string(v) : NULL;
}

static void start_daemon_alone(struct fixture *f)
{
        daemon_harness_start(&f->h, gpreemptd_path, NULL);
        if (!daemon_harness_wait_notify(&f->h, "READY=1", 10000))
                fail_msg("no READY=1; stderr:\n%s", daemon_harness_log(&f->h));
}

/* The offline app, attached by the daemon started already. */
static void start_offline(struct fixture *f)
{
        static const char *const offline[] = { "--continuous", "--gpu", "0", "--kernel-us", "2000", NULL };
        struct json_object *p = NULL;

        /* a Slurm task as slurmd starts one without job cgroups (proctrack/linuxproc): the daemon shows its job */
        setenv("SLURM_JOB_ID", "77", 1);
        setenv("SLURM_JOB_NAME", "resnet", 1);
        emulated_app_start(&f->offline, app_path, offline);
        unsetenv("SLURM_JOB_ID");
        unsetenv("SLURM_JOB_NAME");
        for (int i = 0; i < 500 && !(p && get_bool(p, "attached")); i++) {
                json_object_put(p);
                usleep(10000);
                p = status_process(f, f->offline.pid);
        }
        if (!p || !get_bool(p, "attached"))
                fail_msg("the offline app never attached; daemon log:\n%s", daemon_harness_log(&f->h));
        json_object_put(p);
}

static void start(struct fixture *f)
{
        start_daemon_alone(f);
        start_offline(f);
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
        static const char *const verbs[] = { "status", "suspend", "resume", "register", "unregister", "reload",
                                             "top", "verify-config" };
        struct fixture *f = *state;
        struct json_object *o;

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
        /* getopt_long takes --js for --json: the usage error is JSON then too; the argument, printed inert */
        o = json_out(ctl(f, 1, "suspend", "\033[2J\xff", "--js"));
        assert_string_equal(json_object_get_string(json_object_object_get(o, "error")),
                            "'\\x1b[2J\\xff' is not a process id.");
        json_object_put(o);
        assert_lacks(f->r.err, "\033");
}

static void test_verify_config_without_daemon(void **state)
{
        struct fixture *f = *state;
        struct json_object *o;
        char pid[16], path[256];

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

        /* a user who may not read a file cannot judge it: that is said, rather than "not valid" */
        snprintf(path, sizeof(path), "%s/gpreemptd.conf", f->h.config.dir);
        assert_int_equal(chmod(f->h.config.dir, 0711), 0);
        assert_int_equal(chmod(path, 0600), 0);
        assert_contains(ctl_as(f, nobody_uid(), 2, "verify-config", (const char *)NULL)->err,
                        "this user may not read");
        assert_contains(f->r.err, "gpreemptd.conf, which gpreemptd reads as root");
        assert_lacks(f->r.err, "not valid");
        assert_int_equal(chmod(path, 0644), 0);
        /* a directory that does not exist is valid as gpreemptd sees it, with a note */
        assert_contains(ctl(f, 0, "verify-config", "--config-dir", "/nonexistent/gpreempt")->err,
                        "/nonexistent/gpreempt does not exist");
        assert_contains(ctl(f, 1, "verify-config", "--config-dir", "")->err, "needs a directory");

        /* valid, but anyone can claim it: a warning, and success */
        config_fixture_write(&f->h.config, "workloads.d/55-label.conf",
                             "[Workload]\nName=label\nClass=online\nMatchEnvironment=GPREEMPT_CLASS=online\n"
                             "[Workload]\nName=label-of-ml\nClass=online\nMatchEnvironment=GPREEMPT_CLASS=online\n"
                             "MatchUser=0\n");
        assert_contains(ctl(f, 0, "verify-config")->err, "55-label.conf:1: workload label is Class=online on "
                                                        "MatchEnvironment= alone");
        assert_lacks(f->r.err, "label-of-ml");
        o = json_out(ctl(f, 0, "verify-config", "--json"));
        assert_int_equal(json_object_array_length(json_object_object_get(o, "warnings")), 1);
        json_object_put(o);
        snprintf(path, sizeof(path), "%s/workloads.d/55-label.conf", f->h.config.dir);
        assert_int_equal(unlink(path), 0);

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
        assert_contains(f->r.out, "resnet (job 77)");
        p = status_process(f, f->offline.pid);
        o = json_object_object_get(p, "cluster");
        assert_string_equal(json_object_get_string(json_object_object_get(o, "kind")), "slurm");
        assert_string_equal(json_object_get_string(json_object_object_get(o, "id")), "77");
        assert_string_equal(json_object_get_string(json_object_object_get(o, "name")), "resnet");
        json_object_put(p);
        /* its metrics are the job's */
        p = wait_offline_series_labels(f);
        assert_string_equal(label_value(p, "slurm_job"), "77");
        assert_string_equal(label_value(p, "slurm_job_name"), "resnet");
        assert_null(label_value(p, "kubernetes_pod_uid"));
        json_object_put(p);

        assert_contains(ctl(f, 0, "suspend", pid)->out, "held suspended");
        /* answered once the suspension is made: Status shows it at once */
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
        assert_contains(ctl(f, 2, "resume", pid)->err, "is not held");

        assert_contains(ctl(f, 0, "register", "--online", pid)->out, "registered as online");
        assert_contains(ctl(f, 2, "suspend", pid)->err, "not an offline workload");
        o = json_out(ctl(f, 2, "suspend", pid, "--json"));
        assert_string_equal(json_object_get_string(json_object_object_get(o, "varlink_error")),
                            "io.gpreempt.NotOffline");
        json_object_put(o);
        assert_contains(ctl(f, 0, "unregister", pid)->out, "by the configuration again");
        assert_contains(ctl(f, 2, "unregister", pid)->err, "has no registration of its own");

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

        /* reload: a broken drop-in is refused with its problem, and the configuration in effect stays */
        assert_contains(ctl(f, 0, "reload")->out, "reloaded");
        config_fixture_write(&f->h.config, "workloads.d/60-bad.conf", "[Workload]\nName=x\nClass=sometimes\n");
        assert_contains(ctl(f, 2, "reload")->err, "refused the configuration on disk and keeps the one in effect");
        assert_contains(f->r.err, "60-bad.conf");
        o = json_out(ctl(f, 2, "reload", "--json"));
        assert_string_equal(json_object_get_string(json_object_object_get(o, "varlink_error")),
                            "io.gpreempt.InvalidConfiguration");
        json_object_put(o);
        assert_contains(ctl(f, 0, "status")->out, "train");
        assert_contains(ctl(f, 1, "reload", "now")->err, "no arguments");

        /* the daemon going away mid-session is explained too */
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        assert_contains(ctl(f, 2, "status")->err, "is gpreemptd running?");
}

/*
 * Where this machine lets a process be moved into a cgroup tree of the
 * test's making: the cgroup2 hierarchy, or on a hybrid host the name=systemd
 * one (the kubelet's systemd driver used it on cgroup v1 nodes:
 * kontena/pharos-cluster#440). The mount point in ret_mount, the line's
 * prefix in /proc/<pid>/cgroup in ret_prefix.
 */
static bool find_movable_hierarchy(char ret_mount[static PATH_MAX], const char **ret_prefix)
{
        FILE *mi = fopen("/proc/self/mountinfo", "re");
        char line[1024], mount[PATH_MAX], fstype[64], options[512];
        bool found = false;

        assert_non_null(mi);
        while (fgets(line, sizeof(line), mi)) {
                const char *sep = strstr(line, " - ");

                if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mount) != 1 ||
                    sscanf(sep + 3, "%63s %*s %511s", fstype, options) != 2)
                        continue;
                if (strcmp(fstype, "cgroup2") == 0) {
                        strcpy(ret_mount, mount);
                        *ret_prefix = "0::";
                        found = true;
                        break;
                }
                if (strcmp(fstype, "cgroup") == 0 && strstr(options, "name=systemd")) {
                        strcpy(ret_mount, mount);
                        *ret_prefix = ":name=systemd:";
                        found = true; /* keep looking: cgroup2, when there is one, is what kubelets use now */
                }
        }
        fclose(mi);
        return found;
}

/* This process's cgroup in the hierarchy whose /proc/self/cgroup lines contain prefix. */
static void own_cgroup(const char *prefix, char ret[static PATH_MAX])
{
        FILE *f = fopen("/proc/self/cgroup", "re");
        char line[PATH_MAX + 64];

        assert_non_null(f);
        ret[0] = '\0';
        while (fgets(line, sizeof(line), f)) {
                char *at = strstr(line, prefix);

                if (at && (prefix[0] == ':' || at == line)) {
                        snprintf(ret, PATH_MAX, "%s", at + strlen(prefix));
                        ret[strcspn(ret, "\n")] = '\0';
                }
        }
        fclose(f);
        assert_true(ret[0] == '/');
}

static void move_self_to(const char *cgroup_dir)
{
        char path[PATH_MAX + 16];
        FILE *f;

        snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup_dir);
        f = fopen(path, "we");
        assert_non_null(f);
        fprintf(f, "%d\n", (int)getpid());
        assert_int_equal(fclose(f), 0);
}

/*
 * A process in a Kubernetes pod's cgroup, a real one made on this machine as
 * the kubelet's systemd driver names it, with the pod's name and namespace
 * in its environment as the downward API puts them there: gpreemptctl
 * status shows it by the pod's name, and its JSON by the pod's UID.
 */
static void test_pods_by_name(void **state)
{
        static const char pod_path[] =
                "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod2ca4a155_3599_498d_bb9d_4446693fa3ea.slice/"
                "cri-containerd-358607a37e7ada357032e7f5729c9ae6a3efdb7962acbcbe47ff6a3c5506cb1c.scope";
        struct fixture *f = *state;
        char mount[PATH_MAX], own[PATH_MAX], dir[PATH_MAX * 2], back[PATH_MAX * 2];
        struct json_object *p, *cluster;
        const char *prefix;

        if (!find_movable_hierarchy(mount, &prefix))
                fail_msg("no cgroup2 or name=systemd hierarchy is mounted: a Debian 12 machine has one");
        own_cgroup(prefix, own);
        /* under a parent of the test's own: the kubelet's tree may sit below others (kubernetes/minikube#11280) */
        snprintf(f->pod_cgroup_top, sizeof(f->pod_cgroup_top), "%s/gpreempt-test-%d", mount, (int)getpid());
        snprintf(dir, sizeof(dir), "%s/%s", f->pod_cgroup_top, pod_path);
        for (char *slash = strchr(dir + strlen(mount) + 1, '/');; slash = strchr(slash + 1, '/')) {
                if (slash)
                        *slash = '\0';
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        fail_msg("cannot make the cgroup %s: %s", dir, strerror(errno));
                if (!slash)
                        break;
                *slash = '/';
        }

        /*
         * The app inherits the cgroup and the environment; this process goes
         * back. The daemon starts outside: in it, it would keep the cgroups
         * from being removed at the end.
         */
        start_daemon_alone(f);
        setenv("POD_NAME", "train-0", 1);
        setenv("POD_NAMESPACE", "ml", 1);
        move_self_to(dir);
        start_offline(f);
        snprintf(back, sizeof(back), "%s%s", mount, own);
        move_self_to(back);
        unsetenv("POD_NAME");
        unsetenv("POD_NAMESPACE");

        assert_contains(ctl(f, 0, "status")->out, "ml/train-0");
        p = status_process(f, f->offline.pid);
        cluster = json_object_object_get(p, "cluster");
        assert_string_equal(json_object_get_string(json_object_object_get(cluster, "kind")), "kubernetes");
        assert_string_equal(json_object_get_string(json_object_object_get(cluster, "id")),
                            "2ca4a155-3599-498d-bb9d-4446693fa3ea");
        assert_string_equal(json_object_get_string(json_object_object_get(cluster, "name")), "ml/train-0");
        json_object_put(p);
        /* its metrics are the pod's: no Slurm label, though the app also has a Slurm environment */
        p = wait_offline_series_labels(f);
        assert_string_equal(label_value(p, "kubernetes_pod_uid"), "2ca4a155-3599-498d-bb9d-4446693fa3ea");
        assert_string_equal(label_value(p, "kubernetes_pod"), "ml/train-0");
        assert_null(label_value(p, "slurm_job"));
        json_object_put(p);
        ctl(f, 0, "status");
        for (char *line = strtok(f->r.out, "\n"); line; line = strtok(NULL, "\n"))
                print_message("# %s\n", line);
        emulated_app_stop(&f->offline); /* the cgroups can go only once they are empty */
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

/* Connections a user holds, from a child running as that user, until released. */
struct holder {
        pid_t pid;
        int release_fd; /* a byte written there lets the child exit */
};

/* Connects to path; waits up to 5 s for an answer to GetInfo when call. Returns the fd, or -1. */
static int holder_connect(const char *path, bool call)
{
        static const char get_info[] = "{\"method\":\"org.varlink.service.GetInfo\"}";
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        char reply[4096];
        size_t len = 0;

        strcpy(sa.sun_path, path);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -1;
        if (!call)
                return fd;
        if (send(fd, get_info, sizeof(get_info), MSG_NOSIGNAL) != sizeof(get_info))
                return -1;
        while (!memchr(reply, '\0', len)) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                ssize_t n;

                if (len == sizeof(reply) || poll(&pfd, 1, 5000) != 1 ||
                    (n = recv(fd, reply + len, sizeof(reply) - len, 0)) <= 0)
                        return -1;
                len += (size_t)n;
        }
        /* an answer, not an error (TooManyConnections): the daemon counts it in the user's share */
        return strstr(reply, "\"error\"") ? -1 : fd;
}

/*
 * As uid: `answered` connections, each with a call answered, so that the
 * daemon counts them in the user's share; then `silent` ones that call
 * nothing. Past the share, the daemon keeps those as refusals, answered
 * TooManyConnections at a first call, for VARLINK_SERVER_PARTIAL_TIMEOUT_USEC
 * (2 s) at most. Returns once they are all open.
 */
static void hold_connections(struct holder *h, const char *path, uid_t uid, int answered, int silent)
{
        int ready[2], release[2];
        char c;

        assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
        assert_int_equal(pipe2(release, O_CLOEXEC), 0);
        h->pid = fork();
        assert_true(h->pid >= 0);
        if (h->pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(ready[0]);
                close(release[1]);
                if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
                        _exit(2);
                for (int i = 0; i < answered + silent; i++)
                        if (holder_connect(path, i < answered) < 0)
                                _exit(3);
                if (write(ready[1], "x", 1) != 1)
                        _exit(4);
                (void)!read(release[0], &c, 1);
                _exit(0);
        }
        close(ready[1]);
        close(release[0]);
        if (read(ready[0], &c, 1) != 1) {
                int status = 0;

                waitpid(h->pid, &status, 0);
                fail_msg("the holder could not open its connections (exit %d)", WEXITSTATUS(status));
        }
        close(ready[0]);
        h->release_fd = release[1];
}

static void release_connections(struct holder *h)
{
        int status;

        /* a byte, not the pipe's end: a holder forked later holds a copy of it */
        assert_int_equal(write(h->release_fd, "x", 1), 1);
        close(h->release_fd);
        assert_int_equal(waitpid(h->pid, &status, 0), h->pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * A user that holds as many connections to the daemon as one user may is
 * told so, in text and JSON. Past its share the daemon answers a few
 * connections TooManyConnections, and closes the ones past those
 * unanswered: that, too, is a refusal, and must not be reported as the
 * daemon having exited (it is running, and answers root).
 */
static void test_connection_limits_are_explained(void **state)
{
        struct fixture *f = *state;
        uid_t uid = nobody_uid();
        struct holder share, refusals;
        struct json_object *o;
        char budget[64];

        start_daemon_alone(f);
        /* as in test_unauthorised_callers_refused: the caller reaches the socket */
        assert_int_equal(chmod(f->h.config.dir, 0711), 0);
        assert_int_equal(chmod(f->h.runtime_dir, 0711), 0);

        hold_connections(&share, f->h.socket_path, uid, VARLINK_SERVER_CONNECTIONS_PER_UID, 0);
        assert_contains(ctl_as(f, uid, 2, "status", (const char *)NULL)->err,
                        "gpreemptd refused the connection: this user holds");
        snprintf(budget, sizeof(budget), "as one user may (%d)", VARLINK_SERVER_CONNECTIONS_PER_UID);
        assert_contains(f->r.err, budget);
        assert_contains(f->r.err, "(idle ones close after a minute)");
        assert_lacks(f->r.err, "exited");
        o = json_out(ctl_as(f, uid, 2, "status", "--json", (const char *)NULL));
        assert_string_equal(json_object_get_string(json_object_object_get(o, "varlink_error")),
                            "io.gpreempt.TooManyConnections");
        assert_non_null(strstr(json_object_get_string(json_object_object_get(o, "error")), "this user holds"));
        json_object_put(o);

        /* the answered refusals taken too; both runs fit in their 2 s */
        hold_connections(&refusals, f->h.socket_path, uid, 0, VARLINK_SERVER_CONNECTIONS_REFUSED_MAX);
        assert_contains(ctl_as(f, uid, 2, "status", (const char *)NULL)->err,
                        "gpreemptd is running but closes new connections unanswered: this user, or all users "
                        "together, hold as many connections as it serves");
        assert_lacks(f->r.err, "exited");
        o = json_out(ctl_as(f, uid, 2, "top", "--json", (const char *)NULL));
        assert_non_null(strstr(json_object_get_string(json_object_object_get(o, "error")),
                               "closes new connections unanswered"));
        json_object_put(o);

        /* root has no share of its own */
        ctl(f, 0, "status");
        release_connections(&refusals);
        release_connections(&share);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

/* Waits up to 10 s for the running gpreemptctl to have printed something. */
static void wait_for_output(const struct ctl_process *p)
{
        struct stat st;

        for (int i = 0; i < 1000; i++) {
                assert_int_equal(fstat(p->out, &st), 0);
                if (st.st_size > 0)
                        return;
                usleep(10000);
        }
        fail_msg("gpreemptctl printed nothing within 10 s");
}

/*
 * top keeps one connection from snapshot to snapshot. The daemon closing it
 * in between, when it restarts (or when the wait is longer than its idle
 * timeout, a minute) is no reason to stop, nor to say that the daemon exited.
 */
static void test_top_outlives_a_closed_connection(void **state)
{
        struct fixture *f = *state;
        struct ctl_process p;
        struct json_object *o;
        char *second;

        start_daemon_alone(f);
        ctl_start(ctl_path, f->env, 0,
                  (const char *[]){ "top", "--interval", "3s", "--iterations", "2", "--json", NULL }, &p);
        wait_for_output(&p);
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
        start_daemon_alone(f);
        ctl_finish(&p, &f->r);
        if (f->r.exit_code != 0)
                fail_msg("top: exit %d\nstdout:\n%s\nstderr:\n%s", f->r.exit_code, f->r.out, f->r.err);
        /* one Status per line: the second from the new daemon */
        second = strchr(f->r.out, '\n');
        assert_non_null(second);
        o = json_tokener_parse(second + 1);
        assert_non_null(o);
        assert_non_null(json_object_object_get(o, "processes"));
        json_object_put(o);
}

/*
 * A daemon whose loop is stuck accepts nothing, and once its queue of
 * pending connections is full, connect() itself waits for room. gpreemptctl
 * gives up within its call timeout and says why, rather than wait forever.
 * The daemon here is a socket that listens with a queue of one and never
 * accepts.
 */
static void test_stuck_daemon_with_a_full_queue(void **state)
{
        struct fixture *f = *state;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct ctl_process p;
        int listener, queued[8];
        siginfo_t info = { 0 };
        size_t n = 0;

        assert_true(mkdir(f->h.runtime_dir, 0755) == 0 || errno == EEXIST);
        strcpy(sa.sun_path, f->h.socket_path);
        listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(listener >= 0);
        assert_int_equal(bind(listener, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(listener, 0), 0);
        /* fill the queue: a connect() that would have to wait fails with EAGAIN here */
        for (; n < ELEMENTS(queued); n++) {
                queued[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                assert_true(queued[n] >= 0);
                if (connect(queued[n], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                        assert_int_equal(errno, EAGAIN);
                        close(queued[n]);
                        break;
                }
        }
        assert_true(n < ELEMENTS(queued));

        ctl_start(ctl_path, f->env, 0, (const char *[]){ "status", NULL }, &p);
        for (int i = 0; i < 1500 && info.si_pid == 0; i++) {
                assert_int_equal(waitid(P_PID, (id_t)p.pid, &info, WEXITED | WNOHANG | WNOWAIT), 0);
                if (info.si_pid == 0)
                        usleep(10000);
        }
        if (info.si_pid == 0) {
                kill(p.pid, SIGKILL);
                ctl_finish(&p, &f->r);
                fail_msg("gpreemptctl status still waited to connect after 15 s");
        }
        ctl_finish(&p, &f->r);
        assert_int_equal(f->r.exit_code, 4);
        assert_contains(f->r.err, "gpreemptd did not accept the connection within 5 s");
        for (size_t i = 0; i < n; i++)
                close(queued[i]);
        close(listener);
}

/*
 * An answer that is not a Varlink message is not always a foreign socket:
 * a reply with bytes that are not UTF-8 (a daemon passing on another
 * process's name) is refused too, and the sentence says both. The
 * "daemon" here answers one call with such a reply.
 */
static void test_answer_not_utf8_is_explained(void **state)
{
        static const char reply[] = "{\"parameters\":{\"processes\":[],\"name\":\"\xff\"}}";
        struct fixture *f = *state;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int listener;

        assert_true(mkdir(f->h.runtime_dir, 0755) == 0 || errno == EEXIST);
        strcpy(sa.sun_path, f->h.socket_path);
        listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(listener >= 0);
        assert_int_equal(bind(listener, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(listener, 4), 0);
        f->others[3] = fork();
        assert_true(f->others[3] >= 0);
        if (f->others[3] == 0) {
                int fd = accept(listener, NULL, NULL);
                char call[4096];

                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (fd < 0 || recv(fd, call, sizeof(call), 0) <= 0 ||
                    send(fd, reply, sizeof(reply), MSG_NOSIGNAL) != sizeof(reply))
                        _exit(1);
                pause();
                _exit(0);
        }
        close(listener);
        assert_contains(ctl(f, 4, "status")->err, "the answer to Status is not a Varlink message");
        assert_contains(f->r.err, "or gpreemptd passed on bytes that are not UTF-8");
}

/*
 * Starts app (an offline workload's command line) traced by a process named
 * tracer_name, as a debugger another user runs would be; returns the app's
 * pid. The tracer is in f->others[0], the app in f->others[1].
 */
static pid_t start_traced_app(struct fixture *f, const char *tracer_name)
{
        int report[2];
        pid_t app = 0;

        assert_int_equal(pipe2(report, O_CLOEXEC), 0);
        f->others[0] = fork();
        assert_true(f->others[0] >= 0);
        if (f->others[0] == 0) {
                pid_t child;

                prctl(PR_SET_PDEATHSIG, SIGKILL);
                child = fork();
                if (child == 0) {
                        int null = open("/dev/null", O_WRONLY);

                        /* its READY line is not for the test's output */
                        if (null >= 0)
                                dup2(null, STDOUT_FILENO);
                        ptrace(PTRACE_TRACEME, 0, NULL, NULL);
                        execl(app_path, app_path, "--continuous", "--gpu", "0", "--kernel-us", "2000", "--report",
                              "none", (char *)NULL);
                        _exit(127);
                }
                prctl(PR_SET_NAME, tracer_name);
                if (write(report[1], &child, sizeof(child)) != sizeof(child))
                        _exit(3);
                /* a debugger that lets its tracee run: every stop continued, signals passed on */
                for (;;) {
                        int status;
                        pid_t w = waitpid(-1, &status, __WALL);

                        if (w < 0)
                                _exit(0);
                        if (WIFSTOPPED(status))
                                ptrace(PTRACE_CONT, w, NULL,
                                       (void *)(long)(WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status)));
                }
        }
        close(report[1]);
        assert_int_equal(read(report[0], &app, sizeof(app)), (ssize_t)sizeof(app));
        close(report[0]);
        f->others[1] = app;
        return app;
}

/*
 * Text other users choose reaches the administrator's terminal inert, and
 * JSON output stays UTF-8: a process's command line (verify-config --pid),
 * and the name of a tracer, which the daemon quotes when it cannot attach
 * (status, suspend), and sends as UTF-8 whatever its bytes.
 */
static void test_text_from_other_users_is_printed_inert(void **state)
{
        struct fixture *f = *state;
        /* clear the screen, set the title, and not UTF-8 */
        const char *tracer_name = "\033[2J\033]0;x\007\xff\xfe";
        struct json_object *o, *p = NULL;
        char pid[16];
        pid_t sleeper, app;

        /* a command line: clears the screen, sets the title, and is not UTF-8 */
        sleeper = fork();
        assert_true(sleeper >= 0);
        if (sleeper == 0) {
                execl("/bin/sleep", "\033[2J\033]0;owned\007\xff", "30", (char *)NULL);
                _exit(127);
        }
        f->others[2] = sleeper;
        snprintf(pid, sizeof(pid), "%d", (int)sleeper);
        for (int i = 0; i < 500; i++) {
                ctl(f, 0, "verify-config", "--pid", pid);
                if (strstr(f->r.out, "owned"))
                        break;
                usleep(10000); /* until it has exec'd */
        }
        assert_contains(f->r.out, "command line is \"\\x1b[2J\\x1b]0;owned\\x07\\xff 30\"");
        assert_lacks(f->r.out, "\033");
        assert_lacks(f->r.out, "\xff");
        o = json_out(ctl(f, 0, "verify-config", "--pid", pid, "--json"));
        assert_lacks(f->r.out, "\xff");
        assert_non_null(strstr(json_object_get_string(json_object_object_get(
                                       json_object_array_get_idx(json_object_object_get(o, "matches"), 0), "reason")),
                               "\\xff 30"));
        json_object_put(o);

        /* a tracer's name, through the daemon */
        start_daemon_alone(f);
        app = start_traced_app(f, tracer_name);
        snprintf(pid, sizeof(pid), "%d", (int)app);
        for (int i = 0; i < 500 && !(p && json_object_get_string(json_object_object_get(p, "attach_error"))); i++) {
                json_object_put(p);
                usleep(10000);
                p = status_process(f, app);
        }
        if (!p || !json_object_get_string(json_object_object_get(p, "attach_error")))
                fail_msg("the daemon never said why it cannot attach; its log:\n%s", daemon_harness_log(&f->h));
        json_object_put(p);
        assert_contains(ctl(f, 0, "status")->out, "not attached: Cannot attach to process");
        assert_contains(f->r.out, "traced by \\x1b[2J\\x1b]0;x\\x07\\xff\\xfe");
        assert_lacks(f->r.out, "\033");
        assert_contains(ctl(f, 2, "suspend", pid)->err, "no debug session");
        assert_contains(f->r.err, "traced by \\x1b[2J");
        assert_lacks(f->r.err, "\033");
        assert_int_equal(daemon_harness_stop(&f->h, SIGTERM), 0);
}

int main(int argc, char **argv)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_without_daemon, setup, teardown),
                cmocka_unit_test_setup_teardown(test_usage_errors_and_help, setup, teardown),
                cmocka_unit_test_setup_teardown(test_verify_config_without_daemon, setup, teardown),
                cmocka_unit_test_setup_teardown(test_verbs_against_the_daemon, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pods_by_name, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unauthorised_callers_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_connection_limits_are_explained, setup, teardown),
                cmocka_unit_test_setup_teardown(test_top_outlives_a_closed_connection, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stuck_daemon_with_a_full_queue, setup, teardown),
                cmocka_unit_test_setup_teardown(test_answer_not_utf8_is_explained, setup, teardown),
                cmocka_unit_test_setup_teardown(test_text_from_other_users_is_printed_inert, setup, teardown),
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
