/* SPDX-License-Identifier: MIT */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "fileio.h"
#include "report.h"

void qf_process_identify(const char *proc_root, struct qf_process *p)
{
        if (!p->has_pid || p->pid <= 0)
                return;
        size_t n;
        if (qf_nspid_read(proc_root, p->pid, p->nspid, QF_NSPID_MAX_LEVELS, &n) == 0)
                p->n_nspid = n;
        p->has_pid_ns = qf_pid_ns_of(proc_root, p->pid, &p->pid_ns) == 0;

        char path[PATH_MAX];
        if (qf_pathf(path, sizeof(path), "%s/%d/exe", proc_root, (int) p->pid) < 0)
                return;
        ssize_t len = readlink(path, p->exe, sizeof(p->exe) - 1);
        /* A cut-off path would match nothing; better none than a wrong one. */
        if (len > 0 && (size_t) len < sizeof(p->exe) - 1) {
                p->exe[len] = 0;
                p->has_exe = true;
        }
}
