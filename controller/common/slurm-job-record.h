/* SPDX-License-Identifier: MIT */
/*
 * A Slurm job's partition, QOS, account and comment as root recorded them on this
 * node: gpreempt-slurm-job, run by slurmd as its Prolog (as root, with the
 * job's own attributes in its environment, which slurmd builds from the
 * job's credential, not from the user's), writes one file per job,
 *
 *   <dir>/<job id>       [SlurmJob] Partition= QOS= Account= Comment=
 *
 * and its Epilog removes it. The directory is under /run, so records do not
 * outlive a reboot. These, not the SLURM_JOB_* variables of a task's
 * environment (which the job's user writes), are what MatchSlurmPartition=,
 * MatchSlurmQOS=, MatchSlurmAccount= and MatchSlurmComment= match: a record is believed only
 * when it and its directory are root's and writable by root alone, and it is
 * looked up by the job of the process's cgroup, which only slurmstepd
 * chooses.
 */
#pragma once

#include <stdint.h>

/* Where gpreempt-slurm-job writes, unless GPREEMPT_SLURM_JOBS_DIR says otherwise (paths.h). */
#define SLURM_JOB_RECORD_DEFAULT_DIR "/run/gpreempt-slurm/jobs"

struct slurm_job_record {
        /*
         * 0 when read; -ENOENT when there is none (no Prolog for this job, or
         * the process is in no job cgroup); -EPERM when the record or its
         * directory is not root's alone; another -errno when it cannot be read.
         */
        int error;
        char *partition; /* NULL when the record does not give it */
        char *qos;       /* Slurm gives the Prolog these only with accounting */
        char *account;
        char *comment;   /* sbatch --comment: the user's words, as submitted; the site's rules say what they may ask */
};

/*
 * Reads dir/<job>. A record that is missing, not to be believed or
 * unreadable is not a failure: ret->error says why, and it gives no value.
 * Returns 0 or -ENOMEM.
 */
int slurm_job_record_read(const char *dir, uint32_t job, struct slurm_job_record *ret);
void slurm_job_record_done(struct slurm_job_record *r);

/* "partition is ...": why a record gives no value, for verify-config. */
const char *slurm_job_record_problem(int error);
