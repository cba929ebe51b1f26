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
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "config-fixture.h"
#include "process-facts.h"
#include "workload-match.h"

#define CMDLINE "/usr/bin/python3\0serve.py\0--port\0008080\0"

static void write_bytes(struct config_fixture *f, int pid, const char *name, const char *data, size_t size)
{
        char path[256];
        FILE *file;

        snprintf(path, sizeof(path), "%s/proc/%d/%s", f->dir, pid, name);
        file = fopen(path, "we");
        assert_non_null(file);
        assert_int_equal(fwrite(data, 1, size, file), size);
        fclose(file);
}

/* A fake /proc/<pid> in the fixture directory: what the daemon reads about a process. */
static void make_fake_process(struct config_fixture *f, int pid, unsigned uid, const char *exe,
                                           const char *cgroup, const char *environ, size_t environ_size)
{
        char path[256], text[512];

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
        write_bytes(f, pid, "cmdline", CMDLINE, sizeof(CMDLINE) - 1);
        write_bytes(f, pid, "environ", environ, environ_size);
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
                          "/system.slice/docker-deadbeef12345678.scope/inner", "", 0);
        snprintf(proc, sizeof(proc), "%s/proc", f.dir);

        assert_int_equal(process_facts_read(proc, "/nonexistent", 43, &p), -ESRCH);
        assert_int_equal(process_facts_read(proc, "/nonexistent", 42, &p), 0);
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

/* Explains w's decision on p, and checks it against matched and a piece of the sentence. */
static void expect(const struct workload *w, const struct process_facts *p, bool matched, const char *part)
{
        char *reason = NULL;

        bool result = workload_match(w, p, &reason);

        print_message("# %s: %s\n", w->name, reason);
        assert_int_equal(result, matched);
        assert_non_null(strstr(reason, part));
        free(reason);
}

static const char cluster_workloads[] =
        "[Workload]\nName=label\nClass=offline\nMatchEnvironment=GPREEMPT_CLASS=online SLURM_JOB_NAME=res*\n"
        "[Workload]\nName=qos\nClass=online\nMatchKubernetesQoS=guaranteed burstable\n"
        "[Workload]\nName=pod\nClass=online\nMatchPod=2CA4A155_3599_498D_BB9D_4446693FA3EA\n"
        "[Workload]\nName=job\nClass=offline\nMatchSlurmJob=4749\n"
        "[Workload]\nName=partition\nClass=offline\nMatchSlurmPartition=batch* preempt\n"
        "[Workload]\nName=qos-and-account\nClass=online\nMatchSlurmQOS=high\nMatchSlurmAccount=ml-*\n"
        "[Workload]\nName=job-online\nClass=online\nMatchSlurmJob=4749\n"
        "[Workload]\nName=comment\nClass=offline\nMatchSlurmComment=*gpreempt=offline*\n";

#define POD_CGROUP                                                                                               \
        "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod2ca4a155_3599_498d_bb9d_4446693fa3ea." \
        "slice/crio-358607a37e7ada357032e7f5729c9ae6a3efdb7962acbcbe47ff6a3c5506cb1c.scope"
#define POD_ENVIRON "PATH=/bin\0GPREEMPT_CLASS=offline\0POD_NAME=train-0\0POD_NAMESPACE=ml\0"
#define JOB_CGROUP "/system.slice/slurm-worker-1_slurmstepd.scope/job_4749/step_0/user/task_0"
#define JOB_ENVIRON                                                                                               \
        "SLURM_JOB_ID=4749\0SLURM_JOB_NAME=resnet\0SLURM_JOB_PARTITION=batch-gpu\0SLURM_JOB_QOS=high\0" \
        "SLURM_JOB_ACCOUNT=ml-team\0"
/* what slurmd gave the Prolog of job 4749, and of job 5 */
#define JOB_RECORD "# test\n[SlurmJob]\nPartition=batch-gpu\nQOS=high\nAccount=ml-team\nComment=x gpreempt=offline\n"
#define OTHER_JOB_RECORD "[SlurmJob]\nPartition=debug\nQOS=\n"
/* a process of another job that carries job 4749's variables (inherited or forged) */
#define FORGED_ENVIRON "SLURM_JOB_ID=4749\0SLURM_JOB_PARTITION=batch-gpu\0SLURM_JOB_QOS=high\0SLURM_JOB_ACCOUNT=ml-x\0"

static void test_cluster_keys(void **state)
{
        struct config_fixture f;
        struct config *c = NULL;
        struct diag d = { 0 };
        struct process_facts pod, job, forged, plain, env_only;
        char proc[128], jobs[128], path[256];

        config_fixture_init(&f);
        config_fixture_write(&f, "workloads.d/w.conf", cluster_workloads);
        assert_int_equal(config_load(f.dir, &c, &d), 0);
        assert_string_equal(c->workloads[2].match[MATCH_POD].values[0], "2ca4a155-3599-498d-bb9d-4446693fa3ea");
        make_fake_process(&f, 10, 1000, "/usr/bin/python3", POD_CGROUP, POD_ENVIRON, sizeof(POD_ENVIRON) - 1);
        make_fake_process(&f, 11, 1000, "/usr/bin/python3", JOB_CGROUP, JOB_ENVIRON, sizeof(JOB_ENVIRON) - 1);
        make_fake_process(&f, 12, 1000, "/usr/bin/python3", "/system.slice/slurmstepd.scope/job_5/step_0/user/task_0",
                          FORGED_ENVIRON, sizeof(FORGED_ENVIRON) - 1);
        make_fake_process(&f, 13, 1000, "/usr/bin/python3", "/user.slice", "", 0);
        /* proctrack/linuxproc: no job cgroup, the environment alone */
        make_fake_process(&f, 14, 1000, "/usr/bin/python3", "/user.slice", JOB_ENVIRON, sizeof(JOB_ENVIRON) - 1);
        snprintf(proc, sizeof(proc), "%s/proc", f.dir);
        snprintf(jobs, sizeof(jobs), "%s/slurm-jobs", f.dir);
        assert_int_equal(mkdir(jobs, 0755), 0);
        config_fixture_write(&f, "slurm-jobs/4749", JOB_RECORD);
        config_fixture_write(&f, "slurm-jobs/5", OTHER_JOB_RECORD);
        assert_int_equal(process_facts_read(proc, jobs, 10, &pod), 0);
        assert_int_equal(process_facts_read(proc, jobs, 11, &job), 0);
        assert_int_equal(process_facts_read(proc, jobs, 12, &forged), 0);
        assert_int_equal(process_facts_read(proc, jobs, 13, &plain), 0);
        assert_int_equal(process_facts_read(proc, jobs, 14, &env_only), 0);

        /* the identity gpreemptd shows */
        assert_int_equal(pod.cluster.kind, CLUSTER_KIND_KUBERNETES);
        assert_string_equal(pod.cluster.id, "2ca4a155-3599-498d-bb9d-4446693fa3ea");
        assert_string_equal(pod.cluster.name, "ml/train-0");
        assert_int_equal(job.cluster.kind, CLUSTER_KIND_SLURM);
        assert_string_equal(job.cluster.id, "4749");
        assert_string_equal(job.cluster.name, "resnet");
        assert_string_equal(forged.cluster.id, "5"); /* the cgroup's, not the environment's */
        assert_string_equal(forged.cluster.name, "");
        assert_int_equal(plain.cluster.kind, CLUSTER_KIND_NONE);
        assert_string_equal(env_only.cluster.id, "4749");

        expect(&c->workloads[0], &pod, false, "GPREEMPT_CLASS is \"offline\", SLURM_JOB_NAME is not set");
        expect(&c->workloads[0], &job, true, "matches by MatchEnvironment=");
        expect(&c->workloads[0], &plain, false, "its environment is empty");
        expect(&c->workloads[1], &pod, false, "is in besteffort pod 2ca4a155-3599-498d-bb9d-4446693fa3ea (ml/train-0)");
        expect(&c->workloads[1], &job, false, "is in no Kubernetes pod");
        expect(&c->workloads[2], &pod, true, "matches by MatchPod=");
        expect(&c->workloads[3], &job, true, "matches by MatchSlurmJob=");
        expect(&c->workloads[3], &env_only, true, "matches by MatchSlurmJob=");
        expect(&c->workloads[3], &forged, false, "is in Slurm job 5");
        expect(&c->workloads[3], &plain, false, "is in no Slurm job");
        expect(&c->workloads[4], &job, true, "matches by MatchSlurmPartition=");
        /* the partition is the Prolog's record of the cgroup's job, whatever the environment says */
        expect(&c->workloads[4], &forged, false, "job 5's partition is \"debug\"");
        expect(&c->workloads[4], &pod, false, "is in no Slurm job cgroup");
        expect(&c->workloads[4], &env_only, false, "is in no Slurm job cgroup");
        expect(&c->workloads[5], &job, true, "matches by MatchSlurmQOS=, MatchSlurmAccount=");
        expect(&c->workloads[5], &forged, false, "job 5's Prolog record gives no QOS (Slurm gives the Prolog one only");
        expect(&c->workloads[5], &env_only, false, "is in no Slurm job cgroup");
        /* an environment's job id can only lower standing */
        expect(&c->workloads[6], &job, true, "matches by MatchSlurmJob=");
        expect(&c->workloads[6], &env_only, false, "names Slurm job 4749 only in its environment");
        expect(&c->workloads[7], &job, true, "matches by MatchSlurmComment=");
        expect(&c->workloads[7], &forged, false, "job 5's Prolog record gives no comment");

        /* a record others could have written is not believed */
        process_facts_done(&forged);
        snprintf(path, sizeof(path), "%s/5", jobs);
        assert_int_equal(chmod(path, 0666), 0);
        assert_int_equal(process_facts_read(proc, jobs, 12, &forged), 0);
        assert_int_equal(forged.slurm_job.error, -EPERM);
        expect(&c->workloads[4], &forged, false, "not root's alone");
        assert_int_equal(unlink(path), 0);
        assert_int_equal(symlink("4749", path), 0);
        process_facts_done(&forged);
        assert_int_equal(process_facts_read(proc, jobs, 12, &forged), 0);
        expect(&c->workloads[4], &forged, false, "not root's alone");
        assert_int_equal(unlink(path), 0);
        process_facts_done(&forged);
        assert_int_equal(process_facts_read(proc, jobs, 12, &forged), 0);
        expect(&c->workloads[4], &forged, false, "no Prolog record for its job");

        process_facts_done(&pod);
        process_facts_done(&job);
        process_facts_done(&forged);
        process_facts_done(&plain);
        process_facts_done(&env_only);
        config_free(c);
        config_fixture_cleanup(&f);
}

/* Environments as a process can leave them: unreadable, oversized, not text, not NAME=VALUE. */
static void test_environ_untrusted(void **state)
{
        static const char odd[] = "=x\0NOEQUALS\0A=\xff\xfe\x1b[2J\0A=second\0B=unterminated";
        struct config_fixture f;
        struct process_environ e;
        char proc[128], path[256];
        size_t big_size = PROCESS_ENVIRON_MAX + 100;
        char *big = malloc(big_size);

        config_fixture_init(&f);
        make_fake_process(&f, 20, 0, "/bin/x", "/", odd, sizeof(odd) - 1);
        snprintf(proc, sizeof(proc), "%s/proc", f.dir);
        assert_int_equal(process_environ_read(proc, 20, &e), 0);
        assert_string_equal(process_environ_get(&e, "A"), "\xff\xfe\x1b[2J"); /* the first, as getenv() */
        assert_string_equal(process_environ_get(&e, "B"), "unterminated");
        assert_null(process_environ_get(&e, "NOEQUALS"));
        assert_null(process_environ_get(&e, ""));
        process_environ_done(&e);

        /* past the bound: the cut string is dropped, the ones before it are kept */
        assert_non_null(big);
        memset(big, 'x', big_size);
        memcpy(big, "FIRST=1", 8);
        memcpy(big + PROCESS_ENVIRON_MAX - 4, "C=", 2);
        make_fake_process(&f, 21, 0, "/bin/x", "/", big, big_size);
        assert_int_equal(process_environ_read(proc, 21, &e), 0);
        assert_true(e.truncated);
        assert_string_equal(process_environ_get(&e, "FIRST"), "1");
        assert_null(process_environ_get(&e, "C"));
        process_environ_done(&e);
        free(big);

        /* a directory where the file should be: an error recorded, not a failure */
        make_fake_process(&f, 22, 0, "/bin/x", "/", "", 0);
        snprintf(path, sizeof(path), "%s/proc/22/environ", f.dir);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(process_environ_read(proc, 22, &e), 0);
        assert_int_equal(e.error, -EISDIR);
        assert_null(process_environ_get(&e, "A"));
        process_environ_done(&e);

        assert_int_equal(process_environ_read(proc, 23, &e), -ESRCH); /* gone */
        config_fixture_cleanup(&f);
}

/*
 * A process without memory, here a real zombie (a kernel thread is the
 * other kind; it may not be in this pid namespace): /proc/PID/environ
 * cannot even be opened (ESRCH), yet the process is there and its facts
 * read, its environment empty. gpreemptctl verify-config --pid 2 said "no
 * such process".
 */
static void test_process_without_memory(void **state)
{
        struct process_facts facts;
        pid_t zombie = fork();
        siginfo_t info;

        assert_true(zombie >= 0);
        if (zombie == 0)
                _exit(0);
        /* exited, not reaped: WNOWAIT leaves the zombie */
        assert_int_equal(waitid(P_PID, (id_t)zombie, &info, WEXITED | WNOWAIT), 0);
        assert_int_equal(process_facts_read("/proc", "/nonexistent", zombie, &facts), 0);
        assert_non_null(facts.environment.data);
        assert_int_equal(facts.environment.len, 0);
        assert_int_equal(facts.environment.error, 0);
        process_facts_done(&facts);
        assert_int_equal(waitpid(zombie, NULL, 0), zombie);
        assert_int_equal(process_facts_read("/proc", "/nonexistent", zombie, &facts), -ESRCH); /* reaped: gone */
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
                cmocka_unit_test(test_cluster_keys),
                cmocka_unit_test(test_environ_untrusted),
                cmocka_unit_test(test_process_without_memory),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
