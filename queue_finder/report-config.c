/* SPDX-License-Identifier: MIT */
/*
 * --emit-config: gpreemptd workload sections for the processes found, to be
 * saved as a drop-in in /etc/gpreempt/workloads.d/. A pid lives only as long
 * as its process, so a known executable is matched by path and the pid is
 * only a comment; without one the section matches the pid.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

/* INI values end at the newline; a path with control characters cannot be
 * written safely and is left out. */
static bool printable(const char *s)
{
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        return false;
        return true;
}

int qf_report_config(FILE *f, const struct qf_report *r, enum qf_workload_class cls)
{
        const char *class_name = cls == QF_WORKLOAD_ONLINE ? "online" : "offline";
        fprintf(f, "# gpreemptd workloads found by queue_finder (class %s).\n", class_name);
        for (size_t i = 0; r->result && i < r->result->n_processes; i++) {
                const struct qf_process *p = &r->result->processes[i];
                /* A section needs a process to match: queues no log line
                 * tied to one would make a MatchPID that names nobody. */
                if (!p->has_pid) {
                        fprintf(f, "\n# %zu queue(s) from log lines that name no process are left out: give the "
                                   "process with --log-pid PID.\n",
                                p->n_queues);
                        continue;
                }
                if (p->pid <= 0)
                        continue;
                bool by_exe = p->has_exe && printable(p->exe);
                const char *base = by_exe ? strrchr(p->exe, '/') : NULL;
                fprintf(f, "\n[Workload]\n");
                if (by_exe)
                        fprintf(f, "# pid %d when this was generated, %zu GPU queue(s)\nName=%s-%d\n", (int) p->pid,
                                p->n_queues, base ? base + 1 : p->exe, (int) p->pid);
                else
                        fprintf(f, "# %zu GPU queue(s)\nName=pid-%d\n", p->n_queues, (int) p->pid);
                fprintf(f, "Class=%s\n", class_name);
                if (by_exe)
                        fprintf(f, "MatchExecutable=%s\n", p->exe);
                else
                        fprintf(f, "MatchPID=%d\n", (int) p->pid);
        }
        return ferror(f) ? -EIO : 0;
}
