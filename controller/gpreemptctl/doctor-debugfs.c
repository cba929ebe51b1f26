/* SPDX-License-Identifier: MIT */
/*
 * doctor: debugfs kfd/mqds, where gpreemptd finds the write pointers of
 * online processes' queues (kfd-interface.md §8.3; without it their work
 * goes unnoticed), read and parsed with queue_finder's reader as the daemon
 * does; and kernel lockdown, which restricts debugfs (§8.3).
 */
#include "doctor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "doctor-parse.h"
#include "fileio.h"
#include "sources.h"

/* What reading mqds gave: 0 and its counts, or -errno. */
struct mqds_result {
        int error;
        size_t n_queues, n_processes;
        char path[PATH_MAX];
};

static void read_mqds(const struct doctor *d, struct mqds_result *ret)
{
        struct qf_diags diags = { 0 };
        struct qf_mqds mqds = { 0 };
        _cleanup_close_ int fd = -1;
        int r;

        *ret = (struct mqds_result){ 0 };
        r = qf_pathf(ret->path, sizeof(ret->path), "%s/kernel/debug/kfd/mqds", d->paths.sysfs_root);
        if (r < 0) {
                ret->error = r;
                return;
        }
        fd = open(ret->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                ret->error = -errno;
                return;
        }
        r = qf_mqds_parse(fd, ret->path, &diags, &mqds);
        qf_diags_clear(&diags);
        if (r < 0) {
                ret->error = r;
                return;
        }
        for (size_t i = 0; i < mqds.n; i++) {
                bool seen = false;

                for (size_t j = 0; j < i && !seen; j++)
                        seen = mqds.queues[j].pid == mqds.queues[i].pid;
                ret->n_processes += !seen;
        }
        ret->n_queues = mqds.n;
        qf_mqds_clear(&mqds);
}

/* Whether <sysfs_root>/kernel/debug has anything in it, i.e. debugfs is mounted there. */
static bool debugfs_mounted(const struct doctor *d)
{
        char path[PATH_MAX];
        DIR *dir;
        struct dirent *e;
        bool any = false;

        if (qf_pathf(path, sizeof(path), "%s/kernel/debug", d->paths.sysfs_root) < 0 || !(dir = opendir(path)))
                return false;
        while (!any && (e = readdir(dir)))
                any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
        closedir(dir);
        return any;
}

static void check_lockdown(struct doctor *d, const struct mqds_result *mqds)
{
        char path[PATH_MAX], text[128], mode[32];
        struct doctor_check *c;
        size_t len;
        int r;

        r = qf_pathf(path, sizeof(path), "%s/kernel/security/lockdown", d->paths.sysfs_root);
        if (r >= 0)
                r = qf_read_file(path, text, sizeof(text), &len);
        if (r == -ENOENT) {
                doctor_add(d, "lockdown", DOCTOR_OK, "no kernel lockdown (%s does not exist)", path);
                return;
        }
        if (r >= 0)
                r = doctor_parse_lockdown(text, mode, sizeof(mode));
        if (r < 0) {
                c = doctor_add(d, "lockdown", DOCTOR_WARNING, "cannot read %s: %s", path, strerror(-r));
                doctor_advise(c, "see the debugfs check: lockdown matters only through it");
                return;
        }
        if (strcmp(mode, "none") == 0) {
                doctor_add(d, "lockdown", DOCTOR_OK, "kernel lockdown is off ([none])");
                return;
        }
        if (mqds->error == 0) {
                doctor_add(d, "lockdown", DOCTOR_OK,
                           "kernel lockdown is [%s], but debugfs kfd/mqds can be read all the same", mode);
                return;
        }
        c = doctor_add(d, "lockdown", DOCTOR_WARNING,
                       "kernel lockdown is [%s], which restricts debugfs: it may be why kfd/mqds cannot be read", mode);
        doctor_advise(c, "lockdown cannot be lowered while the kernel runs: boot without it (it usually follows "
                         "Secure Boot, or the lockdown= kernel parameter)");
}

static void check_debugfs(struct doctor *d, const struct mqds_result *mqds)
{
        struct doctor_check *c;

        switch (mqds->error) {
        case 0:
                doctor_add(d, "debugfs", DOCTOR_OK,
                           "%s can be read: %zu queue%s of %zu process%s, where gpreemptd finds online queues' write "
                           "pointers",
                           mqds->path, mqds->n_queues, mqds->n_queues == 1 ? "" : "s", mqds->n_processes,
                           mqds->n_processes == 1 ? "" : "es");
                return;
        case -ENOENT:
                if (!debugfs_mounted(d)) {
                        c = doctor_add(d, "debugfs", DOCTOR_FAILED,
                                       "debugfs is not mounted on %s/kernel/debug, so gpreemptd cannot read online "
                                       "queues' write pointers from kfd/mqds and does not notice their work",
                                       d->paths.sysfs_root);
                        doctor_advise(c, "mount it: mount -t debugfs none /sys/kernel/debug (and add it to /etc/fstab)");
                        return;
                }
                c = doctor_add(d, "debugfs", DOCTOR_FAILED,
                               "%s does not exist although debugfs is mounted: amdgpu is not loaded, or this kernel "
                               "has no KFD debugfs files; gpreemptd would not notice online work",
                               mqds->path);
                doctor_advise(c, "load amdgpu (modprobe amdgpu), on a kernel built with CONFIG_DEBUG_FS");
                return;
        case -EACCES:
        case -EPERM:
                if (geteuid() != 0) {
                        c = doctor_add(d, "debugfs", DOCTOR_WARNING,
                                       "%s cannot be read by uid %d: debugfs is normally readable by root alone, "
                                       "which gpreemptd is",
                                       mqds->path, (int)geteuid());
                        doctor_advise(c, "run gpreemptctl doctor as root to check what gpreemptd can read");
                        return;
                }
                c = doctor_add(d, "debugfs", DOCTOR_FAILED,
                               "%s cannot be read even by root (%s): gpreemptd would not notice online work",
                               mqds->path, strerror(-mqds->error));
                doctor_advise(c, "check the lockdown check above, and the mount options of /sys/kernel/debug");
                return;
        default:
                c = doctor_add(d, "debugfs", DOCTOR_FAILED, "cannot read %s: %s", mqds->path, strerror(-mqds->error));
                doctor_advise(c, "gpreemptd reads online queues' write pointers there; check dmesg for amdgpu "
                                 "errors");
        }
}

void doctor_check_debugfs(struct doctor *d)
{
        struct mqds_result mqds;

        read_mqds(d, &mqds);
        check_lockdown(d, &mqds);
        check_debugfs(d, &mqds);
}
