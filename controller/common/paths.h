/* SPDX-License-Identifier: MIT */
/*
 * Every filesystem root the daemon touches, so tests (and kfdemu) can point
 * it at a prepared tree. Resolution order: command-line option, then the
 * environment, then the compiled-in default.
 *
 *   GPREEMPT_CONFIG_DIR   /etc/gpreempt       gpreemptd.conf and workloads.d/
 *   GPREEMPT_RUNTIME_DIR  (RuntimeDirectory=) the control socket
 *   GPREEMPT_PROC_ROOT    /proc               process facts, process_vm_readv targets
 *   GPREEMPT_SYSFS_ROOT   /sys                KFD sysfs (proc/, topology/) and debugfs
 *   GPREEMPT_KFD_DEVICE   /dev/kfd            handed to libgpreempt
 *   GPREEMPT_GROUP        gpreempt            group allowed read access on the socket
 *   GPREEMPT_SLURM_JOBS_DIR /run/gpreempt-slurm/jobs  the Slurm Prolog's job records
 */
#pragma once

struct paths {
        char *config_dir;
        char *runtime_dir; /* NULL: take RuntimeDirectory= from the configuration */
        char *proc_root;
        char *sysfs_root;
        char *kfd_device;
        char *group;
        char *slurm_jobs_dir; /* slurm-job-record.h */
};

/*
 * Where a client finds gpreemptd's control socket: $GPREEMPT_RUNTIME_DIR/io.gpreempt,
 * else the shipped unit's RuntimeDirectory= (/run/gpreempt/io.gpreempt). A
 * daemon configured elsewhere is found through $GPREEMPT_RUNTIME_DIR.
 * Returns 0 or -ENOMEM.
 */
int paths_api_socket(char **ret_path);

/* Fills unset members from the environment and the defaults. Returns 0 or -ENOMEM. */
int paths_fill_defaults(struct paths *p);
void paths_done(struct paths *p);
