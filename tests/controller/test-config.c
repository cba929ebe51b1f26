/* SPDX-License-Identifier: MIT */
/* The configuration parser: good files load, every malformed one is refused with file:line. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cleanup.h"

#include "config-fixture.h"
#include "config.h"
#include "ini-reader.h"

static void test_missing_files_give_defaults(void **state)
{
        struct config_fixture f;
        struct config *c = NULL;
        struct diag d = { 0 };

        config_fixture_init(&f);
        assert_int_equal(config_load(f.dir, &c, &d), 0);
        assert_int_equal(diag_count(&d), 0);
        assert_string_equal(c->daemon.runtime_dir, "/run/gpreempt");
        assert_int_equal(c->n_workloads, 0);
        assert_int_equal(c->class_defaults[WORKLOAD_CLASS_ONLINE].hold_off_us, POLICY_DEFAULT_HOLD_OFF_US);
        assert_int_equal(c->daemon.detector_mode, DETECTOR_MODE_AUTO);
        assert_int_equal(c->daemon.idle_poll_cpu_percent, 2);
        assert_int_equal(c->daemon.realtime_priority, 1);
        assert_int_equal(c->daemon.realtime_cpu_percent, 75);
        assert_int_equal(c->daemon.fault_backoff_us, 10000000);
        assert_int_equal(c->daemon.fault_backoff_max_us, 600000000);
        assert_int_equal(c->daemon.max_preemptions_per_second, 50);
        config_free(c);
        config_fixture_cleanup(&f);
}

/*
 * A file an editor began with a UTF-8 byte order mark (Notepad does) reads
 * as without it; the mark anywhere else is still an error, as any byte
 * that is not a key is.
 */
static void test_byte_order_mark(void **state)
{
        struct config_fixture f;
        struct config *c = NULL;
        struct diag d = { 0 };

        config_fixture_init(&f);
        config_fixture_write(&f, "gpreemptd.conf", "\xef\xbb\xbf[Daemon]\nMaxPreemptionsPerSecond=7\n");
        config_fixture_write(&f, "workloads.d/a.conf", "\xef\xbb\xbf[Workload]\nName=a\nClass=online\nMatchPID=9\n");
        assert_int_equal(config_load(f.dir, &c, &d), 0);
        assert_int_equal(diag_count(&d), 0);
        assert_int_equal(c->daemon.max_preemptions_per_second, 7);
        assert_int_equal(c->n_workloads, 1);
        config_free(c);
        c = NULL;

        config_fixture_write(&f, "gpreemptd.conf", "[Daemon]\n\xef\xbb\xbfMaxPreemptionsPerSecond=7\n");
        assert_true(config_load(f.dir, &c, &d) < 0 || diag_count(&d) > 0);
        config_free(c);
        diag_clear(&d);
        config_fixture_cleanup(&f);
}

static void test_full_configuration(void **state)
{
        struct config_fixture f;
        struct config *c = NULL;
        struct diag d = { 0 };

        config_fixture_init(&f);
        config_fixture_write(&f, "gpreemptd.conf",
                             "# comment\n; another\n\n[Daemon]\nRuntimeDirectory = /tmp/rt\nLogLevel=debug\n"
                             "GracePeriod=4\nBusyPollIntervalUs=15\nDetectorMode=poll\nIdlePollCpuPercent=0\n"
                             "RealtimePriority=5\nRealtimeCpuPercent=100\n"
                             "FaultBackoffSec=3\nFaultBackoffMaxSec=3\nMaxPreemptionsPerSecond=0\n"
                             "[Online]\nHoldOffMs=7\n[Offline]\nMaxSuspendMs=900\nMinOfflineSharePercent=25\n");
        config_fixture_write(&f, "workloads.d/20-train.conf",
                             "[Workload]\nName=train\nClass=offline\nMatchExecutable=python3 /opt/*/train\n"
                             "MaxSuspendMs=100\n");
        config_fixture_write(&f, "workloads.d/10-serve.conf",
                             "[Workload]\nName=serve\nClass=online\nMatchUnit=serve-*.service\n"
                             "MatchUser=root 0\nHoldOffMs=3\n\n[Workload]\nName=cmd\nClass=online\n"
                             "MatchCommandLine=* --serve *\n");
        config_fixture_write(&f, "workloads.d/README", "not a drop-in, ignored");
        assert_int_equal(config_load(f.dir, &c, &d), 0);
        assert_string_equal(c->daemon.runtime_dir, "/tmp/rt");
        assert_int_equal(c->daemon.log_level, LOG_LEVEL_DEBUG);
        assert_int_equal(c->daemon.grace_period, 4);
        assert_int_equal(c->daemon.busy_poll_interval_us, 15);
        assert_int_equal(c->daemon.detector_mode, DETECTOR_MODE_POLL);
        assert_int_equal(c->daemon.idle_poll_cpu_percent, 0);
        assert_int_equal(c->daemon.realtime_priority, 5);
        assert_int_equal(c->daemon.realtime_cpu_percent, 100);
        assert_int_equal(c->daemon.fault_backoff_us, 3000000);
        assert_int_equal(c->daemon.fault_backoff_max_us, 3000000);
        assert_int_equal(c->daemon.max_preemptions_per_second, 0);
        assert_int_equal(c->n_workloads, 3);
        /* lexical order of drop-ins, then section order */
        assert_string_equal(c->workloads[0].name, "serve");
        assert_string_equal(c->workloads[1].name, "cmd");
        assert_string_equal(c->workloads[2].name, "train");
        assert_int_equal(c->workloads[0].policy.hold_off_us, 3000);
        assert_int_equal(c->workloads[1].policy.hold_off_us, 7000);
        assert_int_equal(c->workloads[2].policy.max_suspend_us, 100000);
        assert_int_equal(c->workloads[2].policy.min_offline_share_percent, 25);
        assert_int_equal(c->workloads[0].match[MATCH_USER].n_values, 2);
        assert_int_equal(c->workloads[0].match[MATCH_USER].numbers[0], 0);
        assert_string_equal(c->workloads[1].match[MATCH_COMMAND_LINE].values[0], "* --serve *");
        assert_int_equal(c->workloads[2].match[MATCH_EXECUTABLE].n_values, 2);
        assert_int_equal(c->workloads[2].line, 1);
        config_free(c);
        config_fixture_cleanup(&f);
}

struct malformed_case {
        const char *file; /* relative to the config dir */
        const char *text;
        unsigned line;    /* the line the first error must name */
        const char *says; /* a piece of the sentence */
};

#define W "[Workload]\nName=w\nClass=offline\nMatchPID=1\n"

static const struct malformed_case malformed[] = {
        { "gpreemptd.conf", "[Daemon]\nBogus=1\n", 2, "unknown key Bogus=" },
        { "gpreemptd.conf", "[Deamon]\n", 1, "unknown section [Deamon]" },
        { "gpreemptd.conf", "LogLevel=info\n", 1, "before any [Section]" },
        { "gpreemptd.conf", "[Daemon\n", 1, "does not end with ']'" },
        { "gpreemptd.conf", "[]\n", 1, "section name" },
        { "gpreemptd.conf", "[Daemon]\nLogLevel\n", 2, "expected \"Key=Value\"" },
        { "gpreemptd.conf", "[Daemon]\n=x\n", 2, "key \"\" is not a word" },
        { "gpreemptd.conf", "[Daemon]\nLog Level=info\n", 2, "is not a word" },
        { "gpreemptd.conf", "[Daemon]\nLogLevel=loud\n", 2, "expected one of error" },
        { "gpreemptd.conf", "[Daemon]\n\nDetectorMode=watchpoint\n", 3, "DetectorMode=watchpoint: expected auto" },
        { "gpreemptd.conf", "[Daemon]\nDetectorMode=\n", 2, "DetectorMode=: expected auto" },
        { "gpreemptd.conf", "[Online]\nDetectorMode=poll\n", 2, "DetectorMode" },
        { "gpreemptd.conf", "[Daemon]\nRuntimeDirectory=run/x\n", 2, "absolute path" },
        { "gpreemptd.conf", "[Daemon]\nDiscoveryIntervalMs=0\n", 2, "from 1 to 60000" },
        { "gpreemptd.conf", "[Daemon]\nIdlePollCpuPercent=101\n", 2, "percent from 0 to 100" },
        { "gpreemptd.conf", "[Daemon]\nRealtimePriority=100\n", 2, "RealtimePriority=100: expected a whole number" },
        { "gpreemptd.conf", "[Daemon]\nFaultBackoffSec=0\n", 2,
          "FaultBackoffSec=0: expected a whole number of seconds from 1 to 86400" },
        { "gpreemptd.conf", "[Daemon]\nFaultBackoffSec=10s\n", 2, "FaultBackoffSec=10s: expected a whole number" },
        { "gpreemptd.conf", "[Daemon]\nFaultBackoffMaxSec=86401\n", 2,
          "FaultBackoffMaxSec=86401: expected a whole number of seconds from 1 to 86400" },
        { "gpreemptd.conf", "[Daemon]\nFaultBackoffSec=60\n\nFaultBackoffMaxSec=30\n[Online]\n", 4,
          "FaultBackoffMaxSec=30 is shorter than FaultBackoffSec=60" },
        { "gpreemptd.conf", "[Daemon]\nFaultBackoffSec=900\n", 2,
          "FaultBackoffMaxSec=600 is shorter than FaultBackoffSec=900" },
        { "gpreemptd.conf", "[Daemon]\nMaxPreemptionsPerSecond=10001\n", 2,
          "MaxPreemptionsPerSecond=10001: expected a whole number of units from 0 to 10000" },
        { "gpreemptd.conf", "[Daemon]\nMaxPreemptionsPerSecond=-1\n", 2, "MaxPreemptionsPerSecond=-1: expected" },
        { "gpreemptd.conf", "[Daemon]\nRealtimeCpuPercent=0\n", 2,
          "RealtimeCpuPercent=0: expected a whole number of percent from 1 to 100" },
        { "gpreemptd.conf", "[Daemon]\nRealtimeCpuPercent=101\n", 2,
          "RealtimeCpuPercent=101: expected a whole number of percent from 1 to 100" },
        { "gpreemptd.conf", "[Daemon]\n\nRealtimeCpuPercent=half\n", 3,
          "RealtimeCpuPercent=half: expected a whole number" },
        { "gpreemptd.conf", "[Daemon]\nDiscoveryIntervalMs=-5\n", 2, "whole number" },
        { "gpreemptd.conf", "[Daemon]\nDiscoveryIntervalMs=10ms\n", 2, "whole number" },
        { "gpreemptd.conf", "[Daemon]\nDiscoveryIntervalMs=99999999999999999999999\n", 2, "whole number" },
        { "gpreemptd.conf", "[Daemon]\nGracePeriod=4294967296\n", 2, "GracePeriod=" },
        { "gpreemptd.conf", "[Daemon]\nLogLevel=info\nLogLevel=debug\n", 3, "already set on line 2" },
        /* a section given twice would bypass the rule above */
        { "gpreemptd.conf", "[Daemon]\nLogLevel=info\n[Online]\n[Daemon]\nLogLevel=debug\n", 4,
          "[Daemon] is already given on line 1" },
        { "gpreemptd.conf", "[Offline]\nMaxSuspendMs=100\n[Offline]\nMaxSuspendMs=900\n", 3,
          "[Offline] is already given on line 1" },
        { "gpreemptd.conf", "[Online]\nMaxSuspendMs=5\n", 2, "belongs in [Offline]" },
        { "gpreemptd.conf", "[Offline]\nHoldOffMs=5\n", 2, "belongs in [Online]" },
        { "gpreemptd.conf", "[Offline]\nMinOfflineSharePercent=95\n", 2, "from 0 to 90" },
        { "gpreemptd.conf", "[Offline]\nShareWindowMs=5\n", 2, "from 10 to" },
        { "gpreemptd.conf", "[Online]\nHoldOffMs=\n", 2, "HoldOffMs=" },
        { "gpreemptd.conf", "\n\n[Daemon]\nLogLevel=info\0x\n", 4, "NUL byte" },
        { "workloads.d/a.conf", "[Daemon]\nLogLevel=info\n", 1, "not allowed in a drop-in" },
        { "workloads.d/a.conf", "[Workload]\nClass=online\nMatchPID=1\n", 1, "has no Name=" },
        { "workloads.d/a.conf", "[Workload]\nName=x\nMatchPID=1\n", 1, "has no Class=" },
        { "workloads.d/a.conf", "[Workload]\nName=x\nClass=online\n", 1, "has no Match" },
        { "workloads.d/a.conf", "[Workload]\nName=x y\n", 2, "Name=x y" },
        { "workloads.d/a.conf", "[Workload]\nName=x\nClass=batch\n", 3, "expected online or offline" },
        { "workloads.d/a.conf", W "MatchPID=0\n", 5, "already set on line 4" },
        { "workloads.d/a.conf", "[Workload]\nName=w\nClass=offline\nMatchPID=0\n", 4, "process id" },
        { "workloads.d/a.conf", "[Workload]\nName=w\nClass=offline\nMatchPID=12 abc\n", 4, "\"abc\"" },
        { "workloads.d/a.conf", "[Workload]\nName=w\nClass=offline\nMatchUser=no-such-user-xyz\n", 4,
          "no such user" },
        { "workloads.d/a.conf", "[Workload]\nName=w\nClass=offline\nMatchExecutable=bin/x\n", 4,
          "absolute path" },
        { "workloads.d/a.conf", "[Workload]\nName=w\nClass=offline\nMatchCgroup=system.slice\n", 4,
          "starting with '/'" },
        { "workloads.d/a.conf", "[Workload]\nName=w\nClass=offline\nMatchUnit=a/b.service\n", 4,
          "without '/'" },
        { "workloads.d/a.conf", "[Workload]\nName=w\nClass=offline\nMatchContainer=ab\n", 4, "at least 4" },
        { "workloads.d/a.conf", "[Workload]\nName=w\nClass=offline\nMatchContainer=zzzzzz\n", 4,
          "hexadecimal" },
        { "workloads.d/a.conf", "[Workload]\nName=w\nClass=offline\nMatchCommandLine=\n", 4, "is empty" },
        { "workloads.d/a.conf", W "HoldOffMs=4\n", 5, "applies to Class=online" },
        { "workloads.d/a.conf", W "Frobnicate=1\n", 5, "unknown key Frobnicate=" },
        { "workloads.d/a.conf", W W, 5, "\"w\" is already used at" },
        { "workloads.d/a.conf", W "MaxSuspendMs=0\n", 5, "from 1 to" },
#define WN "[Workload]\nName=w\nClass=offline\n"
        { "workloads.d/a.conf", WN "MatchEnvironment=GPREEMPT_CLASS\n", 4, "expected NAME=GLOB" },
        { "workloads.d/a.conf", WN "MatchEnvironment==x\n", 4, "expected NAME=GLOB" },
        { "workloads.d/a.conf", WN "MatchEnvironment=1X=y\n", 4, "does not start with a digit" },
        { "workloads.d/a.conf", WN "MatchEnvironment=A-B=y\n", 4, "letters, digits and '_'" },
        { "workloads.d/a.conf", WN "MatchKubernetesQoS=Burstable\n", 4, "guaranteed, burstable or besteffort" },
        { "workloads.d/a.conf", WN "MatchPod=my-pod\n", 4, "expected a pod UID" },
        { "workloads.d/a.conf", WN "MatchPod=55c6c714-b240-4dec-9a45-57b61696ab6\n", 4, "expected a pod UID" },
        { "workloads.d/a.conf", WN "MatchSlurmJob=0\n", 4, "expected a Slurm job id" },
        { "workloads.d/a.conf", WN "MatchSlurmJob=4294967296\n", 4, "expected a Slurm job id" },
        { "workloads.d/a.conf", WN "MatchSlurmJob=12.0\n", 4, "\"12.0\"" },
        { "workloads.d/a.conf", WN "MatchSlurmPartition=\n", 4, "is empty" },
        { "workloads.d/a.conf", WN "MatchSlurmQOS=a\nMatchSlurmQOS=b\n", 5, "already set on line 4" },
#undef WN
};

static void test_malformed(void **state)
{
        for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
                const struct malformed_case *m = &malformed[i];
                struct config_fixture f;
                struct config *c = NULL;
                struct diag d = { 0 };
                char where[256];

                config_fixture_init(&f);
                /* the NUL case: write the bytes, not the C string */
                if (strstr(m->says, "NUL")) {
                        char path[256];
                        FILE *file;
                        static const char bytes[] = "\n\n[Daemon]\nLogLevel=info\0x\n";

                        snprintf(path, sizeof(path), "%s/%s", f.dir, m->file);
                        file = fopen(path, "we");
                        assert_non_null(file);
                        fwrite(bytes, 1, sizeof(bytes) - 1, file);
                        fclose(file);
                } else {
                        config_fixture_write(&f, m->file, m->text);
                }
                assert_int_equal(config_load(f.dir, &c, &d), -EINVAL);
                assert_null(c);
                assert_true(d.n_messages >= 1);
                snprintf(where, sizeof(where), "%s/%s:%u: ", f.dir, m->file, m->line);
                if (strncmp(d.messages[0], where, strlen(where)) != 0 || !strstr(d.messages[0], m->says))
                        fail_msg("case %zu: got \"%s\", want \"%s...%s\"", i, d.messages[0], where, m->says);
                diag_clear(&d);
                config_fixture_cleanup(&f);
        }
}

static void test_long_line_is_refused_and_counted(void **state)
{
        struct config_fixture f;
        struct config *c = NULL;
        struct diag d = { 0 };
        char *text = malloc(3 * INI_LINE_MAX);

        config_fixture_init(&f);
        strcpy(text, "[Daemon]\nLogLevel=");
        memset(text + strlen(text), 'x', 2 * INI_LINE_MAX);
        strcpy(text + strlen("[Daemon]\nLogLevel=") + 2 * INI_LINE_MAX, "\nBogus=1\n");
        config_fixture_write(&f, "gpreemptd.conf", text);
        assert_int_equal(config_load(f.dir, &c, &d), -EINVAL);
        assert_int_equal(d.n_messages, 2);
        assert_non_null(strstr(d.messages[0], "gpreemptd.conf:2: line is longer than"));
        /* the line after the long one keeps its own number */
        assert_non_null(strstr(d.messages[1], "gpreemptd.conf:3: unknown key Bogus="));
        free(text);
        diag_clear(&d);
        config_fixture_cleanup(&f);
}

static void test_all_errors_reported_at_once(void **state)
{
        struct config_fixture f;
        struct config *c = NULL;
        struct diag d = { 0 };

        config_fixture_init(&f);
        config_fixture_write(&f, "gpreemptd.conf", "[Daemon]\nA=1\nB=2\n");
        config_fixture_write(&f, "workloads.d/x.conf", "[Workload]\nC=3\n");
        assert_int_equal(config_load(f.dir, &c, &d), -EINVAL);
        assert_true(d.n_messages >= 4);
        diag_clear(&d);
        config_fixture_cleanup(&f);
}

static void test_too_many_workloads(void **state)
{
        struct config_fixture f;
        struct config *c = NULL;
        struct diag d = { 0 };
        size_t cap = (CONFIG_MAX_WORKLOADS + 2) * 64;
        char *text = calloc(1, cap);

        config_fixture_init(&f);
        for (int i = 0; i < CONFIG_MAX_WORKLOADS + 1; i++)
                snprintf(text + strlen(text), cap - strlen(text),
                         "[Workload]\nName=w%d\nClass=online\nMatchPID=%d\n", i, i + 1);
        config_fixture_write(&f, "workloads.d/many.conf", text);
        assert_int_equal(config_load(f.dir, &c, &d), -EINVAL);
        assert_int_equal(d.n_messages, 1);
        assert_non_null(strstr(d.messages[0], "more than 1024 workloads"));
        free(text);
        diag_clear(&d);
        config_fixture_cleanup(&f);
}

/*
 * A FIFO, a directory or any other file that is not a regular one, named
 * like a configuration file, is refused with its path at once: reading it
 * could block, at start or on a reload in the daemon's only loop. SIGALRM
 * ends the test if loading blocks.
 */
static void test_non_regular_files_are_refused_without_blocking(void **state)
{
        static const struct {
                const char *name;
                const char *make;
        } cases[] = {
                { "workloads.d/10-fifo.conf", "mkfifo" },
                { "gpreemptd.conf", "mkfifo" },
                { "workloads.d/20-dir.conf", "mkdir" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct config_fixture f;
                struct config *c = NULL;
                struct diag d = { 0 };
                char command[256];

                config_fixture_init(&f);
                snprintf(command, sizeof(command), "%s '%s/%s'", cases[i].make, f.dir, cases[i].name);
                assert_int_equal(system(command), 0);
                alarm(10);
                assert_int_equal(config_load(f.dir, &c, &d), -EINVAL);
                alarm(0);
                assert_int_equal(d.n_messages, 1);
                assert_non_null(strstr(d.messages[0], cases[i].name));
                assert_non_null(strstr(d.messages[0], "not a regular file"));
                diag_clear(&d);
                config_fixture_cleanup(&f);
        }
}

/* A configuration file is read whole into memory: one larger than any real one is refused. */
static void test_oversized_file_is_refused(void **state)
{
        struct config_fixture f;
        struct config *c = NULL;
        struct diag d = { 0 };
        char command[256];

        config_fixture_init(&f);
        snprintf(command, sizeof(command), "truncate -s %d '%s/workloads.d/big.conf'", CONFIG_MAX_FILE_BYTES + 1,
                 f.dir);
        assert_int_equal(system(command), 0);
        assert_int_equal(config_load(f.dir, &c, &d), -EINVAL);
        assert_int_equal(d.n_messages, 1);
        assert_non_null(strstr(d.messages[0], "big.conf"));
        assert_non_null(strstr(d.messages[0], "larger than"));
        diag_clear(&d);
        config_fixture_cleanup(&f);
}

/*
 * A configuration file or directory that is a symbolic link to nothing is an
 * operator's mistake, not a missing file (which gives the defaults): it is
 * refused with the link and where it points.
 */
static void test_dangling_symlinks_are_refused(void **state)
{
        static const struct {
                const char *link;
                const char *target;
        } cases[] = {
                { "gpreemptd.conf", "/nonexistent/gpreemptd.conf" },
                { "workloads.d", "workloads.d.old" },
                { "workloads.d/10-serve.conf", "../serve.conf" },
                { "", "/nonexistent/gpreempt" }, /* the configuration directory itself */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct config_fixture f;
                struct config *c = NULL;
                struct diag d = { 0 };
                char link[256], dir[256], want[512];

                config_fixture_init(&f);
                snprintf(dir, sizeof(dir), "%s", f.dir);
                if (!cases[i].link[0]) {
                        /* the fixture's directory stays, for its cleanup; the link is beside it */
                        snprintf(dir, sizeof(dir), "%s/etc-gpreempt", f.dir);
                        snprintf(link, sizeof(link), "%s", dir);
                } else {
                        snprintf(link, sizeof(link), "%s/%s", f.dir, cases[i].link);
                }
                if (strcmp(cases[i].link, "workloads.d") == 0)
                        assert_int_equal(rmdir(link), 0);
                assert_int_equal(symlink(cases[i].target, link), 0);
                assert_int_equal(config_load(dir, &c, &d), -EINVAL);
                assert_null(c);
                assert_int_equal(d.n_messages, 1);
                snprintf(want, sizeof(want), "%s: is a dangling symbolic link: \"%s\" leads nowhere", link,
                         cases[i].target);
                if (strncmp(d.messages[0], want, strlen(want)) != 0)
                        fail_msg("case %zu: got \"%s\", want \"%s...\"", i, d.messages[0], want);
                diag_clear(&d);
                config_fixture_cleanup(&f);
        }
}

/* Links that lead somewhere are followed: a configuration directory and a main file elsewhere. */
static void test_symlinks_are_followed(void **state)
{
        struct config_fixture f;
        struct config *c = NULL;
        struct diag d = { 0 };
        char path[256], link[256];

        config_fixture_init(&f);
        config_fixture_write(&f, "real.conf", "[Daemon]\nLogLevel=debug\n");
        snprintf(path, sizeof(path), "%s/gpreemptd.conf", f.dir);
        assert_int_equal(symlink("real.conf", path), 0);
        snprintf(link, sizeof(link), "%s/etc-gpreempt", f.dir);
        assert_int_equal(symlink(f.dir, link), 0);
        assert_int_equal(config_load(link, &c, &d), 0);
        assert_int_equal(diag_count(&d), 0);
        assert_int_equal(c->daemon.log_level, LOG_LEVEL_DEBUG);
        config_free(c);
        config_fixture_cleanup(&f);
}

/*
 * The control socket is RuntimeDirectory= plus "/io.gpreempt", and a unix
 * socket's path holds 107 characters: a longer directory is refused on
 * its line, not when the daemon cannot listen.
 */
static void test_runtime_directory_fits_a_socket_address(void **state)
{
        for (size_t length = 95; length <= 96; length++) {
                struct config_fixture f;
                struct config *c = NULL;
                struct diag d = { 0 };
                char text[256], where[256];

                config_fixture_init(&f);
                strcpy(text, "[Daemon]\nLogLevel=info\nRuntimeDirectory=/");
                memset(text + strlen(text), 'r', length - 1);
                strcpy(text + strlen("[Daemon]\nLogLevel=info\nRuntimeDirectory=/") + length - 1, "\n");
                config_fixture_write(&f, "gpreemptd.conf", text);
                if (length == 95) {
                        assert_int_equal(config_load(f.dir, &c, &d), 0);
                        assert_int_equal(strlen(c->daemon.runtime_dir), 95);
                        config_free(c);
                } else {
                        assert_int_equal(config_load(f.dir, &c, &d), -EINVAL);
                        assert_int_equal(d.n_messages, 1);
                        snprintf(where, sizeof(where), "%s/gpreemptd.conf:3: RuntimeDirectory=/rrr", f.dir);
                        if (strncmp(d.messages[0], where, strlen(where)) != 0 ||
                            !strstr(d.messages[0], "longer than 95 characters"))
                                fail_msg("got \"%s\"", d.messages[0]);
                }
                diag_clear(&d);
                config_fixture_cleanup(&f);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_missing_files_give_defaults),
                cmocka_unit_test(test_full_configuration),
                cmocka_unit_test(test_byte_order_mark),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_long_line_is_refused_and_counted),
                cmocka_unit_test(test_all_errors_reported_at_once),
                cmocka_unit_test(test_too_many_workloads),
                cmocka_unit_test(test_non_regular_files_are_refused_without_blocking),
                cmocka_unit_test(test_oversized_file_is_refused),
                cmocka_unit_test(test_dangling_symlinks_are_refused),
                cmocka_unit_test(test_symlinks_are_followed),
                cmocka_unit_test(test_runtime_directory_fits_a_socket_address),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
