/* SPDX-License-Identifier: MIT */
/* Matching processes to workloads, and the explanations verify-config prints. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "config-fixture.h"
#include "process-facts.h"
#include "workload-match.h"

#define CMDLINE "/usr/bin/python3\0serve.py\0--port\0008080\0"

/* A fake /proc/<pid> in the fixture directory: what the daemon reads about a process. */
static void make_fake_process(struct config_fixture *f, int pid, unsigned uid, const char *exe,
                              const char *cgroup)
{
        char path[256], text[512];
        FILE *file;

        snprintf(path, sizeof(path), "proc/%d", pid);
        snprintf(text, sizeof(text), "%s/proc", f->dir);
        mkdir(text, 0755);
        snprintf(text, sizeof(text), "%s/%s", f->dir, path);
        assert_int_equal(mkdir(text, 0755), 0);
        snprintf(text, sizeof(text), "Name:\tx\nPid:\t%d\nUid:\t%u\t%u\t%u\t%u\n", pid, uid, uid, uid, uid);
        snprintf(path, sizeof(path), "proc/%d/status", pid);
        config_fixture_write(f, path, text);
        snprintf(text, sizeof(text), "1:name=systemd:/ignored\n0::%s\n", cgroup);
        snprintf(path, sizeof(path), "proc/%d/cgroup", pid);
        config_fixture_write(f, path, text);
        snprintf(path, sizeof(path), "%s/proc/%d/cmdline", f->dir, pid);
        file = fopen(path, "we");
        assert_non_null(file);
        fwrite(CMDLINE, 1, sizeof(CMDLINE) - 1, file);
        fclose(file);
        snprintf(path, sizeof(path), "%s/proc/%d/exe", f->dir, pid);
        assert_int_equal(symlink(exe, path), 0);
}

static const char workloads[] =
        "[Workload]\nName=by-pid\nClass=online\nMatchPID=999\n"
        "[Workload]\nName=by-user-and-unit\nClass=online\nMatchUser=0\nMatchUnit=web-*.service\n"
        "[Workload]\nName=by-container\nClass=offline\nMatchContainer=deadbeef1234\n"
        "[Workload]\nName=by-exe\nClass=offline\nMatchExecutable=python3\nMatchCommandLine=* --port 8080\n";

static void test_facts_and_first_match_wins(void **state)
{
        struct config_fixture f;
        struct config *c = NULL;
        struct diag d = { 0 };
        struct process_facts p;
        char proc[128];
        char *reason = NULL;

        config_fixture_init(&f);
        config_fixture_write(&f, "workloads.d/w.conf", workloads);
        assert_int_equal(config_load(f.dir, &c, &d), 0);
        make_fake_process(&f, 42, 0, "/usr/bin/python3 (deleted)",
                          "/system.slice/docker-deadbeef12345678.scope/inner");
        snprintf(proc, sizeof(proc), "%s/proc", f.dir);

        assert_int_equal(process_facts_read(proc, 43, &p), -ESRCH);
        assert_int_equal(process_facts_read(proc, 42, &p), 0);
        assert_string_equal(p.exe, "/usr/bin/python3");
        assert_string_equal(p.cmdline, "/usr/bin/python3 serve.py --port 8080");
        assert_string_equal(p.cgroup, "/system.slice/docker-deadbeef12345678.scope/inner");
        assert_int_equal(p.uid, 0);
        assert_int_equal(p.tracer, -1); /* a status without TracerPid: unknown, not a failure */

        assert_false(workload_match(&c->workloads[0], &p, &reason));
        assert_non_null(strstr(reason, "MatchPID=999"));
        assert_non_null(strstr(reason, "pid is 42"));
        assert_non_null(strstr(reason, "w.conf:4"));
        free(reason);
        assert_false(workload_match(&c->workloads[1], &p, &reason));
        assert_non_null(strstr(reason, "unit is docker-deadbeef12345678.scope"));
        free(reason);
        assert_true(workload_match(&c->workloads[2], &p, &reason));
        assert_string_equal(reason, "matches by MatchContainer=");
        free(reason);
        assert_true(workload_match(&c->workloads[3], &p, NULL));
        assert_ptr_equal(workload_match_first(c, &p), &c->workloads[2]);

        process_facts_done(&p);
        config_free(c);
        config_fixture_cleanup(&f);
}

static void test_unit_of_cgroup(void **state)
{
        char *u;

        u = workload_match_cgroup_unit("/system.slice/web-1.service");
        assert_string_equal(u, "web-1.service");
        free(u);
        u = workload_match_cgroup_unit("/user.slice/user-0.slice/session-3.scope/x");
        assert_string_equal(u, "session-3.scope");
        free(u);
        assert_null(workload_match_cgroup_unit("/"));
        assert_null(workload_match_cgroup_unit(""));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_facts_and_first_match_wins),
                cmocka_unit_test(test_unit_of_cgroup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
