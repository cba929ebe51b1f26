/* SPDX-License-Identifier: MIT */
/*
 * Which freezer applies to a process, from /proc/<pid>/cgroup texts of the
 * layouts gpreemptd meets, and what the state files say.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>

#include "cgroup-freezer.h"

static void expect_membership(const char *text, int kind, const char *path)
{
        char *got = NULL;

        assert_int_equal(cgroup_freezer_parse_membership(text, &got), kind);
        if (path)
                assert_string_equal(got, path);
        else
                assert_null(got);
        free(got);
}

static void test_membership(void **state)
{
        /* a Slurm task on a hybrid Debian 12 host, proctrack/cgroup + task/cgroup (Slurm 22.05, slurm_<node>) */
        expect_membership("9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/slurm_localhost/uid_0/job_3/step_batch\n"
                          "5:devices:/\n4:memory:/slurm_localhost/uid_0/job_3/step_batch/task_0\n3:cpuset:/\n0::/\n",
                          CGROUP_FREEZER_V1, "/slurm_localhost/uid_0/job_3/step_batch");
        /* a controller list with more than one name (cpu,cpuacct) before the freezer's own line */
        expect_membership("4:cpu,cpuacct:/a\n3:freezer,net_cls:/b\n0::/c\n", CGROUP_FREEZER_V1, "/b");
        /* cgroup v2 only: Slurm's documented layout (cgroup_v2.html) */
        expect_membership("0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n", CGROUP_FREEZER_V2,
                          "/system.slice/slurmstepd.scope/job_42/step_0/user/task_0");
        /* no freezer line and no unified line, or malformed ones */
        expect_membership("9:name=systemd:/\n4:memory:/x\n", CGROUP_FREEZER_NONE, NULL);
        expect_membership("6:freezer\n1::relative\n", CGROUP_FREEZER_NONE, NULL);
        expect_membership("", CGROUP_FREEZER_NONE, NULL);
        /* a process outside the reader's cgroup namespace: its path cannot be joined onto /sys/fs/cgroup */
        expect_membership("6:freezer:/../../slurm_localhost/uid_0/job_3/step_0\n0::/\n", -EXDEV, NULL);
        expect_membership("0::/../other\n", -EXDEV, NULL);
        expect_membership("0::/a..b/..c\n", CGROUP_FREEZER_V2, "/a..b/..c");
        /* a name= hierarchy called freezer-like is not the controller */
        expect_membership("9:name=freezer:/x\n", CGROUP_FREEZER_NONE, NULL);
}

static void test_state(void **state)
{
        assert_true(cgroup_freezer_parse_frozen(CGROUP_FREEZER_V1, "FROZEN\n"));
        assert_true(cgroup_freezer_parse_frozen(CGROUP_FREEZER_V1, "FREEZING\n"));
        assert_false(cgroup_freezer_parse_frozen(CGROUP_FREEZER_V1, "THAWED\n"));
        assert_false(cgroup_freezer_parse_frozen(CGROUP_FREEZER_V1, ""));
        assert_true(cgroup_freezer_parse_frozen(CGROUP_FREEZER_V2, "populated 1\nfrozen 1\n"));
        assert_false(cgroup_freezer_parse_frozen(CGROUP_FREEZER_V2, "populated 1\nfrozen 0\n"));
        assert_false(cgroup_freezer_parse_frozen(CGROUP_FREEZER_V2, "populated 1\nnotfrozen 1\n"));
        assert_false(cgroup_freezer_parse_frozen(CGROUP_FREEZER_V2, "frozen"));
        assert_false(cgroup_freezer_parse_frozen(CGROUP_FREEZER_NONE, "FROZEN\n"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_membership),
                cmocka_unit_test(test_state),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
