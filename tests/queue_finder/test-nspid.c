/* SPDX-License-Identifier: MIT */
/*
 * Container pids (nspid.c) on real pid namespaces: this process's own, and
 * a container ns1 that runs two containers of its own, ns2 and its sibling
 * ns2b, each with an init (pid 1) and tasks (pids 2 and 3):
 *
 *   this test -> ns1: outer init
 *                     -> ns2:  inner init, inner task (pid 2)
 *                     -> ns2b: sibling init, sibling tasks (pids 2, 3)
 *
 * Without root the namespaces are made inside a user namespace, as the kfdemu
 * pid-namespace tests do, so the test runs either way; a machine that allows
 * neither fails it with a sentence saying so. argv[1] is the queue_finder
 * executable.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli-run.h"
#include "nspid.h"

static const char *queue_finder;

enum role {
        OUTER_INIT,
        INNER_INIT,
        INNER_TASK,
        SIBLING_INIT,
        SIBLING_TASK2,
        SIBLING_TASK3,
        N_ROLES,
};

/* What a process of the tree tells the test: its NSpid chain as the test's
 * /proc shows it, [0] being its pid here. Small enough for one atomic pipe
 * write. */
struct report {
        int role;
        size_t n;
        pid_t chain[QF_NSPID_MAX_LEVELS];
};

/* Exit codes of the tree's processes, for the failure message. */
enum {
        EXIT_UNSHARE = 20,
        EXIT_FORK = 21,
        EXIT_REPORT = 22,
};

struct tree {
        pid_t helper;                   /* our child, which made ns1 */
        struct report of[N_ROLES];
};

static int report_self(int fd, enum role role)
{
        char self[32];
        ssize_t len = readlink("/proc/self", self, sizeof(self) - 1);
        if (len <= 0)
                return -1;
        self[len] = 0;
        struct report r = { .role = role };
        if (qf_nspid_read("/proc", atoi(self), r.chain, QF_NSPID_MAX_LEVELS, &r.n) < 0)
                return -1;
        return write(fd, &r, sizeof(r)) == (ssize_t) sizeof(r) ? 0 : -1;
}

static _Noreturn void park(void)
{
        for (;;)
                pause();
}

/* A child that reports and then waits to be killed with its namespace. */
static pid_t fork_reporting_task(int fd, enum role role)
{
        pid_t pid = fork();
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (report_self(fd, role) < 0)
                        _exit(EXIT_REPORT);
                park();
        }
        return pid;
}

/* Forks a helper that unshares flags and forks init_fn as the new pid
 * namespace's init (unshare(CLONE_NEWPID) moves only the caller's later
 * children), then waits for it. */
static pid_t fork_pid_namespace(int flags, int (*init_fn)(int fd), int fd)
{
        pid_t helper = fork();
        if (helper != 0)
                return helper;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (unshare(flags) < 0)
                _exit(EXIT_UNSHARE);
        pid_t init = fork();
        if (init < 0)
                _exit(EXIT_FORK);
        if (init == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                _exit(init_fn(fd));
        }
        int status;
        while (waitpid(init, &status, 0) < 0 && errno == EINTR)
                ;
        _exit(0);
}

static int inner_init(int fd)
{
        if (report_self(fd, INNER_INIT) < 0 || fork_reporting_task(fd, INNER_TASK) < 0)
                return EXIT_REPORT;
        park();
}

/* Tasks forked one after the other get pids 2 and 3 in a new namespace. */
static int sibling_init(int fd)
{
        if (report_self(fd, SIBLING_INIT) < 0 || fork_reporting_task(fd, SIBLING_TASK2) < 0 ||
            fork_reporting_task(fd, SIBLING_TASK3) < 0)
                return EXIT_REPORT;
        park();
}

static int outer_init(int fd)
{
        if (report_self(fd, OUTER_INIT) < 0 || fork_pid_namespace(CLONE_NEWPID, inner_init, fd) < 0 ||
            fork_pid_namespace(CLONE_NEWPID, sibling_init, fd) < 0)
                return EXIT_REPORT;
        park();
}

/* The helper ended before every process reported. */
static void fail_setup(int status)
{
        if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_UNSHARE)
                fail_msg("unshare(%s) failed: this test needs root, or unprivileged user namespaces "
                         "(kernel.unprivileged_userns_clone, user.max_user_namespaces)",
                         getuid() == 0 ? "CLONE_NEWPID" : "CLONE_NEWUSER|CLONE_NEWPID");
        fail_msg("the pid namespaces were not set up: their first process ended with status 0x%x", status);
}

static int setup(void **state)
{
        struct tree *t = calloc(1, sizeof(*t));
        assert_non_null(t);
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        t->helper = fork_pid_namespace(getuid() == 0 ? CLONE_NEWPID : CLONE_NEWUSER | CLONE_NEWPID, outer_init, p[1]);
        assert_true(t->helper > 0);
        close(p[1]);

        bool seen[N_ROLES] = { false };
        for (unsigned got = 0; got < N_ROLES;) {
                struct pollfd pfd = { .fd = p[0], .events = POLLIN };
                int status;
                if (waitpid(t->helper, &status, WNOHANG) == t->helper)
                        fail_setup(status);
                int r = poll(&pfd, 1, 10000);
                if (r == 0) {
                        kill(t->helper, SIGKILL);
                        fail_msg("only %u of the %d processes in the pid namespaces reported within 10 s", got,
                                 N_ROLES);
                }
                assert_true(r > 0);
                struct report rep;
                assert_int_equal(read(p[0], &rep, sizeof(rep)), sizeof(rep));
                assert_true(rep.role >= 0 && rep.role < N_ROLES && !seen[rep.role]);
                seen[rep.role] = true;
                t->of[rep.role] = rep;
                got++;
        }
        close(p[0]);
        *state = t;
        return 0;
}

/* Killing ns1's init kills everything in ns1 and below. */
static int teardown(void **state)
{
        struct tree *t = *state;
        int status;
        kill(t->of[OUTER_INIT].chain[0], SIGKILL);
        assert_int_equal(waitpid(t->helper, &status, 0), t->helper);
        free(t);
        return 0;
}

static size_t depth_here(void)
{
        pid_t chain[QF_NSPID_MAX_LEVELS];
        size_t n;
        assert_int_equal(qf_nspid_read("/proc", getpid(), chain, QF_NSPID_MAX_LEVELS, &n), 0);
        return n;
}

/* The namespace a tree process lives in, named by its pid here. */
static void ns_of(const struct tree *t, enum role role, struct qf_pid_ns *ret_ns, size_t *ret_level)
{
        char arg[16];
        snprintf(arg, sizeof(arg), "%d", (int) t->of[role].chain[0]);
        assert_int_equal(qf_pid_ns_from_arg("/proc", arg, ret_ns), 0);
        assert_int_equal(qf_pid_ns_level("/proc", ret_ns, ret_level), 0);
}

static pid_t to_host(const struct qf_pid_ns *ns, size_t level, pid_t ns_pid)
{
        pid_t host = 0;
        int r = qf_nspid_to_host("/proc", ns, level, ns_pid, &host);
        if (r < 0)
                fail_msg("pid %d of pid:[%llu] at level %zu: %s", (int) ns_pid, (unsigned long long) ns->ino, level,
                         strerror(-r));
        return host;
}

/* Our own namespace, named by pid and by path, maps our pid in it (the last
 * NSpid entry) back to our pid here. */
static void test_own_namespace(void **state)
{
        pid_t chain[QF_NSPID_MAX_LEVELS];
        size_t n;
        assert_int_equal(qf_nspid_read("/proc", getpid(), chain, QF_NSPID_MAX_LEVELS, &n), 0);
        assert_true(n >= 1);
        assert_int_equal(chain[0], getpid());

        struct qf_pid_ns by_pid, by_path;
        char arg[32];
        snprintf(arg, sizeof(arg), "%d", (int) getpid());
        assert_int_equal(qf_pid_ns_from_arg("/proc", arg, &by_pid), 0);
        assert_int_equal(qf_pid_ns_from_arg("/proc", "/proc/self/ns/pid", &by_path), 0);
        assert_int_equal(by_pid.ino, by_path.ino);
        size_t level;
        assert_int_equal(qf_pid_ns_level("/proc", &by_pid, &level), 0);
        assert_int_equal(level, n - 1);
        assert_int_equal(to_host(&by_pid, level, chain[n - 1]), getpid());
        pid_t host;
        assert_int_equal(qf_nspid_to_host("/proc", &by_pid, level, INT32_MAX, &host), -ESRCH);
        assert_true(qf_pid_ns_from_arg("/proc", "/nonexistent/ns/pid", &by_path) < 0);
}

/* In the outer container's numbering, the processes of the containers it
 * runs are found too, each by the pid it has in ns1. */
static void test_outer_numbering(void **state)
{
        const struct tree *t = *state;
        struct qf_pid_ns ns1;
        size_t level;
        ns_of(t, OUTER_INIT, &ns1, &level);
        assert_int_equal(level, depth_here());
        assert_int_equal(t->of[OUTER_INIT].chain[level], 1);
        assert_int_equal(to_host(&ns1, level, 1), t->of[OUTER_INIT].chain[0]);
        static const enum role nested[] = { INNER_INIT, INNER_TASK, SIBLING_INIT, SIBLING_TASK2, SIBLING_TASK3 };
        for (size_t i = 0; i < sizeof(nested) / sizeof(*nested); i++) {
                const struct report *r = &t->of[nested[i]];
                assert_int_equal(r->n, level + 2);
                assert_int_equal(to_host(&ns1, level, r->chain[level]), r->chain[0]);
        }
}

/* In an inner container's numbering, pids 1 and 2 are its own processes,
 * not its sibling's, which have the same pids at the same NSpid level; pid
 * 3 exists only in the sibling. */
static void test_inner_numbering(void **state)
{
        const struct tree *t = *state;
        struct qf_pid_ns ns2, ns2b;
        size_t level, level_b;
        ns_of(t, INNER_INIT, &ns2, &level);
        ns_of(t, SIBLING_INIT, &ns2b, &level_b);
        assert_int_equal(level, depth_here() + 1);
        assert_int_equal(level_b, level);
        assert_true(ns2.ino != ns2b.ino);
        assert_int_equal(t->of[SIBLING_TASK3].chain[level], 3);

        assert_int_equal(to_host(&ns2, level, 1), t->of[INNER_INIT].chain[0]);
        assert_int_equal(to_host(&ns2, level, 2), t->of[INNER_TASK].chain[0]);
        assert_int_equal(to_host(&ns2b, level, 1), t->of[SIBLING_INIT].chain[0]);
        assert_int_equal(to_host(&ns2b, level, 2), t->of[SIBLING_TASK2].chain[0]);
        assert_int_equal(to_host(&ns2b, level, 3), t->of[SIBLING_TASK3].chain[0]);
        pid_t host;
        assert_int_equal(qf_nspid_to_host("/proc", &ns2, level, 3, &host), -ESRCH);
}

/* A file that is no pid namespace has nobody living in it. */
static void test_not_a_namespace(void **state)
{
        struct qf_pid_ns ns;
        size_t level;
        assert_int_equal(qf_pid_ns_from_arg("/proc", "/proc/self/status", &ns), 0);
        assert_int_equal(qf_pid_ns_level("/proc", &ns, &level), -ESRCH);
}

/* The program maps a nested container's pid to the host pid and shows the
 * whole NSpid chain; a pid only a sibling has is an error that says so. */
static void test_cli(void **state)
{
        const struct tree *t = *state;
        const struct report *task = &t->of[INNER_TASK];
        char outer[16], inner[16], ns1_pid[16];
        snprintf(outer, sizeof(outer), "%d", (int) t->of[OUTER_INIT].chain[0]);
        snprintf(inner, sizeof(inner), "%d", (int) t->of[INNER_INIT].chain[0]);
        snprintf(ns1_pid, sizeof(ns1_pid), "%d", (int) task->chain[task->n - 2]);

        const char *argv[] = { queue_finder, "--json", "--no-live", "--pid-ns", outer, ns1_pid, NULL };
        struct cli_output o;
        assert_int_equal(cli_run(argv, NULL, &o), 0);
        struct json_object *doc = json_tokener_parse(o.out), *procs, *p, *v;
        assert_non_null(doc);
        assert_true(json_object_object_get_ex(doc, "processes", &procs));
        assert_int_equal(json_object_array_length(procs), 1);
        p = json_object_array_get_idx(procs, 0);
        assert_true(json_object_object_get_ex(p, "pid", &v));
        assert_int_equal(json_object_get_int(v), task->chain[0]);
        assert_true(json_object_object_get_ex(p, "nspid", &v));
        assert_int_equal(json_object_array_length(v), task->n);
        assert_int_equal(json_object_get_int(json_object_array_get_idx(v, task->n - 1)), 2);
        json_object_put(doc);
        cli_output_free(&o);

        const char *sibling_only[] = { queue_finder, "--no-live", "--pid-ns", inner, "3", NULL };
        assert_int_equal(cli_run(sibling_only, NULL, &o), 1);
        assert_non_null(strstr(o.err, "no process has pid 3 in pid namespace pid:["));
        assert_non_null(strstr(o.err, "or in a namespace nested in it"));
        cli_output_free(&o);

        const char *not_ns[] = { queue_finder, "--no-live", "--pid-ns", "/proc/self/status", "1", NULL };
        assert_int_equal(cli_run(not_ns, NULL, &o), 1);
        assert_non_null(strstr(o.err, "no process lives in \"/proc/self/status\""));
        cli_output_free(&o);
}

/* A container's log names container pids: with --pid-ns they are mapped
 * like the arguments, and one no process in the namespace has (here pid
 * 3, only the sibling's) loses its process rather than pass for the host
 * process with that number; --log-pid with such a pid is an error. */
static void test_cli_log_pids(void **state)
{
        const struct tree *t = *state;
        char inner[16], task_line[64];
        snprintf(inner, sizeof(inner), "%d", (int) t->of[INNER_INIT].chain[0]);
        const char *log = ":3:rocdevice.cpp :3104: 1 us: [pid:2 tid:0x1] Created SWq=0x7f0000004000 to map on "
                          "HWq=0x7f3000000000 with size 64 with priority 1, cooperative: 0\n"
                          ":3:rocdevice.cpp :3104: 2 us: [pid:3 tid:0x2] Created SWq=0x7f0000005000 to map on "
                          "HWq=0x7f3000010000 with size 64 with priority 1, cooperative: 0\n";
        struct cli_output o;

        const char *table[] = { queue_finder, "--no-live", "--pid-ns", inner, "--log", "-", NULL };
        assert_int_equal(cli_run(table, log, &o), 0);
        snprintf(task_line, sizeof(task_line), "PID %d ", (int) t->of[INNER_TASK].chain[0]);
        assert_non_null(strstr(o.out, task_line));
        assert_non_null(strstr(o.out, "PID unknown"));
        assert_null(strstr(o.out, "PID 3 "));
        assert_non_null(strstr(o.out, "no process has the log's pid 3 in pid namespace pid:["));
        cli_output_free(&o);

        const char *log_pid[] = { queue_finder, "--no-live", "--pid-ns", inner, "--log", "-", "--log-pid", "3",
                                  "--emit-config", "offline", NULL };
        assert_int_equal(cli_run(log_pid, log, &o), 1);
        assert_non_null(strstr(o.err, "--log-pid: no process has pid 3 in pid namespace pid:["));
        assert_null(strstr(o.out, "MatchPID"));
        cli_output_free(&o);
}

int main(int argc, char **argv)
{
        if (argc != 2) {
                fprintf(stderr, "usage: %s QUEUE_FINDER\n", argv[0]);
                return 2;
        }
        queue_finder = argv[1];
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_own_namespace),
                cmocka_unit_test_setup_teardown(test_outer_numbering, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inner_numbering, setup, teardown),
                cmocka_unit_test(test_not_a_namespace),
                cmocka_unit_test_setup_teardown(test_cli, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cli_log_pids, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
