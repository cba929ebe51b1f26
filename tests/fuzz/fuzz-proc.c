/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the /proc files workload matching reads of a process
 * (status, cmdline, cgroup, environ), which the process itself largely decides, read
 * by process_facts_read() and matched against a configuration with every
 * kind of Match* key. The first byte picks the file the input becomes; the
 * others hold what a real process has. Written to a /proc-like tree of its
 * own on each run.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "diag.h"
#include "process-facts.h"
#include "workload-match.h"

#define FUZZ_PID 4242

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const files[] = { "status", "cmdline", "cgroup", "environ" };
/* cmdline's arguments and environ's strings end in NULs: each default carries its length */
#define CMDLINE "python3\0train.py\0--epochs\0" "10\0"
#define ENVIRON "PATH=/usr/bin\0SLURM_JOB_ID=42\0SLURM_JOB_PARTITION=gpu\0POD_NAME=train-0\0"
static const struct {
        const char *text;
        size_t size;
} defaults[] = {
        { "Name:\tpython3\nState:\tS (sleeping)\nUid:\t1000\t1000\t1000\t1000\n", 0 },
        { (CMDLINE), sizeof(CMDLINE) - 1 },
        { "0::/system.slice/train.service\n", 0 },
        { (ENVIRON), sizeof(ENVIRON) - 1 },
};

static void write_file(const char *path, const void *data, size_t size)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
                abort();
        close(fd);
}

/* The /proc-like root, with FUZZ_PID's exe, and the configuration matched against. */
static const char *setup(struct config **ret_config)
{
        static char root[64];
        static struct config *config;
        char path[128];

        if (!root[0]) {
                struct diag diag = { 0 };

                snprintf(root, sizeof(root), "/tmp/fuzz-proc-%d", (int)getpid());
                snprintf(path, sizeof(path), "%s/%d", root, FUZZ_PID);
                if ((mkdir(root, 0700) < 0 && access(root, W_OK) < 0) || (mkdir(path, 0700) < 0 && access(path, W_OK) < 0))
                        abort();
                snprintf(path, sizeof(path), "%s/%d/exe", root, FUZZ_PID);
                unlink(path);
                if (symlink("/usr/bin/python3.11 (deleted)", path) < 0)
                        abort();
                snprintf(path, sizeof(path), "%s/config", root);
                mkdir(path, 0700);
                snprintf(path, sizeof(path), "%s/config/gpreemptd.conf", root);
                write_file(path, "", 0);
                snprintf(path, sizeof(path), "%s/config/workloads.d", root);
                mkdir(path, 0700);
                snprintf(path, sizeof(path), "%s/config/workloads.d/50-fuzz.conf", root);
                {
                        static const char workloads[] =
                                "[Workload]\nName=by-exe\nClass=online\nMatchExecutable=/usr/bin/python3*\n"
                                "MatchCommandLine=*train.py*\n"
                                "[Workload]\nName=by-unit\nClass=offline\nMatchUnit=train.service\n"
                                "[Workload]\nName=by-cgroup\nClass=offline\nMatchCgroup=/kubepods*\n"
                                "[Workload]\nName=by-user\nClass=offline\nMatchUser=1000\n"
                                "[Workload]\nName=by-env\nClass=offline\nMatchEnvironment=POD_NAME=train-* X=\n"
                                "[Workload]\nName=by-pod\nClass=online\nMatchKubernetesQoS=guaranteed\n"
                                "MatchPod=55c6c714-b240-4dec-9a45-57b61696ab6e\n"
                                "[Workload]\nName=by-slurm\nClass=offline\nMatchSlurmJob=42\n"
                                "MatchSlurmPartition=gpu*\nMatchSlurmQOS=*\nMatchSlurmAccount=*\n";

                        write_file(path, workloads, sizeof(workloads) - 1);
                }
                snprintf(path, sizeof(path), "%s/config", root);
                if (config_load(path, &config, &diag) < 0)
                        abort(); /* the fixed configuration above must load */
        }
        *ret_config = config;
        return root;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct config *config;
        const char *root = setup(&config);
        struct process_facts facts;
        pid_t parent;
        char path[128];
        size_t chosen;

        if (size == 0)
                return 0;
        chosen = data[0] % 4;
        for (size_t i = 0; i < 4; i++) {
                snprintf(path, sizeof(path), "%s/%d/%s", root, FUZZ_PID, files[i]);
                if (i == chosen)
                        write_file(path, data + 1, size - 1);
                else
                        write_file(path, defaults[i].text, defaults[i].size ? defaults[i].size : strlen(defaults[i].text));
        }
        (void)process_facts_read_parent(root, FUZZ_PID, &parent);
        if (process_facts_read(root, "/nonexistent", FUZZ_PID, &facts) < 0)
                return 0;
        if (!facts.cmdline || !facts.cgroup || !facts.exe || strcmp(facts.exe, "/usr/bin/python3.11") != 0)
                abort();
        if (facts.cluster.kind != CLUSTER_KIND_NONE && !facts.cluster.id[0])
                abort(); /* a cluster job always has an id */
        for (size_t i = 0; i < config->n_workloads; i++) {
                char *reason = NULL;

                (void)workload_match(&config->workloads[i], &facts, &reason);
                free(reason);
        }
        (void)workload_match_first(config, &facts);
        process_facts_done(&facts);
        return 0;
}
